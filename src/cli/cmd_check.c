/* cmd_check.c — `fusecal check`: noise-aware pass/fail of calibration records
 * against a baseline and/or a thresholds file, for CI. The verdicts and the
 * --confirm loop are match.c's; the outputs checkfmt.c's; --run and --confirm
 * measure through fc_calibrate. */
#include "builtin.h"
#include "calibrate.h"
#include "checkfmt.h"
#include "cmd.h"
#include "format.h"
#include "inputs.h"
#include "jsonfile.h"
#include "match.h"
#include "progress.h"
#include "select.h"
#include "signals.h"
#include "thresholds.h"
#include "writer.h"

#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

static int check_command(const fc_args *args);

enum {
    O_BASELINE,
    O_THRESHOLDS,
    O_RUN,
    O_OUT,
    O_TOLERANCE,
    O_STRICT,
    O_CONFIRM,
    O_FORMAT,
    O_MARKDOWN,
    O_JUNIT,
    O_QUIET,
    O_COUNT
};

static const char *const format_names[] = {"md", "json"};
static const fc_words format_words = {"format", format_names, 2, 0};
static const char *const md_aliases[] = {"markdown", "md", NULL};

#define IN "inputs"
#define VERDICTS "verdicts"
#define OUTPUT "output"
static const fc_option options[] = {
    [O_BASELINE] = {.name = "baseline",
                    .kind = FC_OPT_TEXT,
                    .metavar = "FILE",
                    .section = IN,
                    .file = true,
                    .help = "the calibration document to compare with (from 'fusecal run')"},
    [O_THRESHOLDS] = {.name = "thresholds",
                      .kind = FC_OPT_TEXT,
                      .metavar = "FILE",
                      .section = IN,
                      .file = true,
                      .help = "minimum speedups and allowed regressions by pattern, device, backend, dtype and shape "
                              "(schemas/thresholds.schema.json): the first rule that matches a record and sets a limit "
                              "wins"},
    [O_RUN] = {.name = "run",
               .kind = FC_OPT_FLAG,
               .section = IN,
               .help = "measure the baseline's problems now, with its settings, instead of reading CURRENT.json"},
    [O_OUT] = {.name = "out",
               .kind = FC_OPT_TEXT,
               .metavar = "FILE",
               .section = IN,
               .file = true,
               .help = "with --run: also save the measured records (JSON, rewritten after every record)"},
    [O_TOLERANCE] = {.name = "tolerance",
                     .kind = FC_OPT_NUM,
                     .metavar = "X",
                     .section = VERDICTS,
                     .min = 0,
                     .max = 1,
                     .max_excluded = true,
                     .def = "the thresholds file's, else " STR(FC_DEFAULT_TOLERANCE),
                     .help = "allowed regression as a fraction, for every record"},
    [O_STRICT] = {.name = "strict", .kind = FC_OPT_FLAG, .section = VERDICTS, .help = "inconclusive records fail too"},
    [O_CONFIRM] = {.name = "confirm",
                   .kind = FC_OPT_INT,
                   .metavar = "N",
                   .section = VERDICTS,
                   .min = 1,
                   .max = FC_MAX_CONFIRM,
                   .help = "with --run: measure regressed and below-threshold records again N times; they fail only "
                           "when every re-measurement fails again, else they become inconclusive"},
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = OUTPUT,
                  .words = &format_words,
                  .aliases = md_aliases,
                  .def = "md",
                  .help = "the summary on stdout: a markdown table for a CI log or a pull-request comment, or JSON"},
    [O_MARKDOWN] = {.name = "markdown",
                    .kind = FC_OPT_TEXT,
                    .metavar = "FILE",
                    .section = OUTPUT,
                    .file = true,
                    .help = "also write the markdown summary to FILE"},
    [O_JUNIT] = {.name = "junit",
                 .kind = FC_OPT_TEXT,
                 .metavar = "FILE",
                 .section = OUTPUT,
                 .file = true,
                 .help = "also write JUnit XML, one testcase per record"},
    [O_QUIET] = {.name = "quiet",
                 .kind = FC_OPT_FLAG,
                 .section = OUTPUT,
                 .help = "no progress, notes or summary on stdout (files are written)"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "check options");

static const fc_operand operands[] = {
    {"CURRENT.json",
     "the results to check (from 'fusecal run'); or --run. Other fusecal documents among the files (info, "
     "thresholds...) are skipped with a note",
     NULL, true},
};

const fc_cmd_spec fc_cmd_check = {
    .name = "check",
    .summary = "pass or fail records against a baseline and thresholds, for CI",
    .synopsis = "[--baseline FILE] [--thresholds FILE] (CURRENT.json | --run) [options]",
    .description =
        "Judges each record by both speedup confidence intervals (the fusion split's, control/fused, where a "
        "control was measured: what fusion alone gives), so that noise does not fail a build: "
        "pass, improved, regressed (the current interval lies wholly below the baseline's, by more than "
        "the allowed regression), below-threshold (the current interval lies wholly below the pattern's "
        "minimum speedup), inconclusive, missing, failed-verification, skipped (the library declined the "
        "problem, and the baseline did not measure it either: passes, unless every record is skipped).",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status =
        "0 every record passes (inconclusive passes unless --strict), 1 a record regressed, is below its "
        "threshold, failed or is missing (or there is nothing to check: no records, or every record skipped), 2 bad usage or input (unreadable "
        "file, not JSON, wrong schema, newer schema version), 130 interrupted during --run.",
    .run = check_command,
};

typedef struct check_opts {
    const char *baseline, *thresholds, *current, *out, *markdown, *junit;
    const char **files; /* the operands: the current results among them */
    int nfiles;
    bool run, strict, quiet, json;
    double tolerance; /* < 0: not given */
    int confirm;
} check_opts;

static int check_opts_from(const fc_args *a, check_opts *o)
{
    memset(o, 0, sizeof *o);
    o->baseline = a->v[O_BASELINE].s;
    o->thresholds = a->v[O_THRESHOLDS].s;
    o->out = a->v[O_OUT].s;
    o->markdown = a->v[O_MARKDOWN].s;
    o->junit = a->v[O_JUNIT].s;
    o->run = a->v[O_RUN].given;
    o->strict = a->v[O_STRICT].given;
    o->quiet = a->v[O_QUIET].given;
    o->json = a->v[O_FORMAT].s && !strcmp(a->v[O_FORMAT].s, "json");
    o->tolerance = a->v[O_TOLERANCE].given ? a->v[O_TOLERANCE].d : -1;
    o->confirm = (int)a->v[O_CONFIRM].i;
    o->files = a->operands;
    o->nfiles = a->noperands;
    o->current = a->noperands ? a->operands[0] : NULL; /* the calibration among them, once read */
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

typedef struct check_state {
    fc_thresholds th;
    bool have_th;
    fc_doc base, cur;
    fc_check_result chk;
    fc_session ses;
    fc_plan plan;
    fc_settings set;
    char (*why)[256]; /* why baseline record i was not measured (--run) */
    fc_progress pg;
    double t0;
    bool interrupted;
} check_state;

/* ------------------------------------------------------------------ showing records as they are measured */

typedef struct display {
    fc_progress *pg;
    const fc_doc *base;
    const fc_thresholds *th;
    double tolerance;
} display;

static void show_start(void *ctx, int i, int n, int pass, int npass, const fc_job *job)
{
    display *s = ctx;
    fc_progress_start(s->pg, i, n, pass, npass, job);
}

/* A measured record with its verdict against the baseline: in the live line on
 * a terminal, as a log line otherwise. */
static int show_record(void *ctx, int i, int n, const fc_doc *d, const fc_record *r)
{
    (void)d;
    display *s = ctx;
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
        return 0;
    }
    fc_format_dims(&r->prob, dims, sizeof dims);
    if (r->status == FC_STATUS_OK)
        fc_progress_note(pg, "[%d/%d] %s %s %s: %s fuse=%s; check: %s", i + 1, n, r->prob.pat->name, r->backend, dims,
                         sp, fc_decision_name(r->decision), v);
    else
        fc_progress_note(pg, "[%d/%d] %s %s %s: %s: %s; check: %s", i + 1, n, r->prob.pat->name, r->backend, dims,
                         fc_status_name(r->status), r->reason, v);
    return 0;
}

/* ------------------------------------------------------------------ --run */

/* The plan: every (problem, backend) of the baseline this build and machine can
 * measure; why[i] says why baseline record i is not measured. */
static void baseline_plan(const fc_doc *base, fc_plan *plan, char (*why)[256], fc_progress *pg)
{
    bool *first = fc_doc_first_records(base);
    for (int i = 0; i < base->n; i++) {
        const fc_record *r = &base->rec[i];
        why[i][0] = 0;
        if (!first[i]) continue; /* listed twice: measured once */
        char w[200] = "";
        if (!fc_backend_usable(&fc_builtin, r->backend, w, sizeof w)) snprintf(why[i], 256, "not measured here: %s", w);
        else if (!fc_backend_find(&fc_builtin, r->backend)->supports(&r->prob, w, sizeof w))
            snprintf(why[i], 256, "not measured here: %s", w);
        else
            fc_plan_add(plan, &r->prob, fc_backend_find(&fc_builtin, r->backend), r->threshold);
        if (why[i][0]) {
            bool said = false; /* one note per backend */
            for (int j = 0; j < i && !said; j++) said = why[j][0] && !strcmp(base->rec[j].backend, r->backend);
            if (!said) fc_progress_note(pg, "fusecal: note: %s: %s", r->problem, why[i]);
        }
    }
    free(first);
}

/* Opens the devices of the plan and measures their ceilings; the current
 * document gets the baseline's settings, this command line, host and ceilings. */
static int open_session(check_state *st, const char *out, int argc, char **argv)
{
    fc_err e;
    st->set = st->base.settings;
    st->set.max_time_total = 0; /* every problem of the baseline, however long */
    st->set.processes = true;   /* rounds in worker processes, as run measures */
    if (st->set.threads <= 0) st->set.threads = fc_allowed_cpus();
    fc_progress_test_fast(&st->pg, &st->set, false);
    st->why = fc_xcalloc((size_t)(st->base.n ? st->base.n : 1), sizeof *st->why);
    baseline_plan(&st->base, &st->plan, st->why, &st->pg);
    fc_signals_install();
    if (fc_session_open(&st->ses, &fc_builtin, &st->plan, &st->set, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    if (st->plan.n) {
        /* before anything is saved: run refuses an output this check writes, and this
         * check one that a run writes */
        int other = fc_progress_peers(&st->pg, out);
        if (other) return fc_output_taken(out, other, "");
        if (fc_progress_ceilings(&st->pg, &st->ses, &e) != 0) return fc_fail(FC_EXIT_FAIL, &e);
    }
    st->cur.settings = st->set;
    st->cur.argv = fc_command_line_json(argc, argv);
    fc_session_describe(&st->ses, &st->cur.host, &st->cur.ceilings);
    return 0;
}

/* --run: the baseline's problems measured now into st->cur (and --out). */
static int measure_baseline(const check_opts *o, check_state *st, int argc, char **argv)
{
    int rc = open_session(st, o->out, argc, argv);
    if (rc) return rc;
    fc_err e;
    display show = {&st->pg, &st->base, st->have_th ? &st->th : NULL, o->tolerance};
    fc_writer w = {.path = o->out,
                   .fmt = FC_FMT_JSON,
                   .t0 = st->t0,
                   .pg = &st->pg,
                   .show = {show_start, show_record, &show}};
    if (fc_writer_save(&w, &st->cur) != 0) return fc_fail(FC_EXIT_USAGE, &w.err);
    fc_observer obs = fc_writer_observer(&w);
    int n = st->plan.n;
    if (n)
        fc_progress_note(&st->pg, "fusecal: re-measuring %d baseline record%s with its settings", n, n == 1 ? "" : "s");
    if (fc_calibrate(&st->ses, &st->plan, &st->set, &st->cur, &obs, &fc_interrupted, &e) != 0) {
        fc_writer_calibrate_failed(&w, &st->cur, &e);
        return FC_EXIT_USAGE;
    }
    fc_progress_end(&st->pg);
    st->interrupted = fc_interrupted != 0;
    if (fc_writer_save(&w, &st->cur) != 0) return fc_fail(FC_EXIT_USAGE, &w.err);
    if (o->out)
        fc_progress_note(&st->pg, "fusecal: wrote %d measured record%s to %s", st->cur.n, st->cur.n == 1 ? "" : "s",
                         o->out);
    return 0;
}

/* ------------------------------------------------------------------ --confirm */

typedef struct confirmer {
    check_state *st;
    display *show;
} confirmer;

static bool can_measure(void *ctx, const fc_record *r)
{
    (void)ctx;
    return fc_backend_find(&fc_builtin, r->backend) != NULL;
}

static bool measure_again(void *ctx, const fc_record *const *recs, int nrecs, int k, int n, fc_doc *out)
{
    confirmer *c = ctx;
    check_state *st = c->st;
    fc_progress_note(&st->pg, "fusecal: re-measuring %d failing record%s (%d of %d)", nrecs, nrecs == 1 ? "" : "s",
                     k + 1, n);
    fc_plan plan = {0};
    for (int i = 0; i < nrecs; i++)
        fc_plan_add(&plan, &recs[i]->prob, fc_backend_find(&fc_builtin, recs[i]->backend), recs[i]->threshold);
    fc_settings set = st->set;
    set.seed = fc_seed_mix(st->set.seed, (uint64_t)k + 1);
    fc_writer w = {.path = NULL, .t0 = st->t0, .pg = &st->pg, .show = {show_start, show_record, c->show}};
    fc_observer obs = fc_writer_observer(&w);
    fc_err e;
    fc_calibrate(&st->ses, &plan, &set, out, &obs, &fc_interrupted, &e);
    fc_progress_end(&st->pg);
    fc_plan_free(&plan);
    return fc_interrupted != 0;
}

/* ------------------------------------------------------------------ verdicts and output */

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
    const char *paths[] = {o->markdown, o->junit};
    for (int i = 0; i < 2; i++) {
        if (!paths[i]) continue;
        char *text = i == 0 ? fc_check_markdown(c, info) : fc_check_junit(c, info);
        if (fc_write_file_atomic(paths[i], text, strlen(text), &e) != 0) rc = fc_fail(FC_EXIT_USAGE, &e);
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

/* The verdict counts on stderr, or why there is nothing to say. */
static void summarize(const check_opts *o, check_state *st, int rc)
{
    const fc_check_result *chk = &st->chk;
    bool none_matched = chk->have_base && st->base.n > 0 && chk->matched == 0;
    if (none_matched) say_missing(chk, o->baseline);
    if (chk->n == 0) {
        fprintf(stderr, "fusecal: error: nothing to check: the current results hold no records\n");
        return;
    }
    if (none_matched) return;
    if (fc_check_all_skipped(chk))
        fprintf(stderr, "fusecal: error: nothing was measured: all %d record%s skipped (declined by the library)\n",
                chk->n, chk->n == 1 ? " was" : "s were");
    fc_str counts = {0};
    for (int v = FC_NVERDICTS - 1; v >= 0; v--)
        if (chk->count[v])
            fc_str_addf(&counts, "%s%d %s", counts.len ? ", " : "", chk->count[v], fc_verdict_name((fc_verdict)v));
    fc_progress_note(&st->pg, "fusecal: check %s: %s",
                     rc == FC_EXIT_OK     ? "passed"
                     : rc == FC_EXIT_FAIL ? "failed"
                                          : "interrupted",
                     fc_str_cstr(&counts));
    fc_str_free(&counts);
}

/* Judges, re-measures what --confirm asks for, writes the outputs; the exit code. */
static int judge(const check_opts *o, check_state *st)
{
    fc_check_result *chk = &st->chk;
    fc_check_run(chk, o->baseline ? &st->base : NULL, &st->cur, st->have_th ? &st->th : NULL, o->tolerance, o->strict);
    for (int i = 0; st->why && i < chk->n; i++) {
        fc_check_item *it = &chk->items[i];
        if (it->verdict == FC_VERDICT_MISSING && !it->cur && it->base && st->why[it->base - st->base.rec][0])
            fc_strlcpy(it->why, st->why[it->base - st->base.rec], sizeof it->why);
    }
    if (o->confirm && !st->interrupted) {
        display show = {&st->pg, &st->base, st->have_th ? &st->th : NULL, o->tolerance};
        confirmer c = {st, &show};
        fc_remeasure m = {can_measure, measure_again, &c};
        st->interrupted = fc_check_confirm_all(chk, o->confirm, &m) || fc_interrupted;
    }
    fc_check_info info = {.baseline = o->baseline,
                          .current = o->current,
                          .thresholds = o->thresholds,
                          .base_doc = o->baseline ? &st->base : NULL,
                          .cur_doc = &st->cur,
                          .tolerance = o->tolerance,
                          .confirm = o->confirm,
                          .elapsed_s = fc_now() - st->t0,
                          .interrupted = st->interrupted};
    int rc = emit(o, chk, &info);
    if (rc) return rc;
    rc = st->interrupted ? FC_EXIT_INTERRUPTED : fc_check_exit_code(chk);
    summarize(o, st, rc);
    return rc;
}

/* ------------------------------------------------------------------ the command */

/* The current results: the one calibration among the files, each a folder's file
 * as it is (documents of other kinds are skipped with a note). */
static int load_current(check_opts *o, check_state *st)
{
    fc_err e;
    fc_inputs ins;
    if (fc_inputs_load(&ins, o->files, o->nfiles, &e) != 0) return fc_usage_error("bad current results: %s", e.msg);
    for (int i = 0; i < ins.n; i++) {
        const fc_input *x = &ins.in[i];
        if (x->kind && x->kind->id == FC_KIND_calibration) continue;
        char what[256];
        fc_input_describe(x, what, sizeof what);
        fprintf(stderr, "fusecal: note: skipped %s: %s, not current results%s\n", x->path, what,
                x->kind && x->kind->id == FC_KIND_thresholds ? " (pass it with --thresholds)" : "");
    }
    int rc = FC_EXIT_OK;
    if (ins.ncal != 1) {
        rc = fc_usage_error("check takes one current calibration document; the files given hold %d", ins.ncal);
    } else {
        fc_input *cur = fc_inputs_calibration(&ins, 0);
        o->current = cur->path;
        st->cur = cur->doc; /* the document moves to the check */
        fc_doc_init(&cur->doc);
    }
    fc_inputs_free(&ins);
    return rc;
}

static int load_inputs(check_opts *o, check_state *st)
{
    fc_err e;
    const char *outs[] = {o->out, o->markdown, o->junit};
    for (size_t i = 0; i < FC_ARRAY_LEN(outs); i++)
        if (outs[i] && fc_check_writable(outs[i], &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    if (o->thresholds) {
        if (fc_thresholds_load(o->thresholds, &st->th, &e) != 0)
            return fc_usage_error("bad thresholds file: %s", e.msg);
        st->have_th = true;
    }
    if (o->baseline && fc_doc_load(o->baseline, &st->base, &e) != 0) return fc_usage_error("bad baseline: %s", e.msg);
    return o->nfiles ? load_current(o, st) : 0;
}

static int check(check_opts *o, int argc, char **argv)
{
    check_state st = {.t0 = fc_now()};
    fc_doc_init(&st.base);
    fc_doc_init(&st.cur);
    fc_progress_init(&st.pg, stderr, o->quiet);
    int rc = load_inputs(o, &st);
    if (!rc && o->run) rc = measure_baseline(o, &st, argc, argv);
    if (!rc) rc = judge(o, &st);
    fc_progress_end(&st.pg);
    fc_check_free(&st.chk);
    fc_session_close(&st.ses);
    fc_plan_free(&st.plan);
    free(st.why);
    fc_doc_free(&st.base);
    fc_doc_free(&st.cur);
    if (st.have_th) fc_thresholds_free(&st.th);
    return rc;
}

static int check_command(const fc_args *args)
{
    check_opts o;
    int rc = check_opts_from(args, &o);
    return rc ? rc : check(&o, args->argc, args->argv);
}
