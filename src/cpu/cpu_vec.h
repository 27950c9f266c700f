/* cpu_vec.h — float vectors of the ISA's width (GCC vector extensions) for the host
 * kernels: VW floats, 16 with AVX-512, 8 with AVX2, 4 otherwise, so that a vector is
 * one register. A 64-byte vector where the ISA has no 64-byte registers has no
 * machine mode in GCC and lives in memory: built for AVX2 (-march=znver3) on the AMD
 * EPYC VM, the NHWC depthwise conv took 3.7-8.2x the time with 16-float vectors that
 * it takes with 8 (one harness, both alternated), and in `fusecal run --quick` the
 * fused add_layernorm (4096 x 768) 2.37 ms against 0.62, qk_norm_rope 0.79 against
 * 0.27, qk_softmax's unfused softmax pass 6.34 against 2.46 (its speedup 2.62x
 * against 1.03x): verdicts on the build, not on fusion. */
#ifndef FC_CPU_VEC_H
#define FC_CPU_VEC_H

#include <immintrin.h>
#include <stdint.h>
#include "cpu_bf16.h"

#if defined(__AVX512F__)
#define VW 16
#elif defined(__AVX__)
#define VW 8
#else
#define VW 4
#endif

/* what the kernels were built for, as the host block names it (devices.cpu.kernels):
 * a build for another ISA than the CPU's runs other kernels and can reach other
 * verdicts */
#if VW == 16 && defined(__AVX512BF16__)
#define FC_VEC_ISA "AVX-512 BF16"
#elif VW == 16
#define FC_VEC_ISA "AVX-512"
#elif defined(__AVX2__)
#define FC_VEC_ISA "AVX2"
#elif VW == 8
#define FC_VEC_ISA "AVX"
#else
#define FC_VEC_ISA "SSE"
#endif

typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));
typedef float vfu __attribute__((vector_size(VW * 4), aligned(4), may_alias)); /* unaligned access */

static inline vf vload(const float *p) { return *(const vfu *)p; }
static inline void vstore(float *p, vf v) { *(vfu *)p = v; }
#if VW == 16
#define FC_VW_LIST(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
#elif VW == 8
#define FC_VW_LIST(x) x, x, x, x, x, x, x, x
#else
#define FC_VW_LIST(x) x, x, x, x
#endif
static inline vf vsplat(float x) { return (vf){FC_VW_LIST(x)}; }
static inline vf vsel(vi mask, vf a, vf b) { return (vf)((mask & (vi)a) | (~mask & (vi)b)); }
static inline vf vmax(vf a, vf b) { return vsel(a > b, a, b); }

/* the largest of v's lanes */
static inline float vhmax(vf v)
{
    float m = v[0];
    for (int i = 1; i < VW; i++) m = v[i] > m ? v[i] : m;
    return m;
}

/* The sum of v's lanes as a tree: halves added until four are left. (`omp simd
 * reduction` ends a row's sum with one scalar add per lane, each waiting on the
 * last: 32 in a chain for AVX-512's two accumulators, most of a 128-float row's
 * time.) */
static inline float vhsum(vf v)
{
    typedef float v4f __attribute__((vector_size(16)));
#if VW == 16
    typedef float v8f __attribute__((vector_size(32)));
    v8f a = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    a += (v8f){v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15]};
    v4f b = (v4f){a[0], a[1], a[2], a[3]} + (v4f){a[4], a[5], a[6], a[7]};
#elif VW == 8
    v4f b = (v4f){v[0], v[1], v[2], v[3]} + (v4f){v[4], v[5], v[6], v[7]};
#else
    v4f b = v;
#endif
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
/* The line FC_AHEAD_L2 bytes past p + at asked into L2 (prefetcht1), when it lies
 * inside the stream: a second, deeper ask beside vask's for the inputs of a sweep
 * whose rows are short (norm_ops.c's add_at says where and what it measured). */
enum { FC_AHEAD_L2 = 8192 };
static inline void vask_l2(const void *p, size_t at, size_t left)
{
    if (at + FC_AHEAD_L2 < left) __builtin_prefetch((const char *)p + at + FC_AHEAD_L2, 0, 2);
}
/* the asks for a row's n bytes at src (read) and, given, at dst (written), each
 * stream left bytes long from the row on */
static inline void vask_row(const void *src, void *dst, size_t n, size_t left)
{
    for (size_t at = 0; at + FC_AHEAD_ROW < left && at < n; at += 64) {
        vask_ahead(src, at, left, FC_AHEAD_ROW);
        if (dst) vask_w_ahead(dst, at, left, FC_AHEAD_ROW);
    }
}

/* Streaming (non-temporal) stores, for an output that is not read again soon and
 * is too large to stay in the caches: the line goes to memory whole, neither read
 * first (a store's read-for-ownership) nor kept, so it evicts none of the inputs.
 * When that pays, measured: norm_ops.c's fc_cpu_norm_streams.
 * p is aligned to a vector (vhead gives the elements before the first such p);
 * a thread's streaming stores end with vfence before other threads read them. */
static inline void vstream(float *p, vf v)
{
#if VW == 16
    _mm512_stream_ps(p, (__m512)v);
#elif VW == 8
    _mm256_stream_ps(p, (__m256)v);
#else
    _mm_stream_ps(p, (__m128)v);
#endif
}
/* the elements of esize bytes from p to its first vector-aligned address, at most n */
static inline size_t vhead(const void *p, size_t esize, size_t n)
{
    const size_t k = (size_t)(-(uintptr_t)p & (VW * 4 - 1)) / esize;
    return k < n ? k : n;
}
static inline void vfence(void) { _mm_sfence(); }

/* x rounded to VW bfloat16 at p, to nearest even, NaN kept NaN: one vcvtneps2bf16
 * with AVX-512 BF16 (which also flushes denormals, below 1.2e-38, to zero), else
 * fc_bf16_store's arithmetic on all lanes */
typedef uint16_t vhu __attribute__((vector_size(VW * 2), aligned(2), may_alias)); /* VW bfloat16, unaligned */
static inline void vstore_bf16(uint16_t *p, vf x)
{
#if defined(__AVX512BF16__) && VW == 16
    *(vhu *)p = (vhu)__builtin_ia32_cvtneps2bf16_v16sf(x);
#else
    typedef uint32_t vu __attribute__((vector_size(VW * 4)));
    vu u = (vu)x;
    vu r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    vi nan = (vi)((u & 0x7fffffffu) > 0x7f800000u);
    r = (vu)((nan & (vi)((u >> 16) | 0x40u)) | (~nan & (vi)r));
    *(vhu *)p = __builtin_convertvector(r, vhu);
#endif
}

/* 2·VW floats, a then b, rounded as vstore_bf16 rounds them, in one 64-byte store
 * (with AVX-512 BF16; a plain bf16 add past the LLC ran at 77 % of the bandwidth
 * with two 32-byte stores into each cache line, at 86 % with one) */
static inline void vstore2_bf16(uint16_t *p, vf a, vf b)
{
#if defined(__AVX512BF16__) && VW == 16
    _mm512_storeu_si512(p, (__m512i)_mm512_cvtne2ps_pbh((__m512)b, (__m512)a));
#else
    vstore_bf16(p, a);
    vstore_bf16(p + VW, b);
#endif
}

/* the same streamed (vstream), p aligned to VW floats: 2·VW bfloat16 are one float
 * vector's bytes */
static inline void vstream2_bf16(uint16_t *p, vf a, vf b)
{
#if defined(__AVX512BF16__) && VW == 16
    _mm512_stream_si512((void *)p, (__m512i)_mm512_cvtne2ps_pbh((__m512)b, (__m512)a));
#else
    union {
        vf v;
        uint16_t h[2 * VW];
    } u;
    vstore_bf16(u.h, a);
    vstore_bf16(u.h + VW, b);
    vstream((float *)p, u.v);
#endif
}

/* VW bfloat16 at p as floats (exact: a bfloat16 is a float's top half) */
static inline vf vload_bf16(const uint16_t *p)
{
#if VW == 16
    return (vf)fc_bf16_widen16(p);
#else
    return (vf)(__builtin_convertvector(*(const vhu *)p, vi) << 16);
#endif
}

#endif
