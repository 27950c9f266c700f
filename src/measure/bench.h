/* bench.h — the timing engine, one for every device.
 *
 * Unfused and fused samples are taken in pairs, in a random order within each pair,
 * in one process, so drift hits both. A sample times `batch` back-to-back calls
 * (batch > 1 only for tiny problems in warm mode); in cold mode the device's cache is
 * flushed before every sample, outside the timed region. Each variant stops on its
 * own rule (noise low enough after min samples and min time, or the time cap); the
 * pairs go on until both have stopped.
 */
#ifndef FC_BENCH_H
#define FC_BENCH_H

#include "device.h"
#include "measures.h"

#include <signal.h>

typedef enum { FC_TIMING_EAGER, FC_TIMING_GRAPH } fc_timing_mode;

typedef struct fc_bench_cfg {
    fc_stop stop;
    bool cold;
    double target_sample; /* seconds: warm samples batch calls up to at least this */
    uint64_t seed;        /* order within pairs */
    fc_timing_mode mode;
    volatile sig_atomic_t *interrupt; /* stop early when non-zero (may be NULL) */
} fc_bench_cfg;

typedef struct fc_samples {
    double *ms;            /* per-call milliseconds of each sample */
    int n, cap;
    int batch;             /* calls per sample */
    double sampled_s;      /* seconds spent inside timed regions */
    const char *stop_rule; /* "noise", "max-time", "max-samples", "interrupted" */
    int n_at_stop;         /* samples when its rule was met */
} fc_samples;

void fc_samples_free(fc_samples *s);

/* Times both variants of fn(arg, v) on the device. out[FC_UNFUSED], out[FC_FUSED]
 * hold the same number of paired samples. */
int fc_bench_pair(const fc_device *dev, void *devctx, fc_launch_fn fn, void *arg, const fc_bench_cfg *cfg,
                  fc_samples out[FC_NVARIANTS], fc_err *e);

#endif
