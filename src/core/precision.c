/* precision.c — see precision.h. */
#include "precision.h"

#include <math.h>
#include <string.h>

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static bool is_nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* Rounds a float's bit pattern to its top 32 - drop bits, nearest even: adding just
 * under half of the dropped unit, plus the kept part's lowest bit, carries exactly
 * when the dropped bits are above half, or at half with an odd kept part. A carry
 * out of the mantissa raises the exponent, up to the infinity pattern. */
static uint32_t round_bits(uint32_t u, int drop)
{
    uint32_t half = (1u << (drop - 1)) - 1u;
    u += half + ((u >> drop) & 1u);
    return u & ~((1u << drop) - 1u);
}

uint16_t fc_float_to_bf16(float x)
{
    uint32_t u = float_bits(x);
    if (is_nan_bits(u)) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)(round_bits(u, 16) >> 16);
}

float fc_bf16_to_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

uint16_t fc_float_to_fp16(float x)
{
    uint32_t u = float_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u, ax = u & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (half-way past 65504): Inf */
    if (ax < 0x38800000u) {                                   /* below 2^-14: a multiple of 2^-24 */
        float a = bits_float(ax) * 0x1p24f;                   /* exact: a power-of-two scale */
        return (uint16_t)(sign | (uint32_t)nearbyintf(a));    /* 1024 is 2^-14, the smallest normal */
    }
    /* rebias the exponent (127 -> 15), then round the 23-bit mantissa to 10 bits; a
     * carry may raise the exponent */
    return (uint16_t)(sign | (round_bits(ax - (112u << 23), 13) >> 13));
}

float fc_fp16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float x = (float)mant * 0x1p-24f;
        return sign ? -x : x;
    }
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

float fc_round_tf32(float x)
{
    uint32_t u = float_bits(x);
    if (is_nan_bits(u)) return bits_float((u & 0x80000000u) | 0x7fc00000u);
    return bits_float(round_bits(u, 13));
}

float fc_round_to_dtype(float x, fc_dtype dt)
{
    switch (dt) {
    case FC_TF32: return fc_round_tf32(x);
    case FC_BF16: return fc_bf16_to_float(fc_float_to_bf16(x));
    case FC_FP16: return fc_fp16_to_float(fc_float_to_fp16(x));
    default: return x;
    }
}

/* ---------------------------------------------------------------- tolerances
 *
 * What a correct implementation's output may differ from the float64 reference by,
 * as a relative L2 error ‖out − ref‖/‖ref‖. The reference reads the inputs as the
 * device holds them (rounded above), so only the device's own arithmetic counts.
 * With u a unit roundoff (fp32 2^-24; tf32 and fp16 2^-11; bf16 2^-8) and r(u) =
 * u/√3 the RMS relative error of one rounding to nearest, the independent sources
 * add in quadrature:
 *
 *   accumulation  a = u32·√(G·L/6). A length-L dot product summed in fp32, in every
 *                 dtype: tensor cores take products of bf16, fp16 and tf32 values
 *                 exactly and accumulate them in fp32. √(L/6) is the random walk of
 *                 plain recursive summation; blocked BLAS and tensor-core kernels
 *                 sum in shorter runs and do better. G = 2 for a gated unit, whose
 *                 output is the product of two such sums (silu(g)·u), else 1.
 *   writes        w = r(u_st)·√n. The unfused chain writes each op's result in the
 *                 storage type (bf16, fp16; fp32 for fp32 and tf32): n = its ops,
 *                 plus one for a conv whose bias a library adds by a call of its own,
 *                 plus one for a gated unit, whose GEMM's write rounds both factors
 *                 of the product. The fused form writes once and stays inside this.
 *   operand       o = r(u_op). One operand the reference does not see, rounded to
 *                 the compute type: the BN-folded weights, what a library computes
 *                 from an input (a transformed or split operand), or gelu(x) of a
 *                 GELU prologue, which enters the GEMM rounded to nearest in its
 *                 operand type (bf16, fp16, tf32) whether written or not.
 *   softmax       s = A(n)·r(u_st)·√k. Logits written k times before the softmax (Q·Kᵀ,
 *                 then scaled) carry absolute errors of |x|·r, and an absolute error
 *                 δ in a logit is a relative error δ in its probability. A is the RMS
 *                 logit under the weights the error norm gives each key: P² (for P,
 *                 and for P·V, whose random V makes ‖O‖ a sum of P_j² terms too).
 *                 fusecal's Q and K are uniform in (−2, 2), so logits have σ = 4/3
 *                 whatever d; the tilt of a normal by e^2x gives A∞ = √(σ² + 4σ⁴) =
 *                 3.8. A row of n = skv keys samples that tilt only so far: a Monte-
 *                 Carlo of the pooled error over many rows gives A(n) = 1.1, 2.0,
 *                 2.8, 3.4, 3.5, 3.7, 3.8 at n = 8, 32, 128, 512, 1024, 2048, 8192,
 *                 which A(n)² = A∞²·min(1, 0.19·(ln n − 2)), at least σ², bounds
 *                 from n = 16 up (and at n = 8, σ = 1.33 > 1.1).
 *   P into P·V    p = √(4/3)·u_op, where the tensor core's input type is coarser than
 *                 P's storage (tf32 reading fp32 P): Hopper truncates, an error in
 *                 (−2u, 0] whose RMS is √(u² + u²/3). The fused kernels round to
 *                 nearest and stay inside this.
 *   layer norm    a write before a layer norm (the add's h) reaches y as δh/σ against
 *                 outputs of about one, where the writes' model takes δh/|h|: it counts
 *                 κ² times in w², κ = √(σ² + μ²)/σ over the row (the RMS of h against
 *                 its spread). fusecal's rows have μ = 0.25 and σ ≈ 0.78: κ ≈ 1.05.
 *                 RMSNorm divides by the RMS itself (κ = 1); the norms' sums are the
 *                 accumulation term over the row (n) or the head (d).
 *
 *   tolerance = max(1e-5, F·√(a² + w² + o² + s² + p²)), F = 3 over many outputs
 *               (over few, below: wider, past 1 for one or two 16-bit outputs)
 *
 * The factor 3 covers what an RMS leaves out: a bias add that cancels, the model's
 * normal logits, the spread of a norm over some tens of outputs. The floor 1e-5 is
 * fp32's (fusecal's design tolerance): accumulation alone reaches it only past
 * L ≈ 1.9e4, after which the tolerance grows as √L. The table this gives
 * (tests/test_precision.c checks it and simulates every pattern in float32 with
 * rounded writes and truncated P):
 *
 *             linear, conv, qk_scale      qk_softmax, attention         norm
 *                                         (skv = 32 .. 2048 and up)
 *     fp32    1e-5                        1e-5                          1e-5
 *     tf32    8.5e-4                      8.5e-4, 1.9e-3 (with P·V)     8.5e-4
 *     fp16    1.5e-3 .. 1.9e-3            2.9e-3 .. 4.9e-3              1.5e-3
 *     bf16    1.2e-2 .. 1.5e-2            2.3e-2 .. 3.9e-2              1.2e-2
 *
 * Against these, simulations give: bf16 unfused attention 5.1e-3 at s = 128, d = 64
 * and 8.8e-3 at s = 4096, d = 128 (a scale of 1/√d that is not a power of two rounds
 * the logits twice); bf16 unfused qk_softmax at s = 1024 up to 1.4e-2 and fp16 unfused
 * decode attention (s = 1, skv = 2048) 1.1e-3, both from the long rows' A(n); tf32
 * attention with truncated P 4.2e-4; bf16 linear 2.2e-3 to 3.2e-3; tf32 linear, with
 * inputs rounded to nearest, 2e-7; the norms in bf16 1.5e-3 to 2.4e-3, at most a fifth
 * of theirs.
 * Not modelled: a library algorithm that rounds an operand more than once (a fp16
 * Winograd transform, say); its record then fails verification and names the
 * algorithm it ran.
 */

#define FC_TOL_FLOOR 1e-5
#define FC_TOL_FACTOR 3.0
#define FC_LOGIT_SIGMA2 (16.0 / 9.0)

/* A(n) above: the RMS logit under a row's error weights, n keys per row. */
static double logit_rms(double n)
{
    const double tilted = FC_LOGIT_SIGMA2 + 4 * FC_LOGIT_SIGMA2 * FC_LOGIT_SIGMA2;
    double f = n > 1 ? 0.19 * (log(n) - 2.0) : 0;
    double a2 = tilted * (f < 1 ? f : 1);
    return sqrt(a2 > FC_LOGIT_SIGMA2 ? a2 : FC_LOGIT_SIGMA2);
}
#define FC_LN_KAPPA 1.05

double fc_dtype_storage_roundoff(fc_dtype dt)
{
    switch (dt) {
    case FC_BF16: return 0x1p-8;
    case FC_FP16: return 0x1p-11;
    default: return 0x1p-24;
    }
}

double fc_dtype_operand_roundoff(fc_dtype dt)
{
    switch (dt) {
    case FC_TF32: return 0x1p-11;
    case FC_BF16: return 0x1p-8;
    case FC_FP16: return 0x1p-11;
    default: return 0x1p-24;
    }
}

/* Ops of the chain before op (the writes it reads: logits before a softmax, h before
 * a layer norm), 0 without one. */
static int ops_before(const fc_pattern *pat, fc_op op)
{
    for (int i = 0; i < pat->nops; i++)
        if (pat->ops[i] == op) return i;
    return 0;
}

/* The unfused chain's writes in the storage type (the writes term above): its ops, a
 * conv's bias call, a gated unit's second factor. */
static int chain_writes(const fc_pattern *pat)
{
    return pat->nops + fc_pattern_has_op(pat, FC_OP_CONV) + fc_pattern_has_op(pat, FC_OP_GLU_MUL);
}

/* The RMS relative error above, before the factor and the floor. */
static double problem_rms_error(const fc_problem *p)
{
    const fc_pattern *pat = p->pat;
    double ust = fc_dtype_storage_roundoff(p->dtype), uop = fc_dtype_operand_roundoff(p->dtype);
    double rst = ust / sqrt(3.0), rop = uop / sqrt(3.0);
    int gated = fc_pattern_has_op(pat, FC_OP_GLU_MUL);
    double a = 0x1p-24 * sqrt(fc_family_of(pat)->reduction(p) / 6.0 * (1 + gated));
    double writes = chain_writes(pat);
    writes += (FC_LN_KAPPA * FC_LN_KAPPA - 1) * ops_before(pat, FC_OP_LAYERNORM);
    double w = rst * sqrt(writes);
    double o = rop;
    int before = ops_before(pat, FC_OP_SOFTMAX);
    double keys = pat->family == FC_FAM_ATTENTION ? (double)p->d[FC_ATT_SKV] : INFINITY; /* per softmax row */
    double s = before ? logit_rms(keys) * rst * sqrt((double)before) : 0;
    double pv = fc_pattern_has_op(pat, FC_OP_PV) && uop > ust ? sqrt(4.0 / 3.0) * uop : 0;
    return sqrt(a * a + w * w + o * o + s * s + pv * pv);
}

/* ---------------------------------------------------------------- few outputs
 *
 * A rounding's error is relative to the value it rounds, an intermediate (x·w before
 * the bias, h before the norm) or a term of a sum, not to the output, which can be
 * near zero where they cancel. Over many outputs the norm ‖ref‖ averages that away
 * and the factor 3 holds; over n outputs ‖ref‖² is a sum of n squares, which is
 * small with a chance that grows as n falls: for outputs of a density that is finite
 * at zero (sums, differences) about as a chi-square with n degrees of freedom is
 * below its q, P(χ²ₙ < q) ≈ (q/2)^(n/2)/Γ(n/2 + 1). The norm-wise error exceeds √(n/q)
 * times its many-output value with that chance, so over n nonzero outputs the
 * factor is F(n) = √(n/q) with q the χ²ₙ quantile of FC_TOL_MISS, where that exceeds
 * 3: 8e5 at n = 1, 1000 at n = 2, 38 at n = 4, 7.5 at n = 8, 3.3 at n = 16, 3 from
 * 19 on. The outputs of one small problem share their inputs (a row's x, a
 * channel's weights and shift), so fewer conditions than outputs make them all
 * small: m = 2, k = 1, n = 3's six outputs x_i·w_j + b_j all vanish on four (x₁ = x₂
 * and b = −x₁·w), a 1 × 1 conv's two pixels of two channels on three. n counts half
 * the nonzero outputs, plus one (3 from 36 outputs on), which covers these. Two more
 * ways a few outputs lose the many-output bound:
 *   - a layer norm divides by its row's spread, whose square is a chi-square of one
 *     degree fewer than the row's length L: a short row of nearly equal values
 *     amplifies the errors of h by as much, so its n is at most L − 1;
 *   - fp16 holds values below 2^-14 to an absolute 2^-24, so a small output (a row
 *     whose one shared input is small scales all of it) is written with an error of
 *     up to 2^-25 whatever its size: RMS 2^-24/√12 a write, against the outputs' RMS.
 * Where F(n) times the error is 1 or more (one or two 16-bit outputs), no norm bounds
 * the arithmetic and the tolerance says so by its size; the check still fails on NaN,
 * infinity and unwritten zeros. tests/test_precision.c simulates single rows, pixels
 * and heads in every dtype against it. */

#define FC_TOL_MISS 1e-6 /* the chance a correct output of few elements fails */

/* P(χ²ₖ < x), the regularized lower incomplete gamma function P(k/2, x/2) by its
 * series, which converges for every x and fast where x < k + 2 (here: always). */
static double chi2_cdf(double k, double x)
{
    double a = k / 2, z = x / 2;
    if (z <= 0) return 0;
    double term = 1.0 / a, sum = term;
    for (int j = 1; j < 1000 && term > sum * 1e-16; j++) {
        term *= z / (a + j);
        sum += term;
    }
    return exp(a * log(z) - z - lgamma(a)) * sum;
}

double fc_tolerance_factor(double outputs)
{
    if (!(outputs >= 1)) outputs = 1;
    if (outputs >= 64) return FC_TOL_FACTOR; /* √(n/q) < 2.2 there */
    double lo = -700, hi = log(outputs);     /* bisect log q: P(χ²ₙ < n) > 1e-6 */
    for (int i = 0; i < 200; i++) {
        double mid = (lo + hi) / 2;
        if (chi2_cdf(outputs, exp(mid)) < FC_TOL_MISS) lo = mid;
        else
            hi = mid;
    }
    double f = sqrt(outputs / exp(lo));
    return f > FC_TOL_FACTOR ? f : FC_TOL_FACTOR;
}

double fc_problem_tolerance_for(const fc_problem *p, double outputs, double out_rms)
{
    double dof = floor(outputs / 2) + 1;
    if (fc_pattern_has_op(p->pat, FC_OP_LAYERNORM) && dof > (double)p->d[FC_NORM_N] - 1)
        dof = (double)p->d[FC_NORM_N] - 1;
    double rms = problem_rms_error(p);
    if (p->dtype == FC_FP16 && out_rms > 0 && isfinite(out_rms)) {
        double sub = 0x1p-24 / sqrt(12.0) * sqrt((double)chain_writes(p->pat)) / out_rms;
        rms = sqrt(rms * rms + sub * sub);
    }
    double tol = fc_tolerance_factor(dof) * rms;
    return tol < FC_TOL_FLOOR ? FC_TOL_FLOOR : tol;
}

double fc_problem_tolerance(const fc_problem *p) { return fc_problem_tolerance_for(p, INFINITY, INFINITY); }
