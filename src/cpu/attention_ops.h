/* attention_ops.h — the attention family's host kernels (cpu.openblas), for grouped-
 * query heads and key/value lengths of their own:
 *
 *   Q, O [b·h, s, d]; K, V [b·hkv, skv, d]; S, P [b·h, s, skv]; all row-major. The g =
 *   h/hkv query heads that share a key/value head are adjacent, so the query rows of
 *   key/value head n are the g·s consecutive rows [n·g·s, (n + 1)·g·s) of Q (and of S,
 *   P, O): every kernel takes them together, as one matrix of g·s rows.
 *   Causal: row r is query i = r mod s, which sees keys j <= i + skv − s.
 *
 * The unfused chain's ops (one OpenBLAS call or OpenMP pass each, every result in
 * memory) and the fused forms:
 *   qk_softmax  cblas_sgemm by blocks of rows, each masked and softmaxed in cache;
 *   attention   flash attention in fusecal's own register-blocked kernels: each block
 *               of queries keeps its output tile, row maxima and sums while the keys
 *               stream by in blocks (online softmax); the scores never reach memory;
 *   decode      (few query rows per key/value head) split-KV: each thread streams its
 *               chunks of K and V once, keeping a partial output, maximum and sum per
 *               row, which a final pass combines.
 * All run on the one OpenMP pool; OpenBLAS calls inside a parallel region run on the
 * calling thread. */
#ifndef FC_ATTENTION_OPS_H
#define FC_ATTENTION_OPS_H

#include "cpu_bf16.h"
#include "pattern.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct fc_att_geom {
    int bkv;     /* key/value heads in all: b·hkv */
    int g;       /* query heads per key/value head: h/hkv */
    int s, skv;  /* query and key/value lengths */
    int d;       /* head dimension */
    bool causal; /* query i sees keys j <= i + skv − s */
} fc_att_geom;

fc_att_geom fc_att_geom_of(const fc_problem *p);

/* ---- the unfused chain */
/* S = alpha·Q·Kᵀ: one sgemm of g·s rows per key/value head */
void fc_cpu_att_qk(const fc_att_geom *g, const float *Q, const float *K, float alpha, float *S);
/* out = in·alpha, −∞ where the causal mask hides a key */
void fc_cpu_att_scale_mask(const fc_att_geom *g, const float *in, float *out, float alpha);
/* O = P·V: one sgemm of g·s rows per key/value head */
void fc_cpu_att_pv(const fc_att_geom *g, const float *P, const float *V, float *O);

/* ---- fused forms */
/* P = softmax(Q·Kᵀ/√d) (0 where masked) */
void fc_cpu_att_qk_softmax(const fc_att_geom *g, const float *Q, const float *K, float *P);
/* Keys the rows [r0, r0 + rows) of a key/value head's g·s rows see together: all skv,
 * or under the causal mask the most any of them sees (row r: those up to its query
 * i = r mod s plus the skv − s keys before the queries). */
int fc_att_block_keys(const fc_att_geom *g, int r0, int rows);
/* The softmax of a tile of scores already scaled (cpu.onednn's row-blocked fused
 * forms): S holds nh key/value heads' blocks of R rows of ld floats (the keys its
 * matmul computed, at least those each row sees), row i of a block being its head's
 * row r0 + i; each row's softmax under the causal mask (0 where masked) goes to out,
 * head h's rows at out + h·out_head elements, out_ld apart, as floats or, with bf16,
 * as bfloat16 (round to nearest even). S is overwritten. */
void fc_cpu_att_softmax_tile(const fc_att_geom *g, float *S, int nh, int R, int r0, int ld, void *out, size_t out_head,
                             int out_ld, bool bf16);
/* The fused attention's softmax with its normalization left to the output (fp32):
 * row t of the nh·R rows of S (as fc_cpu_att_softmax_tile's) becomes e^(s − max) in P
 * (head h's rows at P + h·p_head, ld apart; 0 where masked), 1/Σ in inv[t]. P·V of
 * those rows, scaled by inv (fc_cpu_att_scale_rows), is the attention: one pass over
 * the scores fewer than normalizing them, R·d multiplies instead of R·skv. */
void fc_cpu_att_exp_tile(const fc_att_geom *g, const float *S, int nh, int R, int r0, int ld, float *P, size_t p_head,
                         float *inv);
/* O[r][·] *= inv[r] for rows r of d floats. These three run on the calling thread
 * alone when called inside a parallel region (cpu.onednn's per-thread tiles). */
void fc_cpu_att_scale_rows(float *O, int rows, int d, const float *inv);
/* Whether attention runs the split-KV decode kernel (few query rows per key/value
 * head), else the flash kernel. */
bool fc_cpu_att_decode(const fc_att_geom *g);
/* Floats of workspace fc_cpu_att_flash needs with nthreads threads. */
size_t fc_cpu_att_workspace(const fc_att_geom *g, int nthreads);
/* O = softmax(Q·Kᵀ/√d)·V, by the flash or the decode kernel. */
void fc_cpu_att_flash(const fc_att_geom *g, const float *Q, const float *K, const float *V, float *O, float *ws,
                      int nthreads);
/* The decode kernel on bfloat16 Q, K, V and O (fc_cpu_att_decode(g) must hold): K and
 * V read as bf16 (half the bytes); where the build has AVX-512 BF16, Q·Kᵀ and P·V
 * as products of bf16 pairs summed in float (vdpbf16ps; P rounded to bf16 for P·V),
 * elsewhere each element widened exactly and float arithmetic; the softmax in float,
 * O rounded to nearest even; the workspace of fc_cpu_att_workspace. */
void fc_cpu_att_decode_bf16(const fc_att_geom *g, const fc_bf16 *Q, const fc_bf16 *K, const fc_bf16 *V, fc_bf16 *O,
                            float *ws, int nthreads);
/* How fc_cpu_att_decode_bf16 multiplies, for an implementation's name */
const char *fc_cpu_att_decode_bf16_math(void);
/* What fc_cpu_att_flash runs for g, for describe(): kernel, tiles, vector width. */
void fc_cpu_att_describe(const fc_att_geom *g, int nthreads, char *buf, size_t n);

#endif
