/* backend.h — a backend is a provider on a device (cpu.openblas, cpu.onednn,
 * cuda.cublas, ...). It implements the unfused and fused variants of some patterns
 * and names the implementation it really ran: no silent fallbacks.
 *
 * Adding a backend: see README.md, "Adding a backend" (its file implementing this
 * vtable, its row in FC_BACKEND_LIST, its line in src/registry/registry.c).
 */
#ifndef FC_BACKEND_H
#define FC_BACKEND_H

#include "device.h"
#include "pattern.h"
#include "vocab.h"

#define FC_DECLINED (-2)

/* What a variant really ran. */
typedef struct fc_impl {
    char name[768];   /* e.g. "cblas_sgemm(openblas 0.3.21 SkylakeX) + bias(omp) + relu(omp)" */
    int nkernels;     /* library calls or kernels per execution */
    bool fallback;    /* a reference or generic implementation stood in for a fast one */
    char fallback_why[160];
} fc_impl;

typedef struct fc_backend {
    const char *name;    /* "<device>.<provider>", as in FC_BACKEND_LIST */
    const char *device;  /* device name, as in FC_DEVICE_LIST */
    const char *summary;
    /* Whether the library can be used here at run time. */
    bool (*available)(char *why, size_t n);
    /* Whether this backend implements the problem (pattern, dtype, layout, causal);
     * when not, `why` says what is missing. */
    bool (*supports)(const fc_problem *p, char *why, size_t n);
    /* Device bytes the problem needs (inputs, outputs, intermediates, workspaces);
     * may be NULL for host backends, whose need the workload already checked. */
    int (*device_bytes)(const fc_problem *p, size_t *bytes, fc_err *e);
    /* Allocates buffers, builds plans and primitives, picks algorithms: everything,
     * so that run() allocates nothing. Returns 0, -1 on an error, or FC_DECLINED
     * when the library itself turns the problem down (no algorithm for it): that
     * record is skipped with the library's reason instead of failed. */
    int (*setup)(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e);
    /* One execution of a variant (asynchronous on devices that queue work). */
    int (*run)(void *state, fc_variant v, fc_err *e);
    /* Copies the variant's output to host memory (waits for the device). */
    int (*output)(void *state, fc_variant v, float *dst, fc_err *e);
    /* Fills the variant's output with NaN, so that an unwritten element shows. */
    int (*poison)(void *state, fc_variant v, fc_err *e);
    void (*describe)(void *state, fc_variant v, fc_impl *impl);
    /* Optional: whether this setup also runs FC_CONTROL — the fused form's main
     * operation done the same way but without the fusion, then the unfused chain's
     * passes — because the fused form changes more than the fusion (e.g. how a GEMM
     * is partitioned). The record then splits the speedup into implementation
     * (unfused → control) and fusion (control → fused). */
    bool (*has_control)(void *state);
    void (*teardown)(void *state);
    /* Optional: library versions and build facts for the host block. */
    void (*inventory)(cJSON *libs);
    /* Optional: this library's dense GEMM rate for a dtype (GFLOP/s, 0 when it
     * has none), so that the device's ceiling is the best any library reaches. */
    double (*gemm_gflops)(fc_dtype dt);
} fc_backend;

/* A set-up backend as the timing engine's launch function (fc_launch_fn):
 * fc_backend_launch(&(fc_backend_call){b, state}, v, e) runs b->run(state, v, e). */
typedef struct fc_backend_call {
    const fc_backend *b;
    void *state;
} fc_backend_call;
int fc_backend_launch(void *call, fc_variant v, fc_err *e);

#endif
