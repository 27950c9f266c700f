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
        float a = bits_float(ax) * 0x1p24f;                  /* exact: a power-of-two scale */
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
