/* cpu_bf16.h — bfloat16 tensors on the host: loads and stores for the host kernels
 * that read and write bf16 (fp32 arithmetic in between, as a bf16 kernel on a CPU
 * computes), and whole-tensor conversions made at setup. A store rounds to nearest,
 * ties to even, as fc_float_to_bf16 does; NaN stays NaN. (The vector stores of an
 * AVX-512 BF16 build, vcvtneps2bf16, also flush denormal inputs, below 1.2e-38, to
 * zero, where this scalar store and the AVX2 build's keep them: cpu_vec.h.) */
#ifndef FC_CPU_BF16_H
#define FC_CPU_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef uint16_t fc_bf16;

static inline float fc_bf16_load(fc_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static inline fc_bf16 fc_bf16_store(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    return (fc_bf16)((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

#if defined(__AVX512F__)
/* 16 bfloat16 at p as floats in one vpmovzxwd into a zmm, exact (a bfloat16 is a
 * float's top half). GCC lowers the generic vector conversion to two ymm widenings
 * and an insert where it prefers 256-bit vectors, as it does for Intel's AVX-512
 * cores: the fused bf16 add_layernorm ran at a third of its speed. */
static inline __m512 fc_bf16_widen16(const fc_bf16 *p)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
#endif

/* a tensor of n floats to bf16 (a new 64-byte-aligned buffer, every page mapped) */
fc_bf16 *fc_cpu_bf16_copy(const float *x, size_t n);
void fc_cpu_bf16_to_float(const fc_bf16 *h, float *x, size_t n);
void fc_cpu_bf16_fill_nan(fc_bf16 *h, size_t n);

#endif
