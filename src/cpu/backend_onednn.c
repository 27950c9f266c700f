/* backend_onednn.c — cpu.onednn: oneDNN primitives through its C API (2.x or 3.x).
 *
 *   unfused  one primitive per op, each writing to memory: matmul → binary add
 *            (bias, residual) → eltwise; convolution (with its bias) →
 *            batch_normalization (inference, global stats) → eltwise; matmul →
 *            eltwise linear (the 1/√d scale).
 *   fused    post-ops: matmul with bias + binary add + eltwise; convolution with
 *            BN folded into weights and bias + eltwise relu; matmul with an output
 *            scale.
 * oneDNN's primitive API has no primitive that fuses softmax with the matmuls around
 * it, so qk_softmax and attention are not offered here (cpu.openblas implements them);
 * qk_scale runs grouped-query heads as one matmul batched over the key/value heads.
 * Weights take the layout the primitive asks for ("any"), reordered once at setup
 * as an inference framework does; activations keep the problem's layout. Every
 * primitive's implementation string is recorded, and a reference ("ref:")
 * implementation is flagged as a fallback.
 *
 * The two C APIs differ in how descriptors are made (2.x: op descriptors and memory
 * descriptors by value; 3.x: primitive descriptors directly and memory descriptors
 * as handles) and in the output scale (2.x: output scales; 3.x: a weights scale
 * passed at execution). The compatibility layer below (md_*, pd_*, po_eltwise,
 * attr_scale) hides that; the builders are written once.
 */
#include "backend.h"
#include "cpu_chain.h"
#include "cpu_ops.h"
#include "stats.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRIMS 6
#define MAX_MEMS 48
#define MAX_MDS 16

#if DNNL_VERSION_MAJOR >= 3
#define FC_DNNL3 1
typedef const_dnnl_memory_desc_t cmd; /* a memory descriptor, as the API takes it */
#else
#define FC_DNNL3 0
typedef const dnnl_memory_desc_t *cmd;
#endif

#define FC_DNNL(call)                                                                          \
    do {                                                                                       \
        dnnl_status_t st_ = (call);                                                            \
        if (st_ != dnnl_success || fc_fault_backend("onednn")) {                               \
            return fc_errf(e, "oneDNN call %s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                           st_ != dnnl_success ? dnnl_status2str(st_) : "injected fault");     \
        }                                                                                      \
    } while (0)

typedef struct prim {
    const char *op;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    dnnl_exec_arg_t args[10];
    int nargs;
    char impl[96];
} prim;

/* The memory descriptors a setup makes, owned until teardown. */
typedef struct md_pool {
    int n;
    dnnl_memory_desc_t md[MAX_MDS]; /* 3.x: handles; 2.x: the descriptors themselves */
} md_pool;

typedef struct od_state {
    fc_problem p;
    md_pool mds;
    float scale; /* the output scale of qk_scale's fused matmul (3.x passes it as memory) */
    const fc_workload *w;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    prim chain[FC_NVARIANTS][MAX_PRIMS];
    int nprims[FC_NVARIANTS];
    dnnl_memory_t mems[MAX_MEMS];
    int nmems;
    fc_cpu_chain ch;
    bool declined; /* oneDNN has no implementation for a primitive of the chain */
} od_state;

static bool od_available(char *why, size_t n)
{
    dnnl_engine_t eng;
    if (dnnl_engine_get_count(dnnl_cpu) < 1 || dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) {
        snprintf(why, n, "oneDNN found no CPU engine");
        return false;
    }
    dnnl_engine_destroy(eng);
    return true;
}

/* How cpu.onednn runs each op: its primitive in the unfused chain, and its part in
 * the fused primitive: an argument of the call (" with ..."; BN folded into the
 * weights and bias takes the conv's own bias along), or a post-op. */
static const fc_op_impl od_ops[FC_NOPS] = {
    [FC_OP_GEMM] = {"matmul", FC_FUSE_CALL, "matmul"},
    [FC_OP_CONV] = {"convolution", FC_FUSE_CALL, "convolution", FC_FUSE_FOLD, " with bias"},
    [FC_OP_QK] = {"matmul", FC_FUSE_CALL, "matmul"},
    [FC_OP_BIAS] = {"binary_add", FC_FUSE_FOLD, " with bias"},
    [FC_OP_RESID] = {"binary_add", FC_FUSE_EPILOGUE, "binary_add"},
    [FC_OP_RELU] = {"eltwise_relu", FC_FUSE_EPILOGUE, "eltwise_relu"},
    [FC_OP_GELU] = {"eltwise_gelu_tanh", FC_FUSE_EPILOGUE, "eltwise_gelu_tanh"},
    [FC_OP_BN] = {"batch_normalization", FC_FUSE_FOLD, " with BN folded into weights/bias"},
    [FC_OP_SCALE] = {"eltwise_linear", FC_FUSE_FOLD,
                     FC_DNNL3 ? " with weights scale 1/sqrt(d)" : " with output scale 1/sqrt(d)"},
};

static bool od_supports(const fc_problem *p, char *why, size_t n)
{
    if (p->dtype != FC_FP32) {
        snprintf(why, n, "cpu.onednn is built here for fp32 (asked: %s)", fc_dtype_name(p->dtype));
        return false;
    }
    if (!fc_op_table_fits(od_ops, p->pat, "cpu.onednn", why, n)) {
        if (fc_pattern_has_op(p->pat, FC_OP_SOFTMAX))
            snprintf(why, n, "oneDNN's primitive API has no primitive fusing softmax with the matmuls around it");
        return false;
    }
    return true;
}


/* ------------------------------------------------------------------ 2.x / 3.x */

static dnnl_status_t md_new(md_pool *mp, cmd *out, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag,
                            const dnnl_dim_t *strides)
{
    *out = NULL;
    if (mp->n >= MAX_MDS) return dnnl_out_of_memory;
    dnnl_memory_desc_t *m = &mp->md[mp->n];
#if FC_DNNL3
    dnnl_status_t st = strides ? dnnl_memory_desc_create_with_strides(m, nd, dims, dnnl_f32, strides)
                               : dnnl_memory_desc_create_with_tag(m, nd, dims, dnnl_f32, tag);
    if (st == dnnl_success) *out = *m;
#else
    dnnl_status_t st = strides ? dnnl_memory_desc_init_by_strides(m, nd, dims, dnnl_f32, strides)
                               : dnnl_memory_desc_init_by_tag(m, nd, dims, dnnl_f32, tag);
    if (st == dnnl_success) *out = m;
#endif
    if (st == dnnl_success) mp->n++;
    return st;
}

static void md_pool_free(md_pool *mp)
{
#if FC_DNNL3
    for (int i = 0; i < mp->n; i++) dnnl_memory_desc_destroy(mp->md[i]);
#endif
    mp->n = 0;
}

static dnnl_status_t pd_matmul(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd src, cmd wei, cmd bias, cmd dst,
                               const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    return dnnl_matmul_primitive_desc_create(pd, eng, src, wei, bias, dst, attr);
#else
    dnnl_matmul_desc_t d;
    dnnl_status_t st = dnnl_matmul_desc_init(&d, src, wei, bias, dst);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_eltwise(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg, cmd md, float alpha,
                                const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    return dnnl_eltwise_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, alg, md, md, alpha, 0.0f, attr);
#else
    dnnl_eltwise_desc_t d;
    dnnl_status_t st = dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, md, alpha, 0.0f);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_binary_add(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd src0, cmd src1, cmd dst,
                                   const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    return dnnl_binary_primitive_desc_create(pd, eng, dnnl_binary_add, src0, src1, dst, attr);
#else
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, dnnl_binary_add, src0, src1, dst);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_conv(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd src, cmd wei, cmd bias, cmd dst,
                             const dnnl_dims_t strides, const dnnl_dims_t pad_l, const dnnl_dims_t pad_r,
                             const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    const dnnl_dims_t dilates = {0, 0};
    return dnnl_convolution_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, dnnl_convolution_direct, src,
                                                          wei, bias, dst, strides, dilates, pad_l, pad_r, attr);
#else
    dnnl_convolution_desc_t d;
    dnnl_status_t st = dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, src, wei,
                                                          bias, dst, strides, pad_l, pad_r);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

/* inference with global statistics, scale and shift */
static dnnl_status_t pd_bnorm(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd md, float eps,
                              const_dnnl_primitive_attr_t attr)
{
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
#if FC_DNNL3
    return dnnl_batch_normalization_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, md, md, eps, flags,
                                                                  attr);
#else
    dnnl_batch_normalization_desc_t d;
    dnnl_status_t st = dnnl_batch_normalization_forward_desc_init(&d, dnnl_forward_inference, md, eps, flags);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t po_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg)
{
#if FC_DNNL3
    return dnnl_post_ops_append_eltwise(po, alg, 0.0f, 0.0f);
#else
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, 0.0f, 0.0f);
#endif
}

/* A common scale of a matmul's product: 2.x output scales; 3.x a scale of the
 * weights (mask 0), whose value is passed at execution (see scale_arg). */
static dnnl_status_t attr_scale(dnnl_primitive_attr_t attr, const float *scale)
{
#if FC_DNNL3
    (void)scale;
    return dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_WEIGHTS, 0);
#else
    return dnnl_primitive_attr_set_output_scales(attr, 1, 0, scale);
#endif
}

/* ------------------------------------------------------------------ helpers */

static int mem(od_state *s, cmd md, void *handle, dnnl_memory_t *out, fc_err *e)
{
    if (s->nmems >= MAX_MEMS) return fc_errf(e, "cpu.onednn: too many memory objects");
    FC_DNNL(dnnl_memory_create(out, md, s->eng, handle));
    s->mems[s->nmems++] = *out;
    return 0;
}

#if FC_DNNL3
#define MD_CALL(strided) ((strided) ? "dnnl_memory_desc_create_with_strides" : "dnnl_memory_desc_create_with_tag")
#else
#define MD_CALL(strided) ((strided) ? "dnnl_memory_desc_init_by_strides" : "dnnl_memory_desc_init_by_tag")
#endif

/* A memory descriptor owned by the setup: by format tag, or by strides when given. */
static int md_make(od_state *s, cmd *md, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag,
                   const dnnl_dim_t *strides, fc_err *e)
{
    dnnl_status_t st = md_new(&s->mds, md, nd, dims, tag, strides);
    if (st != dnnl_success || fc_fault_backend("onednn"))
        return fc_errf(e, "oneDNN call %s failed: %s", MD_CALL(strides != NULL),
                       st != dnnl_success ? dnnl_status2str(st) : "injected fault");
    return 0;
}

static int md_tag(od_state *s, cmd *md, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag, fc_err *e)
{
    return md_make(s, md, nd, dims, tag, NULL, e);
}

/* Attributes of every primitive: the scratchpad user-managed, so that nothing is
 * allocated while timing. */
static int new_attr(dnnl_primitive_attr_t *attr, fc_err *e)
{
    FC_DNNL(dnnl_primitive_attr_create(attr));
    dnnl_status_t st = dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (st != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        FC_DNNL(st);
    }
    return 0;
}

/* Completes a primitive whose descriptor creation returned st (the attributes are
 * the caller's, destroyed here): the primitive, its implementation string, its
 * scratchpad. */
static int make_prim(od_state *s, const char *op, dnnl_status_t st, dnnl_primitive_attr_t attr, prim *pr, fc_err *e)
{
    dnnl_primitive_attr_destroy(attr);
    if (st != dnnl_success) {
        s->declined = st == dnnl_unimplemented;
        return fc_errf(e, "oneDNN has no %s implementation for this problem: %s", op, dnnl_status2str(st));
    }
    FC_DNNL(dnnl_primitive_create(&pr->p, pr->pd));
    const char *impl = NULL;
    FC_DNNL(dnnl_primitive_desc_query(pr->pd, dnnl_query_impl_info_str, 0, &impl));
    snprintf(pr->impl, sizeof pr->impl, "%s", impl ? impl : "?");
    pr->op = op;
    cmd sp = dnnl_primitive_desc_query_md(pr->pd, dnnl_query_scratchpad_md, 0);
    if (sp && dnnl_memory_desc_get_size(sp) > 0) {
        dnnl_memory_t m;
        if (mem(s, sp, DNNL_MEMORY_ALLOCATE, &m, e) != 0) return -1;
        pr->args[pr->nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m};
    }
    return 0;
}

static void arg(prim *pr, int a, dnnl_memory_t m) { pr->args[pr->nargs++] = (dnnl_exec_arg_t){a, m}; }

static prim *next_prim(od_state *s, fc_variant v) { return &s->chain[v][s->nprims[v]++]; }

/* Reorders user weights (md `from`, data `src`) into the layout `pd` wants for
 * `what`; returns the memory to pass. */
static int reorder_weights(od_state *s, cmd from, float *src, dnnl_primitive_desc_t pd, dnnl_query_t what,
                           dnnl_memory_t *out, fc_err *e)
{
    cmd want = dnnl_primitive_desc_query_md(pd, what, 0);
    dnnl_memory_t user;
    if (mem(s, from, src, &user, e) != 0) return -1;
    if (dnnl_memory_desc_equal(from, want)) {
        *out = user;
        return 0;
    }
    if (mem(s, want, DNNL_MEMORY_ALLOCATE, out, e) != 0) return -1;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t r;
    FC_DNNL(dnnl_reorder_primitive_desc_create(&rpd, from, s->eng, want, s->eng, NULL));
    FC_DNNL(dnnl_primitive_create(&r, rpd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, *out}};
    dnnl_status_t st = dnnl_primitive_execute(r, s->stream, 2, args);
    dnnl_stream_wait(s->stream);
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(rpd);
    if (st != dnnl_success) return fc_errf(e, "oneDNN weight reorder failed: %s", dnnl_status2str(st));
    return 0;
}

/* An elementwise op of the unfused chain on a tensor of descriptor md. */
static int eltwise(od_state *s, fc_variant v, cmd md, dnnl_alg_kind_t alg, float alpha, float *src, float *dst,
                   fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    prim *pr = next_prim(s, v);
    const char *name = alg == dnnl_eltwise_relu        ? "eltwise_relu"
                       : alg == dnnl_eltwise_gelu_tanh ? "eltwise_gelu_tanh"
                                                       : "eltwise_linear";
    if (make_prim(s, name, pd_eltwise(&pr->pd, s->eng, alg, md, alpha, attr), attr, pr, e) != 0) return -1;
    dnnl_memory_t ms, md2;
    if (mem(s, md, src, &ms, e) || mem(s, md, dst, &md2, e)) return -1;
    arg(pr, DNNL_ARG_SRC, ms);
    arg(pr, DNNL_ARG_DST, md2);
    return 0;
}

/* y = a + b (b broadcast by its descriptor) */
static int binary_add(od_state *s, fc_variant v, cmd md, cmd md1, float *src, float *src1, float *dst, fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    prim *pr = next_prim(s, v);
    if (make_prim(s, "binary_add", pd_binary_add(&pr->pd, s->eng, md, md1, md, attr), attr, pr, e) != 0) return -1;
    dnnl_memory_t m0, m1, m2;
    if (mem(s, md, src, &m0, e) || mem(s, md1, src1, &m1, e) || mem(s, md, dst, &m2, e)) return -1;
    arg(pr, DNNL_ARG_SRC_0, m0);
    arg(pr, DNNL_ARG_SRC_1, m1);
    arg(pr, DNNL_ARG_DST, m2);
    return 0;
}

/* Post-ops of a fused primitive: a binary add of `add` (NULL: none), then the
 * eltwise `act` (dnnl_alg_kind_undef: none). */
static int set_post_ops(dnnl_primitive_attr_t attr, cmd add, dnnl_alg_kind_t act, fc_err *e)
{
    dnnl_post_ops_t po;
    FC_DNNL(dnnl_post_ops_create(&po));
    dnnl_status_t st = dnnl_success;
    if (add) st = dnnl_post_ops_append_binary(po, dnnl_binary_add, add);
    if (st == dnnl_success && act != dnnl_alg_kind_undef) st = po_eltwise(po, act);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    FC_DNNL(st);
    return 0;
}

/* ------------------------------------------------------------------ linear */

static int build_linear(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    dnnl_dim_t M = p->d[FC_LIN_M], K = p->d[FC_LIN_K], N = p->d[FC_LIN_N];
    cmd src_md, wuser_md, wany_md, dst_md, b_md;
    if (md_tag(s, &src_md, 2, (dnnl_dims_t){M, K}, dnnl_ab, e) ||
        md_tag(s, &wuser_md, 2, (dnnl_dims_t){K, N}, dnnl_ba, e) ||
        md_tag(s, &wany_md, 2, (dnnl_dims_t){K, N}, dnnl_format_tag_any, e) ||
        md_tag(s, &dst_md, 2, (dnnl_dims_t){M, N}, dnnl_ab, e) || md_tag(s, &b_md, 2, (dnnl_dims_t){1, N}, dnnl_ab, e))
        return -1;
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID);
    dnnl_alg_kind_t act = fc_pattern_has_op(p->pat, FC_OP_RELU)   ? dnnl_eltwise_relu
                          : fc_pattern_has_op(p->pat, FC_OP_GELU) ? dnnl_eltwise_gelu_tanh
                                                                  : dnnl_alg_kind_undef;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        bool fused = v == FC_FUSED;
        dnnl_primitive_attr_t attr;
        if (new_attr(&attr, e)) return -1;
        if (fused && set_post_ops(attr, resid ? dst_md : NULL, act, e)) return -1;
        prim *pr = next_prim(s, (fc_variant)v);
        dnnl_status_t st = pd_matmul(&pr->pd, s->eng, src_md, wany_md, fused ? b_md : NULL, dst_md, attr);
        if (make_prim(s, "matmul", st, attr, pr, e)) return -1;
        dnnl_memory_t ms, mw, md;
        float *dst = fused ? s->ch.out[FC_FUSED] : fc_cpu_chain_dst(&s->ch, 0);
        if (mem(s, src_md, w->t[FC_LIN_TX].data, &ms, e) ||
            reorder_weights(s, wuser_md, w->t[FC_LIN_TW].data, pr->pd, dnnl_query_weights_md, &mw, e) ||
            mem(s, dst_md, dst, &md, e))
            return -1;
        arg(pr, DNNL_ARG_SRC, ms);
        arg(pr, DNNL_ARG_WEIGHTS, mw);
        arg(pr, DNNL_ARG_DST, md);
        if (fused) {
            dnnl_memory_t mb;
            if (mem(s, b_md, w->t[FC_LIN_TB].data, &mb, e)) return -1;
            arg(pr, DNNL_ARG_BIAS, mb);
            if (resid) {
                dnnl_memory_t mr;
                if (mem(s, dst_md, w->t[FC_LIN_TR].data, &mr, e)) return -1;
                arg(pr, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mr);
            }
            continue;
        }
        float *cur = dst;
        for (int i = 1; i < p->pat->nops; i++) {
            float *out = fc_cpu_chain_dst(&s->ch, i);
            int r2 = 0;
            switch (p->pat->ops[i]) {
            case FC_OP_BIAS: r2 = binary_add(s, FC_UNFUSED, dst_md, b_md, cur, w->t[FC_LIN_TB].data, out, e); break;
            case FC_OP_RESID: r2 = binary_add(s, FC_UNFUSED, dst_md, dst_md, cur, w->t[FC_LIN_TR].data, out, e); break;
            case FC_OP_RELU: r2 = eltwise(s, FC_UNFUSED, dst_md, dnnl_eltwise_relu, 0, cur, out, e); break;
            case FC_OP_GELU: r2 = eltwise(s, FC_UNFUSED, dst_md, dnnl_eltwise_gelu_tanh, 0, cur, out, e); break;
            default:
                return fc_errf(e, "cpu.onednn: no primitive for op '%s' after a matmul", fc_op_name(p->pat->ops[i]));
            }
            if (r2) return -1;
            cur = out;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ conv */

static int build_conv(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    const int64_t *d = p->d;
    dnnl_format_tag_t act_tag = p->layout == FC_NHWC ? dnnl_nhwc : dnnl_nchw;
    cmd src_md, wuser_md, wany_md, b_md, dst_md;
    if (md_tag(s, &src_md, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_C], d[FC_CONV_H], d[FC_CONV_W]}, act_tag, e) ||
        md_tag(s, &wuser_md, 4, (dnnl_dims_t){d[FC_CONV_K], d[FC_CONV_C], d[FC_CONV_R], d[FC_CONV_S]}, dnnl_oihw, e) ||
        md_tag(s, &wany_md, 4, (dnnl_dims_t){d[FC_CONV_K], d[FC_CONV_C], d[FC_CONV_R], d[FC_CONV_S]},
               dnnl_format_tag_any, e) ||
        md_tag(s, &b_md, 1, (dnnl_dims_t){d[FC_CONV_K]}, dnnl_a, e) ||
        md_tag(s, &dst_md, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_K], d[FC_CONV_P], d[FC_CONV_Q]}, act_tag, e))
        return -1;
    cmd c_md = b_md; /* per-channel BN parameters: one value per output channel, like the bias */
    dnnl_dims_t strides = {d[FC_CONV_STRIDE], d[FC_CONV_STRIDE]};
    dnnl_dims_t pad_l = {d[FC_CONV_PAD], d[FC_CONV_PAD]};
    /* right padding so that the output is exactly p x q */
    dnnl_dims_t pad_r = {(d[FC_CONV_P] - 1) * d[FC_CONV_STRIDE] + d[FC_CONV_R] - d[FC_CONV_H] - d[FC_CONV_PAD],
                         (d[FC_CONV_Q] - 1) * d[FC_CONV_STRIDE] + d[FC_CONV_S] - d[FC_CONV_W] - d[FC_CONV_PAD]};
    bool relu = fc_pattern_has_op(p->pat, FC_OP_RELU);
    for (int v = 0; v < FC_NVARIANTS; v++) {
        bool fused = v == FC_FUSED;
        dnnl_primitive_attr_t attr;
        if (new_attr(&attr, e)) return -1;
        if (fused && relu && set_post_ops(attr, NULL, dnnl_eltwise_relu, e)) return -1;
        prim *pr = next_prim(s, (fc_variant)v);
        dnnl_status_t st = pd_conv(&pr->pd, s->eng, src_md, wany_md, b_md, dst_md, strides, pad_l, pad_r, attr);
        if (make_prim(s, "convolution", st, attr, pr, e)) return -1;
        float *dst = fused ? s->ch.out[FC_FUSED] : fc_cpu_chain_dst(&s->ch, 0);
        dnnl_memory_t ms, mw, mb, md;
        float *wsrc = fused ? w->t[FC_CONV_TWF].data : w->t[FC_CONV_TW].data;
        float *bsrc = fused ? w->t[FC_CONV_TBF].data : w->t[FC_CONV_TB].data;
        if (mem(s, src_md, w->t[FC_CONV_TX].data, &ms, e) ||
            reorder_weights(s, wuser_md, wsrc, pr->pd, dnnl_query_weights_md, &mw, e) || mem(s, b_md, bsrc, &mb, e) ||
            mem(s, dst_md, dst, &md, e))
            return -1;
        arg(pr, DNNL_ARG_SRC, ms);
        arg(pr, DNNL_ARG_WEIGHTS, mw);
        arg(pr, DNNL_ARG_BIAS, mb);
        arg(pr, DNNL_ARG_DST, md);
        if (fused) continue;
        float *cur = dst;
        for (int i = 1; i < p->pat->nops; i++) {
            float *out = fc_cpu_chain_dst(&s->ch, i);
            if (p->pat->ops[i] != FC_OP_RELU && p->pat->ops[i] != FC_OP_BN)
                return fc_errf(e, "cpu.onednn: no primitive for op '%s' after a convolution",
                               fc_op_name(p->pat->ops[i]));
            if (p->pat->ops[i] == FC_OP_RELU) {
                if (eltwise(s, FC_UNFUSED, dst_md, dnnl_eltwise_relu, 0, cur, out, e)) return -1;
            } else {
                dnnl_primitive_attr_t battr;
                if (new_attr(&battr, e)) return -1;
                prim *bp = next_prim(s, FC_UNFUSED);
                if (make_prim(s, "batch_normalization", pd_bnorm(&bp->pd, s->eng, dst_md, (float)FC_BN_EPS, battr),
                              battr, bp, e))
                    return -1;
                dnnl_memory_t m0, m1, mm, mv, msc, msh;
                if (mem(s, dst_md, cur, &m0, e) || mem(s, dst_md, out, &m1, e) ||
                    mem(s, c_md, w->t[FC_CONV_TMEAN].data, &mm, e) || mem(s, c_md, w->t[FC_CONV_TVAR].data, &mv, e) ||
                    mem(s, c_md, w->t[FC_CONV_TGAMMA].data, &msc, e) || mem(s, c_md, w->t[FC_CONV_TBETA].data, &msh, e))
                    return -1;
                arg(bp, DNNL_ARG_SRC, m0);
                arg(bp, DNNL_ARG_DST, m1);
                arg(bp, DNNL_ARG_MEAN, mm);
                arg(bp, DNNL_ARG_VARIANCE, mv);
                arg(bp, DNNL_ARG_SCALE, msc);
                arg(bp, DNNL_ARG_SHIFT, msh);
            }
            cur = out;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ attention */

static int build_qk(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    /* Grouped-query heads: the h/hkv query heads of a key/value head are adjacent, so
     * Q is [B·hkv, (h/hkv)·s, d] against K [B·hkv, skv, d]: one batched matmul. */
    dnnl_dim_t B = p->d[FC_ATT_B] * p->d[FC_ATT_HKV], M = p->d[FC_ATT_H] / p->d[FC_ATT_HKV] * p->d[FC_ATT_S];
    dnnl_dim_t SKV = p->d[FC_ATT_SKV], D = p->d[FC_ATT_D];
    s->scale = 1.0f / sqrtf((float)D);
    cmd q_md, k_md, s_md, sc_md;
    if (md_tag(s, &q_md, 3, (dnnl_dims_t){B, M, D}, dnnl_abc, e) ||
        md_tag(s, &s_md, 3, (dnnl_dims_t){B, M, SKV}, dnnl_abc, e) || md_tag(s, &sc_md, 1, (dnnl_dims_t){1}, dnnl_a, e))
        return -1;
    /* K [B,skv,D] seen as the weights Kᵀ [B,D,skv] through its strides: no copy */
    if (md_make(s, &k_md, 3, (dnnl_dims_t){B, D, SKV}, dnnl_format_tag_undef, (dnnl_dims_t){SKV * D, 1, D}, e))
        return -1;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        bool fused = v == FC_FUSED;
        dnnl_primitive_attr_t attr;
        if (new_attr(&attr, e)) return -1;
        bool scaled = fused && fc_pattern_has_op(p->pat, FC_OP_SCALE);
        dnnl_status_t st = scaled ? attr_scale(attr, &s->scale) : dnnl_success;
        if (st != dnnl_success) {
            dnnl_primitive_attr_destroy(attr);
            FC_DNNL(st);
        }
        prim *pr = next_prim(s, (fc_variant)v);
        if (make_prim(s, "matmul", pd_matmul(&pr->pd, s->eng, q_md, k_md, NULL, s_md, attr), attr, pr, e)) return -1;
        float *dst = fused ? s->ch.out[FC_FUSED] : fc_cpu_chain_dst(&s->ch, 0);
        dnnl_memory_t mq, mk, ms;
        if (mem(s, q_md, w->t[FC_ATT_TQ].data, &mq, e) || mem(s, k_md, w->t[FC_ATT_TK].data, &mk, e) ||
            mem(s, s_md, dst, &ms, e))
            return -1;
        arg(pr, DNNL_ARG_SRC, mq);
        arg(pr, DNNL_ARG_WEIGHTS, mk);
        arg(pr, DNNL_ARG_DST, ms);
#if FC_DNNL3
        if (scaled) { /* the weights scale's value */
            dnnl_memory_t msc;
            if (mem(s, sc_md, &s->scale, &msc, e)) return -1;
            arg(pr, DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, msc);
        }
#endif
        if (fused) continue;
        float *cur = dst;
        for (int i = 1; i < p->pat->nops; i++) {
            if (p->pat->ops[i] != FC_OP_SCALE)
                return fc_errf(e, "cpu.onednn: no primitive for op '%s' after Q·K^T", fc_op_name(p->pat->ops[i]));
            float *out = fc_cpu_chain_dst(&s->ch, i);
            if (eltwise(s, FC_UNFUSED, s_md, dnnl_eltwise_linear, s->scale, cur, out, e)) return -1;
            cur = out;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ vtable */

static void od_teardown(void *state);

static int od_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    (void)devctx;
    od_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->w = w;
    FC_DNNL(dnnl_engine_create(&s->eng, dnnl_cpu, 0));
    FC_DNNL(dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags));
    fc_cpu_chain_alloc(&s->ch, p->pat, w);
    int rc;
    switch (p->pat->ops[0]) {
    case FC_OP_GEMM: rc = build_linear(s, e); break;
    case FC_OP_CONV: rc = build_conv(s, e); break;
    case FC_OP_QK: rc = build_qk(s, e); break;
    default: rc = fc_errf(e, "cpu.onednn: no primitive for op '%s'", fc_op_name(p->pat->ops[0])); break;
    }
    return rc != 0 && s->declined ? FC_DECLINED : rc;
}

static int od_run(void *state, fc_variant v, fc_err *e)
{
    od_state *s = state;
    for (int i = 0; i < s->nprims[v]; i++) {
        prim *pr = &s->chain[v][i];
        FC_DNNL(dnnl_primitive_execute(pr->p, s->stream, pr->nargs, pr->args));
    }
    FC_DNNL(dnnl_stream_wait(s->stream));
    return 0;
}

static int od_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    (void)e;
    od_state *s = state;
    fc_cpu_chain_output(&s->ch, v, dst);
    return 0;
}

static int od_poison(void *state, fc_variant v, fc_err *e)
{
    (void)e;
    od_state *s = state;
    fc_cpu_chain_poison(&s->ch, v);
    return 0;
}

static void od_describe(void *state, fc_variant v, fc_impl *impl)
{
    od_state *s = state;
    memset(impl, 0, sizeof *impl);
    for (int i = 0; i < s->nprims[v]; i++) {
        prim *pr = &s->chain[v][i];
        fc_impl_addf(impl, "%s%s[%s]", i ? " -> " : "", pr->op, pr->impl);
        if (!strncmp(pr->impl, "ref", 3) && !impl->fallback) {
            impl->fallback = true;
            snprintf(impl->fallback_why, sizeof impl->fallback_why,
                     "oneDNN chose its reference implementation '%s' for %s", pr->impl, pr->op);
        }
    }
    if (v == FC_FUSED) {
        const fc_pattern *pat = s->p.pat;
        const char *with = fc_op_table_last(od_ops, pat, FC_FUSE_FOLD);
        if (with) fc_impl_addf(impl, "%s", with);
        bool many = fc_op_table_count(od_ops, pat, FC_FUSE_EPILOGUE) > 1;
        fc_impl_add_part(impl, od_ops, pat, FC_FUSE_EPILOGUE, many ? " + post-ops " : " + post-op ", ", ", "");
    }
    const dnnl_version_t *ver = dnnl_version();
    fc_impl_addf(impl, " [oneDNN %d.%d.%d, %d threads]", ver->major, ver->minor, ver->patch, omp_get_max_threads());
    impl->nkernels = s->nprims[v];
}

static void od_teardown(void *state)
{
    od_state *s = state;
    if (!s) return;
    for (int v = 0; v < FC_NVARIANTS; v++)
        for (int i = 0; i < MAX_PRIMS; i++) {
            if (s->chain[v][i].p) dnnl_primitive_destroy(s->chain[v][i].p);
            if (s->chain[v][i].pd) dnnl_primitive_desc_destroy(s->chain[v][i].pd);
        }
    for (int i = 0; i < s->nmems; i++) dnnl_memory_destroy(s->mems[i]);
    md_pool_free(&s->mds);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->eng) dnnl_engine_destroy(s->eng);
    fc_cpu_chain_free(&s->ch);
    free(s);
}

static void od_inventory(cJSON *libs)
{
    const dnnl_version_t *v = dnnl_version();
    cJSON *o = cJSON_AddObjectToObject(libs, "onednn");
    char ver[32];
    snprintf(ver, sizeof ver, "%d.%d.%d", v->major, v->minor, v->patch);
    cJSON_AddStringToObject(o, "version", ver);
    cJSON_AddStringToObject(o, "git_hash", v->hash ? v->hash : "");
    cJSON_AddStringToObject(o, "cpu_runtime", v->cpu_runtime == DNNL_RUNTIME_OMP ? "openmp" : "other");
    cJSON_AddStringToObject(o, "isa", dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()));
}

/* fp32 matmul rate: the median of repeated 2048^3 products with weights in the
 * layout the primitive prefers (what the fused linear variants run). */
static double od_gemm_gflops(fc_dtype dt)
{
    if (dt != FC_FP32) return 0;
    const dnnl_dim_t n = 2048;
    dnnl_engine_t eng = NULL;
    dnnl_stream_t st = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    double rate = 0;
    md_pool mp = {0};
    cmd a_md, b_md, c_md;
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&st, eng, dnnl_stream_default_flags) ||
        md_new(&mp, &a_md, 2, (dnnl_dims_t){n, n}, dnnl_ab, NULL) ||
        md_new(&mp, &b_md, 2, (dnnl_dims_t){n, n}, dnnl_format_tag_any, NULL) ||
        md_new(&mp, &c_md, 2, (dnnl_dims_t){n, n}, dnnl_ab, NULL) || dnnl_primitive_attr_create(&attr) ||
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) ||
        pd_matmul(&pd, eng, a_md, b_md, NULL, c_md, attr) || dnnl_primitive_create(&p, pd))
        goto out;
    cmd wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    cmd smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (dnnl_memory_create(&ma, a_md, eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_memory_create(&mb, wmd, eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_memory_create(&mc, c_md, eng, DNNL_MEMORY_ALLOCATE) ||
        dnnl_memory_create(&ms, smd, eng, DNNL_MEMORY_ALLOCATE))
        goto out;
    float *pa, *pb;
    if (dnnl_memory_get_data_handle(ma, (void **)&pa) || dnnl_memory_get_data_handle(mb, (void **)&pb)) goto out;
    fc_rng r;
    fc_rng_seed(&r, 7);
    for (dnnl_dim_t i = 0; i < n * n; i++) pa[i] = fc_rng_range(&r, -1, 1);
    for (size_t i = 0; i < dnnl_memory_desc_get_size(wmd) / sizeof(float); i++) pb[i] = fc_rng_range(&r, -1, 1);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma},
                               {DNNL_ARG_WEIGHTS, mb},
                               {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}};
    enum { REPS = 7 };
    double t[REPS];
    for (int it = 0; it <= REPS; it++) {
        double t0 = fc_now();
        if (dnnl_primitive_execute(p, st, 4, args) || dnnl_stream_wait(st)) goto out;
        if (it > 0) t[it - 1] = fc_now() - t0;
    }
    double best = t[0]; /* a ceiling is a peak: the fastest of the runs */
    for (int i = 1; i < REPS; i++)
        if (t[i] < best) best = t[i];
    rate = 2.0 * (double)n * n * n / best / 1e9;
out:
    if (p) dnnl_primitive_destroy(p);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (ma) dnnl_memory_destroy(ma);
    if (mb) dnnl_memory_destroy(mb);
    if (mc) dnnl_memory_destroy(mc);
    if (ms) dnnl_memory_destroy(ms);
    md_pool_free(&mp);
    if (st) dnnl_stream_destroy(st);
    if (eng) dnnl_engine_destroy(eng);
    return rate;
}

const fc_backend fc_backend_onednn = {
    .name = "cpu.onednn",
    .device = "cpu",
    .summary =
        "oneDNN primitives; fused: matmul/convolution post-ops (bias, eltwise, binary add), folded BN, the matmul's own scale",
    .available = od_available,
    .supports = od_supports,
    .device_bytes = NULL,
    .setup = od_setup,
    .run = od_run,
    .output = od_output,
    .poison = od_poison,
    .describe = od_describe,
    .teardown = od_teardown,
    .inventory = od_inventory,
    .gemm_gflops = od_gemm_gflops,
};
