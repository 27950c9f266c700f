/* kernel_util.cuh — device helpers shared by fusecal's kernels: conversions between
 * the storage types and fp32, gelu and silu, and 16-byte vector loads and stores. */
#ifndef FCK_KERNEL_UTIL_CUH
#define FCK_KERNEL_UTIL_CUH

#include "kernel_logic.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace fck {

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

template <typename T>
__device__ __forceinline__ T from_f(float x);
template <>
__device__ __forceinline__ float from_f<float>(float x)
{
    return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x)
{
    return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x)
{
    return __float2half_rn(x);
}

/* gelu with the tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), in fp32 */
__device__ __forceinline__ float gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* √(2/π) */
    float u = k * fmaf(0.044715f * x * x, x, x);
    return 0.5f * x * (1.0f + tanhf(u));
}
/* gelu for data of type T: tanhf's form for fp32, the sigmoid form for 16-bit data
 * (kernel_logic.h's fck_gelu_sigmoid). The elementwise gelu kernel and fusecal's GEMM's
 * prologue both take it, so that gelu_linear's forms compute the same gelu(x). */
template <typename T>
__device__ __forceinline__ float gelu_for(float x)
{
    return sizeof(T) == 2 ? fck_gelu_sigmoid(x) : gelu_tanh(x);
}

/* silu(x) = x/(1 + e^−x): the gated unit's passes' and the gated GEMM's */
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

/* 16 bytes at p (16-byte aligned) */
template <typename T>
__device__ __forceinline__ uint4 ld16(const T *p)
{
    return *reinterpret_cast<const uint4 *>(p);
}
template <typename T>
__device__ __forceinline__ void st16(T *p, uint4 v)
{
    *reinterpret_cast<uint4 *>(p) = v;
}

/* the 16/sizeof(T) elements of a vector, in fp32 */
template <typename T>
__device__ __forceinline__ void unpack(uint4 v, float *out);
template <>
__device__ __forceinline__ void unpack<float>(uint4 v, float *out)
{
    out[0] = __uint_as_float(v.x);
    out[1] = __uint_as_float(v.y);
    out[2] = __uint_as_float(v.z);
    out[3] = __uint_as_float(v.w);
}
template <>
__device__ __forceinline__ void unpack<__nv_bfloat16>(uint4 v, float *out)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) { /* bf16 -> fp32 is a shift */
        out[2 * i] = __uint_as_float(w[i] << 16);
        out[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
template <>
__device__ __forceinline__ void unpack<__half>(uint4 v, float *out)
{
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        __half2 h = *reinterpret_cast<const __half2 *>(&w[i]);
        float2 f = __half22float2(h);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
    }
}

template <typename T>
__device__ __forceinline__ uint4 pack(const float *in);
template <>
__device__ __forceinline__ uint4 pack<float>(const float *in)
{
    return make_uint4(__float_as_uint(in[0]), __float_as_uint(in[1]), __float_as_uint(in[2]), __float_as_uint(in[3]));
}
/* two fp32 values as one 32-bit word of two 16-bit ones, the first in the low half */
__device__ __forceinline__ uint32_t pack2_bf16(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
__device__ __forceinline__ uint32_t pack2_f16(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <>
__device__ __forceinline__ uint4 pack<__nv_bfloat16>(const float *in)
{
    return make_uint4(pack2_bf16(in[0], in[1]), pack2_bf16(in[2], in[3]), pack2_bf16(in[4], in[5]),
                      pack2_bf16(in[6], in[7]));
}
template <>
__device__ __forceinline__ uint4 pack<__half>(const float *in)
{
    return make_uint4(pack2_f16(in[0], in[1]), pack2_f16(in[2], in[3]), pack2_f16(in[4], in[5]),
                      pack2_f16(in[6], in[7]));
}

} // namespace fck

#endif
