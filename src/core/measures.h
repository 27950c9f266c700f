/* measures.h — the types a record is made of: the stopping rule, latency
 * statistics, a ratio with its interval, a verification outcome and the fuse
 * decision. Records (core) hold them; src/measure/ computes them. */
#ifndef FC_MEASURES_H
#define FC_MEASURES_H

#include "fusecal.h"
#include "settings.h" /* FC_MAX_ROUNDS */

/* When a record's measurement may stop. It runs at least `rounds` (a setting)
 * rounds, which share the minimums below; it adds rounds while its speedup
 * interval is wider than max_noise and the time cap allows. */
typedef struct fc_stop {
    int min_samples;  /* sample tuples per record at least, whatever the time (15) */
    double min_time;  /* seconds of samples per variant at least (0.5) */
    double max_noise; /* the speedup's 95 % interval narrow enough: half-width / ratio (0.01) */
    double max_time;  /* seconds of samples per variant at most, once the minimums are met (3) */
    int max_samples;  /* sample tuples per round at most */
} fc_stop;

void fc_stop_defaults(fc_stop *s);

typedef struct fc_stats {
    int n;
    double median, mean, min, max, p10, p90, stdev, rsd; /* rsd = stdev / mean */
} fc_stats;

typedef struct fc_ratio_ci {
    double ratio;  /* the point estimate */
    double lo, hi; /* its 95 % confidence interval (of the speedup this run estimates) */
    /* 95 % interval of another run's estimate with as many rounds (a prediction
     * interval: half-width √2 times the confidence interval's); 0 when not made */
    double rerun_lo, rerun_hi;
    /* the rounds' own interval, before a run-level component widened lo/hi
     * (fc_interval_runs); 0 when not made */
    double within_lo, within_hi;
} fc_ratio_ci;

/* One round of a record: the medians of its samples, the median of its tuples'
 * ratios, how many tuples and the batch of each variant. */
typedef struct fc_round_rec {
    double median_ms[3]; /* unfused, fused, control (0 when absent) */
    double ratio;        /* median over tuples of unfused/fused */
    double ratio_graph;  /* the same over graph replays (0 when none) */
    double ratio_fusion; /* the same of control/fused (0 when no control) */
    int pairs;
    int batch[3];
    /* each variant's bandwidth ceiling measured beside the round (GB/s; 0: none):
     * its working set's stream rate as the device's curve takes it, measured as the
     * round ended (fc_device.stream_at) */
    double beside_gbs[3];
    /* the arithmetic peak of the record's dtype measured as the round ended
     * (fc_device.peak_at; GFLOP/s, 0: none) */
    double beside_gflops;
} fc_round_rec;

/* The state check's rule (stats.h: fc_state_check), shared with check's verdicts. */
#define FC_STATE_SPAN 2.0     /* a variant's slowest round median over its fastest: the state moved */
#define FC_STATE_AGAINST 0.10 /* the share of rounds (one at least) that reverse a verdict */

/* How many of the rounds' speedups q[0..R) lie above bound (above) or below it. */
static inline int fc_rounds_across(const double *q, int R, double bound, bool above)
{
    int k = 0;
    for (int i = 0; i < R; i++) k += above ? q[i] > bound : q[i] < bound;
    return k;
}

/* Whether k of R rounds across a verdict's bound are enough to reverse it, once the
 * state moved: FC_STATE_AGAINST of them, one at least. The decision's state check
 * (stats.h: fc_state_check) and check's verdicts (match.c) share it. */
static inline bool fc_rounds_reverse(int k, int R) { return k >= 1 && k >= FC_STATE_AGAINST * R; }

/* Whether the machine's state moved under a record's rounds (fc_state_check): the
 * two variants its decisive speedup compares, each round's median of each, and the
 * rounds whose own speedup lies across the threshold from the interval's decision. */
typedef struct fc_state {
    bool made;          /* checked: an ok record of two rounds or more */
    double span;        /* the larger of the two variants' slowest round median over its fastest */
    int span_variant;   /* the variant of that span (fc_variant) */
    int rounds_against; /* rounds on the other side of the threshold (0 when the interval straddles it) */
    fc_decision said;   /* the interval's decision */
    bool withheld;      /* it was withheld: the record is inconclusive */
} fc_state;

/* One variant's output against the float64 reference. */
typedef struct fc_check {
    bool passed;
    bool trusted;   /* passed, and not suspiciously many exact zeros */
    double rel_err; /* ‖out − ref‖ / ‖ref‖ over checked elements */
    double max_abs_err;
    double tol;
    size_t checked;
    bool sampled;
    size_t nonfinite; /* over the whole output */
    double zero_frac; /* over the whole output */
    char reason[192];
} fc_check;

#endif
