/* device_cpu.c — the host CPU as a device: wall-clock samples, a cache flush that
 * sweeps a buffer larger than the last-level cache, and measured ceilings (the
 * arithmetic peak of an FMA loop, sgemm GFLOP/s through OpenBLAS, memory bandwidth
 * by copy and triad). */
#include "device.h"
#include "cpu_peak.h"
#include "cpu_vec.h"
#include "cpuinfo.h"
#include "omp_env.h"
#include "stats.h"
#include "util.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cpu_ctx {
    int threads;
    bool pinned;
    double t0;
    float *flush_buf;
    size_t flush_n;
    volatile float sink;
    float *bw[3]; /* the arrays of the bandwidth beside a round (cpu_stream_at), bw_bytes each */
    size_t bw_bytes;
} cpu_ctx;

static bool cpu_available(char *why, size_t n)
{
    (void)why;
    (void)n;
    return true;
}

/* Pins OpenMP thread i to the i-th CPU this process may use. libgomp keeps its
 * threads, and OpenBLAS (OpenMP build) and oneDNN run on them, so this holds for
 * every library: no migrations between samples, less noise. */
static bool pin_threads(int threads)
{
    cpu_set_t allowed;
    fc_note_process_cpus();
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return false;
    int cpus[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed)) cpus[n++] = c;
    if (n < threads) return false;
    int ok = 0;
#pragma omp parallel num_threads(threads) reduction(+ : ok)
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[omp_get_thread_num()], &one);
        ok += pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
    }
    return ok == threads;
}

static int cpu_open(const fc_device_opts *o, void **out, fc_err *e)
{
    (void)e;
    cpu_ctx *c = fc_xcalloc(1, sizeof *c);
    c->threads = o && o->threads > 0 ? o->threads : fc_allowed_cpus();
    omp_set_num_threads(c->threads);
    openblas_set_num_threads(c->threads);
    c->pinned = getenv("FUSECAL_NO_PIN") == NULL && pin_threads(c->threads);
    size_t bytes = 2 * fc_host_llc_assumed();
    if (bytes < (64u << 20)) bytes = 64u << 20;
    c->flush_n = bytes / sizeof(float);
    c->flush_buf = fc_aligned_alloc(c->flush_n * sizeof(float));
    memset(c->flush_buf, 1, c->flush_n * sizeof(float));
    *out = c;
    return 0;
}

static void cpu_close(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c) return;
    free(c->flush_buf);
    for (int i = 0; i < 3; i++) free(c->bw[i]);
    free(c);
}

static int cpu_timer_begin(void *ctx, fc_err *e)
{
    (void)e;
    ((cpu_ctx *)ctx)->t0 = fc_now();
    return 0;
}

static int cpu_timer_end(void *ctx, double *sec, fc_err *e)
{
    (void)e;
    *sec = fc_now() - ((cpu_ctx *)ctx)->t0;
    return 0;
}

/* Read every line of a buffer twice the LLC (written once, at open), on every
 * thread, so that no input or output of the next sample is left in any cache
 * level, and what is left is clean: the previous sample's dirty lines are written
 * back here, outside the timed region, not during the next sample. */
static int cpu_flush(void *ctx, fc_err *e)
{
    (void)e;
    cpu_ctx *c = ctx;
    const float *b = c->flush_buf;
    size_t n = c->flush_n;
    float acc = 0;
#pragma omp parallel for reduction(+ : acc) schedule(static)
    for (size_t i = 0; i < n; i += 16) acc += b[i];
    c->sink = acc;
    return 0;
}

static int cpu_sync(void *ctx, fc_err *e)
{
    (void)ctx;
    (void)e;
    return 0;
}

static size_t cpu_mem_available(void *ctx)
{
    (void)ctx;
    return fc_host_mem_available();
}

static void cpu_inventory(void *ctx, cJSON *out)
{
    cpu_ctx *c = ctx;
    fc_host_inventory(out);
    cJSON_AddNumberToObject(out, "threads", c ? c->threads : fc_allowed_cpus());
    cJSON_AddNumberToObject(out, "omp_max_threads", omp_get_max_threads());
    cJSON_AddBoolToObject(out, "threads_pinned", c && c->pinned);
    const char *dropped = fc_omp_env_dropped();
    if (dropped) cJSON_AddStringToObject(out, "omp_env_dropped", dropped);
    cJSON *k = cJSON_AddObjectToObject(out, "kernels"); /* fusecal's own, as built (cpu_vec.h) */
    cJSON_AddStringToObject(k, "isa", FC_VEC_ISA);
    cJSON_AddNumberToObject(k, "vector_floats", VW);
}

enum { SGEMM_REPS_SMALL = 15, SGEMM_REPS_LARGE = 7, STREAM_REPS = 7 };

/* sgemm ceiling: the best rate of repeated square products at two sizes. A
 * ceiling is a peak: a variant faster than it shows the ceiling (or the count of
 * work) is off, and is flagged. */
static double measure_sgemm(void)
{
    static const int sizes[] = {1024, 2048};
    double best = 0;
    for (size_t si = 0; si < FC_ARRAY_LEN(sizes); si++) {
        int n = sizes[si];
        size_t nn = (size_t)n * (size_t)n;
        float *a = fc_aligned_alloc(nn * 4), *b = fc_aligned_alloc(nn * 4), *cc = fc_aligned_alloc(nn * 4);
        fc_rng r;
        fc_rng_seed(&r, 42);
        for (size_t i = 0; i < nn; i++) {
            a[i] = fc_rng_range(&r, -1, 1);
            b[i] = fc_rng_range(&r, -1, 1);
        }
        double flops = 2.0 * n * n * (double)n;
        int reps = n <= 1024 ? SGEMM_REPS_SMALL : SGEMM_REPS_LARGE;
        for (int it = 0; it <= reps; it++) {
            double t0 = fc_now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, cc, n);
            double rate = flops / (fc_now() - t0) / 1e9;
            if (it > 0 && rate > best) best = rate; /* the first call warms up */
        }
        free(a);
        free(b);
        free(cc);
    }
    return best;
}

/* The three arrays of the bandwidth kernels, `bytes` each, filled by the threads
 * that stream them. */
static void stream_arrays(size_t bytes, float **a, float **b, float **c)
{
    size_t n = bytes / sizeof(float);
    float *x = *a = fc_aligned_alloc(bytes), *y = *b = fc_aligned_alloc(bytes), *z = *c = fc_aligned_alloc(bytes);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        x[i] = 1.0f;
        y[i] = 2.0f;
        z[i] = 0.5f;
    }
}

/* One pass of a bandwidth kernel over n floats (a multiple of BW_ALIGN; the arrays
 * vector-aligned), inside a parallel region: copy c = a or triad a = b + s*c, its
 * stores plain or streamed past the caches (cpu_vec.h's vstream, as the norm
 * kernels write large outputs: a ceiling of plain stores alone was passed by them,
 * qk_norm_rope at 130 % of it on the AMD EPYC Zen 4 VM); or a read of a alone
 * (BW_READ: eight sums, enough to issue two loads a cycle from L1, stored only if
 * they come to -1, which the arrays' positive values never do), over one stream a
 * thread or, a in two or four parts read side by side, two or four (BW_READ2,
 * BW_READ4): on the AMD EPYC Zen 4 VM one stream a thread read 20.7-38.5 GB/s over
 * 128 and 256 MiB, two 25.0-47.9 and four 20.3-49.2 (2 threads, six runs each,
 * alternated), and fusecal's decode kernel, which reads K and V side by side,
 * measured 103 % of the one stream's best. */
enum { BW_COPY, BW_TRIAD, BW_COPY_NT, BW_TRIAD_NT, BW_KINDS, BW_READ = BW_KINDS, BW_READ2, BW_READ4, BW_ALL };
#define BW_BLOCK (8 * VW)       /* floats a read's step takes from each of its streams */
#define BW_ALIGN (4 * BW_BLOCK) /* n: whole blocks in each of four parts */
static void bw_pass(float *a, const float *b, float *c, size_t n, int kind)
{
    const size_t nv = n / VW;
    const vf s = vsplat(0.5f);
    switch (kind) {
    case BW_COPY:
#pragma omp for schedule(static) nowait
        for (size_t v = 0; v < nv; v++) vstore(c + v * VW, vload(a + v * VW));
        break;
    case BW_TRIAD:
#pragma omp for schedule(static) nowait
        for (size_t v = 0; v < nv; v++) vstore(a + v * VW, vload(b + v * VW) + s * vload(c + v * VW));
        break;
    case BW_COPY_NT:
#pragma omp for schedule(static) nowait
        for (size_t v = 0; v < nv; v++) vstream(c + v * VW, vload(a + v * VW));
        vfence();
        break;
    case BW_TRIAD_NT:
#pragma omp for schedule(static) nowait
        for (size_t v = 0; v < nv; v++) vstream(a + v * VW, vload(b + v * VW) + s * vload(c + v * VW));
        vfence();
        break;
    default: {
        const size_t streams = (size_t)1 << (kind - BW_READ), per = n / BW_BLOCK / streams;
        vf s0 = vsplat(0), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
#pragma omp for schedule(static) nowait
        for (size_t q = 0; q < per; q++)
            for (size_t k = 0; k < streams; k++) {
                const float *p = a + (k * per + q) * BW_BLOCK;
                s0 += vload(p), s1 += vload(p + VW), s2 += vload(p + 2 * VW), s3 += vload(p + 3 * VW);
                s4 += vload(p + 4 * VW), s5 += vload(p + 5 * VW), s6 += vload(p + 6 * VW), s7 += vload(p + 7 * VW);
            }
        float t = vhsum(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)));
        if (t == -1.0f) c[0] = t;
        break;
    }
    }
}

static bool bw_read(int kind) { return kind >= BW_READ; }
/* the arrays a kernel streams through: a triad's three, a copy's two, a read's one */
static int bw_arrays(int kind) { return kind == BW_TRIAD || kind == BW_TRIAD_NT ? 3 : bw_read(kind) ? 1 : 2; }
/* bytes a pass of the kernel moves over n floats (read + written) */
static double bw_bytes(size_t n, int kind) { return (double)n * sizeof(float) * bw_arrays(kind); }

/* Memory bandwidth: STREAM-style copy and triad over the three arrays (`bytes`
 * each), plain and streamed, counting bytes read plus bytes written; the best of
 * any kernel's runs. */
static double measure_bandwidth(float *a, float *b, float *c, size_t bytes, double *read)
{
    size_t n = bytes / sizeof(float) / BW_ALIGN * BW_ALIGN;
    double best = 0;
    *read = 0;
    for (int it = 0; it <= STREAM_REPS; it++)
        for (int k = 0; k < BW_ALL; k++) {
            double t0 = fc_now();
#pragma omp parallel
            bw_pass(a, b, c, n, k);
            double r = bw_bytes(n, k) / (fc_now() - t0) / 1e9;
            if (it == 0) continue;
            best = fmax(best, r);
            if (bw_read(k)) *read = fmax(*read, r);
        }
    return best;
}

/* The bandwidth by working set: BW_FIRST bytes, doubling to 4x the LLC. */
enum { BW_FIRST = 32 << 10, BW_RUNS = 5 };
#define BW_RUN_S 0.004

/* One kernel's best rate over a working set of `fp` bytes: copy (two arrays of
 * fp/2: c = a) or triad (three of fp/3: a = b + s*c), plain or streamed, repeated
 * inside one parallel region, each thread over its own slice of the same arrays
 * (the same static schedule every pass: warm in its caches as far as they hold it),
 * at least BW_RUN_S a run; the best of BW_RUNS runs after a warm-up. Bytes read +
 * written. */
static double stream_rate(float *a, float *b, float *c, size_t fp, int kind, int runs, double run_s)
{
    size_t n = fp / (size_t)bw_arrays(kind) / sizeof(float) / BW_ALIGN * BW_ALIGN;
    double pass_bytes = bw_bytes(n, kind);
    int reps = 1;
    double best = 0;
    if (n == 0) return 0;
    for (int run = -1; run < runs; run++) {
        double t0 = fc_now();
#pragma omp parallel
        for (int r = 0; r < reps; r++) bw_pass(a, b, c, n, kind);
        double dt = fc_now() - t0;
        if (run < 0) { /* the warm-up sizes the runs */
            reps = dt > 0 ? (int)fmin(1e6, ceil(run_s / dt)) : 1000;
            continue;
        }
        best = fmax(best, reps * pass_bytes / dt / 1e9);
    }
    return best;
}

/* The curve of fc_ceilings.bw: copy and triad at footprints from BW_FIRST, doubling
 * up to `top` (4x the LLC, the device-memory figure's array size: a victim L3 still
 * holds part of a working set twice its size: AMD EPYC VM, 32 MiB L3, 136 GB/s at 64
 * MiB against 90 over 128 MiB arrays, so a curve ending there judged a 134 MB problem
 * against 136), over that figure's arrays (at least top/2 bytes each); returns the
 * points. */
/* One point of a curve: every kind's best rate over a footprint of fp bytes, the
 * read-only kinds' alone beside it. */
static fc_bw_point curve_point(float *a, float *b, float *c, size_t fp, int runs, double run_s)
{
    double r = 0, rd = 0;
    for (int k = 0; k < BW_ALL; k++) {
        const double x = stream_rate(a, b, c, fp, k, runs, run_s);
        if (bw_read(k)) rd = fmax(rd, x);
        else
            r = fmax(r, x);
    }
    return (fc_bw_point){(double)fp, fmax(r, rd), rd};
}

static int measure_bandwidth_curve(float *a, float *b, float *c, size_t top, fc_bw_point *pts, int max)
{
    int np = 0;
    for (size_t fp = BW_FIRST; fp <= top && np < max; fp *= 2) pts[np++] = curve_point(a, b, c, fp, BW_RUNS, BW_RUN_S);
    return np;
}

/* The curve's largest footprint, 4x the LLC, and the device-memory figure's arrays
 * (128 MiB at least). */
static size_t curve_top(void) { return 4 * fc_host_llc_assumed(); }
static size_t memory_arrays_bytes(void)
{
    const size_t top = curve_top();
    return top < (128u << 20) ? 128u << 20 : top;
}

/* The bandwidth beside a round (fc_device.stream_at): the curve's kinds at each
 * footprint, as the curve measures them but briefly (BESIDE_RUNS runs of at least
 * BESIDE_RUN_S after a warm-up; FUSECAL_TEST_FAST: one of a tenth), a footprint
 * past the curve's top measured at the top (device memory's rate already); over
 * arrays kept in the context between rounds, grown as a larger footprint asks. */
enum { BESIDE_RUNS = 3 };
#define BESIDE_RUN_S 0.002
/* The footprint a point beside a round is measured at: the curve's first at least,
 * its top at most. */
static size_t beside_footprint(double fp, size_t top) { return fp > (double)top ? top : (size_t)fmax(fp, BW_FIRST); }

static int cpu_stream_at(void *ctx, const double *footprints, int n, fc_bw_point *pts, fc_err *e)
{
    (void)e;
    cpu_ctx *c = ctx;
    const size_t top = curve_top();
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        const size_t fp = beside_footprint(footprints[i], top);
        if (fp > need) need = fp;
    }
    if (need > c->bw_bytes) {
        for (int i = 0; i < 3; i++) free(c->bw[i]);
        stream_arrays(need, &c->bw[0], &c->bw[1], &c->bw[2]);
        c->bw_bytes = need;
    }
    const bool fast = fc_test_fast();
    for (int i = 0; i < n; i++) {
        pts[i] = curve_point(c->bw[0], c->bw[1], c->bw[2], beside_footprint(footprints[i], top), fast ? 1 : BESIDE_RUNS,
                             fast ? BESIDE_RUN_S / 10 : BESIDE_RUN_S);
        pts[i].footprint_bytes = footprints[i];
    }
    return 0;
}

/* The arithmetic peak beside a round (fc_device.peak_at): the ceilings' loop, BESIDE_RUNS
 * runs of about BESIDE_PEAK_S (FUSECAL_TEST_FAST: one of a tenth). */
#define BESIDE_PEAK_S 0.002
static double cpu_peak_at(void *ctx, fc_dtype dt)
{
    (void)ctx;
    const bool fast = fc_test_fast();
    return fc_cpu_peak_now(dt, fast ? 1 : BESIDE_RUNS, fast ? BESIDE_PEAK_S / 10 : BESIDE_PEAK_S);
}

/* The arithmetic peak of fp32 and bf16, the better of this measurement and the one
 * c holds; how: what ran for each (cpu_peak.h). */
enum { PEAK_NDTS = 2 };
static void measure_peaks(fc_ceilings *c, char how[PEAK_NDTS][256])
{
    static const fc_dtype dts[PEAK_NDTS] = {FC_FP32, FC_BF16};
    for (int i = 0; i < PEAK_NDTS; i++)
        c->peak_gflops[dts[i]] = fmax(c->peak_gflops[dts[i]], fc_cpu_peak_gflops(dts[i], how[i], sizeof how[i]));
}

static int cpu_ceilings(void *ctx, fc_ceilings *c, fc_err *e)
{
    (void)ctx;
    (void)e;
    memset(c, 0, sizeof *c);
    /* the arithmetic peak before the GEMM and again after the bandwidth, seconds
     * apart: the VM's clock moves (the AVX2 loop at 154 and at 179 GFLOP/s a minute
     * apart on the AMD EPYC VM) */
    char peak_how[PEAK_NDTS][256];
    measure_peaks(c, peak_how);
    c->gflops[FC_FP32] = measure_sgemm();
    /* one allocation for both bandwidth figures: the curve's last footprint, 4x the
     * LLC, is also each of the device-memory figure's three arrays (128 MiB at least) */
    const size_t top = curve_top(), bytes = memory_arrays_bytes();
    float *a, *b, *cc;
    stream_arrays(bytes, &a, &b, &cc);
    c->bandwidth_gbs = measure_bandwidth(a, b, cc, bytes, &c->read_bandwidth_gbs);
    c->n_bw = measure_bandwidth_curve(a, b, cc, top, c->bw, FC_MAX_BW_POINTS);
    free(a);
    free(b);
    free(cc);
    measure_peaks(c, peak_how);
    snprintf(
        c->method, sizeof c->method,
        "peaks, the best of repeated runs: arithmetic peak (no kernel passes it; register-resident "
        "multiply-adds on every thread, measured before the GEMM and again after the bandwidth, the "
        "better kept): fp32 %s; bf16 %s; fp32 GEMM (a kernel may pass it), the best library's best rate "
        "(OpenBLAS cblas_sgemm %.1f GFLOP/s, best of %d products at 1024^3 and %d at 2048^3, all threads); "
        "bandwidth, the best of %d STREAM-style copy, triad and read runs (copy and triad each with plain "
        "and with streaming stores; read: a sum of one array, over one, two and four streams a thread) over arrays of 4x the LLC, bytes read + "
        "written, and the read's best alone (read_bandwidth_gbs, read_gbs: a variant's ceiling is no more "
        "than it over the variant's share of reads); by working set (warm caches), the best of %d runs of "
        "each kind of at least %g ms at footprints from %d KiB doubling to 4x the LLC",
        peak_how[0], peak_how[1], c->gflops[FC_FP32], SGEMM_REPS_SMALL, SGEMM_REPS_LARGE, STREAM_REPS, BW_RUNS,
        BW_RUN_S * 1e3, BW_FIRST >> 10);
    return 0;
}

static void cpu_sense(void *ctx, fc_sense *s)
{
    (void)ctx;
    memset(s, 0, sizeof *s);
    double l[1];
    if (getloadavg(l, 1) == 1) s->loadavg1 = l[0];
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        double sum = 0;
        int n = 0;
        while (fgets(line, sizeof line, f)) {
            double mhz;
            if (sscanf(line, "cpu MHz : %lf", &mhz) == 1) {
                sum += mhz;
                n++;
            }
        }
        fclose(f);
        if (n) s->clock_mhz = sum / n;
    }
}

const fc_device fc_device_cpu = {
    .name = "cpu",
    .summary = "host CPU: wall-clock samples, LLC-sized flush, OpenMP thread pool shared with BLAS",
    .available = cpu_available,
    .open = cpu_open,
    .close = cpu_close,
    .timer_begin = cpu_timer_begin,
    .timer_end = cpu_timer_end,
    .flush_cache = cpu_flush,
    .synchronize = cpu_sync,
    .mem_available = cpu_mem_available,
    .graph_create = NULL,
    .graph_launch = NULL,
    .graph_destroy = NULL,
    .inventory = cpu_inventory,
    .measure_ceilings = cpu_ceilings,
    .stream_at = cpu_stream_at,
    .peak_at = cpu_peak_at,
    .sense = cpu_sense,
};
