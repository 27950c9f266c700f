/* crossing.h — where a pattern's speedup crosses its fuse threshold, found along
 * one sweep dimension at a time with every other dimension fixed (records in,
 * points out; no markup). `report` draws and lists the crossings, `compare` says
 * where each one moved between two documents.
 *
 * A sweep line is the records of one pattern, backend, dtype and layout whose
 * problems differ in one dimension only (at least two values of it), ordered by
 * that dimension. Flag dimensions (causal) and derived ones (a conv's p, q) are
 * never swept. A crossing lies between two decided records of the line, one
 * `fuse: yes` and the next decided one `no` (or back), so noise around the
 * threshold makes none; inconclusive records between them are passed over. Its
 * position is interpolated log-linearly (log dimension, log speedup) between the
 * neighbours whose median speedups straddle the threshold. */
#ifndef FC_CROSSING_H
#define FC_CROSSING_H

#include "match.h"

typedef struct fc_sweep_line {
    const fc_record *rec; /* the line's first record: pattern, backend, dtype, layout, the fixed dims */
    int dim;              /* the dimension that varies (index into the family's dims) */
    int n;                /* records on the line (distinct values of dim) */
    int64_t lo, hi;       /* the smallest and largest value of dim */
    int yes, no, inconclusive;
    int first, ncross; /* the line's crossings: cross[first .. first + ncross) */
} fc_sweep_line;

typedef struct fc_crossing {
    int line;                   /* index into lines */
    double at;                  /* the value of the line's dimension where the speedup crosses */
    double flops;               /* FLOPs per call there, interpolated alike */
    double threshold;           /* geometric mean of the two decided records' thresholds */
    bool falls;                 /* fuse: yes below `at`, no above it (else the reverse) */
    const fc_record *from, *to; /* the decided records either side, smaller dimension first */
} fc_crossing;

typedef struct fc_crossings {
    fc_sweep_line *lines;
    int nlines;
    fc_crossing *cross;
    int n;
} fc_crossings;

/* Whether a record can take part: ok, with a positive, finite speedup, threshold and FLOP count. */
bool fc_crossing_usable(const fc_record *r);

/* Every sweep line among recs (any mix of patterns, backends, dtypes and layouts;
 * records that are not usable are left out, a problem repeated counts once, by its
 * first record) and the crossings on each. Lines are ordered by their first
 * record, then by dimension. Free with fc_crossings_free. */
void fc_crossings_find(const fc_record *const *recs, int n, fc_crossings *out);
void fc_crossings_free(fc_crossings *x);

/* The line's dimension name ("m"). */
const char *fc_sweep_line_dim(const fc_sweep_line *l);
/* "k=4096,n=4096": the fixed dims as the problem string writes them, defaults
 * that say nothing (stride=1, pad=0, causal=0) left out; the layout, if any, last. */
void fc_sweep_line_fixed(const fc_sweep_line *l, char *buf, size_t n);
/* "speedup falls below the 1.1x threshold at m ~ 12.3 (fuse: yes at m=8, no at
 * m=32)"; ascii false writes × and ≈ in UTF-8 for the report. */
void fc_crossing_text(const fc_crossings *x, const fc_crossing *c, bool ascii, char *buf, size_t n);

/* ------------------------------------------------------------------ compare */

/* A crossing of A and its counterpart in B: the same line (pattern, dtype, layout,
 * dimension and fixed dims; and backend, when pairing by problem and backend), the
 * same direction, the k-th such crossing of the line on each side. */
typedef struct fc_crossing_move {
    const fc_sweep_line *la, *lb; /* the line on each side; NULL where that side lacks it */
    const fc_crossing *a, *b;     /* NULL where that side has no such crossing */
} fc_crossing_move;

/* Pairs the crossings of a and b (each from fc_crossings_find); lines without a
 * crossing on either side give none. Returns how many; free(*out). */
int fc_crossing_moves(const fc_crossings *a, const fc_crossings *b, fc_match_by by, fc_crossing_move **out);

/* compare's section on two documents: where each threshold crossing moved from A
 * to B, as text or markdown, and as JSON (an array). */
void fc_crossing_compare_text(fc_str *o, const fc_doc *a, const fc_doc *b, fc_match_by by, bool md);
cJSON *fc_crossing_compare_json(const fc_doc *a, const fc_doc *b, fc_match_by by);

#endif
