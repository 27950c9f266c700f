/* predict_fit.c — the model's two forms (predict.h), fitted robustly in log space
 * by Nelder–Mead over the logs of the parameters, from several starts. */
#include "predict.h"
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HUBER_DELTA 0.05
#define PRIOR_EFF 1e-3 /* on log(efficiency)²: an efficiency the data cannot see stays at the ceiling */
#define PRIOR_K 0.1    /* on log(k)² */
#define OUT_OF_BOX 1e30
/* c₂/c₃ at most: a core's L2 streams about twice as fast as the shared L3 on the CPUs
 * these models fit (64 against 32 bytes a cycle, less in practice). Left free (up to
 * 20), the factor fitted to the few records below the L2 size sent the held-out
 * largest ones far off: leave-one-out on the committed AMD standard calibration gave
 * a fused p90 error of 40 % free, 31 % at 2 (one cache level: 30 %); on the Intel one
 * 36 and 37 % (one level: 40 %), the unfused p90 39 % both (one level: 49 %). */
#define MLC_OVER_LLC 2.0
/* φ at most, with a measured curve (cache_scale): a kernel's working set fills the
 * caches no later than a copy's of its bytes does (its lines are not all the bytes on
 * paper: look-ahead, write-allocated lines, the other operand's), and no earlier than a
 * copy's of twice them. Leave-one-out on the four committed standard CPU calibrations,
 * decisions reproduced with φ in [1, 2] 936 of 1183, in [1, 4] 927, in [0.5, 2] 917,
 * φ = 1 918. */
#define WS_OVER_COPY 2.0
/* The fused form's memory efficiency at least: below it, the memory term stands for
 * traffic the bytes on paper do not count (a GEMM's panels read again), which a fit
 * to a few records sets by their sliver of traffic past the LLC and extrapolates
 * badly (the Zen 4 calibration's qk_norm_rope at 68 MB held out: 5.6 ms predicted for
 * 1.3 measured, at e_B = 0.09). Leave-one-out on the four committed standard CPU
 * calibrations (with the streamed bytes, predict.h), fused p90 error 36.8 → 30.5 %
 * (Zen 4), 33.1 → 31.9 % (Zen 4, AVX2 only), 28.2 → 26.6 % (Intel), unchanged on Zen
 * 5; decisions 276 → 278 and 301 → 302 of 332 and 331, the same on the other two;
 * rerun95 coverage within 0.3 points. */
#define MIN_EFF_BW 0.2

enum { NPAR = 5 };

double fc_roofline_ms(double flops, double bytes, double ceil_gflops, double ceil_gbs)
{
    return fmax(flops / (ceil_gflops * 1e6), bytes / (ceil_gbs * 1e6));
}

/* The bandwidth a measured curve gives a working set of b bytes: between its points
 * linear in log footprint and log rate, its end points' beyond them. */
static double curve_gbs(const fc_cache_curve *c, double b)
{
    if (b <= c->footprint[0]) return c->gbs[0];
    for (int i = 1; i < c->n; i++)
        if (b <= c->footprint[i]) {
            double t = log(b / c->footprint[i - 1]) / log(c->footprint[i] / c->footprint[i - 1]);
            return c->gbs[i - 1] * pow(c->gbs[i] / c->gbs[i - 1], t);
        }
    return c->gbs[c->n - 1];
}

/* g(b) of predict.h: the time per byte of traffic b relative to DRAM's. With the
 * device's measured curve, DRAM's rate over the curve's at a working set of φ·b, to
 * the power γ (at most 1); without, by the shares that fit in the mid-level caches
 * (h₂), in the last-level cache (h₃ − h₂) and in neither: 1 without a last-level
 * cache size, and mid-level caches as large as the last level count as none. */
static double cache_scale(const fc_fit *f, double bytes)
{
    if (!(bytes > 0)) return 1;
    if (f->curve.n >= 2)
        return fmin(1, pow(f->curve.gbs[f->curve.n - 1] / curve_gbs(&f->curve, f->cache_ws * bytes), f->cache_exp));
    if (!(f->llc_bytes > 0)) return 1;
    double c3 = fmax(f->cache, 1), c2 = fmax(f->cache_mlc, c3);
    double h3 = fmin(1, f->llc_bytes / bytes);
    double h2 = f->mlc_bytes > 0 && f->mlc_bytes < f->llc_bytes ? fmin(1, f->mlc_bytes / bytes) : 0;
    return h2 / c2 + (h3 - h2) / c3 + (1 - h3);
}

double fc_fit_fused_ms(const fc_fit *f, double flops, double bytes_fused, double streamed_fused, double ceil_gflops,
                       double ceil_gbs)
{
    double compute = flops / (f->eff_flops * ceil_gflops * 1e6);
    double cached = fmax(bytes_fused - streamed_fused, 0);
    double memory = (cached * cache_scale(f, cached) + streamed_fused) / (f->eff_bw * ceil_gbs * 1e6);
    return f->overhead_ms + compute + memory;
}

/* The removed passes move at the cache's rate while the chain's whole traffic
 * through the cache (all but what it streams) fits in the last-level cache, not
 * while the removed bytes alone do: the intermediates compete with the chain's
 * inputs and outputs for it. (Leave-one-out on the committed standard CPU
 * calibration: the unfused latency's p90 error 32.5 -> 24.5 %, decisions reproduced
 * 51.4 -> 53.9 %.) The chain's share of the fused work is the measured (or
 * predicted) fused time scaled by the fused form's at the chain's streamed bytes
 * over its own (predict.h); fused NULL or both streaming alike: unscaled. */
double fc_fit_unfused_ms(const fc_fit *f, const fc_fit *fused, double fused_ms, double flops,
                         const double bytes[FC_NVARIANTS], const double streamed[FC_NVARIANTS], double ceil_gflops,
                         double ceil_gbs)
{
    double removed = fmax(bytes[FC_UNFUSED] - bytes[FC_FUSED], 0), share = 1;
    if (fused && streamed[FC_UNFUSED] != streamed[FC_FUSED])
        share = fc_fit_fused_ms(fused, flops, bytes[FC_FUSED], fmin(streamed[FC_UNFUSED], bytes[FC_FUSED]), ceil_gflops,
                                ceil_gbs) /
                fc_fit_fused_ms(fused, flops, bytes[FC_FUSED], streamed[FC_FUSED], ceil_gflops, ceil_gbs);
    return f->k * fused_ms * share + f->overhead_ms +
           removed * cache_scale(f, bytes[FC_UNFUSED] - streamed[FC_UNFUSED]) / (f->eff_bw * ceil_gbs * 1e6);
}

static double huber(double r)
{
    double a = fabs(r);
    return a < HUBER_DELTA ? 0.5 * r * r / HUBER_DELTA : a - 0.5 * HUBER_DELTA;
}

/* ------------------------------------------------------------------ Nelder–Mead */

typedef double (*objective)(const double *x, const void *ctx);

/* Minimises f from x (updated in place) with a simplex of the given step; returns
 * the minimum. Deterministic: the same input gives the same answer. */
static double nelder_mead(objective f, const void *ctx, double *x, double step, int iters)
{
    double p[NPAR + 1][NPAR], v[NPAR + 1];
    for (int i = 0; i <= NPAR; i++) {
        memcpy(p[i], x, sizeof p[i]);
        if (i) p[i][i - 1] += step;
        v[i] = f(p[i], ctx);
    }
    for (int it = 0; it < iters; it++) {
        /* order: best first (insertion sort of four) */
        for (int i = 1; i <= NPAR; i++)
            for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
                double t = v[j];
                v[j] = v[j - 1];
                v[j - 1] = t;
                double tp[NPAR];
                memcpy(tp, p[j], sizeof tp);
                memcpy(p[j], p[j - 1], sizeof tp);
                memcpy(p[j - 1], tp, sizeof tp);
            }
        if (fabs(v[NPAR] - v[0]) < 1e-12 * (1 + fabs(v[0]))) break;
        double c[NPAR] = {0}, xr[NPAR], xe[NPAR], xc[NPAR];
        for (int i = 0; i < NPAR; i++)
            for (int d = 0; d < NPAR; d++) c[d] += p[i][d] / NPAR;
        for (int d = 0; d < NPAR; d++) xr[d] = c[d] + (c[d] - p[NPAR][d]);
        double fr = f(xr, ctx);
        if (fr < v[0]) {
            for (int d = 0; d < NPAR; d++) xe[d] = c[d] + 2 * (c[d] - p[NPAR][d]);
            double fe = f(xe, ctx);
            memcpy(p[NPAR], fe < fr ? xe : xr, sizeof xr);
            v[NPAR] = fe < fr ? fe : fr;
        } else if (fr < v[NPAR - 1]) {
            memcpy(p[NPAR], xr, sizeof xr);
            v[NPAR] = fr;
        } else {
            for (int d = 0; d < NPAR; d++) xc[d] = c[d] + 0.5 * (p[NPAR][d] - c[d]);
            double fc = f(xc, ctx);
            if (fc < v[NPAR]) {
                memcpy(p[NPAR], xc, sizeof xc);
                v[NPAR] = fc;
            } else {
                for (int i = 1; i <= NPAR; i++) {
                    for (int d = 0; d < NPAR; d++) p[i][d] = p[0][d] + 0.5 * (p[i][d] - p[0][d]);
                    v[i] = f(p[i], ctx);
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= NPAR; i++)
        if (v[i] < v[best]) best = i;
    memcpy(x, p[best], sizeof p[best]);
    return v[best];
}

/* Tries each start, polishes each result once more with a small simplex, keeps
 * the best. */
static void minimise(objective f, const void *ctx, const double (*start)[NPAR], int nstart, double *best)
{
    double bv = INFINITY;
    memcpy(best, start[0], sizeof start[0]);
    for (int s = 0; s < nstart; s++) {
        double x[NPAR];
        memcpy(x, start[s], sizeof x);
        nelder_mead(f, ctx, x, 0.5, 400);
        double v = nelder_mead(f, ctx, x, 0.1, 400);
        if (v < bv) {
            bv = v;
            memcpy(best, x, sizeof x);
        }
    }
}

/* ------------------------------------------------------------------ the fused form */

typedef struct fit_ctx {
    const fc_obs *o;
    int n;
    double lo_o, hi_o;   /* the per-call cost's box, in log ms */
    const fc_fit *fused; /* the unfused form's: the fused form's fit to the same records */
} fit_ctx;

static bool in_box(const double *x, const fit_ctx *c, double lo1, double hi1, double lo2, double hi2)
{
    return x[0] >= c->lo_o && x[0] <= c->hi_o && x[1] >= lo1 && x[1] <= hi1 && x[2] >= lo2 && x[2] <= hi2 &&
           x[3] >= 0 && x[3] <= log(20) && x[4] >= 0 &&
           x[4] <= log(c->n > 0 && c->o[0].curve.n >= 2 ? WS_OVER_COPY : MLC_OVER_LLC);
}

/* The class's caches (its records share a machine). */
static void class_caches(const fit_ctx *c, fc_fit *f)
{
    f->llc_bytes = c->n > 0 ? c->o[0].llc_bytes : 0;
    f->mlc_bytes = c->n > 0 ? c->o[0].mlc_bytes : 0;
    if (c->n > 0) f->curve = c->o[0].curve;
}

/* The cache term's two parameters (cache_scale): with a measured curve γ = x₃ and
 * φ = exp(x₄); without, c₃ = exp(x₃) and c₂ = exp(x₃ + x₄). */
static void cache_params(const double *x, fc_fit *f)
{
    f->cache = exp(x[3]);
    f->cache_mlc = exp(x[3] + x[4]);
    f->cache_exp = x[3];
    f->cache_ws = exp(x[4]);
}

/* x = log(overhead_ms), log(eff_flops), log(eff_bw), then the cache term's two */
static void fused_params(const double *x, fc_fit *f)
{
    f->overhead_ms = exp(x[0]);
    f->eff_flops = exp(x[1]);
    f->eff_bw = exp(x[2]);
    cache_params(x, f);
    f->k = 1;
}

static double fused_loss(const double *x, const void *ctxp)
{
    const fit_ctx *c = ctxp;
    if (!in_box(x, c, log(1e-4), log(10), log(MIN_EFF_BW), log(10))) return OUT_OF_BOX;
    fc_fit f;
    fused_params(x, &f);
    class_caches(c, &f);
    double s = PRIOR_EFF * (x[1] * x[1] + x[2] * x[2] + x[3] * x[3] + x[4] * x[4]);
    for (int i = 0; i < c->n; i++) {
        const fc_obs *o = &c->o[i];
        double m = fc_fit_fused_ms(&f, o->flops, o->bytes[FC_FUSED], o->streamed[FC_FUSED], o->ceil_gflops,
                                   o->ceil_gbs);
        s += huber(log(o->ms[FC_FUSED]) - log(m));
    }
    return s;
}

static void ms_range(const fc_obs *o, int n, fc_variant v, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        *lo = fmin(*lo, o[i].ms[v]);
        *hi = fmax(*hi, o[i].ms[v]);
    }
}

/* 1.4826 × the median of |r|: the standard deviation of normal residuals, robust
 * to the few a roofline cannot explain (a latency form's spread). About zero, not
 * the median: a model's bias is part of its error. */
static double robust_spread(const double *r, int n)
{
    double *a = fc_xmalloc((size_t)n * sizeof *a);
    for (int i = 0; i < n; i++) a[i] = fabs(r[i]);
    double s = 1.4826 * fc_median(a, n);
    free(a);
    return s;
}

double fc_speedup_spread(const double *r, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += r[i] * r[i];
    return n > 0 ? sqrt(ss / n) : NAN;
}

double fc_obs_noise(const fc_obs *o, int n)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += o[i].speedup_sd * o[i].speedup_sd;
    return n > 0 ? sqrt(ss / n) : 0;
}

/* A variant's form: its loss, its parameters from x, its starting points. */
typedef struct form {
    objective loss;
    void (*params)(const double *x, fc_fit *f);
    void (*starts)(const fc_obs *o, int n, fit_ctx *c, double start[6][NPAR]);
} form;

/* The form fitted to n records from its starting points; x its parameters, c
 * its context (for refits). */
static void fit_full(const form *fm, const fc_obs *o, int n, fc_fit *f, double x[NPAR], fit_ctx *c)
{
    memset(f, 0, sizeof *f);
    double start[6][NPAR];
    fm->starts(o, n, c, start);
    minimise(fm->loss, c, (const double(*)[NPAR])start, 6, x);
    fm->params(x, f);
    class_caches(c, f);
}

/* The form refitted to train[m] from the full fit's parameters x. */
static void refit(const form *fm, const fit_ctx *c, const double x[NPAR], const fc_obs *train, int m, fc_fit *f)
{
    fit_ctx ci = *c;
    ci.o = train;
    ci.n = m;
    double xi[NPAR];
    memcpy(xi, x, sizeof xi);
    nelder_mead(fm->loss, &ci, xi, 0.1, 300);
    memset(f, 0, sizeof *f);
    fm->params(xi, f);
    class_caches(&ci, f);
}

static double fused_residual(const fc_fit *f, const fc_obs *o)
{
    return log(o->ms[FC_FUSED]) -
           log(fc_fit_fused_ms(f, o->flops, o->bytes[FC_FUSED], o->streamed[FC_FUSED], o->ceil_gflops, o->ceil_gbs));
}

static void fused_starts(const fc_obs *o, int n, fit_ctx *c, double start[6][NPAR])
{
    double lo, hi;
    ms_range(o, n, FC_FUSED, &lo, &hi);
    *c = (fit_ctx){.o = o, .n = n, .lo_o = log(1e-9), .hi_o = log(hi), .fused = c->fused};
    const double eff[3][2] = {{0, 0}, {-1, -1}, {-0.5, -1.5}};
    for (int s = 0; s < 6; s++) {
        start[s][0] = log((s < 3 ? 0.1 : 0.5) * lo);
        start[s][1] = eff[s % 3][0];
        start[s][2] = eff[s % 3][1];
        start[s][3] = s < 3 ? 0.1 : 1;
        start[s][4] = s < 3 ? 0.1 : 0.5;
    }
}

static const form fused_form = {fused_loss, fused_params, fused_starts};

/* ------------------------------------------------------------------ the unfused chain */

/* x = log(overhead_ms), log(eff_bw), log(k), then the cache term's two */
static void unfused_params(const double *x, fc_fit *f)
{
    f->overhead_ms = exp(x[0]);
    f->eff_bw = exp(x[1]);
    f->k = exp(x[2]);
    cache_params(x, f);
    f->eff_flops = 0;
}

static double unfused_loss(const double *x, const void *ctxp)
{
    const fit_ctx *c = ctxp;
    if (!in_box(x, c, log(1e-4), log(10), log(0.2), log(5))) return OUT_OF_BOX;
    fc_fit f;
    unfused_params(x, &f);
    class_caches(c, &f);
    double s = PRIOR_EFF * (x[1] * x[1] + x[3] * x[3] + x[4] * x[4]) + PRIOR_K * x[2] * x[2];
    for (int i = 0; i < c->n; i++) {
        const fc_obs *o = &c->o[i];
        double m = fc_fit_unfused_ms(&f, c->fused, o->ms[FC_FUSED], o->flops, o->bytes, o->streamed, o->ceil_gflops,
                                     o->ceil_gbs);
        s += huber(log(o->ms[FC_UNFUSED]) - log(m));
    }
    return s;
}

static double unfused_residual(const fc_fit *f, const fc_fit *fused, const fc_obs *o)
{
    return log(o->ms[FC_UNFUSED]) - log(fc_fit_unfused_ms(f, fused, o->ms[FC_FUSED], o->flops, o->bytes, o->streamed,
                                                          o->ceil_gflops, o->ceil_gbs));
}

static void unfused_starts(const fc_obs *o, int n, fit_ctx *c, double start[6][NPAR])
{
    double lo, hi;
    ms_range(o, n, FC_UNFUSED, &lo, &hi);
    *c = (fit_ctx){.o = o, .n = n, .lo_o = log(1e-9), .hi_o = log(hi), .fused = c->fused};
    const double eff[3] = {0, -1, -3};
    for (int s = 0; s < 6; s++) {
        start[s][0] = log((s < 3 ? 0.01 : 0.1) * lo);
        start[s][1] = eff[s % 3];
        start[s][2] = 0;
        start[s][3] = s < 3 ? 0.1 : 1;
        start[s][4] = s < 3 ? 0.1 : 0.5;
    }
}

static const form unfused_form = {unfused_loss, unfused_params, unfused_starts};

/* ------------------------------------------------------------------ the local correction */

int fc_nearest_records(const fc_obs *o, int n, const fc_problem *p, int k, int *idx, double *d)
{
    int got = 0;
    for (int i = 0; i < n; i++) {
        double di = fc_problem_distance(p, &o[i].rec->prob);
        if (got == k && di >= d[got - 1]) continue;
        int j = got < k ? got++ : got - 1; /* the farthest drops out when full */
        for (; j > 0 && di < d[j - 1]; j--) {
            d[j] = d[j - 1];
            idx[j] = idx[j - 1];
        }
        d[j] = di;
        idx[j] = i;
    }
    return got;
}

/* The weighted mean of the held-out residuals of the FC_PREDICT_LOCAL records of o
 * nearest to p, leaving out record skip (-1: none) */
static double local_mean(const fc_obs *o, int n, const double *held, const fc_problem *p, int skip)
{
    int idx[FC_PREDICT_LOCAL + 1];
    double d[FC_PREDICT_LOCAL + 1], sw = 0, s = 0;
    int k = fc_nearest_records(o, n, p, FC_PREDICT_LOCAL + 1, idx, d), used = 0;
    for (int i = 0; i < k && used < FC_PREDICT_LOCAL; i++) {
        if (idx[i] == skip) continue;
        double w = 1 / (FC_PREDICT_LOCAL_D0 + d[i]);
        sw += w;
        s += w * held[idx[i]];
        used++;
    }
    return sw > 0 ? s / sw : 0;
}

double fc_local_correction(const fc_class_fit *f, const fc_obs *o, const fc_problem *p)
{
    return local_mean(o, f->n, f->held, p, -1);
}

/* ------------------------------------------------------------------ the class */

/* Both forms fitted to all records, and the spreads from the held-out residuals:
 * each record against both forms refitted to the others (from the full fits'
 * parameters). Residuals of records a fit has seen are smaller than its errors at
 * problems it has not; the held-out ones are those errors. The speedup's spread is
 * of its own residuals, not composed from the variants': their errors share the
 * problem's features and largely cancel in the ratio. */
/* The records as the base's fit sees them (fc_class_fit): the unfused time replaced
 * by the decisive base's (the control's where the fusion split decided). NULL when
 * no record of the class was decided on it: the base is the unfused form. */
static fc_obs *base_obs(const fc_obs *o, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++) any |= fc_record_decisive_base(o[i].rec) == FC_CONTROL;
    if (!any) return NULL;
    fc_obs *b = fc_xmalloc((size_t)n * sizeof *b);
    for (int i = 0; i < n; i++) {
        b[i] = o[i];
        b[i].ms[FC_UNFUSED] = o[i].ms_base;
    }
    return b;
}

void fc_fit_class(const fc_obs *o, int n, fc_class_fit *f)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    double xf[NPAR], xu[NPAR], xb[NPAR];
    fit_ctx cf = {0}, cu = {0}, cb = {0};
    fit_full(&fused_form, o, n, &f->v[FC_FUSED], xf, &cf);
    cu.fused = cb.fused = &f->v[FC_FUSED];
    fit_full(&unfused_form, o, n, &f->v[FC_UNFUSED], xu, &cu);
    fc_obs *ob = base_obs(o, n), *train_b = NULL;
    if (ob) {
        f->has_base = true;
        fit_full(&unfused_form, ob, n, &f->base, xb, &cb);
        train_b = fc_xmalloc((size_t)n * sizeof *train_b);
    }
    fc_obs *train = fc_xmalloc((size_t)n * sizeof *train);
    double *r = fc_xmalloc((size_t)n * 5 * sizeof *r), *rf = r, *ru = r + n, *rc = r + 2 * n, *rcin = r + 3 * n,
           *rcout = r + 4 * n;
    bool *inside = fc_xmalloc((size_t)n * sizeof *inside);
    double *rs = f->held = fc_xmalloc((size_t)n * sizeof *rs); /* kept for the local correction */
    for (int i = 0; i < n; i++) {
        int m = 0;
        for (int j = 0; j < n; j++)
            if (j != i) {
                if (ob) train_b[m] = ob[j];
                train[m++] = o[j];
            }
        fc_class_fit fi = {.n = n, .has_base = ob != NULL};
        refit(&fused_form, &cf, xf, train, m, &fi.v[FC_FUSED]);
        cu.fused = cb.fused = &fi.v[FC_FUSED];
        refit(&unfused_form, &cu, xu, train, m, &fi.v[FC_UNFUSED]);
        if (ob) refit(&unfused_form, &cb, xb, train_b, m, &fi.base);
        rf[i] = fused_residual(&fi.v[FC_FUSED], &o[i]);
        ru[i] = unfused_residual(&fi.v[FC_UNFUSED], &fi.v[FC_FUSED], &o[i]);
        double ms[FC_NVARIANTS];
        fc_ratio_ci sp;
        fc_model_estimate(&fi, NULL, NULL, NULL, o[i].flops, o[i].bytes, o[i].streamed, o[i].ceil_gflops, o[i].ceil_gbs,
                          false, ms, NULL, &sp);
        rs[i] = log(o[i].speedup) - log(sp.ratio);
        inside[i] = fc_model_inside(train, m, o[i].flops, o[i].bytes);
        f->n_inside += inside[i];
    }
    f->v[FC_FUSED].spread = robust_spread(rf, n);
    f->v[FC_UNFUSED].spread = robust_spread(ru, n);
    /* the errors of the predictor as it is used: each held-out residual less the
     * local correction the other records give it, over the saving weight at the
     * larger of the saving it predicted (ŝ = s·exp(−r)) and the saving measured;
     * the records' noise over the same */
    int nin = 0, nout = 0;
    double nn = 0;
    for (int i = 0; i < n; i++) {
        double r = rs[i] - local_mean(o, n, rs, &o[i].rec->prob, i),
               w = fc_residual_weight(o[i].speedup * exp(-r), o[i].speedup);
        rc[i] = r / w;
        nn += o[i].speedup_sd * o[i].speedup_sd / (w * w);
        if (inside[i]) rcin[nin++] = rc[i];
        else
            rcout[nout++] = rc[i];
    }
    f->spread = fc_speedup_spread(rc, n);
    f->spread_inside = nin > 0 ? fc_speedup_spread(rcin, nin) : 0;
    f->spread_beyond = nout > 0 ? fc_speedup_spread(rcout, nout) : 0;
    f->n_beyond = nout;
    f->noise = sqrt(nn / n);
    free(inside);
    free(r);
    free(train);
    free(train_b);
    free(ob);
}

void fc_class_fit_free(fc_class_fit *f)
{
    free(f->held);
    f->held = NULL;
}
