/* custom_norm.c — cuda.custom's norm part (custom_parts.h): the norm family on
 * fusecal's kernels (kernels/norm.cu), every dtype, sums in fp32.
 *
 *   unfused  as an eager framework runs it, each op a kernel writing its result in the
 *            dtype: add (x + r) → layer norm (one kernel with its mean and variance, as
 *            PyTorch's is) or RMSNorm, add_rmsnorm's add writing h where the output
 *            holds it; RMSNorm per head → rope.
 *   fused    one kernel: add + layer norm, add + RMSNorm writing h and y, per-head
 *            RMSNorm + rope; each input read once, each output written once, the row
 *            (a head) in registers between its statistics and its normalization.
 * Rows longer than a block's registers hold (fck_norm_plan_make: 16384, 8192 where a
 * row is not a whole number of 16-byte vectors) and heads over 1024 are turned down.
 */
#include "cuda_common.h"
#include "custom_parts.h"
#include "kernel_logic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cn_state {
    fc_problem p;
    fc_cuda_ctx *c;
    void *x, *r, *gamma, *beta;
    float *cs; /* qk_norm_rope's fp32 cos/sin table [m, d], made at setup */
    fc_cuda_chain ch;
} cn_state;

/* How the norm part runs each op ("%s": the layout of the row or head over threads). */
static const fc_op_impl cn_ops[FC_NOPS] = {
    [FC_OP_ADD] = {"add kernel(fusecal, %s)", FC_FUSE_CALL, "add"},
    [FC_OP_LAYERNORM] = {"layernorm kernel(fusecal, %s)", FC_FUSE_KERNEL,
                         "fusecal add+layernorm kernel: x and r read once, y written once, %s"},
    [FC_OP_RMSNORM] = {"rmsnorm kernel(fusecal, %s)", FC_FUSE_KERNEL,
                       "fusecal add+rmsnorm kernel: x and r read once, h and y written once, %s"},
    [FC_OP_HEAD_RMSNORM] = {"rmsnorm kernel(fusecal, per head, %s)", FC_FUSE_CALL, "rmsnorm"},
    [FC_OP_ROPE] = {"rope kernel(fusecal, rotate-half, fp32 cos/sin table, %s)", FC_FUSE_KERNEL,
                    "fusecal rmsnorm+rope kernel: each head read once and written once, %s"},
};

static bool heads(const fc_problem *p) { return fc_pattern_has_op(p->pat, FC_OP_HEAD_RMSNORM); }

static int esize(fc_dtype dt) { return (int)fc_dtype_size(dt); }
/* the plans' `aligned` for fusecal's own buffers: each tensor from cudaMalloc, and h
 * right after y, on 16 bytes wherever a row is whole 16-byte vectors */
enum { BUFS_ALIGNED = 1 };

static bool cn_supports(const fc_problem *p, char *why, size_t n)
{
    if (!fc_op_table_fits(cn_ops, p->pat, "cuda.custom", why, n)) return false;
    const int64_t *d = p->d;
    if (heads(p)) {
        if (d[FC_NORM_M] * d[FC_NORM_H] > INT32_MAX) {
            snprintf(why, n, "m*h = %lld heads are more than one launch of fusecal's head kernels takes (%d)",
                     (long long)(d[FC_NORM_M] * d[FC_NORM_H]), INT32_MAX);
            return false;
        }
        if (fck_head_plan_make((int)d[FC_NORM_D], esize(p->dtype), BUFS_ALIGNED).tph == 0) {
            snprintf(why, n, "fusecal's head kernels hold a head in the registers of a warp: d <= 1024 (asked: d=%lld)",
                     (long long)d[FC_NORM_D]);
            return false;
        }
        return true;
    }
    const fck_softmax_plan pl = fck_norm_plan_make((size_t)d[FC_NORM_N], esize(p->dtype), BUFS_ALIGNED);
    if (pl.threads == 0) {
        snprintf(why, n,
                 "fusecal's norm kernels hold a row in the registers of a block: n <= %zu for %s (asked: n=%lld)",
                 fck_norm_max_cols(pl.vec), fc_dtype_name(p->dtype), (long long)d[FC_NORM_N]);
        return false;
    }
    return true;
}

static int cn_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    double M = (double)p->d[FC_NORM_M], N = (double)p->d[FC_NORM_N], D = (double)p->d[FC_NORM_D];
    double E = (double)fc_dtype_size(p->dtype);
    double in = heads(p) ? M * N * E + D * E + 4 * M * D : (2 * M * N + 2 * N) * E;
    double b = in + fc_cuda_chain_bytes(p);
    if (b > 9e18) return fc_errf(e, "problem '%s' is too large for device memory", p->pat->name);
    *bytes = (size_t)b;
    return 0;
}

static int upload(cn_state *s, const fc_tensor *t, void **dev, fc_err *e)
{
    if (t->n == 0) return 0;
    return fc_cuda_upload(s->c, t->data, t->n, s->p.dtype, dev, t->name, e);
}

static int cn_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    cn_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->c = devctx;
    if (upload(s, &w->t[FC_NORM_TX], &s->x, e) || upload(s, &w->t[FC_NORM_TR], &s->r, e) ||
        upload(s, &w->t[FC_NORM_TGAMMA], &s->gamma, e) || upload(s, &w->t[FC_NORM_TBETA], &s->beta, e))
        return -1;
    if (heads(p)) {
        size_t n = (size_t)(p->d[FC_NORM_M] * p->d[FC_NORM_D]);
        float *cs = fc_xmalloc(n * sizeof *cs);
        fc_rope_table(p->d[FC_NORM_M], p->d[FC_NORM_D], cs);
        int rc = fc_cuda_upload(s->c, cs, n, FC_FP32, (void **)&s->cs, "the rotary table", e);
        free(cs);
        if (rc) return -1;
    }
    return fc_cuda_chain_alloc(&s->ch, s->c, p, w, e);
}

static int run_fused(cn_state *s, void *out, size_t M, size_t N, size_t D, fc_err *e)
{
    fck_dtype kd = fc_cuda_kdt(s->p.dtype);
    cudaStream_t st = s->c->stream;
    void *h = (char *)out + M * N * fc_dtype_size(s->p.dtype); /* add_rmsnorm's second output */
    if (heads(&s->p)) {
        FC_CU(fck_head_norm_rope(kd, s->x, s->gamma, s->cs, (float)FC_RMS_EPS, out, M, N / D, D, 1, 1, st));
    } else if (fc_pattern_has_op(s->p.pat, FC_OP_LAYERNORM)) {
        FC_CU(fck_layernorm_rows(kd, s->x, s->r, s->gamma, s->beta, (float)FC_LN_EPS, out, M, N, st));
    } else {
        FC_CU(fck_rmsnorm_rows(kd, s->x, s->r, s->gamma, (float)FC_RMS_EPS, out, h, M, N, st));
    }
    return 0;
}

static int cn_run(void *state, fc_variant v, fc_err *e)
{
    cn_state *s = state;
    const int64_t *d = s->p.d;
    size_t M = (size_t)d[FC_NORM_M], N = (size_t)d[FC_NORM_N], D = (size_t)d[FC_NORM_D];
    fck_dtype kd = fc_cuda_kdt(s->p.dtype);
    cudaStream_t st = s->c->stream;
    void *out = s->ch.out[v], *tmp = fc_cuda_chain_dst(&s->ch, 0);
    if (v == FC_FUSED) return run_fused(s, out, M, N, D, e);
    if (heads(&s->p)) {
        FC_CU(fck_head_norm_rope(kd, s->x, s->gamma, NULL, (float)FC_RMS_EPS, tmp, M, N / D, D, 1, 0, st));
        FC_CU(fck_head_norm_rope(kd, tmp, NULL, s->cs, 0.0f, out, M, N / D, D, 0, 1, st));
    } else if (fc_pattern_has_op(s->p.pat, FC_OP_LAYERNORM)) {
        FC_CU(fck_add_rows(kd, s->x, s->r, tmp, M, N, st));
        FC_CU(fck_layernorm_rows(kd, tmp, NULL, s->gamma, s->beta, (float)FC_LN_EPS, out, M, N, st));
    } else {
        void *h = (char *)out + M * N * fc_dtype_size(s->p.dtype);
        FC_CU(fck_add_rows(kd, s->x, s->r, h, M, N, st));
        FC_CU(fck_rmsnorm_rows(kd, h, NULL, s->gamma, (float)FC_RMS_EPS, out, NULL, M, N, st));
    }
    return 0;
}

static int cn_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    cn_state *s = state;
    return fc_cuda_chain_output(&s->ch, v, dst, e);
}

static int cn_poison(void *state, fc_variant v, fc_err *e)
{
    cn_state *s = state;
    return fc_cuda_chain_poison(&s->ch, v, e);
}

/* The layout of a row or a head over the threads (the kernels' plans). */
static const char *cn_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    (void)v;
    (void)op;
    const fc_problem *p = ctx;
    const char *what = p->dtype == FC_BF16 || p->dtype == FC_FP16 ? "fp32 sums" : "fp32";
    if (heads(p)) {
        fck_head_plan hp = fck_head_plan_make((int)p->d[FC_NORM_D], esize(p->dtype), BUFS_ALIGNED);
        snprintf(buf, n, "a head of %lld on %d threads, %d pair(s) of %d-element %s each, %s",
                 (long long)p->d[FC_NORM_D], hp.tph, hp.np, hp.vec, hp.vec > 1 ? "16-byte vectors" : "scalars", what);
        return buf;
    }
    fck_softmax_plan rp = fck_norm_plan_make((size_t)p->d[FC_NORM_N], esize(p->dtype), BUFS_ALIGNED);
    snprintf(buf, n, "the row of %lld in the registers of %d threads, %d x %d %s each, %s", (long long)p->d[FC_NORM_N],
             rp.threads, rp.nvec, rp.vec, rp.vec > 1 ? "elements in 16-byte vectors" : "elements", what);
    return buf;
}

static void cn_describe(void *state, fc_variant v, fc_impl *impl)
{
    cn_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    if (v == FC_UNFUSED) fc_impl_add_chain(impl, cn_ops, pat, cn_detail, &s->p);
    else
        fc_impl_add_op(impl, cn_ops, pat->ops[fc_op_table_kernel(cn_ops, pat)], FC_FUSED, cn_detail, &s->p);
    impl->nkernels = v == FC_UNFUSED ? pat->nops : 1;
}

static void cn_teardown(void *state)
{
    cn_state *s = state;
    if (!s) return;
    cudaStreamSynchronize(s->c->stream);
    fc_cuda_chain_free(&s->ch);
    fc_cuda_free(s->x);
    fc_cuda_free(s->r);
    fc_cuda_free(s->gamma);
    fc_cuda_free(s->beta);
    fc_cuda_free(s->cs);
    free(s);
}

const fc_backend fc_custom_norm = {
    .name = "cuda.custom",
    .device = "cuda",
    .summary = "fusecal's norm kernels: add, layer norm, RMSNorm, rope; fused in one read and one write",
    .available = fc_cuda_usable,
    .supports = cn_supports,
    .device_bytes = cn_device_bytes,
    .setup = cn_setup,
    .run = cn_run,
    .output = cn_output,
    .poison = cn_poison,
    .describe = cn_describe,
    .teardown = cn_teardown,
};
