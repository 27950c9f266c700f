/* backend_cublas.c — cuda.cublas: the linear family on cuBLASLt plus fusecal's kernels.
 *
 *   unfused  cublasLtMatmul (no epilogue) writes x·Wᵀ, then one fusecal kernel per op,
 *            each reading and writing the whole [m, n] tensor with 16-byte accesses:
 *            bias → (residual add) → ReLU / GELU(tanh).
 *   fused    one cublasLtMatmul with an epilogue: BIAS, RELU_BIAS or GELU_BIAS;
 *            linear_residual_relu passes the residual as C with beta = 1 and
 *            RELU_BIAS (cuBLASLt computes act(α·A·B + β·C + bias)).
 * A gated unit (linear_swiglu, W [2n, k]): the GEMM writes the [m, 2n] product, gate
 * half first, then the unfused chain runs a silu kernel and a mul kernel; cuBLASLt has
 * no gated (SwiGLU) epilogue, so the fused form is the same GEMM and one act-and-mul
 * kernel that reads the product once (kernels/linear.cu): two calls, not one.
 * A GELU prologue (gelu_linear, y = gelu_tanh(x)·Wᵀ + b): cuBLASLt's epilogues act on
 * the GEMM's output and it has no prologue on its input, so the unfused chain is a
 * gelu kernel writing gelu(x) [m, k] whole, the GEMM, then the bias kernel, and the
 * fused form takes x in blocks of rows sized to stay in the L2
 * (fc_cuda_prologue_rows): per block, the gelu kernel into one block-sized buffer,
 * then the block's GEMM with the BIAS epilogue, which reads the buffer from the L2.
 * gelu(x) is never written whole, as the CPU backends' blocked prologues do in the
 * LLC; each block is two calls. The blocks' GEMMs are not the unfused chain's one, so
 * where there are two blocks or more a control runs the unfused chain with the fused
 * form's blocked GEMMs (no epilogue, each on its rows of the chain's gelu(x)) and the
 * record splits implementation (unfused → control) from fusion (control → fused).
 * Row-major x [m, k], W [n, k], y [m, n] are column-major xᵀ [k, m], Wᵀ [k, n], yᵀ
 * [n, m], so each GEMM is yᵀ = op_T(Wᵀ)·xᵀ: A = W (transposed, ld k), B = x (ld k),
 * D = y (ld n); the bias runs along D's rows, the output features.
 * Both variants' matmuls get their algorithm the same way, once per setup: the top
 * cuBLASLt heuristic candidates (up to 8) are each timed on the problem's buffers
 * and the fastest is kept; describe() names it (algo id, tile, stages, split-k,
 * swizzle, cluster) and its rank among the heuristic's candidates.
 * Accumulation is fp32 for every dtype; tf32 uses CUBLAS_COMPUTE_32F_FAST_TF32.
 * cuBLASLt declining a matmul — its heuristic answering CUBLAS_STATUS_NOT_SUPPORTED or
 * no candidate — is the library turning the problem down: setup returns FC_DECLINED
 * and the record is skipped with that reason (fc_cublaslt_heuristic_verdict).
 */
#include "cuda_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 8

typedef struct lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc, ld;
    cublasLtMatmulAlgo_t algo;
    const void *A, *B, *C;
    void *D;
    float beta;
    cublasLtEpilogue_t epi;
    char chosen[320]; /* the algorithm and how it was chosen */
} lt_plan;

typedef struct cb_state {
    fc_problem p;
    fc_cuda_ctx *c;
    fc_dtype dt;
    int M, K, N; /* N: the GEMM's columns (2n for a gated unit) */
    int n_out;   /* the output's */
    void *x, *w, *b, *r;
    void *gu;       /* the fused gated unit's GEMM output [m, 2n] */
    void *gx;       /* the fused prologue's block of gelu(x) [rows, k] */
    int rows, nblk; /* the fused prologue's rows a block and blocks */
    fc_cuda_chain ch;
    lt_plan plan[FC_MAX_VARIANTS]; /* [FC_CONTROL]: the control's blocks' matmul */
    lt_plan tail[FC_MAX_VARIANTS]; /* the fused prologue's and the control's last block, when it has fewer rows */
} cb_state;

/* How cuda.cublas runs each op: the cuBLASLt matmul ("%s": its plan) and fusecal's
 * kernels in the unfused chain, and what each op becomes in the fused matmul, whose
 * epilogue computes act(α·A·B + β·C + bias): the residual enters as C. */
static const fc_op_impl cb_ops[FC_NOPS] = {
    [FC_OP_GEMM] = {"%s", FC_FUSE_CALL, "%s"},
    [FC_OP_BIAS] = {"bias kernel(fusecal, 16-byte vectors)", FC_FUSE_EPILOGUE, "BIAS"},
    [FC_OP_RESID] = {"residual add kernel(fusecal, 16-byte vectors)", FC_FUSE_EPILOGUE, "residual as C, beta=1"},
    [FC_OP_RELU] = {"relu kernel(fusecal, 16-byte vectors)", FC_FUSE_EPILOGUE, "RELU"},
    [FC_OP_GELU] = {"gelu_tanh kernel(fusecal, 16-byte vectors)", FC_FUSE_EPILOGUE, "GELU"},
    [FC_OP_SILU] = {"silu kernel(fusecal, gate half, 16-byte vectors)", FC_FUSE_PASS, "silu(gate)"},
    [FC_OP_GLU_MUL] = {"mul kernel(fusecal, by the up half, 16-byte vectors)", FC_FUSE_PASS, "* up"},
    [FC_OP_GELU_IN] = {"gelu_tanh kernel(fusecal, x, 16-byte vectors)", FC_FUSE_PROLOGUE,
                       "gelu_tanh kernel(fusecal) on each block of x rows into an L2-resident buffer"},
};

size_t fc_cuda_prologue_rows(size_t m, size_t k, size_t elem, size_t l2)
{
    const size_t quantum = 128, share = l2 / 4;
    size_t rows = k * elem > 0 ? share / (k * elem) / quantum * quantum : 0;
    if (rows < quantum) rows = quantum;
    return rows >= m ? m : rows;
}

/* The fused matmul's cuBLASLt epilogue for pat's ops after the GEMM (the residual
 * is its C, with beta = 1). */
static cublasLtEpilogue_t fused_epilogue(const fc_pattern *pat)
{
    bool bias = fc_pattern_has_op(pat, FC_OP_BIAS);
    if (fc_pattern_has_op(pat, FC_OP_RELU)) return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    if (fc_pattern_has_op(pat, FC_OP_GELU)) return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

static bool cb_supports(const fc_problem *p, char *why, size_t n)
{
    if (p->pat->family == FC_FAM_NORM) {
        snprintf(why, n, "cuda.cublas runs GEMMs and their epilogues; pattern '%s' has no GEMM (cuda.custom runs it)",
                 p->pat->name);
        return false;
    }
    return fc_op_table_fits(cb_ops, p->pat, "cuda.cublas", why, n);
}

static int cb_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    double M = (double)p->d[FC_LIN_M], K = (double)p->d[FC_LIN_K], N = (double)p->d[FC_LIN_N];
    double GN = (double)fc_linear_gemm_n(p), E = (double)fc_dtype_size(p->dtype), MN = M * N;
    double resid = fc_pattern_has_op(p->pat, FC_OP_RESID) ? MN : 0;
    double bias = fc_pattern_has_op(p->pat, FC_OP_BIAS) ? N : 0;
    double gated = fc_pattern_has_op(p->pat, FC_OP_GLU_MUL) ? M * GN : 0; /* the fused form's product */
    /* a prologue's block (at most x's size) and its control's output */
    double block = fc_pattern_has_op(p->pat, FC_OP_GELU_IN) ? M * K + MN : 0;
    double b = (M * K + GN * K + bias + resid + gated + block) * E + fc_cuda_chain_bytes(p);
    if (b > 9e18) return fc_errf(e, "problem '%s' is too large for device memory", p->pat->name);
    *bytes = (size_t)b;
    return 0;
}

static const char *epi_name(cublasLtEpilogue_t epi)
{
    switch (epi) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_RELU: return "RELU";
    case CUBLASLT_EPILOGUE_GELU: return "GELU";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS: return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU_BIAS: return "GELU_BIAS";
    default: return "?";
    }
}

typedef struct run_arg {
    cb_state *s;
    lt_plan *pl;
    const cublasLtMatmulAlgo_t *algo;
} run_arg;

/* The plan's matmul on x (or a block of gelu(x)) at B, writing D (C = D unless the
 * plan has its own C). */
static int lt_call(cb_state *s, lt_plan *pl, const cublasLtMatmulAlgo_t *algo, const void *B, void *D, fc_err *e)
{
    const float alpha = 1.0f;
    const void *C = pl->C == pl->D ? D : pl->C;
    FC_CUBLAS(cublasLtMatmul(s->c->lt, pl->desc, &alpha, pl->A, pl->la, B, pl->lb, &pl->beta, C, pl->lc, D, pl->ld,
                             algo, s->c->lt_ws, s->c->lt_ws_bytes, s->c->stream));
    return 0;
}

static int lt_run(cb_state *s, lt_plan *pl, const cublasLtMatmulAlgo_t *algo, fc_err *e)
{
    return lt_call(s, pl, algo, pl->B, pl->D, e);
}

static int lt_run_arg(void *arg, fc_err *e)
{
    run_arg *a = arg;
    return lt_run(a->s, a->pl, a->algo, e);
}

static void algo_text(const cublasLtMatmulAlgo_t *algo, char *buf, size_t n)
{
    int32_t id = -1, splitk = 1;
    uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
    uint16_t cluster = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof red, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz, sizeof swz, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom, &w);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
    snprintf(buf, n, "algo %d tile %u stages %u split-k %d reduction %u swizzle %u custom %u cluster %u", (int)id, tile,
             stages, (int)splitk, red, swz, custom, (unsigned)cluster);
}

/* Builds a matmul D = epi(W·B + beta·C + bias) over M rows of B (x, or gelu(x)) and
 * picks its algorithm by timing the heuristic's candidates. */
static int lt_build(cb_state *s, lt_plan *pl, int M, const void *B, cublasLtEpilogue_t epi, const void *bias,
                    const void *C, float beta, void *D, fc_err *e)
{
    cudaDataType_t t = fc_cuda_data_type(s->dt);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    pl->epi = epi;
    pl->A = s->w;
    pl->B = B;
    pl->C = C ? C : D;
    pl->D = D;
    pl->beta = beta;
    FC_CUBLAS(cublasLtMatmulDescCreate(&pl->desc, fc_cuda_compute_type(s->dt), CUDA_R_32F));
    FC_CUBLAS(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    FC_CUBLAS(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    FC_CUBLAS(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (bias)
        FC_CUBLAS(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    FC_CUBLAS(cublasLtMatrixLayoutCreate(&pl->la, t, (uint64_t)s->K, (uint64_t)s->N, s->K));
    FC_CUBLAS(cublasLtMatrixLayoutCreate(&pl->lb, t, (uint64_t)s->K, (uint64_t)M, s->K));
    FC_CUBLAS(cublasLtMatrixLayoutCreate(&pl->lc, t, (uint64_t)s->N, (uint64_t)M, s->N));
    FC_CUBLAS(cublasLtMatrixLayoutCreate(&pl->ld, t, (uint64_t)s->N, (uint64_t)M, s->N));

    cublasLtMatmulPreference_t pref;
    FC_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t res[MAX_CANDIDATES];
    int found = 0;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &s->c->lt_ws_bytes, sizeof s->c->lt_ws_bytes);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulPreferenceDestroy(pref);
        return fc_errf(e, "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES) failed: %s (%s)",
                       cublasGetStatusString(st), cublasGetStatusName(st));
    }
    st = cublasLtMatmulAlgoGetHeuristic(s->c->lt, pl->desc, pl->la, pl->lb, pl->lc, pl->ld, pref, MAX_CANDIDATES, res,
                                        &found);
    cublasLtMatmulPreferenceDestroy(pref);
    char what[160];
    snprintf(what, sizeof what, "a %s %dx%dx%d matmul with epilogue %s", fc_dtype_name(s->dt), M, s->K, s->N,
             epi_name(epi));
    int verdict = fc_cublaslt_heuristic_verdict(st, found, what, e);
    if (verdict != 0) return verdict;

    /* one timed sample of each candidate: enough calls to last ~0.3 ms */
    int best = -1, usable = 0;
    double best_ms = INFINITY, first_ms = NAN;
    int reps = 1;
    char last_err[256] = "";
    for (int i = 0; i < found; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        run_arg ra = {s, pl, &res[i].algo};
        double ms = 0;
        fc_err te = {{0}};
        if (usable == 0) { /* size the samples on the first candidate */
            if (fc_cuda_time(s->c, lt_run_arg, &ra, 1, 1, &ms, &te) != 0) {
                fc_strlcpy(last_err, te.msg, sizeof last_err);
                continue;
            }
            reps = ms > 0 ? (int)ceil(0.3 / ms) : 50;
            if (reps < 1) reps = 1;
            if (reps > 50) reps = 50;
        }
        if (fc_cuda_time(s->c, lt_run_arg, &ra, reps, 3, &ms, &te) != 0) {
            fc_strlcpy(last_err, te.msg, sizeof last_err);
            continue;
        }
        if (usable == 0) first_ms = ms;
        usable++;
        if (ms < best_ms) {
            best_ms = ms;
            best = i;
        }
    }
    if (best < 0)
        return fc_errf(e, "none of cuBLASLt's %d candidate algorithms ran (%s epilogue %s): %s", found,
                       fc_dtype_name(s->dt), epi_name(epi), last_err);
    pl->algo = res[best].algo;
    char at[200];
    algo_text(&pl->algo, at, sizeof at);
    int len = snprintf(
        pl->chosen, sizeof pl->chosen,
        "%s, waves %.2f; fastest of %d heuristic candidates timed at setup (heuristic rank %d, %.4f ms; rank 1 "
        "%.4f ms)",
        at, (double)res[best].wavesCount, usable, best + 1, best_ms, first_ms);
    return len > 0 ? 0 : fc_errf(e, "cuda.cublas: describing the algorithm failed");
}

static void cb_teardown(void *state);

/* The unfused chain's (and the control's) first op with a prologue: gelu(x), all of
 * it, into the chain's first intermediate. */
static int gelu_all(cb_state *s, fc_err *e)
{
    FC_CU(fck_gelu_tanh(fc_cuda_kdt(s->dt), s->x, fc_cuda_chain_dst(&s->ch, 0), (size_t)s->M * (size_t)s->K,
                        s->c->stream));
    return 0;
}

/* A blocked variant's matmuls (the fused form's, or with v = FC_CONTROL the
 * control's, without epilogue): one for the blocks of `rows` rows of B, one for a
 * last block of fewer. */
static int build_blocks(cb_state *s, fc_variant v, cublasLtEpilogue_t epi, const void *bias, const void *B, void *D,
                        fc_err *e)
{
    int rc = lt_build(s, &s->plan[v], s->rows, B, epi, bias, NULL, 0.0f, D, e);
    const int last = s->M - (s->nblk - 1) * s->rows;
    if (rc == 0 && last != s->rows) rc = lt_build(s, &s->tail[v], last, B, epi, bias, NULL, 0.0f, D, e);
    return rc;
}

/* The fused prologue's blocks (fc_cuda_prologue_rows), their buffer and matmuls; with
 * two blocks or more, the control's. */
static int setup_prologue(cb_state *s, cublasLtEpilogue_t epi, const void *bias, fc_err *e)
{
    const size_t E = fc_dtype_size(s->dt);
    s->rows = (int)fc_cuda_prologue_rows((size_t)s->M, (size_t)s->K, E, (size_t)s->c->prop.l2CacheSize);
    s->nblk = (s->M + s->rows - 1) / s->rows;
    if (fc_cuda_alloc(&s->gx, (size_t)s->rows * (size_t)s->K * E, "the prologue's block", e) != 0) return -1;
    /* the block holds gelu(x) while the candidates are timed */
    FC_CU(fck_gelu_tanh(fc_cuda_kdt(s->dt), s->x, s->gx, (size_t)s->rows * (size_t)s->K, s->c->stream));
    int rc = build_blocks(s, FC_FUSED, epi, bias, s->gx, s->ch.out[FC_FUSED], e);
    if (rc != 0 || s->nblk == 1) return rc;
    if (fc_cuda_chain_add_control(&s->ch, e) != 0) return -1;
    return build_blocks(s, FC_CONTROL, CUBLASLT_EPILOGUE_DEFAULT, NULL, fc_cuda_chain_dst(&s->ch, 0),
                        fc_cuda_chain_dst(&s->ch, 1), e);
}

static int cb_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    cb_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->c = devctx;
    s->dt = p->dtype;
    s->M = (int)p->d[FC_LIN_M];
    s->K = (int)p->d[FC_LIN_K];
    s->N = (int)fc_linear_gemm_n(p);
    s->n_out = (int)p->d[FC_LIN_N];
    bool resid = fc_pattern_has_op(p->pat, FC_OP_RESID), gated = fc_pattern_has_op(p->pat, FC_OP_GLU_MUL);
    if (fc_cuda_upload(s->c, w->t[FC_LIN_TX].data, w->t[FC_LIN_TX].n, s->dt, &s->x, "x", e) ||
        fc_cuda_upload(s->c, w->t[FC_LIN_TW].data, w->t[FC_LIN_TW].n, s->dt, &s->w, "W", e))
        return -1;
    if (w->t[FC_LIN_TB].n && fc_cuda_upload(s->c, w->t[FC_LIN_TB].data, w->t[FC_LIN_TB].n, s->dt, &s->b, "b", e))
        return -1;
    if (resid && fc_cuda_upload(s->c, w->t[FC_LIN_TR].data, w->t[FC_LIN_TR].n, s->dt, &s->r, "r", e)) return -1;
    if (fc_cuda_chain_alloc(&s->ch, s->c, p, w, e) != 0) return -1;
    if (gated &&
        fc_cuda_alloc(&s->gu, (size_t)s->M * (size_t)s->N * fc_dtype_size(s->dt), "the gated unit's product", e))
        return -1;

    cublasLtEpilogue_t epi = fused_epilogue(p->pat);
    const void *bias = fc_pattern_has_op(p->pat, FC_OP_BIAS) ? s->b : NULL;
    /* with a prologue, the unfused GEMM (the chain's second op) reads the gelu
     * kernel's gelu(x), the chain's first intermediate */
    const bool prologue = fc_pattern_has_op(p->pat, FC_OP_GELU_IN);
    void *gemm_src = prologue ? fc_cuda_chain_dst(&s->ch, 0) : s->x, *gemm_dst = fc_cuda_chain_dst(&s->ch, prologue);
    if (prologue && gelu_all(s, e) != 0) return -1;
    int rc = lt_build(s, &s->plan[FC_UNFUSED], s->M, gemm_src, CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0.0f, gemm_dst,
                      e);
    if (rc != 0) return rc;
    void *fused_dst = gated ? s->gu : s->ch.out[FC_FUSED];
    rc = prologue ? setup_prologue(s, epi, bias, e)
                  : lt_build(s, &s->plan[FC_FUSED], s->M, s->x, epi, bias, resid ? s->r : NULL, resid ? 1.0f : 0.0f,
                             fused_dst, e);
    if (rc != 0) return rc;
    FC_CU(cudaStreamSynchronize(s->c->stream));
    return 0;
}

/* A blocked variant's blocks of x rows. The fused prologue: each block through the
 * gelu kernel into the block buffer, then the block's matmul with its bias writing
 * the block's rows of y. The control: the unfused chain's gelu kernel over all of x,
 * each block's matmul on its rows of that gelu(x), then the bias kernel. Block
 * offsets are whole multiples of 128 rows: 256-byte aligned, as cuBLASLt's heuristic
 * assumed of the buffers it chose the algorithms on. */
static int run_blocks(cb_state *s, fc_variant v, fc_err *e)
{
    const size_t E = fc_dtype_size(s->dt), M = (size_t)s->M, K = (size_t)s->K, N = (size_t)s->N;
    const fck_dtype kd = fc_cuda_kdt(s->dt);
    const bool fused = v == FC_FUSED;
    char *gall = fc_cuda_chain_dst(&s->ch, 0); /* the control's gelu(x), all of it */
    char *y = fused ? s->ch.out[FC_FUSED] : fc_cuda_chain_dst(&s->ch, 1);
    if (!fused && gelu_all(s, e) != 0) return -1;
    for (int b = 0; b < s->nblk; b++) {
        const size_t r0 = (size_t)b * (size_t)s->rows, rows = b == s->nblk - 1 ? M - r0 : (size_t)s->rows;
        lt_plan *pl = rows == (size_t)s->rows ? &s->plan[v] : &s->tail[v];
        if (fused) FC_CU(fck_gelu_tanh(kd, (const char *)s->x + r0 * K * E, s->gx, rows * K, s->c->stream));
        if (lt_call(s, pl, &pl->algo, fused ? s->gx : gall + r0 * K * E, y + r0 * N * E, e) != 0) return -1;
    }
    if (!fused) FC_CU(fck_bias(kd, y, s->b, s->ch.out[FC_CONTROL], M, N, s->c->stream));
    return 0;
}

static int cb_run(void *state, fc_variant v, fc_err *e)
{
    cb_state *s = state;
    fck_dtype kd = fc_cuda_kdt(s->dt);
    size_t M = (size_t)s->M, n = (size_t)s->n_out, MN = M * n;
    cudaStream_t st = s->c->stream;
    if (v != FC_UNFUSED && s->gx) return run_blocks(s, v, e);
    if (v == FC_FUSED) {
        if (lt_run(s, &s->plan[FC_FUSED], &s->plan[FC_FUSED].algo, e) != 0) return -1;
        if (s->gu) FC_CU(fck_glu_act_mul(kd, s->gu, s->ch.out[FC_FUSED], M, n, st));
        return 0;
    }
    const bool prologue = s->p.pat->ops[0] == FC_OP_GELU_IN; /* then the GEMM reads its gelu(x) */
    if (prologue && gelu_all(s, e) != 0) return -1;
    if (lt_run(s, &s->plan[FC_UNFUSED], &s->plan[FC_UNFUSED].algo, e) != 0) return -1;
    const void *gemm = s->plan[FC_UNFUSED].D, *cur = gemm;
    for (int i = prologue ? 2 : 1; i < s->p.pat->nops; i++) {
        void *dst = fc_cuda_chain_dst(&s->ch, i);
        switch (s->p.pat->ops[i]) {
        case FC_OP_BIAS: FC_CU(fck_bias(kd, cur, s->b, dst, M, n, st)); break;
        case FC_OP_RESID: FC_CU(fck_add(kd, cur, s->r, dst, MN, st)); break;
        case FC_OP_RELU: FC_CU(fck_relu(kd, cur, dst, MN, st)); break;
        case FC_OP_GELU: FC_CU(fck_gelu_tanh(kd, cur, dst, MN, st)); break;
        case FC_OP_SILU: FC_CU(fck_glu_silu(kd, gemm, dst, M, n, st)); break;
        case FC_OP_GLU_MUL: FC_CU(fck_glu_mul(kd, cur, gemm, dst, M, n, st)); break;
        default: return fc_errf(e, "cuda.cublas: op '%s' is not in the linear family", fc_op_name(s->p.pat->ops[i]));
        }
        cur = dst;
    }
    return 0;
}

static int cb_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    cb_state *s = state;
    return fc_cuda_chain_output(&s->ch, v, dst, e);
}

static int cb_poison(void *state, fc_variant v, fc_err *e)
{
    cb_state *s = state;
    return fc_cuda_chain_poison(&s->ch, v, e);
}

static const char *compute_name(fc_dtype dt)
{
    return dt == FC_TF32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F";
}

/* A variant's matmul: types, compute type, epilogue, C, and the algorithm chosen. */
static const char *cb_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    (void)op;
    const cb_state *s = ctx;
    const lt_plan *pl = &s->plan[v];
    bool c = pl->beta != 0.0f;
    const char *io = s->dt == FC_TF32 ? "fp32" : fc_dtype_name(s->dt);
    snprintf(buf, n, "cublasLtMatmul(%s in/out, %s, epilogue %s%s%s) [%s]", io, compute_name(s->dt), epi_name(pl->epi),
             c ? ", " : "", c ? cb_ops[FC_OP_RESID].fused : "", pl->chosen);
    return buf;
}

/* A blocked variant's matmul, and the last block's where it has its own. */
static void describe_block_matmuls(cb_state *s, fc_variant v, fc_impl *impl)
{
    fc_impl_add_op(impl, cb_ops, FC_OP_GEMM, v, cb_detail, s);
    if (s->tail[v].desc)
        fc_impl_addf(impl, "; the last block's %d rows its own matmul [%s]", s->M - (s->nblk - 1) * s->rows,
                     s->tail[v].chosen);
}

static void cb_describe(void *state, fc_variant v, fc_impl *impl)
{
    cb_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    if (v == FC_UNFUSED) {
        fc_impl_add_chain(impl, cb_ops, pat, cb_detail, s);
    } else if (v == FC_CONTROL) {
        fc_impl_addf(impl, "control: the unfused chain with the fused form's %d blocks of %d rows: %s -> each block's ",
                     s->nblk, s->rows, cb_ops[FC_OP_GELU_IN].unfused);
        describe_block_matmuls(s, FC_CONTROL, impl);
        fc_impl_addf(impl, " -> %s", cb_ops[FC_OP_BIAS].unfused);
    } else if (s->gx) {
        const double mib = (double)s->rows * s->K * fc_dtype_size(s->dt) / (1 << 20);
        fc_impl_add_part(impl, cb_ops, pat, FC_FUSE_PROLOGUE, "", "", "");
        fc_impl_addf(impl, " (%d block%s of %d rows, %.2f MiB, of the %d MiB L2), then the block's ", s->nblk,
                     s->nblk > 1 ? "s" : "", s->rows, mib, s->c->prop.l2CacheSize >> 20);
        describe_block_matmuls(s, FC_FUSED, impl);
    } else {
        fc_impl_add_op(impl, cb_ops, pat->ops[0], FC_FUSED, cb_detail, s);
        fc_impl_add_part(impl, cb_ops, pat, FC_FUSE_PASS, " + act-and-mul kernel(fusecal: ", " ",
                         ", one read of the product, 16-byte vectors)");
    }
    impl->nkernels = v == FC_UNFUSED   ? pat->nops
                     : v == FC_CONTROL ? s->nblk + 2
                     : s->gx           ? 2 * s->nblk
                                       : fc_op_table_fused_kernels(cb_ops, pat);
}

static bool cb_has_control(void *state) { return ((cb_state *)state)->ch.out[FC_CONTROL] != NULL; }

static void plan_free(lt_plan *pl)
{
    if (pl->la) cublasLtMatrixLayoutDestroy(pl->la);
    if (pl->lb) cublasLtMatrixLayoutDestroy(pl->lb);
    if (pl->lc) cublasLtMatrixLayoutDestroy(pl->lc);
    if (pl->ld) cublasLtMatrixLayoutDestroy(pl->ld);
    if (pl->desc) cublasLtMatmulDescDestroy(pl->desc);
}

static void cb_teardown(void *state)
{
    cb_state *s = state;
    if (!s) return;
    cudaStreamSynchronize(s->c->stream);
    for (int v = 0; v < FC_MAX_VARIANTS; v++) {
        plan_free(&s->plan[v]);
        plan_free(&s->tail[v]);
    }
    fc_cuda_chain_free(&s->ch);
    fc_cuda_free(s->x);
    fc_cuda_free(s->w);
    fc_cuda_free(s->b);
    fc_cuda_free(s->r);
    fc_cuda_free(s->gu);
    fc_cuda_free(s->gx);
    free(s);
}

static void cb_inventory(cJSON *libs)
{
    int ma = 0, mi = 0, pa = 0;
    cublasGetProperty(MAJOR_VERSION, &ma);
    cublasGetProperty(MINOR_VERSION, &mi);
    cublasGetProperty(PATCH_LEVEL, &pa);
    char buf[64];
    cJSON *o = cJSON_AddObjectToObject(libs, "cublas");
    snprintf(buf, sizeof buf, "%d.%d.%d", ma, mi, pa);
    cJSON_AddStringToObject(o, "version", buf);
    size_t lv = cublasLtGetVersion();
    snprintf(buf, sizeof buf, "%zu.%zu.%zu", lv / 10000, (lv / 100) % 100, lv % 100);
    cJSON_AddStringToObject(o, "cublaslt_version", buf);
    snprintf(buf, sizeof buf, "%d.%d.%d", CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH);
    cJSON_AddStringToObject(o, "headers", buf);
    cJSON_AddStringToObject(o, "fusecal_kernels", fck_arch());
}

const fc_backend fc_backend_cublas = {
    .name = "cuda.cublas",
    .device = "cuda",
    .summary =
        "cuBLASLt GEMM + fusecal's vectorized elementwise kernels; fused: cuBLASLt epilogues (bias, ReLU, GELU, "
        "residual as C), SwiGLU as the GEMM + one act-and-mul kernel, a GELU prologue on L2-resident blocks of x",
    .available = fc_cuda_usable,
    .supports = cb_supports,
    .device_bytes = cb_device_bytes,
    .setup = cb_setup,
    .run = cb_run,
    .output = cb_output,
    .poison = cb_poison,
    .describe = cb_describe,
    .has_control = cb_has_control,
    .teardown = cb_teardown,
    .inventory = cb_inventory,
};
