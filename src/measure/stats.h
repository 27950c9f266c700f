/* stats.h — sample statistics, intervals over measurement rounds and the fuse decision. */
#ifndef FC_STATS_H
#define FC_STATS_H

#include "measures.h"

/* Statistics of x[0..n) (x is not modified). Percentiles interpolate linearly. */
void fc_stats_compute(const double *x, int n, fc_stats *s);
/* Percentile q in [0,1] of sorted[0..n). */
double fc_percentile_sorted(const double *sorted, int n, double q);

/* Median of x[0..n) (x is not modified; NaN when n = 0). */
double fc_median(const double *x, int n);

/* Student's t quantile 0.975 for df degrees of freedom (df >= 1). */
double fc_t975(int df);

/* The interval of a ratio from R independent replicate estimates of its log,
 * logr[0..R) (one per measurement round): exp(mean ± t(R−1, 0.975)·sd/√R), the
 * point estimate exp(mean) (the geometric mean of the rounds' ratios). R = 1
 * gives an unbounded interval [0, ∞): one replicate says nothing about spread. */
void fc_interval_rounds(const double *logr, int R, fc_ratio_ci *out);

/* The same with a run-level component: a run's speedup also carries an effect the
 * rounds of one run share and another run does not (the machine's state over
 * minutes: other tenants, memory placement, clocks), with a standard deviation of
 * run_noise on the log scale that only repeated runs can measure
 * (bench/repeatability.sh). The rounds' interval becomes within_lo/within_hi; the
 * confidence interval's half-width is sqrt(h² + (1.96·run_noise)²) with h the
 * rounds' half-width, the re-run interval √2 times that. run_noise = 0 is
 * fc_interval_rounds. */
void fc_interval_runs(const double *logr, int R, double run_noise, fc_ratio_ci *out);

/* yes: CI low > threshold; no: CI high < threshold; else inconclusive. */
fc_decision fc_decide(const fc_ratio_ci *ci, double threshold);
/* How far the interval clears the threshold, relative to it: lo/threshold − 1 when
 * above (yes), 1 − hi/threshold when below (no); negative when it straddles
 * (inconclusive: the distance to the nearer side it would have to clear). */
double fc_decision_margin(const fc_ratio_ci *ci, double threshold);

#endif
