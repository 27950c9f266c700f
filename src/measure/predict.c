/* predict.c — the model's classes from documents, and predictions for sites
 * (predict.h). */
#include "predict.h"
#include "host_summary.h"
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const source_names[] = {FC_PRED_SOURCE_LIST(FC_VOCAB_NAME)};

const char *fc_pred_source_name(fc_pred_source s) { return s < FC_NSOURCES ? source_names[s] : "?"; }

const char *fc_prediction_decision(const fc_prediction *p)
{
    return p->source == FC_SRC_UNKNOWN ? "unknown" : fc_decision_name(p->decision);
}

/* A dim that switches the implementation (causal) rather than sizing it. */
static bool is_switch(const fc_dim *d) { return !d->derived && d->min == 0 && d->max == 1; }

void fc_problem_class(const fc_problem *p, char *buf, size_t n)
{
    const fc_family *f = fc_family_of(p->pat);
    const int64_t g = p->pat->family == FC_FAM_CONV ? p->d[FC_CONV_G] : 1;
    const bool dw = g > 1 && g == p->d[FC_CONV_C] && g == p->d[FC_CONV_K];
    /* conv_bn_relu with g = c = k is dwconv_bn_relu's chain, which the backends run
     * alike (they dispatch on the geometry): one class */
    const fc_pattern *named = dw && p->pat->id == FC_P_conv_bn_relu ? &fc_patterns[FC_P_dwconv_bn_relu] : p->pat;
    size_t off = (size_t)snprintf(buf, n, "%s %s", named->name, fc_dtype_name(p->dtype));
    if (f->has_layout && off < n) off += (size_t)snprintf(buf + off, n - off, " %s", fc_layout_name(p->layout));
    for (int i = 0; i < f->ndims && off < n; i++)
        if (is_switch(&f->dims[i]))
            off += (size_t)snprintf(buf + off, n - off, " %s=%lld", f->dims[i].name, (long long)p->d[i]);
    /* groups change the implementation, not only the size: a depthwise convolution
     * (g = c) is a memory-bound stencil, a grouped one (1 < g < c) runs its own kernels
     * (leave-one-out on the committed Intel standard calibration predicted grouped
     * conv_bn_relu records 58-86 % off from the dense ones of their class) */
    if (g > 1 && off < n) off += (size_t)snprintf(buf + off, n - off, g == p->d[FC_CONV_C] ? " depthwise" : " grouped");
    /* one query row per sequence (decode) streams the KV cache through GEMV-shaped
     * passes, and the CPU backends run it with a kernel of its own (split-KV); the
     * prefill problems of its class are compute-bound GEMMs */
    if (p->pat->family == FC_FAM_ATTENTION && p->d[FC_ATT_S] == 1 && off < n) snprintf(buf + off, n - off, " decode");
}

/* ------------------------------------------------------------------ building */

/* "AMD EPYC (vm, family 26 model 2, AVX-512 BF16 kernels, 2 threads, warm cache)",
 * "NVIDIA H100 80GB HBM3 (gpu-1, warm cache)": a CPU's family and model and the ISA
 * fusecal's kernels were built for where the host block says (one model name and
 * hostname covers a Zen 4 and a Zen 5 VM, and builds for AVX2 and for AVX-512),
 * so that records of different CPUs or builds are never one machine's */
static void machine_name(const fc_doc *d, const char *device, char *buf, size_t n)
{
    fc_host_summary h;
    fc_host_summary_read(d->host, &h);
    const char *host = h.hostname ? h.hostname : "unknown host", *cache = d->settings.cold ? "cold" : "warm";
    if (!strcmp(device, "cuda"))
        snprintf(buf, n, "%s (%s, %s cache)", h.gpu_name ? h.gpu_name : "unknown GPU", host, cache);
    else {
        char fm[48] = "", isa[48] = "";
        if (h.family >= 0 && h.model >= 0) snprintf(fm, sizeof fm, ", family %d model %d", h.family, h.model);
        if (h.kernels) snprintf(isa, sizeof isa, ", %.32s kernels", h.kernels);
        snprintf(buf, n, "%s (%s%s%s, %d threads, %s cache)", h.cpu_model ? h.cpu_model : "unknown CPU", host, fm, isa,
                 d->settings.threads, cache);
    }
    fc_host_summary_free(&h);
}

static int find_machine(fc_model *m, const char *name, const char *device)
{
    for (int i = 0; i < m->nmachines; i++)
        if (!strcmp(m->machine[i].name, name)) return i;
    m->machine = fc_xrealloc(m->machine, (size_t)(m->nmachines + 1) * sizeof *m->machine);
    fc_strlcpy(m->machine[m->nmachines].name, name, sizeof m->machine[0].name);
    fc_strlcpy(m->machine[m->nmachines].device, device, sizeof m->machine[0].device);
    return m->nmachines++;
}

static void add_pair(fc_model *m, int machine, const char *backend)
{
    for (int i = 0; i < m->npairs; i++)
        if (m->pair[i].machine == machine && !strcmp(m->pair[i].backend, backend)) return;
    m->pair = fc_xrealloc(m->pair, (size_t)(m->npairs + 1) * sizeof *m->pair);
    m->pair[m->npairs].machine = machine;
    fc_strlcpy(m->pair[m->npairs].backend, backend, sizeof m->pair[0].backend);
    m->npairs++;
}

static fc_model_class *find_class(const fc_model *m, int machine, const char *backend, const char *cls)
{
    for (int i = 0; i < m->ncls; i++) {
        fc_model_class *c = &m->cls[i];
        if (c->machine == machine && !strcmp(c->backend, backend) && !strcmp(c->cls, cls)) return c;
    }
    return NULL;
}

static fc_model_class *class_for(fc_model *m, int machine, const char *backend, const char *cls)
{
    fc_model_class *c = find_class(m, machine, backend, cls);
    if (c) return c;
    m->cls = fc_xrealloc(m->cls, (size_t)(m->ncls + 1) * sizeof *m->cls);
    c = &m->cls[m->ncls++];
    memset(c, 0, sizeof *c);
    c->machine = machine;
    fc_strlcpy(c->backend, backend, sizeof c->backend);
    fc_strlcpy(c->cls, cls, sizeof c->cls);
    return c;
}

/* A record the model can use: measured, verified, with its ceilings and counts, and
 * not measured beside another fusecal run (environment.contended: its times are the
 * two runs' together). */
static bool usable(const fc_record *r)
{
    return r->status == FC_STATUS_OK && !r->contended && r->v[FC_UNFUSED].lat.median > 0 &&
           r->v[FC_FUSED].lat.median > 0 && r->ceil_gflops > 0 && r->ceil_gbs > 0 && r->flops > 0 &&
           r->v[FC_UNFUSED].bytes > 0 && r->v[FC_FUSED].bytes > 0;
}

/* The last-level cache of the device a document's record ran on: the CPU's L3 (or
 * L2), a GPU's L2; 0 when the host block does not say. */
/* A positive number field of obj, else 0. */
static double positive(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 0;
}

/* The host block's entry of the device a document's records ran on. */
static const cJSON *device_block(const fc_doc *d, const char *device)
{
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->host, "devices"), device);
}

static double llc_of(const fc_doc *d, const char *device)
{
    const cJSON *dev = device_block(d, device), *cb = cJSON_GetObjectItemCaseSensitive(dev, "cache_bytes");
    const char *names[] = {"L3", "L2", "l2"};
    for (size_t i = 0; i < FC_ARRAY_LEN(names); i++)
        if (positive(cb, names[i]) > 0) return positive(cb, names[i]);
    if (positive(dev, "llc_assumed_bytes") > 0) return positive(dev, "llc_assumed_bytes"); /* what the kernels took */
    return positive(dev, "l2_bytes");
}

/* The mid-level caches a document's CPU run had: its cores' L2 times its threads,
 * when the host block names an L3 above them; 0 otherwise (a GPU's L2 is its last
 * level). */
static double mlc_of(const fc_doc *d, const char *device)
{
    const cJSON *cb = cJSON_GetObjectItemCaseSensitive(device_block(d, device), "cache_bytes");
    if (!(positive(cb, "L3") > 0)) return 0;
    return positive(cb, "L2") * (d->settings.threads > 0 ? d->settings.threads : 1);
}

/* What backend b's variants of p write past the caches on a device whose last-level
 * cache holds llc bytes (fc_backend.streamed_bytes); 0 where the registry has no
 * such backend or it says nothing. */
static void streamed_of(const fc_registry *reg, const char *b, const fc_problem *p, double llc,
                        double out[FC_NVARIANTS])
{
    const fc_backend *be = reg ? fc_backend_find(reg, b) : NULL;
    for (int v = 0; v < FC_NVARIANTS; v++)
        out[v] = be && be->streamed_bytes ? be->streamed_bytes(p, (fc_variant)v, llc) : 0;
}

/* The bandwidth-by-working-set curve of the device a document's records ran on. */
static void curve_of(const fc_doc *d, const char *device, fc_cache_curve *out)
{
    fc_ceilings c;
    fc_ceilings_read(cJSON_GetObjectItemCaseSensitive(d->ceilings, device), &c);
    out->n = 0;
    for (int i = 0; i < c.n_bw; i++)
        if (c.bw[i].footprint_bytes > 0 && c.bw[i].gbs > 0 &&
            (out->n == 0 || c.bw[i].footprint_bytes > out->footprint[out->n - 1])) {
            out->footprint[out->n] = c.bw[i].footprint_bytes;
            out->gbs[out->n++] = c.bw[i].gbs;
        }
    if (out->n >= 2 && out->n < FC_MAX_BW_POINTS && c.bandwidth_gbs > 0 && c.bandwidth_gbs < out->gbs[out->n - 1]) {
        out->footprint[out->n] = 2 * out->footprint[out->n - 1];
        out->gbs[out->n++] = c.bandwidth_gbs;
    }
}

static void add_obs(const fc_model *m, fc_model_class *c, const fc_record *r, double llc, double mlc,
                    const fc_cache_curve *curve)
{
    fc_obs o = {.rec = r,
                .flops = r->flops,
                .ceil_gflops = r->ceil_gflops,
                .ceil_gbs = r->ceil_gbs,
                .llc_bytes = llc,
                .mlc_bytes = mlc,
                .curve = *curve};
    for (int v = 0; v < FC_NVARIANTS; v++) {
        o.bytes[v] = r->v[v].bytes;
        o.ms[v] = r->v[v].lat.median;
    }
    streamed_of(m->reg, r->backend, &r->prob, llc, o.streamed);
    for (int v = 0; v < FC_NVARIANTS; v++) /* what the record says it did, where it says */
        if (r->v[v].impl.streamed_bytes >= 0) o.streamed[v] = r->v[v].impl.streamed_bytes;
    o.ms_base = r->v[fc_record_decisive_base(r)].lat.median;
    const fc_ratio_ci *sp = fc_record_decisive_speedup(r);
    o.speedup = sp->ratio;
    /* the interval's half-width over its t quantile (df: the rounds less one) */
    o.speedup_sd = sp->lo > 0 && sp->hi > sp->lo && r->rounds >= 2 ? log(sp->hi / sp->lo) / (2 * fc_t975(r->rounds - 1))
                                                                   : 0;
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->obs[i].rec->problem, r->problem)) {
            c->obs[i] = o; /* measured again later: the later record */
            return;
        }
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->obs = fc_xrealloc(c->obs, (size_t)c->cap * sizeof *c->obs);
    }
    c->obs[c->n++] = o;
}

void fc_model_build(fc_model *m, const fc_doc *docs, int ndocs, const fc_registry *reg)
{
    memset(m, 0, sizeof *m);
    m->reg = reg;
    for (int d = 0; d < ndocs; d++) {
        const char *curve_device = NULL; /* the device the curve below was read for */
        fc_cache_curve curve;
        for (int i = 0; i < docs[d].n; i++) {
            const fc_record *r = &docs[d].rec[i];
            if (!usable(r)) continue;
            char name[sizeof m->machine[0].name], cls[sizeof m->cls[0].cls];
            machine_name(&docs[d], r->device, name, sizeof name);
            int mi = find_machine(m, name, r->device);
            add_pair(m, mi, r->backend);
            fc_problem_class(&r->prob, cls, sizeof cls);
            if (!curve_device || strcmp(curve_device, r->device)) { /* once per document and device */
                curve_of(&docs[d], r->device, &curve);
                curve_device = r->device;
            }
            add_obs(m, class_for(m, mi, r->backend, cls), r, llc_of(&docs[d], r->device), mlc_of(&docs[d], r->device),
                    &curve);
        }
    }
    for (int i = 0; i < m->ncls; i++) {
        fc_model_class *c = &m->cls[i];
        if (c->n < FC_PREDICT_MIN_RECORDS) continue;
        fc_fit_class(c->obs, c->n, &c->fit);
        c->fitted = true;
    }
}

void fc_model_free(fc_model *m)
{
    for (int i = 0; i < m->ncls; i++) {
        free(m->cls[i].obs);
        fc_class_fit_free(&m->cls[i].fit);
    }
    free(m->cls);
    free(m->machine);
    free(m->pair);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------------ the estimate */

/* The spread of the speedup itself from a squared spread and noise: the records'
 * noise taken out in quadrature, never below half the spread. */
static double model_spread(double spread2, double noise2) { return sqrt(fmax(spread2 - noise2, 0.25 * spread2)); }

/* The intervals around s at t: the speedup's (ci95) from the model spread, a
 * measurement's (rerun95) from the whole one; each side's log half-width t times
 * the spread, or, weighted, fc_weighted_half_width's at that. */
static void intervals_at(double s, double t, double spread, double model, bool weighted, fc_ratio_ci *out)
{
    const double k[2] = {t * model, t * spread};
    double below[2], above[2];
    for (int i = 0; i < 2; i++) {
        below[i] = weighted ? fc_weighted_half_width(s, k[i], -1) : k[i];
        above[i] = weighted ? fc_weighted_half_width(s, k[i], 1) : k[i];
    }
    out->ratio = s;
    out->lo = s * exp(-below[0]);
    out->hi = s * exp(above[0]);
    out->rerun_lo = s * exp(-below[1]);
    out->rerun_hi = s * exp(above[1]);
}

void fc_speedup_intervals(double s, double spread, double noise, int n, fc_ratio_ci *out)
{
    intervals_at(s, fc_t975(n - 1), spread, model_spread(spread * spread, noise * noise), false, out);
}

double fc_saving_weight(double s) { return FC_PREDICT_SAVING_W0 + fabs(1 - 1 / s); }

double fc_residual_weight(double predicted, double measured)
{
    return fmax(fc_saving_weight(predicted), fc_saving_weight(measured));
}

/* x_{j+1} = k·max(w(s), w(s·e^(dir·x_j))) from x_0 = k·w(s): the max is
 * non-decreasing in x, so the x_j rise to the least fixed point; above s the
 * weight is bounded (below 1 + W0) and they converge, below it a loss's weight
 * grows as 1/s and they may not. */
double fc_weighted_half_width(double s, double k, int dir)
{
    const double cap = log(FC_PREDICT_UNBOUNDED), w0 = fc_saving_weight(s);
    double x = k * w0;
    for (int i = 0; i < 1000 && x < cap; i++) {
        double next = k * fmax(w0, fc_saving_weight(s * exp(dir * x)));
        if (next - x <= 1e-12 * x) return next;
        x = next;
    }
    return fmin(x, cap);
}

void fc_model_prior(const fc_model *m, int machine, const fc_model_class *skip, fc_spread_prior *out)
{
    memset(out, 0, sizeof *out);
    const int cap = m->ncls > 0 ? m->ncls : 1;
    double *s2 = fc_xmalloc((size_t)cap * 3 * sizeof *s2), *n2 = s2 + cap, *b2 = s2 + 2 * cap;
    int k = 0, kb = 0;
    for (int i = 0; i < m->ncls; i++) {
        const fc_model_class *c = &m->cls[i];
        if (c == skip || !c->fitted || c->machine != machine) continue;
        s2[k] = c->fit.spread * c->fit.spread;
        n2[k++] = c->fit.noise * c->fit.noise;
        if (c->fit.n_beyond > 0) b2[kb++] = c->fit.spread_beyond * c->fit.spread_beyond;
    }
    if (k >= FC_PREDICT_PRIOR_CLASSES) {
        out->spread2 = fc_median(s2, k);
        out->noise2 = fc_median(n2, k);
        out->classes = k;
    }
    if (kb >= FC_PREDICT_PRIOR_CLASSES) {
        out->spread2_beyond = fc_median(b2, kb);
        out->classes_beyond = kb;
    }
    free(s2);
}

void fc_class_intervals(double s, double spread, double noise, int n, const fc_spread_prior *prior, fc_ratio_ci *out)
{
    double ss = spread * spread, nn = noise * noise, df = n - 1;
    if (prior && prior->classes > 0) {
        ss = (df * ss + FC_PREDICT_PRIOR_RECORDS * prior->spread2) / (df + FC_PREDICT_PRIOR_RECORDS);
        nn = (df * nn + FC_PREDICT_PRIOR_RECORDS * prior->noise2) / (df + FC_PREDICT_PRIOR_RECORDS);
        df += FC_PREDICT_PRIOR_RECORDS;
    }
    /* as fc_speedup_intervals, each side's width by the weight at its own end */
    intervals_at(s, fc_t975((int)df), sqrt(ss), model_spread(ss, nn), true, out);
}

void fc_model_estimate(const fc_class_fit *fit, const fc_spread_prior *prior, const fc_obs *o, const fc_problem *p,
                       double flops, const double bytes[FC_NVARIANTS], const double streamed[FC_NVARIANTS],
                       double ceil_gflops, double ceil_gbs, bool inside, double ms[FC_NVARIANTS], double *base_ms,
                       fc_ratio_ci *speedup)
{
    ms[FC_FUSED] = fc_fit_fused_ms(&fit->v[FC_FUSED], flops, bytes[FC_FUSED], streamed[FC_FUSED], ceil_gflops,
                                   ceil_gbs);
    ms[FC_UNFUSED] = fc_fit_unfused_ms(&fit->v[FC_UNFUSED], &fit->v[FC_FUSED], ms[FC_FUSED], flops, bytes, streamed,
                                       ceil_gflops, ceil_gbs);
    const double base = fit->has_base ? fc_fit_unfused_ms(&fit->base, &fit->v[FC_FUSED], ms[FC_FUSED], flops, bytes,
                                                          streamed, ceil_gflops, ceil_gbs)
                                      : ms[FC_UNFUSED];
    if (base_ms) *base_ms = base;
    memset(speedup, 0, sizeof *speedup);
    double s = base / ms[FC_FUSED];
    if (o && fit->held) s *= exp(fc_local_correction(fit, o, p));
    /* the spread of the records placed as the problem is: inside the others' span (an
     * interpolation) or beyond it (an extrapolation, toward the pool's such spread);
     * every record's where the class or the pool has too few of them */
    double spread = fit->spread;
    int n = fit->n;
    fc_spread_prior pb;
    if (inside && fit->n_inside >= FC_PREDICT_MIN_INSIDE) {
        spread = fit->spread_inside;
        n = fit->n_inside;
    } else if (!inside && fit->n_beyond > 0 && prior && prior->classes_beyond > 0) {
        spread = fit->spread_beyond;
        n = fit->n_beyond;
        pb = *prior;
        pb.spread2 = prior->spread2_beyond;
        prior = &pb;
    }
    fc_class_intervals(s, spread, fit->noise, n, prior, speedup);
}

static void span_of(const fc_obs *o, int n, int what, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = 0;
    for (int i = 0; i < n; i++) {
        double x = what == 0 ? o[i].flops : o[i].bytes[what - 1];
        *lo = fmin(*lo, x);
        *hi = fmax(*hi, x);
    }
}

bool fc_model_inside(const fc_obs *o, int n, double flops, const double bytes[FC_NVARIANTS])
{
    for (int w = 0; w < 3; w++) {
        double x = w == 0 ? flops : bytes[w - 1], lo, hi;
        span_of(o, n, w, &lo, &hi);
        if (x < lo || x > hi) return false;
    }
    return true;
}

bool fc_model_within_span(const fc_obs *o, int n, double flops, const double bytes[FC_NVARIANTS], char *why,
                          size_t nwhy)
{
    static const char *const what_name[] = {"FLOPs", "unfused bytes", "fused bytes"};
    for (int w = 0; w < 3; w++) {
        double x = w == 0 ? flops : bytes[w - 1], lo, hi;
        span_of(o, n, w, &lo, &hi);
        if (x >= lo / FC_PREDICT_SPAN && x <= hi * FC_PREDICT_SPAN) continue;
        snprintf(why, nwhy, "%s %.3g lie %.1fx %s the measured %.3g to %.3g; the model goes %gx beyond at most",
                 what_name[w], x, x < lo ? lo / x : x / hi, x < lo ? "below" : "above", lo, hi, FC_PREDICT_SPAN);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ predictions */

double fc_problem_distance(const fc_problem *a, const fc_problem *b)
{
    const fc_family *f = fc_family_of(a->pat);
    double s = 0;
    for (int i = 0; i < f->ndims; i++) {
        if (f->dims[i].derived || is_switch(&f->dims[i])) continue;
        double d = log2(1.0 + (double)a->d[i]) - log2(1.0 + (double)b->d[i]);
        s += d * d;
    }
    return sqrt(s);
}

static void nearest(const fc_model_class *c, const fc_problem *p, fc_prediction *out)
{
    int idx[FC_PREDICT_NEAREST];
    double d[FC_PREDICT_NEAREST];
    out->nnearest = fc_nearest_records(c->obs, c->n, p, FC_PREDICT_NEAREST, idx, d);
    for (int i = 0; i < out->nnearest; i++) out->nearest[i] = c->obs[idx[i]].rec;
}

static void measured(const fc_record *r, fc_prediction *out)
{
    out->source = FC_SRC_MEASURED;
    out->record = r;
    out->unfused_ms = fc_record_decisive_ms(r, FC_UNFUSED);
    out->fused_ms = fc_record_decisive_ms(r, FC_FUSED);
    out->speedup = *fc_record_decisive_speedup(r);
    out->control_ms = fc_record_decisive_base(r) == FC_CONTROL ? r->v[FC_CONTROL].lat.median : 0;
    out->threshold = r->threshold;
    out->decision = r->decision;
    if (r->state.withheld)
        snprintf(out->reason, sizeof out->reason,
                 "a record of this problem; its interval's %s withheld: the machine's state moved under its rounds "
                 "(span %.2fx, %d rounds against)",
                 fc_decision_name(r->state.said), r->state.span, r->state.rounds_against);
    else
        snprintf(out->reason, sizeof out->reason, "a record of this problem");
}

static void predicted(const fc_model *m, const fc_model_class *c, const fc_problem *p, fc_prediction *out)
{
    fc_cost cost = {0};
    fc_family_of(p->pat)->cost(p, &cost);
    nearest(c, p, out);
    const fc_record *near = out->nearest[0];
    if (!fc_model_within_span(c->obs, c->n, cost.flops, cost.bytes, out->reason, sizeof out->reason)) return;
    double ms[FC_NVARIANTS], base, streamed[FC_NVARIANTS];
    fc_spread_prior prior;
    fc_model_prior(m, c->machine, c, &prior);
    streamed_of(m->reg, c->backend, p, c->obs[0].llc_bytes, streamed); /* a class's records share a machine */
    fc_model_estimate(&c->fit, &prior, c->obs, p, cost.flops, cost.bytes, streamed, near->ceil_gflops, near->ceil_gbs,
                      fc_model_inside(c->obs, c->n, cost.flops, cost.bytes), ms, &base, &out->speedup);
    out->source = FC_SRC_PREDICTED;
    out->cls = c;
    out->unfused_ms = ms[FC_UNFUSED];
    out->fused_ms = ms[FC_FUSED];
    out->control_ms = c->fit.has_base ? base : 0;
    out->threshold = near->threshold;
    out->decision = fc_decide(&out->speedup, out->threshold);
    snprintf(out->reason, sizeof out->reason, "fitted to %d records of %s", c->n, c->cls);
}

static void predict_one(const fc_model *m, const fc_site *s, const fc_model_backend *pair, fc_prediction *out)
{
    char cls[sizeof m->cls[0].cls], problem[256];
    fc_problem_class(&s->prob, cls, sizeof cls);
    fc_problem_string(&s->prob, problem, sizeof problem);
    out->machine = pair->machine;
    fc_strlcpy(out->backend, pair->backend, sizeof out->backend);
    out->source = FC_SRC_UNKNOWN;
    const fc_model_class *c = find_class(m, pair->machine, pair->backend, cls);
    if (!c) {
        snprintf(out->reason, sizeof out->reason, "no record of %s", cls);
        return;
    }
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->obs[i].rec->problem, problem)) {
            measured(c->obs[i].rec, out);
            return;
        }
    if (!c->fitted) {
        nearest(c, &s->prob, out);
        snprintf(out->reason, sizeof out->reason, "%d record%s of %s; the model needs %d", c->n, c->n == 1 ? "" : "s",
                 cls, FC_PREDICT_MIN_RECORDS);
        return;
    }
    predicted(m, c, &s->prob, out);
}

int fc_predict_sites(const fc_model *m, const fc_site *sites, int nsites, fc_prediction **out)
{
    int np = nsites * m->npairs;
    *out = fc_xcalloc(np > 0 ? (size_t)np : 1, sizeof **out);
    for (int s = 0; s < nsites; s++)
        for (int k = 0; k < m->npairs; k++) {
            fc_prediction *p = &(*out)[s * m->npairs + k];
            p->site = s;
            predict_one(m, &sites[s], &m->pair[k], p);
        }
    return np;
}

/* ------------------------------------------------------------------ summary */

static void summarize_one(const fc_site *site, const fc_prediction *p, fc_predict_summary *s)
{
    s->sites++;
    if (p->source == FC_SRC_UNKNOWN) return;
    double mult = site->multiplicity, tu = p->control_ms > 0 ? p->control_ms : p->unfused_ms;
    s->known++;
    s->unfused_ms += mult * p->unfused_ms;
    if (p->speedup.hi < 1) s->losing++;
    if (p->decision != FC_DECIDE_YES) return;
    s->fuse++;
    /* a record's latencies where measured (those of the timing that decided); the
     * speedup's where predicted, which carries the local correction the latencies do
     * not; each site's interval holds its point */
    const double pt = mult * (p->source == FC_SRC_MEASURED ? tu - p->fused_ms : tu * (1 - 1 / p->speedup.ratio));
    s->saving_ms += pt;
    s->saving_lo += fmin(pt, mult * tu * (1 - 1 / p->speedup.lo));
    s->saving_hi += fmax(pt, mult * tu * (isinf(p->speedup.hi) ? 1 : 1 - 1 / p->speedup.hi));
}

int fc_predict_summarize(const fc_model *m, const fc_site *sites, const fc_prediction *p, int np,
                         fc_predict_summary **out)
{
    *out = fc_xcalloc(m->npairs > 0 ? (size_t)m->npairs : 1, sizeof **out);
    for (int k = 0; k < m->npairs; k++) {
        fc_predict_summary *s = &(*out)[k];
        s->machine = m->pair[k].machine;
        fc_strlcpy(s->backend, m->pair[k].backend, sizeof s->backend);
        for (int i = 0; i < np; i++)
            if (p[i].machine == s->machine && !strcmp(p[i].backend, s->backend))
                summarize_one(&sites[p[i].site], &p[i], s);
    }
    return m->npairs;
}
