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

/* The state check. Rounds are fresh setups minutes apart at most; the interval over
 * them holds the speedup of a machine whose state they sample fairly. On a shared
 * machine the state (other tenants' use of the caches and the memory bus, where the
 * buffers land) can hold for minutes and move the variants' times by a factor of 2
 * or more, and the fused form's gain with them: a run whose rounds saw one mix of
 * states then decides against one that saw another (add_rmsnorm at 32 MB on a VM
 * with a 32 MB L3 went from yes, 1.21 [1.11, 1.32], to no, 0.98 [0.91, 1.05], two
 * minutes later). So a decision is withheld (inconclusive) when both hold:
 *   - a deciding variant's round medians span FC_STATE_SPAN or more (measures.h; its slowest
 *     round over its fastest): the state moved, not the noise within a state;
 *   - FC_STATE_AGAINST or more of the rounds (one at least) lie across the threshold
 *     from the interval's decision: some of the states it saw reverse it.
 * base_ms[k] and fused_ms[k]: round k's medians of the two variants the decisive
 * speedup compares; ratio[k]: round k's decisive speedup; R rounds; d: the interval's
 * decision. Returns the decision to keep (d, or inconclusive) and fills *out. */
fc_decision fc_state_check(const double *base_ms, const double *fused_ms, const double *ratio, int R, double threshold,
                           fc_decision d, fc_variant base, fc_state *out);

#endif
