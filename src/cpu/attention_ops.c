/* attention_ops.c — see attention_ops.h.
 *
 * Vectors are cpu_vec.h's VW floats, one register: 16 with AVX-512 (a zmm), 8 with
 * AVX2 (a ymm), and the register tiles are sized to each register file (32 and 16
 * registers). This file is compiled with -ffp-contract=fast, so a·b + c is
 * one FMA.
 *
 * Flash attention (many query rows per key/value head). A block of BR = 2·VW query rows
 * keeps Qᵀ (scaled by 1/√d, [d][BR]: queries along the vector lanes), its output tile
 * Oᵀ [d][BR], and each row's running maximum and sum. Keys come in blocks of BC:
 *   Q·Kᵀ  Sᵀ[j][lanes] = Σ_e K[j][e]·Qᵀ[e][lanes] in tiles of QK_R keys x 2 vectors (24
 *         or 12 accumulators): K's elements are broadcast from its rows as they lie in
 *         memory, Qᵀ's two vectors are loaded once per e for all QK_R keys;
 *   softmax  the block's maximum per query is an elementwise max over the keys (no
 *         horizontal reduction: queries are lanes), then p = e^(s − m) in place and the
 *         sums; the old output and sum are rescaled by e^(m_old − m_new);
 *   P·V   Oᵀ[e][lanes] += Σ_j V[j][e]·Pᵀ[j][lanes] in tiles of PV_E head-dimension rows x
 *         2 vectors, V's elements broadcast from its rows; the rescale is folded into
 *         the tile's load of Oᵀ.
 * Per key and query pair 4d FLOPs of FMAs against about 20 vector operations per VW
 * pairs for the softmax. The block's scores Sᵀ (BC x BR floats, 16 KiB), Qᵀ and Oᵀ stay
 * in L1/L2; K and V stream from L2 (a head's K and V are shared by its g·s rows, which
 * run as consecutive blocks). Blocks of all key/value heads are shared out dynamically
 * over the threads, the most masked (heaviest causal) block of a head first.
 *
 * Decode (at most DEC_ROWS query rows per key/value head, e.g. s = 1 with g = 4): the
 * work is reading K and V, so each key/value head's keys are split into chunks (enough
 * for every thread to have several) that the threads stream once each: scores per row
 * are dot products along d, reduced VW keys at a time by a shuffle tree into one vector
 * of VW scores; an online softmax over DEC_CH-key pieces; P·V along d; past half the
 * LLC, each piece's K and V read by a bare loop of loads just before the piece is
 * computed (dec_read_piece), so the arithmetic finds them in L2. Each chunk leaves
 * a partial output, maximum and sum per row; a last pass combines them:
 * O = Σ_c e^(m_c − m)·O_c / Σ_c e^(m_c − m)·l_c. In bf16 with AVX-512 BF16 the dot
 * products of both steps are vdpbf16ps over pairs of bfloat16 (the comment above
 * dec_dot_dp).
 */
#include "attention_ops.h"
#include "cpu_bf16.h"
#include "cpuinfo.h"
#include "cpu_vec.h"

#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if VW == 16
#define QK_R 12    /* keys per Q·Kᵀ tile */
#define PV_E 8     /* head-dimension rows per P·V tile */
#define DEC_PV_C 4 /* vectors per row of the decode kernel's four-row P·V: 16 accumulators */
#else              /* sixteen vector registers */
#define QK_R 6
#define PV_E 4
/* vectors per row of the decode kernel's four-row P·V: 8 accumulators, 14 registers in
 * all, the four rows reading each vector of V once (the AVX2 VM, one thread, 4 rows,
 * d = 128, 4 MB of K and V in L3: 0.15-0.23 ms against 0.16-0.26 by two rows of 4
 * vectors, which read V twice) */
#define DEC_PV_C 2
#endif
#define QV 2                   /* query vectors per block */
#define BR (QV * VW)           /* query rows per block */
#define BC (4096 / BR)         /* keys per block: the block's scores take 16 KiB */
#define DEC_ROWS 8             /* the decode kernel takes at most this many rows per key/value head */
#define DEC_CH 256             /* keys per piece of the decode kernel's online softmax */
#define DEC_SPLIT_MIN 512      /* keys per chunk of a key/value head, at least */
#define DEC_SPLIT_MAX 64       /* chunks per key/value head, at most */
#define ROW_BLOCK (256 * 1024) /* bytes of scores per row block of the fused qk_softmax */
/* bf16 decode with AVX-512 BF16: Q·Kᵀ and P·V as vdpbf16ps over pairs of bfloat16
 * (the comment above dec_dot_dp) */
#if defined(__AVX512BF16__) && VW == 16
#define DEC_DP 1
#else
#define DEC_DP 0
#endif
#define DEC_PB (DEC_CH + 32) /* bfloat16 per row of the rounded probabilities (a zero after the last) */

typedef uint16_t vh __attribute__((vector_size(VW * 2))); /* VW bfloat16 */

/* *p in every lane: one broadcast load */
static inline vf vbcast(const float *p)
{
    const vf r = {*p};
    return __builtin_shuffle(r, (vi){0});
}
static inline vi vidup(int x) { return (vi){0} + x; }

/* e^r for xc in [−87, 88] and n = round(xc·log2 e): r = xc − n·ln2 in two steps
 * (Cody–Waite), r in [−ln2/2, ln2/2], then Cephes' degree-5 polynomial (relative
 * error ~1e-7) */
static inline vf exp_poly(vf xc, vf n)
{
    vf r = xc - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    vf p = vsplat(1.9875691500E-4f);
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    return p * r * r + r + 1.0f;
}
/* e^x = 2^n·e^r, n by the 1.5·2^23 trick; e^(x < −87) = 0, so masked −∞ gives 0.
 * AVX-512: the clamps are min/max, and one vscalefps applies 2^n and zeroes the lanes
 * below −87 (its mask): 19 instructions a vector in exp_sum_to's loop, 25 before. */
#if VW == 16
static inline vf vexp(vf x)
{
    const float magic = 12582912.0f;
    const __m512 xv = (__m512)x;
    const __mmask16 live = _mm512_cmp_ps_mask(xv, _mm512_set1_ps(-87.0f), _CMP_NLT_UQ); /* NaN lanes live */
    /* min and max return their second operand where either is NaN: x second, so a
     * NaN survives both clamps (and the scaling) as NaN */
    const vf xc = (vf)_mm512_max_ps(_mm512_set1_ps(-87.0f), _mm512_min_ps(_mm512_set1_ps(88.0f), xv));
    const vf n = (xc * 1.44269504088896341f + magic) - magic;
    return (vf)_mm512_maskz_scalef_ps(live, (__m512)exp_poly(xc, n), (__m512)n);
}
#else
static inline vf vexp(vf x)
{
    const float magic = 12582912.0f;
    vf xc = vsel(x < vsplat(-87.0f), vsplat(-87.0f), x);
    xc = vsel(xc > vsplat(88.0f), vsplat(88.0f), xc);
    vf t = xc * 1.44269504088896341f + magic;
    vf n = t - magic;
    vi ni = (vi)t - (vi)vsplat(magic);
    vf scale = (vf)((ni + 127) << 23);
    return vsel(x < vsplat(-87.0f), vsplat(0.0f), exp_poly(xc, n) * scale);
}
#endif

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* Keys row r of a key/value head's g·s rows sees: all skv, or under the causal mask
 * those up to its query i = r mod s plus the skv − s keys before the queries. */
static int row_keys(const fc_att_geom *g, int r)
{
    return g->causal ? imin(g->skv, r % g->s + 1 + (g->skv - g->s)) : g->skv;
}

int fc_att_block_keys(const fc_att_geom *g, int r0, int rows)
{
    int keys = 0;
    for (int i = 0; i < rows; i++) keys = imax(keys, row_keys(g, r0 + i));
    return keys;
}

fc_att_geom fc_att_geom_of(const fc_problem *p)
{
    const int64_t *d = p->d;
    return (fc_att_geom){(int)(d[FC_ATT_B] * d[FC_ATT_HKV]),
                         (int)(d[FC_ATT_H] / d[FC_ATT_HKV]),
                         (int)d[FC_ATT_S],
                         (int)d[FC_ATT_SKV],
                         (int)d[FC_ATT_D],
                         d[FC_ATT_CAUSAL] != 0};
}

/* ------------------------------------------------------------------ unfused chain */

/* One sgemm per key/value head: C_n[M, N] = alpha·A_n[M, K]·op(B_n), row-major. The heads
 * are shared out over the threads (one single-threaded sgemm each) when there are enough
 * of them, else each sgemm is threaded. */
static void per_head_gemm(const fc_att_geom *g, bool trans_b, int N, int K, float alpha, const float *A, size_t a_head,
                          const float *B, size_t b_head, int ldb, float *C, size_t c_head)
{
    const int M = g->g * g->s;
    const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
    if (g->bkv >= omp_get_max_threads()) {
#pragma omp parallel for schedule(static)
        for (int n = 0; n < g->bkv; n++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, M, N, K, alpha, A + n * a_head, K, B + n * b_head, ldb, 0.0f,
                        C + n * c_head, N);
    } else {
        for (int n = 0; n < g->bkv; n++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, M, N, K, alpha, A + n * a_head, K, B + n * b_head, ldb, 0.0f,
                        C + n * c_head, N);
    }
}

void fc_cpu_att_qk(const fc_att_geom *g, const float *Q, const float *K, float alpha, float *S)
{
    const size_t M = (size_t)g->g * g->s, skv = (size_t)g->skv, d = (size_t)g->d;
    per_head_gemm(g, true, g->skv, g->d, alpha, Q, M * d, K, skv * d, g->d, S, M * skv);
}

void fc_cpu_att_pv(const fc_att_geom *g, const float *P, const float *V, float *O)
{
    const size_t M = (size_t)g->g * g->s, skv = (size_t)g->skv, d = (size_t)g->d;
    per_head_gemm(g, false, g->d, g->skv, 1.0f, P, M * skv, V, skv * d, g->d, O, M * d);
}

void fc_cpu_att_scale_mask(const fc_att_geom *g, const float *in, float *out, float alpha)
{
    const size_t rows = (size_t)g->bkv * g->g * g->s, skv = (size_t)g->skv;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) {
        const float *a = in + r * skv;
        float *o = out + r * skv;
        const size_t lim = (size_t)row_keys(g, (int)(r % (size_t)g->s));
#pragma omp simd
        for (size_t j = 0; j < lim; j++) o[j] = a[j] * alpha;
        for (size_t j = lim; j < skv; j++) o[j] = -INFINITY;
    }
}

/* ------------------------------------------------------------------ fused qk_softmax */

static float max_span(const float *x, int n)
{
    vf vm = vsplat(-INFINITY);
    int j = 0;
    for (; j + VW <= n; j += VW) vm = vmax(vm, vload(x + j));
    float m = vhmax(vm);
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    return m;
}

/* y[j] = e^(x[j] − m) over n (y may be x); returns the sum */
static float exp_sum_to(const float *x, float *y, int n, float m)
{
    vf vs = vsplat(0.0f), vm = vsplat(m);
    int j = 0;
    for (; j + VW <= n; j += VW) {
        vf e = vexp(vload(x + j) - vm);
        vstore(y + j, e);
        vs += e;
    }
    float s = vhsum(vs);
    if (j < n) {
        vf t = vsplat(-INFINITY);
        for (int k = 0; j + k < n; k++) t[k] = x[j + k];
        vf e = vexp(t - vm);
        for (int k = 0; j + k < n; k++) y[j + k] = e[k];
        s += vhsum(e);
    }
    return s;
}

/* x[j] = e^(x[j] − m) over n; returns the sum */
static float exp_sum_span(float *x, int n, float m) { return exp_sum_to(x, x, n, m); }

/* softmax of the first lim of a row of n; zeros after them */
static void softmax_row(float *x, int lim, int n)
{
    const float inv = 1.0f / exp_sum_span(x, lim, max_span(x, lim));
#pragma omp simd
    for (int j = 0; j < lim; j++) x[j] *= inv;
    for (int j = lim; j < n; j++) x[j] = 0.0f;
}

/* Rows [r0, r0 + rows) of key/value head n: Q·Kᵀ/√d by one sgemm over the keys the rows
 * see, then each row's softmax while the block is in cache. */
static void qk_softmax_block(const fc_att_geom *g, const float *Q, const float *K, float *P, int n, int r0, int rows)
{
    const size_t M = (size_t)g->g * g->s, skv = (size_t)g->skv, d = (size_t)g->d;
    const int cols = fc_att_block_keys(g, r0, rows);
    float *out = P + (n * M + (size_t)r0) * skv;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, g->d, 1.0f / sqrtf((float)g->d),
                Q + (n * M + (size_t)r0) * d, g->d, K + n * skv * d, g->d, 0.0f, out, g->skv);
    for (int i = 0; i < rows; i++) softmax_row(out + (size_t)i * skv, row_keys(g, r0 + i), g->skv);
}

void fc_cpu_att_softmax_tile(const fc_att_geom *g, float *S, int nh, int R, int r0, int ld, void *out, size_t out_head,
                             int out_ld, bool bf16)
{
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int t = 0; t < nh * R; t++) {
        const int i = t % R, lim = row_keys(g, r0 + i);
        const size_t at = (size_t)(t / R) * out_head + (size_t)i * (size_t)out_ld;
        float *x = S + (size_t)t * (size_t)ld;
        if (!bf16 && (float *)out + at != x) { /* softmax where it is stored: the row is read once */
            float *o = (float *)out + at;
            memcpy(o, x, (size_t)lim * sizeof *o);
            x = o;
        }
        if (!bf16) {
            softmax_row(x, lim, out_ld);
            continue;
        }
        /* bf16: the normalization and the rounding in one pass */
        const float inv = 1.0f / exp_sum_span(x, lim, max_span(x, lim));
        fc_bf16 *o = (fc_bf16 *)out + at;
        int j = 0;
        for (; j + VW <= lim; j += VW) {
            vi u = (vi)(vload(x + j) * inv); /* finite and >= 0: round to nearest even by the bits */
            vh h = __builtin_convertvector((u + 0x7fff + ((u >> 16) & 1)) >> 16, vh);
            memcpy(o + j, &h, sizeof h);
        }
        for (; j < lim; j++) o[j] = fc_bf16_store(x[j] * inv);
        memset(o + lim, 0, (size_t)(out_ld - lim) * sizeof *o);
    }
}

void fc_cpu_att_exp_tile(const fc_att_geom *g, const float *S, int nh, int R, int r0, int ld, float *P, size_t p_head,
                         float *inv)
{
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int t = 0; t < nh * R; t++) {
        const int i = t % R, lim = row_keys(g, r0 + i);
        const float *x = S + (size_t)t * (size_t)ld;
        float *o = P + (size_t)(t / R) * p_head + (size_t)i * (size_t)ld;
        inv[t] = 1.0f / exp_sum_to(x, o, lim, max_span(x, lim));
        memset(o + lim, 0, (size_t)(ld - lim) * sizeof *o);
    }
}

void fc_cpu_att_scale_rows(float *O, int rows, int d, const float *inv)
{
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int r = 0; r < rows; r++) {
        float *o = O + (size_t)r * d;
        const float f = inv[r];
#pragma omp simd
        for (int e = 0; e < d; e++) o[e] *= f;
    }
}

void fc_cpu_att_qk_softmax(const fc_att_geom *g, const float *Q, const float *K, float *P)
{
    const int M = g->g * g->s;
    int br = (int)(ROW_BLOCK / sizeof(float) / (size_t)g->skv);
    br = imin(imax(br, 8), M);
    const int nrb = (M + br - 1) / br, ntask = g->bkv * nrb;
    if (ntask >= omp_get_max_threads()) {
#pragma omp parallel for schedule(dynamic, 1)
        for (int t = 0; t < ntask; t++) {
            const int rb = t % nrb, r0 = rb * br;
            qk_softmax_block(g, Q, K, P, t / nrb, r0, imin(br, M - r0));
        }
        return;
    }
    /* fewer blocks than threads (decode): each block's sgemm threaded, its rows shared */
    const size_t skv = (size_t)g->skv;
    for (int t = 0; t < ntask; t++) {
        const int n = t / nrb, r0 = (t % nrb) * br, rows = imin(br, M - r0);
        const int cols = fc_att_block_keys(g, r0, rows);
        float *out = P + ((size_t)n * M + (size_t)r0) * skv;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, g->d, 1.0f / sqrtf((float)g->d),
                    Q + ((size_t)n * M + (size_t)r0) * g->d, g->d, K + (size_t)n * skv * g->d, g->d, 0.0f, out, g->skv);
#pragma omp parallel for schedule(static)
        for (int i = 0; i < rows; i++) softmax_row(out + (size_t)i * skv, row_keys(g, r0 + i), g->skv);
    }
}

/* ------------------------------------------------------------------ flash attention */

#define INLINE static inline __attribute__((always_inline))

/* st[r][lanes] = Σ_e K[r][e]·qt[e][lanes] for r < R (K's rows d apart); mx = max with them */
INLINE void qk_tile(const int R, const float *K, int d, const float *qt, float *st, vf *mx)
{
    vf acc[QK_R][QV];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) acc[r][c] = vsplat(0.0f);
    for (int e = 0; e < d; e++) {
        vf q[QV];
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) q[c] = vload(qt + (size_t)e * BR + c * VW);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            const vf k = vsplat(K[(size_t)r * d + e]);
#pragma GCC unroll 4
            for (int c = 0; c < QV; c++) acc[r][c] += k * q[c];
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) {
            vstore(st + r * BR + c * VW, acc[r][c]);
            mx[c] = vmax(mx[c], acc[r][c]);
        }
}

/* ot[x][lanes] = ot[x][lanes]·corr + Σ_j V[j][x]·st[j][lanes] for x < E, j < nk (V's rows d
 * apart, starting at the tile's first head-dimension row) */
INLINE void pv_tile(const int E, const float *V, int d, const float *st, int nk, float *ot, const vf *corr)
{
    vf acc[PV_E][QV];
#pragma GCC unroll 16
    for (int x = 0; x < E; x++)
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) acc[x][c] = vload(ot + x * BR + c * VW) * corr[c];
    for (int j = 0; j < nk; j++) {
        vf p[QV];
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) p[c] = vload(st + j * BR + c * VW);
#pragma GCC unroll 16
        for (int x = 0; x < E; x++) {
            const vf v = vsplat(V[(size_t)j * d + x]);
#pragma GCC unroll 4
            for (int c = 0; c < QV; c++) acc[x][c] += v * p[c];
        }
    }
#pragma GCC unroll 16
    for (int x = 0; x < E; x++)
#pragma GCC unroll 4
        for (int c = 0; c < QV; c++) vstore(ot + x * BR + c * VW, acc[x][c]);
}

static size_t flash_ws_floats(int d) { return (size_t)2 * d * BR + (size_t)BC * BR; }

/* The running state of one block of query rows. */
typedef struct qblock {
    float *qt, *st, *ot; /* Qᵀ·(1/√d) [d][BR], the key block's scores [BC][BR], Oᵀ [d][BR] */
    vi lim[QV];          /* keys each lane sees */
    int lim_min, lim_max;
    vf m[QV], l[QV];
} qblock;

/* Qᵀ of rows [r0, r0 + rows) of a head's M, scaled by 1/√d and zero past the rows; the
 * keys each row sees; Oᵀ, maxima and sums cleared. */
static void qblock_start(const fc_att_geom *g, qblock *b, const float *Qh, int r0, int rows)
{
    const int d = g->d;
    const float alpha = 1.0f / sqrtf((float)d);
    for (int e = 0; e < d; e++)
        for (int i = 0; i < BR; i++) b->qt[(size_t)e * BR + i] = i < rows ? alpha * Qh[(size_t)(r0 + i) * d + e] : 0.0f;
    memset(b->ot, 0, (size_t)d * BR * sizeof(float));
    b->lim_min = g->skv;
    b->lim_max = 0;
    for (int i = 0; i < BR; i++) {
        int lim = i < rows ? row_keys(g, r0 + i) : g->skv; /* lanes past the rows: zeros, never masked */
        b->lim[i / VW][i % VW] = lim;
        if (i < rows) {
            b->lim_min = imin(b->lim_min, lim);
            b->lim_max = imax(b->lim_max, lim);
        }
    }
    for (int c = 0; c < QV; c++) {
        b->m[c] = vsplat(-INFINITY);
        b->l[c] = vsplat(0.0f);
    }
}

/* Keys [j0, j0 + nk) of the block: scores, online softmax, P·V. */
static void qblock_keys(const fc_att_geom *g, qblock *b, const float *Kh, const float *Vh, int j0, int nk)
{
    const int d = g->d;
    vf mx[QV];
    for (int c = 0; c < QV; c++) mx[c] = vsplat(-INFINITY);
    const float *K0 = Kh + (size_t)j0 * d;
    int j = 0;
    for (; j + QK_R <= nk; j += QK_R) qk_tile(QK_R, K0 + (size_t)j * d, d, b->qt, b->st + j * BR, mx);
    for (; j < nk; j++) qk_tile(1, K0 + (size_t)j * d, d, b->qt, b->st + j * BR, mx);
    if (j0 + nk > b->lim_min) { /* some lane sees only part of the block: mask, then the max again */
        for (int c = 0; c < QV; c++) mx[c] = vsplat(-INFINITY);
        for (j = 0; j < nk; j++)
            for (int c = 0; c < QV; c++) {
                float *s = b->st + j * BR + c * VW;
                vf v = vsel(vidup(j0 + j) >= b->lim[c], vsplat(-INFINITY), vload(s));
                vstore(s, v);
                mx[c] = vmax(mx[c], v);
            }
    }
    vf corr[QV], base[QV], sum[QV];
    for (int c = 0; c < QV; c++) {
        vf mn = vmax(b->m[c], mx[c]);
        base[c] = vsel(mn == vsplat(-INFINITY), vsplat(0.0f), mn); /* a lane with nothing seen yet */
        corr[c] = vexp(b->m[c] - base[c]);
        b->m[c] = mn;
        sum[c] = vsplat(0.0f);
    }
    for (j = 0; j < nk; j++)
        for (int c = 0; c < QV; c++) {
            float *s = b->st + j * BR + c * VW;
            vf p = vexp(vload(s) - base[c]);
            vstore(s, p);
            sum[c] += p;
        }
    for (int c = 0; c < QV; c++) b->l[c] = b->l[c] * corr[c] + sum[c];
    const float *V0 = Vh + (size_t)j0 * d;
    int x = 0;
    for (; x + PV_E <= d; x += PV_E) pv_tile(PV_E, V0 + x, d, b->st, nk, b->ot + (size_t)x * BR, corr);
    for (; x < d; x++) pv_tile(1, V0 + x, d, b->st, nk, b->ot + (size_t)x * BR, corr);
}

/* Block `blk` of key/value head n's M = g·s query rows. */
static void flash_block(const fc_att_geom *g, const float *Q, const float *K, const float *V, float *O, int n, int blk,
                        float *ws)
{
    const int d = g->d, M = g->g * g->s, r0 = blk * BR, rows = imin(BR, M - r0);
    const size_t head = (size_t)n * M * d, kv = (size_t)n * g->skv * d;
    qblock b = {.qt = ws, .ot = ws + (size_t)d * BR, .st = ws + (size_t)2 * d * BR};
    qblock_start(g, &b, Q + head, r0, rows);
    for (int j0 = 0; j0 < b.lim_max; j0 += BC) qblock_keys(g, &b, K + kv, V + kv, j0, imin(BC, b.lim_max - j0));
    float *Oh = O + head + (size_t)r0 * d;
    for (int i = 0; i < rows; i++) {
        const float inv = 1.0f / b.l[i / VW][i % VW];
        for (int e = 0; e < d; e++) Oh[(size_t)i * d + e] = b.ot[(size_t)e * BR + i] * inv;
    }
}

static void flash(const fc_att_geom *g, const float *Q, const float *K, const float *V, float *O, float *ws)
{
    const int M = g->g * g->s, nblk = (M + BR - 1) / BR, ntask = g->bkv * nblk;
    const size_t per = flash_ws_floats(g->d);
#pragma omp parallel
    {
        float *w = ws + (size_t)omp_get_thread_num() * per;
#pragma omp for schedule(dynamic, 1)
        for (int t = 0; t < ntask; t++) flash_block(g, Q, K, V, O, t / nblk, nblk - 1 - t % nblk, w);
    }
}

/* ------------------------------------------------------------------ decode */

static int dec_rows(const fc_att_geom *g) { return g->g * g->s; }

/* Chunks each key/value head's keys are split into: several per thread in all, none
 * shorter than DEC_SPLIT_MIN keys. */
static int dec_splits(const fc_att_geom *g, int nthreads)
{
    int want = (4 * nthreads + g->bkv - 1) / g->bkv;
    int most = imin((g->skv + DEC_SPLIT_MIN - 1) / DEC_SPLIT_MIN, DEC_SPLIT_MAX);
    return imax(1, imin(want, most));
}

/* floats of one chunk's partial result: output, maximum and sum per row */
static size_t dec_part(const fc_att_geom *g) { return (size_t)dec_rows(g) * ((size_t)g->d + 2); }

/* per thread: the rows' scaled queries (d each), their scores (DEC_CH each) and,
 * rounded to bfloat16 for vdpbf16ps, their probabilities (DEC_PB bfloat16 each) */
static size_t dec_ws_floats(const fc_att_geom *g) { return (size_t)dec_rows(g) * ((size_t)g->d + DEC_CH + DEC_PB / 2); }

/* x[k] for k < VW: one vector whose lane k is the sum of x[k]'s lanes (x is destroyed).
 * Each level adds pairs of lanes of two vectors into one: log2(VW) levels, 2(VW − 1)
 * shuffles and VW − 1 adds for VW dot products. The levels that can stay within each
 * 128-bit lane do: GCC builds a two-vector shuffle that crosses lanes from permutes
 * (two vpermd and a blend with AVX2, vpermt2ps with AVX-512), where an in-lane one is
 * a single vshufps, or with 8 lanes a vhaddps that adds as well. With 8 lanes (AVX2):
 * 6 vhaddps, 2 lane permutes and an add (the AMD EPYC VM with AVX2 only, one thread, 4
 * rows, d = 64, 8 MB of K and V in L3: the kernel 0.46 -> 0.38 ms). With 16 (AVX-512):
 * two levels of vshufps pairs, each 128-bit lane then holding its partial sums of four
 * vectors, and two of vshuff32x4 pairs across the lanes (the Zen 4 VM with AVX-512,
 * two threads, 8 key/value heads of 4 rows, d = 128, one harness, alternated, three
 * rounds, the fastest of 400 calls: skv = 1024 (8 MB) 0.190-0.191 -> 0.118-0.123 ms;
 * skv = 4096 with 32 heads (134 MB) 4.60-4.91 -> 3.22-3.99 ms). */
#if VW == 8
static inline vf sum_lanes(vf *x)
{
    const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps((__m256)x[0], (__m256)x[1]),
                                    _mm256_hadd_ps((__m256)x[2], (__m256)x[3]));
    const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps((__m256)x[4], (__m256)x[5]),
                                    _mm256_hadd_ps((__m256)x[6], (__m256)x[7]));
    /* a: x0..x3's sums over lanes 0-3 in its low half, over lanes 4-7 in its high; b: x4..x7's */
    return (vf)_mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}
#elif VW == 16
/* within each 128-bit lane: (a0 + a1, a2 + a3, b0 + b1, b2 + b3) */
static inline __m512 pair_in_lanes(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, 0x88), _mm512_shuffle_ps(a, b, 0xDD));
}
/* across the lanes L0-L3: (a.L0 + a.L1, a.L2 + a.L3, b.L0 + b.L1, b.L2 + b.L3) */
static inline __m512 pair_lanes(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
}
static inline vf sum_lanes(vf *x)
{
    __m512 y[8], z[4];
    /* y[i]: in each 128-bit lane, x[2i]'s and x[2i + 1]'s pairs of floats summed; z[i]:
     * in each 128-bit lane, that lane's sums of x[4i] .. x[4i + 3] */
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) y[i] = pair_in_lanes((__m512)x[2 * i], (__m512)x[2 * i + 1]);
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) z[i] = pair_in_lanes(y[2 * i], y[2 * i + 1]);
    /* lane i of the result: z[i]'s lanes summed, x[4i] .. x[4i + 3] in its four floats */
    return (vf)pair_lanes(pair_lanes(z[0], z[1]), pair_lanes(z[2], z[3]));
}
#else
static inline vf sum_lanes(vf *x)
{
    vi ev, od;
    for (int i = 0; i < VW; i++) {
        ev[i] = 2 * i;
        od[i] = 2 * i + 1;
    }
#pragma GCC unroll 8
    for (int n = VW; n > 1; n /= 2)
#pragma GCC unroll 8
        for (int i = 0; i < n / 2; i++)
            x[i] = __builtin_shuffle(x[2 * i], x[2 * i + 1], ev) + __builtin_shuffle(x[2 * i], x[2 * i + 1], od);
    return x[0];
}
#endif

/* Reads the n bytes at a and at b (one piece's K and V) with vector loads whose sums are
 * thrown away. Past half the LLC the decode kernel does this just before it computes
 * each piece, so the arithmetic then reads the piece from L2. A core thus takes turns:
 * reading at the rate a bare read gets, then computing at the rate it computes from
 * L2; with two threads the cores fall out of step, and one reads while the other
 * computes. On the Zen 5 VM (AVX-512, 32 MiB L3), 8 key/value heads of 4 rows,
 * d = 128, skv = 4096, b = 4 (134 MB of K and V), a harness timing the kernel alone,
 * the medians of 20-60 calls:
 *   one thread: a bare read of K and V 42 GB/s; the kernel from L2 53 GB/s; so reading
 *   then computing could reach 1/(1/42 + 1/53) = 23 GB/s; this form 23-26 GB/s;
 *   two threads: the bare read 68-69 GB/s; this form 49-54 GB/s.
 * The form before asked for the next piece's rows (prefetcht1, a piece ahead) from
 * within the Q·Kᵀ and P·V loops: one thread 15 GB/s, two 29-31 GB/s, below even
 * the sum of the two times. In `fusecal run` (cpu.onednn, one binary with both forms
 * behind a switch, alternated, three rounds), the fused medians read over asked: b = 4
 * 0.75-0.82 (63-68 % of the bandwidth beside the rounds, against 44-53 %), b = 2
 * 0.77-0.91, bf16 b = 4 and b = 8 0.63-0.84
 * (results/cpu-amd-epyc-f26m2-2c/ab-decode-read-piece.txt). On the Zen 4 VM the asks
 * had reached 78-82 % of a bare read of the same bytes where no asks reached 52-62 %;
 * variants of them tried there (two pieces ahead, into L1, non-temporal, for every 2nd
 * to 16th line, pieces of 64-512 keys, the piece's keys in 2 or 4 interleaved runs) did
 * no better, and perf put a third of the Q·Kᵀ loop's samples just after the asks. There,
 * in `fusecal run` (two builds in turn, three rounds), this form and the asks ran alike:
 * fused 0.99-1.04x at b = 1, 2 and 4, about 22 GB/s at b = 1, which is what a core gets
 * reading at its share of the read ceiling and then computing at its in-cache rate
 * (results/cpu-amd-epyc-f25m17-2c/ab-decode-read-piece.txt). Not yet measured with
 * AVX2, where the asks had replaced asks 4 KiB ahead into L1 (6.93 ms against 8.27 at
 * b = 4; results/cpu-amd-epyc-f25m17-2c-avx2/ab-decode-next-piece.txt). The cores' caches take each
 * read piece in whole: DEC_CH keys of K and of V, 256 KiB in floats at d = 128,
 * against an L2 of 1 MiB on both VMs. Reading the piece in four streams (each of K
 * and V in halves), asking 1-2 KB ahead, or both, ran alike on the Zen 4 VM (fused
 * 0.89-1.11x round by round at b = 4; ab-decode-read-streams.txt there). */
static __attribute__((noinline)) void dec_read_piece(const void *a, const void *b, size_t n)
{
    /* the bits or-ed, not added: bfloat16 pairs read as floats may be subnormal; at any
     * byte: a bfloat16 piece with an odd d starts on 2 */
    typedef int32_t viu __attribute__((vector_size(VW * 4), aligned(1), may_alias));
    vi sa = {0}, sb = {0};
    const char *pa = a, *pb = b;
    for (size_t i = 0; i + sizeof(vi) <= n; i += sizeof(vi)) {
        sa |= *(const viu *)(pa + i);
        sb |= *(const viu *)(pb + i);
    }
    __asm__ volatile("" ::"v"(sa), "v"(sb));
}

/* Keeps v in a register: with it, GCC (12) reads K's, Q's and V's vectors once per
 * step of the decode kernel's loops, where it otherwise folds them into every FMA as
 * a memory operand, reading each vector once per FMA that uses it (4x the loads; the
 * loops ran 1.5x slower from L2). An array's element goes through reg_vf: held in
 * place, the element was stored back to the stack at every step, one store per
 * load (the P·V loop of one row: 4 loads, 4 stores and 4 FMAs a key). */
#define IN_REGISTER(v) __asm__("" : "+v"(v))
INLINE vf reg_vf(vf v)
{
    IN_REGISTER(v);
    return v;
}

/* The decode kernel reads Q, K and V as float or as bfloat16 (bf, a constant where
 * these inline: each form is compiled apart) and computes in float either way. */
INLINE size_t el_size(bool bf) { return bf ? sizeof(fc_bf16) : sizeof(float); }
INLINE const void *el_at(const void *base, size_t i, bool bf) { return (const char *)base + i * el_size(bf); }
INLINE float el_load(const void *base, size_t i, bool bf)
{
    return bf ? fc_bf16_load(((const fc_bf16 *)base)[i]) : ((const float *)base)[i];
}
/* VW elements from base + i: bfloat16 widened exactly (its bits are a float's top half) */
INLINE vf el_vload(const void *base, size_t i, bool bf)
{
    return bf ? vload_bf16((const fc_bf16 *)base + i) : vload((const float *)base + i);
}

/* x[i·KB + k] = q_i·k_k for the RB rows q_i and the KB = VW/RB keys k_k at K (rows d
 * apart), over the whole vectors of d: VW independent accumulators, each vector of the
 * rows and of the keys loaded once per step (a single accumulator per dot product
 * would wait on the FMA's latency at every step). The keys' loop is unrolled whole:
 * for one row with AVX-512 it has 16 keys, and unrolled by 8 GCC kept the 16
 * accumulators on the stack, a load and a store around every FMA (the Zen 4 VM, two
 * threads, harness, alternated, four rounds: 12 heads, skv = 512, d = 64,
 * 0.031 -> 0.027 ms; 8 heads, skv = 4096, 0.159-0.162 -> 0.139-0.143 ms). */
INLINE void dec_dot(const int RB, const float *const *q, const void *K, int d, vf *x, const bool bf)
{
    const int KB = VW / RB;
#pragma GCC unroll 16
    for (int i = 0; i < VW; i++) x[i] = vsplat(0.0f);
    for (int e = 0; e + VW <= d; e += VW) {
        vf a[4];
#pragma GCC unroll 4
        for (int i = 0; i < RB; i++) {
            a[i] = reg_vf(vload(q[i] + e));
        }
#pragma GCC unroll 16
        for (int k = 0; k < KB; k++) {
            vf kv = el_vload(K, (size_t)k * d + (size_t)e, bf);
            IN_REGISTER(kv);
#pragma GCC unroll 4
            for (int i = 0; i < RB; i++) x[i * KB + k] += a[i] * kv;
        }
    }
}

#if DEC_DP
/* bf16 decode on a CPU with AVX-512 BF16. Widening each bfloat16 to a float and
 * multiplying in floats costs two vector operations per 16 elements before the FMAs,
 * and bf16 K and V bring twice the elements per byte that float ones do: with four
 * query rows per key/value head that is 8 FMAs per element of K and V, more than
 * two cores' FMA units keep up with at the rate memory delivers them. vdpbf16ps
 * takes 32 bfloat16 of each operand and adds the products of each pair of lanes
 * into 16 float lanes, rounding once, as a bf16 GEMM does: half the instructions
 * and no widening. Q·Kᵀ pairs consecutive elements of d (Q unscaled, exact; the
 * scores scaled after). P·V pairs consecutive keys: two rows of V interleaved
 * (vpunpcklwd/vpunpckhwd, within each 128-bit lane, so the accumulators hold the
 * dims in a fixed order of their own, put back when they are stored) times a pair
 * of probabilities rounded to bfloat16, as a bf16 attention's P·V GEMM takes them. */
typedef __m512bh vbh;

INLINE vbh bh_load(const fc_bf16 *p) { return (vbh)_mm512_loadu_si512(p); }
INLINE vf dpbf16(vf acc, vbh a, vbh b) { return (vf)_mm512_dpbf16_ps((__m512)acc, a, b); }
INLINE vbh reg_bh(vbh v)
{
    IN_REGISTER(v);
    return v;
}

/* x[i·KB + k]: the lane-wise partial sums of q_i·k_k over whole 32-element steps of d
 * (dec_dot's layout: one shuffle tree sums them) */
INLINE void dec_dot_dp(const int RB, const fc_bf16 *const *q, const fc_bf16 *K, int d, vf *x)
{
    const int KB = VW / RB;
#pragma GCC unroll 16
    for (int i = 0; i < VW; i++) x[i] = vsplat(0.0f);
    for (int e = 0; e + 2 * VW <= d; e += 2 * VW) {
        vbh a[4];
#pragma GCC unroll 4
        for (int i = 0; i < RB; i++) {
            a[i] = reg_bh(bh_load(q[i] + e));
        }
#pragma GCC unroll 16
        for (int k = 0; k < KB; k++) {
            vbh kv = bh_load(K + (size_t)k * d + e);
            IN_REGISTER(kv);
#pragma GCC unroll 4
            for (int i = 0; i < RB; i++) x[i * KB + k] = dpbf16(x[i * KB + k], a[i], kv);
        }
    }
}

#endif

/* dec_dot for RB = 4, 2 or 1 rows: qf's floats, or with dp qh's bfloat16 by vdpbf16ps */
INLINE void dec_dot_rows(const int RB, const float *const *qf, const fc_bf16 *const *qh, const void *K, int d, vf *x,
                         const bool bf, const bool dp)
{
#if DEC_DP
    if (dp) {
        if (RB == 4) dec_dot_dp(4, qh, K, d, x);
        else if (RB == 2)
            dec_dot_dp(2, qh, K, d, x);
        else
            dec_dot_dp(1, qh, K, d, x);
        return;
    }
#endif
    (void)qh;
    (void)dp;
    if (RB == 4) dec_dot(4, qf, K, d, x, bf);
    else if (RB == 2)
        dec_dot(2, qf, K, d, x, bf);
    else
        dec_dot(1, qf, K, d, x, bf);
}

/* sb[r][0..nk) = qs[r]·K[j] for the nk keys at K (rows d apart). Rows go by RB (four, or two for fewer rows, the last
 * repeated to fill a group; one for a single row) and keys by VW/RB: one shuffle tree sums the group's dot
 * products, lane i·VW/RB + k row i's with key k; a d that is not a whole number of
 * vectors adds its last elements' products after the tree. The last keys take the
 * one-by-one path. qs holds the rows as floats, scaled; with dp (vdpbf16ps) as
 * bfloat16, unscaled, and the sums are multiplied by post. */
INLINE void dec_scores_rb(const int RB, const fc_att_geom *g, const void *qs, float post, const void *K, int nk,
                          float *sb, const bool bf, const bool dp)
{
    const int R = dec_rows(g), d = g->d, KB = VW / RB, dv = d - d % (dp ? 2 * VW : VW);
    /* the groups' rows, at most two (R <= DEC_ROWS), set once for every key */
    const int ng = (R + RB - 1) / RB;
    const float *qf[2][4];   /* the rows, typed: float */
    const fc_bf16 *qh[2][4]; /* ... or bfloat16 (dp) */
    int row[2][4];
    for (int gi = 0; gi < ng; gi++)
        for (int i = 0; i < RB; i++) {
            row[gi][i] = imin(gi * RB + i, R - 1);
            const void *q = el_at(qs, (size_t)row[gi][i] * d, dp);
            qf[gi][i] = q;
            qh[gi][i] = q;
        }
    int j = 0;
    for (; j + KB <= nk; j += KB) {
        const void *Kj = el_at(K, (size_t)j * d, bf);
        for (int gi = 0; gi < ng; gi++) {
            vf x[VW];
            dec_dot_rows(RB, qf[gi], qh[gi], Kj, d, x, bf, dp);
            vf s = sum_lanes(x);
            if (dv < d) {
                vf tail = vsplat(0.0f);
                for (int i = 0; i < RB; i++)
                    for (int k = 0; k < KB; k++)
                        for (int e = dv; e < d; e++)
                            tail[i * KB + k] += el_load(qh[gi][i], (size_t)e, dp) * el_load(Kj, (size_t)k * d + e, bf);
                s += tail;
            }
            if (dp) s *= post;
                /* unrolled, each lane a constant: the stores take the lanes from the register */
#pragma GCC unroll 4
            for (int i = 0; i < RB; i++)
#pragma GCC unroll 16
                for (int k = 0; k < KB; k++) sb[(size_t)row[gi][i] * DEC_CH + j + k] = s[i * KB + k];
        }
    }
    for (; j < nk; j++)
        for (int r = 0; r < R; r++) {
            const void *q = el_at(qs, (size_t)r * d, dp), *k = el_at(K, (size_t)j * d, bf);
            float acc = 0;
            for (int e = 0; e < d; e++) acc += el_load(q, (size_t)e, dp) * el_load(k, (size_t)e, bf);
            sb[(size_t)r * DEC_CH + j] = dp ? acc * post : acc;
        }
}

/* dims e.. of dec_pv_rows' o, one at a time: those past its last whole block */
INLINE void dec_pv_tail(const int X, const float *p, int nk, const void *V, int d, float *o, const float *corr, int e,
                        const bool bf)
{
    for (; e < d; e++)
        for (int x = 0; x < X; x++) {
            float acc = o[(size_t)x * d + e] * corr[x];
            for (int j = 0; j < nk; j++) acc += p[(size_t)x * DEC_CH + j] * el_load(V, (size_t)j * d + e, bf);
            o[(size_t)x * d + e] = acc;
        }
}

/* o[x][e] = o[x][e]·corr[x] + Σ_j p[x][j]·V[j][e] for X rows of p (DEC_CH apart), o (d
 * apart), C vectors of d at a time (X·C accumulators) */
INLINE void dec_pv_rows(const int X, const int C, const float *p, int nk, const void *V, int d, float *o,
                        const float *corr, const bool bf)
{
    int e = 0;
    for (; e + C * VW <= d; e += C * VW) {
        vf acc[4][4];
#pragma GCC unroll 4
        for (int x = 0; x < X; x++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) acc[x][c] = vload(o + (size_t)x * d + e + c * VW) * corr[x];
        for (int j = 0; j < nk; j++) {
            vf v[4];
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                v[c] = reg_vf(el_vload(V, (size_t)j * d + (size_t)(e + c * VW), bf));
            }
#pragma GCC unroll 4
            for (int x = 0; x < X; x++) {
                const vf pj = vbcast(p + (size_t)x * DEC_CH + j);
#pragma GCC unroll 4
                for (int c = 0; c < C; c++) acc[x][c] += pj * v[c];
            }
        }
#pragma GCC unroll 4
        for (int x = 0; x < X; x++)
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) vstore(o + (size_t)x * d + e + c * VW, acc[x][c]);
    }
    dec_pv_tail(X, p, nk, V, d, o, corr, e, bf);
}

#if DEC_DP
/* The accumulators' order of 32 dims and back: vpunpck{l,h}wd of two rows' 32
 * bfloat16 pair dims 0-3, 8-11, 16-19, 24-27 (lo) and 4-7, 12-15, 20-23, 28-31 (hi) */
static const vi DP_LO = {0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27};
static const vi DP_HI = {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};
static const vi DP_A = {0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23};
static const vi DP_B = {8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31};
INLINE vf perm2(vf a, vi idx, vf b) { return (vf)_mm512_permutex2var_ps((__m512)a, (__m512i)idx, (__m512)b); }

/* acc[x][·] += the pair of row x's probabilities at keys j, j + 1 times the 64 dims
 * of V's rows j and j + 1 at Ve (a zero row for the second with odd: the last key) */
INLINE void dec_pv_pair(const int X, const fc_bf16 *pb, const fc_bf16 *Ve, int d, int j, bool odd, vf acc[4][4])
{
    vbh v[4];
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const __m512i a = _mm512_loadu_si512(Ve + h * 2 * VW);
        const __m512i b = odd ? _mm512_setzero_si512() : _mm512_loadu_si512(Ve + d + h * 2 * VW);
        v[2 * h] = reg_bh((vbh)_mm512_unpacklo_epi16(a, b));
        v[2 * h + 1] = reg_bh((vbh)_mm512_unpackhi_epi16(a, b));
    }
#pragma GCC unroll 4
    for (int x = 0; x < X; x++) {
        uint32_t pair;
        memcpy(&pair, pb + (size_t)x * DEC_PB + j, sizeof pair);
        const vbh pj = (vbh)_mm512_set1_epi32((int)pair);
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) acc[x][c] = dpbf16(acc[x][c], pj, v[c]);
    }
}

/* dec_pv_rows with the rows' probabilities as bfloat16 pb (DEC_PB apart, a zero
 * after the last key), p the same in floats for the dims past the last 64 */
INLINE void dec_pv_rows_dp(const int X, const fc_bf16 *pb, const float *p, int nk, const fc_bf16 *V, int d, float *o,
                           const float *corr)
{
    int e = 0;
    for (; e + 4 * VW <= d; e += 4 * VW) {
        vf acc[4][4]; /* [row][lo, hi of dims e..e+31, lo, hi of e+32..e+63] */
#pragma GCC unroll 4
        for (int x = 0; x < X; x++)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                const float *oh = o + (size_t)x * d + e + h * 2 * VW;
                const vf a = vload(oh) * corr[x], b = vload(oh + VW) * corr[x];
                acc[x][2 * h] = perm2(a, DP_LO, b);
                acc[x][2 * h + 1] = perm2(a, DP_HI, b);
            }
        int j = 0;
        for (; j + 2 <= nk; j += 2) dec_pv_pair(X, pb, V + (size_t)j * d + e, d, j, false, acc);
        if (j < nk) dec_pv_pair(X, pb, V + (size_t)j * d + e, d, j, true, acc);
#pragma GCC unroll 4
        for (int x = 0; x < X; x++)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                float *oh = o + (size_t)x * d + e + h * 2 * VW;
                vstore(oh, perm2(acc[x][2 * h], DP_A, acc[x][2 * h + 1]));
                vstore(oh + VW, perm2(acc[x][2 * h], DP_B, acc[x][2 * h + 1]));
            }
    }
    dec_pv_tail(X, p, nk, V, d, o, corr, e, true);
}

/* the R rows' probabilities (DEC_CH apart) rounded to bfloat16 into pb (DEC_PB
 * apart), a zero after each row's nk: the pair of an odd last key */
static void dec_round_p(const float *sb, int R, int nk, fc_bf16 *pb)
{
    for (int r = 0; r < R; r++) {
        const float *x = sb + (size_t)r * DEC_CH;
        fc_bf16 *y = pb + (size_t)r * DEC_PB;
        int j = 0;
        for (; j + 2 * VW <= nk; j += 2 * VW) /* 32 rounded to nearest even, in one store */
            _mm512_storeu_si512(y + j, (__m512i)_mm512_cvtne2ps_pbh((__m512)vload(x + j + VW), (__m512)vload(x + j)));
        for (; j < nk; j++) y[j] = fc_bf16_store(x[j]);
        y[nk] = 0;
    }
}
#endif

/* dec_scores_rb for a single row per key/value head (multi-head decode), its own
 * code: groups of two computed the row twice. On the AMD EPYC VM (the fastest of
 * 100-200 calls, one harness, alternated, six rounds): 12 heads, skv = 512, d = 64,
 * 0.048-0.051 ms against 0.038; 8 heads, skv = 4096, d = 64, 0.24-0.32 against
 * 0.19-0.26. Inlined as a third form beside the others, it slowed the groups of four
 * by about a fifth (8 key/value heads of 4 rows, skv = 4096, d = 128); on its own,
 * 1.00-1.20 ms against 0.98-1.21. */
static __attribute__((noinline)) void dec_scores_one(const fc_att_geom *g, const void *qs, float post, const void *K,
                                                     int nk, float *sb, const bool bf, const bool dp)
{
    if (bf) dec_scores_rb(1, g, qs, post, K, nk, sb, true, dp);
    else
        dec_scores_rb(1, g, qs, post, K, nk, sb, false, false);
}

/* dec_scores_rb by four rows, or two for fewer, or one (dec_scores_one) */
INLINE void dec_scores(const fc_att_geom *g, const void *qs, float post, const void *K, int nk, float *sb,
                       const bool bf, const bool dp)
{
    const int R = dec_rows(g);
    if (R == 1) dec_scores_one(g, qs, post, K, nk, sb, bf, dp);
    else if (R >= 4)
        dec_scores_rb(4, g, qs, post, K, nk, sb, bf, dp);
    else /* RB a constant in each: the stores' lanes and rows fixed (a variable RB: 5 % more time) */
        dec_scores_rb(2, g, qs, post, K, nk, sb, bf, dp);
}

/* Keys [ja, jb) of key/value head n for its R rows: the partial output, maxima and sums
 * into part (R x d, then R maxima, R sums); with read, each piece read first
 * (dec_read_piece). */
INLINE void dec_chunk(const fc_att_geom *g, const void *Q, const void *K, const void *V, int n, int ja, int jb,
                      bool read, float *ws, float *part, const bool bf)
{
    const int R = dec_rows(g), d = g->d;
    const float alpha = 1.0f / sqrtf((float)d);
    float *qs = ws, *sb = ws + (size_t)R * d, *o = part, *m = part + (size_t)R * d, *l = m + R;
    const void *Qn = el_at(Q, (size_t)n * R * d, bf), *Kn = el_at(K, (size_t)n * g->skv * d, bf),
               *Vn = el_at(V, (size_t)n * g->skv * d, bf);
    const bool dp = DEC_DP && bf; /* vdpbf16ps: Q kept in bfloat16, unscaled; the scores scaled */
    if (dp) memcpy(qs, Qn, (size_t)R * d * sizeof(fc_bf16));
    else
        for (size_t i = 0; i < (size_t)R * d; i++) qs[i] = alpha * el_load(Qn, i, bf);
    memset(o, 0, (size_t)R * d * sizeof(float));
    for (int r = 0; r < R; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    float corr[DEC_ROWS];
    for (int j0 = ja; j0 < jb; j0 += DEC_CH) {
        const int nk = imin(DEC_CH, jb - j0); /* this piece's keys */
        const void *Kj = el_at(Kn, (size_t)j0 * d, bf), *Vj = el_at(Vn, (size_t)j0 * d, bf);
        if (read) dec_read_piece(Kj, Vj, (size_t)nk * d * el_size(bf));
        dec_scores(g, qs, alpha, Kj, nk, sb, bf, dp);
        for (int r = 0; r < R; r++) {
            float *row = sb + (size_t)r * DEC_CH;
            const int seen = imax(0, imin(nk, row_keys(g, r) - j0));
            if (seen == 0) { /* the mask hides the whole piece from this row */
                memset(row, 0, (size_t)nk * sizeof(float));
                corr[r] = 1.0f;
                continue;
            }
            const float mx = max_span(row, seen), mn = m[r] > mx ? m[r] : mx;
            corr[r] = m[r] == -INFINITY ? 0.0f : vexp(vsplat(m[r] - mn))[0];
            l[r] = l[r] * corr[r] + exp_sum_span(row, seen, mn);
            for (int j = seen; j < nk; j++) row[j] = 0.0f;
            m[r] = mn;
        }
        int r = 0;
#if DEC_DP
        if (dp) {
            fc_bf16 *pb = (fc_bf16 *)(sb + (size_t)R * DEC_CH);
            dec_round_p(sb, R, nk, pb);
            for (; r + 4 <= R; r += 4)
                dec_pv_rows_dp(4, pb + (size_t)r * DEC_PB, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d,
                               corr + r);
            for (; r + 2 <= R; r += 2)
                dec_pv_rows_dp(2, pb + (size_t)r * DEC_PB, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d,
                               corr + r);
            if (r < R)
                dec_pv_rows_dp(1, pb + (size_t)r * DEC_PB, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d,
                               corr + r);
            continue;
        }
#endif
        for (; r + 4 <= R; r += 4)
            dec_pv_rows(4, DEC_PV_C, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d, corr + r, bf);
        for (; r + 2 <= R; r += 2)
            dec_pv_rows(2, 4, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d, corr + r, bf);
        if (r < R) dec_pv_rows(1, 4, sb + (size_t)r * DEC_CH, nk, Vj, d, o + (size_t)r * d, corr + r, bf);
    }
}

/* each form of a chunk, compiled apart: float or bfloat16 */
static void dec_chunk_f32(const fc_att_geom *g, const void *Q, const void *K, const void *V, int n, int ja, int jb,
                          bool read, float *ws, float *part)
{
    dec_chunk(g, Q, K, V, n, ja, jb, read, ws, part, false);
}

static void dec_chunk_bf16(const fc_att_geom *g, const void *Q, const void *K, const void *V, int n, int ja, int jb,
                           bool read, float *ws, float *part)
{
    dec_chunk(g, Q, K, V, n, ja, jb, read, ws, part, true);
}

/* Whether the decode kernel reads each piece before it computes it (dec_read_piece):
 * where K and V of elements of el bytes pass half the LLC (fc_host_llc_assumed).
 * Below, the caches hold much of K and V between calls and the reads only add time:
 * on the Zen 5 VM (32 MiB L3 assumed), 8 key/value heads of 4 rows, d = 128, two
 * threads, the harness of dec_read_piece's comment, three rounds, GB/s without the
 * reads against with them: skv = 2048 (16.8 MB) 87 against 68; skv = 2560 (21 MB)
 * 53-63 against 60-67; 3072 (25 MB) 43-54 against 55-64; 4096 (33.6 MB) 60 against
 * 63-67. Below it, neither reads nor asks: in `fusecal run`, against the asks the
 * kernel made there before (past 4 MiB), fused medians 0.73-0.84 at 8.4 and 16.8 MB,
 * and 0.87-1.02 at 2-3 MB, where neither form asked (ab-decode-read-piece.txt's set 2). */
static bool dec_reads(const fc_att_geom *g, size_t el)
{
    return 2.0 * g->bkv * g->skv * g->d * (double)el > (double)(fc_host_llc_assumed() / 2);
}

/* Row r of key/value head n of O from its ns chunks' partials at p0 (part floats
 * apart): each chunk's output weighed by its sum's share, its maximum brought to the
 * largest */
static void dec_combine(const fc_att_geom *g, const float *p0, int ns, size_t part, int n, int r, void *O, bool bf)
{
    const int R = dec_rows(g), d = g->d;
    float mx = -INFINITY, w8[DEC_SPLIT_MAX], l = 0;
    for (int c = 0; c < ns; c++) mx = fmaxf(mx, p0[(size_t)c * part + (size_t)R * d + r]);
    for (int c = 0; c < ns; c++) {
        const float *pc = p0 + (size_t)c * part, mc = pc[(size_t)R * d + r];
        w8[c] = mc == -INFINITY ? 0.0f : vexp(vsplat(mc - mx))[0];
        l += w8[c] * pc[(size_t)R * d + R + r];
    }
    const size_t o0 = ((size_t)n * R + r) * d;
    for (int e = 0; e < d; e++) {
        float acc = 0;
        for (int c = 0; c < ns; c++) acc += w8[c] * p0[(size_t)c * part + (size_t)r * d + e];
        if (bf) ((fc_bf16 *)O)[o0 + e] = fc_bf16_store(acc / l);
        else
            ((float *)O)[o0 + e] = acc / l;
    }
}

/* O (float or, with bf, bfloat16 rounded to nearest even) from Q, K, V of the same
 * type. Where each head's keys are one chunk, the thread that made a head's partials
 * finishes its rows: no second loop, no barrier before it. On the Zen 4 VM (AVX-512),
 * two threads, one harness, alternated: 12 heads, skv = 512, d = 64 (3 MB, in the L3)
 * 0.0322-0.0329 -> 0.0304-0.0313 ms over four rounds; 8 key/value heads of 4 rows,
 * skv = 256, d = 128, 0.0343 -> 0.0268 ms, the means of ten.
 * The tasks (equal pieces of K and V) go to the threads in fixed blocks, the same
 * in every call: where K and V are about the LLC's size, each thread then finds in
 * the caches near it what it read the call before, where handed out in turn
 * (schedule(dynamic)) a thread read another's. On the Zen 5 VM (AVX-512, 32 MiB
 * L3), two threads, `fusecal run` on cpu.onednn, the two forms alternated, three rounds, the
 * fused medians in fixed blocks over in turn: 8 key/value heads of 4 rows, d = 128,
 * skv = 4096, b = 1 (33.5 MB) 0.75-0.77, b = 2 (67 MB) 0.82-0.86 (the unchanged
 * unfused chains 0.87-1.03); b = 4 (134 MB) 0.95-0.98, and 3-17 MB problems in the
 * caches 0.85-1.21, no change beyond the rounds' spread
 * (results/cpu-amd-epyc-f26m2-2c/ab-decode-static.txt). */
static void decode(const fc_att_geom *g, const void *Q, const void *K, const void *V, void *O, float *ws, int nthreads,
                   bool bf)
{
    const int R = dec_rows(g), ns = dec_splits(g, nthreads), ntask = g->bkv * ns;
    const int chunk = (g->skv + ns - 1) / ns;
    const size_t per = dec_ws_floats(g), part = dec_part(g);
    const bool read = dec_reads(g, el_size(bf));
    float *parts = ws + (size_t)nthreads * per;
#pragma omp parallel
    {
        float *w = ws + (size_t)omp_get_thread_num() * per;
#pragma omp for schedule(static) nowait
        for (int t = 0; t < ntask; t++) {
            const int ja = (t % ns) * chunk, jb = imin(g->skv, ja + chunk);
            float *pt = parts + (size_t)t * part;
            (bf ? dec_chunk_bf16 : dec_chunk_f32)(g, Q, K, V, t / ns, ja, jb, read, w, pt);
            if (ns == 1)
                for (int r = 0; r < R; r++) dec_combine(g, pt, 1, part, t, r, O, bf);
        }
        if (ns > 1) {
#pragma omp barrier
#pragma omp for schedule(static)
            for (int t = 0; t < g->bkv * R; t++)
                dec_combine(g, parts + (size_t)(t / R) * ns * part, ns, part, t / R, t % R, O, bf);
        }
    }
}

/* ------------------------------------------------------------------ entry points */

bool fc_cpu_att_decode(const fc_att_geom *g) { return dec_rows(g) <= DEC_ROWS; }

size_t fc_cpu_att_workspace(const fc_att_geom *g, int nthreads)
{
    if (!fc_cpu_att_decode(g)) return flash_ws_floats(g->d) * (size_t)nthreads;
    return dec_ws_floats(g) * (size_t)nthreads + dec_part(g) * (size_t)g->bkv * (size_t)dec_splits(g, nthreads);
}

void fc_cpu_att_flash(const fc_att_geom *g, const float *Q, const float *K, const float *V, float *O, float *ws,
                      int nthreads)
{
    if (fc_cpu_att_decode(g)) decode(g, Q, K, V, O, ws, nthreads, false);
    else
        flash(g, Q, K, V, O, ws);
}

void fc_cpu_att_decode_bf16(const fc_att_geom *g, const fc_bf16 *Q, const fc_bf16 *K, const fc_bf16 *V, fc_bf16 *O,
                            float *ws, int nthreads)
{
    decode(g, Q, K, V, O, ws, nthreads, true);
}

const char *fc_cpu_att_decode_bf16_math(void)
{
    return DEC_DP ? "bf16-pair products in f32 (vdpbf16ps)" : "f32 arithmetic";
}

void fc_cpu_att_describe(const fc_att_geom *g, int nthreads, char *buf, size_t n)
{
    if (fc_cpu_att_decode(g)) {
        const int ns = dec_splits(g, nthreads);
        const bool read = dec_reads(g, sizeof(float));
        snprintf(
            buf, n,
            "split-KV decode attention (fusecal, f32 arithmetic, built for %s): %d query rows per key/value head, its keys in %d chunk%s "
            "of up to %d streamed once over %d threads in %d-key pieces%s, scores by %d-key shuffle-tree dot "
            "products, online softmax per piece, partials combined",
            FC_VEC_ISA, dec_rows(g), ns, ns > 1 ? "s" : "", (g->skv + ns - 1) / ns, nthreads, DEC_CH,
            read ? " (each read by a bare loop of loads, then computed from L2)" : "", VW);
        return;
    }
    snprintf(
        buf, n,
        "flash attention (fusecal, f32 arithmetic, built for %s): %d-query x %d-key blocks, queries along the vector lanes, Q.K^T in "
        "%dx%d and P.V in %dx%d register tiles, K and V read in place, online softmax, S never stored",
        FC_VEC_ISA, BR, BC, QK_R, BR, PV_E, BR);
}
