/* cpu_ops.h — host kernels built on OpenBLAS and OpenMP: the elementwise passes of
 * unfused chains (one parallel loop each, as an eager framework runs them) and the
 * fused forms (GEMM blocks that apply their epilogue while still in cache, a blocked
 * im2col convolution; the attention family's kernels are in attention_ops.h). All run on
 * the one OpenMP pool; OpenBLAS calls made inside a parallel region run on the
 * calling thread. */
#ifndef FC_CPU_OPS_H
#define FC_CPU_OPS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { FC_ACT_NONE, FC_ACT_RELU, FC_ACT_GELU } fc_act;

/* What a fused GEMM or conv applies to each output block before it leaves cache:
 * y = act(y + bias[channel] + resid). */
typedef struct fc_epilogue {
    const float *bias;  /* per output channel, or NULL */
    const float *resid; /* same shape and leading dimension as the output, or NULL */
    fc_act act;
} fc_epilogue;

/* ---- host buffers: 64-byte aligned, every page mapped (zeroed) before timing */
float *fc_cpu_buffer(size_t n);
void fc_cpu_fill_nan(float *p, size_t n);

/* ---- elementwise passes over a tensor viewed as [outer, C, inner] (channel = C) */
void fc_cpu_bias(const float *in, const float *bias, float *out, size_t outer, size_t C, size_t inner);
/* inference batch norm: out = (in − μ)·γ/√(σ²+ε) + β, per channel; scratch holds 2C floats */
void fc_cpu_batchnorm(const float *in, const float *gamma, const float *beta, const float *mean, const float *var,
                      float eps, float *out, size_t outer, size_t C, size_t inner, float *scratch);
void fc_cpu_add(const float *a, const float *b, float *out, size_t n);
void fc_cpu_relu(const float *in, float *out, size_t n);
void fc_cpu_gelu(const float *in, float *out, size_t n);
/* row softmax of [rows, cols] */
void fc_cpu_softmax_rows(const float *in, float *out, size_t rows, size_t cols);

/* ---- serial vector spans, for blocked kernels inside their own parallel loop */
void fc_cpu_gelu_span(const float *in, float *out, size_t n);                    /* out = gelu_tanh(in) */
void fc_cpu_silu_span(const float *in, float *out, size_t n);                    /* out = in/(1 + e^−in) */
void fc_cpu_silu_mul_span(const float *g, const float *u, float *out, size_t n); /* out = silu(g)·u */

/* ---- GEMM: C[M,N] = A[M,K] · B[N,K]ᵀ (row-major), plain (OpenBLAS threads) */
void fc_cpu_gemm_nt(int M, int N, int K, const float *A, const float *B, float *C);
/* The same in cache-sized blocks, each finished by the epilogue while hot; the bias
 * and residual enter each block's sgemm as its C (fc_cpu_gemm_c_init, beta = 1). */
void fc_cpu_gemm_nt_fused(int M, int N, int K, const float *A, const float *B, float *C, const fc_epilogue *ep);
/* The same with a chosen C-block size in bytes (for tuning). */
void fc_cpu_gemm_nt_fused_blocks(int M, int N, int K, const float *A, const float *B, float *C, const fc_epilogue *ep,
                                 size_t block_bytes);
/* The blocks of a blocked GEMM or conv, *mb × *nb of an M × N output (outer times
 * over, a conv's images), for nt threads under OpenMP's static schedule: each side's
 * blocks made equal (multiples of 16 but the last), then the rows' (grow_cols false)
 * or the columns' block cut smaller, not below min_block, until the blocks spread
 * over the threads within 10 % (the least uneven count if none does): LLaMA's FFN
 * width of 14336 in blocks of 4096 was 4096, 4096, 4096 and 2048, two threads doing
 * 8192 and 6144 columns. */
void fc_cpu_balance_blocks(int outer, int M, int N, int nt, bool grow_cols, int min_block, int *mb, int *nb);
/* Blocks of b that cover n; v rounded down to a multiple of m, and at least m. */
static inline int fc_cpu_count_blocks(int n, int b) { return (n + b - 1) / b; }
static inline int fc_cpu_round_down(int v, int m) { return v < m ? m : v / m * m; }
/* C = bias + resid over a rows×cols block of leading dimension ld (either may be
 * NULL, not both), for an sgemm with beta = 1 to add its product to, as addmm does:
 * no pass zeroes C first and none adds them after. */
void fc_cpu_gemm_c_init(float *C, size_t ld, int rows, int cols, const float *bias, const float *resid);

/* ---- convolution by blocked im2col + sgemm, one sgemm per group; the same driver
 * serves the unfused conv (epilogue = its bias) and the fused one (folded bias,
 * residual, activation). The bias (per output channel: per column of an NHWC block,
 * per row of an NCHW one) and the residual are each block's C, beta = 1, as for the
 * fused GEMM; the activation runs on the block in cache. The blocks of pixels are
 * equal, and split along the output channels too when they are fewer than the
 * threads or spread unevenly over them. A depthwise conv (g = c = k) runs fusecal's
 * direct kernel instead (im2col would copy each input nine times for nine
 * multiply-adds), and so does a 3x3 conv that fusecal's direct 3x3 kernel takes
 * (fc_cpu_dconv_applies: its register tiles outrun the sgemm on im2col's columns). */
typedef struct fc_conv_geom {
    int n, c, h, w, k, r, s, stride, pad, p, q;
    bool nhwc;
    int g; /* groups */
} fc_conv_geom;
bool fc_cpu_conv_is_depthwise(const fc_conv_geom *g);
/* Weights (OIHW, [k][c/g][r][s]) in the order the driver wants: [k][r][s][c/g] for
 * NHWC, as given for NCHW; depthwise: [r][s][c] for NHWC, [c][r][s] for NCHW. */
void fc_cpu_conv_pack_weights(const fc_conv_geom *g, const float *w_kcrs, float *packed);
/* Floats of workspace the conv needs on a team of nthreads OpenMP threads (the team
 * fc_cpu_conv runs): what each thread uses alone (im2col columns, input rows) times
 * nthreads, or one copy of the image that the team shares. */
size_t fc_cpu_conv_workspace(const fc_conv_geom *g, int nthreads);
void fc_cpu_conv(const fc_conv_geom *g, const float *x, const float *wpacked, float *y, const fc_epilogue *ep,
                 float *ws, int nthreads);
/* The direct depthwise conv (cpu_dwconv.c): y = act(conv(x, W) + bias + resid), act
 * none or ReLU, the epilogue applied as each output vector is made. */
void fc_cpu_dwconv_pack_weights(const fc_conv_geom *g, const float *w_crs, float *packed);
/* ws: fc_cpu_dwconv_workspace(g, nthreads) floats for a team of nthreads (NCHW: each
 * thread's padded input rows; NHWC needs none) */
size_t fc_cpu_dwconv_workspace(const fc_conv_geom *g, int nthreads);
void fc_cpu_dwconv(const fc_conv_geom *g, const float *x, const float *wpacked, float *y, const fc_epilogue *ep,
                   float *ws);
/* The direct 3x3 conv (cpu_dconv.c) where it applies (no groups, 3x3, padding 1,
 * stride 1 or 2; NHWC with c a multiple of 8 and k of two vectors; NCHW the same, or
 * any c with k a multiple of its padded-copy tile's channels): y = act(conv(x, W) +
 * bias + resid), the epilogue applied as the tile is stored. Weights as fc_cpu_dconv_pack_weights lays them; ws:
 * fc_cpu_dconv_workspace(g, nthreads) floats for a team of nthreads (the register
 * tiles: each thread's ring of padded input rows, or one padded copy of the image that
 * the team shares; NCHW's padded-copy tiles: one copy of the image). */
bool fc_cpu_dconv_applies(const fc_conv_geom *g);
void fc_cpu_dconv_describe(const fc_conv_geom *g, char *buf, size_t n);
void fc_cpu_dconv_pack_weights(const fc_conv_geom *g, const float *w_kcrs, float *packed);
size_t fc_cpu_dconv_workspace(const fc_conv_geom *g, int nthreads);
void fc_cpu_dconv(const fc_conv_geom *g, const float *x, const float *wpacked, float *y, const fc_epilogue *ep,
                  float *ws);

#endif
