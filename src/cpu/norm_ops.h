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
#include "pattern.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether the norm problem p's chain writes its output streamed past the caches
 * (cpu_vec.h's vstream): when the bytes its fused form reads and writes, which the
 * unfused chain reads and writes too, reach the LLC (norm_ops.c says why). Both
 * variants of a problem then store the output alike, so that the speedup is
 * fusion's. A backend asks once, at setup, and passes the answer (st) to the
 * kernels below; each streams where its rows allow it (vector-aligned rows, and the
 * fused add + norms a row its buffer holds), else stores plainly. */
bool fc_cpu_norm_streams(const fc_problem *p);
/* How a norm kernel moves its rows, as the backend's setup decides once: st, its
 * output streamed past the caches (fc_cpu_norm_streams); asks, the lines of its
 * streams asked for ahead (cpu_vec.h's vask, and the next row's while a row is
 * normalized). The asks pay only where the rows come from memory: where the
 * output streams (the tensors reach the LLC), or where the caches are flushed
 * before every call (cold); on rows the caches hold they cost time (norm_ops.c
 * says how much). The unfused chain's passes take the same asks. */
typedef struct fc_norm_io {
    bool st, asks;
} fc_norm_io;
fc_norm_io fc_cpu_norm_io(const fc_problem *p, bool cold);
/* The bytes variant v of norm problem p writes past the caches on a CPU whose LLC
 * holds llc bytes, as the backends' descriptions say: the output y where the chain
 * streams it (fc_cpu_norm_streams's rule at that LLC) — in the unfused chain by its last pass, unless
 * that is a library's norm (lib_norm: oneDNN's, which stores through the caches) —
 * and the fused fp32 add + RMSNorm's h where it streams that too. Rows that do not
 * start on a vector, which the kernels store plainly, are not told apart (the
 * models' head sizes and hidden sizes all do). 0 for other families. */
double fc_cpu_norm_streamed_bytes(const fc_problem *p, fc_variant v, double llc, bool lib_norm);
/* ... given the setup's answer st (fc_cpu_norm_streams) instead of the LLC */
double fc_cpu_norm_streamed_bytes_st(const fc_problem *p, fc_variant v, bool st, bool lib_norm);
/* What a description adds for a variant of p that streams those bytes: "",
 * FC_NORM_STREAMED or FC_RMSNORM_H_STREAMED (below). */
const char *fc_cpu_norm_streamed_words(const fc_problem *p, double streamed);
/* what an implementation's description adds when it streams */
#define FC_NORM_STREAMED "; y streamed past the caches"
/* the fused fp32 add + RMSNorm's, when it streams h as well (rows its buffer holds) */
#define FC_RMSNORM_H_STREAMED "; h and y streamed past the caches"

/* ---- passes of the unfused chains: io.st for the pass that writes the chain's
 * output; one whose output the next pass reads keeps it in cache (io.st false) */
/* y = (h − mean)/√(var + eps)·gamma + beta over each row: one pass as PyTorch's
 * layer_norm kernel is (the row read from memory once, its mean and variance kept). */
void fc_cpu_layernorm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows,
                           size_t n, fc_norm_io io);
/* y = h/√(mean(h²) + eps)·gamma over each row (a head when n = d). */
void fc_cpu_rmsnorm_rows(const float *h, const float *gamma, float eps, float *y, size_t rows, size_t n, fc_norm_io io);
/* rotate-half rotary embedding of q [m, heads, d] at positions 0..m-1 */
void fc_cpu_rope(const float *q, const float *cs, float *y, size_t m, size_t heads, size_t d, fc_norm_io io);

/* ---- fused forms */
/* y = LN(x + r)·gamma + beta: x + r lands in y's row, which stays in cache while the
 * mean, the variance and the normalization sweep it. */
void fc_cpu_add_layernorm(const float *x, const float *r, const float *gamma, const float *beta, float eps, float *y,
                          size_t rows, size_t n, fc_norm_io io);
/* h = x + r and y = RMSNorm(h)·gamma: h is written once and normalized from cache;
 * streamed (io.st), rows of n up to a thread's row buffer stream h as well. */
void fc_cpu_add_rmsnorm(const float *x, const float *r, const float *gamma, float eps, float *y, float *h, size_t rows,
                        size_t n, fc_norm_io io);
/* y = rope(RMSNorm(q)·gamma) per head, the head in registers and L1 between the two. */
void fc_cpu_rmsnorm_rope(const float *q, const float *gamma, const float *cs, float eps, float *y, size_t m,
                         size_t heads, size_t d, fc_norm_io io);

/* ---- the same on bf16 tensors (norm_ops_bf16.c): gamma, beta and cs in fp32 */
void fc_cpu_rmsnorm_rows_bf16(const fc_bf16 *h, const float *gamma, float eps, fc_bf16 *y, size_t rows, size_t n,
                              fc_norm_io io);
void fc_cpu_rope_bf16(const fc_bf16 *q, const float *cs, fc_bf16 *y, size_t m, size_t heads, size_t d, fc_norm_io io);
void fc_cpu_add_layernorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, const float *beta, float eps,
                               fc_bf16 *y, size_t rows, size_t n, fc_norm_io io);
void fc_cpu_add_rmsnorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, float eps, fc_bf16 *y, fc_bf16 *h,
                             size_t rows, size_t n, fc_norm_io io);
void fc_cpu_rmsnorm_rope_bf16(const fc_bf16 *q, const float *gamma, const float *cs, float eps, fc_bf16 *y, size_t m,
                              size_t heads, size_t d, fc_norm_io io);

#endif
