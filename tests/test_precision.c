/* test_precision.c — host rounding to bf16, fp16 and tf32: every 16-bit pattern
 * round-trips, ties go to even, values just off a half-way point go to the nearer
 * neighbour, NaN and Inf survive, overflow gives Inf, subnormals are kept; and the
 * workload holds its inputs (folded weights included) rounded to the dtype. */
#include "pattern.h"
#include "precision.h"
#include "test.h"
#include "util.h"

#include <float.h>
#include <time.h>

static uint64_t g_seed;

static uint32_t bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

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
    CHECK_MSG(bits(fn(mid)) == bits(lo_even ? lo : hi), "%s: tie %a between %a and %a gave %a", what, mid, lo, hi, fn(mid));
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
    CHECK(r_fp16(0x1p-25f) == 0.0f);                /* a tie, to the even zero */
    CHECK(r_fp16(0x1.000002p-25f) == 0x1p-24f);    /* just above half */
    CHECK(r_fp16(3 * 0x1p-25f) == 2 * 0x1p-24f);   /* a tie, to the even 2 */
    CHECK(r_fp16(-5 * 0x1p-25f) == -2 * 0x1p-24f); /* a tie, to the even 2 */
    CHECK(signbit(r_fp16(-0x1p-30f)));
    /* bf16 and tf32 keep float's own subnormals, rounded to their mantissas */
    float sub = from_bits(0x00012345u);
    CHECK(bits(r_bf16(sub)) == 0x00010000u);
    CHECK(bits(fc_round_tf32(sub)) == 0x00012000u);
    CHECK(bits(fc_round_tf32(from_bits(0x00013000u))) == 0x00014000u); /* a tie, to even */
    CHECK(bits(r_bf16(from_bits(0x00018000u))) == 0x00020000u);         /* a tie, to even */
    CHECK(bits(r_bf16(from_bits(0x00007fffu))) == 0);
    /* the largest subnormal of bf16 rounds up into the normals */
    CHECK(bits(r_bf16(from_bits(0x007fffffu))) == 0x00800000u);
}

/* The workload's inputs, and the folded weights and bias the fused conv uploads,
 * are held as the dtype holds them; fp32 inputs are left alone. */
static void workload_rounds_inputs(void)
{
    static const char *const probs[] = {"conv_bn_relu:n=1,c=5,h=6,w=6,k=4,r=3,s=3,pad=1,layout=nhwc",
                                        "linear_residual_relu:m=9,k=17,n=5", "attention:b=1,h=2,s=9,d=8"};
    static const uint32_t low[FC_NDTYPES] = {[FC_FP32] = 0, [FC_TF32] = 0x1fffu, [FC_BF16] = 0xffffu, [FC_FP16] = 0x1fffu};
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
                    if (dt != FC_FP32 && bits(x) & low[dt]) CHECK_MSG(0, "%s %s[%zu] = %a not rounded", probs[pi],
                                                                     w.t[t].name, i, x);
                    if (dt == FC_FP16) CHECK(bits(r_fp16(x)) == bits(x));
                    unrounded += (bits(x) & 0xffffu) != 0;
                    total++;
                }
            if (dt == FC_FP32) CHECK_MSG(unrounded > total / 2, "fp32 inputs look rounded (%zu of %zu)", unrounded, total);
            fc_workload_free(&w);
        }
}

int main(int argc, char **argv)
{
    g_seed = (uint64_t)time(NULL);
    if (argc > 1 && argv[1][0] >= '0' && argv[1][0] <= '9') {
        g_seed = strtoull(argv[1], NULL, 10);
        argc = 1;
    }
    printf("seed %llu\n", (unsigned long long)g_seed);
    static const t_case cases[] = {T(every_bf16_round_trips), T(every_fp16_round_trips), T(tf32_round_trips),
                                   T(ties_to_even), T(nan_inf_and_overflow), T(subnormals),
                                   T(workload_rounds_inputs)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
