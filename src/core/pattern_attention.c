/* pattern_attention.c — attention family: Q [b,h,s,d], K and V [b,hkv,skv,d] (row-major).
 *
 *   qk_scale    S = Q·Kᵀ/√d                 output [b,h,s,skv]
 *   qk_softmax  P = softmax(Q·Kᵀ/√d)        output [b,h,s,skv]
 *   attention   O = softmax(Q·Kᵀ/√d)·V      output [b,h,s,d]
 *
 * hkv (default h) key/value heads: grouped-query attention when fewer, h a multiple of
 * hkv; query head i of a batch reads key/value head i / (h/hkv), so the g = h/hkv query
 * heads that share one are adjacent, and over the flattened heads (b·h of Q, b·hkv of
 * K) query head n reads key/value head n / g.
 * skv (default s) keys and values per head: decode is s = 1 with a long cache, chunked
 * prefill s < skv.
 * causal=1 (patterns with a softmax only) aligns the queries with the end of the keys,
 * the decode and chunked-prefill convention: query i sees keys j <= i + (skv − s), so
 * the last query sees every key; it needs skv >= s (else the first queries see none).
 *
 * Problem strings print every dimension, hkv and skv included, so a string names its
 * problem whole; a string without them (written before they existed) parses to the
 * same problem, hkv = h and skv = s.
 *
 * Napkin math (E = bytes per element, B = b·h query heads, Bkv = b·hkv key/value
 * heads, L = pairs (i, j) computed per head: s·skv, or s·(skv − s) + s(s+1)/2 when
 * causal):
 *   QKᵀ      2·B·L·d FLOPs; reads Q (B·s·d) and K (Bkv·skv·d), writes S (B·s·skv)
 *   scale    B·L FLOPs; reads and writes S
 *   softmax  5·B·L FLOPs (max, subtract, exp, sum, divide); reads and writes S
 *   ·V       2·B·L·d FLOPs; reads P and V (Bkv·skv·d), writes O (B·s·d)
 *   fused    reads Q, K (and V) once; writes the output once; S never reaches memory.
 * K and V are counted once per key/value head: grouped-query attention's saving in
 * traffic, which dominates decode (s = 1: the cache is read once per token).
 */
#include "pattern.h"

#include <math.h>
#include <stdlib.h>

static const fc_dim attention_dims[] = {
    [FC_ATT_B] = {"b", FC_DIM_REQUIRED, 1, INT32_MAX, false, "batch", NULL},
    [FC_ATT_H] = {"h", FC_DIM_REQUIRED, 1, INT32_MAX, false, "query heads", NULL},
    [FC_ATT_HKV] = {"hkv", FC_DIM_FOLLOWS, 1, INT32_MAX, false, "key/value heads (default h; h a multiple of it)", "h"},
    [FC_ATT_S] = {"s", FC_DIM_REQUIRED, 1, INT32_MAX, false, "query length", NULL},
    [FC_ATT_SKV] = {"skv", FC_DIM_FOLLOWS, 1, INT32_MAX, false, "key/value length (default s)", "s"},
    [FC_ATT_D] = {"d", FC_DIM_REQUIRED, 1, 4096, false, "head dimension", NULL},
    [FC_ATT_CAUSAL] = {"causal", 0, 0, 1, false, "1: query i sees keys j <= i + skv - s", NULL},
};
_Static_assert(FC_ARRAY_LEN(attention_dims) == FC_ATT_NDIMS, "attention dims");

static int attention_check(fc_problem *p, fc_err *e)
{
    const int64_t *d = p->d;
    if (d[FC_ATT_CAUSAL] && !fc_pattern_has_op(p->pat, FC_OP_SOFTMAX))
        return fc_errf(e, "causal=1 needs a softmax; pattern '%s' has none", p->pat->name);
    if (d[FC_ATT_HKV] > d[FC_ATT_H] || d[FC_ATT_H] % d[FC_ATT_HKV] != 0)
        return fc_errf(e, "hkv=%lld does not divide h=%lld (each key/value head serves h/hkv query heads)",
                       (long long)d[FC_ATT_HKV], (long long)d[FC_ATT_H]);
    if (d[FC_ATT_CAUSAL] && d[FC_ATT_SKV] < d[FC_ATT_S])
        return fc_errf(e, "causal=1 needs skv >= s (query i sees keys j <= i + skv - s; skv=%lld, s=%lld)",
                       (long long)d[FC_ATT_SKV], (long long)d[FC_ATT_S]);
    int64_t q[4] = {d[FC_ATT_B], d[FC_ATT_H], d[FC_ATT_S], d[FC_ATT_D]};
    int64_t kv[4] = {d[FC_ATT_B], d[FC_ATT_HKV], d[FC_ATT_SKV], d[FC_ATT_D]};
    int64_t ss[4] = {d[FC_ATT_B], d[FC_ATT_H], d[FC_ATT_S], d[FC_ATT_SKV]};
    size_t nq, nkv, ns;
    if (!fc_dims_product(q, 4, &nq) || nq > SIZE_MAX / 16 || !fc_dims_product(kv, 4, &nkv) || nkv > SIZE_MAX / 16 ||
        !fc_dims_product(ss, 4, &ns) || ns > SIZE_MAX / 16)
        return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
    return 0;
}

static void attention_shapes(const fc_problem *p, fc_workload *w)
{
    const int64_t *d = p->d;
    size_t B = (size_t)d[FC_ATT_B] * (size_t)d[FC_ATT_H], Bkv = (size_t)d[FC_ATT_B] * (size_t)d[FC_ATT_HKV];
    size_t S = (size_t)d[FC_ATT_S], SKV = (size_t)d[FC_ATT_SKV], D = (size_t)d[FC_ATT_D];
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    w->nt = FC_ATT_NT;
    w->t[FC_ATT_TQ] = (fc_tensor){"Q", NULL, B * S * D, false};
    w->t[FC_ATT_TK] = (fc_tensor){"K", NULL, Bkv * SKV * D, false};
    w->t[FC_ATT_TV] = (fc_tensor){"V", NULL, pv ? Bkv * SKV * D : 0, false};
    w->out_n = pv ? B * S * D : B * S * SKV;
    w->out_row = pv ? D : SKV;
    w->inter_n = B * S * SKV;
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

/* Pairs (query, key) per head that the chain computes: all, or under the causal mask
 * query i's i + 1 + (skv − s) keys. */
static double attention_pairs(const fc_problem *p)
{
    double S = (double)p->d[FC_ATT_S], SKV = (double)p->d[FC_ATT_SKV];
    return p->d[FC_ATT_CAUSAL] ? S * (SKV - S) + S * (S + 1) / 2 : S * SKV;
}

static void attention_cost(const fc_problem *p, fc_cost *c)
{
    const int64_t *d = p->d;
    double E = (double)fc_dtype_size(p->dtype);
    double B = (double)d[FC_ATT_B] * (double)d[FC_ATT_H], Bkv = (double)d[FC_ATT_B] * (double)d[FC_ATT_HKV];
    double S = (double)d[FC_ATT_S], SKV = (double)d[FC_ATT_SKV], D = (double)d[FC_ATT_D];
    double L = attention_pairs(p);
    double q = B * S * D, kv = Bkv * SKV * D, ss = B * S * SKV, fused = 0;
    for (int i = 0; i < p->pat->nops; i++) {
        double f = 0, b = 0;
        switch (p->pat->ops[i]) {
        case FC_OP_QK:
            f = 2 * B * L * D;
            b = (q + kv + ss) * E;
            fused = b;
            break;
        case FC_OP_SCALE:
            f = B * L;
            b = 2 * ss * E;
            break;
        case FC_OP_SOFTMAX:
            f = 5 * B * L;
            b = 2 * ss * E;
            break;
        case FC_OP_PV:
            f = 2 * B * L * D;
            b = (ss + kv + q) * E;
            fused = (2 * q + 2 * kv) * E; /* Q, K, V read, O written */
            break;
        default: break;
        }
        fc_cost_op(c, i, f, b);
    }
    fc_cost_close(c, p->pat, fused, ss * E);
}

/* One softmax row (or the scaled logits) of query head n, query i, over its skv keys,
 * in float64. */
static void reference_row(const fc_problem *p, const fc_workload *w, size_t n, size_t i, double *row)
{
    const int64_t *d = p->d;
    size_t S = (size_t)d[FC_ATT_S], SKV = (size_t)d[FC_ATT_SKV], D = (size_t)d[FC_ATT_D];
    size_t kvh = n / (size_t)(d[FC_ATT_H] / d[FC_ATT_HKV]);
    size_t lim = d[FC_ATT_CAUSAL] ? i + 1 + (SKV - S) : SKV; /* keys j < lim are seen */
    const float *q = w->t[FC_ATT_TQ].data + (n * S + i) * D;
    double scale = 1.0 / sqrt((double)D), mx = -INFINITY;
    for (size_t j = 0; j < SKV; j++) {
        const float *k = w->t[FC_ATT_TK].data + (kvh * SKV + j) * D;
        double acc = 0;
        for (size_t e = 0; e < D; e++) acc += (double)q[e] * (double)k[e];
        row[j] = acc * scale;
        if (j < lim && row[j] > mx) mx = row[j];
    }
    if (!fc_pattern_has_op(p->pat, FC_OP_SOFTMAX)) return;
    double sum = 0;
    for (size_t j = 0; j < SKV; j++) {
        row[j] = j < lim ? exp(row[j] - mx) : 0.0;
        sum += row[j];
    }
    for (size_t j = 0; j < SKV; j++) row[j] /= sum;
}

static double attention_reference(const fc_problem *p, const fc_workload *w, size_t idx)
{
    const int64_t *d = p->d;
    size_t S = (size_t)d[FC_ATT_S], SKV = (size_t)d[FC_ATT_SKV], D = (size_t)d[FC_ATT_D];
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    size_t cols = pv ? D : SKV;
    size_t col = idx % cols, i = (idx / cols) % S, n = idx / (cols * S);
    size_t kvh = n / (size_t)(d[FC_ATT_H] / d[FC_ATT_HKV]);
    double stack_row[1024];
    double *row = SKV <= 1024 ? stack_row : fc_xmalloc(SKV * sizeof(double));
    reference_row(p, w, n, i, row);
    double out;
    if (!pv) {
        out = row[col];
    } else {
        out = 0;
        for (size_t j = 0; j < SKV; j++) out += row[j] * (double)w->t[FC_ATT_TV].data[(kvh * SKV + j) * D + col];
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
    double SKV = (double)p->d[FC_ATT_SKV], D = (double)p->d[FC_ATT_D];
    return reads_rows(p->pat) ? SKV * D + SKV : D;
}

static double attention_reduction(const fc_problem *p)
{
    double SKV = (double)p->d[FC_ATT_SKV], D = (double)p->d[FC_ATT_D];
    return reads_rows(p->pat) && SKV > D ? SKV : D;
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
