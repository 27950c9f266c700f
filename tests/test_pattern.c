/* test_pattern.c — problem strings, FLOPs and bytes on paper, BN folding, op tables
 * and the descriptions built from them. */
#include "backend.h"
#include "pattern.h"
#include "test.h"
#include "verify.h"

#include <strings.h>

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

static void problem_strings(void)
{
    fc_problem p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1");
    CHECK(p.pat->id == FC_P_conv_bn_relu);
    CHECK(p.d[FC_CONV_P] == 56 && p.d[FC_CONV_Q] == 56);
    CHECK(p.d[FC_CONV_STRIDE] == 1);
    CHECK(p.layout == FC_NHWC && p.dtype == FC_FP32);
    char buf[256], buf2[256];
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"), "%s",
              buf);
    fc_problem q = parse_ok(buf);
    fc_problem_string(&q, buf2, sizeof buf2);
    CHECK(!strcmp(buf, buf2));

    p = parse_ok("conv_relu:n=2,c=3,h=11,w=9,k=5,r=3,s=3,stride=2,pad=1,layout=nchw,dtype=bf16");
    CHECK(p.layout == FC_NCHW && p.dtype == FC_BF16);
    CHECK(p.d[FC_CONV_P] == 6 && p.d[FC_CONV_Q] == 5);

    p = parse_ok("attention:b=1,h=2,s=33,d=64,causal=1");
    CHECK(p.d[FC_ATT_CAUSAL] == 1);
    /* k=v for a given pattern */
    fc_err e;
    CHECK(fc_problem_parse("m=7,k=13,n=5", fc_pattern_find("linear_bias"), &p, &e) == 0);
    CHECK(p.d[FC_LIN_M] == 7 && p.d[FC_LIN_K] == 13 && p.d[FC_LIN_N] == 5);
    /* keys regardless of case; the canonical string is lower case */
    p = parse_ok("linear_bias:M=512,K=1024,N=1024,DType=bf16");
    CHECK(p.d[FC_LIN_M] == 512 && p.d[FC_LIN_K] == 1024 && p.d[FC_LIN_N] == 1024 && p.dtype == FC_BF16);
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "linear_bias:m=512,k=1024,n=1024,dtype=bf16"), "%s", buf);
    p = parse_ok("conv_relu:N=1,C=3,H=8,W=8,K=4,Layout=nchw");
    CHECK(p.d[FC_CONV_H] == 8 && p.layout == FC_NCHW);
}

/* Every family's dims are lower case and unique regardless of case, and none is
 * spelled like the keys every problem takes (dtype, layout): keys are matched
 * regardless of case. */
static void dim_names_unique(void)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        const fc_family *f = fc_family_of(&fc_patterns[pi]);
        for (int i = 0; i < f->ndims; i++) {
            const char *a = f->dims[i].name;
            for (const char *c = a; *c; c++) CHECK_MSG(!(*c >= 'A' && *c <= 'Z'), "dim '%s' is not lower case", a);
            CHECK_MSG(strcasecmp(a, "dtype") && strcasecmp(a, "layout"), "dim '%s' is a reserved key", a);
            for (int j = i + 1; j < f->ndims; j++)
                CHECK_MSG(strcasecmp(a, f->dims[j].name), "%s: dims '%s' and '%s' are the same regardless of case",
                          fc_patterns[pi].name, a, f->dims[j].name);
        }
    }
}

/* The norm family's two sets of dims: m, n; and m, h, d with n = h·d derived. */
static void norm_problem_strings(void)
{
    char buf[256];
    fc_problem p = parse_ok("qk_norm_rope:m=512,h=32,d=128");
    CHECK(p.d[FC_NORM_N] == 4096 && p.d[FC_NORM_H] == 32 && p.d[FC_NORM_D] == 128);
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "qk_norm_rope:m=512,h=32,d=128,dtype=fp32"), "%s", buf);
    p = parse_ok("add_rmsnorm:n=4096,m=7,dtype=bf16");
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "add_rmsnorm:m=7,n=4096,dtype=bf16"), "%s", buf);
    CHECK(!strcmp(fc_family_of(p.pat)->name, "norm") &&
          !strcmp(fc_family_of(fc_pattern_find("qk_norm_rope"))->name, "norm"));
    parse_fails("qk_norm_rope:m=4,h=2,d=7", "d=7 must be even");
    parse_fails("qk_norm_rope:m=4,n=64", "unknown dimension 'n'");
    parse_fails("add_layernorm:m=4,n=8,h=2", "unknown dimension 'h'");
    parse_fails("add_layernorm:m=4", "missing dimension 'n'");
    parse_fails("qk_norm_rope:m=1,h=65536,d=65536", "too large");
}

static void problem_string_errors(void)
{
    parse_fails("nope:m=1", "unknown pattern 'nope'");
    parse_fails("nope", "unknown pattern 'nope'");
    parse_fails("m=1,k=2,n=3", "names no pattern");
    parse_fails("linear_bias:m=1,k=2", "missing dimension 'n'");
    parse_fails("linear_bias:m=0,k=1,n=1", "'m=0' out of range");
    parse_fails("linear_bias:m=-3,k=1,n=1", "'m=-3' out of range");
    parse_fails("linear_bias:m=1,k=x,n=1", "bad value 'k=x'");
    parse_fails("linear_bias:m=1,,n=1,k=1", "bad token");
    parse_fails("linear_bias:m=1,k=1,n=1,", "trailing comma");
    parse_fails("linear_bias:m=1,k", "bad token 'k'");
    parse_fails("linear_bias:m=1,k=1,n=1,q=2", "unknown dimension 'q'");
    parse_fails("linear_bias:m=1,m=2,k=1,n=1", "given twice");
    parse_fails("linear_bias:m=1,M=2,k=1,n=1", "given twice");
    parse_fails("linear_bias:m=1,k=1,n=1,layout=nhwc", "has no layout");
    parse_fails("linear_bias:m=1,k=1,n=1,dtype=fp64", "unknown dtype 'fp64'");
    parse_fails("conv_relu:n=1,c=1,h=4,w=4,k=1,layout=chwn", "unknown layout 'chwn'");
    parse_fails("linear_bias:m=99999999999,k=1,n=1", "out of range");
    parse_fails("linear_bias:m=2147483647,k=2147483647,n=2147483647", "too large");
    parse_fails("conv_relu:n=2147483647,c=2147483647,h=2147483647,w=2,k=1,r=1,s=1", "too large");
    parse_fails("conv_relu:n=1,c=1,h=2,w=2,k=1,r=5,s=5", "larger than the padded input");
    parse_fails("conv_relu:n=1,c=1,h=8,w=8,k=1,r=3,s=3,pad=3", "padding");
    parse_fails("qk_scale:b=1,h=1,s=8,d=8,causal=1", "causal=1 needs a softmax");
    parse_fails("attention:b=1,h=1,s=8,d=8,causal=2", "out of range");
}

/* FLOPs and bytes against numbers worked out by hand (see the comments). */
static void cost_on_paper(void)
{
    fc_cost c = {0};
    fc_problem p = parse_ok("linear_bias_relu:m=128,k=512,n=512");
    fc_family_of(p.pat)->cost(&p, &c);
    /* 2·128·512·512 + 128·512 (bias) + 128·512 (relu) */
    CHECK_NEAR(c.flops, 67239936.0, 0);
    /* gemm (65536+262144+65536)·4 + bias (2·65536+512)·4 + relu 2·65536·4 */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 1572864.0 + 526336.0 + 524288.0, 0);
    /* x, W, b read once, y written once */
    CHECK_NEAR(c.bytes[FC_FUSED], (65536.0 + 262144 + 512 + 65536) * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 2 * 65536.0 * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_FUSED], 0, 0);

    memset(&c, 0, sizeof c);
    p = parse_ok("linear_residual_relu:m=128,k=512,n=512,dtype=bf16");
    fc_family_of(p.pat)->cost(&p, &c);
    /* E = 2; residual adds 3·MN·E unfused and MN·E fused */
    CHECK_NEAR(c.bytes[FC_FUSED], (65536.0 + 262144 + 512 + 65536 + 65536) * 2, 0);
    CHECK_NEAR(c.bytes[FC_UNFUSED], (393216.0 + 131584 + 3 * 65536 + 2 * 65536) * 2, 0);

    memset(&c, 0, sizeof c);
    p = parse_ok("linear_swiglu:m=4,k=8,n=16");
    fc_family_of(p.pat)->cost(&p, &c);
    /* W [32, 8]: GEMM 2·4·32·8 to [4, 32], silu 4·64, mul 64 */
    CHECK_NEAR(c.flops, 2048 + 256 + 64, 0);
    /* GEMM (32 + 256 + 128)·4, silu 2·64·4 (gate half in, s out), mul 3·64·4 (s, up half, y) */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 1664 + 512 + 768, 0);
    /* x, W read once, y written once; no bias */
    CHECK_NEAR(c.bytes[FC_FUSED], (32 + 256 + 64) * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 2 * 128 * 4, 0); /* two intermediates of [4, 32] allocated */

    memset(&c, 0, sizeof c);
    p = parse_ok("gelu_linear:m=4,k=8,n=16");
    fc_family_of(p.pat)->cost(&p, &c);
    /* gelu on x 8·32, GEMM 2·4·16·8, bias 64 */
    CHECK_NEAR(c.flops, 256 + 1024 + 64, 0);
    /* gelu 2·32·4, GEMM (32 + 128 + 64)·4, bias (2·64 + 16)·4 */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 256 + 896 + 576, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], (32 + 128 + 16 + 64) * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 2 * 64 * 4, 0); /* max(gelu(x) [4, 8], y [4, 16]) twice */

    memset(&c, 0, sizeof c);
    p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1");
    fc_family_of(p.pat)->cost(&p, &c);
    /* Y = 64·56·56 = 200704; conv 2·64·64·T + Y with T = 166² useful taps (56·3 per
     * axis, less one at each edge on the padding), BN 2Y, ReLU Y; with the padding
     * taps, conv is 2·Y·64·9 + Y */
    CHECK_NEAR(c.flops, 2.0 * 64 * 64 * 166 * 166 + 200704 + 401408 + 200704, 0);
    CHECK_NEAR(c.flops_padded, 231411712.0 + 401408 + 200704, 0); /* 2·Y·64·9 + Y = 231411712 */
    /* conv (X 200704 + W 36864 + b 64 + Y)·4, BN (2Y + 4·64)·4, ReLU 2Y·4 */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 1753344.0 + 1606656 + 1605632, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], 1753344.0, 0);

    memset(&c, 0, sizeof c);
    p = parse_ok("attention:b=1,h=2,s=4,d=8");
    fc_family_of(p.pat)->cost(&p, &c);
    /* BH=2, L=16: QK 2·2·16·8, scale 32, softmax 5·32, PV 512 */
    CHECK_NEAR(c.flops, 512 + 32 + 160 + 512, 0);
    /* QK (2·64 + 32)·4, scale 2·32·4, softmax 2·32·4, PV (32 + 2·64)·4 */
    CHECK_NEAR(c.bytes[FC_UNFUSED], 640 + 256 + 256 + 640, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], 4 * 64 * 4, 0);

    memset(&c, 0, sizeof c);
    p = parse_ok("attention:b=1,h=2,s=4,d=8,causal=1");
    fc_family_of(p.pat)->cost(&p, &c);
    /* L = s(s+1)/2 = 10 */
    CHECK_NEAR(c.flops, 320 + 20 + 100 + 320, 0);

    memset(&c, 0, sizeof c);
    p = parse_ok("qk_scale:b=2,h=1,s=3,d=5");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.bytes[FC_FUSED], (2 * 2 * 15.0 + 2 * 9) * 4, 0);

    /* MN = 3·8 = 24, E = 2: add 3·24·2; LN (2·24 + 2·8)·2; fused (3·24 + 2·8)·2 */
    memset(&c, 0, sizeof c);
    p = parse_ok("add_layernorm:m=3,n=8,dtype=bf16");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 24 + 8 * 24, 0);
    CHECK_NEAR(c.bytes[FC_UNFUSED], 144 + 128, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], 176, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 24 * 2, 0);
    /* add_rmsnorm writes y and h: fused (4·24 + 8)·4; its h is an output, no intermediate */
    memset(&c, 0, sizeof c);
    p = parse_ok("add_rmsnorm:m=3,n=8");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.bytes[FC_UNFUSED], (72 + 48 + 8) * 4, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], (96 + 8) * 4, 0);
    CHECK_NEAR(c.peak_inter[FC_UNFUSED], 0, 0);
    /* MN = 2·3·4 = 24, D = 4: norm (48 + 4)·4, rope 48·4 + 4·2·4 (the fp32 table), fused (24·2 + 4)·4 + 32 */
    memset(&c, 0, sizeof c);
    p = parse_ok("qk_norm_rope:m=2,h=3,d=4");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 4 * 24 + 3 * 24, 0);
    CHECK_NEAR(c.bytes[FC_UNFUSED], 208 + 192 + 32, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], 208 + 32, 0);
}

/* The norm references against properties of the math: a layer-normed row has mean
 * zero and unit variance before γ and β, an RMS-normed one unit mean square; the
 * rotary embedding keeps each pair's length and leaves position 0 alone; add_rmsnorm's
 * second output is x + r. */
static void norm_references(void)
{
    fc_err e;
    fc_workload w;
    fc_problem p = parse_ok("add_layernorm:m=3,n=50");
    CHECK(fc_workload_create(&p, 11, 0, &w, &e) == 0);
    const fc_family *f = fc_family_of(p.pat);
    for (size_t row = 0; row < 3; row++) {
        double sum = 0, sq = 0;
        for (size_t j = 0; j < 50; j++) {
            double z = (f->reference(&p, &w, row * 50 + j) - w.t[FC_NORM_TBETA].data[j]) / w.t[FC_NORM_TGAMMA].data[j];
            sum += z;
            sq += z * z;
        }
        CHECK_NEAR(sum / 50, 0, 1e-12);
        CHECK_NEAR(sq / 50, 1, 1e-4); /* ε = 1e-5 against a variance near 0.6 */
    }
    fc_workload_free(&w);

    p = parse_ok("add_rmsnorm:m=2,n=40");
    CHECK(fc_workload_create(&p, 12, 0, &w, &e) == 0);
    f = fc_family_of(p.pat);
    CHECK(w.out_n == 160);
    double sq = 0;
    for (size_t j = 0; j < 40; j++) {
        double z = f->reference(&p, &w, 40 + j) / w.t[FC_NORM_TGAMMA].data[j];
        sq += z * z;
        CHECK(f->reference(&p, &w, 120 + j) == (double)w.t[FC_NORM_TX].data[40 + j] + w.t[FC_NORM_TR].data[40 + j]);
    }
    CHECK_NEAR(sq / 40, 1, 1e-5);
    fc_workload_free(&w);

    p = parse_ok("qk_norm_rope:m=3,h=2,d=8");
    CHECK(fc_workload_create(&p, 13, 0, &w, &e) == 0);
    f = fc_family_of(p.pat);
    for (size_t t = 0; t < 3; t++)
        for (size_t hh = 0; hh < 2; hh++) {
            const float *q = w.t[FC_NORM_TX].data + (t * 2 + hh) * 8, *g = w.t[FC_NORM_TGAMMA].data;
            double ms = 0;
            for (size_t i = 0; i < 8; i++) ms += (double)q[i] * q[i] / 8;
            double inv = 1 / sqrt(ms + FC_RMS_EPS);
            for (size_t i = 0; i < 4; i++) {
                size_t base = (t * 2 + hh) * 8;
                double y0 = f->reference(&p, &w, base + i), y1 = f->reference(&p, &w, base + i + 4);
                double a0 = q[i] * inv * g[i], a1 = q[i + 4] * inv * g[i + 4];
                CHECK_NEAR(y0 * y0 + y1 * y1, a0 * a0 + a1 * a1, 1e-12);
                if (t == 0) CHECK(fabs(y0 - a0) < 1e-15 && fabs(y1 - a1) < 1e-15);
                if (t == 1 && i == 0) CHECK_NEAR(y0, a0 * cos(1.0) - a1 * sin(1.0), 1e-12); /* θ₀ = 1 */
            }
        }
    fc_workload_free(&w);
    float cs[3 * 8];
    fc_rope_table(3, 8, cs);
    CHECK(cs[0] == 1.0f && cs[4] == 0.0f && cs[8 + 4] == (float)sin(1.0));
    CHECK_NEAR(cs[16 + 1], cos(0.2), 1e-7); /* position 2, θ₁ = 10000^(-1/4) = 0.1 */
}

/* Folded weights give the same function as conv → BN (float64 both ways). */
static void bn_folding(void)
{
    const char *probs[] = {"conv_bn_relu:n=2,c=5,h=7,w=6,k=3,r=3,s=3,pad=1,layout=nchw",
                           "conv_bn:n=1,c=4,h=5,w=5,k=7,r=1,s=1,layout=nhwc",
                           "conv_bn_add_relu:n=2,c=6,h=7,w=5,k=9,g=3,r=3,s=3,pad=1,layout=nhwc",
                           "dwconv_bn_relu:n=1,c=5,h=7,w=8,k=5,r=3,s=3,stride=2,pad=1,layout=nchw"};
    for (size_t t = 0; t < FC_ARRAY_LEN(probs); t++) {
        fc_problem p = parse_ok(probs[t]);
        fc_workload w;
        fc_err e;
        CHECK(fc_workload_create(&p, 1234 + t, 0, &w, &e) == 0);
        const int64_t *d = p.d;
        size_t C = (size_t)d[FC_CONV_C], R = (size_t)d[FC_CONV_R], S = (size_t)d[FC_CONV_S];
        size_t K = (size_t)d[FC_CONV_K], P = (size_t)d[FC_CONV_P], Q = (size_t)d[FC_CONV_Q];
        size_t H = (size_t)d[FC_CONV_H], W = (size_t)d[FC_CONV_W], st = (size_t)d[FC_CONV_STRIDE];
        size_t Cg = C / (size_t)d[FC_CONV_G], Kg = K / (size_t)d[FC_CONV_G];
        bool relu = fc_pattern_has_op(p.pat, FC_OP_RELU), resid = fc_pattern_has_op(p.pat, FC_OP_RESID);
        double maxrel = 0;
        for (size_t idx = 0; idx < w.out_n; idx++) {
            size_t n, k, oy, ox;
            if (p.layout == FC_NCHW) {
                ox = idx % Q;
                oy = idx / Q % P;
                k = idx / (Q * P) % K;
                n = idx / (Q * P * K);
            } else {
                k = idx % K;
                ox = idx / K % Q;
                oy = idx / (K * Q) % P;
                n = idx / (K * Q * P);
            }
            double acc = w.t[FC_CONV_TBF].data[k];
            for (size_t cl = 0; cl < Cg; cl++)
                for (size_t r = 0; r < R; r++)
                    for (size_t s = 0; s < S; s++) {
                        long iy = (long)(oy * st) - (long)d[FC_CONV_PAD] + (long)r,
                             ix = (long)(ox * st) - (long)d[FC_CONV_PAD] + (long)s;
                        if (iy < 0 || ix < 0 || iy >= (long)H || ix >= (long)W) continue;
                        size_t c = k / Kg * Cg + cl; /* the group's channels */
                        size_t xi = p.layout == FC_NCHW ? ((n * C + c) * H + (size_t)iy) * W + (size_t)ix
                                                        : ((n * H + (size_t)iy) * W + (size_t)ix) * C + c;
                        acc += (double)w.t[FC_CONV_TX].data[xi] *
                               w.t[FC_CONV_TWF].data[((k * Cg + cl) * R + r) * S + s];
                    }
            if (resid) acc += w.t[FC_CONV_TR].data[idx];
            if (relu && acc < 0) acc = 0;
            double ref = fc_family_of(p.pat)->reference(&p, &w, idx);
            double rel = fabs(acc - ref) / (fabs(ref) + 1e-3);
            if (rel > maxrel) maxrel = rel;
        }
        CHECK_MSG(maxrel < 1e-5, "%s: folded vs unfolded max rel %g", probs[t], maxrel);
        CHECK(w.prepare_ms >= 0);
        fc_workload_free(&w);
    }
}

static void inputs_never_zero_and_seeded(void)
{
    fc_problem p = parse_ok("linear_residual_relu:m=33,k=17,n=9,dtype=bf16");
    fc_workload a, b, c;
    fc_err e;
    CHECK(fc_workload_create(&p, 99, 0, &a, &e) == 0);
    CHECK(fc_workload_create(&p, 99, 0, &b, &e) == 0);
    CHECK(fc_workload_create(&p, 100, 0, &c, &e) == 0);
    for (int t = 0; t < a.nt; t++)
        for (size_t i = 0; i < a.t[t].n; i++) {
            CHECK(a.t[t].data[i] != 0.0f);
            /* bf16-representable: low 16 bits clear */
            uint32_t u;
            memcpy(&u, &a.t[t].data[i], 4);
            CHECK((u & 0xffff) == 0);
        }
    CHECK(memcmp(a.t[FC_LIN_TX].data, b.t[FC_LIN_TX].data, a.t[FC_LIN_TX].n * 4) == 0);
    CHECK(memcmp(a.t[FC_LIN_TX].data, c.t[FC_LIN_TX].data, a.t[FC_LIN_TX].n * 4) != 0);
    fc_workload_free(&a);
    fc_workload_free(&b);
    fc_workload_free(&c);
}

static void memory_guard(void)
{
    fc_problem p = parse_ok("linear_bias:m=4096,k=4096,n=4096");
    fc_workload w;
    fc_err e = {{0}};
    CHECK(fc_workload_create(&p, 1, 1 << 20, &w, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "needs");
    size_t bytes;
    CHECK(fc_problem_host_bytes(&p, &bytes, &e) == 0);
    CHECK(bytes >= 3ull * 4096 * 4096 * 4);
}

/* The sampled reference check catches a wrong element and a NaN. */
static void verification_can_fail(void)
{
    fc_problem p = parse_ok("linear_bias_gelu:m=16,k=8,n=8");
    fc_workload w;
    fc_err e;
    CHECK(fc_workload_create(&p, 5, 0, &w, &e) == 0);
    fc_reference ref;
    fc_reference_build(&p, &w, 5, &ref);
    CHECK(ref.full && ref.n == w.out_n);
    float *out = malloc(w.out_n * sizeof(float));
    for (size_t i = 0; i < w.out_n; i++) out[i] = (float)ref.val[i];
    fc_check c;
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(c.passed && c.trusted && c.nonfinite == 0);
    out[17] += 0.5f;
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(!c.passed);
    CHECK_STR_CONTAINS(c.reason, "relative error");
    out[17] = NAN;
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(!c.passed && c.nonfinite == 1);
    for (size_t i = 0; i < w.out_n; i++) out[i] = 0;
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(!c.passed && !c.trusted);
    free(out);
    fc_reference_free(&ref);
    fc_workload_free(&w);

    /* large output: sampled; the whole first and last row always included */
    p = parse_ok("qk_softmax:b=2,h=4,s=512,d=64");
    CHECK(fc_workload_create(&p, 6, 0, &w, &e) == 0);
    fc_reference_build(&p, &w, 6, &ref);
    CHECK(!ref.full && ref.n >= 1024 && w.out_row == 512);
    CHECK(ref.idx[0] == 0 && ref.idx[ref.n - 1] == w.out_n - 1);
    for (size_t i = 0; i < w.out_row; i++) {
        CHECK(ref.idx[i] == i); /* sorted, so the first row leads */
        CHECK(ref.idx[ref.n - 1 - i] == w.out_n - 1 - i);
    }
    /* an output wrong only in its last row is caught */
    out = fc_xmalloc(w.out_n * sizeof *out);
    for (size_t i = 0; i < ref.n; i++) out[ref.idx[i]] = (float)ref.val[i];
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(c.passed);
    for (size_t i = w.out_n - w.out_row; i < w.out_n; i++) out[i] += 1.0f;
    fc_check_output(&ref, out, w.out_n, 1e-5, &c);
    CHECK(!c.passed);
    free(out);
    fc_reference_free(&ref);
    fc_workload_free(&w);

    /* useful conv FLOPs exclude the taps on zero padding; the padded count is kept */
    fc_cost cost = {0};
    p = parse_ok("conv_relu:n=1,c=1,h=3,w=3,k=1,r=3,s=3,pad=1");
    fc_family_of(p.pat)->cost(&p, &cost);
    /* 3x3 output; valid taps per axis: 2+3+2 = 7, so 49 multiply-adds, not 81 */
    CHECK_NEAR(cost.flops, 2 * 49 + 9 + 9, 1e-9);
    CHECK_NEAR(cost.flops_padded, 2 * 81 + 9 + 9, 1e-9);
}

/* The unfused chain's live intermediates: what the costs charge is what the backends
 * allocate (fc_pattern_live_intermediates intermediates of the family's size). */
static void live_intermediates(void)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        const fc_pattern *pat = &fc_patterns[pi];
        int live = fc_pattern_live_intermediates(pat);
        CHECK(live == (pat->nops >= 3 ? 2 : pat->nops - 1));
        /* op i writes a slot op i − 1 did not, the last op the output; the slots used are the live ones */
        int used = 0, prev = -2;
        for (int i = 0; i < pat->nops; i++) {
            int slot = fc_pattern_chain_slot(pat, i);
            CHECK(i == pat->nops - 1 ? slot == -1 : slot >= 0 && slot < live && slot != prev);
            if (slot >= 0) used |= 1 << slot;
            prev = slot;
        }
        CHECK_MSG(used == (1 << live) - 1, "%s: slots %x", pat->name, used);
        fc_problem p;
        fc_problem_init(&p, pat, FC_BF16);
        const fc_family *f = fc_family_of(pat);
        for (int i = 0; i < f->ndims; i++)
            if (p.d[i] == FC_DIM_REQUIRED) p.d[i] = 6;
        fc_err e;
        CHECK(fc_problem_finish(&p, &e) == 0);
        fc_workload w = {.prob = &p};
        f->shapes(&p, &w);
        fc_cost c = {0};
        f->cost(&p, &c);
        CHECK_MSG(c.peak_inter[FC_UNFUSED] == live * (double)w.inter_n * 2, "%s: %g", pat->name,
                  c.peak_inter[FC_UNFUSED]);
    }
}

static const char *test_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s/%s", (const char *)ctx, fc_variant_name(v), fc_op_name(op));
    return buf;
}

/* Op tables: which patterns they run, the kernel of a fused form, the pieces of each
 * part in chain order, and the names built from them. */
static void op_tables(void)
{
    static const fc_op_impl t[FC_NOPS] = {
        [FC_OP_GEMM] = {"gemm()", FC_FUSE_CALL, "GEMM"},
        [FC_OP_CONV] = {"conv(%s)", FC_FUSE_CALL, "CONV", FC_FUSE_EPILOGUE, "own-bias"},
        [FC_OP_QK] = {"qk()", FC_FUSE_CALL, "QK"},
        [FC_OP_BIAS] = {"bias()", FC_FUSE_EPILOGUE, "bias"},
        [FC_OP_RELU] = {"relu()", FC_FUSE_EPILOGUE, "relu"},
        [FC_OP_BN] = {"bn()", FC_FUSE_FOLD, "+bn"},
        [FC_OP_SCALE] = {"scale()", FC_FUSE_FOLD, "+alpha"},
        [FC_OP_SOFTMAX] = {"softmax()", FC_FUSE_KERNEL, "SOFTMAX[%s]"},
        [FC_OP_PV] = {"pv()", FC_FUSE_KERNEL, "FLASH"},
        [FC_OP_ADD] = {"add()", FC_FUSE_CALL, "ADD"},
        [FC_OP_LAYERNORM] = {"ln()", FC_FUSE_KERNEL, "ADD_LN"},
        [FC_OP_RMSNORM] = {"rms()", FC_FUSE_KERNEL, "ADD_RMS"},
        [FC_OP_HEAD_RMSNORM] = {"head_rms()", FC_FUSE_CALL, "HEAD_RMS"},
        [FC_OP_ROPE] = {"rope()", FC_FUSE_KERNEL, "RMS_ROPE"},
        [FC_OP_SILU] = {"silu()", FC_FUSE_EPILOGUE, "silu"},
        [FC_OP_GLU_MUL] = {"mul()", FC_FUSE_EPILOGUE, "mul"},
        [FC_OP_GELU_IN] = {"gelu()", FC_FUSE_PROLOGUE, "gelu-in"},
    };
    char why[256] = "";
    CHECK(fc_op_table_fits(t, fc_pattern_find("linear_bias_relu"), "test", why, sizeof why));
    CHECK(!fc_op_table_fits(t, fc_pattern_find("linear_residual_relu"), "test", why, sizeof why));
    CHECK_STR_CONTAINS(why, "test has no implementation of op 'residual' (pattern 'linear_residual_relu')");
    CHECK(!fc_op_table_fits(t, fc_pattern_find("linear_bias_gelu"), "test", why, sizeof why));
    fc_op_impl bias_first[FC_NOPS];
    memcpy(bias_first, t, sizeof t);
    bias_first[FC_OP_GEMM].part = FC_FUSE_EPILOGUE;
    CHECK(!fc_op_table_fits(bias_first, fc_pattern_find("linear_bias"), "test", why, sizeof why));
    CHECK_STR_CONTAINS(why, "test cannot fuse pattern 'linear_bias': op 'gemm' is not a call");
    bias_first[FC_OP_GEMM].part = FC_FUSE_CALL;
    bias_first[FC_OP_BIAS].part = FC_FUSE_CALL;
    CHECK(!fc_op_table_fits(bias_first, fc_pattern_find("linear_bias"), "test", why, sizeof why));
    CHECK_STR_CONTAINS(why, "op 'bias' is a call after the first op");
    /* chains the fused forms cannot take in their order */
    static const struct {
        fc_pattern pat;
        const char *why; /* NULL: fits */
    } orders[] = {
        {{.name = "relu_then_bias", .nops = 3, .ops = {FC_OP_GEMM, FC_OP_RELU, FC_OP_BIAS}},
         "op 'bias' follows the epilogue's activation"},
        {{.name = "two_activations", .nops = 3, .ops = {FC_OP_GEMM, FC_OP_RELU, FC_OP_RELU}},
         "op 'relu' follows the epilogue's activation"},
        {{.name = "bn_after_relu", .nops = 3, .ops = {FC_OP_CONV, FC_OP_RELU, FC_OP_BN}},
         "op 'batchnorm' is folded into the call after an epilogue step"},
        {{.name = "bias_after_pv", .nops = 5, .ops = {FC_OP_QK, FC_OP_SCALE, FC_OP_SOFTMAX, FC_OP_PV, FC_OP_BIAS}},
         "op 'bias' follows a kernel of its own"},
        {{.name = "bias_then_relu", .nops = 3, .ops = {FC_OP_GEMM, FC_OP_BIAS, FC_OP_RELU}}, NULL},
        {{.name = "bn_then_relu", .nops = 3, .ops = {FC_OP_CONV, FC_OP_BN, FC_OP_RELU}}, NULL},
        {{.name = "scale_then_kernels", .nops = 4, .ops = {FC_OP_QK, FC_OP_SCALE, FC_OP_SOFTMAX, FC_OP_PV}}, NULL},
        {{.name = "prologue_after_call", .nops = 3, .ops = {FC_OP_GEMM, FC_OP_GELU_IN, FC_OP_BIAS}},
         "op 'gelu_in' is a prologue after the call"},
        {{.name = "only_prologue", .nops = 1, .ops = {FC_OP_GELU_IN}}, "op 'gelu_in' is a prologue of no call"},
        {{.name = "prologue_then_bias", .nops = 2, .ops = {FC_OP_GELU_IN, FC_OP_BIAS}}, "op 'bias' is not a call"},
        {{.name = "prologue_two_calls", .nops = 3, .ops = {FC_OP_GELU_IN, FC_OP_GEMM, FC_OP_QK}},
         "op 'qk' is a call after the first op"},
        {{.name = "silu_mul_relu", .nops = 4, .ops = {FC_OP_GEMM, FC_OP_SILU, FC_OP_GLU_MUL, FC_OP_RELU}}, NULL},
        {{.name = "prologue_gemm_bias_relu", .nops = 4, .ops = {FC_OP_GELU_IN, FC_OP_GEMM, FC_OP_BIAS, FC_OP_RELU}},
         NULL},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(orders); i++) {
        why[0] = 0;
        bool fits = fc_op_table_fits(t, &orders[i].pat, "test", why, sizeof why);
        CHECK_MSG(fits == (orders[i].why == NULL), "%s: fits %d (%s)", orders[i].pat.name, fits, why);
        if (orders[i].why) CHECK_STR_CONTAINS(why, orders[i].why);
    }
    /* every registered pattern fits a table that has all its ops */
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        if (!fc_pattern_has_op(&fc_patterns[pi], FC_OP_RESID) && !fc_pattern_has_op(&fc_patterns[pi], FC_OP_GELU))
            CHECK_MSG(fc_op_table_fits(t, &fc_patterns[pi], "test", why, sizeof why), "%s", why);

    /* a pass of its own after the call: only passes may follow it, and the fused form is two calls */
    fc_op_impl passes[FC_NOPS];
    memcpy(passes, t, sizeof t);
    passes[FC_OP_SILU].part = FC_FUSE_PASS;
    passes[FC_OP_GLU_MUL].part = FC_FUSE_PASS;
    const fc_pattern *sw = fc_pattern_find("linear_swiglu"), *gl = fc_pattern_find("gelu_linear");
    CHECK(fc_op_table_fits(passes, sw, "test", why, sizeof why));
    CHECK(fc_op_table_fused_kernels(passes, sw) == 2 && fc_op_table_fused_kernels(t, sw) == 1);
    CHECK(fc_op_table_kernel(passes, sw) == -1 && fc_op_table_call(passes, sw) == 0);
    static const fc_pattern mul_then_bias = {.name = "pass_then_bias",
                                             .nops = 4,
                                             .ops = {FC_OP_GEMM, FC_OP_SILU, FC_OP_GLU_MUL, FC_OP_BIAS}};
    CHECK(!fc_op_table_fits(passes, &mul_then_bias, "test", why, sizeof why));
    CHECK_STR_CONTAINS(why, "op 'bias' follows a pass of its own");
    passes[FC_OP_GLU_MUL].part = FC_FUSE_EPILOGUE;
    CHECK(!fc_op_table_fits(passes, sw, "test", why, sizeof why));
    CHECK_STR_CONTAINS(why, "op 'glu_mul' follows a pass of its own");
    /* the prologue comes before the call, which is the first op after it */
    CHECK(fc_op_table_call(t, gl) == 1 && fc_op_table_call(t, fc_pattern_find("conv_bn_relu")) == 0);
    CHECK(fc_op_table_count(t, gl, FC_FUSE_PROLOGUE) == 1);
    fc_impl pimpl = {0};
    fc_impl_add_part(&pimpl, t, gl, FC_FUSE_PROLOGUE, "[", ", ", "] ");
    fc_impl_add_op(&pimpl, t, gl->ops[fc_op_table_call(t, gl)], FC_FUSED, NULL, NULL);
    fc_impl_add_part(&pimpl, t, gl, FC_FUSE_EPILOGUE, " + ", ", ", "");
    CHECK_MSG(!strcmp(pimpl.name, "[gelu-in] GEMM + bias"), "'%s'", pimpl.name);

    CHECK(fc_op_table_kernel(t, fc_pattern_find("attention")) == 3);
    CHECK(fc_op_table_kernel(t, fc_pattern_find("qk_softmax")) == 2);
    CHECK(fc_op_table_kernel(t, fc_pattern_find("qk_scale")) == -1);
    CHECK(fc_op_table_kernel(t, fc_pattern_find("qk_norm_rope")) == 1);
    const fc_pattern *cbr = fc_pattern_find("conv_bn_relu"), *cr = fc_pattern_find("conv_relu");
    CHECK(fc_op_table_count(t, cbr, FC_FUSE_EPILOGUE) == 2);
    CHECK(fc_op_table_count(t, cr, FC_FUSE_FOLD) == 0);
    CHECK(!strcmp(fc_op_table_last(t, cbr, FC_FUSE_FOLD), "+bn"));
    CHECK(!strcmp(fc_op_table_last(t, cbr, FC_FUSE_EPILOGUE), "relu"));
    CHECK(fc_op_table_last(t, cr, FC_FUSE_FOLD) == NULL);

    fc_impl impl = {0};
    fc_impl_add_op(&impl, t, FC_OP_CONV, FC_FUSED, NULL, NULL);
    fc_impl_add_part(&impl, t, cbr, FC_FUSE_FOLD, "", "", "");
    CHECK(fc_impl_add_part(&impl, t, cbr, FC_FUSE_EPILOGUE, " [", ", ", "]") == 2);
    CHECK(fc_impl_add_part(&impl, t, cbr, FC_FUSE_KERNEL, " <", ", ", ">") == 0);
    CHECK_MSG(!strcmp(impl.name, "CONV+bn [own-bias, relu]"), "'%s'", impl.name);
    memset(&impl, 0, sizeof impl);
    fc_impl_add_chain(&impl, t, cbr, test_detail, "ctx");
    CHECK_MSG(!strcmp(impl.name, "conv(ctx/unfused/conv) -> bn() -> relu()"), "'%s'", impl.name);
    memset(&impl, 0, sizeof impl);
    fc_impl_add_op(&impl, t, FC_OP_SOFTMAX, FC_FUSED, test_detail, "k");
    CHECK_MSG(!strcmp(impl.name, "SOFTMAX[k/fused/softmax]"), "'%s'", impl.name);
    /* a full name stays terminated */
    memset(&impl, 0, sizeof impl);
    for (int i = 0; i < 200; i++) fc_impl_addf(&impl, "%s", "0123456789");
    fc_impl_add_chain(&impl, t, cbr, test_detail, "ctx");
    CHECK(strlen(impl.name) == sizeof impl.name - 1);
}

/* Groups (g divides c and k, printed only when it is not 1, and not for the
 * depthwise pattern, whose g is c) and the residual: strings, errors, costs. */
static void groups_and_residual(void)
{
    char buf[256], again[256];
    fc_problem p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1,g=4");
    CHECK(p.d[FC_CONV_G] == 4);
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strcmp(buf, "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,g=4,layout=nhwc,dtype=fp32"),
              "%s", buf);
    fc_problem q = parse_ok(buf);
    CHECK(q.d[FC_CONV_G] == 4);
    p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1,g=1");
    fc_problem_string(&p, buf, sizeof buf);
    CHECK_MSG(!strstr(buf, "g="), "%s", buf);
    /* depthwise: g follows c, given or not; the string leaves it out */
    const char *dw[] = {"dwconv_bn_relu:n=1,c=32,h=112,w=112,k=32,pad=1",
                        "dwconv_bn_relu:n=1,c=32,h=112,w=112,k=32,pad=1,g=32"};
    for (size_t i = 0; i < FC_ARRAY_LEN(dw); i++) {
        p = parse_ok(dw[i]);
        CHECK(p.d[FC_CONV_G] == 32 && p.d[FC_CONV_K] == 32);
        fc_problem_string(&p, buf, sizeof buf);
        CHECK_MSG(!strcmp(buf,
                          "dwconv_bn_relu:n=1,c=32,h=112,w=112,k=32,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"),
                  "%s", buf);
        q = parse_ok(buf);
        fc_problem_string(&q, again, sizeof again);
        CHECK(!strcmp(buf, again) && q.d[FC_CONV_G] == 32);
    }
    p = parse_ok("dwconv_bn_relu:n=1,c=1,h=5,w=5,k=1");
    CHECK(p.d[FC_CONV_G] == 1);
    parse_fails("dwconv_bn_relu:n=1,c=32,h=8,w=8,k=64", "is depthwise: k must equal c (got c=32, k=64)");
    parse_fails("dwconv_bn_relu:n=1,c=32,h=8,w=8,k=32,g=8", "is depthwise: g must equal c (got c=32, g=8)");
    parse_fails("conv_bn_relu:n=1,c=6,h=8,w=8,k=8,g=4", "groups 'g=4' must divide c=6 and k=8");
    parse_fails("conv_bn_relu:n=1,c=8,h=8,w=8,k=6,g=4", "must divide");
    parse_fails("conv_bn_relu:n=1,c=8,h=8,w=8,k=8,g=0", "'g=0' out of range");

    /* grouped: the conv of conv_bn_relu at 56x56 with c/g = 16 (166 useful taps per axis);
     * W is k·c/g·r·s = 9216 */
    fc_cost c = {0};
    p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1,g=4");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 2.0 * 64 * 16 * 166 * 166 + 200704 + 401408 + 200704, 0);
    CHECK_NEAR(c.flops_padded, 2.0 * 200704 * 16 * 9 + 200704 + 401408 + 200704, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], (200704.0 + 9216 + 64 + 200704) * 4, 0);
    /* depthwise 112x112x32: 334 useful taps per axis, one input channel each */
    memset(&c, 0, sizeof c);
    p = parse_ok("dwconv_bn_relu:n=1,c=32,h=112,w=112,k=32,pad=1");
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK_NEAR(c.flops, 2.0 * 32 * 334 * 334 + 4 * 401408.0, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], (401408.0 + 288 + 32 + 401408) * 4, 0);
    /* residual: 1x1 64 -> 256 at 56x56, Y = 802816; the add reads y and r and writes y
     * unfused (3Y), the fused form reads r once more (Y) */
    memset(&c, 0, sizeof c);
    p = parse_ok("conv_bn_add_relu:n=1,c=64,h=56,w=56,k=256,r=1,s=1");
    fc_family_of(p.pat)->cost(&p, &c);
    double Y = 802816, X = 200704, Wn = 16384, K = 256;
    CHECK_NEAR(c.flops, 2 * 256 * 64 * 3136.0 + Y + 2 * Y + Y + Y, 0);
    CHECK_NEAR(c.bytes[FC_UNFUSED], ((X + Wn + K + Y) + (2 * Y + 4 * K) + 3 * Y + 2 * Y) * 4, 0);
    CHECK_NEAR(c.bytes[FC_FUSED], (X + Wn + K + Y + Y) * 4, 0);
    CHECK_NEAR(c.op_bytes[2], 3 * Y * 4, 0);
    fc_workload w;
    fc_err e;
    CHECK(fc_workload_create(&p, 3, 0, &w, &e) == 0);
    CHECK(w.t[FC_CONV_TR].n == w.out_n && !strcmp(w.t[FC_CONV_TR].name, "r"));
    fc_workload_free(&w);
    p = parse_ok("conv_bn_relu:n=1,c=4,h=5,w=5,k=4");
    CHECK(fc_workload_create(&p, 3, 0, &w, &e) == 0);
    CHECK(w.t[FC_CONV_TR].n == 0);
    fc_workload_free(&w);
}

/* A conv's FLOPs count the filter taps that land inside the input, output by output:
 * the closed form against that loop over strides, paddings and filters larger than
 * the input; and a problem string naming a billion-wide input costs in no time (the
 * loop's length was the input's: the fuzzer's timeout). */
static double taps_by_loop(int64_t out, int64_t f, int64_t in, int64_t stride, int64_t pad)
{
    double t = 0;
    for (int64_t o = 0; o < out; o++) {
        int64_t lo = o * stride - pad, a = lo < 0 ? 0 : lo, b = lo + f > in ? in : lo + f;
        t += b > a ? (double)(b - a) : 0;
    }
    return t;
}

static void conv_taps_closed_form(void)
{
    int checked = 0;
    for (int h = 1; h <= 9; h++)
        for (int r = 1; r <= 7; r += 2)
            for (int stride = 1; stride <= 3; stride++)
                for (int pad = 0; pad < r; pad++) {
                    if (h + 2 * pad < r) continue;
                    char buf[160];
                    snprintf(buf, sizeof buf, "conv_relu:n=1,c=2,h=%d,w=%d,k=3,r=%d,s=%d,stride=%d,pad=%d", h, h + 2, r,
                             r, stride, pad);
                    fc_problem p;
                    fc_err e;
                    if (fc_problem_parse(buf, NULL, &p, &e) != 0) continue; /* a pad the family refuses */
                    fc_cost c = {0};
                    fc_family_of(p.pat)->cost(&p, &c);
                    const int64_t *d = p.d;
                    double Y = (double)(d[FC_CONV_N] * d[FC_CONV_K] * d[FC_CONV_P] * d[FC_CONV_Q]);
                    double taps = taps_by_loop(d[FC_CONV_P], r, h, stride, pad) *
                                  taps_by_loop(d[FC_CONV_Q], r, h + 2, stride, pad);
                    /* conv 2·N·K·C·taps + Y (its bias), ReLU Y */
                    CHECK_MSG(c.flops == 2.0 * 3 * 2 * taps + 2 * Y, "%s: flops %g, by the loop %g", buf, c.flops,
                              2.0 * 3 * 2 * taps + 2 * Y);
                    checked++;
                }
    CHECK(checked > 100);
    fc_problem p = parse_ok("conv_bn_relu:n=1,c=64,h=56,w=1221800456,k=3,pad=1");
    fc_cost c = {0};
    fc_family_of(p.pat)->cost(&p, &c);
    CHECK(c.flops > 0);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(problem_strings),
                                   T(norm_problem_strings),
                                   T(problem_string_errors),
                                   T(dim_names_unique),
                                   T(cost_on_paper),
                                   T(conv_taps_closed_form),
                                   T(groups_and_residual),
                                   T(norm_references),
                                   T(bn_folding),
                                   T(inputs_never_zero_and_seeded),
                                   T(memory_guard),
                                   T(verification_can_fail),
                                   T(live_intermediates),
                                   T(op_tables)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
