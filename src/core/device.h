/* device.h — a device is where variants run and how they are timed: a clock that
 * brackets a sample, a cache flush for cold runs, optional replayable graphs, the
 * inventory and measured ceilings. The timing engine (bench.c) is written against
 * this interface alone, so every device is timed the same way.
 */
#ifndef FC_DEVICE_H
#define FC_DEVICE_H

#include "fusecal.h"

#include <cjson/cJSON.h>

/* The streaming bandwidth a working set of footprint_bytes reaches with warm caches
 * (a copy or triad repeated over the same arrays, bytes read + written). */
typedef struct fc_bw_point {
    double footprint_bytes, gbs;
    double read_gbs; /* a read-only stream's rate (0: not measured) */
} fc_bw_point;
#define FC_MAX_BW_POINTS 24

/* Measured ceilings of a device (0 = not measured / not applicable). */
typedef struct fc_ceilings {
    double gflops[FC_NDTYPES]; /* dense GEMM rate by dtype, the best any library reaches, GFLOP/s */
    /* the arithmetic peak by dtype, GFLOP/s: multiply-adds on registers alone on
     * every core (CPU) or SM (GPU), which no kernel passes (0: not measured; the
     * GEMM rate stands in, fc_ceilings_peak) */
    double peak_gflops[FC_NDTYPES];
    double bandwidth_gbs; /* large device-memory copy, bytes read + written, GB/s */
    /* a read-only stream over the same arrays, GB/s (0: not measured): on a host whose
     * cores can keep only so many misses in flight, reads alone reach less than a copy's
     * reads plus writes (the AMD EPYC VM: 29-45 GB/s read against 45-68 copied) */
    double read_bandwidth_gbs;
    /* the bandwidth by working set, ascending footprints, from the first cache
     * level's size to past the last level's (0 points: not measured) */
    int n_bw;
    fc_bw_point bw[FC_MAX_BW_POINTS];
    double launch_us;       /* empty kernel launch, eager (GPU) */
    double graph_launch_us; /* the same inside a replayed graph (GPU) */
    char method[2048];      /* how they were measured */
    char measured_utc[32];  /* when ("" when unknown) */
    bool cached;            /* kept from an earlier command (src/measure/ceilcache.h) */
} fc_ceilings;

/* The bandwidth ceiling of a variant whose calls touch `footprint` bytes, timed
 * with warm caches: the best rate measured at the largest footprint at or below it
 * or any larger one (the smallest point's and beyond when it lies below them all),
 * never below the device-memory ceiling. With the caches flushed before each
 * sample (cold) or no curve measured, the device-memory ceiling. */
double fc_ceilings_bandwidth_at(const fc_ceilings *c, double footprint, bool cold);
/* The bandwidth ceiling of a variant whose bytes are `read_share` reads (0 to 1):
 * fc_ceilings_bandwidth_at's, and no more than the read-only stream's rate at that
 * footprint (the same rule over the read points, never below device memory's read
 * figure) over the read share, where it was measured: reads at that rate and
 * writes on top. */
double fc_ceilings_stream_at(const fc_ceilings *c, double footprint, bool cold, double read_share);
/* That rule over one footprint's rates: gbs (read + written), no more than read_gbs
 * (a read-only stream's; 0: not measured) over the read share. */
double fc_stream_ceiling(double gbs, double read_gbs, double read_share);
/* The arithmetic peak of dtype (fp32's where dtype has neither figure): the
 * better of the measured peak and the GEMM rate (a loop run at a lower clock than
 * the GEMM's best call measured less than it). */
double fc_ceilings_peak(const fc_ceilings *c, fc_dtype dt);
/* Each point of the curves and the device-memory figure the better of the two */
void fc_ceilings_keep_better(fc_ceilings *kept, const fc_ceilings *now);

/* Environment read before and after each problem (clock drops, load). */
typedef struct fc_sense {
    double clock_mhz; /* current processor/SM clock, 0 when unknown */
    double mem_clock_mhz;
    double temperature_c;
    double loadavg1;  /* host 1-minute load average */
    int fusecal_runs; /* other fusecal runs measuring on the host (peers.h) */
} fc_sense;

typedef struct fc_device_opts {
    int threads;                /* host threads (CPU); 0 = all cores */
    fc_attn_kernel attn_kernel; /* cuda.custom's fused attention kernel (CUDA) */
} fc_device_opts;

/* One call of a variant, as the engine launches it. */
typedef int (*fc_launch_fn)(void *arg, fc_variant v, fc_err *e);

typedef struct fc_device {
    const char *name; /* "cpu", "cuda" */
    const char *summary;
    bool (*available)(char *why, size_t n);
    int (*open)(const fc_device_opts *o, void **ctx, fc_err *e);
    void (*close)(void *ctx);
    /* A sample: begin, launches, end. end waits for the work and returns seconds. */
    int (*timer_begin)(void *ctx, fc_err *e);
    int (*timer_end)(void *ctx, double *seconds, fc_err *e);
    /* Evicts the last-level cache (cold runs); outside the timed region: the engine
     * synchronizes after it, before the sample begins. */
    int (*flush_cache)(void *ctx, fc_err *e);
    /* Waits for all work queued on the device; NULL where nothing is queued (every
     * call returns with its work done). */
    int (*synchronize)(void *ctx, fc_err *e);
    /* Free memory for problem buffers on this device, in bytes. */
    size_t (*mem_available)(void *ctx);
    /* Optional: capture `batch` calls into a graph and replay it as one sample. */
    int (*graph_create)(void *ctx, fc_launch_fn fn, void *arg, fc_variant v, int batch, void **graph, fc_err *e);
    int (*graph_launch)(void *ctx, void *graph, fc_err *e);
    void (*graph_destroy)(void *graph);
    /* Inventory (adds fields to `out`) and measured ceilings. */
    void (*inventory)(void *ctx, cJSON *out);
    int (*measure_ceilings)(void *ctx, fc_ceilings *c, fc_err *e);
    /* Optional: the bandwidth curve's point at each of n footprints (bytes), measured
     * now and briefly, as measure_ceilings measures the curve: the ceilings beside a
     * round, in the machine's state of that moment (a shared host's memory and
     * clocks move by 2x within minutes). */
    int (*stream_at)(void *ctx, const double *footprints, int n, fc_bw_point *pts, fc_err *e);
    /* Optional: the arithmetic peak of dtype (GFLOP/s; 0: none for it), measured now
     * and briefly as measure_ceilings measures it: the peak beside a round, at the
     * clocks of that moment. */
    double (*peak_at)(void *ctx, fc_dtype dt);
    /* Optional: clocks and load, before and after each problem. */
    void (*sense)(void *ctx, fc_sense *s);
} fc_device;

#endif
