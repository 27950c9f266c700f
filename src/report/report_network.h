/* report_network.h — the report page's network section (report.c calls it). */
#ifndef FC_REPORT_NETWORK_H
#define FC_REPORT_NETWORK_H

#include "report.h"
#include "util.h"

/* Whether a document holds a network summary (run --network). */
bool fc_report_has_network(const fc_report_input *in, int n);
/* <section id="network">: per document and backend, the totals, the sites'
 * savings per inference as a ranked bar chart and a table; nothing without one. */
void fc_report_network(fc_str *o, const fc_report_input *in, int n);

#endif
