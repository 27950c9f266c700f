/* crossing.c — see crossing.h. */
#include "crossing.h"
#include "jsonfile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool fc_crossing_usable(const fc_record *r)
{
    const double s = fc_record_decisive_speedup(r)->ratio;
    return r->prob.pat && r->status == FC_STATUS_OK && s > 0 && isfinite(s) && r->threshold > 0 &&
           isfinite(r->threshold) && r->flops > 0 && isfinite(r->flops);
}

/* flags (causal) and derived dims (p, q) are never swept */
static bool sweepable(const fc_dim *d) { return !d->derived && d->max > 1; }

/* Whether a and b lie on one line along dim: the same pattern, dtype, layout, every
 * other dim, and (with_backend) backend. A dim that follows dim by default (skv along
 * s) moves with it where it holds its default, and is a fixed value elsewhere: both
 * hold the default, or neither does and their values agree. Both ways or neither, so
 * the lines are the same whatever order the records come in (s=2048 with its default
 * skv and s=1 with skv=2048 given are on two lines, as s=256 with its default is on
 * the first alone). */
static bool same_line(const fc_record *a, const fc_record *b, int dim, bool with_backend)
{
    if (a->prob.pat != b->prob.pat || a->prob.dtype != b->prob.dtype || a->prob.layout != b->prob.layout) return false;
    if (with_backend && strcmp(a->backend, b->backend)) return false;
    const fc_family *f = fc_family_of(a->prob.pat);
    for (int i = 0; i < f->ndims; i++) {
        if (i == dim || f->dims[i].derived) continue;
        if (fc_family_dim_follows(f, i) == dim) {
            const bool da = fc_problem_dim_is_default(&a->prob, i), db = fc_problem_dim_is_default(&b->prob, i);
            if (da != db || (!da && a->prob.d[i] != b->prob.d[i])) return false;
        } else if (a->prob.d[i] != b->prob.d[i]) {
            return false;
        }
    }
    return true;
}

/* Records of recs[i]'s line along dim, one per value of dim (the first), ordered
 * by it; marks them taken. Returns how many. */
static int collect(const fc_record *const *recs, int n, int i, int dim, bool *taken, const fc_record **m)
{
    int k = 0;
    for (int j = i; j < n; j++) {
        bool *t = &taken[(size_t)j * FC_MAX_DIMS + dim];
        if (*t || !fc_crossing_usable(recs[j]) || !same_line(recs[i], recs[j], dim, true)) continue;
        *t = true;
        int64_t v = recs[j]->prob.d[dim];
        int at = k;
        while (at > 0 && m[at - 1]->prob.d[dim] > v) at--;
        if (at > 0 && m[at - 1]->prob.d[dim] == v) continue; /* the same problem again */
        memmove(&m[at + 1], &m[at], (size_t)(k - at) * sizeof *m);
        m[at] = recs[j];
        k++;
    }
    return k;
}

/* The value a fraction t of the way from a to b: log-linear when both are positive. */
static double lerp(double a, double b, double t)
{
    return a > 0 && b > 0 ? exp(log(a) + t * (log(b) - log(a))) : a + t * (b - a);
}

/* The crossing between the decided records m[from] and m[to] (opposite decisions). */
static fc_crossing between(const fc_record **m, int from, int to, int dim, int line)
{
    const fc_record *r1 = m[from], *r2 = m[to];
    fc_crossing c = {.line = line,
                     .threshold = sqrt(r1->threshold * r2->threshold),
                     .falls = r1->decision == FC_DECIDE_YES,
                     .from = r1,
                     .to = r2};
    for (int i = from; i < to; i++) {
        double d1 = log(fc_record_decisive_speedup(m[i])->ratio / c.threshold),
               d2 = log(fc_record_decisive_speedup(m[i + 1])->ratio / c.threshold);
        if (!(c.falls ? d1 >= 0 && d2 < 0 : d1 <= 0 && d2 > 0)) continue;
        double t = d1 / (d1 - d2);
        c.at = lerp((double)m[i]->prob.d[dim], (double)m[i + 1]->prob.d[dim], t);
        c.flops = lerp(m[i]->flops, m[i + 1]->flops, t);
        return c;
    }
    /* the medians do not straddle it (the two thresholds differ): halfway */
    c.at = lerp((double)r1->prob.d[dim], (double)r2->prob.d[dim], 0.5);
    c.flops = lerp(r1->flops, r2->flops, 0.5);
    return c;
}

static void add_line(fc_crossings *x, int *caplines, int *capcross, const fc_record **m, int k, int dim)
{
    if (x->nlines == *caplines) {
        *caplines = *caplines ? 2 * *caplines : 16;
        x->lines = fc_xrealloc(x->lines, (size_t)*caplines * sizeof *x->lines);
    }
    fc_sweep_line *l = &x->lines[x->nlines];
    *l = (fc_sweep_line){.rec = m[0],
                         .dim = dim,
                         .n = k,
                         .lo = m[0]->prob.d[dim],
                         .hi = m[k - 1]->prob.d[dim],
                         .first = x->n};
    int last = -1;
    for (int j = 0; j < k; j++) {
        fc_decision dj = m[j]->decision;
        l->yes += dj == FC_DECIDE_YES;
        l->no += dj == FC_DECIDE_NO;
        l->inconclusive += dj != FC_DECIDE_YES && dj != FC_DECIDE_NO;
        if (dj != FC_DECIDE_YES && dj != FC_DECIDE_NO) continue;
        if (last >= 0 && dj != m[last]->decision) {
            if (x->n == *capcross) {
                *capcross = *capcross ? 2 * *capcross : 16;
                x->cross = fc_xrealloc(x->cross, (size_t)*capcross * sizeof *x->cross);
            }
            x->cross[x->n++] = between(m, last, j, dim, x->nlines);
            l->ncross++;
        }
        last = j;
    }
    x->nlines++;
}

void fc_crossings_find(const fc_record *const *recs, int n, fc_crossings *out)
{
    memset(out, 0, sizeof *out);
    int caplines = 0, capcross = 0;
    bool *taken = fc_xcalloc((size_t)(n > 0 ? n : 1) * FC_MAX_DIMS, sizeof *taken);
    const fc_record **m = fc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *m);
    for (int i = 0; i < n; i++) {
        if (!fc_crossing_usable(recs[i])) continue;
        const fc_family *f = fc_family_of(recs[i]->prob.pat);
        for (int d = 0; d < f->ndims; d++) {
            if (!sweepable(&f->dims[d]) || taken[(size_t)i * FC_MAX_DIMS + d]) continue;
            int k = collect(recs, n, i, d, taken, m);
            if (k >= 2) add_line(out, &caplines, &capcross, m, k, d);
        }
    }
    free(m);
    free(taken);
}

void fc_crossings_free(fc_crossings *x)
{
    free(x->lines);
    free(x->cross);
    memset(x, 0, sizeof *x);
}

/* ------------------------------------------------------------------ words */

const char *fc_sweep_line_dim(const fc_sweep_line *l) { return fc_family_of(l->rec->prob.pat)->dims[l->dim].name; }

void fc_sweep_line_fixed(const fc_sweep_line *l, char *buf, size_t n)
{
    const fc_problem *p = &l->rec->prob;
    const fc_family *f = fc_family_of(p->pat);
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < f->ndims && off < n; i++) {
        const fc_dim *d = &f->dims[i];
        if (i == l->dim || d->derived) continue;
        if (fc_problem_dim_is_default(p, i) && strcmp(d->name, "r") && strcmp(d->name, "s")) continue;
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%lld", off ? "," : "", d->name, (long long)p->d[i]);
    }
    if (f->has_layout && off < n) snprintf(buf + off, n - off, "%s%s", off ? "," : "", fc_layout_name(p->layout));
}

/* 12.3, 1.5, 4568: three digits, no exponent for the values dims take */
static void at_text(double v, char *buf, size_t n) { snprintf(buf, n, v >= 100 ? "%.0f" : "%.3g", v); }

void fc_crossing_text(const fc_crossings *x, const fc_crossing *c, bool ascii, char *buf, size_t n)
{
    const fc_sweep_line *l = &x->lines[c->line];
    const char *dim = fc_sweep_line_dim(l), *times = ascii ? "x" : "\xC3\x97", *approx = ascii ? "~" : "\xE2\x89\x88";
    char fixed[256], at[32];
    fc_sweep_line_fixed(l, fixed, sizeof fixed);
    at_text(c->at, at, sizeof at);
    snprintf(buf, n, "speedup %s the %.3g%s threshold along %s (%s) at %s %s %s (fuse: %s at %s=%lld, %s at %s=%lld)",
             c->falls ? "falls below" : "rises above", c->threshold, times, dim, fixed, dim, approx, at,
             fc_decision_name(c->from->decision), dim, (long long)c->from->prob.d[l->dim],
             fc_decision_name(c->to->decision), dim, (long long)c->to->prob.d[l->dim]);
}

/* ------------------------------------------------------------------ compare */

typedef struct moves {
    fc_crossing_move *m;
    int n, cap;
} moves;

static void push_move(moves *v, fc_crossing_move m)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 16;
        v->m = fc_xrealloc(v->m, (size_t)v->cap * sizeof *v->m);
    }
    v->m[v->n++] = m;
}

/* The k-th crossing of line l in direction falls, or NULL. */
static const fc_crossing *kth(const fc_crossings *x, const fc_sweep_line *l, bool falls, int k)
{
    for (int i = l ? l->first : 0; l && i < l->first + l->ncross; i++)
        if (x->cross[i].falls == falls && k-- == 0) return &x->cross[i];
    return NULL;
}

/* Pairs the crossings of two matching lines (either may be NULL), direction by direction, in order. */
static void pair_lines(moves *v, const fc_crossings *a, const fc_sweep_line *la, const fc_crossings *b,
                       const fc_sweep_line *lb)
{
    for (int dir = 1; dir >= 0; dir--)
        for (int k = 0;; k++) {
            const fc_crossing *ca = kth(a, la, dir, k), *cb = kth(b, lb, dir, k);
            if (!ca && !cb) break;
            push_move(v, (fc_crossing_move){la, lb, ca, cb});
        }
}

int fc_crossing_moves(const fc_crossings *a, const fc_crossings *b, fc_match_by by, fc_crossing_move **out)
{
    moves v = {0};
    bool *seen = fc_xcalloc((size_t)(b->nlines ? b->nlines : 1), sizeof *seen);
    for (int i = 0; i < a->nlines; i++) {
        const fc_sweep_line *la = &a->lines[i];
        bool matched = false;
        for (int j = 0; j < b->nlines; j++) {
            const fc_sweep_line *lb = &b->lines[j];
            if (lb->dim != la->dim || !same_line(la->rec, lb->rec, la->dim, by == FC_MATCH_PROBLEM_BACKEND)) continue;
            matched = seen[j] = true;
            pair_lines(&v, a, la, b, lb);
        }
        if (!matched) pair_lines(&v, a, la, b, NULL);
    }
    for (int j = 0; j < b->nlines; j++)
        if (!seen[j]) pair_lines(&v, a, NULL, b, &b->lines[j]);
    free(seen);
    *out = v.m;
    return v.n;
}

/* every record of a document, for fc_crossings_find */
static void doc_crossings(const fc_doc *d, fc_crossings *x)
{
    const fc_record **r = fc_xmalloc((size_t)(d->n ? d->n : 1) * sizeof *r);
    for (int i = 0; i < d->n; i++) r[i] = &d->rec[i];
    fc_crossings_find(r, d->n, x);
    free(r);
}

/* "m ~ 12.3", "none (3 sizes: 2 yes, 1 no, 0 inconclusive)", "not measured" */
static void side_text(const fc_sweep_line *l, const fc_crossing *c, char *buf, size_t n)
{
    char at[32];
    if (c) {
        at_text(c->at, at, sizeof at);
        snprintf(buf, n, "%s ~ %s", fc_sweep_line_dim(l), at);
    } else if (l) {
        snprintf(buf, n, "none (%d sizes: %d yes, %d no, %d inconclusive)", l->n, l->yes, l->no, l->inconclusive);
    } else {
        snprintf(buf, n, "not measured");
    }
}

static void move_text(fc_str *o, const fc_crossing_move *m, bool md)
{
    const fc_sweep_line *l = m->la ? m->la : m->lb;
    const fc_crossing *c = m->a ? m->a : m->b;
    const fc_problem *p = &l->rec->prob;
    char fixed[256], sa[96], sb[96], backend[80];
    fc_sweep_line_fixed(l, fixed, sizeof fixed);
    side_text(m->la, m->a, sa, sizeof sa);
    side_text(m->lb, m->b, sb, sizeof sb);
    if (m->la && m->lb && strcmp(m->la->rec->backend, m->lb->rec->backend))
        snprintf(backend, sizeof backend, "%s -> %s", m->la->rec->backend, m->lb->rec->backend);
    else
        fc_strlcpy(backend, l->rec->backend, sizeof backend);
    fc_str_addf(o, "%s%s %s %s along %s (%s): %s %.3gx: %s -> %s", md ? "- " : "  ", p->pat->name, backend,
                fc_dtype_name(p->dtype), fc_sweep_line_dim(l), fixed, c->falls ? "falls below" : "rises above",
                c->threshold, sa, sb);
    if (m->a && m->b && m->a->at > 0) fc_str_addf(o, " (B/A %.3gx)", m->b->at / m->a->at);
    if (m->a && m->b && fabs(m->a->threshold - m->b->threshold) > 1e-9)
        fc_str_addf(o, " (thresholds %.3gx -> %.3gx)", m->a->threshold, m->b->threshold);
    fc_str_add(o, "\n");
}

void fc_crossing_compare_text(fc_str *o, const fc_doc *a, const fc_doc *b, fc_match_by by, bool md)
{
    fc_crossings xa, xb;
    doc_crossings(a, &xa);
    doc_crossings(b, &xb);
    fc_crossing_move *m;
    int n = fc_crossing_moves(&xa, &xb, by, &m);
    if (!n) {
        fc_str_add(o, "\nno threshold crossing along one dimension (the others fixed) in A or B\n");
    } else {
        fc_str_addf(o, "\n%sthreshold crossings along one dimension (the others fixed), A -> B%s\n", md ? "### " : "",
                    md ? "\n" : ":");
        for (int i = 0; i < n; i++) move_text(o, &m[i], md);
    }
    free(m);
    fc_crossings_free(&xa);
    fc_crossings_free(&xb);
}

static cJSON *side_json(const fc_sweep_line *l, const fc_crossing *c)
{
    if (!l) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", l->rec->backend);
    cJSON_AddNumberToObject(o, "sizes", l->n);
    cJSON_AddNumberToObject(o, "yes", l->yes);
    cJSON_AddNumberToObject(o, "no", l->no);
    cJSON_AddNumberToObject(o, "inconclusive", l->inconclusive);
    if (!c) {
        cJSON_AddNullToObject(o, "crossing");
        return o;
    }
    cJSON *x = cJSON_AddObjectToObject(o, "crossing");
    fc_json_add_num(x, "at", c->at);
    fc_json_add_num(x, "flops", c->flops);
    fc_json_add_num(x, "threshold", c->threshold);
    return o;
}

static cJSON *move_json(const fc_crossing_move *m)
{
    const fc_sweep_line *l = m->la ? m->la : m->lb;
    const fc_problem *p = &l->rec->prob;
    const fc_family *f = fc_family_of(p->pat);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "pattern", p->pat->name);
    cJSON_AddStringToObject(o, "dtype", fc_dtype_name(p->dtype));
    cJSON_AddStringToObject(o, "layout", fc_layout_name(p->layout));
    cJSON_AddStringToObject(o, "dim", fc_sweep_line_dim(l));
    cJSON *fixed = cJSON_AddObjectToObject(o, "fixed");
    for (int i = 0; i < f->ndims; i++)
        if (i != l->dim && !f->dims[i].derived) cJSON_AddNumberToObject(fixed, f->dims[i].name, (double)p->d[i]);
    cJSON_AddStringToObject(o, "direction", (m->a ? m->a : m->b)->falls ? "falls" : "rises");
    cJSON_AddItemToObject(o, "a", side_json(m->la, m->a));
    cJSON_AddItemToObject(o, "b", side_json(m->lb, m->b));
    if (m->a && m->b && m->a->at > 0) fc_json_add_num(o, "change", m->b->at / m->a->at);
    return o;
}

cJSON *fc_crossing_compare_json(const fc_doc *a, const fc_doc *b, fc_match_by by)
{
    fc_crossings xa, xb;
    doc_crossings(a, &xa);
    doc_crossings(b, &xb);
    fc_crossing_move *m;
    int n = fc_crossing_moves(&xa, &xb, by, &m);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, move_json(&m[i]));
    free(m);
    fc_crossings_free(&xa);
    fc_crossings_free(&xb);
    return arr;
}
