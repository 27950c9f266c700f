/* cmd_compare.c — `fusecal compare A.json B.json`: matching records side by side
 * (two machines, two library versions, CPU against GPU). The pairing and the
 * means are match.c's, the output compare.c's. */
#include "cmd.h"
#include "compare.h"
#include "inputs.h"

#include <stdlib.h>
#include <string.h>

static int compare_files(const fc_args *args);

enum { O_BY, O_FORMAT, O_OUT, O_COUNT };

static const char *const by_names[] = {"problem,backend", "problem"};
static const fc_words by_words = {"--by", by_names, 2, 0};
static const char *const format_names[] = {"text", "md", "json"};
static const fc_words format_words = {"format", format_names, 3, 0};
static const char *const by_aliases[] = {"backend", "problem,backend", NULL};
static const char *const md_aliases[] = {"markdown", "md", NULL};

static const fc_option options[] = {
    [O_BY] = {.name = "by",
              .kind = FC_OPT_CHOICE,
              .section = "options",
              .words = &by_words,
              .aliases = by_aliases,
              .def = "problem,backend",
              .help = "what pairs two records: problem,backend pairs records of the same problem and backend (two "
                      "machines or library versions); problem pairs records of the same problem on any backends (CPU "
                      "against GPU, one backend against another)"},
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &format_words,
                  .aliases = md_aliases,
                  .def = "text",
                  .help = "a table for a terminal, markdown, or JSON"},
    [O_OUT] = {.name = "out",
               .short_name = 'o',
               .kind = FC_OPT_TEXT,
               .metavar = "FILE",
               .section = "options",
               .file = true,
               .help = "write there instead of stdout"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "compare options");

static const fc_operand operands[] = {
    {"A.json", "the first calibration document (from 'fusecal run')", NULL, true},
    {"B.json",
     "the second, compared with the first; other fusecal documents among the files (info, thresholds...) are "
     "skipped with a note",
     NULL, true},
};

const fc_cmd_spec fc_cmd_compare = {
    .name = "compare",
    .summary = "two calibrations side by side: speedups, flips, geometric mean",
    .synopsis = "A.json B.json [options]",
    .description =
        "Puts the records of two calibration documents side by side: latencies, speedups with their 95% "
        "intervals, the change of speedup B/A (marked * when the intervals do not overlap), fuse decisions "
        "that flip, and a geometric-mean row over the records both measured; then the records only one "
        "side has.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status = "0 compared, 1 no record pairs, 2 bad usage or input.",
    .run = compare_files,
};

/* No pairs: says so, and whether pairing by problem alone would find some. */
static int no_pairs(const fc_doc *a, const fc_doc *b, const char *an, const char *bn, fc_match_by by)
{
    fc_compare alt;
    fc_compare_docs(a, b, FC_MATCH_PROBLEM, &alt);
    fprintf(stderr, "fusecal: error: no record of '%s' matches one of '%s'%s\n", an, bn,
            by == FC_MATCH_PROBLEM_BACKEND && alt.n
                ? " by problem and backend; '--by problem' pairs them across backends"
                : "");
    fc_compare_free(&alt);
    return FC_EXIT_FAIL;
}

static int compare_docs(const fc_args *args, const fc_doc *a, const fc_doc *b, const char *an, const char *bn)
{
    const char *by_s = args->v[O_BY].s, *fmt = args->v[O_FORMAT].s, *out = args->v[O_OUT].s;
    fc_match_by by = by_s && !strcmp(by_s, "problem") ? FC_MATCH_PROBLEM : FC_MATCH_PROBLEM_BACKEND;
    fc_compare_format f = !fmt || !strcmp(fmt, "text") ? FC_COMPARE_TEXT
                          : !strcmp(fmt, "md")         ? FC_COMPARE_MD
                                                       : FC_COMPARE_JSON;
    fc_compare cmp;
    fc_compare_docs(a, b, by, &cmp);
    char *text = fc_compare_render(&cmp, a, b, an, bn, by, f);
    int rc = FC_EXIT_OK;
    fc_err e;
    if (out) {
        if (fc_write_file_atomic(out, text, strlen(text), &e) != 0) rc = fc_fail(FC_EXIT_USAGE, &e);
    } else {
        fputs(text, stdout);
        fflush(stdout);
    }
    if (rc == FC_EXIT_OK && cmp.n == 0) rc = no_pairs(a, b, an, bn, by);
    free(text);
    fc_compare_free(&cmp);
    return rc;
}

/* The two calibrations among the files, each a folder's file as it is: documents
 * of other kinds are skipped with a note. */
static int two_calibrations(fc_inputs *ins, fc_input **a, fc_input **b)
{
    for (int i = 0; i < ins->n; i++) {
        fc_input *x = &ins->in[i];
        if (x->kind && x->kind->id == FC_KIND_calibration) continue;
        char what[256];
        fc_input_describe(x, what, sizeof what);
        fprintf(stderr, "fusecal: note: skipped %s: %s, which compare does not pair\n", x->path, what);
    }
    if (ins->ncal != 2)
        return fc_usage_error("compare needs two calibration documents, A and B; the files given hold %d", ins->ncal);
    *a = fc_inputs_calibration(ins, 0);
    *b = fc_inputs_calibration(ins, 1);
    return FC_EXIT_OK;
}

static int compare_files(const fc_args *args)
{
    if (args->noperands < 2)
        return fc_usage_error("compare needs two calibration files, A and B (got %d; see 'fusecal compare --help')",
                              args->noperands);
    const char *out = args->v[O_OUT].s;
    fc_err e;
    if (out && fc_check_writable(out, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    fc_inputs ins;
    if (fc_inputs_load(&ins, (const char *const *)args->operands, args->noperands, &e) != 0)
        return fc_usage_error("bad input: %s", e.msg);
    fc_input *a = NULL, *b = NULL;
    int rc = two_calibrations(&ins, &a, &b);
    if (rc == FC_EXIT_OK) rc = compare_docs(args, &a->doc, &b->doc, a->path, b->path);
    fc_inputs_free(&ins);
    return rc;
}
