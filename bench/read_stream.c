/* read_stream.c — the rate at which all threads read one large array, nothing
 * written back: the traffic of a kernel that only streams its inputs (decode
 * attention's K and V), beside the copy/triad ceiling `fusecal info` measures
 * (bytes read + written).
 *   read_stream BYTES REPEATS     prints one line per repeat: GB/s and ms */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef float v16 __attribute__((vector_size(64), aligned(64)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: read_stream BYTES REPEATS\n");
        return 2;
    }
    size_t n = (size_t)strtoull(argv[1], NULL, 10) / sizeof(float) / 64 * 64;
    int reps = atoi(argv[2]);
    float *a = aligned_alloc(64, n * sizeof *a);
    if (!a || n == 0 || reps < 1) {
        fprintf(stderr, "read_stream: bad size or no memory\n");
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = (float)(i & 1023); /* first touch by the thread that reads it */
    for (int r = 0; r < reps; r++) {
        double t = now();
        float total = 0;
#pragma omp parallel reduction(+ : total)
        {
            /* four cache lines a step into four independent sums (GCC's vector type:
             * an AVX-512 register or two AVX2 ones each, as -march=native allows),
             * added across lanes once at the end */
            v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
#pragma omp for schedule(static)
            for (size_t i = 0; i < n; i += 64) {
                const v16 *p = (const v16 *)(a + i);
                s0 += p[0];
                s1 += p[1];
                s2 += p[2];
                s3 += p[3];
            }
            v16 s = (s0 + s1) + (s2 + s3);
            for (int j = 0; j < 16; j++) total += s[j];
        }
        t = now() - t;
        printf("read %.3f GB/s %.3f ms (%d threads, %zu bytes, sum %g)\n", (double)n * sizeof *a / t / 1e9, t * 1e3,
               omp_get_max_threads(), n * sizeof *a, (double)total);
    }
    free(a);
    return 0;
}
