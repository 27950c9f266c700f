/* attention_common.cuh — what the reference attention kernels (attention.cu) and the
 * flash2 kernels (flash2.cu) share: the storage type of each kind, PTX wrappers for
 * cp.async, ldmatrix and mma.sync, tf32 rounding and splitting, and the flash2
 * entry points that attention.cu's launchers call. */
#ifndef FCK_ATTENTION_COMMON_CUH
#define FCK_ATTENTION_COMMON_CUH

#include "fusecal_kernels.h"
#include "kernel_logic.h"
#include "kernel_util.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>

namespace fck {

constexpr float LOG2E = 1.4426950408889634f;

/* Storage type; HALF: 16-bit operands (m16n8k16); SPLIT: fp32 as three tf32 products. */
template <int KIND>
struct Kind;
template <>
struct Kind<FCK_FP32> {
    typedef float T;
    enum { HALF = 0, SPLIT = 1 };
};
template <>
struct Kind<FCK_TF32> {
    typedef float T;
    enum { HALF = 0, SPLIT = 0 };
};
template <>
struct Kind<FCK_BF16> {
    typedef __nv_bfloat16 T;
    enum { HALF = 1, SPLIT = 0 };
};
template <>
struct Kind<FCK_FP16> {
    typedef __half T;
    enum { HALF = 1, SPLIT = 0 };
};

/* Name of a kind as the resource strings give it. */
inline const char *kind_name(int kind)
{
    return kind == FCK_FP32 ? "fp32(3xtf32)" : kind == FCK_TF32 ? "tf32" : kind == FCK_BF16 ? "bf16" : "fp16";
}

/* ---------------------------------------------------------------- PTX wrappers */

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes global -> shared, asynchronously; zero-filled when !valid (the source is
 * then not read, but must still be a mapped address) */
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}

/* c[16x8] += a[16x16]·b[16x8], 16-bit operands */
template <int KIND>
__device__ __forceinline__ void mma16(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if (KIND == FCK_BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* c[16x8] += a[16x8]·b[8x8], tf32 operands */
__device__ __forceinline__ void mma_tf32(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* x rounded to tf32, to nearest with ties away from zero (the tensor cores would
 * otherwise truncate the 13 low mantissa bits) */
__device__ __forceinline__ uint32_t tf32_rna(float x)
{
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}

/* x as a tf32 pair: big = tf32(x), small = tf32(x - big) */
__device__ __forceinline__ void tf32_split(float x, uint32_t &big, uint32_t &small)
{
    big = tf32_rna(x);
    small = tf32_rna(x - __uint_as_float(big));
}

/* c += a·b with the operands already in tf32: SPLIT adds the three products
 * small·big + big·small + big·big (the small·small term is below fp32's rounding). */
template <bool SPLIT>
__device__ __forceinline__ void mma3(float *c, const uint32_t *ab, const uint32_t *as, const uint32_t *bb,
                                     const uint32_t *bs)
{
    if (SPLIT) {
        mma_tf32(c, as, bb[0], bb[1]);
        mma_tf32(c, ab, bs[0], bs[1]);
    }
    mma_tf32(c, ab, bb[0], bb[1]);
}

/* n values rounded (tf32) or split (SPLIT: big and small parts) */
template <bool SPLIT, int N>
__device__ __forceinline__ void to_tf32(const float *x, uint32_t *big, uint32_t *small)
{
#pragma unroll
    for (int i = 0; i < N; i++) {
        if (SPLIT) tf32_split(x[i], big[i], small[i]);
        else
            big[i] = tf32_rna(x[i]);
    }
}

/* Sums v over the four lanes of a row (lanes 4g..4g+3), max likewise. */
__device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/* ---------------------------------------------------------------- flash2 entry points
 * (flash2.cu; arguments already checked by the extern "C" launchers) */
cudaError_t flash2_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o,
                             const fck_attn_shape &sh, cudaStream_t stream);
cudaError_t flash2_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, const fck_attn_shape &sh,
                              cudaStream_t stream);
int flash2_resources(fck_dtype dt, int d, int qk_softmax, char *buf, size_t n);

} // namespace fck

#endif
