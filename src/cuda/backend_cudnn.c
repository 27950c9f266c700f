/* backend_cudnn.c — cuda.cudnn: the conv family on cuDNN 9's convolution API.
 *
 *   unfused  cudnnConvolutionForward → cudnnAddTensor (the conv's own bias, in place,
 *            counted as a kernel) → cudnnBatchNormalizationForwardInference (spatial,
 *            running statistics) → cudnnOpTensor (ADD, the residual) →
 *            cudnnActivationForward (ReLU); each writes its tensor to memory, as an
 *            eager framework runs it.
 *   fused    BN folded into the weights and bias by fusecal (workload tensors
 *            W_folded, b_folded, prepared once per deployment), then one
 *            cudnnConvolutionBiasActivationForward: y = act(conv(x, W') + alpha2·z + b')
 *            with act = ReLU, or IDENTITY for conv_bn (which cuDNN runs only with
 *            IMPLICIT_PRECOMP_GEMM, so that is the only candidate there); z is the
 *            residual r with alpha2 = 1 (conv_bn_add_relu), else zeros with alpha2 = 0.
 * Groups (and depthwise, g = c = k) are the convolution descriptor's group count,
 * with a filter of c/g input channels; both variants use it.
 * Activations in the problem's layout (NCHW or NHWC); weights are OIHW for NCHW and
 * reordered once at setup to KRSC (cuDNN's NHWC filter format) for NHWC. Compute in
 * fp32 for every dtype (CUDNN_DATA_FLOAT convolution; math type FMA for fp32, DEFAULT
 * (TF32 permitted) for tf32, TENSOR_OP for bf16/fp16). Both variants choose their
 * algorithm the same way: Find's candidates (cudnnFindConvolutionForwardAlgorithmEx,
 * in its order) that cuDNN accepts for the call, the first MAX_TRIALS timed at setup
 * as captured CUDA graphs (GPU time: an eager cuDNN call's host cost can exceed a
 * small convolution's) and the fastest kept. A workspace (at most 256 MiB, and a quarter of free memory) is allocated
 * at setup and serves the search and the runs.
 *   control  the unfused chain with its convolution forced to the fused call's
 *            algorithm and math type (IMPLICIT_PRECOMP_GEMM for conv_bn, whose
 *            IDENTITY activation cuDNN fuses with no other): the record splits the
 *            speedup into implementation (unfused → control: the unfused conv's
 *            algorithm against the fused call's) and fusion (control → fused).
 * When cuDNN refuses an auxiliary op of the unfused chain for a dtype/layout
 * (cudnnAddTensor, BN or activation returning NOT_SUPPORTED at setup), fusecal's
 * equivalent kernel runs instead and describe() names it and cuDNN's answer.
 */
#include "cuda_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WS_LIMIT ((size_t)256 << 20)
#define MAX_TRIALS 4  /* candidates timed at setup, per variant */
#define TRIAL_REPS 10 /* calls per timed graph */

typedef struct cd_state {
    fc_problem p;
    fc_cuda_ctx *c;
    fc_dtype dt;
    int N, C, H, W, K, R, S, stride, pad, P, Q;
    bool nhwc;
    void *x, *w[FC_NVARIANTS], *b[FC_NVARIANTS];  /* [UNFUSED] original, [FUSED] BN folded */
    float *bn[4];                                 /* gamma, beta, mean, var (fp32) */
    float *ones, *bias_f32, *bn_scale, *bn_shift; /* for fusecal's channel kernel, when it stands in */
    fc_cuda_chain ch;
    void *zero; /* z of the fused call (alpha2 = 0), kept at zeros */
    void *r;    /* the residual: z of the fused call (alpha2 = 1), an operand of the unfused add */
    void *ws;
    size_t ws_bytes;
    cudnnTensorDescriptor_t xd, yd, bd, bnd;
    cudnnFilterDescriptor_t wd;
    /* per variant: the convolution's descriptor (its math type), algorithm and
     * workspace; [FC_CONTROL] the unfused convolution with the fused call's choice */
    cudnnConvolutionDescriptor_t cd[FC_MAX_VARIANTS];
    cudnnActivationDescriptor_t relu, fact;
    cudnnOpTensorDescriptor_t add;
    cudnnConvolutionFwdAlgo_t algo[FC_MAX_VARIANTS];
    cudnnMathType_t math[FC_MAX_VARIANTS];
    size_t algo_ws[FC_MAX_VARIANTS];
    bool cudnn_bias, cudnn_bn, cudnn_relu, cudnn_add; /* false: fusecal's kernel stands in */
    char aux_why[4][128];
    char chosen[FC_MAX_VARIANTS][256];
    char layout[64]; /* "nhwc, KRSC filter" and the group count, for describe() */
} cd_state;

static bool cd_available(char *why, size_t n)
{
    if (!fc_cuda_usable(why, n)) return false;
    size_t v = cudnnGetVersion();
    if (v < 90000) {
        snprintf(why, n, "cuDNN %zu.%zu found at run time; fusecal needs cuDNN 9", v / 10000, (v / 100) % 100);
        return false;
    }
    return true;
}

/* How cuda.cudnn runs each op: its cuDNN call in the unfused chain, or fusecal's
 * kernel where cuDNN refuses it ("%s": the one that runs), and its part in the fused
 * cudnnConvolutionBiasActivationForward: folded into W and b, or its activation. */
static const fc_op_impl cd_ops[FC_NOPS] = {
    [FC_OP_CONV] = {"%s", FC_FUSE_CALL, "cudnnConvolutionBiasActivationForward"},
    [FC_OP_BN] = {"%s", FC_FUSE_FOLD, ", BN folded into W and b"},
    [FC_OP_RESID] = {"%s", FC_FUSE_FOLD, ", residual as z with alpha2=1"},
    [FC_OP_RELU] = {"%s", FC_FUSE_EPILOGUE, "RELU"},
};

static bool cd_supports(const fc_problem *p, char *why, size_t n)
{
    if (p->pat->family == FC_FAM_NORM) {
        snprintf(why, n,
                 "cuda.cudnn runs convolutions and their fused forms; its normalization graphs are not built here "
                 "(fusecal's norm kernels run pattern '%s' on cuda.custom)",
                 p->pat->name);
        return false;
    }
    if (!fc_op_table_fits(cd_ops, p->pat, "cuda.cudnn", why, n)) return false;
    if (p->layout != FC_NCHW && p->layout != FC_NHWC) {
        snprintf(why, n, "cuda.cudnn needs layout nchw or nhwc");
        return false;
    }
    return true;
}

static int cd_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    const int64_t *d = p->d;
    double E = (double)fc_dtype_size(p->dtype), K = (double)d[FC_CONV_K];
    double X = (double)d[FC_CONV_N] * (double)d[FC_CONV_C] * (double)d[FC_CONV_H] * (double)d[FC_CONV_W];
    double Wn = K * (double)(d[FC_CONV_C] / d[FC_CONV_G]) * (double)d[FC_CONV_R] * (double)d[FC_CONV_S];
    double Y = (double)d[FC_CONV_N] * K * (double)d[FC_CONV_P] * (double)d[FC_CONV_Q];
    /* x, W and b twice (original, folded), z, r, the control's output, the chain */
    double R = fc_pattern_has_op(p->pat, FC_OP_RESID) ? Y : 0;
    double b = (X + 2 * Wn + 2 * K + 2 * Y + R) * E + fc_cuda_chain_bytes(p) + 8 * K * 4 + (double)WS_LIMIT;
    if (b > 9e18) return fc_errf(e, "problem '%s' is too large for device memory", p->pat->name);
    *bytes = (size_t)b;
    return 0;
}

static const char *algo_name(cudnnConvolutionFwdAlgo_t a)
{
    switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
    }
}

static const char *math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "DEFAULT_MATH";
    case CUDNN_TENSOR_OP_MATH: return "TENSOR_OP_MATH";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "TENSOR_OP_MATH_ALLOW_CONVERSION";
    case CUDNN_FMA_MATH: return "FMA_MATH";
    default: return "?";
    }
}

static cudnnDataType_t dnn_type(fc_dtype dt)
{
    return dt == FC_BF16 ? CUDNN_DATA_BFLOAT16 : dt == FC_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

/* The math type that keeps the dtype's meaning: no TF32 for fp32, no down-conversion
 * to fp16 for fp32/tf32 data. */
static cudnnMathType_t want_math(fc_dtype dt)
{
    return dt == FC_FP32 ? CUDNN_FMA_MATH : dt == FC_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
}

static bool math_ok(fc_dtype dt, cudnnMathType_t m)
{
    if (dt == FC_FP32) return m == CUDNN_FMA_MATH;
    if (dt == FC_TF32) return m != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    return true;
}

/* OIHW -> KRSC (cuDNN's NHWC filter format) */
static float *to_krsc(const float *w, int K, int C, int R, int S)
{
    float *o = fc_xmalloc((size_t)K * C * R * S * sizeof(float) + 4);
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++)
            for (int r = 0; r < R; r++)
                for (int s = 0; s < S; s++)
                    o[(((size_t)k * R + r) * S + s) * C + c] = w[(((size_t)k * C + c) * R + r) * S + s];
    return o;
}

static int upload_f32(cd_state *s, const float *host, size_t n, float **dev, const char *what, fc_err *e)
{
    return fc_cuda_upload(s->c, host, n, FC_FP32, (void **)dev, what, e);
}

/* ------------------------------------------------------------------ the ops */

/* Where the unfused chain's conv writes (also the scratch of setup's trials). */
static void *conv_dst(const cd_state *s) { return fc_cuda_chain_dst(&s->ch, 0); }

/* The convolution of variant v's chain (FC_UNFUSED or FC_CONTROL) on the original
 * weights, with that variant's descriptor and algorithm. */
static cudnnStatus_t conv_call(cd_state *s, fc_variant v, void *dst)
{
    const float one = 1.0f, zero = 0.0f;
    return cudnnConvolutionForward(s->c->dnn, &one, s->xd, s->x, s->wd, s->w[FC_UNFUSED], s->cd[v], s->algo[v], s->ws,
                                   s->ws_bytes, &zero, s->yd, dst);
}

static int run_conv(cd_state *s, fc_variant v, void *dst, fc_err *e)
{
    FC_CUDNN(conv_call(s, v, dst));
    return 0;
}

static cudnnStatus_t fused_call(cd_state *s, cudnnConvolutionFwdAlgo_t algo)
{
    const float one = 1.0f, zero = 0.0f;
    /* z: the residual with alpha2 = 1, else a buffer of zeros rather than y, whose NaN
     * poison 0·z would not clear */
    return cudnnConvolutionBiasActivationForward(s->c->dnn, &one, s->xd, s->x, s->wd, s->w[FC_FUSED], s->cd[FC_FUSED],
                                                 algo, s->ws, s->ws_bytes, s->r ? &one : &zero, s->yd,
                                                 s->r ? s->r : s->zero, s->bd, s->b[FC_FUSED], s->fact, s->yd,
                                                 s->ch.out[FC_FUSED]);
}

static int run_fused(cd_state *s, fc_err *e)
{
    FC_CUDNN(fused_call(s, s->algo[FC_FUSED]));
    return 0;
}

static int run_bias(cd_state *s, void *y, fc_err *e)
{
    const float one = 1.0f;
    if (s->cudnn_bias) {
        FC_CUDNN(cudnnAddTensor(s->c->dnn, &one, s->bd, s->b[FC_UNFUSED], &one, s->yd, y));
    } else {
        FC_CU(fck_channel_affine(fc_cuda_kdt(s->dt), y, s->ones, s->bias_f32, y, (size_t)s->N, (size_t)s->K,
                                 (size_t)s->P * (size_t)s->Q, s->nhwc, 0, s->c->stream));
    }
    return 0;
}

static int run_bn(cd_state *s, const void *x, void *y, fc_err *e)
{
    const float one = 1.0f, zero = 0.0f;
    if (s->cudnn_bn) {
        FC_CUDNN(cudnnBatchNormalizationForwardInference(s->c->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, s->yd, x,
                                                         s->yd, y, s->bnd, s->bn[0], s->bn[1], s->bn[2], s->bn[3],
                                                         FC_BN_EPS));
    } else {
        FC_CU(fck_channel_affine(fc_cuda_kdt(s->dt), x, s->bn_scale, s->bn_shift, y, (size_t)s->N, (size_t)s->K,
                                 (size_t)s->P * (size_t)s->Q, s->nhwc, 0, s->c->stream));
    }
    return 0;
}

static int run_add(cd_state *s, const void *x, void *y, fc_err *e)
{
    const float one = 1.0f, zero = 0.0f;
    if (s->cudnn_add) {
        FC_CUDNN(cudnnOpTensor(s->c->dnn, s->add, &one, s->yd, x, &one, s->yd, s->r, &zero, s->yd, y));
    } else {
        FC_CU(fck_add(fc_cuda_kdt(s->dt), x, s->r, y, s->ch.out_n, s->c->stream));
    }
    return 0;
}

static int run_relu(cd_state *s, const void *x, void *y, fc_err *e)
{
    const float one = 1.0f, zero = 0.0f;
    if (s->cudnn_relu) {
        FC_CUDNN(cudnnActivationForward(s->c->dnn, s->relu, &one, s->yd, x, &zero, s->yd, y));
    } else {
        FC_CU(fck_relu(fc_cuda_kdt(s->dt), x, y, s->ch.out_n, s->c->stream));
    }
    return 0;
}

/* ------------------------------------------------------------------ setup */

typedef struct time_arg {
    cd_state *s;
    cudnnConvolutionFwdAlgo_t algo;
    int which; /* 0 conv, 1 fused */
} time_arg;

static int time_one(void *arg, fc_err *e)
{
    time_arg *a = arg;
    if (a->which == 0) return run_conv(a->s, FC_UNFUSED, conv_dst(a->s), e);
    FC_CUDNN(fused_call(a->s, a->algo));
    return 0;
}

/* Whether an auxiliary op runs under cuDNN here: one trial call at setup. A refusal
 * (NOT_SUPPORTED, BAD_PARAM) makes fusecal's kernel stand in, named in describe(). */
static int try_aux(cd_state *s, int which, bool *ok, fc_err *e)
{
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st;
    void *y = conv_dst(s), *out = s->ch.out[FC_UNFUSED];
    if (which == 0) st = cudnnAddTensor(s->c->dnn, &one, s->bd, s->b[FC_UNFUSED], &one, s->yd, y);
    else if (which == 1)
        st = cudnnBatchNormalizationForwardInference(s->c->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, s->yd, y, s->yd,
                                                     out, s->bnd, s->bn[0], s->bn[1], s->bn[2], s->bn[3], FC_BN_EPS);
    else if (which == 2)
        st = cudnnActivationForward(s->c->dnn, s->relu, &one, s->yd, y, &zero, s->yd, out);
    else
        st = cudnnOpTensor(s->c->dnn, s->add, &one, s->yd, y, &one, s->yd, s->r, &zero, s->yd, out);
    FC_CU(cudaStreamSynchronize(s->c->stream));
    *ok = st == CUDNN_STATUS_SUCCESS;
    if (!*ok) {
        static const char *const names[] = {"cudnnAddTensor", "cudnnBatchNormalizationForwardInference",
                                            "cudnnActivationForward", "cudnnOpTensor(ADD)"};
        if (!fc_cudnn_refuses((int)st))
            return fc_errf(e, "cuDNN call %s failed at setup: %s", names[which], cudnnGetErrorString(st));
        snprintf(s->aux_why[which], sizeof s->aux_why[which], "%s: %s", names[which], cudnnGetErrorString(st));
    }
    return 0;
}

/* The fastest candidate so far of an algorithm search (idx -1: none timed). */
typedef struct trial_best {
    double ms;
    int idx, timed;
    bool all_graph; /* every candidate timed as a captured graph */
} trial_best;

/* Times candidate i (algo; which: 0 the unfused conv, 1 the fused call) as captured
 * CUDA graphs and keeps it in b when it is the fastest so far. */
static int time_candidate(cd_state *s, cudnnConvolutionFwdAlgo_t algo, int which, int i, trial_best *b, fc_err *e)
{
    time_arg ta = {s, algo, which};
    double ms = 0;
    bool graph = false;
    if (fc_cuda_time_graph(s->c, time_one, &ta, TRIAL_REPS, 3, &ms, &graph, e) != 0) return -1;
    b->all_graph = b->all_graph && graph;
    b->timed++;
    if (ms < b->ms) {
        b->ms = ms;
        b->idx = i;
    }
    return 0;
}

/* Algorithm of the unfused convolution: the first MAX_TRIALS of Find's candidates
 * with an acceptable math type, each timed by fusecal as a captured CUDA graph (as the
 * fused call's are: one procedure on both sides), the fastest kept; Find's own
 * ranking times one call of each, the first with its kernel's lazy loading, and is
 * only the order of trial. FC_DECLINED when Find offers none (cuDNN declines). */
static int pick_conv_algo(cd_state *s, fc_err *e)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    FC_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(s->c->dnn, s->xd, s->x, s->wd, s->w[FC_UNFUSED], s->cd[FC_UNFUSED],
                                                    s->yd, conv_dst(s), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf,
                                                    s->ws, s->ws_bytes));
    trial_best tb = {INFINITY, -1, 0, true};
    for (int i = 0; i < found && tb.timed < MAX_TRIALS; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > s->ws_bytes || !math_ok(s->dt, perf[i].mathType))
            continue;
        s->algo[FC_UNFUSED] = perf[i].algo;
        s->algo_ws[FC_UNFUSED] = perf[i].memory;
        FC_CUDNN(cudnnSetConvolutionMathType(s->cd[FC_UNFUSED], perf[i].mathType));
        if (time_candidate(s, perf[i].algo, 0, i, &tb, e) != 0) return -1;
    }
    const int best = tb.idx;
    if (best < 0) {
        fc_errf(e, "cuDNN found no usable %s convolution algorithm for this problem (%d tried)", fc_dtype_name(s->dt),
                found);
        return FC_DECLINED;
    }
    s->algo[FC_UNFUSED] = perf[best].algo;
    s->math[FC_UNFUSED] = perf[best].mathType;
    s->algo_ws[FC_UNFUSED] = perf[best].memory;
    FC_CUDNN(cudnnSetConvolutionMathType(s->cd[FC_UNFUSED], perf[best].mathType));
    snprintf(s->chosen[FC_UNFUSED], sizeof s->chosen[FC_UNFUSED],
             "algo %s, %s, workspace %.2f MiB; fastest of %d of cudnnFindConvolutionForwardAlgorithmEx's %d candidates "
             "timed at setup%s (%.4f ms)",
             algo_name(perf[best].algo), math_name(perf[best].mathType), (double)perf[best].memory / (1 << 20),
             tb.timed, found, tb.all_graph ? " as CUDA graphs" : "", tb.ms);
    return 0;
}

/* Algorithm of the fused call: Find's candidates for the folded convolution, each
 * tried with cudnnConvolutionBiasActivationForward and the first few that cuDNN
 * accepts timed; IMPLICIT_PRECOMP_GEMM alone for the identity activation. */
static int pick_fused_algo(cd_state *s, bool identity, fc_err *e)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT + 1];
    int found = 0;
    FC_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(s->c->dnn, s->xd, s->x, s->wd, s->w[FC_FUSED], s->cd[FC_FUSED],
                                                    s->yd, s->ch.out[FC_FUSED], CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                    &found, perf, s->ws, s->ws_bytes));
    /* IMPLICIT_PRECOMP_GEMM always among the candidates (last, unless Find listed it) */
    bool listed = false;
    for (int i = 0; i < found; i++)
        if (perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM && perf[i].status == CUDNN_STATUS_SUCCESS)
            listed = true;
    if (!listed) {
        memset(&perf[found], 0, sizeof perf[found]);
        perf[found].algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        perf[found].status = CUDNN_STATUS_SUCCESS;
        perf[found].mathType = want_math(s->dt);
        FC_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(s->c->dnn, s->xd, s->wd, s->cd[FC_FUSED], s->yd,
                                                         perf[found].algo, &perf[found].memory));
        found++;
    }
    trial_best tb = {INFINITY, -1, 0, true};
    char refused[512] = "";
    size_t roff = 0;
    for (int i = 0; i < found && tb.timed < MAX_TRIALS; i++) {
        cudnnConvolutionFwdAlgoPerf_t *pf = &perf[i];
        if (pf->status != CUDNN_STATUS_SUCCESS || pf->memory > s->ws_bytes || !math_ok(s->dt, pf->mathType)) continue;
        if (identity && pf->algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) continue;
        FC_CUDNN(cudnnSetConvolutionMathType(s->cd[FC_FUSED], pf->mathType));
        cudnnStatus_t st = fused_call(s, pf->algo);
        FC_CU(cudaStreamSynchronize(s->c->stream));
        if (st != CUDNN_STATUS_SUCCESS) {
            if (!fc_cudnn_refuses((int)st))
                return fc_errf(e, "cudnnConvolutionBiasActivationForward (%s, %s) failed at setup: %s",
                               algo_name(pf->algo), math_name(pf->mathType), cudnnGetErrorString(st));
            if (roff < sizeof refused)
                roff += (size_t)snprintf(refused + roff, sizeof refused - roff, "%s%s/%s: %s", roff ? "; " : "",
                                         algo_name(pf->algo), math_name(pf->mathType), cudnnGetErrorString(st));
            continue;
        }
        if (time_candidate(s, pf->algo, 1, i, &tb, e) != 0) return -1;
    }
    const int best = tb.idx;
    if (best < 0) {
        fc_errf(e, "cudnnConvolutionBiasActivationForward (%s, %s, activation %s) accepted none of %d algorithms%s%s",
                fc_dtype_name(s->dt), s->nhwc ? "nhwc" : "nchw", identity ? "IDENTITY" : "RELU", found,
                refused[0] ? ": " : "", refused);
        return FC_DECLINED;
    }
    s->algo[FC_FUSED] = perf[best].algo;
    s->math[FC_FUSED] = perf[best].mathType;
    s->algo_ws[FC_FUSED] = perf[best].memory;
    FC_CUDNN(cudnnSetConvolutionMathType(s->cd[FC_FUSED], perf[best].mathType));
    snprintf(s->chosen[FC_FUSED], sizeof s->chosen[FC_FUSED],
             "algo %s, %s, workspace %.2f MiB; fastest of %d candidates timed at setup%s (%.4f ms)%s",
             algo_name(perf[best].algo), math_name(perf[best].mathType), (double)perf[best].memory / (1 << 20),
             tb.timed, tb.all_graph ? " as CUDA graphs" : "", tb.ms,
             identity ? "; IDENTITY runs with IMPLICIT_PRECOMP_GEMM only" : "");
    return 0;
}

/* The control: the unfused chain with its convolution forced to the fused call's
 * algorithm and math type (on the original weights), with an output of its own; one
 * trial call at setup. cuDNN refusing it is an error, not a quiet record without it. */
static int setup_control(cd_state *s, fc_err *e)
{
    cudnnConvolutionDescriptor_t *cd = &s->cd[FC_CONTROL];
    FC_CUDNN(cudnnCreateConvolutionDescriptor(cd));
    FC_CUDNN(cudnnSetConvolution2dDescriptor(*cd, s->pad, s->pad, s->stride, s->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
    s->algo[FC_CONTROL] = s->algo[FC_FUSED];
    s->math[FC_CONTROL] = s->math[FC_FUSED];
    FC_CUDNN(cudnnSetConvolutionMathType(*cd, s->math[FC_CONTROL]));
    FC_CUDNN(cudnnSetConvolutionGroupCount(*cd, (int)s->p.d[FC_CONV_G]));
    FC_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(s->c->dnn, s->xd, s->wd, *cd, s->yd, s->algo[FC_CONTROL],
                                                     &s->algo_ws[FC_CONTROL]));
    const char *an = algo_name(s->algo[FC_CONTROL]), *mn = math_name(s->math[FC_CONTROL]);
    if (s->algo_ws[FC_CONTROL] > s->ws_bytes)
        return fc_errf(e, "the control's cudnnConvolutionForward with %s/%s needs %.1f MiB of workspace, %.1f MiB held",
                       an, mn, (double)s->algo_ws[FC_CONTROL] / (1 << 20), (double)s->ws_bytes / (1 << 20));
    cudnnStatus_t st = conv_call(s, FC_CONTROL, conv_dst(s));
    FC_CU(cudaStreamSynchronize(s->c->stream));
    if (st != CUDNN_STATUS_SUCCESS)
        return fc_errf(e, "cudnnConvolutionForward refused the fused call's algorithm %s/%s for the control: %s", an,
                       mn, cudnnGetErrorString(st));
    snprintf(s->chosen[FC_CONTROL], sizeof s->chosen[FC_CONTROL],
             "algo %s, %s, workspace %.2f MiB; the fused call's algorithm and math type, forced", an, mn,
             (double)s->algo_ws[FC_CONTROL] / (1 << 20));
    return fc_cuda_chain_add_control(&s->ch, e);
}

static void cd_teardown(void *state);

static int cd_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    cd_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->c = devctx;
    s->dt = p->dtype;
    const int64_t *d = p->d;
    s->N = (int)d[FC_CONV_N];
    s->C = (int)d[FC_CONV_C];
    s->H = (int)d[FC_CONV_H];
    s->W = (int)d[FC_CONV_W];
    s->K = (int)d[FC_CONV_K];
    s->R = (int)d[FC_CONV_R];
    s->S = (int)d[FC_CONV_S];
    s->stride = (int)d[FC_CONV_STRIDE];
    s->pad = (int)d[FC_CONV_PAD];
    s->P = (int)d[FC_CONV_P];
    s->Q = (int)d[FC_CONV_Q];
    s->nhwc = p->layout == FC_NHWC;
    int G = (int)d[FC_CONV_G], Cg = s->C / G;
    snprintf(s->layout, sizeof s->layout, "%s", s->nhwc ? "nhwc, KRSC filter" : "nchw, KCRS filter");
    if (G > 1) snprintf(s->layout + strlen(s->layout), sizeof s->layout - strlen(s->layout), ", %d groups", G);
    if (!s->c->dnn) return fc_errf(e, "cuDNN is not usable: %s", s->c->dnn_err);
    size_t E = fc_dtype_size(s->dt);
    cudnnDataType_t t = dnn_type(s->dt);
    cudnnTensorFormat_t fmt = s->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;

    /* buffers */
    if (fc_cuda_upload(s->c, w->t[FC_CONV_TX].data, w->t[FC_CONV_TX].n, s->dt, &s->x, "x", e)) return -1;
    static const int wt[FC_NVARIANTS] = {FC_CONV_TW, FC_CONV_TWF}, bt[FC_NVARIANTS] = {FC_CONV_TB, FC_CONV_TBF};
    for (int v = 0; v < FC_NVARIANTS; v++) {
        const fc_tensor *tw = &w->t[wt[v]];
        float *krsc = s->nhwc ? to_krsc(tw->data, s->K, Cg, s->R, s->S) : NULL;
        int rc = fc_cuda_upload(s->c, krsc ? krsc : tw->data, tw->n, s->dt, &s->w[v], "W", e);
        free(krsc);
        if (rc || fc_cuda_upload(s->c, w->t[bt[v]].data, w->t[bt[v]].n, s->dt, &s->b[v], "b", e)) return -1;
    }
    static const int bnt[4] = {FC_CONV_TGAMMA, FC_CONV_TBETA, FC_CONV_TMEAN, FC_CONV_TVAR};
    for (int i = 0; i < 4; i++)
        if (upload_f32(s, w->t[bnt[i]].data, (size_t)s->K, &s->bn[i], "BN parameters", e)) return -1;
    if (fc_pattern_has_op(p->pat, FC_OP_RESID) &&
        fc_cuda_upload(s->c, w->t[FC_CONV_TR].data, w->t[FC_CONV_TR].n, s->dt, &s->r, "r", e))
        return -1;
    if (fc_cuda_chain_alloc(&s->ch, s->c, p, w, e) != 0) return -1;
    if (fc_cuda_alloc(&s->zero, w->out_n * E, "the fused call's z", e)) return -1;
    FC_CU(cudaMemsetAsync(s->zero, 0, w->out_n * E, s->c->stream));
    size_t free_b = 0, total = 0;
    FC_CU(cudaMemGetInfo(&free_b, &total));
    s->ws_bytes = WS_LIMIT < free_b / 4 ? WS_LIMIT : free_b / 4;
    if (fc_cuda_alloc(&s->ws, s->ws_bytes, "the cuDNN workspace", e)) return -1;

    /* descriptors */
    FC_CUDNN(cudnnCreateTensorDescriptor(&s->xd));
    FC_CUDNN(cudnnSetTensor4dDescriptor(s->xd, fmt, t, s->N, s->C, s->H, s->W));
    FC_CUDNN(cudnnCreateTensorDescriptor(&s->yd));
    FC_CUDNN(cudnnSetTensor4dDescriptor(s->yd, fmt, t, s->N, s->K, s->P, s->Q));
    FC_CUDNN(cudnnCreateTensorDescriptor(&s->bd));
    FC_CUDNN(cudnnSetTensor4dDescriptor(s->bd, CUDNN_TENSOR_NCHW, t, 1, s->K, 1, 1));
    FC_CUDNN(cudnnCreateTensorDescriptor(&s->bnd));
    FC_CUDNN(cudnnDeriveBNTensorDescriptor(s->bnd, s->yd, CUDNN_BATCHNORM_SPATIAL));
    FC_CUDNN(cudnnCreateFilterDescriptor(&s->wd));
    FC_CUDNN(cudnnSetFilter4dDescriptor(s->wd, t, fmt, s->K, Cg, s->R, s->S));
    for (int v = 0; v < FC_NVARIANTS; v++) {
        FC_CUDNN(cudnnCreateConvolutionDescriptor(&s->cd[v]));
        FC_CUDNN(cudnnSetConvolution2dDescriptor(s->cd[v], s->pad, s->pad, s->stride, s->stride, 1, 1,
                                                 CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        FC_CUDNN(cudnnSetConvolutionMathType(s->cd[v], want_math(s->dt)));
        FC_CUDNN(cudnnSetConvolutionGroupCount(s->cd[v], G));
    }
    int on, oc, oh, ow;
    FC_CUDNN(cudnnGetConvolution2dForwardOutputDim(s->cd[0], s->xd, s->wd, &on, &oc, &oh, &ow));
    if (on != s->N || oc != s->K || oh != s->P || ow != s->Q)
        return fc_errf(e, "cuDNN's output shape %dx%dx%dx%d differs from fusecal's %dx%dx%dx%d", on, oc, oh, ow, s->N,
                       s->K, s->P, s->Q);
    FC_CUDNN(cudnnCreateActivationDescriptor(&s->relu));
    FC_CUDNN(cudnnSetActivationDescriptor(s->relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
    bool identity = !fc_pattern_has_op(p->pat, FC_OP_RELU);
    FC_CUDNN(cudnnCreateActivationDescriptor(&s->fact));
    FC_CUDNN(cudnnSetActivationDescriptor(s->fact, identity ? CUDNN_ACTIVATION_IDENTITY : CUDNN_ACTIVATION_RELU,
                                          CUDNN_NOT_PROPAGATE_NAN, 0.0));

    /* algorithms */
    int rc = pick_conv_algo(s, e);
    if (rc != 0) return rc;
    rc = pick_fused_algo(s, identity, e);
    if (rc != 0) return rc;
    if (setup_control(s, e) != 0) return -1;

    /* the unfused chain's auxiliary ops under cuDNN, or fusecal's kernel where cuDNN refuses */
    if (run_conv(s, FC_UNFUSED, conv_dst(s), e) != 0) return -1;
    if (try_aux(s, 0, &s->cudnn_bias, e) != 0) return -1;
    if (!s->cudnn_bias) {
        float *ones = fc_xmalloc((size_t)s->K * sizeof(float));
        for (int k = 0; k < s->K; k++) ones[k] = 1.0f;
        int rc = upload_f32(s, ones, (size_t)s->K, &s->ones, "ones", e) ||
                 upload_f32(s, w->t[FC_CONV_TB].data, (size_t)s->K, &s->bias_f32, "bias", e);
        free(ones);
        if (rc) return -1;
    }
    if (fc_pattern_has_op(p->pat, FC_OP_BN)) {
        if (try_aux(s, 1, &s->cudnn_bn, e) != 0) return -1;
        if (!s->cudnn_bn) {
            float *sc = fc_xmalloc((size_t)s->K * sizeof(float)), *sh = fc_xmalloc((size_t)s->K * sizeof(float));
            for (int k = 0; k < s->K; k++) {
                double inv = (double)w->t[FC_CONV_TGAMMA].data[k] /
                             sqrt((double)w->t[FC_CONV_TVAR].data[k] + FC_BN_EPS);
                sc[k] = (float)inv;
                sh[k] = (float)((double)w->t[FC_CONV_TBETA].data[k] - (double)w->t[FC_CONV_TMEAN].data[k] * inv);
            }
            int rc = upload_f32(s, sc, (size_t)s->K, &s->bn_scale, "BN scale", e) ||
                     upload_f32(s, sh, (size_t)s->K, &s->bn_shift, "BN shift", e);
            free(sc);
            free(sh);
            if (rc) return -1;
        }
    }
    if (fc_pattern_has_op(p->pat, FC_OP_RELU) && try_aux(s, 2, &s->cudnn_relu, e) != 0) return -1;
    if (s->r) {
        FC_CUDNN(cudnnCreateOpTensorDescriptor(&s->add));
        FC_CUDNN(cudnnSetOpTensorDescriptor(s->add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN));
        if (try_aux(s, 3, &s->cudnn_add, e) != 0) return -1;
    }
    FC_CU(cudaStreamSynchronize(s->c->stream));
    return 0;
}

/* ------------------------------------------------------------------ run */

/* The fused call, or the unfused chain (FC_CONTROL: with the control's convolution). */
static int cd_run(void *state, fc_variant v, fc_err *e)
{
    cd_state *s = state;
    if (v == FC_FUSED) return run_fused(s, e);
    const void *cur = NULL;
    for (int i = 0; i < s->p.pat->nops; i++) {
        void *dst = fc_cuda_chain_dst_v(&s->ch, v, i);
        switch (s->p.pat->ops[i]) {
        case FC_OP_CONV:
            if (run_conv(s, v, dst, e) != 0 || run_bias(s, dst, e) != 0) return -1;
            break;
        case FC_OP_BN:
            if (run_bn(s, cur, dst, e) != 0) return -1;
            break;
        case FC_OP_RESID:
            if (run_add(s, cur, dst, e) != 0) return -1;
            break;
        case FC_OP_RELU:
            if (run_relu(s, cur, dst, e) != 0) return -1;
            break;
        default: return fc_errf(e, "cuda.cudnn: op '%s' is not in the conv family", fc_op_name(s->p.pat->ops[i]));
        }
        cur = dst;
    }
    return 0;
}

static int cd_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    cd_state *s = state;
    return fc_cuda_chain_output(&s->ch, v, dst, e);
}

static int cd_poison(void *state, fc_variant v, fc_err *e)
{
    cd_state *s = state;
    return fc_cuda_chain_poison(&s->ch, v, e);
}

static const char *layout_name(const cd_state *s) { return s->layout; }
static const char *io_name(const cd_state *s) { return s->dt == FC_TF32 ? "fp32 (tf32 math)" : fc_dtype_name(s->dt); }

/* The convolution of variant v's chain (FC_UNFUSED, FC_CONTROL) with its bias add. */
static const char *conv_text(const cd_state *s, fc_variant v, char *buf, size_t n)
{
    snprintf(buf, n, "cudnnConvolutionForward(%s, %s) [%s] -> %s", layout_name(s), io_name(s), s->chosen[v],
             s->cudnn_bias ? "cudnnAddTensor(bias)" : "bias kernel(fusecal)");
    return buf;
}

/* Which call or kernel ran an op of the unfused chain (the conv with its bias add). */
static const char *cd_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    (void)v;
    const cd_state *s = ctx;
    switch (op) {
    case FC_OP_CONV: return conv_text(s, FC_UNFUSED, buf, n);
    case FC_OP_BN: return s->cudnn_bn ? "cudnnBatchNormalizationForwardInference(spatial)" : "BN kernel(fusecal)";
    case FC_OP_RESID: return s->cudnn_add ? "cudnnOpTensor(ADD, residual)" : "residual add kernel(fusecal)";
    case FC_OP_RELU: return s->cudnn_relu ? "cudnnActivationForward(relu)" : "relu kernel(fusecal)";
    default: return "?";
    }
}

static void cd_describe(void *state, fc_variant v, fc_impl *impl)
{
    cd_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    if (v == FC_FUSED) {
        fc_impl_addf(impl, "%s(%s, %s, activation ", cd_ops[pat->ops[0]].fused, layout_name(s), io_name(s));
        if (!fc_impl_add_part(impl, cd_ops, pat, FC_FUSE_EPILOGUE, "", "_", "")) fc_impl_addf(impl, "IDENTITY");
        fc_impl_add_part(impl, cd_ops, pat, FC_FUSE_FOLD, "", "", "");
        fc_impl_addf(impl, ") [%s]", s->chosen[FC_FUSED]);
        impl->nkernels = 1;
    } else {
        if (v == FC_UNFUSED) fc_impl_add_chain(impl, cd_ops, pat, cd_detail, s);
        else {
            char buf[512];
            fc_impl_addf(impl, "control: %s", conv_text(s, FC_CONTROL, buf, sizeof buf));
            for (int i = 1; i < pat->nops; i++) {
                fc_impl_addf(impl, " -> ");
                fc_impl_add_op(impl, cd_ops, pat->ops[i], FC_UNFUSED, cd_detail, s);
            }
        }
        for (int i = 0; i < 4; i++)
            if (s->aux_why[i][0]) fc_impl_addf(impl, " (cuDNN refused %s)", s->aux_why[i]);
        impl->nkernels = pat->nops + 1; /* the conv's bias is a call of its own */
    }
    size_t dv = cudnnGetVersion();
    fc_impl_addf(impl, " [cuDNN %zu.%zu.%zu]", dv / 10000, (dv / 100) % 100, dv % 100);
}

static void cd_teardown(void *state)
{
    cd_state *s = state;
    if (!s) return;
    cudaStreamSynchronize(s->c->stream);
    if (s->xd) cudnnDestroyTensorDescriptor(s->xd);
    if (s->yd) cudnnDestroyTensorDescriptor(s->yd);
    if (s->bd) cudnnDestroyTensorDescriptor(s->bd);
    if (s->bnd) cudnnDestroyTensorDescriptor(s->bnd);
    if (s->wd) cudnnDestroyFilterDescriptor(s->wd);
    for (int v = 0; v < FC_MAX_VARIANTS; v++)
        if (s->cd[v]) cudnnDestroyConvolutionDescriptor(s->cd[v]);
    for (int v = 0; v < FC_NVARIANTS; v++) {
        fc_cuda_free(s->w[v]);
        fc_cuda_free(s->b[v]);
    }
    if (s->relu) cudnnDestroyActivationDescriptor(s->relu);
    if (s->fact) cudnnDestroyActivationDescriptor(s->fact);
    if (s->add) cudnnDestroyOpTensorDescriptor(s->add);
    fc_cuda_free(s->r);
    for (int i = 0; i < 4; i++) fc_cuda_free(s->bn[i]);
    fc_cuda_free(s->ones);
    fc_cuda_free(s->bias_f32);
    fc_cuda_free(s->bn_scale);
    fc_cuda_free(s->bn_shift);
    fc_cuda_chain_free(&s->ch);
    fc_cuda_free(s->x);
    fc_cuda_free(s->ws);
    fc_cuda_free(s->zero);
    free(s);
}

static bool cd_has_control(void *state) { return ((cd_state *)state)->ch.out[FC_CONTROL] != NULL; }

static void cd_inventory(cJSON *libs)
{
    size_t v = cudnnGetVersion();
    char buf[64];
    cJSON *o = cJSON_AddObjectToObject(libs, "cudnn");
    snprintf(buf, sizeof buf, "%zu.%zu.%zu", v / 10000, (v / 100) % 100, v % 100);
    cJSON_AddStringToObject(o, "version", buf);
    snprintf(buf, sizeof buf, "%d.%d.%d", CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
    cJSON_AddStringToObject(o, "headers", buf);
    snprintf(buf, sizeof buf, "%zu", cudnnGetCudartVersion());
    cJSON_AddStringToObject(o, "cudart", buf);
}

const fc_backend fc_backend_cudnn = {
    .name = "cuda.cudnn",
    .device = "cuda",
    .summary =
        "cuDNN conv -> add bias -> BN inference -> activation; fused: BN folded + cudnnConvolutionBiasActivationForward; "
        "control: the unfused chain with the fused call's conv algorithm",
    .available = cd_available,
    .supports = cd_supports,
    .device_bytes = cd_device_bytes,
    .setup = cd_setup,
    .run = cd_run,
    .output = cd_output,
    .poison = cd_poison,
    .describe = cd_describe,
    .has_control = cd_has_control,
    .teardown = cd_teardown,
    .inventory = cd_inventory,
};
