/* conformance.h — one backend conformance test for every device. For each backend
 * on the device (or those named), every pattern of the registry, every shape of its
 * family and every dtype the backend supports, both variants are checked against
 * the float64 reference:
 *
 *   - describe() names what ran, with no fallback, one kernel for the fused form (two
 *     at most for a gated unit) and one per op (or more) for the unfused chain;
 *   - NaN poison reaches the output (first and last element) and one run overwrites it;
 *   - the output is within the problem's tolerance (fc_reference_tolerance: wider over
 *     a few nonzero outputs);
 *   - a second run gives the same output (within a tenth of the tolerance);
 *   - replayed from a captured graph of two calls (devices with graphs, when asked);
 *   - fused and unfused agree within twice the tolerance (each is within one of the
 *     reference).
 *
 * A pattern added to the registry is checked on every backend that says it supports
 * it; a backend that does not must say why. test_backends (CPU) and test_gpu (CUDA)
 * run it with their own options. */
#ifndef FC_CONFORMANCE_H
#define FC_CONFORMANCE_H

#include "backend.h"

typedef struct fc_conf_opts {
    const char *device;   /* the device whose backends are checked ("cpu", "cuda") */
    const fc_device *dev; /* that device, opened: */
    void *devctx;
    const char *backends;      /* comma-separated names; NULL: every built backend of the device */
    const char *const *shapes; /* "k=v,..." of any family; NULL: the shared list (see quick) */
    size_t nshapes;
    bool quick;             /* the shared list's short subset (sanitizer runs) */
    const fc_dtype *dtypes; /* NULL: every dtype */
    int ndtypes;
    bool graph;                /* also replay each variant from a captured graph */
    bool exact_kernels;        /* the unfused chain runs exactly one kernel per op */
    bool library_may_refuse;   /* a library turning a 16-bit or tf32 problem with a dimension not a
                                multiple of 8 down at setup is reported, not failed
                                (fc_conf_library_refusal) */
    bool cold;                 /* the workloads say the caches are flushed before each call (fc_workload.cold) */
    const char *unimplemented; /* patterns no backend of the device implements (comma-separated): each
                                  must be turned down by every backend, with a reason */
    uint64_t seed;
} fc_conf_opts;

typedef struct fc_conf_result {
    int backends;    /* backends checked */
    int checked;     /* backend x pattern x shape x dtype x variant combinations that passed through */
    int unsupported; /* problems a backend turned down in supports() (with a reason) */
    int refused;     /* problems a library turned down at setup (library_may_refuse) */
    int controls;    /* problems checked with a control variant too */
    int failures;    /* failed checks, each printed */
} fc_conf_result;

void fc_conformance(const fc_conf_opts *o, fc_conf_result *r);

/* Whether a setup that returned rc with message msg is a library turning the problem
 * down (rc FC_DECLINED: no algorithm for this dtype, layout and shape; or a call
 * answering NOT_SUPPORTED) where that is allowed: a 16-bit or tf32 problem with a
 * channel-like dimension (c, k, m, n; not conv's batch n) not a multiple of 8. */
bool fc_conf_library_refusal(const fc_problem *p, int rc, const char *msg);

#endif
