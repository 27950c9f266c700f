/* match.c — see match.h. */
#include "match.h"
#include "host_summary.h"
#include "jsonfile.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


bool fc_verdict_fails(fc_verdict v, bool strict)
{
    switch (v) {
    case FC_VERDICT_PASS:
    case FC_VERDICT_IMPROVED:
    case FC_VERDICT_SKIPPED: return false;
    case FC_VERDICT_INCONCLUSIVE: return strict;
    default: return true;
    }
}

void fc_record_key(const fc_record *r, fc_match_by by, char *buf, size_t n)
{
    char ps[256];
    if (r->prob.pat) fc_problem_string(&r->prob, ps, sizeof ps);
    else
        fc_strlcpy(ps, r->problem, sizeof ps);
    if (by == FC_MATCH_PROBLEM) fc_strlcpy(buf, ps, n);
    else
        snprintf(buf, n, "%s on %s", ps, r->backend);
}

/* ------------------------------------------------------------------ pairing */

typedef struct keyed {
    char key[320];
    int idx;
} keyed;

static int keyed_cmp(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

static keyed *sorted_keys(const fc_doc *d, fc_match_by by)
{
    keyed *k = fc_xcalloc((size_t)(d->n ? d->n : 1), sizeof *k);
    for (int i = 0; i < d->n; i++) {
        fc_record_key(&d->rec[i], by, k[i].key, sizeof k[i].key);
        k[i].idx = i;
    }
    qsort(k, (size_t)d->n, sizeof *k, keyed_cmp);
    return k;
}

/* first index in sorted k with this key, or -1 */
static int find_first(const keyed *k, int n, const char *key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(k[mid].key, key) < 0) lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && !strcmp(k[lo].key, key) ? lo : -1;
}

bool *fc_doc_first_records(const fc_doc *d)
{
    keyed *k = sorted_keys(d, FC_MATCH_PROBLEM_BACKEND);
    bool *u = fc_xcalloc((size_t)(d->n ? d->n : 1), sizeof *u);
    for (int i = 0; i < d->n; i++) /* sorted by key, then index: the first of a run is the earliest */
        if (i == 0 || strcmp(k[i].key, k[i - 1].key)) u[k[i].idx] = true;
    free(k);
    return u;
}

static void push_pair(fc_pair **p, int *n, int *cap, const fc_record *a, const fc_record *b)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        *p = fc_xrealloc(*p, (size_t)*cap * sizeof **p);
    }
    (*p)[(*n)++] = (fc_pair){a, b};
}

/* The unused record of b (ub: first records; used) with a's key that pass allows: on
 * a's backend (pass 0) or any (pass 1), the earliest in b; -1 when none. */
static int partner(const keyed *kb, const fc_doc *b, const bool *ub, const bool *used, const char *key,
                   const fc_record *a, int pass)
{
    int best = -1;
    for (int j = find_first(kb, b->n, key); j >= 0 && j < b->n && !strcmp(kb[j].key, key); j++) {
        const int x = kb[j].idx; /* runs of a key are in b's order */
        if (!ub[x] || used[x] || (pass == 0 && strcmp(b->rec[x].backend, a->backend))) continue;
        best = x;
        break;
    }
    return best;
}

int fc_match_docs(const fc_doc *a, const fc_doc *b, fc_match_by by, fc_pair **out)
{
    keyed *kb = sorted_keys(b, by);
    bool *ua = fc_doc_first_records(a), *ub = fc_doc_first_records(b);
    bool *used = fc_xcalloc((size_t)(b->n ? b->n : 1), sizeof *used);
    int *with = fc_xmalloc((size_t)(a->n ? a->n : 1) * sizeof *with);
    char key[320];
    /* one b record for each a record at most, and each b record once: the same
     * backend first (by problem alone), then the others in order */
    for (int i = 0; i < a->n; i++) with[i] = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a->n; i++) {
            if (!ua[i] || with[i] >= 0) continue;
            fc_record_key(&a->rec[i], by, key, sizeof key);
            if ((with[i] = partner(kb, b, ub, used, key, &a->rec[i], pass)) >= 0) used[with[i]] = true;
        }
    fc_pair *p = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < a->n; i++)
        if (ua[i]) push_pair(&p, &n, &cap, &a->rec[i], with[i] >= 0 ? &b->rec[with[i]] : NULL);
    for (int j = 0; j < b->n; j++)
        if (ub[j] && !used[j]) push_pair(&p, &n, &cap, NULL, &b->rec[j]);
    free(kb);
    free(ua);
    free(ub);
    free(used);
    free(with);
    *out = p;
    return n;
}

/* ------------------------------------------------------------------ verdicts */

static void ci_text(const fc_ratio_ci *c, char *buf, size_t n)
{
    snprintf(buf, n, "%.3gx [%.3g, %.3g]", c->ratio, c->lo, c->hi);
}

/* The rounds of r whose own speedup (the one check judges: the fusion split's where a
 * control was measured) lies above bound (above) or below it, counted only when the
 * machine's state moved under them (state.span of FC_STATE_SPAN or more); 0 when it
 * did not, when too few are across (FC_STATE_AGAINST of the rounds, one at least), or
 * when the record keeps no such rounds. The decision's rule (stats.h: fc_state_check)
 * for a verdict: one that enough of the states seen reverse is not one another run
 * would give. */
static int rounds_across(const fc_record *r, double bound, bool above)
{
    if (!r->state.made || r->state.span < FC_STATE_SPAN) return 0;
    const int R = r->rounds < FC_MAX_ROUNDS ? r->rounds : FC_MAX_ROUNDS;
    double q[FC_MAX_ROUNDS];
    for (int i = 0; i < R; i++) {
        q[i] = fc_record_fusion_counts(r) ? r->round[i].ratio_fusion : r->round[i].ratio;
        if (!(q[i] > 0)) return 0; /* written before the rounds kept it */
    }
    const int k = fc_rounds_across(q, R, bound, above);
    return fc_rounds_reverse(k, R) ? k : 0;
}

/* Why a verdict against `bound` is withheld (rounds_across said k): into why. */
static fc_verdict state_withholds(const fc_record *r, const char *cc, const char *what, double bound, int k, bool above,
                                  char *why, size_t n)
{
    snprintf(why, n,
             "speedup %s is %s %s %.3gx, but the machine's state moved under its rounds (round medians spanning "
             "%.2fx) and %d of its %d rounds' speedups lie %s it: inconclusive",
             cc, above ? "below" : "above", what, bound, r->state.span, k, r->rounds, above ? "above" : "below");
    return FC_VERDICT_INCONCLUSIVE;
}

fc_verdict fc_judge(const fc_record *base, const fc_record *cur, const fc_limits *lim, char *why, size_t n)
{
    char cc[96], bc[96];
    if (!cur) {
        /* a problem the baseline's library declined, now not attempted: nothing lost */
        if (base && base->status == FC_STATUS_SKIPPED) {
            snprintf(why, n, "not in the current results; skipped in the baseline too: %.400s",
                     base->reason[0] ? base->reason : "no reason given");
            return FC_VERDICT_SKIPPED;
        }
        snprintf(why, n, "not in the current results");
        return FC_VERDICT_MISSING;
    }
    if (cur->status == FC_STATUS_SKIPPED) {
        /* the library declined it: a loss only where the baseline measured it */
        const bool lost = base && base->status == FC_STATUS_OK;
        snprintf(why, n, "skipped%s: %.400s", lost ? " now, ok in the baseline" : "",
                 cur->reason[0] ? cur->reason : "no reason given");
        return lost ? FC_VERDICT_MISSING : FC_VERDICT_SKIPPED;
    }
    if (cur->status != FC_STATUS_OK) {
        snprintf(why, n, "%.480s", cur->reason[0] ? cur->reason : "the record failed");
        return FC_VERDICT_FAILED_VERIFICATION;
    }
    const fc_ratio_ci *C = fc_record_fusion_speedup(cur);
    ci_text(C, cc, sizeof cc);
    const double min = lim ? lim->min_speedup : 0, tol = lim ? lim->tolerance : FC_DEFAULT_TOLERANCE;
    const bool have_base = base && base->status == FC_STATUS_OK;
    const fc_ratio_ci *B = have_base ? fc_record_fusion_speedup(base) : NULL;
    if (B) ci_text(B, bc, sizeof bc);
    /* Both failing bounds are judged: a verdict is withheld only when every bound the
     * interval lies wholly below is one that enough rounds reach; one that none reach
     * fails the record whatever the other's rounds say. */
    const double floor_ = B ? B->lo * (1 - tol) : 0;
    const bool below = min > 0 && C->hi < min, regressed = B && C->hi < floor_;
    const int kmin = below ? rounds_across(cur, min, true) : 0,
              kfloor = regressed ? rounds_across(cur, floor_, true) : 0;
    if (below && !kmin) {
        snprintf(why, n, "speedup %s: the whole interval is below the minimum %.3gx", cc, min);
        return FC_VERDICT_BELOW_THRESHOLD;
    }
    if (regressed && !kfloor) {
        snprintf(why, n, "speedup %s lies wholly below the baseline's %s by more than %.3g%% (upper bound %.3g < %.3g)",
                 cc, bc, 100 * tol, C->hi, floor_);
        if (below) {
            size_t l = strlen(why);
            snprintf(why + l, n - l,
                     "; below the minimum %.3gx too, which %d of its %d rounds reach (the machine's state moved): "
                     "that alone would be inconclusive",
                     min, kmin, cur->rounds);
        }
        return FC_VERDICT_REGRESSED;
    }
    if (below) return state_withholds(cur, cc, "the minimum", min, kmin, true, why, n);
    if (regressed)
        return state_withholds(cur, cc, "the baseline's floor (its low end less the tolerance)", floor_, kfloor, true,
                               why, n);
    int k;
    if (min > 0 && C->lo < min) {
        snprintf(why, n, "speedup %s straddles the minimum %.3gx", cc, min);
        return FC_VERDICT_INCONCLUSIVE;
    }
    if (min > 0 && (k = rounds_across(cur, min, false)) > 0)
        return state_withholds(cur, cc, "the minimum", min, k, false, why, n);
    if (B && C->ratio < floor_) {
        snprintf(why, n, "speedup %s is below the baseline's %s by more than %.3g%%, but the intervals overlap", cc, bc,
                 100 * tol);
        return FC_VERDICT_INCONCLUSIVE;
    }
    if (B && C->lo > B->hi * (1 + tol)) {
        snprintf(why, n, "speedup %s lies wholly above the baseline's %s by more than %.3g%%", cc, bc, 100 * tol);
        return FC_VERDICT_IMPROVED;
    }
    if (B) snprintf(why, n, "speedup %s, baseline %s", cc, bc);
    else if (base)
        snprintf(why, n, "speedup %s; the baseline record %s, so only %s", cc, fc_status_name(base->status),
                 min > 0 ? "the minimum applies" : "its success counts");
    else
        snprintf(why, n, "speedup %s%s", cc,
                 min > 0 ? "" : "; nothing to compare it with (not in the baseline, no minimum)");
    if (min > 0) {
        size_t l = strlen(why);
        snprintf(why + l, n - l, "; above the minimum %.3gx", min);
    }
    if (B && base->decision != cur->decision) {
        /* the intervals overlap (else the record regressed or improved above): a
         * decision that changes with them is noise, not a regression */
        size_t l = strlen(why);
        snprintf(why + l, n - l, "; decision %s -> %s with overlapping intervals: noise, not a regression",
                 fc_decision_name(base->decision), fc_decision_name(cur->decision));
    }
    return FC_VERDICT_PASS;
}

/* ------------------------------------------------------------------ check */

void fc_check_add_note(fc_check_result *c, const char *fmt, ...)
{
    if (c->nnotes >= FC_MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->nnotes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

static void add_item(fc_check_result *c, int *cap, const fc_record *base, const fc_record *cur, const fc_thresholds *th,
                     double tolerance)
{
    if (c->n == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        c->items = fc_xrealloc(c->items, (size_t)*cap * sizeof *c->items);
    }
    fc_check_item *it = &c->items[c->n++];
    memset(it, 0, sizeof *it);
    it->base = base;
    it->cur = cur;
    fc_thresholds_apply(th, cur ? cur : base, &it->lim);
    if (tolerance >= 0) {
        it->lim.tolerance = tolerance;
        fc_strlcpy(it->lim.tol_from, "--tolerance", sizeof it->lim.tol_from);
    }
    it->verdict = it->first = fc_judge(base, cur, &it->lim, it->why, sizeof it->why);
}

/* How many records of d (none when d is NULL) `has` holds for; *first: the first one's problem. */
static int count_records(const fc_doc *d, bool (*has)(const fc_record *), const char **first)
{
    int n = 0;
    *first = NULL;
    for (int i = 0; d && i < d->n; i++)
        if (has(&d->rec[i]) && n++ == 0) *first = d->rec[i].problem;
    return n;
}

static bool contended(const fc_record *r) { return r->contended; }
static bool withheld(const fc_record *r) { return r->status == FC_STATUS_OK && r->state.withheld; }

/* A note for the records of d measured beside another fusecal run: their times are
 * the two runs' together, so their verdicts say little (peers.h). */
static void contended_notes(fc_check_result *c, const fc_doc *d, const char *which)
{
    const char *first;
    const int n = count_records(d, contended, &first);
    if (n > 0)
        fc_check_add_note(c,
                          "%d %s record%s measured beside another fusecal run (environment.contended; first: %s): "
                          "%s times are the two runs' together; measure again alone",
                          n, which, n == 1 ? " was" : "s were", first, n == 1 ? "its" : "their");
}

/* A note for the records of d whose decision the state check withheld (stats.h:
 * fc_state_check): their speedups depend on a state of the machine that moved under
 * their rounds, so their verdicts may not hold in another run either. */
static void withheld_notes(fc_check_result *c, const fc_doc *d, const char *which)
{
    const char *first;
    const int n = count_records(d, withheld, &first);
    if (n > 0)
        fc_check_add_note(c,
                          "%d %s record%s decision withheld (state.withheld; first: %s): the machine's state moved "
                          "under %s rounds and some states reversed the decision; %s speedup depends on that state",
                          n, which, n == 1 ? " had its" : "s had their", first, n == 1 ? "its" : "their",
                          n == 1 ? "its" : "each");
}

void fc_check_recount(fc_check_result *c)
{
    memset(c->count, 0, sizeof c->count);
    c->matched = c->only_current = 0;
    for (int i = 0; i < c->n; i++) {
        c->count[c->items[i].verdict]++;
        c->matched += c->items[i].base && c->items[i].cur;
        c->only_current += !c->items[i].base;
    }
}

void fc_check_run(fc_check_result *c, const fc_doc *base, const fc_doc *cur, const fc_thresholds *th, double tolerance,
                  bool strict)
{
    memset(c, 0, sizeof *c);
    c->have_base = base != NULL;
    c->strict = strict;
    int cap = 0;
    if (base) {
        fc_pair *p;
        int np = fc_match_docs(base, cur, FC_MATCH_PROBLEM_BACKEND, &p);
        for (int i = 0; i < np; i++) add_item(c, &cap, p[i].a, p[i].b, th, tolerance);
        free(p);
        c->nnotes = fc_doc_differences(base, cur, "baseline", "current", c->notes, FC_MAX_NOTES);
    } else {
        for (int i = 0; i < cur->n; i++) add_item(c, &cap, NULL, &cur->rec[i], th, tolerance);
    }
    fc_check_recount(c);
    if (base && base->n > 0 && c->matched == 0)
        fc_check_add_note(c, "no current record matches the baseline: all %d baseline records are missing", base->n);
    if (fc_check_all_skipped(c))
        fc_check_add_note(c,
                          "every record was skipped (declined by the library): nothing was measured, so the check "
                          "fails");
    contended_notes(c, base, "baseline");
    contended_notes(c, cur, "current");
    withheld_notes(c, cur, "current");
}

bool fc_check_wants_confirm(const fc_check_item *it)
{
    return it->cur && (it->first == FC_VERDICT_REGRESSED || it->first == FC_VERDICT_BELOW_THRESHOLD);
}

void fc_check_confirm(fc_check_result *c, int i, const fc_record *again)
{
    fc_check_item *it = &c->items[i];
    if (it->nconfirm >= FC_MAX_CONFIRM) return;
    char why[512];
    fc_verdict v = fc_judge(it->base, again, &it->lim, why, sizeof why);
    if (again && again->status == FC_STATUS_OK) it->confirm[it->nconfirm] = *fc_record_fusion_speedup(again);
    else
        it->confirm[it->nconfirm] = (fc_ratio_ci){0};
    it->nconfirm++;
    /* a re-measurement confirms a failure when it fails too */
    if (fc_verdict_fails(v, false)) it->nconfirm_failed++;
}

/* The record of out measured for the same (problem, backend) as r, or NULL. */
static const fc_record *find_again(const fc_doc *out, const fc_record *r)
{
    char k1[320], k2[320];
    fc_record_key(r, FC_MATCH_PROBLEM_BACKEND, k1, sizeof k1);
    for (int m = 0; m < out->n; m++) {
        fc_record_key(&out->rec[m], FC_MATCH_PROBLEM_BACKEND, k2, sizeof k2);
        if (!strcmp(k1, k2)) return &out->rec[m];
    }
    return NULL;
}

bool fc_check_confirm_all(fc_check_result *c, int n, const fc_remeasure *m)
{
    int *idx = fc_xcalloc((size_t)(c->n ? c->n : 1), sizeof *idx), nidx = 0;
    const fc_record **recs = fc_xcalloc((size_t)(c->n ? c->n : 1), sizeof *recs);
    for (int i = 0; i < c->n; i++) {
        const fc_check_item *it = &c->items[i];
        if (!fc_check_wants_confirm(it) || !m->can(m->ctx, it->cur)) continue;
        recs[nidx] = it->cur;
        idx[nidx++] = i;
    }
    bool interrupted = false;
    for (int k = 0; k < n && nidx && !interrupted; k++) {
        fc_doc out;
        fc_doc_init(&out);
        interrupted = m->again(m->ctx, recs, nidx, k, n, &out);
        for (int j = 0; j < nidx; j++) {
            const fc_record *found = find_again(&out, recs[j]);
            if (found || !interrupted) fc_check_confirm(c, idx[j], found);
        }
        fc_doc_free(&out);
    }
    fc_check_settle(c);
    free(recs);
    free(idx);
    return interrupted;
}

void fc_check_settle(fc_check_result *c)
{
    for (int i = 0; i < c->n; i++) {
        fc_check_item *it = &c->items[i];
        if (!it->nconfirm) continue;
        size_t l = strlen(it->why);
        if (it->nconfirm_failed == it->nconfirm) {
            snprintf(it->why + l, sizeof it->why - l, "; confirmed by %d of %d re-measurements", it->nconfirm_failed,
                     it->nconfirm);
        } else {
            char first[512];
            fc_strlcpy(first, it->why, sizeof first);
            snprintf(it->why, sizeof it->why, "%s at first, but only %d of %d re-measurements agreed: %.400s",
                     fc_verdict_name(it->first), it->nconfirm_failed, it->nconfirm, first);
            it->verdict = FC_VERDICT_INCONCLUSIVE;
        }
    }
    fc_check_recount(c);
}

bool fc_check_all_skipped(const fc_check_result *c) { return c->n > 0 && c->count[FC_VERDICT_SKIPPED] == c->n; }

int fc_check_exit_code(const fc_check_result *c)
{
    /* nothing to check, or nothing measured: every record skipped is no pass */
    if (c->n == 0 || fc_check_all_skipped(c)) return FC_EXIT_FAIL;
    for (int v = 0; v < FC_NVERDICTS; v++)
        if (c->count[v] && fc_verdict_fails((fc_verdict)v, c->strict)) return FC_EXIT_FAIL;
    return FC_EXIT_OK;
}

void fc_check_free(fc_check_result *c)
{
    free(c->items);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ differences */

int fc_doc_differences(const fc_doc *a, const fc_doc *b, const char *an, const char *bn, char (*lines)[320], int max)
{
    int n = 0;
#define LINE(...)                                            \
    do {                                                     \
        if (n < max) snprintf(lines[n++], 320, __VA_ARGS__); \
    } while (0)
    fc_host_summary x, y;
    fc_host_summary_read(a->host, &x);
    fc_host_summary_read(b->host, &y);
    if (x.cpu_model && y.cpu_model && strcmp(x.cpu_model, y.cpu_model))
        LINE("different device: cpu model '%s' (%s) vs '%s' (%s)", x.cpu_model, an, y.cpu_model, bn);
    if (x.gpu_name && y.gpu_name && strcmp(x.gpu_name, y.gpu_name))
        LINE("different device: GPU '%s' (%s) vs '%s' (%s)", x.gpu_name, an, y.gpu_name, bn);
    else if (x.gpu_name && !y.gpu_name)
        LINE("different device: GPU '%s' (%s), none (%s)", x.gpu_name, an, bn);
    else if (!x.gpu_name && y.gpu_name)
        LINE("different device: GPU none (%s), '%s' (%s)", an, y.gpu_name, bn);
    if (x.hostname && y.hostname && strcmp(x.hostname, y.hostname))
        LINE("different host: '%s' (%s) vs '%s' (%s)", x.hostname, an, y.hostname, bn);
    if (x.kernels && y.kernels && strcmp(x.kernels, y.kernels))
        LINE("different host kernels: built for %s (%s) vs %s (%s)", x.kernels, an, y.kernels, bn);
    for (int i = 0; i < x.nlibs; i++) {
        const char *other = fc_host_summary_lib(&y, x.libs[i].name);
        if (!other) {
            if (y.has_libraries) LINE("library '%s' only in the %s", x.libs[i].name, an);
        } else if (strcmp(x.libs[i].id, other)) {
            LINE("different library version: %s '%.100s' (%s) vs '%.100s' (%s)", x.libs[i].name, x.libs[i].id, an,
                 other, bn);
        }
    }
    for (int i = 0; i < y.nlibs; i++)
        if (x.has_libraries && !fc_host_summary_lib(&x, y.libs[i].name))
            LINE("library '%s' only in the %s", y.libs[i].name, bn);
    fc_host_summary_free(&x);
    fc_host_summary_free(&y);
    if (strcmp(a->tool_version, b->tool_version))
        LINE("different fusecal version: %s (%s) vs %s (%s)", a->tool_version, an, b->tool_version, bn);
    char why[256];
    if (!fc_settings_compatible(&a->settings, &b->settings, why, sizeof why)) LINE("different settings: %s", why);
    if (!b->complete) LINE("the %s results are incomplete (the run stopped early)", bn);
#undef LINE
    return n;
}

/* ------------------------------------------------------------------ compare */

void fc_compare_docs(const fc_doc *a, const fc_doc *b, fc_match_by by, fc_compare *out)
{
    memset(out, 0, sizeof *out);
    fc_pair *p;
    int np = fc_match_docs(a, b, by, &p);
    out->rows = fc_xcalloc((size_t)(np ? np : 1), sizeof *out->rows);
    out->only_a = fc_xcalloc((size_t)(np ? np : 1), sizeof *out->only_a);
    out->only_b = fc_xcalloc((size_t)(np ? np : 1), sizeof *out->only_b);
    double la = 0, lb = 0, lc = 0, lf = 0, lu = 0;
    for (int i = 0; i < np; i++) {
        if (!p[i].b) {
            out->only_a[out->na++] = p[i].a;
            continue;
        }
        if (!p[i].a) {
            out->only_b[out->nb++] = p[i].b;
            continue;
        }
        fc_compare_row *r = &out->rows[out->n++];
        r->a = p[i].a;
        r->b = p[i].b;
        r->both_ok = r->a->status == FC_STATUS_OK && r->b->status == FC_STATUS_OK;
        if (r->a->status == FC_STATUS_OK && r->b->status == FC_STATUS_OK) r->flip = r->a->decision != r->b->decision;
        else
            r->flip = r->a->status != r->b->status;
        out->flips += r->flip;
        if (!r->both_ok) continue;
        /* the speedup check judges: the fusion split where a control was measured */
        const fc_ratio_ci *A = fc_record_fusion_speedup(r->a), *B = fc_record_fusion_speedup(r->b);
        r->speedup_change = B->ratio / A->ratio;
        r->fused_ratio = r->b->v[FC_FUSED].lat.median / r->a->v[FC_FUSED].lat.median;
        r->unfused_ratio = r->b->v[FC_UNFUSED].lat.median / r->a->v[FC_UNFUSED].lat.median;
        r->shift = B->lo > A->hi ? 1 : B->hi < A->lo ? -1 : 0;
        out->up += r->shift > 0;
        out->down += r->shift < 0;
        if (A->ratio > 0 && B->ratio > 0 && r->fused_ratio > 0 && r->unfused_ratio > 0 && isfinite(r->fused_ratio) &&
            isfinite(r->unfused_ratio)) {
            la += log(A->ratio);
            lb += log(B->ratio);
            lc += log(r->speedup_change);
            lf += log(r->fused_ratio);
            lu += log(r->unfused_ratio);
            out->ngeo++;
        }
    }
    if (out->ngeo) {
        out->geo_a = exp(la / out->ngeo);
        out->geo_b = exp(lb / out->ngeo);
        out->geo_change = exp(lc / out->ngeo);
        out->geo_fused = exp(lf / out->ngeo);
        out->geo_unfused = exp(lu / out->ngeo);
    }
    free(p);
}

void fc_compare_free(fc_compare *c)
{
    free(c->rows);
    free(c->only_a);
    free(c->only_b);
    memset(c, 0, sizeof *c);
}
