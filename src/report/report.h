/* report.h — one self-contained HTML page (XHTML-compatible markup, inline CSS
 * and SVG, no scripts, no network) drawn from calibration documents:
 *   - per pattern, speedup against problem size (FLOPs, log axis) with the 95% CI
 *     as whiskers, the fuse threshold and where each series crosses it, one
 *     series per document / backend / dtype / layout;
 *   - memory traffic saved by fusion, per pattern;
 *   - a roofline per document and device: achieved FLOP/s against arithmetic
 *     intensity, unfused and fused points, under the measured ceilings;
 *   - the records, and the host and settings of each document (and the host and
 *     ceilings of each info document given with them). */
#ifndef FC_REPORT_H
#define FC_REPORT_H

#include "record.h"

typedef struct fc_report_input {
    const char *name; /* the file, shown as given */
    const fc_doc *doc;
} fc_report_input;

/* An info document ('fusecal info --format json'): its host and ceilings are shown
 * in the host section. */
typedef struct fc_report_info {
    const char *name;
    const cJSON *doc;
} fc_report_info;

typedef struct fc_report_page {
    const fc_report_input *in; /* the calibrations, drawn in this order */
    int n;
    const fc_report_info *info;
    int ninfo;
    const char *title; /* may be NULL */
} fc_report_page;

/* The page (caller frees). */
char *fc_report_html(const fc_report_page *page);

#endif
