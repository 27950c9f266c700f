/* norm_ops.h — host kernels of the norm family (OpenMP over rows, vectorized with
 * omp simd inside a row, on the one OpenMP pool): the passes of the unfused chains,
 * as an eager framework runs them, and the fused forms, which read each input once
 * and write each output once, keeping the row in cache between its statistics and
 * its normalization.
 *
 * Rows are contiguous: [rows, n]. A head is a row of d; q [m, h, d]. The rotary
 * table cs is fc_rope_table's: for each position, d/2 cosines then d/2 sines. Sums
 * are in fp32 (several lanes, then added); the layer norm's variance is taken about
 * the mean in a second sweep over the cached row, so a large mean does not cancel. */
#ifndef FC_NORM_OPS_H
#define FC_NORM_OPS_H

#include "cpu_bf16.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether a kernel that writes the chain's output, reading and writing fp bytes in
 * all, streams it past the caches (at least the LLC; norm_ops.c says why). */
bool fc_cpu_norm_streams(size_t fp);
/* the LLC's bytes that rule compares with (0: the host's again; tests) */
void fc_cpu_norm_streams_pretend(size_t llc);

/* ---- passes of the unfused chains. A pass that writes the chain's output (out)
 * streams it past the caches when the pass's tensors are large (cpu_vec.h's
 * vstream), as the fused forms do; one whose output the next pass reads keeps it. */
/* y = (h − mean)/√(var + eps)·gamma + beta over each row: one pass as PyTorch's
 * layer_norm kernel is (the row read from memory once, its mean and variance kept). */
void fc_cpu_layernorm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows,
                           size_t n, bool out);
/* y = h/√(mean(h²) + eps)·gamma over each row (a head when n = d). */
void fc_cpu_rmsnorm_rows(const float *h, const float *gamma, float eps, float *y, size_t rows, size_t n, bool out);
/* rotate-half rotary embedding of q [m, heads, d] at positions 0..m-1 (always the
 * chain's output) */
void fc_cpu_rope(const float *q, const float *cs, float *y, size_t m, size_t heads, size_t d);

/* ---- fused forms */
/* y = LN(x + r)·gamma + beta: x + r lands in y's row, which stays in cache while the
 * mean, the variance and the normalization sweep it. */
void fc_cpu_add_layernorm(const float *x, const float *r, const float *gamma, const float *beta, float eps, float *y,
                          size_t rows, size_t n);
/* h = x + r and y = RMSNorm(h)·gamma: h is written once and normalized from cache. */
void fc_cpu_add_rmsnorm(const float *x, const float *r, const float *gamma, float eps, float *y, float *h, size_t rows,
                        size_t n);
/* y = rope(RMSNorm(q)·gamma) per head, the head in registers and L1 between the two. */
void fc_cpu_rmsnorm_rope(const float *q, const float *gamma, const float *cs, float eps, float *y, size_t m,
                         size_t heads, size_t d);

/* ---- the same on bf16 tensors (norm_ops_bf16.c): gamma, beta and cs in fp32 */
void fc_cpu_rmsnorm_rows_bf16(const fc_bf16 *h, const float *gamma, float eps, fc_bf16 *y, size_t rows, size_t n,
                              bool out);
void fc_cpu_rope_bf16(const fc_bf16 *q, const float *cs, fc_bf16 *y, size_t m, size_t heads, size_t d);
void fc_cpu_add_layernorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, const float *beta, float eps,
                               fc_bf16 *y, size_t rows, size_t n);
void fc_cpu_add_rmsnorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, float eps, fc_bf16 *y, fc_bf16 *h,
                             size_t rows, size_t n);
void fc_cpu_rmsnorm_rope_bf16(const fc_bf16 *q, const float *gamma, const float *cs, float eps, fc_bf16 *y, size_t m,
                              size_t heads, size_t d);

#endif
