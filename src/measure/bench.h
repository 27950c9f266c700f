/* bench.h — the timing engine, one for every device.
 *
 * A measurement is made of rounds; each round is one fresh setup of a problem's
 * variants (done by the caller) timed here: every variant is warmed up, all are
 * given one batch size (the fastest's: bench.c's prepare says why), then samples
 * are taken in tuples — one sample of each variant, in a random order per tuple —
 * so drift hits all of them alike. A sample times `batch` back-to-back calls
 * (batch > 1 only for short calls in warm mode); in cold
 * mode the device's cache is flushed before every sample, outside the timed region.
 * The round ends when every variant has min_pairs samples and min_time seconds of
 * them, or when one reaches max_time — never before min_pairs.
 */
#ifndef FC_BENCH_H
#define FC_BENCH_H

#include "device.h"
#include "measures.h"

#include <signal.h>

typedef struct fc_round_cfg {
    int nvar; /* variants timed: 2 (unfused, fused) or 3 (and the control) */
    bool cold;
    double target_sample; /* seconds: warm samples batch calls until the fastest variant's reach this */
    int min_pairs;        /* tuples at least, whatever the time */
    double min_time;      /* seconds of samples per variant at least */
    double max_time;      /* seconds per variant at most, once min_pairs are in */
    int max_pairs;        /* tuples at most */
    uint64_t seed;        /* order within tuples */
    fc_timing_mode mode;
    volatile sig_atomic_t *interrupt; /* stop early when non-zero (may be NULL) */
} fc_round_cfg;

typedef struct fc_samples {
    double *ms; /* per-call milliseconds of each sample */
    int n, cap;
    int batch;        /* calls per sample */
    double sampled_s; /* seconds spent inside timed regions */
} fc_samples;

void fc_samples_free(fc_samples *s);

/* Times one round of fn(arg, v) for v < cfg->nvar on the device. out[v] hold the
 * same number of samples, sample i of every variant from the same tuple.
 * *interrupted is set when cfg->interrupt stopped the round early. */
int fc_bench_round(const fc_device *dev, void *devctx, fc_launch_fn fn, void *arg, const fc_round_cfg *cfg,
                   fc_samples out[FC_MAX_VARIANTS], bool *interrupted, fc_err *e);

#endif
