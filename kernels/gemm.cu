/* gemm.cu — fusecal's GEMM, y = x·Wᵀ on mma.sync tensor cores, for the linear sites no
 * library fuses; cuBLASLt's epilogues act on a GEMM's output with bias, ReLU and GELU
 * only, and nothing acts on its input. Three modes (fck_gemm_mode):
 *   FCK_GEMM_GELU_BIAS  y = gelu_tanh(x)·Wᵀ + b: gelu applied to each k-tile of x as it
 *                       is copied into shared memory, so gelu(x) is never written at
 *                       all; the bias added to the accumulators before y is stored.
 *   FCK_GEMM_SWIGLU     y = silu(x·W_gᵀ) ⊙ (x·W_uᵀ), W = [W_g; W_u] [2n, k]: the gate and
 *                       up rows of W interleaved in each W tile (kernel_logic.h) so that
 *                       silu(g)·u is formed in the registers; the [m, 2n] product is
 *                       never written.
 *   FCK_GEMM_PLAIN      y = x·Wᵀ as it is: the controls' GEMM, the fused forms'
 *                       implementation with nothing fused.
 *
 * Shapes: x [m, k], W [n, k] (nn.Linear's weight; [2n, k] gated), y [m, n], b [n],
 * row-major, bf16 or fp16, fp32 accumulation (mma.sync m16n8k16). Geometry:
 * kernel_logic.h's section on this GEMM (128 x 128 tiles, k-tiles of 64, 8 warps of 64 x
 * 32; the grid down groups of 8 rows of tiles a column at a time, fck_gm_block, so that
 * a W tile is read from memory once a group), checked on the host by
 * tests/test_kernel_logic.c's emulation of the copies, fragments and epilogue maps the
 * kernel uses.
 *
 * Pipeline: every thread copies FCK_GM_COPIES 16-byte chunks of each operand's k-tile.
 * Tile kt + 1 is loaded from global memory into registers before tile kt's MMAs are
 * issued, and stored into the other shared buffer after them (x through gelu), so the
 * loads' latency hides behind a whole k-tile of tensor-core work; one barrier per
 * k-tile (the buffer written at kt was last read at kt − 1, before its barrier). Rows
 * of x or W past m or n and columns past k are zero-filled (gelu(0) = 0). Where k is a
 * whole number of chunks (k % 8 == 0) the copies are 16-byte loads; otherwise each
 * chunk is 8 scalar loads (any alignment). 164-177 registers, 64 KiB of shared memory:
 * one block of 8 warps per SM.
 *
 * Cost of the prologue: each element of x is read and put through gelu once per block
 * column of y, n/128 times, on the fp32 pipes: kernel_logic.h's sigmoid form, 7
 * instructions an element. (tanhf's form took 31: by count about 1,700 issue cycles an
 * SM a k-tile, more than the k-tile's 512 mma.sync; an estimate, not a measurement.) The
 * unfused chain's gelu kernel does it once and writes gelu(x) whole (2·m·k·E bytes
 * more, and a launch). The
 * gated epilogue costs nothing of the kind: it saves writing [m, 2n] and the two passes
 * over it. Which form is cheaper is what the records measure; their controls (this
 * kernel in FCK_GEMM_PLAIN inside the unfused chain) separate the fusion from this
 * GEMM being other than cuBLAS's.
 */
#include "attention_common.cuh"

#include <stdio.h>

namespace fck {
namespace {

constexpr int NT = FCK_GM_THREADS, BM = FCK_GM_BM, BN = FCK_GM_BN, BK = FCK_GM_BK;
constexpr int CPR = BK / 8; /* chunks per row of a k-tile */
constexpr int TILE_A = BM * BK, TILE_B = BN * BK;
static_assert(BM == BN, "x and W k-tiles are copied alike");
static_assert(FCK_GM_COPIES * NT == BM * CPR, "whole chunks per thread");
static_assert(fck_gm_smem() == 2 * (size_t)(TILE_A + TILE_B) * 2, "shared memory layout and fck_gm_smem agree");

/* Chunks of one k-tile (columns [k0, k0 + BK)) of rows rows[i] of a [*, k] operand into
 * registers; a row of -1 (past the operand) and columns past k give zeros. */
template <typename T, bool VEC>
__device__ __forceinline__ void load_k_tile(uint4 (&r)[FCK_GM_COPIES], const T *g, const int (&rows)[FCK_GM_COPIES],
                                            int k, int k0, int tid)
{
    const int gc = k0 + fck_copy_chunk(tid, CPR) * 8;
#pragma unroll
    for (int i = 0; i < FCK_GM_COPIES; i++) {
        const bool in = rows[i] >= 0;
        const T *p = g + (size_t)(in ? rows[i] : 0) * (size_t)k + gc;
        if (VEC) {
            r[i] = in && gc < k ? ld16(p) : make_uint4(0, 0, 0, 0);
        } else {
            float f[8];
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = in && gc + j < k ? to_f(p[j]) : 0.0f;
            r[i] = pack<T>(f);
        }
    }
}

/* The registers' chunks into a k-tile buffer, through gelu when GELU. */
template <typename T, bool GELU>
__device__ __forceinline__ void store_k_tile(T *sm, const uint4 (&r)[FCK_GM_COPIES], int tid)
{
    const int ch = fck_copy_chunk(tid, CPR);
#pragma unroll
    for (int i = 0; i < FCK_GM_COPIES; i++) {
        T *p = sm + fck_gm_off(fck_copy_row(tid, i, NT, CPR), ch * 8);
        if (GELU) {
            float f[8];
            unpack<T>(r[i], f);
#pragma unroll
            for (int j = 0; j < 8; j++) f[j] = gelu_for<T>(f[j]);
            st16(p, pack<T>(f));
        } else {
            st16(p, r[i]);
        }
    }
}

/* One k-tile's MMAs: BK / 16 k-steps, each 4 A fragments and 2 x 2 B fragments by
 * ldmatrix.x4 for 16 mma.sync. */
template <int KIND>
__device__ __forceinline__ void mma_k_tile(float (&acc)[FCK_GM_MT][FCK_GM_NT][4], const typename Kind<KIND>::T *As,
                                           const typename Kind<KIND>::T *Bs, int warp, int lane)
{
#pragma unroll
    for (int ks = 0; ks < BK / 16; ks++) {
        uint32_t a[FCK_GM_MT][4];
#pragma unroll
        for (int mi = 0; mi < FCK_GM_MT; mi++)
            ldsm_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3], As + fck_gm_a_frag(warp, mi, ks, lane));
#pragma unroll
        for (int np = 0; np < FCK_GM_NT / 2; np++) {
            uint32_t b[4];
            ldsm_x4(b[0], b[1], b[2], b[3], Bs + fck_gm_b_frag(warp, np, ks, lane));
#pragma unroll
            for (int mi = 0; mi < FCK_GM_MT; mi++) {
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

/* y[row, col] = v0 and y[row, col + 1] = v1 where inside y [m, n] (col even): one 32-bit
 * store where both are and the pair is 4-byte aligned (n even), else one by one. */
template <typename T>
__device__ __forceinline__ void store_pair(T *y, int row, int col, int m, int n, float v0, float v1)
{
    if (row >= m) return;
    T *p = y + (size_t)row * (size_t)n + col;
    if (col + 1 < n && (n & 1) == 0) {
        *reinterpret_cast<uint32_t *>(p) = pack_pair<T>(v0, v1);
    } else {
        if (col < n) p[0] = from_f<T>(v0);
        if (col + 1 < n) p[1] = from_f<T>(v1);
    }
}

/* y [m, n] by MODE (fck_gemm_mode); W [n, k], or [2n, k] gated. */
template <int KIND, int MODE, bool VEC>
__global__ void __launch_bounds__(NT)
    gemm_kernel(const typename Kind<KIND>::T *__restrict__ x, const typename Kind<KIND>::T *__restrict__ w,
                const typename Kind<KIND>::T *__restrict__ bias, typename Kind<KIND>::T *__restrict__ y, int m, int n,
                int k, int nbm, int nbn)
{
    typedef typename Kind<KIND>::T T;
    constexpr bool GELU = MODE == FCK_GEMM_GELU_BIAS, GLU = MODE == FCK_GEMM_SWIGLU;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *As = reinterpret_cast<T *>(smem_raw); /* [2][TILE_A], then [2][TILE_B] */
    T *Bs = As + 2 * TILE_A;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int bm, bn;
    fck_gm_block((int)blockIdx.x, nbm, nbn, &bm, &bn);
    const int m0 = bm * BM, n0 = bn * fck_gm_cols(GLU), kts = (k + BK - 1) / BK;

    /* the rows of x and of W this thread copies, the same in every k-tile */
    int xrow[FCK_GM_COPIES], wrow[FCK_GM_COPIES];
#pragma unroll
    for (int i = 0; i < FCK_GM_COPIES; i++) {
        const int r = fck_copy_row(tid, i, NT, CPR);
        xrow[i] = m0 + r < m ? m0 + r : -1;
        wrow[i] = (int)fck_gm_w_row(r, bn, n, GLU);
    }

    float acc[FCK_GM_MT][FCK_GM_NT][4];
#pragma unroll
    for (int mi = 0; mi < FCK_GM_MT; mi++)
#pragma unroll
        for (int nt = 0; nt < FCK_GM_NT; nt++) acc[mi][nt][0] = acc[mi][nt][1] = acc[mi][nt][2] = acc[mi][nt][3] = 0.0f;

    uint4 ra[FCK_GM_COPIES], rb[FCK_GM_COPIES];
    load_k_tile<T, VEC>(ra, x, xrow, k, 0, tid);
    load_k_tile<T, VEC>(rb, w, wrow, k, 0, tid);
    store_k_tile<T, GELU>(As, ra, tid);
    store_k_tile<T, false>(Bs, rb, tid);
    __syncthreads();
#pragma unroll 1
    for (int kt = 0; kt < kts; kt++) {
        const int cur = kt & 1;
        const bool next = kt + 1 < kts;
        if (next) {
            load_k_tile<T, VEC>(ra, x, xrow, k, (kt + 1) * BK, tid);
            load_k_tile<T, VEC>(rb, w, wrow, k, (kt + 1) * BK, tid);
        }
        mma_k_tile<KIND>(acc, As + cur * TILE_A, Bs + cur * TILE_B, warp, lane);
        if (next) {
            store_k_tile<T, GELU>(As + (cur ^ 1) * TILE_A, ra, tid);
            store_k_tile<T, false>(Bs + (cur ^ 1) * TILE_B, rb, tid);
        }
        __syncthreads();
    }

    if constexpr (GLU) { /* n-tiles 2p (gate) and 2p + 1 (up) hold the same columns in the same lanes */
#pragma unroll
        for (int p = 0; p < FCK_GM_NT / 2; p++) {
            const int col = n0 + fck_gm_glu_col(warp, p, lane, 0);
#pragma unroll
            for (int mi = 0; mi < FCK_GM_MT; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const float *g = &acc[mi][2 * p][2 * h], *u = &acc[mi][2 * p + 1][2 * h];
                    store_pair(y, m0 + fck_gm_c_row(warp, mi, lane, 2 * h), col, m, n, silu(g[0]) * u[0],
                               silu(g[1]) * u[1]);
                }
        }
    } else {
#pragma unroll
        for (int nt = 0; nt < FCK_GM_NT; nt++) {
            const int col = n0 + fck_gm_c_col(warp, nt, lane, 0);
            float b0 = 0.0f, b1 = 0.0f;
            if (GELU) { /* the bias with the prologue (gelu_linear) */
                b0 = col < n ? to_f(bias[col]) : 0.0f;
                b1 = col + 1 < n ? to_f(bias[col + 1]) : 0.0f;
            }
#pragma unroll
            for (int mi = 0; mi < FCK_GM_MT; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    store_pair(y, m0 + fck_gm_c_row(warp, mi, lane, 2 * h), col, m, n, acc[mi][nt][2 * h] + b0,
                               acc[mi][nt][2 * h + 1] + b1);
        }
    }
}

/* Raises the kernel's dynamic shared memory limit to what it uses, once per instance
 * (above 48 KiB a launch fails without it, and the occupancy calculator answers 0). */
template <int KIND, int MODE, bool VEC>
cudaError_t configure()
{
    static bool done = false;
    if (done) return cudaSuccess;
    cudaError_t e = cudaFuncSetAttribute(gemm_kernel<KIND, MODE, VEC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)fck_gm_smem());
    done = e == cudaSuccess;
    return e;
}

template <int KIND, int MODE, bool VEC>
cudaError_t launch(const void *x, const void *w, const void *b, void *y, int m, int n, int k, cudaStream_t stream)
{
    typedef typename Kind<KIND>::T T;
    constexpr bool GLU = MODE == FCK_GEMM_SWIGLU;
    cudaError_t e = configure<KIND, MODE, VEC>();
    if (e != cudaSuccess) return e;
    const long long blocks = fck_gm_blocks(m, n, GLU);
    const int nbm = (m + BM - 1) / BM, nbn = (n + fck_gm_cols(GLU) - 1) / fck_gm_cols(GLU);
    gemm_kernel<KIND, MODE, VEC>
        <<<(unsigned)blocks, NT, fck_gm_smem(), stream>>>(static_cast<const T *>(x), static_cast<const T *>(w),
                                                          static_cast<const T *>(b), static_cast<T *>(y), m, n, k, nbm,
                                                          nbn);
    return cudaGetLastError();
}

const char *mode_name(int mode)
{
    return mode == FCK_GEMM_GELU_BIAS ? "gelu prologue, bias epilogue"
           : mode == FCK_GEMM_SWIGLU  ? "gate/up interleaved, silu(g)*u epilogue"
                                      : "plain";
}

template <int KIND, int MODE, bool VEC>
int resources(char *buf, size_t len)
{
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, gemm_kernel<KIND, MODE, VEC>);
    int per_sm = 0;
    if (e == cudaSuccess) e = configure<KIND, MODE, VEC>();
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_kernel<KIND, MODE, VEC>, NT, fck_gm_smem());
    if (e != cudaSuccess)
        return snprintf(buf, len, "gemm<%s>(fusecal, %s): attributes unavailable (%s)", mode_name(MODE),
                        kind_name(KIND), cudaGetErrorString(e));
    return snprintf(buf, len,
                    "gemm<%s>(fusecal, %s, mma.sync m16n8k16): %dx%d tiles of W, k-tiles of %d, %d warps of %dx%d, %s "
                    "copies, %d regs, %zu B dynamic smem, %zu B local, %d blocks/SM",
                    mode_name(MODE), kind_name(KIND), BM, BN, BK, NT / 32, 16 * FCK_GM_MT, 8 * FCK_GM_NT,
                    VEC ? "16-byte" : "scalar", a.numRegs, fck_gm_smem(), (size_t)a.localSizeBytes, per_sm);
}

} // namespace
} // namespace fck

#define FCK_GM_MODES(FN, KIND, ...)                                         \
    switch (mode) {                                                         \
    case FCK_GEMM_PLAIN:                                                    \
        return vec ? fck::FN<KIND, FCK_GEMM_PLAIN, true>(__VA_ARGS__)       \
                   : fck::FN<KIND, FCK_GEMM_PLAIN, false>(__VA_ARGS__);     \
    case FCK_GEMM_GELU_BIAS:                                                \
        return vec ? fck::FN<KIND, FCK_GEMM_GELU_BIAS, true>(__VA_ARGS__)   \
                   : fck::FN<KIND, FCK_GEMM_GELU_BIAS, false>(__VA_ARGS__); \
    case FCK_GEMM_SWIGLU:                                                   \
        return vec ? fck::FN<KIND, FCK_GEMM_SWIGLU, true>(__VA_ARGS__)      \
                   : fck::FN<KIND, FCK_GEMM_SWIGLU, false>(__VA_ARGS__);    \
    }                                                                       \
    break;
#define FCK_GM_DISPATCH(FN, ...)                           \
    switch (dt) {                                          \
    case FCK_BF16: FCK_GM_MODES(FN, FCK_BF16, __VA_ARGS__) \
    case FCK_FP16: FCK_GM_MODES(FN, FCK_FP16, __VA_ARGS__) \
    default: break;                                        \
    }

extern "C" int fck_gemm_supports(fck_dtype dt, fck_gemm_mode mode, long long m, long long n, long long k)
{
    const long long wrows = mode == FCK_GEMM_SWIGLU ? 2 * n : n;
    return (dt == FCK_BF16 || dt == FCK_FP16) && mode >= FCK_GEMM_PLAIN && mode <= FCK_GEMM_SWIGLU && k >= 1 &&
           m <= 0x7fffffffLL && wrows <= 0x7fffffffLL && k <= 0x7fffffffLL - FCK_GM_BK &&
           fck_gm_blocks(m, n, mode == FCK_GEMM_SWIGLU) > 0;
}

extern "C" cudaError_t fck_gemm_prepare(fck_dtype dt, fck_gemm_mode fused, int k)
{
    const bool vec = k % 8 == 0;
    const fck_gemm_mode modes[2] = {FCK_GEMM_PLAIN, fused};
    for (int i = 0; i < 2; i++) {
        const fck_gemm_mode mode = modes[i];
        cudaError_t e = [&]() -> cudaError_t {
            FCK_GM_DISPATCH(configure)
            return cudaErrorInvalidValue;
        }();
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

extern "C" cudaError_t fck_gemm(fck_dtype dt, fck_gemm_mode mode, const void *x, const void *w, const void *b, void *y,
                                int m, int n, int k, cudaStream_t stream)
{
    /* y's pairs of 16-bit values are stored as 32-bit words */
    if (!fck_gemm_supports(dt, mode, m, n, k) || (mode == FCK_GEMM_GELU_BIAS && !b) || (uintptr_t)y % 4)
        return cudaErrorInvalidValue;
    /* 16-byte copies where k is whole chunks and x and W start on 16 bytes, else scalar */
    const bool vec = k % 8 == 0 && ((uintptr_t)x | (uintptr_t)w) % 16 == 0;
    FCK_GM_DISPATCH(launch, x, w, b, y, m, n, k, stream)
    return cudaErrorInvalidValue;
}

extern "C" int fck_gemm_describe(fck_dtype dt, fck_gemm_mode mode, int k, char *buf, size_t len)
{
    const bool vec = k % 8 == 0;
    FCK_GM_DISPATCH(resources, buf, len)
    return snprintf(buf, len, "gemm: not a 16-bit dtype or a mode of fck_gemm_mode");
}
