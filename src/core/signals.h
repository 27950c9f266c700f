/* signals.h — SIGINT/SIGTERM during a calibration: the first asks the run to stop
 * after the current sample (records so far are written, "complete": false, exit
 * 130); a second exits at once, leaving the output file as last written (it is
 * replaced atomically, so it is always whole). SIGHUP (the terminal closed) does
 * the same, unless it was ignored when the run started (nohup: the run goes on).
 * A closed pipe (SIGPIPE: `fusecal run ... | head`) does not end a measurement:
 * its output is lost, the file's records are not. */
#ifndef FC_SIGNALS_H
#define FC_SIGNALS_H

#include <signal.h>

extern volatile sig_atomic_t fc_interrupted;
void fc_signals_install(void);
/* The temp file being written (removed if a second signal ends the process). */
void fc_signals_tempfile(const char *path);

#endif
