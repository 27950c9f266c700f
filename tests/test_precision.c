/* test_precision.c — host rounding to bf16, fp16 and tf32: every 16-bit pattern
 * round-trips, ties go to even, values just off a half-way point go to the nearer
 * neighbour, NaN and Inf survive, overflow gives Inf, subnormals are kept; the
 * workload holds its inputs (folded weights included) rounded to the dtype. And the
 * tolerance table: its order (by dtype, by chain) and, on every pattern, a device
 * simulated in float32 staying within half of it. */
#include "pattern.h"
#include "precision.h"
#include "test.h"
#include "util.h"
#include "verify.h"

#include <float.h>
#include <time.h>

static uint64_t g_seed;

typedef union {
    float f;
    uint32_t u;
} fbits;
static uint32_t bits(float x) { return (fbits){.f = x}.u; }
static float from_bits(uint32_t u) { return (fbits){.u = u}.f; }

/* binary16's value from its fields, independently of the code under test */
static double half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0) return sign * ldexp(mant, -24);
    if (exp == 31) return mant ? NAN : sign * INFINITY;
    return sign * ldexp(1024 + mant, exp - 25);
}

static void every_bf16_round_trips(void)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fc_bf16_to_float((uint16_t)h);
        CHECK(bits(f) == h << 16);
        if (isnan(f)) {
            CHECK_MSG(isnan(fc_bf16_to_float(fc_float_to_bf16(f))), "bf16 NaN 0x%04x", h);
            continue;
        }
        CHECK_MSG(fc_float_to_bf16(f) == h, "bf16 0x%04x", h);
        CHECK(bits(fc_round_to_dtype(f, FC_BF16)) == bits(f));
    }
}

static void every_fp16_round_trips(void)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = fc_fp16_to_float((uint16_t)h);
        double want = half_value((uint16_t)h);
        if (isnan(want)) {
            CHECK_MSG(isnan(f) && isnan(fc_fp16_to_float(fc_float_to_fp16(f))), "fp16 NaN 0x%04x", h);
            continue;
        }
        CHECK_MSG((double)f == want && !!signbit(f) == ((h & 0x8000) != 0), "fp16 0x%04x decodes to %g", h, f);
        CHECK_MSG(fc_float_to_fp16(f) == h, "fp16 0x%04x", h);
        CHECK(bits(fc_round_to_dtype(f, FC_FP16)) == bits(f));
    }
}

/* tf32 values (low 13 bits clear) stay; every other float moves to one */
static void tf32_round_trips(void)
{
    fc_rng r;
    fc_rng_seed(&r, g_seed);
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)fc_rng_next(&r);
        float f = from_bits(u & ~0x1fffu);
        if (isnan(f)) continue;
        CHECK_MSG(bits(fc_round_tf32(f)) == bits(f), "tf32 0x%08x", bits(f));
        float g = from_bits(u);
        if (!isnan(g)) CHECK_MSG((bits(fc_round_tf32(g)) & 0x1fffu) == 0, "tf32 of 0x%08x", u);
    }
}

/* Around the half-way point between neighbours lo < hi of a format: the point goes
 * to the one with the even pattern, the floats just below and above it to lo and hi. */
typedef float (*round_fn)(float);
static float r_bf16(float x) { return fc_bf16_to_float(fc_float_to_bf16(x)); }
static float r_fp16(float x) { return fc_fp16_to_float(fc_float_to_fp16(x)); }

static void check_tie(round_fn fn, const char *what, float lo, float hi, bool lo_even)
{
    float mid = (float)(((double)lo + (double)hi) / 2); /* exact: one more bit than the format */
    CHECK_MSG((double)mid == ((double)lo + (double)hi) / 2, "%s: %g..%g has no float midpoint", what, lo, hi);
    float below = nextafterf(mid, lo), above = nextafterf(mid, hi);
    CHECK_MSG(bits(fn(mid)) == bits(lo_even ? lo : hi), "%s: tie %a between %a and %a gave %a", what, mid, lo, hi,
              fn(mid));
    CHECK_MSG(bits(fn(below)) == bits(lo), "%s: %a (just below half-way) gave %a, want %a", what, below, fn(below), lo);
    CHECK_MSG(bits(fn(above)) == bits(hi), "%s: %a (just above half-way) gave %a, want %a", what, above, fn(above), hi);
}

static void ties_to_even(void)
{
    fc_rng r;
    fc_rng_seed(&r, g_seed + 1);
    for (int i = 0; i < 20000; i++) {
        /* neighbours of each format, positive and negative, normal and subnormal */
        uint32_t sign = (i & 1) ? 0x8000u : 0;
        uint16_t b = (uint16_t)(sign | fc_rng_below(&r, 0x7f7f)); /* below the largest finite */
        check_tie(r_bf16, "bf16", fc_bf16_to_float(b), fc_bf16_to_float((uint16_t)(b + 1)), (b & 1) == 0);
        uint16_t h = (uint16_t)(sign | fc_rng_below(&r, 0x7bff));
        check_tie(r_fp16, "fp16", fc_fp16_to_float(h), fc_fp16_to_float((uint16_t)(h + 1)), (h & 1) == 0);
        uint32_t t = ((sign << 16) | (uint32_t)fc_rng_below(&r, 0x7f7fe000u)) & ~0x1fffu;
        check_tie(fc_round_tf32, "tf32", from_bits(t), from_bits(t + 0x2000u), ((t >> 13) & 1) == 0);
    }
    /* the boundaries: the largest subnormal and the smallest normal, and zero */
    check_tie(r_fp16, "fp16", fc_fp16_to_float(0x03ff), fc_fp16_to_float(0x0400), false);
    check_tie(r_fp16, "fp16", 0.0f, 0x1p-24f, true);
    check_tie(r_bf16, "bf16", 0.0f, fc_bf16_to_float(1), true);
    check_tie(fc_round_tf32, "tf32", 0.0f, from_bits(0x2000u), true);
    check_tie(r_fp16, "fp16", 1.0f, 1.0f + 0x1p-10f, true);
    check_tie(r_bf16, "bf16", 1.0f, 1.0f + 0x1p-7f, true);
    check_tie(fc_round_tf32, "tf32", 1.0f, 1.0f + 0x1p-10f, true);
}

static void nan_inf_and_overflow(void)
{
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu};
    for (size_t i = 0; i < FC_ARRAY_LEN(nans); i++) {
        float n = from_bits(nans[i]);
        for (int dt = FC_TF32; dt < FC_NDTYPES; dt++) {
            float x = fc_round_to_dtype(n, (fc_dtype)dt);
            CHECK_MSG(isnan(x) && !!signbit(x) == !!signbit(n), "%s of NaN 0x%08x gave %a", fc_dtype_name((fc_dtype)dt),
                      nans[i], x);
        }
    }
    for (int dt = FC_TF32; dt < FC_NDTYPES; dt++) {
        CHECK(fc_round_to_dtype(INFINITY, (fc_dtype)dt) == INFINITY);
        CHECK(fc_round_to_dtype(-INFINITY, (fc_dtype)dt) == -INFINITY);
        /* FLT_MAX is past half-way to the next power of two in every format here */
        CHECK(fc_round_to_dtype(FLT_MAX, (fc_dtype)dt) == INFINITY);
        CHECK(fc_round_to_dtype(-FLT_MAX, (fc_dtype)dt) == -INFINITY);
    }
    CHECK(r_fp16(65504.0f) == 65504.0f);
    CHECK(r_fp16(65519.99f) == 65504.0f);
    CHECK(r_fp16(65520.0f) == INFINITY);
    CHECK(r_fp16(-1e6f) == -INFINITY);
    CHECK(fc_float_to_fp16(NAN) == 0x7e00);
    CHECK(fc_round_to_dtype(1.0f + 0x1p-20f, FC_FP32) == 1.0f + 0x1p-20f);
}

static void subnormals(void)
{
    /* fp16: multiples of 2^-24 below 2^-14 */
    CHECK(r_fp16(0x1p-24f) == 0x1p-24f);
    CHECK(r_fp16(0x1p-25f) == 0.0f);               /* a tie, to the even zero */
    CHECK(r_fp16(0x1.000002p-25f) == 0x1p-24f);    /* just above half */
    CHECK(r_fp16(3 * 0x1p-25f) == 2 * 0x1p-24f);   /* a tie, to the even 2 */
    CHECK(r_fp16(-5 * 0x1p-25f) == -2 * 0x1p-24f); /* a tie, to the even 2 */
    CHECK(signbit(r_fp16(-0x1p-30f)));
    /* bf16 and tf32 keep float's own subnormals, rounded to their mantissas */
    float sub = from_bits(0x00012345u);
    CHECK(bits(r_bf16(sub)) == 0x00010000u);
    CHECK(bits(fc_round_tf32(sub)) == 0x00012000u);
    CHECK(bits(fc_round_tf32(from_bits(0x00013000u))) == 0x00014000u); /* a tie, to even */
    CHECK(bits(r_bf16(from_bits(0x00018000u))) == 0x00020000u);        /* a tie, to even */
    CHECK(bits(r_bf16(from_bits(0x00007fffu))) == 0);
    /* the largest subnormal of bf16 rounds up into the normals */
    CHECK(bits(r_bf16(from_bits(0x007fffffu))) == 0x00800000u);
}

/* The workload's inputs, and the folded weights and bias the fused conv uploads,
 * are held as the dtype holds them; fp32 inputs are left alone. */
static void workload_rounds_inputs(void)
{
    static const char *const probs[] = {"conv_bn_relu:n=1,c=5,h=6,w=6,k=4,r=3,s=3,pad=1,layout=nhwc",
                                        "conv_bn_add_relu:n=1,c=6,h=5,w=5,k=9,g=3,r=3,s=3,pad=1,layout=nchw",
                                        "linear_residual_relu:m=9,k=17,n=5", "attention:b=1,h=2,s=9,d=8"};
    static const uint32_t low[FC_NDTYPES] =
        {[FC_FP32] = 0, [FC_TF32] = 0x1fffu, [FC_BF16] = 0xffffu, [FC_FP16] = 0x1fffu};
    for (size_t pi = 0; pi < FC_ARRAY_LEN(probs); pi++)
        for (int dt = 0; dt < FC_NDTYPES; dt++) {
            fc_problem p;
            fc_err e;
            CHECK(fc_problem_parse(probs[pi], NULL, &p, &e) == 0);
            p.dtype = (fc_dtype)dt;
            fc_workload w;
            CHECK(fc_workload_create(&p, g_seed, 0, &w, &e) == 0);
            size_t unrounded = 0, total = 0;
            for (int t = 0; t < w.nt; t++)
                for (size_t i = 0; i < w.t[t].n; i++) {
                    float x = w.t[t].data[i];
                    CHECK(x != 0.0f && isfinite(x));
                    if (dt != FC_FP32 && bits(x) & low[dt])
                        CHECK_MSG(0, "%s %s[%zu] = %a not rounded", probs[pi], w.t[t].name, i, x);
                    if (dt == FC_FP16) CHECK(bits(r_fp16(x)) == bits(x));
                    unrounded += (bits(x) & 0xffffu) != 0;
                    total++;
                }
            if (dt == FC_FP32)
                CHECK_MSG(unrounded > total / 2, "fp32 inputs look rounded (%zu of %zu)", unrounded, total);
            fc_workload_free(&w);
        }
}

/* ---------------------------------------------------------------- the tolerance table */

static double tol_of(const char *prob, fc_dtype dt)
{
    fc_problem p;
    fc_err e;
    if (fc_problem_parse(prob, NULL, &p, &e) != 0) {
        CHECK_MSG(0, "%s: %s", prob, e.msg);
        return NAN;
    }
    p.dtype = dt;
    return fc_problem_tolerance(&p);
}

#define LIN "m=64,k=512,n=64"
#define CONV "n=1,c=64,h=8,w=8,k=64,r=3,s=3,pad=1"
#define ATT "b=1,h=8,s=512,d=64"
#define NORM "m=64,n=4096"
#define HEADS "m=64,h=32,d=128"

/* dims of a pattern's family for the table */
static const char *family_dims(const fc_pattern *pat)
{
    switch (pat->family) {
    case FC_FAM_LINEAR: return LIN;
    case FC_FAM_CONV: return CONV;
    case FC_FAM_NORM: return fc_family_of(pat) == &fc_family_norm_heads ? HEADS : NORM;
    default: return ATT;
    }
}

static void tolerance_order(void)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        const fc_pattern *pat = &fc_patterns[pi];
        const char *dims = family_dims(pat);
        char prob[128];
        snprintf(prob, sizeof prob, "%s:%s", pat->name, dims);
        double t[FC_NDTYPES];
        for (int dt = 0; dt < FC_NDTYPES; dt++) t[dt] = tol_of(prob, (fc_dtype)dt);
        /* fp32's design tolerance at these sizes; then in the order of the formats' precision */
        CHECK_MSG(t[FC_FP32] == 1e-5, "%s fp32 %g", prob, t[FC_FP32]);
        CHECK_MSG(t[FC_FP32] < t[FC_TF32] && t[FC_TF32] < t[FC_FP16] && t[FC_FP16] < t[FC_BF16],
                  "%s: fp32 %g tf32 %g fp16 %g bf16 %g", prob, t[FC_FP32], t[FC_TF32], t[FC_FP16], t[FC_BF16]);
        CHECK_MSG(t[FC_TF32] >= 5e-4 && t[FC_TF32] <= 2e-3, "%s tf32 %g", prob, t[FC_TF32]);
        CHECK_MSG(t[FC_BF16] >= 1e-2 && t[FC_BF16] <= 4e-2, "%s bf16 %g", prob, t[FC_BF16]);
    }
    for (int dt = FC_TF32; dt < FC_NDTYPES; dt++) {
        fc_dtype d = (fc_dtype)dt;
        /* attention looser than linear; a longer chain never tighter */
        CHECK(tol_of("attention:" ATT, d) > tol_of("linear_bias:" LIN, d));
        CHECK(tol_of("attention:" ATT, d) > tol_of("qk_scale:" ATT, d));
        CHECK(tol_of("attention:" ATT, d) >= tol_of("qk_softmax:" ATT, d));
        CHECK(tol_of("qk_softmax:" ATT, d) >= tol_of("qk_scale:" ATT, d));
        CHECK(tol_of("linear_residual_relu:" LIN, d) >= tol_of("linear_bias_relu:" LIN, d));
        CHECK(tol_of("linear_bias_relu:" LIN, d) >= tol_of("linear_bias:" LIN, d));
        CHECK(tol_of("conv_bn_relu:" CONV, d) >= tol_of("conv_bn:" CONV, d));
        /* a layer norm magnifies the write before it; RMSNorm does not */
        CHECK(tol_of("add_layernorm:" NORM, d) > tol_of("add_rmsnorm:" NORM, d));
        CHECK(tol_of("conv_bn_add_relu:" CONV, d) >= tol_of("conv_bn_relu:" CONV, d));
        /* groups shorten the sum, never lengthen it */
        CHECK(tol_of("conv_bn_relu:" CONV ",g=8", d) <= tol_of("conv_bn_relu:" CONV, d));
        if (d != FC_TF32) CHECK(tol_of("qk_softmax:" ATT, d) > 1.5 * tol_of("qk_scale:" ATT, d));
    }
    /* the softmax's term grows with the keys per row (skv) and levels off by 2048 */
    for (int dt = FC_BF16; dt <= FC_FP16; dt++) {
        double prev = 0;
        for (int skv = 8; skv <= 65536; skv *= 4) {
            char prob[96];
            snprintf(prob, sizeof prob, "qk_softmax:b=1,h=1,s=1,skv=%d,d=64", skv);
            double t = tol_of(prob, (fc_dtype)dt);
            CHECK_MSG(t >= prev, "skv=%d: %g after %g", skv, t, prev);
            prev = t;
        }
        CHECK(tol_of("attention:b=1,h=8,s=1,skv=65536,d=64", (fc_dtype)dt) <
              1.01 * tol_of("attention:b=1,h=8,s=1,skv=2048,d=64", (fc_dtype)dt));
        CHECK(tol_of("attention:b=1,h=8,s=1,skv=512,d=64", (fc_dtype)dt) >
              1.1 * tol_of("attention:b=1,h=8,s=1,skv=32,d=64", (fc_dtype)dt));
        /* hkv changes nothing in the arithmetic */
        CHECK(tol_of("attention:b=1,h=8,hkv=2,s=64,skv=512,d=64", (fc_dtype)dt) ==
              tol_of("attention:b=1,h=8,s=64,skv=512,d=64", (fc_dtype)dt));
    }
    /* the simulated 8.6e-3 of the unfused bf16 attention fits twice over */
    CHECK(tol_of("attention:b=4,h=16,s=4096,d=128", FC_BF16) >= 2 * 8.6e-3);
    /* the sum's length: fp32 grows as √k once accumulation passes 1e-5, never shrinks */
    double prev = 0;
    for (int k = 1 << 10; k <= 1 << 24; k *= 4) {
        char prob[96];
        snprintf(prob, sizeof prob, "linear_bias:m=1,k=%d,n=1", k);
        double t = tol_of(prob, FC_FP32);
        CHECK_MSG(t >= prev, "k=%d: %g after %g", k, t, prev);
        prev = t;
    }
    CHECK(tol_of("linear_bias:m=1,k=16777216,n=1", FC_FP32) > 1e-4);
    CHECK(tol_of("linear_bias:m=1,k=16384,n=1", FC_FP32) == 1e-5);
}

/* ---------------------------------------------------------------- simulated devices
 *
 * A device's arithmetic in float32 on the host. The unfused chain runs op by op,
 * each accumulating in fp32 and writing its result in the storage type (bf16, fp16;
 * fp32 for tf32), a conv's bias added by a call of its own; the fused form keeps
 * everything in registers, runs the conv on the folded weights and writes once. P
 * enters P·V as the tensor core reads it: tf32 truncated (Hopper), bf16 and fp16
 * rounded. The norms sum their rows in float; the fused add_rmsnorm normalizes the
 * unrounded h and writes both outputs once; the rotary table is float. */

typedef struct sim {
    const fc_problem *p;
    const fc_workload *w;
    bool fused;
    const float *gemm_out; /* the GEMM's output, where a gated unit's mul reads its up half */
} sim;

static float store(const sim *s, float x)
{
    fc_dtype dt = s->p->dtype;
    return dt == FC_BF16 || dt == FC_FP16 ? fc_round_to_dtype(x, dt) : x;
}

static float p_operand(const sim *s, float x)
{
    if (s->p->dtype != FC_TF32) return store(s, x);
    uint32_t u = bits(x) & ~0x1fffu;
    return from_bits(u);
}

static float gelu(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

/* output channel of element i: a linear's column, a conv's k */
static size_t channel(const fc_problem *p, size_t i)
{
    if (p->pat->family == FC_FAM_LINEAR) return i % (size_t)p->d[FC_LIN_N];
    size_t K = (size_t)p->d[FC_CONV_K], PQ = (size_t)(p->d[FC_CONV_P] * p->d[FC_CONV_Q]);
    return p->layout == FC_NHWC ? i % K : (i / PQ) % K;
}

/* y = x·Wᵀ [M, N'] (N' = 2N for a gated unit); x is the prologue's output where
 * there is one, entering the GEMM rounded to nearest in the operand type */
static size_t sim_gemm(const sim *s, const float *prologue, float *y)
{
    const int64_t *d = s->p->d;
    size_t M = (size_t)d[FC_LIN_M], K = (size_t)d[FC_LIN_K], N = (size_t)fc_linear_gemm_n(s->p);
    const float *x = prologue ? prologue : s->w->t[FC_LIN_TX].data, *W = s->w->t[FC_LIN_TW].data;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            float acc = 0;
            for (size_t k = 0; k < K; k++) {
                float a = prologue ? fc_round_to_dtype(x[i * K + k], s->p->dtype) : x[i * K + k];
                acc += a * W[j * K + k];
            }
            y[i * N + j] = acc;
        }
    return M * N;
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* conv with the original weights (unfused: then its bias, written apart) or the
 * folded ones and their bias (fused); output channel k sees its group's c/g inputs */
static void sim_conv(const sim *s, float *y)
{
    const int64_t *d = s->p->d;
    int64_t C = d[FC_CONV_C], H = d[FC_CONV_H], Wd = d[FC_CONV_W], K = d[FC_CONV_K], R = d[FC_CONV_R];
    int64_t Cg = C / d[FC_CONV_G], Kg = K / d[FC_CONV_G];
    int64_t S = d[FC_CONV_S], P = d[FC_CONV_P], Q = d[FC_CONV_Q], st = d[FC_CONV_STRIDE], pad = d[FC_CONV_PAD];
    bool nhwc = s->p->layout == FC_NHWC;
    const float *x = s->w->t[FC_CONV_TX].data;
    const float *W = s->w->t[s->fused ? FC_CONV_TWF : FC_CONV_TW].data;
    const float *b = s->w->t[s->fused ? FC_CONV_TBF : FC_CONV_TB].data;
    for (int64_t n = 0; n < d[FC_CONV_N]; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oy = 0; oy < P; oy++)
                for (int64_t ox = 0; ox < Q; ox++) {
                    float acc = 0;
                    for (int64_t cl = 0; cl < Cg; cl++)
                        for (int64_t r = 0; r < R; r++)
                            for (int64_t t = 0; t < S; t++) {
                                int64_t iy = oy * st - pad + r, ix = ox * st - pad + t, c = k / Kg * Cg + cl;
                                if (iy < 0 || iy >= H || ix < 0 || ix >= Wd) continue;
                                int64_t xi = nhwc ? ((n * H + iy) * Wd + ix) * C + c : ((n * C + c) * H + iy) * Wd + ix;
                                acc += x[xi] * W[((k * Cg + cl) * R + r) * S + t];
                            }
                    int64_t yi = nhwc ? ((n * P + oy) * Q + ox) * K + k : ((n * K + k) * P + oy) * Q + ox;
                    y[yi] = s->fused ? acc + b[k] : store(s, store(s, acc) + b[k]);
                }
}

/* Shapes of an attention problem: B query heads of s rows, skv keys, d, and g query
 * heads per key/value head (query head n reads key/value head n / g). */
typedef struct att_dims {
    size_t B, S, SKV, D, G;
} att_dims;

static att_dims att(const fc_problem *p)
{
    const int64_t *d = p->d;
    return (att_dims){(size_t)(d[FC_ATT_B] * d[FC_ATT_H]), (size_t)d[FC_ATT_S], (size_t)d[FC_ATT_SKV],
                      (size_t)d[FC_ATT_D], (size_t)(d[FC_ATT_H] / d[FC_ATT_HKV])};
}

/* S = Q·Kᵀ per query head */
static void sim_qk(const sim *s, float *S)
{
    att_dims a = att(s->p);
    const float *q = s->w->t[FC_ATT_TQ].data, *k = s->w->t[FC_ATT_TK].data;
    for (size_t h = 0; h < a.B; h++)
        for (size_t i = 0; i < a.S; i++)
            for (size_t j = 0; j < a.SKV; j++) {
                float acc = 0;
                for (size_t e = 0; e < a.D; e++)
                    acc += q[(h * a.S + i) * a.D + e] * k[((h / a.G) * a.SKV + j) * a.D + e];
                S[(h * a.S + i) * a.SKV + j] = acc;
            }
}

/* softmax over each row's skv logits */
static void sim_softmax(const sim *s, float *S)
{
    att_dims a = att(s->p);
    for (size_t r = 0; r < a.B * a.S; r++) {
        float *x = S + r * a.SKV, mx = -INFINITY, sum = 0;
        for (size_t j = 0; j < a.SKV; j++) mx = fmaxf(mx, x[j]);
        for (size_t j = 0; j < a.SKV; j++) sum += x[j] = expf(x[j] - mx);
        for (size_t j = 0; j < a.SKV; j++) x[j] /= sum;
    }
}

static void sim_pv(const sim *s, const float *P, float *O)
{
    att_dims a = att(s->p);
    const float *v = s->w->t[FC_ATT_TV].data;
    for (size_t h = 0; h < a.B; h++)
        for (size_t i = 0; i < a.S; i++)
            for (size_t e = 0; e < a.D; e++) {
                float acc = 0;
                for (size_t j = 0; j < a.SKV; j++)
                    acc += p_operand(s, P[(h * a.S + i) * a.SKV + j]) * v[((h / a.G) * a.SKV + j) * a.D + e];
                O[(h * a.S + i) * a.D + e] = acc;
            }
}

/* norm family: rows of `len` (a row of n, or a head of d) */
static size_t norm_rows(const sim *s, size_t *len)
{
    const int64_t *d = s->p->d;
    bool heads = fc_pattern_has_op(s->p->pat, FC_OP_HEAD_RMSNORM);
    *len = (size_t)(heads ? d[FC_NORM_D] : d[FC_NORM_N]);
    return (size_t)(d[FC_NORM_M] * d[FC_NORM_N]) / *len;
}

/* layer norm (beta non-NULL) or RMSNorm of each row, the sums in float */
static void sim_norm(const sim *s, const float *h, float *y, bool layer)
{
    size_t len, rows = norm_rows(s, &len);
    const float *g = s->w->t[FC_NORM_TGAMMA].data, *b = s->w->t[FC_NORM_TBETA].data;
    for (size_t r = 0; r < rows; r++) {
        const float *x = h + r * len;
        float mean = 0, sq = 0;
        if (layer) {
            for (size_t j = 0; j < len; j++) mean += x[j];
            mean /= (float)len;
        }
        for (size_t j = 0; j < len; j++) sq += (x[j] - mean) * (x[j] - mean);
        float rstd = 1.0f / sqrtf(sq / (float)len + (float)(layer ? FC_LN_EPS : FC_RMS_EPS));
        for (size_t j = 0; j < len; j++) y[r * len + j] = (x[j] - mean) * rstd * g[j] + (layer ? b[j] : 0.0f);
    }
}

/* rotate-half rotary embedding of each head, with the float table */
static void sim_rope(const sim *s, const float *a, float *y)
{
    size_t D, rows = norm_rows(s, &D), H = (size_t)s->p->d[FC_NORM_H], half = D / 2;
    float *cs = fc_xmalloc((size_t)s->p->d[FC_NORM_M] * D * sizeof(float));
    fc_rope_table(s->p->d[FC_NORM_M], (int64_t)D, cs);
    for (size_t r = 0; r < rows; r++) {
        const float *c = cs + r / H * D, *x = a + r * D;
        for (size_t i = 0; i < half; i++) {
            y[r * D + i] = x[i] * c[i] - x[i + half] * c[half + i];
            y[r * D + half + i] = x[i + half] * c[i] + x[i] * c[half + i];
        }
    }
    free(cs);
}

/* One op from cur into dst (n elements when elementwise); the elements it wrote, 0
 * for an op it cannot simulate. */
static size_t sim_op(sim *s, fc_op op, const float *cur, float *dst, size_t n)
{
    const fc_problem *p = s->p;
    const fc_workload *w = s->w;
    size_t N = p->pat->family == FC_FAM_LINEAR ? (size_t)p->d[FC_LIN_N] : 0;
    switch (op) {
    case FC_OP_GEMM: s->gemm_out = dst; return sim_gemm(s, cur, dst);
    case FC_OP_GELU_IN:
        for (size_t i = 0; i < w->t[FC_LIN_TX].n; i++) dst[i] = gelu(w->t[FC_LIN_TX].data[i]);
        return w->t[FC_LIN_TX].n;
    case FC_OP_SILU: /* the gate half of [M, 2N] into [M, N] */
        for (size_t i = 0; i < w->out_n; i++) dst[i] = silu(cur[i / N * 2 * N + i % N]);
        return w->out_n;
    case FC_OP_GLU_MUL:
        for (size_t i = 0; i < n; i++) dst[i] = cur[i] * s->gemm_out[i / N * 2 * N + N + i % N];
        return n;
    case FC_OP_CONV: sim_conv(s, dst); break;
    case FC_OP_QK: sim_qk(s, dst); break;
    case FC_OP_PV: sim_pv(s, cur, dst); break;
    case FC_OP_SOFTMAX:
        memcpy(dst, cur, n * sizeof *dst);
        sim_softmax(s, dst);
        break;
    case FC_OP_BIAS:
        for (size_t i = 0; i < n; i++) dst[i] = cur[i] + w->t[FC_LIN_TB].data[channel(p, i)];
        break;
    case FC_OP_RESID: {
        const float *r = w->t[p->pat->family == FC_FAM_CONV ? FC_CONV_TR : FC_LIN_TR].data;
        for (size_t i = 0; i < n; i++) dst[i] = cur[i] + r[i];
        break;
    }
    case FC_OP_RELU:
        for (size_t i = 0; i < n; i++) dst[i] = cur[i] > 0 ? cur[i] : 0;
        break;
    case FC_OP_GELU:
        for (size_t i = 0; i < n; i++) dst[i] = gelu(cur[i]);
        break;
    case FC_OP_BN:
        for (size_t i = 0; i < n; i++) {
            size_t k = channel(p, i);
            float g = w->t[FC_CONV_TGAMMA].data[k] / sqrtf(w->t[FC_CONV_TVAR].data[k] + (float)FC_BN_EPS);
            dst[i] = s->fused ? cur[i] : (cur[i] - w->t[FC_CONV_TMEAN].data[k]) * g + w->t[FC_CONV_TBETA].data[k];
        }
        break;
    case FC_OP_SCALE: { /* causal: query i sees keys j <= i + skv − s */
        att_dims a = att(p);
        float alpha = 1.0f / sqrtf((float)a.D);
        for (size_t i = 0; i < n; i++) {
            size_t row = (i / a.SKV) % a.S, col = i % a.SKV;
            dst[i] = p->d[FC_ATT_CAUSAL] && col > row + (a.SKV - a.S) ? -INFINITY : cur[i] * alpha;
        }
        break;
    }
    case FC_OP_ADD: /* h, which add_rmsnorm keeps as its second output */
        n = (size_t)(p->d[FC_NORM_M] * p->d[FC_NORM_N]);
        for (size_t i = 0; i < n; i++) dst[i] = w->t[FC_NORM_TX].data[i] + w->t[FC_NORM_TR].data[i];
        break;
    case FC_OP_LAYERNORM: sim_norm(s, cur, dst, true); break;
    case FC_OP_RMSNORM: /* y, then h as the add wrote it */
        n = (size_t)(p->d[FC_NORM_M] * p->d[FC_NORM_N]);
        sim_norm(s, cur, dst, false);
        memcpy(dst + n, cur, n * sizeof *dst);
        return 2 * n;
    case FC_OP_HEAD_RMSNORM: sim_norm(s, w->t[FC_NORM_TX].data, dst, false); break;
    case FC_OP_ROPE: sim_rope(s, cur, dst); break;
    default: return 0;
    }
    return n;
}

/* The chain, unfused (every op's result written in the storage type) or fused
 * (written once); the output lands in out. Each op writes a buffer of its own. */
static bool simulate(sim *s, float *out)
{
    const fc_pattern *pat = s->p->pat;
    size_t cap = s->w->out_n > s->w->inter_n ? s->w->out_n : s->w->inter_n;
    float *buf[FC_MAX_OPS] = {NULL};
    const float *cur = NULL;
    bool ok = true;
    for (int i = 0; i < pat->nops && ok; i++) {
        float *dst = buf[i] = fc_xmalloc(cap * sizeof(float));
        bool last = i == pat->nops - 1;
        size_t n = sim_op(s, pat->ops[i], cur, dst, last ? s->w->out_n : s->w->inter_n);
        ok = n > 0;
        if (!ok) CHECK_MSG(0, "no simulation of op '%s' (pattern '%s')", fc_op_name(pat->ops[i]), pat->name);
        if (!s->fused || last)
            for (size_t j = 0; j < n; j++) dst[j] = store(s, dst[j]);
        cur = dst;
    }
    if (ok) memcpy(out, cur, s->w->out_n * sizeof(float));
    for (int i = 0; i < pat->nops; i++) free(buf[i]);
    return ok;
}

/* One form simulated on w, its output in out, checked against ref with tol. */
static bool sim_check(const fc_problem *p, const fc_workload *w, const fc_reference *ref, fc_variant v, double tol,
                      float *out, fc_check *c)
{
    sim s = {p, w, v == FC_FUSED, NULL};
    if (!simulate(&s, out)) return false;
    fc_check_output(ref, out, w->out_n, tol, c);
    return true;
}

/* Every pattern on shapes of its family, in every dtype, both forms: the simulated
 * error is at most half the tolerance (within it below a hundred outputs).
 * dtype_only: the shape's one dtype (-1: all). */
static const struct {
    const char *dims;
    int dtype_only;
} sim_shapes[] = {
    {"m=48,k=512,n=40", -1},
    {"m=5,k=3,n=7", -1},
    {"n=2,c=16,h=10,w=10,k=24,r=3,s=3,pad=1,layout=nhwc", -1},
    {"n=1,c=8,h=11,w=9,k=12,r=3,s=3,stride=2,pad=1,layout=nchw", -1},
    {"n=2,c=16,h=10,w=10,k=16,r=3,s=3,pad=1,layout=nhwc", -1},              /* dwconv_bn_relu: g = c */
    {"n=1,c=12,h=11,w=9,k=12,g=12,r=3,s=3,stride=2,pad=1,layout=nchw", -1}, /* every conv depthwise */
    {"n=1,c=12,h=9,w=9,k=18,g=3,r=3,s=3,pad=1,layout=nhwc", -1},
    {"b=1,h=2,s=128,d=64", -1},
    {"b=1,h=2,s=96,d=128,causal=1", -1},
    {"b=1,h=1,s=1024,d=128", FC_BF16},
    /* grouped-query heads, queries after a cache (causal aligned at the end), decode */
    {"b=1,h=4,hkv=2,s=48,skv=80,d=64,causal=1", -1},
    {"b=1,h=2,hkv=1,s=16,skv=8,d=32", -1},
    {"b=1,h=2,hkv=1,s=1,skv=2048,d=64", -1},
    {"m=7,n=13", -1},
    {"m=24,n=4096", -1},
    {"m=5,h=3,d=10", -1},
    {"m=40,h=8,d=128", -1},
};

static void tolerances_hold_in_simulation(void)
{
    int checked = 0, done[FC_NPATTERNS][FC_NDTYPES] = {{0}};
    double worst = 0;
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        for (size_t si = 0; si < FC_ARRAY_LEN(sim_shapes); si++)
            for (int dt = 0; dt < FC_NDTYPES; dt++) {
                if (sim_shapes[si].dtype_only >= 0 && dt != sim_shapes[si].dtype_only) continue;
                fc_problem p;
                fc_err e;
                if (fc_problem_parse(sim_shapes[si].dims, &fc_patterns[pi], &p, &e) != 0) continue;
                p.dtype = (fc_dtype)dt;
                fc_workload w;
                CHECK(fc_workload_create(&p, g_seed + si, 0, &w, &e) == 0);
                fc_reference ref;
                fc_reference_build(&p, &w, g_seed, &ref);
                double tol = fc_problem_tolerance(&p);
                char ps[256];
                fc_problem_string(&p, ps, sizeof ps);
                float *out = fc_xmalloc(w.out_n * sizeof(float));
                for (int v = 0; v < FC_NVARIANTS; v++) {
                    fc_check c;
                    if (!sim_check(&p, &w, &ref, (fc_variant)v, tol, out, &c)) continue;
                    printf("  %-62s %-7s error %.2e tolerance %.2e (%4.1fx)\n", ps, fc_variant_name((fc_variant)v),
                           c.rel_err, tol, tol / c.rel_err);
                    /* half the tolerance from a hundred outputs on; fewer may use all of it
                     * (swiglu's m = 5, n = 7 in fp16 once went to 51 %) */
                    double need = w.out_n >= 100 ? tol / 2 : tol;
                    CHECK_MSG(c.passed && c.rel_err <= need, "%s %s: simulated error %.3g, tolerance %.3g", ps,
                              fc_variant_name((fc_variant)v), c.rel_err, tol);
                    if (c.rel_err / tol > worst) worst = c.rel_err / tol;
                    done[pi][dt]++;
                    checked++;
                }
                free(out);
                fc_reference_free(&ref);
                fc_workload_free(&w);
            }
    printf("%d simulations; the closest used %.0f%% of its tolerance\n", checked, 100 * worst);
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        for (int dt = 0; dt < FC_NDTYPES; dt++)
            CHECK_MSG(done[pi][dt] >= 2, "%s %s: %d simulations", fc_patterns[pi].name, fc_dtype_name((fc_dtype)dt),
                      done[pi][dt]);
}

/* The factor over few outputs is the chi-square quantile it says: checked against
 * the closed forms P(χ²₁ < x) = erf(√(x/2)) and, for even n = 2k, 1 − e^(−x/2)·Σ_{j<k}
 * (x/2)^j/j!; 3 over many outputs; never rising with n. A single 16-bit output's
 * tolerance bounds nothing (past 1), many outputs' is the problem's; a layer norm
 * counts its rows' length, fp16 its outputs' size. */
static void tolerance_factor_is_the_quantile(void)
{
    double prev = INFINITY;
    for (int n = 1; n <= 80; n++) {
        double f = fc_tolerance_factor(n);
        CHECK_MSG(f >= 3 && f <= prev, "factor %g at n = %d (%g at n - 1)", f, n, prev);
        prev = f;
        if (f <= 3.0 || (n > 1 && n % 2)) continue;
        double x = n / (f * f), cdf;
        if (n == 1) {
            cdf = erf(sqrt(x / 2));
        } else {
            double t = 1, sum = 0;
            for (int j = 0; j < n / 2; j++) {
                sum += t;
                t *= x / 2 / (j + 1);
            }
            cdf = 1 - exp(-x / 2) * sum;
        }
        CHECK_MSG(fabs(cdf / 1e-6 - 1) < 1e-3, "n = %d: factor %g, P(chi2 < %g) = %g", n, f, x, cdf);
    }
    CHECK(fc_tolerance_factor(1) > 1e5);
    CHECK(fabs(fc_tolerance_factor(4) - 37.7) < 0.5);
    CHECK(fc_tolerance_factor(24) == 3.0 && fc_tolerance_factor(1e9) == 3.0);
    fc_problem p;
    fc_err e;
    CHECK(fc_problem_parse("linear_bias_relu:m=1,k=1,n=4,dtype=bf16", NULL, &p, &e) == 0);
    CHECK(fc_problem_tolerance_for(&p, 1, 1) > 1);
    CHECK(fc_problem_tolerance_for(&p, 4, 1) > 10 * fc_problem_tolerance(&p));
    CHECK(fc_problem_tolerance_for(&p, 100, 1) == fc_problem_tolerance(&p));
    CHECK(fc_problem_tolerance_for(&p, INFINITY, INFINITY) == fc_problem_tolerance(&p));
    /* a layer norm's rows of two: one degree of freedom whatever their count */
    CHECK(fc_problem_parse("add_layernorm:m=64,n=2,dtype=bf16", NULL, &p, &e) == 0);
    CHECK(fc_problem_tolerance_for(&p, 128, 1) > 1);
    CHECK(fc_problem_parse("add_layernorm:m=64,n=4096,dtype=bf16", NULL, &p, &e) == 0);
    CHECK(fc_problem_tolerance_for(&p, 1e6, 1) == fc_problem_tolerance(&p));
    /* fp16 outputs held to an absolute 2^-24: wider as they shrink, only in fp16 */
    CHECK(fc_problem_parse("linear_swiglu:m=64,k=64,n=64,dtype=fp16", NULL, &p, &e) == 0);
    CHECK(fc_problem_tolerance_for(&p, 1e4, 1e-6) > 5 * fc_problem_tolerance_for(&p, 1e4, 1));
    CHECK(fc_problem_tolerance_for(&p, 1e4, 1) < 1.001 * fc_problem_tolerance(&p));
    p.dtype = FC_BF16;
    CHECK(fc_problem_tolerance_for(&p, 1e4, 1e-6) == fc_problem_tolerance(&p));
}

/* Single rows, pixels and heads, whose few outputs can all cancel: every pattern in
 * every dtype, both forms, on many fresh inputs, within the tolerance for their
 * count of nonzero outputs. The problem's many-output tolerance fails some of them
 * (counted and printed: the widening is needed). */
static const char *const tiny_shapes[] = {
    "m=1,k=1,n=4",
    "m=1,k=2,n=1",
    "m=2,k=1,n=3",
    "n=1,c=1,h=1,w=2,k=2,r=1,s=1,layout=nhwc",
    "n=1,c=2,h=1,w=2,k=2,g=2,r=1,s=1,layout=nchw",
    "n=1,c=2,h=2,w=1,k=2,r=1,s=1,layout=nhwc", /* dwconv_bn_relu: g = c */
    "b=1,h=1,s=1,d=4",
    "b=1,h=2,hkv=1,s=2,skv=3,d=2,causal=1",
    "m=1,n=4",
    "m=2,n=2",
    "m=1,h=1,d=4",
    "m=1,h=2,d=2",
};

static void few_outputs_hold_in_simulation(void)
{
    enum { DRAWS = 300 };
    int sims = 0, over_many = 0, done[FC_NPATTERNS] = {0};
    double worst = 0;
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        for (size_t si = 0; si < FC_ARRAY_LEN(tiny_shapes); si++) {
            fc_problem p;
            fc_err e;
            if (fc_problem_parse(tiny_shapes[si], &fc_patterns[pi], &p, &e) != 0) continue;
            done[pi]++;
            for (int dt = 0; dt < FC_NDTYPES; dt++)
                for (int draw = 0; draw < DRAWS; draw++) {
                    p.dtype = (fc_dtype)dt;
                    uint64_t seed = g_seed * 7919 + (uint64_t)(pi * 1000 + si) * DRAWS + (uint64_t)draw;
                    fc_workload w;
                    CHECK(fc_workload_create(&p, seed, 0, &w, &e) == 0);
                    fc_reference ref;
                    fc_reference_build(&p, &w, seed, &ref);
                    double tol = fc_reference_tolerance(&p, &ref), many = fc_problem_tolerance(&p);
                    float *out = fc_xmalloc(w.out_n * sizeof(float));
                    for (int v = 0; v < FC_NVARIANTS; v++) {
                        fc_check c;
                        if (!sim_check(&p, &w, &ref, (fc_variant)v, tol, out, &c)) continue;
                        if (!c.passed) { /* the problem's string only for the message */
                            char ps[256];
                            fc_problem_string(&p, ps, sizeof ps);
                            CHECK_MSG(0, "%s %s (draw seed %llu): simulated error %.3g, tolerance %.3g", ps,
                                      fc_variant_name((fc_variant)v), (unsigned long long)seed, c.rel_err, tol);
                        }
                        over_many += c.rel_err > many;
                        if (c.rel_err / tol > worst) worst = c.rel_err / tol;
                        sims++;
                    }
                    free(out);
                    fc_reference_free(&ref);
                    fc_workload_free(&w);
                }
        }
    printf(
        "%d simulations of few outputs; the closest used %.0f%% of its tolerance; %d past the many-output "
        "tolerance\n",
        sims, 100 * worst, over_many);
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        CHECK_MSG(done[pi] >= 1, "%s: no tiny shape simulated", fc_patterns[pi].name);
    CHECK_MSG(over_many > 0, "no simulation of few outputs needed the wider tolerance");
}

int main(int argc, char **argv)
{
    g_seed = (uint64_t)time(NULL);
    if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') {
        g_seed = strtoull(argv[1], NULL, 10);
        argc = 1;
    }
    printf("seed %llu\n", (unsigned long long)g_seed);
    static const t_case cases[] = {T(every_bf16_round_trips),
                                   T(every_fp16_round_trips),
                                   T(tf32_round_trips),
                                   T(ties_to_even),
                                   T(nan_inf_and_overflow),
                                   T(subnormals),
                                   T(workload_rounds_inputs),
                                   T(tolerance_order),
                                   T(tolerances_hold_in_simulation),
                                   T(tolerance_factor_is_the_quantile),
                                   T(few_outputs_hold_in_simulation)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
