/* norm.cu — the norm family's kernels: the unfused chains' passes (residual add, layer
 * norm, RMSNorm, per-head RMSNorm, rotary embedding) and their fused forms (add +
 * layer norm, add + RMSNorm writing h too, per-head RMSNorm + rope), all one read and
 * one write per element.
 *
 * Rows [rows, n] (kind ADD/LN/RMS and their fused forms): the row sits in registers
 * between its statistics and its normalization, laid out like the row softmax's
 * (fck_norm_plan_make, kernel_logic.h: a warp per row up to 512 elements, 256 as
 * scalars; 64 to 1024 threads per row up to 16384, 8192 as scalars; 16-byte vectors
 * where a row is a whole number of them).
 * Sums in fp32: within a thread, across the warp by shuffles, across the row's warps
 * through shared memory; the layer norm's variance is the mean square deviation about
 * the mean, taken from the registers in a second reduction (no E[h²] − μ² cancellation).
 *
 * Heads [m·h, d] (qk_norm_rope): fck_head_plan_make; the threads of a head hold pairs of
 * vectors (i, i + d/2), the rotate-half pairs, so the rotation needs no exchange; tph
 * threads per head (a power of two up to 32, heads never straddle a warp), reduced by
 * shuffles inside their segment. The cos/sin table is fp32 [m, d] (fc_rope_table).
 *
 * Napkin math (E = bytes per element; the H100's ~3 TB/s read + write):
 *   add_layernorm fused  reads x, r, writes y: 3·m·n·E (+ γ, β from L2): m=4096, n=768,
 *                        bf16: 18.9 MB, ~6.3 µs; unfused add (3mnE) + layernorm (2mnE)
 *                        moves 5/3 of that.
 *   add_rmsnorm fused    reads x, r, writes y and h: 4·m·n·E; m=2048, n=4096, bf16:
 *                        67 MB, ~22 µs; unfused 5/4 of that.
 *   qk_norm_rope fused   reads q, writes y: 2·m·n·E + the table 4·m·d: m=2048, h=32,
 *                        d=128, bf16: 33.6 MB + 1 MB, ~11.5 µs; unfused about twice.
 * Registers: a row thread holds at most 16 fp32 values (fck_norm_ept), a head thread
 * at most 32 (two halves of 16); ptxas must report no spills (the build fails on them).
 */
#include "fusecal_kernels.h"
#include "kernel_logic.h"
#include "kernel_util.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace {

/* ---------------------------------------------------------------- rows */

enum RowKind { ROW_ADD, ROW_LN, ROW_RMS, ROW_ADD_LN, ROW_ADD_RMS };

struct RowArgs {
    const void *x, *r, *gamma, *beta;
    void *y, *h; /* h: the sum x + r (ROW_ADD writes it alone; ROW_ADD_RMS with y) */
    size_t rows;
    int cols;
    float eps;
};

/* Sum over the TPR threads of a row: shuffles in the warp, then the row's warps through
 * red (NWR > 1; every thread of the block reaches the barrier). */
template <int TPR>
__device__ __forceinline__ float row_sum(float v, float *red, int rb, int tr)
{
    constexpr int NWR = TPR / 32;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (NWR > 1) {
        if ((tr & 31) == 0) red[rb * NWR + tr / 32] = v;
        __syncthreads();
        v = 0.0f;
#pragma unroll
        for (int w = 0; w < NWR; w++) v += red[rb * NWR + w];
    }
    return v;
}

/* V elements of row vector at column c: 16 bytes, or one scalar (V = 1) */
template <typename T, int V>
__device__ __forceinline__ void load(const T *p, float *v)
{
    if (V > 1) fck::unpack<T>(fck::ld16(p), v);
    else
        v[0] = fck::to_f(*p);
}

template <typename T, int V>
__device__ __forceinline__ void store(T *p, const float *v)
{
    if (V > 1) fck::st16(p, fck::pack<T>(v));
    else
        *p = fck::from_f<T>(v[0]);
}

template <typename T, int V, int NV, int TPR, int KIND>
__global__ void __launch_bounds__(TPR < 256 ? 256 : TPR) row_kernel(RowArgs a)
{
    constexpr int RPB = TPR < 256 ? 256 / TPR : 1, NWR = TPR / 32;
    constexpr bool ADD = KIND == ROW_ADD || KIND == ROW_ADD_LN || KIND == ROW_ADD_RMS;
    constexpr bool LN = KIND == ROW_LN || KIND == ROW_ADD_LN;
    static_assert(NV * V <= fck_norm_ept(V) && RPB * NWR <= 32, "row plan");
    __shared__ float red[2][32];
    const int tr = (int)threadIdx.x % TPR, rb = (int)threadIdx.x / TPR;
    const size_t row = (size_t)blockIdx.x * RPB + rb;
    const bool live = row < a.rows; /* no early exit: the barriers need every thread */
    const size_t base = (live ? row : 0) * (size_t)a.cols;
    const T *x = static_cast<const T *>(a.x) + base;
    const T *r = ADD ? static_cast<const T *>(a.r) + base : nullptr;

    float v[NV][V];
#pragma unroll
    for (int j = 0; j < NV; j++) { /* every load issued before the first use */
        const int c = fck_softmax_col(j, tr, TPR, V);
#pragma unroll
        for (int e = 0; e < V; e++) v[j][e] = 0.0f;
        if (live && c < a.cols) {
            load<T, V>(x + c, v[j]);
            if (ADD) {
                float w[V];
                load<T, V>(r + c, w);
#pragma unroll
                for (int e = 0; e < V; e++) v[j][e] += w[e];
            }
        }
    }
    if (KIND == ROW_ADD || KIND == ROW_ADD_RMS) { /* h = x + r, written once */
        T *h = static_cast<T *>(a.h) + base;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            const int c = fck_softmax_col(j, tr, TPR, V);
            if (live && c < a.cols) store<T, V>(h + c, v[j]);
        }
        if (KIND == ROW_ADD) return;
    }
    const float inv_n = 1.0f / (float)a.cols;
    float mean = 0.0f;
    if (LN) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < NV; j++)
#pragma unroll
            for (int e = 0; e < V; e++) s += v[j][e];
        mean = row_sum<TPR>(s, red[0], rb, tr) * inv_n;
    }
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = fck_softmax_col(j, tr, TPR, V);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float dv = c < a.cols ? v[j][e] - mean : 0.0f; /* padding holds 0, not the mean */
            sq += dv * dv;
        }
    }
    const float rstd = rsqrtf(row_sum<TPR>(sq, red[1], rb, tr) * inv_n + a.eps);
    const T *g = static_cast<const T *>(a.gamma), *b = static_cast<const T *>(a.beta);
    T *y = static_cast<T *>(a.y) + base;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = fck_softmax_col(j, tr, TPR, V);
        if (!live || c >= a.cols) continue;
        float gv[V], bv[V];
        load<T, V>(g + c, gv);
        if (LN) load<T, V>(b + c, bv);
#pragma unroll
        for (int e = 0; e < V; e++) v[j][e] = (v[j][e] - mean) * rstd * gv[e] + (LN ? bv[e] : 0.0f);
        store<T, V>(y + c, v[j]);
    }
}

template <typename T, int V, int NV, int TPR, int KIND>
cudaError_t launch_row_reg(const RowArgs &a, cudaStream_t st)
{
    constexpr int RPB = TPR < 256 ? 256 / TPR : 1;
    const size_t blocks = (a.rows + RPB - 1) / RPB;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    row_kernel<T, V, NV, TPR, KIND><<<(unsigned)blocks, RPB * TPR, 0, st>>>(a);
    return cudaGetLastError();
}

/* a warp per row, NV vectors per lane (the plan's nvec, a power of two) */
template <typename T, int V, int NV, int KIND>
cudaError_t launch_row_warp(int nvec, const RowArgs &a, cudaStream_t st)
{
    if constexpr (NV * V > fck_norm_ept(V)) {
        return cudaErrorInvalidValue;
    } else {
        if (nvec == NV) return launch_row_reg<T, V, NV, 32, KIND>(a, st);
        return launch_row_warp<T, V, NV * 2, KIND>(nvec, a, st);
    }
}

template <typename T, int V, int KIND>
cudaError_t launch_row_plan(const fck_softmax_plan &p, const RowArgs &a, cudaStream_t st)
{
    constexpr int NB = fck_norm_ept(V) / V; /* vectors per thread past a warp per row */
    switch (p.threads) {
    case 32: return launch_row_warp<T, V, 1, KIND>(p.nvec, a, st);
    case 64: return launch_row_reg<T, V, NB, 64, KIND>(a, st);
    case 128: return launch_row_reg<T, V, NB, 128, KIND>(a, st);
    case 256: return launch_row_reg<T, V, NB, 256, KIND>(a, st);
    case 512: return launch_row_reg<T, V, NB, 512, KIND>(a, st);
    case 1024: return launch_row_reg<T, V, NB, 1024, KIND>(a, st);
    }
    return cudaErrorInvalidValue;
}

template <typename T, int KIND>
cudaError_t launch_row(const RowArgs &a, cudaStream_t st)
{
    if (a.rows == 0) return cudaSuccess;
    const int al = fck_aligned16(a.x) && fck_aligned16(a.r) && fck_aligned16(a.gamma) && fck_aligned16(a.beta) &&
                   fck_aligned16(a.y) && fck_aligned16(a.h);
    const fck_softmax_plan p = fck_norm_plan_make((size_t)a.cols, (int)sizeof(T), al);
    if (p.threads == 0) return cudaErrorInvalidValue; /* a row longer than the registers of a block */
    return p.vec > 1 ? launch_row_plan<T, 16 / sizeof(T), KIND>(p, a, st) : launch_row_plan<T, 1, KIND>(p, a, st);
}

template <int KIND>
cudaError_t dispatch_row(fck_dtype dt, const RowArgs &a, cudaStream_t st)
{
    if (a.cols <= 0) return cudaErrorInvalidValue;
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_row<float, KIND>(a, st);
    case FCK_BF16: return launch_row<__nv_bfloat16, KIND>(a, st);
    case FCK_FP16: return launch_row<__half, KIND>(a, st);
    }
    return cudaErrorInvalidValue;
}

/* ---------------------------------------------------------------- heads */

enum HeadKind { HEAD_NORM = 1, HEAD_ROPE = 2, HEAD_NORM_ROPE = 3 };

struct HeadArgs {
    const void *q, *gamma;
    const float *cs; /* [m, d]: d/2 cosines, then d/2 sines, per position */
    void *y;
    size_t heads_total; /* m·h */
    uint32_t h, d;
    float eps;
};

/* NP pairs of vectors per thread, TPH threads per head, 256 / TPH heads per block */
template <typename T, int V, int NP, int TPH, int KIND>
__global__ void __launch_bounds__(256) head_kernel(HeadArgs a)
{
    static_assert(2 * NP * V <= 32 && TPH <= 32 && (TPH & (TPH - 1)) == 0, "head plan");
    constexpr int HPB = 256 / TPH;
    const int t = (int)threadIdx.x % TPH;
    const size_t head = (size_t)blockIdx.x * HPB + threadIdx.x / TPH;
    const bool live = head < a.heads_total; /* no early exit: the shuffles need every lane */
    const int half = (int)a.d / 2, hv = half / V;
    const size_t base = (live ? head : 0) * a.d;
    const T *q = static_cast<const T *>(a.q) + base;

    float lo[NP][V], hi[NP][V];
#pragma unroll
    for (int j = 0; j < NP; j++) {
        const int c = fck_head_col(j, t, TPH, V);
#pragma unroll
        for (int e = 0; e < V; e++) lo[j][e] = hi[j][e] = 0.0f;
        if (live && j * TPH + t < hv) {
            load<T, V>(q + c, lo[j]);
            load<T, V>(q + c + half, hi[j]);
        }
    }
    if (KIND & HEAD_NORM) {
        float sq = 0.0f;
#pragma unroll
        for (int j = 0; j < NP; j++)
#pragma unroll
            for (int e = 0; e < V; e++) sq += lo[j][e] * lo[j][e] + hi[j][e] * hi[j][e];
#pragma unroll
        for (int off = TPH / 2; off > 0; off >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, off);
        const float rstd = rsqrtf(sq / (float)a.d + a.eps);
        const T *g = static_cast<const T *>(a.gamma);
#pragma unroll
        for (int j = 0; j < NP; j++) {
            const int c = fck_head_col(j, t, TPH, V);
            if (j * TPH + t >= hv) continue;
            float gl[V], gh[V];
            load<T, V>(g + c, gl);
            load<T, V>(g + c + half, gh);
#pragma unroll
            for (int e = 0; e < V; e++) {
                lo[j][e] *= rstd * gl[e];
                hi[j][e] *= rstd * gh[e];
            }
        }
    }
    const size_t pos = (live ? head : 0) / a.h; /* the head's token */
    const float *cs = (KIND & HEAD_ROPE) ? a.cs + pos * a.d : nullptr;
    T *y = static_cast<T *>(a.y) + base;
#pragma unroll
    for (int j = 0; j < NP; j++) {
        const int c = fck_head_col(j, t, TPH, V);
        if (!live || j * TPH + t >= hv) continue;
        if (KIND & HEAD_ROPE) {
            float co[V], si[V];
            constexpr int STEP = V >= 4 ? 4 : 1; /* fp32 table: 16-byte loads of 4 */
#pragma unroll
            for (int e = 0; e < V; e += STEP) {
                if (V >= 4) {
                    const float4 c4 = *reinterpret_cast<const float4 *>(cs + c + e);
                    const float4 s4 = *reinterpret_cast<const float4 *>(cs + half + c + e);
                    co[e] = c4.x, co[e + 1] = c4.y, co[e + 2] = c4.z, co[e + 3] = c4.w;
                    si[e] = s4.x, si[e + 1] = s4.y, si[e + 2] = s4.z, si[e + 3] = s4.w;
                } else {
                    co[e] = cs[c + e];
                    si[e] = cs[half + c + e];
                }
            }
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float l = lo[j][e], u = hi[j][e];
                lo[j][e] = l * co[e] - u * si[e];
                hi[j][e] = u * co[e] + l * si[e];
            }
        }
        store<T, V>(y + c, lo[j]);
        store<T, V>(y + c + half, hi[j]);
    }
}

template <typename T, int V, int NP, int TPH, int KIND>
cudaError_t launch_head_reg(const HeadArgs &a, cudaStream_t st)
{
    constexpr int HPB = 256 / TPH;
    const size_t blocks = (a.heads_total + HPB - 1) / HPB;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    head_kernel<T, V, NP, TPH, KIND><<<(unsigned)blocks, 256, 0, st>>>(a);
    return cudaGetLastError();
}

/* tph below 32: one pair per thread; 32 threads: np pairs */
template <typename T, int V, int TPH, int KIND>
cudaError_t launch_head_tph(const fck_head_plan &p, const HeadArgs &a, cudaStream_t st)
{
    if constexpr (TPH > 32) {
        return cudaErrorInvalidValue;
    } else {
        if (p.tph != TPH) return launch_head_tph<T, V, TPH * 2, KIND>(p, a, st);
        if (TPH < 32) return launch_head_reg<T, V, 1, TPH, KIND>(a, st);
        constexpr int NPMAX = 16 / V;
        switch (p.np) {
        case 1: return launch_head_reg<T, V, 1, 32, KIND>(a, st);
        case 2:
            if constexpr (NPMAX >= 2) return launch_head_reg<T, V, 2, 32, KIND>(a, st);
            break;
        case 4:
            if constexpr (NPMAX >= 4) return launch_head_reg<T, V, 4, 32, KIND>(a, st);
            break;
        case 8:
            if constexpr (NPMAX >= 8) return launch_head_reg<T, V, 8, 32, KIND>(a, st);
            break;
        case 16:
            if constexpr (NPMAX >= 16) return launch_head_reg<T, V, 16, 32, KIND>(a, st);
            break;
        }
        return cudaErrorInvalidValue;
    }
}

template <typename T, int KIND>
cudaError_t launch_head(const HeadArgs &a, cudaStream_t st)
{
    if (a.heads_total == 0) return cudaSuccess;
    const int al = fck_aligned16(a.q) && fck_aligned16(a.gamma) && fck_aligned16(a.cs) && fck_aligned16(a.y);
    const fck_head_plan p = fck_head_plan_make((int)a.d, (int)sizeof(T), al);
    if (p.tph == 0) return cudaErrorInvalidValue;
    return p.vec > 1 ? launch_head_tph<T, 16 / sizeof(T), 1, KIND>(p, a, st) : launch_head_tph<T, 1, 1, KIND>(p, a, st);
}

template <int KIND>
cudaError_t dispatch_head(fck_dtype dt, const HeadArgs &a, cudaStream_t st)
{
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_head<float, KIND>(a, st);
    case FCK_BF16: return launch_head<__nv_bfloat16, KIND>(a, st);
    case FCK_FP16: return launch_head<__half, KIND>(a, st);
    }
    return cudaErrorInvalidValue;
}

} // namespace

/* ---------------------------------------------------------------- launchers */

extern "C" cudaError_t fck_add_rows(fck_dtype dt, const void *x, const void *r, void *h, size_t rows, size_t n,
                                    cudaStream_t stream)
{
    if (n > 0x7fffffffu) return cudaErrorInvalidValue;
    RowArgs a = {x, r, nullptr, nullptr, nullptr, h, rows, (int)n, 0.0f};
    return dispatch_row<ROW_ADD>(dt, a, stream);
}

extern "C" cudaError_t fck_layernorm_rows(fck_dtype dt, const void *x, const void *r, const void *gamma,
                                          const void *beta, float eps, void *y, size_t rows, size_t n,
                                          cudaStream_t stream)
{
    if (n > 0x7fffffffu) return cudaErrorInvalidValue;
    RowArgs a = {x, r, gamma, beta, y, nullptr, rows, (int)n, eps};
    return r ? dispatch_row<ROW_ADD_LN>(dt, a, stream) : dispatch_row<ROW_LN>(dt, a, stream);
}

extern "C" cudaError_t fck_rmsnorm_rows(fck_dtype dt, const void *x, const void *r, const void *gamma, float eps,
                                        void *y, void *h, size_t rows, size_t n, cudaStream_t stream)
{
    if (n > 0x7fffffffu || (r != nullptr) != (h != nullptr)) return cudaErrorInvalidValue;
    RowArgs a = {x, r, gamma, nullptr, y, h, rows, (int)n, eps};
    return r ? dispatch_row<ROW_ADD_RMS>(dt, a, stream) : dispatch_row<ROW_RMS>(dt, a, stream);
}

extern "C" cudaError_t fck_head_norm_rope(fck_dtype dt, const void *q, const void *gamma, const float *cs, float eps,
                                          void *y, size_t m, size_t heads, size_t d, int norm, int rope,
                                          cudaStream_t stream)
{
    if (d == 0 || d % 2 || d > 0xffffu || heads > 0xffffffffu || (!norm && !rope) || (norm && !gamma) || (rope && !cs))
        return cudaErrorInvalidValue;
    HeadArgs a = {q, gamma, cs, y, m * heads, (uint32_t)heads, (uint32_t)d, eps};
    if (norm && rope) return dispatch_head<HEAD_NORM_ROPE>(dt, a, stream);
    return norm ? dispatch_head<HEAD_NORM>(dt, a, stream) : dispatch_head<HEAD_ROPE>(dt, a, stream);
}
