/* flush.cu — the read half of the cold-cache flush (device_cuda.c): every 16-byte
 * vector of a buffer is loaded once, so that L2 ends up holding that buffer's clean
 * lines and the dirty lines before it are written back during the flush, not inside
 * the next timed sample. And the copy that measures the bandwidth by working set
 * (fck_copy_passes): the same 16-byte vectors, the data copied back and forth; its
 * read-only twin (fck_read_passes), the same footprints read and nothing written.
 * And the fp32 arithmetic peak (fck_fma_peak): multiply-adds on registers alone.
 *
 * Napkin math: a read of 2 x 50 MB at ~3 TB/s takes ~35 µs; each thread keeps four
 * 16-byte loads in flight. The loads are folded into an XOR that is stored only when
 * it equals `never` (a value the caller picks so that it does not happen), so the
 * compiler keeps every load and the kernel writes nothing.
 */
#include "fusecal_kernels.h"

#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

/* x [n] 16-byte vectors; sink [1], written only if the XOR of everything read is never */
__global__ void __launch_bounds__(kThreads)
    read_kernel(const uint4 *__restrict__ x, size_t n, unsigned never, unsigned *sink)
{
    const size_t stride = (size_t)gridDim.x * kThreads;
    unsigned acc = 0;
    for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += kUnroll * stride) {
        uint4 v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) v[u] = i + u * stride < n ? x[i + u * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < kUnroll; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    if (acc == never) *sink = acc;
}

/* One pass after another over the same two buffers, a -> b on even passes and b -> a
 * on odd ones: each thread copies the vectors it copied before, so the passes need
 * no synchronization between blocks, and a pass reads what the last one wrote (no
 * pass can be dropped as a repetition). Four 16-byte loads in flight per thread. */
__global__ void __launch_bounds__(kThreads) copy_passes_kernel(uint4 *a, uint4 *b, size_t n, int passes)
{
    const size_t stride = (size_t)gridDim.x * kThreads;
    for (int p = 0; p < passes; p++) {
        const uint4 *src = (p & 1) ? b : a;
        uint4 *dst = (p & 1) ? a : b;
        for (size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x; i < n; i += kUnroll * stride) {
            uint4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (i + u * stride < n) v[u] = src[i + u * stride];
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (i + u * stride < n) dst[i + u * stride] = v[u];
        }
    }
}

/* One pass after another over a[0, n) and b[0, n), read and nothing written: the
 * read-only rate at a footprint (the copy's twin). Each pass starts the grid-stride
 * walk one block further on (mod the grid), so every vector is read once a pass yet
 * no pass repeats the last one's addresses thread for thread (no load is invariant in
 * the pass loop, to be hoisted out of it; and with a thread reading a vector once in
 * each of two passes its XOR would cancel, which the kernel test would see). Two
 * vectors of a and two of b in flight per thread. */
__global__ void __launch_bounds__(kThreads)
    read_passes_kernel(const uint4 *a, const uint4 *b, size_t n, int passes, unsigned never, unsigned *sink)
{
    constexpr int kHalf = kUnroll / 2;
    const size_t stride = (size_t)gridDim.x * kThreads;
    unsigned acc = 0;
    for (int p = 0; p < passes; p++) {
        const size_t first = (size_t)((blockIdx.x + (unsigned)p) % gridDim.x) * kThreads + threadIdx.x;
        for (size_t i = first; i < n; i += kHalf * stride) {
            uint4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kHalf; u++) {
                const size_t j = i + u * stride;
                v[2 * u] = j < n ? a[j] : make_uint4(0, 0, 0, 0);
                v[2 * u + 1] = j < n ? b[j] : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
    }
    if (acc == never) *sink = acc;
}

/* The fp32 peak: kPeakChains independent multiply-add chains a thread, the loop
 * unrolled kPeakUnroll times so that the counter's instructions take about 1 % of
 * the issue slots (an SM issues 4 warp instructions a cycle, as many lanes as it has
 * fp32 units: every other instruction takes an FMA's slot). Thread 0 writes its sum
 * to sink[0] (a test computes the same chains on the host); the others write only
 * when their sum equals `never`, so no FMA can be dropped. */
constexpr int kPeakChains = 8;
constexpr int kPeakUnroll = 16;
constexpr int kPeakBlocksPerSm = 8;

__global__ void __launch_bounds__(kThreads)
    fma_peak_kernel(int iters, float x, float y, float never, float *__restrict__ sink)
{
    const unsigned t = blockIdx.x * kThreads + threadIdx.x;
    float a[kPeakChains];
#pragma unroll
    for (int c = 0; c < kPeakChains; c++) a[c] = (float)(t % 64u + (unsigned)c);
    for (int i = 0; i < iters; i += kPeakUnroll) {
#pragma unroll
        for (int u = 0; u < kPeakUnroll; u++) {
#pragma unroll
            for (int c = 0; c < kPeakChains; c++) a[c] = fmaf(a[c], x, y);
        }
    }
    float s = 0;
#pragma unroll
    for (int c = 0; c < kPeakChains; c++) s += a[c];
    if (t == 0 || s == never) sink[t == 0 ? 0 : 1] = s;
}

} // namespace

extern "C" cudaError_t fck_fma_peak(int iters, float x, float y, int sms, float *sink, double *flops,
                                    cudaStream_t stream)
{
    if (iters < 0 || iters % kPeakUnroll || sms < 1 || !sink) return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)sms * kPeakBlocksPerSm;
    if (flops) *flops = 2.0 * kPeakChains * (double)iters * blocks * kThreads;
    fma_peak_kernel<<<blocks, kThreads, 0, stream>>>(iters, x, y, -1.0f, sink);
    return cudaGetLastError();
}

extern "C" cudaError_t fck_copy_passes(void *a, void *b, size_t bytes, int passes, int sms, cudaStream_t stream)
{
    const size_t n = bytes / 2 / 16;
    if (((uintptr_t)a & 15) || ((uintptr_t)b & 15) || (bytes / 2) % 16 || passes < 1 || sms < 1)
        return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    /* every SM busy where the data allows (a thread per vector), at most 8 blocks an SM */
    size_t blocks = (n + kThreads - 1) / kThreads, most = (size_t)sms * 8;
    if (blocks > most) blocks = most;
    copy_passes_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(static_cast<uint4 *>(a), static_cast<uint4 *>(b), n,
                                                                  passes);
    return cudaGetLastError();
}

extern "C" cudaError_t fck_read_passes(const void *a, const void *b, size_t bytes, int passes, int sms, unsigned never,
                                       unsigned *sink, cudaStream_t stream)
{
    const size_t n = bytes / 2 / 16;
    if (((uintptr_t)a & 15) || ((uintptr_t)b & 15) || (bytes / 2) % 16 || passes < 1 || sms < 1 || !sink)
        return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    size_t blocks = (n + kThreads - 1) / kThreads, most = (size_t)sms * 8; /* as the copy's */
    if (blocks > most) blocks = most;
    read_passes_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(static_cast<const uint4 *>(a),
                                                                  static_cast<const uint4 *>(b), n, passes, never,
                                                                  sink);
    return cudaGetLastError();
}

extern "C" cudaError_t fck_read_all(const void *x, size_t bytes, unsigned never, unsigned *sink, cudaStream_t stream)
{
    if (((uintptr_t)x & 15) || (bytes & 15)) return cudaErrorInvalidValue;
    const size_t n = bytes / 16;
    if (n == 0) return cudaSuccess;
    size_t blocks = (n + (size_t)kThreads * kUnroll - 1) / ((size_t)kThreads * kUnroll);
    if (blocks > 8192) blocks = 8192;
    read_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(static_cast<const uint4 *>(x), n, never, sink);
    return cudaGetLastError();
}
