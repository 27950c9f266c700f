/* pattern_norm.c — norm family: the normalizations of a transformer block, over rows.
 *
 *   add_layernorm  h = x + r;  y = (h − μ)/√(σ² + ε)·γ + β        x, r, y [m, n]; γ, β [n]
 *   add_rmsnorm    h = x + r;  y = h/√(mean(h²) + ε)·γ            output [2, m, n]: y, then h
 *   qk_norm_rope   a = q/√(mean(q²) + ε)·γ per head of d, then the rotary embedding
 *                  y = a·cos(pθ) + rotate_half(a)·sin(pθ)         q, y [m, h, d]; γ [d]
 * μ and σ² are the row's mean and (population) variance, ε = 1e-5 for the layer norm
 * (PyTorch's default) and 1e-6 for the RMS norms (LLaMA's). add_rmsnorm writes the new
 * residual h too (the fused add + RMSNorm of inference engines, whose next block reads
 * it), so both of its outputs are verified. The rotary embedding is rotate-half (GPT-
 * NeoX, LLaMA in Hugging Face): for i < d/2, with θᵢ = 10000^(−2i/d) and position p,
 *   y[i]       = a[i]·cos(pθᵢ) − a[i + d/2]·sin(pθᵢ)
 *   y[i + d/2] = a[i + d/2]·cos(pθᵢ) + a[i]·sin(pθᵢ)
 * on the whole head; token p of the m is at position p. The cos/sin table (m·d floats,
 * fp32 whatever the dtype) is made once at setup, as engines precompute it.
 *
 * Napkin math (E = bytes per element, M = m, N = n = h·d, D = d):
 *   add          M·N FLOPs;   reads x, r, writes h:               3MN·E
 *   layernorm    8·M·N FLOPs (a sum, three for the squared deviations, four to
 *                normalize, scale and shift); one kernel, as PyTorch's is (the row's
 *                mean and variance are not written): reads h, γ, β, writes y:
 *                                                                 (2MN + 2N)·E
 *   rmsnorm      4·M·N FLOPs (square and add; scale twice); reads h, γ, writes y:
 *                                                                 (2MN + N)·E
 *   head_rmsnorm the same per head:                               (2MN + D)·E
 *   rope         3·M·N FLOPs (two products and a sum per element); reads a and the
 *                table, writes y:                                 2MN·E + 4MD
 *   fused        each input read once, each output written once:
 *                add_layernorm (3MN + 2N)·E, add_rmsnorm (4MN + N)·E (y and h),
 *                qk_norm_rope (2MN + D)·E + 4MD.
 * So fusion saves at most 5/3 (add_layernorm), 5/4 (add_rmsnorm: h is an output) and
 * about 2 (qk_norm_rope) of the traffic: memory-bound ops whose gain is the bytes.
 */
#include "pattern.h"

#include <math.h>

static const fc_dim norm_dims[] = {
    {"m", FC_DIM_REQUIRED, 1, INT32_MAX, false, "rows (tokens × batch)", NULL},
    {"n", FC_DIM_REQUIRED, 1, INT32_MAX, false, "hidden size, the normalized extent", NULL},
};

/* in FC_NORM_* order: n derived from h and d, printed m, h, d */
static const fc_dim norm_heads_dims[] = {
    [FC_NORM_M] = {"m", FC_DIM_REQUIRED, 1, INT32_MAX, false, "tokens (positions 0..m-1)", NULL},
    [FC_NORM_N] = {"n", 0, 0, INT32_MAX, true, "h·d", NULL},
    [FC_NORM_H] = {"h", FC_DIM_REQUIRED, 1, 65536, false, "heads", NULL},
    [FC_NORM_D] = {"d", FC_DIM_REQUIRED, 2, 65536, false, "head size, even (rotary pairs its halves)", NULL},
};
_Static_assert(FC_ARRAY_LEN(norm_heads_dims) == FC_NORM_NDIMS, "norm dims");

static bool heads(const fc_problem *p) { return fc_pattern_has_op(p->pat, FC_OP_HEAD_RMSNORM); }

static int norm_check(fc_problem *p, fc_err *e)
{
    if (heads(p)) {
        if (p->d[FC_NORM_D] % 2)
            return fc_errf(e, "d=%lld must be even: the rotary embedding pairs the halves of a head",
                           (long long)p->d[FC_NORM_D]);
        p->d[FC_NORM_N] = p->d[FC_NORM_H] * p->d[FC_NORM_D];
        if (p->d[FC_NORM_N] > INT32_MAX)
            return fc_errf(e, "problem '%s' is too large: h·d = %lld is above %d", p->pat->name,
                           (long long)p->d[FC_NORM_N], INT32_MAX);
    }
    size_t n;
    if (!fc_dims_product(p->d, 2, &n) || n > SIZE_MAX / 16)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    return 0;
}

static void norm_shapes(const fc_problem *p, fc_workload *w)
{
    size_t M = (size_t)p->d[FC_NORM_M], N = (size_t)p->d[FC_NORM_N];
    bool h = heads(p), ln = fc_pattern_has_op(p->pat, FC_OP_LAYERNORM);
    bool two = fc_pattern_has_op(p->pat, FC_OP_RMSNORM); /* y and the new residual */
    w->nt = FC_NORM_NT;
    w->t[FC_NORM_TX] = (fc_tensor){h ? "q" : "x", NULL, M * N, false};
    w->t[FC_NORM_TR] = (fc_tensor){"r", NULL, h ? 0 : M * N, false};
    w->t[FC_NORM_TGAMMA] = (fc_tensor){"gamma", NULL, h ? (size_t)p->d[FC_NORM_D] : N, false};
    w->t[FC_NORM_TBETA] = (fc_tensor){"beta", NULL, ln ? N : 0, false};
    w->out_n = two ? 2 * M * N : M * N;
    w->out_row = N;
    /* add_rmsnorm's add writes h where the output holds it: no intermediate */
    w->inter_n = two ? 0 : M * N;
}

static void norm_fill(const fc_problem *p, fc_workload *w, fc_rng *rng)
{
    (void)p;
    /* x off-centre (mean 0.25 against a standard deviation near 0.8), so that the layer
     * norm's mean matters and cancels little; γ around 1, β small, q as activations */
    fc_tensor *t = w->t;
    for (size_t i = 0; i < t[FC_NORM_TX].n; i++) t[FC_NORM_TX].data[i] = fc_rng_range(rng, -1.0f, 1.5f);
    for (size_t i = 0; i < t[FC_NORM_TR].n; i++) t[FC_NORM_TR].data[i] = fc_rng_range(rng, -0.5f, 0.5f);
    for (size_t i = 0; i < t[FC_NORM_TGAMMA].n; i++) t[FC_NORM_TGAMMA].data[i] = fc_rng_range(rng, 0.5f, 1.5f);
    for (size_t i = 0; i < t[FC_NORM_TBETA].n; i++) t[FC_NORM_TBETA].data[i] = fc_rng_range(rng, -0.5f, 0.5f);
}

static void norm_cost(const fc_problem *p, fc_cost *c)
{
    double M = (double)p->d[FC_NORM_M], N = (double)p->d[FC_NORM_N], D = (double)p->d[FC_NORM_D];
    double E = (double)fc_dtype_size(p->dtype), MN = M * N;
    double fused = 0;
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_ADD:
            f = MN;
            b = 3 * MN * E;
            break;
        case FC_OP_LAYERNORM:
            f = 8 * MN;
            b = (2 * MN + 2 * N) * E;
            fused = (3 * MN + 2 * N) * E;
            break;
        case FC_OP_RMSNORM:
            f = 4 * MN;
            b = (2 * MN + N) * E;
            fused = (4 * MN + N) * E;
            break;
        case FC_OP_HEAD_RMSNORM:
            f = 4 * MN;
            b = (2 * MN + D) * E;
            break;
        case FC_OP_ROPE:
            f = 3 * MN;
            b = 2 * MN * E + 4 * M * D;
            fused = (2 * MN + D) * E + 4 * M * D;
            break;
        default: break;
        }
        fc_cost_op(c, i, f, b);
    }
    fc_workload w = {.prob = p};
    norm_shapes(p, &w);
    fc_cost_close(c, p->pat, fused, (double)w.inter_n * E);
}

void fc_rope_table(int64_t m, int64_t d, float *cs)
{
    int64_t half = d / 2;
    for (int64_t pos = 0; pos < m; pos++)
        for (int64_t i = 0; i < half; i++) {
            double a = (double)pos * pow(FC_ROPE_BASE, -2.0 * (double)i / (double)d);
            cs[pos * d + i] = (float)cos(a);
            cs[pos * d + half + i] = (float)sin(a);
        }
}

/* y of row `row` at column j (add_layernorm, add_rmsnorm) */
static double row_norm(const fc_problem *p, const fc_workload *w, size_t row, size_t j)
{
    size_t N = (size_t)p->d[FC_NORM_N];
    const float *x = w->t[FC_NORM_TX].data + row * N, *r = w->t[FC_NORM_TR].data + row * N;
    double sum = 0, sq = 0;
    for (size_t k = 0; k < N; k++) {
        double h = (double)x[k] + (double)r[k];
        sum += h;
        sq += h * h;
    }
    double h = (double)x[j] + (double)r[j], g = w->t[FC_NORM_TGAMMA].data[j];
    if (fc_pattern_has_op(p->pat, FC_OP_RMSNORM)) return h / sqrt(sq / (double)N + FC_RMS_EPS) * g;
    double mean = sum / (double)N, var = 0;
    for (size_t k = 0; k < N; k++) {
        double dev = (double)x[k] + (double)r[k] - mean;
        var += dev * dev;
    }
    return (h - mean) / sqrt(var / (double)N + FC_LN_EPS) * g + w->t[FC_NORM_TBETA].data[j];
}

/* y[i] of the head that starts at q (token pos): RMS-normalized, scaled, rotated */
static double head_rope(const fc_problem *p, const fc_workload *w, const float *q, size_t pos, size_t i)
{
    size_t D = (size_t)p->d[FC_NORM_D], half = D / 2;
    const float *g = w->t[FC_NORM_TGAMMA].data;
    double sq = 0;
    for (size_t k = 0; k < D; k++) sq += (double)q[k] * (double)q[k];
    double inv = 1.0 / sqrt(sq / (double)D + FC_RMS_EPS);
    size_t lo = i < half ? i : i - half, hi = lo + half;
    double a_lo = q[lo] * inv * g[lo], a_hi = q[hi] * inv * g[hi];
    double ang = (double)pos * pow(FC_ROPE_BASE, -2.0 * (double)lo / (double)D);
    return i < half ? a_lo * cos(ang) - a_hi * sin(ang) : a_hi * cos(ang) + a_lo * sin(ang);
}

static double norm_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    size_t M = (size_t)p->d[FC_NORM_M], N = (size_t)p->d[FC_NORM_N];
    if (heads(p)) {
        size_t D = (size_t)p->d[FC_NORM_D];
        return head_rope(p, w, w->t[FC_NORM_TX].data + idx / D * D, idx / N, idx % D);
    }
    if (idx >= M * N) { /* add_rmsnorm's second output: h */
        size_t k = idx - M * N;
        return (double)w->t[FC_NORM_TX].data[k] + (double)w->t[FC_NORM_TR].data[k];
    }
    return row_norm(p, w, idx / N, idx % N);
}

static double norm_ref_cost(const fc_problem *p) { return 3 * (double)p->d[heads(p) ? FC_NORM_D : FC_NORM_N]; }

/* the norm's sums: over a row of n, or a head of d */
static double norm_reduction(const fc_problem *p) { return (double)p->d[heads(p) ? FC_NORM_D : FC_NORM_N]; }

const fc_family fc_family_norm = {
    .name = "norm",
    .dims = norm_dims,
    .ndims = FC_ARRAY_LEN(norm_dims),
    .has_layout = false,
    .check = norm_check,
    .cost = norm_cost,
    .shapes = norm_shapes,
    .fill = norm_fill,
    .prepare = NULL,
    .reference = norm_reference,
    .ref_cost = norm_ref_cost,
    .reduction = norm_reduction,
};

const fc_family fc_family_norm_heads = {
    .name = "norm",
    .dims = norm_heads_dims,
    .ndims = FC_NORM_NDIMS,
    .has_layout = false,
    .check = norm_check,
    .cost = norm_cost,
    .shapes = norm_shapes,
    .fill = norm_fill,
    .prepare = NULL,
    .reference = norm_reference,
    .ref_cost = norm_ref_cost,
    .reduction = norm_reduction,
};
