/* pattern_linear.c — linear family: y = epilogue(x·Wᵀ), x [M,K], W [N,K], y [M,N].
 *
 * Napkin math (E = bytes per element):
 *   GEMM      2·M·N·K FLOPs; reads x and W, writes y:  (MK + NK + MN)·E
 *   bias      M·N FLOPs;     reads y and b, writes y:  (2MN + N)·E
 *   residual  M·N FLOPs;     reads y and r, writes y:  3MN·E
 *   ReLU      M·N FLOPs;     2MN·E
 *   GELU      8·M·N FLOPs (x³, two multiply-adds, tanh, 1+, ·0.5x); 2MN·E
 *   fused     reads x, W, b (and r) once, writes y once.
 */
#include "pattern.h"

#include <math.h>

static const fc_dim linear_dims[] = {
    [FC_LIN_M] = {"m", FC_DIM_REQUIRED, 1, INT32_MAX, false, "rows of x and y (tokens × batch)", NULL},
    [FC_LIN_K] = {"k", FC_DIM_REQUIRED, 1, INT32_MAX, false, "input features", NULL},
    [FC_LIN_N] = {"n", FC_DIM_REQUIRED, 1, INT32_MAX, false, "output features", NULL},
};
_Static_assert(FC_ARRAY_LEN(linear_dims) == FC_LIN_NDIMS, "linear dims");

static int linear_check(fc_problem *p, fc_err *e)
{
    size_t n;
    if (!fc_dims_product(p->d, 2, &n) || !fc_dims_product(&p->d[1], 2, &n) ||
        !fc_mul_size((size_t)p->d[FC_LIN_M], (size_t)p->d[FC_LIN_N], &n) || n > SIZE_MAX / 16)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    return 0;
}

static void linear_shapes(const fc_problem *p, fc_workload *w)
{
    size_t M = (size_t)p->d[FC_LIN_M], K = (size_t)p->d[FC_LIN_K], N = (size_t)p->d[FC_LIN_N];
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID);
    w->nt = FC_LIN_NT;
    w->t[FC_LIN_TX] = (fc_tensor){"x", NULL, M * K, false};
    w->t[FC_LIN_TW] = (fc_tensor){"W", NULL, N * K, false};
    w->t[FC_LIN_TB] = (fc_tensor){"b", NULL, N, false};
    w->t[FC_LIN_TR] = (fc_tensor){"r", NULL, resid ? M * N : 0, false};
    w->out_n = M * N;
    w->out_row = N;
    w->inter_n = M * N;
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
    double E = (double)fc_dtype_size(p->dtype), MN = M * N;
    double fused_bytes = (M * K + N * K + N + MN) * E;
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_GEMM:
            f = 2 * M * N * K;
            b = (M * K + N * K + MN) * E;
            break;
        case FC_OP_BIAS:
            f = MN;
            b = (2 * MN + N) * E;
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
        default: break;
        }
        c->op_flops[i] = f;
        c->op_bytes[i] = b;
        c->flops += f;
        c->bytes[FC_UNFUSED] += b;
    }
    c->bytes[FC_FUSED] = fused_bytes;
    c->peak_inter[FC_UNFUSED] = fc_pattern_live_intermediates(p->pat) * MN * E;
    c->peak_inter[FC_FUSED] = 0;
}

double fc_gelu_tanh_ref(double x) { return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

static double linear_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    size_t K = (size_t)p->d[FC_LIN_K], N = (size_t)p->d[FC_LIN_N];
    size_t i = idx / N, j = idx % N;
    const float *x = w->t[FC_LIN_TX].data + i * K, *wr = w->t[FC_LIN_TW].data + j * K;
    double acc = 0;
    for (size_t k = 0; k < K; k++) acc += (double)x[k] * (double)wr[k];
    for (int o = 1; o < p->pat->nops; o++) {
        switch (p->pat->ops[o]) {
        case FC_OP_BIAS: acc += w->t[FC_LIN_TB].data[j]; break;
        case FC_OP_RESID: acc += w->t[FC_LIN_TR].data[idx]; break;
        case FC_OP_RELU: acc = acc > 0 ? acc : 0; break;
        case FC_OP_GELU: acc = fc_gelu_tanh_ref(acc); break;
        default: break;
        }
    }
    return acc;
}

static double linear_ref_cost(const fc_problem *p) { return (double)p->d[FC_LIN_K]; }

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
