/* custom_linear.c — cuda.custom's linear part (custom_parts.h): the GELU prologue
 * (gelu_linear, y = gelu_tanh(x)·Wᵀ + b), the one linear site no library fuses, on
 * fusecal's prologue GEMM (kernels/prologue_gemm.cu), bf16 and fp16.
 *
 *   unfused  as an eager framework runs it: fusecal's gelu kernel writes gelu(x) [m, k]
 *            whole, cublasGemmEx (fp32 accumulation) writes x·Wᵀ, fusecal's bias kernel
 *            adds b: the chain cuda.cublas runs, with cuBLAS's default GEMM.
 *   fused    one fusecal kernel: gelu applied to each k-tile of x as it is copied into
 *            shared memory (gelu(x) never written), the bias added to the accumulators
 *            before y is stored.
 *   control  the unfused chain with the fused form's GEMM: the gelu kernel, fusecal's
 *            GEMM without prologue or bias, the bias kernel. unfused → control is this
 *            GEMM against cuBLAS's, control → fused is the fusion.
 * The epilogue patterns of the family are cuBLASLt's fused paths (cuda.cublas), and
 * fp32 and tf32 gelu_linear too: the kernel is built for 16-bit operands.
 * Row-major x [m, k], W [n, k], y [m, n] are column-major xᵀ, Wᵀ, yᵀ, so the unfused
 * GEMM is yᵀ = op_T(Wᵀ)·xᵀ: A = W (transposed, ld k), B = gelu(x) (ld k), C = y (ld n).
 */
#include "cuda_common.h"
#include "custom_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cl_state {
    fc_problem p;
    fc_cuda_ctx *c;
    int M, K, N;
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
};

static bool cl_supports(const fc_problem *p, char *why, size_t n)
{
    if (!fc_pattern_has_op(p->pat, FC_OP_GELU_IN)) {
        snprintf(why, n,
                 "cuda.custom runs the linear family's GELU prologue only; pattern '%s' fuses in a GEMM epilogue, "
                 "cuBLASLt's fused path (cuda.cublas)",
                 p->pat->name);
        return false;
    }
    if (!fc_op_table_fits(cl_ops, p->pat, "cuda.custom", why, n)) return false;
    if (p->dtype != FC_BF16 && p->dtype != FC_FP16) {
        snprintf(why, n,
                 "fusecal's prologue GEMM is built for 16-bit operands (mma.sync m16n8k16); %s gelu_linear runs on "
                 "cuda.cublas",
                 fc_dtype_name(p->dtype));
        return false;
    }
    const int64_t *d = p->d;
    if (!fck_prologue_gemm_supports(fc_cuda_kdt(p->dtype), d[FC_LIN_M], d[FC_LIN_N], d[FC_LIN_K])) {
        snprintf(why, n, "m = %lld, n = %lld, k = %lld: beyond fusecal's prologue GEMM (32-bit dims, a 1-D grid)",
                 (long long)d[FC_LIN_M], (long long)d[FC_LIN_N], (long long)d[FC_LIN_K]);
        return false;
    }
    return true;
}

static int cl_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    double M = (double)p->d[FC_LIN_M], K = (double)p->d[FC_LIN_K], N = (double)p->d[FC_LIN_N];
    double E = (double)fc_dtype_size(p->dtype);
    double b = (M * K + N * K + N + M * N /* the control's output */) * E + fc_cuda_chain_bytes(p);
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
    s->M = (int)p->d[FC_LIN_M];
    s->K = (int)p->d[FC_LIN_K];
    s->N = (int)p->d[FC_LIN_N];
    if (fc_cuda_upload(s->c, w->t[FC_LIN_TX].data, w->t[FC_LIN_TX].n, p->dtype, &s->x, "x", e) ||
        fc_cuda_upload(s->c, w->t[FC_LIN_TW].data, w->t[FC_LIN_TW].n, p->dtype, &s->w, "W", e) ||
        fc_cuda_upload(s->c, w->t[FC_LIN_TB].data, w->t[FC_LIN_TB].n, p->dtype, &s->b, "b", e))
        return -1;
    if (fc_cuda_chain_alloc(&s->ch, s->c, p, w, e) != 0 || fc_cuda_chain_add_control(&s->ch, e) != 0) return -1;
    FC_CU(fck_prologue_gemm_prepare(fc_cuda_kdt(p->dtype), s->K));
    return 0;
}

/* The unfused chain (cuBLAS's GEMM) or the control (fusecal's, without prologue or
 * bias): gelu(x) whole, x·Wᵀ, + b. */
static int run_chain(cl_state *s, fc_variant v, fc_err *e)
{
    const fck_dtype kd = fc_cuda_kdt(s->p.dtype);
    cudaStream_t st = s->c->stream;
    void *gx = fc_cuda_chain_dst(&s->ch, 0), *xw = fc_cuda_chain_dst(&s->ch, 1);
    FC_CU(fck_gelu_tanh(kd, s->x, gx, (size_t)s->M * (size_t)s->K, st));
    if (v == FC_UNFUSED) {
        const float alpha = 1.0f, beta = 0.0f;
        cudaDataType_t t = fc_cuda_data_type(s->p.dtype);
        FC_CUBLAS(cublasGemmEx(s->c->blas, CUBLAS_OP_T, CUBLAS_OP_N, s->N, s->M, s->K, &alpha, s->w, t, s->K, gx, t,
                               s->K, &beta, xw, t, s->N, fc_cuda_compute_type(s->p.dtype), CUBLAS_GEMM_DEFAULT));
    } else {
        FC_CU(fck_prologue_gemm(kd, 0, gx, s->w, NULL, xw, s->M, s->N, s->K, st));
    }
    FC_CU(fck_bias(kd, xw, s->b, s->ch.out[v], (size_t)s->M, (size_t)s->N, st));
    return 0;
}

static int cl_run(void *state, fc_variant v, fc_err *e)
{
    cl_state *s = state;
    if (v != FC_FUSED) return run_chain(s, v, e);
    FC_CU(fck_prologue_gemm(fc_cuda_kdt(s->p.dtype), 1, s->x, s->w, s->b, s->ch.out[FC_FUSED], s->M, s->N, s->K,
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
 * tiling and resources (with the prologue and bias in the fused form). */
static const char *cl_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    (void)op;
    const cl_state *s = ctx;
    if (v == FC_UNFUSED) {
        snprintf(buf, n, "%s in/out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT", fc_dtype_name(s->p.dtype));
        return buf;
    }
    fck_prologue_gemm_describe(fc_cuda_kdt(s->p.dtype), v == FC_FUSED, s->K, buf, n);
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
        char buf[384];
        fc_impl_addf(impl, "control: the unfused chain with the fused form's GEMM: %s -> %s -> %s",
                     cl_ops[FC_OP_GELU_IN].unfused, cl_detail(s, FC_CONTROL, FC_OP_GEMM, buf, sizeof buf),
                     cl_ops[FC_OP_BIAS].unfused);
    } else {
        fc_impl_add_op(impl, cl_ops, FC_OP_GEMM, FC_FUSED, cl_detail, s);
        fc_impl_add_part(impl, cl_ops, pat, FC_FUSE_PROLOGUE, ": ", "; ", "");
        fc_impl_add_part(impl, cl_ops, pat, FC_FUSE_EPILOGUE, "; ", "; ", "");
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
    .summary = "fusecal's prologue GEMM: gelu_tanh(x)·Wᵀ + b with gelu on x's tiles in shared memory (bf16, fp16)",
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
