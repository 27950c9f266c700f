/* test_stats.c — statistics, the paired bootstrap, decisions, and the timing
 * engine's stopping rules on a simulated device with a known clock. */
#include "bench.h"
#include "stats.h"
#include "test.h"
#include "util.h"

#include <time.h>

static void basic_stats(void)
{
    double x[10] = {7, 3, 10, 1, 5, 9, 2, 8, 4, 6};
    fc_stats s;
    fc_stats_compute(x, 10, &s);
    CHECK(s.n == 10);
    CHECK_NEAR(s.median, 5.5, 1e-12);
    CHECK_NEAR(s.mean, 5.5, 1e-12);
    CHECK_NEAR(s.min, 1, 0);
    CHECK_NEAR(s.max, 10, 0);
    CHECK_NEAR(s.p10, 1.9, 1e-12); /* linear interpolation: 1 + 0.9·(2 − 1) */
    CHECK_NEAR(s.p90, 9.1, 1e-12);
    CHECK_NEAR(s.stdev, 3.0276503540974917, 1e-12);
    CHECK_NEAR(s.rsd, 3.0276503540974917 / 5.5, 1e-12);
    CHECK(x[0] == 7); /* input untouched */
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* fc_median against a sort: odd and even n, ties, sorted and reversed input */
static void median_selection(void)
{
    double one[1] = {4}, two[2] = {3, 1}, known[6] = {9, 1, 8, 2, 7, 3};
    CHECK(fc_median(one, 1) == 4);
    CHECK(fc_median(two, 2) == 2);
    CHECK(fc_median(known, 6) == 5);
    CHECK(isnan(fc_median(one, 0)));
    fc_rng r;
    fc_rng_seed(&r, (uint64_t)time(NULL));
    for (int n = 1; n < 80; n++)
        for (int kind = 0; kind < 4; kind++) {
            double x[80], sorted[80];
            for (int i = 0; i < n; i++) {
                /* kind 0: distinct; 1: many ties; 2: ascending; 3: descending */
                x[i] = kind == 0 ? fc_rng_uniform(&r) : kind == 1 ? (double)fc_rng_below(&r, 3) : kind == 2 ? i : n - i;
                sorted[i] = x[i];
            }
            qsort(sorted, (size_t)n, sizeof *sorted, cmp);
            double want = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
            CHECK_MSG(fc_median(x, n) == want, "n=%d kind %d", n, kind);
        }
}

/* the bootstrap's point estimate is the ratio of true medians, odd and even n */
static void ratio_of_medians(void)
{
    fc_rng r;
    fc_rng_seed(&r, (uint64_t)time(NULL));
    for (int n = 1; n < 60; n++) {
        double a[64], b[64], sa[64], sb[64];
        for (int i = 0; i < n; i++) {
            a[i] = sa[i] = 1 + fc_rng_uniform(&r);
            b[i] = sb[i] = 1 + fc_rng_uniform(&r);
        }
        qsort(sa, (size_t)n, sizeof(double), cmp);
        qsort(sb, (size_t)n, sizeof(double), cmp);
        double ma = n % 2 ? sa[n / 2] : 0.5 * (sa[n / 2 - 1] + sa[n / 2]);
        double mb = n % 2 ? sb[n / 2] : 0.5 * (sb[n / 2 - 1] + sb[n / 2]);
        fc_ratio_ci ci;
        fc_bootstrap_ratio(a, b, n, 50, 1, &ci);
        CHECK_NEAR(ci.ratio, ma / mb, 1e-12);
        CHECK(ci.lo <= ci.hi);
    }
}

/* Paired samples with a known true ratio: the CI holds it, and decides. */
static void bootstrap_known_ratio(void)
{
    fc_rng r;
    uint64_t seed = (uint64_t)time(NULL);
    fc_rng_seed(&r, seed);
    int n = 400;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (int i = 0; i < n; i++) {
        double drift = 1 + 0.05 * sin(i / 30.0); /* shared by the pair */
        b[i] = 2.0 * drift * (1 + 0.02 * (fc_rng_uniform(&r) - 0.5));
        a[i] = 1.3 * 2.0 * drift * (1 + 0.02 * (fc_rng_uniform(&r) - 0.5));
    }
    fc_ratio_ci ci, ci2;
    fc_bootstrap_ratio(a, b, n, 2000, 7, &ci);
    CHECK_MSG(ci.lo < 1.3 && ci.hi > 1.3 * 0.995, "seed %llu: ci [%g, %g]", (unsigned long long)seed, ci.lo, ci.hi);
    CHECK_NEAR(ci.ratio, 1.3, 0.03);
    CHECK(ci.hi - ci.lo < 0.1);
    CHECK(fc_decide(&ci, 1.1) == FC_DECIDE_YES);
    CHECK(fc_decide(&ci, 1.5) == FC_DECIDE_NO);
    CHECK(fc_decide(&ci, 1.3) == FC_DECIDE_INCONCLUSIVE);
    fc_bootstrap_ratio(a, b, n, 2000, 7, &ci2);
    CHECK(ci.lo == ci2.lo && ci.hi == ci2.hi); /* deterministic for a seed */
    free(a);
    free(b);
}

/* Rounds that disagree widen the interval; rounds that agree do not. */
static void bootstrap_rounds(void)
{
    enum { PER = 100 };
    double a[3 * PER], b[3 * PER];
    int starts[4] = {0, PER, 2 * PER, 3 * PER};
    double ratio[3] = {1.2, 1.0, 1.1};
    fc_rng r;
    fc_rng_seed(&r, 11);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < PER; i++) {
            b[k * PER + i] = 1.0 + 0.002 * fc_rng_uniform(&r);
            a[k * PER + i] = ratio[k] * (1.0 + 0.002 * fc_rng_uniform(&r));
        }
    fc_ratio_ci flat, rounds;
    fc_bootstrap_ratio(a, b, 3 * PER, 2000, 3, &flat);
    fc_bootstrap_ratio_rounds(a, b, starts, 3, 2000, 3, &rounds);
    CHECK_NEAR(flat.ratio, rounds.ratio, 0);
    CHECK_MSG(rounds.hi - rounds.lo > 0.1, "rounds CI [%g, %g]", rounds.lo, rounds.hi);
    CHECK_MSG(rounds.lo < 1.05 && rounds.hi > 1.15, "rounds CI [%g, %g]", rounds.lo, rounds.hi);
    CHECK_MSG(flat.hi - flat.lo < rounds.hi - rounds.lo, "flat [%g, %g]", flat.lo, flat.hi);
    CHECK(fc_decide(&rounds, 1.1) == FC_DECIDE_INCONCLUSIVE);
    /* agreeing rounds: as tight as the flat bootstrap */
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < PER; i++) a[k * PER + i] = 1.3 * b[k * PER + i] * (1.0 + 0.002 * (fc_rng_uniform(&r) - 0.5));
    fc_bootstrap_ratio_rounds(a, b, starts, 3, 2000, 3, &rounds);
    CHECK_MSG(rounds.hi - rounds.lo < 0.01, "agreeing rounds CI [%g, %g]", rounds.lo, rounds.hi);
    CHECK(fc_decide(&rounds, 1.1) == FC_DECIDE_YES);
}

static void decisions(void)
{
    fc_ratio_ci ci = {.ratio = 1.2, .lo = 1.15, .hi = 1.25};
    CHECK(fc_decide(&ci, 1.1) == FC_DECIDE_YES);
    ci = (fc_ratio_ci){.ratio = 1.0, .lo = 0.95, .hi = 1.05};
    CHECK(fc_decide(&ci, 1.1) == FC_DECIDE_NO);
    ci = (fc_ratio_ci){.ratio = 1.1, .lo = 1.05, .hi = 1.15};
    CHECK(fc_decide(&ci, 1.1) == FC_DECIDE_INCONCLUSIVE);
    CHECK(!strcmp(fc_decision_name(FC_DECIDE_INCONCLUSIVE), "inconclusive"));
}

/* ------------------------------------------------------------------ engine */

/* A device whose clock is virtual: each call of variant v costs cost[v] seconds,
 * times a noise factor; flushes are counted. */
typedef struct sim {
    double now, t0;
    double cost[2];
    double noise; /* relative amplitude, alternating sign per call */
    long calls[2], flushes;
    long interrupt_after;
    volatile sig_atomic_t *flag;
} sim;

static int sim_begin(void *ctx, fc_err *e)
{
    (void)e;
    sim *s = ctx;
    s->t0 = s->now;
    return 0;
}
static int sim_end(void *ctx, double *sec, fc_err *e)
{
    (void)e;
    sim *s = ctx;
    *sec = s->now - s->t0;
    return 0;
}
static int sim_flush(void *ctx, fc_err *e)
{
    (void)e;
    ((sim *)ctx)->flushes++;
    return 0;
}
static int sim_launch(void *arg, fc_variant v, fc_err *e)
{
    (void)e;
    sim *s = arg;
    long k = s->calls[v]++;
    s->now += s->cost[v] * (1 + s->noise * ((k % 2) ? 1 : -1));
    if (s->interrupt_after && s->calls[0] + s->calls[1] >= s->interrupt_after) *s->flag = 1;
    return 0;
}

static const fc_device sim_device = {
    .name = "sim", .timer_begin = sim_begin, .timer_end = sim_end, .flush_cache = sim_flush,
};

static void engine_stops_on_noise(void)
{
    sim s = {.cost = {0.010, 0.005}};
    fc_bench_cfg cfg = {.target_sample = 0.002, .seed = 1};
    fc_stop_defaults(&cfg.stop);
    fc_samples out[2];
    fc_err e;
    CHECK(fc_bench_pair(&sim_device, &s, sim_launch, &s, &cfg, out, &e) == 0);
    /* no noise: each variant stops once it has 0.5 s and 10 samples */
    CHECK(!strcmp(out[0].stop_rule, "noise") && !strcmp(out[1].stop_rule, "noise"));
    CHECK(out[0].n == out[1].n); /* paired */
    /* (±1: the virtual clock sums 0.01 s steps in floating point) */
    CHECK_MSG(abs(out[0].n_at_stop - 50) <= 1, "unfused stopped at %d", out[0].n_at_stop);
    CHECK_MSG(abs(out[1].n_at_stop - 100) <= 1, "fused stopped at %d", out[1].n_at_stop);
    CHECK(out[0].batch == 1 && out[1].batch == 1);
    CHECK_NEAR(out[0].ms[3], 10.0, 1e-9);
    CHECK_NEAR(out[1].ms[7], 5.0, 1e-9);
    CHECK(s.flushes == 0);
    fc_samples_free(&out[0]);
    fc_samples_free(&out[1]);
}

static void engine_caps_time_and_batches(void)
{
    sim s = {.cost = {1e-6, 2e-6}};
    fc_bench_cfg cfg = {.target_sample = 0.002, .seed = 2};
    fc_stop_defaults(&cfg.stop);
    cfg.stop.max_time = 0.3;
    cfg.stop.min_time = 0.1;
    fc_samples out[2];
    fc_err e;
    CHECK(fc_bench_pair(&sim_device, &s, sim_launch, &s, &cfg, out, &e) == 0);
    /* tiny calls are batched up to ~2 ms per sample */
    CHECK_MSG(abs(out[0].batch - 2000) <= 1, "batch %d", out[0].batch);
    CHECK_MSG(abs(out[1].batch - 1000) <= 1, "batch %d", out[1].batch);
    CHECK(!strcmp(out[0].stop_rule, "noise"));
    CHECK_NEAR(out[0].ms[0], 1e-3, 1e-9);
    fc_samples_free(&out[0]);
    fc_samples_free(&out[1]);

    /* unbatched noisy calls never get under 0.5 %: the time cap stops them */
    sim s2 = {.cost = {0.004, 0.004}, .noise = 0.1};
    CHECK(fc_bench_pair(&sim_device, &s2, sim_launch, &s2, &cfg, out, &e) == 0);
    CHECK(!strcmp(out[0].stop_rule, "max-time") && !strcmp(out[1].stop_rule, "max-time"));
    CHECK(out[0].sampled_s >= 0.3 && out[0].sampled_s < 0.31);
    fc_samples_free(&out[0]);
    fc_samples_free(&out[1]);
}

static void engine_cold_and_interrupt(void)
{
    volatile sig_atomic_t flag = 0;
    /* warm-up takes 200 calls per variant; then 50 pairs before the signal */
    sim s = {.cost = {1e-4, 1e-4}, .interrupt_after = 500, .flag = &flag};
    fc_bench_cfg cfg = {.target_sample = 0.002, .seed = 3, .cold = true, .interrupt = &flag};
    fc_stop_defaults(&cfg.stop);
    fc_samples out[2];
    fc_err e;
    CHECK(fc_bench_pair(&sim_device, &s, sim_launch, &s, &cfg, out, &e) == 0);
    CHECK(out[0].batch == 1); /* cold: one call per flushed sample */
    CHECK(!strcmp(out[0].stop_rule, "interrupted"));
    CHECK(s.flushes >= out[0].n + out[1].n);
    CHECK_MSG(out[0].n == out[1].n && abs(out[0].n - 50) <= 1, "n %d %d", out[0].n, out[1].n);
    fc_samples_free(&out[0]);
    fc_samples_free(&out[1]);
}

static void welford(void)
{
    fc_welford w = {0};
    double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    for (int i = 0; i < 8; i++) fc_welford_add(&w, x[i]);
    CHECK_NEAR(w.mean, 5, 1e-12);
    CHECK_NEAR(fc_welford_rsd(&w), sqrt(32.0 / 7) / 5, 1e-12);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(basic_stats), T(median_selection), T(ratio_of_medians), T(bootstrap_known_ratio),
                                   T(bootstrap_rounds), T(decisions), T(engine_stops_on_noise),
                                   T(engine_caps_time_and_batches), T(engine_cold_and_interrupt), T(welford)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
