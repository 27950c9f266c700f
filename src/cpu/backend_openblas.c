/* backend_openblas.c — cpu.openblas: OpenBLAS sgemm plus fusecal's OpenMP kernels.
 *
 *   unfused  one library call or OpenMP pass per op, each writing its result to
 *            memory: cblas_sgemm → bias → ReLU/GELU/residual; blocked im2col conv
 *            with its bias → BN → ReLU; QKᵀ → scale(+mask) → softmax → ·V; add →
 *            layer norm or RMSNorm, RMSNorm per head → rope (norm_ops.c).
 *   fused    the same arithmetic with the epilogue applied to each GEMM block while
 *            it is in cache (a gated unit's silu(gate)·up from one sgemm per block
 *            on W laid out as matching gate and up row blocks at setup), a GELU
 *            prologue applied to each block of x rows in a per-thread buffer before
 *            its sgemm calls (linear_ops.h); BN folded into the conv; flash-style
 *            attention; the norms in one pass over their inputs, the row kept in
 *            cache.
 *   control  (linear) the fused form's blocked GEMM — per-thread blocks, one
 *            single-threaded sgemm each, sized to the LLC — without the epilogue,
 *            then the unfused chain's passes: the fused form partitions the GEMM
 *            differently from the unfused chain's one threaded sgemm, so the record
 *            splits the speedup into that (unfused → control) and fusion proper
 *            (control → fused).
 */
#include "attention_ops.h"
#include "backend.h"
#include "cpu_chain.h"
#include "cpu_ops.h"
#include "cpuinfo.h"
#include "linear_ops.h"
#include "norm_ops.h"
#include "openblas_core.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ob_state {
    fc_problem p;
    const fc_workload *w;
    int nthreads;
    fc_cpu_chain ch;
    /* conv */
    fc_conv_geom g;
    fc_att_geom ag;             /* attention */
    float *wpack[FC_NVARIANTS]; /* original weights for unfused, folded for fused */
    float *ws;                  /* per-thread im2col / flash workspace */
    size_t block_bytes;         /* C block of a fused GEMM: kept in this thread's share of the LLC */
    float *bn_scratch;
    /* linear gated units and prologues: the fused form's blocks, W in the gated
     * unit's block layout */
    fc_lin_plan lin;
    float *wglu;
    float *rope;        /* qk_norm_rope's cos/sin table, made at setup */
    fc_norm_io norm_io; /* a norm chain's output streamed past the caches, and its asks (fc_cpu_norm_io) */
} ob_state;

static const char *parallel_name(void)
{
    switch (openblas_get_parallel()) {
    case 0: return "sequential";
    case 1: return "pthreads";
    case 2: return "openmp";
    default: return "unknown";
    }
}

static bool ob_available(char *why, size_t n)
{
    (void)why;
    (void)n;
    return true;
}

/* How cpu.openblas runs each op: its call or OpenMP pass in the unfused chain ("%s":
 * the layout, or the causal mask), and its part in the fused form: the blocked call,
 * what is folded into it, its in-cache epilogue, or a kernel of its own. */
static const fc_op_impl ob_ops[FC_NOPS] = {
    [FC_OP_GEMM] = {"cblas_sgemm", FC_FUSE_CALL, "blocked cblas_sgemm"},
    [FC_OP_CONV] = {"conv(%s)", FC_FUSE_CALL, "conv(%s)", FC_FUSE_EPILOGUE, "bias"},
    [FC_OP_QK] = {"cblas_sgemm(QK^T, per key/value head)", FC_FUSE_CALL, "cblas_sgemm"},
    [FC_OP_BIAS] = {"bias pass(omp)", FC_FUSE_EPILOGUE, "bias"},
    [FC_OP_RESID] = {"residual pass(omp)", FC_FUSE_EPILOGUE, "residual"},
    [FC_OP_RELU] = {"relu pass(omp)", FC_FUSE_EPILOGUE, "relu"},
    [FC_OP_GELU] = {"gelu pass(omp)", FC_FUSE_EPILOGUE, "gelu_tanh"},
    [FC_OP_BN] = {"batchnorm pass(omp)", FC_FUSE_FOLD, ", BN folded"},
    [FC_OP_SCALE] = {"scale%s pass(omp)", FC_FUSE_FOLD, " with alpha=1/sqrt(d) (scale folded into the GEMM)"},
    [FC_OP_SOFTMAX] = {"softmax pass(omp)", FC_FUSE_KERNEL, "row-blocked cblas_sgemm + in-cache softmax"},
    [FC_OP_PV] = {"cblas_sgemm(PV, per key/value head)", FC_FUSE_KERNEL,
                  "flash attention or split-KV decode (fusecal), online softmax, S never stored"},
    [FC_OP_ADD] = {"add pass(omp)", FC_FUSE_CALL, "add"},
    [FC_OP_LAYERNORM] = {"layernorm pass(omp: mean and variance in one sweep, normalization over the cached row%s)",
                         FC_FUSE_KERNEL,
                         "fused add+layernorm(omp, vectors: x and r read once, x+r kept in a row in cache%s)"},
    [FC_OP_RMSNORM] =
        {"rmsnorm pass(omp%s)", FC_FUSE_KERNEL,
         "fused add+rmsnorm(omp, vectors: x and r read once, h written once and normalized from a row in cache%s)"},
    [FC_OP_HEAD_RMSNORM] = {"rmsnorm pass(omp, per head)", FC_FUSE_CALL, "rmsnorm"},
    [FC_OP_ROPE] = {"rope pass(omp, rotate-half, fp32 cos/sin table%s)", FC_FUSE_KERNEL,
                    "fused rmsnorm+rope(omp, vectors: each head read once, normalized and rotated in L1%s)"},
    [FC_OP_SILU] = {"silu pass(omp, gate half)", FC_FUSE_EPILOGUE, "silu(gate)"},
    [FC_OP_GLU_MUL] = {"mul pass(omp, by the up half)", FC_FUSE_EPILOGUE, "* up"},
    [FC_OP_GELU_IN] = {"gelu pass(omp, x)", FC_FUSE_PROLOGUE, "gelu_tanh of each block of x rows"},
};

static const char *ob_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    const ob_state *s = ctx;
    const fc_problem *p = &s->p;
    if (op == FC_OP_CONV) { /* the unfused conv's bias: the depthwise kernel's epilogue, or the sgemm's C */
        const bool dw = fc_cpu_conv_is_depthwise(&s->g);
        const char *lay = fc_layout_name(p->layout), *bias = v != FC_UNFUSED ? ""
                                                             : dw            ? ", +bias"
                                                                             : ", the bias as C (beta = 1)";
        if (dw) snprintf(buf, n, "direct depthwise, %s%s", lay, bias);
        else if (fc_cpu_dconv_applies(&s->g)) {
            char d[128];
            fc_cpu_dconv_describe(&s->g, d, sizeof d);
            snprintf(buf, n, "%s, %s%s", d, lay, v != FC_UNFUSED ? "" : ", +bias");
        } else if (s->g.g > 1)
            snprintf(buf, n, "blocked im2col+cblas_sgemm per group, g=%d, %s%s", s->g.g, lay, bias);
        else
            snprintf(buf, n, "blocked im2col+cblas_sgemm, %s%s", lay, bias);
        return buf;
    }
    if (op == FC_OP_SCALE && p->d[FC_ATT_CAUSAL]) return "+causal-mask";
    if (op == FC_OP_LAYERNORM || op == FC_OP_RMSNORM || op == FC_OP_ROPE) /* the ops that write a norm's output */
        return fc_cpu_norm_streamed_words(p, fc_cpu_norm_streamed_bytes_st(p, v, s->norm_io.st, false));
    return "";
}

/* The op whose kernel runs the fused form: the last kernel of its own, else the call. */
static fc_op fused_op(const fc_pattern *pat)
{
    int k = fc_op_table_kernel(ob_ops, pat);
    return pat->ops[k >= 0 ? k : fc_op_table_call(ob_ops, pat)];
}

static bool ob_supports(const fc_problem *p, char *why, size_t n)
{
    if (p->dtype == FC_BF16) { /* Debian's 0.3.21 is built without BUILD_BFLOAT16 */
        snprintf(why, n, "cpu.openblas computes in fp32 only (asked: bf16): %s",
                 dlsym(RTLD_DEFAULT, "cblas_sbgemm") ? "fusecal's host kernels around its sbgemm are fp32"
                                                     : "this OpenBLAS has no bf16 GEMM (no cblas_sbgemm)");
        return false;
    }
    if (p->dtype != FC_FP32) {
        snprintf(why, n, "cpu.openblas computes in fp32 only (asked: %s)", fc_dtype_name(p->dtype));
        return false;
    }
    if (!fc_op_table_fits(ob_ops, p->pat, "cpu.openblas", why, n)) return false;
    if (fused_op(p->pat) == FC_OP_PV && !fc_pattern_has_op(p->pat, FC_OP_SCALE)) {
        snprintf(why, n, "cpu.openblas's flash attention scales by 1/sqrt(d); pattern '%s' has no scale", p->pat->name);
        return false;
    }
    return true;
}


/* A gated unit's blocks and its W laid out block by block (timed with the setup,
 * as a deployment lays weights out once), or a prologue's blocks and buffers. */
static void setup_linear(ob_state *s)
{
    const int64_t *d = s->p.d;
    int M = (int)d[FC_LIN_M], K = (int)d[FC_LIN_K], N = (int)d[FC_LIN_N];
    if (fc_pattern_has_op(s->p.pat, FC_OP_GLU_MUL)) {
        fc_cpu_glu_plan(M, N, K, s->block_bytes, s->nthreads, &s->lin);
        s->wglu = fc_cpu_buffer(s->w->t[FC_LIN_TW].n);
        fc_cpu_glu_pack(&s->lin, s->w->t[FC_LIN_TW].data, s->wglu);
        s->ws = fc_cpu_buffer(fc_cpu_glu_workspace(&s->lin) * (size_t)s->nthreads);
    } else if (fc_pattern_has_op(s->p.pat, FC_OP_GELU_IN)) {
        fc_cpu_prologue_plan(M, N, K, s->block_bytes, s->nthreads, &s->lin);
        s->ws = fc_cpu_buffer(fc_cpu_prologue_workspace(&s->lin) * (size_t)s->nthreads);
    }
}

static int ob_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    (void)devctx;
    (void)e;
    ob_state *s = fc_xcalloc(1, sizeof *s);
    s->p = *p;
    s->w = w;
    s->nthreads = omp_get_max_threads();
    /* Blocks as large as a thread's share of the last-level cache: one sgemm call
     * per block keeps OpenBLAS near its whole-matrix rate (small blocks repack A and
     * B too often), and the epilogue still reads the block from cache. */
    s->block_bytes = fc_host_llc_assumed() / (2 * (size_t)s->nthreads);
    if (s->block_bytes < (512u << 10)) s->block_bytes = 512u << 10;
    if (s->block_bytes > (8u << 20)) s->block_bytes = 8u << 20;
    fc_cpu_chain_alloc(&s->ch, p->pat, w);
    if (p->pat->family == FC_FAM_CONV) {
        const int64_t *d = p->d;
        s->g = (fc_conv_geom){.n = (int)d[FC_CONV_N],
                              .c = (int)d[FC_CONV_C],
                              .h = (int)d[FC_CONV_H],
                              .w = (int)d[FC_CONV_W],
                              .k = (int)d[FC_CONV_K],
                              .r = (int)d[FC_CONV_R],
                              .s = (int)d[FC_CONV_S],
                              .stride = (int)d[FC_CONV_STRIDE],
                              .pad = (int)d[FC_CONV_PAD],
                              .p = (int)d[FC_CONV_P],
                              .q = (int)d[FC_CONV_Q],
                              .nhwc = p->layout == FC_NHWC,
                              .g = (int)d[FC_CONV_G]};
        size_t wn = w->t[FC_CONV_TW].n;
        s->wpack[FC_UNFUSED] = fc_cpu_buffer(wn);
        s->wpack[FC_FUSED] = fc_cpu_buffer(wn);
        fc_cpu_conv_pack_weights(&s->g, w->t[FC_CONV_TW].data, s->wpack[FC_UNFUSED]);
        fc_cpu_conv_pack_weights(&s->g, w->t[FC_CONV_TWF].data, s->wpack[FC_FUSED]);
        const size_t wsn = fc_cpu_conv_workspace(&s->g, s->nthreads) + 1;
        s->ws = fc_cpu_buffer(wsn);
        fc_cpu_fill_nan(s->ws, wsn); /* a kernel that reads what it did not write fails verification */
        s->bn_scratch = fc_cpu_buffer(2 * (size_t)d[FC_CONV_K]);
    } else if (p->pat->family == FC_FAM_ATTENTION) {
        s->ag = fc_att_geom_of(p);
        if (fused_op(p->pat) == FC_OP_PV) s->ws = fc_cpu_buffer(fc_cpu_att_workspace(&s->ag, s->nthreads));
    } else if (p->pat->family == FC_FAM_NORM) {
        s->norm_io = fc_cpu_norm_io(p, w->cold);
        if (fc_pattern_has_op(p->pat, FC_OP_ROPE)) {
            s->rope = fc_cpu_buffer((size_t)(p->d[FC_NORM_M] * p->d[FC_NORM_D]));
            fc_rope_table(p->d[FC_NORM_M], p->d[FC_NORM_D], s->rope);
        }
    }
    if (fused_op(p->pat) == FC_OP_GEMM) {
        fc_cpu_chain_add_control(&s->ch);
        setup_linear(s);
    }
    *state = s;
    return 0;
}

/* The unfused chain's GEMM: one threaded sgemm (on gelu(x) after a prologue's pass,
 * to [m, 2n] for a gated unit); or the control's: the fused form's blocked calls
 * without their epilogue or prologue. */
static void run_gemm(ob_state *s, fc_variant v, const float *in, float *dst)
{
    const int64_t *d = s->p.d;
    int M = (int)d[FC_LIN_M], K = (int)d[FC_LIN_K], N = (int)fc_linear_gemm_n(&s->p);
    const float *x = in ? in : s->w->t[FC_LIN_TX].data, *W = s->w->t[FC_LIN_TW].data;
    fc_epilogue none = {NULL, NULL, FC_ACT_NONE};
    if (v != FC_CONTROL) fc_cpu_gemm_nt(M, N, K, x, W, dst);
    else if (s->wglu)
        fc_cpu_glu_gemm(&s->lin, x, s->wglu, dst);
    else if (in)
        fc_cpu_prologue_gemm(&s->lin, x, W, NULL, false, dst, NULL);
    else
        fc_cpu_gemm_nt_fused_blocks(M, N, K, x, W, dst, &none, s->block_bytes);
}

/* One pass of a norm chain from cur into dst; returns where it wrote (add_rmsnorm's
 * add writes h where the output holds it, after y). */
static float *norm_pass(ob_state *s, fc_variant v, fc_op op, const float *cur, float *dst)
{
    const fc_workload *w = s->w;
    const int64_t *d = s->p.d;
    size_t M = (size_t)d[FC_NORM_M], N = (size_t)d[FC_NORM_N], D = (size_t)d[FC_NORM_D];
    const float *x = w->t[FC_NORM_TX].data, *g = w->t[FC_NORM_TGAMMA].data;
    switch (op) {
    case FC_OP_ADD:
        if (fc_pattern_has_op(s->p.pat, FC_OP_RMSNORM)) dst = s->ch.out[v] + M * N;
        fc_cpu_add(x, w->t[FC_NORM_TR].data, dst, M * N);
        break;
    case FC_OP_LAYERNORM:
        fc_cpu_layernorm_rows(cur, g, w->t[FC_NORM_TBETA].data, (float)FC_LN_EPS, dst, M, N, s->norm_io);
        break;
    case FC_OP_RMSNORM: fc_cpu_rmsnorm_rows(cur, g, (float)FC_RMS_EPS, dst, M, N, s->norm_io); break;
    case FC_OP_HEAD_RMSNORM:
        fc_cpu_rmsnorm_rows(x, g, (float)FC_RMS_EPS, dst, M * N / D, D, (fc_norm_io){.asks = s->norm_io.asks});
        break;
    case FC_OP_ROPE: fc_cpu_rope(cur, s->rope, dst, M, N / D, D, s->norm_io); break;
    default: break;
    }
    return dst;
}

/* The residual tensor of the problem's family, or NULL when the chain has none. */
static const float *resid_of(const fc_problem *p, const fc_workload *w)
{
    if (!fc_pattern_has_op(p->pat, FC_OP_RESID)) return NULL;
    return w->t[p->pat->family == FC_FAM_CONV ? FC_CONV_TR : FC_LIN_TR].data;
}

/* The unfused chain, or (FC_CONTROL) the same chain with the fused form's blocked
 * GEMM in place of the one threaded sgemm (a gated unit's output then in its blocks). */
static void run_unfused(ob_state *s, fc_variant v)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    const int64_t *d = p->d;
    const float *cur = NULL;
    /* the gated unit's [m, 2n] in blocks of nb: the control's as its blocked GEMM writes it */
    int glu_nb = v == FC_CONTROL ? s->lin.nb : (int)d[FC_LIN_N];
    for (int i = 0; i < p->pat->nops; i++) {
        float *dst = i == p->pat->nops - 1 ? s->ch.out[v] : fc_cpu_chain_dst(&s->ch, i);
        switch (p->pat->ops[i]) {
        case FC_OP_GEMM: run_gemm(s, v, cur, dst); break;
        case FC_OP_GELU_IN: fc_cpu_gelu(w->t[FC_LIN_TX].data, dst, w->t[FC_LIN_TX].n); break;
        case FC_OP_SILU: fc_cpu_glu_silu(cur, dst, (int)d[FC_LIN_M], (int)d[FC_LIN_N], glu_nb); break;
        case FC_OP_GLU_MUL:
            fc_cpu_glu_mul(cur, fc_cpu_chain_dst(&s->ch, 0), dst, (int)d[FC_LIN_M], (int)d[FC_LIN_N], glu_nb);
            break;
        case FC_OP_CONV: {
            fc_epilogue ep = {w->t[FC_CONV_TB].data, NULL, FC_ACT_NONE};
            fc_cpu_conv(&s->g, w->t[FC_CONV_TX].data, s->wpack[FC_UNFUSED], dst, &ep, s->ws, s->nthreads);
            break;
        }
        case FC_OP_QK: fc_cpu_att_qk(&s->ag, w->t[FC_ATT_TQ].data, w->t[FC_ATT_TK].data, 1.0f, dst); break;
        case FC_OP_BIAS:
            fc_cpu_bias(cur, w->t[FC_LIN_TB].data, dst, (size_t)d[FC_LIN_M], (size_t)d[FC_LIN_N], 1);
            break;
        case FC_OP_RESID: fc_cpu_add(cur, resid_of(p, w), dst, w->out_n); break;
        case FC_OP_RELU: fc_cpu_relu(cur, dst, w->inter_n); break;
        case FC_OP_GELU: fc_cpu_gelu(cur, dst, w->inter_n); break;
        case FC_OP_BN: {
            size_t K = (size_t)d[FC_CONV_K], pq = (size_t)(d[FC_CONV_P] * d[FC_CONV_Q]);
            bool nhwc = p->layout == FC_NHWC;
            fc_cpu_batchnorm(cur, w->t[FC_CONV_TGAMMA].data, w->t[FC_CONV_TBETA].data, w->t[FC_CONV_TMEAN].data,
                             w->t[FC_CONV_TVAR].data, (float)FC_BN_EPS, dst,
                             nhwc ? (size_t)d[FC_CONV_N] * pq : (size_t)d[FC_CONV_N], K, nhwc ? 1 : pq, s->bn_scratch);
            break;
        }
        case FC_OP_SCALE: fc_cpu_att_scale_mask(&s->ag, cur, dst, 1.0f / sqrtf((float)d[FC_ATT_D])); break;
        case FC_OP_SOFTMAX:
            fc_cpu_softmax_rows(cur, dst, (size_t)(d[FC_ATT_B] * d[FC_ATT_H] * d[FC_ATT_S]), (size_t)d[FC_ATT_SKV]);
            break;
        case FC_OP_PV: fc_cpu_att_pv(&s->ag, cur, w->t[FC_ATT_TV].data, dst); break;
        case FC_OP_ADD:
        case FC_OP_LAYERNORM:
        case FC_OP_RMSNORM:
        case FC_OP_HEAD_RMSNORM:
        case FC_OP_ROPE: dst = norm_pass(s, v, p->pat->ops[i], cur, dst); break;
        default: break;
        }
        cur = dst;
    }
}

static fc_act pattern_act(const fc_pattern *pat)
{
    if (fc_pattern_has_op(pat, FC_OP_RELU)) return FC_ACT_RELU;
    if (fc_pattern_has_op(pat, FC_OP_GELU)) return FC_ACT_GELU;
    return FC_ACT_NONE;
}

static void run_fused_norm(ob_state *s, float *out)
{
    const fc_workload *w = s->w;
    const int64_t *d = s->p.d;
    size_t M = (size_t)d[FC_NORM_M], N = (size_t)d[FC_NORM_N], D = (size_t)d[FC_NORM_D];
    const float *x = w->t[FC_NORM_TX].data, *r = w->t[FC_NORM_TR].data, *g = w->t[FC_NORM_TGAMMA].data;
    switch (fused_op(s->p.pat)) {
    case FC_OP_LAYERNORM:
        fc_cpu_add_layernorm(x, r, g, w->t[FC_NORM_TBETA].data, (float)FC_LN_EPS, out, M, N, s->norm_io);
        break;
    case FC_OP_RMSNORM: fc_cpu_add_rmsnorm(x, r, g, (float)FC_RMS_EPS, out, out + M * N, M, N, s->norm_io); break;
    case FC_OP_ROPE: fc_cpu_rmsnorm_rope(x, g, s->rope, (float)FC_RMS_EPS, out, M, N / D, D, s->norm_io); break;
    default: break;
    }
}

static void run_fused(ob_state *s)
{
    const fc_problem *p = &s->p;
    const fc_workload *w = s->w;
    const int64_t *d = p->d;
    float *out = s->ch.out[FC_FUSED];
    float alpha = 1.0f;
    if (p->pat->family == FC_FAM_ATTENTION && fc_pattern_has_op(p->pat, FC_OP_SCALE))
        alpha = 1.0f / sqrtf((float)d[FC_ATT_D]);
    switch (fused_op(p->pat)) {
    case FC_OP_GEMM: {
        const float *x = w->t[FC_LIN_TX].data, *W = w->t[FC_LIN_TW].data, *b = w->t[FC_LIN_TB].data;
        fc_epilogue ep = {fc_pattern_has_op(p->pat, FC_OP_BIAS) ? b : NULL,
                          fc_pattern_has_op(p->pat, FC_OP_RESID) ? w->t[FC_LIN_TR].data : NULL, pattern_act(p->pat)};
        if (s->wglu) fc_cpu_swiglu_fused(&s->lin, x, s->wglu, out, s->ws);
        else if (fc_pattern_has_op(p->pat, FC_OP_GELU_IN))
            fc_cpu_prologue_gemm(&s->lin, x, W, b, true, out, s->ws);
        else
            fc_cpu_gemm_nt_fused_blocks((int)d[FC_LIN_M], (int)d[FC_LIN_N], (int)d[FC_LIN_K], x, W, out, &ep,
                                        s->block_bytes);
        break;
    }
    case FC_OP_CONV: {
        fc_epilogue ep = {w->t[FC_CONV_TBF].data, resid_of(p, w), pattern_act(p->pat)};
        fc_cpu_conv(&s->g, w->t[FC_CONV_TX].data, s->wpack[FC_FUSED], out, &ep, s->ws, s->nthreads);
        break;
    }
    case FC_OP_QK: fc_cpu_att_qk(&s->ag, w->t[FC_ATT_TQ].data, w->t[FC_ATT_TK].data, alpha, out); break;
    case FC_OP_SOFTMAX: fc_cpu_att_qk_softmax(&s->ag, w->t[FC_ATT_TQ].data, w->t[FC_ATT_TK].data, out); break;
    case FC_OP_PV:
        fc_cpu_att_flash(&s->ag, w->t[FC_ATT_TQ].data, w->t[FC_ATT_TK].data, w->t[FC_ATT_TV].data, out, s->ws,
                         s->nthreads);
        break;
    case FC_OP_LAYERNORM:
    case FC_OP_RMSNORM:
    case FC_OP_ROPE: run_fused_norm(s, out); break;
    default: break;
    }
}

static int ob_run(void *state, fc_variant v, fc_err *e)
{
    (void)e;
    if (v == FC_FUSED) run_fused(state);
    else
        run_unfused(state, v);
    return 0;
}

static int ob_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    (void)e;
    ob_state *s = state;
    fc_cpu_chain_output(&s->ch, v, dst);
    return 0;
}

static int ob_poison(void *state, fc_variant v, fc_err *e)
{
    (void)e;
    ob_state *s = state;
    fc_cpu_chain_poison(&s->ch, v);
    return 0;
}

/* The blocks of a linear fused form (and of its control). */
static void describe_blocks(const ob_state *s, fc_impl *impl)
{
    const fc_lin_plan *l = &s->lin;
    if (s->wglu)
        fc_impl_addf(impl, ", W laid out at setup as %d gate rows then the same %d up rows per block, %dx%d C blocks",
                     l->nb, l->nb, l->mb, 2 * l->nb);
    else if (fc_pattern_has_op(s->p.pat, FC_OP_GELU_IN))
        fc_impl_addf(impl, ", %dx%d blocks of x rows, %dx%d C blocks", l->mb, l->K, l->mb, l->nb);
    else
        fc_impl_addf(impl, ", C blocks <= %zu KiB", s->block_bytes >> 10);
}

/* The fused GEMM's or im2col conv's epilogue: the bias (a conv's own, folded or not)
 * and the residual enter each block's sgemm as its C (beta = 1: cpu_ops.c's c_init),
 * the rest is applied to the block in cache. */
static void describe_c_epilogue(const fc_pattern *pat, bool conv, fc_impl *impl)
{
    const bool b = conv || fc_pattern_has_op(pat, FC_OP_BIAS), r = fc_pattern_has_op(pat, FC_OP_RESID);
    if (b || r)
        fc_impl_addf(impl, "%s %s as C (beta = 1)", conv ? "," : " with",
                     b && r ? "bias + residual"
                     : b    ? "the bias"
                            : "the residual");
    int n = 0;
    for (int i = 0; i < pat->nops; i++) {
        const fc_op o = pat->ops[i];
        if (ob_ops[o].part == FC_FUSE_EPILOGUE && o != FC_OP_BIAS && o != FC_OP_RESID && o != FC_OP_CONV)
            fc_impl_addf(impl, "%s%s", n++ ? ", " : " + in-cache epilogue [", ob_ops[o].fused);
    }
    if (n) fc_impl_addf(impl, "]");
}

/* The unfused chain with the fused form's blocked GEMM in place of its sgemm. */
static void describe_control(const ob_state *s, fc_impl *impl)
{
    const fc_pattern *pat = s->p.pat;
    int call = fc_op_table_call(ob_ops, pat);
    fc_impl_addf(impl, "control: ");
    for (int i = 0; i < pat->nops; i++) {
        if (i) fc_impl_addf(impl, " -> ");
        if (i != call) {
            fc_impl_add_op(impl, ob_ops, pat->ops[i], FC_UNFUSED, ob_detail, s);
            continue;
        }
        fc_impl_addf(impl, "blocked cblas_sgemm without %s",
                     fc_op_table_count(ob_ops, pat, FC_FUSE_PROLOGUE) ? "prologue or epilogue" : "epilogue");
        describe_blocks(s, impl);
    }
}

static void ob_describe(void *state, fc_variant v, fc_impl *impl)
{
    ob_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    impl->nkernels = v == FC_FUSED ? fc_op_table_fused_kernels(ob_ops, pat) : pat->nops;
    if (v == FC_UNFUSED) {
        fc_impl_add_chain(impl, ob_ops, pat, ob_detail, s);
    } else if (v == FC_CONTROL) {
        describe_control(s, impl);
    } else if (fused_op(pat) == FC_OP_PV) {
        char buf[512];
        fc_cpu_att_describe(&s->ag, s->nthreads, buf, sizeof buf);
        fc_impl_addf(impl, "%s", buf);
    } else if (fc_op_table_kernel(ob_ops, pat) >= 0) {
        fc_impl_add_op(impl, ob_ops, fused_op(pat), FC_FUSED, ob_detail, s);
    } else {
        fc_op call = fused_op(pat);
        fc_impl_add_op(impl, ob_ops, call, FC_FUSED, ob_detail, s);
        fc_impl_add_part(impl, ob_ops, pat, FC_FUSE_PROLOGUE, " + in-cache prologue [", ", ", "]");
        fc_impl_add_part(impl, ob_ops, pat, FC_FUSE_FOLD, "", "", "");
        if (call == FC_OP_GEMM) {
            describe_c_epilogue(pat, false, impl);
            describe_blocks(s, impl);
        } else if (call == FC_OP_CONV && fc_cpu_dconv_applies(&s->g))
            fc_impl_add_part(impl, ob_ops, pat, FC_FUSE_EPILOGUE, " + epilogue as each tile is stored [", ", ", "]");
        else if (call == FC_OP_CONV && !fc_cpu_conv_is_depthwise(&s->g))
            describe_c_epilogue(pat, true, impl);
        else
            fc_impl_add_part(impl, ob_ops, pat, FC_FUSE_EPILOGUE, " + in-cache epilogue [", ", ", "]");
    }
    fc_impl_addf(impl, " [OpenBLAS %s, %s, %d threads]", openblas_get_corename(), parallel_name(), s->nthreads);
    impl->streamed_bytes = fc_cpu_norm_streamed_bytes_st(&s->p, v, s->norm_io.st, false);
}

static void ob_teardown(void *state)
{
    ob_state *s = state;
    if (!s) return;
    fc_cpu_chain_free(&s->ch);
    for (int v = 0; v < FC_NVARIANTS; v++) free(s->wpack[v]);
    free(s->ws);
    free(s->bn_scratch);
    free(s->wglu);
    free(s->rope);
    free(s);
}

static bool ob_has_control(void *state) { return ((ob_state *)state)->ch.out[FC_CONTROL] != NULL; }

static void ob_inventory(cJSON *libs)
{
    cJSON *o = cJSON_AddObjectToObject(libs, "openblas");
    cJSON_AddStringToObject(o, "config", openblas_get_config());
    cJSON_AddStringToObject(o, "corename", openblas_get_corename());
    const char *detected = fc_openblas_core_detected();
    if (detected) {
        cJSON_AddStringToObject(o, "corename_detected", detected);
        char note[256];
        snprintf(note, sizeof note,
                 "OpenBLAS chose its %s kernels, a core without AVX2, for this CPU (a model its table predates); "
                 "fusecal set OPENBLAS_CORETYPE=%s, the core its flags support",
                 detected, openblas_get_corename());
        cJSON_AddStringToObject(o, "corename_note", note);
    }
    cJSON_AddStringToObject(o, "parallel", parallel_name());
    cJSON_AddNumberToObject(o, "threads", openblas_get_num_threads());
}

/* Only the norms stream (fusecal's kernels, in both variants). */
static double ob_streamed_bytes(const fc_problem *p, fc_variant v, double llc)
{
    return fc_cpu_norm_streamed_bytes(p, v, llc, false);
}

const fc_backend fc_backend_openblas = {
    .name = "cpu.openblas",
    .device = "cpu",
    .summary =
        "OpenBLAS sgemm + OpenMP passes; fused: in-cache GEMM epilogues, folded BN, flash attention, one-pass norms",
    .available = ob_available,
    .supports = ob_supports,
    .device_bytes = NULL,
    .setup = ob_setup,
    .run = ob_run,
    .output = ob_output,
    .poison = ob_poison,
    .describe = ob_describe,
    .has_control = ob_has_control,
    .teardown = ob_teardown,
    .inventory = ob_inventory,
    .streamed_bytes = ob_streamed_bytes,
};
