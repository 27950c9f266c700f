/* test_backends.c — every CPU backend x pattern x variant against the float64
 * reference on tiny and odd shapes, with fresh random inputs each run (the seed
 * is printed with any failure so it can be replayed: test_backends <seed>). */
#include "builtin.h"
#include "test.h"
#include "verify.h"

#include <time.h>

static uint64_t g_seed;

static const char *const shapes[] = {
    "m=7,k=13,n=5", "m=1,k=1,n=1", "m=33,k=65,n=17", "m=130,k=70,n=520",
    "n=2,c=3,h=7,w=6,k=5,r=3,s=3,pad=1,layout=nhwc", "n=2,c=3,h=7,w=6,k=5,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=5,h=9,w=9,k=7,r=1,s=1,layout=nhwc", "n=1,c=5,h=9,w=9,k=7,r=1,s=1,layout=nchw",
    "n=3,c=4,h=11,w=11,k=6,r=3,s=3,stride=2,pad=1,layout=nhwc", "n=1,c=17,h=13,w=10,k=9,r=5,s=3,stride=1,pad=2,layout=nchw",
    "b=2,h=3,s=33,d=64", "b=1,h=2,s=33,d=128", "b=1,h=2,s=70,d=16,causal=1", "b=2,h=1,s=300,d=32,causal=1",
    "b=1,h=1,s=1,d=8",
};

static int checked;

static void check_backend(const fc_backend *b, void *devctx, const char *shape)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        const fc_pattern *pat = &fc_patterns[pi];
        fc_problem p;
        fc_err e;
        if (fc_problem_parse(shape, pat, &p, &e) != 0) continue; /* another family's shape */
        char why[256], ps[256];
        fc_problem_string(&p, ps, sizeof ps);
        if (!b->supports(&p, why, sizeof why)) continue;
        uint64_t seed = fc_seed_mix(g_seed, (uint64_t)pi * 131 + strlen(shape));
        fc_workload w;
        if (fc_workload_create(&p, seed, 0, &w, &e) != 0) {
            CHECK_MSG(0, "%s: %s", ps, e.msg);
            continue;
        }
        fc_reference ref;
        fc_reference_build(&p, &w, seed, &ref);
        void *state = NULL;
        if (b->setup(&p, &w, devctx, &state, &e) != 0) {
            CHECK_MSG(0, "%s %s setup: %s", b->name, ps, e.msg);
            if (state) b->teardown(state);
            fc_reference_free(&ref);
            fc_workload_free(&w);
            continue;
        }
        float *out[2] = {malloc(w.out_n * 4), malloc(w.out_n * 4)};
        for (int v = 0; v < FC_NVARIANTS; v++) {
            fc_impl impl;
            b->describe(state, (fc_variant)v, &impl);
            CHECK_MSG(impl.name[0] && impl.nkernels >= 1, "%s %s: no implementation named", b->name, ps);
            CHECK_MSG(!impl.fallback, "%s %s %s ran a fallback: %s", b->name, ps, fc_variant_name((fc_variant)v),
                      impl.fallback_why);
            if (v == FC_FUSED) CHECK_MSG(impl.nkernels == 1, "%s %s fused runs %d kernels", b->name, ps, impl.nkernels);
            else CHECK_MSG(impl.nkernels == p.pat->nops, "%s %s unfused runs %d kernels", b->name, ps, impl.nkernels);
            CHECK(b->poison(state, (fc_variant)v, &e) == 0);
            CHECK(b->output(state, (fc_variant)v, out[v], &e) == 0);
            CHECK_MSG(isnan(out[v][0]), "%s poison did not reach the output", b->name);
            CHECK(b->run(state, (fc_variant)v, &e) == 0);
            CHECK(b->output(state, (fc_variant)v, out[v], &e) == 0);
            fc_check c;
            fc_check_output(&ref, out[v], w.out_n, fc_problem_tolerance(&p), &c);
            CHECK_MSG(c.passed, "%s %s %s (seed %llu): %s", b->name, ps, fc_variant_name((fc_variant)v),
                      (unsigned long long)g_seed, c.reason);
            /* a second run gives the same answer (no state carried between runs) */
            CHECK(b->run(state, (fc_variant)v, &e) == 0);
            float *again = malloc(w.out_n * 4);
            CHECK(b->output(state, (fc_variant)v, again, &e) == 0);
            CHECK_MSG(fc_rel_diff(again, out[v], w.out_n) <= 1e-6, "%s %s not repeatable", b->name, ps);
            free(again);
            checked++;
        }
        double d = fc_rel_diff(out[FC_FUSED], out[FC_UNFUSED], w.out_n);
        CHECK_MSG(d <= fc_problem_tolerance(&p), "%s %s: fused vs unfused %g", b->name, ps, d);
        free(out[0]);
        free(out[1]);
        b->teardown(state);
        fc_reference_free(&ref);
        fc_workload_free(&w);
    }
}

static void cpu_backends_match_reference(void)
{
    const fc_device *cpu = fc_builtin.device[FC_DEV_cpu];
    void *ctx;
    fc_device_opts o = {0};
    fc_err e;
    CHECK(cpu->open(&o, &ctx, &e) == 0);
    int backends = 0;
    for (int k = 0; k < FC_NBACKENDS; k++) {
            const fc_backend *bk = fc_builtin.backend[k];
        if (!bk || strcmp(bk->device, "cpu")) continue;
        char why[256];
        if (!bk->available(why, sizeof why)) continue;
        backends++;
        for (size_t s = 0; s < FC_ARRAY_LEN(shapes); s++) check_backend(bk, ctx, shapes[s]);
    }
    cpu->close(ctx);
    CHECK(backends >= 1);
    printf("checked %d backend x pattern x shape x variant combinations (seed %llu)\n", checked,
           (unsigned long long)g_seed);
    CHECK(checked > 100);
}

/* Every pattern is implemented by at least one CPU backend, and what a backend
 * does not implement it says so with a reason. */
static void support_is_explicit(void)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        int n = 0;
        for (int k = 0; k < FC_NBACKENDS; k++) {
            const fc_backend *bk = fc_builtin.backend[k];
            if (!bk || strcmp(bk->device, "cpu")) continue;
            fc_problem p;
            fc_problem_init(&p, &fc_patterns[pi], FC_FP32);
            const fc_family *f = fc_family_of(&fc_patterns[pi]);
            for (int i = 0; i < f->ndims; i++)
                if (p.d[i] == FC_DIM_REQUIRED) p.d[i] = 4;
            fc_err e;
            CHECK(fc_problem_finish(&p, &e) == 0);
            char why[256] = "";
            if (bk->supports(&p, why, sizeof why)) n++;
            else CHECK_MSG(why[0], "%s gives no reason for %s", fc_backend_words.names[k], fc_patterns[pi].name);
            p.dtype = FC_BF16;
            why[0] = 0;
            if (!bk->supports(&p, why, sizeof why)) CHECK(why[0]);
        }
        CHECK_MSG(n >= 1, "no CPU backend implements %s", fc_patterns[pi].name);
    }
}

int main(int argc, char **argv)
{
    g_seed = (uint64_t)time(NULL);
    if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') {
        g_seed = strtoull(argv[1], NULL, 10);
        argc = 1;
    }
    static const t_case cases[] = {T(cpu_backends_match_reference), T(support_is_explicit)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
