/* prologue_gemm.cu — a GEMM with a GELU prologue, y = gelu_tanh(x)·Wᵀ + b, for the one
 * linear site no library fuses: cuBLASLt's epilogues act on a GEMM's output, and none
 * of them on its input. gelu(x) is applied to each k-tile of x as it is copied into
 * shared memory, so it is never written to global memory at all; the bias is added to
 * the accumulators before y is stored. The same kernel without either (gelu = 0) is the
 * control's GEMM: the fused form's implementation with nothing fused.
 *
 * Shapes: x [m, k], W [n, k] (nn.Linear's weight), y [m, n], b [n], row-major, bf16 or
 * fp16, fp32 accumulation (mma.sync m16n8k16). Geometry: kernel_logic.h's prologue GEMM
 * section (128 x 128 tiles of y, k-tiles of 64, 8 warps of 64 x 32), checked on the host
 * by tests/test_kernel_logic.c's emulation of the fragments the kernel reads.
 *
 * Pipeline: every thread copies FCK_PG_COPIES 16-byte chunks of each operand's k-tile.
 * Tile kt + 1 is loaded from global memory into registers before tile kt's MMAs are
 * issued, and stored into the other shared buffer after them (x through gelu), so the
 * loads' latency hides behind a whole k-tile of tensor-core work; one barrier per
 * k-tile (the buffer written at kt was last read at kt − 1, before its barrier). Rows
 * of x or W past m or n and columns past k are zero-filled (gelu(0) = 0). Where k is a
 * whole number of chunks (k % 8 == 0) the copies are 16-byte loads; otherwise each
 * chunk is 8 scalar loads (any alignment).
 *
 * Cost of the prologue: each element of x is read and put through gelu once per block
 * column of y, n/128 times (tanhf on the fp32 pipes), where the unfused chain's gelu
 * kernel does it once and writes gelu(x) whole (2·m·k·E bytes more, and one launch).
 * Which of the two is cheaper is what the record measures; its control (gelu kernel →
 * this kernel without the prologue → bias kernel) separates the fusion from this
 * kernel's GEMM being other than cuBLAS's.
 */
#include "attention_common.cuh"

#include <stdio.h>

namespace fck {
namespace {

constexpr int NT = FCK_PG_THREADS, BM = FCK_PG_BM, BN = FCK_PG_BN, BK = FCK_PG_BK;
constexpr int CPR = BK / 8; /* chunks per row of a k-tile */
constexpr int TILE_A = BM * BK, TILE_B = BN * BK;
static_assert(BM == BN, "x and W k-tiles are copied alike");
static_assert(FCK_PG_COPIES * NT == BM * CPR, "whole chunks per thread");
static_assert(fck_pg_smem() == 2 * (size_t)(TILE_A + TILE_B) * 2, "shared memory layout and fck_pg_smem agree");

/* Chunks of a k-tile of rows [row0, row0 + BM) of a [rows, k] operand, columns [k0, k0 +
 * BK), into registers; zeros outside the operand. */
template <typename T, bool VEC>
__device__ __forceinline__ void load_k_tile(uint4 (&r)[FCK_PG_COPIES], const T *g, int row0, int rows, int k, int k0,
                                            int tid)
{
    const int ch = fck_copy_chunk(tid, CPR), gc = k0 + ch * 8;
#pragma unroll
    for (int i = 0; i < FCK_PG_COPIES; i++) {
        const int gr = row0 + fck_copy_row(tid, i, NT, CPR);
        const T *p = g + (size_t)gr * (size_t)k + gc;
        if (VEC) {
            r[i] = gr < rows && gc < k ? ld16(p) : make_uint4(0, 0, 0, 0);
        } else {
            float f[8];
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = gr < rows && gc + j < k ? to_f(p[j]) : 0.0f;
            r[i] = pack<T>(f);
        }
    }
}

/* The registers' chunks into a k-tile buffer, through gelu when GELU. */
template <typename T, bool GELU>
__device__ __forceinline__ void store_k_tile(T *sm, const uint4 (&r)[FCK_PG_COPIES], int tid)
{
    const int ch = fck_copy_chunk(tid, CPR);
#pragma unroll
    for (int i = 0; i < FCK_PG_COPIES; i++) {
        T *p = sm + fck_pg_off(fck_copy_row(tid, i, NT, CPR), ch * 8);
        if (GELU) {
            float f[8];
            unpack<T>(r[i], f);
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = gelu_tanh(f[j]);
            st16(p, pack<T>(f));
        } else {
            st16(p, r[i]);
        }
    }
}

/* One k-tile's MMAs: BK / 16 k-steps, each 4 A fragments and 2 x 2 B fragments by
 * ldmatrix.x4 for 16 mma.sync. */
template <int KIND>
__device__ __forceinline__ void mma_k_tile(float (&acc)[FCK_PG_MT][FCK_PG_NT][4], const typename Kind<KIND>::T *As,
                                           const typename Kind<KIND>::T *Bs, int warp, int lane)
{
#pragma unroll
    for (int ks = 0; ks < BK / 16; ks++) {
        uint32_t a[FCK_PG_MT][4];
#pragma unroll
        for (int mi = 0; mi < FCK_PG_MT; mi++)
            ldsm_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3], As + fck_pg_a_frag(warp, mi, ks, lane));
#pragma unroll
        for (int np = 0; np < FCK_PG_NT / 2; np++) {
            uint32_t b[4];
            ldsm_x4(b[0], b[1], b[2], b[3], Bs + fck_pg_b_frag(warp, np, ks, lane));
#pragma unroll
            for (int mi = 0; mi < FCK_PG_MT; mi++) {
                mma16<KIND>(acc[mi][2 * np], a[mi], b[0], b[1]);
                mma16<KIND>(acc[mi][2 * np + 1], a[mi], b[2], b[3]);
            }
        }
    }
}

/* Two adjacent outputs (columns col, col + 1 of a row) as one 32-bit word. */
template <typename T>
__device__ __forceinline__ uint32_t pack_pair(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack_pair<__nv_bfloat16>(float lo, float hi)
{
    return pack2_bf16(lo, hi);
}
template <>
__device__ __forceinline__ uint32_t pack_pair<__half>(float lo, float hi)
{
    return pack2_f16(lo, hi);
}

/* FUSED: gelu on x's k-tiles and + b[col] on the accumulators; else x·Wᵀ as it is. */
template <int KIND, bool FUSED, bool VEC>
__global__ void __launch_bounds__(NT)
    prologue_gemm_kernel(const typename Kind<KIND>::T *__restrict__ x, const typename Kind<KIND>::T *__restrict__ w,
                         const typename Kind<KIND>::T *__restrict__ bias, typename Kind<KIND>::T *__restrict__ y, int m,
                         int n, int k, int nbn)
{
    typedef typename Kind<KIND>::T T;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *As = reinterpret_cast<T *>(smem_raw); /* [2][TILE_A], then [2][TILE_B] */
    T *Bs = As + 2 * TILE_A;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int bm, bn;
    fck_pg_block((int)blockIdx.x, nbn, &bm, &bn);
    const int m0 = bm * BM, n0 = bn * BN, kts = (k + BK - 1) / BK;

    float acc[FCK_PG_MT][FCK_PG_NT][4];
#pragma unroll
    for (int mi = 0; mi < FCK_PG_MT; mi++)
#pragma unroll
        for (int nt = 0; nt < FCK_PG_NT; nt++) acc[mi][nt][0] = acc[mi][nt][1] = acc[mi][nt][2] = acc[mi][nt][3] = 0.0f;

    uint4 ra[FCK_PG_COPIES], rb[FCK_PG_COPIES];
    load_k_tile<T, VEC>(ra, x, m0, m, k, 0, tid);
    load_k_tile<T, VEC>(rb, w, n0, n, k, 0, tid);
    store_k_tile<T, FUSED>(As, ra, tid);
    store_k_tile<T, false>(Bs, rb, tid);
    __syncthreads();
#pragma unroll 1
    for (int kt = 0; kt < kts; kt++) {
        const int cur = kt & 1;
        const bool next = kt + 1 < kts;
        if (next) {
            load_k_tile<T, VEC>(ra, x, m0, m, k, (kt + 1) * BK, tid);
            load_k_tile<T, VEC>(rb, w, n0, n, k, (kt + 1) * BK, tid);
        }
        mma_k_tile<KIND>(acc, As + cur * TILE_A, Bs + cur * TILE_B, warp, lane);
        if (next) {
            store_k_tile<T, FUSED>(As + (cur ^ 1) * TILE_A, ra, tid);
            store_k_tile<T, false>(Bs + (cur ^ 1) * TILE_B, rb, tid);
        }
        __syncthreads();
    }

    /* y: each accumulator pair (columns col, col + 1 of one row) as one 32-bit store
     * where both are inside y and the pair is 4-byte aligned (n even), else one by one */
#pragma unroll
    for (int nt = 0; nt < FCK_PG_NT; nt++) {
        const int col = n0 + fck_pg_c_col(warp, nt, lane, 0);
        float b0 = 0.0f, b1 = 0.0f;
        if (FUSED) {
            b0 = col < n ? to_f(bias[col]) : 0.0f;
            b1 = col + 1 < n ? to_f(bias[col + 1]) : 0.0f;
        }
#pragma unroll
        for (int mi = 0; mi < FCK_PG_MT; mi++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int row = m0 + fck_pg_c_row(warp, mi, lane, 2 * h);
                if (row >= m) continue;
                const float v0 = acc[mi][nt][2 * h] + b0, v1 = acc[mi][nt][2 * h + 1] + b1;
                T *p = y + (size_t)row * (size_t)n + col;
                if (col + 1 < n && (n & 1) == 0) {
                    *reinterpret_cast<uint32_t *>(p) = pack_pair<T>(v0, v1);
                } else {
                    if (col < n) p[0] = from_f<T>(v0);
                    if (col + 1 < n) p[1] = from_f<T>(v1);
                }
            }
    }
}

/* Raises the kernel's dynamic shared memory limit to what it uses, once per instance
 * (above 48 KiB a launch fails without it, and the occupancy calculator answers 0). */
template <int KIND, bool FUSED, bool VEC>
cudaError_t configure()
{
    static bool done = false;
    if (done) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(prologue_gemm_kernel<KIND, FUSED, VEC>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)fck_pg_smem());
    done = e == cudaSuccess;
    return e;
}

template <int KIND, bool FUSED, bool VEC>
cudaError_t launch(const void *x, const void *w, const void *b, void *y, int m, int n, int k, cudaStream_t stream)
{
    typedef typename Kind<KIND>::T T;
    cudaError_t e = configure<KIND, FUSED, VEC>();
    if (e != cudaSuccess) return e;
    const long long blocks = fck_pg_blocks(m, n);
    const int nbn = (n + BN - 1) / BN;
    prologue_gemm_kernel<KIND, FUSED, VEC>
        <<<(unsigned)blocks, NT, fck_pg_smem(), stream>>>(static_cast<const T *>(x), static_cast<const T *>(w),
                                                          static_cast<const T *>(b), static_cast<T *>(y), m, n, k, nbn);
    return cudaGetLastError();
}

template <int KIND, bool FUSED, bool VEC>
int resources(char *buf, size_t len)
{
    cudaFuncAttributes a;
    const char *name = FUSED ? "prologue_gemm<gelu,bias>" : "prologue_gemm<none>";
    cudaError_t e = cudaFuncGetAttributes(&a, prologue_gemm_kernel<KIND, FUSED, VEC>);
    int per_sm = 0;
    if (e == cudaSuccess) e = configure<KIND, FUSED, VEC>();
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, prologue_gemm_kernel<KIND, FUSED, VEC>, NT,
                                                          fck_pg_smem());
    if (e != cudaSuccess)
        return snprintf(buf, len, "%s(%s): attributes unavailable (%s)", name, kind_name(KIND), cudaGetErrorString(e));
    return snprintf(buf, len,
                    "%s(fusecal, %s, mma.sync m16n8k16): %dx%d tiles, k-tiles of %d, %d warps of %dx%d, %s copies, "
                    "%d regs, %zu B dynamic smem, %zu B local, %d blocks/SM",
                    name, kind_name(KIND), BM, BN, BK, NT / 32, 16 * FCK_PG_MT, 8 * FCK_PG_NT,
                    VEC ? "16-byte" : "scalar", a.numRegs, fck_pg_smem(), (size_t)a.localSizeBytes, per_sm);
}

} // namespace
} // namespace fck

#define FCK_PG_DISPATCH(FN, ...)                                                                                      \
    switch (dt) {                                                                                                     \
    case FCK_BF16:                                                                                                    \
        return fused                                                                                                  \
                   ? (vec ? fck::FN<FCK_BF16, true, true>(__VA_ARGS__) : fck::FN<FCK_BF16, true, false>(__VA_ARGS__)) \
                   : (vec ? fck::FN<FCK_BF16, false, true>(__VA_ARGS__)                                               \
                          : fck::FN<FCK_BF16, false, false>(__VA_ARGS__));                                            \
    case FCK_FP16:                                                                                                    \
        return fused                                                                                                  \
                   ? (vec ? fck::FN<FCK_FP16, true, true>(__VA_ARGS__) : fck::FN<FCK_FP16, true, false>(__VA_ARGS__)) \
                   : (vec ? fck::FN<FCK_FP16, false, true>(__VA_ARGS__)                                               \
                          : fck::FN<FCK_FP16, false, false>(__VA_ARGS__));                                            \
    default: break;                                                                                                   \
    }

extern "C" int fck_prologue_gemm_supports(fck_dtype dt, long long m, long long n, long long k)
{
    return (dt == FCK_BF16 || dt == FCK_FP16) && k >= 1 && m <= 0x7fffffffLL && n <= 0x7fffffffLL &&
           k <= 0x7fffffffLL - FCK_PG_BK && fck_pg_blocks(m, n) > 0;
}

extern "C" cudaError_t fck_prologue_gemm_prepare(fck_dtype dt, int k)
{
    const bool vec = k % 8 == 0;
    for (int fused = 0; fused < 2; fused++) {
        cudaError_t e = [&]() -> cudaError_t {
            FCK_PG_DISPATCH(configure)
            return cudaErrorInvalidValue;
        }();
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

extern "C" cudaError_t fck_prologue_gemm(fck_dtype dt, int fused, const void *x, const void *w, const void *b, void *y,
                                         int m, int n, int k, cudaStream_t stream)
{
    if (!fck_prologue_gemm_supports(dt, m, n, k) || (fused && !b)) return cudaErrorInvalidValue;
    const bool vec = k % 8 == 0;
    FCK_PG_DISPATCH(launch, x, w, b, y, m, n, k, stream)
    return cudaErrorInvalidValue;
}

extern "C" int fck_prologue_gemm_describe(fck_dtype dt, int fused, int k, char *buf, size_t len)
{
    const bool vec = k % 8 == 0;
    FCK_PG_DISPATCH(resources, buf, len)
    return snprintf(buf, len, "prologue_gemm: %s is not a 16-bit dtype", dt == FCK_TF32 ? "tf32" : "fp32");
}
