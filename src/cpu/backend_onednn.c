/* backend_onednn.c — cpu.onednn: oneDNN primitives through its C API (2.x or 3.x).
 *
 *   unfused  one primitive per op, each writing to memory: matmul → binary add
 *            (bias, residual) → eltwise; convolution (with its bias; groups in the
 *            weights, GOIHW) → batch_normalization (inference, global stats) →
 *            binary add (residual) → eltwise; matmul → eltwise linear (the 1/√d scale);
 *            binary add → layer_normalization (the add_rmsnorm and qk_norm_rope chains:
 *            see "norm" below).
 *   fused    post-ops: matmul with bias + binary add + eltwise; convolution with
 *            BN folded into weights and bias + sum (the residual, in place) + eltwise
 *            relu; matmul with an output scale. A gated unit (linear_swiglu; oneDNN
 *            has no gated post-op): two matmuls, x·W_gᵀ + post-op eltwise_swish
 *            writing s = silu(g), then x·W_uᵀ + post-op binary_mul by s (build_glu).
 *   control  (conv) when the post-ops make oneDNN choose another convolution
 *            implementation than the unfused chain's: that implementation without
 *            post-ops, then the unfused passes, so that the record splits
 *            implementation from fusion; (gelu_linear) the unfused chain with the
 *            fused form's blocked matmuls.
 * The residual is a sum post-op: the output's buffer holds r when the call begins
 * and the convolution adds to it, as a network's in-place residual add has it (its
 * input is dead after the add) and as oneDNN fuses it. The timed calls add to what
 * the call before left (the same bytes moved); a verifying call starts from r put
 * back (od_poison, the backend's in_place). oneDNN 2.6's brgemm convolutions take a
 * sum post-op but not a binary add: with a binary add of r instead, conv_bn_add_relu
 * ran jit_1x1 (or jit on 3x3) where the unfused conv ran brgconv_1x1, and the record
 * needed a control to split the implementation off; with the sum both run brgconv.
 * The two in one binary switched at run time, two rounds each, on the AMD EPYC VM
 * (Zen 5, AVX-512, 2 threads; results/cpu-amd-epyc-f26m2-2c/ab-onednn-conv-sum.txt),
 * fused medians binary -> sum: NHWC 1x1 ResNet-50
 * stage ends (64 -> 256 at 56x56 .. 512 -> 2048 at 7x7) 0.30-0.31 -> 0.30-0.34,
 * 0.29-0.30 -> 0.26-0.29, 0.27 -> 0.26-0.29, 0.29-0.31 -> 0.26-0.27 ms, 256 -> 256 at
 * 56x56 1.06-1.16 -> 1.12-1.15; 3x3 64 at 56x56 0.62-0.63 -> 0.56-0.59; on NCHW, where
 * oneDNN runs its gemm-based convolution and applies post-ops slowly, 1x1 64 -> 256
 * 16.4-16.9 -> 4.2-5.2 (unfused 0.91-1.21) and 3x3 g=4 64 at 28x28 1.18-1.20 ->
 * 0.40-0.54 (unfused 0.17-0.28). The gemm-based convolution (oneDNN without AVX-512)
 * had also added a binary post-op at the wrong places on a grouped NHWC convolution,
 * where the fused form was declined; the sum verifies there.
 * oneDNN's post-ops act on a primitive's output, and its matmul has no prologue on
 * its input: gelu_linear's fused form is x in blocks of rows, each through
 * eltwise_gelu_tanh into a buffer that stays in cache and a matmul with the bias from
 * it (see "GELU prologue" below).
 * oneDNN's primitive API has no primitive that fuses softmax with the matmuls around
 * it: qk_softmax's and attention's fused form is row-blocked, the matmul primitives on
 * tiles that stay in cache with fusecal's softmax between them (see "attention with a
 * softmax" below); qk_scale runs grouped-query heads as one matmul batched over the
 * key/value heads.
 * Nor does it fuse an add before a normalization, or have RMSNorm (before 3.9) or a
 * rotary embedding: those steps are fusecal's host kernels (norm_ops.c), each named
 * so in the record.
 * Weights take the layout the primitive asks for ("any"), reordered once at setup
 * as an inference framework does; activations keep the problem's layout, but around
 * a convolution run as oneDNN's Winograd algorithm (fp32, 64 channels or more, where
 * oneDNN has it: conv_wino), which both variants run between a reorder of x into the
 * layout it asks for and one of its output back; the record counts the FLOPs it
 * performs. Every
 * primitive's implementation string is recorded, and a reference ("ref:")
 * implementation is flagged as a fallback.
 *
 * bf16 (where the CPU has avx512_bf16 or AMX; elsewhere declined, naming the ISA):
 * activations, weights, intermediates and outputs are bf16 tensors, as PyTorch's
 * CPU autocast runs a bf16 block (each op's output in bf16, so the unfused chain
 * moves half the bytes and the fused form rounds once); the primitives accumulate
 * in f32 and take the bias, BN statistics, γ and β in f32 (the values are bf16's:
 * the workload rounds every input). The inputs are converted once at setup and the
 * output back to fp32 when copied out for verification. The host kernels have
 * bf16 versions (norm_ops_bf16.c).
 *
 * The two C APIs differ in how descriptors are made (2.x: op descriptors and memory
 * descriptors by value; 3.x: primitive descriptors directly and memory descriptors
 * as handles) and in the output scale (2.x: output scales; 3.x: a weights scale
 * passed at execution). The compatibility layer below (md_*, pd_*, po_eltwise,
 * attr_scale) hides that; the builders are written once.
 */
#include "attention_ops.h"
#include "backend.h"
#include "cpu_bf16.h"
#include "cpu_chain.h"
#include "cpu_ops.h"
#include "cpuinfo.h"
#include "norm_ops.h"
#include "stats.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PRIMS 8
#define MD_BLOCK 64 /* memory descriptors per block of a setup's pool (md_pool) */

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

struct od_state;

typedef struct prim {
    const char *op;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    int (*host)(struct od_state *s, fc_variant v, fc_err *e); /* a fusecal host kernel in place of a primitive */
    dnnl_exec_arg_t args[10];
    int nargs;
    char impl[128];
    const char *post; /* the post-op a primitive of several in a fused form carries, or NULL */
} prim;

/* The memory descriptors a setup makes, owned until teardown: in blocks that never
 * move, since 2.x hands out pointers into them. As many as a setup makes: the chains'
 * few, and per thread lane and tile shape of the fused attention several more (3.x
 * adds a scale's per scaled matmul), so a long causal attention on many threads makes
 * hundreds. */
typedef struct md_block {
    struct md_block *next;
    int n;
    dnnl_memory_desc_t md[MD_BLOCK]; /* 3.x: handles; 2.x: the descriptors themselves */
} md_block;
typedef struct md_pool {
    md_block *head; /* the newest block, the one being filled */
} md_pool;

/* One tile shape of the row-blocked fused attention: nh key/value heads x R of their
 * rows against their first `cols` keys, with the matmuls for it and the memory objects
 * whose handles move per tile. */
typedef struct att_tile {
    int nh, R, cols;
    cmd q_md, k_md, s_md, p_md, v_md, o_md; /* made once, for every lane's tile of this shape */
    prim qk, pv;                            /* Q·Kᵀ/√d into the f32 scores; P·V (attention only) */
    dnnl_memory_t q, k, p, v, o;            /* handles set per tile (p: the tile's probabilities) */
} att_tile;

/* What computes tiles: the whole team (one lane, oneDNN's threads inside each
 * primitive), or one thread (a lane per thread, its primitives single-threaded). */
typedef struct att_lane {
    att_tile *t;          /* one per shape (att_blocked's) */
    float *S;             /* the tile's scores, f32 [nh][R][cols] */
    void *P;              /* attention: its probabilities in the problem's data type (f32: S itself) */
    float *inv;           /* f32 attention: 1 / each row's sum, applied to the output rows */
    dnnl_stream_t stream; /* per-thread lanes: the lane's own (else the setup's) */
} att_lane;

typedef struct att_blocked {
    fc_att_geom g;
    int nlanes;       /* 1: tiles one after another, all threads in each; else one per thread */
    att_lane *lane;   /* nlanes of them */
    int ntiles;       /* tiles of the whole problem (att_tiles') */
    int nh, R;        /* key/value heads and rows of a full tile */
    int nr;           /* tiles per key/value head (whole heads per tile: 1) */
    int nshapes;      /* tile shapes: full, last (fewer heads or rows), causal blocks' */
    att_tile *shape;  /* their descriptors, made by the first lane */
    int *block_shape; /* the shape of each of a head's nr tiles (a last tile of fewer heads: 1) */
    float *dws;       /* decode: the split-KV kernel's workspace (no tiles then) */
} att_blocked;

/* gelu_linear's blocks of x rows: for a block of `rows`, the fused form's
 * eltwise_gelu_tanh into the block buffer and matmul (with the bias) from it, and the
 * control's matmul (no bias) from the unfused chain's gelu(x); the memory objects whose
 * handles move from block to block. */
typedef struct pro_block {
    prim gelu, mm, ctl;
    dnnl_memory_t gelu_x, mm_y, ctl_x, ctl_y;
} pro_block;

typedef struct od_prologue {
    int mb;           /* rows of a full block */
    pro_block blk[2]; /* full blocks, and the last when M is not a whole number of them */
    void *buf;        /* gelu of one block of x rows, in the problem's data type */
} od_prologue;

typedef struct od_state {
    fc_problem p;
    md_pool mds;
    float scale; /* the output scale of qk_scale's fused matmul (3.x passes it as memory) */
    const fc_workload *w;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    prim chain[FC_MAX_VARIANTS][MAX_PRIMS]; /* the control's only when built */
    int nprims[FC_MAX_VARIANTS];
    dnnl_memory_t *mems; /* every memory object the setup made, owned */
    int nmems, cap_mems;
    fc_cpu_chain ch;
    float *glu_s;                       /* the fused gated unit's silu(x·W_gᵀ) [m, n] */
    fc_norm_io norm_io;                 /* a norm chain's output streamed, and its asks (fc_cpu_norm_io) */
    float *rope;                        /* qk_norm_rope's cos/sin table, made at setup */
    void *mask;                         /* a causal chain's additive mask [s][skv], 0 or -inf */
    dnnl_data_type_t dt;                /* of activations, weights and outputs (parameters: f32) */
    fc_bf16 *in16[FC_MAX_TENSORS];      /* bf16 copies of the workload's inputs, made at setup */
    bool declined;                      /* oneDNN has no implementation for a primitive of the chain */
    bool sum_in_place;                  /* the fused conv adds the residual by a sum post-op, in place */
    double wino_flops[FC_MAX_VARIANTS]; /* a Winograd chain's FLOPs (fc_impl.flops_performed), else 0 */
    att_blocked att;                    /* qk_softmax's and attention's fused form */
    od_prologue pro;                    /* gelu_linear's blocked forms */
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

/* oneDNN 3.9 and later normalize by the RMS with layer_normalization's rms_norm flag;
 * before, RMSNorm has no primitive and fusecal's host kernel runs it. */
#if DNNL_VERSION_MAJOR > 3 || (DNNL_VERSION_MAJOR == 3 && DNNL_VERSION_MINOR >= 9)
#define FC_DNNL_RMS 1
#else
#define FC_DNNL_RMS 0
#endif

/* How cpu.onednn runs each op: its primitive in the unfused chain, and its part in
 * the fused primitive: an argument of the call (" with ..."; BN folded into the
 * weights and bias takes the conv's own bias along), or a post-op. The norms' fused
 * forms are host kernels of their own (named with their reason at setup). */
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
    [FC_OP_ADD] = {"binary_add", FC_FUSE_CALL, "add"},
    [FC_OP_LAYERNORM] = {"layer_normalization", FC_FUSE_KERNEL, "add+layernorm"},
    [FC_OP_RMSNORM] = {FC_DNNL_RMS ? "layer_normalization(rms_norm)" : "rmsnorm", FC_FUSE_KERNEL, "add+rmsnorm"},
    [FC_OP_HEAD_RMSNORM] = {FC_DNNL_RMS ? "layer_normalization(rms_norm)" : "rmsnorm", FC_FUSE_CALL, "rmsnorm"},
    [FC_OP_ROPE] = {"rope", FC_FUSE_KERNEL, "rmsnorm+rope"},
    [FC_OP_SILU] = {"eltwise_swish", FC_FUSE_EPILOGUE, "eltwise_swish"},
    [FC_OP_GLU_MUL] = {"binary_mul", FC_FUSE_EPILOGUE, "binary_mul"},
    [FC_OP_SOFTMAX] = {"softmax", FC_FUSE_KERNEL, "row-blocked matmul + in-cache softmax"},
    [FC_OP_PV] = {"matmul", FC_FUSE_KERNEL, "row-blocked matmul + in-cache softmax + matmul"},
    [FC_OP_GELU_IN] = {"eltwise_gelu_tanh", FC_FUSE_PROLOGUE, "eltwise_gelu_tanh of each block of x rows"},
};

static bool od_supports(const fc_problem *p, char *why, size_t n)
{
    if (p->dtype == FC_BF16 && !fc_host_bf16(why, n)) return false;
    if (p->dtype != FC_FP32 && p->dtype != FC_BF16) {
        snprintf(why, n, "cpu.onednn computes fp32 and bf16 (asked: %s)", fc_dtype_name(p->dtype));
        return false;
    }
    return fc_op_table_fits(od_ops, p->pat, "cpu.onednn", why, n);
}


/* ------------------------------------------------------------------ 2.x / 3.x */

static dnnl_status_t md_new(md_pool *mp, cmd *out, int nd, const dnnl_dims_t dims, dnnl_data_type_t dt,
                            dnnl_format_tag_t tag, const dnnl_dim_t *strides)
{
    *out = NULL;
    if (!mp->head || mp->head->n == MD_BLOCK) {
        md_block *b = fc_xcalloc(1, sizeof *b);
        b->next = mp->head;
        mp->head = b;
    }
    dnnl_memory_desc_t *m = &mp->head->md[mp->head->n];
#if FC_DNNL3
    dnnl_status_t st = strides ? dnnl_memory_desc_create_with_strides(m, nd, dims, dt, strides)
                               : dnnl_memory_desc_create_with_tag(m, nd, dims, dt, tag);
    if (st == dnnl_success) *out = *m;
#else
    dnnl_status_t st = strides ? dnnl_memory_desc_init_by_strides(m, nd, dims, dt, strides)
                               : dnnl_memory_desc_init_by_tag(m, nd, dims, dt, tag);
    if (st == dnnl_success) *out = m;
#endif
    if (st == dnnl_success) mp->head->n++;
    return st;
}

static void md_pool_free(md_pool *mp)
{
    while (mp->head) {
        md_block *b = mp->head;
#if FC_DNNL3
        for (int i = 0; i < b->n; i++) dnnl_memory_desc_destroy(b->md[i]);
#endif
        mp->head = b->next;
        free(b);
    }
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

static dnnl_status_t pd_binary(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg, cmd src0, cmd src1,
                               cmd dst, const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    return dnnl_binary_primitive_desc_create(pd, eng, alg, src0, src1, dst, attr);
#else
    dnnl_binary_desc_t d;
    dnnl_status_t st = dnnl_binary_desc_init(&d, alg, src0, src1, dst);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_softmax(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd md, int axis,
                                const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    return dnnl_softmax_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, dnnl_softmax_accurate, md, md,
                                                      axis, attr);
#else
    dnnl_softmax_desc_t d;
    dnnl_status_t st = dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, md, axis);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_conv_alg(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, dnnl_alg_kind_t alg, cmd src, cmd wei,
                                 cmd bias, cmd dst, const dnnl_dims_t strides, const dnnl_dims_t pad_l,
                                 const dnnl_dims_t pad_r, const_dnnl_primitive_attr_t attr)
{
#if FC_DNNL3
    const dnnl_dims_t dilates = {0, 0};
    return dnnl_convolution_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, alg, src, wei, bias, dst,
                                                          strides, dilates, pad_l, pad_r, attr);
#else
    dnnl_convolution_desc_t d;
    dnnl_status_t st = dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, alg, src, wei, bias, dst, strides,
                                                          pad_l, pad_r);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

static dnnl_status_t pd_conv(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd src, cmd wei, cmd bias, cmd dst,
                             const dnnl_dims_t strides, const dnnl_dims_t pad_l, const dnnl_dims_t pad_r,
                             const_dnnl_primitive_attr_t attr)
{
    return pd_conv_alg(pd, eng, dnnl_convolution_direct, src, wei, bias, dst, strides, pad_l, pad_r, attr);
}

/* Whether pd's implementation is the one named `want` (NULL: any). */
static bool impl_is(const_dnnl_primitive_desc_t pd, const char *want)
{
    const char *impl = NULL;
    return !want || (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                     !strcmp(impl, want));
}

/* A convolution whose implementation is `want` (NULL: oneDNN's first choice), by
 * walking the implementations oneDNN has for it in its order of preference; none of
 * that name: dnnl_unimplemented. */
static dnnl_status_t pd_conv_impl(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd src, cmd wei, cmd bias, cmd dst,
                                  const dnnl_dims_t strides, const dnnl_dims_t pad_l, const dnnl_dims_t pad_r,
                                  const_dnnl_primitive_attr_t attr, const char *want)
{
    if (!want) return pd_conv(pd, eng, src, wei, bias, dst, strides, pad_l, pad_r, attr);
#if FC_DNNL3
    dnnl_status_t st = pd_conv(pd, eng, src, wei, bias, dst, strides, pad_l, pad_r, attr);
    while (st == dnnl_success && !impl_is(*pd, want)) st = dnnl_primitive_desc_next_impl(*pd);
    if (st != dnnl_success && *pd) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
    }
    return st == dnnl_last_impl_reached ? dnnl_unimplemented : st;
#else
    *pd = NULL;
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_status_t st = dnnl_convolution_forward_desc_init(&d, dnnl_forward_inference, dnnl_convolution_direct, src, wei,
                                                          bias, dst, strides, pad_l, pad_r);
    if (st == dnnl_success) st = dnnl_primitive_desc_iterator_create(&it, &d, attr, eng, NULL);
    while (st == dnnl_success) {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        if (c && impl_is(c, want)) {
            *pd = c;
            break;
        }
        if (c) dnnl_primitive_desc_destroy(c);
        st = dnnl_primitive_desc_iterator_next(it);
    }
    if (it) dnnl_primitive_desc_iterator_destroy(it);
    return st == dnnl_iterator_ends ? dnnl_unimplemented : st;
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

static dnnl_status_t po_eltwise(dnnl_post_ops_t po, dnnl_alg_kind_t alg, float alpha)
{
#if FC_DNNL3
    return dnnl_post_ops_append_eltwise(po, alg, alpha, 0.0f);
#else
    return dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, 0.0f);
#endif
}

/* dst += the primitive's result (scale 1, dst's own data type) */
static dnnl_status_t po_sum(dnnl_post_ops_t po)
{
#if FC_DNNL3
    return dnnl_post_ops_append_sum(po, 1.0f, 0, dnnl_data_type_undef);
#else
    return dnnl_post_ops_append_sum(po, 1.0f);
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
    if (s->nmems == s->cap_mems) {
        s->cap_mems = s->cap_mems ? 2 * s->cap_mems : 32;
        s->mems = fc_xrealloc(s->mems, (size_t)s->cap_mems * sizeof *s->mems);
    }
    FC_DNNL(dnnl_memory_create(out, md, s->eng, handle));
    s->mems[s->nmems++] = *out;
    return 0;
}

#if FC_DNNL3
#define MD_CALL(strided) ((strided) ? "dnnl_memory_desc_create_with_strides" : "dnnl_memory_desc_create_with_tag")
#else
#define MD_CALL(strided) ((strided) ? "dnnl_memory_desc_init_by_strides" : "dnnl_memory_desc_init_by_tag")
#endif

/* A memory descriptor owned by the setup, of the problem's data type: by format
 * tag, or by strides when given. */
static int md_make(od_state *s, cmd *md, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag,
                   const dnnl_dim_t *strides, fc_err *e)
{
    dnnl_status_t st = md_new(&s->mds, md, nd, dims, s->dt, tag, strides);
    if (st != dnnl_success || fc_fault_backend("onednn"))
        return fc_errf(e, "oneDNN call %s failed: %s", MD_CALL(strides != NULL),
                       st != dnnl_success ? dnnl_status2str(st) : "injected fault");
    return 0;
}

static int md_tag(od_state *s, cmd *md, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag, fc_err *e)
{
    return md_make(s, md, nd, dims, tag, NULL, e);
}

/* A parameter's descriptor (bias, BN statistics, γ, β, a scale): f32 in every
 * problem, as oneDNN takes them with bf16 tensors (the values are bf16's already:
 * the workload rounds every input to the problem's dtype). */
static int md_f32(od_state *s, cmd *md, int nd, const dnnl_dims_t dims, dnnl_format_tag_t tag, fc_err *e)
{
    dnnl_status_t st = md_new(&s->mds, md, nd, dims, dnnl_f32, tag, NULL);
    if (st != dnnl_success || fc_fault_backend("onednn"))
        return fc_errf(e, "oneDNN call %s failed: %s", MD_CALL(false),
                       st != dnnl_success ? dnnl_status2str(st) : "injected fault");
    return 0;
}

/* Input tensor t of the workload as the primitives read it: the workload's fp32, or
 * its bf16 copy (made at the first use, during setup). */
static void *in(od_state *s, int t)
{
    if (s->dt != dnnl_bf16) return s->w->t[t].data;
    if (!s->in16[t]) s->in16[t] = fc_cpu_bf16_copy(s->w->t[t].data, s->w->t[t].n);
    return s->in16[t];
}

/* The element `off` elements past base, in the problem's data type. */
static void *elem_at(const od_state *s, void *base, size_t off)
{
    return s->dt == dnnl_bf16 ? (void *)((fc_bf16 *)base + off) : (void *)((float *)base + off);
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

static void prim_free(prim *pr)
{
    if (pr->p) dnnl_primitive_destroy(pr->p);
    if (pr->pd) dnnl_primitive_desc_destroy(pr->pd);
}

/* A step of the chain that fusecal's host kernel runs, named with why. */
static prim *host_step(od_state *s, fc_variant v, const char *op, const char *why,
                       int (*fn)(od_state *, fc_variant, fc_err *))
{
    prim *pr = next_prim(s, v);
    pr->op = op;
    pr->host = fn;
    snprintf(pr->impl, sizeof pr->impl, "fusecal host kernel: %s", why);
    return pr;
}

/* Reorders user weights (md `from`, data `src`) into the layout `pd` wants for
 * `what`; returns the memory to pass. */
static int reorder_weights(od_state *s, cmd from, void *src, dnnl_primitive_desc_t pd, dnnl_query_t what,
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
    dnnl_status_t st = dnnl_primitive_create(&r, rpd);
    if (st != dnnl_success) {
        dnnl_primitive_desc_destroy(rpd);
        return fc_errf(e, "oneDNN weight reorder's primitive failed: %s", dnnl_status2str(st));
    }
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, *out}};
    st = dnnl_primitive_execute(r, s->stream, 2, args);
    if (st == dnnl_success) st = dnnl_stream_wait(s->stream);
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
                       : alg == dnnl_eltwise_swish     ? "eltwise_swish"
                                                       : "eltwise_linear";
    if (make_prim(s, name, pd_eltwise(&pr->pd, s->eng, alg, md, alpha, attr), attr, pr, e) != 0) return -1;
    dnnl_memory_t ms, md2;
    if (mem(s, md, src, &ms, e) || mem(s, md, dst, &md2, e)) return -1;
    arg(pr, DNNL_ARG_SRC, ms);
    arg(pr, DNNL_ARG_DST, md2);
    return 0;
}

/* y = a + b, or a·b for dnnl_binary_mul (b broadcast by its descriptor) */
static int binary_op(od_state *s, fc_variant v, dnnl_alg_kind_t alg, cmd md, cmd md1, void *src, void *src1, void *dst,
                     fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    prim *pr = next_prim(s, v);
    const char *name = alg == dnnl_binary_mul ? "binary_mul" : "binary_add";
    if (make_prim(s, name, pd_binary(&pr->pd, s->eng, alg, md, md1, md, attr), attr, pr, e) != 0) return -1;
    dnnl_memory_t m0, m1, m2;
    if (mem(s, md, src, &m0, e) || mem(s, md1, src1, &m1, e) || mem(s, md, dst, &m2, e)) return -1;
    arg(pr, DNNL_ARG_SRC_0, m0);
    arg(pr, DNNL_ARG_SRC_1, m1);
    arg(pr, DNNL_ARG_DST, m2);
    return 0;
}

/* Post-ops of a fused primitive: a binary add of `add` (NULL: none) or, with sum, an
 * add of what dst holds, then the eltwise `act` (dnnl_alg_kind_undef: none). */
static int set_post_ops(dnnl_primitive_attr_t attr, cmd add, bool sum, dnnl_alg_kind_t act, fc_err *e)
{
    dnnl_post_ops_t po;
    FC_DNNL(dnnl_post_ops_create(&po));
    dnnl_status_t st = dnnl_success;
    if (sum) st = po_sum(po);
    else if (add)
        st = dnnl_post_ops_append_binary(po, dnnl_binary_add, add);
    if (st == dnnl_success && act != dnnl_alg_kind_undef) st = po_eltwise(po, act, 0.0f);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    FC_DNNL(st);
    return 0;
}

/* ------------------------------------------------------------------ linear */

/* A matmul into pr (attr taken) from src by the workload's weights, reordered once into
 * the layout it chooses, into dst; with the bias descriptor b_md or none (NULL). */
static int linear_matmul(od_state *s, prim *pr, dnnl_primitive_attr_t attr, cmd src_md, cmd wuser_md, cmd wany_md,
                         cmd b_md, cmd dst_md, void *src, void *dst, fc_err *e)
{
    if (make_prim(s, "matmul", pd_matmul(&pr->pd, s->eng, src_md, wany_md, b_md, dst_md, attr), attr, pr, e)) return -1;
    dnnl_memory_t ms, mw, md;
    if (mem(s, src_md, src, &ms, e) ||
        reorder_weights(s, wuser_md, in(s, FC_LIN_TW), pr->pd, dnnl_query_weights_md, &mw, e) ||
        mem(s, dst_md, dst, &md, e))
        return -1;
    arg(pr, DNNL_ARG_SRC, ms);
    arg(pr, DNNL_ARG_WEIGHTS, mw);
    arg(pr, DNNL_ARG_DST, md);
    return 0;
}

static int build_linear(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    dnnl_dim_t M = p->d[FC_LIN_M], K = p->d[FC_LIN_K], N = p->d[FC_LIN_N];
    cmd src_md, wuser_md, wany_md, dst_md, b_md;
    if (md_tag(s, &src_md, 2, (dnnl_dims_t){M, K}, dnnl_ab, e) ||
        md_tag(s, &wuser_md, 2, (dnnl_dims_t){K, N}, dnnl_ba, e) ||
        md_tag(s, &wany_md, 2, (dnnl_dims_t){K, N}, dnnl_format_tag_any, e) ||
        md_tag(s, &dst_md, 2, (dnnl_dims_t){M, N}, dnnl_ab, e) || md_f32(s, &b_md, 2, (dnnl_dims_t){1, N}, dnnl_ab, e))
        return -1;
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID);
    dnnl_alg_kind_t act = fc_pattern_has_op(p->pat, FC_OP_RELU)   ? dnnl_eltwise_relu
                          : fc_pattern_has_op(p->pat, FC_OP_GELU) ? dnnl_eltwise_gelu_tanh
                                                                  : dnnl_alg_kind_undef;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        bool fused = v == FC_FUSED;
        dnnl_primitive_attr_t attr;
        if (new_attr(&attr, e)) return -1;
        if (fused && set_post_ops(attr, resid ? dst_md : NULL, false, act, e)) {
            dnnl_primitive_attr_destroy(attr);
            return -1;
        }
        prim *pr = next_prim(s, (fc_variant)v);
        float *dst = fused ? s->ch.out[FC_FUSED] : fc_cpu_chain_dst(&s->ch, 0);
        if (linear_matmul(s, pr, attr, src_md, wuser_md, wany_md, fused ? b_md : NULL, dst_md, in(s, FC_LIN_TX), dst,
                          e))
            return -1;
        if (fused) {
            dnnl_memory_t mb;
            if (mem(s, b_md, w->t[FC_LIN_TB].data, &mb, e)) return -1;
            arg(pr, DNNL_ARG_BIAS, mb);
            if (resid) {
                dnnl_memory_t mr;
                if (mem(s, dst_md, in(s, FC_LIN_TR), &mr, e)) return -1;
                arg(pr, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mr);
            }
            continue;
        }
        float *cur = dst;
        for (int i = 1; i < p->pat->nops; i++) {
            float *out = fc_cpu_chain_dst(&s->ch, i);
            int r2 = 0;
            switch (p->pat->ops[i]) {
            case FC_OP_BIAS:
                r2 = binary_op(s, FC_UNFUSED, dnnl_binary_add, dst_md, b_md, cur, w->t[FC_LIN_TB].data, out, e);
                break;
            case FC_OP_RESID:
                r2 = binary_op(s, FC_UNFUSED, dnnl_binary_add, dst_md, dst_md, cur, in(s, FC_LIN_TR), out, e);
                break;
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

/* ------------------------------------------------------------------ gated unit
 *
 * linear_swiglu, W [2n, k] = [W_g; W_u]. Unfused: one matmul computes the [m, 2n]
 * product as a batch of two (x broadcast, W seen as [2, k, n]), writing its gate and
 * up planes [2, m, n]; then eltwise_swish (alpha = 1: silu) of the gate plane; then
 * binary_mul by the up plane. Fused: two matmuls with post-ops, x·W_gᵀ + eltwise_swish
 * writing s = silu(g) [m, n], then x·W_uᵀ + binary_mul by s writing y: s is written
 * once and read once where the unfused chain moves the [m, 2n] product three times. */

/* dst = x·Wᵀ, W the user weights `wsrc` of descriptor wuser_md reordered to the layout
 * the primitive picks, with the post-op `post` (dnnl_eltwise_swish, or dnnl_binary_mul
 * by `mul`; dnnl_alg_kind_undef: none). */
static int glu_matmul(od_state *s, fc_variant v, cmd src_md, cmd wuser_md, cmd wany_md, cmd dst_md, void *wsrc,
                      void *dst, dnnl_alg_kind_t post, void *mul, fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    dnnl_post_ops_t po = NULL;
    dnnl_status_t st = post == dnnl_alg_kind_undef ? dnnl_success : dnnl_post_ops_create(&po);
    if (st == dnnl_success && post == dnnl_eltwise_swish) st = po_eltwise(po, post, 1.0f);
    if (st == dnnl_success && post == dnnl_binary_mul) st = dnnl_post_ops_append_binary(po, post, dst_md);
    if (st == dnnl_success && po) st = dnnl_primitive_attr_set_post_ops(attr, po);
    if (po) dnnl_post_ops_destroy(po);
    if (st != dnnl_success || fc_fault_backend("onednn")) {
        dnnl_primitive_attr_destroy(attr);
        FC_DNNL(st);
    }
    prim *pr = next_prim(s, v);
    if (make_prim(s, "matmul", pd_matmul(&pr->pd, s->eng, src_md, wany_md, NULL, dst_md, attr), attr, pr, e)) return -1;
    dnnl_memory_t ms, mw, md, mm;
    if (mem(s, src_md, in(s, FC_LIN_TX), &ms, e) ||
        reorder_weights(s, wuser_md, wsrc, pr->pd, dnnl_query_weights_md, &mw, e) || mem(s, dst_md, dst, &md, e))
        return -1;
    arg(pr, DNNL_ARG_SRC, ms);
    arg(pr, DNNL_ARG_WEIGHTS, mw);
    arg(pr, DNNL_ARG_DST, md);
    if (post == dnnl_binary_mul) {
        if (mem(s, dst_md, mul, &mm, e)) return -1;
        arg(pr, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, mm);
    }
    pr->post = post == dnnl_eltwise_swish ? " + post-op eltwise_swish"
               : post == dnnl_binary_mul  ? " + post-op binary_mul"
                                          : NULL;
    return 0;
}

static int build_glu(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    dnnl_dim_t M = p->d[FC_LIN_M], K = p->d[FC_LIN_K], N = p->d[FC_LIN_N];
    void *W = in(s, FC_LIN_TW);
    cmd x_md, x3_md, w3_md, w3any_md, y3_md, w_md, wany_md, y_md;
    if (md_tag(s, &x_md, 2, (dnnl_dims_t){M, K}, dnnl_ab, e) ||
        md_tag(s, &x3_md, 3, (dnnl_dims_t){1, M, K}, dnnl_abc, e) ||
        md_tag(s, &w3_md, 3, (dnnl_dims_t){2, K, N}, dnnl_acb, e) ||
        md_tag(s, &w3any_md, 3, (dnnl_dims_t){2, K, N}, dnnl_format_tag_any, e) ||
        md_tag(s, &y3_md, 3, (dnnl_dims_t){2, M, N}, dnnl_abc, e) ||
        md_tag(s, &w_md, 2, (dnnl_dims_t){K, N}, dnnl_ba, e) ||
        md_tag(s, &wany_md, 2, (dnnl_dims_t){K, N}, dnnl_format_tag_any, e) ||
        md_tag(s, &y_md, 2, (dnnl_dims_t){M, N}, dnnl_ab, e))
        return -1;
    float *planes = fc_cpu_chain_dst(&s->ch, 0), *act = fc_cpu_chain_dst(&s->ch, 1);
    void *up = elem_at(s, planes, (size_t)M * (size_t)N);
    s->glu_s = fc_cpu_buffer((size_t)M * (size_t)N);
    if (glu_matmul(s, FC_UNFUSED, x3_md, w3_md, w3any_md, y3_md, W, planes, dnnl_alg_kind_undef, NULL, e) ||
        eltwise(s, FC_UNFUSED, y_md, dnnl_eltwise_swish, 1.0f, planes, act, e) ||
        binary_op(s, FC_UNFUSED, dnnl_binary_mul, y_md, y_md, act, up, s->ch.out[FC_UNFUSED], e) ||
        glu_matmul(s, FC_FUSED, x_md, w_md, wany_md, y_md, W, s->glu_s, dnnl_eltwise_swish, NULL, e) ||
        glu_matmul(s, FC_FUSED, x_md, w_md, wany_md, y_md, elem_at(s, W, (size_t)N * (size_t)K), s->ch.out[FC_FUSED],
                   dnnl_binary_mul, s->glu_s, e))
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ GELU prologue
 *
 * gelu_linear, y = gelu_tanh(x)·Wᵀ + b. Unfused: eltwise_gelu_tanh over x, matmul,
 * binary_add of b. oneDNN's matmul has no prologue (its post-ops act on its output), so
 * the fused form is fusecal's blocking of oneDNN's primitives: x in blocks of mb rows,
 * each through eltwise_gelu_tanh into a buffer of at most PRO_BLOCK_BYTES that the
 * block's matmul (the bias folded in) reads from the caches; gelu(x) is never written
 * whole. The blocking also changes the matmul (M / mb calls of mb rows in place of one
 * of M), so a control times the unfused chain with those blocked matmuls (without the
 * bias) in place of its one, and the record splits the speedup into the blocking and
 * the fusion. */
#define PRO_BLOCK_BYTES (1u << 20)

/* The block of `rows` rows: its primitives and memory objects. The first block's fused
 * matmul chooses the weights' layout (*wei, reordered once into *mw); the others take
 * it as it is. */
static int pro_block_build(od_state *s, pro_block *b, int rows, cmd wuser_md, cmd wany_md, cmd b_md, cmd *wei,
                           dnnl_memory_t *mw, fc_err *e)
{
    const fc_problem *p = &s->p;
    dnnl_dim_t K = p->d[FC_LIN_K], N = p->d[FC_LIN_N];
    cmd x_md, y_md;
    if (md_tag(s, &x_md, 2, (dnnl_dims_t){rows, K}, dnnl_ab, e) ||
        md_tag(s, &y_md, 2, (dnnl_dims_t){rows, N}, dnnl_ab, e))
        return -1;
    dnnl_primitive_attr_t attr;
    dnnl_memory_t mbuf, mbias;
    if (new_attr(&attr, e) ||
        make_prim(s, "eltwise_gelu_tanh", pd_eltwise(&b->gelu.pd, s->eng, dnnl_eltwise_gelu_tanh, x_md, 0.0f, attr),
                  attr, &b->gelu, e) ||
        mem(s, x_md, in(s, FC_LIN_TX), &b->gelu_x, e) || mem(s, x_md, s->pro.buf, &mbuf, e) ||
        mem(s, b_md, s->w->t[FC_LIN_TB].data, &mbias, e))
        return -1;
    arg(&b->gelu, DNNL_ARG_SRC, b->gelu_x);
    arg(&b->gelu, DNNL_ARG_DST, mbuf);
    for (int c = 0; c < 2; c++) { /* the fused form's matmul (with the bias), the control's */
        prim *pr = c ? &b->ctl : &b->mm;
        if (new_attr(&attr, e) ||
            make_prim(s, "matmul", pd_matmul(&pr->pd, s->eng, x_md, *wei ? *wei : wany_md, c ? NULL : b_md, y_md, attr),
                      attr, pr, e))
            return -1;
        if (!*wei) {
            if (reorder_weights(s, wuser_md, in(s, FC_LIN_TW), pr->pd, dnnl_query_weights_md, mw, e)) return -1;
            *wei = dnnl_primitive_desc_query_md(pr->pd, dnnl_query_weights_md, 0);
        }
        dnnl_memory_t *src = c ? &b->ctl_x : &mbuf, *dst = c ? &b->ctl_y : &b->mm_y;
        if ((c && mem(s, x_md, fc_cpu_chain_dst(&s->ch, 0), src, e)) ||
            mem(s, y_md, c ? fc_cpu_chain_dst(&s->ch, 1) : s->ch.out[FC_FUSED], dst, e))
            return -1;
        arg(pr, DNNL_ARG_SRC, *src);
        arg(pr, DNNL_ARG_WEIGHTS, *mw);
        arg(pr, DNNL_ARG_DST, *dst);
        if (!c) arg(pr, DNNL_ARG_BIAS, mbias);
    }
    return 0;
}

/* Every block of x rows: the fused form's gelu and matmul (ctl false), or the control's
 * matmul from the unfused chain's gelu(x) (ctl true). */
static int pro_blocks(od_state *s, bool ctl, fc_err *e)
{
    const int64_t *d = s->p.d;
    const size_t M = (size_t)d[FC_LIN_M], K = (size_t)d[FC_LIN_K], N = (size_t)d[FC_LIN_N];
    void *x = in(s, FC_LIN_TX), *y = s->ch.out[FC_FUSED];
    void *gx = fc_cpu_chain_dst(&s->ch, 0), *gy = fc_cpu_chain_dst(&s->ch, 1);
    for (size_t i0 = 0; i0 < M; i0 += (size_t)s->pro.mb) {
        pro_block *b = &s->pro.blk[M - i0 < (size_t)s->pro.mb];
        if (ctl) {
            FC_DNNL(dnnl_memory_set_data_handle(b->ctl_x, elem_at(s, gx, i0 * K)));
            FC_DNNL(dnnl_memory_set_data_handle(b->ctl_y, elem_at(s, gy, i0 * N)));
            FC_DNNL(dnnl_primitive_execute(b->ctl.p, s->stream, b->ctl.nargs, b->ctl.args));
            continue;
        }
        FC_DNNL(dnnl_memory_set_data_handle(b->gelu_x, elem_at(s, x, i0 * K)));
        FC_DNNL(dnnl_memory_set_data_handle(b->mm_y, elem_at(s, y, i0 * N)));
        FC_DNNL(dnnl_primitive_execute(b->gelu.p, s->stream, b->gelu.nargs, b->gelu.args));
        FC_DNNL(dnnl_primitive_execute(b->mm.p, s->stream, b->mm.nargs, b->mm.args));
    }
    FC_DNNL(dnnl_stream_wait(s->stream));
    return 0;
}

static int pro_fused(od_state *s, fc_variant v, fc_err *e)
{
    (void)v;
    return pro_blocks(s, false, e);
}

static int pro_control(od_state *s, fc_variant v, fc_err *e)
{
    (void)v;
    return pro_blocks(s, true, e);
}

static int build_prologue(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    const dnnl_dim_t M = p->d[FC_LIN_M], K = p->d[FC_LIN_K], N = p->d[FC_LIN_N];
    const size_t el = s->dt == dnnl_bf16 ? sizeof(fc_bf16) : sizeof(float);
    int mb = (int)(PRO_BLOCK_BYTES / ((size_t)K * el)) / 16 * 16;
    s->pro.mb = mb < 16 ? 16 : mb > M ? (int)M : mb;
    s->pro.buf = fc_cpu_buffer((size_t)s->pro.mb * (size_t)K);
    fc_cpu_chain_add_control(&s->ch);
    cmd x_md, wuser_md, wany_md, y_md, b_md, wei = NULL;
    if (md_tag(s, &x_md, 2, (dnnl_dims_t){M, K}, dnnl_ab, e) ||
        md_tag(s, &wuser_md, 2, (dnnl_dims_t){K, N}, dnnl_ba, e) ||
        md_tag(s, &wany_md, 2, (dnnl_dims_t){K, N}, dnnl_format_tag_any, e) ||
        md_tag(s, &y_md, 2, (dnnl_dims_t){M, N}, dnnl_ab, e) || md_f32(s, &b_md, 2, (dnnl_dims_t){1, N}, dnnl_ab, e))
        return -1;
    dnnl_memory_t mw;
    if (pro_block_build(s, &s->pro.blk[0], s->pro.mb, wuser_md, wany_md, b_md, &wei, &mw, e) ||
        (M % s->pro.mb &&
         pro_block_build(s, &s->pro.blk[1], (int)(M % s->pro.mb), wuser_md, wany_md, b_md, &wei, &mw, e)))
        return -1;
    prim *pr = host_step(s, FC_FUSED, "eltwise_gelu_tanh+matmul", "", pro_fused);
    snprintf(pr->impl, sizeof pr->impl, "%d-row blocks of x: %s[%.24s] into a cached buffer -> %s[%.24s]", s->pro.mb,
             s->pro.blk[0].gelu.op, s->pro.blk[0].gelu.impl, s->pro.blk[0].mm.op, s->pro.blk[0].mm.impl);
    /* the unfused chain, and the control with the blocked matmuls in place of its one */
    void *g = fc_cpu_chain_dst(&s->ch, 0), *mmo = fc_cpu_chain_dst(&s->ch, 1);
    for (int c = 0; c < 2; c++) {
        const fc_variant v = c ? FC_CONTROL : FC_UNFUSED;
        if (eltwise(s, v, x_md, dnnl_eltwise_gelu_tanh, 0.0f, in(s, FC_LIN_TX), g, e)) return -1;
        if (c) {
            pr = host_step(s, v, "matmul", "", pro_control);
            snprintf(pr->impl, sizeof pr->impl, "%d-row blocks: %.64s", s->pro.mb, s->pro.blk[0].ctl.impl);
        } else {
            dnnl_primitive_attr_t attr;
            if (new_attr(&attr, e) ||
                linear_matmul(s, next_prim(s, v), attr, x_md, wuser_md, wany_md, NULL, y_md, g, mmo, e))
                return -1;
        }
        if (binary_op(s, v, dnnl_binary_add, y_md, b_md, mmo, w->t[FC_LIN_TB].data, s->ch.out[v], e)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ conv */

/* The descriptors of a problem's convolution; wino: it runs as oneDNN's Winograd
 * convolution (conv_wino), its activations in the layout that asks for. */
typedef struct conv_mds {
    cmd src, wuser, wany, b, dst, src_any, dst_any;
    dnnl_dims_t strides, pad_l, pad_r;
    bool wino;
} conv_mds;

static int conv_descriptors(od_state *s, conv_mds *cm, fc_err *e)
{
    const int64_t *d = s->p.d;
    dnnl_format_tag_t act_tag = s->p.layout == FC_NHWC ? dnnl_nhwc : dnnl_nchw;
    /* weights OIHW, or with groups GOIHW [g][k/g][c/g][r][s]: the same memory */
    int64_t G = d[FC_CONV_G];
    dnnl_dims_t wdims = {0};
    int wnd = 0;
    if (G > 1) wdims[wnd++] = G;
    wdims[wnd++] = d[FC_CONV_K] / G;
    wdims[wnd++] = d[FC_CONV_C] / G;
    wdims[wnd++] = d[FC_CONV_R];
    wdims[wnd++] = d[FC_CONV_S];
    if (md_tag(s, &cm->src, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_C], d[FC_CONV_H], d[FC_CONV_W]}, act_tag, e) ||
        md_tag(s, &cm->wuser, wnd, wdims, G > 1 ? dnnl_goihw : dnnl_oihw, e) ||
        md_tag(s, &cm->wany, wnd, wdims, dnnl_format_tag_any, e) ||
        md_f32(s, &cm->b, 1, (dnnl_dims_t){d[FC_CONV_K]}, dnnl_a, e) ||
        md_tag(s, &cm->dst, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_K], d[FC_CONV_P], d[FC_CONV_Q]}, act_tag, e) ||
        md_tag(s, &cm->src_any, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_C], d[FC_CONV_H], d[FC_CONV_W]},
               dnnl_format_tag_any, e) ||
        md_tag(s, &cm->dst_any, 4, (dnnl_dims_t){d[FC_CONV_N], d[FC_CONV_K], d[FC_CONV_P], d[FC_CONV_Q]},
               dnnl_format_tag_any, e))
        return -1;
    for (int i = 0; i < 2; i++) {
        int64_t in = d[i ? FC_CONV_W : FC_CONV_H], out = d[i ? FC_CONV_Q : FC_CONV_P], f = d[i ? FC_CONV_S : FC_CONV_R];
        cm->strides[i] = d[FC_CONV_STRIDE];
        cm->pad_l[i] = d[FC_CONV_PAD];
        cm->pad_r[i] = (out - 1) * d[FC_CONV_STRIDE] + f - in -
                       d[FC_CONV_PAD]; /* so that the output is exactly p x q */
    }
    return 0;
}

/* A reorder primitive pr from mfrom (descriptor from) into mto (to). */
static int reorder_prim(od_state *s, prim *pr, cmd from, dnnl_memory_t mfrom, cmd to, dnnl_memory_t mto, fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e) ||
        make_prim(s, "reorder", dnnl_reorder_primitive_desc_create(&pr->pd, from, s->eng, to, s->eng, attr), attr, pr,
                  e))
        return -1;
    arg(pr, DNNL_ARG_FROM, mfrom);
    arg(pr, DNNL_ARG_TO, mto);
    return 0;
}

/* Whether the problem's convolution runs as oneDNN's Winograd convolution: fp32, no
 * groups, at least WINO_MIN_CHANNELS input and output channels, and oneDNN has it for
 * both variants (3x3, stride 1, on AVX-512: jit_fp32_wino_2x3, or jit_wino_4x3 for
 * larger batches; elsewhere it answers unimplemented). Then both variants run it,
 * each between a reorder of x into the layout it asks for and one of its output back
 * into the problem's, as a framework does around a primitive on a blocked layout
 * (PyTorch's mkldnn convolution on a channels-last tensor): the speedup is still the
 * fusion's. oneDNN's own choice (dnnl_convolution_auto) is never Winograd in 2.6,
 * where it is the faster: on the Xeon (2 threads), with post-op ReLU, the reorders
 * included, medians of 60 calls in two rounds, brgconv against Winograd: 1x64x56x56
 * -> 64 1.07 / 1.34 ms against 0.70 / 0.95; 128 at 28x28 0.88 / 1.30 against
 * 0.59 / 0.82; 256 at 14x14 1.16 / 1.26 against 0.69 / 0.76; 512 at 7x7 0.94 / 1.33
 * against 0.86 / 0.81; 8x256x14x14 7.1 / 10.0 against 4.0 / 5.7; 32x64x56x56
 * 29.4 / 29.2 against 22.0 / 21.6. Slower with fewer channels: 32 at 112x112
 * 0.98 / 0.80 against 1.25 / 1.10, and the 3-channel stem 0.78 / 0.60 against
 * 3.8 / 3.5. */
enum { WINO_MIN_CHANNELS = 64 };
static bool conv_wino(od_state *s, const conv_mds *cm, const_dnnl_primitive_attr_t fused_attr)
{
    const int64_t *d = s->p.d;
    if (s->dt != dnnl_f32 || d[FC_CONV_G] > 1 || d[FC_CONV_C] < WINO_MIN_CHANNELS || d[FC_CONV_K] < WINO_MIN_CHANNELS)
        return false;
    bool wino = true;
    const_dnnl_primitive_attr_t attrs[2] = {NULL, fused_attr};
    for (int i = 0; i < 2 && wino; i++) {
        dnnl_primitive_desc_t pd = NULL;
        wino = pd_conv_alg(&pd, s->eng, dnnl_convolution_winograd, cm->src_any, cm->wany, cm->b, cm->dst_any,
                           cm->strides, cm->pad_l, cm->pad_r, attrs[i]) == dnnl_success;
        if (pd) dnnl_primitive_desc_destroy(pd);
    }
    return wino;
}

/* The FLOPs a Winograd convolution F(m x m, 3 x 3) performs (impl names it:
 * "wino_2x3" is m = 2): per tile of m x m outputs and (m + 2)^2 inputs, the products
 * of the transform domain, 2 (m + 2)^2 per input and output channel, and for m = 2 its
 * transforms' additions (B^T d B: 32 per tile and input channel; A^T M A: 24 per
 * tile and output channel); for another m the products only (fewer than it does: a
 * lower bound, so that its percentages are not overstated); then the bias and the
 * chain's other ops as counted. */
static double wino_flops(const fc_problem *p, const char *impl)
{
    const char *at = strstr(impl, "wino_");
    int m = at && at[5] >= '1' && at[5] <= '9' ? at[5] - '0' : 2;
    const int64_t *d = p->d;
    double a = m + 2.0, C = (double)d[FC_CONV_C], K = (double)d[FC_CONV_K];
    double tiles = (double)d[FC_CONV_N] * (double)((d[FC_CONV_P] + m - 1) / m) * (double)((d[FC_CONV_Q] + m - 1) / m);
    double conv = tiles * 2 * a * a * C * K + (m == 2 ? tiles * (32 * C + 24 * K) : 0);
    fc_cost cost = {0};
    fc_family_of(p->pat)->cost(p, &cost);
    double Y = (double)d[FC_CONV_N] * K * (double)d[FC_CONV_P] * (double)d[FC_CONV_Q];
    return cost.flops - cost.op_flops[0] + conv + Y;
}

/* The convolution of variant v: original weights and bias (unfused, control) or the
 * BN-folded ones (fused), attributes `attr` (post-ops; taken), writing dst; `impl`
 * names the implementation to take (NULL: oneDNN's first choice). With cm->wino
 * (not the control's), oneDNN's Winograd convolution between two reorders. */
static int conv_prim(od_state *s, fc_variant v, const conv_mds *cm, dnnl_primitive_attr_t attr, const char *impl,
                     float *dst, fc_err *e)
{
    const fc_workload *w = s->w;
    const bool wino = cm->wino && v != FC_CONTROL;
    prim *pre = wino ? next_prim(s, v) : NULL, *pr = next_prim(s, v);
    dnnl_status_t st = wino ? pd_conv_alg(&pr->pd, s->eng, dnnl_convolution_winograd, cm->src_any, cm->wany, cm->b,
                                          cm->dst_any, cm->strides, cm->pad_l, cm->pad_r, attr)
                            : pd_conv_impl(&pr->pd, s->eng, cm->src, cm->wany, cm->b, cm->dst, cm->strides, cm->pad_l,
                                           cm->pad_r, attr, impl);
    if (make_prim(s, wino ? "convolution(winograd)" : "convolution", st, attr, pr, e)) return -1;
    bool folded = v == FC_FUSED;
    dnnl_memory_t ms, mw, mb, md;
    if (mem(s, cm->src, in(s, FC_CONV_TX), &ms, e) ||
        reorder_weights(s, cm->wuser, in(s, folded ? FC_CONV_TWF : FC_CONV_TW), pr->pd, dnnl_query_weights_md, &mw,
                        e) ||
        mem(s, cm->b, w->t[folded ? FC_CONV_TBF : FC_CONV_TB].data, &mb, e) || mem(s, cm->dst, dst, &md, e))
        return -1;
    if (wino) {
        cmd bs = dnnl_primitive_desc_query_md(pr->pd, dnnl_query_src_md, 0);
        cmd bd = dnnl_primitive_desc_query_md(pr->pd, dnnl_query_dst_md, 0);
        dnnl_memory_t mbs, mbd;
        if (mem(s, bs, DNNL_MEMORY_ALLOCATE, &mbs, e) || mem(s, bd, DNNL_MEMORY_ALLOCATE, &mbd, e) ||
            reorder_prim(s, pre, cm->src, ms, bs, mbs, e) || reorder_prim(s, next_prim(s, v), bd, mbd, cm->dst, md, e))
            return -1;
        ms = mbs;
        md = mbd;
        s->wino_flops[v] = wino_flops(&s->p, pr->impl);
    }
    arg(pr, DNNL_ARG_SRC, ms);
    arg(pr, DNNL_ARG_WEIGHTS, mw);
    arg(pr, DNNL_ARG_BIAS, mb);
    arg(pr, DNNL_ARG_DST, md);
    return 0;
}

/* Inference batch normalization of variant v's chain, from cur into out. */
static int bnorm(od_state *s, fc_variant v, cmd md, cmd c_md, float *cur, float *out, fc_err *e)
{
    const fc_workload *w = s->w;
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    prim *bp = next_prim(s, v);
    if (make_prim(s, "batch_normalization", pd_bnorm(&bp->pd, s->eng, md, (float)FC_BN_EPS, attr), attr, bp, e))
        return -1;
    dnnl_memory_t m0, m1, mm, mv, msc, msh;
    if (mem(s, md, cur, &m0, e) || mem(s, md, out, &m1, e) || mem(s, c_md, w->t[FC_CONV_TMEAN].data, &mm, e) ||
        mem(s, c_md, w->t[FC_CONV_TVAR].data, &mv, e) || mem(s, c_md, w->t[FC_CONV_TGAMMA].data, &msc, e) ||
        mem(s, c_md, w->t[FC_CONV_TBETA].data, &msh, e))
        return -1;
    arg(bp, DNNL_ARG_SRC, m0);
    arg(bp, DNNL_ARG_DST, m1);
    arg(bp, DNNL_ARG_MEAN, mm);
    arg(bp, DNNL_ARG_VARIANCE, mv);
    arg(bp, DNNL_ARG_SCALE, msc);
    arg(bp, DNNL_ARG_SHIFT, msh);
    return 0;
}

/* The primitives after the convolution in variant v's chain (unfused, control): one
 * per op, each writing an intermediate, the last v's output. */
static int conv_passes(od_state *s, fc_variant v, const conv_mds *cm, float *cur, fc_err *e)
{
    const fc_pattern *pat = s->p.pat;
    for (int i = 1; i < pat->nops; i++) {
        float *out = i == pat->nops - 1 ? s->ch.out[v] : fc_cpu_chain_dst(&s->ch, i);
        int rc;
        switch (pat->ops[i]) {
        case FC_OP_BN: rc = bnorm(s, v, cm->dst, cm->b, cur, out, e); break;
        case FC_OP_RESID:
            rc = binary_op(s, v, dnnl_binary_add, cm->dst, cm->dst, cur, in(s, FC_CONV_TR), out, e);
            break;
        case FC_OP_RELU: rc = eltwise(s, v, cm->dst, dnnl_eltwise_relu, 0, cur, out, e); break;
        default: return fc_errf(e, "cpu.onednn: no primitive for op '%s' after a convolution", fc_op_name(pat->ops[i]));
        }
        if (rc) return -1;
        cur = out;
    }
    return 0;
}

/* The fused output that a sum post-op adds to, r again (in the problem's data type) */
static void refill_residual(od_state *s)
{
    memcpy(s->ch.out[FC_FUSED], in(s, FC_CONV_TR),
           s->ch.out_n * (s->dt == dnnl_bf16 ? sizeof(fc_bf16) : sizeof(float)));
}

/* Unfused: convolution → the passes. Fused: the convolution with BN folded and the
 * residual (a sum into dst, which holds r) and ReLU as post-ops. Control, when the
 * post-ops made oneDNN pick another convolution implementation than the unfused
 * chain's: that implementation without them, then the unfused passes. */
static int build_conv(od_state *s, fc_err *e)
{
    const fc_pattern *pat = s->p.pat;
    conv_mds cm;
    if (conv_descriptors(s, &cm, e)) return -1;
    bool relu = fc_pattern_has_op(pat, FC_OP_RELU), resid = fc_pattern_has_op(pat, FC_OP_RESID);
    dnnl_primitive_attr_t attr, fattr;
    if (new_attr(&fattr, e)) return -1;
    if ((relu || resid) && set_post_ops(fattr, NULL, resid, relu ? dnnl_eltwise_relu : dnnl_alg_kind_undef, e)) {
        dnnl_primitive_attr_destroy(fattr);
        return -1;
    }
    cm.wino = !resid && conv_wino(s, &cm, fattr); /* the sum adds to dst in the problem's layout */
    if (new_attr(&attr, e) || conv_prim(s, FC_UNFUSED, &cm, attr, NULL, fc_cpu_chain_dst(&s->ch, 0), e) ||
        conv_passes(s, FC_UNFUSED, &cm, fc_cpu_chain_dst(&s->ch, 0), e)) {
        dnnl_primitive_attr_destroy(fattr);
        return -1;
    }
    if (conv_prim(s, FC_FUSED, &cm, fattr, NULL, s->ch.out[FC_FUSED], e)) return -1;
    if (resid) { /* dst holds r when a call begins (od_poison puts it back) */
        s->sum_in_place = true;
        refill_residual(s);
    }
    const int at = cm.wino; /* the convolution's place in the chains: after the reorder of x */
    const char *fused_impl = s->chain[FC_FUSED][at].impl;
    if (!strcmp(fused_impl, s->chain[FC_UNFUSED][at].impl)) return 0;
    fc_cpu_chain_add_control(&s->ch);
    return new_attr(&attr, e) || conv_prim(s, FC_CONTROL, &cm, attr, fused_impl, fc_cpu_chain_dst(&s->ch, 0), e) ||
                   conv_passes(s, FC_CONTROL, &cm, fc_cpu_chain_dst(&s->ch, 0), e)
               ? -1
               : 0;
}

/* ------------------------------------------------------------------ attention */

static int build_qk(od_state *s, fc_err *e)
{
    const fc_problem *p = &s->p;
    /* Grouped-query heads: the h/hkv query heads of a key/value head are adjacent, so
     * Q is [B·hkv, (h/hkv)·s, d] against K [B·hkv, skv, d]: one batched matmul. */
    dnnl_dim_t B = p->d[FC_ATT_B] * p->d[FC_ATT_HKV], M = p->d[FC_ATT_H] / p->d[FC_ATT_HKV] * p->d[FC_ATT_S];
    dnnl_dim_t SKV = p->d[FC_ATT_SKV], D = p->d[FC_ATT_D];
    s->scale = 1.0f / sqrtf((float)D);
    cmd q_md, k_md, s_md, sc_md;
    if (md_tag(s, &q_md, 3, (dnnl_dims_t){B, M, D}, dnnl_abc, e) ||
        md_tag(s, &s_md, 3, (dnnl_dims_t){B, M, SKV}, dnnl_abc, e) || md_f32(s, &sc_md, 1, (dnnl_dims_t){1}, dnnl_a, e))
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
        if (mem(s, q_md, in(s, FC_ATT_TQ), &mq, e) || mem(s, k_md, in(s, FC_ATT_TK), &mk, e) ||
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

/* ------------------------------------------------------------------ norm
 *
 * unfused  add_layernorm: binary_add → layer_normalization (scale and shift; one
 *          primitive, as PyTorch's layer_norm is one kernel); add_rmsnorm: binary_add
 *          writing h where the output holds it → RMSNorm; qk_norm_rope: RMSNorm per
 *          head → rope. RMSNorm is layer_normalization with rms_norm from oneDNN 3.9,
 *          fusecal's host kernel before; rope is always fusecal's.
 * fused    fusecal's one-pass host kernel: layer_normalization's post-ops act after
 *          the norm, so oneDNN fuses no add before it (nor RMSNorm with a rotation). */

static dnnl_status_t pd_lnorm(dnnl_primitive_desc_t *pd, dnnl_engine_t eng, cmd md, float eps, bool rms,
                              const_dnnl_primitive_attr_t attr)
{
    unsigned flags = dnnl_use_scale | (rms ? 0u : (unsigned)dnnl_use_shift);
#if FC_DNNL_RMS
    if (rms) flags |= dnnl_rms_norm;
#endif
#if FC_DNNL3
    return dnnl_layer_normalization_forward_primitive_desc_create(pd, eng, dnnl_forward_inference, md, md, NULL, eps,
                                                                  flags, attr);
#else
    dnnl_layer_normalization_desc_t d;
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(&d, dnnl_forward_inference, md, NULL, eps, flags);
    return st != dnnl_success ? st : dnnl_primitive_desc_create(pd, &d, attr, eng, NULL);
#endif
}

/* layer_normalization of the rows of md (γ [cols]; β when not rms) from src into dst */
static int lnorm(od_state *s, cmd md, dnnl_dim_t cols, void *src, void *dst, bool rms, fc_err *e)
{
    const fc_workload *w = s->w;
    cmd c_md;
    dnnl_primitive_attr_t attr;
    if (md_f32(s, &c_md, 1, (dnnl_dims_t){cols}, dnnl_a, e) || new_attr(&attr, e)) return -1;
    prim *pr = next_prim(s, FC_UNFUSED);
    float eps = (float)(rms ? FC_RMS_EPS : FC_LN_EPS);
    const char *name = fc_op_name(rms ? FC_OP_RMSNORM : FC_OP_LAYERNORM);
    if (make_prim(s, name, pd_lnorm(&pr->pd, s->eng, md, eps, rms, attr), attr, pr, e)) return -1;
    pr->op = rms ? "layer_normalization(rms_norm)" : "layer_normalization";
    dnnl_memory_t m0, m1, msc, msh;
    if (mem(s, md, src, &m0, e) || mem(s, md, dst, &m1, e) || mem(s, c_md, w->t[FC_NORM_TGAMMA].data, &msc, e))
        return -1;
    arg(pr, DNNL_ARG_SRC, m0);
    arg(pr, DNNL_ARG_DST, m1);
    arg(pr, DNNL_ARG_SCALE, msc);
    if (!rms) {
        if (mem(s, c_md, w->t[FC_NORM_TBETA].data, &msh, e)) return -1;
        arg(pr, DNNL_ARG_SHIFT, msh);
    }
    return 0;
}

static int host_fused(od_state *s, fc_variant v, fc_err *e)
{
    (void)e;
    const fc_workload *w = s->w;
    const int64_t *d = s->p.d;
    size_t M = (size_t)d[FC_NORM_M], N = (size_t)d[FC_NORM_N], D = (size_t)d[FC_NORM_D];
    const float *g = w->t[FC_NORM_TGAMMA].data, *b = w->t[FC_NORM_TBETA].data;
    void *x = in(s, FC_NORM_TX), *r = fc_pattern_has_op(s->p.pat, FC_OP_ROPE) ? NULL : in(s, FC_NORM_TR);
    float *out = s->ch.out[v];
    const bool bf = s->dt == dnnl_bf16;
    const fc_norm_io st = s->norm_io;
    if (fc_pattern_has_op(s->p.pat, FC_OP_LAYERNORM)) {
        if (bf) fc_cpu_add_layernorm_bf16(x, r, g, b, (float)FC_LN_EPS, (fc_bf16 *)out, M, N, st);
        else
            fc_cpu_add_layernorm(x, r, g, b, (float)FC_LN_EPS, out, M, N, st);
    } else if (fc_pattern_has_op(s->p.pat, FC_OP_RMSNORM)) {
        if (bf) fc_cpu_add_rmsnorm_bf16(x, r, g, (float)FC_RMS_EPS, (fc_bf16 *)out, elem_at(s, out, M * N), M, N, st);
        else
            fc_cpu_add_rmsnorm(x, r, g, (float)FC_RMS_EPS, out, out + M * N, M, N, st);
    } else if (bf) {
        fc_cpu_rmsnorm_rope_bf16(x, g, s->rope, (float)FC_RMS_EPS, (fc_bf16 *)out, M, N / D, D, st);
    } else {
        fc_cpu_rmsnorm_rope(x, g, s->rope, (float)FC_RMS_EPS, out, M, N / D, D, st);
    }
    return 0;
}

/* RMSNorm of rows of n from h into y, in the problem's data type; out: y is the
 * chain's output (streamed as the problem's are) */
static void rmsnorm_rows(const od_state *s, const void *h, void *y, size_t rows, size_t n, bool out)
{
    const float *g = s->w->t[FC_NORM_TGAMMA].data;
    const fc_norm_io st = {.st = out && s->norm_io.st, .asks = s->norm_io.asks};
    if (s->dt == dnnl_bf16) fc_cpu_rmsnorm_rows_bf16(h, g, (float)FC_RMS_EPS, y, rows, n, st);
    else
        fc_cpu_rmsnorm_rows(h, g, (float)FC_RMS_EPS, y, rows, n, st);
}

/* add_rmsnorm's RMSNorm, from h (after y in the output) into y */
static int host_rmsnorm(od_state *s, fc_variant v, fc_err *e)
{
    (void)e;
    size_t M = (size_t)s->p.d[FC_NORM_M], N = (size_t)s->p.d[FC_NORM_N];
    rmsnorm_rows(s, elem_at(s, s->ch.out[v], M * N), s->ch.out[v], M, N, true);
    return 0;
}

static int host_head_rmsnorm(od_state *s, fc_variant v, fc_err *e)
{
    (void)e;
    (void)v;
    size_t rows = (size_t)(s->p.d[FC_NORM_M] * s->p.d[FC_NORM_H]), D = (size_t)s->p.d[FC_NORM_D];
    rmsnorm_rows(s, in(s, FC_NORM_TX), fc_cpu_chain_dst(&s->ch, 0), rows, D, false);
    return 0;
}

static int host_rope(od_state *s, fc_variant v, fc_err *e)
{
    (void)e;
    const int64_t *d = s->p.d;
    size_t M = (size_t)d[FC_NORM_M], H = (size_t)d[FC_NORM_H], D = (size_t)d[FC_NORM_D];
    void *q = fc_cpu_chain_dst(&s->ch, 0);
    if (s->dt == dnnl_bf16) fc_cpu_rope_bf16(q, s->rope, (fc_bf16 *)s->ch.out[v], M, H, D, s->norm_io);
    else
        fc_cpu_rope(q, s->rope, s->ch.out[v], M, H, D, s->norm_io);
    return 0;
}

#define NO_RMS_PRIMITIVE "no RMSNorm primitive before oneDNN 3.9"

/* Whether a norm problem's unfused chain ends in oneDNN's normalization primitive,
 * which stores through the caches (the add_layernorm's, and add_rmsnorm's where oneDNN
 * has one): only fusecal's host kernels stream. */
static bool od_lib_norm(const fc_problem *p)
{
    return fc_pattern_has_op(p->pat, FC_OP_LAYERNORM) || (!fc_pattern_has_op(p->pat, FC_OP_ROPE) && FC_DNNL_RMS);
}

/* a host step that writes variant v's output of a norm chain, saying what it streams
 * (fc_cpu_norm_streamed_bytes_st, as od_describe records it) */
static void norm_out_step(od_state *s, fc_variant v, const char *op, const char *why,
                          int (*fn)(od_state *, fc_variant, fc_err *))
{
    prim *pr = host_step(s, v, op, why, fn);
    const size_t n = strlen(pr->impl);
    const double streamed = fc_cpu_norm_streamed_bytes_st(&s->p, v, s->norm_io.st, od_lib_norm(&s->p));
    snprintf(pr->impl + n, sizeof pr->impl - n, "%s", fc_cpu_norm_streamed_words(&s->p, streamed));
}

/* qk_norm_rope: RMSNorm per head (rows of d) → rope */
static int build_qk_norm(od_state *s, fc_err *e)
{
    const int64_t *d = s->p.d;
    dnnl_dim_t M = d[FC_NORM_M], N = d[FC_NORM_N], D = d[FC_NORM_D];
    s->rope = fc_cpu_buffer((size_t)(M * D));
    fc_rope_table(M, D, s->rope);
    s->norm_io = fc_cpu_norm_io(&s->p, s->w->cold);
    (void)in(s, FC_NORM_TX); /* the bf16 copy, made now */
    norm_out_step(s, FC_FUSED, "rmsnorm+rope", "one pass, no oneDNN primitive rotates", host_fused);
    cmd md;
    if (md_tag(s, &md, 2, (dnnl_dims_t){M * N / D, D}, dnnl_ab, e)) return -1;
    if (!FC_DNNL_RMS) host_step(s, FC_UNFUSED, "rmsnorm", NO_RMS_PRIMITIVE, host_head_rmsnorm);
    else if (lnorm(s, md, D, in(s, FC_NORM_TX), fc_cpu_chain_dst(&s->ch, 0), true, e))
        return -1;
    norm_out_step(s, FC_UNFUSED, "rope", "oneDNN has no rotary-embedding primitive", host_rope);
    return 0;
}

/* add_layernorm: x + r → layer norm; add_rmsnorm: x + r into h (the output's second
 * half) → RMSNorm into y */
static int build_add_norm(od_state *s, fc_err *e)
{
    dnnl_dim_t M = s->p.d[FC_NORM_M], N = s->p.d[FC_NORM_N];
    bool ln = fc_pattern_has_op(s->p.pat, FC_OP_LAYERNORM);
    s->norm_io = fc_cpu_norm_io(&s->p, s->w->cold);
    norm_out_step(s, FC_FUSED, ln ? "add+layernorm" : "add+rmsnorm", "one pass, oneDNN fuses no add before a norm",
                  host_fused);
    float *out = s->ch.out[FC_UNFUSED];
    void *h = ln ? fc_cpu_chain_dst(&s->ch, 0) : elem_at(s, out, (size_t)(M * N));
    cmd md;
    if (md_tag(s, &md, 2, (dnnl_dims_t){M, N}, dnnl_ab, e) ||
        binary_op(s, FC_UNFUSED, dnnl_binary_add, md, md, in(s, FC_NORM_TX), in(s, FC_NORM_TR), h, e))
        return -1;
    if (ln || FC_DNNL_RMS) return lnorm(s, md, N, h, out, !ln, e);
    norm_out_step(s, FC_UNFUSED, "rmsnorm", NO_RMS_PRIMITIVE, host_rmsnorm);
    return 0;
}

/* ------------------------------------------------------------------ attention with a softmax
 *
 * unfused  matmul Q·Kᵀ batched over the key/value heads (as build_qk) → eltwise_linear
 *          1/√d → (causal) binary_add of a 0/−∞ mask [s, skv] broadcast over the heads,
 *          in place, as eager code's masked_fill_ → softmax over the keys → (attention)
 *          matmul P·V; every result in memory, in the problem's data type.
 * fused    oneDNN's primitive API has no primitive fusing softmax with the matmuls around
 *          it, so the fused form is row-blocked: per tile of key/value heads and their
 *          rows (at most ATT_TILE_BYTES of f32 scores, so the tile stays in cache),
 *          matmul Q·Kᵀ with the 1/√d scale into f32 scores, fusecal's masked softmax
 *          over them (fc_cpu_att_softmax_tile) written in the problem's data type, and
 *          (attention) matmul P·V of the tile; the s × skv scores never reach memory
 *          whole. The matmuls are the unfused chain's primitives on tiles of the same
 *          batched problem; a tile's shapes are fixed at setup (the full tile, a
 *          smaller last one and, under a causal mask, one per count of keys a block of
 *          rows sees: eager code, the unfused chain, computes every key and masks
 *          them), only the data handles move. With enough tiles each
 *          thread computes tiles of its own (ATT_LANE_BYTES) with single-threaded
 *          primitives: no barrier inside a tile, and one thread's softmax runs while
 *          the other's matmuls do; else all threads share each tile (ATT_TILE_BYTES). */
/* A tile all threads compute together: 4 MiB, two cores' L2 together; larger matmuls
 * per call. At b=8, h=16, s=1024, d=64 (fp32, Xeon, 2 cores) the fused call took
 * 173–181 ms with 1 MiB tiles, 165–178 with 2, 161–162 with 4 and 168–169 with 8; at
 * b=1, s=4096 331–370 against 377–444. */
#define ATT_TILE_BYTES (4 * 1024 * 1024)
/* A tile one thread computes alone: half its core's L2, its head's K and V beside it.
 * Same machine, fp32, fused medians: b=8, h=16, s=1024 147–157 ms with 1 MiB tiles,
 * 157–172 with 512 KiB, 175 with 256 KiB, 177 with 2 MiB, and 163–181 with shared
 * 4 MiB tiles run alternately with the 1 MiB ones; b=1, h=4, s=4096 80–84 against
 * 82–85 shared. */
#define ATT_LANE_BYTES (1024 * 1024)
/* Per-thread tiles when there are at least this many per thread (the last round then
 * leaves a thread idle a small part of the time), else shared tiles. */
#define ATT_LANE_MIN_TILES 4

/* Under a causal mask a row block's matmuls run over the keys its rows see, rounded up
 * to a multiple of skv / ATT_CAUSAL_SHAPES (and of 16): at most that many key counts
 * (each shape its own pair of matmuls), at most that share of skv computed beyond the
 * last key a block's rows see. */
#define ATT_CAUSAL_SHAPES 16
/* Under a causal mask with s >= 2 x ATT_CAUSAL_MIN_ROWS, a query head's s rows go in
 * blocks of at most max(s / ATT_CAUSAL_BLOCKS, ATT_CAUSAL_MIN_ROWS), whole heads or not:
 * the first block sees a quarter (or half) of the keys. AMD EPYC VM, fp32, fused medians
 * of two runs each: attention b=1, h=32, hkv=8, s=512, d=128 (blocks of a query head's
 * 512 rows before) 12.0–12.3 ms → 8.9–9.0 with blocks of s/4, 9.1–9.6 with s/8; qk_softmax
 * b=4, h=12, s=512, d=64 (whole heads before) 7.7–7.8 → 7.1–7.2, s/8 7.7–8.3; at s=256
 * blocks of 64 rows 0.46–0.47 → 0.47–0.48, s/8 0.63–0.68: so not below 128 rows. Blocks
 * of 128 from s = 256 on (three runs each, alternated): b=1, h=32, hkv=8, s=384, d=128
 * 7.03–7.31 → 5.73–6.17 ms; at s=256 (two blocks) 0.44–0.50 → 0.45–0.49, no change. */
#define ATT_CAUSAL_BLOCKS 4
#define ATT_CAUSAL_MIN_ROWS 128

/* The shape of nh heads x R rows against cols keys: an index into a->shape, added if
 * new. */
static int att_shape(att_blocked *a, int nh, int R, int cols)
{
    for (int k = 0; k < a->nshapes; k++)
        if (a->shape[k].nh == nh && a->shape[k].R == R && a->shape[k].cols == cols) return k;
    a->shape[a->nshapes] = (att_tile){.nh = nh, .R = R, .cols = cols};
    return a->nshapes++;
}

/* Tiles of at most `bytes` of scores: whole key/value heads (their g·s rows) as many
 * as fit, or one head's rows in blocks of a multiple of 16 rows; under a causal mask
 * blocks (ATT_CAUSAL_BLOCKS) each running over the keys its rows see, not all skv.
 * Makes a's shapes; returns the number of tiles. */
static int att_tiles(att_blocked *a, size_t bytes)
{
    const fc_att_geom *g = &a->g;
    const size_t rows = (size_t)g->g * g->s, row_bytes = (size_t)g->skv * sizeof(float);
    const bool trim = g->causal && g->s >= 2 * ATT_CAUSAL_MIN_ROWS;
    free(a->shape);
    free(a->block_shape);
    a->nshapes = 0;
    if (rows * row_bytes <= bytes && !trim) {
        size_t nh = bytes / (rows * row_bytes);
        a->nh = (int)(nh < (size_t)g->bkv ? nh : (size_t)g->bkv);
        a->R = (int)rows;
        a->nr = 1;
        a->shape = fc_xcalloc(2, sizeof *a->shape);
        a->block_shape = fc_xcalloc(1, sizeof *a->block_shape);
        a->block_shape[0] = att_shape(a, a->nh, a->R, g->skv);
        if (g->bkv % a->nh) att_shape(a, g->bkv % a->nh, a->R, g->skv); /* shape 1: the last heads */
        return (g->bkv + a->nh - 1) / a->nh;
    }
    size_t R = bytes / row_bytes / 16 * 16;
    R = R < 16 ? 16 : R;
    size_t R_causal = (size_t)(g->s / ATT_CAUSAL_BLOCKS / 16 * 16);
    if (R_causal < ATT_CAUSAL_MIN_ROWS) R_causal = ATT_CAUSAL_MIN_ROWS;
    if (trim && R > R_causal) R = R_causal;
    a->nh = 1;
    a->R = (int)(R < rows ? R : rows);
    a->nr = (int)((rows + (size_t)a->R - 1) / (size_t)a->R);
    a->shape = fc_xcalloc((size_t)a->nr, sizeof *a->shape);
    a->block_shape = fc_xcalloc((size_t)a->nr, sizeof *a->block_shape);
    const int step = (g->skv + ATT_CAUSAL_SHAPES - 1) / ATT_CAUSAL_SHAPES, gran = (step + 15) / 16 * 16;
    for (int b = 0; b < a->nr; b++) {
        const int r0 = b * a->R, Rb = (int)rows - r0 < a->R ? (int)rows - r0 : a->R;
        const int keys = (fc_att_block_keys(g, r0, Rb) + gran - 1) / gran * gran;
        a->block_shape[b] = att_shape(a, 1, Rb, keys < g->skv ? keys : g->skv);
    }
    return g->bkv * a->nr;
}

/* A matmul src · wei → dst (with the 1/√d scale when scaled), its memory objects made
 * with the given handles. */
static int att_matmul(od_state *s, prim *pr, cmd src, cmd wei, cmd dst, bool scaled, void *hs, void *hw, void *hd,
                      dnnl_memory_t *ms, dnnl_memory_t *mw, fc_err *e)
{
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    dnnl_status_t st = scaled ? attr_scale(attr, &s->scale) : dnnl_success;
    if (st != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        FC_DNNL(st);
    }
    if (make_prim(s, "matmul", pd_matmul(&pr->pd, s->eng, src, wei, NULL, dst, attr), attr, pr, e)) return -1;
    dnnl_memory_t m0, m1, m2;
    if (mem(s, src, hs, &m0, e) || mem(s, wei, hw, &m1, e) || mem(s, dst, hd, &m2, e)) return -1;
    arg(pr, DNNL_ARG_SRC, m0);
    arg(pr, DNNL_ARG_WEIGHTS, m1);
    arg(pr, DNNL_ARG_DST, m2);
#if FC_DNNL3
    if (scaled) { /* the weights scale's value */
        cmd sc_md;
        dnnl_memory_t msc;
        if (md_f32(s, &sc_md, 1, (dnnl_dims_t){1}, dnnl_a, e) || mem(s, sc_md, &s->scale, &msc, e)) return -1;
        arg(pr, DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, msc);
    }
#endif
    if (ms) *ms = m0;
    if (mw) *mw = m1;
    return 0;
}

/* Kᵀ [n, d, cols] of n key/value heads' first cols keys, seen through K's strides: no
 * copy */
static int kt_md(od_state *s, cmd *md, dnnl_dim_t n, dnnl_dim_t cols, fc_err *e)
{
    dnnl_dim_t SKV = s->att.g.skv, D = s->att.g.d;
    return md_make(s, md, 3, (dnnl_dims_t){n, D, cols}, dnnl_format_tag_undef, (dnnl_dims_t){SKV * D, 1, D}, e);
}

/* V [n, cols, d] of n key/value heads' first cols keys, seen through V's strides */
static int v_md(od_state *s, cmd *md, dnnl_dim_t n, dnnl_dim_t cols, fc_err *e)
{
    dnnl_dim_t SKV = s->att.g.skv, D = s->att.g.d;
    return md_make(s, md, 3, (dnnl_dims_t){n, cols, D}, dnnl_format_tag_undef, (dnnl_dims_t){SKV * D, D, 1}, e);
}

/* A lane's tile t of the shape `shape` (whose descriptors the first lane makes). */
static int att_tile_build(od_state *s, att_lane *l, att_tile *t, att_tile *shape, bool pv, fc_err *e)
{
    const fc_att_geom *g = &s->att.g;
    dnnl_dim_t nh = shape->nh, R = shape->R, C = shape->cols, D = g->d;
    att_tile *m = shape; /* (its descriptors) */
    /* (several heads only when a tile holds their every row: Q and O tiles are dense) */
    if (!m->q_md && (md_tag(s, &m->q_md, 3, (dnnl_dims_t){nh, R, D}, dnnl_abc, e) || kt_md(s, &m->k_md, nh, C, e) ||
                     md_f32(s, &m->s_md, 3, (dnnl_dims_t){nh, R, C}, dnnl_abc, e) ||
                     md_tag(s, &m->p_md, 3, (dnnl_dims_t){nh, R, C}, dnnl_abc, e) || v_md(s, &m->v_md, nh, C, e) ||
                     md_tag(s, &m->o_md, 3, (dnnl_dims_t){nh, R, D}, dnnl_abc, e)))
        return -1;
    *t = *shape;
    if (att_matmul(s, &t->qk, m->q_md, m->k_md, m->s_md, true, in(s, FC_ATT_TQ), in(s, FC_ATT_TK), l->S, &t->q, &t->k,
                   e))
        return -1;
    if (!pv) return 0;
    if (att_matmul(s, &t->pv, m->p_md, m->v_md, m->o_md, false, l->P, in(s, FC_ATT_TV), s->ch.out[FC_FUSED], &t->p,
                   &t->v, e))
        return -1;
    /* the output's memory object is the last the call made */
    t->o = t->pv.args[t->pv.nargs - 1].memory;
    return 0;
}

/* One tile, from key/value head n0's row r0: Q·Kᵀ/√d → masked softmax in cache → P·V.
 * (in() only reads here: setup made the bf16 copies, so threads may call it.) */
static int att_tile_run(od_state *s, const att_lane *l, const att_tile *t, int n0, int r0, void *out, fc_err *e)
{
    const fc_att_geom *g = &s->att.g;
    const int rows = g->g * g->s;
    const size_t skv = (size_t)g->skv, d = (size_t)g->d;
    const size_t row = (size_t)n0 * (size_t)rows + (size_t)r0; /* the tile's first row of all b·h·s */
    const bool pv = t->pv.p != NULL, bf = s->dt == dnnl_bf16;
    FC_DNNL(dnnl_memory_set_data_handle(t->q, elem_at(s, in(s, FC_ATT_TQ), row * d)));
    FC_DNNL(dnnl_memory_set_data_handle(t->k, elem_at(s, in(s, FC_ATT_TK), (size_t)n0 * skv * d)));
    FC_DNNL(dnnl_primitive_execute(t->qk.p, l->stream, t->qk.nargs, t->qk.args));
    FC_DNNL(dnnl_stream_wait(l->stream));
    if (!pv) {
        fc_cpu_att_softmax_tile(g, l->S, t->nh, t->R, r0, t->cols, elem_at(s, out, row * skv), (size_t)rows * skv,
                                g->skv, bf);
        return 0;
    }
    /* f32: unnormalized probabilities, each output row scaled after P·V; bf16: the
     * normalization rides on the rounding pass the probabilities need anyway */
    const size_t p_head = (size_t)t->R * (size_t)t->cols;
    if (bf) fc_cpu_att_softmax_tile(g, l->S, t->nh, t->R, r0, t->cols, l->P, p_head, t->cols, true);
    else
        fc_cpu_att_exp_tile(g, l->S, t->nh, t->R, r0, t->cols, l->P, p_head, l->inv);
    FC_DNNL(dnnl_memory_set_data_handle(t->v, elem_at(s, in(s, FC_ATT_TV), (size_t)n0 * skv * d)));
    FC_DNNL(dnnl_memory_set_data_handle(t->o, elem_at(s, out, row * d)));
    FC_DNNL(dnnl_primitive_execute(t->pv.p, l->stream, t->pv.nargs, t->pv.args));
    FC_DNNL(dnnl_stream_wait(l->stream));
    if (!bf) fc_cpu_att_scale_rows(elem_at(s, out, row * d), t->nh * t->R, g->d, l->inv);
    return 0;
}

/* Tile i of the fused form (key/value heads first, then row blocks) on lane l. */
static int att_tile_i(od_state *s, const att_lane *l, int i, void *out, fc_err *e)
{
    const att_blocked *a = &s->att;
    const int n0 = i / a->nr * a->nh, b = i % a->nr;
    return att_tile_run(s, l, &l->t[n0 + a->nh > a->g.bkv ? 1 : a->block_shape[b]], n0, b * a->R, out, e);
}

/* The fused form: tile after tile, all threads in each (one lane), or each thread its
 * share of the tiles on its own lane. (Never a parallel region around shared tiles:
 * oneDNN's threads inside it would be a nested team, made anew at every call.) */
static int att_fused(od_state *s, fc_variant v, fc_err *e)
{
    const att_blocked *a = &s->att;
    const int ntiles = a->ntiles;
    void *out = s->ch.out[v];
    if (a->nlanes == 1) {
        for (int i = 0; i < ntiles; i++)
            if (att_tile_i(s, &a->lane[0], i, out, e)) return -1;
        return 0;
    }
    int failed = 0;
#pragma omp parallel for num_threads(a->nlanes) schedule(dynamic, 1) reduction(| : failed)
    for (int i = 0; i < ntiles; i++) {
        fc_err le;
        if (failed || att_tile_i(s, &a->lane[omp_get_thread_num()], i, out, &le) == 0) continue;
        failed = 1;
#pragma omp critical(fc_att_err)
        *e = le;
    }
    return failed ? -1 : 0;
}

/* The causal chain's additive mask [s][skv]: 0 where query i sees key j, else -inf. */
static void *causal_mask(const od_state *s)
{
    const fc_att_geom *g = &s->att.g;
    float *m = fc_cpu_buffer((size_t)g->s * (size_t)g->skv);
    for (int i = 0; i < g->s; i++)
        for (int j = 0; j < g->skv; j++) m[(size_t)i * g->skv + j] = j <= i + g->skv - g->s ? 0.0f : -INFINITY;
    if (s->dt != dnnl_bf16) return m;
    fc_bf16 *h = fc_cpu_bf16_copy(m, (size_t)g->s * (size_t)g->skv);
    free(m);
    return h;
}

/* The causal chain's scale: one binary_add, S·(1/√d) (a scale on its first source) plus
 * the mask [1, 1, s, skv] broadcast over S viewed as [b·hkv, g, s, skv]. */
static int scale_mask(od_state *s, dnnl_dim_t B, void *src, void *dst, fc_err *e)
{
    const fc_att_geom *g = &s->att.g;
    cmd s4_md, m_md;
    s->mask = causal_mask(s);
    if (md_tag(s, &s4_md, 4, (dnnl_dims_t){B, g->g, g->s, g->skv}, dnnl_abcd, e) ||
        md_tag(s, &m_md, 4, (dnnl_dims_t){1, 1, g->s, g->skv}, dnnl_abcd, e))
        return -1;
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
#if FC_DNNL3
    dnnl_status_t st = dnnl_primitive_attr_set_scales_mask(attr, DNNL_ARG_SRC_0, 0);
#else
    dnnl_status_t st = dnnl_primitive_attr_set_scales(attr, DNNL_ARG_SRC_0, 1, 0, &s->scale);
#endif
    if (st != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        FC_DNNL(st);
    }
    prim *pr = next_prim(s, FC_UNFUSED);
    if (make_prim(s, "binary_add", pd_binary(&pr->pd, s->eng, dnnl_binary_add, s4_md, m_md, s4_md, attr), attr, pr, e))
        return -1;
    dnnl_memory_t m0, m1, m2;
    if (mem(s, s4_md, src, &m0, e) || mem(s, m_md, s->mask, &m1, e) || mem(s, s4_md, dst, &m2, e)) return -1;
    arg(pr, DNNL_ARG_SRC_0, m0);
    arg(pr, DNNL_ARG_SRC_1, m1);
    arg(pr, DNNL_ARG_DST, m2);
#if FC_DNNL3
    cmd sc_md;
    dnnl_memory_t msc;
    if (md_f32(s, &sc_md, 1, (dnnl_dims_t){1}, dnnl_a, e) || mem(s, sc_md, &s->scale, &msc, e)) return -1;
    arg(pr, DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC_0, msc);
#endif
    snprintf(pr->impl + strlen(pr->impl), sizeof pr->impl - strlen(pr->impl), " x 1/sqrt(d) + mask");
    return 0;
}

/* A lane's buffers and matmuls for the tile shapes. */
static int att_lane_build(od_state *s, att_lane *l, bool pv, fc_err *e)
{
    att_blocked *a = &s->att;
    const size_t tile = (size_t)a->nh * (size_t)a->R * (size_t)a->g.skv;
    l->S = fc_cpu_buffer(tile);
    /* (bf16 probabilities: a bf16 buffer of the tile's size, its contents overwritten) */
    l->P = !pv ? NULL : s->dt == dnnl_bf16 ? (void *)fc_cpu_bf16_copy(l->S, tile) : (void *)l->S;
    if (pv && s->dt != dnnl_bf16) l->inv = fc_cpu_buffer((size_t)a->nh * (size_t)a->R); /* f32 only */
    l->t = fc_xcalloc((size_t)a->nshapes, sizeof *l->t);
    for (int i = 0; i < a->nshapes; i++)
        if (att_tile_build(s, l, &l->t[i], &a->shape[i], pv, e)) return -1;
    return 0;
}

/* The row-blocked fused form: its tiles and lanes. Per-thread lanes' primitives are
 * made while OpenMP's maximum is one thread, so oneDNN plans them for the one thread
 * that runs each (inside a parallel region a primitive runs on the calling thread). */
static int build_att_tiles(od_state *s, bool pv, fc_err *e)
{
    att_blocked *a = &s->att;
    const int nthr = omp_get_max_threads();
    a->ntiles = att_tiles(a, ATT_LANE_BYTES);
    const bool lanes = nthr > 1 && a->ntiles >= ATT_LANE_MIN_TILES * nthr;
    if (!lanes) a->ntiles = att_tiles(a, ATT_TILE_BYTES);
    a->nlanes = lanes ? nthr : 1;
    a->lane = fc_xcalloc((size_t)a->nlanes, sizeof *a->lane);
    int rc = 0;
    if (lanes) omp_set_num_threads(1);
    for (int i = 0; i < a->nlanes && rc == 0; i++) {
        att_lane *l = &a->lane[i];
        l->stream = s->stream;
        if (lanes && dnnl_stream_create(&l->stream, s->eng, dnnl_stream_default_flags) != dnnl_success) {
            l->stream = NULL;
            rc = fc_errf(e, "oneDNN call dnnl_stream_create failed for a thread's tiles");
        }
        if (rc == 0) rc = att_lane_build(s, l, pv, e);
    }
    if (lanes) omp_set_num_threads(nthr);
    if (rc) return -1;
    prim *fp = host_step(s, FC_FUSED, pv ? "row-blocked attention" : "row-blocked qk_softmax",
                         "softmax in cache between matmuls", att_fused);
    char keys[48] = "";
    int fewer = 0; /* shapes against fewer keys than skv */
    for (int i = 0; i < a->nshapes; i++) fewer += a->shape[i].cols < a->g.skv;
    if (fewer) snprintf(keys, sizeof keys, ", %d shapes of fewer keys", fewer);
    snprintf(fp->impl, sizeof fp->impl, "%dx%d-row tiles%s%s: matmul[%.24s] + fusecal softmax%s", a->nh, a->R,
             lanes ? " per thread" : "", keys, a->lane[0].t[0].qk.impl,
             !pv                  ? ""
             : s->dt == dnnl_bf16 ? " + matmul"
                                  : " + matmul, then rows x 1/sum");
    return 0;
}

/* The decode form: fusecal's split-KV kernel on the problem's tensors. */
static int att_decode(od_state *s, fc_variant v, fc_err *e)
{
    (void)e;
    const int nthr = omp_get_max_threads();
    if (s->dt == dnnl_bf16)
        fc_cpu_att_decode_bf16(&s->att.g, in(s, FC_ATT_TQ), in(s, FC_ATT_TK), in(s, FC_ATT_TV), (void *)s->ch.out[v],
                               s->att.dws, nthr);
    else
        fc_cpu_att_flash(&s->att.g, in(s, FC_ATT_TQ), in(s, FC_ATT_TK), in(s, FC_ATT_TV), s->ch.out[v], s->att.dws,
                         nthr);
    return 0;
}

static int build_att(od_state *s, fc_err *e)
{
    att_blocked *a = &s->att;
    a->g = fc_att_geom_of(&s->p);
    const fc_att_geom *g = &a->g;
    const bool pv = fc_pattern_has_op(s->p.pat, FC_OP_PV);
    dnnl_dim_t B = g->bkv, M = (dnnl_dim_t)g->g * g->s, SKV = g->skv, D = g->d;
    s->scale = 1.0f / sqrtf((float)D);

    /* the fused form: with few query rows per key/value head (decode), fusecal's
     * split-KV kernel (a row-blocked tile would hold 4 query rows against thousands of
     * keys: matrix-vector products through a matmul primitive; fp32, b=1, h=32, hkv=8,
     * skv=4096, d=128: 1.07 ms tiled, 0.88 split-KV); else tiles, their scores and
     * probabilities, their matmuls */
    if (pv && fc_cpu_att_decode(g)) {
        a->dws = fc_cpu_buffer(fc_cpu_att_workspace(g, omp_get_max_threads()));
        char how[96];
        snprintf(how, sizeof how, "K and V streamed once as bf16, %s, partials combined",
                 fc_cpu_att_decode_bf16_math());
        host_step(s, FC_FUSED, "split-KV decode attention",
                  s->dt == dnnl_bf16 ? how : "K and V streamed once, partials combined", att_decode);
    } else if (build_att_tiles(s, pv, e)) {
        return -1;
    }

    /* the unfused chain */
    cmd q_md, k_md, s_md, v_md, o_md;
    if (md_tag(s, &q_md, 3, (dnnl_dims_t){B, M, D}, dnnl_abc, e) || kt_md(s, &k_md, B, SKV, e) ||
        md_tag(s, &s_md, 3, (dnnl_dims_t){B, M, SKV}, dnnl_abc, e))
        return -1;
    void *s0 = fc_cpu_chain_dst(&s->ch, 0), *s1 = fc_cpu_chain_dst(&s->ch, 1), *s2 = fc_cpu_chain_dst(&s->ch, 2);
    if (att_matmul(s, next_prim(s, FC_UNFUSED), q_md, k_md, s_md, false, in(s, FC_ATT_TQ), in(s, FC_ATT_TK), s0, NULL,
                   NULL, e))
        return -1;
    if (!g->causal) {
        if (eltwise(s, FC_UNFUSED, s_md, dnnl_eltwise_linear, s->scale, s0, s1, e)) return -1;
    } else if (scale_mask(s, B, s0, s1, e)) {
        return -1;
    }
    dnnl_primitive_attr_t attr;
    if (new_attr(&attr, e)) return -1;
    prim *pr = next_prim(s, FC_UNFUSED);
    if (make_prim(s, "softmax", pd_softmax(&pr->pd, s->eng, s_md, 2, attr), attr, pr, e)) return -1;
    dnnl_memory_t m1, m2;
    if (mem(s, s_md, s1, &m1, e) || mem(s, s_md, s2, &m2, e)) return -1;
    arg(pr, DNNL_ARG_SRC, m1);
    arg(pr, DNNL_ARG_DST, m2);
    if (!pv) return 0;
    if (md_tag(s, &v_md, 3, (dnnl_dims_t){B, SKV, D}, dnnl_abc, e) ||
        md_tag(s, &o_md, 3, (dnnl_dims_t){B, M, D}, dnnl_abc, e))
        return -1;
    return att_matmul(s, next_prim(s, FC_UNFUSED), s_md, v_md, o_md, false, s2, in(s, FC_ATT_TV), s->ch.out[FC_UNFUSED],
                      NULL, NULL, e);
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
    s->dt = p->dtype == FC_BF16 ? dnnl_bf16 : dnnl_f32;
    FC_DNNL(dnnl_engine_create(&s->eng, dnnl_cpu, 0));
    FC_DNNL(dnnl_stream_create(&s->stream, s->eng, dnnl_stream_default_flags));
    fc_cpu_chain_alloc(&s->ch, p->pat, w);
    if (s->dt == dnnl_bf16) fc_cpu_chain_use_bf16(&s->ch);
    int rc;
    switch (p->pat->ops[0]) {
    case FC_OP_GEMM: rc = fc_pattern_has_op(p->pat, FC_OP_GLU_MUL) ? build_glu(s, e) : build_linear(s, e); break;
    case FC_OP_GELU_IN: rc = build_prologue(s, e); break;
    case FC_OP_CONV: rc = build_conv(s, e); break;
    case FC_OP_QK: rc = fc_pattern_has_op(p->pat, FC_OP_SOFTMAX) ? build_att(s, e) : build_qk(s, e); break;
    case FC_OP_ADD: rc = build_add_norm(s, e); break;
    case FC_OP_HEAD_RMSNORM: rc = build_qk_norm(s, e); break;
    default: rc = fc_errf(e, "cpu.onednn: no primitive for op '%s'", fc_op_name(p->pat->ops[0])); break;
    }
    return rc != 0 && s->declined ? FC_DECLINED : rc;
}

static int od_run(void *state, fc_variant v, fc_err *e)
{
    od_state *s = state;
    for (int i = 0; i < s->nprims[v]; i++) {
        prim *pr = &s->chain[v][i];
        if (pr->host) { /* after the primitives before it */
            FC_DNNL(dnnl_stream_wait(s->stream));
            if (pr->host(s, v, e) != 0) return -1;
            continue;
        }
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
    if (v == FC_FUSED && s->sum_in_place) refill_residual(s);
    else
        fc_cpu_chain_poison(&s->ch, v);
    return 0;
}

static bool od_in_place(void *state, fc_variant v) { return v == FC_FUSED && ((od_state *)state)->sum_in_place; }

static void od_describe(void *state, fc_variant v, fc_impl *impl)
{
    od_state *s = state;
    memset(impl, 0, sizeof *impl);
    bool posts = false;
    for (int i = 0; i < s->nprims[v]; i++) posts |= s->chain[v][i].post != NULL;
    /* the fused call, which the folds and post-ops go with: the last primitive but
     * the reorders back into the problem's layout */
    int call = s->nprims[v] - 1;
    while (call > 0 && !strcmp(s->chain[v][call].op, "reorder")) call--;
    if (v == FC_CONTROL)
        fc_impl_addf(impl, s->p.pat->family == FC_FAM_CONV
                               ? "control: the fused form's convolution without post-ops, then the passes: "
                               : "control: the unfused chain with the fused form's blocked matmuls: ");
    for (int i = 0; i < s->nprims[v]; i++) {
        prim *pr = &s->chain[v][i];
        fc_impl_addf(impl, "%s%s[%s]%s", i ? " -> " : "", pr->op, pr->impl, pr->post ? pr->post : "");
        if (!strncmp(pr->impl, "ref", 3) && !impl->fallback) {
            impl->fallback = true;
            snprintf(impl->fallback_why, sizeof impl->fallback_why,
                     "oneDNN chose its reference implementation '%s' for %s", pr->impl, pr->op);
        }
        if (v != FC_FUSED || posts || i != call) continue;
        const fc_pattern *pat = s->p.pat;
        fc_op_impl ops[FC_NOPS];
        memcpy(ops, od_ops, sizeof ops);
        if (s->sum_in_place) ops[FC_OP_RESID].fused = "sum (in place: the output held the residual)";
        const char *with = fc_op_table_last(ops, pat, FC_FUSE_FOLD);
        if (with) fc_impl_addf(impl, "%s", with);
        bool many = fc_op_table_count(ops, pat, FC_FUSE_EPILOGUE) > 1;
        fc_impl_add_part(impl, ops, pat, FC_FUSE_EPILOGUE, many ? " + post-ops " : " + post-op ", ", ", "");
    }
    if (s->dt == dnnl_bf16)
        fc_impl_addf(impl, " [bf16 activations, weights and outputs; f32 accumulation and parameters]");
    const dnnl_version_t *ver = dnnl_version();
    fc_impl_addf(impl, " [oneDNN %d.%d.%d, %d threads]", ver->major, ver->minor, ver->patch, omp_get_max_threads());
    impl->nkernels = s->nprims[v];
    for (int i = 0; i < s->nprims[v]; i++) impl->nreorders += !strcmp(s->chain[v][i].op, "reorder");
    impl->flops_performed = s->wino_flops[v];
    impl->streamed_bytes = fc_cpu_norm_streamed_bytes_st(&s->p, v, s->norm_io.st, od_lib_norm(&s->p));
}

static void od_teardown(void *state)
{
    od_state *s = state;
    if (!s) return;
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        for (int i = 0; i < MAX_PRIMS; i++) prim_free(&s->chain[v][i]);
    for (int i = 0; i < s->att.nlanes; i++) {
        att_lane *l = &s->att.lane[i];
        for (int t = 0; l->t && t < s->att.nshapes; t++) {
            prim_free(&l->t[t].qk);
            prim_free(&l->t[t].pv);
        }
        if (l->stream && l->stream != s->stream) dnnl_stream_destroy(l->stream);
        if (l->P != l->S) free(l->P);
        free(l->S);
        free(l->inv);
        free(l->t);
    }
    for (int i = 0; i < 2; i++) {
        prim_free(&s->pro.blk[i].gelu);
        prim_free(&s->pro.blk[i].mm);
        prim_free(&s->pro.blk[i].ctl);
    }
    free(s->pro.buf);
    free(s->att.lane);
    free(s->att.shape);
    free(s->att.block_shape);
    for (int i = 0; i < s->nmems; i++) dnnl_memory_destroy(s->mems[i]);
    free(s->mems);
    md_pool_free(&s->mds);
    if (s->stream) dnnl_stream_destroy(s->stream);
    if (s->eng) dnnl_engine_destroy(s->eng);
    fc_cpu_chain_free(&s->ch);
    for (int i = 0; i < FC_MAX_TENSORS; i++) free(s->in16[i]);
    free(s->glu_s);
    free(s->rope);
    free(s->mask);
    free(s->att.dws);
    free(s);
}

static bool od_has_control(void *state) { return ((od_state *)state)->ch.out[FC_CONTROL] != NULL; }

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

/* n random values in [-1, 1) of data type dt (f32 or bf16) at p */
static void fill_random(void *p, size_t n, dnnl_data_type_t dt, fc_rng *r)
{
    for (size_t i = 0; i < n; i++) {
        float x = fc_rng_range(r, -1, 1);
        if (dt == dnnl_bf16) ((fc_bf16 *)p)[i] = fc_bf16_store(x);
        else
            ((float *)p)[i] = x;
    }
}

/* The best rate of single m x k x n matmuls (weights in the layout the primitive
 * prefers, as the fused linear variants run them), repeated for at least
 * `secs` seconds and `min_reps` calls after a warm-up call. */
static double od_gemm_rate(dnnl_data_type_t dt, dnnl_dim_t m, dnnl_dim_t n, dnnl_dim_t k, double secs, int min_reps)
{
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
        md_new(&mp, &a_md, 2, (dnnl_dims_t){m, k}, dt, dnnl_ab, NULL) ||
        md_new(&mp, &b_md, 2, (dnnl_dims_t){k, n}, dt, dnnl_format_tag_any, NULL) ||
        md_new(&mp, &c_md, 2, (dnnl_dims_t){m, n}, dt, dnnl_ab, NULL) || dnnl_primitive_attr_create(&attr) ||
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
    void *pa, *pb;
    if (dnnl_memory_get_data_handle(ma, &pa) || dnnl_memory_get_data_handle(mb, &pb)) goto out;
    fc_rng r;
    fc_rng_seed(&r, 7);
    size_t esize = dt == dnnl_bf16 ? 2 : 4;
    fill_random(pa, (size_t)(m * k), dt, &r);
    fill_random(pb, dnnl_memory_desc_get_size(wmd) / esize, dt, &r);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma},
                               {DNNL_ARG_WEIGHTS, mb},
                               {DNNL_ARG_DST, mc},
                               {DNNL_ARG_SCRATCHPAD, ms}};
    double best = INFINITY, start = fc_now(); /* a ceiling is a peak: the fastest of the runs */
    for (int it = 0; it <= min_reps || fc_now() - start < secs; it++) {
        double t0 = fc_now();
        if (dnnl_primitive_execute(p, st, 4, args) || dnnl_stream_wait(st)) goto out;
        if (it > 0) best = fmin(best, fc_now() - t0); /* the first call warms up */
    }
    rate = 2.0 * (double)m * n * k / best / 1e9;
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

/* oneDNN's GEMM ceiling: the best single call of matmuls from cache-resident
 * operands (128 and 256 rows of 512x512 weights, 512^3: the shapes where its blocked
 * kernels run fastest, and where fused linear variants reached 100.2 % of a
 * ceiling made of 31 calls at 512^3 alone) up to 1024^3 and 2048^3, each repeated
 * for GEMM_CEIL_S (a ceiling is a peak: too few calls missed it). */
#define GEMM_CEIL_S 0.1
static double od_gemm_gflops(fc_dtype dtype)
{
    static const dnnl_dim_t mnk[][3] = {{128, 512, 512},
                                        {256, 512, 512},
                                        {512, 512, 512},
                                        {1024, 1024, 1024},
                                        {2048, 2048, 2048}};
    char why[256];
    if (dtype != FC_FP32 && (dtype != FC_BF16 || !fc_host_bf16(why, sizeof why))) return 0;
    dnnl_data_type_t dt = dtype == FC_BF16 ? dnnl_bf16 : dnnl_f32;
    double best = 0;
    for (size_t i = 0; i < FC_ARRAY_LEN(mnk); i++)
        best = fmax(best, od_gemm_rate(dt, mnk[i][0], mnk[i][1], mnk[i][2], GEMM_CEIL_S, 5));
    return best;
}

static double od_streamed_bytes(const fc_problem *p, fc_variant v, double llc)
{
    return fc_cpu_norm_streamed_bytes(p, v, llc, od_lib_norm(p));
}

const fc_backend fc_backend_onednn = {
    .name = "cpu.onednn",
    .device = "cpu",
    .summary =
        "oneDNN primitives; fused: matmul/convolution post-ops (bias, eltwise, binary add; a convolution's residual as "
        "a sum, in place), folded BN, the matmul's own scale; 3x3 fp32 convolutions of 64 channels or more as Winograd (AVX-512) in both variants; norms: layer_normalization, fusecal host kernels where oneDNN has no primitive or fusion; "
        "softmax attention: matmuls on cache-resident tiles with fusecal's softmax between them",
    .available = od_available,
    .supports = od_supports,
    .device_bytes = NULL,
    .setup = od_setup,
    .run = od_run,
    .output = od_output,
    .poison = od_poison,
    .describe = od_describe,
    .has_control = od_has_control,
    .in_place = od_in_place,
    .teardown = od_teardown,
    .inventory = od_inventory,
    .gemm_gflops = od_gemm_gflops,
    .streamed_bytes = od_streamed_bytes,
};
