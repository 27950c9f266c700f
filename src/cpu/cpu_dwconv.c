/* cpu_dwconv.c — the direct depthwise convolution (g = c = k) of cpu.openblas, used
 * by both variants, so that a record's speedup is the fusion alone:
 *
 *   y[n,c,oy,ox] = act(Σ_{r,s} x[n,c,oy·stride−pad+r, ox·stride−pad+s]·W[c,r,s] + b[c] + r[n,c,oy,ox])
 *
 * Napkin math: 2·r·s FLOPs per output against one read of x and one write of y, so
 * it is memory-bound at any size (MobileNetV2's 56²×144 layer: 8 MFLOP over 3.6 MB).
 *
 * NHWC vectorises over channels: each thread takes a row of output pixels and a chunk
 * of four vectors of channels, keeps four accumulators per pixel in registers across the
 * taps that land inside the input, and applies bias, residual and ReLU before the one
 * store. NCHW vectorises along an output row of one channel plane: the row is made
 * in place (bias, then each tap over the outputs whose input column is inside), then
 * finished by the epilogue while in L1.
 */
#include "cpu_ops.h"
#include "cpu_vec.h"

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
    for (int j = 0; j < nv; j++) {
        if (a->ep->resid) acc[j] += vload(a->ep->resid + o + VW * j);
        if (a->ep->act == FC_ACT_RELU) acc[j] = vmax(acc[j], vsplat(0.0f));
        vstore(a->y + o + VW * j, acc[j]);
    }
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

static void dwconv_nhwc(const dw_args *a)
{
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

/* One output row of channel plane (nn, c), NCHW. */
static void dw_row_nchw(const dw_args *a, int nn, int c, int oy)
{
    const fc_conv_geom *g = a->g;
    const int st = g->stride, Q = g->q;
    const size_t plane = (size_t)nn * g->c + (size_t)c;
    float *o = a->y + (plane * g->p + (size_t)oy) * Q;
    const float b = a->ep->bias ? a->ep->bias[c] : 0.0f;
    for (int ox = 0; ox < Q; ox++) o[ox] = b;
    int rlo, rhi;
    tap_range(oy, g->r, g->h, st, g->pad, &rlo, &rhi);
    for (int r = rlo; r < rhi; r++) {
        const float *xr = a->x + (plane * g->h + (size_t)(oy * st - g->pad + r)) * g->w;
        for (int s = 0; s < g->s; s++) {
            const float wv = a->w[((size_t)c * g->r + r) * g->s + s];
            /* outputs whose input column ox·st − pad + s lies in [0, w) */
            int from = g->pad - s, to = g->w - 1 + g->pad - s;
            int lo = from <= 0 ? 0 : (from + st - 1) / st, hi = to < 0 ? 0 : to / st + 1;
            if (hi > Q) hi = Q;
            const int shift = s - g->pad;
            if (st == 1) {
#pragma omp simd
                for (int ox = lo; ox < hi; ox++) o[ox] += wv * xr[ox + shift];
            } else {
#pragma omp simd
                for (int ox = lo; ox < hi; ox++) o[ox] += wv * xr[ox * st + shift];
            }
        }
    }
    const float *res = a->ep->resid ? a->ep->resid + (plane * g->p + (size_t)oy) * Q : NULL;
    if (res) {
#pragma omp simd
        for (int ox = 0; ox < Q; ox++) o[ox] += res[ox];
    }
    if (a->ep->act == FC_ACT_RELU) {
#pragma omp simd
        for (int ox = 0; ox < Q; ox++) o[ox] = o[ox] > 0.0f ? o[ox] : 0.0f;
    }
}

static void dwconv_nchw(const dw_args *a)
{
    const fc_conv_geom *g = a->g;
    const int nplanes = g->n * g->c;
#pragma omp parallel for collapse(2) schedule(static)
    for (int pl = 0; pl < nplanes; pl++)
        for (int oy = 0; oy < g->p; oy++) dw_row_nchw(a, pl / g->c, pl % g->c, oy);
}

void fc_cpu_dwconv(const fc_conv_geom *g, const float *x, const float *wpacked, float *y, const fc_epilogue *ep)
{
    dw_args a = {g, x, wpacked, y, ep};
    if (g->nhwc) dwconv_nhwc(&a);
    else
        dwconv_nchw(&a);
}
