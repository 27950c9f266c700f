/* calibrate.c — see calibrate.h. */
#include "calibrate.h"
#include "ceilcache.h"
#include "host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int fc_session_ceilings(fc_session *s, fc_err *e)
{
    for (int i = 0; i < s->ndev; i++) {
        if (s->measured[i]) continue;
        fc_ceilings *c = &s->ceil[i];
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
                snprintf(c->method + l, sizeof c->method - l, "; %s %s GEMM %.1f GFLOP/s (its best of repeated runs)",
                         b->name, fc_dtype_name((fc_dtype)dt), g);
                if (g > c->gflops[dt]) c->gflops[dt] = g;
            }
        }
        cJSON *host = fc_host_block(s->reg, &s->dev[i], &s->ctx[i], 1);
        fc_ceilings_cache_save(s->dev[i]->name, host, c);
        cJSON_Delete(host);
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
    const char *v = getenv("FUSECAL_TEST_FAST");
    if (!v || strcmp(v, "1") != 0) return false;
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

static void fill_metrics(fc_record *r, const fc_cost *c)
{
    r->flops = c->flops;
    r->flops_padded = c->flops_padded;
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        /* the control writes and re-reads what the unfused chain does */
        int cv = v == FC_CONTROL ? FC_UNFUSED : v;
        vr->bytes = c->bytes[cv];
        vr->peak_inter_bytes = c->peak_inter[cv];
        vr->intensity = c->bytes[cv] > 0 ? c->flops / c->bytes[cv] : 0;
        bool mem = r->ceil_gbs > 0 && vr->intensity * r->ceil_gbs < r->ceil_gflops;
        fc_strlcpy(vr->bound, mem ? "memory" : "compute", sizeof vr->bound);
    }
    r->traffic_reduction = c->bytes[FC_UNFUSED] > 0 ? 1.0 - c->bytes[FC_FUSED] / c->bytes[FC_UNFUSED] : 0;
}

static void fill_rates(fc_record *r)
{
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        if (v == FC_CONTROL && !r->has_control) continue;
        double s = vr->lat.median * 1e-3;
        vr->gflops = r->flops / s / 1e9;
        vr->gbs = vr->bytes / s / 1e9;
        vr->pct_peak_flops = r->ceil_gflops > 0 ? 100 * vr->gflops / r->ceil_gflops : 0;
        vr->pct_peak_bw = r->ceil_gbs > 0 ? 100 * vr->gbs / r->ceil_gbs : 0;
        double roof = fmin(r->ceil_gflops, vr->intensity * r->ceil_gbs);
        vr->pct_roofline = roof > 0 ? 100 * vr->gflops / roof : 0;
        /* faster than a measured ceiling: the ceiling or the count is off, never hidden */
        vr->over_ceiling = vr->pct_peak_flops > 100 || vr->pct_peak_bw > 100 || vr->pct_roofline > 100;
    }
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
}

/* Poisons, runs and checks every variant of a fresh setup. */
static int verify_setup(const fc_backend *b, void *state, int nvar, const fc_workload *w, const fc_reference *ref,
                        double tol, float *host[FC_MAX_VARIANTS], fc_record *r, fc_err *e)
{
    for (int v = 0; v < nvar; v++) {
        if (b->poison(state, (fc_variant)v, e) != 0 || b->run(state, (fc_variant)v, e) != 0 ||
            b->output(state, (fc_variant)v, host[v], e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "%s run failed: %s", fc_variant_name((fc_variant)v), e->msg);
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

/* The output left by the last timed call must still be the verified one. */
static int check_stable(const fc_backend *b, void *state, int nvar, const fc_workload *w, double tol,
                        float *host[FC_MAX_VARIANTS], float *after, fc_record *r, fc_err *e)
{
    for (int v = 0; v < nvar; v++) {
        if (b->output(state, (fc_variant)v, after, e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "reading output after timing failed: %s", e->msg);
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
    int nvar;
    fc_round_cfg cfg;
    float *host[FC_MAX_VARIANTS], *after;
    pooled eager, replay;
} job_run;

/* One round: a fresh setup — new buffers, plans and algorithm choices — verified,
 * timed eagerly (and as graph replays), checked again, torn down. Returns 0, -1
 * with the record failed or skipped, or 1 when interrupted. */
static int one_round(job_run *j, const fc_problem *p, int round, fc_record *r)
{
    fc_err e = {{0}};
    void *state = NULL;
    int rc = -1;
    double t0 = fc_now();
    int src = j->b->setup(p, j->w, j->dctx, &state, &e);
    if (src == FC_DECLINED) {
        r->status = FC_STATUS_SKIPPED;
        snprintf(r->reason, sizeof r->reason, "declined by the library: %s", e.msg);
        return -1;
    }
    if (src != 0) {
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "setup failed: %s", e.msg);
        return -1;
    }
    if (round == 0) {
        r->setup_ms = (fc_now() - t0) * 1e3;
        r->has_control = j->b->has_control && j->b->has_control(state);
        j->nvar = r->has_control ? 3 : 2;
        j->cfg.nvar = j->nvar;
        for (int v = 0; v < j->nvar; v++) j->b->describe(state, (fc_variant)v, &r->v[v].impl);
    }
    if (verify_setup(j->b, state, j->nvar, j->w, j->ref, j->tol, j->host, r, &e) != 0) goto out;
    fc_backend_call la = {j->b, state};
    fc_samples smp[FC_MAX_VARIANTS];
    bool interrupted = false;
    j->cfg.mode = FC_TIMING_EAGER;
    j->cfg.seed = fc_seed_mix(r->seed, (uint64_t)round);
    if (fc_bench_round(j->dev, j->dctx, fc_backend_launch, &la, &j->cfg, smp, &interrupted, &e) != 0) {
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "timing failed: %s", e.msg);
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
            snprintf(r->reason, sizeof r->reason, "graph timing failed: %s", e.msg);
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
    if (check_stable(j->b, state, j->nvar, j->w, j->tol, j->host, j->after, r, &e) != 0) goto out;
    rc = 0;
out:
    j->b->teardown(state);
    return rc;
}

/* After each round from the minimum on: whether to stop, and why. */
static bool enough_rounds(const job_run *j, const fc_settings *set, int done, int min_rounds, fc_record *r)
{
    if (done < min_rounds) return false;
    fc_ratio_ci ci;
    fc_interval_rounds(j->eager.logr, done, &ci);
    double half = (ci.hi - ci.lo) / (2 * ci.ratio);
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
    if (rn > 0)
        snprintf(r->interval_method, sizeof r->interval_method,
                 "t interval (df %d) over the rounds' log speedups (a round's: the median of its tuples' "
                 "unfused/fused ratios), widened in quadrature by a run-level sd of %.3g",
                 r->rounds - 1, rn);
    else
        snprintf(r->interval_method, sizeof r->interval_method,
                 "t interval (df %d) over the rounds' log speedups; a round's speedup is the median of its tuples' "
                 "unfused/fused ratios",
                 r->rounds - 1);
    if (r->has_control) {
        fc_interval_runs(j->eager.logr_impl, r->rounds, rn, &r->split_implementation);
        fc_interval_runs(j->eager.logr_fusion, r->rounds, rn, &r->split_fusion);
    }
    const fc_ratio_ci *decide = &r->speedup;
    if (j->graph) {
        r->has_graph_speedup = true;
        fc_interval_runs(j->replay.logr, r->rounds, rn, &r->speedup_graph);
        /* launch-bound: a quarter or more of the unfused chain's eager time is host
         * launch work that a graph replay removes; the graph speedup decides */
        const fc_variant_rec *u = &r->v[FC_UNFUSED];
        r->decided_by_graph = u->lat.median > 0 && (u->lat.median - u->lat_graph.median) >= 0.25 * u->lat.median;
        if (r->decided_by_graph) decide = &r->speedup_graph;
    }
    r->decision = fc_decide(decide, r->threshold);
    r->margin = fc_decision_margin(decide, r->threshold);
}

void fc_measure_job(fc_session *s, const fc_job *job, const fc_settings *set, const fc_workload *w,
                    const fc_reference *ref, volatile sig_atomic_t *interrupt, fc_record *r, bool *interrupted)
{
    const fc_backend *b = job->backend;
    fc_err e = {{0}};
    memset(r, 0, sizeof *r);
    *interrupted = false;
    r->prob = job->prob;
    fc_problem_string(&job->prob, r->problem, sizeof r->problem);
    fc_strlcpy(r->device, b->device, sizeof r->device);
    fc_strlcpy(r->backend, b->name, sizeof r->backend);
    r->threshold = job->threshold;
    r->status = FC_STATUS_OK;
    r->seed = fc_seed_mix(set->seed, hash_str(r->problem));
    r->prepare_ms = w->prepare_ms;
    r->reference_ms = ref->ms;
    int di = session_find(s, b->device);
    job_run j = {.b = b, .dev = s->dev[di], .dctx = s->ctx[di], .w = w, .ref = ref, .nvar = 2};
    fc_dtype cdt = job->prob.dtype;
    r->ceil_gflops = s->ceil[di].gflops[cdt] > 0 ? s->ceil[di].gflops[cdt] : s->ceil[di].gflops[FC_FP32];
    r->ceil_gbs = s->ceil[di].bandwidth_gbs;
    fc_cost cost = {0};
    fc_family_of(job->prob.pat)->cost(&job->prob, &cost);
    fill_metrics(r, &cost);
    j.tol = fc_problem_tolerance(&job->prob);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) r->v[v].check.tol = j.tol;

    if (b->device_bytes) {
        size_t need = 0;
        if (b->device_bytes(&job->prob, &need, &e) != 0) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "%s", e.msg);
            return;
        }
        size_t avail = j.dev->mem_available(j.dctx);
        if (set->max_memory > 0 && set->max_memory < (double)avail) avail = (size_t)set->max_memory;
        if (need > avail) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "needs %.2f GiB of %s memory, %.2f GiB available",
                     (double)need / (1 << 30), j.dev->name, (double)avail / (1 << 30));
            return;
        }
    }
    if (j.dev->sense) j.dev->sense(j.dctx, &r->before);

    fc_fault_armed = 1; /* injected library faults fire from here to the end of this job */
    /* At least set->rounds rounds (2 at least: one round says nothing about the
     * spread between setups), each with its share of the minimums; more rounds
     * while the interval is wider than max_noise and the time cap allows. */
    int min_rounds = set->rounds < 2 ? 2 : set->rounds > FC_MAX_ROUNDS ? FC_MAX_ROUNDS : set->rounds;
    const fc_stop *st = &set->stop;
    double round_min = st->min_time / min_rounds;
    j.cfg = (fc_round_cfg){
        .nvar = 2,
        .cold = set->cold,
        .target_sample = set->target_sample,
        .min_pairs = (st->min_samples + min_rounds - 1) / min_rounds,
        .min_time = round_min,
        .max_time = fmax(round_min, st->max_time / min_rounds),
        .max_pairs = st->max_samples,
        .interrupt = interrupt,
    };
    if (j.cfg.min_pairs < 2) j.cfg.min_pairs = 2;
    j.graph = set->graph && j.dev->graph_create;
    for (int v = 0; v < FC_MAX_VARIANTS; v++) j.host[v] = fc_xmalloc(w->out_n * sizeof(float));
    j.after = fc_xmalloc(w->out_n * sizeof(float));
    for (int round = 0; round < FC_MAX_ROUNDS; round++) {
        int rc = one_round(&j, &job->prob, round, r);
        if (rc < 0) goto out;
        if (rc > 0) {
            *interrupted = true;
            goto out;
        }
        r->rounds = round + 1;
        if (enough_rounds(&j, set, r->rounds, min_rounds, r)) break;
    }
    finish_record(&j, set, r);
    fill_rates(r);
    if (j.dev->sense) j.dev->sense(j.dctx, &r->after);
    r->throttled = r->before.clock_mhz > 0 && r->after.clock_mhz > 0 && r->after.clock_mhz < 0.75 * r->before.clock_mhz;

out:
    fc_fault_armed = 0;
    pool_free(&j.eager);
    pool_free(&j.replay);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) free(j.host[v]);
    free(j.after);
}

/* ------------------------------------------------------------------ the loop */

int fc_calibrate(fc_session *s, const fc_plan *plan, const fc_settings *set, fc_doc *doc, const fc_observer *obs,
                 volatile sig_atomic_t *interrupt, fc_err *e)
{
    double t0 = fc_now();
    fc_workload w = {0};
    fc_reference ref = {0};
    char cur[256] = "", skip_reason[512] = "";
    bool have = false;
    int done = 0;
    doc->complete = false;
    for (int i = 0; i < plan->n; i++) {
        if (interrupt && *interrupt) break;
        if (set->max_time_total > 0 && fc_now() - t0 >= set->max_time_total) break;
        const fc_job *job = &plan->jobs[i];
        if (obs && obs->start) obs->start(obs->ctx, i, plan->n, job);
        char ps[256];
        fc_problem_string(&job->prob, ps, sizeof ps);
        if (strcmp(ps, cur) != 0) {
            if (have) {
                fc_reference_free(&ref);
                fc_workload_free(&w);
                have = false;
            }
            fc_strlcpy(cur, ps, sizeof cur);
            fc_err we;
            skip_reason[0] = 0;
            uint64_t seed = fc_seed_mix(set->seed, hash_str(ps));
            if (fc_workload_create(&job->prob, seed, (size_t)set->max_memory, &w, &we) != 0) {
                snprintf(skip_reason, sizeof skip_reason, "%s", we.msg);
            } else {
                fc_reference_build(&job->prob, &w, seed ^ 0x5eed, &ref);
                have = true;
            }
        }
        fc_record rec;
        bool interrupted = false;
        if (!have) {
            memset(&rec, 0, sizeof rec);
            rec.prob = job->prob;
            fc_strlcpy(rec.problem, ps, sizeof rec.problem);
            fc_strlcpy(rec.device, job->backend->device, sizeof rec.device);
            fc_strlcpy(rec.backend, job->backend->name, sizeof rec.backend);
            rec.threshold = job->threshold;
            rec.status = FC_STATUS_SKIPPED;
            fc_strlcpy(rec.reason, skip_reason, sizeof rec.reason);
            fc_cost cost = {0};
            fc_family_of(job->prob.pat)->cost(&job->prob, &cost);
            fill_metrics(&rec, &cost);
        } else {
            fc_measure_job(s, job, set, &w, &ref, interrupt, &rec, &interrupted);
        }
        if (interrupted) break;
        fc_record *slot = fc_doc_add(doc);
        *slot = rec;
        done++;
        if (obs && obs->record && obs->record(obs->ctx, i, plan->n, doc, slot) != 0) {
            if (have) {
                fc_reference_free(&ref);
                fc_workload_free(&w);
            }
            return fc_errf(e, "could not save the records");
        }
    }
    if (have) {
        fc_reference_free(&ref);
        fc_workload_free(&w);
    }
    doc->complete = done == plan->n;
    return 0;
}
