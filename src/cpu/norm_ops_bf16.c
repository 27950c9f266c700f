/* norm_ops_bf16.c — the norm family's host kernels on bf16 tensors (norm_ops.h has
 * the fp32 ones and what each computes): x, r, h, q and y in bf16, gamma, beta and
 * the rotary table in fp32, sums and the normalization in fp32, each result rounded
 * once when stored. The fused forms keep x + r in fp32 for the statistics, reading
 * the row's inputs again from cache rather than a rounded copy; add_rmsnorm
 * normalizes the h it stores (the residual the next layer reads), as the unfused
 * chain does. */
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

/* Σ h² over a row: two vector accumulators, a tree at the end (cpu_vec.h) */
static inline float row_sq(const fc_bf16 *h, size_t n)
{
    v16f a = vsplat(0.0f), b = vsplat(0.0f);
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        v16f x = vload_bf16(h + j), y = vload_bf16(h + j + 16);
        a += x * x;
        b += y * y;
    }
    for (; j + 16 <= n; j += 16) {
        v16f x = vload_bf16(h + j);
        a += x * x;
    }
    float s = vhsum(a + b);
    for (; j < n; j++) s += fc_bf16_load(h[j]) * fc_bf16_load(h[j]);
    return s;
}

/* y = h·rstd·gamma over a row, rounded to bf16 */
static inline void scale_row(const fc_bf16 *h, const float *gamma, float rstd, fc_bf16 *y, size_t n)
{
    size_t j = 0;
    for (const v16f vr = vsplat(rstd); j + 16 <= n; j += 16)
        vstore_bf16(y + j, vload_bf16(h + j) * vr * vload(gamma + j));
    for (; j < n; j++) y[j] = fc_bf16_store(fc_bf16_load(h[j]) * rstd * gamma[j]);
}

void fc_cpu_rmsnorm_rows_bf16(const fc_bf16 *h, const float *gamma, float eps, fc_bf16 *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const fc_bf16 *hi = h + i * n;
        fc_bf16 *yi = y + i * n;
        float rstd = 1.0f / sqrtf(row_sq(hi, n) / (float)n + eps);
        scale_row(hi, gamma, rstd, yi, n);
    }
}

/* The rotate-half rotary embedding of one head a of 2·half into o, cos c and sin s of
 * its position; with gamma, the head is first normalized: each element times
 * rstd·gamma[i]. */
static inline void rope_head(const fc_bf16 *a, const float *gamma, float rstd, const float *c, const float *s,
                             fc_bf16 *o, size_t half)
{
    size_t i = 0;
    for (const v16f vr = vsplat(rstd); i + 16 <= half; i += 16) {
        v16f lo = vload_bf16(a + i), hi = vload_bf16(a + i + half), vc = vload(c + i), vs = vload(s + i);
        if (gamma) {
            lo = lo * vr * vload(gamma + i);
            hi = hi * vr * vload(gamma + i + half);
        }
        vstore_bf16(o + i, lo * vc - hi * vs);
        vstore_bf16(o + i + half, hi * vc + lo * vs);
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

void fc_cpu_rope_bf16(const fc_bf16 *q, const float *cs, fc_bf16 *y, size_t m, size_t heads, size_t d)
{
    size_t half = d / 2;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) {
        const float *c = cs + t / heads * d;
        rope_head(q + t * d, NULL, 1.0f, c, c + half, y + t * d, half);
    }
}

void fc_cpu_add_layernorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, const float *beta, float eps,
                               fc_bf16 *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const fc_bf16 *xi = x + i * n, *ri = r + i * n;
        fc_bf16 *yi = y + i * n;
        v16f acc = vsplat(0.0f);
        size_t j = 0;
        for (; j + 16 <= n; j += 16) acc += vload_bf16(xi + j) + vload_bf16(ri + j);
        float s = vhsum(acc);
        for (size_t k = j; k < n; k++) s += fc_bf16_load(xi[k]) + fc_bf16_load(ri[k]);
        const float mean = s / (float)n;
        const v16f vm = vsplat(mean);
        acc = vsplat(0.0f);
        for (j = 0; j + 16 <= n; j += 16) {
            v16f dv = vload_bf16(xi + j) + vload_bf16(ri + j) - vm;
            acc += dv * dv;
        }
        float q = vhsum(acc);
        for (size_t k = j; k < n; k++) {
            float dv = fc_bf16_load(xi[k]) + fc_bf16_load(ri[k]) - mean;
            q += dv * dv;
        }
        const float rstd = 1.0f / sqrtf(q / (float)n + eps);
        const v16f vr = vsplat(rstd);
        for (j = 0; j + 16 <= n; j += 16)
            vstore_bf16(yi + j,
                        (vload_bf16(xi + j) + vload_bf16(ri + j) - vm) * vr * vload(gamma + j) + vload(beta + j));
        for (; j < n; j++)
            yi[j] = fc_bf16_store((fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]) - mean) * rstd * gamma[j] + beta[j]);
    }
}

void fc_cpu_add_rmsnorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, float eps, fc_bf16 *y, fc_bf16 *h,
                             size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const fc_bf16 *xi = x + i * n, *ri = r + i * n;
        fc_bf16 *hi = h + i * n, *yi = y + i * n;
        v16f acc = vsplat(0.0f);
        size_t j = 0;
        for (; j + 16 <= n; j += 16) {
            vstore_bf16(hi + j, vload_bf16(xi + j) + vload_bf16(ri + j));
            const v16f hv = vload_bf16(hi + j); /* the rounded h, as the next layer reads it */
            acc += hv * hv;
        }
        float s = vhsum(acc);
        for (; j < n; j++) {
            fc_bf16 hv = fc_bf16_store(fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]));
            hi[j] = hv;
            s += fc_bf16_load(hv) * fc_bf16_load(hv);
        }
        scale_row(hi, gamma, 1.0f / sqrtf(s / (float)n + eps), yi, n);
    }
}

void fc_cpu_rmsnorm_rope_bf16(const fc_bf16 *q, const float *gamma, const float *cs, float eps, fc_bf16 *y, size_t m,
                              size_t heads, size_t d)
{
    size_t half = d / 2;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) {
        const fc_bf16 *a = q + t * d;
        const float *c = cs + t / heads * d;
        rope_head(a, gamma, 1.0f / sqrtf(row_sq(a, d) / (float)d + eps), c, c + half, y + t * d, half);
    }
}
