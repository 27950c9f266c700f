/* linear_ops.h — host kernels of the linear family's gated units and prologues on
 * OpenBLAS and OpenMP, in the style of cpu_ops.h: the unfused chain's passes (one
 * parallel loop each) and the fused forms (blocked GEMMs, one single-threaded sgemm
 * per block on the one OpenMP pool, the epilogue or prologue applied to the block
 * while it is in cache).
 *
 * Gated unit (linear_swiglu): W [2N, K] holds W_g in rows 0..N-1 and W_u in rows
 * N..2N-1. The fused form computes matching gate and up column blocks in one sgemm
 * call: at setup the rows of W are laid out block by block, nb rows of W_g then the
 * same nb rows of W_u (fc_cpu_glu_pack, a one-time weight layout like BN folding),
 * so that a block's C of [rows, 2·cols] holds the gate in its first cols columns
 * and the up half in the rest, and silu(g)·u is written while C is in cache.
 *
 * An [M, 2N] GEMM output "in blocks of nb" has that layout along its rows: output
 * column j of block j0 = j − j % nb (of cols = min(nb, N − j0) columns) has its gate
 * at column j0 + j and its up half at j0 + j + cols. With nb = N it is the plain
 * [gate | up] layout of W's own GEMM, which the unfused chain reads.
 *
 * GELU prologue (gelu_linear): per block of x rows, gelu(x) into a per-thread
 * buffer sized to the thread's share of the cache, one sgemm per column block on it,
 * the bias added to each C block while it is in cache; gelu(x) is never written
 * whole. */
#ifndef FC_LINEAR_OPS_H
#define FC_LINEAR_OPS_H

#include <stdbool.h>
#include <stddef.h>

/* Blocks of a blocked GEMM: mb rows, nb output columns (a gated unit's C block is
 * 2·nb wide). */
typedef struct fc_lin_plan {
    int M, N, K;
    int mb, nb;
} fc_lin_plan;

/* ---- gated unit */

/* Blocks whose C ([mb, 2·nb] floats) fits in block_bytes, at least one per thread,
 * spread evenly over the threads (fc_cpu_balance_blocks). */
void fc_cpu_glu_plan(int M, int N, int K, size_t block_bytes, int nthreads, fc_lin_plan *pl);
/* W [2N, K] -> Wp [2N, K] in blocks of nb rows of W_g then nb of W_u. */
void fc_cpu_glu_pack(const fc_lin_plan *pl, const float *W, float *Wp);
/* Floats of C block each thread needs for the fused form. */
size_t fc_cpu_glu_workspace(const fc_lin_plan *pl);
/* y = silu(x·W_gᵀ) ⊙ (x·W_uᵀ) [M, N]: one sgemm per block on packed Wp, silu·mul
 * applied to its C while in cache; ws holds fc_cpu_glu_workspace floats per thread. */
void fc_cpu_swiglu_fused(const fc_lin_plan *pl, const float *x, const float *Wp, float *y, float *ws);
/* The fused form's sgemm calls without the epilogue: x·Wpᵀ into y2 [M, 2N] in blocks
 * of pl->nb. */
void fc_cpu_glu_gemm(const fc_lin_plan *pl, const float *x, const float *Wp, float *y2);
/* The unfused chain's passes over y2 [M, 2N] in blocks of nb (nb = N: [gate | up]):
 * s = silu(gate) [M, N]; out = s ⊙ up [M, N]. */
void fc_cpu_glu_silu(const float *y2, float *s, int M, int N, int nb);
void fc_cpu_glu_mul(const float *s, const float *y2, float *out, int M, int N, int nb);

/* ---- GELU prologue */

/* Row blocks whose gelu(x) ([mb, K] floats) and C ([mb, nb]) each fit in block_bytes,
 * at least one block per thread (splitting rows first, so that no two threads apply
 * GELU to the same rows while there are rows to split), then more row blocks until
 * they spread evenly over the threads (fc_cpu_balance_blocks). */
void fc_cpu_prologue_plan(int M, int N, int K, size_t block_bytes, int nthreads, fc_lin_plan *pl);
/* Floats of gelu(x) buffer each thread needs. */
size_t fc_cpu_prologue_workspace(const fc_lin_plan *pl);
/* y = gelu_tanh(x)·Wᵀ + b [M, N] (prologue true: the fused form; ws holds
 * fc_cpu_prologue_workspace floats per thread), or, prologue false and bias NULL, the
 * same sgemm calls on x as given (the control: x is gelu(x) already, ws unused). */
void fc_cpu_prologue_gemm(const fc_lin_plan *pl, const float *x, const float *W, const float *bias, bool prologue,
                          float *y, float *ws);

#endif
