/* netsum.c — see netsum.h. */
#include "netsum.h"
#include "jsonfile.h"
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool usable(const fc_record *r)
{
    return r->status == FC_STATUS_OK && r->v[FC_UNFUSED].lat.n > 0 && r->v[FC_FUSED].lat.n > 0 &&
           r->v[FC_UNFUSED].lat.median > 0 && r->v[FC_FUSED].lat.median > 0;
}

/* The record of a site on a backend (the document's last, as --append keeps the latest). */
static const fc_record *find(const fc_doc *doc, const char *backend, const char *problem)
{
    const fc_record *found = NULL;
    for (int i = 0; i < doc->n; i++) {
        const fc_record *r = &doc->rec[i];
        char ps[256];
        fc_problem_string(&r->prob, ps, sizeof ps);
        if (!strcmp(r->backend, backend) && !strcmp(ps, problem) && usable(r)) found = r;
    }
    return found;
}

/* The 95 % normal quantile, as a record's interval scales run_noise by it
 * (stats.c: fc_interval_runs). */
#define Z975 1.959964

/* The site's saving in each of its record's rounds (the rounds' medians of the
 * variant its decision compared with the fused form, less the fused form's), into
 * d; returns the rounds, 0 where they cannot say (fewer than two). Where the graph
 * replays decided, the rounds' medians are eager ones: a round's saving is then the
 * graph's unfused median less it over the round's graph speedup (its tuples'
 * unfused/fused over replays), so that the round's own ratio, not the eager one,
 * moves with the pass; 0 where a round has no graph speedup. */
static int round_savings(const fc_record *r, double mult, double *d)
{
    const fc_variant b = fc_record_decisive_base(r);
    const int R = r->rounds < FC_MAX_ROUNDS ? r->rounds : FC_MAX_ROUNDS;
    if (R < 2) return 0;
    if (r->decided_by == FC_DECIDER_GRAPH) {
        const double u = fc_record_decisive_ms(r, b);
        for (int k = 0; k < R; k++) {
            const double q = r->round[k].ratio_graph;
            if (!(q > 0) || !(u > 0)) return 0;
            d[k] = mult * u * (1 - 1 / q);
        }
        return R;
    }
    for (int k = 0; k < R; k++) d[k] = mult * (r->round[k].median_ms[b] - r->round[k].median_ms[FC_FUSED]);
    return R;
}

/* t(n − 1) · sd/√n of x[0..n) (n >= 2). */
static double t_half_width(const double *x, int n)
{
    double mean = 0, ss = 0;
    for (int i = 0; i < n; i++) mean += x[i];
    mean /= n;
    for (int i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);
    return fc_t975(n - 1) * sqrt(ss / (n - 1) / n);
}

/* The run-level part of a site's interval: the run-level sd on the log speedup
 * (settings.run_noise) at the record's 1.96, as its speedup interval carries it,
 * carried to the saving as the speedup interval's ends are (saving = multiplicity ×
 * unfused × (1 − 1/s), whose change with log s is multiplicity × fused). */
static double run_part(const fc_record *r, double mult, double run_noise)
{
    return mult * fc_record_decisive_ms(r, FC_FUSED) * Z975 * run_noise;
}

/* How much of the run-level effect the sites share: the correlation of two records'
 * run-to-run shifts of the log speedup. Measured on the 66 committed pairs of quick
 * sweeps (two runs of the same 37 problems 120 s apart, each CPU backend, four
 * machines): a pair's mean shift over its problems has an rms of 0.0104 against the
 * 0.0063 its problems' own scatter explains, a shared sd of 0.006 a run against 0.027
 * a record: 0.045, rounded up. */
#define RUN_SHARED 0.05

/* The site's saving per inference and its interval's half-widths below and above:
 * what fusing saves, the time of the variant its decision compared with the fused
 * form (the unfused chain, or the control where the fusion split decided:
 * fc_record_decisive_base) less the fused form's, in the timing that decided
 * (fc_record_decisive_ms). The interval: the rounds' (round_savings) widened in
 * quadrature by the run-level part, as the record's speedup interval is; where the
 * rounds cannot say, the decisive speedup interval's ends (which carry it). */
static void site_saving(const fc_record *r, double mult, double run_noise, fc_netsum_site *s)
{
    const fc_variant b = fc_record_decisive_base(r);
    const fc_ratio_ci *sp = fc_record_decisive_speedup(r);
    double u = fc_record_decisive_ms(r, b), f = fc_record_decisive_ms(r, FC_FUSED);
    s->saving_ms = mult * (u - f);
    double d[FC_MAX_ROUNDS];
    const int R = round_savings(r, mult, d);
    if (R > 0) {
        const double h = t_half_width(d, R), run = run_part(r, mult, run_noise);
        const double hw = sqrt(h * h + run * run);
        s->lo = s->saving_ms - hw;
        s->hi = s->saving_ms + hw;
        return;
    }
    double lo = sp->lo > 0 ? sp->lo : sp->ratio, hi = sp->hi > 0 ? sp->hi : lo;
    s->lo = fmin(s->saving_ms, mult * u * (1 - 1 / lo));
    s->hi = fmax(s->saving_ms, mult * u * (1 - 1 / hi));
}

/* fusing the site loses: its decisive speedup's interval lies below 1 */
static bool losing(const fc_record *r)
{
    const fc_ratio_ci *sp = fc_record_decisive_speedup(r);
    return sp->hi > 0 && sp->hi < 1;
}

static int by_saving(const void *a, const void *b)
{
    const fc_netsum_site *x = a, *y = b;
    if (!x->rec != !y->rec) return x->rec ? -1 : 1;
    if (x->saving_ms != y->saving_ms) return x->saving_ms > y->saving_ms ? -1 : 1;
    return x->site - y->site;
}

/* The interval of the saving of fusing every yes site (netsum.h). */
static void total_interval(const fc_netsum *out, double run_noise, double *lo, double *hi)
{
    double d[FC_MAX_ROUNDS], pass[FC_MAX_ROUNDS] = {0}, var_lo = 0, var_hi = 0, run = 0, run2 = 0;
    int K = FC_MAX_ROUNDS;
    for (int i = 0; i < out->sites; i++) {
        const fc_netsum_site *s = &out->s[i];
        if (!s->rec || s->rec->decision != FC_DECIDE_YES) continue;
        const int R = round_savings(s->rec, s->mult, d);
        if (R > 0 && R < K) K = R;
    }
    int joined = 0;
    for (int i = 0; i < out->sites; i++) {
        const fc_netsum_site *s = &out->s[i];
        if (!s->rec || s->rec->decision != FC_DECIDE_YES) continue;
        if (round_savings(s->rec, s->mult, d) > 0) {
            for (int k = 0; k < K; k++) pass[k] += d[k];
            const double a = run_part(s->rec, s->mult, run_noise);
            run += a;
            run2 += a * a;
            joined++;
        } else {
            var_lo += (s->saving_ms - s->lo) * (s->saving_ms - s->lo);
            var_hi += (s->hi - s->saving_ms) * (s->hi - s->saving_ms);
        }
    }
    const double h = joined ? t_half_width(pass, K) : 0;
    /* the run-level parts, correlated RUN_SHARED: (1 − ρ) Σ a² + ρ (Σ a)² */
    const double r2 = (1 - RUN_SHARED) * run2 + RUN_SHARED * run * run;
    *lo = out->saving_ms - sqrt(h * h + r2 + var_lo);
    *hi = out->saving_ms + sqrt(h * h + r2 + var_hi);
}

static void summarize(const fc_network *net, const fc_doc *doc, fc_netsum *out)
{
    const double run_noise = doc->settings.run_noise;
    out->sites = net->n;
    out->s = fc_xcalloc((size_t)net->n, sizeof *out->s);
    for (int i = 0; i < net->n; i++) {
        fc_netsum_site *s = &out->s[i];
        char ps[256];
        fc_problem_string(&net->site[i].prob, ps, sizeof ps);
        s->site = i;
        s->mult = (double)net->site[i].multiplicity;
        s->rec = find(doc, out->backend, ps);
        if (!s->rec) continue;
        site_saving(s->rec, s->mult, run_noise, s);
        out->measured++;
        out->unfused_ms += s->mult * fc_record_decisive_ms(s->rec, FC_UNFUSED);
        if (losing(s->rec)) out->losing++;
        if (s->rec->decision != FC_DECIDE_YES) continue;
        out->fuse++;
        out->saving_ms += s->saving_ms;
    }
    total_interval(out, run_noise, &out->saving_lo, &out->saving_hi);
    qsort(out->s, (size_t)net->n, sizeof *out->s, by_saving);
}

int fc_netsum_build(const fc_network *net, const fc_doc *doc, fc_netsum **out)
{
    int n = 0;
    *out = NULL;
    for (int i = 0; i < doc->n; i++) {
        const fc_record *r = &doc->rec[i];
        bool seen = false;
        for (int k = 0; k < n && !seen; k++) seen = !strcmp((*out)[k].backend, r->backend);
        if (seen) continue;
        *out = fc_xrealloc(*out, (size_t)(n + 1) * sizeof **out);
        fc_netsum *s = &(*out)[n++];
        memset(s, 0, sizeof *s);
        fc_strlcpy(s->device, r->device, sizeof s->device);
        fc_strlcpy(s->backend, r->backend, sizeof s->backend);
        summarize(net, doc, s);
    }
    return n;
}

void fc_netsum_free(fc_netsum *s, int n)
{
    for (int i = 0; i < n; i++) free(s[i].s);
    free(s);
}

/* ------------------------------------------------------------------ JSON */

static cJSON *pair(double a, double b)
{
    cJSON *x = cJSON_CreateArray();
    cJSON_AddItemToArray(x, fc_json_num_item(a));
    cJSON_AddItemToArray(x, fc_json_num_item(b));
    return x;
}

static cJSON *names_json(const fc_net_site *ns)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < ns->nnames; k++) cJSON_AddItemToArray(a, cJSON_CreateString(ns->names[k]));
    return a;
}

static cJSON *site_json(const fc_network *net, const fc_netsum_site *s)
{
    const fc_net_site *ns = &net->site[s->site];
    cJSON *o = cJSON_CreateObject();
    char ps[256];
    fc_problem_string(&ns->prob, ps, sizeof ps);
    cJSON_AddStringToObject(o, "problem", ps);
    cJSON_AddNumberToObject(o, "multiplicity", (double)ns->multiplicity);
    cJSON_AddItemToObject(o, "names", names_json(ns));
    cJSON_AddBoolToObject(o, "measured", s->rec != NULL);
    if (!s->rec) return o;
    const fc_record *r = s->rec;
    cJSON_AddStringToObject(o, "decision", fc_decision_name(r->decision));
    /* in the timing that decided, as the saving */
    fc_json_add_num(o, "unfused_ms", fc_record_decisive_ms(r, FC_UNFUSED));
    fc_json_add_num(o, "fused_ms", fc_record_decisive_ms(r, FC_FUSED));
    if (fc_record_decisive_base(r) == FC_CONTROL)
        fc_json_add_num(o, "control_ms", fc_record_decisive_ms(r, FC_CONTROL));
    const fc_ratio_ci *d = fc_record_decisive_speedup(r);
    cJSON *sp = cJSON_AddObjectToObject(o, "speedup");
    fc_json_add_num(sp, "ratio", d->ratio);
    cJSON_AddItemToObject(sp, "ci95", pair(d->lo, d->hi));
    fc_json_add_num(o, "saving_ms", s->saving_ms);
    cJSON_AddItemToObject(o, "saving_ci95", pair(s->lo, s->hi));
    return o;
}

static cJSON *summary_json(const fc_network *net, const fc_netsum *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", s->device);
    cJSON_AddStringToObject(o, "backend", s->backend);
    cJSON_AddNumberToObject(o, "sites", s->sites);
    cJSON_AddNumberToObject(o, "measured", s->measured);
    cJSON_AddNumberToObject(o, "fuse_yes", s->fuse);
    cJSON *lose = cJSON_AddArrayToObject(o, "losing");
    fc_json_add_num(o, "unfused_ms", s->unfused_ms);
    fc_json_add_num(o, "saving_ms", s->saving_ms);
    cJSON_AddItemToObject(o, "saving_ci95", pair(s->saving_lo, s->saving_hi));
    if (s->unfused_ms > 0) fc_json_add_num(o, "saving_pct", 100 * s->saving_ms / s->unfused_ms);
    cJSON *ps = cJSON_AddArrayToObject(o, "per_site");
    for (int i = 0; i < s->sites; i++) {
        cJSON_AddItemToArray(ps, site_json(net, &s->s[i]));
        const fc_record *r = s->s[i].rec;
        if (r && losing(r)) cJSON_AddItemToArray(lose, cJSON_CreateString(r->problem));
    }
    return o;
}

cJSON *fc_netsum_json(const fc_network *net, const fc_netsum *s, int n)
{
    cJSON *o = fc_network_json(net);
    cJSON_AddStringToObject(o, "interval_method", FC_NETSUM_METHOD);
    cJSON *a = cJSON_AddArrayToObject(o, "summaries");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, summary_json(net, &s[i]));
    return o;
}
