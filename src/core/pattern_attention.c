/* pattern_attention.c — attention family over Q, K, V [b,h,s,d] (row-major).
 *
 *   qk_scale    S = Q·Kᵀ/√d                 output [b,h,s,s]
 *   qk_softmax  P = softmax(Q·Kᵀ/√d)        output [b,h,s,s]
 *   attention   O = softmax(Q·Kᵀ/√d)·V      output [b,h,s,d]
 * causal=1 masks key j > query i before the softmax (patterns with a softmax only).
 *
 * Napkin math (E = bytes per element, B = b·h, L = pairs (i, j) computed per head:
 * s² or s(s+1)/2 when causal):
 *   QKᵀ      2·B·L·d FLOPs; reads Q, K (2·B·s·d), writes S (B·s²)
 *   scale    B·L FLOPs; reads and writes S
 *   softmax  5·B·L FLOPs (max, subtract, exp, sum, divide); reads and writes S
 *   ·V       2·B·L·d FLOPs; reads P and V, writes O (B·s·d)
 *   fused    reads Q, K (and V) once; writes the output once; S never reaches memory.
 */
#include "pattern.h"

#include <math.h>
#include <stdlib.h>

static const fc_dim attention_dims[] = {
    [FC_ATT_B] = {"b", FC_DIM_REQUIRED, 1, INT32_MAX, false, "batch"},
    [FC_ATT_H] = {"h", FC_DIM_REQUIRED, 1, INT32_MAX, false, "heads"},
    [FC_ATT_S] = {"s", FC_DIM_REQUIRED, 1, INT32_MAX, false, "sequence length"},
    [FC_ATT_D] = {"d", FC_DIM_REQUIRED, 1, 4096, false, "head dimension"},
    [FC_ATT_CAUSAL] = {"causal", 0, 0, 1, false, "1: mask keys after the query"},
};
_Static_assert(FC_ARRAY_LEN(attention_dims) == FC_ATT_NDIMS, "attention dims");

static int attention_check(fc_problem *p, fc_err *e)
{
    if (p->d[FC_ATT_CAUSAL] && !fc_pattern_has_op(p->pat, FC_OP_SOFTMAX))
        return fc_errf(e, "causal=1 needs a softmax; pattern '%s' has none", p->pat->name);
    int64_t qkv[4] = {p->d[FC_ATT_B], p->d[FC_ATT_H], p->d[FC_ATT_S], p->d[FC_ATT_D]};
    int64_t ss[4] = {p->d[FC_ATT_B], p->d[FC_ATT_H], p->d[FC_ATT_S], p->d[FC_ATT_S]};
    size_t n;
    if (!fc_dims_product(qkv, 4, &n) || n > SIZE_MAX / 16 || !fc_dims_product(ss, 4, &n) || n > SIZE_MAX / 16)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    return 0;
}

static void attention_shapes(const fc_problem *p, fc_workload *w)
{
    size_t B = (size_t)p->d[FC_ATT_B] * (size_t)p->d[FC_ATT_H], S = (size_t)p->d[FC_ATT_S];
    size_t D = (size_t)p->d[FC_ATT_D];
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    w->nt = FC_ATT_NT;
    w->t[FC_ATT_TQ] = (fc_tensor){"Q", NULL, B * S * D, false};
    w->t[FC_ATT_TK] = (fc_tensor){"K", NULL, B * S * D, false};
    w->t[FC_ATT_TV] = (fc_tensor){"V", NULL, pv ? B * S * D : 0, false};
    w->out_n = pv ? B * S * D : B * S * S;
    w->out_row = pv ? D : S;
    w->inter_n = B * S * S;
}

static void attention_fill(const fc_problem *p, fc_workload *w, fc_rng *rng)
{
    (void)p;
    /* Q, K in (−2, 2): logits/√d then have a standard deviation near 1.3, so the
     * softmax is neither flat nor one-hot and its errors show. */
    for (int t = 0; t < FC_ATT_NT; t++) {
        float a = t == FC_ATT_TV ? 1.f : 2.f;
        for (size_t i = 0; i < w->t[t].n; i++) w->t[t].data[i] = fc_rng_range(rng, -a, a);
    }
}

static void attention_cost(const fc_problem *p, fc_cost *c)
{
    double E = (double)fc_dtype_size(p->dtype);
    double B = (double)p->d[FC_ATT_B] * (double)p->d[FC_ATT_H], S = (double)p->d[FC_ATT_S];
    double D = (double)p->d[FC_ATT_D];
    double L = p->d[FC_ATT_CAUSAL] ? S * (S + 1) / 2 : S * S;
    double fused = 0;
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_QK:
            f = 2 * B * L * D;
            b = (2 * B * S * D + B * S * S) * E;
            fused = b;
            break;
        case FC_OP_SCALE:
            f = B * L;
            b = 2 * B * S * S * E;
            break;
        case FC_OP_SOFTMAX:
            f = 5 * B * L;
            b = 2 * B * S * S * E;
            break;
        case FC_OP_PV:
            f = 2 * B * L * D;
            b = (B * S * S + 2 * B * S * D) * E;
            fused = 4 * B * S * D * E;
            break;
        default: break;
        }
        c->op_flops[i] = f;
        c->op_bytes[i] = b;
        c->flops += f;
        c->bytes[FC_UNFUSED] += b;
    }
    c->bytes[FC_FUSED] = fused;
    c->peak_inter[FC_UNFUSED] = fc_pattern_live_intermediates(p->pat) * B * S * S * E;
    c->peak_inter[FC_FUSED] = 0;
}

/* One softmax row (or the scaled logits) of head bh, query i, in float64. */
static void reference_row(const fc_problem *p, const fc_workload *w, size_t bh, size_t i, double *row)
{
    size_t S = (size_t)p->d[FC_ATT_S], D = (size_t)p->d[FC_ATT_D];
    bool causal = p->d[FC_ATT_CAUSAL] != 0;
    const float *q = w->t[FC_ATT_TQ].data + (bh * S + i) * D;
    double scale = 1.0 / sqrt((double)D), mx = -INFINITY;
    for (size_t j = 0; j < S; j++) {
        const float *k = w->t[FC_ATT_TK].data + (bh * S + j) * D;
        double acc = 0;
        for (size_t e = 0; e < D; e++) acc += (double)q[e] * (double)k[e];
        row[j] = acc * scale;
        if (!(causal && j > i) && row[j] > mx) mx = row[j];
    }
    if (!fc_pattern_has_op(p->pat, FC_OP_SOFTMAX)) return;
    double sum = 0;
    for (size_t j = 0; j < S; j++) {
        row[j] = (causal && j > i) ? 0.0 : exp(row[j] - mx);
        sum += row[j];
    }
    for (size_t j = 0; j < S; j++) row[j] /= sum;
}

static double attention_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    size_t S = (size_t)p->d[FC_ATT_S], D = (size_t)p->d[FC_ATT_D];
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    size_t cols = pv ? D : S;
    size_t col = idx % cols, i = (idx / cols) % S, bh = idx / (cols * S);
    double stack_row[1024];
    double *row = S <= 1024 ? stack_row : fc_xmalloc(S * sizeof(double));
    reference_row(p, w, bh, i, row);
    double out;
    if (!pv) {
        out = row[col];
    } else {
        out = 0;
        for (size_t j = 0; j < S; j++) out += row[j] * (double)w->t[FC_ATT_TV].data[(bh * S + j) * D + col];
    }
    if (row != stack_row) free(row);
    return out;
}

/* Whether the chain reads whole rows of S (a softmax, or P·V). */
static bool reads_rows(const fc_pattern *pat)
{
    return fc_pattern_has_op(pat, FC_OP_SOFTMAX) || fc_pattern_has_op(pat, FC_OP_PV);
}

static double attention_ref_cost(const fc_problem *p)
{
    double S = (double)p->d[FC_ATT_S], D = (double)p->d[FC_ATT_D];
    return reads_rows(p->pat) ? S * D + S : D;
}

static double attention_reduction(const fc_problem *p)
{
    double S = (double)p->d[FC_ATT_S], D = (double)p->d[FC_ATT_D];
    return reads_rows(p->pat) && S > D ? S : D;
}

const fc_family fc_family_attention = {
    .name = "attention",
    .dims = attention_dims,
    .ndims = FC_ATT_NDIMS,
    .has_layout = false,
    .check = attention_check,
    .cost = attention_cost,
    .shapes = attention_shapes,
    .fill = attention_fill,
    .prepare = NULL,
    .reference = attention_reference,
    .ref_cost = attention_ref_cost,
    .reduction = attention_reduction,
};
