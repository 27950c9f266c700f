/* fusecal_kernels.h — fusecal's own CUDA kernels, as plain-C launchers.
 *
 * Every launcher enqueues its work on `stream` and returns the launch status
 * (cudaGetLastError after the launch, or cudaErrorInvalidValue for arguments it
 * cannot take); nothing here synchronizes or allocates. Tensors are dense and
 * row-major, of the storage type of `dt`: fp32 and tf32 are stored as float, bf16
 * as __nv_bfloat16, fp16 as __half. Arithmetic is in fp32 throughout. Device
 * pointers come from cudaMalloc (256-byte aligned); the kernels use 16-byte
 * accesses where a row's length allows and fall back to scalar ones where not.
 *
 * Included from C (no C++ in this header).
 */
#ifndef FUSECAL_KERNELS_H
#define FUSECAL_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same order as fc_dtype (fusecal.h), checked there with a static assert. */
typedef enum { FCK_FP32 = 0, FCK_TF32 = 1, FCK_BF16 = 2, FCK_FP16 = 3 } fck_dtype;

/* ---------------------------------------------------------------- elementwise
 * y and x may be the same buffer (in place). n counts elements. */

/* y[i,j] = x[i,j] + b[j]          x, y [rows, cols]; b [cols] */
cudaError_t fck_bias(fck_dtype dt, const void *x, const void *b, void *y, size_t rows, size_t cols,
                     cudaStream_t stream);
/* y = x + r                        x, r, y [n] */
cudaError_t fck_add(fck_dtype dt, const void *x, const void *r, void *y, size_t n, cudaStream_t stream);
/* y = max(x, 0)                    [n] */
cudaError_t fck_relu(fck_dtype dt, const void *x, void *y, size_t n, cudaStream_t stream);
/* y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))   [n] */
cudaError_t fck_gelu_tanh(fck_dtype dt, const void *x, void *y, size_t n, cudaStream_t stream);
/* S' = S·scale, and -inf where key j > i + skv − s for query i when causal (needs
 * skv >= s)   S, S' [bh, s, skv] */
cudaError_t fck_scale_mask(fck_dtype dt, const void *x, void *y, size_t bh, size_t s, size_t skv, float scale,
                           int causal, cudaStream_t stream);
/* P = softmax(S) along rows (-inf entries give 0)   [rows, cols]. Each row is read once
 * and kept in registers (a warp per row up to 1024 columns (512 where a row is not a
 * whole number of 16-byte vectors), up to 1024 threads per row up to 32768 (16384));
 * longer rows take a two-pass kernel that reads them twice. */
cudaError_t fck_softmax_rows(fck_dtype dt, const void *x, void *y, size_t rows, size_t cols, cudaStream_t stream);
/* What fck_softmax_rows runs for rows of `cols`, for describe(): "softmax kernel
 * (fusecal): one read, the row of 4096 in the registers of 128 threads, 4 x 8 elements in
 * 16-byte vectors each", or the two-pass kernel and why; returns the length (snprintf's). */
int fck_softmax_rows_describe(fck_dtype dt, size_t cols, char *buf, size_t n);
/* y = x·scale[c] + shift[c], then max(·, 0) when relu; c the channel of the element
 * in an [n, c, hw] (nhwc = 0) or [n, hw, c] (nhwc = 1) tensor; scale, shift fp32 [c].
 * 16-byte vectors and 32-bit index math below 2^31 elements (x, y 16-byte aligned); a
 * scalar 64-bit loop otherwise. x may be y (in place). */
cudaError_t fck_channel_affine(fck_dtype dt, const void *x, const float *scale, const float *shift, void *y, size_t n,
                               size_t c, size_t hw, int nhwc, int relu, cudaStream_t stream);

/* ---------------------------------------------------------------- norms
 * Rows [rows, n] of x, r, h, y; gamma, beta [n] in the storage type of dt; sums in fp32.
 * A row sits in registers between its statistics and its normalization (the row
 * softmax's layout, fck_norm_plan_make): n up to 16384 in 16-byte vectors, 8192 where a
 * row is not a whole number of them or a tensor does not start on 16 bytes (then read as
 * scalars); longer rows: cudaErrorInvalidValue. The heads below likewise. */

/* h = x + r, row by row (the unfused chain's add; any alignment of h) */
cudaError_t fck_add_rows(fck_dtype dt, const void *x, const void *r, void *h, size_t rows, size_t n,
                         cudaStream_t stream);
/* y = (h − mean)/√(var + eps)·gamma + beta per row, with h = x (r NULL: the unfused
 * pass) or h = x + r (the fused form, h never written) */
cudaError_t fck_layernorm_rows(fck_dtype dt, const void *x, const void *r, const void *gamma, const void *beta,
                               float eps, void *y, size_t rows, size_t n, cudaStream_t stream);
/* y = h/√(mean(h²) + eps)·gamma per row, with h = x (r and h NULL: the unfused pass) or
 * h = x + r, written to h as well (the fused add + RMSNorm) */
cudaError_t fck_rmsnorm_rows(fck_dtype dt, const void *x, const void *r, const void *gamma, float eps, void *y, void *h,
                             size_t rows, size_t n, cudaStream_t stream);
/* Per head of q [m, heads, d] (d even, up to 1024; fck_head_plan_make): RMSNorm over d
 * with gamma [d] when norm, then, when rope, the rotate-half rotary embedding at position
 * m' (the head's token) from the fp32 table cs [m, d] (d/2 cosines, then d/2 sines per
 * position). norm and rope: the fused form, each head read once. */
cudaError_t fck_head_norm_rope(fck_dtype dt, const void *q, const void *gamma, const float *cs, float eps, void *y,
                               size_t m, size_t heads, size_t d, int norm, int rope, cudaStream_t stream);

/* ---------------------------------------------------------------- gated unit
 * gu [rows, 2n]: a gated unit's GEMM output, the gate g in columns 0..n-1 of each row and
 * the up half u in n..2n-1; s, y [rows, n]. silu(x) = x/(1 + e^−x). 16-byte vectors
 * where n is a whole number of them, scalars otherwise. */

/* s = silu(g) */
cudaError_t fck_glu_silu(fck_dtype dt, const void *gu, void *s, size_t rows, size_t n, cudaStream_t stream);
/* y = s·u */
cudaError_t fck_glu_mul(fck_dtype dt, const void *s, const void *gu, void *y, size_t rows, size_t n,
                        cudaStream_t stream);
/* y = silu(g)·u in one pass (act-and-mul) */
cudaError_t fck_glu_act_mul(fck_dtype dt, const void *gu, void *y, size_t rows, size_t n, cudaStream_t stream);

/* ---------------------------------------------------------------- GEMM
 * fusecal's GEMM (gemm.cu) for the linear sites no library fuses: x [m, k], W [n, k]
 * ([2n, k] gated), b [n], y [m, n]; bf16 and fp16 only (mma.sync m16n8k16, fp32
 * accumulation); 16-byte copies where k % 8 == 0 and x and W start on 16 bytes, scalar
 * ones otherwise (an instance fck_gemm_prepare did not set up); y on 4 bytes. */
typedef enum {
    FCK_GEMM_PLAIN = 0,     /* y = x·Wᵀ (the controls' GEMM) */
    FCK_GEMM_GELU_BIAS = 1, /* y = gelu_tanh(x)·Wᵀ + b, gelu on x's tiles as they enter shared memory */
    FCK_GEMM_SWIGLU = 2,    /* y = silu(x·W_gᵀ) ⊙ (x·W_uᵀ), W = [W_g; W_u], formed in the registers */
} fck_gemm_mode;
/* Whether fck_gemm takes the dtype, mode and shape (n: y's columns). */
int fck_gemm_supports(fck_dtype dt, fck_gemm_mode mode, long long m, long long n, long long k);
/* Sets up the instances of `fused` and of FCK_GEMM_PLAIN that k selects (their shared-
 * memory limit) ahead of a first launch, which may then be inside a graph capture. */
cudaError_t fck_gemm_prepare(fck_dtype dt, fck_gemm_mode fused, int k);
/* Others than fck_gemm_supports takes, no b with the bias, or y not on 4 bytes:
 * cudaErrorInvalidValue. */
cudaError_t fck_gemm(fck_dtype dt, fck_gemm_mode mode, const void *x, const void *w, const void *b, void *y, int m,
                     int n, int k, cudaStream_t stream);
/* Its tiling and resources for describe() (the instance k selects); returns the length. */
int fck_gemm_describe(fck_dtype dt, fck_gemm_mode mode, int k, char *buf, size_t n);

/* ---------------------------------------------------------------- attention
 * Q, O [bh, s, d]; K, V [bh/group, skv, d]; P [bh, s, skv] (fck_attn_shape). Heads of
 * dimension d = 64 or 128 (others: cudaErrorInvalidValue; see fck_attention_supports). Tensor cores: mma.sync m16n8k16
 * (bf16, fp16) and m16n8k8 (tf32: operands rounded to tf32; fp32: three tf32 products
 * of the split operands, big·big + big·small + small·big, accurate to about fp32).
 * Grid: one block per (head, query tile), query tile fastest, in a 1-D grid of at most
 * 2^31 - 1 blocks.
 *
 * Two designs, chosen by fck_attn_kernel:
 *   FCK_ATTN_REFERENCE  64 queries x 64 keys per tile, 4 warps of 16 query rows, K and V
 *                       single-buffered (flash). The default.
 *   FCK_ATTN_FLASH2     FlashAttention-2 class: 128 queries per block, 4 warps of 32 rows
 *                       (two m16 tiles each), K/V double-buffered with cp.async and one
 *                       barrier per key tile, swizzled shared memory, outputs staged
 *                       through shared memory and written in 16-byte stores. */
typedef enum { FCK_ATTN_REFERENCE = 0, FCK_ATTN_FLASH2 = 1 } fck_attn_kernel;

/* The problem: bh query heads of s queries; query head n reads key/value head n / group
 * (grouped-query attention: the group = h/hkv query heads sharing one are adjacent; bh a
 * multiple of group) of skv keys; causal: query i sees keys j <= i + skv − s, the queries
 * aligned with the end of the keys (needs skv >= s). Others: cudaErrorInvalidValue. */
typedef struct fck_attn_shape {
    int bh, s, skv, group, d, causal;
} fck_attn_shape;
#define FCK_ATTN_NKERNELS 2

/* "reference" or "flash2" (the name a record gives the kernel); NULL out of range. */
const char *fck_attention_kernel_name(fck_attn_kernel kernel);
/* The fck_attn_kernel named `name` (as fck_attention_kernel_name gives it), or -1. */
int fck_attention_kernel_parse(const char *name);
/* Whether the attention kernels take head dimension d. */
int fck_attention_supports(int d);

/* O = softmax(Q·Kᵀ/√d)·V with an online softmax; the s x skv matrix never leaves
 * registers. */
cudaError_t fck_flash_attention_v(fck_attn_kernel kernel, fck_dtype dt, const void *q, const void *k, const void *v,
                                  void *o, fck_attn_shape sh, cudaStream_t stream);
/* P = softmax(Q·Kᵀ/√d) in one kernel: a first sweep over the key tiles finds each
 * row's max and sum, a second recomputes the tiles and writes only P (0 where masked). */
cudaError_t fck_qk_softmax_v(fck_attn_kernel kernel, fck_dtype dt, const void *q, const void *k, void *p,
                             fck_attn_shape sh, cudaStream_t stream);
/* Tiling, registers, shared memory and blocks per SM of one kernel, for describe():
 * "flash2<bf16,d=128>: 128x32 tiles, 4 warps x 32 rows, 242 regs, 65536 B dynamic smem,
 * 0 B local, 2 blocks/SM" style text; returns its length (snprintf's). */
int fck_attention_resources_v(fck_attn_kernel kernel, fck_dtype dt, int d, int qk_softmax, char *buf, size_t n);

/* The same with FCK_ATTN_REFERENCE. */
cudaError_t fck_flash_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o, fck_attn_shape sh,
                                cudaStream_t stream);
cudaError_t fck_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, fck_attn_shape sh, cudaStream_t stream);
int fck_attention_resources(fck_dtype dt, int d, int qk_softmax, char *buf, size_t n);

/* ---------------------------------------------------------------- decode attention
 * Decode-shaped problems (fck_attn_shape: group·s query rows per key/value head, at most
 * 16 (FCK_DEC_MAX_ROWS); any d up to 128): split-KV, each key/value head's keys shared
 * out over blocks (kernel_logic.h: fck_dec_plan_make, for the blocks the current device
 * keeps resident: its SMs x the split kernel's occupancy for the dtype),
 * their partial results into ws, then one kernel that combines them (decode.cu). fp32
 * arithmetic for every dtype (tf32: no tensor cores). Shapes they do not take, or
 * ws_bytes short of fck_decode_workspace: cudaErrorInvalidValue. */

/* The workspace either launcher needs for dt and sh on the current device, in bytes (qk_softmax:
 * fck_decode_qk_softmax's, which also keeps the fp32 scores); 0 when they do not take
 * sh. */
size_t fck_decode_workspace(fck_dtype dt, fck_attn_shape sh, int qk_softmax);
/* O = softmax(Q·Kᵀ/√d)·V */
cudaError_t fck_decode_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o, fck_attn_shape sh,
                                 void *ws, size_t ws_bytes, cudaStream_t stream);
/* P = softmax(Q·Kᵀ/√d): the splits' maxima and sums combined, then P written once
 * from the fp32 scores (0 where masked) */
cudaError_t fck_decode_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, fck_attn_shape sh, void *ws,
                                  size_t ws_bytes, cudaStream_t stream);
/* Its plan and resources for describe(): "decode<4 elements/lane, 4 rows>: 16 splits of
 * 256 keys per key/value head in pieces of 256, 256 threads, 64 regs, 4096 B dynamic
 * smem, 0 B local; then a combine kernel" style text; returns its length. */
int fck_decode_describe(fck_dtype dt, fck_attn_shape sh, int qk_softmax, char *buf, size_t n);

/* ---------------------------------------------------------------- utilities */

/* x[i] = lo + (hi - lo)·u(seed, i), u uniform in [0, 1) from a hash of i   [n] */
cudaError_t fck_fill_uniform(fck_dtype dt, void *x, size_t n, unsigned long long seed, float lo, float hi,
                             cudaStream_t stream);
/* Reads every byte of x once (16-byte loads; x 16-byte aligned, bytes a multiple of 16)
 * and writes nothing unless the XOR of what it read equals `never`, then into *sink:
 * the read half of a cold-cache flush (L2 left holding x's clean lines). */
cudaError_t fck_read_all(const void *x, size_t bytes, unsigned never, unsigned *sink, cudaStream_t stream);
/* Copies a[0, bytes/2) to b, then b back to a, alternately, `passes` times in one
 * launch (16-byte loads and stores; a and b 16-byte aligned, bytes/2 a multiple of
 * 16), each thread over the same vectors every pass: a working set of `bytes` that
 * stays in L2 where it fits (the bandwidth ceiling by footprint). The data ends in
 * a (even passes) or b, unchanged. */
cudaError_t fck_copy_passes(void *a, void *b, size_t bytes, int passes, int sms, cudaStream_t stream);
/* Reads a[0, bytes/2) and b[0, bytes/2) `passes` times in one launch and writes
 * nothing unless a thread's XOR of what it read equals `never`, then into *sink (the
 * read-only rate by footprint; the arguments as fck_copy_passes's, sink not NULL).
 * Every 16-byte vector is read once a pass, by a different thread each pass where the
 * grid has more than one block. */
cudaError_t fck_read_passes(const void *a, const void *b, size_t bytes, int passes, int sms, unsigned never,
                            unsigned *sink, cudaStream_t stream);
/* The fp32 arithmetic peak: 8 blocks of 256 threads an SM (sms of them), each thread
 * 8 chains of `iters` multiply-adds a = a*x + y (iters a multiple of 16) on
 * registers, chain c of thread t starting at t % 64 + c; thread 0's sum of its
 * chains lands in sink[0] (sink holds 2 floats; the other threads write sink[1]
 * only when their sum is -1). *flops: the launch's FLOPs. */
cudaError_t fck_fma_peak(int iters, float x, float y, int sms, float *sink, double *flops, cudaStream_t stream);
/* An empty kernel of one thread (launch latency). */
cudaError_t fck_empty(cudaStream_t stream);
/* cudaSuccess when fusecal's kernels can run on the current device (they are
 * built for the architectures CMake was given); the launch error otherwise. */
cudaError_t fck_probe(void);
/* The architectures the kernels were compiled for, e.g. "sm_90 (+PTX compute_90)". */
const char *fck_arch(void);

#ifdef __cplusplus
}
#endif

#endif
