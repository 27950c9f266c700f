/* bench.c — the timing engine; see bench.h. */
#include "bench.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void fc_samples_free(fc_samples *s)
{
    free(s->ms);
    memset(s, 0, sizeof *s);
}

typedef struct engine {
    const fc_device *dev;
    void *ctx;
    fc_launch_fn fn;
    void *arg;
    bool cold;
    void *graph[FC_MAX_VARIANTS];
} engine;

/* One timed sample of `batch` calls; returns per-call seconds. */
static int sample(engine *g, fc_variant v, int batch, double *sec, fc_err *e)
{
    /* cold: the flush, then the device idle when the sample begins, as it is warm (a
     * GPU's flush is queued on the stream: calls queued behind it would be launched
     * while it ran, and a cold sample would leave out the host's launch cost that a
     * warm one holds) */
    if (g->cold &&
        (g->dev->flush_cache(g->ctx, e) != 0 || (g->dev->synchronize && g->dev->synchronize(g->ctx, e) != 0)))
        return -1;
    if (g->dev->timer_begin(g->ctx, e) != 0) return -1;
    if (g->graph[v]) {
        if (g->dev->graph_launch(g->ctx, g->graph[v], e) != 0) return -1;
    } else {
        for (int i = 0; i < batch; i++)
            if (g->fn(g->arg, v, e) != 0) return -1;
    }
    double t;
    if (g->dev->timer_end(g->ctx, &t, e) != 0) return -1;
    *sec = t / batch;
    return 0;
}

/* Warm-up: at least 2 calls and WARM_MIN_S, at most 2 s; the estimate is the
 * fastest single call after the first (which pays for first touches). 5 ms: a
 * round of the quick sweep samples about 50 ms a variant, and with 20 ms the
 * warm-ups took a quarter of the sweep (Intel Xeon VM, 772 rounds). */
#define WARM_MIN_S 0.005

static int warm_up(engine *g, fc_variant v, double *est, fc_err *e)
{
    double total = 0, best = INFINITY;
    for (int i = 0; i < 1000; i++) {
        double t;
        if (sample(g, v, 1, &t, e) != 0) return -1;
        total += t;
        if (i > 0 && t < best) best = t;
        if (i == 0 && t > 1.0) { /* a huge problem: one more call settles it */
            if (sample(g, v, 1, &t, e) != 0) return -1;
            best = t;
            break;
        }
        if ((i >= 1 && total >= WARM_MIN_S) || total >= 2.0) break;
    }
    *est = isfinite(best) ? best : total;
    return 0;
}

static void push(fc_samples *s, double ms)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->ms = fc_xrealloc(s->ms, (size_t)s->cap * sizeof *s->ms);
    }
    s->ms[s->n++] = ms;
}

/* Warm-up, batch size and (in graph mode) the captured graph of each variant. Every
 * variant takes the same batch, the one that brings the fastest variant's sample to
 * target_sample (the others' samples are longer). A call's time depends on what ran
 * just before it: a working set a few times the LLC finds part of itself still
 * cached after its own call, none after another variant's, and a sample of B calls
 * has B − 1 calls after their own. With a batch per variant, a fused form twice as
 * fast took two calls a sample where its unfused chain took one, and the speedup
 * gained what the cache kept: the bf16 add_layernorm at m=14592, n=768 (67 MB, a
 * 32 MiB L3; AMD EPYC VM) measured 1.66-1.83x with batches 1 and 2, 1.55-1.68x with
 * the same batch, runs alternated. Each round chooses its batch anew, from its own
 * warm-up: near the boundary between two batches the rounds take both, so what the
 * batch does to a working set past the LLC lands in the rounds' spread, where the
 * intervals see it, rather than in the record's point, where one batch for every
 * round (the first round's) would put it and two runs of the same problem would
 * differ by it. In the Zen 5 VM's standard sweep (b831954) 236 of 444 records had
 * rounds of different batches, 57 of them with a round of 3 calls a sample or fewer (the
 * decode step's GEMMs over 64 MB of weights among them). */
static int prepare(engine *g, const fc_round_cfg *cfg, fc_samples *out, fc_err *e)
{
    double fastest = INFINITY;
    for (int v = 0; v < cfg->nvar; v++) {
        double est;
        if (warm_up(g, (fc_variant)v, &est, e) != 0) return -1;
        if (est < fastest) fastest = est;
    }
    int batch = 1;
    if (!cfg->cold && fastest > 0 && fastest < cfg->target_sample) {
        double b = ceil(cfg->target_sample / fastest);
        batch = b > 100000 ? 100000 : (int)b;
    }
    for (int v = 0; v < cfg->nvar; v++) {
        out[v].batch = batch;
        if (cfg->mode == FC_TIMING_GRAPH) {
            if (g->dev->graph_create(g->ctx, g->fn, g->arg, (fc_variant)v, batch, &g->graph[v], e) != 0) return -1;
            double t;
            if (sample(g, (fc_variant)v, batch, &t, e) != 0) return -1; /* the first replay uploads */
        }
    }
    return 0;
}

/* Whether the round has what it needs, or may take no more. */
static bool round_done(const fc_round_cfg *cfg, const fc_samples *out)
{
    if (out[0].n < cfg->min_pairs) return false;
    if (out[0].n >= cfg->max_pairs) return true;
    bool all_min = true;
    for (int v = 0; v < cfg->nvar; v++) {
        if (out[v].sampled_s >= cfg->max_time) return true;
        all_min &= out[v].sampled_s >= cfg->min_time;
    }
    return all_min;
}

int fc_bench_round(const fc_device *dev, void *devctx, fc_launch_fn fn, void *arg, const fc_round_cfg *cfg,
                   fc_samples out[FC_MAX_VARIANTS], bool *interrupted, fc_err *e)
{
    engine g = {.dev = dev, .ctx = devctx, .fn = fn, .arg = arg, .cold = cfg->cold};
    int rc = -1;
    memset(out, 0, FC_MAX_VARIANTS * sizeof *out);
    *interrupted = false;
    if (cfg->nvar < 2 || cfg->nvar > FC_MAX_VARIANTS)
        return fc_errf(e, "a round times 2 or 3 variants, not %d", cfg->nvar);
    if (cfg->mode == FC_TIMING_GRAPH && !dev->graph_create)
        return fc_errf(e, "device '%s' has no graph replay", dev->name);
    if (prepare(&g, cfg, out, e) != 0) goto done;

    fc_rng rng;
    fc_rng_seed(&rng, cfg->seed);
    while (!round_done(cfg, out)) {
        if (cfg->interrupt && *cfg->interrupt) {
            *interrupted = true;
            break;
        }
        int order[FC_MAX_VARIANTS] = {0, 1, 2};
        for (int i = cfg->nvar - 1; i > 0; i--) { /* Fisher–Yates */
            int j = (int)fc_rng_below(&rng, (uint64_t)i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int k = 0; k < cfg->nvar; k++) {
            fc_variant v = (fc_variant)order[k];
            double t;
            if (sample(&g, v, out[v].batch, &t, e) != 0) goto done;
            push(&out[v], t * 1e3);
            out[v].sampled_s += t * out[v].batch;
        }
    }
    rc = 0;
done:
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        if (g.graph[v]) dev->graph_destroy(g.graph[v]);
    if (rc != 0)
        for (int v = 0; v < FC_MAX_VARIANTS; v++) fc_samples_free(&out[v]);
    return rc;
}
