/* pattern_linear.c — linear family: y = epilogue(x·Wᵀ), x [M,K], W [N,K], y [M,N];
 * a gated unit (linear_swiglu) has W [2N,K], gate rows first, and y = silu(g) ⊙ u of
 * its GEMM's halves; a prologue (gelu_linear) applies to x before the GEMM.
 *
 * Napkin math (E = bytes per element; N' = 2N for a gated unit, else N):
 *   GEMM      2·M·N'·K FLOPs; reads x and W, writes its output: (MK + N'K + MN')·E
 *   bias      M·N FLOPs;     reads y and b, writes y:  (2MN + N)·E
 *   residual  M·N FLOPs;     reads y and r, writes y:  3MN·E
 *   ReLU      M·N FLOPs;     2MN·E
 *   GELU      8·M·N FLOPs (x³, two multiply-adds, tanh, 1+, ·0.5x); 2MN·E
 *   SiLU      4·M·N FLOPs (g/(1 + e^−g): negate, exp, add, divide); reads the gate
 *             half, writes s: 2MN·E
 *   gate mul  M·N FLOPs;     reads s and the up half, writes y: 3MN·E
 *   GELU prologue  8·M·K FLOPs; reads x, writes gelu(x): 2MK·E
 *   fused     reads x, W, b (and r) once, writes y once: the gated unit saves 6MN·E,
 *             the prologue 2MK·E (and the bias pass 2MN·E).
 * Where that pays: a pass costs its bytes over the bandwidth B, the GEMM its FLOPs
 * over the GEMM rate F, so the saving is a fraction 1.5·E·(F/B)/K of the GEMM for
 * SwiGLU and E·(F/B)·(1/N + 1/K) for the prologue with its bias. On a CPU with
 * F/B ≈ 6.5 FLOP/byte (155 GFLOP/s, 24 GB/s) in fp32 that is 30 % of SwiGLU's GEMM
 * at K = 128 and 1 % at K = 4096 (LLaMA-7B, N = 11008, M = 2048: 6MN·E = 0.54 GB,
 * 23 ms, against a 2.4 s GEMM): fusion stops paying as K grows. On an H100 in bf16
 * (F/B ≈ 260) the same passes are still 19 % of the GEMM at K = 4096.
 */
#include "pattern.h"

#include <math.h>

static const fc_dim linear_dims[] = {
    [FC_LIN_M] = {"m", FC_DIM_REQUIRED, 1, INT32_MAX, false, "rows of x and y (tokens × batch)", NULL},
    [FC_LIN_K] = {"k", FC_DIM_REQUIRED, 1, INT32_MAX, false, "input features", NULL},
    [FC_LIN_N] = {"n", FC_DIM_REQUIRED, 1, INT32_MAX, false, "output features", NULL},
};
_Static_assert(FC_ARRAY_LEN(linear_dims) == FC_LIN_NDIMS, "linear dims");

static bool gated(const fc_problem *p) { return fc_pattern_has_op(p->pat, FC_OP_GLU_MUL); }

int64_t fc_linear_gemm_n(const fc_problem *p) { return gated(p) ? 2 * p->d[FC_LIN_N] : p->d[FC_LIN_N]; }

static int linear_check(fc_problem *p, fc_err *e)
{
    size_t n, gn = (size_t)fc_linear_gemm_n(p);
    if (!fc_dims_product(p->d, 2, &n) || !fc_mul_size((size_t)p->d[FC_LIN_K], gn, &n) ||
        !fc_mul_size((size_t)p->d[FC_LIN_M], gn, &n) || n > SIZE_MAX / 16)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    if (gn > INT32_MAX)
        return fc_errf(e, "problem '%s' is too large: its GEMM's 2n = %zu columns exceed 2^31 - 1", p->pat->name, gn);
    return 0;
}

static void linear_shapes(const fc_problem *p, fc_workload *w)
{
    size_t M = (size_t)p->d[FC_LIN_M], K = (size_t)p->d[FC_LIN_K], N = (size_t)p->d[FC_LIN_N];
    size_t GN = (size_t)fc_linear_gemm_n(p);
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID), bias = fc_pattern_has_op(p->pat, FC_OP_BIAS);
    w->nt = FC_LIN_NT;
    w->t[FC_LIN_TX] = (fc_tensor){"x", NULL, M * K, false};
    w->t[FC_LIN_TW] = (fc_tensor){"W", NULL, GN * K, false};
    w->t[FC_LIN_TB] = (fc_tensor){"b", NULL, bias ? N : 0, false};
    w->t[FC_LIN_TR] = (fc_tensor){"r", NULL, resid ? M * N : 0, false};
    w->out_n = M * N;
    w->out_row = N;
    /* the largest intermediate: the GEMM's output, or gelu(x) before it */
    w->inter_n = M * GN;
    if (fc_pattern_has_op(p->pat, FC_OP_GELU_IN) && M * K > w->inter_n) w->inter_n = M * K;
}

static void linear_fill(const fc_problem *p, fc_workload *w, fc_rng *rng)
{
    /* W scaled by 1/√K so that x·Wᵀ has a standard deviation near 0.5 whatever K,
     * and b shifted positive so that ReLU keeps most outputs (zeros stay checkable). */
    float a = 1.5f / sqrtf((float)p->d[FC_LIN_K]);
    for (size_t i = 0; i < w->t[FC_LIN_TX].n; i++) w->t[FC_LIN_TX].data[i] = fc_rng_range(rng, -1.f, 1.f);
    for (size_t i = 0; i < w->t[FC_LIN_TW].n; i++) w->t[FC_LIN_TW].data[i] = fc_rng_range(rng, -a, a);
    for (size_t i = 0; i < w->t[FC_LIN_TB].n; i++) w->t[FC_LIN_TB].data[i] = fc_rng_range(rng, -0.25f, 0.75f);
    for (size_t i = 0; i < w->t[FC_LIN_TR].n; i++) w->t[FC_LIN_TR].data[i] = fc_rng_range(rng, -0.5f, 0.5f);
}

static void linear_cost(const fc_problem *p, fc_cost *c)
{
    double M = (double)p->d[FC_LIN_M], K = (double)p->d[FC_LIN_K], N = (double)p->d[FC_LIN_N];
    double GN = (double)fc_linear_gemm_n(p);
    double E = (double)fc_dtype_size(p->dtype), MN = M * N;
    double fused_bytes = MN * E; /* the output, written once */
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_GEMM:
            f = 2 * M * GN * K;
            b = (M * K + GN * K + M * GN) * E;
            fused_bytes += (M * K + GN * K) * E;
            break;
        case FC_OP_BIAS:
            f = MN;
            b = (2 * MN + N) * E;
            fused_bytes += N * E;
            break;
        case FC_OP_RESID:
            f = MN;
            b = 3 * MN * E;
            fused_bytes += MN * E;
            break;
        case FC_OP_RELU:
            f = MN;
            b = 2 * MN * E;
            break;
        case FC_OP_GELU:
            f = 8 * MN;
            b = 2 * MN * E;
            break;
        case FC_OP_SILU:
            f = 4 * MN;
            b = 2 * MN * E;
            break;
        case FC_OP_GLU_MUL:
            f = MN;
            b = 3 * MN * E;
            break;
        case FC_OP_GELU_IN:
            f = 8 * M * K;
            b = 2 * M * K * E;
            break;
        default: break;
        }
        fc_cost_op(c, i, f, b);
    }
    /* what the backends allocate: each live intermediate of the largest one's size */
    fc_workload w = {.prob = p};
    linear_shapes(p, &w);
    fc_cost_close(c, p->pat, fused_bytes, (double)w.inter_n * E);
}

double fc_gelu_tanh_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

double fc_silu_ref(double x) { return x / (1.0 + exp(-x)); }

/* One element of the GEMM's output column j: x row i · W row j, the prologue applied
 * to x first where there is one. */
static double gemm_ref(const fc_problem *p, const fc_workload *w, size_t i, size_t j)
{
    size_t K = (size_t)p->d[FC_LIN_K];
    const float *x = w->t[FC_LIN_TX].data + i * K, *wr = w->t[FC_LIN_TW].data + j * K;
    bool pre_gelu = fc_pattern_has_op(p->pat, FC_OP_GELU_IN);
    double acc = 0;
    for (size_t k = 0; k < K; k++) acc += (pre_gelu ? fc_gelu_tanh_ref(x[k]) : (double)x[k]) * (double)wr[k];
    return acc;
}

static double linear_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    size_t N = (size_t)p->d[FC_LIN_N];
    size_t i = idx / N, j = idx % N;
    double acc = gemm_ref(p, w, i, j);
    for (int o = 0; o < p->pat->nops; o++) {
        switch (p->pat->ops[o]) {
        case FC_OP_BIAS: acc += w->t[FC_LIN_TB].data[j]; break;
        case FC_OP_RESID: acc += w->t[FC_LIN_TR].data[idx]; break;
        case FC_OP_RELU: acc = acc > 0 ? acc : 0; break;
        case FC_OP_GELU: acc = fc_gelu_tanh_ref(acc); break;
        case FC_OP_SILU: acc = fc_silu_ref(acc); break;
        case FC_OP_GLU_MUL: acc *= gemm_ref(p, w, i, N + j); break;
        default: break;
        }
    }
    return acc;
}

/* multiply-adds per element: the GEMM's k (twice for a gated unit; a prologue's tanh
 * counted as eight) */
static double linear_ref_cost(const fc_problem *p)
{
    double k = (double)p->d[FC_LIN_K];
    return gated(p) ? 2 * k : fc_pattern_has_op(p->pat, FC_OP_GELU_IN) ? 9 * k : k;
}

static double linear_reduction(const fc_problem *p) { return (double)p->d[FC_LIN_K]; }

const fc_family fc_family_linear = {
    .name = "linear",
    .dims = linear_dims,
    .ndims = FC_LIN_NDIMS,
    .has_layout = false,
    .check = linear_check,
    .cost = linear_cost,
    .shapes = linear_shapes,
    .fill = linear_fill,
    .prepare = NULL,
    .reference = linear_reference,
    .ref_cost = linear_ref_cost,
    .reduction = linear_reduction,
};
