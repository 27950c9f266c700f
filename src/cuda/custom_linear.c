/* custom_linear.c — cuda.custom's linear part (custom_parts.h): the two linear sites no
 * library fuses, on fusecal's GEMM (kernels/gemm.cu), bf16 and fp16. cuBLASLt has no
 * prologue on a GEMM's input and no gated (SwiGLU) epilogue.
 *
 *   gelu_linear    y = gelu_tanh(x)·Wᵀ + b
 *     unfused  as an eager framework runs it: fusecal's gelu kernel writes gelu(x)
 *              [m, k] whole, cublasGemmEx writes x·Wᵀ, fusecal's bias kernel adds b.
 *     fused    one kernel: gelu applied to each k-tile of x as it is copied into shared
 *              memory (gelu(x) never written), the bias added before y is stored.
 *   linear_swiglu  y = silu(x·W_gᵀ) ⊙ (x·W_uᵀ), W = [W_g; W_u] [2n, k]
 *     unfused  cublasGemmEx writes the [m, 2n] product, fusecal's silu kernel the
 *              gate half's silu, its mul kernel the product with the up half.
 *     fused    one kernel: the gate and up rows of W interleaved in each W tile, silu(g)·u
 *              formed in the registers ([m, 2n] never written).
 *   control  the unfused chain with the fused form's GEMM (fusecal's, plain) in place of
 *            cuBLAS's: unfused → control is this GEMM against cuBLAS's, control →
 *            fused is the fusion.
 * The family's other patterns fuse in cuBLASLt's epilogues (cuda.cublas), and fp32 and
 * tf32 run there too: the kernel is built for 16-bit operands.
 * Row-major x [m, k], W [N, k], y [m, N] are column-major xᵀ, Wᵀ, yᵀ, so the unfused
 * GEMM is yᵀ = op_T(Wᵀ)·xᵀ: A = W (transposed, ld k), B = x or gelu(x) (ld k), C = the
 * product (ld N), N = n, or 2n gated. Accumulation is fp32 (CUBLAS_COMPUTE_32F).
 */
#include "cuda_common.h"
#include "custom_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cl_state {
    fc_problem p;
    fc_cuda_ctx *c;
    fck_gemm_mode mode; /* the fused form's */
    int M, K, N;        /* N: the output's columns (the GEMM's are 2N gated) */
    void *x, *w, *b;
    fc_cuda_chain ch;
} cl_state;

/* How the linear part runs each op ("%s": the cuBLAS call's types; the fused kernel's
 * tiling and resources). */
static const fc_op_impl cl_ops[FC_NOPS] = {
    [FC_OP_GELU_IN] = {"gelu_tanh kernel(fusecal, x, 16-byte vectors)", FC_FUSE_PROLOGUE,
                       "gelu_tanh on each k-tile of x as it is copied into shared memory"},
    [FC_OP_GEMM] = {"cublasGemmEx(%s)", FC_FUSE_CALL, "%s"},
    [FC_OP_BIAS] = {"bias kernel(fusecal, 16-byte vectors)", FC_FUSE_EPILOGUE, "bias added before y is stored"},
    [FC_OP_SILU] = {"silu kernel(fusecal, gate half, 16-byte vectors)", FC_FUSE_EPILOGUE,
                    "silu(gate) in the registers"},
    [FC_OP_GLU_MUL] = {"mul kernel(fusecal, by the up half, 16-byte vectors)", FC_FUSE_EPILOGUE,
                       "* up (gate and up rows of W interleaved per tile)"},
};

static bool gated(const fc_problem *p) { return fc_pattern_has_op(p->pat, FC_OP_GLU_MUL); }

static fck_gemm_mode fused_mode(const fc_problem *p) { return gated(p) ? FCK_GEMM_SWIGLU : FCK_GEMM_GELU_BIAS; }

static bool cl_supports(const fc_problem *p, char *why, size_t n)
{
    if (!fc_pattern_has_op(p->pat, FC_OP_GELU_IN) && !gated(p)) {
        snprintf(why, n,
                 "cuda.custom runs the linear family's GELU prologue and gated unit only; pattern '%s' fuses in a "
                 "GEMM epilogue, cuBLASLt's fused path (cuda.cublas)",
                 p->pat->name);
        return false;
    }
    if (!fc_op_table_fits(cl_ops, p->pat, "cuda.custom", why, n)) return false;
    if (p->dtype != FC_BF16 && p->dtype != FC_FP16) {
        snprintf(why, n, "fusecal's GEMM is built for 16-bit operands (mma.sync m16n8k16); %s %s runs on cuda.cublas",
                 fc_dtype_name(p->dtype), p->pat->name);
        return false;
    }
    const int64_t *d = p->d;
    if (!fck_gemm_supports(fc_cuda_kdt(p->dtype), fused_mode(p), d[FC_LIN_M], d[FC_LIN_N], d[FC_LIN_K])) {
        snprintf(why, n, "m = %lld, n = %lld, k = %lld: beyond fusecal's GEMM (32-bit dims, a 1-D grid)",
                 (long long)d[FC_LIN_M], (long long)d[FC_LIN_N], (long long)d[FC_LIN_K]);
        return false;
    }
    return true;
}

static int cl_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    double M = (double)p->d[FC_LIN_M], K = (double)p->d[FC_LIN_K], N = (double)p->d[FC_LIN_N];
    double WN = gated(p) ? 2 * N : N, E = (double)fc_dtype_size(p->dtype);
    double bias = fc_pattern_has_op(p->pat, FC_OP_BIAS) ? N : 0;
    double b = (M * K + WN * K + bias + M * N /* the control's output */) * E + fc_cuda_chain_bytes(p);
    if (b > 9e18) return fc_errf(e, "problem '%s' is too large for device memory", p->pat->name);
    *bytes = (size_t)b;
    return 0;
}

static int cl_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    cl_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->c = devctx;
    s->mode = fused_mode(p);
    s->M = (int)p->d[FC_LIN_M];
    s->K = (int)p->d[FC_LIN_K];
    s->N = (int)p->d[FC_LIN_N];
    if (fc_cuda_upload(s->c, w->t[FC_LIN_TX].data, w->t[FC_LIN_TX].n, p->dtype, &s->x, "x", e) ||
        fc_cuda_upload(s->c, w->t[FC_LIN_TW].data, w->t[FC_LIN_TW].n, p->dtype, &s->w, "W", e))
        return -1;
    if (w->t[FC_LIN_TB].n && fc_cuda_upload(s->c, w->t[FC_LIN_TB].data, w->t[FC_LIN_TB].n, p->dtype, &s->b, "b", e))
        return -1;
    if (fc_cuda_chain_alloc(&s->ch, s->c, p, w, e) != 0 || fc_cuda_chain_add_control(&s->ch, e) != 0) return -1;
    FC_CU(fck_gemm_prepare(fc_cuda_kdt(p->dtype), s->mode, s->K));
    return 0;
}

/* The unfused chain (cuBLAS's GEMM) or the control (fusecal's plain GEMM): gelu(x)
 * whole, x·Wᵀ, + b; or the [m, 2n] product, silu of its gate half, times its up half. */
static int run_chain(cl_state *s, fc_variant v, fc_err *e)
{
    const fck_dtype kd = fc_cuda_kdt(s->p.dtype);
    cudaStream_t st = s->c->stream;
    const bool glu = gated(&s->p);
    const int GN = glu ? 2 * s->N : s->N;
    const size_t M = (size_t)s->M, N = (size_t)s->N;
    /* gelu_linear: gelu(x) then the product; gated: the product then silu */
    void *t0 = fc_cuda_chain_dst(&s->ch, 0), *t1 = fc_cuda_chain_dst(&s->ch, 1);
    const void *src = glu ? s->x : t0;
    void *prod = glu ? t0 : t1;
    if (!glu) FC_CU(fck_gelu_tanh(kd, s->x, t0, M * (size_t)s->K, st));
    if (v == FC_UNFUSED) {
        const float alpha = 1.0f, beta = 0.0f;
        cudaDataType_t t = fc_cuda_data_type(s->p.dtype);
        FC_CUBLAS(cublasGemmEx(s->c->blas, CUBLAS_OP_T, CUBLAS_OP_N, GN, s->M, s->K, &alpha, s->w, t, s->K, src, t,
                               s->K, &beta, prod, t, GN, fc_cuda_compute_type(s->p.dtype), CUBLAS_GEMM_DEFAULT));
    } else {
        FC_CU(fck_gemm(kd, FCK_GEMM_PLAIN, src, s->w, NULL, prod, s->M, GN, s->K, st));
    }
    if (glu) {
        FC_CU(fck_glu_silu(kd, prod, t1, M, N, st));
        FC_CU(fck_glu_mul(kd, t1, prod, s->ch.out[v], M, N, st));
    } else {
        FC_CU(fck_bias(kd, prod, s->b, s->ch.out[v], M, N, st));
    }
    return 0;
}

static int cl_run(void *state, fc_variant v, fc_err *e)
{
    cl_state *s = state;
    if (v != FC_FUSED) return run_chain(s, v, e);
    FC_CU(fck_gemm(fc_cuda_kdt(s->p.dtype), s->mode, s->x, s->w, s->b, s->ch.out[FC_FUSED], s->M, s->N, s->K,
                   s->c->stream));
    return 0;
}

static int cl_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    cl_state *s = state;
    return fc_cuda_chain_output(&s->ch, v, dst, e);
}

static int cl_poison(void *state, fc_variant v, fc_err *e)
{
    cl_state *s = state;
    return fc_cuda_chain_poison(&s->ch, v, e);
}

/* The GEMM of a variant: cuBLAS's call with its types, or fusecal's kernel with its
 * mode, tiling and resources. */
static const char *cl_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    (void)op;
    const cl_state *s = ctx;
    if (v == FC_UNFUSED) {
        snprintf(buf, n, "%s in/out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT", fc_dtype_name(s->p.dtype));
        return buf;
    }
    fck_gemm_describe(fc_cuda_kdt(s->p.dtype), v == FC_FUSED ? s->mode : FCK_GEMM_PLAIN, s->K, buf, n);
    return buf;
}

static void cl_describe(void *state, fc_variant v, fc_impl *impl)
{
    cl_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    if (v == FC_UNFUSED) {
        fc_impl_add_chain(impl, cl_ops, pat, cl_detail, s);
    } else if (v == FC_CONTROL) {
        fc_impl_addf(impl, "control: the unfused chain with the fused form's GEMM: ");
        for (int i = 0; i < pat->nops; i++) {
            char buf[384];
            const fc_op op = pat->ops[i];
            fc_impl_addf(impl, "%s%s", i ? " -> " : "",
                         op == FC_OP_GEMM ? cl_detail(s, FC_CONTROL, op, buf, sizeof buf) : cl_ops[op].unfused);
        }
    } else {
        fc_impl_add_op(impl, cl_ops, FC_OP_GEMM, FC_FUSED, cl_detail, s);
        fc_impl_add_part(impl, cl_ops, pat, FC_FUSE_PROLOGUE, ": ", "; ", "");
        fc_impl_add_part(impl, cl_ops, pat, FC_FUSE_EPILOGUE, "; ", " ", "");
    }
    impl->nkernels = v == FC_FUSED ? 1 : pat->nops;
}

static bool cl_has_control(void *state) { return ((cl_state *)state)->ch.out[FC_CONTROL] != NULL; }

static void cl_teardown(void *state)
{
    cl_state *s = state;
    if (!s) return;
    cudaStreamSynchronize(s->c->stream);
    fc_cuda_chain_free(&s->ch);
    fc_cuda_free(s->x);
    fc_cuda_free(s->w);
    fc_cuda_free(s->b);
    free(s);
}

const fc_backend fc_custom_linear = {
    .name = "cuda.custom",
    .device = "cuda",
    .summary =
        "fusecal's GEMM (mma.sync, bf16, fp16): gelu_tanh(x)·Wᵀ + b with gelu on x's tiles in shared memory, "
        "and SwiGLU with silu(g)·u formed in the registers",
    .available = fc_cuda_usable,
    .supports = cl_supports,
    .device_bytes = cl_device_bytes,
    .setup = cl_setup,
    .run = cl_run,
    .output = cl_output,
    .poison = cl_poison,
    .describe = cl_describe,
    .has_control = cl_has_control,
    .teardown = cl_teardown,
};
