/* norm_ops_bf16.c — the norm family's host kernels on bf16 tensors (norm_ops.h has
 * the fp32 ones and what each computes): x, r, h, q and y in bf16, gamma, beta and
 * the rotary table in fp32, sums and the normalization in fp32, each result rounded
 * once when stored. The fused add_layernorm keeps x + r in fp32 for the statistics
 * (a row of up to ROW_KEPT floats on the stack between the sweeps, past that read
 * again from cache); add_rmsnorm normalizes the h it stores (the residual the next layer
 * reads), as the unfused chain does.
 *
 * Every kernel stores 2·VW results at a time (vstore2_bf16: a cache line with AVX-512) and asks for
 * the lines of its streams 4 KB in advance (cpu_vec.h's vask), those it writes with
 * intent to write (and, where the rows come from memory, fc_norm_io's asks, a row's
 * lines in one burst before it is read): the hardware prefetchers stop at each 4 KB page, and a row of a bf16
 * norm is too little work to hide the misses. Past the LLC (Xeon, 2 cores, % of
 * the bandwidth ceiling) without the asks / reading ahead / reads and writes:
 * add_layernorm 52 / 81 / 86, add_rmsnorm 58 / 59 / 66, qk_norm_rope 50 / 64 / 69;
 * asking 8 KB ahead instead of 4: 2–4 points less. An output streams past the
 * caches where the fp32 kernels' does (fc_cpu_norm_streams) and its rows start on a
 * vector's bytes. */
#include "cpu_bf16.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "norm_ops.h"

#include <math.h>

void fc_cpu_bf16_to_float(const fc_bf16 *h, float *x, size_t n)
{
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) x[i] = fc_bf16_load(h[i]);
}

fc_bf16 *fc_cpu_bf16_copy(const float *x, size_t n)
{
    fc_bf16 *h = (fc_bf16 *)fc_cpu_buffer((n + 1) / 2);
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) h[i] = fc_bf16_store(x[i]);
    return h;
}

void fc_cpu_bf16_fill_nan(fc_bf16 *h, size_t n)
{
    for (size_t i = 0; i < n; i++) h[i] = 0x7fc0;
}

enum { ROW_KEPT = 4096 }; /* floats of a fused row kept between its sweeps (16 KB of stack) */

/* cpu_vec.h's asks ahead, j and left in elements */
static inline void ask(const fc_bf16 *p, size_t j, size_t left) { vask(p, j * sizeof *p, left * sizeof *p); }
static inline void ask_w(fc_bf16 *p, size_t j, size_t left) { vask_w(p, j * sizeof *p, left * sizeof *p); }
/* a row's asks in one burst (vask_row) where the rows come from memory (io.asks):
 * its n elements at src and, given, at dst, each stream left elements long */
static inline void ask_row(fc_norm_io io, const fc_bf16 *src, fc_bf16 *dst, size_t n, size_t left)
{
    if (io.asks) vask_row(src, dst, n * sizeof *src, left * sizeof *src);
}

/* Σ h² over a row: two vector accumulators, a tree at the end (cpu_vec.h) */
static inline float row_sq(const fc_bf16 *h, size_t n)
{
    vf a = vsplat(0.0f), b = vsplat(0.0f);
    size_t j = 0;
    for (; j + 2 * VW <= n; j += 2 * VW) {
        vf x = vload_bf16(h + j), y = vload_bf16(h + j + VW);
        a += x * x;
        b += y * y;
    }
    for (; j + VW <= n; j += VW) {
        vf x = vload_bf16(h + j);
        a += x * x;
    }
    float s = vhsum(a + b);
    for (; j < n; j++) s += fc_bf16_load(h[j]) * fc_bf16_load(h[j]);
    return s;
}

/* y = h·rstd·gamma over a row, rounded to bf16: streamed (st), or asking for y's
 * stream (left elements from y on) ahead */
static inline void scale_row(const fc_bf16 *h, const float *gamma, float rstd, fc_bf16 *y, size_t n, size_t left,
                             bool st)
{
    const vf vr = vsplat(rstd);
    size_t j = 0;
    if (st)
        for (const size_t k = vhead(y, sizeof *y, n); j < k; j++)
            y[j] = fc_bf16_store(fc_bf16_load(h[j]) * rstd * gamma[j]);
    for (; j + 2 * VW <= n; j += 2 * VW) {
        const vf a = vload_bf16(h + j) * vr * vload(gamma + j), b = vload_bf16(h + j + VW) * vr * vload(gamma + j + VW);
        if (st) vstream2_bf16(y + j, a, b);
        else {
            ask_w(y, j, left);
            vstore2_bf16(y + j, a, b);
        }
    }
    for (; j + VW <= n; j += VW) vstore_bf16(y + j, vload_bf16(h + j) * vr * vload(gamma + j));
    for (; j < n; j++) y[j] = fc_bf16_store(fc_bf16_load(h[j]) * rstd * gamma[j]);
}

void fc_cpu_rmsnorm_rows_bf16(const fc_bf16 *h, const float *gamma, float eps, fc_bf16 *y, size_t rows, size_t n,
                              fc_norm_io io)
{
    const bool st = io.st;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const fc_bf16 *hi = h + i * n;
            fc_bf16 *yi = y + i * n;
            const size_t left = (rows - i) * n;
            ask_row(io, hi, NULL, n, left);
            float rstd = 1.0f / sqrtf(row_sq(hi, n) / (float)n + eps);
            scale_row(hi, gamma, rstd, yi, n, left, st);
        }
        if (st) vfence();
    }
}

/* The rotate-half rotary embedding of one head a of 2·half into o, cos c and sin s of
 * its position; with gamma, the head is first normalized: each element times
 * rstd·gamma[i]. */
static inline void rope_vec(const fc_bf16 *a, const float *gamma, vf vr, const float *c, const float *s, size_t half,
                            size_t i, vf *lo, vf *hi)
{
    vf l = vload_bf16(a + i), h = vload_bf16(a + i + half), vc = vload(c + i), vs = vload(s + i);
    if (gamma) {
        l = l * vr * vload(gamma + i);
        h = h * vr * vload(gamma + i + half);
    }
    *lo = l * vc - h * vs;
    *hi = h * vc + l * vs;
}

static inline __attribute__((always_inline)) void rope_head(const fc_bf16 *a, const float *gamma, float rstd,
                                                            const float *c, const float *s, fc_bf16 *o, size_t half,
                                                            bool st)
{
    const vf vr = vsplat(rstd);
    size_t i = 0;
    for (; i + 2 * VW <= half; i += 2 * VW) {
        vf l0, h0, l1, h1;
        rope_vec(a, gamma, vr, c, s, half, i, &l0, &h0);
        rope_vec(a, gamma, vr, c, s, half, i + VW, &l1, &h1);
        if (st) {
            vstream2_bf16(o + i, l0, l1);
            vstream2_bf16(o + i + half, h0, h1);
        } else {
            vstore2_bf16(o + i, l0, l1);
            vstore2_bf16(o + i + half, h0, h1);
        }
    }
    for (; i + VW <= half; i += VW) {
        vf l0, h0;
        rope_vec(a, gamma, vr, c, s, half, i, &l0, &h0);
        vstore_bf16(o + i, l0);
        vstore_bf16(o + i + half, h0);
    }
    for (; i < half; i++) {
        float lo = fc_bf16_load(a[i]), hi = fc_bf16_load(a[i + half]);
        if (gamma) {
            lo = lo * rstd * gamma[i];
            hi = hi * rstd * gamma[i + half];
        }
        o[i] = fc_bf16_store(lo * c[i] - hi * s[i]);
        o[i + half] = fc_bf16_store(hi * c[i] + lo * s[i]);
    }
}

/* whether rows of n at y can be streamed 2·VW at a time: every row starts on a
 * vector's bytes (heads of d: rows of d/2, their halves) */
static bool rows_align(const fc_bf16 *y, size_t n) { return n % (2 * VW) == 0 && vhead(y, sizeof *y, 1) == 0; }

void fc_cpu_rope_bf16(const fc_bf16 *q, const float *cs, fc_bf16 *y, size_t m, size_t heads, size_t d, fc_norm_io io)
{
    const size_t half = d / 2, all = m * heads;
    const bool st = io.st && rows_align(y, half);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t t = 0; t < all; t++) {
            const float *c = cs + t / heads * d;
            ask_row(io, q + t * d, st ? NULL : y + t * d, d, (all - t) * d);
            rope_head(q + t * d, NULL, 1.0f, c, c + half, y + t * d, half, st);
        }
        if (st) vfence();
    }
}

/* h = x + r at j, j + VW of a fused row: from the row kept on the stack, or again
 * from x and r past it */
static inline void row_h(const fc_bf16 *x, const fc_bf16 *r, const float *kept, size_t nkept, size_t j, vf *h0, vf *h1)
{
    if (j < nkept) {
        *h0 = vload(kept + j);
        *h1 = vload(kept + j + VW);
    } else {
        *h0 = vload_bf16(x + j) + vload_bf16(r + j);
        *h1 = vload_bf16(x + j + VW) + vload_bf16(r + j + VW);
    }
}

/* The fused add + LayerNorm: x + r kept in fp32 while it is summed, the variance
 * about the mean from what was kept (a sweep in L1), then the normalization. (One
 * sweep of shifted sums, Σ(h−h₀) and Σ(h−h₀)², ran 4 % faster and can lose the
 * variance to cancellation when h₀ stands far from the row.) Each sweep sums into four
 * vectors, two per step taken in turn: with two, the chain of adds (of FMAs in the
 * variance) set the pace of a row of 768 (0.95 of the time with four, in a harness). */
void fc_cpu_add_layernorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, const float *beta, float eps,
                               fc_bf16 *y, size_t rows, size_t n, fc_norm_io io)
{
    const size_t nkept = n < ROW_KEPT ? n / (2 * VW) * (2 * VW) : ROW_KEPT;
    const bool st = io.st && rows_align(y, n);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const fc_bf16 *xi = x + i * n, *ri = r + i * n;
            fc_bf16 *yi = y + i * n;
            const size_t left = (rows - i) * n;
            float kept[ROW_KEPT] __attribute__((aligned(64)));
            vf a0 = vsplat(0.0f), a1 = vsplat(0.0f), a2 = vsplat(0.0f), a3 = vsplat(0.0f);
            size_t j = 0;
            for (; j + 2 * VW <= n; j += 2 * VW) {
                ask(xi, j, left);
                ask(ri, j, left);
                if (!st) ask_w(yi, j, left);
                const vf h0 = vload_bf16(xi + j) + vload_bf16(ri + j);
                const vf h1 = vload_bf16(xi + j + VW) + vload_bf16(ri + j + VW);
                if (j < nkept) {
                    vstore(kept + j, h0);
                    vstore(kept + j + VW, h1);
                }
                a0 += h0;
                a1 += h1;
                const vf t0 = a0, t1 = a1;
                a0 = a2, a1 = a3, a2 = t0, a3 = t1;
            }
            const size_t nv = j;
            float s = vhsum((a0 + a1) + (a2 + a3));
            for (; j < n; j++) s += fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]);
            const float mean = s / (float)n;
            const vf vm = vsplat(mean);
            a0 = a1 = a2 = a3 = vsplat(0.0f);
            for (j = 0; j < nv; j += 2 * VW) {
                vf h0, h1;
                row_h(xi, ri, kept, nkept, j, &h0, &h1);
                h0 -= vm;
                h1 -= vm;
                a0 += h0 * h0;
                a1 += h1 * h1;
                const vf t0 = a0, t1 = a1;
                a0 = a2, a1 = a3, a2 = t0, a3 = t1;
            }
            float q = vhsum((a0 + a1) + (a2 + a3));
            for (j = nv; j < n; j++) {
                const float d = fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]) - mean;
                q += d * d;
            }
            const float rstd = 1.0f / sqrtf(q / (float)n + eps);
            const vf vr = vsplat(rstd);
            for (j = 0; j < nv; j += 2 * VW) {
                vf h0, h1;
                row_h(xi, ri, kept, nkept, j, &h0, &h1);
                const vf y0 = (h0 - vm) * vr * vload(gamma + j) + vload(beta + j),
                         y1 = (h1 - vm) * vr * vload(gamma + j + VW) + vload(beta + j + VW);
                if (st) vstream2_bf16(yi + j, y0, y1);
                else
                    vstore2_bf16(yi + j, y0, y1);
            }
            for (j = nv; j < n; j++)
                yi[j] = fc_bf16_store((fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]) - mean) * rstd * gamma[j] + beta[j]);
        }
        if (st) vfence();
    }
}

/* h = x + r rounded to bf16 and its squares summed (as the next layer reads h), then
 * y from h read back from cache; only y is streamed (norm_ops.c's fp32 kernel says
 * why) */
void fc_cpu_add_rmsnorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, float eps, fc_bf16 *y, fc_bf16 *h,
                             size_t rows, size_t n, fc_norm_io io)
{
    const bool st = io.st;
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const fc_bf16 *xi = x + i * n, *ri = r + i * n;
            fc_bf16 *hi = h + i * n, *yi = y + i * n;
            const size_t left = (rows - i) * n;
            vf a = vsplat(0.0f), b = vsplat(0.0f);
            size_t j = 0;
            for (; j + 2 * VW <= n; j += 2 * VW) {
                ask(xi, j, left);
                ask(ri, j, left);
                ask_w(hi, j, left);
                vstore2_bf16(hi + j, vload_bf16(xi + j) + vload_bf16(ri + j),
                             vload_bf16(xi + j + VW) + vload_bf16(ri + j + VW));
                const vf h0 = vload_bf16(hi + j), h1 = vload_bf16(hi + j + VW); /* rounded, as the next layer reads h */
                a += h0 * h0;
                b += h1 * h1;
            }
            for (; j + VW <= n; j += VW) {
                vstore_bf16(hi + j, vload_bf16(xi + j) + vload_bf16(ri + j));
                const vf h0 = vload_bf16(hi + j);
                a += h0 * h0;
            }
            float s = vhsum(a + b);
            for (; j < n; j++) {
                fc_bf16 hv = fc_bf16_store(fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]));
                hi[j] = hv;
                s += fc_bf16_load(hv) * fc_bf16_load(hv);
            }
            scale_row(hi, gamma, 1.0f / sqrtf(s / (float)n + eps), yi, n, left, st);
        }
        if (st) vfence();
    }
}

/* The fused RMSNorm + rotary embedding, 16 heads at a time: their sums of squares
 * first, then the 16 scales (independent square roots and divisions, where one head
 * at a time waited on each), then the rotations. */
void fc_cpu_rmsnorm_rope_bf16(const fc_bf16 *q, const float *gamma, const float *cs, float eps, fc_bf16 *y, size_t m,
                              size_t heads, size_t d, fc_norm_io io)
{
    const size_t half = d / 2, all = m * heads;
    const bool st = io.st && rows_align(y, half);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t t0 = 0; t0 < all; t0 += 16) {
            const size_t g = all - t0 < 16 ? all - t0 : 16;
            float rs[16];
            for (size_t k = 0; k < g; k++) {
                const size_t t = t0 + k;
                ask_row(io, q + t * d, st ? NULL : y + t * d, d, (all - t) * d);
                rs[k] = row_sq(q + t * d, d);
            }
            for (size_t k = 0; k < g; k++) rs[k] = 1.0f / sqrtf(rs[k] / (float)d + eps);
            for (size_t k = 0; k < g; k++) {
                const size_t t = t0 + k;
                const float *c = cs + t / heads * d;
                rope_head(q + t * d, gamma, rs[k], c, c + half, y + t * d, half, st);
            }
        }
        if (st) vfence();
    }
}
