/* elementwise.cu — the memory-bound passes of fusecal's unfused chains (bias, residual
 * add, ReLU, GELU, scale + causal mask, row softmax, per-channel affine) and small
 * utilities (random fill, empty kernel).
 *
 * Napkin math: each pass reads its inputs once and writes its output once; at the
 * H100's ~3 TB/s (copy, read + write) a bf16 pass over 64 Mi elements moves 256 MiB
 * and should take ~90 µs. So every thread moves 16-byte vectors (4 fp32 or 8
 * bf16/fp16 elements), several of them in flight before the first use, and the
 * index arithmetic stays out of the per-element path (one division per vector).
 */
#include "fusecal_kernels.h"
#include "kernel_logic.h"
#include "kernel_util.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4; /* vectors per thread, loaded before any is used */

enum Op { OP_BIAS, OP_ADD, OP_RELU, OP_GELU, OP_SCALE, OP_SCALE_MASK };

struct EwArgs {
    const void *x, *b; /* b: bias [cols] or residual [n] */
    void *y;
    size_t n, cols; /* cols: bias length, or skv for the scale/mask ops */
    float scale;
    size_t s, koff; /* the causal mask: queries per head, and skv − s (query i's last key is i + koff) */
};

/* The op on one element of value v; w is the second operand (bias, residual) where
 * there is one; for the causal mask, j is the key index and i the query's last key (its
 * index + skv − s). */
template <typename T, int OP>
__device__ __forceinline__ float apply(float v, float w, float scale, size_t j, size_t i)
{
    if (OP == OP_BIAS || OP == OP_ADD) return v + w;
    if (OP == OP_RELU) return fmaxf(v, 0.0f);
    if (OP == OP_GELU) return fck::gelu_for<T>(v);
    if (OP == OP_SCALE) return v * scale;
    return j > i ? -INFINITY : v * scale; /* OP_SCALE_MASK */
}

/* y[0..n) = op(x) over [rows of `cols`]: each thread takes kUnroll vectors spaced a
 * grid apart; the tail (n % V elements) is done by the first threads. */
template <typename T, int OP>
__global__ void __launch_bounds__(kThreads) ew_kernel(EwArgs a)
{
    constexpr int V = 16 / sizeof(T);
    const T *x = static_cast<const T *>(a.x);
    const T *b = static_cast<const T *>(a.b);
    T *y = static_cast<T *>(a.y);
    const size_t nvec = a.n / V;
    const size_t nthreads = (size_t)gridDim.x * blockDim.x;
    const size_t t0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const bool small = a.n <= 0xffffffffu;

    uint4 xv[kUnroll], bv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
        size_t vi = t0 + (size_t)u * nthreads;
        if (vi < nvec) {
            xv[u] = fck::ld16(x + vi * V);
            if (OP == OP_ADD) bv[u] = fck::ld16(b + vi * V);
        }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
        size_t vi = t0 + (size_t)u * nthreads;
        if (vi >= nvec) continue;
        size_t base = vi * V;
        float xs[V], ws[V];
        fck::unpack<T>(xv[u], xs);
        size_t col = 0, row = 0;
        if (OP == OP_BIAS || OP == OP_SCALE_MASK) {
            if (small) { /* 32-bit division: a fraction of the 64-bit one's cost */
                uint32_t q = (uint32_t)base / (uint32_t)a.cols;
                col = (uint32_t)base - q * (uint32_t)a.cols;
                if (OP == OP_SCALE_MASK) row = q % (uint32_t)a.s;
            } else {
                col = base % a.cols;
                if (OP == OP_SCALE_MASK) row = (base / a.cols) % a.s;
            }
        }
        if (OP == OP_ADD) fck::unpack<T>(bv[u], ws);
        if (OP == OP_BIAS) {
            if (a.cols % V == 0) { /* the vector lies in one row: one 16-byte load of b */
                fck::unpack<T>(fck::ld16(b + col), ws);
            } else {
                size_t c = col;
#pragma unroll
                for (int j = 0; j < V; j++) {
                    ws[j] = fck::to_f(b[c]);
                    if (++c == a.cols) c = 0;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++) {
            xs[j] = apply<T, OP>(xs[j], (OP == OP_BIAS || OP == OP_ADD) ? ws[j] : 0.0f, a.scale, col, row + a.koff);
            if (OP == OP_SCALE_MASK && ++col == a.cols) {
                col = 0;
                if (++row == a.s) row = 0;
            }
        }
        fck::st16(y + base, fck::pack<T>(xs));
    }
    /* tail */
    size_t ti = nvec * V + t0;
    if (ti < a.n) {
        float v = fck::to_f(x[ti]), w = 0;
        size_t col = (OP == OP_BIAS || OP == OP_SCALE_MASK) ? ti % a.cols : 0;
        size_t row = OP == OP_SCALE_MASK ? (ti / a.cols) % a.s + a.koff : 0;
        if (OP == OP_ADD) w = fck::to_f(b[ti]);
        if (OP == OP_BIAS) w = fck::to_f(b[col]);
        y[ti] = fck::from_f<T>(apply<T, OP>(v, w, a.scale, col, row));
    }
}

template <typename T, int OP>
cudaError_t launch_ew(const EwArgs &a, cudaStream_t st)
{
    if (a.n == 0) return cudaSuccess;
    constexpr int V = 16 / sizeof(T);
    size_t nvec = a.n / V;
    size_t threads = (nvec + kUnroll - 1) / kUnroll;
    if (threads < (size_t)V) threads = V; /* the tail needs up to V-1 threads */
    size_t blocks = (threads + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    ew_kernel<T, OP><<<(unsigned)blocks, kThreads, 0, st>>>(a);
    return cudaGetLastError();
}

template <int OP>
cudaError_t dispatch_ew(fck_dtype dt, const EwArgs &a, cudaStream_t st)
{
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_ew<float, OP>(a, st);
    case FCK_BF16: return launch_ew<__nv_bfloat16, OP>(a, st);
    case FCK_FP16: return launch_ew<__half, OP>(a, st);
    }
    return cudaErrorInvalidValue;
}

/* ---------------------------------------------------------------- row softmax
 * One read and one write per element: the row sits in registers between the two.
 * Plan (fck_softmax_plan_make, kernel_logic.h): a warp per row up to 1024 columns (8 rows
 * per 256-thread block), 64 to 1024 threads per row up to 32768, each thread holding at
 * most 32 elements in 16-byte vectors (16 scalars, up to 16384 columns, where a row is not
 * a whole number of vectors); past that, the two-pass kernel below.
 *
 * Napkin math: bytes = 2·rows·cols·E, so the kernel should run at copy bandwidth. At
 * b=4, h=16, s=4096 (rows = 262144, cols = 4096, bf16) that is 4.3 GB, ~1.45 ms at the
 * H100's ~3 TB/s. Reading each row twice (with 64 rows of 8 KiB in flight per SM, 132
 * SMs: 69 MB, past the 50 MB L2) moved ~6.4 GB. */
template <typename T, int V, int NV, int TPR>
__global__ void __launch_bounds__(TPR < 256 ? 256 : TPR)
    softmax_rows_kernel(const T *__restrict__ x, T *__restrict__ y, size_t rows, int cols)
{
    constexpr int RPB = TPR < 256 ? 256 / TPR : 1, NWR = TPR / 32; /* rows per block, warps per row */
    static_assert(NV * V <= fck_softmax_ept(V) && RPB * NWR <= 32, "softmax plan");
    __shared__ float red[2][32];
    const int tr = (int)threadIdx.x % TPR, rb = (int)threadIdx.x / TPR, wr = tr / 32;
    const size_t row = (size_t)blockIdx.x * RPB + rb;
    const bool live = row < rows; /* no early exit: the block's barriers need every thread */
    const T *xr = x + (live ? row : 0) * (size_t)cols;
    T *yr = y + (live ? row : 0) * (size_t)cols;
    const float L2E = 1.4426950408889634f;

    float v[NV][V];
#pragma unroll
    for (int j = 0; j < NV; j++) { /* every load issued before the first use */
        const int c = fck_softmax_col(j, tr, TPR, V);
        if (live && c < cols) {
            if (V > 1) fck::unpack<T>(fck::ld16(xr + c), v[j]);
            else
                v[j][0] = fck::to_f(xr[c]);
        } else {
#pragma unroll
            for (int e = 0; e < V; e++) v[j][e] = -INFINITY;
        }
    }
    float m = -INFINITY;
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int e = 0; e < V; e++) m = fmaxf(m, v[j][e]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (NWR > 1) {
        if ((tr & 31) == 0) red[0][rb * NWR + wr] = m;
        __syncthreads();
#pragma unroll
        for (int w = 0; w < NWR; w++) m = fmaxf(m, red[0][rb * NWR + w]);
    }
    const float nb = m == -INFINITY ? 0.0f : -m * L2E; /* a row all -inf gives 0/0 */
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; j++)
#pragma unroll
        for (int e = 0; e < V; e++) {
            v[j][e] = fck_osm_p(v[j][e], L2E, nb); /* exp(x - max); -inf: 0 */
            sum += v[j][e];
        }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (NWR > 1) {
        if ((tr & 31) == 0) red[1][rb * NWR + wr] = sum;
        __syncthreads();
        sum = 0.0f;
#pragma unroll
        for (int w = 0; w < NWR; w++) sum += red[1][rb * NWR + w];
    }
    const float inv = 1.0f / sum;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        const int c = fck_softmax_col(j, tr, TPR, V);
        if (!live || c >= cols) continue;
#pragma unroll
        for (int e = 0; e < V; e++) v[j][e] *= inv;
        if (V > 1) fck::st16(yr + c, fck::pack<T>(v[j]));
        else
            yr[c] = fck::from_f<T>(v[j][0]);
    }
}

/* Rows too long for registers (> fck_softmax_max_cols): one warp per row, a first sweep
 * keeping a running (max, sum of exp) per lane, merged across the warp, a second writing
 * exp(x - max)/sum. The row is read twice (3·rows·cols·E bytes), the second time mostly
 * from L2: a row of 32768 bf16 is 64 KiB, and 8 rows per block of 256 threads. */
template <typename T, bool VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_2pass_kernel(const T *__restrict__ x, T *__restrict__ y, size_t rows, size_t cols)
{
    constexpr int V = VEC ? 16 / sizeof(T) : 1;
    const size_t row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const T *xr = x + row * cols;
    T *yr = y + row * cols;
    const float L2E = 1.4426950408889634f;
    float m = -INFINITY, s = 0.0f;
    for (size_t c = (size_t)lane * V; c < cols; c += 32 * V) {
        float v[V];
        if (VEC) fck::unpack<T>(fck::ld16(xr + c), v);
        else
            v[0] = fck::to_f(xr[c]);
        float mv = v[0];
#pragma unroll
        for (int j = 1; j < V; j++) mv = fmaxf(mv, v[j]);
        if (mv == -INFINITY) continue; /* all masked */
        float mn = fmaxf(m, mv);
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < V; j++) acc += exp2f((v[j] - mn) * L2E);
        s = s * exp2f((m - mn) * L2E) + acc; /* m = -inf gives 0 · 0 */
        m = mn;
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        float mo = __shfl_xor_sync(0xffffffffu, m, off), so = __shfl_xor_sync(0xffffffffu, s, off);
        float mn = fmaxf(m, mo);
        if (mn == -INFINITY) continue; /* both empty */
        s = (m == -INFINITY ? 0.0f : s * exp2f((m - mn) * L2E)) +
            (mo == -INFINITY ? 0.0f : so * exp2f((mo - mn) * L2E));
        m = mn;
    }
    const float inv = 1.0f / s;
    for (size_t c = (size_t)lane * V; c < cols; c += 32 * V) {
        float v[V];
        if (VEC) fck::unpack<T>(fck::ld16(xr + c), v);
        else
            v[0] = fck::to_f(xr[c]);
#pragma unroll
        for (int j = 0; j < V; j++) v[j] = exp2f((v[j] - m) * L2E) * inv;
        if (VEC) fck::st16(yr + c, fck::pack<T>(v));
        else
            yr[c] = fck::from_f<T>(v[0]);
    }
}

template <typename T, int V, int NV, int TPR>
cudaError_t launch_softmax_reg(const void *x, void *y, size_t rows, size_t cols, cudaStream_t st)
{
    constexpr int RPB = TPR < 256 ? 256 / TPR : 1;
    const size_t blocks = (rows + RPB - 1) / RPB;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    softmax_rows_kernel<T, V, NV, TPR>
        <<<(unsigned)blocks, RPB * TPR, 0, st>>>(static_cast<const T *>(x), static_cast<T *>(y), rows, (int)cols);
    return cudaGetLastError();
}

/* a warp per row, NV vectors per lane (the plan's nvec, a power of two) */
template <typename T, int V, int NV>
cudaError_t launch_softmax_warp(int nvec, const void *x, void *y, size_t rows, size_t cols, cudaStream_t st)
{
    if constexpr (NV * V > fck_softmax_ept(V)) {
        return cudaErrorInvalidValue;
    } else {
        if (nvec == NV) return launch_softmax_reg<T, V, NV, 32>(x, y, rows, cols, st);
        return launch_softmax_warp<T, V, NV * 2>(nvec, x, y, rows, cols, st);
    }
}

template <typename T, int V>
cudaError_t launch_softmax_plan(const fck_softmax_plan &p, const void *x, void *y, size_t rows, size_t cols,
                                cudaStream_t st)
{
    constexpr int NB = fck_softmax_ept(V) / V; /* vectors per thread past a warp per row */
    switch (p.threads) {
    case 32: return launch_softmax_warp<T, V, 1>(p.nvec, x, y, rows, cols, st);
    case 64: return launch_softmax_reg<T, V, NB, 64>(x, y, rows, cols, st);
    case 128: return launch_softmax_reg<T, V, NB, 128>(x, y, rows, cols, st);
    case 256: return launch_softmax_reg<T, V, NB, 256>(x, y, rows, cols, st);
    case 512: return launch_softmax_reg<T, V, NB, 512>(x, y, rows, cols, st);
    case 1024: return launch_softmax_reg<T, V, NB, 1024>(x, y, rows, cols, st);
    }
    return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t launch_softmax(const void *x, void *y, size_t rows, size_t cols, cudaStream_t st)
{
    if (rows == 0 || cols == 0) return cudaSuccess;
    const fck_softmax_plan p = fck_softmax_plan_make(cols, (int)sizeof(T));
    if (p.threads > 0)
        return p.vec > 1 ? launch_softmax_plan<T, 16 / sizeof(T)>(p, x, y, rows, cols, st)
                         : launch_softmax_plan<T, 1>(p, x, y, rows, cols, st);
    const size_t blocks = (rows * 32 + kThreads - 1) / kThreads;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    if (p.vec > 1)
        softmax_2pass_kernel<T, true>
            <<<(unsigned)blocks, kThreads, 0, st>>>(static_cast<const T *>(x), static_cast<T *>(y), rows, cols);
    else
        softmax_2pass_kernel<T, false>
            <<<(unsigned)blocks, kThreads, 0, st>>>(static_cast<const T *>(x), static_cast<T *>(y), rows, cols);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- channel affine
 * x, y [n, c, hw] (nchw) or [n, hw, c] (nhwc); scale, shift fp32 [c]. Stands in where
 * cuDNN refuses BN or the bias add for a dtype and layout, so it runs at copy bandwidth
 * like the other passes (bytes = 2·n·c·hw·E): 16-byte vectors, kUnroll of them loaded
 * per thread before any is used, index math in 32 bits and the channel by fast division
 * (fck_channel: a multiply-high and a shift, no divide; kernel_logic.h) — per vector
 * where a vector is one channel or a run of channels (fck_affine_mode), per element
 * otherwise. Tensors of 2^31 elements or more, or not 16-byte aligned, take the 64-bit
 * grid-stride kernel after it. In place (x == y) as well, as the bias add runs it: each
 * thread reads its elements before it writes them and no other thread's, so x and y
 * are not __restrict__. */
template <typename T, int MODE>
__global__ void __launch_bounds__(kThreads)
    channel_affine_kernel(const T *x, const float *__restrict__ scale, const float *__restrict__ shift, T *y,
                          uint32_t total, fck_chanmap cm, int relu)
{
    constexpr int V = 16 / sizeof(T);
    const uint32_t nvec = total / V, nthreads = gridDim.x * blockDim.x;
    const uint32_t t0 = blockIdx.x * blockDim.x + threadIdx.x;
    uint4 xv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
        const uint32_t vi = t0 + (uint32_t)u * nthreads;
        if (vi < nvec) xv[u] = fck::ld16(x + vi * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
        const uint32_t vi = t0 + (uint32_t)u * nthreads, base = vi * V;
        if (vi >= nvec) continue;
        float v[V], a[V], b[V];
        fck::unpack<T>(xv[u], v);
        if (MODE == FCK_AFFINE_RUN) { /* channels c0..c0+V-1, c0 a multiple of V */
            const uint32_t c0 = fck_channel(&cm, base);
#pragma unroll
            for (int j = 0; j < V; j += 4) {
                fck::unpack<float>(fck::ld16(scale + c0 + j), a + j);
                fck::unpack<float>(fck::ld16(shift + c0 + j), b + j);
            }
        } else if (MODE == FCK_AFFINE_ONE) {
            const uint32_t c = fck_channel(&cm, base);
            const float sc = scale[c], sh = shift[c];
#pragma unroll
            for (int j = 0; j < V; j++) a[j] = sc, b[j] = sh;
        } else {
#pragma unroll
            for (int j = 0; j < V; j++) {
                const uint32_t c = fck_channel(&cm, base + j);
                a[j] = scale[c];
                b[j] = shift[c];
            }
        }
#pragma unroll
        for (int j = 0; j < V; j++) {
            v[j] = fmaf(v[j], a[j], b[j]);
            if (relu) v[j] = fmaxf(v[j], 0.0f);
        }
        fck::st16(y + base, fck::pack<T>(v));
    }
    const uint32_t ti = nvec * V + t0; /* the last total % V elements */
    if (ti < total) {
        const uint32_t c = fck_channel(&cm, ti);
        float v = fmaf(fck::to_f(x[ti]), scale[c], shift[c]);
        y[ti] = fck::from_f<T>(relu ? fmaxf(v, 0.0f) : v);
    }
}

/* any size and alignment: grid-stride, one element per thread per step, 64-bit index */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    channel_affine64_kernel(const T *x, const float *__restrict__ scale, const float *__restrict__ shift, T *y,
                            size_t total, size_t c, size_t hw, int nhwc, int relu)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        size_t ch = nhwc ? i % c : (i / hw) % c;
        float v = fmaf(fck::to_f(x[i]), scale[ch], shift[ch]);
        if (relu) v = fmaxf(v, 0.0f);
        y[i] = fck::from_f<T>(v);
    }
}

template <typename T>
cudaError_t launch_affine(const void *x, const float *scale, const float *shift, void *y, size_t n, size_t c, size_t hw,
                          int nhwc, int relu, cudaStream_t st)
{
    constexpr int V = 16 / sizeof(T);
    const size_t total = n * c * hw;
    if (total == 0) return cudaSuccess;
    const bool aligned = (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    if (total >= 0x80000000ull || !aligned) {
        size_t blocks = (total + kThreads - 1) / kThreads;
        if (blocks > 65536) blocks = 65536;
        channel_affine64_kernel<T><<<(unsigned)blocks, kThreads, 0, st>>>(static_cast<const T *>(x), scale, shift,
                                                                          static_cast<T *>(y), total, c, hw, nhwc,
                                                                          relu);
        return cudaGetLastError();
    }
    const fck_chanmap cm = fck_chanmap_make((uint32_t)c, (uint32_t)hw, nhwc);
    const bool params_aligned = (((uintptr_t)scale | (uintptr_t)shift) & 15) == 0;
    const int mode = fck_affine_mode((uint32_t)c, (uint32_t)hw, nhwc, V, params_aligned);
    size_t threads = (total / V + kUnroll - 1) / kUnroll;
    if (threads < (size_t)V) threads = V; /* the tail needs up to V-1 threads */
    const unsigned blocks = (unsigned)((threads + kThreads - 1) / kThreads);
    const T *xt = static_cast<const T *>(x);
    T *yt = static_cast<T *>(y);
    const uint32_t tot = (uint32_t)total;
    if (mode == FCK_AFFINE_RUN)
        channel_affine_kernel<T, FCK_AFFINE_RUN><<<blocks, kThreads, 0, st>>>(xt, scale, shift, yt, tot, cm, relu);
    else if (mode == FCK_AFFINE_ONE)
        channel_affine_kernel<T, FCK_AFFINE_ONE><<<blocks, kThreads, 0, st>>>(xt, scale, shift, yt, tot, cm, relu);
    else
        channel_affine_kernel<T, FCK_AFFINE_EACH><<<blocks, kThreads, 0, st>>>(xt, scale, shift, yt, tot, cm, relu);
    return cudaGetLastError();
}

/* ---------------------------------------------------------------- utilities */
__device__ __forceinline__ uint64_t splitmix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* x [n]: counter-based random values (splitmix64 of the index), grid-stride */
template <typename T>
__global__ void fill_uniform_kernel(T *x, size_t n, unsigned long long seed, float lo, float hi)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float u = (float)(splitmix64(seed ^ (i * 0x2545f4914f6cdd1dULL)) >> 40) * 0x1p-24f;
        x[i] = fck::from_f<T>(lo + (hi - lo) * u);
    }
}

template <typename T>
cudaError_t launch_fill(void *x, size_t n, unsigned long long seed, float lo, float hi, cudaStream_t st)
{
    if (n == 0) return cudaSuccess;
    size_t blocks = (n + kThreads - 1) / kThreads;
    if (blocks > 65536) blocks = 65536;
    fill_uniform_kernel<T><<<(unsigned)blocks, kThreads, 0, st>>>(static_cast<T *>(x), n, seed, lo, hi);
    return cudaGetLastError();
}

/* nothing, one thread: launch latency */
__global__ void empty_kernel() {}

} // namespace

/* ---------------------------------------------------------------- launchers */

extern "C" cudaError_t fck_bias(fck_dtype dt, const void *x, const void *b, void *y, size_t rows, size_t cols,
                                cudaStream_t stream)
{
    if (cols == 0) return cudaSuccess;
    EwArgs a = {x, b, y, rows * cols, cols, 1.0f, 0, 0};
    return dispatch_ew<OP_BIAS>(dt, a, stream);
}

extern "C" cudaError_t fck_add(fck_dtype dt, const void *x, const void *r, void *y, size_t n, cudaStream_t stream)
{
    EwArgs a = {x, r, y, n, 1, 1.0f, 0, 0};
    return dispatch_ew<OP_ADD>(dt, a, stream);
}

extern "C" cudaError_t fck_relu(fck_dtype dt, const void *x, void *y, size_t n, cudaStream_t stream)
{
    EwArgs a = {x, nullptr, y, n, 1, 1.0f, 0, 0};
    return dispatch_ew<OP_RELU>(dt, a, stream);
}

extern "C" cudaError_t fck_gelu_tanh(fck_dtype dt, const void *x, void *y, size_t n, cudaStream_t stream)
{
    EwArgs a = {x, nullptr, y, n, 1, 1.0f, 0, 0};
    return dispatch_ew<OP_GELU>(dt, a, stream);
}

extern "C" cudaError_t fck_scale_mask(fck_dtype dt, const void *x, void *y, size_t bh, size_t s, size_t skv,
                                      float scale, int causal, cudaStream_t stream)
{
    if (s == 0 || skv == 0) return cudaSuccess;
    if (causal && skv < s) return cudaErrorInvalidValue;
    EwArgs a = {x, nullptr, y, bh * s * skv, skv, scale, s, skv - s};
    return causal ? dispatch_ew<OP_SCALE_MASK>(dt, a, stream) : dispatch_ew<OP_SCALE>(dt, a, stream);
}

extern "C" cudaError_t fck_softmax_rows(fck_dtype dt, const void *x, void *y, size_t rows, size_t cols,
                                        cudaStream_t stream)
{
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_softmax<float>(x, y, rows, cols, stream);
    case FCK_BF16: return launch_softmax<__nv_bfloat16>(x, y, rows, cols, stream);
    case FCK_FP16: return launch_softmax<__half>(x, y, rows, cols, stream);
    }
    return cudaErrorInvalidValue;
}

extern "C" int fck_softmax_rows_describe(fck_dtype dt, size_t cols, char *buf, size_t n)
{
    const int esize = dt == FCK_BF16 || dt == FCK_FP16 ? 2 : 4;
    const fck_softmax_plan p = fck_softmax_plan_make(cols, esize);
    if (p.threads == 0)
        return snprintf(buf, n,
                        "softmax kernel (fusecal): two passes, a warp per row (a row of %zu does not fit in registers: "
                        "%zu at most), %s",
                        cols, fck_softmax_max_cols(p.vec), p.vec > 1 ? "16-byte vectors" : "scalar loads");
    return snprintf(buf, n,
                    "softmax kernel (fusecal): one read, the row of %zu in the registers of %d threads, "
                    "%d x %d %s each",
                    cols, p.threads, p.nvec, p.vec, p.vec > 1 ? "elements in 16-byte vectors" : "elements");
}

extern "C" cudaError_t fck_channel_affine(fck_dtype dt, const void *x, const float *scale, const float *shift, void *y,
                                          size_t n, size_t c, size_t hw, int nhwc, int relu, cudaStream_t stream)
{
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_affine<float>(x, scale, shift, y, n, c, hw, nhwc, relu, stream);
    case FCK_BF16: return launch_affine<__nv_bfloat16>(x, scale, shift, y, n, c, hw, nhwc, relu, stream);
    case FCK_FP16: return launch_affine<__half>(x, scale, shift, y, n, c, hw, nhwc, relu, stream);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t fck_fill_uniform(fck_dtype dt, void *x, size_t n, unsigned long long seed, float lo, float hi,
                                        cudaStream_t stream)
{
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return launch_fill<float>(x, n, seed, lo, hi, stream);
    case FCK_BF16: return launch_fill<__nv_bfloat16>(x, n, seed, lo, hi, stream);
    case FCK_FP16: return launch_fill<__half>(x, n, seed, lo, hi, stream);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t fck_empty(cudaStream_t stream)
{
    empty_kernel<<<1, 1, 0, stream>>>();
    return cudaGetLastError();
}

extern "C" cudaError_t fck_probe(void)
{
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, empty_kernel);
}

#define FCK_STR2(x) #x
#define FCK_STR(x) FCK_STR2(x)

extern "C" const char *fck_arch(void)
{
#ifdef __CUDA_ARCH_LIST__
    return "compute capabilities " FCK_STR(__CUDA_ARCH_LIST__) " (x100), nvcc " FCK_STR(
        __CUDACC_VER_MAJOR__) "." FCK_STR(__CUDACC_VER_MINOR__);
#else
    return "nvcc " FCK_STR(__CUDACC_VER_MAJOR__) "." FCK_STR(__CUDACC_VER_MINOR__);
#endif
}
