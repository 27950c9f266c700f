/* test_cuda_host.c — the host logic of the CUDA backends, on any machine (no GPU
 * needed; built with CUDA): what a library declining a problem turns into (the
 * record skipped with its reason, recognised by the conformance test), run
 * --kernel's names against the kernels', and which problems cuda.custom takes. */
#include "builtin.h"
#include "conformance.h"
#include "cuda_common.h"
#include "test.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The bandwidth beside a round: the device offers it; its footprints lie in the
 * curve's range (1 MiB to 4x the L2), in 32-byte steps, the asked one where it can. */
static void beside_footprints(void)
{
    CHECK(fc_builtin.device[FC_DEV_cuda] && fc_builtin.device[FC_DEV_cuda]->stream_at != NULL);
    const size_t l2 = (size_t)50 << 20, odd = ((size_t)40 << 20) + 5;
    CHECK(fc_cuda_beside_footprint(1000, l2) == (size_t)1 << 20);
    CHECK(fc_cuda_beside_footprint(0, l2) == (size_t)1 << 20);
    CHECK(fc_cuda_beside_footprint(3.0 * (1 << 20) + 7, l2) == (size_t)3 << 20);
    CHECK(fc_cuda_beside_footprint(12345678, l2) == 12345664);
    CHECK(fc_cuda_beside_footprint(4.0 * l2, l2) == 4 * l2);
    CHECK(fc_cuda_beside_footprint(1e12, l2) == 4 * l2);
    CHECK(fc_cuda_beside_footprint(1e12, odd) == (4 * odd & ~(size_t)31));
    for (double fp = 1; fp < 1e10; fp *= 3.7) {
        const size_t b = fc_cuda_beside_footprint(fp, odd);
        CHECK(b % 32 == 0 && b >= (size_t)1 << 20 && b <= 4 * odd);
        if (fp >= (1 << 20) && fp <= 4.0 * odd) CHECK(fp - (double)b < 32);
    }
}

static fc_problem problem(const char *s)
{
    fc_problem p;
    fc_err e;
    if (fc_problem_parse(s, NULL, &p, &e) != 0) {
        fprintf(stderr, "bad problem '%s': %s\n", s, e.msg);
        exit(1);
    }
    return p;
}

/* cuBLASLt's heuristic: an algorithm found is setup going on; NOT_SUPPORTED or none
 * found is the library declining (FC_DECLINED, the status named); anything else is
 * an error naming the status. */
static void cublaslt_no_algorithm_declines(void)
{
    fc_err e = {{0}};
    CHECK(fc_cublaslt_heuristic_verdict(CUBLAS_STATUS_SUCCESS, 3, "a matmul", &e) == 0);

    CHECK(fc_cublaslt_heuristic_verdict(CUBLAS_STATUS_NOT_SUPPORTED, 0, "a bf16 7x13x5 matmul", &e) == FC_DECLINED);
    CHECK_STR_CONTAINS(e.msg, "has no algorithm for a bf16 7x13x5 matmul");
    CHECK_STR_CONTAINS(e.msg, "CUBLAS_STATUS_NOT_SUPPORTED");

    CHECK(fc_cublaslt_heuristic_verdict(CUBLAS_STATUS_SUCCESS, 0, "a matmul", &e) == FC_DECLINED);
    CHECK_STR_CONTAINS(e.msg, "has no algorithm");
    CHECK_STR_CONTAINS(e.msg, "CUBLAS_STATUS_SUCCESS, 0 candidates");

    CHECK(fc_cublaslt_heuristic_verdict(CUBLAS_STATUS_INVALID_VALUE, 0, "a matmul", &e) == -1);
    CHECK_STR_CONTAINS(e.msg, "CUBLAS_STATUS_INVALID_VALUE");
    CHECK_STR_CONTAINS(e.msg, cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE));
}

/* The conformance test lets a library decline only 16-bit or tf32 problems with a
 * channel-like dimension that is not a multiple of 8. */
static void conformance_knows_refusals(void)
{
    fc_err e = {{0}};
    int rc = fc_cublaslt_heuristic_verdict(CUBLAS_STATUS_NOT_SUPPORTED, 0, "a matmul", &e);
    fc_problem odd = problem("linear_bias:m=7,k=13,n=5,dtype=bf16");
    CHECK(fc_conf_library_refusal(&odd, rc, e.msg));
    fc_problem odd_tf32 = problem("linear_bias_gelu:m=33,k=65,n=17,dtype=tf32");
    CHECK(fc_conf_library_refusal(&odd_tf32, rc, e.msg));
    fc_problem fp32 = problem("linear_bias:m=7,k=13,n=5,dtype=fp32");
    CHECK(!fc_conf_library_refusal(&fp32, rc, e.msg));
    fc_problem even = problem("linear_bias:m=64,k=128,n=256,dtype=bf16");
    CHECK(!fc_conf_library_refusal(&even, rc, e.msg));
    /* a conv's batch is not a channel */
    fc_problem conv = problem("conv_bn:n=3,c=16,h=7,w=7,k=32,r=3,s=3,pad=1,layout=nhwc,dtype=fp16");
    CHECK(!fc_conf_library_refusal(&conv, FC_DECLINED, "cuDNN found no usable fp16 convolution algorithm"));
    fc_problem conv_odd = problem("conv_bn:n=2,c=3,h=7,w=7,k=5,r=3,s=3,pad=1,layout=nhwc,dtype=fp16");
    CHECK(fc_conf_library_refusal(&conv_odd, FC_DECLINED, "cuDNN found no usable fp16 convolution algorithm"));
    /* an error is not a refusal, whatever the shape */
    CHECK(!fc_conf_library_refusal(&odd, -1, "CUDA call cudaMalloc failed at x.c:1: out of memory"));
    CHECK(fc_conf_library_refusal(&odd, -1,
                                  "cuDNN call cudnnFindConvolutionForwardAlgorithmEx failed at "
                                  "backend_cudnn.c:1: CUDNN_STATUS_NOT_SUPPORTED"));
}

/* run --kernel's words are the kernels' own names, in fck_attn_kernel's order */
static void attention_kernel_names(void)
{
    CHECK(fc_attn_kernel_words.n == FCK_ATTN_NKERNELS);
    for (int i = 0; i < fc_attn_kernel_words.n; i++) {
        const char *name = fck_attention_kernel_name((fck_attn_kernel)i);
        CHECK_MSG(name && !strcmp(name, fc_attn_kernel_words.names[i]), "kernel %d: '%s' vs '%s'", i,
                  name ? name : "(null)", fc_attn_kernel_words.names[i]);
        CHECK(fck_attention_kernel_parse(fc_attn_kernel_words.names[i]) == i);
    }
    CHECK(fck_attention_kernel_name((fck_attn_kernel)FCK_ATTN_NKERNELS) == NULL);
    CHECK(fck_attention_kernel_parse("flash3") == -1);
}

/* cuda.custom: the fused kernels take d = 64 and 128 and as many query tiles as a 1-D
 * grid holds (2^31 - 1 blocks of 64 queries), not 65535; qk_scale takes any d. */
static void custom_supports(void)
{
    const fc_backend *b = fc_builtin.backend[FC_BK_cuda_custom];
    CHECK(b != NULL);
    if (!b) return;
    char why[256] = "";
    fc_problem long_s = problem("attention:b=1,h=1,s=4200000,d=64,dtype=bf16"); /* 65625 query tiles */
    CHECK_MSG(b->supports(&long_s, why, sizeof why), "%s", why);
    fc_problem too_many = problem("qk_softmax:b=65536,h=1024,s=4096,d=64,dtype=bf16");
    why[0] = 0;
    CHECK(!b->supports(&too_many, why, sizeof why));
    CHECK_STR_CONTAINS(why, "1-D grid");
    fc_problem d32 = problem("attention:b=1,h=2,s=40,d=32,dtype=fp16");
    CHECK(!b->supports(&d32, why, sizeof why));
    CHECK_STR_CONTAINS(why, "head dimensions 64 and 128");
    fc_problem qks = problem("qk_scale:b=1,h=2,s=40,d=32,dtype=fp16");
    CHECK(b->supports(&qks, why, sizeof why));
    /* s < 16: the split-KV decode kernels up to 16 query rows a key/value head and d up
     * to 128; past 16 rows the flash kernels at d = 64 or 128; neither at 24 rows of 96 */
    const char *dec_ok[] = {"attention:b=1,h=32,hkv=8,s=1,skv=4096,d=96,dtype=bf16",
                            "attention:b=1,h=8,hkv=1,s=3,skv=90,d=64,causal=1,dtype=fp16",
                            "qk_softmax:b=2,h=32,hkv=1,s=1,skv=500,d=128,dtype=fp32"};
    for (size_t i = 0; i < sizeof dec_ok / sizeof dec_ok[0]; i++) {
        fc_problem p = problem(dec_ok[i]);
        why[0] = 0;
        CHECK_MSG(b->supports(&p, why, sizeof why), "%s: %s", dec_ok[i], why);
    }
    fc_problem dec_no = problem("attention:b=1,h=8,hkv=1,s=3,skv=90,d=96,dtype=bf16");
    why[0] = 0;
    CHECK(!b->supports(&dec_no, why, sizeof why));
    CHECK_STR_CONTAINS(why, "at most 16 query rows");
    CHECK_STR_CONTAINS(why, "head dimensions 64 and 128");
}

/* cuda.custom's linear part: gelu_linear and linear_swiglu in bf16 and fp16 on any shape,
 * fp32 and tf32 turned down to cuda.cublas, the epilogue patterns too. */
static void custom_linear_supports(void)
{
    const fc_backend *b = fc_builtin.backend[FC_BK_cuda_custom];
    CHECK(b != NULL);
    if (!b) return;
    static const char *const ok[] = {"gelu_linear:m=7,k=13,n=5,dtype=bf16", "gelu_linear:m=1,k=1,n=4,dtype=fp16",
                                     "gelu_linear:m=16384,k=3072,n=768,dtype=bf16",
                                     "linear_swiglu:m=7,k=13,n=5,dtype=fp16",
                                     "linear_swiglu:m=2048,k=4096,n=14336,dtype=bf16"};
    for (size_t i = 0; i < FC_ARRAY_LEN(ok); i++) {
        char why[256] = "";
        fc_problem p = problem(ok[i]);
        CHECK_MSG(b->supports(&p, why, sizeof why), "%s: %s", ok[i], why);
    }
    static const char *const no[][2] = {{"gelu_linear:m=7,k=13,n=5,dtype=fp32", "16-bit operands"},
                                        {"gelu_linear:m=7,k=13,n=5,dtype=tf32", "16-bit operands"},
                                        {"linear_swiglu:m=7,k=13,n=5,dtype=fp32", "16-bit operands"},
                                        {"linear_bias:m=7,k=13,n=5,dtype=bf16", "cuda.cublas"},
                                        {"linear_bias_gelu:m=7,k=13,n=5,dtype=fp16", "cuda.cublas"},
                                        {"gelu_linear:m=2147483647,k=1,n=32768,dtype=bf16", "1-D grid"}};
    for (size_t i = 0; i < FC_ARRAY_LEN(no); i++) {
        char why[256] = "";
        fc_problem p = problem(no[i][0]);
        CHECK_MSG(!b->supports(&p, why, sizeof why), "%s taken", no[i][0]);
        CHECK_STR_CONTAINS(why, no[i][1]);
    }
    CHECK(fck_gemm_supports(FCK_BF16, FCK_GEMM_GELU_BIAS, 7, 5, 13) &&
          fck_gemm_supports(FCK_FP16, FCK_GEMM_PLAIN, 1, 1, 1));
    CHECK(!fck_gemm_supports(FCK_FP32, FCK_GEMM_PLAIN, 7, 5, 13) &&
          !fck_gemm_supports(FCK_TF32, FCK_GEMM_SWIGLU, 7, 5, 13));
    CHECK(!fck_gemm_supports(FCK_BF16, FCK_GEMM_PLAIN, 0, 5, 13) &&
          !fck_gemm_supports(FCK_BF16, FCK_GEMM_PLAIN, 7, 5, 0));
    CHECK(!fck_gemm_supports(FCK_BF16, (fck_gemm_mode)3, 7, 5, 13));
    /* the gated W has 2n rows: n = 2^30 is one too many for 32-bit rows, plain takes it */
    CHECK(!fck_gemm_supports(FCK_BF16, FCK_GEMM_SWIGLU, 1, 1LL << 30, 8) &&
          fck_gemm_supports(FCK_BF16, FCK_GEMM_PLAIN, 1, 1LL << 30, 8));
}

/* cuda.cublas takes gelu_linear in every dtype, its GELU prologue on blocks of x rows
 * sized to a quarter of the L2 (fc_cuda_prologue_rows): whole multiples of 128 rows,
 * so every block's offset in x and in y is 256-byte aligned, or all the rows. */
static void cublas_prologue_blocks(void)
{
    const fc_backend *b = fc_builtin.backend[FC_BK_cuda_cublas];
    CHECK(b != NULL);
    if (!b) return;
    static const char *const dts[] = {"fp32", "tf32", "bf16", "fp16"};
    for (int i = 0; i < 4; i++) {
        char s[96], why[256] = "";
        snprintf(s, sizeof s, "gelu_linear:m=7,k=13,n=5,dtype=%s", dts[i]);
        fc_problem p = problem(s);
        CHECK_MSG(b->supports(&p, why, sizeof why), "%s: %s", s, why);
    }
    const size_t h100 = 50u << 20;                             /* the H100's 50 MiB L2 */
    CHECK(fc_cuda_prologue_rows(4096, 3072, 2, h100) == 2048); /* 12 MiB of the 12.5 a quarter holds */
    CHECK(fc_cuda_prologue_rows(1000, 3072, 2, h100) == 1000);
    CHECK(fc_cuda_prologue_rows(7, 13, 4, h100) == 7);
    CHECK(fc_cuda_prologue_rows(100000, 1 << 20, 4, h100) == 128); /* a row of 4 MiB: the floor */
    uint64_t r = 12345;
    for (int t = 0; t < 20000; t++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        const size_t m = 1 + (r >> 33) % 300000, k = 1 + (r >> 17) % 20000, e = (r & 1) ? 2 : 4;
        const size_t l2 = ((size_t)1 << (20 + (r >> 60) % 8)) + (r >> 40) % 4096;
        const size_t rows = fc_cuda_prologue_rows(m, k, e, l2), nblk = (m + rows - 1) / rows;
        CHECK_MSG(rows >= 1 && rows <= m, "m=%zu k=%zu: %zu rows", m, k, rows);
        CHECK_MSG(nblk * rows >= m && (nblk - 1) * rows < m, "m=%zu: %zu blocks of %zu", m, nblk, rows);
        if (rows == m) continue;
        CHECK_MSG(rows % 128 == 0, "m=%zu k=%zu: %zu rows", m, k, rows);
        CHECK_MSG(rows == 128 || rows * k * e <= l2 / 4, "m=%zu k=%zu e=%zu l2=%zu: %zu rows", m, k, e, l2, rows);
        CHECK_MSG(rows * k * e % 256 == 0 && rows * 5 * e % 256 == 0, "m=%zu k=%zu e=%zu: %zu rows", m, k, e, rows);
        if (t_failures > 10) return;
    }
}

/* The context's layout is the same here (no FUSECAL_WITH_CUDNN) as in the library
 * that fills it: test_gpu reads its fields. */
static void ctx_layout_matches_library(void)
{
    size_t size = 0, last = 0;
    fc_cuda_ctx_layout(&size, &last);
    CHECK_MSG(size == sizeof(fc_cuda_ctx), "library %zu B, here %zu B", size, sizeof(fc_cuda_ctx));
    CHECK_MSG(last == offsetof(fc_cuda_ctx, nvml_driver), "nvml_driver at %zu in the library, %zu here", last,
              offsetof(fc_cuda_ctx, nvml_driver));
}

/* cuDNN's statuses: BAD_PARAM and NOT_SUPPORTED, with their sub-statuses, refuse (the
 * next algorithm is tried, or the record skipped); success, INTERNAL_ERROR,
 * EXECUTION_FAILED and the rest do not (values of cudnn_graph.h's cudnnStatus_t). */
static void cudnn_refusals(void)
{
    CHECK(fc_cudnn_refuses(2000) && fc_cudnn_refuses(2002) && fc_cudnn_refuses(3000) && fc_cudnn_refuses(3007));
    CHECK(!fc_cudnn_refuses(0) && !fc_cudnn_refuses(1001) && !fc_cudnn_refuses(4000) && !fc_cudnn_refuses(4003) &&
          !fc_cudnn_refuses(5000) && !fc_cudnn_refuses(5003));
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(cublaslt_no_algorithm_declines),
                                   T(conformance_knows_refusals),
                                   T(attention_kernel_names),
                                   T(custom_supports),
                                   T(cublas_prologue_blocks),
                                   T(custom_linear_supports),
                                   T(ctx_layout_matches_library),
                                   T(beside_footprints),
                                   T(cudnn_refusals)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
