/* conv_loop.c — cpu.openblas's fused conv_bn_relu kernel (fusecal's direct 3×3
 * convolution with the folded bias and ReLU in its epilogue) called alone in a loop
 * on all threads, one set of buffers: what the kernel reaches with nothing between
 * its calls, against the medians `fusecal run` records over fresh buffers each round
 * with the unfused chain's calls interleaved.
 *   conv_loop N C H W K CALLS   prints, for each of three ways, min, p10, median and
 *                                p90 ms and the median's GFLOP/s (the problem's
 *                                FLOPs, as fusecal counts them: the taps inside the
 *                                image): alone; with a 6 MiB read-modify-write pass on
 *                                all threads before each call (another variant's
 *                                traffic); with a conv into another output and a
 *                                ReLU pass over it before each call (about the
 *                                unfused chain's calls). */
#include "cpu_ops.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the multiply-adds of taps inside the image, twice: fusecal's count for the problem */
static double conv_flops(const fc_conv_geom *g)
{
    double taps = 0;
    for (int oy = 0; oy < g->p; oy++)
        for (int ox = 0; ox < g->q; ox++)
            for (int r = 0; r < g->r; r++)
                for (int s = 0; s < g->s; s++) {
                    const int iy = oy * g->stride - g->pad + r, ix = ox * g->stride - g->pad + s;
                    taps += iy >= 0 && iy < g->h && ix >= 0 && ix < g->w;
                }
    return 2.0 * g->n * taps * g->c * g->k;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: conv_loop N C H W K CALLS\n");
        return 2;
    }
    fc_conv_geom g = {.n = atoi(argv[1]),
                      .c = atoi(argv[2]),
                      .h = atoi(argv[3]),
                      .w = atoi(argv[4]),
                      .k = atoi(argv[5]),
                      .r = 3,
                      .s = 3,
                      .stride = 1,
                      .pad = 1,
                      .nhwc = true,
                      .g = 1};
    g.p = g.h, g.q = g.w;
    const int calls = atoi(argv[6]), nt = omp_get_max_threads();
    if (g.n < 1 || g.c < 1 || g.h < 1 || g.w < 1 || g.k < 1 || calls < 10) return 2;
    const size_t nx = (size_t)g.n * g.h * g.w * g.c, ny = (size_t)g.n * g.p * g.q * g.k, nw = (size_t)g.k * g.c * 9;
    float *x = fc_cpu_buffer(nx), *w = fc_cpu_buffer(nw), *wp = fc_cpu_buffer(2 * nw), *y = fc_cpu_buffer(ny),
          *y2 = fc_cpu_buffer(ny), *b = fc_cpu_buffer((size_t)g.k);
    float *ws = fc_cpu_buffer(fc_cpu_conv_workspace(&g, nt) + 16);
    const size_t junk_n = (size_t)6 << 18; /* 6 MiB of floats */
    float *junk = fc_cpu_buffer(junk_n);
    srand(7);
    for (size_t i = 0; i < nx; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (size_t i = 0; i < nw; i++) w[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < g.k; i++) b[i] = 0.01f * (float)i;
    fc_cpu_conv_pack_weights(&g, w, wp);
    const fc_epilogue ep = {.bias = b, .resid = NULL, .act = FC_ACT_RELU}, plain = {.bias = b};
    double *t = malloc((size_t)calls * sizeof *t);
    static const char *const ways[] = {"alone", "after 6 MiB of other traffic", "after a conv and a ReLU pass"};
    const double flops = conv_flops(&g);
    printf("# %dx%dx%dx%d -> %d, 3x3, NHWC, %d threads: %s\n", g.n, g.c, g.h, g.w, g.k, nt,
           fc_cpu_dconv_applies(&g) ? "the direct 3x3 kernel" : "blocked im2col + sgemm");
    for (int way = 0; way < 3; way++) {
        for (int i = 0; i < 20; i++) fc_cpu_conv(&g, x, wp, y, &ep, ws, nt);
        for (int i = 0; i < calls; i++) {
            if (way == 1) {
#pragma omp parallel for schedule(static)
                for (size_t j = 0; j < junk_n; j++) junk[j] += 1.0f;
            } else if (way == 2) {
                fc_cpu_conv(&g, x, wp, y2, &plain, ws, nt);
                fc_cpu_relu(y2, y2, ny);
            }
            const double t0 = now();
            fc_cpu_conv(&g, x, wp, y, &ep, ws, nt);
            t[i] = (now() - t0) * 1e3;
        }
        qsort(t, (size_t)calls, sizeof *t, cmp);
        printf("%-30s min %.3f p10 %.3f median %.3f p90 %.3f ms; median %.1f GFLOP/s\n", ways[way], t[0], t[calls / 10],
               t[calls / 2], t[calls * 9 / 10], flops / (t[calls / 2] * 1e-3) / 1e9);
    }
    free(t);
    return 0;
}
