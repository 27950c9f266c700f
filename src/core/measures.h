/* measures.h — the types a record is made of: the stopping rule, latency
 * statistics, a ratio with its interval, a verification outcome and the fuse
 * decision. Records (core) hold them; src/measure/ computes them. */
#ifndef FC_MEASURES_H
#define FC_MEASURES_H

#include "fusecal.h"

typedef struct fc_stop {
    int min_samples;  /* at least this many samples per variant (10) */
    double min_time;  /* and at least this many seconds of samples (0.5) */
    double max_noise; /* stop when the relative stdev is at most this (0.005) */
    double max_time;  /* hard cap in seconds per variant (15) */
    int max_samples;  /* hard cap on samples per variant */
} fc_stop;

void fc_stop_defaults(fc_stop *s);

typedef struct fc_stats {
    int n;
    double median, mean, min, max, p10, p90, stdev, rsd; /* rsd = stdev / mean */
} fc_stats;

typedef struct fc_ratio_ci {
    double ratio;   /* median(a) / median(b) */
    double lo, hi;  /* 95 % bootstrap interval */
    int resamples;
} fc_ratio_ci;


/* One variant's output against the float64 reference. */
typedef struct fc_check {
    bool passed;
    bool trusted;       /* passed, and not suspiciously many exact zeros */
    double rel_err;     /* ‖out − ref‖ / ‖ref‖ over checked elements */
    double max_abs_err;
    double tol;
    size_t checked;
    bool sampled;
    size_t nonfinite;   /* over the whole output */
    double zero_frac;   /* over the whole output */
    char reason[192];
} fc_check;

#endif
