/* read_stream.c — the rate at which all threads read one large array, nothing
 * written back: the traffic of a kernel that only streams its inputs (decode
 * attention's K and V), beside the copy/triad ceiling `fusecal info` measures
 * (bytes read + written).
 *   read_stream BYTES REPEATS     prints one line per repeat: GB/s and ms */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* a vector of the register's width: a 64-byte vector where the ISA has no 64-byte
 * registers has no machine mode in GCC and lives in memory (built so for AVX2, this
 * read ran at 22-26 GB/s on the AMD EPYC VM against 33-43 with 32-byte vectors) */
#if defined(__AVX512F__)
#define VB 64
#else
#define VB 32
#endif
#define VF (VB / 4)
typedef float vreg __attribute__((vector_size(VB), aligned(VB)));

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
            /* four vectors a step into four independent sums, added across lanes once
             * at the end */
            vreg s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
#pragma omp for schedule(static)
            for (size_t i = 0; i < n; i += 4 * VF) {
                const vreg *p = (const vreg *)(a + i);
                s0 += p[0];
                s1 += p[1];
                s2 += p[2];
                s3 += p[3];
            }
            vreg s = (s0 + s1) + (s2 + s3);
            for (int j = 0; j < VF; j++) total += s[j];
        }
        t = now() - t;
        printf("read %.3f GB/s %.3f ms (%d threads, %zu bytes, sum %g)\n", (double)n * sizeof *a / t / 1e9, t * 1e3,
               omp_get_max_threads(), n * sizeof *a, (double)total);
    }
    free(a);
    return 0;
}
