/* predict_json.c — the predict documents (schemas/predict.schema.json):
 * predictions with their summary, and a validation. */
#include "predict.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A number, or null where there is none (a figure over no records). */
static void add_num(cJSON *o, const char *key, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *ratio_json(const fc_ratio_ci *c)
{
    cJSON *o = cJSON_CreateObject();
    add_num(o, "ratio", c->ratio);
    cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
    cJSON_AddItemToArray(ci, isfinite(c->lo) ? cJSON_CreateNumber(c->lo) : cJSON_CreateNull());
    cJSON_AddItemToArray(ci, isfinite(c->hi) ? cJSON_CreateNumber(c->hi) : cJSON_CreateNull());
    if (c->rerun_hi > 0) {
        cJSON *re = cJSON_AddArrayToObject(o, "rerun95");
        cJSON_AddItemToArray(re, isfinite(c->rerun_lo) ? cJSON_CreateNumber(c->rerun_lo) : cJSON_CreateNull());
        cJSON_AddItemToArray(re, isfinite(c->rerun_hi) ? cJSON_CreateNumber(c->rerun_hi) : cJSON_CreateNull());
    }
    return o;
}

static cJSON *head(const char *kind, const fc_model *m, const char *const *inputs, int ninputs)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", "fusecal-predict");
    cJSON_AddNumberToObject(o, "schema_version", FC_PREDICT_VERSION);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON *tool = cJSON_AddObjectToObject(o, "tool");
    cJSON_AddStringToObject(tool, "name", "fusecal");
    cJSON_AddStringToObject(tool, "version", fc_version_string);
    cJSON_AddStringToObject(tool, "git_revision", fc_git_revision);
    cJSON *in = cJSON_AddArrayToObject(o, "inputs");
    for (int i = 0; i < ninputs; i++) cJSON_AddItemToArray(in, cJSON_CreateString(inputs[i]));
    cJSON *model = cJSON_AddObjectToObject(o, "model");
    cJSON_AddStringToObject(
        model, "fused",
        "t = overhead + flops / (eff_flops * ceiling_gflops) + bytes_fused * g(bytes_fused) / (eff_bw * "
        "ceiling_gbs); with the device's measured bandwidth by working set bw (the ceilings' "
        "bandwidth_by_footprint, ended by the device-memory ceiling at twice its last footprint), g(b) = min(1, "
        "(bw at the curve's end / bw(cache_footprint * b))^cache_exponent); without, g(b) = h2 / cache_mlc + (h3 - "
        "h2) / cache + (1 - h3), h3 = min(1, llc_bytes / b), h2 = min(1, mlc_bytes / b)");
    cJSON_AddStringToObject(model, "unfused",
                            "t = k * t_fused + overhead + d * g(bytes_unfused) / (eff_bw * ceiling_gbs), d = "
                            "bytes_unfused - bytes_fused, g with the unfused fit's caches");
    cJSON_AddStringToObject(model, "fit",
                            "Huber loss (delta 0.05) of the log residuals, per machine, backend and class");
    cJSON_AddStringToObject(
        model, "interval",
        "s = root mean square of the log speedup residuals, each record held out of both fits in "
        "turn and its residual less the local correction the other records give it (inside the records' span: of the records inside the others' span, when 4 or more; beyond it: of the records beyond the others' span, shrunk toward the median of the machine's other classes' such spread^2); noise = root mean square of the records' own log speedup "
        "errors (from their ci95); both over the saving weight w(x) = 0.1 + |1 - 1/x| at the larger of each record's "
        "predicted and measured savings; rerun95 (a measurement's): each side's log half-width the least x = k * "
        "max(w(speedup), w(speedup * exp(+-x))), k = t(n-1) * s; ci95 (the speedup's, which decides): the same with "
        "k = t(n-1) * sqrt(max(s^2 - noise^2, s^2 / 4)); a side no x bounds: a millionfold; the speedup: "
        "t_unfused / t_fused * exp(the held-out log speedup residuals of the 4 nearest records of the class, "
        "weighted 1 / (0.25 + d), d over the log2 sizes of the dims)");
    cJSON_AddNumberToObject(model, "min_records", FC_PREDICT_MIN_RECORDS);
    cJSON_AddNumberToObject(model, "span_factor", FC_PREDICT_SPAN);
    cJSON *ms = cJSON_AddArrayToObject(o, "machines");
    for (int i = 0; i < m->nmachines; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", m->machine[i].name);
        cJSON_AddStringToObject(x, "device", m->machine[i].device);
        cJSON_AddItemToArray(ms, x);
    }
    return o;
}

static cJSON *fit_json(const fc_fit *f, bool fused)
{
    cJSON *o = cJSON_CreateObject();
    if (!fused) cJSON_AddNumberToObject(o, "k", f->k);
    cJSON_AddNumberToObject(o, "overhead_ms", f->overhead_ms);
    if (fused) cJSON_AddNumberToObject(o, "eff_flops", f->eff_flops);
    cJSON_AddNumberToObject(o, "eff_bw", f->eff_bw);
    if (f->curve.n >= 2) { /* the measured curve's form */
        cJSON_AddNumberToObject(o, "cache_exponent", f->cache_exp);
        cJSON_AddNumberToObject(o, "cache_footprint", f->cache_ws);
        cJSON_AddNumberToObject(o, "curve_points", f->curve.n);
    } else {
        cJSON_AddNumberToObject(o, "cache", f->cache > 0 ? f->cache : 1);
        cJSON_AddNumberToObject(o, "cache_mlc", fmax(f->cache_mlc, f->cache > 0 ? f->cache : 1));
    }
    cJSON_AddNumberToObject(o, "llc_bytes", f->llc_bytes);
    cJSON_AddNumberToObject(o, "mlc_bytes", f->mlc_bytes);
    cJSON_AddNumberToObject(o, "spread", f->spread);
    return o;
}

/* The class a prediction came from, with the saving weight at its speedup and the
 * machine's pool its spread was shrunk toward (predict.h's top). */
static cJSON *class_json(const fc_model *m, const fc_model_class *c, double speedup)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "records", c->n);
    cJSON_AddItemToObject(o, "fused", fit_json(&c->fit.v[FC_FUSED], true));
    cJSON_AddItemToObject(o, "unfused", fit_json(&c->fit.v[FC_UNFUSED], false));
    cJSON_AddNumberToObject(o, "speedup_spread", c->fit.spread);
    cJSON_AddNumberToObject(o, "speedup_spread_inside", c->fit.spread_inside);
    cJSON_AddNumberToObject(o, "records_inside", c->fit.n_inside);
    cJSON_AddNumberToObject(o, "speedup_spread_beyond", c->fit.spread_beyond);
    cJSON_AddNumberToObject(o, "records_beyond", c->fit.n_beyond);
    cJSON_AddNumberToObject(o, "speedup_noise", c->fit.noise);
    cJSON_AddNumberToObject(o, "saving_weight", fc_saving_weight(speedup));
    fc_spread_prior pr;
    fc_model_prior(m, c->machine, c, &pr);
    if (pr.classes > 0) {
        cJSON *pool = cJSON_AddObjectToObject(o, "pool");
        cJSON_AddNumberToObject(pool, "classes", pr.classes);
        cJSON_AddNumberToObject(pool, "records", FC_PREDICT_PRIOR_RECORDS);
        cJSON_AddNumberToObject(pool, "speedup_spread", sqrt(pr.spread2));
        cJSON_AddNumberToObject(pool, "speedup_noise", sqrt(pr.noise2));
        if (pr.classes_beyond > 0) {
            cJSON_AddNumberToObject(pool, "speedup_spread_beyond", sqrt(pr.spread2_beyond));
            cJSON_AddNumberToObject(pool, "classes_beyond", pr.classes_beyond);
        }
    }
    return o;
}

static cJSON *prediction_json(const fc_model *m, const fc_site *s, const char *query, const fc_prediction *p)
{
    cJSON *o = cJSON_CreateObject();
    char problem[256], cls[96];
    fc_problem_string(&s->prob, problem, sizeof problem);
    fc_problem_class(&s->prob, cls, sizeof cls);
    cJSON_AddStringToObject(o, "problem", problem);
    cJSON_AddStringToObject(o, "query", query ? query : problem);
    if (s->name) cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddNumberToObject(o, "multiplicity", s->multiplicity);
    cJSON_AddStringToObject(o, "pattern", s->prob.pat->name);
    cJSON_AddStringToObject(o, "class", cls);
    cJSON_AddStringToObject(o, "machine", m->machine[p->machine].name);
    cJSON_AddStringToObject(o, "device", m->machine[p->machine].device);
    cJSON_AddStringToObject(o, "backend", p->backend);
    cJSON_AddStringToObject(o, "source", fc_pred_source_name(p->source));
    cJSON_AddStringToObject(o, "decision", fc_prediction_decision(p));
    if (p->source != FC_SRC_UNKNOWN) {
        cJSON_AddNumberToObject(o, "unfused_ms", p->unfused_ms);
        cJSON_AddNumberToObject(o, "fused_ms", p->fused_ms);
        if (p->control_ms > 0) cJSON_AddNumberToObject(o, "control_ms", p->control_ms);
        cJSON_AddItemToObject(o, "speedup", ratio_json(&p->speedup));
        cJSON_AddNumberToObject(o, "threshold", p->threshold);
    }
    cJSON_AddStringToObject(o, "reason", p->reason);
    cJSON *near = cJSON_AddArrayToObject(o, "nearest");
    for (int i = 0; i < p->nnearest; i++) cJSON_AddItemToArray(near, cJSON_CreateString(p->nearest[i]->problem));
    if (p->source == FC_SRC_PREDICTED) cJSON_AddItemToObject(o, "model", class_json(m, p->cls, p->speedup.ratio));
    return o;
}

static cJSON *summary_json(const fc_model *m, const fc_site *sites, const fc_prediction *p, int np,
                           const fc_predict_summary *s)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "machine", m->machine[s->machine].name);
    cJSON_AddStringToObject(o, "backend", s->backend);
    cJSON_AddNumberToObject(o, "sites", s->sites);
    cJSON_AddNumberToObject(o, "known", s->known);
    cJSON_AddNumberToObject(o, "unfused_ms", s->unfused_ms);
    cJSON_AddNumberToObject(o, "saving_ms", s->saving_ms);
    cJSON *ci = cJSON_AddArrayToObject(o, "saving_ci95");
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(s->saving_lo));
    cJSON_AddItemToArray(ci, cJSON_CreateNumber(s->saving_hi));
    cJSON *fuse = cJSON_AddArrayToObject(o, "fuse"), *losing = cJSON_AddArrayToObject(o, "losing");
    for (int i = 0; i < np; i++) {
        if (p[i].machine != s->machine || strcmp(p[i].backend, s->backend) || p[i].source == FC_SRC_UNKNOWN) continue;
        char problem[256];
        fc_problem_string(&sites[p[i].site].prob, problem, sizeof problem);
        if (p[i].decision == FC_DECIDE_YES) cJSON_AddItemToArray(fuse, cJSON_CreateString(problem));
        if (p[i].speedup.hi < 1) cJSON_AddItemToArray(losing, cJSON_CreateString(problem));
    }
    return o;
}

cJSON *fc_predict_json(const fc_model *m, const char *const *inputs, int ninputs, const fc_site *sites,
                       const char *const *query, int nsites, const fc_prediction *p, int np)
{
    cJSON *o = head("predictions", m, inputs, ninputs);
    cJSON *arr = cJSON_AddArrayToObject(o, "predictions");
    for (int i = 0; i < np; i++)
        cJSON_AddItemToArray(arr, prediction_json(m, &sites[p[i].site], query ? query[p[i].site] : NULL, &p[i]));
    fc_predict_summary *sum;
    int ns = fc_predict_summarize(m, sites, p, np, &sum);
    cJSON *sa = cJSON_AddArrayToObject(o, "summary");
    for (int i = 0; i < ns; i++) cJSON_AddItemToArray(sa, summary_json(m, sites, p, np, &sum[i]));
    free(sum);
    (void)nsites;
    return o;
}

/* ------------------------------------------------------------------ validation */

static cJSON *errors_json(const fc_loo_figures *f, int q)
{
    cJSON *o = cJSON_CreateObject();
    add_num(o, "median", f->median_err[q]);
    add_num(o, "p90", f->p90_err[q]);
    return o;
}

static cJSON *figures_json(const fc_loo_figures *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "predicted", f->n);
    cJSON *err = cJSON_AddObjectToObject(o, "abs_rel_error");
    cJSON_AddItemToObject(err, "unfused_ms", errors_json(f, FC_UNFUSED));
    cJSON_AddItemToObject(err, "fused_ms", errors_json(f, FC_FUSED));
    cJSON_AddItemToObject(err, "speedup", errors_json(f, FC_NVARIANTS));
    cJSON *d = cJSON_AddObjectToObject(o, "decisions");
    cJSON_AddNumberToObject(d, "decided", f->decided);
    cJSON_AddNumberToObject(d, "reproduced", f->reproduced);
    cJSON_AddNumberToObject(d, "contradicted", f->contradicted);
    cJSON_AddNumberToObject(d, "inconclusive", f->undecided);
    cJSON_AddNumberToObject(d, "unknown", f->unknown);
    add_num(d, "agreement", f->decided ? (double)f->reproduced / f->decided : NAN);
    add_num(d, "point_agreement", f->decided ? (double)f->point_reproduced / f->decided : NAN);
    add_num(o, "coverage", f->coverage);
    return o;
}

static cJSON *estimate_json(const double *ms, const fc_ratio_ci *sp, const char *decision)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "unfused_ms", ms[FC_UNFUSED]);
    cJSON_AddNumberToObject(o, "fused_ms", ms[FC_FUSED]);
    cJSON_AddItemToObject(o, "speedup", ratio_json(sp));
    cJSON_AddStringToObject(o, "decision", decision);
    return o;
}

static cJSON *row_json(const fc_model *m, const fc_loo_row *row)
{
    const fc_record *r = row->rec;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "problem", r->problem);
    cJSON_AddStringToObject(o, "machine", m->machine[row->cls->machine].name);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddStringToObject(o, "class", row->cls->cls);
    double ms[FC_NVARIANTS] = {r->v[FC_UNFUSED].lat.median, r->v[FC_FUSED].lat.median};
    cJSON_AddItemToObject(o, "measured",
                          estimate_json(ms, fc_record_decisive_speedup(r), fc_decision_name(r->decision)));
    if (row->known)
        cJSON_AddItemToObject(o, "model",
                              estimate_json(row->ms[FC_LOO_MODEL], &row->speedup[FC_LOO_MODEL],
                                            fc_decision_name(row->decision[FC_LOO_MODEL])));
    else
        cJSON_AddStringToObject(o, "reason", row->reason);
    cJSON_AddItemToObject(o, "roofline",
                          estimate_json(row->ms[FC_LOO_ROOFLINE], &row->speedup[FC_LOO_ROOFLINE],
                                        fc_decision_name(row->decision[FC_LOO_ROOFLINE])));
    return o;
}

cJSON *fc_validation_json(const fc_model *m, const char *const *inputs, int ninputs, const fc_validation *v)
{
    cJSON *o = head("validation", m, inputs, ninputs);
    cJSON *val = cJSON_AddObjectToObject(o, "validation");
    cJSON_AddStringToObject(val, "method",
                            "leave-one-out: each record predicted from the others of its machine, backend and class; "
                            "errors over the records the model predicted; decisions over the records decided yes or "
                            "no, a record the model could not predict counted as not reproduced");
    cJSON_AddNumberToObject(val, "records", v->n);
    cJSON_AddItemToObject(val, "model", figures_json(&v->fig[FC_LOO_MODEL]));
    cJSON_AddItemToObject(val, "roofline", figures_json(&v->fig[FC_LOO_ROOFLINE]));
    cJSON *rows = cJSON_AddArrayToObject(val, "rows");
    for (int i = 0; i < v->n; i++) cJSON_AddItemToArray(rows, row_json(m, &v->row[i]));
    return o;
}
