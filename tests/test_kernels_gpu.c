/* test_kernels_gpu.c — fusecal's CUDA kernels called through their launchers
 * (kernels/fusecal_kernels.h), against float64 references computed on the host from the
 * very inputs the GPU read:
 *   attention   both kernels (reference, flash2), flash and qk_softmax, every dtype,
 *               d = 64 and 128, s = 33, 100 and 1024, causal or not;
 *   softmax     rows on both sides of every plan boundary (warp, block, two-pass;
 *               16-byte vectors and scalars), with -inf entries;
 *   affine      channel_affine in nchw and nhwc, each way it reads scale and shift,
 *               and the 64-bit path for unaligned tensors;
 *   gated unit  silu, mul and act-and-mul over [rows, 2n] products, n a whole number of
 *               16-byte vectors or not.
 * Outputs are poisoned with NaN first, so an element never written fails. Exits 77
 * (skipped) without a usable GPU.
 *   test_kernels_gpu [CASE] */
#include "fusecal_kernels.h"
#include "test.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

static const char *const dt_names[] = {"fp32", "tf32", "bf16", "fp16"};
static size_t esize(fck_dtype dt) { return dt == FCK_BF16 || dt == FCK_FP16 ? 2 : 4; }

#define CU(call)                                                                                    \
    do {                                                                                            \
        cudaError_t st_ = (call);                                                                   \
        if (st_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(st_)); \
            t_failures++;                                                                           \
            return;                                                                                 \
        }                                                                                           \
    } while (0)

/* ---------------------------------------------------------------- host conversions */

static float half_to_float(uint16_t h)
{
    const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return s ? -v : v;
}
/* x exactly representable in fp16 (or ±inf) */
static uint16_t float_to_half_exact(float x)
{
    uint16_t s = signbit(x) ? 0x8000 : 0;
    if (isinf(x)) return s | 0x7c00;
    if (x == 0.0f) return s;
    int e;
    float f = frexpf(fabsf(x), &e); /* |x| = f·2^e, f in [0.5, 1) */
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)((int)ldexpf(f, 11) & 0x3ff);
}
static double get(fck_dtype dt, const void *p, size_t i)
{
    if (esize(dt) == 4) return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    if (dt == FCK_FP16) return half_to_float(h);
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* x exactly representable in every storage type (or ±inf) */
static void put(fck_dtype dt, void *p, size_t i, float x)
{
    if (esize(dt) == 4) {
        ((float *)p)[i] = x;
    } else if (dt == FCK_FP16) {
        ((uint16_t *)p)[i] = float_to_half_exact(x);
    } else {
        uint32_t u;
        memcpy(&u, &x, 4);
        ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
    }
}

/* a device buffer of n elements filled with the kernels' own random fill, and its
 * float64 copy on the host */
static void *dev_random(fck_dtype dt, size_t n, unsigned long long seed, double **host)
{
    void *d = NULL, *h = malloc(n * esize(dt));
    *host = malloc(n * sizeof(double));
    if (cudaMalloc(&d, n * esize(dt)) != cudaSuccess ||
        fck_fill_uniform(dt, d, n, seed, -1.0f, 1.0f, 0) != cudaSuccess ||
        cudaMemcpy(h, d, n * esize(dt), cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "cannot make %zu random %s elements\n", n, dt_names[dt]);
        exit(1);
    }
    for (size_t i = 0; i < n; i++) (*host)[i] = get(dt, h, i);
    free(h);
    return d;
}

/* the device output, poisoned before the run: all-ones bits are NaN in every type */
static void *dev_poisoned(fck_dtype dt, size_t n)
{
    void *d = NULL;
    if (cudaMalloc(&d, n * esize(dt)) != cudaSuccess || cudaMemset(d, 0xff, n * esize(dt)) != cudaSuccess) exit(1);
    return d;
}

static double *download(fck_dtype dt, const void *d, size_t n)
{
    void *h = malloc(n * esize(dt));
    double *out = malloc(n * sizeof(double));
    if (cudaDeviceSynchronize() != cudaSuccess ||
        cudaMemcpy(h, d, n * esize(dt), cudaMemcpyDeviceToHost) != cudaSuccess) /* reads as NaN: fails the check */
        memset(h, 0xff, n * esize(dt));
    for (size_t i = 0; i < n; i++) out[i] = get(dt, h, i);
    free(h);
    return out;
}

/* ‖out − ref‖ / ‖ref‖, NaN when any output is not finite */
static double rel_err(const double *out, const double *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) return NAN;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return sqrt(num / (den > 0.0 ? den : 1.0));
}

/* ---------------------------------------------------------------- attention */

/* P and O of every head in float64 */
/* P and O of sh in float64: query head h reads key/value head h / group; causal: query i
 * sees keys j <= i + skv - s */
static void attention_ref(const double *q, const double *k, const double *v, const fck_attn_shape *sh, double *p,
                          double *o)
{
    const int s = sh->s, skv = sh->skv, d = sh->d;
    const double scale = 1.0 / sqrt((double)d);
    for (int h = 0; h < sh->bh; h++) {
        const size_t kvh = (size_t)(h / sh->group);
        const double *qh = q + (size_t)h * s * d, *kh = k + kvh * skv * d, *vh = v + kvh * skv * d;
        for (int i = 0; i < s; i++) {
            double *pr = p + ((size_t)h * s + i) * skv, m = -INFINITY, sum = 0.0;
            for (int j = 0; j < skv; j++) {
                double x = 0.0;
                for (int c = 0; c < d; c++) x += qh[(size_t)i * d + c] * kh[(size_t)j * d + c];
                pr[j] = sh->causal && j > i + skv - s ? -INFINITY : x * scale;
                if (pr[j] > m) m = pr[j];
            }
            for (int j = 0; j < skv; j++) sum += (pr[j] = exp(pr[j] - m));
            double *orow = o + ((size_t)h * s + i) * d;
            for (int c = 0; c < d; c++) orow[c] = 0.0;
            for (int j = 0; j < skv; j++) {
                pr[j] /= sum;
                for (int c = 0; c < d; c++) orow[c] += pr[j] * vh[(size_t)j * d + c];
            }
        }
    }
}

/* the check's tolerance for ‖out − ref‖/‖ref‖: fp32 (3xTF32) about fp32's rounding,
 * tf32 its 2^-11 operands, fp16 and bf16 their 2^-11 and 2^-8 storage (P included) */
static double attn_tol(fck_dtype dt)
{
    return dt == FCK_FP32 ? 2e-5 : dt == FCK_TF32 ? 3e-3 : dt == FCK_FP16 ? 5e-3 : 3e-2;
}

/* the entries of P (downloaded) that a causal mask hides and are not 0 */
static size_t masked_nonzero(const double *ph, const fck_attn_shape *sh)
{
    const int s = sh->s, skv = sh->skv;
    size_t n = 0;
    for (int h = 0; h < sh->bh && sh->causal; h++)
        for (int i = 0; i < s; i++)
            for (int j = i + skv - s + 1; j < skv; j++) n += ph[((size_t)h * s + i) * skv + j] != 0.0;
    return n;
}

/* Q, K, V of a shape on the device (random, from seed) and on the host, P and O in
 * float64 */
typedef struct attn_data {
    size_t nq, nkv, np;
    double *q, *k, *v, *pref, *oref;
    void *dq, *dk, *dv;
} attn_data;

static void attn_data_make(fck_dtype dt, const fck_attn_shape *sh, unsigned long long seed, attn_data *a)
{
    a->nq = (size_t)sh->bh * sh->s * sh->d;
    a->nkv = (size_t)(sh->bh / sh->group) * sh->skv * sh->d;
    a->np = (size_t)sh->bh * sh->s * sh->skv;
    a->dq = dev_random(dt, a->nq, seed + sh->s, &a->q);
    a->dk = dev_random(dt, a->nkv, seed + 11 + sh->d, &a->k);
    a->dv = dev_random(dt, a->nkv, seed + 22, &a->v);
    a->pref = malloc(a->np * sizeof(double));
    a->oref = malloc(a->nq * sizeof(double));
    attention_ref(a->q, a->k, a->v, sh, a->pref, a->oref);
}

static void attn_data_free(attn_data *a)
{
    free(a->q), free(a->k), free(a->v), free(a->pref), free(a->oref);
    cudaFree(a->dq), cudaFree(a->dk), cudaFree(a->dv);
}

static void check_attention(fck_dtype dt, const fck_attn_shape *sh)
{
    const int s = sh->s, skv = sh->skv, d = sh->d, causal = sh->causal;
    attn_data a;
    attn_data_make(dt, sh, 11, &a);
    const size_t nq = a.nq, np = a.np;
    for (int kern = 0; kern < FCK_ATTN_NKERNELS; kern++) {
        const char *name = fck_attention_kernel_name((fck_attn_kernel)kern);
        void *o = dev_poisoned(dt, nq), *p = dev_poisoned(dt, np);
        CU(fck_flash_attention_v((fck_attn_kernel)kern, dt, a.dq, a.dk, a.dv, o, *sh, 0));
        CU(fck_qk_softmax_v((fck_attn_kernel)kern, dt, a.dq, a.dk, p, *sh, 0));
        double *oh = download(dt, o, nq), *ph = download(dt, p, np);
        const double eo = rel_err(oh, a.oref, nq), ep = rel_err(ph, a.pref, np);
        CHECK_MSG(eo <= attn_tol(dt), "%s flash %s d=%d s=%d skv=%d group=%d causal=%d: error %.3g", name, dt_names[dt],
                  d, s, skv, sh->group, causal, eo);
        CHECK_MSG(ep <= attn_tol(dt), "%s qk_softmax %s d=%d s=%d skv=%d group=%d causal=%d: error %.3g", name,
                  dt_names[dt], d, s, skv, sh->group, causal, ep);
        const size_t nonzero_masked = masked_nonzero(ph, sh);
        CHECK_MSG(nonzero_masked == 0, "%s qk_softmax %s: %zu masked entries not 0", name, dt_names[dt],
                  nonzero_masked);
        free(oh);
        free(ph);
        cudaFree(o);
        cudaFree(p);
    }
    attn_data_free(&a);
}

static void test_attention(void)
{
    const int ss[] = {33, 100, 1024};
    for (int dt = FCK_FP32; dt <= FCK_FP16; dt++)
        for (int d = 64; d <= 128; d *= 2) {
            for (int si = 0; si < 3; si++)
                for (int causal = 0; causal < 2; causal++) {
                    const fck_attn_shape sh = {3, ss[si], ss[si], 1, d, causal};
                    check_attention((fck_dtype)dt, &sh);
                }
            /* grouped-query heads; a cached prefix (skv > s); keys fewer than queries */
            const fck_attn_shape gqa[] = {{8, 33, 50, 4, d, 1},
                                          {6, 100, 229, 2, d, 1},
                                          {4, 70, 40, 2, d, 0},
                                          {4, 16, 300, 4, d, 1}};
            for (int i = 0; i < 4; i++) check_attention((fck_dtype)dt, &gqa[i]);
        }
}

static void test_attention_args(void)
{
    char buf[256];
    for (int kern = 0; kern < FCK_ATTN_NKERNELS; kern++) {
        const char *name = fck_attention_kernel_name((fck_attn_kernel)kern);
        CHECK(name && fck_attention_kernel_parse(name) == kern);
        for (int dt = FCK_FP32; dt <= FCK_FP16; dt++)
            for (int d = 64; d <= 128; d *= 2)
                for (int qks = 0; qks < 2; qks++) {
                    fck_attention_resources_v((fck_attn_kernel)kern, (fck_dtype)dt, d, qks, buf, sizeof buf);
                    const char *b = strstr(buf, " blocks/SM");
                    int per_sm = 0;
                    while (b && b > buf && b[-1] >= '0' && b[-1] <= '9') b--;
                    if (b) per_sm = atoi(b);
                    CHECK_MSG(strstr(buf, ", 0 B local") && per_sm >= 1, "%s", buf);
                }
    }
    CHECK(fck_attention_kernel_name((fck_attn_kernel)FCK_ATTN_NKERNELS) == NULL);
    CHECK(fck_attention_kernel_parse("flash3") == -1);
    const fck_attn_shape d96 = {1, 16, 16, 1, 96, 0}, d64 = {1, 16, 16, 1, 64, 0};
    const fck_attn_shape odd_group = {6, 16, 16, 4, 64, 0}, short_causal = {1, 16, 8, 1, 64, 1};
    CHECK(fck_flash_attention_v(FCK_ATTN_FLASH2, FCK_BF16, NULL, NULL, NULL, NULL, d96, 0) == cudaErrorInvalidValue);
    CHECK(fck_qk_softmax_v((fck_attn_kernel)7, FCK_BF16, NULL, NULL, NULL, d64, 0) == cudaErrorInvalidValue);
    CHECK(fck_flash_attention_v(FCK_ATTN_REFERENCE, FCK_BF16, NULL, NULL, NULL, NULL, odd_group, 0) ==
          cudaErrorInvalidValue);
    CHECK(fck_qk_softmax_v(FCK_ATTN_FLASH2, FCK_BF16, NULL, NULL, NULL, short_causal, 0) == cudaErrorInvalidValue);
}

/* ---------------------------------------------------------------- decode attention */

/* fck_decode_attention and fck_decode_qk_softmax against float64 on decode shapes:
 * LLaMA's grouped heads against 4096 keys (causal and not), 16 rows per key/value head,
 * s > 1, d not a multiple of 32 (nor of 4), keys fewer than a split, a causal mask that hides the
 * last keys from the first query */
static void check_decode(fck_dtype dt, const fck_attn_shape *sh)
{
    const int s = sh->s, skv = sh->skv, d = sh->d, bh = sh->bh;
    attn_data a;
    attn_data_make(dt, sh, 44, &a);
    const size_t nq = a.nq, np = a.np;
    const size_t wsb = fck_decode_workspace(dt, *sh, 0), wsq = fck_decode_workspace(dt, *sh, 1);
    CHECK_MSG(wsb > 0 && wsq > wsb, "decode s=%d skv=%d group=%d d=%d: workspace %zu, %zu", s, skv, sh->group, d, wsb,
              wsq);
    void *ws = NULL, *o = dev_poisoned(dt, nq), *p = dev_poisoned(dt, np);
    CU(cudaMalloc(&ws, wsq ? wsq : 1));
    CU(fck_decode_attention(dt, a.dq, a.dk, a.dv, o, *sh, ws, wsb, 0));
    CU(fck_decode_qk_softmax(dt, a.dq, a.dk, p, *sh, ws, wsq, 0));
    CHECK(fck_decode_attention(dt, a.dq, a.dk, a.dv, o, *sh, ws, wsb - 1, 0) == cudaErrorInvalidValue);
    CHECK(fck_decode_qk_softmax(dt, a.dq, a.dk, p, *sh, ws, wsq - 1, 0) == cudaErrorInvalidValue);
    double *oh = download(dt, o, nq), *ph = download(dt, p, np);
    const double eo = rel_err(oh, a.oref, nq), ep = rel_err(ph, a.pref, np);
    for (int qks = 0; qks < 2; qks++) {
        char buf[256];
        fck_decode_describe(dt, *sh, qks, buf, sizeof buf);
        CHECK_MSG((qks ? ep : eo) <= attn_tol(dt),
                  "decode %s %s bh=%d s=%d skv=%d group=%d d=%d causal=%d: error %.3g [%s]",
                  qks ? "qk_softmax" : "attention", dt_names[dt], bh, s, skv, sh->group, d, sh->causal, qks ? ep : eo,
                  buf);
        CHECK_MSG(strstr(buf, ", 0 B local") && strstr(buf, " resident per SM on "), "%s", buf);
    }
    const size_t nonzero_masked = masked_nonzero(ph, sh);
    CHECK_MSG(nonzero_masked == 0, "decode qk_softmax %s: %zu masked entries not 0", dt_names[dt], nonzero_masked);
    free(oh), free(ph);
    cudaFree(o), cudaFree(p), cudaFree(ws);
    attn_data_free(&a);
}

static void test_decode(void)
{
    const fck_attn_shape shapes[] = {{8, 1, 4096, 4, 128, 0},
                                     {32, 1, 4096, 4, 128, 1},
                                     {6, 2, 3000, 3, 64, 1},
                                     {2, 1, 70, 1, 8, 0},
                                     {4, 3, 600, 2, 72, 1},
                                     {2, 5, 1500, 1, 64, 0},
                                     {16, 2, 700, 8, 20, 1},
                                     {8, 1, 40, 4, 64, 1},
                                     /* d not a multiple of 4: P·V's element-wise loads */
                                     {4, 2, 333, 2, 30, 1},
                                     {2, 1, 257, 1, 127, 0},
                                     /* 1056 heads of 16 rows: a split each, in pieces of
                                      * 512 keys (the running max rescaled between them) */
                                     {16896, 1, 1300, 16, 8, 0},
                                     /* the last split holds keys that rows 0-1 do not see */
                                     {2, 3, 129, 1, 64, 1},
                                     {4, 3, 65, 1, 16, 1}};
    const size_t nshapes = sizeof shapes / sizeof shapes[0];
    for (int dt = FCK_FP32; dt <= FCK_FP16; dt++)
        for (size_t i = 0; i < nshapes; i++) check_decode((fck_dtype)dt, &shapes[i]);
    /* some shape's splits run in more than one piece, whatever this GPU's SMs and
     * occupancy made the plans */
    int pieces = 0;
    for (size_t i = 0; i < nshapes; i++) {
        char buf[256];
        int ns = 0, chunk = 0, piece = 0;
        fck_decode_describe(FCK_FP32, shapes[i], 0, buf, sizeof buf);
        const char *at = strstr(buf, ">: ");
        if (at && sscanf(at, ">: %d splits of %d keys per key/value head in pieces of %d", &ns, &chunk, &piece) == 3 &&
            chunk > piece)
            pieces++;
    }
    CHECK_MSG(pieces > 0, "no decode test shape's split ran in more than one piece on this GPU");
    /* 17 rows per key/value head, d = 129, a causal mask over fewer keys than queries */
    const fck_attn_shape rows17 = {17, 1, 100, 17, 64, 0}, d129 = {2, 1, 100, 1, 129, 0},
                         short_kv = {1, 4, 3, 1, 64, 1};
    CHECK(fck_decode_workspace(FCK_BF16, rows17, 0) == 0 && fck_decode_workspace(FCK_FP32, d129, 1) == 0 &&
          fck_decode_workspace(FCK_FP16, short_kv, 0) == 0);
    CHECK(fck_decode_attention(FCK_BF16, NULL, NULL, NULL, NULL, rows17, NULL, 1 << 20, 0) == cudaErrorInvalidValue);
}

/* ---------------------------------------------------------------- row softmax */

static void test_softmax_rows(void)
{
    const size_t colss[] = {1, 7, 33, 512, 513, 1000, 1024, 1025, 4096, 4097, 16384, 16385, 32768, 32769};
    const fck_dtype dts[] = {FCK_FP32, FCK_BF16, FCK_FP16};
    const size_t rows = 5;
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (int di = 0; di < 3; di++) {
            const fck_dtype dt = dts[di];
            const size_t cols = colss[ci], n = rows * cols;
            void *hx = malloc(n * esize(dt)), *x = NULL;
            double *ref = malloc(n * sizeof(double));
            for (size_t i = 0; i < n; i++) /* multiples of 1/64 in [-4, 4]: exact in every type; some -inf */
                put(dt, hx, i,
                    (i % cols) % 13 == 5 && cols > 1 ? -INFINITY : (float)((int)(i * 2654435761u % 513) - 256) / 64);
            for (size_t r = 0; r < rows; r++) {
                double m = -INFINITY, sum = 0.0;
                for (size_t c = 0; c < cols; c++) m = fmax(m, get(dt, hx, r * cols + c));
                for (size_t c = 0; c < cols; c++) sum += (ref[r * cols + c] = exp(get(dt, hx, r * cols + c) - m));
                for (size_t c = 0; c < cols; c++) ref[r * cols + c] /= sum;
            }
            CU(cudaMalloc(&x, n * esize(dt)));
            CU(cudaMemcpy(x, hx, n * esize(dt), cudaMemcpyHostToDevice));
            void *y = dev_poisoned(dt, n);
            CU(fck_softmax_rows(dt, x, y, rows, cols, 0));
            double *out = download(dt, y, n);
            const double err = rel_err(out, ref, n), tol = dt == FCK_FP32 ? 1e-6 : dt == FCK_FP16 ? 1e-3 : 8e-3;
            char what[256];
            fck_softmax_rows_describe(dt, cols, what, sizeof what);
            CHECK_MSG(err <= tol, "softmax %s cols=%zu (%s): error %.3g", dt_names[dt], cols, what, err);
            /* in place, as the unfused chain may call it */
            CU(fck_softmax_rows(dt, x, x, rows, cols, 0));
            double *inplace = download(dt, x, n);
            CHECK_MSG(rel_err(inplace, ref, n) <= tol, "softmax in place %s cols=%zu", dt_names[dt], cols);
            const int two_pass = strstr(what, "two passes") != NULL, vec = (cols * esize(dt)) % 16 == 0;
            CHECK_MSG(two_pass == (cols > (vec ? 32768u : 16384u)), "%s", what); /* as far as rows fit in registers */
            free(out), free(inplace), free(hx), free(ref);
            cudaFree(x), cudaFree(y);
        }
}

/* ---------------------------------------------------------------- channel affine */

static void check_affine(fck_dtype dt, size_t n, size_t c, size_t hw, int nhwc, int relu, int scale_off, int x_off)
{
    const size_t total = n * c * hw;
    void *hx = malloc((total + 1) * esize(dt)), *x = NULL, *y = NULL;
    float *hs = malloc((2 * c + 2) * sizeof(float)), *params = NULL;
    double *ref = malloc(total * sizeof(double));
    for (size_t i = 0; i < total + 1; i++) put(dt, hx, i, (float)((int)(i * 40503u % 257) - 128) / 64);
    for (size_t i = 0; i < 2 * c + 2; i++) hs[i] = (float)((int)(i * 7u % 17) - 8) / 4;
    const float *scale = hs + scale_off, *shift = hs + scale_off + c;
    for (size_t i = 0; i < total; i++) {
        const size_t ch = nhwc ? i % c : (i / hw) % c;
        const double v = get(dt, hx, i + x_off) * scale[ch] + shift[ch];
        ref[i] = relu && v < 0 ? 0.0 : v;
    }
    CU(cudaMalloc(&x, (total + 1) * esize(dt)));
    CU(cudaMalloc((void **)&params, (2 * c + 2) * sizeof(float)));
    CU(cudaMemcpy(x, hx, (total + 1) * esize(dt), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(params, hs, (2 * c + 2) * sizeof(float), cudaMemcpyHostToDevice));
    y = dev_poisoned(dt, total + 1);
    char *xs = (char *)x + x_off * esize(dt), *ys = (char *)y + x_off * esize(dt);
    CU(fck_channel_affine(dt, xs, params + scale_off, params + scale_off + c, ys, n, c, hw, nhwc, relu, 0));
    double *all = download(dt, y, total + 1);
    const double err = rel_err(all + x_off, ref, total), tol = esize(dt) == 4 ? 1e-7 : dt == FCK_FP16 ? 1e-3 : 8e-3;
    CHECK_MSG(err <= tol, "affine %s n=%zu c=%zu hw=%zu nhwc=%d relu=%d scale+%d x+%d: error %.3g", dt_names[dt], n, c,
              hw, nhwc, relu, scale_off, x_off, err);
    CHECK(isnan(all[x_off ? 0 : total])); /* nothing written outside */
    free(all), free(hx), free(hs), free(ref);
    cudaFree(x), cudaFree(y), cudaFree(params);
}

static void test_channel_affine(void)
{
    const fck_dtype dts[] = {FCK_FP32, FCK_BF16, FCK_FP16};
    const size_t cs[] = {3, 8, 64}, hws[] = {49, 64, 56 * 56};
    for (int di = 0; di < 3; di++)
        for (size_t ci = 0; ci < 3; ci++)
            for (size_t hi = 0; hi < 3; hi++)
                for (int nhwc = 0; nhwc < 2; nhwc++) {
                    check_affine(dts[di], 2, cs[ci], hws[hi], nhwc, nhwc, 0, 0);  /* vectors: run/one/each */
                    check_affine(dts[di], 2, cs[ci], hws[hi], nhwc, !nhwc, 1, 0); /* scale, shift unaligned */
                    check_affine(dts[di], 1, cs[ci], hws[hi], nhwc, 1, 0, 1);     /* x, y unaligned: 64-bit path */
                }
}

/* ---------------------------------------------------------------- gated unit */

static double silu_ref(double x) { return x / (1.0 + exp(-x)); }

static void check_glu(fck_dtype dt, size_t rows, size_t n)
{
    double *gu, *sh;
    void *dgu = dev_random(dt, rows * 2 * n, 11 + n, &gu), *ds = dev_random(dt, rows * n, 12 + n, &sh);
    double *ref[3] = {malloc(rows * n * sizeof(double)), malloc(rows * n * sizeof(double)),
                      malloc(rows * n * sizeof(double))};
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < n; j++) {
            const double g = gu[i * 2 * n + j], u = gu[i * 2 * n + n + j];
            ref[0][i * n + j] = silu_ref(g);
            ref[1][i * n + j] = sh[i * n + j] * u;
            ref[2][i * n + j] = silu_ref(g) * u;
        }
    static const char *const names[3] = {"silu", "mul", "act-and-mul"};
    for (int op = 0; op < 3; op++) {
        void *y = dev_poisoned(dt, rows * n + 1); /* one element past the end: never written */
        cudaError_t st = op == 0   ? fck_glu_silu(dt, dgu, y, rows, n, 0)
                         : op == 1 ? fck_glu_mul(dt, ds, dgu, y, rows, n, 0)
                                   : fck_glu_act_mul(dt, dgu, y, rows, n, 0);
        CU(st);
        double *out = download(dt, y, rows * n + 1);
        const double err = rel_err(out, ref[op], rows * n), tol = esize(dt) == 4 ? 1e-6 : dt == FCK_FP16 ? 1e-3 : 8e-3;
        CHECK_MSG(err <= tol, "glu %s %s rows=%zu n=%zu: error %.3g", names[op], dt_names[dt], rows, n, err);
        CHECK_MSG(isnan(out[rows * n]), "glu %s %s n=%zu wrote past the end", names[op], dt_names[dt], n);
        free(out);
        cudaFree(y);
    }
    for (int op = 0; op < 3; op++) free(ref[op]);
    free(gu), free(sh);
    cudaFree(dgu), cudaFree(ds);
}

static void test_glu(void)
{
    const fck_dtype dts[] = {FCK_FP32, FCK_BF16, FCK_FP16};
    const size_t ns[] = {1, 7, 8, 13, 64, 1000, 4096, 11008};
    for (int di = 0; di < 3; di++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            check_glu(dts[di], 3, ns[ni]);
            check_glu(dts[di], 1, ns[ni]);
        }
    check_glu(FCK_BF16, 257, 11008); /* many rows of LLaMA-7B's FFN width */
}

/* fck_copy_passes: after an even number of passes the data is back in a, after an
 * odd number in b, unchanged, on sizes that leave blocks part-full; and it refuses
 * misaligned buffers and sizes. */
static void test_copy_passes(void)
{
    const size_t sizes[] = {32, 16 * 1000, 16 * 4096 * 7, (size_t)3 << 20};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int passes = 1; passes <= 4; passes++) {
            size_t half = sizes[si] / 2, n = half / 4;
            unsigned *h = malloc(half), *back = malloc(half);
            for (size_t i = 0; i < n; i++) h[i] = (unsigned)(i * 2654435761u);
            void *a = NULL, *b = NULL;
            CHECK(cudaMalloc(&a, half) == cudaSuccess && cudaMalloc(&b, half) == cudaSuccess);
            CHECK(cudaMemcpy(a, h, half, cudaMemcpyHostToDevice) == cudaSuccess);
            CHECK(cudaMemset(b, 0, half) == cudaSuccess);
            CHECK(fck_copy_passes(a, b, sizes[si], passes, 132, 0) == cudaSuccess);
            CHECK(cudaMemcpy(back, (passes & 1) ? b : a, half, cudaMemcpyDeviceToHost) == cudaSuccess);
            CHECK_MSG(memcmp(back, h, half) == 0, "copy_passes %zu bytes, %d passes: data changed", sizes[si], passes);
            if (si == 0 && passes == 1) {
                CHECK(fck_copy_passes((char *)a + 4, b, 64, 1, 132, 0) == cudaErrorInvalidValue);
                CHECK(fck_copy_passes(a, b, 48, 1, 132, 0) == cudaErrorInvalidValue);
                CHECK(fck_copy_passes(a, b, 64, 0, 132, 0) == cudaErrorInvalidValue);
            }
            cudaFree(a), cudaFree(b);
            free(h), free(back);
        }
}

/* fck_read_passes: every 16-byte vector of both buffers is read once a pass, by a
 * different thread in each pass (one marked vector, everything else zero: with one
 * pass its thread's XOR is the mark, and so is each of two passes' threads', where a
 * thread that read it twice would hold 0); the sink is written only for `never`;
 * bad arguments refused. */
static void read_marked(size_t bytes, size_t mark, int passes, unsigned never, unsigned want)
{
    size_t half = bytes / 2;
    void *a = NULL, *b = NULL;
    unsigned *sink = NULL, got = 0, m[4] = {0x1234567u, 0, 0, 0};
    CHECK(cudaMalloc(&a, half) == cudaSuccess && cudaMalloc(&b, half) == cudaSuccess &&
          cudaMalloc((void **)&sink, sizeof got) == cudaSuccess);
    CHECK(cudaMemset(a, 0, half) == cudaSuccess && cudaMemset(b, 0, half) == cudaSuccess);
    CHECK(cudaMemset(sink, 0, sizeof got) == cudaSuccess);
    char *where = mark < half ? (char *)a + mark : (char *)b + (mark - half);
    CHECK(cudaMemcpy(where, m, sizeof m, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(fck_read_passes(a, b, bytes, passes, 2, never, sink, 0) == cudaSuccess);
    CHECK(cudaMemcpy(&got, sink, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(got == want, "read_passes %zu bytes, mark at %zu, %d passes, never %#x: sink %#x, want %#x", bytes, mark,
              passes, never, got, want);
    cudaFree(a), cudaFree(b), cudaFree(sink);
}

static void test_read_passes(void)
{
    const unsigned mk = 0x1234567u;
    const size_t sizes[] = {32, 16 * 1000, 16 * 4096 * 7 * 2, (size_t)3 << 20};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t bytes = sizes[si], marks[] = {0, bytes / 2 - 16, bytes / 2, bytes - 16, (bytes / 32) * 16 / 3 * 2};
        for (size_t k = 0; k < sizeof marks / sizeof marks[0]; k++) {
            const size_t mark = marks[k] & ~(size_t)15;
            read_marked(bytes, mark, 1, mk, mk);
            read_marked(bytes, mark, 1, mk ^ 1, 0);
            /* two passes on a grid of more than one block (2 SMs: up to 16 blocks of 256) */
            if (bytes / 2 / 16 > 256) read_marked(bytes, mark, 2, mk, mk);
        }
    }
    void *a = NULL;
    unsigned *sink = NULL;
    CHECK(cudaMalloc(&a, 256) == cudaSuccess && cudaMalloc((void **)&sink, 4) == cudaSuccess);
    CHECK(fck_read_passes((char *)a + 4, a, 64, 1, 2, 0, sink, 0) == cudaErrorInvalidValue);
    CHECK(fck_read_passes(a, a, 48, 1, 2, 0, sink, 0) == cudaErrorInvalidValue);
    CHECK(fck_read_passes(a, a, 64, 0, 2, 0, sink, 0) == cudaErrorInvalidValue);
    CHECK(fck_read_passes(a, a, 64, 1, 2, 0, NULL, 0) == cudaErrorInvalidValue);
    cudaFree(a), cudaFree(sink);
}

/* fck_fma_peak: thread 0's chains are the host's fmaf chains, bit for bit (no FMA
 * dropped or folded); the FLOPs counted are those launched; bad arguments refused. */
static void test_fma_peak(void)
{
    float *sink = NULL, got[2] = {0, 0};
    CHECK(cudaMalloc((void **)&sink, sizeof got) == cudaSuccess);
    for (int iters = 0; iters <= 160; iters += 32) {
        CHECK(cudaMemset(sink, 0, sizeof got) == cudaSuccess);
        double flops = 0;
        CHECK(fck_fma_peak(iters, 0.999f, 1e-3f, 3, sink, &flops, 0) == cudaSuccess);
        CHECK(cudaMemcpy(got, sink, sizeof got, cudaMemcpyDeviceToHost) == cudaSuccess);
        float want = 0;
        for (int c = 0; c < 8; c++) {
            float a = (float)c;
            for (int i = 0; i < iters; i++) a = fmaf(a, 0.999f, 1e-3f);
            want += a;
        }
        CHECK_MSG(got[0] == want && got[1] == 0, "%d iterations: %.9g, host %.9g (sink[1] %g)", iters, got[0], want,
                  got[1]);
        CHECK(flops == 2.0 * 8 * iters * 3 * 8 * 256);
    }
    CHECK(fck_fma_peak(24, 1, 1, 3, sink, NULL, 0) == cudaErrorInvalidValue);
    CHECK(fck_fma_peak(32, 1, 1, 0, sink, NULL, 0) == cudaErrorInvalidValue);
    CHECK(fck_fma_peak(32, 1, 1, 3, NULL, NULL, 0) == cudaErrorInvalidValue);
    cudaFree(sink);
}

int main(int argc, char **argv)
{
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || count < 1) {
        printf("skipped: no usable CUDA driver or GPU (%s)\n",
               st != cudaSuccess ? cudaGetErrorString(st) : "the driver reports none");
        return 77;
    }
    if ((st = fck_probe()) != cudaSuccess) {
        printf("skipped: fusecal's CUDA kernels cannot run on this GPU: %s (built for %s)\n", cudaGetErrorString(st),
               fck_arch());
        return 77;
    }
    static const t_case cases[] = {T(test_attention_args), T(test_attention),      T(test_decode),
                                   T(test_softmax_rows),   T(test_channel_affine), T(test_glu),
                                   T(test_copy_passes),    T(test_read_passes),    T(test_fma_peak)};
    return t_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
