/* cpu_peak.c — see cpu_peak.h. Each loop keeps its accumulators in registers
 * (FMA latency 4 cycles, two pipes: 8 chains fill them; 12 and 16 leave room) and
 * an empty asm statement after each iteration keeps the compiler from folding the
 * iterations together. On the AMD EPYC VM (Zen 3, two cores) the AVX2 loop runs at
 * 179 GFLOP/s against OpenBLAS sgemm's 170 at its best. */
#include "cpu_peak.h"
#include "cpuinfo.h"
#include "util.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

enum { CHAINS_256 = 12, CHAINS_512 = 16, PEAK_RUNS = 15 };
#define PEAK_RUN_S 0.02

int fc_peak_chains(fc_peak_isa isa) { return isa == FC_PEAK_AVX2 ? CHAINS_256 : CHAINS_512; }

const char *fc_peak_isa_name(fc_peak_isa isa)
{
    static const char *const names[] = {"AVX2 vfmadd231ps ymm", "AVX-512 vfmadd231ps zmm",
                                        "AVX-512 BF16 vdpbf16ps zmm"};
    return (unsigned)isa < FC_NPEAK_ISAS ? names[isa] : "?";
}

double fc_peak_flops_per_iter(fc_peak_isa isa)
{
    switch (isa) {
    case FC_PEAK_AVX2: return CHAINS_256 * 8 * 2.0;
    case FC_PEAK_AVX512: return CHAINS_512 * 16 * 2.0;
    case FC_PEAK_AVX512_BF16: return CHAINS_512 * 16 * 2 * 2.0; /* two products and two adds a lane */
    default: return 0;
    }
}

int fc_peak_isa_for(const char *flags, fc_dtype dt, char *why, size_t n)
{
    if (dt == FC_FP32) {
        if (fc_cpu_flag(flags, "avx512f")) return FC_PEAK_AVX512;
        if (fc_cpu_flag(flags, "avx2") && fc_cpu_flag(flags, "fma")) return FC_PEAK_AVX2;
        snprintf(why, n, "no FMA loop for this CPU: it has neither avx512f nor avx2 with fma");
        return -1;
    }
    if (dt == FC_BF16) {
        if (fc_cpu_flag(flags, "amx_bf16")) {
            snprintf(why, n, "not measured: this CPU's bf16 runs on AMX tiles, which no loop here measures");
            return -1;
        }
        if (fc_cpu_flag(flags, "avx512_bf16")) return FC_PEAK_AVX512_BF16;
        snprintf(why, n, "no bf16 loop: this CPU has no avx512_bf16");
        return -1;
    }
    snprintf(why, n, "no loop for %s on the CPU", fc_dtype_name(dt));
    return -1;
}

/* the accumulators' lanes summed chain by chain, lane by lane */
static double lanes_sum(const float *acc, int lanes)
{
    double s = 0;
    for (int i = 0; i < lanes; i++) s += acc[i];
    return s;
}

/* The accumulators as named variables: an array, even fully unrolled, stays in
 * memory once an asm statement takes its elements (the loop then ran at 68 GFLOP/s
 * against 179 on the AMD EPYC VM). */
#define CH12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define CH16(X) CH12(X) X(12) X(13) X(14) X(15)
#define DECL(i) V a##i = SET1((float)i);
#define STEP(i) a##i = OP(a##i);
#define KEEP(i) __asm__ volatile("" : "+v"(a##i)); /* "v": any vector register, zmm16-31 too */
#define OUT(i) STOREU(out + (i)*LANES, a##i);
/* a loop's body over the chains CH (NCH of them), in the V, SET1, OP, STOREU and LANES
 * its function defines */
#define PEAK_BODY(CH, NCH)                \
    CH(DECL);                             \
    for (long it = 0; it < iters; it++) { \
        CH(STEP)                          \
        CH(KEEP)                          \
    }                                     \
    float out[(NCH)*LANES];               \
    CH(OUT)                               \
    return lanes_sum(out, (NCH)*LANES);

__attribute__((target("avx2,fma"))) static double loop_avx2(long iters, float x, float y)
{
#define V __m256
#define SET1 _mm256_set1_ps
#define OP(a) _mm256_fmadd_ps(a, vx, vy)
#define STOREU _mm256_storeu_ps
#define LANES 8
    const __m256 vx = SET1(x), vy = SET1(y);
    PEAK_BODY(CH12, CHAINS_256)
#undef V
#undef SET1
#undef OP
#undef STOREU
#undef LANES
}

__attribute__((target("avx512f"))) static double loop_avx512(long iters, float x, float y)
{
#define V __m512
#define SET1 _mm512_set1_ps
#define OP(a) _mm512_fmadd_ps(a, vx, vy)
#define STOREU _mm512_storeu_ps
#define LANES 16
    const __m512 vx = SET1(x), vy = SET1(y);
    PEAK_BODY(CH16, CHAINS_512)
#undef OP
}

__attribute__((target("avx512f,avx512bf16"))) static double loop_bf16(long iters, float x, float y)
{
#define OP(a) _mm512_dpbf16_ps(a, vx, vy)
    const __m512bh vx = _mm512_cvtne2ps_pbh(SET1(x), SET1(x)), vy = _mm512_cvtne2ps_pbh(SET1(y), SET1(y));
    PEAK_BODY(CH16, CHAINS_512)
#undef V
#undef SET1
#undef OP
#undef STOREU
#undef LANES
}

double fc_peak_loop(fc_peak_isa isa, long iters, float x, float y)
{
    switch (isa) {
    case FC_PEAK_AVX2: return loop_avx2(iters, x, y);
    case FC_PEAK_AVX512: return loop_avx512(iters, x, y);
    case FC_PEAK_AVX512_BF16: return loop_bf16(iters, x, y);
    default: return NAN;
    }
}

/* One run on every thread: seconds from before the threads start to after the
 * last ends. */
static double timed_run(fc_peak_isa isa, long iters, double *sink)
{
    double s = 0, t0 = fc_now();
#pragma omp parallel reduction(+ : s)
    s += fc_peak_loop(isa, iters, 0.999f, 1e-3f); /* converges to y / (1 - x): finite */
    double dt = fc_now() - t0;
    *sink += s;
    return dt;
}

/* The loop's best rate on every thread of the pool over `runs` runs of about run_s
 * seconds after a warm-up that sizes them; *iters the iterations of a run. */
static double best_rate(fc_peak_isa isa, int runs, double run_s, long *iters_out, double *sink)
{
    const double per = fc_peak_flops_per_iter(isa) * omp_get_max_threads();
    long iters = 1 << 14;
    for (int w = 0; w < 8; w++) { /* warm-up, sizing a run to run_s */
        double t = timed_run(isa, iters, sink);
        if (t >= run_s / 2) break;
        iters *= t > 0 ? (long)fmin(8, fmax(2, run_s / t)) : 8;
    }
    double best = 0;
    for (int r = 0; r < runs; r++) best = fmax(best, per * (double)iters / timed_run(isa, iters, sink) / 1e9);
    *iters_out = iters;
    return best;
}

/* The host's /proc/cpuinfo identity, read once: the peak beside a round asks for
 * its loop every round. */
static const fc_cpu_id *host_id(void)
{
    static fc_cpu_id id;
    static bool loaded;
    if (!loaded) fc_host_cpu_id(&id);
    loaded = true;
    return &id;
}

double fc_cpu_peak_gflops(fc_dtype dt, char *how, size_t n)
{
    int isa = fc_peak_isa_for(host_id()->flags, dt, how, n);
    if (isa < 0) return 0;
    double sink = 0;
    long iters;
    double best = best_rate((fc_peak_isa)isa, PEAK_RUNS, PEAK_RUN_S, &iters, &sink);
    snprintf(how, n, "%s, %d chains a thread, %d threads, best of %d runs of %ld iterations%s",
             fc_peak_isa_name((fc_peak_isa)isa), fc_peak_chains((fc_peak_isa)isa), omp_get_max_threads(), PEAK_RUNS,
             iters, isfinite(sink) ? "" : " (non-finite sum)");
    return best;
}

double fc_cpu_peak_now(fc_dtype dt, int runs, double run_s)
{
    char why[160];
    int isa = fc_peak_isa_for(host_id()->flags, dt, why, sizeof why);
    if (isa < 0) return 0;
    double sink = 0;
    long iters;
    double best = best_rate((fc_peak_isa)isa, runs, run_s, &iters, &sink);
    return isfinite(sink) ? best : 0;
}
