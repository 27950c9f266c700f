/* test_attention.c — the attention family's key/value heads (hkv) and length (skv):
 * problem strings (every dim printed; strings without hkv and skv parse to the same
 * problem), the checks, FLOPs and bytes on paper, and the float64 reference's
 * mappings — query head n reads key/value head n / (h/hkv), and under the causal mask
 * query i sees keys j <= i + skv − s. */
#include "attention_ops.h"
#include "format.h"
#include "pattern.h"
#include "test.h"
#include "verify.h"

#include <math.h>

static fc_problem parse_ok(const char *s)
{
    fc_problem p;
    fc_err e = {{0}};
    int rc = fc_problem_parse(s, NULL, &p, &e);
    CHECK_MSG(rc == 0, "'%s': %s", s, e.msg);
    return p;
}

static void parse_fails(const char *s, const char *needle)
{
    fc_problem p;
    fc_err e = {{0}};
    int rc = fc_problem_parse(s, NULL, &p, &e);
    CHECK_MSG(rc != 0, "'%s' parsed but should not", s);
    if (rc != 0) CHECK_STR_CONTAINS(e.msg, needle);
}

static void string_is(const char *in, const char *want)
{
    fc_problem p = parse_ok(in), q;
    char buf[256], again[256];
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, want), "'%s' prints as '%s', want '%s'", in, buf, want);
    fc_err e;
    CHECK(fc_problem_parse(buf, NULL, &q, &e) == 0);
    fc_problem_string(&q, again, sizeof again);
    CHECK_MSG(!strcmp(buf, again), "'%s' does not re-parse to itself: '%s'", buf, again);
    CHECK(memcmp(p.d, q.d, sizeof p.d) == 0);
}

/* Every dim is printed, hkv and skv too, so that a string names its problem whole;
 * strings without them parse to hkv = h and skv = s. */
static void strings_print_every_dim(void)
{
    string_is("attention:b=1,h=2,s=33,d=64,causal=1", "attention:b=1,h=2,hkv=2,s=33,skv=33,d=64,causal=1,dtype=fp32");
    string_is("attention:b=1,h=2,hkv=2,s=33,skv=33,d=64,causal=1",
              "attention:b=1,h=2,hkv=2,s=33,skv=33,d=64,causal=1,dtype=fp32");
    string_is("qk_softmax:d=128,skv=4096,s=1,hkv=8,h=32,b=1,dtype=bf16",
              "qk_softmax:b=1,h=32,hkv=8,s=1,skv=4096,d=128,causal=0,dtype=bf16");
    string_is("qk_scale:b=2,h=4,hkv=1,s=7,skv=5,d=8", "qk_scale:b=2,h=4,hkv=1,s=7,skv=5,d=8,causal=0,dtype=fp32");
    /* the defaults follow their dims, wherever those appear in the string */
    fc_problem p = parse_ok("attention:skv=9,d=8,s=3,b=1,h=6");
    CHECK(p.d[FC_ATT_HKV] == 6 && p.d[FC_ATT_SKV] == 9 && p.d[FC_ATT_S] == 3);
    /* which dims hold their defaults; tables leave those out */
    CHECK(fc_problem_dim_is_default(&p, FC_ATT_HKV) && !fc_problem_dim_is_default(&p, FC_ATT_SKV));
    CHECK(fc_problem_dim_is_default(&p, FC_ATT_CAUSAL) && !fc_problem_dim_is_default(&p, FC_ATT_H));
    char dims[128];
    fc_format_dims(&p, dims, sizeof dims);
    CHECK_MSG(!strcmp(dims, "b=1,h=6,s=3,skv=9,d=8"), "%s", dims);
    p = parse_ok("attention:b=1,h=8,hkv=2,s=16,d=8,causal=1");
    fc_format_dims(&p, dims, sizeof dims);
    CHECK_MSG(!strcmp(dims, "b=1,h=8,hkv=2,s=16,d=8,causal=1"), "%s", dims);
    /* a dim follows one that comes before it, so that finishing a problem resolves it */
    const fc_family *fams[] = {&fc_family_linear, &fc_family_conv, &fc_family_attention};
    int follows = 0;
    for (size_t k = 0; k < FC_ARRAY_LEN(fams); k++)
        for (int i = 0; i < fams[k]->ndims; i++) {
            const fc_dim *d = &fams[k]->dims[i];
            int src = fc_family_dim_follows(fams[k], i);
            CHECK_MSG((d->follows != NULL) == (d->def == FC_DIM_FOLLOWS), "%s: follows and default disagree", d->name);
            if (!d->follows) continue;
            CHECK_MSG(src >= 0 && src < i, "%s follows '%s', not an earlier dim", d->name, d->follows);
            follows++;
        }
    CHECK(follows == 2);
}

static void checks(void)
{
    parse_fails("attention:b=1,h=8,hkv=3,s=4,d=8", "hkv=3 does not divide h=8");
    parse_fails("attention:b=1,h=8,hkv=16,s=4,d=8", "hkv=16 does not divide h=8");
    parse_fails("attention:b=1,h=8,hkv=0,s=4,d=8", "'hkv=0' out of range");
    parse_fails("attention:b=1,h=8,s=4,skv=0,d=8", "'skv=0' out of range");
    parse_fails("qk_softmax:b=1,h=1,s=8,skv=4,d=8,causal=1", "causal=1 needs skv >= s");
    parse_fails("qk_scale:b=1,h=1,s=1,skv=8,d=8,causal=1", "causal=1 needs a softmax");
    parse_fails("attention:b=1,h=1,hkv=1,hkv=1,s=1,d=8", "given twice");
    parse_fails("attention:b=2147483647,h=2147483647,s=1,skv=2147483647,d=8", "too large");
    /* skv < s without the mask is cross-attention: allowed */
    fc_problem p = parse_ok("qk_softmax:b=1,h=2,hkv=1,s=8,skv=4,d=8");
    CHECK(p.d[FC_ATT_SKV] == 4);
    p = parse_ok("attention:b=1,h=2,s=8,skv=8,d=8,causal=1");
    CHECK(p.d[FC_ATT_CAUSAL] == 1);
}

/* FLOPs and bytes by hand: b=1, h=4, hkv=2, s=2, skv=6, d=8, fp32. B = 4 query heads,
 * Bkv = 2; Q 4·2·8 = 64, K and V 2·6·8 = 96 each, S 4·2·6 = 48 elements. */
static void cost_on_paper(void)
{
    fc_cost c = {0};
    fc_problem p = parse_ok("attention:b=1,h=4,hkv=2,s=2,skv=6,d=8");
    fc_family_of(p.pat)->cost(&p, &c);
    /* L = 12 pairs per head: QK 2·4·12·8 = 768, scale 48, softmax 240, PV 768 */
    CHECK_NEAR(c.flops, 768 + 48 + 240 + 768, 0);
    /* QK (64 + 96 + 48)·4, scale and softmax 2·48·4 each, PV (48 + 96 + 64)·4 */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 832 + 384 + 384 + 832, 0);
    /* Q and O 64 each, K and V 96 each, once */
    CHECK_NEAR(c.bytes[FC_FUSED], (64 + 64 + 96 + 96) * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 2 * 48 * 4, 0);

    /* causal with skv − s = 4: query 0 sees 5 keys, query 1 all 6: L = 11 */
    memset(&c, 0, sizeof c);
    p = parse_ok("attention:b=1,h=4,hkv=2,s=2,skv=6,d=8,causal=1");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 2 * (2 * 4 * 11 * 8) + 4 * 11 + 5 * 4 * 11, 0);

    /* decode: s = 1, hkv = 1 — K read once for the 4 query heads */
    memset(&c, 0, sizeof c);
    p = parse_ok("qk_scale:b=1,h=4,hkv=1,s=1,skv=100,d=16,dtype=bf16");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.bytes[FC_FUSED], (4 * 16 + 100 * 16 + 4 * 100) * 2.0, 0);
    CHECK_NEAR(c.flops, 2 * 4 * 100 * 16 + 4 * 100, 0);

    /* the defaults give the square problem's counts (s² pairs) */
    memset(&c, 0, sizeof c);
    p = parse_ok("attention:b=1,h=2,s=4,d=8");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 512 + 32 + 160 + 512, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], 4 * 64 * 4, 0);
}

/* The reference of a grouped-query problem equals that of the problem with hkv = h
 * whose K and V repeat each key/value head h/hkv times (PyTorch's repeat_interleave). */
static void reference_maps_query_heads_to_kv_heads(void)
{
    static const char *const pats[] = {"qk_scale", "qk_softmax", "attention"};
    for (size_t pi = 0; pi < FC_ARRAY_LEN(pats); pi++) {
        char gs[128], ms[128];
        snprintf(gs, sizeof gs, "%s:b=2,h=6,hkv=2,s=3,skv=5,d=4", pats[pi]);
        snprintf(ms, sizeof ms, "%s:b=2,h=6,s=3,skv=5,d=4", pats[pi]);
        fc_problem g = parse_ok(gs), m = parse_ok(ms);
        fc_workload wg, wm;
        fc_err e;
        CHECK(fc_workload_create(&g, 3, 0, &wg, &e) == 0);
        CHECK(fc_workload_create(&m, 4, 0, &wm, &e) == 0);
        memcpy(wm.t[FC_ATT_TQ].data, wg.t[FC_ATT_TQ].data, wg.t[FC_ATT_TQ].n * sizeof(float));
        size_t per = 5 * 4; /* skv·d of one head */
        for (int t = FC_ATT_TK; t <= FC_ATT_TV; t++)
            for (size_t n = 0; n < 12 && wg.t[t].n; n++) /* query head n of m: key/value head n / 3 of g */
                memcpy(wm.t[t].data + n * per, wg.t[t].data + (n / 3) * per, per * sizeof(float));
        CHECK(wg.out_n == wm.out_n);
        const fc_family *f = fc_family_of(g.pat);
        for (size_t i = 0; i < wg.out_n; i++) {
            double a = f->reference(&g, &wg, i), b = f->reference(&m, &wm, i);
            CHECK_MSG(a == b, "%s element %zu: %g vs %g", gs, i, a, b);
        }
        fc_workload_free(&wg);
        fc_workload_free(&wm);
    }
}

/* Causal, aligned at the end: query i of s sees keys j <= i + skv − s. A decode step
 * (s = 1) sees every key, as without the mask; chunked prefill by hand. */
static void reference_causal_alignment(void)
{
    fc_problem c = parse_ok("qk_softmax:b=1,h=2,hkv=1,s=1,skv=7,d=4,causal=1");
    fc_problem u = parse_ok("qk_softmax:b=1,h=2,hkv=1,s=1,skv=7,d=4");
    fc_workload w;
    fc_err e;
    CHECK(fc_workload_create(&c, 8, 0, &w, &e) == 0);
    for (size_t i = 0; i < w.out_n; i++)
        CHECK(fc_family_attention.reference(&c, &w, i) == fc_family_attention.reference(&u, &w, i));
    fc_workload_free(&w);

    /* s = 3 queries after 2 cached keys (skv = 5): query i sees keys 0 .. i + 2 */
    fc_problem p = parse_ok("qk_softmax:b=1,h=1,s=3,skv=5,d=4,causal=1");
    CHECK(fc_workload_create(&p, 9, 0, &w, &e) == 0);
    const float *q = w.t[FC_ATT_TQ].data, *k = w.t[FC_ATT_TK].data;
    for (int i = 0; i < 3; i++) {
        double logit[5], mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i + 2; j++) {
            logit[j] = 0;
            for (int x = 0; x < 4; x++) logit[j] += (double)q[i * 4 + x] * k[j * 4 + x];
            logit[j] /= 2.0; /* √d */
            mx = fmax(mx, logit[j]);
        }
        for (int j = 0; j <= i + 2; j++) sum += exp(logit[j] - mx);
        for (int j = 0; j < 5; j++) {
            double want = j <= i + 2 ? exp(logit[j] - mx) / sum : 0.0;
            double got = fc_family_attention.reference(&p, &w, (size_t)(i * 5 + j));
            CHECK_MSG(fabs(got - want) <= 1e-15, "query %d key %d: %g, want %g", i, j, got, want);
        }
    }
    fc_workload_free(&w);
}

/* Sizes of the tensors: K and V per key/value head, S per query head. */
static void shapes(void)
{
    fc_problem p = parse_ok("attention:b=2,h=8,hkv=2,s=3,skv=11,d=16");
    fc_workload w = {.prob = &p};
    fc_family_attention.shapes(&p, &w);
    CHECK(w.t[FC_ATT_TQ].n == 2 * 8 * 3 * 16 && w.t[FC_ATT_TK].n == 2 * 2 * 11 * 16 &&
          w.t[FC_ATT_TV].n == 2 * 2 * 11 * 16);
    CHECK(w.out_n == 2 * 8 * 3 * 16 && w.out_row == 16 && w.inter_n == 2 * 8 * 3 * 11);
    p = parse_ok("qk_softmax:b=2,h=8,hkv=2,s=3,skv=11,d=16");
    fc_family_attention.shapes(&p, &w);
    CHECK(w.t[FC_ATT_TV].n == 0 && w.out_n == 2 * 8 * 3 * 11 && w.out_row == 11);
    /* the longest sum: the softmax and P·V run over skv */
    CHECK(fc_family_attention.reduction(&p) == 16);
    p = parse_ok("attention:b=1,h=8,hkv=2,s=1,skv=4096,d=128");
    CHECK(fc_family_attention.reduction(&p) == 4096);
}

/* A NaN score stays NaN through the fused softmax (the vector e^x's clamps keep it,
 * at every ISA's width), its row all NaN as the float64 reference's, the other rows
 * finite and summing to 1; a row past e^88 is no NaN. */
static void nan_scores_stay_nan(void)
{
    enum { S = 3, SKV = 40, D = 8 };
    const fc_att_geom g = {.bkv = 1, .g = 1, .s = S, .skv = SKV, .d = D, .causal = false};
    float q[S * D], k[SKV * D], p[S * SKV];
    for (int i = 0; i < S * D; i++) q[i] = 0.25f * (float)((i * 7) % 5) - 0.5f;
    for (int i = 0; i < SKV * D; i++) k[i] = 0.125f * (float)((i * 11) % 9) - 0.5f;
    q[1 * D + 3] = NAN;         /* row 1: every score NaN */
    for (int i = 0; i < D; i++) /* row 2: scores far past 88 */
        q[2 * D + i] = 1e4f;
    fc_cpu_att_qk_softmax(&g, q, k, p);
    int nan1 = 0, bad = 0;
    for (int r = 0; r < S; r++) {
        double sum = 0;
        for (int j = 0; j < SKV; j++) {
            const float x = p[r * SKV + j];
            if (r == 1) nan1 += isnan(x);
            else {
                bad += !isfinite(x) || x < 0;
                sum += x;
            }
        }
        if (r != 1) CHECK_MSG(fabs(sum - 1) < 1e-4, "row %d sums to %.6f", r, sum);
    }
    CHECK_MSG(nan1 == SKV, "a NaN row gave %d NaN probabilities of %d", nan1, SKV);
    CHECK_MSG(bad == 0, "%d probabilities not finite or negative in the finite rows", bad);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(strings_print_every_dim),
                                   T(nan_scores_stay_nan),
                                   T(checks),
                                   T(cost_on_paper),
                                   T(reference_maps_query_heads_to_kv_heads),
                                   T(reference_causal_alignment),
                                   T(shapes)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
