/* vocab.h — fusecal's vocabularies, one list each. Each list is an X-macro that
 * makes the enum and its name table; parsing, the "(valid: …)" messages, `fusecal
 * list`, the option tables of the commands and the JSON Schemas' enums all come
 * from these (tests/test_vocab.c fails when a schema enum and a list disagree).
 * Patterns and their families are listed in pattern.h.
 */
#ifndef FC_VOCAB_H
#define FC_VOCAB_H

#include <stdbool.h>
#include <stddef.h>

/* A vocabulary: its words, in enum order, and what one of them is called in
 * messages ("dtype"). Words before `first` are names only, never a user's choice
 * (the layout "none" of families without one). */
typedef struct fc_words {
    const char *what;
    const char *const *names;
    int n;
    int first;
} fc_words;

/* Index of s among w's choices (from `first`), or -1. */
int fc_word_index(const fc_words *w, const char *s);
/* w's name for index i ("?" when out of range). */
const char *fc_word_name(const fc_words *w, int i);
/* "fp32, tf32, bf16, fp16" — the choices, in order (static storage per table). */
const char *fc_words_valid(const fc_words *w);

/* clang-format off: the lists below keep one word per line */
#define FC_VOCAB_ENUM(prefix, id, name) prefix##id,
#define FC_VOCAB_NAME(prefix, id, name) name,

/* Element types: id, name. */
#define FC_DTYPE_LIST(X) \
    X(FC_, FP32, "fp32") \
    X(FC_, TF32, "tf32") \
    X(FC_, BF16, "bf16") \
    X(FC_, FP16, "fp16")
typedef enum { FC_DTYPE_LIST(FC_VOCAB_ENUM) FC_NDTYPES } fc_dtype;

/* Activation layouts of the families that have one ("none" for the others). */
#define FC_LAYOUT_LIST(X)       \
    X(FC_, LAYOUT_NONE, "none") \
    X(FC_, NCHW, "nchw")        \
    X(FC_, NHWC, "nhwc")
typedef enum { FC_LAYOUT_LIST(FC_VOCAB_ENUM) FC_NLAYOUTS } fc_layout;

/* The forms of a chain: every record has the unfused and the fused one; the
 * control (the fused form's main operation done the same way, without the fusion,
 * then the unfused passes) only where a backend's fused form changes more than
 * the fusion, so that the speedup splits into implementation and fusion. */
#define FC_VARIANT_LIST(X)     \
    X(FC_, UNFUSED, "unfused") \
    X(FC_, FUSED, "fused")     \
    X(FC_, CONTROL, "control")
typedef enum { FC_VARIANT_LIST(FC_VOCAB_ENUM) FC_MAX_VARIANTS } fc_variant;
enum { FC_NVARIANTS = 2 }; /* the variants every record has */

/* Devices. */
#define FC_DEVICE_LIST(X)  \
    X(FC_DEV_, cpu, "cpu") \
    X(FC_DEV_, cuda, "cuda")
typedef enum { FC_DEVICE_LIST(FC_VOCAB_ENUM) FC_NDEVICES } fc_device_id;

/* Backends: "<device>.<provider>". Each runs on the device its name begins with. */
#define FC_BACKEND_LIST(X)                  \
    X(FC_BK_, cpu_openblas, "cpu.openblas") \
    X(FC_BK_, cpu_onednn, "cpu.onednn")     \
    X(FC_BK_, cuda_cublas, "cuda.cublas")   \
    X(FC_BK_, cuda_cudnn, "cuda.cudnn")     \
    X(FC_BK_, cuda_custom, "cuda.custom")
typedef enum { FC_BACKEND_LIST(FC_VOCAB_ENUM) FC_NBACKENDS } fc_backend_id;

/* Output formats of a calibration document. */
#define FC_FORMAT_LIST(X)      \
    X(FC_FMT_, JSON, "json")   \
    X(FC_FMT_, JSONL, "jsonl") \
    X(FC_FMT_, CSV, "csv")     \
    X(FC_FMT_, MD, "md")
typedef enum { FC_FORMAT_LIST(FC_VOCAB_ENUM) FC_NFORMATS } fc_format;

/* Record status. */
#define FC_STATUS_LIST(X)           \
    X(FC_STATUS_, OK, "ok")         \
    X(FC_STATUS_, FAILED, "failed") \
    X(FC_STATUS_, SKIPPED, "skipped")
typedef enum { FC_STATUS_LIST(FC_VOCAB_ENUM) FC_NSTATUSES } fc_status;

/* The fuse decision of a record. */
#define FC_DECISION_LIST(X)   \
    X(FC_DECIDE_, YES, "yes") \
    X(FC_DECIDE_, NO, "no")   \
    X(FC_DECIDE_, INCONCLUSIVE, "inconclusive")
typedef enum { FC_DECISION_LIST(FC_VOCAB_ENUM) FC_NDECISIONS } fc_decision;

/* Why a record's measurement stopped: its speedup interval was narrow enough,
 * the time cap, the most rounds there may be, an interrupt. */
#define FC_STOP_RULE_LIST(X)              \
    X(FC_RULE_, PRECISION, "precision")   \
    X(FC_RULE_, MAX_TIME, "max-time")     \
    X(FC_RULE_, MAX_ROUNDS, "max-rounds") \
    X(FC_RULE_, INTERRUPTED, "interrupted")
typedef enum { FC_STOP_RULE_LIST(FC_VOCAB_ENUM) FC_NSTOP_RULES } fc_stop_rule;

/* How a sample launches a variant's calls: eagerly, or as a replayed graph. */
#define FC_TIMING_LIST(X)         \
    X(FC_TIMING_, EAGER, "eager") \
    X(FC_TIMING_, GRAPH, "graph")
typedef enum { FC_TIMING_LIST(FC_VOCAB_ENUM) FC_NTIMINGS } fc_timing_mode;

/* Which speedup made a record's decision: the eager launches' (unfused/fused), the
 * graph replays' (launch-bound problems), or the fusion split's (control/fused, where
 * a control variant was measured: the fused form changes more than the fusion). */
#define FC_DECIDER_LIST(X)         \
    X(FC_DECIDER_, EAGER, "eager") \
    X(FC_DECIDER_, GRAPH, "graph") \
    X(FC_DECIDER_, FUSION, "fusion")
typedef enum { FC_DECIDER_LIST(FC_VOCAB_ENUM) FC_NDECIDERS } fc_decider;

/* Cache state while timing. */
#define FC_CACHE_LIST(X)       \
    X(FC_CACHE_, WARM, "warm") \
    X(FC_CACHE_, COLD, "cold")
typedef enum { FC_CACHE_LIST(FC_VOCAB_ENUM) FC_NCACHES } fc_cache;

/* cuda.custom's fused attention kernels (attention, qk_softmax), in the order of
 * fck_attn_kernel (kernels/fusecal_kernels.h; tests/test_cuda_host.c checks the
 * names): the reference design (64x64 tiles) and the FlashAttention-2 class one. */
#define FC_ATTN_KERNEL_LIST(X)          \
    X(FC_ATTN_, REFERENCE, "reference") \
    X(FC_ATTN_, FLASH2, "flash2")
typedef enum { FC_ATTN_KERNEL_LIST(FC_VOCAB_ENUM) FC_NATTN_KERNELS } fc_attn_kernel;

/* What bounds a variant on the roofline. */
#define FC_BOUND_LIST(X)           \
    X(FC_BOUND_, MEMORY, "memory") \
    X(FC_BOUND_, COMPUTE, "compute")
typedef enum { FC_BOUND_LIST(FC_VOCAB_ENUM) FC_NBOUNDS } fc_bound;

/* fusecal check's verdict on a record against its baseline and thresholds. */
#define FC_VERDICT_LIST(X)                                     \
    X(FC_VERDICT_, PASS, "pass")                               \
    X(FC_VERDICT_, IMPROVED, "improved")                       \
    X(FC_VERDICT_, SKIPPED, "skipped")                         \
    X(FC_VERDICT_, INCONCLUSIVE, "inconclusive")               \
    X(FC_VERDICT_, REGRESSED, "regressed")                     \
    X(FC_VERDICT_, BELOW_THRESHOLD, "below-threshold")         \
    X(FC_VERDICT_, FAILED_VERIFICATION, "failed-verification") \
    X(FC_VERDICT_, MISSING, "missing")
typedef enum { FC_VERDICT_LIST(FC_VOCAB_ENUM) FC_NVERDICTS } fc_verdict;

/* clang-format on */

extern const fc_words fc_dtype_words, fc_layout_words, fc_variant_words, fc_device_words, fc_backend_words,
    fc_format_words, fc_status_words, fc_decision_words, fc_stop_rule_words, fc_timing_words, fc_decider_words,
    fc_cache_words, fc_attn_kernel_words, fc_bound_words, fc_verdict_words;

/* The device a backend runs on. */
fc_device_id fc_backend_device(fc_backend_id b);

const char *fc_dtype_name(fc_dtype d);
int fc_dtype_parse(const char *s, fc_dtype *out); /* 0 or -1 */
const char *fc_layout_name(fc_layout l);
int fc_layout_parse(const char *s, fc_layout *out); /* nchw or nhwc; 0 or -1 */
const char *fc_variant_name(fc_variant v);
const char *fc_status_name(fc_status s);
const char *fc_decision_name(fc_decision d);
const char *fc_stop_rule_name(fc_stop_rule r);
const char *fc_verdict_name(fc_verdict v);
int fc_format_parse(const char *s, fc_format *out);
int fc_device_id_parse(const char *s, fc_device_id *out);
int fc_backend_id_parse(const char *s, fc_backend_id *out);

#endif
