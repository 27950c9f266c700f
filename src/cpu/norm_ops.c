/* norm_ops.c — see norm_ops.h. Each row is one OpenMP iteration (static schedule);
 * inside it, the ISA's float vectors (cpu_vec.h): a sweep that reads memory, then sweeps over
 * what the first left in L1/L2 (a row of 8192 floats is 32 KiB). Each kernel asks
 * for its streams' lines 4 KB ahead (cpu_vec.h's vask; past the LLC on the Xeon,
 * add_layernorm 70–72 → 78–81 % of the bandwidth, add_rmsnorm 53–59 → 65–66 %, in
 * the same runs). The chain's output streams past the caches when the tensors
 * reach the LLC's size (fc_cpu_norm_streams). */
#include "norm_ops.h"
#include "cpu_vec.h"
#include "cpuinfo.h"

#include <math.h>
#include <stdbool.h>

/* Whether a norm problem's chain streams its output (norm_ops.h): when the fused
 * form's bytes are at least the LLC (fc_host_llc_assumed: 32 MiB on a host that does
 * not say, as on the Zen 5 VM, where nothing streamed before; there, one binary, the
 * two alternated, three rounds, fused medians streamed over not: the fp32 norms at
 * 37-134 MB 0.86-1.16, within the rounds' spread, the bf16 qk_norm_rope at 33.5 MB
 * 1.09-1.23, its unfused chain 1.11-1.20; results/cpu-amd-epyc-f26m2-2c/ab-llc-assumed.txt).
 * Below, the tensors stay in cache from one call
 * to the next and a streamed output goes to memory every time; above, an output
 * written through the cache evicts the inputs and first reads every line it writes.
 * On the AMD EPYC VM (Zen 4, 32 MiB L3, two threads; `fusecal run --quick`, both
 * forms alternated, three rounds), the fused fp32 kernels' time streamed over not,
 * warm: below the LLC 0.73-2.4x, slower in most rounds (add_rmsnorm at 8 and 17 MB
 * 1.07-2.4x, qk_norm_rope at 8-25 MB 0.97-1.5x, add_layernorm at 6-25 MB
 * 0.73-1.34x); at 33.5 MB, the LLC, qk_norm_rope 0.55-0.78x and add_rmsnorm
 * 0.86-1.09x; past it add_layernorm at 38 MB 0.51-0.72x and at 50 MB 0.75-0.85x,
 * add_rmsnorm at 67 MB 0.71-0.84x, qk_norm_rope at 67 MB 0.55-0.63x (add_rmsnorm's
 * h streamed in y's sweep then; since, h streams from a row buffer in its own
 * sweep: fc_cpu_add_rmsnorm).
 * The bf16 kernels (cpu.onednn) from the LLC on: add_rmsnorm at 33.5 MB 0.47-0.80x
 * and at 67 MB 0.54-0.66x, qk_norm_rope at 33.5 MB 0.66-0.72x, add_layernorm at 67
 * MB 0.76-0.78x. */
/* fc_cpu_norm_streams's rule on a CPU whose LLC holds llc bytes (0: none, and nothing
 * streams) */
static bool streams_at(const fc_problem *p, double llc)
{
    fc_cost c;
    fc_family_of(p->pat)->cost(p, &c);
    return llc > 0 && c.bytes[FC_FUSED] >= llc;
}

bool fc_cpu_norm_streams(const fc_problem *p) { return streams_at(p, (double)fc_host_llc_assumed()); }

/* The asks past a row (norm_ops.h: fc_norm_io; the next row's into L2, a row's burst
 * 4 KB ahead) where the rows come from memory. On rows the caches hold, warm, they
 * cost time: on the Zen 5 VM (two threads, m = 512; bench/norm_ab.sh, both forms in
 * one process in turn, 41 pairs, the medians of the pairs' ratios, three runs),
 * without them over with: the fused add_layernorm at n = 2048 and 4096 0.93-0.99
 * and 0.94-0.95, the layer-norm pass at 768 and 4096 0.91-0.95 and 0.87-0.89, the
 * fused RMSNorm + rope at 1024 and 4096 0.91-0.96 and 0.95-1.01; the kernels whose
 * rows the rule leaves as they were 0.97-1.04 (the method's resolution;
 * results/cpu-amd-epyc-f26m2-2c/ab-norm-asks.txt). Two wider rules, tried with the
 * same harness and not kept: without the per-vector asks within a row too,
 * add_rmsnorm at n = 768-1024 ran 1.03-1.13; without the next row's asks into L1
 * (rows up to NEXT_L1_ROW), add_layernorm at n = 512-1024 1.02-1.06. */
fc_norm_io fc_cpu_norm_io(const fc_problem *p, bool cold)
{
    const bool st = fc_cpu_norm_streams(p);
    return (fc_norm_io){.st = st, .asks = st || cold};
}

/* the longest row the fused add + LayerNorm keeps in its thread's buffer while it
 * streams y (32 KB); longer rows use y's row as scratch, unstreamed */
enum { ROW_BUF = 8192 };

/* Whether a fused add + norm whose output streams (st) streams a row of n from its
 * thread's buffer: y for the fp32 add + LayerNorm, y and h for the add + RMSNorm
 * (fc_cpu_add_rmsnorm says why); longer rows are stored plainly. */
static bool row_buffered(size_t n, bool st) { return st && n <= ROW_BUF; }

/* the bytes of a norm problem's output y */
static double norm_out_bytes(const fc_problem *p)
{
    return (double)p->d[FC_NORM_M] * (double)p->d[FC_NORM_N] * (double)fc_dtype_size(p->dtype);
}

double fc_cpu_norm_streamed_bytes(const fc_problem *p, fc_variant v, double llc, bool lib_norm)
{
    const bool st = p->pat->family == FC_FAM_NORM && streams_at(p, llc);
    return fc_cpu_norm_streamed_bytes_st(p, v, st, lib_norm);
}

const char *fc_cpu_norm_streamed_words(const fc_problem *p, double streamed)
{
    return !(streamed > 0) ? "" : streamed > norm_out_bytes(p) ? FC_RMSNORM_H_STREAMED : FC_NORM_STREAMED;
}

double fc_cpu_norm_streamed_bytes_st(const fc_problem *p, fc_variant v, bool st, bool lib_norm)
{
    if (p->pat->family != FC_FAM_NORM || v == FC_CONTROL || !st) return 0;
    const size_t n = (size_t)p->d[FC_NORM_N];
    const double y = norm_out_bytes(p);
    if (v == FC_UNFUSED) return lib_norm ? 0 : y;
    if (fc_pattern_has_op(p->pat, FC_OP_LAYERNORM)) /* the bf16 kernel streams rows of any length */
        return p->dtype != FC_FP32 || row_buffered(n, true) ? y : 0;
    const bool h = !fc_pattern_has_op(p->pat, FC_OP_ROPE) && p->dtype == FC_FP32 && row_buffered(n, true);
    return h ? 2 * y : y;
}

/* Σ h over a row */
static inline float row_sum(const float *h, size_t n)
{
    vf a = vsplat(0.0f);
    size_t j = 0;
    for (; j + VW <= n; j += VW) a += vload(h + j);
    float s = vhsum(a);
    for (; j < n; j++) s += h[j];
    return s;
}

/* A row's mean and variance in one sweep: shifted by k (the row's first element),
 * s1 = Σ (h − k) and s2 = Σ (h − k)², so mean = k + s1/n and var = (s2 − s1²/n)/n.
 * The subtraction loses about eps·s1²/(n·var) of var, small while the mean lies
 * within a few spreads of k; when s1²/n is more than 0.8 of s2 (the mean more than
 * two standard deviations from k, as when k is one large value over small noise: s1
 * itself then loses the mean), the mean and the variance about it are summed again
 * over the cached row (row_sum, row_sq_dev), as they were always before.
 * One sweep fewer over the cached row, against Σ h then Σ (h − mean)² (AMD EPYC VM,
 * Zen 4, AVX2 only; `fusecal run`, the two alternated, four rounds), fused ms on
 * cpu.openblas: add_layernorm m = 512, n = 768 0.085-0.089 against 0.103-0.111,
 * m = 14592, n = 768 3.85-4.39 against 4.64-5.16, m = 2048, n = 4096 3.51-3.73
 * against 3.96-4.26; the chain's layer-norm pass gains as well
 * (results/cpu-amd-epyc-f25m17-2c-avx2/ab-layernorm-moments.txt). */
typedef struct moments {
    float k, s1, s2;
} moments;

static inline void moments_add(vf d, vf *a, vf *q)
{
    *a += d;
    *q += d * d;
}

/* s1 and s2 of a row shifted by k (moments) */
static inline moments row_moments(const float *h, size_t n)
{
    moments m = {n ? h[0] : 0.0f, 0.0f, 0.0f};
    const vf vk = vsplat(m.k);
    vf a = vsplat(0.0f), q = vsplat(0.0f);
    size_t j = 0;
    for (; j + VW <= n; j += VW) moments_add(vload(h + j) - vk, &a, &q);
    m.s1 = vhsum(a);
    m.s2 = vhsum(q);
    for (; j < n; j++) {
        const float d = h[j] - m.k;
        m.s1 += d;
        m.s2 += d * d;
    }
    return m;
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

/* the mean and 1/sqrt(var + eps) of a row of n from its moments; h, the row in
 * cache, summed again about the mean where the one sweep's variance would cancel */
static inline float moments_rstd(moments m, const float *h, size_t n, float eps, float *mean)
{
    const float nf = (float)n, c = m.s1 * m.s1 / nf;
    if (c > 0.8f * m.s2) {
        *mean = row_sum(h, n) / nf;
        return 1.0f / sqrtf(row_sq_dev(h, *mean, n) / nf + eps);
    }
    *mean = m.k + m.s1 / nf;
    const float var = (m.s2 - c) / nf;
    return 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
}

/* cpu_vec.h's asks ahead, j and left in elements */
static inline void ask(const float *p, size_t j, size_t left) { vask(p, j * sizeof *p, left * sizeof *p); }
static inline void ask_w(float *p, size_t j, size_t left) { vask_w(p, j * sizeof *p, left * sizeof *p); }
/* a row's asks in one burst (vask_row) where the rows come from memory (io.asks):
 * its n elements at src and, given, at dst, each stream left elements long */
static inline void ask_row(fc_norm_io io, const float *src, float *dst, size_t n, size_t left)
{
    if (io.asks) vask_row(src, dst, n * sizeof *src, left * sizeof *src);
}
static inline void ask_l2(const float *p, size_t j, size_t left) { vask_l2(p, j * sizeof *p, left * sizeof *p); }

/* x + r at j into h, the streams asked for ahead (left elements from j's row on): x,
 * r, and h unless it is a thread's row buffer (buf); with deep (the rows come from
 * memory: fc_norm_io's asks), x and r also FC_AHEAD_L2 bytes ahead into L2, a row or
 * two past the next row the normalization asks for. On the AMD EPYC VM (Zen 4,
 * AVX-512, two threads; one binary, the asks switched at run time, `fusecal run`,
 * three rounds in turn; the chain unchanged), the fused form's speedup with them over
 * without: add_layernorm m = 14592, n = 768 1.95-2.00 against 1.78-1.86, m = 2048,
 * n = 4096 2.00-2.04 against 1.81-1.93; add_rmsnorm (its streamed sweep,
 * add_row_sq_stream) m = 16384, n = 768 1.60-1.63 against 1.45-1.51, m = 2048,
 * n = 4096 1.81-1.86 against 1.63-1.71; warm at m = 512, n = 768 (no deep asks) alike;
 * asked there too, add_rmsnorm's fused form ran 1.13x slower. The chain's layer-norm
 * pass asked the same way gained nothing (its speedups alike). Against 8 KB ahead, the
 * fused add_layernorm's medians at 6 KB alike, at 12 KB 1.00-1.06x and at 16 KB
 * 1.03-1.09x slower. The same asks gained nothing where tried elsewhere, so they are
 * made here alone: the fused qk_norm_rope (each head) alike at d = 128 and slower at
 * d = 64 (speedups 1.95-2.21 against 2.14-2.23); the bf16 kernels (norm_ops_bf16.c)
 * alike, their rope 1.56-1.72 against 1.70-1.91
 * (results/cpu-amd-epyc-f25m17-2c/ab-norm-l2-ahead.txt). */
static inline vf add_at(const float *x, const float *r, float *h, size_t j, size_t left, bool buf, bool deep)
{
    ask(x, j, left);
    ask(r, j, left);
    if (deep) {
        ask_l2(x, j, left);
        ask_l2(r, j, left);
    }
    if (!buf) ask_w(h, j, left);
    const vf v = vload(x + j) + vload(r + j);
    vstore(h + j, v);
    return v;
}

/* h = x + r over a row (add_at's asks; buf: h is a thread's row buffer), returning
 * the sum of its squares */
static inline float add_row(const float *x, const float *r, float *h, size_t n, size_t left, bool buf, bool deep)
{
    vf a = vsplat(0.0f);
    size_t j = 0;
    for (; j + VW <= n; j += VW) {
        const vf v = add_at(x, r, h, j, left, buf, deep);
        a += v * v;
    }
    float s = vhsum(a);
    for (; j < n; j++) {
        const float v = h[j] = x[j] + r[j];
        s += v * v;
    }
    return s;
}

/* add_row, returning h's moments instead (shifted by its first element) */
static inline moments add_row_moments(const float *x, const float *r, float *h, size_t n, size_t left, bool buf,
                                      bool deep)
{
    moments m = {n ? x[0] + r[0] : 0.0f, 0.0f, 0.0f};
    const vf vk = vsplat(m.k);
    vf a = vsplat(0.0f), q = vsplat(0.0f);
    size_t j = 0;
    for (; j + VW <= n; j += VW) moments_add(add_at(x, r, h, j, left, buf, deep) - vk, &a, &q);
    m.s1 = vhsum(a);
    m.s2 = vhsum(q);
    for (; j < n; j++) {
        const float d = (h[j] = x[j] + r[j]) - m.k;
        m.s1 += d;
        m.s2 += d * d;
    }
    return m;
}

/* The next row of a kernel whose last sweeps read only the cache: its streams' lines
 * are asked for during those sweeps, so that the memory stays busy while they run
 * (add_layernorm over rows of 768 on the AMD EPYC VM: 0.68-0.70 -> 0.81-0.83 of a
 * triad's rate, medians of 30 runs each, alternated). Where the next row's inputs and
 * the row in cache fill more than half of a 32 KiB L1 (rows past NEXT_L1_ROW floats),
 * its lines are asked into L2 instead (prefetcht1), and y's not at all: asked into
 * L1, they evicted the row the sweep reads. On the AMD EPYC VM (Zen 4, AVX2 only;
 * `fusecal run`, the two alternated, three or four rounds; fused ms), L2 against L1:
 * add_layernorm m = 2048, n = 4096 2.85-3.06 against 3.59-3.74, m = 4096, n = 2048
 * 3.14-3.36 against 3.55-3.62, warm m = 512, n = 4096 0.67-0.68 against 0.77-0.80;
 * add_rmsnorm m = 2048, n = 4096 3.32-3.61 against 3.86-4.01, and against no asks for
 * the next row (as it had before) 3.85-4.15; at n = 1024 L1 was the faster (add_layernorm
 * m = 8192 3.26-3.56 against 3.44-3.75), at n = 768 as well or within noise
 * (results/cpu-amd-epyc-f25m17-2c-avx2/ab-norm-next-row.txt). */
enum { NEXT_L1_ROW = 16384 / (3 * sizeof(float)) };

typedef struct next_row {
    const float *x, *r; /* read */
    float *y;           /* written */
    bool l2;            /* asked into L2 (rows past NEXT_L1_ROW), y's lines not asked */
} next_row;

/* the next row after row i of rows of n at x, r and (given) y, or NULL after the last,
 * and for rows asked into L2 unless the rows come from memory (asks: fc_norm_io) */
static inline const next_row *next_of(next_row *nr, const float *x, const float *r, float *y, size_t i, size_t rows,
                                      size_t n, bool asks)
{
    if (i + 1 >= rows || (n > NEXT_L1_ROW && !asks)) return NULL;
    *nr = (next_row){x + (i + 1) * n, r + (i + 1) * n, y ? y + (i + 1) * n : NULL, n > NEXT_L1_ROW};
    return nr;
}

/* one element of normalize_row */
static inline float norm1(const float *h, float mean, float rstd, const float *gamma, const float *beta, size_t j)
{
    return (h[j] - mean) * rstd * gamma[j] + (beta ? beta[j] : 0.0f);
}

/* y = (h − mean)·rstd·gamma + beta, or without a mean and beta h·rstd·gamma, over a
 * row: streamed (st), or asking for y's stream (left elements from y on) ahead; and
 * asking for next's lines (when given) as it goes */
static inline void normalize_row(const float *h, float mean, float rstd, const float *gamma, const float *beta,
                                 float *y, size_t n, size_t left, const next_row *next, bool st)
{
    const vf vm = vsplat(mean), vr = vsplat(rstd);
    size_t j = 0;
    if (st)
        for (const size_t k = vhead(y, sizeof *y, n); j < k; j++) y[j] = norm1(h, mean, rstd, gamma, beta, j);
    for (; j + VW <= n; j += VW) {
        if (next && next->l2) {
            __builtin_prefetch(next->x + j, 0, 2);
            __builtin_prefetch(next->r + j, 0, 2);
        } else if (next) {
            __builtin_prefetch(next->x + j, 0, 3);
            __builtin_prefetch(next->r + j, 0, 3);
            if (next->y) __builtin_prefetch(next->y + j, 1, 3);
        }
        vf t = (vload(h + j) - vm) * vr * vload(gamma + j);
        if (beta) t += vload(beta + j);
        if (st) vstream(y + j, t);
        else {
            ask_w(y, j, left);
            vstore(y + j, t);
        }
    }
    for (; j < n; j++) y[j] = norm1(h, mean, rstd, gamma, beta, j);
}

/* rotate-half of one head a into y, cos and sin of its position; with gamma, the
 * head is first normalized: each element times rstd·gamma[i]. Streamed (st) when y
 * and half are vector-aligned (heads_align). */
static inline void head_rope(const float *a, const float *gamma, float rstd, const float *cs, float *y, size_t d,
                             bool st)
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
        const vf ylo = lo * vload(c + i) - hi * vload(s + i), yhi = hi * vload(c + i) + lo * vload(s + i);
        if (st) {
            vstream(y + i, ylo);
            vstream(y + i + half, yhi);
        } else {
            vstore(y + i, ylo);
            vstore(y + i + half, yhi);
        }
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

/* whether heads of d at y can be streamed: every head's halves start on a vector */
static bool heads_align(const float *y, size_t d) { return d % (2 * VW) == 0 && vhead(y, sizeof *y, 1) == 0; }

/* the layer norm (centred: about each row's mean, beta added) or the RMSNorm of rows
 * of n */
static void norm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows, size_t n,
                      fc_norm_io io, bool centred)
{
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const float *hi = h + i * n;
            const size_t left = (rows - i) * n;
            ask_row(io, hi, NULL, n, left);
            float mean = 0.0f;
            const float rstd = centred ? moments_rstd(row_moments(hi, n), hi, n, eps, &mean)
                                       : 1.0f / sqrtf(row_sq_dev(hi, 0.0f, n) / (float)n + eps);
            normalize_row(hi, mean, rstd, gamma, beta, y + i * n, n, left, NULL, io.st);
        }
        if (io.st) vfence();
    }
}

void fc_cpu_layernorm_rows(const float *h, const float *gamma, const float *beta, float eps, float *y, size_t rows,
                           size_t n, fc_norm_io io)
{
    norm_rows(h, gamma, beta, eps, y, rows, n, io, true);
}

void fc_cpu_rmsnorm_rows(const float *h, const float *gamma, float eps, float *y, size_t rows, size_t n, fc_norm_io io)
{
    norm_rows(h, gamma, NULL, eps, y, rows, n, io, false);
}

void fc_cpu_rope(const float *q, const float *cs, float *y, size_t m, size_t heads, size_t d, fc_norm_io io)
{
    const size_t all = m * heads;
    const bool st = io.st && heads_align(y, d);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t t = 0; t < all; t++) {
            ask_row(io, q + t * d, st ? NULL : y + t * d, d, (all - t) * d);
            head_rope(q + t * d, NULL, 1.0f, cs + t / heads * d, y + t * d, d, st);
        }
        if (st) vfence();
    }
}

/* The fused add + LayerNorm: x + r into a row, its moments summed as it is made (read
 * from cache again only where they would cancel, and by the normalization, which asks
 * for the next row's inputs): the thread's buffer when y is streamed, else y's own
 * row */
void fc_cpu_add_layernorm(const float *x, const float *r, const float *gamma, const float *beta, float eps, float *y,
                          size_t rows, size_t n, fc_norm_io io)
{
    const bool st = row_buffered(n, io.st);
#pragma omp parallel
    {
        float buf[ROW_BUF] __attribute__((aligned(64)));
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const float *xi = x + i * n, *ri = r + i * n;
            float *yi = y + i * n, *h = st ? buf : yi;
            const size_t left = (rows - i) * n;
            float mean;
            const float rstd = moments_rstd(add_row_moments(xi, ri, h, n, left, st, io.asks), h, n, eps, &mean);
            next_row nr;
            normalize_row(h, mean, rstd, gamma, beta, yi, n, 0, next_of(&nr, x, r, st ? NULL : y, i, rows, n, io.asks),
                          st);
        }
        if (st) vfence();
    }
}

/* h = x + r over a row into a thread's row buffer and streamed to h (unaligned head
 * and tail stored plainly), asking for x and r ahead; returns the sum of squares */
static inline float add_row_sq_stream(const float *x, const float *r, float *buf, float *h, size_t n, size_t left,
                                      bool deep)
{
    float s = 0.0f;
    size_t j = 0;
    for (const size_t k = vhead(h, sizeof *h, n); j < k; j++) {
        const float v = buf[j] = h[j] = x[j] + r[j];
        s += v * v;
    }
    vf a = vsplat(0.0f);
    for (; j + VW <= n; j += VW) {
        ask(x, j, left);
        ask(r, j, left);
        if (deep) {
            ask_l2(x, j, left);
            ask_l2(r, j, left);
        }
        const vf v = vload(x + j) + vload(r + j);
        vstore(buf + j, v);
        vstream(h + j, v);
        a += v * v;
    }
    s += vhsum(a);
    for (; j < n; j++) {
        const float v = buf[j] = h[j] = x[j] + r[j];
        s += v * v;
    }
    return s;
}

/* The fused add + RMSNorm: h = x + r written once, its squares summed as it is made.
 * Streamed (st, rows up to ROW_BUF): h goes to the thread's row buffer and past the
 * caches in the first sweep, y is normalized from the buffer and streamed in the
 * second, so one stream of streaming stores runs at a time. Against h written plainly
 * (each of its lines first read) with y alone streamed, on the AMD EPYC VM (Zen 4, AVX2
 * only; `fusecal run`, the two alternated, four rounds), fused ms: m = 1024, n = 4096
 * 1.60-1.66 against 2.06-2.19, m = 2048 3.81-4.09 against 4.48-4.79, m = 16384, n = 768
 * 5.49-5.61 against 6.18-6.98; m = 512 (the LLC's size) within noise
 * (results/cpu-amd-epyc-f25m17-2c-avx2/ab-rmsnorm-h-streamed.txt). h streamed in the
 * same sweep as y and read back for the normalization was slower than either. The
 * normalization asks for the next row's x and r (next_row). Longer rows, or warm: h is
 * written plainly and normalized from the cache. */
void fc_cpu_add_rmsnorm(const float *x, const float *r, const float *gamma, float eps, float *y, float *h, size_t rows,
                        size_t n, fc_norm_io io)
{
    const bool st = io.st, buffered = row_buffered(n, st);
#pragma omp parallel
    {
        float buf[ROW_BUF] __attribute__((aligned(64)));
#pragma omp for schedule(static) nowait
        for (size_t i = 0; i < rows; i++) {
            const float *xi = x + i * n, *ri = r + i * n;
            float *hi = h + i * n, *yi = y + i * n;
            const size_t left = (rows - i) * n;
            const float s = buffered ? add_row_sq_stream(xi, ri, buf, hi, n, left, io.asks)
                                     : add_row(xi, ri, hi, n, left, false, io.asks);
            next_row nr;
            normalize_row(buffered ? buf : hi, 0.0f, 1.0f / sqrtf(s / (float)n + eps), gamma, NULL, yi, n,
                          buffered ? 0 : left, buffered ? next_of(&nr, x, r, NULL, i, rows, n, io.asks) : NULL, st);
        }
        if (st) vfence();
    }
}

void fc_cpu_rmsnorm_rope(const float *q, const float *gamma, const float *cs, float eps, float *y, size_t m,
                         size_t heads, size_t d, fc_norm_io io)
{
    const size_t all = m * heads;
    const bool st = io.st && heads_align(y, d);
#pragma omp parallel
    {
#pragma omp for schedule(static) nowait
        for (size_t t = 0; t < all; t++) {
            const float *a = q + t * d;
            ask_row(io, a, st ? NULL : y + t * d, d, (all - t) * d);
            const float rstd = 1.0f / sqrtf(row_sq_dev(a, 0.0f, d) / (float)d + eps);
            head_rope(a, gamma, rstd, cs + t / heads * d, y + t * d, d, st);
        }
        if (st) vfence();
    }
}
