/* cpu_ops.c — see cpu_ops.h.
 *
 * Block sizes aim at the private L2 (1 MiB per core on the machines measured): an
 * output block of at most 512 KiB is still resident when its epilogue runs. */
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "util.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#ifndef L2_BLOCK_BYTES
#define L2_BLOCK_BYTES (512u * 1024u)
#endif

/* ------------------------------------------------------------------ math */

/* exp, softmax and GELU are written on the ISA's float vectors (cpu_vec.h), where `omp
 * simd` over the scalar form left the exponential scalar. */
/* exp(x) = 2^n·e^r, n = round(x·log2 e) by the 1.5·2^23 trick, r in [−ln2/2, ln2/2],
 * Cephes' degree-5 polynomial (relative error ~1e-7). exp(x < −87) = 0, so exp(−∞)
 * = 0 for masked logits. */
static inline vf vexp(vf x)
{
    const vf magic = vsplat(12582912.0f);
    vf xc = vsel(x < vsplat(-87.0f), vsplat(-87.0f), x);
    xc = vsel(xc > vsplat(88.0f), vsplat(88.0f), xc);
    vf t = xc * vsplat(1.44269504088896341f) + magic;
    vf n = t - magic;
    vi ni = (vi)t - (vi)magic;
    vf r = xc - n * vsplat(0.693359375f);
    r = r + n * vsplat(2.12194440e-4f);
    vf p = vsplat(1.9875691500E-4f);
    p = p * r + vsplat(1.3981999507E-3f);
    p = p * r + vsplat(8.3334519073E-3f);
    p = p * r + vsplat(4.1665795894E-2f);
    p = p * r + vsplat(1.6666665459E-1f);
    p = p * r + vsplat(5.0000001201E-1f);
    p = p * r * r + r + vsplat(1.0f);
    vf scale = (vf)((ni + 127) << 23);
    return vsel(x < vsplat(-87.0f), vsplat(0.0f), p * scale);
}

static inline float fast_expf(float x)
{
    vf v = vsplat(x);
    return vexp(v)[0];
}

/* gelu_tanh(x) = 0.5·x·(1 + tanh(u)) = x / (1 + e^(−2u)), u = √(2/π)(x + 0.044715x³) */
static inline vf vgelu(vf x)
{
    vf u = vsplat(0.7978845608028654f) * (x + vsplat(0.044715f) * x * x * x);
    return x / (vsplat(1.0f) + vexp(vsplat(-2.0f) * u));
}

static inline float gelu(float x) { return vgelu(vsplat(x))[0]; }

/* y = gelu(y) over n elements */
static void gelu_span(const float *in, float *out, size_t n)
{
    size_t j = 0;
    for (; j + VW <= n; j += VW) vstore(out + j, vgelu(vload(in + j)));
    for (; j < n; j++) out[j] = gelu(in[j]);
}

static void relu_span(const float *in, float *out, size_t n)
{
#pragma omp simd
    for (size_t j = 0; j < n; j++) out[j] = in[j] > 0.0f ? in[j] : 0.0f;
}

static inline void act_span(float *y, size_t n, fc_act a)
{
    if (a == FC_ACT_RELU) relu_span(y, y, n);
    else if (a == FC_ACT_GELU)
        gelu_span(y, y, n);
}

/* silu(x) = x / (1 + e^−x); e^−x clamps at e^88 for x < −88, which leaves x·~1e-38 */
static inline vf vsilu(vf x) { return x / (vsplat(1.0f) + vexp(-x)); }

static inline float silu(float x) { return vsilu(vsplat(x))[0]; }

void fc_cpu_gelu_span(const float *in, float *out, size_t n) { gelu_span(in, out, n); }

void fc_cpu_silu_span(const float *in, float *out, size_t n)
{
    size_t j = 0;
    for (; j + VW <= n; j += VW) vstore(out + j, vsilu(vload(in + j)));
    for (; j < n; j++) out[j] = silu(in[j]);
}

void fc_cpu_silu_mul_span(const float *g, const float *u, float *out, size_t n)
{
    size_t j = 0;
    for (; j + VW <= n; j += VW) vstore(out + j, vsilu(vload(g + j)) * vload(u + j));
    for (; j < n; j++) out[j] = silu(g[j]) * u[j];
}

/* ------------------------------------------------------------------ elementwise */

float *fc_cpu_buffer(size_t n)
{
    float *b = fc_aligned_alloc(n * sizeof(float));
    memset(b, 0, n * sizeof(float)); /* map every page now, not in a timed call */
    return b;
}

void fc_cpu_fill_nan(float *p, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) p[i] = NAN;
}

/* out = in·scale[c] + shift[c] over [outer, C, inner]; scale NULL means 1 */
static void channel_affine(const float *in, const float *scale, const float *shift, float *out, size_t outer, size_t C,
                           size_t inner)
{
    if (inner == 1) {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < outer; i++) {
            const float *a = in + i * C;
            float *o = out + i * C;
            if (scale) {
#pragma omp simd
                for (size_t c = 0; c < C; c++) o[c] = a[c] * scale[c] + shift[c];
            } else {
#pragma omp simd
                for (size_t c = 0; c < C; c++) o[c] = a[c] + shift[c];
            }
        }
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < outer * C; i++) {
            const float sc = scale ? scale[i % C] : 1.0f, sh = shift[i % C];
            const float *a = in + i * inner;
            float *o = out + i * inner;
#pragma omp simd
            for (size_t j = 0; j < inner; j++) o[j] = a[j] * sc + sh;
        }
    }
}

void fc_cpu_bias(const float *in, const float *bias, float *out, size_t outer, size_t C, size_t inner)
{
    channel_affine(in, NULL, bias, out, outer, C, inner);
}

void fc_cpu_batchnorm(const float *in, const float *gamma, const float *beta, const float *mean, const float *var,
                      float eps, float *out, size_t outer, size_t C, size_t inner, float *scratch)
{
    /* per-channel scale and shift, as a BN kernel derives them on entry */
    float *scale = scratch, *shift = scratch + C;
    for (size_t c = 0; c < C; c++) {
        scale[c] = gamma[c] / sqrtf(var[c] + eps);
        shift[c] = beta[c] - mean[c] * scale[c];
    }
    channel_affine(in, scale, shift, out, outer, C, inner);
}

void fc_cpu_add(const float *a, const float *b, float *out, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

/* chunks of 4096 elements per OpenMP iteration, vectorized inside */
#define CHUNK 4096

void fc_cpu_relu(const float *in, float *out, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < n; c += CHUNK) relu_span(in + c, out + c, n - c < CHUNK ? n - c : CHUNK);
}

void fc_cpu_gelu(const float *in, float *out, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t c = 0; c < n; c += CHUNK) gelu_span(in + c, out + c, n - c < CHUNK ? n - c : CHUNK);
}

static inline float max_span(const float *in, size_t n, float mx)
{
    size_t j = 0;
    vf vm = vsplat(mx);
    for (; j + VW <= n; j += VW) vm = vmax(vm, vload(in + j));
    mx = vhmax(vm);
    for (; j < n; j++) mx = in[j] > mx ? in[j] : mx;
    return mx;
}

/* out[j] = exp(in[j] − mx); returns the sum (in may equal out) */
static inline float exp_sum_span(const float *in, float *out, size_t n, float mx)
{
    size_t j = 0;
    vf vs = vsplat(0.0f), vmx = vsplat(mx);
    for (; j + VW <= n; j += VW) {
        vf e = vexp(vload(in + j) - vmx);
        vstore(out + j, e);
        vs += e;
    }
    float sum = vhsum(vs);
    for (; j < n; j++) {
        out[j] = fast_expf(in[j] - mx);
        sum += out[j];
    }
    return sum;
}

/* out = softmax(in) over n elements (in may equal out) */
static inline void softmax_row(const float *in, float *out, size_t n)
{
    float mx = max_span(in, n, -INFINITY);
    const float inv = 1.0f / exp_sum_span(in, out, n, mx);
#pragma omp simd
    for (size_t j = 0; j < n; j++) out[j] *= inv;
}

void fc_cpu_softmax_rows(const float *in, float *out, size_t rows, size_t cols)
{
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) softmax_row(in + r * cols, out + r * cols, cols);
}

/* ------------------------------------------------------------------ GEMM */

/* y = act(y) over a rows×cols block with leading dimension ld: the epilogue left
 * after the bias and residual entered the sgemm as its C (c_init) */
static void act_block(float *y, size_t ld, int rows, int cols, fc_act act)
{
    if (act == FC_ACT_NONE) return;
    for (int i = 0; i < rows; i++) act_span(y + (size_t)i * ld, (size_t)cols, act);
}

/* C = bias + resid over a rows×cols block: the bias per column (a linear's, an NHWC
 * conv's) or per row (an NCHW conv's output channels) */
static void c_init(float *C, size_t ld, int rows, int cols, const float *bias, bool bias_per_row, const float *resid)
{
    for (int i = 0; i < rows; i++) {
        float *o = C + (size_t)i * ld;
        const float *r = resid ? resid + (size_t)i * ld : NULL;
        if (bias && bias_per_row) {
            const float b = bias[i];
            if (r) {
#pragma omp simd
                for (int j = 0; j < cols; j++) o[j] = b + r[j];
            } else {
#pragma omp simd
                for (int j = 0; j < cols; j++) o[j] = b;
            }
        } else if (bias && r) {
#pragma omp simd
            for (int j = 0; j < cols; j++) o[j] = bias[j] + r[j];
        } else
            memcpy(o, bias ? bias : r, (size_t)cols * sizeof *o);
    }
}

void fc_cpu_gemm_c_init(float *C, size_t ld, int rows, int cols, const float *bias, const float *resid)
{
    c_init(C, ld, rows, cols, bias, false, resid);
}

void fc_cpu_gemm_nt(int M, int N, int K, const float *A, const float *B, float *C)
{
    /* FUSECAL_FAULT=openblas: an argument OpenBLAS rejects (it reports through
     * xerbla and computes nothing), to prove verification catches a call that
     * silently did no work. */
    int lda = fc_fault_backend("openblas") ? 0 : K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, lda, B, K, 0.0f, C, N);
}

/* Equal blocks of at most b along a side of n: multiples of 16 (the last smaller)
 * unless the side is one block. */
static int even_block(int n, int b)
{
    const int cnt = (n + b - 1) / b;
    if (cnt <= 1) return n;
    const int e = ((n + cnt - 1) / cnt + 15) / 16 * 16;
    return e < n ? e : n;
}

void fc_cpu_balance_blocks(int outer, int M, int N, int nt, bool grow_cols, int min_block, int *mb, int *nb)
{
    int m = even_block(M, *mb), n = even_block(N, *nb);
    int *g = grow_cols ? &n : &m;
    const int side = grow_cols ? N : M, cnt0 = fc_cpu_count_blocks(side, *g);
    int best = *g;
    double best_excess = 1e300;
    for (int c = cnt0; c <= 8 * cnt0; c++) {
        const int b = even_block(side, (side + c - 1) / c);
        if (c > cnt0 && b < min_block) break;
        *g = b;
        const double units = (double)outer * fc_cpu_count_blocks(M, m) * fc_cpu_count_blocks(N, n);
        const double excess = ceil(units / nt) * nt / units;
        if (excess < best_excess - 1e-9) best_excess = excess, best = b;
        if (excess <= 1.10) break;
    }
    *g = best;
    *mb = m;
    *nb = n;
}

void fc_cpu_gemm_nt_fused(int M, int N, int K, const float *A, const float *B, float *C, const fc_epilogue *ep)
{
    fc_cpu_gemm_nt_fused_blocks(M, N, K, A, B, C, ep, L2_BLOCK_BYTES);
}

void fc_cpu_gemm_nt_fused_blocks(int M, int N, int K, const float *A, const float *B, float *C, const fc_epilogue *ep,
                                 size_t block_bytes)
{
    int nt = omp_get_max_threads();
    /* Each block is one sgemm call, which packs its rows of A and its columns of B:
     * tall blocks (up to 512 rows) and a C block of at most L2_BLOCK_BYTES keep that
     * packing small against the block's FLOPs (measured on Zen 4: 512x256 blocks
     * run at 92-95 % of one whole-matrix sgemm, 64x1024 blocks at 70 %). Halve the
     * larger side until every thread has a block, then even the blocks out over the
     * threads (fc_cpu_balance_blocks). */
    const int cfloats = (int)(block_bytes / sizeof(float));
    int mb = M < 512 ? M : 512;
    int nb = fc_cpu_round_down(cfloats / mb, 16);
    if (nb < 128) nb = 128;
    if (nb > N) nb = N;
    if (mb * nb > cfloats) mb = fc_cpu_round_down(cfloats / nb, 16);
    if (mb > M) mb = M;
    while (((M + mb - 1) / mb) * ((N + nb - 1) / nb) < nt && (mb > 16 || nb > 16)) {
        if (mb >= nb && mb > 16) mb = fc_cpu_round_down((mb + 1) / 2, 16);
        else
            nb = fc_cpu_round_down((nb + 1) / 2, 16);
    }
    fc_cpu_balance_blocks(1, M, N, nt, true, 16, &mb, &nb);
    int nblk_n = (N + nb - 1) / nb, nblk_m = (M + mb - 1) / mb;
#pragma omp parallel for collapse(2) schedule(static)
    for (int jb = 0; jb < nblk_n; jb++)
        for (int ib = 0; ib < nblk_m; ib++) {
            int i0 = ib * mb, j0 = jb * nb;
            int rows = M - i0 < mb ? M - i0 : mb, cols = N - j0 < nb ? N - j0 : nb;
            float *Cb = C + (size_t)i0 * N + j0;
            const float *bias = ep->bias ? ep->bias + j0 : NULL,
                        *resid = ep->resid ? ep->resid + (size_t)i0 * N + j0 : NULL;
            const bool pre = bias || resid;
            if (pre) fc_cpu_gemm_c_init(Cb, (size_t)N, rows, cols, bias, resid);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, K, 1.0f, A + (size_t)i0 * K, K,
                        B + (size_t)j0 * K, K, pre ? 1.0f : 0.0f, Cb, N);
            act_block(Cb, (size_t)N, rows, cols, ep->act);
        }
}

/* ------------------------------------------------------------------ convolution */

static bool conv_direct(const fc_conv_geom *g) { return g->r == 1 && g->s == 1 && g->stride == 1 && g->pad == 0; }

/* Input channels per group, and the length of one group's dot products. */
static int conv_cg(const fc_conv_geom *g) { return g->c / g->g; }
static int conv_rsc(const fc_conv_geom *g) { return g->r * g->s * conv_cg(g); }

/* NHWC: rows of output pixels per block; NCHW: output columns per block. */
static int conv_block(const fc_conv_geom *g)
{
    int b = fc_cpu_round_down((int)(L2_BLOCK_BYTES / sizeof(float) / (size_t)conv_rsc(g)), 16);
    if (b < 32) b = 32;
    if (b > 256) b = 256;
    return b;
}

bool fc_cpu_conv_is_depthwise(const fc_conv_geom *g) { return g->g == g->c && g->k == g->c; }

/* ---- the im2col + sgemm driver: every convolution the direct kernels leave */

/* each thread's column block */
static size_t im2col_workspace(const fc_conv_geom *g)
{
    if (conv_direct(g)) return 0;
    return (size_t)conv_block(g) * (size_t)conv_rsc(g);
}

static size_t im2col_team_workspace(const fc_conv_geom *g, int nthreads)
{
    return im2col_workspace(g) * (size_t)nthreads;
}

static void im2col_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    const int cg = conv_cg(g);
    if (!g->nhwc) {
        memcpy(packed, w, (size_t)g->k * cg * g->r * g->s * sizeof(float));
        return;
    }
    for (int k = 0; k < g->k; k++)
        for (int c = 0; c < cg; c++)
            for (int r = 0; r < g->r; r++)
                for (int s = 0; s < g->s; s++)
                    packed[(((size_t)k * g->r + r) * g->s + s) * cg + c] =
                        w[(((size_t)k * cg + c) * g->r + r) * g->s + s];
}

/* NHWC im2col of `rows` output pixels from row0, the channels [c0, c0 + cg) of each
 * tap: col [rows][r][s][cg]. */
static void im2col_nhwc(const fc_conv_geom *g, const float *x, size_t row0, int rows, int c0, float *col)
{
    const int cg = conv_cg(g);
    for (int i = 0; i < rows; i++) {
        size_t pix = row0 + (size_t)i;
        int ox = (int)(pix % g->q), oy = (int)(pix / g->q % g->p), nn = (int)(pix / ((size_t)g->q * g->p));
        float *dst = col + (size_t)i * conv_rsc(g);
        for (int r = 0; r < g->r; r++) {
            int iy = oy * g->stride - g->pad + r;
            for (int s = 0; s < g->s; s++, dst += cg) {
                int ix = ox * g->stride - g->pad + s;
                if (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) memset(dst, 0, (size_t)cg * sizeof(float));
                else
                    memcpy(dst, x + (((size_t)nn * g->h + iy) * g->w + ix) * g->c + c0, (size_t)cg * sizeof(float));
            }
        }
    }
}

/* Blocks of output pixels and of output channels (fc_cpu_balance_blocks: a late
 * ResNet stage's 7x7 pixels are one block, which one thread would run alone; each
 * chunk's sgemm packs its own columns of the weights and the block's im2col rows
 * again); per block and group one sgemm
 * [rows, kb, r·s·c/g] on the group's im2col columns (or x itself for a 1x1 conv), C
 * the bias and residual (beta = 1), then the activation on the block in cache. */
static void conv_nhwc(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep,
                      float *ws, size_t ws_per)
{
    const int rsc = conv_rsc(g), cg = conv_cg(g), kg = g->k / g->g;
    const size_t total = (size_t)g->n * g->p * g->q;
    int mb = conv_block(g), kb = kg; /* equal blocks, split along the channels if uneven */
    fc_cpu_balance_blocks(1, (int)total, kg, omp_get_max_threads(), true, 32, &mb, &kb);
    const size_t nblk = (total + (size_t)mb - 1) / (size_t)mb;
    const int nkc = fc_cpu_count_blocks(kg, kb);
    const bool direct = conv_direct(g);
#pragma omp parallel
    {
        float *col = ws + (size_t)omp_get_thread_num() * ws_per;
#pragma omp for collapse(2) schedule(static)
        for (size_t blk = 0; blk < nblk; blk++)
            for (int kc = 0; kc < nkc; kc++) {
                const size_t row0 = blk * (size_t)mb;
                const int rows = (int)(total - row0 < (size_t)mb ? total - row0 : (size_t)mb);
                const int cols = kg - kc * kb < kb ? kg - kc * kb : kb;
                if (rows <= 0 || cols <= 0) continue;
                for (int grp = 0; grp < g->g; grp++) {
                    const float *A = x + row0 * g->c + (size_t)grp * cg;
                    int lda = g->c;
                    if (!direct) {
                        im2col_nhwc(g, x, row0, rows, grp * cg, col);
                        A = col;
                        lda = rsc;
                    }
                    const size_t k0 = (size_t)grp * kg + (size_t)kc * kb;
                    float *Y = y + row0 * g->k + k0;
                    const float *bias = ep->bias ? ep->bias + k0 : NULL,
                                *resid = ep->resid ? ep->resid + row0 * g->k + k0 : NULL;
                    const bool pre = bias || resid;
                    if (pre) c_init(Y, (size_t)g->k, rows, cols, bias, false, resid);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, rsc, 1.0f, A, lda, wp + k0 * rsc,
                                rsc, pre ? 1.0f : 0.0f, Y, g->k);
                    act_block(Y, (size_t)g->k, rows, cols, ep->act);
                }
            }
    }
}

/* NCHW im2col of output columns [j0, j0 + cols) of image nn, channels [c0, c0 + cg):
 * col [cg][r][s][qb]. */
static void im2col_nchw(const fc_conv_geom *g, const float *x, int nn, int c0, int j0, int cols, int qb, float *col)
{
    for (int c = 0; c < conv_cg(g); c++)
        for (int r = 0; r < g->r; r++)
            for (int s = 0; s < g->s; s++) {
                float *dst = col + ((size_t)(c * g->r + r) * g->s + s) * qb;
                const float *src = x + ((size_t)nn * g->c + c0 + c) * g->h * g->w;
                for (int j = 0; j < cols; j++) {
                    int pix = j0 + j, oy = pix / g->q, ox = pix % g->q;
                    int iy = oy * g->stride - g->pad + r, ix = ox * g->stride - g->pad + s;
                    dst[j] = (iy < 0 || iy >= g->h || ix < 0 || ix >= g->w) ? 0.0f : src[iy * g->w + ix];
                }
            }
}

/* Blocks of output columns (pixels) of each image and of output channels (as conv_nhwc);
 * per block and group one sgemm [kb, cols, c/g·r·s], C the bias and residual. */
static void conv_nchw(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep,
                      float *ws, size_t ws_per)
{
    const int crs = conv_rsc(g), cg = conv_cg(g), kg = g->k / g->g, pq = g->p * g->q;
    int qb = conv_block(g) < pq ? conv_block(g) : pq, kb = kg;
    fc_cpu_balance_blocks(g->n, pq, kg, omp_get_max_threads(), true, 32, &qb, &kb);
    const int nchunk = fc_cpu_count_blocks(pq, qb), nkc = fc_cpu_count_blocks(kg, kb);
    const bool direct = conv_direct(g);
#pragma omp parallel
    {
        float *col = ws + (size_t)omp_get_thread_num() * ws_per;
#pragma omp for collapse(3) schedule(static)
        for (int nn = 0; nn < g->n; nn++)
            for (int ch = 0; ch < nchunk; ch++)
                for (int kc = 0; kc < nkc; kc++) {
                    const int j0 = ch * qb, cols = pq - j0 < qb ? pq - j0 : qb;
                    const int krows = kg - kc * kb < kb ? kg - kc * kb : kb;
                    if (cols <= 0 || krows <= 0) continue;
                    for (int grp = 0; grp < g->g; grp++) {
                        const float *B = x + ((size_t)nn * g->c + (size_t)grp * cg) * pq + j0;
                        int ldb = pq;
                        if (!direct) {
                            im2col_nchw(g, x, nn, grp * cg, j0, cols, qb, col);
                            B = col;
                            ldb = qb;
                        }
                        const size_t k0 = (size_t)grp * kg + (size_t)kc * kb, off = ((size_t)nn * g->k + k0) * pq + j0;
                        const float *bias = ep->bias ? ep->bias + k0 : NULL,
                                    *resid = ep->resid ? ep->resid + off : NULL;
                        const bool pre = bias || resid;
                        if (pre) c_init(y + off, (size_t)pq, krows, cols, bias, true, resid);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, krows, cols, crs, 1.0f, wp + k0 * crs,
                                    crs, B, ldb, pre ? 1.0f : 0.0f, y + off, pq);
                        act_block(y + off, (size_t)pq, krows, cols, ep->act);
                    }
                }
    }
}

static bool im2col_applies(const fc_conv_geom *g)
{
    (void)g;
    return true;
}

static void im2col_conv(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep,
                        float *ws)
{
    if (g->nhwc) conv_nhwc(g, x, wp, y, ep, ws, im2col_workspace(g));
    else
        conv_nchw(g, x, wp, y, ep, ws, im2col_workspace(g));
}

/* ---- the kernels, in the order they are asked: the first that applies runs */

typedef struct conv_kernel {
    bool (*applies)(const fc_conv_geom *g);
    size_t (*workspace)(const fc_conv_geom *g, int nthreads);
    void (*pack)(const fc_conv_geom *g, const float *w_kcrs, float *packed);
    void (*run)(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep, float *ws);
} conv_kernel;

static const conv_kernel conv_kernels[] = {
    {fc_cpu_conv_is_depthwise, fc_cpu_dwconv_workspace, fc_cpu_dwconv_pack_weights, fc_cpu_dwconv},
    {fc_cpu_dconv_applies, fc_cpu_dconv_workspace, fc_cpu_dconv_pack_weights, fc_cpu_dconv},
    {im2col_applies, im2col_team_workspace, im2col_pack_weights, im2col_conv},
};

static const conv_kernel *kernel_of(const fc_conv_geom *g)
{
    const conv_kernel *k = conv_kernels;
    while (!k->applies(g)) k++; /* the last applies to every convolution */
    return k;
}

size_t fc_cpu_conv_workspace(const fc_conv_geom *g, int nthreads) { return kernel_of(g)->workspace(g, nthreads); }

void fc_cpu_conv_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    kernel_of(g)->pack(g, w, packed);
}

void fc_cpu_conv(const fc_conv_geom *g, const float *x, const float *wp, float *y, const fc_epilogue *ep, float *ws,
                 int nthreads)
{
    (void)nthreads;
    kernel_of(g)->run(g, x, wp, y, ep, ws);
}
