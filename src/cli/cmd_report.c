/* cmd_report.c — `fusecal report FILE... -o report.html`: one self-contained
 * HTML page with the charts drawn by report.c. */
#include "cmd.h"
#include "report.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char report_help[] =
    "usage: fusecal report FILE... -o report.html [--title TEXT]\n"
    "\n"
    "Draws calibration documents into one self-contained HTML page (inline SVG and\n"
    "CSS; no scripts, fonts or network): per pattern, speedup against problem size\n"
    "with 95% intervals, the fuse threshold and where each series crosses it; the\n"
    "memory traffic fusion saves per pattern; a roofline per document and device\n"
    "with unfused and fused points under the measured ceilings; the records; the\n"
    "host and settings. Readable printed and in a narrow window.\n"
    "\n"
    "options:\n"
    "  --out FILE, -o FILE   where the page goes ('-' for stdout)\n"
    "  --title TEXT          the page's title (default: fusecal calibration report)\n"
    "\n"
    "exit status: 0 written, 2 bad usage or input, or the page could not be written.\n";

enum { OPT_TITLE = 256 };
static const struct option long_opts[] = {
    {"out", required_argument, 0, 'o'}, {"title", required_argument, 0, OPT_TITLE},
    {"help", no_argument, 0, 'h'},      {0, 0, 0, 0},
};

int cmd_report(int argc, char **argv)
{
    const char *out = NULL, *title = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case OPT_TITLE: title = optarg; break;
        case 'h': fputs(report_help, stdout); return FC_EXIT_OK;
        case ':': return fc_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return fc_usage_error("unknown option '%s' (see 'fusecal report --help')", argv[optind - 1]);
        }
    }
    int n = argc - optind;
    if (n < 1) return fc_usage_error("report needs at least one calibration file (see 'fusecal report --help')");
    if (!out) return fc_usage_error("report needs -o FILE for the page (e.g. -o report.html; '-' for stdout)");
    fc_err e;
    bool to_stdout = !strcmp(out, "-");
    if (!to_stdout && fc_check_writable(out, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    fc_doc *docs = fc_xcalloc((size_t)n, sizeof *docs);
    fc_report_input *in = fc_xcalloc((size_t)n, sizeof *in);
    int rc = FC_EXIT_OK, loaded = 0, nrec = 0;
    for (int i = 0; i < n; i++) {
        if (fc_doc_load(argv[optind + i], &docs[i], &e) != 0) {
            rc = fc_usage_error("bad input: %s", e.msg);
            goto done;
        }
        loaded++;
        in[i] = (fc_report_input){argv[optind + i], &docs[i]};
        nrec += docs[i].n;
    }
    char *html = fc_report_html(in, n, title);
    if (to_stdout) {
        fputs(html, stdout);
        fflush(stdout);
    } else if (fc_write_file_atomic(out, html, strlen(html), &e) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &e);
    } else {
        fprintf(stderr, "fusecal: wrote %s (%d records from %d file%s)\n", out, nrec, n, n == 1 ? "" : "s");
    }
    free(html);
done:
    for (int i = 0; i < loaded; i++) fc_doc_free(&docs[i]);
    free(docs);
    free(in);
    return rc;
}
