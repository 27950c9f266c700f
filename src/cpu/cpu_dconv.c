/* cpu_dconv.c — the direct 3×3 convolution of cpu.openblas (fp32, no groups, padding
 * 1, stride 1 or 2; input channels a multiple of 8 and output channels of two vectors
 * on register tiles over channel-blocked rows, NHWC or NCHW; other NCHW convolutions
 * with output channels a multiple of DN_TK on a padded copy, below), used by both
 * variants, so that a record's speedup is the fusion alone:
 *
 *   y[n,oy,ox,k] = act(Σ_{r,s,c} x[n, oy·st−1+r, ox·st−1+s, c]·W[k,c,r,s] + b[k] + resid[n,oy,ox,k])
 *
 * Napkin math: 18·c FLOPs per output against reads of x that stay in cache (a row of
 * it serves three output rows) and weights a block of output channels reuses along a
 * row: compute-bound at every ResNet 3×3 layer, so the register tile decides.
 *
 * Register tile: DC_TW output pixels of one row × DC_KB output channels (two vectors):
 * AVX-512 14 × 32 (28 accumulators, two weight vectors and a broadcast: 31 of 32
 * registers), AVX2 and narrower 6 × 2 vectors (12 + 2 + 1 of 16); on AVX-512, rows of
 * at most 7 pixels on the image copy 7 × 64 (dc_tile64: 28 accumulators and four
 * weight vectors, each input broadcast inside its multiply-add). Each input channel
 * of each tap loads the two weight vectors and broadcasts one input value per pixel:
 * 2·DC_TW multiply-adds for DC_TW + 2 loads. The bias starts the accumulators; the
 * residual, the activation and the one store end them (the fused form's epilogue
 * never leaves the registers).
 *
 * Input rows: a copy of each input row the tiles read, with one zero pixel at each
 * end (the padding), made once per thread as its output rows move down: a ring of
 * three slots, each tagged with the row it holds, so that a row serves the three
 * output rows that read it (stride 1) and edge pixels need no branch (channel-block-
 * major work copies the whole image instead, once, below: dc_rows_image). Rows above and
 * below the input are skipped, not read as zeros. The copy is blocked by DC_CB input
 * channels ([c/8][w + 2][8]), so that within a block a tile's broadcasts lie at
 * offsets known at compile time from one pointer: with NHWC's pixel stride of c
 * floats, a run-time value, the 14 pixels' addresses took 14 registers and GCC kept
 * some on the stack, reloaded every channel (91.5 -> 92.8 % of the GEMM ceiling at
 * 1×64×56×56, one run each).
 *
 * Weights packed [k/DC_KB][r][s][c][DC_KB]: a tile reads its weights in order.
 *
 * NCHW: the same tiles, each ring row gathered from the block's 8 channel rows by 8×8
 * transposes, and each tile's sums transposed back into runs of pixels per channel
 * (the residual and ReLU on whole vectors). Against the padded-copy tiles (below) on
 * the AMD EPYC VM, one run each: 1×128×56×56 stride 2 1.12 against 1.12-1.17 ms,
 * 1×256×28×28 stride 2 1.18 against 1.27-1.34, 1×512×7×7 1.04-1.09 against 1.39; in
 * one run beside NHWC, 1.165 against 1.106 ms at 1×64×56×56 and 1.21 against 1.18 at
 * 1×256×28×28 stride 2. The two builds in turn (ab-direct-conv-nchw-rows.txt): 1.53 ->
 * 1.21 ms at 1×256×28×28 stride 2, 1.46 -> 1.21 at 1×512×7×7, 10.4 -> 8.6 at
 * 8×256×14×14, 1.25 -> 1.12 at 1×128×56×56 stride 2.
 *
 * Work: (output row, channel block) items in contiguous ranges over the threads,
 * channel-block-major where the weights outweigh an image's input (the late ResNet
 * stages: a block's weights stay in L2 across the rows), on one copy of the whole
 * image the threads make first (dc_image_copy); row-major otherwise, on the rings.
 *
 * Against the blocked im2col + cblas_sgemm it replaces for these convs: fusecal runs of
 * cpu.openblas conv_bn_relu, the two builds alternating, two rounds, on the AMD EPYC
 * VM (Zen 4, AVX-512, two threads; results/cpu-amd-epyc-f25m17-2c/ab-direct-conv.txt),
 * fused medians 1.29-1.33 -> 1.06 ms at 1×64×56×56 → 64 (214 GFLOP/s, 91.5 % of the
 * GEMM ceiling), 5.07 -> 4.25-4.28 at 4×128×28×28, 5.91-6.27 -> 4.18-4.24 at
 * 1×256×28×28, 1.35 -> 1.04 at 1×128×56×56 stride 2, 1.97-2.02 -> 0.99-1.01 at
 * 1×512×7×7 and 11.3-11.6 -> 8.2-8.4 at 8×256×14×14; the speedups (both variants run
 * the same conv) within 0.01 of each other, every decision the same.
 */
#include "cpu_ops.h"
#include "cpu_vec.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#define DC_KB (2 * VW) /* output channels per tile: two vectors */
#define DC_CB 8        /* input channels per block of a ring row */
#if VW == 16
#define DC_TW 14 /* output pixels per tile */
#else
#define DC_TW 6
#endif

/* one padded input row: w + 2 pixels, [c/DC_CB][w + 2][DC_CB] */
static size_t padded_row(const fc_conv_geom *g) { return (size_t)(g->w + 2) * (size_t)g->c; }

static void dc_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    const size_t C = (size_t)g->c;
    for (int kb = 0; kb < g->k / DC_KB; kb++)
        for (int t = 0; t < 9; t++)
            for (size_t c = 0; c < C; c++)
                for (int j = 0; j < DC_KB; j++)
                    packed[(((size_t)kb * 9 + (size_t)t) * C + c) * DC_KB + (size_t)j] =
                        w[(((size_t)kb * DC_KB + (size_t)j) * C + c) * 9 + (size_t)t];
}

/* Whether the tiles read a copy of the whole image, made once per image by all the
 * threads, and share its items channel-block-major: where a channel block's weights
 * outweigh an image's input (the late ResNet stages), so that a block's weights stay in
 * L2 across the rows, and the copy is at most 16 MiB. Otherwise each thread copies the
 * rows it reads into a ring of three as its output rows move down (row-major). */
static bool dc_image_copy(const fc_conv_geom *g)
{
    return (size_t)9 * (size_t)g->k > (size_t)g->h * (size_t)g->w &&
           (size_t)g->h * padded_row(g) * sizeof(float) <= ((size_t)16 << 20);
}

/* a thread's ring of three padded rows, on 64-byte lines of its own */
static size_t dc_ring_floats(const fc_conv_geom *g) { return (3 * padded_row(g) + 15) / 16 * 16; }

/* one image copy the team shares, or a ring per thread */
static size_t dc_workspace(const fc_conv_geom *g, int nthreads)
{
    return dc_image_copy(g) ? (size_t)g->h * padded_row(g) : dc_ring_floats(g) * (size_t)nthreads;
}

typedef struct dc_tile_args {
    const float *rows[3]; /* padded input rows from the tile's first tap (NULL: outside the input) */
    const float *w;       /* the channel block's packed weights */
    const float *bias;    /* the block's, or NULL */
    const float *resid;   /* at the tile's first output, or NULL */
    float *y;             /* the tile's first output */
    size_t c, k;          /* input channels; output channels (a pixel's stride in y, NHWC) */
    size_t wp;            /* pixels in a ring row: w + 2 */
    size_t pq;            /* NCHW output: a channel's plane (p·q, the stride between channels); 0: NHWC */
    fc_act act;
} dc_tile_args;

/* ---- eight-by-eight transposes (NCHW rows into channel blocks and back) */
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias)); /* unaligned access */
typedef int32_t v8i __attribute__((vector_size(32)));

/* r[j][i] -> r[i][j] over 8 vectors of 8 (unpacks, then pairs, then halves) */
static inline void transpose8(v8 r[8])
{
    const v8i lo = {0, 8, 1, 9, 4, 12, 5, 13}, hi = {2, 10, 3, 11, 6, 14, 7, 15};
    const v8i plo = {0, 1, 8, 9, 4, 5, 12, 13}, phi = {2, 3, 10, 11, 6, 7, 14, 15};
    const v8i hlo = {0, 1, 2, 3, 8, 9, 10, 11}, hhi = {4, 5, 6, 7, 12, 13, 14, 15};
    v8 t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = __builtin_shuffle(r[k], r[k + 1], lo);
        t[k + 1] = __builtin_shuffle(r[k], r[k + 1], hi);
    }
    for (int k = 0; k < 8; k += 4) { /* rows k..k+3: columns (0, 4), (1, 5), (2, 6), (3, 7) */
        u[k] = __builtin_shuffle(t[k], t[k + 2], plo);
        u[k + 1] = __builtin_shuffle(t[k], t[k + 2], phi);
        u[k + 2] = __builtin_shuffle(t[k + 1], t[k + 3], plo);
        u[k + 3] = __builtin_shuffle(t[k + 1], t[k + 3], phi);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = __builtin_shuffle(u[k], u[k + 4], hlo);
        r[k + 4] = __builtin_shuffle(u[k], u[k + 4], hhi);
    }
}

/* A tile's sums t ([8·⌈tw/8⌉][DC_KB], rows past tw unread but for the transposes)
 * into the NCHW output: per group of 8 channels and 8 pixels one transpose, the
 * residual and ReLU on whole vectors, a group of fewer pixels element by element;
 * GELU over each channel's run. */
static void dc_store_nchw(const dc_tile_args *a, const float *t, int tw)
{
    for (int j0 = 0; j0 < DC_KB; j0 += 8)
        for (int i0 = 0; i0 < tw; i0 += 8) {
            v8 r[8];
            for (int i = 0; i < 8; i++) r[i] = *(const v8u *)(t + (size_t)(i0 + i) * DC_KB + (size_t)j0);
            transpose8(r); /* r[j]: channel j0 + j's pixels i0.. */
            const int n = tw - i0 < 8 ? tw - i0 : 8;
            for (int j = 0; j < 8; j++) {
                const size_t o = (size_t)(j0 + j) * a->pq + (size_t)i0;
                float *dst = a->y + o;
                const float *res = a->resid ? a->resid + o : NULL;
                if (n == 8) {
                    v8 v = r[j];
                    if (res) v += *(const v8u *)res;
                    if (a->act == FC_ACT_RELU) v = (v8)((v8i)v & ~(v < 0.0f)); /* as the scalar rule: NaN kept */
                    *(v8u *)dst = v;
                } else
                    for (int i = 0; i < n; i++) {
                        const float v = r[j][i] + (res ? res[i] : 0.0f);
                        dst[i] = a->act == FC_ACT_RELU && v < 0.0f ? 0.0f : v;
                    }
            }
        }
    if (a->act == FC_ACT_GELU)
        for (int j = 0; j < DC_KB; j++)
            fc_cpu_gelu_span(a->y + (size_t)j * a->pq, a->y + (size_t)j * a->pq, (size_t)tw);
}

/* A tile's sums t ([nb][rows][DC_KB]: nb channel blocks of the caller's buffer, whose
 * rows must hold the transposes' 8·⌈tw/8⌉) into the NCHW output, block after block
 * (dc_store_nchw) */
static void dc_store_nchw_blocks(const dc_tile_args *a, const float *t, size_t rows, int tw, int nb)
{
    if ((size_t)(tw + 7) / 8 * 8 > rows) __builtin_trap(); /* in every build (NDEBUG drops assert) */
    for (int h = 0; h < nb; h++) {
        dc_tile_args b = *a;
        b.y = a->y + (size_t)h * DC_KB * a->pq;
        b.resid = a->resid ? a->resid + (size_t)h * DC_KB * a->pq : NULL;
        dc_store_nchw(&b, t + (size_t)h * rows * DC_KB, tw);
    }
}

/* Pixel i's vector j of a tile into the NHWC output, with the residual and ReLU (the
 * accumulator passed by value: the tile's stay in registers) */
static inline __attribute__((always_inline)) void dc_store_nhwc(const dc_tile_args *a, vf v, int i, int j)
{
    const size_t o = (size_t)i * a->k + (size_t)j * VW;
    if (a->resid) v += vload(a->resid + o);
    if (a->act == FC_ACT_RELU) v = vmax(v, vsplat(0.0f));
    vstore(a->y + o, v);
}

/* GELU over each of a tile's tw NHWC pixels' run of channels, once they are stored */
static void dc_gelu_nhwc(const dc_tile_args *a, int tw, size_t run)
{
    if (a->act == FC_ACT_GELU)
        for (int i = 0; i < tw; i++) fc_cpu_gelu_span(a->y + (size_t)i * a->k, a->y + (size_t)i * a->k, run);
}

/* tw output pixels at stride st into NHWC or NCHW outputs: tw, st and nchw constants
 * at each call, so that the loops over the pixels unroll and the accumulators stay in
 * registers. Each input broadcast inside its multiply-adds instead (as dc_tile64) ran
 * 0.98-1.00x this form's time on rows of 14 pixels, in one binary switched at run time
 * (results/cpu-amd-epyc-f25m17-2c/ab-direct-conv-14x32-bcast.txt): not kept. */
static inline __attribute__((always_inline)) void dc_tile(const dc_tile_args *a, const int tw, const int st,
                                                          const bool nchw)
{
    vf acc[DC_TW][2];
    const vf b0 = a->bias ? vload(a->bias) : vsplat(0.0f), b1 = a->bias ? vload(a->bias + VW) : vsplat(0.0f);
#pragma GCC unroll 16
    for (int i = 0; i < tw; i++) {
        acc[i][0] = b0;
        acc[i][1] = b1;
    }
    const size_t C = a->c, blk = a->wp * DC_CB; /* a channel block of a ring row */
    for (int r = 0; r < 3; r++) {
        if (!a->rows[r]) continue;
        for (int s = 0; s < 3; s++) {
            const float *x = a->rows[r] + (size_t)s * DC_CB, *w = a->w + (size_t)(r * 3 + s) * C * DC_KB;
            for (size_t c0 = 0; c0 < C; c0 += DC_CB, x += blk)
#pragma GCC unroll 8
                for (int c = 0; c < DC_CB; c++, w += DC_KB) {
                    const vf w0 = vload(w), w1 = vload(w + VW);
#pragma GCC unroll 16
                    for (int i = 0; i < tw; i++) { /* offsets known at compile time: one pointer */
                        const vf xb = vsplat(x[i * st * DC_CB + c]);
                        acc[i][0] += xb * w0;
                        acc[i][1] += xb * w1;
                    }
                }
        }
    }
    if (nchw) { /* through a buffer, transposed 8 by 8 into each channel's run of pixels */
        float t[(DC_TW + 7) / 8 * 8][DC_KB] __attribute__((aligned(64)));
#pragma GCC unroll 16
        for (int i = 0; i < tw; i++) {
            vstore(t[i], acc[i][0]);
            vstore(t[i] + VW, acc[i][1]);
        }
        dc_store_nchw_blocks(a, &t[0][0], sizeof t / sizeof t[0], tw, 1);
        return;
    }
#pragma GCC unroll 16
    for (int i = 0; i < tw; i++)
        for (int j = 0; j < 2; j++) dc_store_nhwc(a, acc[i][j], i, j);
    dc_gelu_nhwc(a, tw, DC_KB);
}

typedef void (*dc_tile_fn)(const dc_tile_args *a);
/* each width and stride twice: NHWC (dc_tile_) and NCHW (dc_tilen_) outputs, so that
 * the NHWC tiles' registers are allocated as if NCHW did not exist */
#define DC_FN(tw, st)                                                                     \
    static void dc_tile_##tw##_##st(const dc_tile_args *a) { dc_tile(a, tw, st, false); } \
    static void dc_tilen_##tw##_##st(const dc_tile_args *a) { dc_tile(a, tw, st, true); }
#define DC_FNS6(st) DC_FN(1, st) DC_FN(2, st) DC_FN(3, st) DC_FN(4, st) DC_FN(5, st) DC_FN(6, st)
#define DC_ROW6(P, st) P##1_##st, P##2_##st, P##3_##st, P##4_##st, P##5_##st, P##6_##st
DC_FNS6(1)
DC_FNS6(2)
#if DC_TW == 14
#define DC_FNS14(st) \
    DC_FN(7, st) DC_FN(8, st) DC_FN(9, st) DC_FN(10, st) DC_FN(11, st) DC_FN(12, st) DC_FN(13, st) DC_FN(14, st)
DC_FNS14(1)
DC_FNS14(2)
#define DC_ROW(P, st)                                                                                          \
    {                                                                                                          \
        NULL, DC_ROW6(P, st), P##7_##st, P##8_##st, P##9_##st, P##10_##st, P##11_##st, P##12_##st, P##13_##st, \
            P##14_##st                                                                                         \
    }
#else
#define DC_ROW(P, st)        \
    {                        \
        NULL, DC_ROW6(P, st) \
    }
#endif
/* [NCHW][stride − 1][pixels], 1 to DC_TW */
static const dc_tile_fn dc_tiles[2][2][DC_TW + 1] = {{DC_ROW(dc_tile_, 1), DC_ROW(dc_tile_, 2)},
                                                     {DC_ROW(dc_tilen_, 1), DC_ROW(dc_tilen_, 2)}};

#if VW == 16
/* 7 × 64 tiles (two channel blocks) for rows of at most 7 pixels: 28 accumulators and
 * four weight vectors fill the 32 registers, so each input is broadcast from memory
 * inside its multiply-add (GCC's vector extensions keep a broadcast register and spill) */
#define DC_FMA_BC(acc, w, p) \
    __asm__("vfmadd231ps %[x]%{1to16%}, %[wv], %[a]" : [a] "+v"(acc) : [wv] "v"(w), [x] "m"(*(p)))
static inline __attribute__((always_inline)) void dc_tile64(const dc_tile_args *a, const int tw, const int st,
                                                            const bool nchw)
{
    vf acc[7][4];
    const size_t C = a->c, blk = a->wp * DC_CB, next = 9 * C * DC_KB; /* the second block's weights */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const vf b = a->bias ? vload(a->bias + j * VW) : vsplat(0.0f);
#pragma GCC unroll 7
        for (int i = 0; i < tw; i++) acc[i][j] = b;
    }
    for (int r = 0; r < 3; r++) {
        if (!a->rows[r]) continue;
        for (int s = 0; s < 3; s++) {
            const float *x = a->rows[r] + (size_t)s * DC_CB, *w = a->w + (size_t)(r * 3 + s) * C * DC_KB;
            for (size_t c0 = 0; c0 < C; c0 += DC_CB, x += blk)
#pragma GCC unroll 8
                for (int c = 0; c < DC_CB; c++, w += DC_KB) {
                    const vf w0 = vload(w), w1 = vload(w + VW), w2 = vload(w + next), w3 = vload(w + next + VW);
#pragma GCC unroll 7
                    for (int i = 0; i < tw; i++) {
                        const float *p = x + i * st * DC_CB + c;
                        DC_FMA_BC(acc[i][0], w0, p);
                        DC_FMA_BC(acc[i][1], w1, p);
                        DC_FMA_BC(acc[i][2], w2, p);
                        DC_FMA_BC(acc[i][3], w3, p);
                    }
                }
        }
    }
    if (nchw) { /* each block's sums as dc_tile stores them */
        float t[2][8][DC_KB] __attribute__((aligned(64)));
#pragma GCC unroll 7
        for (int i = 0; i < tw; i++) { /* constant indices: the accumulators stay in registers */
            vstore(t[0][i], acc[i][0]);
            vstore(t[0][i] + VW, acc[i][1]);
            vstore(t[1][i], acc[i][2]);
            vstore(t[1][i] + VW, acc[i][3]);
        }
        dc_store_nchw_blocks(a, &t[0][0][0], sizeof t[0] / sizeof t[0][0], tw, 2);
        return;
    }
#pragma GCC unroll 7
    for (int i = 0; i < tw; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) dc_store_nhwc(a, acc[i][j], i, j);
    dc_gelu_nhwc(a, tw, 2 * DC_KB);
}
#define DC_FN64(tw, st)                                                                       \
    static void dc_tile64_##tw##_##st(const dc_tile_args *a) { dc_tile64(a, tw, st, false); } \
    static void dc_tile64n_##tw##_##st(const dc_tile_args *a) { dc_tile64(a, tw, st, true); }
#define DC_FNS64(st) \
    DC_FN64(1, st) DC_FN64(2, st) DC_FN64(3, st) DC_FN64(4, st) DC_FN64(5, st) DC_FN64(6, st) DC_FN64(7, st)
DC_FNS64(1)
DC_FNS64(2)
#define DC_ROW64(P, st)                                                                   \
    {                                                                                     \
        NULL, P##1_##st, P##2_##st, P##3_##st, P##4_##st, P##5_##st, P##6_##st, P##7_##st \
    }
static const dc_tile_fn dc_tiles64[2][2][8] = {{DC_ROW64(dc_tile64_, 1), DC_ROW64(dc_tile64_, 2)},
                                               {DC_ROW64(dc_tile64n_, 1), DC_ROW64(dc_tile64n_, 2)}};
#define DC_WIDE_Q 7
#else
#define DC_WIDE_Q 0
#endif

/* Whether the image copy's items run on the 7 × 64 tiles: rows of at most 7 pixels,
 * output channels a multiple of two blocks, AVX-512. On the AMD EPYC VM, in one binary
 * switched at run time, three rounds (results/cpu-amd-epyc-f25m17-2c/ab-direct-conv-7x64.txt),
 * fused medians 0.89-0.90x the 7 × 32 tiles' at 1×512×7×7 and 1×512×14×14 stride 2,
 * NCHW and NHWC. Rows of 8 to 14 pixels as two 7 × 64 tiles ran 0.99-1.01x the 14 ×
 * 32 tiles' at 1×256×28×28 stride 2 and 1×256×14×14 (ab-direct-conv-7x64-rows14.txt):
 * not kept. */
static bool dc_wide(const fc_conv_geom *g)
{
    return DC_WIDE_Q > 0 && g->q <= DC_WIDE_Q && g->k % (2 * DC_KB) == 0 && dc_image_copy(g);
}

/* An NCHW input row (src: channel 0's) into a ring row's blocks past their left
 * padding pixel: a block's 8 channel rows, 8 pixels at a time, transposed; the last
 * w mod 8 one by one. The gather took 6 % of a 1×256×28×28 stride-2 run (perf); its
 * last 4 pixels by one more transpose overlapping the one before ran 1.00-1.01x in
 * one binary switched at run time (results/cpu-amd-epyc-f25m17-2c/ab-nchw-gather-tail.txt):
 * not kept. */
static void gather_nchw_row(const fc_conv_geom *g, const float *src, float *buf)
{
    const size_t C = (size_t)g->c, W = (size_t)g->w, HW = (size_t)g->h * W, blk = (W + 2) * DC_CB;
    for (size_t c0 = 0; c0 < C; c0 += DC_CB, src += DC_CB * HW) {
        float *dst = buf + c0 / DC_CB * blk + DC_CB;
        size_t px = 0;
        for (; px + 8 <= W; px += 8) {
            v8 r[8];
            for (int j = 0; j < 8; j++) r[j] = *(const v8u *)(src + (size_t)j * HW + px);
            transpose8(r);
            for (int i = 0; i < 8; i++) *(v8u *)(dst + (px + (size_t)i) * DC_CB) = r[i];
        }
        for (; px < W; px++)
            for (size_t j = 0; j < DC_CB; j++) dst[px * DC_CB + j] = src[j * HW + px];
    }
}

/* Input row iy of image nn into a padded row's blocks past their left padding pixel */
static void copy_row(const fc_conv_geom *g, const float *x, int nn, int iy, float *buf)
{
    const size_t C = (size_t)g->c, W = (size_t)g->w, blk = (W + 2) * DC_CB;
    if (g->nhwc) {
        const float *src = x + ((size_t)nn * g->h + (size_t)iy) * W * C;
        for (size_t px = 0; px < W; px++, src += C)
            for (size_t c0 = 0; c0 < C; c0 += DC_CB)
                memcpy(buf + c0 / DC_CB * blk + (px + 1) * DC_CB, src + c0, DC_CB * sizeof(float));
    } else
        gather_nchw_row(g, x + (size_t)nn * C * (size_t)g->h * W + (size_t)iy * W, buf);
}

/* the padding pixels at both ends of each channel block of nrows padded rows */
static void zero_row_ends(const fc_conv_geom *g, float *buf, size_t nrows)
{
    const size_t blk = (size_t)(g->w + 2) * DC_CB;
    for (size_t i = 0; i < nrows * (size_t)g->c / DC_CB; i++, buf += blk) {
        memset(buf, 0, DC_CB * sizeof(float));
        memset(buf + blk - DC_CB, 0, DC_CB * sizeof(float));
    }
}

/* The padded copy of input row iy of image nn in the thread's ring (its slot iy mod
 * 3, copied unless the slot holds it already); NULL for a row outside the input. */
static const float *ring_row(const fc_conv_geom *g, const float *x, float *ring, long tag[3], int nn, int iy)
{
    if (iy < 0 || iy >= g->h) return NULL;
    const long key = (long)nn * g->h + iy;
    const int slot = iy % 3;
    float *buf = ring + (size_t)slot * padded_row(g);
    if (tag[slot] != key) {
        copy_row(g, x, nn, iy, buf);
        tag[slot] = key;
    }
    return buf;
}

/* One output row oy of image nn by channel block kb: its tiles along the row, rp the
 * padded input rows of its three taps (NULL: outside the input) */
static void dc_item(const fc_conv_geom *g, const float *wp, float *y, const fc_epilogue *ep, const float *rp[3], int nn,
                    int oy, int kb, bool wide)
{
    const int st = g->stride;
    const size_t C = (size_t)g->c, K = (size_t)g->k;
    /* NCHW's channel plane (0: NHWC), a pixel's step in y and the row's first output of the block */
    const size_t pq = g->nhwc ? 0 : (size_t)g->p * (size_t)g->q, step = g->nhwc ? K : 1;
    const size_t out0 = g->nhwc ? ((size_t)nn * (size_t)g->p + (size_t)oy) * (size_t)g->q * K + (size_t)kb * DC_KB
                                : ((size_t)nn * K + (size_t)kb * DC_KB) * pq + (size_t)oy * (size_t)g->q;
    dc_tile_args a = {.w = wp + (size_t)kb * 9 * C * DC_KB,
                      .bias = ep->bias ? ep->bias + (size_t)kb * DC_KB : NULL,
                      .c = C,
                      .k = K,
                      .wp = (size_t)g->w + 2,
                      .pq = pq,
                      .act = ep->act};
#if VW == 16
    if (wide) { /* blocks kb and kb + 1, a row of at most 7 pixels */
        for (int r = 0; r < 3; r++) a.rows[r] = rp[r];
        a.y = y + out0;
        a.resid = ep->resid ? ep->resid + out0 : NULL;
        dc_tiles64[!g->nhwc][st - 1][g->q](&a);
        return;
    }
#else
    (void)wide;
#endif
    for (int ox0 = 0; ox0 < g->q; ox0 += DC_TW) {
        const int tw = g->q - ox0 < DC_TW ? g->q - ox0 : DC_TW;
        for (int r = 0; r < 3; r++) a.rows[r] = rp[r] ? rp[r] + (size_t)ox0 * (size_t)st * DC_CB : NULL;
        a.y = y + out0 + (size_t)ox0 * step;
        a.resid = ep->resid ? ep->resid + out0 + (size_t)ox0 * step : NULL;
        dc_tiles[!g->nhwc][st - 1][tw](&a);
    }
}

/* Row-major (output row, channel block) items in contiguous ranges over the threads,
 * each thread's input rows in its ring. Both orders' items handed out one at a time
 * (dynamic) or guided instead ran 0.95-1.02x and 0.98-1.00x, within the VM's noise
 * (results/cpu-amd-epyc-f25m17-2c/ab-direct-conv-schedule.txt): not kept. */
static void dc_rows_ring(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep,
                         float *ws)
{
    const int nkb = g->k / DC_KB;
    const size_t items = (size_t)g->n * (size_t)g->p * (size_t)nkb, per = dc_ring_floats(g);
#pragma omp parallel
    {
        const size_t nt = (size_t)omp_get_num_threads(), t = (size_t)omp_get_thread_num();
        float *ring = ws + t * per;
        zero_row_ends(g, ring, 3);
        long tag[3] = {-1, -1, -1};
        for (size_t it = items * t / nt; it < items * (t + 1) / nt; it++) {
            const size_t row = it / (size_t)nkb;
            const int nn = (int)(row / (size_t)g->p), oy = (int)(row % (size_t)g->p);
            const float *rp[3];
            for (int r = 0; r < 3; r++) rp[r] = ring_row(g, x, ring, tag, nn, oy * g->stride - 1 + r);
            dc_item(g, wp, y, ep, rp, nn, oy, (int)(it % (size_t)nkb), false);
        }
    }
}

/* Per image: the threads copy its rows, then share its (channel block, output row)
 * items channel-block-major in contiguous ranges, each block's weights read from L2
 * row after row. Against each thread re-copying its rows into the ring for every
 * channel block (the copy repeated k/DC_KB times), the two builds alternating, two
 * rounds, on the AMD EPYC VM (results/cpu-amd-epyc-f25m17-2c/ab-direct-conv-image-copy.txt),
 * fused medians: NCHW 1.18 -> 1.06 ms at 1×256×28×28 stride 2, 1.31 -> 1.12 at
 * 1×512×14×14 stride 2, 1.09 -> 0.99 at 1×512×7×7, 8.45 -> 8.06 at 8×256×14×14; NHWC
 * 1.10 -> 1.04, 1.19 -> 1.09, 1.03 -> 0.99, 8.07 -> 7.81; the row-major 1×64×56×56
 * within 1 %. Two output rows of 7 pixels a tile (28 accumulators, where one row of 7
 * keeps 14) ran 0.96-1.06x the single rows' time in one binary switched at run time
 * (ab-direct-conv-row-pairs.txt): not kept. Where a pair of blocks' weights outgrow
 * the L2 (1.18 MB at c = 512, 1 MiB a core), the input channels in two parts of 590
 * KB run part after part over a block's rows, the tiles' sums kept between them, ran
 * 0.98-1.06x the whole channels' time at 1×512×14×14 stride 2 and 1×512×7×7, NCHW and
 * NHWC, the same way (ab-direct-conv-channel-parts.txt): not kept. */
static void dc_rows_image(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep,
                          float *ws)
{
    const int h = g->h;
    const bool wide = dc_wide(g); /* two blocks a tile */
    const int nkb = g->k / DC_KB / (wide ? 2 : 1);
    const size_t items = (size_t)g->p * (size_t)nkb, row = padded_row(g);
#pragma omp parallel
    {
        const int nt = omp_get_num_threads(), t = omp_get_thread_num();
        for (int nn = 0; nn < g->n; nn++) {
            for (int iy = h * t / nt; iy < h * (t + 1) / nt; iy++) { /* the padding pixels too: in parallel */
                zero_row_ends(g, ws + (size_t)iy * row, 1);
                copy_row(g, x, nn, iy, ws + (size_t)iy * row);
            }
#pragma omp barrier
            for (size_t it = items * (size_t)t / (size_t)nt; it < items * (size_t)(t + 1) / (size_t)nt; it++) {
                const int kb = (int)(it / (size_t)g->p), oy = (int)(it % (size_t)g->p);
                const float *rp[3];
                for (int r = 0; r < 3; r++) {
                    const int iy = oy * g->stride - 1 + r;
                    rp[r] = iy < 0 || iy >= h ? NULL : ws + (size_t)iy * row;
                }
                dc_item(g, wp, y, ep, rp, nn, oy, wide ? 2 * kb : kb, wide);
            }
#pragma omp barrier /* the copy is read to its end before the next image's */
        }
    }
}

static void dc_rows(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep, float *ws)
{
    if (dc_image_copy(g)) dc_rows_image(g, x, wp, y, ep, ws);
    else
        dc_rows_ring(g, x, wp, y, ep, ws);
}

/* ------------------------------------------------------------------ NCHW, stride 1 or 2
 *
 * For the NCHW convolutions the register tiles cannot take (input channels no multiple
 * of 8, output channels no multiple of DC_KB).
 * Stride 1: a padded copy of each image ([c][h + 2][w + 2], zeros around) makes the
 * output a grid of h·(w + 2) positions f = oy·(w + 2) + ox whose tap (r, s) reads the
 * copy at f + r·(w + 2) + s: one contiguous vector load per tap for consecutive
 * positions, the two columns past each row's end computed and dropped (w / (w + 2) of
 * the work is kept: 97 % at 56 wide, 78 % at 7).
 * Stride 2: the padded image split by the parity of its rows and columns into four
 * planes of ⌈(h + 2)/2⌉ × wq, wq = ⌈(w + 2)/2⌉ ([c][row parity][column parity][..]), so
 * that the grid is p·wq positions f = oy·wq + ox and tap (r, s) reads plane (r mod 2,
 * s mod 2) at f + ⌊r/2⌋·wq + ⌊s/2⌋: contiguous again, q of wq columns kept.
 * Each step loads the tile's input vectors and broadcasts its channels' weights
 * ([k/tk][c][r][s][tk]); the tile's sums go through a buffer on the stack to the runs
 * of positions each output row keeps, the bias, residual and activation applied on
 * the way. The threads copy an image's channels, then share its (positions, channel
 * block) tiles, channel-block-major where a block's weights outweigh a channel's copy
 * (they stay in L2 across the positions). Against the im2col + sgemm form, the two
 * builds alternating, two rounds (results/cpu-amd-epyc-f25m17-2c/ab-direct-conv-nchw.txt),
 * fused medians 3.62-3.75 -> 1.09-1.10 ms at 1×64×56×56 → 64 (88 % of the GEMM
 * ceiling), 3.75 -> 1.17-1.27 at 1×128×28×28, 2.16-2.28 -> 2.06-2.07 at 1×512×7×7 (its
 * 63-position grid in two tiles of 48) and 15.6-16.3 -> 10.7-10.8 at 8×256×14×14.
 * Stride 2 and the narrow tile, against im2col and the wide tile, the same way
 * (ab-direct-conv-nchw-stride2.txt): 3.77 -> 1.15-1.45 ms at 1×128×56×56 stride 2,
 * 3.14-3.23 -> 1.34-1.62 at 1×256×28×28 stride 2, 2.77-2.83 -> 1.39-1.59 at
 * 1×512×14×14 stride 2, 2.24 -> 1.39-1.47 at 1×512×7×7 (the narrow tile: 64 positions
 * for 49 kept, where the wide one computed 96); the stride-1 shapes on the wide tile
 * unchanged within the round. (Those shapes' channels now take the register tiles
 * above; the narrow tile still serves small grids whose channels they do not.) */

/* The tiles: DN_TV input vectors of positions by DN_TK output channels (the wide
 * tile), or, on grids the wide tile covers poorly, one vector by DN_TK1 channels (the
 * narrow one: each broadcast serves one vector, not three). */
#define DN_TV 3
#if VW == 16
#define DN_TK 8   /* 24 accumulators, three input vectors and a broadcast: 28 of 32 registers */
#define DN_TK1 16 /* 16 + 1 + 1 */
#else
#define DN_TK 4  /* 12 + 3 + 1 of 16 */
#define DN_TK1 8 /* 8 + 1 + 1 */
#endif
#define DN_TP (DN_TV * VW)

/* a plane's row pitch and rows: the padded image's at stride 1, half of each at 2 */
static size_t dn_wq(const fc_conv_geom *g) { return ((size_t)g->w + 2 + (size_t)g->stride - 1) / (size_t)g->stride; }
static size_t dn_hq(const fc_conv_geom *g) { return ((size_t)g->h + 2 + (size_t)g->stride - 1) / (size_t)g->stride; }
static size_t dn_plane(const fc_conv_geom *g) { return dn_hq(g) * dn_wq(g); }
/* one channel's copy: one plane, or four */
static size_t dn_chan(const fc_conv_geom *g) { return (size_t)g->stride * (size_t)g->stride * dn_plane(g); }
static size_t dn_grid(const fc_conv_geom *g) { return (size_t)g->p * dn_wq(g); }
static size_t round_up(size_t a, size_t b) { return (a + b - 1) / b * b; }

/* Whether the narrow tile runs: when it computes at most 3/4 of the positions the
 * wide one does (a 7×7 image's 63-position grid: 64 against 96; at 14×14 and above
 * the wide one wastes under 7 %) and the output channels divide into its blocks. */
static bool dn_narrow(const fc_conv_geom *g)
{
    const size_t f = dn_grid(g);
    return g->k % DN_TK1 == 0 && 4 * round_up(f, VW) <= 3 * round_up(f, DN_TP);
}

/* the tile's positions and channels */
static size_t dn_tp(const fc_conv_geom *g) { return dn_narrow(g) ? VW : DN_TP; }
static int dn_tk(const fc_conv_geom *g) { return dn_narrow(g) ? DN_TK1 : DN_TK; }

/* the image copy, and room for the last tile's loads past its last plane */
static size_t dn_workspace(const fc_conv_geom *g)
{
    return ((size_t)g->c * dn_chan(g) + DN_TP + 2 * dn_wq(g) + 2 + 15) / 16 * 16;
}

/* [k/tk][c][r][s][tk], tk the tile's channels */
static void dn_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    const size_t C = (size_t)g->c;
    const int tk = dn_tk(g);
    for (int kb = 0; kb < g->k / tk; kb++)
        for (size_t c = 0; c < C; c++)
            for (int t = 0; t < 9; t++)
                for (int j = 0; j < tk; j++)
                    packed[(((size_t)kb * C + c) * 9 + (size_t)t) * (size_t)tk + (size_t)j] =
                        w[(((size_t)kb * (size_t)tk + (size_t)j) * C + c) * 9 + (size_t)t];
}

/* channel c of image nn into the copy, the padding zeroed: at stride 1 row by row,
 * at stride 2 each padded pixel (iy, ix) to plane (iy mod 2, ix mod 2) at
 * (⌊iy/2⌋, ⌊ix/2⌋) */
static void dn_copy_channel(const fc_conv_geom *g, const float *x, float *ws, int nn, size_t c)
{
    const size_t W = (size_t)g->w, H = (size_t)g->h, wq = dn_wq(g), pl = dn_plane(g);
    float *dst = ws + c * dn_chan(g);
    const float *src = x + ((size_t)nn * g->c + c) * H * W;
    if (g->stride == 1) {
        memset(dst, 0, (wq + 1) * sizeof(float)); /* the top row and the first row's left pixel */
        for (size_t iy = 0; iy < H; iy++) {
            float *row = dst + (iy + 1) * wq;
            memcpy(row + 1, src + iy * W, W * sizeof(float));
            row[W + 1] = 0.0f; /* this row's right pixel, */
            row[W + 2] = 0.0f; /* the next row's left one (the bottom row's, past H) */
        }
        memset(dst + (H + 1) * wq, 0, wq * sizeof(float));
        return;
    }
    memset(dst, 0, 4 * pl * sizeof(float));
    for (size_t iy = 0; iy < H; iy++) {
        const size_t py = iy + 1; /* the padded row */
        float *even = dst + ((py & 1) * 2) * pl + (py >> 1) * wq, *odd = even + pl;
        const float *row = src + iy * W;
        /* padded column ix + 1: odd columns from even ix, even ones from odd ix */
        for (size_t ix = 0; ix < W; ix += 2) odd[ix >> 1] = row[ix];
        for (size_t ix = 1; ix < W; ix += 2) even[(ix + 1) >> 1] = row[ix];
    }
}

/* The sums of positions [f0, f0 + tv·VW) by channels [k0, k0 + tk) of one image into
 * out ([tk][tv·VW]): xp the copy at f0, w the block's packed weights; tv, tk and the
 * stride st constants at each call, so that the accumulators stay in registers and
 * each tap's offset is a constant multiple of the run-time pitches. */
static inline __attribute__((always_inline)) void dn_tile(const float *xp, const float *w, size_t C, size_t chan,
                                                          size_t pl, size_t wq, float *out, const int tv, const int tk,
                                                          const int st)
{
    vf acc[DN_TK1][DN_TV]; /* the widest of the two tiles; SRA keeps the used ones in registers */
#pragma GCC unroll 16
    for (int j = 0; j < tk; j++)
#pragma GCC unroll 3
        for (int v = 0; v < tv; v++) acc[j][v] = vsplat(0.0f);
    for (size_t c = 0; c < C; c++, xp += chan)
        for (int r = 0; r < 3; r++) /* not unrolled: the wide tile's addresses would spill */
#pragma GCC unroll 3
            for (int s = 0; s < 3; s++, w += tk) {
                const float *xr = st == 1 ? xp + (size_t)r * wq + (size_t)s
                                          : xp + (size_t)((r & 1) * 2 + (s & 1)) * pl + (size_t)(r >> 1) * wq +
                                                (size_t)(s >> 1);
                vf xv[DN_TV];
#pragma GCC unroll 3
                for (int v = 0; v < tv; v++) xv[v] = vload(xr + v * VW);
#pragma GCC unroll 16
                for (int j = 0; j < tk; j++) {
                    const vf wb = vsplat(w[j]);
#pragma GCC unroll 3
                    for (int v = 0; v < tv; v++) acc[j][v] += wb * xv[v];
                }
            }
#pragma GCC unroll 16
    for (int j = 0; j < tk; j++)
#pragma GCC unroll 3
        for (int v = 0; v < tv; v++) vstore(out + (size_t)j * (size_t)(tv * VW) + (size_t)(v * VW), acc[j][v]);
}

typedef void (*dn_tile_fn)(const float *xp, const float *w, size_t C, size_t chan, size_t pl, size_t wq, float *out);
#define DN_FN(name, tv, tk, st)                                                                                \
    static void name(const float *xp, const float *w, size_t C, size_t chan, size_t pl, size_t wq, float *out) \
    {                                                                                                          \
        dn_tile(xp, w, C, chan, pl, wq, out, tv, tk, st);                                                      \
    }
DN_FN(dn_wide_1, DN_TV, DN_TK, 1)
DN_FN(dn_wide_2, DN_TV, DN_TK, 2)
DN_FN(dn_narrow_1, 1, DN_TK1, 1)
DN_FN(dn_narrow_2, 1, DN_TK1, 2)

/* A tile's sums (out, [tk][tp]) into y: per output row the run of positions it keeps
 * (ox < q), the epilogue on the way. */
static void dn_store(const fc_conv_geom *g, const fc_epilogue *ep, float *y, int nn, size_t f0, int k0,
                     const float *out, size_t tp, int tk)
{
    const size_t Q = (size_t)g->q, P = (size_t)g->p, wq = dn_wq(g), end = P * wq;
    size_t oy = f0 / wq, ox = f0 % wq;
    for (size_t p = 0; p < tp && f0 + p < end;) {
        const size_t run = ox < Q ? (Q - ox < tp - p ? Q - ox : tp - p) : 0;
        for (int j = 0; j < tk && run; j++) {
            const size_t o = (((size_t)nn * g->k + (size_t)(k0 + j)) * P + oy) * Q + ox;
            const float b = ep->bias ? ep->bias[k0 + j] : 0.0f, *res = ep->resid ? ep->resid + o : NULL;
            float *dst = y + o;
            const float *src = out + (size_t)j * tp + p;
            for (size_t i = 0; i < run; i++) {
                float v = src[i] + b + (res ? res[i] : 0.0f);
                dst[i] = ep->act == FC_ACT_RELU && v < 0.0f ? 0.0f : v;
            }
            if (ep->act == FC_ACT_GELU) fc_cpu_gelu_span(dst, dst, run);
        }
        const size_t step = run + (ox < Q ? wq - Q : wq - ox); /* the kept run, then the dropped columns */
        p += step;
        oy++;
        ox = 0;
    }
}

static void dc_nchw(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep, float *ws)
{
    const size_t C = (size_t)g->c, chan = dn_chan(g), pl = dn_plane(g), wq = dn_wq(g), tp = dn_tp(g);
    const int tk = dn_tk(g);
    const size_t ntiles = (dn_grid(g) + tp - 1) / tp, nkb = (size_t)(g->k / tk);
    const bool kb_major = (size_t)9 * (size_t)g->k > chan; /* a block's weights outweigh a channel's copy */
    static const dn_tile_fn tiles[2][2] = {{dn_wide_1, dn_wide_2}, {dn_narrow_1, dn_narrow_2}};
    const dn_tile_fn tile = tiles[dn_narrow(g)][g->stride - 1];
#pragma omp parallel
    for (int nn = 0; nn < g->n; nn++) {
#pragma omp for schedule(static)
        for (size_t c = 0; c < C; c++) dn_copy_channel(g, x, ws, nn, c);
#pragma omp for schedule(static)
        for (size_t it = 0; it < ntiles * nkb; it++) {
            const size_t f0 = (kb_major ? it % ntiles : it / nkb) * tp;
            const int k0 = (int)(kb_major ? it / ntiles : it % nkb) * tk;
            float out[DN_TK * DN_TP > DN_TK1 * VW ? DN_TK * DN_TP : DN_TK1 * VW] __attribute__((aligned(64)));
            tile(ws + f0, wp + (size_t)k0 * C * 9, C, chan, pl, wq, out);
            dn_store(g, ep, y, nn, f0, k0, out, tp, tk);
        }
    }
}

/* ------------------------------------------------------------------ the entry points */

/* Whether the register tiles over channel-blocked rows take the convolution (NHWC
 * only so; NCHW too, its rows gathered by channel and its outputs stored per channel,
 * where the padded-copy tiles are the fallback for other channel counts) */
static bool dc_takes(const fc_conv_geom *g)
{
    return (g->stride == 1 || g->stride == 2) && g->k % DC_KB == 0 && g->c % DC_CB == 0;
}

bool fc_cpu_dconv_applies(const fc_conv_geom *g)
{
    if (g->g != 1 || g->r != 3 || g->s != 3 || g->pad != 1 || g->c <= 0 || g->w <= 0 || g->h <= 0) return false;
    if (dc_takes(g)) return true;
    return !g->nhwc && (g->stride == 1 || g->stride == 2) && g->k % DN_TK == 0; /* dn_narrow checks DN_TK1 */
}

void fc_cpu_dconv_describe(const fc_conv_geom *g, char *buf, size_t n)
{
    const char *isa = VW == 16 ? "AVX-512" : FC_VEC_ISA;
    if (dc_takes(g))
        snprintf(buf, n, "direct 3x3 (fusecal, %s, %dx%d register tiles%s)", isa, dc_wide(g) ? g->q : DC_TW,
                 dc_wide(g) ? 2 * DC_KB : DC_KB, g->nhwc ? "" : ", NCHW rows gathered into channel blocks");
    else
        snprintf(buf, n, "direct 3x3 (fusecal, %s, %zu positions x %d channels a tile, on a padded copy%s)", isa,
                 dn_tp(g), dn_tk(g), g->stride == 2 ? " split in four by row and column parity" : "");
}

void fc_cpu_dconv_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    if (dc_takes(g)) dc_pack_weights(g, w, packed);
    else
        dn_pack_weights(g, w, packed);
}

size_t fc_cpu_dconv_workspace(const fc_conv_geom *g, int nthreads)
{
    return dc_takes(g) ? dc_workspace(g, nthreads) : dn_workspace(g);
}

void fc_cpu_dconv(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep, float *ws)
{
    if (dc_takes(g)) dc_rows(g, x, wp, y, ep, ws);
    else
        dc_nchw(g, x, wp, y, ep, ws);
}
