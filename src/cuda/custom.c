/* custom.c — the registered cuda.custom: it answers through the part that owns the
 * problem's family (custom_parts.h); a setup's state remembers its part. */
#include "cuda_common.h"
#include "custom_parts.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct part_state {
    const fc_backend *part;
    void *state;
} part_state;

static const fc_backend *part_of(const fc_problem *p)
{
    switch (p->pat->family) {
    case FC_FAM_NORM: return &fc_custom_norm;
    case FC_FAM_LINEAR: return &fc_custom_linear;
    default: return &fc_custom_attention;
    }
}

static bool cc_supports(const fc_problem *p, char *why, size_t n) { return part_of(p)->supports(p, why, n); }

static int cc_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    return part_of(p)->device_bytes(p, bytes, e);
}

static int cc_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    part_state *ps = fc_xcalloc(1, sizeof *ps);
    ps->part = part_of(p);
    *state = ps;
    return ps->part->setup(p, w, devctx, &ps->state, e);
}

static int cc_run(void *state, fc_variant v, fc_err *e)
{
    part_state *ps = state;
    return ps->part->run(ps->state, v, e);
}

static int cc_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    part_state *ps = state;
    return ps->part->output(ps->state, v, dst, e);
}

static int cc_poison(void *state, fc_variant v, fc_err *e)
{
    part_state *ps = state;
    return ps->part->poison(ps->state, v, e);
}

static void cc_describe(void *state, fc_variant v, fc_impl *impl)
{
    part_state *ps = state;
    ps->part->describe(ps->state, v, impl);
}

static bool cc_has_control(void *state)
{
    part_state *ps = state;
    return ps->part->has_control && ps->part->has_control(ps->state);
}

static void cc_teardown(void *state)
{
    part_state *ps = state;
    if (!ps) return;
    if (ps->state) ps->part->teardown(ps->state);
    free(ps);
}

/* the kernels' build facts and any GEMM rate: the attention part's */
static void cc_inventory(cJSON *libs)
{
    if (fc_custom_attention.inventory) fc_custom_attention.inventory(libs);
}

static double cc_gemm_gflops(fc_dtype dt)
{
    return fc_custom_attention.gemm_gflops ? fc_custom_attention.gemm_gflops(dt) : 0;
}

const fc_backend fc_backend_custom = {
    .name = "cuda.custom",
    .device = "cuda",
    .summary =
        "cuBLAS GEMMs + fusecal softmax kernels; fused: GEMM with alpha, fused QK^T+softmax, flash attention "
        "(mma.sync); norms: fusecal row and head kernels, fused in one read and one write; gelu_linear and "
        "linear_swiglu: fusecal's GEMM with gelu on x's tiles as they enter shared memory, or silu(g)*u formed "
        "in its registers (mma.sync, bf16, fp16)",
    .available = fc_cuda_usable,
    .supports = cc_supports,
    .device_bytes = cc_device_bytes,
    .setup = cc_setup,
    .run = cc_run,
    .output = cc_output,
    .poison = cc_poison,
    .describe = cc_describe,
    .has_control = cc_has_control,
    .teardown = cc_teardown,
    .inventory = cc_inventory,
    .gemm_gflops = cc_gemm_gflops,
};
