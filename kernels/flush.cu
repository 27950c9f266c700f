/* flush.cu — the read half of the cold-cache flush (device_cuda.c): every 16-byte
 * vector of a buffer is loaded once, so that L2 ends up holding that buffer's clean
 * lines and the dirty lines before it are written back during the flush, not inside
 * the next timed sample. And the copy that measures the bandwidth by working set
 * (fck_copy_passes): the same 16-byte vectors, the data copied back and forth.
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

} // namespace

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
