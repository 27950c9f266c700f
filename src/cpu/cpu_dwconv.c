/* cpu_dwconv.c — the direct depthwise convolution (g = c = k) of cpu.openblas, used
 * by both variants, so that a record's speedup is the fusion alone:
 *
 *   y[n,c,oy,ox] = act(Σ_{r,s} x[n,c,oy·stride−pad+r, ox·stride−pad+s]·W[c,r,s] + b[c] + r[n,c,oy,ox])
 *
 * Napkin math: 2·r·s FLOPs per output against one read of x and one write of y, so
 * it is memory-bound at any size (MobileNetV2's 56²×144 layer: 8 MFLOP over 3.6 MB).
 *
 * NHWC vectorises over channels. A 3×3 filter at stride 1 or 2 (every depthwise
 * layer of MobileNetV2) goes a row of output pixels at a time, one vector of channels
 * after another with its nine weight vectors held in registers, four interior pixels
 * at once (dwconv_nhwc3). Against each pixel's taps with the weights loaded every time
 * (work items of a row and four vectors of channels), on the AMD EPYC VM (AVX2, two
 * threads, alternated, three rounds; results/cpu-amd-epyc-f25m17-2c-avx2/
 * ab-dwconv-rows.txt) the fused time went 0.33-0.35 -> 0.17 ms at 56²×144, 7.2-7.6
 * -> 2.6 ms at batch 8 and 0.22 -> 0.15 ms at 112²×96 stride 2; 7²×960, mostly edge
 * pixels, was unchanged. Six pixels at once were within a few per cent of four, eight
 * slower (a run each). Other filters take a row of pixels and a chunk of four vectors
 * of channels, with four accumulators per pixel across the taps that land inside the
 * input. Both apply bias, residual and ReLU before the one store (dw_store).
 *
 * NCHW vectorises along an output row of one channel plane, from padded copies of the
 * input rows it reads (dwconv_nchw's comment).
 */
#include "cpu_ops.h"
#include "cpu_vec.h"

#include <omp.h>
#include <string.h>

#define DW_CHUNK (4 * VW) /* channels per NHWC work item: four vectors */

void fc_cpu_dwconv_pack_weights(const fc_conv_geom *g, const float *w, float *packed)
{
    size_t rs = (size_t)g->r * g->s;
    if (!g->nhwc) {
        memcpy(packed, w, (size_t)g->c * rs * sizeof(float));
        return;
    }
    for (int c = 0; c < g->c; c++)
        for (size_t t = 0; t < rs; t++) packed[t * g->c + c] = w[c * rs + t];
}

/* Filter taps [lo, hi) along one axis that land inside an input of size `in` for
 * output position o. */
static inline void tap_range(int o, int f, int in, int stride, int pad, int *lo, int *hi)
{
    int first = o * stride - pad;
    *lo = first < 0 ? -first : 0;
    *hi = in - first < f ? in - first : f;
}

typedef struct dw_args {
    const fc_conv_geom *g;
    const float *x, *w; /* w: [r][s][c] */
    float *y;
    const fc_epilogue *ep;
} dw_args;

/* The epilogue of a vector of outputs at o: the residual at res (NULL: none), ReLU,
 * the one store. */
static inline __attribute__((always_inline)) void dw_store(const dw_args *a, vf v, float *o, const float *res)
{
    if (res) v += vload(res);
    if (a->ep->act == FC_ACT_RELU) v = vmax(v, vsplat(0.0f));
    vstore(o, v);
}

/* Channels [c0, c0 + VW·nv) of output pixel (nn, oy, ox), NHWC; nv is 1 or 4 at each
 * call, so the loops over it unroll and the accumulators stay in registers. */
static inline __attribute__((always_inline)) void dw_pixel_vec(const dw_args *a, int nn, int oy, int ox, int c0, int nv)
{
    const fc_conv_geom *g = a->g;
    const size_t C = (size_t)g->c;
    vf acc[4];
    for (int j = 0; j < nv; j++) acc[j] = a->ep->bias ? vload(a->ep->bias + c0 + VW * j) : vsplat(0.0f);
    int rlo, rhi, slo, shi;
    tap_range(oy, g->r, g->h, g->stride, g->pad, &rlo, &rhi);
    tap_range(ox, g->s, g->w, g->stride, g->pad, &slo, &shi);
    for (int r = rlo; r < rhi; r++) {
        const float *xr = a->x + ((size_t)nn * g->h + (size_t)(oy * g->stride - g->pad + r)) * g->w * C + c0;
        const float *wr = a->w + (size_t)r * g->s * C + c0;
        for (int s = slo; s < shi; s++) {
            const float *xs = xr + (size_t)(ox * g->stride - g->pad + s) * C, *ws = wr + (size_t)s * C;
            for (int j = 0; j < nv; j++) acc[j] += vload(xs + VW * j) * vload(ws + VW * j);
        }
    }
    size_t o = (((size_t)nn * g->p + oy) * g->q + ox) * C + c0;
    for (int j = 0; j < nv; j++)
        dw_store(a, acc[j], a->y + o + VW * j, a->ep->resid ? a->ep->resid + o + VW * j : NULL);
}

/* The same for one channel (the tail of a chunk that is not a multiple of VW). */
static void dw_pixel_one(const dw_args *a, int nn, int oy, int ox, int c)
{
    const fc_conv_geom *g = a->g;
    const size_t C = (size_t)g->c;
    float acc = a->ep->bias ? a->ep->bias[c] : 0.0f;
    int rlo, rhi, slo, shi;
    tap_range(oy, g->r, g->h, g->stride, g->pad, &rlo, &rhi);
    tap_range(ox, g->s, g->w, g->stride, g->pad, &slo, &shi);
    for (int r = rlo; r < rhi; r++)
        for (int s = slo; s < shi; s++) {
            size_t xi = (((size_t)nn * g->h + (size_t)(oy * g->stride - g->pad + r)) * g->w +
                         (size_t)(ox * g->stride - g->pad + s)) *
                            C +
                        (size_t)c;
            acc += a->x[xi] * a->w[((size_t)r * g->s + s) * C + c];
        }
    size_t o = (((size_t)nn * g->p + oy) * g->q + ox) * C + c;
    if (a->ep->resid) acc += a->ep->resid[o];
    if (a->ep->act == FC_ACT_RELU) acc = acc > 0.0f ? acc : 0.0f;
    a->y[o] = acc;
}

/* 3×3 NHWC: output row (nn, oy), channels [c0, c1) (c0 a multiple of VW). For each
 * vector of channels the nine weight vectors stay in registers and the row's
 * interior pixels (every tap inside the input) go DW_OXB at a time, one load and one
 * FMA a tap and pixel; the columns at the edges and the channels past the last whole
 * vector go through dw_pixel_vec and dw_pixel_one. A row outside the input (the top
 * and bottom rows' padding) is skipped, not read as zeros. */
#define DW_OXB 4
static inline __attribute__((always_inline)) void dw_row_part(const dw_args *a, const float *const rows[3],
                                                              const vf w[9], vf bias, float *o, const float *res,
                                                              int ox, const int nb, const int st)
{
    const size_t C = (size_t)a->g->c;
    vf acc[DW_OXB];
    for (int j = 0; j < nb; j++) acc[j] = bias;
    for (int r = 0; r < 3; r++) {
        if (!rows[r]) continue;
        const float *xr = rows[r] + (size_t)(ox * st - a->g->pad) * C;
        for (int s = 0; s < 3; s++)
            for (int j = 0; j < nb; j++) acc[j] += vload(xr + (size_t)(j * st + s) * C) * w[r * 3 + s];
    }
    for (int j = 0; j < nb; j++) dw_store(a, acc[j], o + (size_t)(ox + j) * C, res ? res + (size_t)(ox + j) * C : NULL);
}

static inline __attribute__((always_inline)) void dw_row3(const dw_args *a, int nn, int oy, int c0, int c1,
                                                          const int st)
{
    const fc_conv_geom *g = a->g;
    const size_t C = (size_t)g->c;
    int rlo, rhi;
    tap_range(oy, 3, g->h, st, g->pad, &rlo, &rhi);
    /* interior columns: ox·st − pad ≥ 0 and ox·st − pad + 2 ≤ w − 1 */
    int oxlo = (g->pad + st - 1) / st, oxhi = g->w - 3 + g->pad < 0 ? 0 : (g->w - 3 + g->pad) / st + 1;
    if (oxhi > g->q) oxhi = g->q;
    if (oxlo > oxhi) oxlo = oxhi;
    const float *row[3]; /* the input rows of the taps; NULL: padding */
    for (int r = 0; r < 3; r++)
        row[r] = r >= rlo && r < rhi ? a->x + ((size_t)nn * g->h + (size_t)(oy * st - g->pad + r)) * g->w * C : NULL;
    const size_t at = ((size_t)nn * g->p + oy) * g->q * C;
    int c = c0;
    for (; c + VW <= c1; c += VW) {
        const float *rows[3] = {row[0] ? row[0] + c : NULL, row[1] ? row[1] + c : NULL, row[2] ? row[2] + c : NULL};
        vf w[9];
        for (int t = 0; t < 9; t++) w[t] = vload(a->w + (size_t)t * C + c);
        const vf bias = a->ep->bias ? vload(a->ep->bias + c) : vsplat(0.0f);
        float *o = a->y + at + c;
        const float *res = a->ep->resid ? a->ep->resid + at + c : NULL;
        for (int ox = 0; ox < oxlo; ox++) dw_pixel_vec(a, nn, oy, ox, c, 1);
        int ox = oxlo;
        for (; ox + DW_OXB <= oxhi; ox += DW_OXB) dw_row_part(a, rows, w, bias, o, res, ox, DW_OXB, st);
        for (; ox < oxhi; ox++) dw_row_part(a, rows, w, bias, o, res, ox, 1, st);
        for (ox = oxhi; ox < g->q; ox++) dw_pixel_vec(a, nn, oy, ox, c, 1);
    }
    for (; c < c1; c++)
        for (int ox = 0; ox < g->q; ox++) dw_pixel_one(a, nn, oy, ox, c);
}

/* 3×3 at stride 1 or 2: a work item is an output row's channels [c0, c1); a row whole
 * (its three input rows read front to back) unless there are too few rows to give
 * each thread eight items. */
static bool dwconv_nhwc3(const dw_args *a)
{
    const fc_conv_geom *g = a->g;
    if (g->r != 3 || g->s != 3 || (g->stride != 1 && g->stride != 2)) return false;
    const int nrows = g->n * g->p, nt = omp_get_max_threads(), nvec = (g->c + VW - 1) / VW;
    int parts = nrows >= 8 * nt ? 1 : (8 * nt + nrows - 1) / nrows;
    if (parts > nvec) parts = nvec;
    const int per = (nvec + parts - 1) / parts * VW; /* channels a part */
    parts = (g->c + per - 1) / per;
#pragma omp parallel for schedule(static)
    for (int item = 0; item < nrows * parts; item++) {
        int row = item / parts, c0 = item % parts * per, c1 = c0 + per < g->c ? c0 + per : g->c;
        if (g->stride == 1) dw_row3(a, row / g->p, row % g->p, c0, c1, 1);
        else
            dw_row3(a, row / g->p, row % g->p, c0, c1, 2);
    }
    return true;
}

static void dwconv_nhwc(const dw_args *a)
{
    if (dwconv_nhwc3(a)) return;
    const fc_conv_geom *g = a->g;
    const int nrows = g->n * g->p, nchunks = (g->c + DW_CHUNK - 1) / DW_CHUNK;
#pragma omp parallel for collapse(2) schedule(static)
    for (int row = 0; row < nrows; row++)
        for (int ch = 0; ch < nchunks; ch++) {
            int nn = row / g->p, oy = row % g->p, c0 = ch * DW_CHUNK;
            int cend = g->c - c0 < DW_CHUNK ? g->c : c0 + DW_CHUNK;
            for (int ox = 0; ox < g->q; ox++) {
                int c = c0;
                if (cend - c == DW_CHUNK) {
                    dw_pixel_vec(a, nn, oy, ox, c, 4);
                    c += DW_CHUNK;
                }
                for (; c + VW <= cend; c += VW) dw_pixel_vec(a, nn, oy, ox, c, 1);
                for (; c < cend; c++) dw_pixel_one(a, nn, oy, ox, c);
            }
        }
}

/* NCHW: a thread's work item is a band of output rows of one channel plane. Each
 * input row the band reads is copied once, zero-padded and split into `stride`
 * phases (phase k holds the padded row's columns k, k + stride, ...), into a ring of
 * r row buffers; tap s of output column ox is then element ox + s / stride of phase
 * s % stride. So every tap is one unaligned vector load and one FMA per VW outputs,
 * the sum stays in a register across the taps, and bias, residual and ReLU are
 * applied before the one store (the row's last VW outputs are computed from Q − VW
 * when Q is not a multiple of VW: they overlap the vector before, and are stored
 * whole, not accumulated; a row of fewer is made in one vector and copied). On the
 * AMD EPYC VM (one harness alternating both, 200 runs each) MobileNetV2's depthwise
 * layers took 0.41-0.47 of the time of the row made in place with a pass per tap at
 * stride 1 and 0.58-0.74 at stride 2 (AVX-512; an AVX2 build 0.47-0.55 and 0.68-0.82).
 * The rings live in the workspace made at setup (fc_cpu_dwconv_workspace), nothing
 * is allocated while timing.
 */
typedef struct dw_ring {
    float *buf; /* r slots of stride phases of pl floats */
    int *row;   /* the input row each slot holds (-1: none) */
    int pl;     /* a phase's length: the outputs plus the taps' reach, rounded up */
} dw_ring;

/* Input row iy of plane `plane` into slot iy % r, split into phases, if not there. */
static float *dw_ring_row(const dw_args *a, dw_ring *rg, size_t plane, int iy)
{
    const fc_conv_geom *g = a->g;
    const int st = g->stride, slot = iy % g->r;
    float *dst = rg->buf + (size_t)slot * st * rg->pl;
    if (rg->row[slot] == iy) return dst;
    rg->row[slot] = iy;
    const float *src = a->x + (plane * g->h + (size_t)iy) * g->w;
    for (int k = 0; k < st; k++) {
        /* phase k's element i is column i·st + k − pad: inside [0, w) for i in [i0, i1) */
        float *ph = dst + (size_t)k * rg->pl;
        const int last = g->w - 1 + g->pad - k; /* i·st <= last: column i·st + k − pad <= w − 1 */
        int i0 = k >= g->pad ? 0 : (g->pad - k + st - 1) / st, i1 = last < 0 ? 0 : last / st + 1;
        if (i1 > rg->pl) i1 = rg->pl;
        if (i1 < i0) i1 = i0;
        int i = 0;
        for (; i < i0; i++) ph[i] = 0.0f;
        const float *sk = src + (k - g->pad);
        if (st == 1) {
            memcpy(ph + i0, sk + i0, (size_t)(i1 - i0) * sizeof(float));
            i = i1;
        } else if (st == 2) { /* the even elements of 2·VW at a time */
            vi evens;
            for (int l = 0; l < VW; l++) evens[l] = 2 * l;
            for (; i + VW <= i1 && 2 * (i + VW) + k - g->pad <= g->w; i += VW)
                vstore(ph + i, __builtin_shuffle(vload(sk + 2 * (size_t)i), vload(sk + 2 * (size_t)i + VW), evens));
        }
        for (; i < i1; i++) ph[i] = sk[(size_t)i * st];
        for (; i < rg->pl; i++) ph[i] = 0.0f;
    }
    return dst;
}

/* Outputs [ox, ox + VW) of one row from the rows' phases rows[r] (NULL: a row of
 * padding) and weights wc[r·S + s]; R, S and st are constants where it is inlined. */
static inline __attribute__((always_inline)) vf dw_vec(const float *const *rows, const float *wc, int pl, int ox,
                                                       float bias, const int R, const int S, const int st)
{
    vf acc = vsplat(bias);
    for (int r = 0; r < R; r++) {
        if (!rows[r]) continue;
        for (int s = 0; s < S; s++) acc += vload(rows[r] + (size_t)(s % st) * pl + ox + s / st) * vsplat(wc[r * S + s]);
    }
    return acc;
}

static inline __attribute__((always_inline)) void dw_row_vec(const dw_args *a, const float *const *rows,
                                                             const float *wc, int pl, float bias, float *o,
                                                             const float *res, const int R, const int S, const int st)
{
    const int Q = a->g->q;
    const bool relu = a->ep->act == FC_ACT_RELU;
    if (Q < VW) { /* one vector, through a row of VW */
        float t[VW] = {0};
        if (res) memcpy(t, res, (size_t)Q * sizeof(float));
        vf acc = dw_vec(rows, wc, pl, 0, bias, R, S, st) + vload(t);
        vstore(t, relu ? vmax(acc, vsplat(0.0f)) : acc);
        memcpy(o, t, (size_t)Q * sizeof(float));
        return;
    }
    for (int ox0 = 0; ox0 < Q; ox0 += VW) {
        int ox = ox0 + VW <= Q ? ox0 : Q - VW;
        vf acc = dw_vec(rows, wc, pl, ox, bias, R, S, st);
        if (res) acc += vload(res + ox);
        if (relu) acc = vmax(acc, vsplat(0.0f));
        vstore(o + ox, acc);
    }
}

static void dw_band_nchw(const dw_args *a, dw_ring *rg, const float **rows, int nn, int c, int oy0, int oy1)
{
    const fc_conv_geom *g = a->g;
    const size_t plane = (size_t)nn * g->c + (size_t)c;
    const float *wc = a->w + (size_t)c * g->r * g->s, bias = a->ep->bias ? a->ep->bias[c] : 0.0f;
    for (int r = 0; r < g->r; r++) rg->row[r] = -1;
    for (int oy = oy0; oy < oy1; oy++) {
        for (int r = 0; r < g->r; r++) {
            int iy = oy * g->stride - g->pad + r;
            rows[r] = iy >= 0 && iy < g->h ? dw_ring_row(a, rg, plane, iy) : NULL;
        }
        size_t at = (plane * g->p + (size_t)oy) * g->q;
        float *o = a->y + at;
        const float *res = a->ep->resid ? a->ep->resid + at : NULL;
        if (g->r == 3 && g->s == 3 && g->stride == 1) dw_row_vec(a, rows, wc, rg->pl, bias, o, res, 3, 3, 1);
        else if (g->r == 3 && g->s == 3 && g->stride == 2)
            dw_row_vec(a, rows, wc, rg->pl, bias, o, res, 3, 3, 2);
        else
            dw_row_vec(a, rows, wc, rg->pl, bias, o, res, g->r, g->s, g->stride);
    }
}

/* a phase holds the outputs (at least a vector's) and the taps' reach past them */
static int dw_phase_len(const fc_conv_geom *g)
{
    return ((g->q > VW ? g->q : VW) + (g->s - 1) / g->stride + VW - 1) / VW * VW;
}

/* each thread's ring (NCHW), on whole 4 KiB pages of its own: with the two threads'
 * rings 768 bytes apart (56², no line shared) the kernel took 1.7-1.9x the time it
 * takes with a page each */
static size_t dw_ring_floats(const fc_conv_geom *g)
{
    size_t n = (size_t)g->r * (size_t)g->stride * (size_t)dw_phase_len(g);
    return g->nhwc ? 0 : (n + 1023) / 1024 * 1024;
}

size_t fc_cpu_dwconv_workspace(const fc_conv_geom *g, int nthreads) { return dw_ring_floats(g) * (size_t)nthreads; }

static void dwconv_nchw(const dw_args *a, float *ws)
{
    const fc_conv_geom *g = a->g;
    const int nplanes = g->n * g->c, nt = omp_get_max_threads();
    /* bands: at least four work items a thread; each band re-reads r - stride rows */
    const int per_plane = nplanes >= 4 * nt ? 1 : (4 * nt + nplanes - 1) / nplanes;
    const int band = (g->p + per_plane - 1) / per_plane, nbands = (g->p + band - 1) / band;
    const size_t per = dw_ring_floats(g);
#pragma omp parallel
    {
        int row[g->r];
        const float *rows[g->r];
        dw_ring rg = {ws + (size_t)omp_get_thread_num() * per, row, dw_phase_len(g)};
#pragma omp for schedule(static)
        for (int item = 0; item < nplanes * nbands; item++) {
            int pln = item / nbands, oy0 = item % nbands * band;
            dw_band_nchw(a, &rg, rows, pln / g->c, pln % g->c, oy0, oy0 + band < g->p ? oy0 + band : g->p);
        }
    }
}

void fc_cpu_dwconv(const fc_conv_geom *g, const float *x, const float *wpacked, float *y, const fc_epilogue *ep,
                   float *ws)
{
    dw_args a = {g, x, wpacked, y, ep};
    if (g->nhwc) dwconv_nhwc(&a);
    else
        dwconv_nchw(&a, ws);
}
