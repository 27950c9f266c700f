/* norm_ops.c — see norm_ops.h. Each row is one OpenMP iteration (static schedule);
 * inside it, omp simd loops over the row, its sums on 16-float vectors (cpu_vec.h): a
 * sweep that reads memory, then sweeps over what the first left in L1/L2 (a row of
 * 8192 floats is 32 KiB). */
#include "norm_ops.h"
#include "cpu_vec.h"

#include <math.h>

/* Σ h and, about the mean, Σ (h − mean)²: the variance's second sweep reads the
 * cached row. */
static inline float row_sum(const float *h, size_t n)
{
    v16f a = vsplat(0.0f);
    size_t j = 0;
    for (; j + 16 <= n; j += 16) a += vload(h + j);
    float s = vhsum(a);
    for (; j < n; j++) s += h[j];
    return s;
}

/* two accumulators, a tree at the end (cpu_vec.h's vhsum: `omp simd reduction` ended
 * each row with a chain of scalar adds, most of a short row's time) */
static inline float row_sq_dev(const float *h, float mean, size_t n)
{
    const v16f vm = vsplat(mean);
    v16f a = vsplat(0.0f), b = vsplat(0.0f);
    size_t j = 0;
    for (; j + 32 <= n; j += 32) {
        v16f x = vload(h + j) - vm, y = vload(h + j + 16) - vm;
        a += x * x;
        b += y * y;
    }
    for (; j + 16 <= n; j += 16) {
        v16f x = vload(h + j) - vm;
        a += x * x;
    }
    float s = vhsum(a + b);
    for (; j < n; j++) s += (h[j] - mean) * (h[j] - mean);
    return s;
}

static inline void row_layernorm(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t n)
{
    float mean = row_sum(h, n) / (float)n;
    float rstd = 1.0f / sqrtf(row_sq_dev(h, mean, n) / (float)n + eps);
#pragma omp simd
    for (size_t j = 0; j < n; j++) y[j] = (h[j] - mean) * rstd * gamma[j] + beta[j];
}

static inline void row_rmsnorm(const float *h, const float *gamma, float eps, float *y, size_t n)
{
    float rstd = 1.0f / sqrtf(row_sq_dev(h, 0.0f, n) / (float)n + eps);
#pragma omp simd
    for (size_t j = 0; j < n; j++) y[j] = h[j] * rstd * gamma[j];
}

/* rotate-half of one head a into y, cos and sin of its position */
static inline void head_rope(const float *a, const float *cs, float *y, size_t d)
{
    size_t half = d / 2;
    const float *c = cs, *s = cs + half;
#pragma omp simd
    for (size_t i = 0; i < half; i++) {
        float lo = a[i], hi = a[i + half];
        y[i] = lo * c[i] - hi * s[i];
        y[i + half] = hi * c[i] + lo * s[i];
    }
}

void fc_cpu_layernorm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows,
                           size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) row_layernorm(h + i * n, gamma, beta, eps, y + i * n, n);
}

void fc_cpu_rmsnorm_rows(const float *h, const float *gamma, float eps, float *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) row_rmsnorm(h + i * n, gamma, eps, y + i * n, n);
}

void fc_cpu_rope(const float *q, const float *cs, float *y, size_t m, size_t heads, size_t d)
{
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) head_rope(q + t * d, cs + t / heads * d, y + t * d, d);
}

void fc_cpu_add_layernorm(const float *x, const float *r, const float *gamma, const float *beta, float eps, float *y,
                          size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * n, *ri = r + i * n;
        float *yi = y + i * n;
#pragma omp simd
        for (size_t j = 0; j < n; j++) yi[j] = xi[j] + ri[j];
        float mean = row_sum(yi, n) / (float)n;
        float rstd = 1.0f / sqrtf(row_sq_dev(yi, mean, n) / (float)n + eps);
#pragma omp simd
        for (size_t j = 0; j < n; j++) yi[j] = (yi[j] - mean) * rstd * gamma[j] + beta[j];
    }
}

void fc_cpu_add_rmsnorm(const float *x, const float *r, const float *gamma, float eps, float *y, float *h, size_t rows,
                        size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * n, *ri = r + i * n;
        float *hi = h + i * n, *yi = y + i * n;
#pragma omp simd
        for (size_t j = 0; j < n; j++) hi[j] = xi[j] + ri[j];
        float rstd = 1.0f / sqrtf(row_sq_dev(hi, 0.0f, n) / (float)n + eps);
#pragma omp simd
        for (size_t j = 0; j < n; j++) yi[j] = hi[j] * rstd * gamma[j];
    }
}

void fc_cpu_rmsnorm_rope(const float *q, const float *gamma, const float *cs, float eps, float *y, size_t m,
                         size_t heads, size_t d)
{
    size_t half = d / 2;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < m * heads; t++) {
        const float *a = q + t * d, *c = cs + t / heads * d, *s = c + half;
        float *o = y + t * d;
        float rstd = 1.0f / sqrtf(row_sq_dev(a, 0.0f, d) / (float)d + eps);
#pragma omp simd
        for (size_t i = 0; i < half; i++) {
            float lo = a[i] * rstd * gamma[i], hi = a[i + half] * rstd * gamma[i + half];
            o[i] = lo * c[i] - hi * s[i];
            o[i + half] = hi * c[i] + lo * s[i];
        }
    }
}
