/* compare.h — `fusecal compare`'s output: two calibrations side by side (the
 * pairs and geometric means of match.h's fc_compare) as a table for a terminal,
 * markdown or JSON. */
#ifndef FC_COMPARE_H
#define FC_COMPARE_H

#include "match.h"

typedef enum { FC_COMPARE_TEXT, FC_COMPARE_MD, FC_COMPARE_JSON } fc_compare_format;

/* The documents a and b (named an and bn) compared by `by`: who they are and how
 * their machines differ, a row per pair with latencies, speedups and their
 * intervals, the change B/A, decisions that flip, a geometric-mean row, and the
 * records only one side has. Caller frees. */
char *fc_compare_render(const fc_compare *cmp, const fc_doc *a, const fc_doc *b, const char *an, const char *bn,
                        fc_match_by by, fc_compare_format f);

#endif
