/* device_cuda.c — a CUDA GPU as a device: samples timed with CUDA events on the one
 * stream every backend uses, a cold-cache flush that writes a buffer of twice the L2
 * and then reads another of the same size (both allocated once), so that L2 is left
 * holding clean lines, CUDA graphs captured from that stream, the GPU inventory
 * (with the NVML driver version and clocks when libnvidia-ml is present, loaded
 * with dlopen) and measured ceilings: cuBLAS GEMM rates per dtype on random data,
 * device-to-device copy bandwidth, the copy bandwidth by working set (also beside
 * each round: cuda_stream_at), the fp32 FMA peak (also beside each round:
 * cuda_peak_at), and empty-kernel launch latency eager and in a
 * replayed graph. Also the helpers the CUDA backends share (cuda_common.h). */
#include "cuda_common.h"
#include "stats.h"

#include <dlfcn.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef FUSECAL_WITH_CUDNN
#include <cudnn.h>
#endif

/* ------------------------------------------------------------------ shared helpers */

bool fc_cuda_usable(char *why, size_t n)
{
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess) {
        snprintf(why, n, "no usable CUDA driver or GPU (cudaGetDeviceCount: %s)", cudaGetErrorString(st));
        return false;
    }
    if (count < 1) {
        snprintf(why, n, "the CUDA driver reports no GPU");
        return false;
    }
    st = fck_probe();
    if (st != cudaSuccess) {
        snprintf(why, n, "fusecal's CUDA kernels cannot run on this GPU: %s (built for %s)", cudaGetErrorString(st),
                 fck_arch());
        return false;
    }
    return true;
}

cudaDataType_t fc_cuda_data_type(fc_dtype dt)
{
    switch (dt) {
    case FC_BF16: return CUDA_R_16BF;
    case FC_FP16: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

cublasComputeType_t fc_cuda_compute_type(fc_dtype dt)
{
    return dt == FC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

int fc_cuda_alloc(void **p, size_t bytes, const char *what, fc_err *e)
{
    *p = NULL;
    if (fc_fault("cuda-alloc")) return fc_errf(e, "cudaMalloc of %zu bytes for %s failed: injected fault", bytes, what);
    cudaError_t st = fc_cuda_cleared(cudaMalloc(p, bytes ? bytes : 1));
    if (st != cudaSuccess) {
        *p = NULL;
        return fc_errf(e, "cudaMalloc of %.1f MiB for %s failed: %s", (double)bytes / (1 << 20), what,
                       cudaGetErrorString(st));
    }
    return 0;
}

void fc_cuda_free(void *p)
{
    if (p) cudaFree(p);
}

int fc_cuda_upload_to(fc_cuda_ctx *c, const float *host, size_t n, fc_dtype dt, void *dev, fc_err *e)
{
    size_t es = fc_dtype_size(dt);
    const void *src = host;
    void *tmp = NULL;
    if (dt == FC_BF16 || dt == FC_FP16) {
        uint16_t *h = tmp = fc_xmalloc(n * 2 + 2);
        for (size_t i = 0; i < n; i++) h[i] = dt == FC_BF16 ? fc_float_to_bf16(host[i]) : fc_float_to_fp16(host[i]);
        src = tmp;
    } else if (dt == FC_TF32) {
        float *f = tmp = fc_xmalloc(n * 4 + 4);
        for (size_t i = 0; i < n; i++) f[i] = fc_round_tf32(host[i]);
        src = tmp;
    }
    cudaError_t st = cudaMemcpyAsync(dev, src, n * es, cudaMemcpyHostToDevice, c->stream);
    if (st == cudaSuccess) st = cudaStreamSynchronize(c->stream);
    fc_cuda_cleared(st);
    free(tmp);
    if (st != cudaSuccess)
        return fc_errf(e, "CUDA copy of %zu elements to the device failed at %s:%d: %s", n, __FILE__, __LINE__,
                       cudaGetErrorString(st));
    return 0;
}

int fc_cuda_upload(fc_cuda_ctx *c, const float *host, size_t n, fc_dtype dt, void **dev, const char *what, fc_err *e)
{
    if (fc_cuda_alloc(dev, n * fc_dtype_size(dt), what, e) != 0) return -1;
    return fc_cuda_upload_to(c, host, n, dt, *dev, e);
}

int fc_cuda_download(fc_cuda_ctx *c, const void *dev, size_t n, fc_dtype dt, void *stage, float *dst, fc_err *e)
{
    size_t es = fc_dtype_size(dt);
    FC_CU(cudaStreamSynchronize(c->stream));
    FC_CU(cudaMemcpyAsync(stage, dev, n * es, cudaMemcpyDeviceToHost, c->stream));
    FC_CU(cudaStreamSynchronize(c->stream));
    if (es == 4) {
        memcpy(dst, stage, n * 4);
    } else {
        const uint16_t *h = stage;
        for (size_t i = 0; i < n; i++) dst[i] = dt == FC_BF16 ? fc_bf16_to_float(h[i]) : fc_fp16_to_float(h[i]);
    }
    return 0;
}

int fc_cuda_poison(fc_cuda_ctx *c, void *dev, size_t n, fc_dtype dt, fc_err *e)
{
    FC_CU(cudaMemsetAsync(dev, 0xff, n * fc_dtype_size(dt), c->stream));
    return 0;
}

int fc_cuda_time(fc_cuda_ctx *c, int (*fn)(void *arg, fc_err *e), void *arg, int reps, int samples, double *ms,
                 fc_err *e)
{
    double t[32];
    if (samples > 32) samples = 32;
    if (samples < 1) samples = 1;
    if (fn(arg, e) != 0) return -1;
    for (int s = 0; s < samples; s++) {
        FC_CU(cudaEventRecord(c->ev_begin, c->stream));
        for (int i = 0; i < reps; i++)
            if (fn(arg, e) != 0) return -1;
        FC_CU(cudaEventRecord(c->ev_end, c->stream));
        FC_CU(cudaEventSynchronize(c->ev_end));
        float f = 0;
        FC_CU(cudaEventElapsedTime(&f, c->ev_begin, c->ev_end));
        t[s] = (double)f / reps;
    }
    *ms = fc_median(t, samples);
    return 0;
}

int fc_cuda_time_graph(fc_cuda_ctx *c, int (*fn)(void *arg, fc_err *e), void *arg, int reps, int samples, double *ms,
                       bool *graph, fc_err *e)
{
    double t[32];
    if (samples > 32) samples = 32;
    if (samples < 1) samples = 1;
    if (reps < 1) reps = 1;
    *graph = false;
    if (fn(arg, e) != 0) return -1; /* eager first: lazy module loading, library plans */
    FC_CU(cudaStreamSynchronize(c->stream));
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    int rc = 0;
    fc_err ce = {{0}};
    if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        for (int i = 0; i < reps && rc == 0; i++) rc = fn(arg, &ce);
        cudaError_t st = cudaStreamEndCapture(c->stream, &g);
        if (rc == 0 && st == cudaSuccess && g && cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) exec = NULL;
        if (g) cudaGraphDestroy(g);
    }
    (void)cudaGetLastError(); /* a refused capture leaves its error behind */
    if (!exec) return fc_cuda_time(c, fn, arg, reps, samples, ms, e);
    *graph = true;
    int ret = 0;
    if (cudaGraphLaunch(exec, c->stream) != cudaSuccess) ret = -1; /* the graph's first replay uploads it */
    for (int s = 0; s < samples && ret == 0; s++) {
        float f = 0;
        if (cudaEventRecord(c->ev_begin, c->stream) != cudaSuccess || cudaGraphLaunch(exec, c->stream) != cudaSuccess ||
            cudaEventRecord(c->ev_end, c->stream) != cudaSuccess || cudaEventSynchronize(c->ev_end) != cudaSuccess ||
            cudaEventElapsedTime(&f, c->ev_begin, c->ev_end) != cudaSuccess)
            ret = -1;
        t[s] = (double)f / reps;
    }
    cudaGraphExecDestroy(exec);
    if (ret != 0) {
        cudaError_t st = cudaGetLastError();
        return fc_errf(e, "timing a captured CUDA graph failed: %s", cudaGetErrorString(st));
    }
    *ms = fc_median(t, samples);
    return 0;
}

/* ------------------------------------------------------------------ NVML (dlopen) */

typedef int nvml_ret;
typedef struct nvml_api {
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    nvml_ret (*by_pci)(const char *bus_id, void **dev);
    nvml_ret (*clock)(void *dev, int type, unsigned *mhz);
    nvml_ret (*temperature)(void *dev, int sensor, unsigned *c);
    nvml_ret (*driver)(char *buf, unsigned len);
} nvml_api;
static nvml_api nvml;
enum { NVML_OK = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

/* Loads NVML and finds the device by its PCI bus id; silently leaves it out when
 * the library or any of its calls is missing. */
static void nvml_open(fc_cuda_ctx *c)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    nvml_api a;
#define NVML_SYM(field, name)             \
    do {                                  \
        void *p_ = dlsym(lib, name);      \
        memcpy(&a.field, &p_, sizeof p_); \
    } while (0)
    NVML_SYM(init, "nvmlInit_v2");
    NVML_SYM(shutdown, "nvmlShutdown");
    NVML_SYM(by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
    NVML_SYM(clock, "nvmlDeviceGetClockInfo");
    NVML_SYM(temperature, "nvmlDeviceGetTemperature");
    NVML_SYM(driver, "nvmlSystemGetDriverVersion");
#undef NVML_SYM
    char bus[64];
    void *dev = NULL;
    if (!a.init || !a.shutdown || !a.by_pci || !a.clock || !a.temperature || a.init() != NVML_OK) {
        dlclose(lib);
        return;
    }
    if (cudaDeviceGetPCIBusId(bus, (int)sizeof bus, c->device) != cudaSuccess || a.by_pci(bus, &dev) != NVML_OK) {
        a.shutdown();
        dlclose(lib);
        return;
    }
    if (a.driver && a.driver(c->nvml_driver, (unsigned)sizeof c->nvml_driver) != NVML_OK) c->nvml_driver[0] = 0;
    nvml = a;
    c->nvml_lib = lib;
    c->nvml_dev = dev;
}

static void nvml_close(fc_cuda_ctx *c)
{
    if (!c->nvml_lib) return;
    nvml.shutdown();
    dlclose(c->nvml_lib);
    c->nvml_lib = c->nvml_dev = NULL;
}

/* ------------------------------------------------------------------ the device */

static void cuda_close(void *ctx)
{
    fc_cuda_ctx *c = ctx;
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
#ifdef FUSECAL_WITH_CUDNN
    if (c->dnn) cudnnDestroy(c->dnn);
#endif
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->blas) cublasDestroy(c->blas);
    fc_cuda_free(c->lt_ws);
    fc_cuda_free(c->blas_ws);
    fc_cuda_free(c->flush);
    fc_cuda_free(c->flush_read);
    fc_cuda_free(c->flush_sink);
    fc_cuda_free(c->bw_a);
    fc_cuda_free(c->bw_b);
    fc_cuda_free(c->peak_sink);
    if (c->ev_begin) cudaEventDestroy(c->ev_begin);
    if (c->ev_end) cudaEventDestroy(c->ev_end);
    if (c->stream) cudaStreamDestroy(c->stream);
    nvml_close(c);
    free(c);
}

/* the L2's bytes (50 MiB where the device does not say) */
static size_t l2_bytes(const fc_cuda_ctx *c)
{
    return c->prop.l2CacheSize > 0 ? (size_t)c->prop.l2CacheSize : (size_t)(50u << 20);
}

static int open_ctx(fc_cuda_ctx *c, fc_err *e)
{
    c->device = 0; /* CUDA_VISIBLE_DEVICES picks the GPU */
    FC_CU(cudaSetDevice(c->device));
    FC_CU(cudaGetDeviceProperties(&c->prop, c->device));
    FC_CU(cudaDeviceGetAttribute(&c->sm_clock_khz, cudaDevAttrClockRate, c->device));
    FC_CU(cudaDeviceGetAttribute(&c->mem_clock_khz, cudaDevAttrMemoryClockRate, c->device));
    FC_CU(cudaDeviceGetAttribute(&c->mem_bus_bits, cudaDevAttrGlobalMemoryBusWidth, c->device));
    FC_CU(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    FC_CU(cudaEventCreate(&c->ev_begin));
    FC_CU(cudaEventCreate(&c->ev_end));

    FC_CUBLAS(cublasCreate(&c->blas));
    FC_CUBLAS(cublasSetStream(c->blas, c->stream));
    /* after cublasSetStream, which resets it: cuBLAS then never allocates its own */
    if (fc_cuda_alloc(&c->blas_ws, FC_CUDA_BLAS_WORKSPACE, "the cuBLAS workspace", e) != 0) return -1;
    FC_CUBLAS(cublasSetWorkspace(c->blas, c->blas_ws, FC_CUDA_BLAS_WORKSPACE));
    FC_CUBLAS(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH)); /* no TF32 unless the compute type asks */
    FC_CUBLAS(cublasLtCreate(&c->lt));
    c->lt_ws_bytes = FC_CUDA_LT_WORKSPACE;
    if (fc_cuda_alloc(&c->lt_ws, c->lt_ws_bytes, "the cuBLASLt workspace", e) != 0) return -1;
#ifdef FUSECAL_WITH_CUDNN
    cudnnStatus_t ds = cudnnCreate(&c->dnn);
    if (ds == CUDNN_STATUS_SUCCESS) ds = cudnnSetStream(c->dnn, c->stream);
    if (ds != CUDNN_STATUS_SUCCESS) {
        snprintf(c->dnn_err, sizeof c->dnn_err, "cudnnCreate/cudnnSetStream failed: %s", cudnnGetErrorString(ds));
        if (c->dnn) cudnnDestroy(c->dnn);
        c->dnn = NULL;
    }
#endif
    c->flush_bytes = (2 * l2_bytes(c) + 15) & ~(size_t)15;
    if (fc_cuda_alloc(&c->flush, c->flush_bytes, "the L2 flush buffer", e) != 0 ||
        fc_cuda_alloc(&c->flush_read, c->flush_bytes, "the L2 flush's read buffer", e) != 0 ||
        fc_cuda_alloc((void **)&c->flush_sink, 16, "the L2 flush's sink", e) != 0)
        return -1;
    FC_CU(cudaMemsetAsync(c->flush, 0, c->flush_bytes, c->stream));
    /* one byte value throughout: every 16-byte vector XORs to 0, never to FLUSH_NEVER */
    FC_CU(cudaMemsetAsync(c->flush_read, 0x5a, c->flush_bytes, c->stream));
    FC_CU(cudaStreamSynchronize(c->stream));
    nvml_open(c);
    return 0;
}

void fc_cuda_ctx_layout(size_t *size, size_t *last_field)
{
    *size = sizeof(fc_cuda_ctx);
    *last_field = offsetof(fc_cuda_ctx, nvml_driver);
}

static int cuda_open(const fc_device_opts *o, void **out, fc_err *e)
{
    *out = NULL;
    if ((unsigned)o->attn_kernel >= FC_NATTN_KERNELS)
        return fc_errf(e, "attention kernel %d is unknown", o->attn_kernel);
    fc_cuda_ctx *c = fc_xcalloc(1, sizeof *c);
    c->attn_kernel = (fck_attn_kernel)o->attn_kernel;
    if (open_ctx(c, e) != 0) {
        cuda_close(c);
        return -1;
    }
    *out = c;
    return 0;
}

static int cuda_timer_begin(void *ctx, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    FC_CU(cudaEventRecord(c->ev_begin, c->stream));
    return 0;
}

static int cuda_timer_end(void *ctx, double *sec, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    FC_CU(cudaEventRecord(c->ev_end, c->stream));
    FC_CU(cudaEventSynchronize(c->ev_end));
    float ms = 0;
    FC_CU(cudaEventElapsedTime(&ms, c->ev_begin, c->ev_end));
    *sec = (double)ms * 1e-3;
    return 0;
}

#define FLUSH_NEVER 0xffffffffu

/* Writes every line of a buffer of twice the L2, so that none of the next sample's
 * data is left in it (the value changes every time), then reads a second buffer of
 * twice the L2: the first buffer's dirty lines are written back here, and L2 is left
 * holding clean lines, which the timed sample evicts without a write-back. */
static int cuda_flush(void *ctx, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    FC_CU(cudaMemsetAsync(c->flush, (int)(++c->flush_count & 0xff), c->flush_bytes, c->stream));
    FC_CU(fck_read_all(c->flush_read, c->flush_bytes, FLUSH_NEVER, c->flush_sink, c->stream));
    return 0;
}

static int cuda_sync(void *ctx, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    FC_CU(cudaStreamSynchronize(c->stream));
    return 0;
}

static size_t cuda_mem_available(void *ctx)
{
    (void)ctx;
    size_t free_b = 0, total = 0;
    if (fc_cuda_cleared(cudaMemGetInfo(&free_b, &total)) != cudaSuccess) return 0;
    return free_b;
}

typedef struct cuda_graph {
    cudaGraphExec_t exec;
    cudaStream_t stream;
} cuda_graph;

/* Captures `batch` calls of fn from the stream into one graph. */
static int cuda_graph_create(void *ctx, fc_launch_fn fn, void *arg, fc_variant v, int batch, void **out, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    *out = NULL;
    FC_CU(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < batch; i++) {
        if (fn(arg, v, e) != 0) {
            cudaGraph_t g = NULL;
            cudaStreamEndCapture(c->stream, &g);
            if (g) cudaGraphDestroy(g);
            cudaGetLastError(); /* clear the capture's error */
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            return fc_errf(e, "while capturing a CUDA graph (%s, call %d of %d): %s", fc_variant_name(v), i + 1, batch,
                           msg);
        }
    }
    cudaGraph_t g = NULL;
    FC_CU(cudaStreamEndCapture(c->stream, &g));
    cudaGraphExec_t exec = NULL;
    cudaError_t st = fc_cuda_cleared(cudaGraphInstantiate(&exec, g, 0));
    cudaGraphDestroy(g);
    if (st != cudaSuccess)
        return fc_errf(e, "CUDA call cudaGraphInstantiate failed at %s:%d: %s", __FILE__, __LINE__,
                       cudaGetErrorString(st));
    cuda_graph *cg = fc_xcalloc(1, sizeof *cg);
    cg->exec = exec;
    cg->stream = c->stream;
    *out = cg;
    return 0;
}

static int cuda_graph_launch(void *ctx, void *graph, fc_err *e)
{
    (void)ctx;
    cuda_graph *g = graph;
    FC_CU(cudaGraphLaunch(g->exec, g->stream));
    return 0;
}

static void cuda_graph_destroy(void *graph)
{
    cuda_graph *g = graph;
    if (!g) return;
    cudaStreamSynchronize(g->stream);
    cudaGraphExecDestroy(g->exec);
    free(g);
}

static void version_string(int v, char *buf, size_t n) /* 13000 -> "13.0" */
{
    snprintf(buf, n, "%d.%d", v / 1000, (v % 1000) / 10);
}

static void cuda_inventory(void *ctx, cJSON *out)
{
    fc_cuda_ctx *c = ctx;
    char buf[64];
    cJSON_AddStringToObject(out, "name", c->prop.name);
    snprintf(buf, sizeof buf, "%d.%d", c->prop.major, c->prop.minor);
    cJSON_AddStringToObject(out, "compute_capability", buf);
    cJSON_AddNumberToObject(out, "sms", c->prop.multiProcessorCount);
    cJSON_AddNumberToObject(out, "l2_bytes", c->prop.l2CacheSize);
    cJSON_AddNumberToObject(out, "memory_bytes", (double)c->prop.totalGlobalMem);
    cJSON_AddNumberToObject(out, "shared_memory_per_sm_bytes", (double)c->prop.sharedMemPerMultiprocessor);
    cJSON_AddNumberToObject(out, "sm_clock_max_mhz", c->sm_clock_khz / 1000.0);
    cJSON_AddNumberToObject(out, "memory_clock_max_mhz", c->mem_clock_khz / 1000.0);
    cJSON_AddNumberToObject(out, "memory_bus_bits", c->mem_bus_bits);
    if (cudaDeviceGetPCIBusId(buf, (int)sizeof buf, c->device) == cudaSuccess)
        cJSON_AddStringToObject(out, "pci_bus_id", buf);
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) {
        version_string(v, buf, sizeof buf);
        cJSON_AddStringToObject(out, "cuda_driver_api", buf);
    }
    if (c->nvml_driver[0]) cJSON_AddStringToObject(out, "driver_version", c->nvml_driver);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) {
        version_string(v, buf, sizeof buf);
        cJSON_AddStringToObject(out, "cuda_runtime", buf);
    }
    int ma = 0, mi = 0, pa = 0;
    cublasGetProperty(MAJOR_VERSION, &ma);
    cublasGetProperty(MINOR_VERSION, &mi);
    cublasGetProperty(PATCH_LEVEL, &pa);
    snprintf(buf, sizeof buf, "%d.%d.%d", ma, mi, pa);
    cJSON_AddStringToObject(out, "cublas", buf);
    size_t lv = cublasLtGetVersion();
    snprintf(buf, sizeof buf, "%zu.%zu.%zu", lv / 10000, (lv / 100) % 100, lv % 100);
    cJSON_AddStringToObject(out, "cublaslt", buf);
#ifdef FUSECAL_WITH_CUDNN
    size_t dv = cudnnGetVersion();
    snprintf(buf, sizeof buf, "%zu.%zu.%zu", dv / 10000, (dv / 100) % 100, dv % 100);
    cJSON_AddStringToObject(out, "cudnn", buf);
    if (!c->dnn) cJSON_AddStringToObject(out, "cudnn_error", c->dnn_err);
#else
    cJSON_AddStringToObject(out, "cudnn", "not built");
#endif
    cJSON_AddStringToObject(out, "fusecal_kernels", fck_arch());
    cJSON_AddBoolToObject(out, "nvml", c->nvml_lib != NULL);
}

/* ------------------------------------------------------------------ ceilings */

#define GEMM_RUNS 8  /* single products per dtype; the best is the ceiling */
#define COPY_RUNS 11 /* copies; the best is the ceiling */

typedef struct gemm_arg {
    fc_cuda_ctx *c;
    fc_dtype dt;
    int n;
    void *a, *b, *cc;
} gemm_arg;

static int gemm_once(void *arg, fc_err *e)
{
    gemm_arg *g = arg;
    float alpha = 1.0f, beta = 0.0f;
    cudaDataType_t t = fc_cuda_data_type(g->dt);
    FC_CUBLAS(cublasGemmEx(g->c->blas, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha, g->a, t, g->n, g->b, t, g->n,
                           &beta, g->cc, t, g->n, fc_cuda_compute_type(g->dt), CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* Best rate of several single products, in GFLOP/s. */
static int measure_gemm(fc_cuda_ctx *c, fc_dtype dt, int n, void *a, void *b, void *cc, double *gflops, fc_err *e)
{
    size_t nn = (size_t)n * (size_t)n;
    FC_CU(fck_fill_uniform(fc_cuda_kdt(dt), a, nn, 0x1234u + (unsigned)dt, -1.0f, 1.0f, c->stream));
    FC_CU(fck_fill_uniform(fc_cuda_kdt(dt), b, nn, 0x5678u + (unsigned)dt, -1.0f, 1.0f, c->stream));
    gemm_arg g = {c, dt, n, a, b, cc};
    if (gemm_once(&g, e) != 0 || gemm_once(&g, e) != 0) return -1;
    double best = 0;
    for (int i = 0; i < GEMM_RUNS; i++) {
        double ms = 0;
        if (fc_cuda_time(c, gemm_once, &g, 1, 1, &ms, e) != 0) return -1;
        double r = 2.0 * n * (double)n * n / (ms * 1e-3) / 1e9;
        if (r > best) best = r;
    }
    *gflops = best;
    return 0;
}

/* The fp32 arithmetic peak: fck_fma_peak launches of PEAK_ITERS iterations (about
 * 9 ms on an H100's 132 SMs at 60 TFLOP/s), the best of PEAK_RUNS after a warm-up. */
#define PEAK_ITERS (1 << 17)
#define PEAK_RUNS 7

typedef struct peak_arg {
    fc_cuda_ctx *c;
    float *sink;
    int iters;
    double flops;
} peak_arg;

static int peak_once(void *arg, fc_err *e)
{
    peak_arg *p = arg;
    FC_CU(fck_fma_peak(p->iters, 0.999f, 1e-3f, p->c->prop.multiProcessorCount, p->sink, &p->flops, p->c->stream));
    return 0;
}

/* the best rate of `runs` launches of `iters` iterations after a warm-up one */
static int fma_peak_runs(fc_cuda_ctx *c, float *sink, int iters, int runs, double *gflops, fc_err *e)
{
    peak_arg p = {c, sink, iters, 0};
    if (peak_once(&p, e) != 0) return -1;
    double best = 0;
    for (int i = 0; i < runs; i++) {
        double ms = 0;
        if (fc_cuda_time(c, peak_once, &p, 1, 1, &ms, e) != 0) return -1;
        best = fmax(best, p.flops / (ms * 1e-3) / 1e9);
    }
    *gflops = best;
    return 0;
}

/* The fp32 arithmetic peak beside a round (fc_device.peak_at): the same kernel at an
 * eighth of the iterations (about 1 ms on an H100), the best of three launches after
 * a warm-up (FUSECAL_TEST_FAST: one at a 128th). The other dtypes' peaks are the
 * tensor cores' GEMM rates (fc_ceilings_peak), not measured beside a round: 0, as
 * on a failed call (cleared: the next record's calls do not see it). */
static double cuda_peak_at(void *ctx, fc_dtype dt)
{
    fc_cuda_ctx *c = ctx;
    fc_err e = {{0}};
    double g = 0;
    const bool fast = fc_test_fast();
    if (dt != FC_FP32 ||
        (!c->peak_sink && fc_cuda_alloc((void **)&c->peak_sink, 2 * sizeof(float), "the peak beside a round", &e)) ||
        fma_peak_runs(c, c->peak_sink, fast ? PEAK_ITERS / 128 : PEAK_ITERS / 8, fast ? 1 : 3, &g, &e) != 0)
        return 0;
    return g;
}

typedef struct copy_arg {
    fc_cuda_ctx *c;
    void *dst, *src;
    size_t bytes;
} copy_arg;

static int copy_once(void *arg, fc_err *e)
{
    copy_arg *a = arg;
    FC_CU(cudaMemcpyAsync(a->dst, a->src, a->bytes, cudaMemcpyDeviceToDevice, a->c->stream));
    return 0;
}

/* The bandwidth by working set: footprints from BW_FIRST doubling to 4x the L2,
 * each a copy back and forth over the same two buffers (fck_copy_passes) and a read
 * of both (fck_read_passes), moving about BW_TRAFFIC bytes a launch, each the best of
 * BW_RUNS launches after a warm-up one. The point's rate is the better of the two, as
 * the CPU's is the best of its kinds, and the read's is kept beside it (read_gbs):
 * HBM reads alone can outrun a copy's reads plus writes, so that without it a kernel
 * that mostly reads (decode's KV cache) could pass its ceiling. */
#define BW_FIRST ((size_t)1 << 20)
#define BW_TRAFFIC ((size_t)4 << 30)
#define BW_RUNS 5

typedef struct passes_arg {
    fc_cuda_ctx *c;
    void *a, *b;
    size_t bytes;
    int passes;
} passes_arg;

static int passes_once(void *arg, fc_err *e)
{
    passes_arg *p = arg;
    FC_CU(fck_copy_passes(p->a, p->b, p->bytes, p->passes, p->c->prop.multiProcessorCount, p->c->stream));
    return 0;
}

static int read_passes_once(void *arg, fc_err *e)
{
    passes_arg *p = arg;
    FC_CU(fck_read_passes(p->a, p->b, p->bytes, p->passes, p->c->prop.multiProcessorCount, FLUSH_NEVER,
                          p->c->flush_sink, p->c->stream));
    return 0;
}

/* The best time of `runs` launches of fn after a warm-up one, in ms */
static int best_ms_of(fc_cuda_ctx *c, int (*fn)(void *, fc_err *), void *arg, int runs, double *best, fc_err *e)
{
    if (fn(arg, e) != 0) return -1;
    double ms = 0;
    *best = INFINITY;
    for (int i = 0; i < runs; i++) {
        if (fc_cuda_time(c, fn, arg, 1, 1, &ms, e) != 0) return -1;
        if (ms < *best) *best = ms;
    }
    return 0;
}

/* One point of the curve: fp bytes (a multiple of 32), fp/2 in each of a and b,
 * copied back and forth and read, about `traffic` bytes a launch, each the best of
 * `runs` launches after a warm-up one. */
static int bw_point(fc_cuda_ctx *c, void *a, void *b, size_t fp, size_t traffic, int runs, fc_bw_point *pt, fc_err *e)
{
    size_t passes = traffic / fp;
    passes_arg p = {c, a, b, fp, (int)(passes < 2 ? 2 : passes > 4096 ? 4096 : passes)};
    double copy_ms = 0, read_ms = 0;
    if (best_ms_of(c, passes_once, &p, runs, &copy_ms, e) != 0 ||
        best_ms_of(c, read_passes_once, &p, runs, &read_ms, e) != 0)
        return -1;
    const double moved = (double)p.passes * (double)fp;
    *pt = (fc_bw_point){.footprint_bytes = (double)fp, .read_gbs = moved / (read_ms * 1e-3) / 1e9};
    pt->gbs = fmax(moved / (copy_ms * 1e-3) / 1e9, pt->read_gbs);
    return 0;
}

/* a and b hold `room` bytes each; returns the number of points, -1 on an error */
static int measure_bandwidth_curve(fc_cuda_ctx *c, void *a, void *b, size_t room, fc_bw_point *pts, int max, fc_err *e)
{
    const size_t l2 = l2_bytes(c);
    int np = 0;
    for (size_t fp = BW_FIRST; fp <= 4 * l2 && fp / 2 <= room && np < max; fp *= 2)
        if (bw_point(c, a, b, fp, BW_TRAFFIC, BW_RUNS, &pts[np++], e) != 0) return -1;
    return np;
}

/* The bandwidth beside a round (fc_device.stream_at): the curve's copy at each
 * footprint, as the curve measures it but briefly (about BESIDE_TRAFFIC bytes a
 * launch, the best of BESIDE_RUNS; FUSECAL_TEST_FAST: one launch of a sixteenth),
 * a footprint measured at fc_cuda_beside_footprint's, over buffers kept in the
 * context between rounds; the read-only rate beside it, as the curve's. */
#define BESIDE_TRAFFIC ((size_t)1 << 30)
enum { BESIDE_RUNS = 3 };

size_t fc_cuda_beside_footprint(double fp, size_t l2)
{
    const size_t top = 4 * l2, b = fp > (double)top ? top : (size_t)fmax(fp, (double)BW_FIRST);
    return b & ~(size_t)31;
}

static int cuda_stream_at(void *ctx, const double *footprints, int n, fc_bw_point *pts, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    const size_t l2 = l2_bytes(c);
    size_t need = 0;
    for (int i = 0; i < n; i++) {
        const size_t fp = fc_cuda_beside_footprint(footprints[i], l2);
        if (fp > need) need = fp;
    }
    if (need / 2 > c->bw_half) {
        fc_cuda_free(c->bw_a);
        fc_cuda_free(c->bw_b);
        c->bw_a = c->bw_b = NULL;
        c->bw_half = 0;
        if (fc_cuda_alloc(&c->bw_a, need / 2, "the bandwidth beside a round", e) ||
            fc_cuda_alloc(&c->bw_b, need / 2, "the bandwidth beside a round", e))
            return -1;
        c->bw_half = need / 2;
    }
    const bool fast = fc_test_fast();
    for (int i = 0; i < n; i++) {
        if (bw_point(c, c->bw_a, c->bw_b, fc_cuda_beside_footprint(footprints[i], l2),
                     fast ? BESIDE_TRAFFIC / 16 : BESIDE_TRAFFIC, fast ? 1 : BESIDE_RUNS, &pts[i], e) != 0)
            return -1;
        pts[i].footprint_bytes = footprints[i];
    }
    return 0;
}

static int empty_once(void *arg, fc_err *e)
{
    fc_cuda_ctx *c = arg;
    FC_CU(fck_empty(c->stream));
    return 0;
}

static int cuda_ceilings(void *ctx, fc_ceilings *out, fc_err *e)
{
    fc_cuda_ctx *c = ctx;
    memset(out, 0, sizeof *out);
    size_t free_b = cuda_mem_available(c);
    /* GEMM: 8192^3 (4096^3 in fp32, ~50 TFLOP/s) when 3 x 256 MiB fit comfortably */
    int big = free_b > ((size_t)2 << 30) ? 8192 : 2048, fp32n = big > 4096 ? 4096 : big;
    size_t bytes = (size_t)big * big * 4;
    void *a = NULL, *b = NULL, *cc = NULL, *src = NULL, *dst = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int rc = -1;
    if (fc_cuda_alloc(&a, bytes, "the GEMM ceiling's A", e) || fc_cuda_alloc(&b, bytes, "the GEMM ceiling's B", e) ||
        fc_cuda_alloc(&cc, bytes, "the GEMM ceiling's C", e))
        goto done;
    static const fc_dtype dts[] = {FC_FP32, FC_TF32, FC_BF16, FC_FP16};
    for (size_t i = 0; i < FC_ARRAY_LEN(dts); i++)
        if (measure_gemm(c, dts[i], dts[i] == FC_FP32 ? fp32n : big, a, b, cc, &out->gflops[dts[i]], e) != 0) goto done;
    if (fma_peak_runs(c, cc, PEAK_ITERS, PEAK_RUNS, &out->peak_gflops[FC_FP32], e) != 0) goto done;
    fc_cuda_free(a);
    fc_cuda_free(b);
    fc_cuda_free(cc);
    a = b = cc = NULL;

    /* device-to-device copy: 2 x 512 MiB, bytes read + written, the best of COPY_RUNS:
     * a ceiling is a peak; and both buffers read (the better of the two is the
     * ceiling, the read's kept beside it) */
    size_t cb = (size_t)512 << 20;
    if (cb > free_b / 4) cb = free_b / 4;
    cb &= ~(size_t)15;
    if (fc_cuda_alloc(&src, cb, "the bandwidth ceiling's source", e) ||
        fc_cuda_alloc(&dst, cb, "the bandwidth ceiling's copy", e))
        goto done;
    FC_CU_GO(cudaMemsetAsync(src, 0x5a, cb, c->stream), done);
    copy_arg ca = {c, dst, src, cb};
    double ms = 0, best_ms = INFINITY;
    for (int i = 0; i < COPY_RUNS; i++) {
        if (fc_cuda_time(c, copy_once, &ca, 1, 1, &ms, e) != 0) goto done;
        if (ms < best_ms) best_ms = ms;
    }
    out->bandwidth_gbs = 2.0 * (double)cb / (best_ms * 1e-3) / 1e9;
    passes_arg ra = {c, src, dst, 2 * cb, 1};
    if (best_ms_of(c, read_passes_once, &ra, COPY_RUNS, &best_ms, e) != 0) goto done;
    out->read_bandwidth_gbs = 2.0 * (double)cb / (best_ms * 1e-3) / 1e9;
    out->bandwidth_gbs = fmax(out->bandwidth_gbs, out->read_bandwidth_gbs);
    out->n_bw = measure_bandwidth_curve(c, src, dst, cb, out->bw, FC_MAX_BW_POINTS, e);
    if (out->n_bw < 0) goto done;

    /* launch latency: 1000 empty kernels back to back, eagerly and as one graph */
    enum { NL = 1000 };
    if (fc_cuda_time(c, empty_once, c, NL, 7, &ms, e) != 0) goto done;
    out->launch_us = ms * 1e3;
    FC_CU_GO(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), done);
    for (int i = 0; i < NL; i++) {
        cudaError_t st = fck_empty(c->stream);
        if (st != cudaSuccess) {
            cudaStreamEndCapture(c->stream, &graph);
            cudaGetLastError();
            fc_errf(e, "capturing empty kernels into a CUDA graph failed: %s", cudaGetErrorString(st));
            goto done;
        }
    }
    FC_CU_GO(cudaStreamEndCapture(c->stream, &graph), done);
    FC_CU_GO(cudaGraphInstantiate(&exec, graph, 0), done);
    FC_CU_GO(cudaGraphLaunch(exec, c->stream), done); /* the first launch uploads */
    double gt[7];
    for (int i = 0; i < 7; i++) {
        float f = 0;
        FC_CU_GO(cudaEventRecord(c->ev_begin, c->stream), done);
        FC_CU_GO(cudaGraphLaunch(exec, c->stream), done);
        FC_CU_GO(cudaEventRecord(c->ev_end, c->stream), done);
        FC_CU_GO(cudaEventSynchronize(c->ev_end), done);
        FC_CU_GO(cudaEventElapsedTime(&f, c->ev_begin, c->ev_end), done);
        gt[i] = (double)f * 1e3 / NL;
    }
    out->graph_launch_us = fc_median(gt, 7);
    snprintf(
        out->method, sizeof out->method,
        "arithmetic peak (no kernel passes it): fp32, fusecal's FMA loop (8 chains a thread on registers, 8 "
        "blocks of 256 threads an SM), best of %d launches of %d iterations; tf32, bf16 and fp16 not measured "
        "(no loop here reaches the tensor cores' rate): their GEMM rate stands in; GEMM (a kernel may pass it): "
        "cublasGemmEx, best of %d single products on uniform(-1,1) data, %d^3 (fp32: %d^3), fp32 "
        "accumulation (tf32: CUBLAS_COMPUTE_32F_FAST_TF32); bandwidth: the better of cudaMemcpyAsync device to "
        "device of %zu MiB (bytes read + written) and a read kernel over its source and copy (read_bandwidth_gbs), "
        "each the best of %d runs; by working set (warm L2): the better of a copy kernel back and forth over the "
        "same two buffers and a read kernel over both (read_gbs), about %zu GiB a launch, each the best of %d "
        "launches, at footprints from %zu MiB doubling to 4x the L2; launch: %d empty kernels timed with CUDA events, "
        "per kernel, eager (median of 7 runs) and as one replayed CUDA graph (median of 7 replays)",
        PEAK_RUNS, PEAK_ITERS, GEMM_RUNS, big, fp32n, cb >> 20, COPY_RUNS, BW_TRAFFIC >> 30, BW_RUNS, BW_FIRST >> 20,
        NL);
    rc = 0;
done:
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    fc_cuda_free(a);
    fc_cuda_free(b);
    fc_cuda_free(cc);
    fc_cuda_free(src);
    fc_cuda_free(dst);
    return rc;
}

static void cuda_sense(void *ctx, fc_sense *s)
{
    fc_cuda_ctx *c = ctx;
    memset(s, 0, sizeof *s);
    double l[1];
    if (getloadavg(l, 1) == 1) s->loadavg1 = l[0];
    if (!c || !c->nvml_dev) return;
    unsigned v;
    if (nvml.clock(c->nvml_dev, NVML_CLOCK_SM, &v) == NVML_OK) s->clock_mhz = v;
    if (nvml.clock(c->nvml_dev, NVML_CLOCK_MEM, &v) == NVML_OK) s->mem_clock_mhz = v;
    if (nvml.temperature(c->nvml_dev, NVML_TEMPERATURE_GPU, &v) == NVML_OK) s->temperature_c = v;
}

const fc_device fc_device_cuda = {
    .name = "cuda",
    .summary =
        "CUDA GPU: CUDA-event samples on one stream, L2 flush (write, then read: clean lines), graph replay, "
        "NVML clocks",
    .available = fc_cuda_usable,
    .open = cuda_open,
    .close = cuda_close,
    .timer_begin = cuda_timer_begin,
    .timer_end = cuda_timer_end,
    .flush_cache = cuda_flush,
    .synchronize = cuda_sync,
    .mem_available = cuda_mem_available,
    .graph_create = cuda_graph_create,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .inventory = cuda_inventory,
    .measure_ceilings = cuda_ceilings,
    .stream_at = cuda_stream_at,
    .peak_at = cuda_peak_at,
    .sense = cuda_sense,
};
