/* cmd_predict.c — `fusecal predict CALIBRATION.json... --problem P...`: latency,
 * speedup and decision at problems with or without a record, from the model
 * fitted to the records (measure/predict.h); `--validate`: its leave-one-out
 * figures against the uncalibrated roofline. */
#include "builtin.h"
#include "cmd.h"
#include "network.h"
#include "opts.h"
#include "predict.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int predict_files(const fc_args *args);

enum { O_PROBLEM, O_NETWORK, O_BATCH, O_SEQ, O_VALIDATE, O_FORMAT, O_OUT, O_COUNT };

static const char *const format_names[] = {"text", "json"};
static const fc_words format_words = {"format", format_names, 2, 0};

static const fc_option options[] = {
    [O_PROBLEM] = {.name = "problem",
                   .short_name = 'p',
                   .kind = FC_OPT_MULTI,
                   .metavar = "P",
                   .section = "options",
                   .help = "a problem string such as 'linear_bias_relu:m=768,k=1024,n=1024'; repeatable"},
    [O_NETWORK] = {.name = "network",
                   .kind = FC_OPT_TEXT,
                   .metavar = "NAME|FILE",
                   .section = "options",
                   .words_fn = fc_network_words,
                   .file = true,
                   .help = "every unique site of a network ('fusecal list networks', or a network file) with its "
                           "multiplicity: the summary is what fusing it saves per inference"},
    [O_BATCH] = {.name = "batch",
                 .kind = FC_OPT_INT,
                 .metavar = "N",
                 .section = "options",
                 .min = 1,
                 .max = 1000000,
                 .def = "the network file's",
                 .help = "with --network: the batch size"},
    [O_SEQ] = {.name = "seq",
               .kind = FC_OPT_INT,
               .metavar = "S",
               .section = "options",
               .min = 1,
               .max = 100000000,
               .def = "the network file's",
               .help = "with --network: the sequence length"},
    [O_VALIDATE] = {.name = "validate",
                    .kind = FC_OPT_FLAG,
                    .section = "options",
                    .help = "leave-one-out over the records instead: the model's errors and decisions against the "
                            "uncalibrated roofline's"},
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &format_words,
                  .def = "text",
                  .help = "a table for a terminal, or JSON (schemas/predict.schema.json)"},
    [O_OUT] = {.name = "out",
               .short_name = 'o',
               .kind = FC_OPT_TEXT,
               .metavar = "FILE",
               .section = "options",
               .file = true,
               .help = "write there instead of stdout"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "predict options");

static const fc_operand operands[] = {
    {"CALIBRATION.json...", "calibration documents (from 'fusecal run'); a problem measured in two, the later's record",
     NULL, true},
};

const fc_cmd_spec fc_cmd_predict = {
    .name = "predict",
    .summary = "latency, speedup and decision at unmeasured problems, from a calibration",
    .synopsis = "CALIBRATION.json... (--problem P... | --network NAME | --validate) [options]",
    .description =
        "For each problem and each machine and backend of the calibrations: the unfused and fused latency, the "
        "speedup with its 95% interval and the fuse decision, from the record when the problem was measured "
        "(measured), else from a model fitted to the records of its class (predicted, with the nearest measured "
        "problems named), else unknown with the reason. Then, per backend, the unfused time of the problems and "
        "what fusing every yes problem saves.\n\n"
        "The model, per machine, backend and class (pattern, dtype, layout, causal): fused t = overhead + "
        "FLOPs / (e_F ceiling) + bytes / (e_B bandwidth), the bytes that stay in cache at the cache's rate; "
        "unfused t = k t_fused + overhead + bytes removed by "
        "fusion / (e bandwidth); fitted robustly in log space to at least 4 records, and used within 4x of the "
        "FLOPs and bytes measured. The speedup's intervals come from its own held-out errors: rerun95 where a "
        "measurement would fall, ci95 the speedup itself (the records' measurement noise taken out), on which the "
        "decision is made by the records' rule.\n\n"
        "--validate predicts each record from the other records of its class and reports the median and 90th "
        "percentile error of each latency and of the speedup, and how many decisions it reproduces, beside the "
        "same figures for the uncalibrated roofline (the measured ceilings, no fit).",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status =
        "0 every problem answered on some backend (validate: some record predicted), 1 a problem "
        "unknown on every backend (validate: none predicted), 2 bad usage or input.",
    .run = predict_files,
};

/* ------------------------------------------------------------------ text */

static void speedup_text(fc_str *b, const fc_ratio_ci *s)
{
    fc_str_addf(b, "%.3f [%.3f, %.3f]", s->ratio, s->lo, s->hi);
}

static void prediction_text(fc_str *b, const fc_model *m, const fc_prediction *p, bool machines)
{
    fc_str_addf(b, "  %-13s %-9s", p->backend, fc_pred_source_name(p->source));
    if (machines) fc_str_addf(b, " on %s", m->machine[p->machine].name);
    if (p->source == FC_SRC_UNKNOWN) {
        fc_str_addf(b, " %s\n", p->reason);
    } else {
        fc_str_addf(b, " unfused %.4g ms, fused %.4g ms, ", p->unfused_ms, p->fused_ms);
        if (p->control_ms > 0) fc_str_addf(b, "control %.4g ms, fusion speedup ", p->control_ms);
        else
            fc_str_add(b, "speedup ");
        speedup_text(b, &p->speedup);
        fc_str_addf(b, " vs %.3g: %s\n", p->threshold, fc_decision_name(p->decision));
    }
    for (int i = 0; i < p->nnearest; i++)
        fc_str_addf(b, "    %s %s\n", i ? "        " : "nearest:", p->nearest[i]->problem);
}

/* The problems of one summary that fusion speeds up (yes) or slows down. */
static void site_list(fc_str *b, const char *what, const fc_site *sites, const fc_prediction *p, int np,
                      const fc_predict_summary *s, bool losing)
{
    int n = 0;
    for (int i = 0; i < np; i++) {
        if (p[i].machine != s->machine || strcmp(p[i].backend, s->backend) || p[i].source == FC_SRC_UNKNOWN) continue;
        if (losing ? !(p[i].speedup.hi < 1) : p[i].decision != FC_DECIDE_YES) continue;
        char problem[256];
        fc_problem_string(&sites[p[i].site].prob, problem, sizeof problem);
        fc_str_addf(b, "%s%s", n++ ? ", " : what, problem);
    }
    if (n) fc_str_add(b, "\n");
}

static void summary_text(fc_str *b, const fc_model *m, const fc_site *sites, const fc_prediction *p, int np,
                         const char *network)
{
    fc_predict_summary *s;
    int ns = fc_predict_summarize(m, sites, p, np, &s);
    if (network)
        fc_str_addf(b, "\nsummary for network %s, per inference (each site times its multiplicity):\n", network);
    else
        fc_str_addf(b, "\nsummary, each problem once:\n");
    for (int i = 0; i < ns; i++) {
        fc_str_addf(b, "  %-13s %d of %d answered, unfused %.4g ms; fusing the %d yes saves %.4g ms [%.4g, %.4g]\n",
                    s[i].backend, s[i].known, s[i].sites, s[i].unfused_ms, s[i].fuse, s[i].saving_ms, s[i].saving_lo,
                    s[i].saving_hi);
        if (m->nmachines > 1) fc_str_addf(b, "    on %s\n", m->machine[s[i].machine].name);
        site_list(b, "    fuse: ", sites, p, np, &s[i], false);
        site_list(b, "    slower fused: ", sites, p, np, &s[i], true);
    }
    free(s);
}

static char *predictions_text(const fc_model *m, const fc_site *sites, const fc_prediction *p, int np,
                              const char *network)
{
    fc_str b = {0};
    if (m->nmachines == 1) fc_str_addf(&b, "machine: %s\n", m->machine[0].name);
    for (int i = 0; i < np; i++) {
        if (i == 0 || p[i].site != p[i - 1].site) {
            char problem[256];
            fc_problem_string(&sites[p[i].site].prob, problem, sizeof problem);
            fc_str_addf(&b, "\n%s\n", problem);
            const fc_site *st = &sites[p[i].site];
            if (st->name) fc_str_addf(&b, "  x%g per inference: %s\n", st->multiplicity, st->name);
        }
        prediction_text(&b, m, &p[i], m->nmachines > 1);
    }
    summary_text(&b, m, sites, p, np, network);
    return b.s;
}

static void figure_line(fc_str *b, const char *what, const fc_validation *v, int q)
{
    fc_str_addf(b, "  %-24s", what);
    for (int p = 0; p < FC_LOO_NPREDICTORS; p++)
        fc_str_addf(b, "   median %5.1f %%  p90 %5.1f %%", 100 * v->fig[p].median_err[q], 100 * v->fig[p].p90_err[q]);
    fc_str_addf(b, "\n");
}

static void count_line(fc_str *b, const char *what, int a, int c, int of)
{
    fc_str_addf(b, "  %-24s   %4d of %-4d (%5.1f %%)      %4d of %-4d (%5.1f %%)\n", what, a, of,
                of ? 100.0 * a / of : 0.0, c, of, of ? 100.0 * c / of : 0.0);
}

static char *validation_text(const fc_validation *v)
{
    const fc_loo_figures *f = v->fig;
    fc_str b = {0};
    fc_str_addf(&b, "leave-one-out over %d records: each predicted from the others of its machine, backend and class\n",
                v->n);
    fc_str_addf(&b, "  %-24s   %-28s   %s\n", "", "model", "uncalibrated roofline");
    fc_str_addf(&b, "  %-24s   %d records predicted (the errors are over these)\n", "predicted", f[0].n);
    figure_line(&b, "unfused latency error", v, FC_UNFUSED);
    figure_line(&b, "fused latency error", v, FC_FUSED);
    figure_line(&b, "speedup error", v, FC_NVARIANTS);
    int d = f[0].decided;
    count_line(&b, "decisions reproduced", f[0].reproduced, f[1].reproduced, d);
    count_line(&b, "  contradicted", f[0].contradicted, f[1].contradicted, d);
    count_line(&b, "  inconclusive", f[0].undecided, f[1].undecided, d);
    count_line(&b, "  not predicted", f[0].unknown, f[1].unknown, d);
    count_line(&b, "estimate on its side", f[0].point_reproduced, f[1].point_reproduced, d);
    fc_str_addf(&b, "  %-24s   %5.1f %%                        %5.1f %%\n", "rerun95 coverage", 100 * f[0].coverage,
                100 * f[1].coverage);
    for (int i = 0; i < v->n; i++)
        if (!v->row[i].known)
            fc_str_addf(&b, "not predicted: %s on %s: %s\n", v->row[i].rec->problem, v->row[i].rec->backend,
                        v->row[i].reason);
    return b.s;
}

/* ------------------------------------------------------------------ the command */

static int emit(const char *out, char *text)
{
    fc_err e;
    int rc = FC_EXIT_OK;
    if (out) {
        if (fc_write_file_atomic(out, text, strlen(text), &e) != 0) rc = fc_fail(FC_EXIT_USAGE, &e);
    } else {
        fputs(text, stdout);
        fflush(stdout);
    }
    free(text);
    return rc;
}

static char *json_text(cJSON *o)
{
    char *text = fc_add_newline(cJSON_Print(o));
    cJSON_Delete(o);
    return text;
}

static int validate(const fc_args *args, const fc_model *m)
{
    fc_validation v;
    fc_predict_validate(m, &v);
    bool json = !strcmp(args->v[O_FORMAT].s ? args->v[O_FORMAT].s : "text", "json");
    char *text = json ? json_text(fc_validation_json(m, args->operands, args->noperands, &v)) : validation_text(&v);
    int rc = emit(args->v[O_OUT].s, text);
    if (rc == FC_EXIT_OK && v.fig[FC_LOO_MODEL].n == 0) {
        fprintf(stderr, "fusecal: no record could be predicted from the others (a class needs %d others)\n",
                FC_PREDICT_MIN_RECORDS);
        rc = FC_EXIT_FAIL;
    }
    fc_validation_free(&v);
    return rc;
}

/* Whether every site has an answer on some machine and backend. */
static bool all_answered(const fc_prediction *p, int np, int nsites)
{
    for (int s = 0; s < nsites; s++) {
        bool known = false;
        for (int i = 0; i < np; i++) known |= p[i].site == s && p[i].source != FC_SRC_UNKNOWN;
        if (!known) return false;
    }
    return true;
}

/* The sites asked about: each --problem once, or a network's unique sites with
 * their multiplicities and names (query[i] the problem string either way). */
typedef struct site_list_t {
    fc_site *sites;
    char **query;
    char **names;
    int n;
    fc_network net;
} site_list_t;

static void sites_free(site_list_t *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->query[i]);
        free(l->names[i]);
    }
    free(l->sites);
    free(l->query);
    free(l->names);
    fc_network_free(&l->net);
}

static void sites_alloc(site_list_t *l, int n)
{
    l->n = n;
    l->sites = fc_xcalloc((size_t)n, sizeof *l->sites);
    l->query = fc_xcalloc((size_t)n, sizeof *l->query);
    l->names = fc_xcalloc((size_t)n, sizeof *l->names);
}

static int network_sites(const fc_args *args, site_list_t *l)
{
    fc_err e;
    int64_t batch = args->v[O_BATCH].given ? args->v[O_BATCH].i : 0, seq = args->v[O_SEQ].given ? args->v[O_SEQ].i : 0;
    if (fc_network_load(args->v[O_NETWORK].s, &l->net, &e) != 0 || fc_network_rescale(&l->net, batch, seq, &e) != 0)
        return fc_usage_error("%s", e.msg);
    sites_alloc(l, l->net.n);
    for (int i = 0; i < l->n; i++) {
        char buf[4096], ps[256];
        l->sites[i].prob = l->net.site[i].prob;
        l->sites[i].multiplicity = (double)l->net.site[i].multiplicity;
        fc_net_site_names(&l->net.site[i], buf, sizeof buf);
        l->sites[i].name = l->names[i] = fc_xstrdup(buf);
        fc_problem_string(&l->sites[i].prob, ps, sizeof ps);
        l->query[i] = fc_xstrdup(ps);
    }
    return 0;
}

static int problem_sites(const fc_args *args, site_list_t *l)
{
    const fc_optval *pv = &args->v[O_PROBLEM];
    sites_alloc(l, pv->n);
    for (int i = 0; i < pv->n; i++) {
        fc_err e;
        if (fc_problem_parse(pv->list[i], NULL, &l->sites[i].prob, &e) != 0)
            return fc_usage_error("bad --problem '%s': %s", pv->list[i], e.msg);
        l->sites[i].multiplicity = 1;
        l->query[i] = fc_xstrdup(pv->list[i]);
    }
    return 0;
}

static int predict(const fc_args *args, const fc_model *m)
{
    site_list_t l = {0};
    int rc = args->v[O_NETWORK].s ? network_sites(args, &l) : problem_sites(args, &l);
    if (rc != 0) {
        sites_free(&l);
        return rc;
    }
    fc_prediction *p;
    int np = fc_predict_sites(m, l.sites, l.n, &p);
    bool json = !strcmp(args->v[O_FORMAT].s ? args->v[O_FORMAT].s : "text", "json");
    char *text;
    if (json) {
        cJSON *doc = fc_predict_json(m, args->operands, args->noperands, l.sites, (const char *const *)l.query, l.n, p,
                                     np);
        if (args->v[O_NETWORK].s) cJSON_AddItemToObject(doc, "network", fc_network_json(&l.net));
        text = json_text(doc);
    } else
        text = predictions_text(m, l.sites, p, np, args->v[O_NETWORK].s ? l.net.name : NULL);
    rc = emit(args->v[O_OUT].s, text);
    if (rc == FC_EXIT_OK && !all_answered(p, np, l.n)) rc = FC_EXIT_FAIL;
    free(p);
    sites_free(&l);
    return rc;
}

static int check_usage(const fc_args *args)
{
    if (args->noperands < 1) return fc_usage_error("predict needs a calibration file (see 'fusecal predict --help')");
    bool problems = args->v[O_PROBLEM].n > 0, validating = args->v[O_VALIDATE].given, network = args->v[O_NETWORK].s;
    if (problems + validating + network > 1)
        return fc_usage_error("--problem, --network and --validate exclude each other");
    if (!problems && !validating && !network)
        return fc_usage_error("predict needs --problem P, --network or --validate");
    if ((args->v[O_BATCH].given || args->v[O_SEQ].given) && !network)
        return fc_usage_error("--%s rewrites a network's sites: give --network too",
                              args->v[O_BATCH].given ? "batch" : "seq");
    fc_err e;
    if (args->v[O_OUT].s && fc_check_writable(args->v[O_OUT].s, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    return FC_EXIT_OK;
}

static int predict_files(const fc_args *args)
{
    int rc = check_usage(args), n = args->noperands;
    if (rc != FC_EXIT_OK) return rc;
    fc_doc *docs = fc_xcalloc((size_t)n, sizeof *docs);
    int loaded = 0;
    for (; loaded < n; loaded++) {
        fc_err e;
        if (fc_doc_load(args->operands[loaded], &docs[loaded], &e) != 0) {
            rc = fc_usage_error("bad input: %s", e.msg);
            break;
        }
    }
    if (rc == FC_EXIT_OK) {
        fc_model m;
        fc_model_build(&m, docs, n, &fc_builtin);
        if (m.npairs == 0)
            rc = fc_usage_error("no measured record in %s (records with status ok and both latencies)",
                                n == 1 ? args->operands[0] : "the calibrations");
        else
            rc = args->v[O_VALIDATE].given ? validate(args, &m) : predict(args, &m);
        fc_model_free(&m);
    }
    for (int i = 0; i < loaded; i++) fc_doc_free(&docs[i]);
    free(docs);
    return rc;
}
