/* cmd_check.c — `fusecal check`: noise-aware pass/fail of calibration records
 * against a baseline and/or a thresholds file, for CI. The verdicts are
 * match.c's; the outputs checkfmt.c's; --run measures through fc_calibrate. */
#include "builtin.h"
#include "calibrate.h"
#include "checkfmt.h"
#include "cmd.h"
#include "format.h"
#include "jsonfile.h"
#include "match.h"
#include "progress.h"
#include "signals.h"
#include "thresholds.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char check_help[] =
    "usage: fusecal check [--baseline FILE] [--thresholds FILE] (CURRENT.json | --run) [options]\n"
    "\n"
    "Judges each record by both speedup confidence intervals, so that noise does\n"
    "not fail a build: pass, improved, regressed (the current interval lies wholly\n"
    "below the baseline's, by more than the allowed regression), below-threshold\n"
    "(the current interval lies wholly below the pattern's minimum speedup),\n"
    "inconclusive, missing, failed-verification.\n"
    "\n"
    "inputs:\n"
    "  --baseline FILE     calibration document to compare with (from 'fusecal run')\n"
    "  --thresholds FILE   minimum speedups and allowed regressions by pattern, device,\n"
    "                      backend, dtype and shape (schemas/thresholds.schema.json)\n"
    "  CURRENT.json        the results to check, or:\n"
    "  --run               measure the baseline's problems now, with its settings\n"
    "  --out FILE          with --run: also save the measured records (JSON, rewritten\n"
    "                      after every record)\n"
    "\n"
    "verdicts:\n"
    "  --tolerance X       allowed regression as a fraction, for every record\n"
    "                      (default: the thresholds file's, else 0.05)\n"
    "  --strict            inconclusive records fail too\n"
    "  --confirm N         with --run: re-measure regressed and below-threshold\n"
    "                      records N times; they fail only when every re-measurement\n"
    "                      fails again, else they become inconclusive\n"
    "\n"
    "output:\n"
    "  --format md|json    the summary on stdout (default md: a markdown table for a\n"
    "                      CI log or a pull-request comment)\n"
    "  --markdown FILE     also write the markdown summary to FILE\n"
    "  --junit FILE        also write JUnit XML, one testcase per record\n"
    "  --quiet             no progress, notes or summary on stdout (files are written)\n"
    "\n"
    "exit status: 0 every record passes (inconclusive passes unless --strict),\n"
    "1 a record regressed, is below its threshold, failed or is missing (or there\n"
    "is nothing to check), 2 bad usage or input (unreadable file, not JSON, wrong\n"
    "schema, newer schema version), 130 interrupted during --run.\n";

enum {
    OPT_BASELINE = 256, OPT_THRESHOLDS, OPT_RUN, OPT_OUT, OPT_TOLERANCE, OPT_STRICT, OPT_CONFIRM, OPT_FORMAT,
    OPT_MARKDOWN, OPT_JUNIT, OPT_QUIET,
};

static const struct option long_opts[] = {
    {"baseline", required_argument, 0, OPT_BASELINE}, {"thresholds", required_argument, 0, OPT_THRESHOLDS},
    {"run", no_argument, 0, OPT_RUN},                 {"out", required_argument, 0, OPT_OUT},
    {"tolerance", required_argument, 0, OPT_TOLERANCE}, {"strict", no_argument, 0, OPT_STRICT},
    {"confirm", required_argument, 0, OPT_CONFIRM},   {"format", required_argument, 0, OPT_FORMAT},
    {"markdown", required_argument, 0, OPT_MARKDOWN}, {"junit", required_argument, 0, OPT_JUNIT},
    {"quiet", no_argument, 0, OPT_QUIET},             {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

typedef struct check_opts {
    const char *baseline, *thresholds, *current, *out, *markdown, *junit;
    bool run, strict, quiet, json;
    double tolerance;
    int confirm;
} check_opts;

static int parse_opts(int argc, char **argv, check_opts *o)
{
    memset(o, 0, sizeof *o);
    o->tolerance = -1;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        double v;
        switch (c) {
        case OPT_BASELINE: o->baseline = optarg; break;
        case OPT_THRESHOLDS: o->thresholds = optarg; break;
        case OPT_RUN: o->run = true; break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_TOLERANCE:
            if (!fc_parse_double(optarg, &v) || v < 0 || v >= 1)
                return fc_usage_error("bad value for --tolerance: '%s' (expected a fraction in [0, 1), e.g. 0.05)", optarg);
            o->tolerance = v;
            break;
        case OPT_STRICT: o->strict = true; break;
        case OPT_CONFIRM: {
            int64_t n;
            if (!fc_parse_i64(optarg, &n) || n < 1 || n > FC_MAX_CONFIRM)
                return fc_usage_error("bad value for --confirm: '%s' (expected an integer in 1..%d)", optarg, FC_MAX_CONFIRM);
            o->confirm = (int)n;
            break;
        }
        case OPT_FORMAT:
            if (!strcmp(optarg, "json")) o->json = true;
            else if (!strcmp(optarg, "md") || !strcmp(optarg, "markdown")) o->json = false;
            else return fc_usage_error("unknown format '%s' (valid: md, json)", optarg);
            break;
        case OPT_MARKDOWN: o->markdown = optarg; break;
        case OPT_JUNIT: o->junit = optarg; break;
        case OPT_QUIET: o->quiet = true; break;
        case 'h': fputs(check_help, stdout); return -1;
        case ':': return fc_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return fc_usage_error("unknown option '%s' (see 'fusecal check --help')", argv[optind - 1]);
        }
    }
    if (optind < argc) o->current = argv[optind++];
    if (optind < argc) return fc_usage_error("unexpected argument '%s' (check takes one current results file)", argv[optind]);
    if (!o->baseline && !o->thresholds)
        return fc_usage_error("check needs --baseline FILE, --thresholds FILE or both (see 'fusecal check --help')");
    if (o->run && o->current)
        return fc_usage_error("give the current results as a file or measure them with --run, not both");
    if (!o->run && !o->current)
        return fc_usage_error("check needs the current results: a file, or --run to measure them now");
    if (o->run && !o->baseline) return fc_usage_error("--run measures the baseline's problems: give --baseline FILE");
    if (o->confirm && !o->run) return fc_usage_error("--confirm re-measures records: it needs --run");
    if (o->out && !o->run) return fc_usage_error("--out saves what --run measures: it needs --run");
    return 0;
}

/* ------------------------------------------------------------------ --run */

typedef struct saver {
    const char *path; /* NULL: keep in memory only */
    fc_progress *pg;
    double t0;
    fc_err err;
    const fc_doc *base;      /* to show each record's verdict as it is measured */
    const fc_thresholds *th;
    double tolerance;
} saver;

static void on_start(void *ctx, int i, int n, const fc_job *job)
{
    saver *s = ctx;
    fc_progress_start(s->pg, i, n, job);
}

static int save_doc(saver *s, fc_doc *d)
{
    if (!s->path) return 0;
    d->elapsed_s = fc_now() - s->t0;
    char *text = fc_doc_to_json(d);
    int rc = fc_write_file_atomic(s->path, text, strlen(text), &s->err);
    free(text);
    return rc;
}

/* Shows a measured record with its verdict against the baseline: in the live
 * line on a terminal, as a log line otherwise. */
static void show_record(saver *s, int i, int n, const fc_record *r)
{
    char key[320], other[320], why[512], sp[96], dims[256];
    const fc_record *b = NULL;
    fc_record_key(r, FC_MATCH_PROBLEM_BACKEND, key, sizeof key);
    for (int k = 0; s->base && k < s->base->n && !b; k++) {
        fc_record_key(&s->base->rec[k], FC_MATCH_PROBLEM_BACKEND, other, sizeof other);
        if (!strcmp(key, other)) b = &s->base->rec[k];
    }
    fc_limits lim;
    fc_thresholds_apply(s->th, r, &lim);
    if (s->tolerance >= 0) lim.tolerance = s->tolerance;
    const char *v = fc_verdict_name(fc_judge(b, r, &lim, why, sizeof why));
    fc_format_speedup(r, sp, sizeof sp);
    fc_progress *pg = s->pg;
    if (pg->tty) {
        fc_progress_record(pg, i, n, r);
        snprintf(pg->last, sizeof pg->last, "%s %s: %s", r->prob.pat->name, sp, v);
        return;
    }
    fc_format_dims(&r->prob, dims, sizeof dims);
    if (r->status == FC_STATUS_OK)
        fc_progress_note(pg, "[%d/%d] %s %s %s: %s fuse=%s; check: %s", i + 1, n, r->prob.pat->name, r->backend, dims, sp,
                         fc_decision_name(r->decision), v);
    else
        fc_progress_note(pg, "[%d/%d] %s %s %s: %s: %s; check: %s", i + 1, n, r->prob.pat->name, r->backend, dims,
                         fc_status_name(r->status), r->reason, v);
}

/* The record is saved before it is shown: the display can never cost a record. */
static int on_record(void *ctx, int i, int n, const fc_doc *d, const fc_record *r)
{
    saver *s = ctx;
    if (save_doc(s, (fc_doc *)d) != 0) {
        fc_progress_end(s->pg);
        fprintf(stderr, "fusecal: error: %s\n", s->err.msg);
        return -1;
    }
    show_record(s, i, n, r);
    return 0;
}

/* The plan: every (problem, backend) of the baseline this build and machine can
 * measure; why[i] says why baseline record i is not measured. */
static void baseline_plan(const fc_doc *base, fc_plan *plan, char (*why)[256], fc_progress *pg)
{
    bool *first = fc_doc_first_records(base);
    for (int i = 0; i < base->n; i++) {
        const fc_record *r = &base->rec[i];
        why[i][0] = 0;
        if (!first[i]) continue; /* listed twice: measured once */
        const fc_backend *b = fc_backend_find(&fc_builtin, r->backend);
        char w[200] = "";
        if (!b) snprintf(why[i], 256, "not measured here: backend '%s' is not in this build", r->backend);
        else if (!b->available(w, sizeof w)) snprintf(why[i], 256, "not measured here: %s is not usable: %s", r->backend, w);
        else if (!fc_device_find(&fc_builtin, b->device) || !fc_device_find(&fc_builtin, b->device)->available(w, sizeof w))
            snprintf(why[i], 256, "not measured here: device '%s' is not usable: %s", b->device, w);
        else if (!b->supports(&r->prob, w, sizeof w)) snprintf(why[i], 256, "not measured here: %s", w);
        else fc_plan_add(plan, &r->prob, b, r->threshold);
        if (why[i][0]) {
            bool said = false; /* one note per backend */
            for (int j = 0; j < i && !said; j++) said = why[j][0] && !strcmp(base->rec[j].backend, r->backend);
            if (!said) fc_progress_note(pg, "fusecal: note: %s: %s", r->problem, why[i]);
        }
    }
    free(first);
}

static cJSON *argv_json(int argc, char **argv)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateString("fusecal"));
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
    return a;
}

/* ------------------------------------------------------------------ output */

static int emit(const check_opts *o, const fc_check_result *c, const fc_check_info *info)
{
    fc_err e;
    int rc = 0;
    if (!o->quiet) {
        char *text = o->json ? fc_check_json(c, info) : fc_check_markdown(c, info);
        fputs(text, stdout);
        fflush(stdout);
        free(text);
    }
    if (o->markdown) {
        char *text = fc_check_markdown(c, info);
        if (fc_write_file_atomic(o->markdown, text, strlen(text), &e) != 0) rc = fc_fail(FC_EXIT_USAGE, &e);
        free(text);
    }
    if (o->junit) {
        char *text = fc_check_junit(c, info);
        if (fc_write_file_atomic(o->junit, text, strlen(text), &e) != 0) rc = fc_fail(FC_EXIT_USAGE, &e);
        free(text);
    }
    return rc;
}

static void say_missing(const fc_check_result *c, const char *baseline)
{
    fc_str b = {0};
    int k = 0;
    for (int i = 0; i < c->n; i++) {
        const fc_check_item *it = &c->items[i];
        if (it->verdict != FC_VERDICT_MISSING || !it->base) continue;
        if (k++ < 20) {
            char key[320];
            fc_record_key(it->base, FC_MATCH_PROBLEM_BACKEND, key, sizeof key);
            fc_str_addf(&b, "%s%s", k > 1 ? "; " : "", key);
        }
    }
    if (k > 20) fc_str_addf(&b, "; and %d more", k - 20);
    fprintf(stderr, "fusecal: error: no current record matches the baseline '%s': %d missing: %s\n", baseline, k,
            fc_str_cstr(&b));
    fc_str_free(&b);
}

/* ------------------------------------------------------------------ command */

int cmd_check(int argc, char **argv)
{
    check_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc < 0) return FC_EXIT_OK;
    if (rc) return rc;
    const double t0 = fc_now();
    fc_err e;
    const char *outs[] = {o.out, o.markdown, o.junit};
    for (size_t i = 0; i < FC_ARRAY_LEN(outs); i++)
        if (outs[i] && fc_check_writable(outs[i], &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);

    fc_thresholds th = {0};
    fc_doc base, cur;
    fc_doc_init(&base);
    fc_doc_init(&cur);
    fc_check_result chk = {0};
    fc_plan plan = {0}, again = {0};
    fc_session ses = {0};
    char (*why)[256] = NULL;
    bool have_th = false, interrupted = false;
    fc_progress pg;
    fc_progress_init(&pg, stderr, o.quiet);

    if (o.thresholds) {
        if (fc_thresholds_load(o.thresholds, &th, &e) != 0) {
            rc = fc_usage_error("bad thresholds file: %s", e.msg);
            goto done;
        }
        have_th = true;
    }
    if (o.baseline && fc_doc_load(o.baseline, &base, &e) != 0) {
        rc = fc_usage_error("bad baseline: %s", e.msg);
        goto done;
    }
    if (o.current && fc_doc_load(o.current, &cur, &e) != 0) {
        rc = fc_usage_error("bad current results: %s", e.msg);
        goto done;
    }

    fc_settings set = base.settings;
    if (o.run) {
        set.max_time_total = 0; /* every problem of the baseline, however long */
        if (set.threads <= 0) set.threads = fc_online_cpus();
        why = fc_xcalloc((size_t)(base.n ? base.n : 1), sizeof *why);
        baseline_plan(&base, &plan, why, &pg);
        fc_signals_install();
        signal(SIGPIPE, SIG_IGN); /* a closed terminal or pipe must not end a measurement */
        if (fc_session_open(&ses, &fc_builtin, &plan, &set, &e) != 0) {
            rc = fc_fail(FC_EXIT_USAGE, &e);
            goto done;
        }
        if (plan.n) {
            fc_progress_note(&pg, "fusecal: measuring this machine's ceilings");
            if (fc_session_ceilings(&ses, &e) != 0) {
                rc = fc_fail(FC_EXIT_FAIL, &e);
                goto done;
            }
        }
        cur.settings = set;
        cur.argv = argv_json(argc, argv);
        fc_session_describe(&ses, &cur.host, &cur.ceilings);
        saver sv = {.path = o.out, .pg = &pg, .t0 = t0, .base = &base, .th = have_th ? &th : NULL,
                    .tolerance = o.tolerance};
        if (save_doc(&sv, &cur) != 0) {
            rc = fc_fail(FC_EXIT_USAGE, &sv.err);
            goto done;
        }
        fc_observer obs = {on_start, on_record, &sv};
        if (plan.n)
            fc_progress_note(&pg, "fusecal: re-measuring %d baseline record%s with its settings", plan.n, plan.n == 1 ? "" : "s");
        if (fc_calibrate(&ses, &plan, &set, &cur, &obs, &fc_interrupted, &e) != 0) {
            rc = FC_EXIT_USAGE; /* on_record said why; the file holds every earlier record */
            goto done;
        }
        fc_progress_end(&pg);
        interrupted = fc_interrupted != 0;
        if (save_doc(&sv, &cur) != 0) {
            rc = fc_fail(FC_EXIT_USAGE, &sv.err);
            goto done;
        }
        if (o.out) fc_progress_note(&pg, "fusecal: wrote %d measured record%s to %s", cur.n, cur.n == 1 ? "" : "s", o.out);
    }

    fc_check_run(&chk, o.baseline ? &base : NULL, &cur, have_th ? &th : NULL, o.tolerance, o.strict);
    if (why)
        for (int i = 0; i < chk.n; i++) {
            fc_check_item *it = &chk.items[i];
            if (it->verdict == FC_VERDICT_MISSING && !it->cur && it->base && why[it->base - base.rec][0])
                fc_strlcpy(it->why, why[it->base - base.rec], sizeof it->why);
        }

    if (o.confirm && !interrupted) {
        int *idx = fc_xcalloc((size_t)(chk.n ? chk.n : 1), sizeof *idx), nidx = 0;
        for (int i = 0; i < chk.n; i++) {
            const fc_check_item *it = &chk.items[i];
            const fc_backend *b = it->cur ? fc_backend_find(&fc_builtin, it->cur->backend) : NULL;
            if (!fc_check_wants_confirm(it) || !b) continue;
            idx[nidx++] = i;
            fc_plan_add(&again, &it->cur->prob, b, it->cur->threshold);
        }
        for (int k = 0; k < o.confirm && nidx && !fc_interrupted; k++) {
            fc_progress_note(&pg, "fusecal: re-measuring %d failing record%s (%d of %d)", nidx, nidx == 1 ? "" : "s", k + 1,
                             o.confirm);
            fc_settings s2 = set;
            s2.seed = fc_seed_mix(set.seed, (uint64_t)k + 1);
            fc_doc tmp;
            fc_doc_init(&tmp);
            saver quiet_saver = {.path = NULL, .pg = &pg, .t0 = t0, .base = &base, .th = have_th ? &th : NULL,
                                 .tolerance = o.tolerance};
            fc_observer obs = {on_start, on_record, &quiet_saver};
            fc_calibrate(&ses, &again, &s2, &tmp, &obs, &fc_interrupted, &e);
            fc_progress_end(&pg);
            for (int j = 0; j < nidx; j++) {
                const fc_record *found = NULL;
                char k1[320], k2[320];
                fc_record_key(chk.items[idx[j]].cur, FC_MATCH_PROBLEM_BACKEND, k1, sizeof k1);
                for (int m = 0; m < tmp.n && !found; m++) {
                    fc_record_key(&tmp.rec[m], FC_MATCH_PROBLEM_BACKEND, k2, sizeof k2);
                    if (!strcmp(k1, k2)) found = &tmp.rec[m];
                }
                if (found || !fc_interrupted) fc_check_confirm(&chk, idx[j], found);
            }
            fc_doc_free(&tmp);
        }
        fc_check_settle(&chk);
        free(idx);
        interrupted = fc_interrupted != 0;
    }

    fc_check_info info = {.baseline = o.baseline, .current = o.current, .thresholds = o.thresholds,
                          .base_doc = o.baseline ? &base : NULL, .cur_doc = &cur, .tolerance = o.tolerance,
                          .confirm = o.confirm, .elapsed_s = fc_now() - t0, .interrupted = interrupted};
    if ((rc = emit(&o, &chk, &info)) != 0) goto done;
    if (chk.have_base && base.n > 0 && chk.matched == 0) say_missing(&chk, o.baseline);
    rc = interrupted ? FC_EXIT_INTERRUPTED : fc_check_exit_code(&chk);
    if (chk.n == 0) fprintf(stderr, "fusecal: error: nothing to check: the current results hold no records\n");
    else if (!(chk.have_base && base.n > 0 && chk.matched == 0)) { /* (say_missing said it) */
        fc_str counts = {0};
        for (int v = FC_NVERDICTS - 1; v >= 0; v--)
            if (chk.count[v]) fc_str_addf(&counts, "%s%d %s", counts.len ? ", " : "", chk.count[v], fc_verdict_name((fc_verdict)v));
        fc_progress_note(&pg, "fusecal: check %s: %s", rc == FC_EXIT_OK ? "passed" : rc == FC_EXIT_FAIL ? "failed" : "interrupted",
                         fc_str_cstr(&counts));
        fc_str_free(&counts);
    }
done:
    fc_progress_end(&pg);
    fc_check_free(&chk);
    fc_session_close(&ses);
    fc_plan_free(&plan);
    fc_plan_free(&again);
    free(why);
    fc_doc_free(&base);
    fc_doc_free(&cur);
    if (have_th) fc_thresholds_free(&th);
    return rc;
}
