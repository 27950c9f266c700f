/* norm_ab.c — two versions of the norm kernels (norm_ops.c) in one process, called in
 * turn, pair after pair: what a change to them does, free of the host's drift over the
 * minutes and of the code moving between two builds' binaries. bench/norm_ab.sh builds
 * it with an older revision's norm_ops.c (its functions renamed old_*) beside the
 * tree's (new_*).
 *
 *   norm_ab KERNEL M N STREAM PAIRS [COLD]
 *
 * KERNEL: add_layernorm, add_rmsnorm (fused), layernorm_rows (the unfused chain's
 * layer-norm pass), rmsnorm_rope (fused qk_norm_rope, heads of 128: N = h·128). STREAM
 * 1: the output streams past the caches (as from the LLC's size on); COLD 1: a 96 MiB
 * buffer is written between calls, and the new kernels are told so (fc_norm_io). Each
 * pair runs the old and the new form (order alternating) for about 2 ms each (one call
 * when cold, the mean of nine); prints each form's median time and GB/s and the median
 * of the pairs' new/old ratios with their 10th and 90th percentiles. */
#include <omp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct io_t {
    bool st, asks;
} io_t; /* norm_ops.h's fc_norm_io */
/* the old revision's kernels take a bool st before fc_norm_io, io_t since (OLD_IO) */
#ifdef OLD_IO
typedef io_t old_io;
#define OLD_IO_OF(a) ((io_t){(a)->st, (a)->st || (a)->cold})
#else
typedef bool old_io;
#define OLD_IO_OF(a) ((a)->st)
#endif
void old_fc_cpu_add_layernorm(const float *, const float *, const float *, const float *, float, float *, size_t,
                              size_t, old_io);
void new_fc_cpu_add_layernorm(const float *, const float *, const float *, const float *, float, float *, size_t,
                              size_t, io_t);
void old_fc_cpu_add_rmsnorm(const float *, const float *, const float *, float, float *, float *, size_t, size_t,
                            old_io);
void new_fc_cpu_add_rmsnorm(const float *, const float *, const float *, float, float *, float *, size_t, size_t, io_t);
void old_fc_cpu_layernorm_rows(const float *, const float *, const float *, float, float *, size_t, size_t, old_io);
void new_fc_cpu_layernorm_rows(const float *, const float *, const float *, float, float *, size_t, size_t, io_t);
void old_fc_cpu_rmsnorm_rope(const float *, const float *, const float *, float, float *, size_t, size_t, size_t,
                             old_io);
void new_fc_cpu_rmsnorm_rope(const float *, const float *, const float *, float, float *, size_t, size_t, size_t, io_t);

enum { ADD_LN, ADD_RMS, LN_ROWS, RMS_ROPE };
static const char *const names[] = {"add_layernorm", "add_rmsnorm", "layernorm_rows", "rmsnorm_rope"};
static const double streams[] = {3, 4, 2, 2}; /* tensors read or written, each m·n floats */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *array(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "norm_ab: no memory for %zu floats\n", n);
        exit(1);
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) p[i] = (float)(i % 97) * 0.01f - 0.4f;
    return p;
}

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct args {
    int k;
    size_t m, n;
    bool st, cold;
    float *x, *r, *h, *y, *g, *b;
} args;

static void call(const args *a, bool nw)
{
    const io_t io = {a->st, a->st || a->cold};
    switch (a->k) {
    case ADD_LN:
        if (nw) new_fc_cpu_add_layernorm(a->x, a->r, a->g, a->b, 1e-5f, a->y, a->m, a->n, io);
        else
            old_fc_cpu_add_layernorm(a->x, a->r, a->g, a->b, 1e-5f, a->y, a->m, a->n, OLD_IO_OF(a));
        break;
    case ADD_RMS:
        if (nw) new_fc_cpu_add_rmsnorm(a->x, a->r, a->g, 1e-5f, a->y, a->h, a->m, a->n, io);
        else
            old_fc_cpu_add_rmsnorm(a->x, a->r, a->g, 1e-5f, a->y, a->h, a->m, a->n, OLD_IO_OF(a));
        break;
    case LN_ROWS:
        if (nw) new_fc_cpu_layernorm_rows(a->x, a->g, a->b, 1e-5f, a->y, a->m, a->n, io);
        else
            old_fc_cpu_layernorm_rows(a->x, a->g, a->b, 1e-5f, a->y, a->m, a->n, OLD_IO_OF(a));
        break;
    default: /* the rotary table: [m, 128] */
        if (nw) new_fc_cpu_rmsnorm_rope(a->x, a->g, a->h, 1e-5f, a->y, a->m, a->n / 128, 128, io);
        else
            old_fc_cpu_rmsnorm_rope(a->x, a->g, a->h, 1e-5f, a->y, a->m, a->n / 128, 128, OLD_IO_OF(a));
        break;
    }
}

int main(int argc, char **argv)
{
    int k = -1;
    for (int i = 0; argc > 1 && i < 4; i++)
        if (!strcmp(argv[1], names[i])) k = i;
    if (argc < 6 || k < 0) {
        fprintf(stderr,
                "usage: norm_ab add_layernorm|add_rmsnorm|layernorm_rows|rmsnorm_rope M N STREAM PAIRS [COLD]\n");
        return 2;
    }
    args a = {.k = k, .m = strtoull(argv[2], NULL, 10), .n = strtoull(argv[3], NULL, 10), .st = atoi(argv[4]) != 0};
    const int pairs = atoi(argv[5]);
    a.cold = argc > 6 && atoi(argv[6]) != 0;
    if (a.m == 0 || a.n == 0 || pairs < 3 || (k == RMS_ROPE && a.n % 128)) {
        fprintf(stderr, "norm_ab: M, N > 0 (rmsnorm_rope: N a multiple of 128), PAIRS >= 3\n");
        return 2;
    }
    const size_t all = a.m * a.n, flush_bytes = (size_t)96 << 20;
    a.x = array(all), a.r = array(all), a.h = array(all), a.y = array(all), a.g = array(a.n), a.b = array(a.n);
    char *flush = a.cold ? calloc(flush_bytes, 1) : NULL;
    const double bytes = streams[k] * (double)all * sizeof(float);
    int calls = a.cold ? 1 : (int)(2e-3 / (bytes / 60e9));
    if (calls < 1) calls = 1;
    const int inner = a.cold ? 9 : 1;
    double *ratio = malloc(3 * (size_t)pairs * sizeof *ratio), *t_old = ratio + pairs, *t_new = t_old + pairs;
    for (int p = -2; p < pairs; p++) { /* two pairs of warm-up */
        double t[2];
        for (int q = 0; q < 2; q++) {
            const int w = p & 1 ? 1 - q : q;
            double sum = 0;
            for (int in = 0; in < inner; in++) {
                if (flush) {
#pragma omp parallel for schedule(static)
                    for (size_t z = 0; z < flush_bytes; z += 64) flush[z]++;
                }
                const double t0 = now();
                for (int c = 0; c < calls; c++) call(&a, w == 1);
                sum += (now() - t0) / calls;
            }
            t[w] = sum / inner;
        }
        if (p >= 0) t_old[p] = t[0], t_new[p] = t[1], ratio[p] = t[1] / t[0];
    }
    qsort(ratio, (size_t)pairs, sizeof *ratio, by_value);
    qsort(t_old, (size_t)pairs, sizeof *t_old, by_value);
    qsort(t_new, (size_t)pairs, sizeof *t_new, by_value);
    const double mo = t_old[pairs / 2], mn = t_new[pairs / 2];
    printf("%s m=%zu n=%zu%s%s: old %.4f ms %.1f GB/s | new %.4f ms %.1f GB/s | new/old %.3f [p10 %.3f, p90 %.3f]\n",
           names[k], a.m, a.n, a.st ? " streamed" : "", a.cold ? " cold" : "", 1e3 * mo, bytes / mo / 1e9, 1e3 * mn,
           bytes / mn / 1e9, ratio[pairs / 2], ratio[pairs / 10], ratio[pairs * 9 / 10]);
    printf("check %g\n", (double)(a.y[0] + a.y[all - 1]));
    free(ratio), free(flush), free(a.x), free(a.r), free(a.h), free(a.y), free(a.g), free(a.b);
    return 0;
}
