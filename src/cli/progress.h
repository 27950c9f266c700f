/* progress.h — what a long run shows while it works, on stderr: a live line on a
 * terminal (pattern, problem i/N, elapsed and estimated remaining time, the last
 * verdict), plain log lines otherwise, nothing when quiet. Display only: records are
 * saved by the caller whatever happens here. */
#ifndef FC_PROGRESS_H
#define FC_PROGRESS_H

#include "calibrate.h"

#include <stdio.h>

typedef struct fc_progress {
    FILE *out;
    bool tty, quiet, line_open;
    double t0;
    char last[160];
    int shown_pass; /* the pass last announced, plus one (0: none) */
} fc_progress;

void fc_progress_init(fc_progress *p, FILE *out, bool quiet);
void fc_progress_start(fc_progress *p, int i, int n, int pass, int npass, const fc_job *job);
void fc_progress_record(fc_progress *p, int i, int n, const fc_record *r);
/* Clears the live line; later output starts on a clean line. */
void fc_progress_end(fc_progress *p);
/* A message that must not tangle with the live line. */
void fc_progress_note(fc_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* This run made known to other fusecal runs on the host, with the output it writes
 * (out; NULL: none), and a warning when some are measuring now (peers.h). Before
 * the first measurement. Returns the process id of a run that writes out already
 * (nothing said: the caller refuses), else 0. */
int fc_progress_peers(fc_progress *p, const char *out);
/* The session's ceilings: those an earlier command kept when still usable, else
 * measured now; a note says which. */
int fc_progress_ceilings(fc_progress *p, fc_session *s, fc_err *e);
/* When the plan may take long (its variants' time caps add up to more than
 * FC_LONG_RUN_S), one note on what the stopping rule does and how to trade
 * precision for time. */
#define FC_LONG_RUN_S 10.0
/* The test hook (fc_test_fast_settings) on set, saying so; with a sweep, also its
 * total time. */
void fc_progress_test_fast(fc_progress *p, fc_settings *set, bool sweep);
void fc_progress_stop_rule(fc_progress *p, const fc_plan *plan, const fc_settings *set);

#endif
