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
        else if (k >= i) lo = i;
        else return t[k];
    }
    return t[k];
}

double fc_median(double *t, int n)
{
    if (n < 1) return NAN;
    if (n % 2) return select_kth(t, n, n / 2);
    double hi = select_kth(t, n, n / 2);
    /* the largest of the lower half */
    double lo = t[0];
    for (int i = 1; i < n / 2; i++)
        if (t[i] > lo) lo = t[i];
    return 0.5 * (lo + hi);
}

void fc_bootstrap_ratio(const double *a, const double *b, int n, int resamples, uint64_t seed, fc_ratio_ci *out)
{
    int rs[2] = {0, n};
    fc_bootstrap_ratio_rounds(a, b, rs, 1, resamples, seed, out);
}

void fc_bootstrap_ratio_rounds(const double *a, const double *b, const int *round_start, int nrounds, int resamples,
                               uint64_t seed, fc_ratio_ci *out)
{
    memset(out, 0, sizeof *out);
    int n = round_start[nrounds];
    if (n <= 0 || nrounds <= 0) {
        out->ratio = out->lo = out->hi = NAN;
        return;
    }
    double *ta = fc_xmalloc((size_t)n * sizeof *ta), *tb = fc_xmalloc((size_t)n * sizeof *tb);
    memcpy(ta, a, (size_t)n * sizeof *ta);
    memcpy(tb, b, (size_t)n * sizeof *tb);
    out->ratio = fc_median(ta, n) / fc_median(tb, n);
    if (resamples < 1) resamples = 1;
    /* a resample holds as many pairs as the rounds it drew */
    int maxcnt = 0;
    for (int k = 0; k < nrounds; k++)
        if (round_start[k + 1] - round_start[k] > maxcnt) maxcnt = round_start[k + 1] - round_start[k];
    size_t cap = (size_t)nrounds * (size_t)maxcnt;
    double *ra = fc_xmalloc(cap * sizeof *ra), *rb = fc_xmalloc(cap * sizeof *rb);
    double *r = fc_xmalloc((size_t)resamples * sizeof *r);
    fc_rng rng;
    fc_rng_seed(&rng, seed);
    for (int it = 0; it < resamples; it++) {
        int m = 0;
        for (int k = 0; k < nrounds; k++) {
            int rr = nrounds > 1 ? (int)fc_rng_below(&rng, (uint64_t)nrounds) : 0;
            int lo = round_start[rr], cnt = round_start[rr + 1] - lo;
            for (int i = 0; i < cnt; i++) {
                int j = lo + (int)fc_rng_below(&rng, (uint64_t)cnt);
                ra[m] = a[j];
                rb[m] = b[j];
                m++;
            }
        }
        r[it] = fc_median(ra, m) / fc_median(rb, m);
    }
    qsort(r, (size_t)resamples, sizeof *r, cmp_double);
    out->lo = fc_percentile_sorted(r, resamples, 0.025);
    out->hi = fc_percentile_sorted(r, resamples, 0.975);
    out->resamples = resamples;
    free(r);
    free(ra);
    free(rb);
    free(ta);
    free(tb);
}

fc_decision fc_decide(const fc_ratio_ci *ci, double threshold)
{
    if (ci->lo > threshold) return FC_DECIDE_YES;
    if (ci->hi < threshold) return FC_DECIDE_NO;
    return FC_DECIDE_INCONCLUSIVE;
}


void fc_welford_add(fc_welford *w, double x)
{
    w->n++;
    double d = x - w->mean;
    w->mean += d / w->n;
    w->m2 += d * (x - w->mean);
}

double fc_welford_rsd(const fc_welford *w)
{
    if (w->n < 2 || w->mean <= 0) return INFINITY;
    return sqrt(w->m2 / (w->n - 1)) / w->mean;
}
