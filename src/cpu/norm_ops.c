/* norm_ops.c — see norm_ops.h. Each row is one OpenMP iteration (static schedule);
 * inside it, the ISA's float vectors (cpu_vec.h): a sweep that reads memory, then sweeps over
 * what the first left in L1/L2 (a row of 8192 floats is 32 KiB). Each kernel asks
 * for its streams' lines 4 KB ahead (cpu_vec.h's vask; past the LLC on the Xeon,
 * add_layernorm 70–72 → 78–81 % of the bandwidth, add_rmsnorm 53–59 → 65–66 %, in
 * the same runs). */
#include "norm_ops.h"
#include "cpu_vec.h"

#include <math.h>

/* Σ h and, about the mean, Σ (h − mean)²: the variance's second sweep reads the
 * cached row. */
static inline float row_sum(const float *h, size_t n)
{
    vf a = vsplat(0.0f);
    size_t j = 0;
    for (; j + VW <= n; j += VW) a += vload(h + j);
    float s = vhsum(a);
    for (; j < n; j++) s += h[j];
    return s;
}

/* two accumulators, a tree at the end (cpu_vec.h's vhsum: `omp simd reduction` ended
 * each row with a chain of scalar adds, most of a short row's time) */
static inline float row_sq_dev(const float *h, float mean, size_t n)
{
    const vf vm = vsplat(mean);
    vf a = vsplat(0.0f), b = vsplat(0.0f);
    size_t j = 0;
    for (; j + 2 * VW <= n; j += 2 * VW) {
        vf x = vload(h + j) - vm, y = vload(h + j + VW) - vm;
        a += x * x;
        b += y * y;
    }
    for (; j + VW <= n; j += VW) {
        vf x = vload(h + j) - vm;
        a += x * x;
    }
    float s = vhsum(a + b);
    for (; j < n; j++) s += (h[j] - mean) * (h[j] - mean);
    return s;
}

/* cpu_vec.h's asks ahead, j and left in elements */
static inline void ask(const float *p, size_t j, size_t left) { vask(p, j * sizeof *p, left * sizeof *p); }
static inline void ask_w(float *p, size_t j, size_t left) { vask_w(p, j * sizeof *p, left * sizeof *p); }

/* x + r at j into h, the three streams asked for ahead (left elements from j's row
 * on) */
static inline vf add_at(const float *x, const float *r, float *h, size_t j, size_t left)
{
    ask(x, j, left);
    ask(r, j, left);
    ask_w(h, j, left);
    const vf v = vload(x + j) + vload(r + j);
    vstore(h + j, v);
    return v;
}

/* The next row of a kernel whose last sweeps read only the cache: its streams' lines
 * are asked for during those sweeps, so that the memory stays busy while they run
 * (add_layernorm over rows of 768 on the AMD EPYC VM: 0.68-0.70 -> 0.81-0.83 of a
 * triad's rate, medians of 30 runs each, alternated). */
typedef struct next_row {
    const float *x, *r; /* read */
    float *y;           /* written */
} next_row;

/* y = (h − mean)·rstd·gamma + beta, or without a mean and beta h·rstd·gamma, over a
 * row, asking for y's stream (left elements from y on) ahead, and for next's lines
 * (when given) as it goes */
static inline void normalize_row(const float *h, float mean, float rstd, const float *gamma, const float *beta,
                                 float *y, size_t n, size_t left, const next_row *next)
{
    const vf vm = vsplat(mean), vr = vsplat(rstd);
    size_t j = 0;
    for (; j + VW <= n; j += VW) {
        ask_w(y, j, left);
        if (next) {
            __builtin_prefetch(next->x + j, 0, 3);
            __builtin_prefetch(next->r + j, 0, 3);
            __builtin_prefetch(next->y + j, 1, 3);
        }
        const vf t = (vload(h + j) - vm) * vr * vload(gamma + j);
        vstore(y + j, beta ? t + vload(beta + j) : t);
    }
    for (; j < n; j++) y[j] = (h[j] - mean) * rstd * gamma[j] + (beta ? beta[j] : 0.0f);
}

/* rotate-half of one head a into y, cos and sin of its position; with gamma, the
 * head is first normalized: each element times rstd·gamma[i] */
static inline void head_rope(const float *a, const float *gamma, float rstd, const float *cs, float *y, size_t d)
{
    const size_t half = d / 2;
    const float *c = cs, *s = cs + half;
    size_t i = 0;
    for (const vf vr = vsplat(rstd); i + VW <= half; i += VW) {
        vf lo = vload(a + i), hi = vload(a + i + half);
        if (gamma) {
            lo = lo * vr * vload(gamma + i);
            hi = hi * vr * vload(gamma + i + half);
        }
        vstore(y + i, lo * vload(c + i) - hi * vload(s + i));
        vstore(y + i + half, hi * vload(c + i) + lo * vload(s + i));
    }
    for (; i < half; i++) {
        float lo = a[i], hi = a[i + half];
        if (gamma) {
            lo = lo * rstd * gamma[i];
            hi = hi * rstd * gamma[i + half];
        }
        y[i] = lo * c[i] - hi * s[i];
        y[i + half] = hi * c[i] + lo * s[i];
    }
}

void fc_cpu_layernorm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows,
                           size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *hi = h + i * n;
        const size_t left = (rows - i) * n;
        vask_row(hi, NULL, n * sizeof *hi, left * sizeof *hi);
        const float mean = row_sum(hi, n) / (float)n;
        const float rstd = 1.0f / sqrtf(row_sq_dev(hi, mean, n) / (float)n + eps);
        normalize_row(hi, mean, rstd, gamma, beta, y + i * n, n, left, NULL);
    }
}

void fc_cpu_rmsnorm_rows(const float *h, const float *gamma, float eps, float *y, size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *hi = h + i * n;
        const size_t left = (rows - i) * n;
        vask_row(hi, NULL, n * sizeof *hi, left * sizeof *hi);
        const float rstd = 1.0f / sqrtf(row_sq_dev(hi, 0.0f, n) / (float)n + eps);
        normalize_row(hi, 0.0f, rstd, gamma, NULL, y + i * n, n, left, NULL);
    }
}

void fc_cpu_rope(const float *q, const float *cs, float *y, size_t m, size_t heads, size_t d)
{
    const size_t all = m * heads;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < all; t++) {
        vask_row(q + t * d, y + t * d, d * sizeof *q, (all - t) * d * sizeof *q);
        head_rope(q + t * d, NULL, 1.0f, cs + t / heads * d, y + t * d, d);
    }
}

/* The fused add + LayerNorm: x + r into the output row (read from cache by the
 * variance and the normalization, which asks for the next row) */
void fc_cpu_add_layernorm(const float *x, const float *r, const float *gamma, const float *beta, float eps, float *y,
                          size_t rows, size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * n, *ri = r + i * n;
        float *yi = y + i * n;
        const size_t left = (rows - i) * n;
        vf a = vsplat(0.0f);
        size_t j = 0;
        for (; j + VW <= n; j += VW) a += add_at(xi, ri, yi, j, left);
        float s = vhsum(a);
        for (; j < n; j++) s += yi[j] = xi[j] + ri[j];
        const float mean = s / (float)n;
        const float rstd = 1.0f / sqrtf(row_sq_dev(yi, mean, n) / (float)n + eps);
        const next_row next = {xi + n, ri + n, yi + n};
        normalize_row(yi, mean, rstd, gamma, beta, yi, n, 0, i + 1 < rows ? &next : NULL);
    }
}

/* The fused add + RMSNorm: h = x + r written once, its squares summed as it is made,
 * normalized from cache */
void fc_cpu_add_rmsnorm(const float *x, const float *r, const float *gamma, float eps, float *y, float *h, size_t rows,
                        size_t n)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < rows; i++) {
        const float *xi = x + i * n, *ri = r + i * n;
        float *hi = h + i * n, *yi = y + i * n;
        const size_t left = (rows - i) * n;
        vf a = vsplat(0.0f);
        size_t j = 0;
        for (; j + VW <= n; j += VW) {
            const vf hv = add_at(xi, ri, hi, j, left);
            a += hv * hv;
        }
        float s = vhsum(a);
        for (; j < n; j++) {
            hi[j] = xi[j] + ri[j];
            s += hi[j] * hi[j];
        }
        normalize_row(hi, 0.0f, 1.0f / sqrtf(s / (float)n + eps), gamma, NULL, yi, n, left, NULL);
    }
}

void fc_cpu_rmsnorm_rope(const float *q, const float *gamma, const float *cs, float eps, float *y, size_t m,
                         size_t heads, size_t d)
{
    const size_t all = m * heads;
#pragma omp parallel for schedule(static)
    for (size_t t = 0; t < all; t++) {
        const float *a = q + t * d;
        vask_row(a, y + t * d, d * sizeof *a, (all - t) * d * sizeof *a);
        const float rstd = 1.0f / sqrtf(row_sq_dev(a, 0.0f, d) / (float)d + eps);
        head_rope(a, gamma, rstd, cs + t / heads * d, y + t * d, d);
    }
}
