/* cmd_report.c — `fusecal report FILE... -o report.html`: one self-contained
 * HTML page with the charts drawn by report.c. */
#include "cmd.h"
#include "inputs.h"
#include "report.h"

#include <stdlib.h>
#include <string.h>

static int report_files(const fc_args *args);

enum { O_OUT, O_TITLE, O_COUNT };

static const fc_option options[] = {
    [O_OUT] = {.name = "out",
               .short_name = 'o',
               .kind = FC_OPT_TEXT,
               .metavar = "FILE",
               .section = "options",
               .file = true,
               .help = "where the page goes ('-' for stdout); required"},
    [O_TITLE] = {.name = "title",
                 .kind = FC_OPT_TEXT,
                 .metavar = "TEXT",
                 .section = "options",
                 .def = "fusecal calibration report",
                 .help = "the page's title"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "report options");

static const fc_operand operands[] = {
    {"FILE...",
     "calibration documents (from 'fusecal run'), drawn in this order, and info documents ('fusecal info --format "
     "json'), shown with the hosts; a folder's files as they are: documents of other fusecal kinds are skipped with "
     "a note",
     NULL, true},
};

const fc_cmd_spec fc_cmd_report = {
    .name = "report",
    .summary = "draw calibrations into one self-contained HTML page",
    .synopsis = "FILE... -o report.html [options]",
    .description =
        "Draws calibration documents into one self-contained HTML page (inline SVG and CSS; no scripts, "
        "fonts or network): per pattern, speedup against problem size with 95% intervals, the fuse "
        "threshold and where each series crosses it; the memory traffic fusion saves per pattern; a "
        "roofline per document and device with unfused and fused points under the measured ceilings; the "
        "records; the host and settings, with the inventory and ceilings of any info document given. "
        "Readable printed and in a narrow window.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status =
        "0 written, 2 bad usage or input (no calibration among the files, a file that is no fusecal "
        "document), or the page could not be written.",
    .run = report_files,
};

static int write_page(const char *out, const fc_report_page *page, int nrec)
{
    fc_err e;
    int rc = FC_EXIT_OK;
    char *html = fc_report_html(page);
    if (!strcmp(out, "-")) {
        fputs(html, stdout);
        fflush(stdout);
    } else if (fc_write_file_atomic(out, html, strlen(html), &e) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &e);
    } else {
        fprintf(stderr, "fusecal: wrote %s (%d records from %d calibration%s%s)\n", out, nrec, page->n,
                page->n == 1 ? "" : "s", page->ninfo ? ", and the hosts of the info documents" : "");
    }
    free(html);
    return rc;
}

/* The page's inputs: every calibration, and the info documents for the host
 * section; a document of another kind is skipped with a note. */
typedef struct page_inputs {
    fc_report_input *cal;
    fc_report_info *info;
    int ncal, ninfo, nrec;
} page_inputs;

static int collect(fc_inputs *ins, page_inputs *p)
{
    p->cal = fc_xcalloc((size_t)ins->n, sizeof *p->cal);
    p->info = fc_xcalloc((size_t)ins->n, sizeof *p->info);
    for (int i = 0; i < ins->n; i++) {
        fc_input *x = &ins->in[i];
        if (x->kind && x->kind->id == FC_KIND_calibration) {
            p->cal[p->ncal++] = (fc_report_input){x->path, &x->doc};
            p->nrec += x->doc.n;
        } else if (x->kind && x->kind->id == FC_KIND_info) {
            p->info[p->ninfo++] = (fc_report_info){x->path, x->json};
        } else {
            char what[256];
            fc_input_describe(x, what, sizeof what);
            fprintf(stderr, "fusecal: note: skipped %s: %s, which report does not draw\n", x->path, what);
        }
    }
    if (p->ncal == 0)
        return fc_usage_error("nothing to draw: no calibration document among the %d file%s given", ins->n,
                              ins->n == 1 ? "" : "s");
    return FC_EXIT_OK;
}

static int report_files(const fc_args *args)
{
    const char *out = args->v[O_OUT].s;
    if (args->noperands < 1)
        return fc_usage_error("report needs at least one calibration file (see 'fusecal report --help')");
    if (!out) return fc_usage_error("report needs -o FILE for the page (e.g. -o report.html; '-' for stdout)");
    fc_err e;
    if (strcmp(out, "-") && fc_check_writable(out, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    fc_inputs ins;
    if (fc_inputs_load(&ins, (const char *const *)args->operands, args->noperands, &e) != 0)
        return fc_usage_error("bad input: %s", e.msg);
    page_inputs p = {0};
    int rc = collect(&ins, &p);
    fc_report_page page = {p.cal, p.ncal, p.info, p.ninfo, args->v[O_TITLE].s};
    if (rc == FC_EXIT_OK) rc = write_page(out, &page, p.nrec);
    free(p.cal);
    free(p.info);
    fc_inputs_free(&ins);
    return rc;
}
