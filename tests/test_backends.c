/* test_backends.c — the CPU backends: the shared conformance test (every backend x
 * pattern x shape x variant against the float64 reference; conformance.h) with
 * fresh random inputs each run (the seed is printed with any failure so it can be
 * replayed: test_backends <seed>), the host chain buffers, what the backends stream,
 * and explicit support. */
#include "builtin.h"
#include "conformance.h"
#include "cpu_chain.h"
#include "cpuinfo.h"
#include "linear_ops.h"
#include "norm_ops.h"
#include "openblas_core.h"
#include "test.h"

#include <math.h>
#include <time.h>

static uint64_t g_seed;

static void cpu_backends_match_reference(void)
{
    const fc_device *cpu = fc_builtin.device[FC_DEV_cpu];
    void *ctx;
    fc_device_opts o = {0};
    fc_err e;
    CHECK(cpu->open(&o, &ctx, &e) == 0);
    fc_conf_opts co = {.device = "cpu", .dev = cpu, .devctx = ctx, .exact_kernels = true, .seed = g_seed};
    fc_conf_result r;
    fc_conformance(&co, &r);
    t_failures += r.failures;
    cpu->close(ctx);
    printf("checked %d backend x pattern x shape x dtype x variant combinations, %d problems unsupported (seed %llu)\n",
           r.checked, r.unsupported, (unsigned long long)g_seed);
    CHECK(r.checked > 100);
    CHECK_MSG(r.controls > 0, "no backend ran a control variant (cpu.openblas's linear problems have one)");
}

/* The CPU backends' conformance on these shapes with the LLC pretended one byte, so
 * that every host rule takes its past-the-LLC form; the combinations checked. */
static int conformance_past_llc(const char *const *shapes, size_t n, bool exact_kernels, const char *what)
{
    const fc_device *cpu = fc_builtin.device[FC_DEV_cpu];
    void *ctx;
    fc_device_opts o = {0};
    fc_err e;
    CHECK(cpu->open(&o, &ctx, &e) == 0);
    fc_host_llc_pretend(1);
    fc_conf_opts co = {.device = "cpu",
                       .dev = cpu,
                       .devctx = ctx,
                       .shapes = shapes,
                       .nshapes = n,
                       .exact_kernels = exact_kernels,
                       .seed = g_seed};
    fc_conf_result r;
    fc_conformance(&co, &r);
    fc_host_llc_pretend(0);
    t_failures += r.failures;
    cpu->close(ctx);
    printf("%s: checked %d combinations (seed %llu)\n", what, r.checked, (unsigned long long)g_seed);
    return r.checked;
}

/* The norm family's kernels with their outputs streamed past the caches, as they are
 * from the LLC's size on (norm_ops.c), on the shapes of every other check: every
 * kernel that writes the chain's output streams it where its rows allow (heads and
 * tails written plainly, rows too long for the fused kernels' buffers not streamed). */
static void norm_kernels_streamed(void)
{
    static const char *const shapes[] = {"m=7,n=13",      "m=1,n=1",      "m=3,n=1030",  "m=17,n=4096",
                                         "m=2,n=12290",   "m=4,n=768",    "m=3,n=64",    "m=7,h=3,d=10",
                                         "m=9,h=4,d=128", "m=3,h=5,d=66", "m=2,h=2,d=64"};
    CHECK(conformance_past_llc(shapes, FC_ARRAY_LEN(shapes), true, "streamed norms") >= 3 * 11);
}

/* The norm kernels as the backends run them where the caches are flushed before
 * every call (cold): asking ahead for their streams' lines, their outputs not
 * streamed (below the LLC). And the rule itself (norm_ops.h's fc_norm_io): the asks
 * only where the rows come from memory. */
static void norm_kernels_cold(void)
{
    static const char *const shapes[] = {"m=7,n=13", "m=3,n=1030", "m=4,n=768", "m=7,h=3,d=10", "m=9,h=4,d=128"};
    const fc_device *cpu = fc_builtin.device[FC_DEV_cpu];
    void *ctx;
    fc_device_opts o = {0};
    fc_err e;
    CHECK(cpu->open(&o, &ctx, &e) == 0);
    fc_conf_opts co = {.device = "cpu",
                       .dev = cpu,
                       .devctx = ctx,
                       .shapes = shapes,
                       .nshapes = FC_ARRAY_LEN(shapes),
                       .exact_kernels = true,
                       .cold = true,
                       .seed = g_seed};
    fc_conf_result r;
    fc_conformance(&co, &r);
    t_failures += r.failures;
    cpu->close(ctx);
    printf("cold norms: checked %d combinations (seed %llu)\n", r.checked, (unsigned long long)g_seed);
    CHECK(r.checked >= 3 * 5);

    fc_problem small, big;
    CHECK(fc_problem_parse("add_rmsnorm:m=4,n=768", NULL, &small, &e) == 0);
    CHECK(fc_problem_parse("add_rmsnorm:m=2048,n=4096", NULL, &big, &e) == 0);
    fc_norm_io io = fc_cpu_norm_io(&small, false);
    CHECK(!io.st && !io.asks);
    io = fc_cpu_norm_io(&small, true);
    CHECK(!io.st && io.asks);
    fc_host_llc_pretend(1);
    io = fc_cpu_norm_io(&big, false);
    CHECK(io.st && io.asks);
    fc_host_llc_pretend(0);
}

/* The decode kernel's form past half the LLC, each piece of K and V read before it is
 * computed (attention_ops.c's dec_read_piece): grouped and multi-head, pieces cut
 * short, a d of no whole vector, both dtypes. */
static void decode_pieces_read(void)
{
    static const char *const shapes[] = {"b=2,h=8,hkv=2,s=1,skv=700,d=64", "b=1,h=6,hkv=3,s=2,skv=333,d=13",
                                         "b=1,h=2,s=1,skv=517,d=128"};
    CHECK(conformance_past_llc(shapes, FC_ARRAY_LEN(shapes), false, "decode, pieces read first") >= 3 * 3 * 2);
}

/* What a backend tells the prediction model it streams (fc_backend.streamed_bytes) is
 * what its description of the same setup says, in words (y streamed, h and y
 * streamed, or neither) and in the record's streamed_bytes, for each norm pattern, dtype it supports and variant, with the LLC
 * pretended one byte (everything streams where it can: rows past the fused fp32 add
 * + LayerNorm's buffer do not) and 1 TiB (nothing does). */
static void streamed_bytes_as_described(void)
{
    static const char *const shapes[] = {"m=4,n=768", "m=2,n=12290", "m=3,h=2,d=128"};
    static const double llcs[] = {1, 1099511627776.0};
    const fc_device *cpu = fc_builtin.device[FC_DEV_cpu];
    void *ctx;
    fc_device_opts o = {0};
    fc_err e;
    CHECK(cpu->open(&o, &ctx, &e) == 0);
    int checked = 0, streamed = 0;
    for (int bi = 0; bi < FC_NBACKENDS; bi++) {
        const fc_backend *b = fc_builtin.backend[bi];
        if (!b || strcmp(b->device, "cpu")) continue;
        CHECK_MSG(b->streamed_bytes, "%s says nothing of what it streams", b->name);
        for (int pi = 0; pi < FC_NPATTERNS; pi++)
            for (size_t si = 0; si < FC_ARRAY_LEN(shapes); si++)
                for (int dt = 0; dt < FC_NDTYPES; dt++)
                    for (size_t li = 0; li < FC_ARRAY_LEN(llcs); li++) {
                        const fc_pattern *pat = &fc_patterns[pi];
                        char s[96], why[256];
                        snprintf(s, sizeof s, "%s:%s,dtype=%s", pat->name, shapes[si], fc_dtype_name((fc_dtype)dt));
                        fc_problem p;
                        if (pat->family != FC_FAM_NORM || fc_problem_parse(s, NULL, &p, &e) != 0 ||
                            !b->supports(&p, why, sizeof why))
                            continue;
                        fc_workload w;
                        void *st = NULL;
                        CHECK(fc_workload_create(&p, 1, 0, &w, &e) == 0);
                        fc_host_llc_pretend((size_t)llcs[li]);
                        CHECK_MSG(b->setup(&p, &w, ctx, &st, &e) == 0, "%s %s: %s", b->name, s, e.msg);
                        fc_host_llc_pretend(0);
                        for (int v = 0; st && v < FC_NVARIANTS; v++) {
                            fc_impl impl;
                            memset(&impl, 0, sizeof impl);
                            b->describe(st, (fc_variant)v, &impl);
                            double y = (double)p.d[FC_NORM_M] * (double)p.d[FC_NORM_N] * fc_dtype_size(p.dtype);
                            double got = b->streamed_bytes(&p, (fc_variant)v, llcs[li]);
                            double said = strstr(impl.name, "h and y streamed") ? 2 * y
                                          : strstr(impl.name, "y streamed")     ? y
                                                                                : 0;
                            CHECK_MSG(got == said && impl.streamed_bytes == got,
                                      "%s %s %s (LLC %g): streamed_bytes %g, described %g (%s), recorded %g", b->name,
                                      s, fc_variant_name((fc_variant)v), llcs[li], got, said, impl.name,
                                      impl.streamed_bytes);
                            checked++;
                            streamed += got > 0;
                        }
                        if (st) b->teardown(st);
                        fc_workload_free(&w);
                    }
    }
    cpu->close(ctx);
    printf("streamed bytes: %d variants as described, %d of them streamed\n", checked, streamed);
    CHECK(checked >= 2 * 3 * 2 * 2 && streamed > 0 && streamed < checked);
}

/* The chain's buffers: each op of the unfused chain writes where the one before did
 * not, the last writes the unfused output, and as many intermediates are used as
 * the pattern keeps alive; poison and output reach the variant's own buffer. */
static void chain_buffers(void)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        const fc_pattern *pat = &fc_patterns[pi];
        fc_workload w = {.out_n = 12, .inter_n = 20};
        fc_cpu_chain ch;
        fc_cpu_chain_alloc(&ch, pat, &w);
        const float *cur = NULL, *used[FC_MAX_OPS];
        int nused = 0;
        for (int i = 0; i < pat->nops; i++) {
            float *dst = fc_cpu_chain_dst(&ch, i);
            CHECK(dst && dst != cur);
            if (i == pat->nops - 1) CHECK(dst == ch.out[FC_UNFUSED]);
            else
                CHECK(dst != ch.out[FC_UNFUSED] && dst != ch.out[FC_FUSED]);
            bool seen = false;
            for (int k = 0; k < nused; k++) seen |= used[k] == dst;
            if (!seen && i < pat->nops - 1) used[nused++] = dst;
            cur = dst;
        }
        CHECK_MSG(nused == fc_pattern_live_intermediates(pat), "%s: %d intermediates", pat->name, nused);
        float got[12];
        for (int v = 0; v < FC_NVARIANTS; v++) {
            for (int u = 0; u < FC_NVARIANTS; u++)
                for (size_t i = 0; i < w.out_n; i++) ch.out[u][i] = 1.0f;
            fc_cpu_chain_poison(&ch, (fc_variant)v);
            fc_cpu_chain_output(&ch, (fc_variant)v, got);
            CHECK(isnan(got[0]) && isnan(got[w.out_n - 1]));
            fc_cpu_chain_output(&ch, (fc_variant)(1 - v), got);
            CHECK(got[0] == 1.0f && got[w.out_n - 1] == 1.0f); /* the other variant's, untouched */
        }
        fc_cpu_chain_free(&ch);
        CHECK(ch.out[0] == NULL && ch.tmp[0] == NULL);
    }
}

/* The linear fused forms' blocks: within the problem, and a block per thread unless
 * both sides are down to 16 (plans end for every shape, tiny and odd ones included). */
static void linear_plans(void)
{
    static const int Ms[] = {1, 7, 17, 20, 33, 512, 4096}, Ns[] = {1, 13, 16, 17, 100, 11008}, Ks[] = {5, 4096};
    static const size_t cache[] = {4096, 1 << 20};
    for (size_t a = 0; a < FC_ARRAY_LEN(Ms); a++)
        for (size_t b = 0; b < FC_ARRAY_LEN(Ns); b++)
            for (size_t c = 0; c < FC_ARRAY_LEN(Ks); c++)
                for (size_t z = 0; z < FC_ARRAY_LEN(cache); z++)
                    for (int t = 1; t <= 64; t *= 4)
                        for (int glu = 0; glu < 2; glu++) {
                            int M = Ms[a], N = Ns[b], K = Ks[c];
                            fc_lin_plan pl;
                            if (glu) fc_cpu_glu_plan(M, N, K, cache[z], t, &pl);
                            else
                                fc_cpu_prologue_plan(M, N, K, cache[z], t, &pl);
                            CHECK_MSG(pl.M == M && pl.N == N && pl.K == K && pl.mb >= 1 && pl.mb <= M && pl.nb >= 1 &&
                                          pl.nb <= N,
                                      "%s plan M=%d N=%d K=%d threads=%d: %dx%d blocks", glu ? "glu" : "prologue", M, N,
                                      K, t, pl.mb, pl.nb);
                            int blocks = ((M + pl.mb - 1) / pl.mb) * ((N + pl.nb - 1) / pl.nb);
                            CHECK_MSG(blocks >= t || (pl.mb <= 16 && pl.nb <= 16),
                                      "%s plan M=%d N=%d threads=%d: %d blocks", glu ? "glu" : "prologue", M, N, t,
                                      blocks);
                        }
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
            else
                CHECK_MSG(why[0], "%s gives no reason for %s", fc_backend_words.names[k], fc_patterns[pi].name);
            p.dtype = FC_BF16;
            why[0] = 0;
            if (!bk->supports(&p, why, sizeof why)) CHECK(why[0]);
        }
        CHECK_MSG(n >= 1, "no CPU backend implements %s", fc_patterns[pi].name);
    }
}

/* Native bf16 is judged from the CPU's flags: avx512_bf16 or amx_bf16, whole words;
 * without, the reason names the ISA there is and the model. */
static void bf16_from_cpu_flags(void)
{
    static const char zen3[] = "fpu sse4_2 avx f16c avx2 fma bmi2 sha_ni vaes";
    static const char zen4[] = "fpu sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 vaes";
    char why[256] = "";
    CHECK(fc_cpu_bf16_native(zen4, "AMD EPYC 9R14", why, sizeof why));
    CHECK(fc_cpu_bf16_native("avx2 avx512f amx_tile amx_bf16", "Sapphire Rapids", why, sizeof why));
    CHECK(!fc_cpu_bf16_native(zen3, "AMD EPYC 7763 64-Core Processor", why, sizeof why));
    CHECK_MSG(!strcmp(why,
                      "bf16 needs avx512_bf16 or amx_bf16; this CPU has AVX2 only (AMD EPYC 7763 64-Core "
                      "Processor)"),
              "%s", why);
    CHECK(!fc_cpu_bf16_native("avx2 avx512f avx512_bf16x xamx_bf16", "odd", why, sizeof why));
    CHECK_MSG(strstr(why, "AVX-512 without BF16 only (odd)"), "%s", why);
    CHECK(!fc_cpu_bf16_native("", "old", why, sizeof why) && strstr(why, "no AVX only"));
}

/* OpenBLAS's fallback to a pre-AVX2 core on a CPU its table predates is overridden
 * with the core the flags support; a modern choice, or a CPU without AVX2, stands. */
static void openblas_core_from_cpu_flags(void)
{
    static const char emr[] = "fpu sse4_2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16";
    static const char skx[] = "fpu sse4_2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl";
    static const char zen3[] = "fpu sse4_2 avx f16c avx2 fma bmi2";
    const char *c = fc_openblas_core_for("Prescott", emr, "GenuineIntel");
    CHECK_MSG(c && !strcmp(c, "Cooperlake"), "%s", c ? c : "(none)");
    c = fc_openblas_core_for("Nehalem", skx, "GenuineIntel");
    CHECK_MSG(c && !strcmp(c, "SkylakeX"), "%s", c ? c : "(none)");
    c = fc_openblas_core_for("prescott", zen3, "AuthenticAMD");
    CHECK_MSG(c && !strcmp(c, "Zen"), "%s", c ? c : "(none)");
    c = fc_openblas_core_for("Core2", zen3, "GenuineIntel");
    CHECK_MSG(c && !strcmp(c, "Haswell"), "%s", c ? c : "(none)");
    CHECK(!fc_openblas_core_for("Cooperlake", emr, "GenuineIntel"));
    CHECK(!fc_openblas_core_for("Zen", zen3, "AuthenticAMD"));
    CHECK(!fc_openblas_core_for("Haswell", emr, "GenuineIntel"));
    CHECK(!fc_openblas_core_for("Prescott", "fpu sse4_2 avx", "GenuineIntel"));
    CHECK(!fc_openblas_core_for("Prescott", "avx2x fmax", "GenuineIntel"));
    CHECK(!fc_openblas_core_for(NULL, emr, "GenuineIntel"));
}

/* cpu.onednn computes bf16 where the CPU does natively and declines it elsewhere
 * with the reason, fp32 unchanged: a Zen 3's flags pretended here. */
static void onednn_bf16_follows_the_cpu(void)
{
    const fc_backend *b = fc_backend_find(&fc_builtin, "cpu.onednn");
    if (!b) {
        printf("cpu.onednn is not built: nothing to check\n");
        return;
    }
    for (int zen3 = 0; zen3 <= 1; zen3++) {
        fc_host_bf16_pretend(zen3 ? "avx avx2 fma" : "avx avx2 avx512f avx512_bf16", "AMD EPYC 7763");
        for (int pi = 0; pi < FC_NPATTERNS; pi++) {
            fc_problem p;
            fc_problem_init(&p, &fc_patterns[pi], FC_FP32);
            const fc_family *f = fc_family_of(&fc_patterns[pi]);
            for (int i = 0; i < f->ndims; i++)
                if (p.d[i] == FC_DIM_REQUIRED) p.d[i] = 4;
            fc_err e;
            CHECK(fc_problem_finish(&p, &e) == 0);
            char why[256] = "";
            bool fp32 = b->supports(&p, why, sizeof why);
            p.dtype = FC_BF16;
            bool bf16 = b->supports(&p, why, sizeof why);
            CHECK_MSG(bf16 == (fp32 && !zen3), "%s bf16 %s on %s", fc_patterns[pi].name, bf16 ? "offered" : "declined",
                      zen3 ? "zen3" : "zen4");
            if (fp32 && zen3)
                CHECK_MSG(!strcmp(why, "bf16 needs avx512_bf16 or amx_bf16; this CPU has AVX2 only (AMD EPYC 7763)"),
                          "%s: %s", fc_patterns[pi].name, why);
        }
        if (zen3) CHECK(b->gemm_gflops(FC_BF16) == 0);
    }
    fc_host_bf16_pretend(NULL, NULL);
}

/* The rows-that-cancel tests' gamma and beta over n */
static void cancel_params(float *g, float *b, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        g[j] = 0.5f + (float)j / (float)n;
        b[j] = 0.25f - (float)(j % 7) / 14.0f;
    }
}

/* x and r at row i, column j of those tests: u uniform in [-1, 1) from st; row 0 about
 * base0 with a spread of 4, row 1 noise under a first element of 65536, the others
 * noise */
static void cancel_xr(uint64_t *st, size_t i, size_t j, float base0, float *x, float *r)
{
    *st ^= *st << 13, *st ^= *st >> 7, *st ^= *st << 17;
    const float u = (float)(*st >> 40) / 16777216.0f * 2.0f - 1.0f;
    const float base = i == 0 ? base0 : i == 1 && j == 0 ? 65536.0f : 0.0f;
    *x = base + (i == 0 ? 4.0f * u : u);
    *r = 0.5f * u;
}

/* The bf16 add + LayerNorm kernel on rows whose statistics cancel: a row far from
 * zero (mean 512, spread ±1: E[h²] − mean² in fp32 loses the variance) and a row of
 * noise under one spike; widths with tails, one past the rows it keeps on the
 * stack. Against float64 from the same bf16 inputs, normwise per row, to bf16's
 * resolution (2^-8; the outputs' own rounding is about 2^-9/√3). */
static void bf16_layernorm_rows_that_cancel(void)
{
    static const size_t widths[] = {45, 768, 4149};
    uint64_t st = g_seed | 1;
    for (size_t wi = 0; wi < FC_ARRAY_LEN(widths); wi++) {
        const size_t n = widths[wi], rows = 3;
        fc_bf16 *x = malloc(rows * n * sizeof *x), *r = malloc(rows * n * sizeof *r), *y = malloc(rows * n * sizeof *y);
        float *g = malloc(n * sizeof *g), *b = malloc(n * sizeof *b);
        cancel_params(g, b, n);
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < n; j++) {
                float xv, rv;
                cancel_xr(&st, i, j, 512.0f, &xv, &rv);
                x[i * n + j] = fc_bf16_store(xv);
                r[i * n + j] = fc_bf16_store(rv);
            }
        fc_cpu_add_layernorm_bf16(x, r, g, b, 1e-5f, y, rows, n, (fc_norm_io){0});
        for (size_t i = 0; i < rows; i++) {
            double mean = 0, var = 0;
            for (size_t j = 0; j < n; j++) mean += (double)fc_bf16_load(x[i * n + j]) + fc_bf16_load(r[i * n + j]);
            mean /= (double)n;
            for (size_t j = 0; j < n; j++) {
                const double d = (double)fc_bf16_load(x[i * n + j]) + fc_bf16_load(r[i * n + j]) - mean;
                var += d * d;
            }
            const double rstd = 1.0 / sqrt(var / (double)n + 1e-5);
            double num = 0, den = 0;
            for (size_t j = 0; j < n; j++) {
                const double h = (double)fc_bf16_load(x[i * n + j]) + fc_bf16_load(r[i * n + j]);
                const double want = (h - mean) * rstd * g[j] + b[j], got = fc_bf16_load(y[i * n + j]);
                num += (got - want) * (got - want);
                den += want * want;
            }
            CHECK_MSG(sqrt(num / den) <= 1.0 / 256, "n=%zu row %zu: normwise relative error %.3g (seed %llu)", n, i,
                      sqrt(num / den), (unsigned long long)g_seed);
        }
        free(x), free(r), free(y), free(g), free(b);
    }
}

/* fp32 layer norms over rows whose mean or variance a one-sweep sum would lose
 * (norm_ops.c's moments): a row about 64 with a spread of 4 (Σ h alone loses the
 * mean), one whose first element is 65536 over noise (a shift at the outlier: the
 * row is summed again), one whose first element lies just within the two standard
 * deviations of the shift's limit, and plain noise. Both the fused add + LayerNorm
 * (streamed and not, asking ahead and not) and the unfused chain's layer-norm pass,
 * against float64 from the same fp32 h, normwise per row to 1e-5; the asks, hints
 * to the caches, leave every bit of the output as it is. */
static void layernorm_rows_that_cancel(void)
{
    static const size_t widths[] = {45, 768, 4149, 9001};
    uint64_t st = g_seed | 1;
    for (size_t wi = 0; wi < FC_ARRAY_LEN(widths); wi++) {
        const size_t n = widths[wi], rows = 4, all = rows * n;
        float *x = malloc(all * sizeof *x), *r = malloc(all * sizeof *r), *h = malloc(all * sizeof *h),
              *y = malloc(all * sizeof *y), *g = malloc(n * sizeof *g), *b = malloc(n * sizeof *b),
              *y0 = malloc(all * sizeof *y0);
        cancel_params(g, b, n);
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < n; j++) {
                cancel_xr(&st, i, j, 64.0f, &x[i * n + j], &r[i * n + j]);
                if (i == 2 && j == 0) x[i * n + j] = 1.7f, r[i * n + j] = 0.0f; /* h = 1.5u: sd 0.866 */
                h[i * n + j] = x[i * n + j] + r[i * n + j];
            }
        static const char *const forms[] = {"add+layernorm", "add+layernorm streamed", "add+layernorm asking ahead",
                                            "layernorm pass", "layernorm pass asking ahead"};
        for (int form = 0; form < 5; form++) {
            memset(y, 0, all * sizeof *y);
            if (form < 3)
                fc_cpu_add_layernorm(x, r, g, b, 1e-5f, y, rows, n, (fc_norm_io){.st = form == 1, .asks = form > 0});
            else
                fc_cpu_layernorm_rows(h, g, b, 1e-5f, y, rows, n, (fc_norm_io){.asks = form == 4});
            if (form == 0 || form == 3) memcpy(y0, y, all * sizeof *y);
            else if (form != 1)
                CHECK_MSG(!memcmp(y0, y, all * sizeof *y), "%s, n=%zu: the asks changed the output", forms[form], n);
            for (size_t i = 0; i < rows; i++) {
                const float *hi = h + i * n;
                double mean = 0, var = 0, num = 0, den = 0;
                for (size_t j = 0; j < n; j++) mean += hi[j];
                mean /= (double)n;
                for (size_t j = 0; j < n; j++) var += ((double)hi[j] - mean) * ((double)hi[j] - mean);
                const double rstd = 1.0 / sqrt(var / (double)n + 1e-5);
                for (size_t j = 0; j < n; j++) {
                    const double want = ((double)hi[j] - mean) * rstd * g[j] + b[j], got = y[i * n + j];
                    num += (got - want) * (got - want);
                    den += want * want;
                }
                CHECK_MSG(sqrt(num / den) <= 1e-5, "%s, n=%zu row %zu: normwise relative error %.3g (seed %llu)",
                          forms[form], n, i, sqrt(num / den), (unsigned long long)g_seed);
            }
        }
        free(x), free(r), free(h), free(y), free(g), free(b), free(y0);
    }
}

int main(int argc, char **argv)
{
    g_seed = (uint64_t)time(NULL);
    if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') {
        g_seed = strtoull(argv[1], NULL, 10);
        argc = 1;
    }
    static const t_case cases[] = {T(cpu_backends_match_reference),
                                   T(norm_kernels_streamed),
                                   T(norm_kernels_cold),
                                   T(decode_pieces_read),
                                   T(streamed_bytes_as_described),
                                   T(chain_buffers),
                                   T(linear_plans),
                                   T(support_is_explicit),
                                   T(bf16_from_cpu_flags),
                                   T(openblas_core_from_cpu_flags),
                                   T(onednn_bf16_follows_the_cpu),
                                   T(bf16_layernorm_rows_that_cancel),
                                   T(layernorm_rows_that_cancel)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
