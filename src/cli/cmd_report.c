/* cmd_report.c — `fusecal report FILE... -o report.html`: one self-contained
 * HTML page with the charts drawn by report.c. */
#include "cmd.h"
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
    {"FILE...", "calibration documents (from 'fusecal run'), drawn in this order", NULL, true},
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
        "records; the host and settings. Readable printed and in a narrow window.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status = "0 written, 2 bad usage or input, or the page could not be written.",
    .run = report_files,
};

static int write_page(const char *out, fc_report_input *in, int n, const char *title, int nrec)
{
    fc_err e;
    int rc = FC_EXIT_OK;
    char *html = fc_report_html(in, n, title);
    if (!strcmp(out, "-")) {
        fputs(html, stdout);
        fflush(stdout);
    } else if (fc_write_file_atomic(out, html, strlen(html), &e) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &e);
    } else {
        fprintf(stderr, "fusecal: wrote %s (%d records from %d file%s)\n", out, nrec, n, n == 1 ? "" : "s");
    }
    free(html);
    return rc;
}

static int report_files(const fc_args *args)
{
    int n = args->noperands;
    const char *out = args->v[O_OUT].s;
    if (n < 1) return fc_usage_error("report needs at least one calibration file (see 'fusecal report --help')");
    if (!out) return fc_usage_error("report needs -o FILE for the page (e.g. -o report.html; '-' for stdout)");
    fc_err e;
    if (strcmp(out, "-") && fc_check_writable(out, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    fc_doc *docs = fc_xcalloc((size_t)n, sizeof *docs);
    fc_report_input *in = fc_xcalloc((size_t)n, sizeof *in);
    int rc = FC_EXIT_OK, loaded = 0, nrec = 0;
    for (int i = 0; i < n && rc == FC_EXIT_OK; i++) {
        if (fc_doc_load(args->operands[i], &docs[i], &e) != 0) {
            rc = fc_usage_error("bad input: %s", e.msg);
            break;
        }
        loaded++;
        in[i] = (fc_report_input){args->operands[i], &docs[i]};
        nrec += docs[i].n;
    }
    if (rc == FC_EXIT_OK) rc = write_page(out, in, n, args->v[O_TITLE].s, nrec);
    for (int i = 0; i < loaded; i++) fc_doc_free(&docs[i]);
    free(docs);
    free(in);
    return rc;
}
