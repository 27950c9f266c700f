/* row_sweeps.c — the fused add + norm kernels against the plainest loops with the
 * same traffic, in one process, alternated: what bounds a norm that streams.
 *
 * A fused add + norm reads x and r and streams y (add_layernorm; add_rmsnorm also
 * streams h = x + r), but it cannot write a row before it has summed the whole row:
 * each row is swept twice, once from memory into a row buffer, once from the buffer
 * out. The loops, over the same arrays, every store streaming (non-temporal):
 *   copy        y = x, flat                                   1 read, 1 write
 *   triad       y = x + r, flat                               2 reads, 1 write
 *   triad_rows  the same, row by row
 *   two_sweeps  per row: buf = x + r and its squares summed, then y = buf·s·g
 *   add_layernorm   fc_cpu_add_layernorm, streamed (norm_ops.c)
 *   quad        h = x + r, y = h·h, flat                      2 reads, 2 writes
 *   two_sweeps_h    two_sweeps, h streamed in the first sweep
 *   add_rmsnorm fc_cpu_add_rmsnorm, streamed
 * Each round runs every loop REPEATS times in turn and keeps its best; the
 * lines give each round's GB/s (bytes read + written) and each loop's share of its
 * flat form's (triad or quad) in the same round.
 *   row_sweeps M N ROUNDS REPEATS */
#include "norm_ops.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__AVX512F__)
#define VF 16
typedef __m512 vreg;
#define LOAD _mm512_load_ps
#define STREAM _mm512_stream_ps
#define ADD _mm512_add_ps
#define MUL _mm512_mul_ps
#define FMA _mm512_fmadd_ps
#define SET1 _mm512_set1_ps
#define ZERO _mm512_setzero_ps
static float hsum(vreg v) { return _mm512_reduce_add_ps(v); }
#else
#define VF 8
typedef __m256 vreg;
#define LOAD _mm256_load_ps
#define STREAM _mm256_stream_ps
#define ADD _mm256_add_ps
#define MUL _mm256_mul_ps
#define FMA _mm256_fmadd_ps
#define SET1 _mm256_set1_ps
#define ZERO _mm256_setzero_ps
static float hsum(vreg v)
{
    float f[VF];
    _mm256_storeu_ps(f, v);
    float s = 0;
    for (int i = 0; i < VF; i++) s += f[i];
    return s;
}
#endif

enum { COPY, TRIAD, TRIAD_ROWS, TWO_SWEEPS, ADD_LAYERNORM, QUAD, TWO_SWEEPS_H, ADD_RMSNORM, NLOOPS };
static const char *const names[NLOOPS] = {"copy",          "triad", "triad_rows",   "two_sweeps",
                                          "add_layernorm", "quad",  "two_sweeps_h", "add_rmsnorm"};
/* arrays each loop reads + writes, and the flat loop it is set against */
static const int streams[NLOOPS] = {2, 3, 3, 3, 3, 4, 4, 4};
static const int flat[NLOOPS] = {COPY, TRIAD, TRIAD, TRIAD, TRIAD, QUAD, QUAD, QUAD};

enum { ROW_MAX = 8192 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the two sweeps of one row: buf = x + r (h streamed too when given), then
 * y = buf·(1/rms)·g */
static void two_sweeps(const float *x, const float *r, const float *g, float *buf, float *h, float *y, size_t n)
{
    vreg s = ZERO();
    for (size_t j = 0; j < n; j += VF) {
        const vreg v = ADD(LOAD(x + j), LOAD(r + j));
        if (h) STREAM(h + j, v);
        _mm_prefetch((const char *)(x + j) + 2048, _MM_HINT_T0);
        _mm_prefetch((const char *)(r + j) + 2048, _MM_HINT_T0);
#if VF == 16
        _mm512_store_ps(buf + j, v);
#else
        _mm256_store_ps(buf + j, v);
#endif
        s = FMA(v, v, s);
    }
    const vreg k = SET1(1.0f / sqrtf(hsum(s) / (float)n + 1e-5f));
    for (size_t j = 0; j < n; j += VF) STREAM(y + j, MUL(MUL(LOAD(buf + j), k), LOAD(g + j)));
}

static void run_loop(int l, const float *x, const float *r, const float *g, const float *b, float *h, float *y,
                     size_t m, size_t n)
{
    const size_t all = m * n;
    switch (l) {
    case ADD_LAYERNORM: fc_cpu_add_layernorm(x, r, g, b, 1e-5f, y, m, n, (fc_norm_io){true, true}); return;
    case ADD_RMSNORM: fc_cpu_add_rmsnorm(x, r, g, 1e-5f, y, h, m, n, (fc_norm_io){true, true}); return;
    default: break;
    }
#pragma omp parallel
    {
        float buf[ROW_MAX] __attribute__((aligned(64)));
        switch (l) {
        case COPY:
#pragma omp for schedule(static)
            for (size_t i = 0; i < all; i += VF) STREAM(y + i, LOAD(x + i));
            break;
        case TRIAD:
#pragma omp for schedule(static)
            for (size_t i = 0; i < all; i += VF) STREAM(y + i, ADD(LOAD(x + i), LOAD(r + i)));
            break;
        case QUAD:
#pragma omp for schedule(static)
            for (size_t i = 0; i < all; i += VF) {
                const vreg v = ADD(LOAD(x + i), LOAD(r + i));
                STREAM(h + i, v);
                STREAM(y + i, MUL(v, v));
            }
            break;
        case TRIAD_ROWS:
#pragma omp for schedule(static)
            for (size_t i = 0; i < m; i++)
                for (size_t j = 0; j < n; j += VF) STREAM(y + i * n + j, ADD(LOAD(x + i * n + j), LOAD(r + i * n + j)));
            break;
        default: /* the two sweeps, with or without h */
#pragma omp for schedule(static)
            for (size_t i = 0; i < m; i++)
                two_sweeps(x + i * n, r + i * n, g, buf, l == TWO_SWEEPS_H ? h + i * n : NULL, y + i * n, n);
            break;
        }
        _mm_sfence();
    }
}

static float *array(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "row_sweeps: no memory for %zu floats\n", n);
        exit(1);
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) p[i] = (float)(i % 97) * 0.01f - 0.4f; /* touched by the thread that uses it */
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: row_sweeps M N ROUNDS REPEATS\n");
        return 2;
    }
    const size_t m = strtoull(argv[1], NULL, 10), n = strtoull(argv[2], NULL, 10);
    const int rounds = atoi(argv[3]), reps = atoi(argv[4]);
    if (m == 0 || n == 0 || n % VF || n > ROW_MAX || rounds < 1 || reps < 1) {
        fprintf(stderr, "row_sweeps: M > 0, N a multiple of %d up to %d, ROUNDS and REPEATS > 0\n", VF, ROW_MAX);
        return 2;
    }
    float *x = array(m * n), *r = array(m * n), *h = array(m * n), *y = array(m * n), *g = array(n), *b = array(n);
    printf(
        "row_sweeps m=%zu n=%zu: %d threads, %d-float vectors, %.1f MB a tensor; GB/s (bytes read + written), "
        "the best of %d a round; in brackets, the share of the flat loop's rate in that round\n",
        m, n, omp_get_max_threads(), VF, (double)(m * n * sizeof(float)) / 1e6, reps);
    double gbs[NLOOPS][64];
    const int nr = rounds < 64 ? rounds : 64;
    for (int k = 0; k < nr; k++)
        for (int l = 0; l < NLOOPS; l++) {
            double best = 1e30;
            for (int i = 0; i < reps; i++) {
                const double t0 = now();
                run_loop(l, x, r, g, b, h, y, m, n);
                const double t = now() - t0;
                if (t < best) best = t;
            }
            gbs[l][k] = (double)streams[l] * (double)(m * n * sizeof(float)) / best / 1e9;
        }
    for (int l = 0; l < NLOOPS; l++) {
        printf("%-14s", names[l]);
        for (int k = 0; k < nr; k++) printf(" %6.1f [%3.0f%%]", gbs[l][k], 100 * gbs[l][k] / gbs[flat[l]][k]);
        printf("\n");
    }
    printf("check %g\n", (double)(y[0] + y[m * n - 1] + h[m * n / 2]));
    free(x);
    free(r);
    free(h);
    free(y);
    free(g);
    free(b);
    return 0;
}
