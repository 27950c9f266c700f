/* calibrate.c — see calibrate.h. */
#include "calibrate.h"
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
    fc_device_opts o = {.threads = set ? set->threads : 0};
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
        if (!d) return fc_errf(e, "backend '%s' needs device '%s', which this build lacks", plan->jobs[i].backend->name, dn);
        if (fc_session_add(s, d, set, e) != 0) {
            fc_session_close(s);
            return -1;
        }
    }
    return 0;
}

int fc_session_ceilings(fc_session *s, fc_err *e)
{
    for (int i = 0; i < s->ndev; i++) {
        if (s->measured[i]) continue;
        fc_ceilings *c = &s->ceil[i];
        if (s->dev[i]->measure_ceilings(s->ctx[i], c, e) != 0) return -1;
        /* the GEMM ceiling is the best rate any library on the device reaches */
        for (int k = 0; k < FC_NBACKENDS; k++) {
            const fc_backend *b = s->reg->backend[k];
            char why[256];
            if (!b || !b->gemm_gflops || strcmp(b->device, s->dev[i]->name) || !b->available(why, sizeof why)) continue;
            for (int dt = 0; dt < FC_NDTYPES; dt++) {
                double g = b->gemm_gflops((fc_dtype)dt);
                if (g <= 0) continue;
                size_t l = strlen(c->method);
                snprintf(c->method + l, sizeof c->method - l, "; %s %s GEMM %.1f GFLOP/s", b->name,
                         fc_dtype_name((fc_dtype)dt), g);
                if (g > c->gflops[dt]) c->gflops[dt] = g;
            }
        }
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
    for (int v = 0; v < FC_NVARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        vr->bytes = c->bytes[v];
        vr->peak_inter_bytes = c->peak_inter[v];
        vr->intensity = c->bytes[v] > 0 ? c->flops / c->bytes[v] : 0;
        bool mem = r->ceil_gbs > 0 && vr->intensity * r->ceil_gbs < r->ceil_gflops;
        fc_strlcpy(vr->bound, mem ? "memory" : "compute", sizeof vr->bound);
    }
    r->traffic_reduction = c->bytes[FC_UNFUSED] > 0 ? 1.0 - c->bytes[FC_FUSED] / c->bytes[FC_UNFUSED] : 0;
}

static void fill_rates(fc_record *r)
{
    for (int v = 0; v < FC_NVARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        double s = vr->lat.median * 1e-3;
        vr->gflops = r->flops / s / 1e9;
        vr->gbs = vr->bytes / s / 1e9;
        vr->pct_peak_flops = r->ceil_gflops > 0 ? 100 * vr->gflops / r->ceil_gflops : 0;
        vr->pct_peak_bw = r->ceil_gbs > 0 ? 100 * vr->gbs / r->ceil_gbs : 0;
        double roof = fmin(r->ceil_gflops, vr->intensity * r->ceil_gbs);
        vr->pct_roofline = roof > 0 ? 100 * vr->gflops / roof : 0;
    }
}

/* Samples of both variants pooled over rounds. */
typedef struct pooled {
    fc_samples v[FC_NVARIANTS]; /* ms arrays grow; batch and rule from the last round */
    int round_start[FC_MAX_ROUNDS + 1];
    int nrounds;
} pooled;

static void pool_add(pooled *p, fc_samples in[FC_NVARIANTS])
{
    p->round_start[p->nrounds] = p->v[0].n;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        fc_samples *o = &p->v[v];
        if (o->n + in[v].n > o->cap) {
            o->cap = o->n + in[v].n + 256;
            o->ms = fc_xrealloc(o->ms, (size_t)o->cap * sizeof *o->ms);
        }
        if (in[v].n) memcpy(o->ms + o->n, in[v].ms, (size_t)in[v].n * sizeof *o->ms); /* interrupted: maybe none */
        o->n += in[v].n;
        o->batch = in[v].batch;
        o->sampled_s += in[v].sampled_s;
        o->stop_rule = in[v].stop_rule;
        o->n_at_stop += in[v].n_at_stop;
    }
    p->nrounds++;
    p->round_start[p->nrounds] = p->v[0].n;
}

static void pool_free(pooled *p)
{
    for (int v = 0; v < FC_NVARIANTS; v++) fc_samples_free(&p->v[v]);
}

/* Poisons, runs and checks both variants of a fresh setup. */
static int verify_setup(const fc_backend *b, void *state, const fc_workload *w, const fc_reference *ref, double tol,
                        float *host[FC_NVARIANTS], fc_record *r, fc_err *e)
{
    for (int v = 0; v < FC_NVARIANTS; v++) {
        if (b->poison(state, (fc_variant)v, e) != 0 || b->run(state, (fc_variant)v, e) != 0 ||
            b->output(state, (fc_variant)v, host[v], e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "%s run failed: %s", fc_variant_name((fc_variant)v), e->msg);
            return -1;
        }
        fc_check_output(ref, host[v], w->out_n, tol, &r->v[v].check);
    }
    r->fused_vs_unfused = fc_rel_diff(host[FC_FUSED], host[FC_UNFUSED], w->out_n);
    r->verified = r->v[FC_UNFUSED].check.passed && r->v[FC_FUSED].check.passed;
    if (!r->verified) {
        int bad = r->v[FC_UNFUSED].check.passed ? FC_FUSED : FC_UNFUSED;
        r->status = FC_STATUS_FAILED;
        snprintf(r->reason, sizeof r->reason, "verification failed (%s): %s", fc_variant_name((fc_variant)bad),
                 r->v[bad].check.reason);
        return -1;
    }
    return 0;
}

/* The output left by the last timed call must still be the verified one. */
static int check_stable(const fc_backend *b, void *state, const fc_workload *w, double tol, float *host[FC_NVARIANTS],
                        float *after, fc_record *r, fc_err *e)
{
    for (int v = 0; v < FC_NVARIANTS; v++) {
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

/* Interrupted while either variant was still sampling: the record is incomplete. */
static bool was_interrupted(const fc_samples s[FC_NVARIANTS])
{
    for (int v = 0; v < FC_NVARIANTS; v++)
        if (s[v].stop_rule && !strcmp(s[v].stop_rule, fc_stop_rule_name(FC_RULE_INTERRUPTED))) return true;
    return false;
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
    const fc_device *dev = s->dev[di];
    void *dctx = s->ctx[di];
    fc_dtype cdt = job->prob.dtype;
    r->ceil_gflops = s->ceil[di].gflops[cdt] > 0 ? s->ceil[di].gflops[cdt] : s->ceil[di].gflops[FC_FP32];
    r->ceil_gbs = s->ceil[di].bandwidth_gbs;
    fc_cost cost = {0};
    fc_family_of(job->prob.pat)->cost(&job->prob, &cost);
    fill_metrics(r, &cost);
    double tol = fc_problem_tolerance(&job->prob);
    for (int v = 0; v < FC_NVARIANTS; v++) r->v[v].check.tol = tol;

    if (b->device_bytes) {
        size_t need = 0;
        if (b->device_bytes(&job->prob, &need, &e) != 0) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "%s", e.msg);
            return;
        }
        size_t avail = dev->mem_available(dctx);
        if (set->max_memory > 0 && set->max_memory < (double)avail) avail = (size_t)set->max_memory;
        if (need > avail) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "needs %.2f GiB of %s memory, %.2f GiB available",
                     (double)need / (1 << 30), dev->name, (double)avail / (1 << 30));
            return;
        }
    }
    if (dev->sense) dev->sense(dctx, &r->before);

    fc_fault_armed = 1; /* injected library faults fire from here to the end of this job */
    int rounds = set->rounds < 1 ? 1 : set->rounds > FC_MAX_ROUNDS ? FC_MAX_ROUNDS : set->rounds;
    fc_bench_cfg cfg = {.stop = set->stop, .cold = set->cold, .target_sample = set->target_sample,
                        .seed = r->seed, .mode = FC_TIMING_EAGER, .interrupt = interrupt};
    /* each round gets its share of the time; together they meet the stopping rule's minimums */
    cfg.stop.max_time = set->stop.max_time / rounds;
    cfg.stop.min_time = set->stop.min_time / rounds;
    cfg.stop.min_samples = (set->stop.min_samples + rounds - 1) / rounds;
    if (cfg.stop.min_samples < 2) cfg.stop.min_samples = 2;
    bool graph = set->graph && dev->graph_create;
    float *host[FC_NVARIANTS] = {fc_xmalloc(w->out_n * sizeof(float)), fc_xmalloc(w->out_n * sizeof(float))};
    float *after = fc_xmalloc(w->out_n * sizeof(float));
    pooled eager = {0}, replay = {0};
    void *state = NULL;
    for (int round = 0; round < rounds; round++) {
        /* a fresh setup per round: new buffers, plans and algorithm choices */
        double t0 = fc_now();
        int src = b->setup(&job->prob, w, dctx, &state, &e);
        if (src == FC_DECLINED) {
            r->status = FC_STATUS_SKIPPED;
            snprintf(r->reason, sizeof r->reason, "declined by the library: %s", e.msg);
            goto out;
        }
        if (src != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "setup failed: %s", e.msg);
            goto out;
        }
        if (round == 0) {
            r->setup_ms = (fc_now() - t0) * 1e3;
            for (int v = 0; v < FC_NVARIANTS; v++) b->describe(state, (fc_variant)v, &r->v[v].impl);
        }
        if (verify_setup(b, state, w, ref, tol, host, r, &e) != 0) goto out;
        fc_backend_call la = {b, state};
        fc_samples smp[FC_NVARIANTS] = {{0}};
        cfg.mode = FC_TIMING_EAGER;
        cfg.seed = fc_seed_mix(r->seed, (uint64_t)round);
        if (fc_bench_pair(dev, dctx, fc_backend_launch, &la, &cfg, smp, &e) != 0) {
            r->status = FC_STATUS_FAILED;
            snprintf(r->reason, sizeof r->reason, "timing failed: %s", e.msg);
            goto out;
        }
        bool stop = was_interrupted(smp);
        pool_add(&eager, smp);
        for (int v = 0; v < FC_NVARIANTS; v++) fc_samples_free(&smp[v]);
        if (stop) {
            *interrupted = true;
            goto out;
        }
        if (graph) {
            cfg.mode = FC_TIMING_GRAPH;
            if (fc_bench_pair(dev, dctx, fc_backend_launch, &la, &cfg, smp, &e) != 0) {
                r->status = FC_STATUS_FAILED;
                snprintf(r->reason, sizeof r->reason, "graph timing failed: %s", e.msg);
                goto out;
            }
            stop = was_interrupted(smp);
            pool_add(&replay, smp);
            for (int v = 0; v < FC_NVARIANTS; v++) fc_samples_free(&smp[v]);
            if (stop) {
                *interrupted = true;
                goto out;
            }
        }
        if (check_stable(b, state, w, tol, host, after, r, &e) != 0) goto out;
        b->teardown(state);
        state = NULL;
    }
    r->rounds = rounds;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        fc_variant_rec *vr = &r->v[v];
        fc_stats_compute(eager.v[v].ms, eager.v[v].n, &vr->lat);
        vr->batch = eager.v[v].batch;
        fc_strlcpy(vr->stop_rule, eager.v[v].stop_rule ? eager.v[v].stop_rule : "?", sizeof vr->stop_rule);
        vr->samples_at_stop = eager.v[v].n_at_stop;
        vr->sampled_s = eager.v[v].sampled_s;
        if (graph) {
            vr->has_graph = true;
            fc_stats_compute(replay.v[v].ms, replay.v[v].n, &vr->lat_graph);
        }
    }
    fc_bootstrap_ratio_rounds(eager.v[FC_UNFUSED].ms, eager.v[FC_FUSED].ms, eager.round_start, eager.nrounds,
                              set->resamples, r->seed, &r->speedup);
    if (graph) {
        r->has_graph_speedup = true;
        fc_bootstrap_ratio_rounds(replay.v[FC_UNFUSED].ms, replay.v[FC_FUSED].ms, replay.round_start, replay.nrounds,
                                  set->resamples, r->seed, &r->speedup_graph);
    }
    r->decision = fc_decide(&r->speedup, r->threshold);
    fill_rates(r);
    if (dev->sense) dev->sense(dctx, &r->after);
    r->throttled = r->before.clock_mhz > 0 && r->after.clock_mhz > 0 && r->after.clock_mhz < 0.75 * r->before.clock_mhz;

out:
    if (state) b->teardown(state);
    fc_fault_armed = 0;
    pool_free(&eager);
    pool_free(&replay);
    for (int v = 0; v < FC_NVARIANTS; v++) free(host[v]);
    free(after);
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
