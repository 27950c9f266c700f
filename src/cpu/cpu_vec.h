/* cpu_vec.h — 16-float vectors (GCC vector extensions) for the host kernels: the
 * compiler maps one to a zmm register with AVX-512, two ymm with AVX2, and so on. */
#ifndef FC_CPU_VEC_H
#define FC_CPU_VEC_H

#include <stdint.h>
#include "cpu_bf16.h"

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v16fu __attribute__((vector_size(64), aligned(4), may_alias)); /* unaligned access */

static inline v16f vload(const float *p) { return *(const v16fu *)p; }
static inline void vstore(float *p, v16f v) { *(v16fu *)p = v; }
static inline v16f vsplat(float x) { return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline v16f vsel(v16i mask, v16f a, v16f b) { return (v16f)((mask & (v16i)a) | (~mask & (v16i)b)); }
static inline v16f vmax(v16f a, v16f b) { return vsel(a > b, a, b); }

/* The sum of v's lanes as a tree: halves added four times. (`omp simd reduction`
 * ends a row's sum with one scalar add per lane, each waiting on the last: 32 in a
 * chain for AVX-512's two accumulators, most of a 128-float row's time.) */
static inline float vhsum(v16f v)
{
    typedef float v8f __attribute__((vector_size(32)));
    typedef float v4f __attribute__((vector_size(16)));
    v8f a = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    a += (v8f){v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
    v4f b = (v4f){a[0], a[1], a[2], a[3]} + (v4f){a[4], a[5], a[6], a[7]};
    return (b[0] + b[2]) + (b[1] + b[3]);
}

/* The host kernels' software prefetch: the line FC_AHEAD bytes past p + at, to read
 * (vask) or to write (vask_w), when it lies inside the stream (left bytes from p on).
 * The hardware prefetchers stop at each 4 KB page, and a norm's row is too little
 * work to hide the misses. A sweep that reads and writes three or four streams at
 * once asks 2 KB ahead on each; a row's asks, made in one burst before the row is
 * read (vask_row), reach 4 KB ahead. On the AMD EPYC VM (Zen 5, two threads; one
 * harness alternating both forms, 50 runs each, three rounds), 2 KB against 4 KB in
 * the streaming sweeps: the fused bf16 add_layernorm (m=14592, n=768) 0.83-0.84 of
 * the time, bf16 add_rmsnorm (m=2048, n=4096) 0.92-0.95, fp32 add_rmsnorm 0.96, the
 * rest 0.91-1.04; the row asks at 2 KB made the bf16 rope 1.03-1.09x slower. (On the
 * Xeon, 8 KB ahead lost 2-4 points against 4.) */
enum { FC_AHEAD = 2048, FC_AHEAD_ROW = 4096 };
/* the line ahead bytes past p + at, when it lies inside the stream */
static inline void vask_ahead(const void *p, size_t at, size_t left, size_t ahead)
{
    if (at + ahead < left) __builtin_prefetch((const char *)p + at + ahead, 0, 3);
}
static inline void vask_w_ahead(void *p, size_t at, size_t left, size_t ahead)
{
    if (at + ahead < left) __builtin_prefetch((char *)p + at + ahead, 1, 3);
}
static inline void vask(const void *p, size_t at, size_t left) { vask_ahead(p, at, left, FC_AHEAD); }
static inline void vask_w(void *p, size_t at, size_t left) { vask_w_ahead(p, at, left, FC_AHEAD); }
/* the asks for a row's n bytes at src (read) and, given, at dst (written), each
 * stream left bytes long from the row on */
static inline void vask_row(const void *src, void *dst, size_t n, size_t left)
{
    for (size_t at = 0; at + FC_AHEAD_ROW < left && at < n; at += 64) {
        vask_ahead(src, at, left, FC_AHEAD_ROW);
        if (dst) vask_w_ahead(dst, at, left, FC_AHEAD_ROW);
    }
}

/* x rounded to 16 bfloat16 at p, to nearest even, NaN kept NaN: one vcvtneps2bf16
 * with AVX-512 BF16 (which also flushes denormals, below 1.2e-38, to zero), else
 * fc_bf16_store's arithmetic on all lanes */
static inline void vstore_bf16(uint16_t *p, v16f x)
{
    typedef uint16_t v16hu __attribute__((vector_size(32), aligned(2), may_alias));
#if defined(__AVX512BF16__)
    *(v16hu *)p = (v16hu)__builtin_ia32_cvtneps2bf16_v16sf((__attribute__((vector_size(64))) float)x);
#else
    typedef uint32_t v16u __attribute__((vector_size(64)));
    v16u u = (v16u)x;
    v16u r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    v16i nan = (v16i)((u & 0x7fffffffu) > 0x7f800000u);
    r = (v16u)((nan & (v16i)((u >> 16) | 0x40u)) | (~nan & (v16i)r));
    *(v16hu *)p = __builtin_convertvector(r, v16hu);
#endif
}

/* 32 floats, a then b, rounded as vstore_bf16 rounds them, in one 64-byte store
 * (with AVX-512 BF16; a plain bf16 add past the LLC ran at 77 % of the bandwidth
 * with two 32-byte stores into each cache line, at 86 % with one) */
static inline void vstore2_bf16(uint16_t *p, v16f a, v16f b)
{
#if defined(__AVX512BF16__)
    _mm512_storeu_si512(p, (__m512i)_mm512_cvtne2ps_pbh((__m512)b, (__m512)a));
#else
    vstore_bf16(p, a);
    vstore_bf16(p + 16, b);
#endif
}

/* 16 bfloat16 at p as floats (exact: a bfloat16 is a float's top half) */
static inline v16f vload_bf16(const uint16_t *p)
{
#if defined(__AVX512F__)
    return (v16f)fc_bf16_widen16(p);
#else
    typedef uint16_t v16h __attribute__((vector_size(32), aligned(2), may_alias));
    return (v16f)(__builtin_convertvector(*(const v16h *)p, v16i) << 16);
#endif
}

#endif
