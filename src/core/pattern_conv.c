/* pattern_conv.c — conv family: y = epilogue(conv(x, W) + b).
 *
 * x [n,c,h,w] (nchw) or [n,h,w,c] (nhwc); W [k,c/g,r,s] (OIHW, always; output channel
 * k of group k/(k/g) sees that group's c/g input channels); b, γ, β, μ, σ² [k];
 * y and the residual r [n,k,p,q] or [n,p,q,k], p = (h + 2·pad − r)/stride + 1, q likewise.
 * dwconv_bn_relu is the depthwise case g = c = k (g follows c when not given).
 *
 * Napkin math (E = bytes per element, Y = n·k·p·q, Wn = k·c/g·r·s):
 *   conv      2·n·k·(c/g)·T + Y FLOPs (with its bias), T the filter taps that land inside
 *             the input summed over output positions (taps on zero padding do no useful
 *             work; T = p·q·r·s without padding); reads x, W, b; writes y
 *   BN        2·Y FLOPs (scale and shift); reads y and 4k parameters, writes y
 *   residual  Y FLOPs; reads y and r, writes y
 *   ReLU      Y FLOPs; reads and writes y
 *   fused     BN folded into W and b once (W' = W·γ/√(σ²+ε), b' = (b−μ)·γ/√(σ²+ε)+β),
 *             then one conv that adds r and applies ReLU to its output: reads x, W', b'
 *             (and r); writes y.
 */
#include "pattern.h"

#include <math.h>
#include <string.h>

static const fc_dim conv_dims[] = {
    [FC_CONV_N] = {"n", FC_DIM_REQUIRED, 1, INT32_MAX, false, "batch", NULL},
    [FC_CONV_C] = {"c", FC_DIM_REQUIRED, 1, INT32_MAX, false, "input channels", NULL},
    [FC_CONV_H] = {"h", FC_DIM_REQUIRED, 1, INT32_MAX, false, "input height", NULL},
    [FC_CONV_W] = {"w", FC_DIM_REQUIRED, 1, INT32_MAX, false, "input width", NULL},
    [FC_CONV_K] = {"k", FC_DIM_REQUIRED, 1, INT32_MAX, false, "output channels", NULL},
    [FC_CONV_R] = {"r", 3, 1, 4096, false, "filter height", NULL},
    [FC_CONV_S] = {"s", 3, 1, 4096, false, "filter width", NULL},
    [FC_CONV_STRIDE] = {"stride", 1, 1, 4096, false, "stride (both axes)", NULL},
    [FC_CONV_PAD] = {"pad", 0, 0, 4096, false, "zero padding (both axes)", NULL},
    [FC_CONV_G] = {"g", 1, 1, INT32_MAX, false, "groups, dividing c and k (dwconv_bn_relu: c)", NULL},
    [FC_CONV_P] = {"p", 0, 0, INT32_MAX, true, "output height", NULL},
    [FC_CONV_Q] = {"q", 0, 0, INT32_MAX, true, "output width", NULL},
};
_Static_assert(FC_ARRAY_LEN(conv_dims) == FC_CONV_NDIMS, "conv dims");
_Static_assert(FC_CONV_NDIMS <= FC_MAX_DIMS && FC_CONV_NT <= FC_MAX_TENSORS, "conv dims and tensors fit a problem");

/* The depthwise pattern: one input channel per group, as many outputs (g = c = k). */
static bool depthwise(const fc_pattern *pat) { return pat->id == FC_P_dwconv_bn_relu; }

/* Input channels each output channel sees. */
static int64_t group_c(const fc_problem *p) { return p->d[FC_CONV_C] / p->d[FC_CONV_G]; }

/* Groups: g divides c and k; the depthwise pattern takes g = c (its default) and k = c. */
static int check_groups(fc_problem *p, fc_err *e)
{
    int64_t *d = p->d;
    if (depthwise(p->pat)) {
        if (d[FC_CONV_K] != d[FC_CONV_C])
            return fc_errf(e, "pattern '%s' is depthwise: k must equal c (got c=%lld, k=%lld)", p->pat->name,
                           (long long)d[FC_CONV_C], (long long)d[FC_CONV_K]);
        if (d[FC_CONV_G] == 1) d[FC_CONV_G] = d[FC_CONV_C];
        if (d[FC_CONV_G] != d[FC_CONV_C])
            return fc_errf(e, "pattern '%s' is depthwise: g must equal c (got c=%lld, g=%lld)", p->pat->name,
                           (long long)d[FC_CONV_C], (long long)d[FC_CONV_G]);
    }
    if (d[FC_CONV_C] % d[FC_CONV_G] || d[FC_CONV_K] % d[FC_CONV_G])
        return fc_errf(e, "groups 'g=%lld' must divide c=%lld and k=%lld", (long long)d[FC_CONV_G],
                       (long long)d[FC_CONV_C], (long long)d[FC_CONV_K]);
    return 0;
}

static int conv_check(fc_problem *p, fc_err *e)
{
    const int64_t *d = p->d;
    int64_t hp = d[FC_CONV_H] + 2 * d[FC_CONV_PAD], wp = d[FC_CONV_W] + 2 * d[FC_CONV_PAD];
    if (d[FC_CONV_R] > hp || d[FC_CONV_S] > wp)
        return fc_errf(e, "filter %lldx%lld is larger than the padded input %lldx%lld", (long long)d[FC_CONV_R],
                       (long long)d[FC_CONV_S], (long long)hp, (long long)wp);
    if (d[FC_CONV_PAD] >= d[FC_CONV_R] || d[FC_CONV_PAD] >= d[FC_CONV_S])
        return fc_errf(e, "padding %lld must be smaller than the filter", (long long)d[FC_CONV_PAD]);
    if (check_groups(p, e) != 0) return -1;
    p->d[FC_CONV_P] = (hp - d[FC_CONV_R]) / d[FC_CONV_STRIDE] + 1;
    p->d[FC_CONV_Q] = (wp - d[FC_CONV_S]) / d[FC_CONV_STRIDE] + 1;
    int64_t x[4] = {d[FC_CONV_N], d[FC_CONV_C], d[FC_CONV_H], d[FC_CONV_W]};
    int64_t wt[4] = {d[FC_CONV_K], group_c(p), d[FC_CONV_R], d[FC_CONV_S]};
    int64_t y[4] = {d[FC_CONV_N], d[FC_CONV_K], p->d[FC_CONV_P], p->d[FC_CONV_Q]};
    int64_t col[4] = {d[FC_CONV_C] * d[FC_CONV_R] * d[FC_CONV_S], p->d[FC_CONV_P], p->d[FC_CONV_Q], 1};
    size_t n;
    if (!fc_dims_product(x, 4, &n) || n > SIZE_MAX / 16 || !fc_dims_product(wt, 4, &n) || n > SIZE_MAX / 16 ||
        !fc_dims_product(y, 4, &n) || n > SIZE_MAX / 16 || !fc_dims_product(col, 4, &n) || n > SIZE_MAX / 16 ||
        d[FC_CONV_C] * d[FC_CONV_R] * d[FC_CONV_S] > INT32_MAX)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    return 0;
}

static void conv_shapes(const fc_problem *p, fc_workload *w)
{
    const int64_t *d = p->d;
    size_t K = (size_t)d[FC_CONV_K];
    size_t X = (size_t)d[FC_CONV_N] * (size_t)d[FC_CONV_C] * (size_t)d[FC_CONV_H] * (size_t)d[FC_CONV_W];
    size_t Wn = K * (size_t)group_c(p) * (size_t)d[FC_CONV_R] * (size_t)d[FC_CONV_S];
    size_t Y = (size_t)d[FC_CONV_N] * K * (size_t)d[FC_CONV_P] * (size_t)d[FC_CONV_Q];
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID);
    w->nt = FC_CONV_NT;
    w->t[FC_CONV_TX] = (fc_tensor){"x", NULL, X, false};
    w->t[FC_CONV_TW] = (fc_tensor){"W", NULL, Wn, false};
    w->t[FC_CONV_TB] = (fc_tensor){"b", NULL, K, false};
    w->t[FC_CONV_TGAMMA] = (fc_tensor){"gamma", NULL, K, false};
    w->t[FC_CONV_TBETA] = (fc_tensor){"beta", NULL, K, false};
    w->t[FC_CONV_TMEAN] = (fc_tensor){"mean", NULL, K, false};
    w->t[FC_CONV_TVAR] = (fc_tensor){"var", NULL, K, false};
    w->t[FC_CONV_TWF] = (fc_tensor){"W_folded", NULL, Wn, true};
    w->t[FC_CONV_TBF] = (fc_tensor){"b_folded", NULL, K, true};
    w->t[FC_CONV_TR] = (fc_tensor){"r", NULL, resid ? Y : 0, false};
    w->out_n = Y;
    w->out_row = p->layout == FC_NCHW ? (size_t)d[FC_CONV_P] * (size_t)d[FC_CONV_Q] : K;
    w->inter_n = Y;
}

static void conv_fill(const fc_problem *p, fc_workload *w, fc_rng *rng)
{
    double fan_in = (double)(group_c(p) * p->d[FC_CONV_R] * p->d[FC_CONV_S]);
    float a = (float)(1.5 / sqrt(fan_in));
    struct {
        int t;
        float lo, hi;
    } spec[] = {
        {FC_CONV_TX, -1.f, 1.f},        {FC_CONV_TW, -a, a},
        {FC_CONV_TB, -0.25f, 0.75f},    {FC_CONV_TGAMMA, 0.5f, 1.5f},
        {FC_CONV_TBETA, -0.25f, 0.75f}, {FC_CONV_TMEAN, -0.2f, 0.2f},
        {FC_CONV_TVAR, 0.25f, 1.25f},   {FC_CONV_TR, -0.5f, 0.5f},
    };
    for (size_t s = 0; s < FC_ARRAY_LEN(spec); s++) {
        fc_tensor *t = &w->t[spec[s].t];
        for (size_t i = 0; i < t->n; i++) t->data[i] = fc_rng_range(rng, spec[s].lo, spec[s].hi);
    }
}

/* BN folding, done once per deployment: W' = W·γ/√(σ²+ε), b' = (b−μ)·γ/√(σ²+ε) + β.
 * conv_relu has no BN: W' = W, b' = b. */
void fc_conv_fold_bn(const fc_problem *p, fc_workload *w)
{
    size_t K = (size_t)p->d[FC_CONV_K], per = w->t[FC_CONV_TW].n / K;
    const float *W = w->t[FC_CONV_TW].data, *b = w->t[FC_CONV_TB].data;
    float *Wf = w->t[FC_CONV_TWF].data, *bf = w->t[FC_CONV_TBF].data;
    if (!fc_pattern_has_op(p->pat, FC_OP_BN)) {
        memcpy(Wf, W, w->t[FC_CONV_TW].n * sizeof(float));
        memcpy(bf, b, K * sizeof(float));
        return;
    }
    const float *g = w->t[FC_CONV_TGAMMA].data, *be = w->t[FC_CONV_TBETA].data;
    const float *mu = w->t[FC_CONV_TMEAN].data, *var = w->t[FC_CONV_TVAR].data;
    for (size_t k = 0; k < K; k++) {
        double inv = (double)g[k] / sqrt((double)var[k] + FC_BN_EPS);
        for (size_t i = 0; i < per; i++) Wf[k * per + i] = (float)((double)W[k * per + i] * inv);
        bf[k] = (float)(((double)b[k] - (double)mu[k]) * inv + (double)be[k]);
    }
}

static int64_t floor_div(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return a % b != 0 && a < 0 ? q - 1 : q;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Σ max(0, c + m·o) over the integers o in [a, b), m ≠ 0: the range cut to where the
 * term is positive, then an arithmetic series */
static double sum_positive(int64_t a, int64_t b, int64_t c, int64_t m)
{
    if (m > 0) a = a > floor_div(-c, m) + 1 ? a : floor_div(-c, m) + 1; /* c + m·o > 0 */
    else
        b = b < -floor_div(-c, -m) ? b : -floor_div(-c, -m); /* o < c / −m */
    if (b <= a) return 0;
    double n = (double)(b - a);
    return n * (double)c + (double)m * ((double)a + (double)b - 1) * n / 2;
}

/* Filter taps along one axis that land inside the input, summed over the output
 * positions: out positions, filter size f, input size in, stride, padding. Output o
 * reads input rows [o·stride − pad, o·stride − pad + f) clipped to [0, in); in closed
 * form by segments (a loop over the outputs is as long as the input: a problem
 * string may name billions). */
static double valid_taps(int64_t out, int64_t f, int64_t in, int64_t stride, int64_t pad)
{
    /* o < oa: the window starts in the padding; o >= ob: it ends past the input */
    int64_t oa = clamp64(-floor_div(-pad, stride), 0, out), ob = clamp64(floor_div(in + pad - f, stride) + 1, 0, out);
    int64_t lo = oa < ob ? oa : ob, hi = oa > ob ? oa : ob;
    double t = sum_positive(0, lo, f - pad, stride);     /* clipped at the start only */
    t += (double)(hi - lo) * (double)(oa < ob ? f : in); /* inside, or clipped at both ends */
    return t + sum_positive(hi, out, in + pad, -stride); /* clipped at the end only */
}

static void conv_cost(const fc_problem *p, fc_cost *c)
{
    const int64_t *d = p->d;
    double E = (double)fc_dtype_size(p->dtype), K = (double)d[FC_CONV_K];
    double X = (double)d[FC_CONV_N] * (double)d[FC_CONV_C] * (double)d[FC_CONV_H] * (double)d[FC_CONV_W];
    double Cg = (double)group_c(p), Wn = K * Cg * (double)d[FC_CONV_R] * (double)d[FC_CONV_S];
    double Y = (double)d[FC_CONV_N] * K * (double)d[FC_CONV_P] * (double)d[FC_CONV_Q];
    double pad_extra = 0, fused_bytes = (X + Wn + K + Y) * E;
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_CONV: {
            double taps = valid_taps(d[FC_CONV_P], d[FC_CONV_R], d[FC_CONV_H], d[FC_CONV_STRIDE], d[FC_CONV_PAD]) *
                          valid_taps(d[FC_CONV_Q], d[FC_CONV_S], d[FC_CONV_W], d[FC_CONV_STRIDE], d[FC_CONV_PAD]);
            f = 2 * (double)d[FC_CONV_N] * K * Cg * taps + Y;
            pad_extra = 2 * Y * Cg * (double)d[FC_CONV_R] * (double)d[FC_CONV_S] + Y - f;
            b = (X + Wn + K + Y) * E;
            break;
        }
        case FC_OP_BN:
            f = 2 * Y;
            b = (2 * Y + 4 * K) * E;
            break;
        case FC_OP_RESID:
            f = Y;
            b = 3 * Y * E;
            fused_bytes += Y * E;
            break;
        case FC_OP_RELU:
            f = Y;
            b = 2 * Y * E;
            break;
        default: break;
        }
        fc_cost_op(c, i, f, b);
    }
    c->flops_padded = c->flops + pad_extra;
    fc_cost_close(c, p->pat, fused_bytes, Y * E);
}

/* Index of x[n][c][y][x] in the problem's layout. */
static inline size_t x_index(const fc_problem *p, size_t n, size_t c, size_t y, size_t x)
{
    size_t C = (size_t)p->d[FC_CONV_C], H = (size_t)p->d[FC_CONV_H], W = (size_t)p->d[FC_CONV_W];
    return p->layout == FC_NCHW ? ((n * C + c) * H + y) * W + x : ((n * H + y) * W + x) * C + c;
}

static double conv_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    const int64_t *d = p->d;
    size_t K = (size_t)d[FC_CONV_K], P = (size_t)d[FC_CONV_P], Q = (size_t)d[FC_CONV_Q];
    size_t R = (size_t)d[FC_CONV_R], S = (size_t)d[FC_CONV_S];
    int64_t H = d[FC_CONV_H], Wd = d[FC_CONV_W], st = d[FC_CONV_STRIDE], pad = d[FC_CONV_PAD];
    size_t n, k, oy, ox;
    if (p->layout == FC_NCHW) {
        ox = idx % Q;
        oy = (idx / Q) % P;
        k = (idx / (Q * P)) % K;
        n = idx / (Q * P * K);
    } else {
        k = idx % K;
        ox = (idx / K) % Q;
        oy = (idx / (K * Q)) % P;
        n = idx / (K * Q * P);
    }
    size_t Cg = (size_t)group_c(p), c0 = k / (K / (size_t)d[FC_CONV_G]) * Cg; /* the group's first channel */
    const float *x = w->t[FC_CONV_TX].data, *W = w->t[FC_CONV_TW].data;
    double acc = w->t[FC_CONV_TB].data[k];
    for (size_t c = 0; c < Cg; c++)
        for (size_t r = 0; r < R; r++) {
            int64_t iy = (int64_t)oy * st - pad + (int64_t)r;
            if (iy < 0 || iy >= H) continue;
            for (size_t s = 0; s < S; s++) {
                int64_t ix = (int64_t)ox * st - pad + (int64_t)s;
                if (ix < 0 || ix >= Wd) continue;
                acc += (double)x[x_index(p, n, c0 + c, (size_t)iy, (size_t)ix)] *
                       (double)W[((k * Cg + c) * R + r) * S + s];
            }
        }
    for (int o = 1; o < p->pat->nops; o++) {
        if (p->pat->ops[o] == FC_OP_BN) {
            double g = w->t[FC_CONV_TGAMMA].data[k], be = w->t[FC_CONV_TBETA].data[k];
            double mu = w->t[FC_CONV_TMEAN].data[k], var = w->t[FC_CONV_TVAR].data[k];
            acc = (acc - mu) / sqrt(var + FC_BN_EPS) * g + be;
        } else if (p->pat->ops[o] == FC_OP_RESID) {
            acc += w->t[FC_CONV_TR].data[idx];
        } else if (p->pat->ops[o] == FC_OP_RELU) {
            acc = acc > 0 ? acc : 0;
        }
    }
    return acc;
}

static double conv_ref_cost(const fc_problem *p) { return (double)(group_c(p) * p->d[FC_CONV_R] * p->d[FC_CONV_S]); }

static double conv_reduction(const fc_problem *p) { return conv_ref_cost(p); }

/* g only where it is not implied: not 1, and not the depthwise pattern's c */
static bool conv_shown(const fc_problem *p, int i) { return i != FC_CONV_G || (p->d[i] != 1 && !depthwise(p->pat)); }

const fc_family fc_family_conv = {
    .name = "conv",
    .dims = conv_dims,
    .ndims = FC_CONV_NDIMS,
    .has_layout = true,
    .check = conv_check,
    .cost = conv_cost,
    .shapes = conv_shapes,
    .fill = conv_fill,
    .prepare = fc_conv_fold_bn,
    .reference = conv_reference,
    .ref_cost = conv_ref_cost,
    .reduction = conv_reduction,
    .shown = conv_shown,
};
