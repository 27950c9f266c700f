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
    char name[768]; /* e.g. "cblas_sgemm(openblas 0.3.21 SkylakeX) + bias(omp) + relu(omp)" */
    int nkernels;   /* library calls or kernels per execution */
    int nreorders;  /* of those, layout conversions around a call that takes another layout than the problem's */
    bool fallback;  /* a reference or generic implementation stood in for a fast one */
    char fallback_why[160];
    char kernel[16]; /* the kernel design an option chose (fc_attn_kernel_words), "decode", or "" */
    /* The FLOPs the implementation performs where its algorithm does other arithmetic
     * than the problem's count (a Winograd convolution: its transforms and its
     * products in the transform domain); 0: the problem's count. The percentages of
     * the GEMM ceiling and of the roofline are of this work, so that a cheaper
     * algorithm shows as what it is instead of as a rate above the ceiling. */
    double flops_performed;
    /* Of the variant's bytes (fc_cost's), those it writes past the caches (streaming
     * stores), as the setup decided; 0: none. Read from a document that does not say
     * (written before this field): -1, unknown. */
    double streamed_bytes;
} fc_impl;

/* ---- How a backend runs each op: its op table.
 *
 * A backend keeps one row per op it implements, indexed by fc_op. supports() turns
 * down a pattern with an op the table has no row for (fc_op_table_fits), so a new
 * pattern runs only where every op of it is known; describe() names both variants
 * by walking the pattern's ops through the rows, so no pattern is described by
 * another's name. */
typedef enum {
    FC_FUSE_CALL,     /* the fused form's one call: the chain's first op after its prologue */
    FC_FUSE_FOLD,     /* folded into that call's operands or arguments (BN into W and b, 1/√d into alpha) */
    FC_FUSE_EPILOGUE, /* applied to the call's output before it is stored (bias, activation, residual) */
    FC_FUSE_KERNEL,   /* makes the fused form a kernel of its own, named whole (softmax, P·V) */
    FC_FUSE_PROLOGUE, /* applied to the call's input as it is loaded, never stored whole (GELU on x) */
    FC_FUSE_PASS,     /* one pass of its own over the call's stored output, where the library has no
                         epilogue for it (act-and-mul after a GEMM): the fused form is then two calls */
} fc_fuse_part;

typedef struct fc_op_impl {
    const char *unfused;    /* its own call or kernel in the unfused chain; NULL: no implementation */
    fc_fuse_part part;      /* what it is in the fused form */
    const char *fused;      /* its name there */
    fc_fuse_part also_part; /* a second piece of the op in the fused form (a conv's own bias) ... */
    const char *also;       /* ... and its name, or NULL */
} fc_op_impl;

/* Names the detail of a row's "%s" for op in variant v ("nhwc", an algorithm, the
 * library call that ran); returns a string or buf. */
typedef const char *(*fc_op_detail_fn)(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n);

/* Whether the table runs pat: a row for every op; prologue steps first, then the
 * CALL and no other; folds before epilogue steps; at most one activation (relu,
 * gelu), ending the epilogue (a gated unit's silu acts on the gate half, and the
 * gate mul after it ends the product); nothing but kernels after a kernel, nothing
 * but the pass after a pass. When not, `why` says which op is missing or misplaced. */
bool fc_op_table_fits(const fc_op_impl *table, const fc_pattern *pat, const char *backend, char *why, size_t n);
/* Index of the op whose row is the CALL: the first after the prologue steps. */
int fc_op_table_call(const fc_op_impl *table, const fc_pattern *pat);
/* Index of the last of pat's ops whose row is a KERNEL (the kernel that runs the fused
 * form), or -1 when the fused form is the call. */
int fc_op_table_kernel(const fc_op_impl *table, const fc_pattern *pat);
/* Calls or kernels the fused form runs: one, or two when a PASS follows the call. */
int fc_op_table_fused_kernels(const fc_op_impl *table, const fc_pattern *pat);
/* How many pieces of pat's chain are in `part` (also pieces included). */
int fc_op_table_count(const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part);
/* The name of the last piece of pat's chain in `part` (also pieces included), or NULL. */
const char *fc_op_table_last(const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part);

/* Appends to impl->name (which stays terminated when full). */
void fc_impl_addf(fc_impl *impl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends op's name in variant v (its row's unfused or fused text), "%s" replaced by
 * detail's answer (NULL detail: nothing). */
void fc_impl_add_op(fc_impl *impl, const fc_op_impl *table, fc_op op, fc_variant v, fc_op_detail_fn detail,
                    const void *ctx);
/* Appends the unfused chain: each op's name, joined by " -> ". */
void fc_impl_add_chain(fc_impl *impl, const fc_op_impl *table, const fc_pattern *pat, fc_op_detail_fn detail,
                       const void *ctx);
/* Appends the names of the pieces of pat's chain in `part`, in chain order, joined by
 * sep between open and close (nothing at all when there are none); returns how many. */
int fc_impl_add_part(fc_impl *impl, const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part, const char *open,
                     const char *sep, const char *close);

typedef struct fc_backend {
    const char *name;   /* "<device>.<provider>", as in FC_BACKEND_LIST */
    const char *device; /* device name, as in FC_DEVICE_LIST */
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
     * record is skipped with the library's reason instead of failed. However it
     * returns, *state is NULL or what teardown() frees, built in part or whole:
     * teardown() follows a failed or declined setup too. */
    int (*setup)(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e);
    /* One execution of a variant (asynchronous on devices that queue work). */
    int (*run)(void *state, fc_variant v, fc_err *e);
    /* Copies the variant's output to host memory (waits for the device). */
    int (*output)(void *state, fc_variant v, float *dst, fc_err *e);
    /* Fills the variant's output with NaN, so that an unwritten element shows; for a
     * variant that accumulates into its output (in_place), puts its input back there
     * instead. */
    int (*poison)(void *state, fc_variant v, fc_err *e);
    void (*describe)(void *state, fc_variant v, fc_impl *impl);
    /* Optional: whether this setup also runs FC_CONTROL — the fused form's main
     * operation done the same way but without the fusion, then the unfused chain's
     * passes — because the fused form changes more than the fusion (e.g. how a GEMM
     * is partitioned). The record then splits the speedup into implementation
     * (unfused → control) and fusion (control → fused). */
    bool (*has_control)(void *state);
    /* Optional: whether variant v accumulates into its output, which is also an input
     * (oneDNN's sum post-op: the residual's buffer is the output, as a network's
     * in-place add has it), so that its output after repeated calls is not the one
     * verified. The check after timing then runs it once more from a poison() that
     * put its input back. */
    bool (*in_place)(void *state, fc_variant v);
    void (*teardown)(void *state);
    /* Optional: library versions and build facts for the host block. */
    void (*inventory)(cJSON *libs);
    /* Optional: this library's dense GEMM rate for a dtype (GFLOP/s, 0 when it
     * has none), so that the device's ceiling is the best any library reaches. */
    double (*gemm_gflops)(fc_dtype dt);
    /* Optional (NULL: nothing): of the bytes variant v of p moves (fc_cost), those it
     * writes past the caches (streaming stores) on a device whose last-level cache
     * holds llc bytes, as describe() says of a setup on such a device. The
     * prediction model moves them at the memory's rate whatever the cache holds. */
    double (*streamed_bytes)(const fc_problem *p, fc_variant v, double llc);
} fc_backend;

/* A set-up backend as the timing engine's launch function (fc_launch_fn):
 * fc_backend_launch(&(fc_backend_call){b, state}, v, e) runs b->run(state, v, e). */
typedef struct fc_backend_call {
    const fc_backend *b;
    void *state;
} fc_backend_call;
int fc_backend_launch(void *call, fc_variant v, fc_err *e);

#endif
