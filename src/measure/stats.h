/* stats.h — sample statistics, the paired bootstrap and the fuse decision. */
#ifndef FC_STATS_H
#define FC_STATS_H

#include "measures.h"

/* Statistics of x[0..n) (x is not modified). Percentiles interpolate linearly. */
void fc_stats_compute(const double *x, int n, fc_stats *s);
/* Percentile q in [0,1] of sorted[0..n). */
double fc_percentile_sorted(const double *sorted, int n, double q);
/* Median of x[0..n): the middle value, or the mean of the two middle values for
 * even n; NaN for n < 1. Reorders x (a selection, not a sort). */
double fc_median(double *x, int n);

/* Ratio of medians of paired samples a[i], b[i] (a = unfused, b = fused gives the
 * speedup), with a percentile bootstrap over the pairs. Deterministic for a seed. */
void fc_bootstrap_ratio(const double *a, const double *b, int n, int resamples, uint64_t seed, fc_ratio_ci *out);

/* The same over samples taken in rounds (each round a fresh setup: new buffers,
 * new plans). round_start[r] is the index of round r's first pair, round_start[
 * nrounds] = n. Each resample draws rounds with replacement, then pairs within
 * each drawn round, so the interval also covers what changes between setups
 * (buffer placement, algorithm choice), not only sample noise. One round is the
 * plain paired bootstrap. */
void fc_bootstrap_ratio_rounds(const double *a, const double *b, const int *round_start, int nrounds, int resamples,
                               uint64_t seed, fc_ratio_ci *out);

/* yes: CI low > threshold; no: CI high < threshold; else inconclusive. */
fc_decision fc_decide(const fc_ratio_ci *ci, double threshold);

/* Running mean and variance (Welford), for stopping rules. */
typedef struct fc_welford {
    int n;
    double mean, m2;
} fc_welford;
void fc_welford_add(fc_welford *w, double x);
double fc_welford_rsd(const fc_welford *w);

#endif
