/* pattern.h — the pattern registry and problems.
 *
 * A pattern is an op chain (GEMM → bias → ReLU, conv → BN → ReLU, QKᵀ → scale →
 * softmax → ·V, add → norm). Its family (linear, conv, attention, norm) knows the dimensions, the
 * FLOPs and bytes on paper, how to make inputs, and a float64 reference.
 *
 * Adding a pattern: one FC_PATTERN_LIST line here, its ops in the family file if
 * the family lacks one, its catalogue entry in patterns/<family>.json, and, for a
 * new op, a row in the op table of each backend that implements it (backend.h):
 * backends without one turn the pattern down, and the conformance tests check it
 * on every backend that takes it. A new op may need a term in the tolerance model
 * (precision.c), and needs a case in its simulation (tests/test_precision.c), which
 * fails on an op it cannot simulate.
 */
#ifndef FC_PATTERN_H
#define FC_PATTERN_H

#include "fusecal.h"
#include "util.h"

typedef enum { FC_FAM_LINEAR, FC_FAM_CONV, FC_FAM_ATTENTION, FC_FAM_NORM, FC_NFAMILIES } fc_family_id;

/* The ops a chain is made of. In the unfused variant each is its own library call or
 * kernel and writes its result to memory. */
typedef enum {
    FC_OP_GEMM,    /* y = x·Wᵀ (linear)                                        */
    FC_OP_CONV,    /* y = conv(x, W) + b (the conv's own bias is part of it)  */
    FC_OP_QK,      /* S = Q·Kᵀ                                                */
    FC_OP_BIAS,    /* y += b, per output feature                              */
    FC_OP_RESID,   /* y += r, a tensor of the output's shape                  */
    FC_OP_RELU,    /* y = max(y, 0)                                           */
    FC_OP_GELU,    /* y = gelu_tanh(y)                                        */
    FC_OP_BN,      /* y = (y − μ)·γ/√(σ²+ε) + β, inference, per channel       */
    FC_OP_SCALE,   /* S = S/√d (and the causal mask when asked)               */
    FC_OP_SOFTMAX, /* P = softmax(S) along the last axis                      */
    FC_OP_PV,      /* O = P·V                                                 */
    FC_OP_SILU,    /* s = silu(g), g the gate half of a gated unit's GEMM out */
    FC_OP_GLU_MUL, /* y = s ⊙ u, u the up half of that output                 */
    FC_OP_GELU_IN, /* x = gelu_tanh(x) on the GEMM's input (a prologue)       */

    /* the norm family's: the residual add h = x + r (a chain's first op); the layer
     * norm (h − mean)/√(var + ε)·γ + β and RMSNorm h/√(mean(h²) + ε)·γ over each row
     * of n; RMSNorm over each head of d with one γ [d]; the rotary embedding of each
     * head (rotate-half: pairs i, i + d/2) */
    FC_OP_ADD,
    FC_OP_LAYERNORM,
    FC_OP_RMSNORM,
    FC_OP_HEAD_RMSNORM,
    FC_OP_ROPE,
    FC_NOPS
} fc_op;

const char *fc_op_name(fc_op op);

#define FC_MAX_OPS 6

/* name, family, formula, ops of the chain in order */
#define FC_PATTERN_LIST(X)                                                                                            \
    X(linear_bias, FC_FAM_LINEAR, "y = x·Wᵀ + b", FC_OP_GEMM, FC_OP_BIAS)                                             \
    X(linear_bias_relu, FC_FAM_LINEAR, "y = relu(x·Wᵀ + b)", FC_OP_GEMM, FC_OP_BIAS, FC_OP_RELU)                      \
    X(linear_bias_gelu, FC_FAM_LINEAR, "y = gelu_tanh(x·Wᵀ + b)", FC_OP_GEMM, FC_OP_BIAS, FC_OP_GELU)                 \
    X(linear_residual_relu, FC_FAM_LINEAR, "y = relu(x·Wᵀ + b + r)", FC_OP_GEMM, FC_OP_BIAS, FC_OP_RESID, FC_OP_RELU) \
    X(linear_swiglu, FC_FAM_LINEAR, "y = silu(x·W_gᵀ) ⊙ (x·W_uᵀ)", FC_OP_GEMM, FC_OP_SILU, FC_OP_GLU_MUL)             \
    X(gelu_linear, FC_FAM_LINEAR, "y = gelu_tanh(x)·Wᵀ + b", FC_OP_GELU_IN, FC_OP_GEMM, FC_OP_BIAS)                   \
    X(conv_relu, FC_FAM_CONV, "y = relu(conv(x, W) + b)", FC_OP_CONV, FC_OP_RELU)                                     \
    X(conv_bn, FC_FAM_CONV, "y = bn(conv(x, W) + b)", FC_OP_CONV, FC_OP_BN)                                           \
    X(conv_bn_relu, FC_FAM_CONV, "y = relu(bn(conv(x, W) + b))", FC_OP_CONV, FC_OP_BN, FC_OP_RELU)                    \
    X(dwconv_bn_relu, FC_FAM_CONV, "y = relu(bn(dwconv(x, W) + b))", FC_OP_CONV, FC_OP_BN, FC_OP_RELU)                \
    X(conv_bn_add_relu, FC_FAM_CONV, "y = relu(bn(conv(x, W) + b) + r)", FC_OP_CONV, FC_OP_BN, FC_OP_RESID,           \
      FC_OP_RELU)                                                                                                     \
    X(qk_scale, FC_FAM_ATTENTION, "S = Q·Kᵀ/√d", FC_OP_QK, FC_OP_SCALE)                                               \
    X(qk_softmax, FC_FAM_ATTENTION, "P = softmax(Q·Kᵀ/√d)", FC_OP_QK, FC_OP_SCALE, FC_OP_SOFTMAX)                     \
    X(attention, FC_FAM_ATTENTION, "O = softmax(Q·Kᵀ/√d)·V", FC_OP_QK, FC_OP_SCALE, FC_OP_SOFTMAX, FC_OP_PV)          \
    X(add_layernorm, FC_FAM_NORM, "y = LN(x + r)·γ + β", FC_OP_ADD, FC_OP_LAYERNORM)                                  \
    X(add_rmsnorm, FC_FAM_NORM, "y = RMSNorm(x + r)·γ; h = x + r", FC_OP_ADD, FC_OP_RMSNORM)                          \
    X(qk_norm_rope, FC_FAM_NORM, "q' = rope(RMSNorm_d(q)·γ)", FC_OP_HEAD_RMSNORM, FC_OP_ROPE)

typedef enum {
#define X(name, fam, math, ...) FC_P_##name,
    FC_PATTERN_LIST(X)
#undef X
        FC_NPATTERNS
} fc_pattern_id;

typedef struct fc_pattern {
    fc_pattern_id id;
    const char *name;
    fc_family_id family;
    const char *math;
    int nops;
    fc_op ops[FC_MAX_OPS];
} fc_pattern;

extern const fc_pattern fc_patterns[FC_NPATTERNS];
const fc_pattern *fc_pattern_find(const char *name);
bool fc_pattern_has_op(const fc_pattern *p, fc_op op);
/* Intermediates of the unfused chain alive at once: op i writes what op i + 1 reads,
 * so two buffers alternate along a chain of three ops or more, one serves a chain of
 * two, and a single op writes the output directly. */
int fc_pattern_live_intermediates(const fc_pattern *p);
/* Where op i of the unfused chain writes: -1 for the chain's output (its last op),
 * else the intermediate 0, 1, 0, 1, ... (below fc_pattern_live_intermediates). */
int fc_pattern_chain_slot(const fc_pattern *p, int i);
/* "linear_bias, linear_bias_relu, ..." for error messages */
const char *fc_pattern_names(void);

/* ---------------------------------------------------------------- dimensions */

#define FC_MAX_DIMS 12

/* Dimension indices of each family, in the order problem strings print them. */
enum { FC_LIN_M, FC_LIN_K, FC_LIN_N, FC_LIN_NDIMS };
enum {
    FC_CONV_N,
    FC_CONV_C,
    FC_CONV_H,
    FC_CONV_W,
    FC_CONV_K,
    FC_CONV_R,
    FC_CONV_S,
    FC_CONV_STRIDE,
    FC_CONV_PAD,
    FC_CONV_G, /* groups: c and k split into g independent convolutions */
    FC_CONV_P,
    FC_CONV_Q, /* derived: output height and width */
    FC_CONV_NDIMS
};
enum { FC_ATT_B, FC_ATT_H, FC_ATT_HKV, FC_ATT_S, FC_ATT_SKV, FC_ATT_D, FC_ATT_CAUSAL, FC_ATT_NDIMS };
/* norm: m rows (tokens), n hidden; qk_norm_rope gives h heads of d instead, n = h·d */
enum { FC_NORM_M, FC_NORM_N, FC_NORM_H, FC_NORM_D, FC_NORM_NDIMS };

typedef struct fc_dim {
    const char *name; /* lower case, unique in its family regardless of case */
    int64_t def;      /* default; FC_DIM_REQUIRED when the user must give it, FC_DIM_FOLLOWS for another dim's value */
    int64_t min, max;
    bool derived; /* computed, never parsed */
    const char *help;
    const char *follows; /* with FC_DIM_FOLLOWS: the dim whose value is the default (hkv: h), else NULL */
} fc_dim;
#define FC_DIM_REQUIRED INT64_MIN
#define FC_DIM_FOLLOWS (INT64_MIN + 1)

/* ---------------------------------------------------------------- problems */

typedef struct fc_problem {
    const fc_pattern *pat;
    int64_t d[FC_MAX_DIMS];
    fc_dtype dtype;
    fc_layout layout; /* FC_LAYOUT_NONE for families without one */
} fc_problem;

/* Input tensors of each family, by index into fc_workload.in[]. A gated unit's
 * (linear_swiglu) W is [2n, k]: rows 0..n-1 the gate projection W_g, rows n..2n-1
 * the up projection W_u, so that its GEMM's [m, 2n] output holds the gate in columns
 * 0..n-1 and the up half in n..2n-1; it has no bias (b of 0 elements). */
enum { FC_LIN_TX, FC_LIN_TW, FC_LIN_TB, FC_LIN_TR, FC_LIN_NT };
enum {
    FC_CONV_TX,
    FC_CONV_TW,
    FC_CONV_TB,
    FC_CONV_TGAMMA,
    FC_CONV_TBETA,
    FC_CONV_TMEAN,
    FC_CONV_TVAR,
    FC_CONV_TWF,
    FC_CONV_TBF, /* BN folded into W and b (filled by fc_workload_prepare) */
    FC_CONV_TR,  /* residual r, the output's shape and layout (empty without FC_OP_RESID) */
    FC_CONV_NT
};
enum { FC_ATT_TQ, FC_ATT_TK, FC_ATT_TV, FC_ATT_NT };
/* norm: x (q for qk_norm_rope) and r [m, n], γ and β [n] (γ [d] per head) */
enum { FC_NORM_TX, FC_NORM_TR, FC_NORM_TGAMMA, FC_NORM_TBETA, FC_NORM_NT };
#define FC_MAX_TENSORS 10

/* Host copies of a problem's inputs, in float32 (values already rounded to the
 * problem's dtype, so the float64 reference sees exactly what the device sees). */
typedef struct fc_tensor {
    const char *name;
    float *data;
    size_t n;
    bool derived; /* made from other inputs (folded BN), not random */
} fc_tensor;

typedef struct fc_workload {
    const fc_problem *prob;
    int nt;
    fc_tensor t[FC_MAX_TENSORS];
    size_t out_n;      /* elements of the output */
    size_t out_row;    /* elements of one row of the output as a matrix (its innermost extent) */
    size_t inter_n;    /* elements of the chain's intermediate tensor */
    double prepare_ms; /* time to fold BN and the like; never counted as latency */
    bool cold;         /* the caches are flushed before every call (settings.cold): for setups that
                        * choose how to move data by where it lies */
} fc_workload;

/* Analytic cost of a problem, counted on paper. */
typedef struct fc_cost {
    double flops;         /* useful FLOPs of the chain, the same for both variants */
    double flops_padded;  /* conv: counting the multiply-adds on zero padding too (0 elsewhere) */
    double bytes[2];      /* bytes read + written by the unfused chain / the fused op */
    double peak_inter[2]; /* bytes of intermediates alive at once */
    double op_flops[FC_MAX_OPS];
    double op_bytes[FC_MAX_OPS]; /* per op of the unfused chain */
} fc_cost;

/* The families' cost functions count op by op: fc_cost_op adds op i's FLOPs and
 * bytes to the unfused chain; fc_cost_close sets the fused op's bytes and the
 * intermediates alive at once (the pattern's live count × inter_bytes, none fused). */
void fc_cost_op(fc_cost *c, int i, double flops, double bytes);
void fc_cost_close(fc_cost *c, const fc_pattern *pat, double fused_bytes, double inter_bytes);

typedef struct fc_family {
    const char *name;
    const fc_dim *dims;
    int ndims;
    bool has_layout;
    /* Checks dims (after defaults), fills derived ones and the workload sizes. */
    int (*check)(fc_problem *p, fc_err *e);
    void (*cost)(const fc_problem *p, fc_cost *c);
    /* Tensor names and element counts, and sizes of output and intermediate. */
    void (*shapes)(const fc_problem *p, fc_workload *w);
    /* Random inputs (never zero). */
    void (*fill)(const fc_problem *p, fc_workload *w, fc_rng *rng);
    /* Work a deployment does once, before any timing (BN folding); may be NULL. */
    void (*prepare)(const fc_problem *p, fc_workload *w);
    /* One output element in float64 from the original (unfolded) inputs. */
    double (*reference)(const fc_problem *p, const fc_workload *w, size_t idx);
    /* Multiply-adds per reference element, to decide between full and sampled checks. */
    double (*ref_cost)(const fc_problem *p);
    /* Length of the chain's longest sum (a GEMM's k, a conv's c/g·r·s, attention's d,
     * or s for a softmax and P·V), for the tolerance (precision.h). */
    double (*reduction)(const fc_problem *p);
    /* Whether the canonical string names dim i: one the others imply (a depthwise
     * conv's g) or at a default that leaves the problem as it was before the dim
     * existed (g = 1) may be left out. NULL: every dim. */
    bool (*shown)(const fc_problem *p, int i);
} fc_family;

extern const fc_family fc_family_linear, fc_family_conv, fc_family_attention;
/* The norm family's patterns differ in their dims: m, n for add_layernorm and
 * add_rmsnorm; m, h, d for qk_norm_rope (n = h·d derived). fc_family_of answers
 * with the pattern's; both are named "norm". */
extern const fc_family fc_family_norm, fc_family_norm_heads;
const fc_family *fc_family_of(const fc_pattern *pat);

/* Parses "pattern:k=v,k=v" (dims, and the keys dtype= and layout=). With pattern
 * NULL the string must name one; otherwise it may be just "k=v,..." for that
 * pattern. Unset dims take their defaults; required ones must be present. Keys
 * are matched regardless of case (M=512 is m=512: a family's dims are unique
 * regardless of case, tests/test_pattern.c checks it); the canonical string is
 * lower case. */
int fc_problem_parse(const char *s, const fc_pattern *pattern, fc_problem *out, fc_err *e);
/* Sets one "k=v" (dim, dtype or layout) on an initialised problem. */
int fc_problem_set(fc_problem *p, const char *key, const char *val, fc_err *e);
/* Starts a problem with defaults (required dims unset). */
void fc_problem_init(fc_problem *p, const fc_pattern *pat, fc_dtype dtype);
/* Validates and fills derived dims; call after the last set. */
int fc_problem_finish(fc_problem *p, fc_err *e);
/* The canonical, re-runnable string. */
void fc_problem_string(const fc_problem *p, char *buf, size_t n);
/* Whether the canonical string and shape strings name dim i (never a derived one). */
bool fc_problem_dim_shown(const fc_problem *p, int i);
/* Looks a dim up by name, regardless of case; -1 when the family has none. */
int fc_problem_dim_index(const fc_problem *p, const char *name);
/* The dim whose value dim i takes by default (attention's hkv: h, skv: s), or -1. */
int fc_family_dim_follows(const fc_family *f, int i);
/* Whether dim i of a finished problem holds its default: its fixed default, or the
 * value of the dim it follows (false for required dims). Problem strings print every
 * dim; tables leave such dims out. */
bool fc_problem_dim_is_default(const fc_problem *p, int i);

/* Workload: allocates and fills host inputs; fails before allocating when the
 * problem would not fit in host memory (limit 0 = what the kernel reports). */
int fc_workload_create(const fc_problem *p, uint64_t seed, size_t mem_limit, fc_workload *w, fc_err *e);
void fc_workload_free(fc_workload *w);
/* Host bytes a problem needs, inputs, outputs and intermediates together. */
int fc_problem_host_bytes(const fc_problem *p, size_t *bytes, fc_err *e);

/* Columns of a linear problem's GEMM output: 2n for a gated unit (the gate and up
 * halves side by side), else n. */
int64_t fc_linear_gemm_n(const fc_problem *p);

/* float64 references shared by the families and the tests */
double fc_gelu_tanh_ref(double x);
double fc_silu_ref(double x);
#define FC_BN_EPS 1e-5
#define FC_LN_EPS 1e-5  /* PyTorch's layer_norm default */
#define FC_RMS_EPS 1e-6 /* LLaMA's and Qwen3's rms_norm_eps */
#define FC_ROPE_BASE 10000.0
/* The rotary table an engine precomputes: for each position p < m, cs[p·d + i] =
 * cos(p·θᵢ) and cs[p·d + d/2 + i] = sin(p·θᵢ), θᵢ = base^(−2i/d), i < d/2; float32
 * whatever the dtype (computed in float64, rounded once). cs holds m·d floats. */
void fc_rope_table(int64_t m, int64_t d, float *cs);
/* Folds BN into the conv's weights and bias (fills W_folded, b_folded). */
void fc_conv_fold_bn(const fc_problem *p, fc_workload *w);

/* Checked product of dims, for shape functions. */
bool fc_dims_product(const int64_t *v, int n, size_t *out);

#endif
