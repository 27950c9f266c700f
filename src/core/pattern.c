/* pattern.c — pattern registry, problem strings, workloads. */
#include "pattern.h"
#include "precision.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define OPS_COUNT(...) ((int)(sizeof((fc_op[]){__VA_ARGS__}) / sizeof(fc_op)))

const fc_pattern fc_patterns[FC_NPATTERNS] = {
#define X(pname, fam, pmath, ...)    \
    {.id = FC_P_##pname,             \
     .name = #pname,                 \
     .family = fam,                  \
     .math = pmath,                  \
     .nops = OPS_COUNT(__VA_ARGS__), \
     .ops = {__VA_ARGS__}},
    FC_PATTERN_LIST(X)
#undef X
};
_Static_assert(FC_ARRAY_LEN(fc_patterns) == FC_NPATTERNS, "pattern table size");

static const char *const op_names[FC_NOPS] = {
    [FC_OP_GEMM] = "gemm",           [FC_OP_CONV] = "conv",       [FC_OP_QK] = "qk",
    [FC_OP_BIAS] = "bias",           [FC_OP_RESID] = "residual",  [FC_OP_RELU] = "relu",
    [FC_OP_GELU] = "gelu",           [FC_OP_BN] = "batchnorm",    [FC_OP_SCALE] = "scale",
    [FC_OP_SOFTMAX] = "softmax",     [FC_OP_PV] = "pv",           [FC_OP_ADD] = "add",
    [FC_OP_LAYERNORM] = "layernorm", [FC_OP_RMSNORM] = "rmsnorm", [FC_OP_HEAD_RMSNORM] = "head_rmsnorm",
    [FC_OP_ROPE] = "rope",           [FC_OP_SILU] = "silu",       [FC_OP_GLU_MUL] = "glu_mul",
    [FC_OP_GELU_IN] = "gelu_in",
};
_Static_assert(FC_ARRAY_LEN(op_names) == FC_NOPS, "op name table size");

const char *fc_op_name(fc_op op) { return (unsigned)op < FC_NOPS ? op_names[op] : "?"; }

const fc_pattern *fc_pattern_find(const char *name)
{
    for (int i = 0; i < FC_NPATTERNS; i++)
        if (strcmp(fc_patterns[i].name, name) == 0) return &fc_patterns[i];
    return NULL;
}

bool fc_pattern_has_op(const fc_pattern *p, fc_op op)
{
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i] == op) return true;
    return false;
}

int fc_pattern_live_intermediates(const fc_pattern *p)
{
    int n = p->nops - 1;
    return n < 0 ? 0 : n > 2 ? 2 : n;
}

int fc_pattern_chain_slot(const fc_pattern *p, int i) { return i == p->nops - 1 ? -1 : i % 2; }

const char *fc_pattern_names(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t off = 0;
        for (int i = 0; i < FC_NPATTERNS; i++)
            off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? ", " : "", fc_patterns[i].name);
    }
    return buf;
}

const fc_family *fc_family_of(const fc_pattern *pat)
{
    switch (pat->family) {
    case FC_FAM_LINEAR: return &fc_family_linear;
    case FC_FAM_CONV: return &fc_family_conv;
    case FC_FAM_ATTENTION: return &fc_family_attention;
    case FC_FAM_NORM: return fc_pattern_has_op(pat, FC_OP_HEAD_RMSNORM) ? &fc_family_norm_heads : &fc_family_norm;
    default: return NULL;
    }
}

/* ---------------------------------------------------------------- problems */

void fc_problem_init(fc_problem *p, const fc_pattern *pat, fc_dtype dtype)
{
    memset(p, 0, sizeof *p);
    p->pat = pat;
    p->dtype = dtype;
    const fc_family *f = fc_family_of(pat);
    for (int i = 0; i < f->ndims; i++) p->d[i] = f->dims[i].def;
    p->layout = f->has_layout ? FC_NHWC : FC_LAYOUT_NONE;
}

int fc_problem_dim_index(const fc_problem *p, const char *name)
{
    const fc_family *f = fc_family_of(p->pat);
    for (int i = 0; i < f->ndims; i++)
        if (!f->dims[i].derived && strcasecmp(f->dims[i].name, name) == 0) return i;
    return -1;
}

int fc_family_dim_follows(const fc_family *f, int i)
{
    if (i < 0 || i >= f->ndims || !f->dims[i].follows) return -1;
    for (int j = 0; j < f->ndims; j++)
        if (j != i && !strcmp(f->dims[j].name, f->dims[i].follows)) return j;
    return -1;
}

bool fc_problem_dim_is_default(const fc_problem *p, int i)
{
    const fc_family *f = fc_family_of(p->pat);
    int src = fc_family_dim_follows(f, i);
    if (src >= 0) return p->d[i] == p->d[src];
    return f->dims[i].def != FC_DIM_REQUIRED && p->d[i] == f->dims[i].def;
}

static void dim_names(const fc_family *f, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < f->ndims && off < n; i++)
        if (!f->dims[i].derived) off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", f->dims[i].name);
}

int fc_problem_set(fc_problem *p, const char *key, const char *val, fc_err *e)
{
    const fc_family *f = fc_family_of(p->pat);
    if (strcasecmp(key, "dtype") == 0) {
        if (fc_dtype_parse(val, &p->dtype) != 0)
            return fc_errf(e, "unknown dtype '%s' (valid: %s)", val, fc_words_valid(&fc_dtype_words));
        return 0;
    }
    if (strcasecmp(key, "layout") == 0) {
        if (!f->has_layout) return fc_errf(e, "pattern '%s' has no layout (got 'layout=%s')", p->pat->name, val);
        if (fc_layout_parse(val, &p->layout) != 0)
            return fc_errf(e, "unknown layout '%s' (valid: %s)", val, fc_words_valid(&fc_layout_words));
        return 0;
    }
    int i = fc_problem_dim_index(p, key);
    if (i < 0) {
        char names[256];
        dim_names(f, names, sizeof names);
        return fc_errf(e, "unknown dimension '%s' for pattern '%s' (valid: %s, dtype%s)", key, p->pat->name, names,
                       f->has_layout ? ", layout" : "");
    }
    int64_t v;
    if (!fc_parse_i64(val, &v)) return fc_errf(e, "bad value '%s=%s': not an integer", key, val);
    p->d[i] = v;
    return 0;
}

int fc_problem_finish(fc_problem *p, fc_err *e)
{
    const fc_family *f = fc_family_of(p->pat);
    for (int i = 0; i < f->ndims; i++) {
        const fc_dim *d = &f->dims[i];
        if (d->derived) continue;
        int src = fc_family_dim_follows(f, i);
        if (p->d[i] == FC_DIM_FOLLOWS && src >= 0) p->d[i] = p->d[src]; /* resolved already: it comes first */
        if (p->d[i] == FC_DIM_REQUIRED)
            return fc_errf(e, "missing dimension '%s' for pattern '%s'", d->name, p->pat->name);
        if (p->d[i] < d->min || p->d[i] > d->max)
            return fc_errf(e, "dimension '%s=%lld' out of range for pattern '%s' (%lld..%lld)", d->name,
                           (long long)p->d[i], p->pat->name, (long long)d->min, (long long)d->max);
    }
    return f->check(p, e);
}

int fc_problem_parse(const char *s, const fc_pattern *pattern, fc_problem *out, fc_err *e)
{
    char buf[1024];
    if (strlen(s) >= sizeof buf) return fc_errf(e, "problem string too long (%zu characters)", strlen(s));
    fc_strlcpy(buf, s, sizeof buf);
    char *body = buf;
    char *colon = strchr(buf, ':');
    const fc_pattern *pat = pattern;
    if (colon) {
        *colon = 0;
        body = colon + 1;
        pat = fc_pattern_find(buf);
        if (!pat) return fc_errf(e, "unknown pattern '%s' (valid: %s)", buf, fc_pattern_names());
        if (pattern && pattern != pat)
            return fc_errf(e, "problem string names pattern '%s' where '%s' was asked for", pat->name, pattern->name);
    } else if (!pat) {
        const fc_pattern *only = fc_pattern_find(buf);
        if (only) {
            pat = only;
            body = buf + strlen(buf);
        } else if (strchr(buf, '=')) {
            return fc_errf(e, "problem '%s' names no pattern (write 'pattern:k=v,...')", s);
        } else {
            return fc_errf(e, "unknown pattern '%s' (valid: %s)", buf, fc_pattern_names());
        }
    }
    fc_problem_init(out, pat, FC_FP32);
    if (body[0] == ',' || strstr(body, ",,")) return fc_errf(e, "bad token '' (empty) in problem '%s'", s);
    if (body[0] && body[strlen(body) - 1] == ',') return fc_errf(e, "bad token '' (trailing comma) in problem '%s'", s);
    uint32_t seen = 0;
    char *save = NULL;
    for (char *tok = strtok_r(body, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok || !eq[1]) return fc_errf(e, "bad token '%s' in problem '%s': expected k=v", tok, s);
        *eq = 0;
        int di = fc_problem_dim_index(out, tok);
        if (di >= 0) {
            if (seen & (1u << di)) return fc_errf(e, "dimension '%s' given twice in problem '%s'", tok, s);
            seen |= 1u << di;
        }
        if (fc_problem_set(out, tok, eq + 1, e) != 0) return -1;
    }
    return fc_problem_finish(out, e);
}

bool fc_problem_dim_shown(const fc_problem *p, int i)
{
    const fc_family *f = fc_family_of(p->pat);
    return !f->dims[i].derived && (!f->shown || f->shown(p, i));
}

void fc_problem_string(const fc_problem *p, char *buf, size_t n)
{
    const fc_family *f = fc_family_of(p->pat);
    size_t off = (size_t)snprintf(buf, n, "%s:", p->pat->name);
    for (int i = 0; i < f->ndims && off < n; i++)
        if (fc_problem_dim_shown(p, i))
            off += (size_t)snprintf(buf + off, n - off, "%s=%lld,", f->dims[i].name, (long long)p->d[i]);
    if (f->has_layout && off < n) off += (size_t)snprintf(buf + off, n - off, "layout=%s,", fc_layout_name(p->layout));
    if (off < n) snprintf(buf + off, n - off, "dtype=%s", fc_dtype_name(p->dtype));
}

bool fc_dims_product(const int64_t *v, int n, size_t *out)
{
    size_t acc = 1;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || !fc_mul_size(acc, (size_t)v[i], &acc)) return false;
    }
    *out = acc;
    return true;
}

/* ---------------------------------------------------------------- workloads */

/* Rounds inputs to what the device will hold (bf16, fp16, and tf32, which a
 * tensor core would otherwise truncate), so that the float64 reference sees the
 * same values; a value that rounds to zero is nudged back to the smallest non-zero. */
static void round_to_dtype(fc_tensor *t, fc_dtype dt)
{
    if (dt == FC_FP32) return;
    for (size_t i = 0; i < t->n; i++) {
        float v = fc_round_to_dtype(t->data[i], dt);
        if (v == 0.0f) v = t->data[i] < 0 ? -0x1p-14f : 0x1p-14f;
        t->data[i] = v;
    }
}

int fc_problem_host_bytes(const fc_problem *p, size_t *bytes, fc_err *e)
{
    fc_workload w = {.prob = p};
    fc_family_of(p->pat)->shapes(p, &w);
    /* inputs + two outputs + two intermediates + two host copies of outputs for checks */
    size_t total = 0, t;
    for (int i = 0; i < w.nt; i++)
        if (!fc_mul_size(w.t[i].n, sizeof(float), &t) || !fc_add_size(total, t, &total)) goto overflow;
    size_t per = 0;
    if (!fc_add_size(w.out_n, w.inter_n, &per) || !fc_mul_size(per, 4 * sizeof(float), &t) ||
        !fc_add_size(total, t, &total))
        goto overflow;
    *bytes = total;
    return 0;
overflow:
    return fc_errf(e, "problem '%s' is too large: its buffers overflow size_t", p->pat->name);
}

int fc_workload_create(const fc_problem *p, uint64_t seed, size_t mem_limit, fc_workload *w, fc_err *e)
{
    memset(w, 0, sizeof *w);
    size_t need;
    if (fc_problem_host_bytes(p, &need, e) != 0) return -1;
    size_t avail = fc_host_mem_available();
    size_t limit = mem_limit && mem_limit < avail ? mem_limit : avail;
    if (need > limit)
        return fc_errf(e, "needs %.2f GiB of host memory, %.2f GiB %s", (double)need / (1 << 30),
                       (double)limit / (1 << 30), limit == mem_limit ? "allowed by --max-memory" : "available");
    if (fc_fault("host-alloc")) return fc_errf(e, "host allocation of %zu bytes failed (injected fault)", need);
    const fc_family *f = fc_family_of(p->pat);
    w->prob = p;
    f->shapes(p, w);
    for (int i = 0; i < w->nt; i++) w->t[i].data = fc_aligned_alloc(w->t[i].n * sizeof(float));
    fc_rng rng;
    fc_rng_seed(&rng, seed);
    f->fill(p, w, &rng);
    for (int i = 0; i < w->nt; i++)
        if (!w->t[i].derived) round_to_dtype(&w->t[i], p->dtype);
    if (f->prepare) {
        double t0 = fc_now();
        f->prepare(p, w);
        w->prepare_ms = (fc_now() - t0) * 1e3;
        /* what a deployment stores, in the dtype too (folded weights and bias) */
        for (int i = 0; i < w->nt; i++)
            if (w->t[i].derived) round_to_dtype(&w->t[i], p->dtype);
    }
    return 0;
}

void fc_workload_free(fc_workload *w)
{
    for (int i = 0; i < w->nt; i++) free(w->t[i].data);
    memset(w, 0, sizeof *w);
}

void fc_cost_op(fc_cost *c, int i, double flops, double bytes)
{
    c->op_flops[i] = flops;
    c->op_bytes[i] = bytes;
    c->flops += flops;
    c->bytes[FC_UNFUSED] += bytes;
}

void fc_cost_close(fc_cost *c, const fc_pattern *pat, double fused_bytes, double inter_bytes)
{
    c->bytes[FC_FUSED] = fused_bytes;
    c->peak_inter[FC_UNFUSED] = fc_pattern_live_intermediates(pat) * inter_bytes;
    c->peak_inter[FC_FUSED] = 0;
}
