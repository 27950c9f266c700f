/* norm_ops_bf16.c — the norm family's host kernels on bf16 tensors (norm_ops.h has
 * the fp32 ones and what each computes): x, r, h, q and y in bf16, gamma, beta and
 * the rotary table in fp32, sums and the normalization in fp32, each result rounded
 * once when stored. The fused forms keep x + r in fp32 for the statistics, reading
 * the row's inputs again from cache rather than a rounded copy; add_rmsnorm
 * normalizes the h it stores (the residual the next layer reads), as the unfused
 * chain does. */
#include "cpu_bf16.h"
#include "cpu_ops.h"
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

static inline float row_sq(const fc_bf16 *h, size_t n)
{
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (size_t j = 0; j < n; j++) s += fc_bf16_load(h[j]) * fc_bf16_load(h[j]);
    return s;
}

void fc_cpu_rmsnorm_rows_bf16(const fc_bf16 *h, const float *gamma, float eps, fc_bf16 *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const fc_bf16 *hi = h + i * n;
        fc_bf16 *yi = y + i * n;
        float rstd = 1.0f / sqrtf(row_sq(hi, n) / (float)n + eps);
#pragma omp simd
        for (size_t j = 0; j < n; j++) yi[j] = fc_bf16_store(fc_bf16_load(hi[j]) * rstd * gamma[j]);
    }
}

void fc_cpu_rope_bf16(const fc_bf16 *q, const float *cs, fc_bf16 *y, size_t m, size_t heads, size_t d)
{
    size_t half = d / 2;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) {
        const fc_bf16 *a = q + t * d;
        const float *c = cs + t / heads * d, *s = c + half;
        fc_bf16 *o = y + t * d;
#pragma omp simd
        for (size_t i = 0; i < half; i++) {
            float lo = fc_bf16_load(a[i]), hi = fc_bf16_load(a[i + half]);
            o[i] = fc_bf16_store(lo * c[i] - hi * s[i]);
            o[i + half] = fc_bf16_store(hi * c[i] + lo * s[i]);
        }
    }
}

void fc_cpu_add_layernorm_bf16(const fc_bf16 *x, const fc_bf16 *r, const float *gamma, const float *beta, float eps,
                               fc_bf16 *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const fc_bf16 *xi = x + i * n, *ri = r + i * n;
        fc_bf16 *yi = y + i * n;
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (size_t j = 0; j < n; j++) s += fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]);
        float mean = s / (float)n, q = 0;
#pragma omp simd reduction(+ : q)
        for (size_t j = 0; j < n; j++) {
            float dv = fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]) - mean;
            q += dv * dv;
        }
        float rstd = 1.0f / sqrtf(q / (float)n + eps);
#pragma omp simd
        for (size_t j = 0; j < n; j++)
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
        float s = 0;
#pragma omp simd reduction(+ : s)
        for (size_t j = 0; j < n; j++) {
            fc_bf16 hv = fc_bf16_store(fc_bf16_load(xi[j]) + fc_bf16_load(ri[j]));
            hi[j] = hv;
            s += fc_bf16_load(hv) * fc_bf16_load(hv);
        }
        float rstd = 1.0f / sqrtf(s / (float)n + eps);
#pragma omp simd
        for (size_t j = 0; j < n; j++) yi[j] = fc_bf16_store(fc_bf16_load(hi[j]) * rstd * gamma[j]);
    }
}

void fc_cpu_rmsnorm_rope_bf16(const fc_bf16 *q, const float *gamma, const float *cs, float eps, fc_bf16 *y, size_t m,
                              size_t heads, size_t d)
{
    size_t half = d / 2;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) {
        const fc_bf16 *a = q + t * d;
        const float *c = cs + t / heads * d, *s = c + half;
        fc_bf16 *o = y + t * d;
        float rstd = 1.0f / sqrtf(row_sq(a, d) / (float)d + eps);
#pragma omp simd
        for (size_t i = 0; i < half; i++) {
            float lo = fc_bf16_load(a[i]) * rstd * gamma[i], hi = fc_bf16_load(a[i + half]) * rstd * gamma[i + half];
            o[i] = fc_bf16_store(lo * c[i] - hi * s[i]);
            o[i + half] = fc_bf16_store(hi * c[i] + lo * s[i]);
        }
    }
}
