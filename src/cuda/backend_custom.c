/* backend_custom.c — cuda.custom's attention part (custom_parts.h): the attention
 * family, where no library fuses the chain, on cuBLAS and fusecal's own kernels
 * (kernels/attention.cu, elementwise.cu).
 *
 *   unfused  as an eager framework runs it, every intermediate [b·h, s, skv] written to
 *            memory in the dtype: cublasGemmStridedBatchedEx S = Q·Kᵀ → fusecal
 *            scale(+causal mask) kernel → fusecal row-softmax kernel (each row read
 *            once; fck_softmax_rows_describe says how) → cublasGemmStridedBatchedEx
 *            O = P·V.
 *   fused    qk_scale:   one strided-batched GEMM with alpha = 1/√d;
 *            qk_softmax: one fusecal kernel that computes QKᵀ tiles on tensor cores
 *                        and writes only P (two sweeps over the key tiles);
 *            attention:  fusecal's flash-attention kernel (online softmax, S never
 *                        written), mma.sync tensor cores.
 *            The two kernels are the device's choice (run --kernel, fc_device_opts):
 *            the reference design or flash2 (fusecal_kernels.h); describe() names the
 *            one that ran with its tiling and resources (fck_attention_resources_v)
 *            and the record carries its name (fc_impl.kernel).
 * Q [b, h, s, d], K and V [b, hkv, skv, d] row-major. Grouped-query heads: the g = h/hkv
 * query heads that read one key/value head are adjacent, so their Q (and S, P, O) rows
 * are one matrix of g·s rows, and each GEMM is batched over the b·hkv key/value heads:
 * S = Q·Kᵀ is the column-major product Sᵀ = op_T(Kᵀ)·Qᵀ (A = K, ld d; B = Q, ld d;
 * C = S, ld skv) and O = P·V is Oᵀ = Vᵀ·Pᵀ (A = V, ld d; B = P, ld skv; C = O, ld d).
 * The fused kernels take a block of queries of one query head and read key/value head
 * n / g (fck_attn_shape). Causal: query i sees keys j <= i + skv − s.
 * fp32 GEMMs use CUBLAS_COMPUTE_32F (no TF32), tf32 ones CUBLAS_COMPUTE_32F_FAST_TF32;
 * the fused kernels use tf32 tensor cores for tf32 and three tf32 products of the
 * split operands (about fp32 accuracy) for fp32. Head dimensions other than 64 and
 * 128 are unsupported for qk_softmax and attention (the fused kernels are built for
 * those two); qk_scale takes any d.
 * Decode-shaped problems (s < 16): the flash kernels tile 64 or 128 queries of one head
 * and give all of a head's keys to one block, so one query would fill one row of a tile
 * and b·h blocks. They take fusecal's split-KV decode kernels instead (kernels/decode.cu:
 * a block per key/value head and split of its keys, its g·s query rows at most 16 and d
 * up to 128, fp32 arithmetic; a second kernel combines the splits' outputs (attention) or
 * writes P from the fp32 scores once the splits' maxima and sums are combined
 * (qk_softmax)), with a workspace made at setup; those of more rows (g·s > 16) the flash
 * kernels, at d = 64 or 128.
 */
#include "cuda_common.h"
#include "custom_parts.h"
#include "kernel_logic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cu_state {
    fc_problem p;
    fc_cuda_ctx *c;
    fc_dtype dt;
    int bh, S, SKV, D, causal;
    int bkv, group;         /* key/value heads in all (b·hkv); query heads per key/value head */
    fck_attn_kernel kernel; /* the fused attention kernel (qk_softmax, attention) */
    bool decode;            /* qk_softmax or attention the split-KV decode kernels take (uses_decode) */
    void *ws;               /* its workspace, ws_bytes */
    size_t ws_bytes;
    void *q, *k, *v;
    fc_cuda_chain ch;
} cu_state;

/* How cuda.custom runs each op: cuBLAS GEMMs ("%s": dtype and compute type) and
 * fusecal's kernels ("%s": the causal mask; the softmax's plan for the row length) in
 * the unfused chain, and its part in the fused form: the GEMM with the scale as its
 * alpha, or one of fusecal's kernels that runs the chain up to it (named with its
 * tiles, tensor-core instructions and resources). */
static const fc_op_impl cu_ops[FC_NOPS] = {
    [FC_OP_QK] = {"cublasGemmStridedBatchedEx(QK^T, %s)", FC_FUSE_CALL, "%s"},
    [FC_OP_SCALE] = {"%s kernel(fusecal, 16-byte vectors)", FC_FUSE_FOLD, "alpha=1/sqrt(d)"},
    [FC_OP_SOFTMAX] = {"%s", FC_FUSE_KERNEL, "%s"},
    [FC_OP_PV] = {"cublasGemmStridedBatchedEx(PV, %s)", FC_FUSE_KERNEL, "%s"},
};

/* The op whose kernel runs the fused form: the last kernel of its own, else the call. */
static fc_op fused_op(const fc_pattern *pat)
{
    int k = fc_op_table_kernel(cu_ops, pat);
    return pat->ops[k >= 0 ? k : 0];
}

/* Whether a problem takes the split-KV decode kernels: a fused kernel's pattern at s <
 * 16 within what they take. Other problems of s < 16 (more than 16 query rows a key/value
 * head, as 8 query heads a key/value head at s = 3) take the flash kernels, which fill
 * part of a tile of 64 queries with them. */
static bool uses_decode(const fc_problem *p)
{
    const int64_t s = p->d[FC_ATT_S], rows = p->d[FC_ATT_H] / p->d[FC_ATT_HKV] * s;
    return fc_op_table_kernel(cu_ops, p->pat) >= 0 && s < 16 &&
           fck_dec_supports(rows, p->d[FC_ATT_D], p->d[FC_ATT_SKV]);
}

static bool cu_supports(const fc_problem *p, char *why, size_t n)
{
    if (!fc_op_table_fits(cu_ops, p->pat, "cuda.custom", why, n)) return false;
    int64_t bh = p->d[FC_ATT_B] * p->d[FC_ATT_H], s = p->d[FC_ATT_S], d = p->d[FC_ATT_D];
    int64_t skv = p->d[FC_ATT_SKV];
    int64_t rows = p->d[FC_ATT_H] / p->d[FC_ATT_HKV] * s; /* query rows per key/value head */
    if (bh > INT32_MAX || s * skv > INT64_MAX / (bh > 0 ? bh : 1) || rows > INT32_MAX) {
        snprintf(why, n, "b*h = %lld with s = %lld is beyond cuBLAS's batch count and dimensions", (long long)bh,
                 (long long)s);
        return false;
    }
    if (fc_op_table_kernel(cu_ops, p->pat) >= 0) {
        if (!fc_pattern_has_op(p->pat, FC_OP_SCALE)) {
            snprintf(why, n, "fusecal's attention kernels scale by 1/sqrt(d); pattern '%s' has no scale", p->pat->name);
            return false;
        }
        if (uses_decode(p)) return true;
        if (!fck_attention_supports((int)d)) {
            if (s < 16)
                snprintf(why, n,
                         "s = %lld: fusecal's split-KV decode kernel takes at most %d query rows per key/value head "
                         "((h/hkv)*s = %lld), head dimensions up to %d and up to %d keys (skv = %lld), and its "
                         "flash kernels head dimensions 64 and 128 (asked: d=%lld)",
                         (long long)s, FCK_DEC_MAX_ROWS, (long long)rows, FCK_DEC_MAX_D, FCK_DEC_MAX_SKV,
                         (long long)skv, (long long)d);
            else
                snprintf(why, n,
                         "fusecal's fused attention kernels are built for head dimensions 64 and 128 (asked: d=%lld)",
                         (long long)d);
            return false;
        }
        /* the finer tiling (the reference kernel's 64 queries) makes the larger grid */
        if (fck_attn_grid_blocks(bh, s, FCK_REF_BR) < 0) {
            snprintf(why, n,
                     "b*h = %lld heads of s = %lld need more query tiles of %d than a 1-D grid takes (2^31 - 1)",
                     (long long)bh, (long long)s, FCK_REF_BR);
            return false;
        }
    }
    return true;
}

static int cu_device_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    double BH = (double)p->d[FC_ATT_B] * (double)p->d[FC_ATT_H], S = (double)p->d[FC_ATT_S];
    double BKV = (double)p->d[FC_ATT_B] * (double)p->d[FC_ATT_HKV], SKV = (double)p->d[FC_ATT_SKV];
    double D = (double)p->d[FC_ATT_D], E = (double)fc_dtype_size(p->dtype);
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    double b = (BH * S * D + (pv ? 2 : 1) * BKV * SKV * D) * E + fc_cuda_chain_bytes(p);
    if (uses_decode(p)) {                 /* the decode kernels' workspace */
        const double rows = BH / BKV * S; /* partial results: at most a split per FCK_DEC_MIN_KEYS keys */
        b += BKV * ceil(SKV / FCK_DEC_MIN_KEYS) * (double)fck_dec_part_floats((int)rows, (int)D) * 4.0;
        if (!pv) b += BKV * rows * SKV * 4.0; /* qk_softmax's fp32 scores */
    }
    if (b > 9e18) return fc_errf(e, "problem '%s' is too large for device memory", p->pat->name);
    *bytes = (size_t)b;
    return 0;
}

static void cu_teardown(void *state);

/* The problem as fusecal's attention kernels take it */
static fck_attn_shape shape_of(const cu_state *s)
{
    return (fck_attn_shape){s->bh, s->S, s->SKV, s->group, s->D, s->causal};
}

static int cu_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    cu_state *s = fc_xcalloc(1, sizeof *s);
    *state = s;
    s->p = *p;
    s->c = devctx;
    s->dt = p->dtype;
    s->bh = (int)(p->d[FC_ATT_B] * p->d[FC_ATT_H]);
    s->S = (int)p->d[FC_ATT_S];
    s->SKV = (int)p->d[FC_ATT_SKV];
    s->D = (int)p->d[FC_ATT_D];
    s->bkv = (int)(p->d[FC_ATT_B] * p->d[FC_ATT_HKV]);
    s->group = (int)(p->d[FC_ATT_H] / p->d[FC_ATT_HKV]);
    s->causal = p->d[FC_ATT_CAUSAL] != 0;
    s->kernel = s->c->attn_kernel;
    bool pv = fc_pattern_has_op(p->pat, FC_OP_PV);
    if (fc_cuda_upload(s->c, w->t[FC_ATT_TQ].data, w->t[FC_ATT_TQ].n, s->dt, &s->q, "Q", e) ||
        fc_cuda_upload(s->c, w->t[FC_ATT_TK].data, w->t[FC_ATT_TK].n, s->dt, &s->k, "K", e))
        return -1;
    if (pv && fc_cuda_upload(s->c, w->t[FC_ATT_TV].data, w->t[FC_ATT_TV].n, s->dt, &s->v, "V", e)) return -1;
    s->decode = uses_decode(p);
    if (s->decode) {
        const fck_attn_shape sh = shape_of(s);
        s->ws_bytes = fck_decode_workspace(fc_cuda_kdt(s->dt), sh, !pv);
        if (s->ws_bytes == 0) return fc_errf(e, "cuda.custom: the decode kernel does not take this problem");
        if (fc_cuda_alloc(&s->ws, s->ws_bytes, "the decode kernel's partial results", e)) return -1;
    }
    return fc_cuda_chain_alloc(&s->ch, s->c, p, w, e);
}

/* S = alpha·Q·Kᵀ into dst [bh, s, skv]: one GEMM of g·s query rows per key/value head */
static int gemm_qk(cu_state *s, float alpha, void *dst, fc_err *e)
{
    const float beta = 0.0f;
    cudaDataType_t t = fc_cuda_data_type(s->dt);
    const int M = s->group * s->S;
    long long md = (long long)M * s->D, kd = (long long)s->SKV * s->D, ms = (long long)M * s->SKV;
    FC_CUBLAS(cublasGemmStridedBatchedEx(s->c->blas, CUBLAS_OP_T, CUBLAS_OP_N, s->SKV, M, s->D, &alpha, s->k, t, s->D,
                                         kd, s->q, t, s->D, md, &beta, dst, t, s->SKV, ms, s->bkv,
                                         fc_cuda_compute_type(s->dt), CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* O = P·V: one GEMM of g·s rows of P per key/value head */
static int gemm_pv(cu_state *s, const void *P, void *dst, fc_err *e)
{
    const float alpha = 1.0f, beta = 0.0f;
    cudaDataType_t t = fc_cuda_data_type(s->dt);
    const int M = s->group * s->S;
    long long md = (long long)M * s->D, kd = (long long)s->SKV * s->D, ms = (long long)M * s->SKV;
    FC_CUBLAS(cublasGemmStridedBatchedEx(s->c->blas, CUBLAS_OP_N, CUBLAS_OP_N, s->D, M, s->SKV, &alpha, s->v, t, s->D,
                                         kd, P, t, s->SKV, ms, &beta, dst, t, s->D, md, s->bkv,
                                         fc_cuda_compute_type(s->dt), CUBLAS_GEMM_DEFAULT));
    return 0;
}

static int cu_run(void *state, fc_variant v, fc_err *e)
{
    cu_state *s = state;
    fck_dtype kd = fc_cuda_kdt(s->dt);
    cudaStream_t st = s->c->stream;
    float scale = 1.0f / sqrtf((float)s->D);
    const fck_attn_shape sh = shape_of(s);
    if (v == FC_FUSED) {
        void *out = s->ch.out[FC_FUSED];
        switch (fused_op(s->p.pat)) {
        case FC_OP_QK: return gemm_qk(s, fc_pattern_has_op(s->p.pat, FC_OP_SCALE) ? scale : 1.0f, out, e);
        case FC_OP_SOFTMAX:
            if (s->decode) FC_CU(fck_decode_qk_softmax(kd, s->q, s->k, out, sh, s->ws, s->ws_bytes, st));
            else
                FC_CU(fck_qk_softmax_v(s->kernel, kd, s->q, s->k, out, sh, st));
            return 0;
        case FC_OP_PV:
            if (s->decode) FC_CU(fck_decode_attention(kd, s->q, s->k, s->v, out, sh, s->ws, s->ws_bytes, st));
            else
                FC_CU(fck_flash_attention_v(s->kernel, kd, s->q, s->k, s->v, out, sh, st));
            return 0;
        default: return fc_errf(e, "cuda.custom: no fused kernel ends with op '%s'", fc_op_name(fused_op(s->p.pat)));
        }
    }
    const void *cur = NULL;
    size_t rows = (size_t)s->bh * (size_t)s->S;
    for (int i = 0; i < s->p.pat->nops; i++) {
        void *dst = fc_cuda_chain_dst(&s->ch, i);
        switch (s->p.pat->ops[i]) {
        case FC_OP_QK:
            if (gemm_qk(s, 1.0f, dst, e) != 0) return -1;
            break;
        case FC_OP_SCALE:
            FC_CU(fck_scale_mask(kd, cur, dst, (size_t)s->bh, (size_t)s->S, (size_t)s->SKV, scale, s->causal, st));
            break;
        case FC_OP_SOFTMAX: FC_CU(fck_softmax_rows(kd, cur, dst, rows, (size_t)s->SKV, st)); break;
        case FC_OP_PV:
            if (gemm_pv(s, cur, dst, e) != 0) return -1;
            break;
        default: return fc_errf(e, "cuda.custom: op '%s' is not in the attention family", fc_op_name(s->p.pat->ops[i]));
        }
        cur = dst;
    }
    return 0;
}

static int cu_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    cu_state *s = state;
    return fc_cuda_chain_output(&s->ch, v, dst, e);
}

static int cu_poison(void *state, fc_variant v, fc_err *e)
{
    cu_state *s = state;
    return fc_cuda_chain_poison(&s->ch, v, e);
}

/* The unfused chain's detail: the GEMMs' dtype and compute type, the scale kernel's
 * mask, the softmax kernel's plan for rows of s. */
static const char *unfused_detail(const cu_state *s, fc_op op, char *buf, size_t n)
{
    if (op == FC_OP_SCALE) return s->causal ? "scale+causal-mask" : "scale";
    if (op == FC_OP_SOFTMAX) {
        fck_softmax_rows_describe(fc_cuda_kdt(s->dt), (size_t)s->SKV, buf, n);
        return buf;
    }
    snprintf(buf, n, "%s, %s, batch %d key/value heads x %d query rows",
             s->dt == FC_TF32 ? "fp32" : fc_dtype_name(s->dt),
             s->dt == FC_TF32 ? "COMPUTE_32F_FAST_TF32" : "COMPUTE_32F", s->bkv, s->group * s->S);
    return buf;
}

/* The fused form of a decode-shaped problem: the split-KV kernels, what they keep where,
 * and the split kernel's plan and resources as fck_decode_describe reads them. */
static const char *decode_detail(const cu_state *s, bool qks, char *buf, size_t n)
{
    const fck_attn_shape sh = shape_of(s);
    char res[256] = "";
    fck_decode_describe(fc_cuda_kdt(s->dt), sh, qks, res, sizeof res);
    snprintf(buf, n,
             "fusecal split-KV decode %s: each key/value head's keys shared out over blocks (its %d query rows' "
             "scores %s), %s; fp32 arithmetic, %s in memory%s [%s]",
             qks ? "qk_softmax" : "attention", s->group * s->S,
             qks ? "to an fp32 buffer, each split's max and sum" : "in shared memory, online softmax, P.V",
             qks ? "then P written once from them by a second kernel" : "the splits combined by a second kernel",
             s->dt == FC_TF32 ? "fp32" : fc_dtype_name(s->dt), s->causal ? ", causal" : "", res);
    return buf;
}

/* The fused form's GEMM (qk_scale), or its kernel: which one (run --kernel), what it
 * computes, its tensor-core instructions, and its tiling and resources as
 * fck_attention_resources_v reads them from the built kernel. */
static const char *fused_detail(const cu_state *s, fc_op op, char *buf, size_t n)
{
    const char *io = s->dt == FC_TF32 ? "fp32" : fc_dtype_name(s->dt);
    const char *ct = s->dt == FC_TF32 ? "COMPUTE_32F_FAST_TF32" : "COMPUTE_32F";
    const char *mma = s->dt == FC_FP32   ? "mma.sync m16n8k8 tf32, 3 products of split operands (fp32 accuracy)"
                      : s->dt == FC_TF32 ? "mma.sync m16n8k8 tf32"
                                         : "mma.sync m16n8k16 + ldmatrix";
    const char *name = fck_attention_kernel_name(s->kernel);
    char res[256] = "";
    switch (op) {
    case FC_OP_QK: {
        const char *alpha = fc_op_table_last(cu_ops, s->p.pat, FC_FUSE_FOLD);
        if (alpha)
            snprintf(buf, n, "cublasGemmStridedBatchedEx(QK^T, %s, %s, %s): the scale folded into the GEMM", alpha, io,
                     ct);
        else
            snprintf(buf, n, "cublasGemmStridedBatchedEx(QK^T, %s, %s)", io, ct);
        return buf;
    }
    case FC_OP_SOFTMAX:
        if (s->decode) return decode_detail(s, true, buf, n);
        fck_attention_resources_v(s->kernel, fc_cuda_kdt(s->dt), s->D, 1, res, sizeof res);
        snprintf(buf, n,
                 "fusecal qk_softmax kernel (%s): QK^T tiles on tensor cores (%s), row max/sum in a first sweep, P "
                 "written in a second%s [%s]",
                 name, mma, s->causal ? ", causal" : "", res);
        return buf;
    case FC_OP_PV:
        if (s->decode) return decode_detail(s, false, buf, n);
        fck_attention_resources_v(s->kernel, fc_cuda_kdt(s->dt), s->D, 0, res, sizeof res);
        snprintf(buf, n, "fusecal flash attention (%s): online softmax, S never written, tensor cores (%s)%s [%s]",
                 name, mma, s->causal ? ", causal (tiles above the diagonal skipped)" : "", res);
        return buf;
    default: return "?";
    }
}

static const char *cu_detail(const void *ctx, fc_variant v, fc_op op, char *buf, size_t n)
{
    return v == FC_UNFUSED ? unfused_detail(ctx, op, buf, n) : fused_detail(ctx, op, buf, n);
}

static void cu_describe(void *state, fc_variant v, fc_impl *impl)
{
    cu_state *s = state;
    const fc_pattern *pat = s->p.pat;
    memset(impl, 0, sizeof *impl);
    if (v == FC_UNFUSED) fc_impl_add_chain(impl, cu_ops, pat, cu_detail, s);
    else
        fc_impl_add_op(impl, cu_ops, fused_op(pat), FC_FUSED, cu_detail, s);
    impl->nkernels = v == FC_UNFUSED ? pat->nops : s->decode ? 2 : 1; /* decode: the splits, then the combine */
    if (v == FC_FUSED && fc_op_table_kernel(cu_ops, pat) >= 0)
        fc_strlcpy(impl->kernel, s->decode ? "decode" : fck_attention_kernel_name(s->kernel), sizeof impl->kernel);
}

static void cu_teardown(void *state)
{
    cu_state *s = state;
    if (!s) return;
    cudaStreamSynchronize(s->c->stream);
    fc_cuda_chain_free(&s->ch);
    fc_cuda_free(s->q);
    fc_cuda_free(s->k);
    fc_cuda_free(s->v);
    fc_cuda_free(s->ws);
    free(s);
}

static void cu_inventory(cJSON *libs)
{
    cJSON *o = cJSON_AddObjectToObject(libs, "fusecal_kernels");
    cJSON_AddStringToObject(o, "built_for", fck_arch());
}

const fc_backend fc_custom_attention = {
    .name = "cuda.custom",
    .device = "cuda",
    .summary =
        "cuBLAS GEMMs + fusecal softmax kernels; fused: GEMM with alpha, fused QK^T+softmax, flash attention "
        "(mma.sync; --kernel reference or flash2); split-KV decode kernels for s < 16",
    .available = fc_cuda_usable,
    .supports = cu_supports,
    .device_bytes = cu_device_bytes,
    .setup = cu_setup,
    .run = cu_run,
    .output = cu_output,
    .poison = cu_poison,
    .describe = cu_describe,
    .teardown = cu_teardown,
    .inventory = cu_inventory,
};
