/* cuda_common.h — what the CUDA device context holds and the CUDA backends share.
 *
 * One stream carries all the work of every backend, so that the device's events
 * and its graph capture see every kernel and library call. The cuBLAS and cuBLASLt
 * handles, their workspaces (cuBLAS's is set explicitly, so that it never
 * allocates during a graph capture), the cuDNN handle (cuDNN builds only) and the
 * device properties live here, made once when the device is opened.
 *
 * Every CUDA, cuBLAS, cuBLASLt and cuDNN call goes through a check macro that
 * fills an fc_err with the call, file:line and the library's error string, and
 * returns -1 from the calling function (which has an `fc_err *e` in scope).
 * Fault injection (tests): FUSECAL_FAULT=cuda, cublas or cudnn makes every call
 * through the matching macro fail as if the library had.
 */
#ifndef FC_CUDA_COMMON_H
#define FC_CUDA_COMMON_H

#include "backend.h"
#include "fusecal_kernels.h"
#include "precision.h"
#include "util.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#ifdef FUSECAL_WITH_CUDNN
#include <cudnn.h>
#endif

_Static_assert((int)FCK_FP32 == (int)FC_FP32 && (int)FCK_TF32 == (int)FC_TF32 && (int)FCK_BF16 == (int)FC_BF16 &&
                   (int)FCK_FP16 == (int)FC_FP16,
               "fck_dtype follows fc_dtype");
_Static_assert((int)FCK_ATTN_REFERENCE == (int)FC_ATTN_REFERENCE && (int)FCK_ATTN_FLASH2 == (int)FC_ATTN_FLASH2 &&
                   FCK_ATTN_NKERNELS == FC_NATTN_KERNELS,
               "fck_attn_kernel follows fc_attn_kernel");

#define FC_CUDA_LT_WORKSPACE (32u << 20)   /* cuBLASLt workspace, per the cuBLAS guide for Hopper */
#define FC_CUDA_BLAS_WORKSPACE (32u << 20) /* cuBLAS workspace (cublasSetWorkspace) */

typedef struct fc_cuda_ctx {
    int device;
    struct cudaDeviceProp prop;
    int sm_clock_khz, mem_clock_khz, mem_bus_bits; /* peak, from device attributes */
    cudaStream_t stream;
    cudaEvent_t ev_begin, ev_end;
    fck_attn_kernel attn_kernel; /* cuda.custom's fused attention kernel (fc_device_opts) */
    cublasHandle_t blas;
    void *blas_ws;
    cublasLtHandle_t lt;
    void *lt_ws;
    size_t lt_ws_bytes;
    /* The same layout in every translation unit, with or without cuDNN's header (the
     * tests read this struct without FUSECAL_WITH_CUDNN): cudnnHandle_t is a pointer. */
#ifdef FUSECAL_WITH_CUDNN
    cudnnHandle_t dnn; /* NULL when cudnnCreate failed (dnn_err says why) */
#else
    void *dnn; /* unused: cuDNN is not in this build or this translation unit */
#endif
    char dnn_err[160];
    /* L2 flush (cold runs), allocated once: `flush` is written, then `flush_read` read,
     * each flush_bytes (twice the L2), so that L2 holds clean lines; flush_sink is what
     * the read may write (it never does) */
    void *flush, *flush_read;
    unsigned *flush_sink;
    size_t flush_bytes;
    unsigned flush_count;
    /* NVML, loaded with dlopen; NULL when absent */
    void *nvml_lib;
    void *nvml_dev;
    char nvml_driver[80];
    /* the bandwidth beside a round (cuda_stream_at): two buffers of bw_half bytes,
     * allocated at the first call and grown as a larger footprint asks */
    void *bw_a, *bw_b;
    size_t bw_half;
    /* the peak beside a round (cuda_peak_at): the FMA kernel's two-float sink,
     * allocated at the first call */
    float *peak_sink;
} fc_cuda_ctx;

/* ---------------------------------------------------------------- checks */

/* A failed runtime call leaves its error pending (unless it is sticky), and the next
 * kernel launch's check (cudaGetLastError) would report it as its own, failing the
 * next record with the wrong cause: every failure is cleared where it is seen. */
static inline cudaError_t fc_cuda_cleared(cudaError_t st)
{
    if (st != cudaSuccess) (void)cudaGetLastError();
    return st;
}

#define FC_CU(call)                                                                               \
    do {                                                                                          \
        cudaError_t st_ = fc_cuda_cleared(call);                                                  \
        if (st_ == cudaSuccess && fc_fault_backend("cuda")) st_ = cudaErrorUnknown;               \
        if (st_ != cudaSuccess)                                                                   \
            return fc_errf(e, "CUDA call %s failed at %s:%d: %s (%s)", #call, __FILE__, __LINE__, \
                           cudaGetErrorString(st_), cudaGetErrorName(st_));                       \
    } while (0)

/* The same, jumping to a cleanup label instead of returning. */
#define FC_CU_GO(call, label)                                                                                       \
    do {                                                                                                            \
        cudaError_t st_ = fc_cuda_cleared(call);                                                                    \
        if (st_ == cudaSuccess && fc_fault_backend("cuda")) st_ = cudaErrorUnknown;                                 \
        if (st_ != cudaSuccess) {                                                                                   \
            fc_errf(e, "CUDA call %s failed at %s:%d: %s (%s)", #call, __FILE__, __LINE__, cudaGetErrorString(st_), \
                    cudaGetErrorName(st_));                                                                         \
            goto label;                                                                                             \
        }                                                                                                           \
    } while (0)

#define FC_CUBLAS(call)                                                                                       \
    do {                                                                                                      \
        cublasStatus_t st_ = (call);                                                                          \
        if (st_ == CUBLAS_STATUS_SUCCESS && fc_fault_backend("cublas")) st_ = CUBLAS_STATUS_EXECUTION_FAILED; \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                                     \
            return fc_errf(e, "cuBLAS call %s failed at %s:%d: %s (%s)", #call, __FILE__, __LINE__,           \
                           cublasGetStatusString(st_), cublasGetStatusName(st_));                             \
    } while (0)

#ifdef FUSECAL_WITH_CUDNN
#define FC_CUDNN(call)                                                                                     \
    do {                                                                                                   \
        cudnnStatus_t st_ = (call);                                                                        \
        if (st_ == CUDNN_STATUS_SUCCESS && fc_fault_backend("cudnn")) st_ = CUDNN_STATUS_EXECUTION_FAILED; \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                                 \
            char last_[256];                                                                               \
            cudnnGetLastErrorString(last_, sizeof last_);                                                  \
            return fc_errf(e, "cuDNN call %s failed at %s:%d: %s%s%s", #call, __FILE__, __LINE__,          \
                           cudnnGetErrorString(st_), last_[0] ? ": " : "", last_);                         \
        }                                                                                                  \
    } while (0)
#endif

/* ---------------------------------------------------------------- helpers (device_cuda.c) */

/* Whether a CUDA GPU can be used here and fusecal's kernels run on it; `why` says
 * what is missing when not. */
bool fc_cuda_usable(char *why, size_t n);

static inline fck_dtype fc_cuda_kdt(fc_dtype dt) { return (fck_dtype)dt; }
/* Storage type of a dtype for the libraries: CUDA_R_32F (fp32, tf32), CUDA_R_16BF, CUDA_R_16F. */
cudaDataType_t fc_cuda_data_type(fc_dtype dt);
/* cuBLAS compute type: CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32 for tf32. */
cublasComputeType_t fc_cuda_compute_type(fc_dtype dt);

/* sizeof(fc_cuda_ctx) and offsetof(fc_cuda_ctx, nvml_driver) as the library was
 * compiled: a test compares them with its own, so that no macro changes the layout
 * between the library and code that reads the struct. */
void fc_cuda_ctx_layout(size_t *size, size_t *last_field);

/* The footprint the bandwidth beside a round measures for fp on a GPU whose L2 holds
 * l2 bytes: the curve's range (1 MiB to 4x the L2, where the rate is device
 * memory's already), rounded down to 32 bytes (the copy kernel's two halves in
 * 16-byte vectors). */
size_t fc_cuda_beside_footprint(double fp, size_t l2);
/* Device memory (cudaMalloc), failing with a message naming `what` and the size. */
int fc_cuda_alloc(void **p, size_t bytes, const char *what, fc_err *e);
void fc_cuda_free(void *p);
/* Host fp32 values to a new device buffer in the dtype's storage type, rounded to
 * nearest by precision.h (bf16, fp16; tf32 stays a float whose low mantissa bits are
 * cleared, so that a tensor core reading it truncates nothing); values the workload
 * already rounded pass unchanged. Synchronous, done at setup. */
int fc_cuda_upload(fc_cuda_ctx *c, const float *host, size_t n, fc_dtype dt, void **dev, const char *what, fc_err *e);
/* The same into an existing buffer of n elements. */
int fc_cuda_upload_to(fc_cuda_ctx *c, const float *host, size_t n, fc_dtype dt, void *dev, fc_err *e);
/* Waits for the stream, copies n elements of the device buffer through the pinned
 * staging buffer `stage` (n · dtype size bytes) and converts them to fp32 in dst. */
int fc_cuda_download(fc_cuda_ctx *c, const void *dev, size_t n, fc_dtype dt, void *stage, float *dst, fc_err *e);
/* Fills n elements with NaN (all bits set: a NaN in fp32, bf16 and fp16 alike). */
int fc_cuda_poison(fc_cuda_ctx *c, void *dev, size_t n, fc_dtype dt, fc_err *e);
/* The buffers of a chain on the device (cuda_chain.c): both variants' outputs in
 * the dtype's storage type (and the control's, when asked for), the unfused chain's
 * live intermediates (fc_pattern_live_intermediates; the control shares them) and a
 * pinned host buffer to copy an output out. */
typedef struct fc_cuda_chain {
    fc_cuda_ctx *c;
    fc_dtype dt;
    const fc_pattern *pat;
    size_t out_n, inter_n;
    void *out[FC_MAX_VARIANTS]; /* the control's only when asked for */
    void *tmp[2];               /* NULL past the live intermediates */
    void *stage;
} fc_cuda_chain;

/* Device bytes of a problem's chain buffers, for device_bytes(). */
double fc_cuda_chain_bytes(const fc_problem *p);
int fc_cuda_chain_alloc(fc_cuda_chain *ch, fc_cuda_ctx *c, const fc_problem *p, const fc_workload *w, fc_err *e);
/* Adds the control variant's output (after fc_cuda_chain_alloc). */
int fc_cuda_chain_add_control(fc_cuda_chain *ch, fc_err *e);
/* Where op i of the unfused chain writes (fc_pattern_chain_slot): the unfused output
 * for the last op, else an intermediate. */
void *fc_cuda_chain_dst(const fc_cuda_chain *ch, int i);
/* The same for the chain of variant v (FC_UNFUSED or FC_CONTROL): its own output last. */
void *fc_cuda_chain_dst_v(const fc_cuda_chain *ch, fc_variant v, int i);
/* Variant v's output as fp32 in dst (waits for the stream). */
int fc_cuda_chain_output(fc_cuda_chain *ch, fc_variant v, float *dst, fc_err *e);
/* Fills variant v's output with NaN (queued on the stream). */
int fc_cuda_chain_poison(fc_cuda_chain *ch, fc_variant v, fc_err *e);
/* Frees what alloc made (the caller has synchronized the stream); a zeroed chain is fine. */
void fc_cuda_chain_free(fc_cuda_chain *ch);

/* What cublasLtMatmulAlgoGetHeuristic's answer means for a setup (cuda_status.c): 0
 * when it found at least one algorithm; FC_DECLINED when it answered
 * CUBLAS_STATUS_NOT_SUPPORTED or found none — cuBLASLt declining `what` ("a bf16
 * 7x13x5 matmul with epilogue BIAS"), the record skipped with e's reason; -1 for any
 * other status. e names the status (cublasGetStatusName) either way. */
int fc_cublaslt_heuristic_verdict(cublasStatus_t st, int found, const char *what, fc_err *e);
/* Whether a cuDNN status (a cudnnStatus_t's value) is the library refusing a call for
 * what it was given (cuda_status.c): BAD_PARAM (2000-2999) and NOT_SUPPORTED (3000-3999),
 * after which another algorithm or form may be tried or the record skipped; not
 * INTERNAL_ERROR (4000-), EXECUTION_FAILED (5000-) and the rest, which fail the record. */
bool fc_cudnn_refuses(int status);

/* cuda.cublas's GELU prologue (gelu_linear): the rows of x each block takes, so that
 * a block of gelu(x) (rows x k elements of `elem` bytes) fills at most a quarter of
 * an L2 of `l2` bytes, beside the weights and the output the block's GEMM reads and
 * writes: a whole multiple of 128 rows (block offsets then 256-byte aligned, as
 * cuBLASLt assumes), at least 128, and all m rows where that is fewer. */
size_t fc_cuda_prologue_rows(size_t m, size_t k, size_t elem, size_t l2);

/* Milliseconds of `reps` calls of fn(arg) on the stream, by events (after one warm-up
 * call); the median of `samples` such measurements. Used to pick algorithms at setup. */
int fc_cuda_time(fc_cuda_ctx *c, int (*fn)(void *arg, fc_err *e), void *arg, int reps, int samples, double *ms,
                 fc_err *e);
/* The same with the `reps` calls captured as one CUDA graph and the graph's replays
 * timed, so that the host's cost per call (tens of microseconds for some library
 * calls, more than the GPU's work on small problems) does not decide between
 * algorithms; *graph says whether it was (false: a call could not be captured, and
 * the calls were timed as fc_cuda_time does). */
int fc_cuda_time_graph(fc_cuda_ctx *c, int (*fn)(void *arg, fc_err *e), void *arg, int reps, int samples, double *ms,
                       bool *graph, fc_err *e);

#endif
