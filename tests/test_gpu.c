/* test_gpu.c — the shared conformance test (conformance.h) on every CUDA backend x
 * pattern x dtype x variant against the float64 reference on tiny and odd shapes,
 * eagerly and replayed from a captured CUDA graph; plus the CUDA device's own
 * contract (timer, flush, memory, inventory, ceilings, sense, the bandwidth and the peak beside a round). Fresh random inputs
 * each run; the seed is printed with any failure so that it can be replayed.
 *
 *   test_gpu [SEED] [--quick] [--backend NAME[,NAME]] [--probe] [CASE]
 *
 * Exits 77 (skipped) when there is no usable GPU. --probe only answers that (0: a
 * GPU is usable). --quick takes fewer shapes (for compute-sanitizer runs). Both
 * fused attention kernels (reference, flash2) run through cuda.custom on their own
 * list of shapes, --quick included.
 */
#include "builtin.h"
#include "conformance.h"
#include "cuda_common.h"
#include "test.h"

#include <time.h>

static uint64_t g_seed;
static bool g_quick;
static const char *g_backends; /* comma-separated filter, NULL: all CUDA backends */
static const fc_device *g_dev;
static void *g_ctx;
static fc_ceilings g_ceil;
static bool g_have_ceil;

static void gpu_backends_match_reference(void)
{
    fc_conf_opts co = {.device = "cuda",
                       .dev = g_dev,
                       .devctx = g_ctx,
                       .backends = g_backends,
                       .quick = g_quick,
                       .graph = true,
                       .library_may_refuse = true,
                       .seed = g_seed};
    fc_conf_result r;
    fc_conformance(&co, &r);
    t_failures += r.failures;
    printf(
        "checked %d combinations (seed %llu); %d problems unsupported (reasons given); %d problems refused by a "
        "library at setup (listed above); %d with a control variant\n",
        r.checked, (unsigned long long)g_seed, r.unsupported, r.refused, r.controls);
    /* cuda.cudnn's conv problems carry the control (the fused call's conv algorithm) */
    bool cudnn = false;
    for (int k = 0; k < FC_NBACKENDS; k++)
        cudnn |= fc_builtin.backend[k] && !strcmp(fc_builtin.backend[k]->name, "cuda.cudnn");
    if (cudnn && (!g_backends || strstr(g_backends, "cuda.cudnn")))
        CHECK_MSG(r.controls > 0, "cuda.cudnn ran no control variant");
}

/* cuda.cublas's GELU prologue in blocks of x rows (fc_cuda_prologue_rows): with k =
 * 40000, a quarter of an L2 of 50-60 MB holds fewer than 128 rows of fp32 or bf16, so
 * m = 300 is two blocks of 128 and a last of 44 (its own matmul), and the record has
 * the control (the unfused chain with the blocks' GEMMs); every linear pattern takes
 * the shape, the others in one block. */
static void gpu_prologue_blocks(void)
{
    if (g_quick || (g_backends && !strstr(g_backends, "cuda.cublas"))) return;
    static const char *const shapes[] = {"m=300,k=40000,n=24"};
    static const fc_dtype dts[] = {FC_FP32, FC_BF16};
    fc_conf_opts co = {.device = "cuda",
                       .dev = g_dev,
                       .devctx = g_ctx,
                       .backends = "cuda.cublas",
                       .shapes = shapes,
                       .nshapes = FC_ARRAY_LEN(shapes),
                       .dtypes = dts,
                       .ndtypes = FC_ARRAY_LEN(dts),
                       .graph = true,
                       .seed = g_seed};
    fc_conf_result r;
    fc_conformance(&co, &r);
    t_failures += r.failures;
    CHECK_MSG(r.controls == FC_ARRAY_LEN(dts), "%d gelu_linear problems with a control, not %d", r.controls,
              (int)FC_ARRAY_LEN(dts));
    printf("prologue blocks: %d combinations checked, %d with a control\n", r.checked, r.controls);
}

/* Both fused attention kernels (run --kernel) through cuda.custom: attention and
 * qk_softmax in every dtype, d = 64 and 128, s = 33, 100 and 1024, causal and not, 3
 * heads or more, for flash2 (the reference kernel, which the shared list covers too:
 * each s with both d, causal alternating; --quick: s <= 100), eagerly and from a graph; each
 * fused record names the kernel that ran. */
static const char *const kernel_shapes[] = {
    "b=1,h=3,s=33,d=64",   "b=3,h=1,s=33,d=128,causal=1",   "b=1,h=3,s=100,d=64,causal=1",  "b=3,h=1,s=100,d=128",
    "b=1,h=3,s=1024,d=64", "b=1,h=3,s=1024,d=128,causal=1", "b=1,h=3,s=33,d=64,causal=1",   "b=3,h=1,s=33,d=128",
    "b=1,h=3,s=100,d=64",  "b=3,h=1,s=100,d=128,causal=1",  "b=1,h=3,s=1024,d=64,causal=1", "b=1,h=3,s=1024,d=128",
};
/* the reference kernel's shapes: each s with both d; --quick's (a sanitizer's run) the
 * first four, s <= 100: racecheck instruments every shared-memory access, and the
 * s = 1024 problems kept its run past the GPU session's time */
enum { QUICK_KERNEL_SHAPES = 6, SANITIZER_KERNEL_SHAPES = 4 };

/* A set-up cuda.custom problem's fused form names kernel k (impl and field). */
static void names_its_kernel(void *ctx, fc_attn_kernel k)
{
    const fc_backend *b = fc_builtin.backend[FC_BK_cuda_custom];
    const char *want = fc_word_name(&fc_attn_kernel_words, k);
    fc_problem p;
    fc_err e = {{0}};
    CHECK(fc_problem_parse("attention:b=1,h=3,s=100,d=64,dtype=bf16", NULL, &p, &e) == 0);
    fc_workload w;
    if (fc_workload_create(&p, g_seed, 0, &w, &e) != 0) {
        CHECK_MSG(0, "%s", e.msg);
        return;
    }
    void *state = NULL;
    if (b->setup(&p, &w, ctx, &state, &e) != 0) {
        CHECK_MSG(0, "cuda.custom setup with kernel %s: %s", want, e.msg);
    } else {
        fc_impl impl;
        b->describe(state, FC_FUSED, &impl);
        CHECK_MSG(!strcmp(impl.kernel, want), "fused kernel field '%s', expected '%s'", impl.kernel, want);
        CHECK_MSG(strstr(impl.name, want) != NULL, "impl does not name %s: %s", want, impl.name);
        b->describe(state, FC_UNFUSED, &impl);
        CHECK_MSG(!impl.kernel[0], "the unfused chain names a kernel: %s", impl.kernel);
        printf("%s: %s\n", want, impl.name);
    }
    if (state) b->teardown(state);
    fc_workload_free(&w);
}

static void gpu_attention_kernels(void)
{
    if (g_backends && !strstr(g_backends, "cuda.custom")) return;
    for (int k = 0; k < FC_NATTN_KERNELS; k++) {
        fc_device_opts o = {.attn_kernel = (fc_attn_kernel)k};
        void *ctx = NULL;
        fc_err e = {{0}};
        if (g_dev->open(&o, &ctx, &e) != 0) {
            CHECK_MSG(0, "opening the CUDA device for kernel %d: %s", k, e.msg);
            continue;
        }
        names_its_kernel(ctx, (fc_attn_kernel)k);
        fc_conf_opts co = {.device = "cuda",
                           .dev = g_dev,
                           .devctx = ctx,
                           .backends = "cuda.custom",
                           .shapes = kernel_shapes,
                           .nshapes = g_quick                  ? SANITIZER_KERNEL_SHAPES
                                      : k == FC_ATTN_REFERENCE ? QUICK_KERNEL_SHAPES
                                                               : FC_ARRAY_LEN(kernel_shapes),
                           .graph = true,
                           .seed = g_seed};
        fc_conf_result r;
        fc_conformance(&co, &r);
        t_failures += r.failures;
        printf("kernel %s: %d combinations checked (seed %llu)\n", fc_word_name(&fc_attn_kernel_words, k), r.checked,
               (unsigned long long)g_seed);
        g_dev->close(ctx);
    }
}

/* Every pattern of its family is supported by the family's CUDA backend for every
 * dtype (gelu_linear by cuda.cublas, its prologue on blocks of x), and gelu_linear and
 * linear_swiglu in bf16 and fp16 by cuda.custom too (fusecal's GEMM); the rest are
 * refused with a reason. */
static void gpu_support_is_explicit(void)
{
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const fc_backend *bk = fc_builtin.backend[k];
        if (!bk || strcmp(bk->device, "cuda")) continue;
        for (int pi = 0; pi < FC_NPATTERNS; pi++)
            for (int dt = 0; dt < FC_NDTYPES; dt++) {
                fc_problem p;
                fc_problem_init(&p, &fc_patterns[pi], (fc_dtype)dt);
                const fc_family *f = fc_family_of(&fc_patterns[pi]);
                for (int i = 0; i < f->ndims; i++)
                    if (p.d[i] == FC_DIM_REQUIRED) p.d[i] = 64;
                if (f->has_layout) p.layout = FC_NHWC;
                fc_err e;
                CHECK(fc_problem_finish(&p, &e) == 0);
                char why[256] = "";
                bool ok = bk->supports(&p, why, sizeof why);
                if (!ok)
                    CHECK_MSG(why[0], "%s gives no reason for %s", fc_backend_words.names[k], fc_patterns[pi].name);
                const bool fusecal_gemm = (fc_pattern_has_op(&fc_patterns[pi], FC_OP_GELU_IN) ||
                                           fc_pattern_has_op(&fc_patterns[pi], FC_OP_GLU_MUL)) &&
                                          (dt == FC_BF16 || dt == FC_FP16);
                bool mine = (!strcmp(fc_backend_words.names[k], "cuda.cublas") && f == &fc_family_linear) ||
                            (!strcmp(fc_backend_words.names[k], "cuda.cudnn") && f == &fc_family_conv) ||
                            (!strcmp(fc_backend_words.names[k], "cuda.custom") &&
                             (f == &fc_family_attention || fc_patterns[pi].family == FC_FAM_NORM || fusecal_gemm));
                CHECK_MSG(ok == mine, "%s %s %s: supports() = %d", fc_backend_words.names[k], fc_patterns[pi].name,
                          fc_dtype_name((fc_dtype)dt), ok);
            }
    }
}

/* The device: timer brackets work, flush and sync succeed (the flush's read writes
 * nothing), memory is reported,
 * inventory names the GPU, ceilings are plausible, sense reads clocks when NVML is there. */
static void gpu_device_contract(void)
{
    fc_err e = {{0}};
    double sec = -1;
    CHECK(g_dev->timer_begin(g_ctx, &e) == 0);
    CHECK(g_dev->flush_cache(g_ctx, &e) == 0);
    CHECK(g_dev->timer_end(g_ctx, &sec, &e) == 0);
    CHECK_MSG(sec > 0 && sec < 1, "a flush took %g s", sec);
    CHECK(g_dev->synchronize(g_ctx, &e) == 0);
    /* the flush's read pass writes nothing (its sink keeps what it held) and takes
     * only 16-byte aligned buffers */
    fc_cuda_ctx *cc = g_ctx;
    unsigned mark = 0x1234abcdu, got = 0;
    CHECK(cudaMemcpy(cc->flush_sink, &mark, sizeof mark, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(g_dev->flush_cache(g_ctx, &e) == 0);
    CHECK(g_dev->synchronize(g_ctx, &e) == 0);
    CHECK(cudaMemcpy(&got, cc->flush_sink, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(got == mark, "the flush wrote %#x into its sink", got);
    CHECK(fck_read_all((const char *)cc->flush_read + 4, 64, 0, cc->flush_sink, cc->stream) == cudaErrorInvalidValue);
    CHECK(g_dev->mem_available(g_ctx) > ((size_t)64 << 20));
    cJSON *inv = cJSON_CreateObject();
    g_dev->inventory(g_ctx, inv);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(inv, "name");
    CHECK(cJSON_IsString(name) && name->valuestring[0]);
    const cJSON *sms = cJSON_GetObjectItemCaseSensitive(inv, "sms");
    CHECK(cJSON_IsNumber(sms) && sms->valuedouble >= 1);
    bool nvml = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(inv, "nvml"));
    char *txt = cJSON_PrintUnformatted(inv);
    printf("inventory: %s\n", txt);
    free(txt);
    cJSON_Delete(inv);
    fc_sense s;
    g_dev->sense(g_ctx, &s);
    if (nvml) CHECK_MSG(s.clock_mhz > 0 && s.mem_clock_mhz > 0, "NVML loaded but no clocks read");
    if (g_quick) return; /* ceilings take seconds; not under a sanitizer */
    fc_ceilings c;
    CHECK_MSG(g_dev->measure_ceilings(g_ctx, &c, &e) == 0, "ceilings: %s", e.msg);
    g_ceil = c;
    g_have_ceil = true;
    printf("ceilings: fp32 %.0f tf32 %.0f bf16 %.0f fp16 %.0f GFLOP/s, %.0f GB/s, launch %.2f us, graph %.2f us\n",
           c.gflops[FC_FP32], c.gflops[FC_TF32], c.gflops[FC_BF16], c.gflops[FC_FP16], c.bandwidth_gbs, c.launch_us,
           c.graph_launch_us);
    for (int dt = 0; dt < FC_NDTYPES; dt++) CHECK(c.gflops[dt] > 100);
    CHECK(c.bandwidth_gbs > 100);
    /* the read-only rate kept beside the copy's, which the ceiling is no less than */
    printf("read alone: %.0f GB/s\n", c.read_bandwidth_gbs);
    CHECK(c.read_bandwidth_gbs > 100 && c.bandwidth_gbs >= c.read_bandwidth_gbs);
    CHECK(c.launch_us > 0 && c.graph_launch_us > 0);
    /* the bandwidth by working set: ascending footprints past the L2, every point
     * measured, and a working set that fits the L2 no slower than device memory */
    CHECK(c.n_bw >= 4);
    double best_in_l2 = 0;
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    for (int i = 0; i < c.n_bw; i++) {
        printf("bandwidth at %.0f MiB: %.0f GB/s (read alone %.0f)\n", c.bw[i].footprint_bytes / (1 << 20), c.bw[i].gbs,
               c.bw[i].read_gbs);
        CHECK(c.bw[i].gbs > 0 && c.bw[i].read_gbs > 0 && c.bw[i].gbs >= c.bw[i].read_gbs);
        if (i > 0) CHECK(c.bw[i].footprint_bytes == 2 * c.bw[i - 1].footprint_bytes);
        if (c.bw[i].footprint_bytes <= l2 / 2) best_in_l2 = fmax(best_in_l2, c.bw[i].gbs);
    }
    CHECK(c.n_bw > 0 && c.bw[c.n_bw - 1].footprint_bytes >= 2.0 * l2);
    CHECK_MSG(best_in_l2 >= 0.9 * c.bandwidth_gbs, "in L2 %.0f GB/s, device memory %.0f", best_in_l2, c.bandwidth_gbs);
    CHECK(fc_ceilings_bandwidth_at(&c, l2 / 4.0, false) >= c.bandwidth_gbs);
    CHECK(fc_ceilings_bandwidth_at(&c, l2 / 4.0, true) == c.bandwidth_gbs);
}

/* The bandwidth beside a round (stream_at): every footprint echoed with a rate
 * measured for it; one below the curve's first, one not a multiple of 32 bytes and
 * one past 4x the L2 measured at the curve's range; a footprint in L2 no slower than
 * one past it; a second call with no larger footprint keeps the buffers. */
static void gpu_stream_at(void)
{
    fc_err e = {{0}};
    fc_cuda_ctx *cc = g_ctx;
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    const double fps[] = {1000.0, 3.0 * (1 << 20) + 7, l2 / 4.0, 16.0 * l2};
    enum { N = sizeof fps / sizeof fps[0] };
    fc_bw_point pts[N];
    CHECK(g_dev->stream_at != NULL);
    if (!g_dev->stream_at) return;
    CHECK_MSG(g_dev->stream_at(g_ctx, fps, N, pts, &e) == 0, "stream_at: %s", e.msg);
    for (int i = 0; i < N; i++) {
        printf("beside a round at %.0f bytes: %.0f GB/s (read alone %.0f)\n", fps[i], pts[i].gbs, pts[i].read_gbs);
        CHECK(pts[i].footprint_bytes == fps[i]);
        CHECK(pts[i].read_gbs > 0 && pts[i].gbs >= pts[i].read_gbs);
        CHECK_MSG(isfinite(pts[i].gbs) && pts[i].gbs > 100, "%.0f GB/s at %.0f bytes", pts[i].gbs, fps[i]);
    }
    CHECK_MSG(pts[2].gbs >= 0.9 * pts[3].gbs, "in L2 %.0f GB/s, past it %.0f", pts[2].gbs, pts[3].gbs);
    CHECK(cc->bw_half >= (size_t)2 * (size_t)l2 - 16);
    void *a = cc->bw_a;
    CHECK_MSG(g_dev->stream_at(g_ctx, fps, 2, pts, &e) == 0, "stream_at: %s", e.msg);
    CHECK(cc->bw_a == a);
}

/* The fp32 arithmetic peak beside a round (peak_at): a finite rate of at least 100
 * GFLOP/s, its sink allocated once and kept; none for the tensor-core dtypes. */
static void gpu_peak_at(void)
{
    fc_cuda_ctx *cc = g_ctx;
    CHECK(g_dev->peak_at != NULL);
    if (!g_dev->peak_at) return;
    const double g = g_dev->peak_at(g_ctx, FC_FP32);
    printf("fp32 peak beside a round: %.0f GFLOP/s\n", g);
    CHECK_MSG(isfinite(g) && g > 100, "%.0f GFLOP/s", g);
    float *sink = cc->peak_sink;
    CHECK(sink != NULL && g_dev->peak_at(g_ctx, FC_FP32) > 100 && cc->peak_sink == sink);
    CHECK(g_dev->peak_at(g_ctx, FC_BF16) == 0 && g_dev->peak_at(g_ctx, FC_TF32) == 0);
}

/* fusecal's elementwise kernels against the copy bandwidth the device measures
 * (the performance target: at least 85 %); printed, not checked (a measurement, not a bug). */
typedef struct ew_arg {
    fc_cuda_ctx *c;
    int op;
    fck_dtype dt;
    void *x, *r, *y, *b;
    size_t n;
} ew_arg;

static int ew_once(void *arg, fc_err *e)
{
    ew_arg *a = arg;
    cudaStream_t st = a->c->stream;
    switch (a->op) {
    case 0: FC_CU(fck_bias(a->dt, a->x, a->b, a->y, a->n / 4096, 4096, st)); break;
    case 1: FC_CU(fck_add(a->dt, a->x, a->r, a->y, a->n, st)); break;
    case 2: FC_CU(fck_relu(a->dt, a->x, a->y, a->n, st)); break;
    case 3: FC_CU(fck_gelu_tanh(a->dt, a->x, a->y, a->n, st)); break;
    case 4: FC_CU(fck_scale_mask(a->dt, a->x, a->y, a->n / (1024 * 1024), 1024, 1024, 0.125f, 1, st)); break;
    default: FC_CU(fck_softmax_rows(a->dt, a->x, a->y, a->n / 4096, 4096, st)); break;
    }
    return 0;
}

static void gpu_elementwise_bandwidth(void)
{
    if (g_quick) return;
    fc_err e = {{0}};
    fc_cuda_ctx *c = g_ctx;
    if (!g_have_ceil) {
        CHECK_MSG(g_dev->measure_ceilings(g_ctx, &g_ceil, &e) == 0, "ceilings: %s", e.msg);
        g_have_ceil = true;
    }
    static const char *const names[] = {"bias", "residual add", "relu", "gelu_tanh", "scale+mask", "softmax"};
    static const double passes[] = {2, 3, 2, 2, 2, 2}; /* tensors read + written */
    const size_t n = (size_t)64 << 20;
    static const fc_dtype dts[] = {FC_FP32, FC_BF16};
    double worst = 1e9;
    for (size_t di = 0; di < FC_ARRAY_LEN(dts); di++) {
        size_t E = fc_dtype_size(dts[di]);
        ew_arg a = {c, 0, fc_cuda_kdt(dts[di]), NULL, NULL, NULL, NULL, n};
        if (fc_cuda_alloc(&a.x, n * E, "x", &e) || fc_cuda_alloc(&a.r, n * E, "r", &e) ||
            fc_cuda_alloc(&a.y, n * E, "y", &e) || fc_cuda_alloc(&a.b, 4096 * E, "b", &e)) {
            CHECK_MSG(0, "%s", e.msg);
            break;
        }
        CHECK(fck_fill_uniform(a.dt, a.x, n, 1, -2, 2, c->stream) == cudaSuccess);
        CHECK(fck_fill_uniform(a.dt, a.r, n, 2, -1, 1, c->stream) == cudaSuccess);
        CHECK(fck_fill_uniform(a.dt, a.b, 4096, 3, -1, 1, c->stream) == cudaSuccess);
        for (int op = 0; op < 6; op++) {
            a.op = op;
            double ms = 0;
            if (fc_cuda_time(c, ew_once, &a, 1, 11, &ms, &e) != 0) {
                CHECK_MSG(0, "%s: %s", names[op], e.msg);
                continue;
            }
            double gbs = passes[op] * (double)(n * E) / (ms * 1e-3) / 1e9;
            double pct = g_ceil.bandwidth_gbs > 0 ? 100 * gbs / g_ceil.bandwidth_gbs : 0;
            if (pct < worst) worst = pct;
            printf("elementwise %-12s %s: %8.3f ms %7.0f GB/s = %5.1f %% of the copy bandwidth %.0f GB/s\n", names[op],
                   fc_dtype_name(dts[di]), ms, gbs, pct, g_ceil.bandwidth_gbs);
        }
        fc_cuda_free(a.x);
        fc_cuda_free(a.r);
        fc_cuda_free(a.y);
        fc_cuda_free(a.b);
    }
    printf("elementwise worst: %.1f %% of the copy bandwidth (target >= 85 %%)\n", worst);
}

int main(int argc, char **argv)
{
    g_seed = (uint64_t)time(NULL);
    char *rest[8] = {argv[0]};
    int nrest = 1;
    bool probe = false;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] >= '0' && argv[i][0] <= '9') g_seed = strtoull(argv[i], NULL, 10);
        else if (!strcmp(argv[i], "--quick"))
            g_quick = true;
        else if (!strcmp(argv[i], "--probe"))
            probe = true;
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
            g_backends = argv[++i];
        else if (nrest < 8)
            rest[nrest++] = argv[i];
    }
    g_dev = fc_builtin.device[FC_DEV_cuda];
    char why[256] = "this build has no CUDA device";
    if (!g_dev || !g_dev->available(why, sizeof why)) {
        printf("skipped: %s\n", why);
        return 77;
    }
    if (probe) return 0;
    fc_device_opts o = {0};
    fc_err e;
    if (g_dev->open(&o, &g_ctx, &e) != 0) {
        printf("FAIL cannot open the CUDA device: %s\n", e.msg);
        return 1;
    }
    printf("seed %llu%s\n", (unsigned long long)g_seed, g_quick ? " (quick)" : "");
    static const t_case cases[] = {T(gpu_device_contract),
                                   T(gpu_support_is_explicit),
                                   T(gpu_backends_match_reference),
                                   T(gpu_attention_kernels),
                                   T(gpu_prologue_blocks),
                                   T(gpu_elementwise_bandwidth),
                                   T(gpu_stream_at),
                                   T(gpu_peak_at)};
    int rc = t_run(cases, FC_ARRAY_LEN(cases), nrest, rest);
    g_dev->close(g_ctx);
    return rc;
}
