/* stats.c — see stats.h. */
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double fc_percentile_sorted(const double *s, int n, double q)
{
    if (n <= 0) return NAN;
    double pos = q * (n - 1);
    int i = (int)floor(pos);
    if (i >= n - 1) return s[n - 1];
    double f = pos - i;
    return s[i] + f * (s[i + 1] - s[i]);
}

void fc_stats_compute(const double *x, int n, fc_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (n <= 0) return;
    double *t = fc_xmalloc((size_t)n * sizeof *t);
    memcpy(t, x, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i];
    s->mean = sum / n;
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (t[i] - s->mean) * (t[i] - s->mean);
    s->stdev = n > 1 ? sqrt(ss / (n - 1)) : 0;
    s->rsd = s->mean > 0 ? s->stdev / s->mean : 0;
    s->min = t[0];
    s->max = t[n - 1];
    s->median = fc_percentile_sorted(t, n, 0.5);
    s->p10 = fc_percentile_sorted(t, n, 0.1);
    s->p90 = fc_percentile_sorted(t, n, 0.9);
    free(t);
}

/* k-th smallest of t[0..n) (Hoare's selection; reorders t). */
static double select_kth(double *t, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = t[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (t[i] < pivot) i++;
            while (t[j] > pivot) j--;
            if (i <= j) {
                double tmp = t[i];
                t[i] = t[j];
                t[j] = tmp;
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i)
            lo = i;
        else
            return t[k];
    }
    return t[k];
}

static double median_inplace(double *t, int n)
{
    if (n % 2) return select_kth(t, n, n / 2);
    double hi = select_kth(t, n, n / 2);
    /* the largest of the lower half */
    double lo = t[0];
    for (int i = 1; i < n / 2; i++)
        if (t[i] > lo) lo = t[i];
    return 0.5 * (lo + hi);
}

double fc_median(const double *x, int n)
{
    if (n <= 0) return NAN;
    double *t = fc_xmalloc((size_t)n * sizeof *t);
    memcpy(t, x, (size_t)n * sizeof *t);
    double m = median_inplace(t, n);
    free(t);
    return m;
}

double fc_t975(int df)
{
    static const double t[] = {
        0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, /* 0..10 */
        2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,        /* 11..20 */
        2.080, 2.074,  2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,        /* 21..30 */
    };
    if (df < 1) return INFINITY;
    if (df <= 30) return t[df];
    /* Cornish–Fisher expansion around the normal quantile: < 1e-3 off for df > 30 */
    double z = 1.959964, z3 = z * z * z, z5 = z3 * z * z;
    return z + (z3 + z) / (4.0 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96.0 * df * df);
}

void fc_interval_rounds(const double *logr, int R, fc_ratio_ci *out)
{
    memset(out, 0, sizeof *out);
    if (R <= 0) {
        out->ratio = out->lo = out->hi = NAN;
        return;
    }
    double mean = 0;
    for (int i = 0; i < R; i++) mean += logr[i];
    mean /= R;
    out->ratio = exp(mean);
    if (R == 1) {
        out->lo = out->rerun_lo = 0;
        out->hi = out->rerun_hi = INFINITY;
        return;
    }
    double ss = 0;
    for (int i = 0; i < R; i++) ss += (logr[i] - mean) * (logr[i] - mean);
    double half = fc_t975(R - 1) * sqrt(ss / (R - 1) / R);
    out->lo = exp(mean - half);
    out->hi = exp(mean + half);
    /* another run's mean of R rounds differs from this one's by the difference of two
     * such means: variance 2s²/R, so the interval that holds it is √2 wider */
    out->rerun_lo = exp(mean - sqrt(2.0) * half);
    out->rerun_hi = exp(mean + sqrt(2.0) * half);
}

void fc_interval_runs(const double *logr, int R, double run_noise, fc_ratio_ci *out)
{
    fc_interval_rounds(logr, R, out);
    out->within_lo = out->lo;
    out->within_hi = out->hi;
    if (R < 2 || !(run_noise > 0)) return;
    double mean = log(out->ratio), h = log(out->hi) - mean, b = 1.959964 * run_noise;
    double half = sqrt(h * h + b * b);
    out->lo = exp(mean - half);
    out->hi = exp(mean + half);
    out->rerun_lo = exp(mean - sqrt(2.0) * half);
    out->rerun_hi = exp(mean + sqrt(2.0) * half);
}

fc_decision fc_decide(const fc_ratio_ci *ci, double threshold)
{
    if (ci->lo > threshold) return FC_DECIDE_YES;
    if (ci->hi < threshold) return FC_DECIDE_NO;
    return FC_DECIDE_INCONCLUSIVE;
}

double fc_decision_margin(const fc_ratio_ci *ci, double threshold)
{
    double above = ci->lo / threshold - 1, below = 1 - ci->hi / threshold;
    return above > below ? above : below;
}

/* max/min of x[0..n) (0 when any is not positive) */
static double span_of(const double *x, int n)
{
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0)) return 0;
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    return n > 0 ? hi / lo : 0;
}

fc_decision fc_state_check(const double *base_ms, const double *fused_ms, const double *ratio, int R, double threshold,
                           fc_decision d, fc_variant base, fc_state *out)
{
    memset(out, 0, sizeof *out);
    out->said = d;
    if (R < 2) return d;
    out->made = true;
    double sb = span_of(base_ms, R), sf = span_of(fused_ms, R);
    out->span = fmax(sb, sf);
    out->span_variant = sb >= sf ? (int)base : FC_FUSED;
    if (d != FC_DECIDE_YES && d != FC_DECIDE_NO) return d;
    out->rounds_against = fc_rounds_across(ratio, R, threshold, d == FC_DECIDE_NO);
    if (out->span < FC_STATE_SPAN || !fc_rounds_reverse(out->rounds_against, R)) return d;
    out->withheld = true;
    return FC_DECIDE_INCONCLUSIVE;
}
