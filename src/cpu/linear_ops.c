/* linear_ops.c — see linear_ops.h. */
#include "linear_ops.h"
#include "cpu_ops.h"

#include <cblas.h>
#include <omp.h>
#include <string.h>

static int min_int(int a, int b) { return a < b ? a : b; }

/* ------------------------------------------------------------------ gated unit */

void fc_cpu_glu_plan(int M, int N, int K, size_t block_bytes, int nthreads, fc_lin_plan *pl)
{
    /* As fc_cpu_gemm_nt_fused_blocks: tall blocks (up to 512 rows) keep each sgemm's
     * packing small against its FLOPs, and the C block, here 2·nb wide, stays within
     * block_bytes; halve the larger side until every thread has a block, then even
     * the blocks out over the threads. */
    const int cfloats = (int)(block_bytes / sizeof(float));
    int mb = min_int(M, 512);
    int nb = fc_cpu_round_down(cfloats / (2 * mb), 16);
    if (nb < 64) nb = 64;
    if (nb > N) nb = N;
    if (mb * 2 * nb > cfloats) mb = min_int(fc_cpu_round_down(cfloats / (2 * nb), 16), M);
    while (fc_cpu_count_blocks(M, mb) * fc_cpu_count_blocks(N, nb) < nthreads && (mb > 16 || nb > 16)) {
        /* the longer side, or the one that can still be halved */
        if (mb > 16 && (mb >= 2 * nb || nb <= 16)) mb = fc_cpu_round_down((mb + 1) / 2, 16);
        else
            nb = fc_cpu_round_down((nb + 1) / 2, 16);
        if (nb > N) nb = N;
        if (mb > M) mb = M;
    }
    fc_cpu_balance_blocks(1, M, N, nthreads, true, 16, &mb, &nb);
    *pl = (fc_lin_plan){M, N, K, mb, nb};
}

void fc_cpu_glu_pack(const fc_lin_plan *pl, const float *W, float *Wp)
{
    const size_t K = (size_t)pl->K;
    for (int j0 = 0; j0 < pl->N; j0 += pl->nb) {
        size_t cols = (size_t)min_int(pl->nb, pl->N - j0);
        float *dst = Wp + 2 * (size_t)j0 * K;
        memcpy(dst, W + (size_t)j0 * K, cols * K * sizeof(float));                              /* W_g rows */
        memcpy(dst + cols * K, W + ((size_t)pl->N + (size_t)j0) * K, cols * K * sizeof(float)); /* W_u rows */
    }
}

size_t fc_cpu_glu_workspace(const fc_lin_plan *pl) { return (size_t)pl->mb * 2 * (size_t)pl->nb; }

void fc_cpu_swiglu_fused(const fc_lin_plan *pl, const float *x, const float *Wp, float *y, float *ws)
{
    const int M = pl->M, N = pl->N, K = pl->K, mb = pl->mb, nb = pl->nb;
    const int nbn = fc_cpu_count_blocks(N, nb), nbm = fc_cpu_count_blocks(M, mb);
    const size_t per = fc_cpu_glu_workspace(pl);
#pragma omp parallel
    {
        float *C = ws + (size_t)omp_get_thread_num() * per;
#pragma omp for collapse(2) schedule(static)
        for (int jb = 0; jb < nbn; jb++)
            for (int ib = 0; ib < nbm; ib++) {
                const int i0 = ib * mb, j0 = jb * nb;
                const int rows = min_int(mb, M - i0), cols = min_int(nb, N - j0);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, 2 * cols, K, 1.0f, x + (size_t)i0 * K, K,
                            Wp + 2 * (size_t)j0 * K, K, 0.0f, C, 2 * cols);
                for (int r = 0; r < rows; r++) {
                    const float *g = C + (size_t)r * 2 * cols;
                    fc_cpu_silu_mul_span(g, g + cols, y + (size_t)(i0 + r) * N + j0, (size_t)cols);
                }
            }
    }
}

void fc_cpu_glu_gemm(const fc_lin_plan *pl, const float *x, const float *Wp, float *y2)
{
    const int M = pl->M, N = pl->N, K = pl->K, mb = pl->mb, nb = pl->nb;
    const int nbn = fc_cpu_count_blocks(N, nb), nbm = fc_cpu_count_blocks(M, mb);
#pragma omp parallel for collapse(2) schedule(static)
    for (int jb = 0; jb < nbn; jb++)
        for (int ib = 0; ib < nbm; ib++) {
            const int i0 = ib * mb, j0 = jb * nb;
            const int rows = min_int(mb, M - i0), cols = min_int(nb, N - j0);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, 2 * cols, K, 1.0f, x + (size_t)i0 * K, K,
                        Wp + 2 * (size_t)j0 * K, K, 0.0f, y2 + (size_t)i0 * 2 * N + 2 * (size_t)j0, 2 * N);
        }
}

/* Columns per OpenMP iteration of the passes: rows are split into chunks of this
 * many output columns, so that a few long rows still keep every thread busy. */
#define GLU_CHUNK 2048

/* The run of output columns from c to the end of its block of nb (or to c1): its
 * length, and where its gate and up halves begin in a row of y2. */
typedef struct glu_run {
    int len, gate, up;
} glu_run;

static glu_run glu_run_at(int c, int c1, int nb, int N)
{
    const int j0 = c / nb * nb, cols = min_int(nb, N - j0);
    return (glu_run){min_int(c1, j0 + cols) - c, j0 + c, j0 + c + cols};
}

void fc_cpu_glu_silu(const float *y2, float *s, int M, int N, int nb)
{
    const int nch = fc_cpu_count_blocks(N, GLU_CHUNK);
#pragma omp parallel for collapse(2) schedule(static)
    for (int r = 0; r < M; r++)
        for (int ch = 0; ch < nch; ch++) {
            const float *row = y2 + (size_t)r * 2 * N;
            float *out = s + (size_t)r * N;
            const int c1 = min_int(N, (ch + 1) * GLU_CHUNK);
            for (int c = ch * GLU_CHUNK; c < c1;) {
                glu_run run = glu_run_at(c, c1, nb, N);
                fc_cpu_silu_span(row + run.gate, out + c, (size_t)run.len);
                c += run.len;
            }
        }
}

void fc_cpu_glu_mul(const float *s, const float *y2, float *out, int M, int N, int nb)
{
    const int nch = fc_cpu_count_blocks(N, GLU_CHUNK);
#pragma omp parallel for collapse(2) schedule(static)
    for (int r = 0; r < M; r++)
        for (int ch = 0; ch < nch; ch++) {
            const float *row = y2 + (size_t)r * 2 * N, *sr = s + (size_t)r * N;
            float *o = out + (size_t)r * N;
            const int c1 = min_int(N, (ch + 1) * GLU_CHUNK);
            for (int c = ch * GLU_CHUNK; c < c1;) {
                glu_run run = glu_run_at(c, c1, nb, N);
                const float *u = row + run.up;
#pragma omp simd
                for (int k = 0; k < run.len; k++) o[c + k] = sr[c + k] * u[k];
                c += run.len;
            }
        }
}

/* ------------------------------------------------------------------ GELU prologue */

void fc_cpu_prologue_plan(int M, int N, int K, size_t block_bytes, int nthreads, fc_lin_plan *pl)
{
    const int cfloats = (int)(block_bytes / sizeof(float));
    int mb = fc_cpu_round_down(cfloats / K, 16);
    if (mb > 512) mb = 512;
    if (mb > M) mb = M;
    int nb = fc_cpu_round_down(cfloats / mb, 16);
    if (nb < 128) nb = 128;
    if (nb > N) nb = N;
    while (fc_cpu_count_blocks(M, mb) * fc_cpu_count_blocks(N, nb) < nthreads && (mb > 16 || nb > 16)) {
        if (mb > 16) mb = fc_cpu_round_down((mb + 1) / 2, 16);
        else
            nb = fc_cpu_round_down((nb + 1) / 2, 16);
        if (nb > N) nb = N;
        if (mb > M) mb = M;
    }
    fc_cpu_balance_blocks(1, M, N, nthreads, false, 16, &mb, &nb); /* more row blocks: gelu(x) once a row */
    *pl = (fc_lin_plan){M, N, K, mb, nb};
}

size_t fc_cpu_prologue_workspace(const fc_lin_plan *pl) { return (size_t)pl->mb * (size_t)pl->K; }

void fc_cpu_prologue_gemm(const fc_lin_plan *pl, const float *x, const float *W, const float *bias, bool prologue,
                          float *y, float *ws)
{
    const int M = pl->M, N = pl->N, K = pl->K, mb = pl->mb, nb = pl->nb;
    const int nbn = fc_cpu_count_blocks(N, nb), nbm = fc_cpu_count_blocks(M, mb);
    const size_t per = fc_cpu_prologue_workspace(pl);
#pragma omp parallel
    {
        float *A = prologue ? ws + (size_t)omp_get_thread_num() * per : NULL;
        int have = -1; /* the row block whose gelu(x) A holds */
                       /* row blocks outermost: a thread's consecutive blocks share their rows */
#pragma omp for collapse(2) schedule(static)
        for (int ib = 0; ib < nbm; ib++)
            for (int jb = 0; jb < nbn; jb++) {
                const int i0 = ib * mb, j0 = jb * nb;
                const int rows = min_int(mb, M - i0), cols = min_int(nb, N - j0);
                const float *a = x + (size_t)i0 * K;
                if (prologue) {
                    if (have != ib) fc_cpu_gelu_span(a, A, (size_t)rows * (size_t)K);
                    have = ib;
                    a = A;
                }
                float *C = y + (size_t)i0 * N + j0;
                if (bias) fc_cpu_gemm_c_init(C, (size_t)N, rows, cols, bias + j0, NULL); /* sgemm adds to it */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, cols, K, 1.0f, a, K, W + (size_t)j0 * K, K,
                            bias ? 1.0f : 0.0f, C, N);
            }
    }
}
