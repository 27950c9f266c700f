/* bench.c — the timing engine; see bench.h. */
#include "bench.h"
#include "stats.h"
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
    void *graph[FC_NVARIANTS];
} engine;

/* One timed sample of `batch` calls; returns per-call seconds. */
static int sample(engine *g, fc_variant v, int batch, double *sec, fc_err *e)
{
    if (g->cold && g->dev->flush_cache(g->ctx, e) != 0) return -1;
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

/* Warm-up: at least 3 calls and 20 ms, at most 2 s; the estimate is the fastest
 * single call seen once things have settled. */
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
        if ((i >= 2 && total >= 0.02) || total >= 2.0) break;
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

int fc_bench_pair(const fc_device *dev, void *devctx, fc_launch_fn fn, void *arg, const fc_bench_cfg *cfg,
                  fc_samples out[FC_NVARIANTS], fc_err *e)
{
    engine g = {.dev = dev, .ctx = devctx, .fn = fn, .arg = arg, .cold = cfg->cold};
    int rc = -1;
    memset(out, 0, FC_NVARIANTS * sizeof *out);
    if (cfg->mode == FC_TIMING_GRAPH && !dev->graph_create) {
        fc_errf(e, "device '%s' has no graph replay", dev->name);
        return -1;
    }
    for (int v = 0; v < FC_NVARIANTS; v++) {
        double est;
        if (warm_up(&g, (fc_variant)v, &est, e) != 0) goto done;
        int batch = 1;
        if (!cfg->cold && est > 0 && est < cfg->target_sample) {
            double b = ceil(cfg->target_sample / est);
            batch = b > 100000 ? 100000 : (int)b;
        }
        out[v].batch = batch;
        out[v].cap = 256;
        out[v].ms = fc_xmalloc((size_t)out[v].cap * sizeof(double));
        if (cfg->mode == FC_TIMING_GRAPH) {
            if (dev->graph_create(devctx, fn, arg, (fc_variant)v, batch, &g.graph[v], e) != 0) goto done;
            double t;
            if (sample(&g, (fc_variant)v, batch, &t, e) != 0) goto done; /* first replay uploads */
        }
    }

    fc_rng rng;
    fc_rng_seed(&rng, cfg->seed);
    fc_welford w[FC_NVARIANTS] = {{0}};
    bool done[FC_NVARIANTS] = {false, false};
    const fc_stop *st = &cfg->stop;
    while (!(done[0] && done[1])) {
        if (cfg->interrupt && *cfg->interrupt) {
            for (int v = 0; v < FC_NVARIANTS; v++)
                if (!done[v]) {
                    out[v].stop_rule = fc_stop_rule_name(FC_RULE_INTERRUPTED);
                    out[v].n_at_stop = out[v].n;
                }
            break;
        }
        int first = (int)(fc_rng_next(&rng) & 1);
        for (int k = 0; k < FC_NVARIANTS; k++) {
            fc_variant v = (fc_variant)(k ^ first);
            double t;
            if (sample(&g, v, out[v].batch, &t, e) != 0) goto done;
            push(&out[v], t * 1e3);
            out[v].sampled_s += t * out[v].batch;
            fc_welford_add(&w[v], t);
        }
        for (int v = 0; v < FC_NVARIANTS; v++) {
            if (done[v]) continue;
            const char *rule = NULL;
            if (out[v].n >= st->max_samples) rule = fc_stop_rule_name(FC_RULE_MAX_SAMPLES);
            else if (out[v].sampled_s >= st->max_time) rule = fc_stop_rule_name(FC_RULE_MAX_TIME);
            else if (out[v].n >= st->min_samples && out[v].sampled_s >= st->min_time &&
                     fc_welford_rsd(&w[v]) <= st->max_noise)
                rule = fc_stop_rule_name(FC_RULE_NOISE);
            if (rule) {
                done[v] = true;
                out[v].stop_rule = rule;
                out[v].n_at_stop = out[v].n;
            }
        }
    }
    rc = 0;
done:
    for (int v = 0; v < FC_NVARIANTS; v++)
        if (g.graph[v]) dev->graph_destroy(g.graph[v]);
    if (rc != 0)
        for (int v = 0; v < FC_NVARIANTS; v++) fc_samples_free(&out[v]);
    return rc;
}
