/* calibrate.c — see calibrate.h. */
#include "calibrate.h"
#include "ceilcache.h"
#include "host.h"
#include "peers.h"
#include "rounds_wire.h"
#include "signals.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>


void fc_plan_add(fc_plan *plan, const fc_problem *p, const fc_backend *b, double threshold)
{
    if (plan->n == plan->cap) {
        plan->cap = plan->cap ? 2 * plan->cap : 64;
        plan->jobs = fc_xrealloc(plan->jobs, (size_t)plan->cap * sizeof *plan->jobs);
    }
    plan->jobs[plan->n++] = (fc_job){*p, b, threshold};
}

void fc_plan_free(fc_plan *plan)
{
    free(plan->jobs);
    memset(plan, 0, sizeof *plan);
}

/* ------------------------------------------------------------------ session */

static int session_find(const fc_session *s, const char *name)
{
    for (int i = 0; i < s->ndev; i++)
        if (!strcmp(s->dev[i]->name, name)) return i;
    return -1;
}

int fc_session_add(fc_session *s, const fc_device *d, const fc_settings *set, fc_err *e)
{
    char why[256] = "";
    if (session_find(s, d->name) >= 0) return 0;
    if (!d->available(why, sizeof why)) return fc_errf(e, "device '%s' is not usable here: %s", d->name, why);
    if (s->ndev >= FC_MAX_DEVICES) return fc_errf(e, "too many devices");
    fc_device_opts o = {.threads = set ? set->threads : 0, .attn_kernel = set ? set->attn_kernel : FC_ATTN_REFERENCE};
    if (d->open(&o, &s->ctx[s->ndev], e) != 0) return -1;
    s->dev[s->ndev++] = d;
    return 0;
}

int fc_session_open(fc_session *s, const fc_registry *reg, const fc_plan *plan, const fc_settings *set, fc_err *e)
{
    memset(s, 0, sizeof *s);
    s->reg = reg;
    if (fc_session_add(s, reg->device[FC_DEV_cpu], set, e) != 0) return -1;
    for (int i = 0; plan && i < plan->n; i++) {
        const char *dn = plan->jobs[i].backend->device;
        if (session_find(s, dn) >= 0) continue;
        const fc_device *d = fc_device_find(reg, dn);
        if (!d)
            return fc_errf(e, "backend '%s' needs device '%s', which this build lacks", plan->jobs[i].backend->name,
                           dn);
        if (fc_session_add(s, d, set, e) != 0) {
            fc_session_close(s);
            return -1;
        }
    }
    return 0;
}

int fc_session_reuse_ceilings(fc_session *s, double *age_s)
{
    int n = 0;
    *age_s = 0;
    for (int i = 0; i < s->ndev; i++) {
        if (s->measured[i]) continue;
        cJSON *host = fc_host_block(s->reg, &s->dev[i], &s->ctx[i], 1);
        double age;
        if (fc_ceilings_cache_load(s->dev[i]->name, host, &s->ceil[i], &age)) {
            s->measured[i] = true;
            n++;
            if (age > *age_s) *age_s = age;
        }
        cJSON_Delete(host);
    }
    return n;
}

/* Device i's ceilings measured now: the device's own, and the best GEMM rate of any
 * library on it. */
static int measure_device(fc_session *s, int i, fc_ceilings *c, fc_err *e)
{
    if (s->dev[i]->measure_ceilings(s->ctx[i], c, e) != 0) return -1;
    fc_utc_timestamp(c->measured_utc);
    /* the GEMM ceiling is the best rate any library on the device reaches */
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const fc_backend *b = s->reg->backend[k];
        char why[256];
        if (!b || !b->gemm_gflops || strcmp(b->device, s->dev[i]->name) || !b->available(why, sizeof why)) continue;
        for (int dt = 0; dt < FC_NDTYPES; dt++) {
            double g = b->gemm_gflops((fc_dtype)dt);
            if (g <= 0) continue;
            size_t l = strlen(c->method);
            snprintf(c->method + l, sizeof c->method - l, "; %s %s GEMM %.1f GFLOP/s (its best call of repeated runs)",
                     b->name, fc_dtype_name((fc_dtype)dt), g);
            if (g > c->gflops[dt]) c->gflops[dt] = g;
        }
    }
    return 0;
}

static void keep_ceilings(fc_session *s, int i)
{
    cJSON *host = fc_host_block(s->reg, &s->dev[i], &s->ctx[i], 1);
    fc_ceilings_cache_save(s->dev[i]->name, host, &s->ceil[i]);
    cJSON_Delete(host);
}

int fc_session_ceilings(fc_session *s, fc_err *e)
{
    for (int i = 0; i < s->ndev; i++) {
        if (s->measured[i]) continue;
        if (measure_device(s, i, &s->ceil[i], e) != 0) return -1;
        keep_ceilings(s, i);
        s->measured[i] = true;
    }
    return 0;
}

void fc_session_close(fc_session *s)
{
    for (int i = 0; i < s->ndev; i++) s->dev[i]->close(s->ctx[i]);
    memset(s, 0, sizeof *s);
}

void fc_session_describe(const fc_session *s, cJSON **host, cJSON **ceilings)
{
    *host = fc_host_block(s->reg, s->dev, s->ctx, s->ndev);
    *ceilings = cJSON_CreateObject();
    for (int i = 0; i < s->ndev; i++)
        if (s->measured[i]) cJSON_AddItemToObject(*ceilings, s->dev[i]->name, fc_ceilings_json(&s->ceil[i]));
}

bool fc_test_fast_settings(fc_settings *s)
{
    if (!fc_test_fast()) return false;
    s->rounds = 2;
    s->stop.min_samples = 2;
    s->stop.min_time = 0;
    s->stop.max_noise = fc_settings_table[FC_SET_MAX_NOISE].max;
    s->stop.max_time = 1e-3;
    return true;
}

/* ------------------------------------------------------------------ one job */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* A problem's seed in a run: its inputs, its reference's samples and its record's
 * `seed` (the run's seed mixed with the problem string's hash). */
static uint64_t problem_seed(const fc_settings *set, const char *ps) { return fc_seed_mix(set->seed, hash_str(ps)); }

/* Each variant's bound under its ceilings, from its intensity. */
static void set_bounds(fc_record *r)
{
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        bool mem = vr->ceil_gbs > 0 && vr->intensity * vr->ceil_gbs < r->peak_gflops;
        fc_strlcpy(vr->bound, mem ? "memory" : "compute", sizeof vr->bound);
    }
}

/* The rate of a chain whose ops each stream at rate(ctx, b), b the op's own bytes:
 * the chain's bytes over the sum of the ops' times. Ops without a rate (rate <= 0)
 * are left out; 0 when none has one. Both the device's ceilings (chain_bandwidth)
 * and those measured beside a round (beside_round) combine by this rule. */
static double chain_rate(const fc_cost *k, double (*rate)(const void *ctx, double bytes), const void *ctx)
{
    double bytes = 0, s = 0;
    for (int i = 0; i < FC_MAX_OPS; i++) {
        const double b = k->op_bytes[i], g = b > 0 ? rate(ctx, b) : 0;
        if (!(g > 0)) continue;
        bytes += b;
        s += b / g;
    }
    return s > 0 ? bytes / s : 0;
}

static double ceilings_rate(const void *c, double bytes) { return fc_ceilings_bandwidth_at(c, bytes, false); }

/* The bandwidth ceiling of the unfused chain: each op streaming at the rate of its
 * own working set (its bytes), combined by chain_rate; the device memory's with
 * cold caches. */
static double chain_bandwidth(const fc_cost *k, const fc_ceilings *c, bool cold)
{
    const double g = cold || c->n_bw <= 0 ? 0 : chain_rate(k, ceilings_rate, c);
    return g > 0 ? g : c->bandwidth_gbs;
}

/* The share of the fused op's bytes that are reads: all but its output, written
 * once. */
static double fused_read_share(const fc_problem *p, double bytes)
{
    fc_workload w = {.prob = p};
    fc_family_of(p->pat)->shapes(p, &w);
    double out = (double)w.out_n * (double)fc_dtype_size(p->dtype);
    return bytes > 0 ? fmax(0, bytes - out) / bytes : 0;
}

/* The record's ceilings: its device's, for its dtype (fp32's where the device
 * measured none for it): the GEMM rate and the arithmetic peak; each variant's bandwidth ceiling that of its working set
 * (with warm caches a problem that fits a cache streams at that cache's rate, and
 * a percentage of the device memory's would pass 100): the fused op's, each op's
 * of the unfused chain (and the control, which runs its ops); then its bound. */
static void set_ceilings(fc_record *r, const fc_ceilings *c, bool cold)
{
    r->ceil_gflops = c->gflops[r->prob.dtype] > 0 ? c->gflops[r->prob.dtype] : c->gflops[FC_FP32];
    r->peak_gflops = fc_ceilings_peak(c, r->prob.dtype);
    r->ceil_gbs = c->bandwidth_gbs;
    fc_cost cost = {0};
    fc_family_of(r->prob.pat)->cost(&r->prob, &cost);
    double chain = chain_bandwidth(&cost, c, cold);
    /* the fused op's reads bound it where a read-only stream is slower than a copy */
    double share = fused_read_share(&r->prob, cost.bytes[FC_FUSED]);
    r->v[FC_FUSED].read_bytes = share * cost.bytes[FC_FUSED];
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        r->v[v].ceil_gbs = v == FC_FUSED ? fc_ceilings_stream_at(c, cost.bytes[FC_FUSED], cold, share) : chain;
    set_bounds(r);
}

/* The variant whose bytes variant v moves: the control writes and re-reads what the
 * unfused chain does. */
static int bytes_variant(int v) { return v == FC_CONTROL ? FC_UNFUSED : v; }

static void fill_metrics(fc_record *r, const fc_cost *c)
{
    r->flops = c->flops;
    r->flops_padded = c->flops_padded;
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        const int cv = bytes_variant(v);
        vr->bytes = c->bytes[cv];
        vr->peak_inter_bytes = c->peak_inter[cv];
        /* the fused op's bytes are each tensor once; the chain's largest op's */
        vr->footprint_bytes = cv == FC_FUSED ? c->bytes[FC_FUSED] : 0;
        for (int i = 0; cv == FC_UNFUSED && i < FC_MAX_OPS; i++)
            vr->footprint_bytes = fmax(vr->footprint_bytes, c->op_bytes[i]);
        vr->intensity = c->bytes[cv] > 0 ? c->flops / c->bytes[cv] : 0;
    }
    r->traffic_reduction = c->bytes[FC_UNFUSED] > 0 ? 1.0 - c->bytes[FC_FUSED] / c->bytes[FC_UNFUSED] : 0;
}

/* The arithmetic peak beside the rounds: the median of the rounds', as a rate is of
 * their pooled samples' median (0: none measured). */
static double peak_beside(const fc_record *r)
{
    double pk[FC_MAX_ROUNDS];
    int n = 0;
    for (int k = 0; k < r->rounds && k < FC_MAX_ROUNDS; k++)
        if (r->round[k].beside_gflops > 0) pk[n++] = r->round[k].beside_gflops;
    return n ? fc_median(pk, n) : 0;
}

static void fill_rates(fc_record *r)
{
    r->peak_beside_gflops = peak_beside(r);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        if (v == FC_CONTROL && !r->has_control) continue;
        double s = vr->lat.median * 1e-3;
        vr->gflops = r->flops / s / 1e9; /* the problem's FLOPs: rates compare across algorithms */
        vr->gbs = vr->bytes / s / 1e9;
        /* the percentages of the work the implementation did (fc_impl.flops_performed) */
        double done = vr->impl.flops_performed > 0 ? vr->impl.flops_performed : r->flops;
        double rate = done / s / 1e9, intensity = vr->bytes > 0 ? done / vr->bytes : vr->intensity;
        vr->pct_peak_flops = r->peak_gflops > 0 ? 100 * rate / r->peak_gflops : 0;
        vr->pct_gemm = r->ceil_gflops > 0 ? 100 * rate / r->ceil_gflops : 0;
        vr->pct_peak_bw = vr->ceil_gbs > 0 ? 100 * vr->gbs / vr->ceil_gbs : 0;
        double roof = fmin(r->peak_gflops, intensity * vr->ceil_gbs);
        vr->pct_roofline = roof > 0 ? 100 * rate / roof : 0;
        /* the ceiling beside the rounds: the median of the rounds', as the rate is of
         * their pooled samples' median */
        double bs[FC_MAX_ROUNDS];
        int nb = 0;
        for (int k = 0; k < r->rounds && k < FC_MAX_ROUNDS; k++)
            if (r->round[k].beside_gbs[v] > 0) bs[nb++] = r->round[k].beside_gbs[v];
        vr->beside_gbs = nb ? fc_median(bs, nb) : 0;
        vr->pct_bw_beside = vr->beside_gbs > 0 ? 100 * vr->gbs / vr->beside_gbs : 0;
        vr->pct_peak_beside = r->peak_beside_gflops > 0 ? 100 * rate / r->peak_beside_gflops : 0;
        /* faster than a measured ceiling: the ceiling or the count is off, never
         * hidden (the GEMM rate is no ceiling: a blocked convolution passes it) */
        vr->over_ceiling = vr->pct_peak_flops > 100 || vr->pct_peak_bw > 100 || vr->pct_roofline > 100 ||
                           vr->pct_bw_beside > 100 || vr->pct_peak_beside > 100;
    }
}

/* Whether a record of device `dev` ran a variant above its arithmetic peak or its
 * bandwidth ceiling. */
static bool over_ceilings(const fc_doc *doc, const char *dev)
{
    for (int k = 0; k < doc->n; k++) {
        const fc_record *r = &doc->rec[k];
        if (r->status != FC_STATUS_OK || strcmp(r->device, dev)) continue;
        for (int v = 0; v < FC_MAX_VARIANTS; v++)
            if (r->v[v].pct_peak_flops > 100 || r->v[v].pct_peak_bw > 100) return true;
    }
    return false;
}

int fc_session_recheck_ceilings(fc_session *s, fc_doc *doc, fc_err *e)
{
    int again = 0;
    for (int i = 0; i < s->ndev; i++) {
        if (!s->measured[i] || !over_ceilings(doc, s->dev[i]->name)) continue;
        fc_ceilings *c = &s->ceil[i];
        char *before = strstr(c->method, "; measured again at"); /* a kept measurement's own later ones */
        if (before) *before = 0;
        for (int t = 0; t < FC_RECHECK_TRIES && over_ceilings(doc, s->dev[i]->name); t++) {
            fc_ceilings now;
            memset(&now, 0, sizeof now);
            if (measure_device(s, i, &now, e) != 0) {
                if (t == 0) return -1;
                break; /* the measurements kept so far stand */
            }
            fc_ceilings_keep_better(c, &now);
            size_t l = strlen(c->method);
            snprintf(c->method + l, sizeof c->method - l,
                     "; measured again at %s, after the run, as a record ran above a ceiling (fp32 peak %.1f "
                     "GFLOP/s, GEMM %.1f GFLOP/s, %.1f GB/s that time): the best of the measurements kept",
                     now.measured_utc, now.peak_gflops[FC_FP32], now.gflops[FC_FP32], now.bandwidth_gbs);
            for (int k = 0; k < doc->n; k++) {
                fc_record *r = &doc->rec[k];
                if (r->status != FC_STATUS_OK || strcmp(r->device, s->dev[i]->name)) continue;
                set_ceilings(r, c, doc->settings.cold);
                fill_rates(r);
            }
        }
        c->cached = false;
        keep_ceilings(s, i);
        cJSON_DeleteItemFromObjectCaseSensitive(doc->ceilings, s->dev[i]->name);
        cJSON_AddItemToObject(doc->ceilings, s->dev[i]->name, fc_ceilings_json(c));
        again++;
    }
    return again;
}

/* Samples of every variant pooled over rounds, and each round's summary. */
typedef struct pooled {
    fc_samples v[FC_MAX_VARIANTS];
    double logr[FC_MAX_ROUNDS];        /* log unfused/fused per round */
    double logr_impl[FC_MAX_ROUNDS];   /* log unfused/control */
    double logr_fusion[FC_MAX_ROUNDS]; /* log control/fused */
    int nrounds;
} pooled;

/* Median over a round's tuples of a[i]/b[i]. */
static double tuple_ratio(const double *a, const double *b, int n)
{
    double *t = fc_xmalloc((size_t)(n ? n : 1) * sizeof *t);
    for (int i = 0; i < n; i++) t[i] = a[i] / b[i];
    double m = fc_median(t, n);
    free(t);
    return m;
}

static void pool_add(pooled *p, fc_samples in[FC_MAX_VARIANTS], int nvar)
{
    for (int v = 0; v < nvar; v++) {
        fc_samples *o = &p->v[v];
        if (o->n + in[v].n > o->cap) {
            o->cap = o->n + in[v].n + 256;
            o->ms = fc_xrealloc(o->ms, (size_t)o->cap * sizeof *o->ms);
        }
        if (in[v].n) memcpy(o->ms + o->n, in[v].ms, (size_t)in[v].n * sizeof *o->ms); /* interrupted: maybe none */
        o->n += in[v].n;
        o->batch = in[v].batch;
        o->sampled_s += in[v].sampled_s;
    }
    int k = p->nrounds++, n = in[FC_UNFUSED].n;
    p->logr[k] = log(tuple_ratio(in[FC_UNFUSED].ms, in[FC_FUSED].ms, n));
    if (nvar > FC_CONTROL) {
        p->logr_impl[k] = log(tuple_ratio(in[FC_UNFUSED].ms, in[FC_CONTROL].ms, n));
        p->logr_fusion[k] = log(tuple_ratio(in[FC_CONTROL].ms, in[FC_FUSED].ms, n));
    }
}

static void pool_free(pooled *p)
{
    for (int v = 0; v < FC_MAX_VARIANTS; v++) fc_samples_free(&p->v[v]);
}

static void round_summary(fc_round_rec *rr, fc_samples in[FC_MAX_VARIANTS], int nvar)
{
    memset(rr, 0, sizeof *rr);
    rr->pairs = in[FC_UNFUSED].n;
    for (int v = 0; v < nvar; v++) {
        rr->median_ms[v] = fc_median(in[v].ms, in[v].n);
        rr->batch[v] = in[v].batch;
    }
    rr->ratio = tuple_ratio(in[FC_UNFUSED].ms, in[FC_FUSED].ms, rr->pairs);
    if (nvar > FC_CONTROL) rr->ratio_fusion = tuple_ratio(in[FC_CONTROL].ms, in[FC_FUSED].ms, rr->pairs);
}

/* Poisons, runs and checks every variant of a fresh setup. */
static int verify_setup(const fc_backend *b, void *state, int nvar, const fc_workload *w, const fc_reference *ref,
                        double tol, float *host[FC_MAX_VARIANTS], fc_record *r, fc_err *e)
{
    for (int v = 0; v < nvar; v++) {
        if (b->poison(state, (fc_variant)v, e) != 0 || b->run(state, (fc_variant)v, e) != 0 ||
            b->output(state, (fc_variant)v, host[v], e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "%s run failed: %.384s", fc_variant_name((fc_variant)v), e->msg);
            return -1;
        }
        fc_check_output(ref, host[v], w->out_n, tol, &r->v[v].check);
    }
    r->verified = true;
    for (int v = 0; v < nvar && r->verified; v++) {
        if (r->v[v].check.passed && r->v[v].check.trusted) continue;
        r->verified = false;
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "verification failed (%s): %s", fc_variant_name((fc_variant)v),
                 r->v[v].check.reason);
    }
    if (!r->verified) return -1;
    /* Every element, where the reference check may have sampled: each variant is
     * within tol of the reference, so within 2·tol of the other. */
    r->fused_vs_unfused = fc_rel_diff(host[FC_FUSED], host[FC_UNFUSED], w->out_n);
    if (!(r->fused_vs_unfused <= 2 * tol)) {
        r->verified = false;
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason,
                 "verification failed: fused and unfused outputs differ by %.3g (relative), more than twice the "
                 "tolerance %.3g",
                 r->fused_vs_unfused, tol);
        return -1;
    }
    return 0;
}

/* The output left by the last timed call must still be the verified one (of a
 * variant that accumulates into its output, the output of one more call from its
 * input put back). */
static int check_stable(const fc_backend *b, void *state, int nvar, const fc_workload *w, double tol,
                        float *host[FC_MAX_VARIANTS], float *after, fc_record *r, fc_err *e)
{
    for (int v = 0; v < nvar; v++) {
        const bool again = b->in_place && b->in_place(state, (fc_variant)v);
        if ((again && (b->poison(state, (fc_variant)v, e) != 0 || b->run(state, (fc_variant)v, e) != 0)) ||
            b->output(state, (fc_variant)v, after, e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "reading output after timing failed: %.384s", e->msg);
            return -1;
        }
        r->v[v].stable = fc_rel_diff(after, host[v], w->out_n) <= tol;
        if (!r->v[v].stable) {
            r->status = FC_STATUS_FAILED;
            r->verified = false;
            r->v[v].check.passed = r->v[v].check.trusted = false;
            snprintf(r->v[v].check.reason, sizeof r->v[v].check.reason, "output changed during timing (race?)");
            snprintf(r->reason, sizeof r->reason, "verification failed (%s): output changed during timing",
                     fc_variant_name((fc_variant)v));
            return -1;
        }
    }
    return 0;
}

/* What one job needs while its rounds run. */
typedef struct job_run {
    const fc_backend *b;
    const fc_device *dev;
    void *dctx;
    const fc_workload *w;
    const fc_reference *ref;
    double tol;
    bool graph;
    bool described; /* variants, control and implementations known */
    int nvar;
    int min_rounds;
    fc_round_cfg cfg;
    pooled eager, replay;
    int peers_seen;   /* the most other fusecal runs seen as its rounds began (peers.h) */
    bool beside;      /* measure its bandwidth ceilings beside each round (job_beside) */
    bool peak_beside; /* measure the arithmetic peak beside each round (job_peak_beside) */
} job_run;

/* Other fusecal runs measuring now, kept when more than the job has seen. */
static void see_peers(job_run *j, int peers)
{
    if (peers > j->peers_seen) j->peers_seen = peers;
}

/* Whether a job's rounds get their bandwidth ceilings measured beside them: asked
 * for, warm caches (cold timings stream from device memory, whose ceiling is the
 * device's), a device that can, and a variant bound by memory under the device's
 * ceilings (the parent's judgement: a worker process has no ceilings). */
static bool job_beside(const fc_settings *set, const fc_device *d, const fc_record *r)
{
    if (!set->bandwidth_beside || set->cold || !d->stream_at) return false;
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        if (!strcmp(r->v[v].bound, "memory")) return true;
    return false;
}

/* Whether a job's rounds get the arithmetic peak measured beside them: asked for, a
 * device that can, and a variant bound by compute under the device's ceilings (the
 * parent's judgement, as job_beside's). */
static bool job_peak_beside(const fc_settings *set, const fc_device *d, const fc_record *r)
{
    if (!set->peak_beside || !d->peak_at) return false;
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        if (!strcmp(r->v[v].bound, "compute")) return true;
    return false;
}

/* The point of pts at footprint fp (NULL when none). */
static const fc_bw_point *point_at(const fc_bw_point *pts, int n, double fp)
{
    for (int i = 0; i < n; i++)
        if (pts[i].footprint_bytes == fp) return &pts[i];
    return NULL;
}

/* measured points and their count, for chain_rate */
typedef struct points {
    const fc_bw_point *p;
    int n;
} points;

static double points_rate(const void *ctx, double bytes)
{
    const points *ps = ctx;
    const fc_bw_point *q = point_at(ps->p, ps->n, bytes);
    return q ? q->gbs : 0;
}

/* The fused op's and the chain's bandwidth ceilings (fused, chain) measured once at
 * the footprints fps[n] (beside_round), the fused op's reads being share of its
 * bytes; false when the measurement failed. */
static bool beside_once(const job_run *j, const fc_cost *cost, double share, const double *fps, int n, double *fused,
                        double *chain)
{
    fc_bw_point pts[FC_MAX_OPS + 1];
    fc_err e = {{0}};
    if (j->dev->stream_at(j->dctx, fps, n, pts, &e) != 0) return false;
    const fc_bw_point *f = point_at(pts, n, fps[0]);
    *fused = fc_stream_ceiling(f->gbs, f->read_gbs, share);
    *chain = chain_rate(cost, points_rate, &(points){pts, n});
    return true;
}

/* Each variant's bandwidth ceiling measured as a round ended, by set_ceilings' rule
 * over the rates measured now at its working sets (each point at its footprint
 * exactly): the fused op's stream at its bytes, no more than the read-only one's over
 * its share of reads; the chain's ops each at their own bytes, combined by time (chain_rate).
 * A measurement is brief (the device's stream_at), and the memory of a shared host
 * moves between seconds: while a variant of the round streamed faster than the
 * ceiling measured beside it, it is measured again, up to FC_RECHECK_TRIES times in
 * all, and each variant keeps the best (a ceiling is a peak, the best of its runs; on
 * the Zen 4 VM, measured once a round, add_rmsnorm's fused form streamed 46.6 GB/s
 * against the 45.5 measured beside its rounds:
 * results/cpu-amd-epyc-f25m17-2c/pytorch-cpu-b3e1263/). A record still above is
 * flagged (fill_rates). A failed first measurement leaves the round without (0). */
static void beside_round(const job_run *j, const fc_problem *p, fc_round_rec *rr)
{
    fc_cost cost = {0};
    fc_family_of(p->pat)->cost(p, &cost);
    double fps[FC_MAX_OPS + 1];
    int n = 0;
    fps[n++] = cost.bytes[FC_FUSED];
    for (int i = 0; i < FC_MAX_OPS; i++) {
        const double b = cost.op_bytes[i];
        if (b <= 0) continue;
        bool seen = false;
        for (int k = 0; k < n; k++) seen |= fps[k] == b;
        if (!seen) fps[n++] = b;
    }
    if (fps[0] <= 0) return;
    const double share = fused_read_share(p, cost.bytes[FC_FUSED]);
    double best[FC_MAX_VARIANTS] = {0};
    for (int t = 0; t < FC_RECHECK_TRIES; t++) {
        double fused, chain;
        if (!beside_once(j, &cost, share, fps, n, &fused, &chain)) break;
        bool above = false;
        for (int v = 0; v < j->nvar; v++) {
            best[v] = fmax(best[v], v == FC_FUSED ? fused : chain);
            /* the round's rate: the variant's bytes over its median */
            const double ms = rr->median_ms[v], bytes = cost.bytes[bytes_variant(v)];
            above |= ms > 0 && bytes / (ms * 1e-3) / 1e9 > best[v];
        }
        if (!above) break;
    }
    for (int v = 0; v < j->nvar; v++) rr->beside_gbs[v] = best[v];
}

/* The arithmetic peak of the record's dtype measured as a round ended (the device's
 * peak_at, brief): the clocks of a shared host move within minutes (the AVX2 loop at
 * 154 and at 179 GFLOP/s a minute apart on the Zen 3 VM), and the device's peak may
 * be kept from an hour before. While a variant of the round ran faster than it, it is
 * measured again, up to FC_RECHECK_TRIES times in all, the best kept (beside_round's
 * rule); a record still above is flagged (fill_rates). 0 when the device has no loop
 * for the dtype. */
static void peak_round(const job_run *j, const fc_record *r, fc_round_rec *rr)
{
    double best = 0;
    for (int t = 0; t < FC_RECHECK_TRIES; t++) {
        best = fmax(best, j->dev->peak_at(j->dctx, r->prob.dtype));
        if (!(best > 0)) break;
        bool above = false;
        for (int v = 0; v < j->nvar; v++) { /* the round's rate: the work done over its median */
            const double ms = rr->median_ms[v],
                         done = r->v[v].impl.flops_performed > 0 ? r->v[v].impl.flops_performed : r->flops;
            above |= ms > 0 && done / (ms * 1e-3) / 1e9 > best;
        }
        if (!above) break;
    }
    rr->beside_gflops = best;
}

/* One round: a fresh setup — new buffers, plans and algorithm choices — verified,
 * timed eagerly (and as graph replays), checked again, torn down. Returns 0, -1
 * with the record failed or skipped, or 1 when interrupted. */
static int one_round(job_run *j, const fc_problem *p, int round, fc_record *r)
{
    fc_err e = {{0}};
    void *state = NULL;
    double t0 = fc_now();
    int src = j->b->setup(p, j->w, j->dctx, &state, &e);
    if (src != 0 && state) j->b->teardown(state); /* what it built before it failed or declined */
    if (src == FC_DECLINED) {
        r->status = FC_STATUS_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "declined by the library: %.384s", e.msg);
        return -1;
    }
    if (src != 0) {
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "setup failed: %.384s", e.msg);
        return -1;
    }
    if (round == 0) r->setup_ms = (fc_now() - t0) * 1e3;
    if (!j->described) {
        r->has_control = j->b->has_control && j->b->has_control(state);
        j->nvar = r->has_control ? 3 : 2;
        j->cfg.nvar = j->nvar;
        for (int v = 0; v < j->nvar; v++) j->b->describe(state, (fc_variant)v, &r->v[v].impl);
        j->described = true;
    }
    int rc = -1;
    float *host[FC_MAX_VARIANTS] = {0}, *after = fc_xmalloc(j->w->out_n * sizeof(float));
    for (int v = 0; v < j->nvar; v++) host[v] = fc_xmalloc(j->w->out_n * sizeof(float));
    if (verify_setup(j->b, state, j->nvar, j->w, j->ref, j->tol, host, r, &e) != 0) goto out;
    fc_backend_call la = {j->b, state};
    fc_samples smp[FC_MAX_VARIANTS];
    bool interrupted = false;
    j->cfg.mode = FC_TIMING_EAGER;
    j->cfg.seed = fc_seed_mix(r->seed, (uint64_t)round);
    if (fc_bench_round(j->dev, j->dctx, fc_backend_launch, &la, &j->cfg, smp, &interrupted, &e) != 0) {
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "timing failed: %.384s", e.msg);
        goto out;
    }
    if (!interrupted) {
        round_summary(&r->round[round], smp, j->nvar);
        pool_add(&j->eager, smp, j->nvar);
    }
    for (int v = 0; v < FC_MAX_VARIANTS; v++) fc_samples_free(&smp[v]);
    if (interrupted) {
        rc = 1;
        goto out;
    }
    if (j->graph) {
        j->cfg.mode = FC_TIMING_GRAPH;
        if (fc_bench_round(j->dev, j->dctx, fc_backend_launch, &la, &j->cfg, smp, &interrupted, &e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "graph timing failed: %.384s", e.msg);
            goto out;
        }
        if (!interrupted) {
            r->round[round].ratio_graph = tuple_ratio(smp[FC_UNFUSED].ms, smp[FC_FUSED].ms, smp[FC_UNFUSED].n);
            pool_add(&j->replay, smp, 2);
        }
        for (int v = 0; v < FC_MAX_VARIANTS; v++) fc_samples_free(&smp[v]);
        if (interrupted) {
            rc = 1;
            goto out;
        }
    }
    if (check_stable(j->b, state, j->nvar, j->w, j->tol, host, after, r, &e) != 0) goto out;
    rc = 0;
out:
    j->b->teardown(state);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) free(host[v]);
    free(after);
    if (rc == 0 && j->beside) beside_round(j, p, &r->round[round]);
    if (rc == 0 && j->peak_beside) peak_round(j, r, &r->round[round]);
    return rc;
}

/* The half-width of the rounds' interval of a speedup, relative to it. */
static double rounds_half_width(const double *logr, int done)
{
    fc_ratio_ci ci;
    fc_interval_rounds(logr, done, &ci);
    return (ci.hi - ci.lo) / (2 * ci.ratio);
}

/* After each round from the minimum on: whether to stop, and why. Precision holds
 * when every speedup that may decide is that precise: the whole one, the fusion
 * split's where a control is measured, the graph replays' where they are timed
 * (which one decides is known only at the end). */
static bool enough_rounds(const job_run *j, const fc_settings *set, int done, fc_record *r)
{
    if (done < j->min_rounds) return false;
    double half = rounds_half_width(j->eager.logr, done);
    if (j->nvar > FC_CONTROL) half = fmax(half, rounds_half_width(j->eager.logr_fusion, done));
    if (j->graph) half = fmax(half, rounds_half_width(j->replay.logr, done));
    fc_stop_rule rule = FC_NSTOP_RULES;
    if (half <= set->stop.max_noise) rule = FC_RULE_PRECISION;
    else if (j->eager.v[FC_UNFUSED].sampled_s >= set->stop.max_time ||
             j->eager.v[FC_FUSED].sampled_s >= set->stop.max_time)
        rule = FC_RULE_MAX_TIME;
    else if (done >= FC_MAX_ROUNDS)
        rule = FC_RULE_MAX_ROUNDS;
    if (rule == FC_NSTOP_RULES) return false;
    fc_strlcpy(r->stop_rule, fc_stop_rule_name(rule), sizeof r->stop_rule);
    return true;
}

/* The state check (stats.h: fc_state_check) on the rounds of the decisive speedup;
 * a decision it withholds leaves the record inconclusive, with the reason. */
static void state_check(fc_record *r)
{
    const fc_variant base = fc_record_decisive_base(r);
    double b[FC_MAX_ROUNDS], f[FC_MAX_ROUNDS], q[FC_MAX_ROUNDS];
    const int R = r->rounds < FC_MAX_ROUNDS ? r->rounds : FC_MAX_ROUNDS;
    for (int k = 0; k < R; k++) {
        const fc_round_rec *rr = &r->round[k];
        b[k] = rr->median_ms[base];
        f[k] = rr->median_ms[FC_FUSED];
        q[k] = r->decided_by == FC_DECIDER_FUSION  ? rr->ratio_fusion
               : r->decided_by == FC_DECIDER_GRAPH ? rr->ratio_graph
                                                   : rr->ratio;
    }
    const fc_decision d = fc_state_check(b, f, q, R, r->threshold, r->decision, base, &r->state);
    if (d == r->decision) return;
    r->decision = d;
    if (r->margin > 0) r->margin = 0;
    snprintf(r->reason, sizeof r->reason,
             "decision withheld (the interval says %s): the machine's state moved between rounds, the %s form's "
             "round medians spanning %.2fx, and %d of the %d rounds' speedups lie %s the threshold %.3g",
             fc_decision_name(r->state.said), fc_variant_name((fc_variant)r->state.span_variant), r->state.span,
             r->state.rounds_against, R, r->state.said == FC_DECIDE_YES ? "below" : "above", r->threshold);
}

/* From this share of the unfused chain's eager time that a graph replay removes
 * (host launch work), the graph speedup decides; within LAUNCH_BAND of it, where a
 * run's noise could put the share on either side, only what both speedups say. */
#define LAUNCH_SHARE 0.25
#define LAUNCH_BAND 0.05

/* Near LAUNCH_SHARE the choice between the eager and the graph speedup is itself
 * noise: where they decide differently, the decision is withheld (inconclusive), so
 * that two runs of one problem never say yes and no for that choice alone. */
static void launch_share_check(fc_record *r, double share)
{
    if (fabs(share - LAUNCH_SHARE) >= LAUNCH_BAND) return;
    const fc_decision de = fc_decide(&r->speedup, r->threshold), dg = fc_decide(&r->speedup_graph, r->threshold);
    if (de == dg) return;
    r->decision = FC_DECIDE_INCONCLUSIVE;
    if (r->margin > 0) r->margin = 0;
    snprintf(r->reason, sizeof r->reason,
             "decision withheld (eager says %s, graph replay says %s): a graph replay removes %.0f%% of the unfused "
             "chain's eager time, within %.0f points of the %.0f%% from which the graph speedup decides",
             fc_decision_name(de), fc_decision_name(dg), 100 * share, 100 * LAUNCH_BAND, 100 * LAUNCH_SHARE);
}

/* Statistics, intervals and the decision from the pooled rounds. */
static void finish_record(const job_run *j, const fc_settings *set, fc_record *r)
{
    for (int v = 0; v < j->nvar; v++) {
        fc_variant_rec *vr = &r->v[v];
        fc_stats_compute(j->eager.v[v].ms, j->eager.v[v].n, &vr->lat);
        vr->batch = j->eager.v[v].batch;
        fc_strlcpy(vr->stop_rule, r->stop_rule, sizeof vr->stop_rule);
        vr->samples_at_stop = j->eager.v[v].n;
        vr->sampled_s = j->eager.v[v].sampled_s;
        if (j->graph && v < FC_NVARIANTS) {
            vr->has_graph = true;
            fc_stats_compute(j->replay.v[v].ms, j->replay.v[v].n, &vr->lat_graph);
        }
    }
    double rn = set->run_noise;
    fc_interval_runs(j->eager.logr, r->rounds, rn, &r->speedup);
    char extra[96] = "";
    if (rn > 0) snprintf(extra, sizeof extra, ", widened in quadrature by a run-level sd of %.3g", rn);
    snprintf(r->interval_method, sizeof r->interval_method,
             "t interval (df %d) over the rounds' log speedups (a round's: the median of its tuples' unfused/fused "
             "ratios)%s; %s",
             r->rounds - 1, extra, r->in_processes ? "each round in its own process" : "the rounds in one process");
    if (r->has_control) {
        fc_interval_runs(j->eager.logr_impl, r->rounds, rn, &r->split_implementation);
        fc_interval_runs(j->eager.logr_fusion, r->rounds, rn, &r->split_fusion);
    }
    r->decided_by = FC_DECIDER_EAGER;
    double share = 0; /* of the unfused chain's eager time, what a graph replay removes */
    if (j->graph) {
        r->has_graph_speedup = true;
        fc_interval_runs(j->replay.logr, r->rounds, rn, &r->speedup_graph);
        /* launch-bound: a quarter or more of the unfused chain's eager time is host
         * launch work that a graph replay removes; the graph speedup decides */
        const fc_variant_rec *u = &r->v[FC_UNFUSED];
        if (u->lat.median > 0) share = (u->lat.median - u->lat_graph.median) / u->lat.median;
        if (share >= LAUNCH_SHARE) r->decided_by = FC_DECIDER_GRAPH;
    }
    /* the fused form changes more than the fusion (a control was measured): what
     * fusing buys is the control's time over the fused form's, and the decision is
     * made on that alone; the rest (unfused/control) is the implementation's, which
     * a partitioner gets without fusing. Not where the implementation is a loss
     * (fc_record_fusion_counts): then the whole speedup decides. */
    if (fc_record_fusion_counts(r)) r->decided_by = FC_DECIDER_FUSION;
    const fc_ratio_ci *decide = fc_record_decisive_speedup(r);
    r->decision = fc_decide(decide, r->threshold);
    r->margin = fc_decision_margin(decide, r->threshold);
    if (r->has_graph_speedup && r->decided_by != FC_DECIDER_FUSION) launch_share_check(r, share);
    state_check(r);
    /* closed by an interrupt before the minimum of rounds: the interval stands,
     * the decision waits for the evidence the stopping rule asks for */
    if (r->rounds < j->min_rounds) {
        r->decision = FC_DECIDE_INCONCLUSIVE;
        if (r->margin > 0) r->margin = 0;
    }
}

/* The number of rounds every record gets at least (2 at least: one round says
 * nothing about the spread between setups). */
static int min_rounds_of(const fc_settings *set)
{
    return set->rounds < 2 ? 2 : set->rounds > FC_MAX_ROUNDS ? FC_MAX_ROUNDS : set->rounds;
}

/* Starts a job: the record's fixed fields, the memory check, the round settings.
 * Returns 0, or -1 with the record finished (skipped). */
static int job_begin(fc_session *s, const fc_job *job, const fc_settings *set, const fc_workload *w,
                     const fc_reference *ref, volatile sig_atomic_t *interrupt, fc_record *r, job_run *j)
{
    const fc_backend *b = job->backend;
    fc_err e = {{0}};
    memset(r, 0, sizeof *r);
    r->prob = job->prob;
    fc_problem_string(&job->prob, r->problem, sizeof r->problem);
    fc_strlcpy(r->device, b->device, sizeof r->device);
    fc_strlcpy(r->backend, b->name, sizeof r->backend);
    r->threshold = job->threshold;
    r->status = FC_STATUS_OK;
    r->seed = problem_seed(set, r->problem);
    r->prepare_ms = w ? w->prepare_ms : 0;
    r->reference_ms = ref ? ref->ms : 0;
    int di = session_find(s, b->device);
    *j = (job_run){.b = b, .dev = s->dev[di], .dctx = s->ctx[di], .w = w, .ref = ref, .nvar = 2};
    fc_cost cost = {0};
    fc_family_of(job->prob.pat)->cost(&job->prob, &cost);
    fill_metrics(r, &cost);
    set_ceilings(r, &s->ceil[di], set->cold);
    j->tol = fc_reference_tolerance(&job->prob, ref);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) r->v[v].check.tol = j->tol;

    if (b->device_bytes) {
        size_t need = 0;
        if (b->device_bytes(&job->prob, &need, &e) != 0) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "%s", e.msg);
            return -1;
        }
        size_t avail = j->dev->mem_available(j->dctx);
        if (set->max_memory > 0 && set->max_memory < (double)avail) avail = (size_t)set->max_memory;
        if (need > avail) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "needs %.2f GiB of %s memory, %.2f GiB available",
                     (double)need / (1 << 30), j->dev->name, (double)avail / (1 << 30));
            return -1;
        }
    }
    if (j->dev->sense) j->dev->sense(j->dctx, &r->before);
    r->before.fusecal_runs = fc_peers_count(NULL, 0);

    /* At least min_rounds rounds, each with its share of the minimums; more rounds
     * while the rounds' interval is wider than max_noise and the time cap allows. */
    j->min_rounds = min_rounds_of(set);
    const fc_stop *st = &set->stop;
    double round_min = st->min_time / j->min_rounds;
    j->cfg = (fc_round_cfg){
        .nvar = 2,
        .cold = set->cold,
        .target_sample = set->target_sample,
        .min_pairs = (st->min_samples + j->min_rounds - 1) / j->min_rounds,
        .min_time = round_min,
        .max_time = fmax(round_min, st->max_time / j->min_rounds),
        .max_pairs = st->max_samples,
        .interrupt = interrupt,
    };
    if (j->cfg.min_pairs < 2) j->cfg.min_pairs = 2;
    j->graph = set->graph && j->dev->graph_create;
    j->beside = job_beside(set, j->dev, r);
    j->peak_beside = job_peak_beside(set, j->dev, r);
    return 0;
}

/* The job's rounds in this process until the stopping rule says enough. Returns
 * as one_round does. Injected library faults fire only in here. */
static int job_rounds(job_run *j, const fc_settings *set, fc_record *r)
{
    for (;;) {
        see_peers(j, fc_peers_count(NULL, 0));
        fc_fault_armed = 1;
        int rc = one_round(j, &r->prob, r->rounds, r);
        fc_fault_armed = 0;
        if (rc != 0) return rc;
        r->rounds++;
        if (enough_rounds(j, set, r->rounds, r)) return 0;
    }
}

/* Closes a measured job: statistics, decision, rates, the device's state after. */
static void job_finish(job_run *j, const fc_settings *set, fc_record *r)
{
    finish_record(j, set, r);
    fill_rates(r);
    if (j->dev->sense) j->dev->sense(j->dctx, &r->after);
    r->after.fusecal_runs = fc_peers_count(NULL, 0);
    r->throttled = r->before.clock_mhz > 0 && r->after.clock_mhz > 0 && r->after.clock_mhz < 0.75 * r->before.clock_mhz;
    r->contended = r->before.fusecal_runs > 0 || r->after.fusecal_runs > 0 || j->peers_seen > 0;
}

static void job_free(job_run *j)
{
    pool_free(&j->eager);
    pool_free(&j->replay);
    memset(&j->eager, 0, sizeof j->eager);
    memset(&j->replay, 0, sizeof j->replay);
}

void fc_measure_job(fc_session *s, const fc_job *job, const fc_settings *set, const fc_workload *w,
                    const fc_reference *ref, volatile sig_atomic_t *interrupt, fc_record *r, bool *interrupted)
{
    job_run j;
    *interrupted = false;
    if (job_begin(s, job, set, w, ref, interrupt, r, &j) != 0) return;
    int rc = job_rounds(&j, set, r);
    if (rc > 0) *interrupted = true;
    if (rc == 0) job_finish(&j, set, r);
    job_free(&j);
}

/* ------------------------------------------------------------------ the loop */

/* A problem's inputs and float64 reference, built from the run's seed. */
typedef struct prob_data {
    char ps[256];
    fc_workload w;
    fc_reference ref;
    bool have;
    char skip[512]; /* why there is none */
} prob_data;

/* The file of a problem's reference in the run's cache folder, named by the
 * problem's seed (fc_record.seed: the run's seed mixed with the problem string's
 * hash; the file's key says which problem it holds). */
static void reference_path(const char *cache, uint64_t seed, char *path, size_t n)
{
    snprintf(path, n, "%s/%016llx.ref", cache, (unsigned long long)seed);
}

/* The reference of problem ps with this seed from the run's cache folder (cache:
 * NULL or "" for none), or built and then saved there for the worker processes of
 * the rounds after this one: the float64 reference of a big problem costs more than
 * its round's samples (on the quick sweep a third of the run, rebuilt every round). */
static void reference_cached(const fc_problem *p, const char *ps, uint64_t seed, const fc_workload *w,
                             const char *cache, fc_reference *ref)
{
    char key[320], path[4096] = "";
    snprintf(key, sizeof key, "%s seed %016llx", ps, (unsigned long long)seed);
    if (cache && cache[0]) {
        reference_path(cache, seed, path, sizeof path);
        if (fc_reference_load(ref, key, path)) {
            bool in_range = true;
            for (size_t i = 0; i < ref->n && in_range; i++) in_range = ref->idx[i] < w->out_n;
            if (in_range) return;
            fc_reference_free(ref);
        }
    }
    fc_reference_build(p, w, seed ^ 0x5eed, ref);
    if (path[0]) (void)fc_reference_save(ref, key, path); /* a cache: without it each round builds its own */
}

/* Makes d hold problem p (its string ps), dropping what it held; its reference from
 * the cache folder when one is given (reference_cached). */
static bool prob_switch(prob_data *d, const fc_problem *p, const char *ps, const fc_settings *set, const char *cache)
{
    if (!strcmp(d->ps, ps)) return d->have;
    if (d->have) {
        fc_reference_free(&d->ref);
        fc_workload_free(&d->w);
        d->have = false;
    }
    fc_strlcpy(d->ps, ps, sizeof d->ps);
    d->skip[0] = 0;
    fc_err we;
    uint64_t seed = problem_seed(set, ps);
    if (fc_workload_create(p, seed, (size_t)set->max_memory, &d->w, &we) != 0) {
        snprintf(d->skip, sizeof d->skip, "%s", we.msg);
        return false;
    }
    d->w.cold = set->cold;
    reference_cached(p, ps, seed, &d->w, cache, &d->ref);
    d->have = true;
    return true;
}

static void prob_free(prob_data *d)
{
    if (d->have) {
        fc_reference_free(&d->ref);
        fc_workload_free(&d->w);
    }
    memset(d, 0, sizeof *d);
}

static void skipped_record(const fc_job *job, const char *ps, const char *why, fc_record *rec)
{
    memset(rec, 0, sizeof *rec);
    rec->prob = job->prob;
    fc_strlcpy(rec->problem, ps, sizeof rec->problem);
    fc_strlcpy(rec->device, job->backend->device, sizeof rec->device);
    fc_strlcpy(rec->backend, job->backend->name, sizeof rec->backend);
    rec->threshold = job->threshold;
    rec->status = FC_STATUS_SKIPPED;
    fc_strlcpy(rec->reason, why, sizeof rec->reason);
    fc_cost cost = {0};
    fc_family_of(job->prob.pat)->cost(&job->prob, &cost);
    fill_metrics(rec, &cost);
    set_bounds(rec);
}

/* Every job in this process, one after another, each to the end of its rounds. */
static int calibrate_here(fc_session *s, const fc_plan *plan, const fc_settings *set, fc_doc *doc,
                          const fc_observer *obs, volatile sig_atomic_t *interrupt, fc_err *e)
{
    double t0 = fc_now();
    prob_data d = {0};
    int done = 0, rc = 0;
    for (int i = 0; i < plan->n && rc == 0; i++) {
        if (interrupt && *interrupt) break;
        if (set->max_time_total > 0 && fc_now() - t0 >= set->max_time_total) break;
        const fc_job *job = &plan->jobs[i];
        if (obs && obs->start) obs->start(obs->ctx, i, plan->n, 0, 1, job);
        char ps[256];
        fc_problem_string(&job->prob, ps, sizeof ps);
        fc_record rec;
        bool interrupted = false;
        if (!prob_switch(&d, &job->prob, ps, set, NULL)) skipped_record(job, ps, d.skip, &rec);
        else
            fc_measure_job(s, job, set, &d.w, &d.ref, interrupt, &rec, &interrupted);
        if (interrupted) break;
        fc_record *slot = fc_doc_slot_for(doc, &rec);
        *slot = rec;
        done++;
        if (obs && obs->record && obs->record(obs->ctx, i, plan->n, doc, slot) != 0)
            rc = fc_errf(e, "could not save the records");
    }
    prob_free(&d);
    doc->complete = rc == 0 && done == plan->n;
    return rc;
}

/* ---- rounds in worker processes (the transport, and what a worker is: rounds_wire.h) */

int fc_rounds_worker(const fc_registry *reg, FILE *in, FILE *out)
{
    signal(SIGINT, SIG_IGN); /* the parent decides; it stops a worker with SIGKILL */
    uint32_t magic = 0;
    fc_settings set;
    int n = 0;
    if (!fc_wire_get(in, &magic, sizeof magic) || magic != WIRE_MAGIC || !fc_wire_get(in, &set, sizeof set) ||
        !fc_wire_get(in, &n, sizeof n) || n < 0 || n > (1 << 24)) {
        fprintf(stderr, "fusecal __rounds: this is the worker of 'fusecal run'; it reads its jobs from its parent\n");
        return 2;
    }
    wire_item *items = fc_xcalloc((size_t)(n ? n : 1), sizeof *items);
    fc_plan plan = {0};
    for (int i = 0; i < n; i++) {
        fc_err e;
        fc_problem p;
        const fc_backend *b = NULL;
        if (!fc_wire_get(in, &items[i], sizeof items[i])) return 2;
        items[i].problem[sizeof items[i].problem - 1] = items[i].backend[sizeof items[i].backend - 1] = 0;
        if (fc_problem_parse(items[i].problem, NULL, &p, &e) != 0 || !(b = fc_backend_find(reg, items[i].backend))) {
            fprintf(stderr, "fusecal __rounds: bad job '%s' on '%s'\n", items[i].problem, items[i].backend);
            return 2;
        }
        fc_plan_add(&plan, &p, b, 0);
    }
    wire_cache cache;
    if (!fc_wire_get(in, &cache, sizeof cache)) return 2;
    cache.dir[sizeof cache.dir - 1] = 0;
    fc_session ses;
    fc_err e = {{0}};
    bool open = fc_session_open(&ses, reg, &plan, &set, &e) == 0;
    prob_data d = {0};
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const fc_job *job = &plan.jobs[i];
        wire_head h;
        memset(&h, 0, sizeof h);
        h.job = items[i].job;
        h.round = items[i].round;
        h.rc = -1;
        fc_record *r = fc_xcalloc(1, sizeof *r);
        job_run j;
        memset(&j, 0, sizeof j);
        bool begun = false;
        if (!open) {
            h.status = FC_STATUS_FAILED;
            snprintf(h.reason, sizeof h.reason, "worker process: %.384s", e.msg);
        } else if (!prob_switch(&d, &job->prob, items[i].problem, &set, cache.dir)) {
            h.status = FC_STATUS_SKIPPED;
            fc_strlcpy(h.reason, d.skip, sizeof h.reason);
        } else if (job_begin(&ses, job, &set, &d.w, &d.ref, &fc_interrupted, r, &j) != 0) {
            h.status = r->status;
            fc_strlcpy(h.reason, r->reason, sizeof h.reason);
        } else {
            begun = true;
            j.beside = items[i].beside && j.dev->stream_at; /* this process has no ceilings to judge by */
            j.peak_beside = items[i].peak_beside && j.dev->peak_at;
            fc_fault_armed = 1;
            h.rc = one_round(&j, &r->prob, h.round, r);
            fc_fault_armed = 0;
            h.status = r->status;
            fc_strlcpy(h.reason, r->reason, sizeof h.reason);
            h.nvar = j.nvar;
            h.ngraph = h.rc == 0 && j.graph ? 2 : 0;
            h.has_control = r->has_control;
            h.verified = r->verified;
            h.setup_ms = r->setup_ms;
            h.prepare_ms = d.w.prepare_ms;
            h.reference_ms = d.ref.ms;
            h.fused_vs_unfused = r->fused_vs_unfused;
            for (int v = 0; v < FC_MAX_VARIANTS; v++) {
                h.impl[v] = r->v[v].impl;
                h.check[v] = r->v[v].check;
                h.stable[v] = r->v[v].stable;
            }
            h.rr = r->round[h.round];
        }
        if (h.rc != 0) h.nvar = h.ngraph = 0; /* samples travel only with a whole round */
        if (!fc_wire_put(out, &h, sizeof h) || !fc_wire_put_samples(out, j.eager.v, h.nvar) ||
            !fc_wire_put_samples(out, j.replay.v, h.ngraph) || fflush(out) != 0)
            rc = 2;
        if (begun) job_free(&j);
        free(r);
    }
    prob_free(&d);
    if (open) fc_session_close(&ses);
    fc_plan_free(&plan);
    free(items);
    return rc;
}

/* A job of a sweep in worker processes: its record and its state between rounds. */
typedef struct job_slot {
    fc_record rec;
    job_run j;
    bool closed; /* finished, failed or skipped: waiting to be added */
    bool added;
} job_slot;

/* One round's outcome, from a worker, into job slot sl. Returns 1 when the
 * worker was interrupted, else 0. */
static int apply_round(job_slot *sl, const fc_settings *set, const wire_head *h, fc_samples *eager, fc_samples *graph)
{
    fc_record *r = &sl->rec;
    job_run *j = &sl->j;
    if (h->rc > 0) return 1;
    r->status = h->status;
    fc_strlcpy(r->reason, h->reason, sizeof r->reason);
    if (h->nvar > 0 && !j->described) {
        j->nvar = h->nvar;
        r->has_control = h->has_control;
        for (int v = 0; v < h->nvar; v++) r->v[v].impl = h->impl[v];
        j->described = true;
    }
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        r->v[v].check = h->check[v];
        r->v[v].stable = h->stable[v];
    }
    r->verified = h->verified;
    r->fused_vs_unfused = h->fused_vs_unfused;
    if (h->rc < 0) {
        if (r->status == FC_STATUS_OK) r->status = FC_STATUS_FAILED;
        sl->closed = true;
        return 0;
    }
    if (h->round == 0) {
        r->setup_ms = h->setup_ms;
        r->prepare_ms = h->prepare_ms;
        r->reference_ms = h->reference_ms;
    }
    r->round[r->rounds] = h->rr;
    pool_add(&j->eager, eager, j->nvar);
    if (h->ngraph) pool_add(&j->replay, graph, 2);
    r->rounds++;
    if (enough_rounds(j, set, r->rounds, r)) {
        job_finish(j, set, r);
        sl->closed = true;
    }
    return 0;
}

/* Adds the closed records from *next on, in the plan's order, while they are; a
 * record's reference file in the run's cache folder goes with it (no round reads it
 * again). */
static int add_closed(fc_doc *doc, job_slot *js, int n, int *next, bool any_order, const fc_observer *obs,
                      const wire_cache *cache)
{
    for (int i = *next; i < n; i++) {
        job_slot *sl = &js[i];
        if (!sl->closed || sl->added) {
            if (!any_order && !sl->added) break;
            continue;
        }
        fc_record *slot = fc_doc_slot_for(doc, &sl->rec);
        *slot = sl->rec;
        sl->added = true;
        job_free(&sl->j);
        if (cache->dir[0]) {
            char path[4096];
            reference_path(cache->dir, sl->rec.seed, path, sizeof path);
            remove(path);
        }
        if (obs && obs->record && obs->record(obs->ctx, i, n, doc, slot) != 0) return -1;
        if (!any_order) *next = i + 1;
    }
    return 0;
}

/* The sweep in passes, each pass a worker process that runs one round of every
 * job still open: a record's rounds come from as many processes, spread over the
 * sweep, so its interval sees what a fresh process and the minutes between
 * change, not only what changes between setups a second apart. */
static int calibrate_in_workers(fc_session *s, const fc_plan *plan, const fc_settings *set, fc_doc *doc,
                                const fc_observer *obs, volatile sig_atomic_t *interrupt, fc_err *e)
{
    int n = plan->n, rc = 0, next = 0, min_rounds = min_rounds_of(set);
    job_slot *js = fc_xcalloc((size_t)(n ? n : 1), sizeof *js);
    wire_item *items = fc_xcalloc((size_t)(n ? n : 1), sizeof *items);
    wire_cache cache;
    fc_wire_cache_open(&cache);
    for (int i = 0; i < n; i++) {
        const fc_job *job = &plan->jobs[i];
        if (job_begin(s, job, set, NULL, NULL, interrupt, &js[i].rec, &js[i].j) != 0) js[i].closed = true;
        js[i].rec.in_processes = true;
    }
    bool stopped = false;
    for (int pass = 0; !stopped && rc == 0; pass++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (js[i].closed) continue;
            items[m] = (wire_item){.job = i,
                                   .round = js[i].rec.rounds,
                                   .beside = js[i].j.beside,
                                   .peak_beside = js[i].j.peak_beside};
            fc_strlcpy(items[m].backend, plan->jobs[i].backend->name, sizeof items[m].backend);
            fc_strlcpy(items[m].problem, js[i].rec.problem, sizeof items[m].problem);
            m++;
        }
        if (m == 0) break;
        int peers = fc_peers_count(NULL, 0); /* other runs measuring as this pass starts */
        for (int i = 0; i < n; i++)
            if (!js[i].closed) see_peers(&js[i].j, peers);
        /* a test's signal at a known point: every record then has two rounds */
        if (pass == 2 && fc_fault("sigint-pass-2")) raise(SIGINT);
        if (interrupt && *interrupt) {
            stopped = true;
            break;
        }
        FILE *to = NULL, *from = NULL;
        /* and a failure there: no worker for the third pass */
        pid_t pid = pass == 2 && fc_fault("spawn-pass-2")
                        ? (pid_t)fc_errf(e, "cannot start a worker process: injected fault")
                        : fc_wire_spawn_worker(&to, &from, e);
        if (pid < 0) {
            rc = -1;
            break;
        }
        uint32_t magic = WIRE_MAGIC;
        bool sent = fc_wire_put(to, &magic, sizeof magic) && fc_wire_put(to, set, sizeof *set) &&
                    fc_wire_put(to, &m, sizeof m) && fc_wire_put(to, items, (size_t)m * sizeof *items) &&
                    fc_wire_put(to, &cache, sizeof cache);
        fclose(to);
        int got = 0;
        int npass = pass < min_rounds ? min_rounds : pass + 1;
        while (sent && got < m) {
            /* a signal between two reads stops the pass here, as one during a read does */
            if (interrupt && *interrupt) break;
            if (obs && obs->start) obs->start(obs->ctx, items[got].job, n, pass, npass, &plan->jobs[items[got].job]);
            wire_head h;
            fc_samples ev[FC_MAX_VARIANTS], gv[FC_MAX_VARIANTS];
            memset(ev, 0, sizeof ev);
            memset(gv, 0, sizeof gv);
            bool ok = fc_wire_get(from, &h, sizeof h) && h.job == items[got].job && h.nvar >= 0 &&
                      h.nvar <= FC_MAX_VARIANTS && h.ngraph >= 0 && h.ngraph <= 2 &&
                      fc_wire_get_samples(from, ev, h.nvar) && fc_wire_get_samples(from, gv, h.ngraph);
            if (ok && apply_round(&js[h.job], set, &h, ev, gv) != 0) stopped = true;
            for (int v = 0; v < FC_MAX_VARIANTS; v++) {
                fc_samples_free(&ev[v]);
                fc_samples_free(&gv[v]);
            }
            if (!ok || stopped) break;
            got++;
            if (add_closed(doc, js, n, &next, false, obs, &cache) != 0) {
                rc = fc_errf(e, "could not save the records");
                break;
            }
        }
        if (got < m || (interrupt && *interrupt)) kill(pid, SIGKILL);
        fclose(from);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (interrupt && *interrupt) stopped = true;
        if (!stopped && rc == 0 && got < m) {
            /* the worker died inside a job's round: that record fails, the rest go on */
            job_slot *sl = &js[items[got].job];
            sl->rec.status = FC_STATUS_FAILED;
            if (WIFSIGNALED(status))
                snprintf(sl->rec.reason, sizeof sl->rec.reason, "the worker process measuring round %d died: %s",
                         sl->rec.rounds, strsignal(WTERMSIG(status)));
            else
                snprintf(sl->rec.reason, sizeof sl->rec.reason,
                         "the worker process measuring round %d ended early (exit %d)", sl->rec.rounds,
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            sl->closed = true;
        }
    }
    /* Stopped early: records with two rounds or more are closed with what they
     * have (stop rule "interrupted", undecided below the minimum of rounds) and
     * kept; the others are dropped. */
    for (int i = 0; i < n; i++) {
        job_slot *sl = &js[i];
        if (sl->closed || sl->rec.rounds < 2) continue;
        fc_strlcpy(sl->rec.stop_rule, fc_stop_rule_name(FC_RULE_INTERRUPTED), sizeof sl->rec.stop_rule);
        job_finish(&sl->j, set, &sl->rec);
        sl->closed = true;
    }
    /* after a failure too, the records closed go into the document (for the caller
     * to write: an observer that failed is not called again) */
    if (add_closed(doc, js, n, &next, true, rc == 0 ? obs : NULL, &cache) != 0)
        rc = fc_errf(e, "could not save the records");
    int added = 0;
    for (int i = 0; i < n; i++) {
        added += js[i].added;
        if (!js[i].added) job_free(&js[i].j);
    }
    free(items);
    free(js);
    fc_wire_cache_close(&cache);
    doc->complete = rc == 0 && !stopped && added == n;
    return rc;
}

int fc_calibrate(fc_session *s, const fc_plan *plan, const fc_settings *set, fc_doc *doc, const fc_observer *obs,
                 volatile sig_atomic_t *interrupt, fc_err *e)
{
    doc->complete = false;
    /* a time budget wants whole records early: one process, problem after problem */
    if (set->processes && set->max_time_total <= 0) return calibrate_in_workers(s, plan, set, doc, obs, interrupt, e);
    return calibrate_here(s, plan, set, doc, obs, interrupt, e);
}
