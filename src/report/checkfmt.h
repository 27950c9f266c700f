/* checkfmt.h — the outputs of `fusecal check`: a markdown summary for a CI log
 * or a pull-request comment, JUnit XML (one testcase per record) and JSON. */
#ifndef FC_CHECKFMT_H
#define FC_CHECKFMT_H

#include "match.h"

/* Where the compared documents came from. */
typedef struct fc_check_info {
    const char *baseline;   /* path, or NULL without a baseline */
    const char *current;    /* path, or NULL when measured now (--run) */
    const char *thresholds; /* path, or NULL */
    const fc_doc *base_doc, *cur_doc;
    double tolerance; /* --tolerance, or < 0 */
    int confirm;      /* --confirm N */
    double elapsed_s; /* time the check took */
    bool interrupted; /* --run stopped early */
} fc_check_info;

/* Items in the order the outputs list them: failing first, then inconclusive,
 * improved, pass; the documents' order within each. Caller frees. */
int *fc_check_order(const fc_check_result *c);

/* Each returns text the caller frees. */
char *fc_check_markdown(const fc_check_result *c, const fc_check_info *info);
char *fc_check_junit(const fc_check_result *c, const fc_check_info *info);
char *fc_check_json(const fc_check_result *c, const fc_check_info *info);

#endif
