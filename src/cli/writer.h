/* writer.h — the observer that rewrites a calibration document after every
 * record, used by `run` and `check --run`: the record is saved before it is
 * shown, so the display can never cost a record, and a failed write stops the
 * calibration with every earlier record on disk and the document, the last
 * record with it, in a rescue file. */
#ifndef FC_WRITER_H
#define FC_WRITER_H

#include "calibrate.h"
#include "progress.h"

typedef struct fc_writer {
    const char *path; /* NULL: the document stays in memory */
    fc_format fmt;
    double t0;        /* when this run started */
    double base;      /* seconds spent by the runs it continues */
    fc_progress *pg;  /* its live line is cleared before an error is printed */
    fc_observer show; /* what to display before and after each job (hooks may be NULL) */
    fc_err err;
    bool saved;    /* a save succeeded: what the document gained since may be in memory only */
    bool reported; /* the observer printed a failed save's error */
} fc_writer;

/* Writes the document now (elapsed_s brought up to date); 0, or -1 with w->err.
 * A save that fails after one that succeeded (records were measured in between)
 * writes the document as JSON to $TMPDIR (else /tmp) as fusecal-rescue-<pid>.json,
 * and w->err names that file (or says that it failed too). */
int fc_writer_save(fc_writer *w, fc_doc *d);
/* fc_calibrate failed with e: the document, holding the records it closed, is
 * saved once more, and one error line says why (e's reason, unless the observer
 * already printed the failed save's). */
void fc_writer_calibrate_failed(fc_writer *w, fc_doc *d, const fc_err *e);
/* The command line as a document records it: ["fusecal", argv...] (argv[0] is
 * the command's name). */
cJSON *fc_command_line_json(int argc, char **argv);
/* The observer for fc_calibrate: saves after each record, then shows it. */
fc_observer fc_writer_observer(fc_writer *w);

#endif
