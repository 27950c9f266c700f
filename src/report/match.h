/* match.h — records of two calibration documents side by side: pairing by
 * (problem, backend), the noise-aware verdicts of `fusecal check`, the rows and
 * geometric means of `fusecal compare`, and what differs between the machines
 * and builds that measured them.
 *
 * Verdicts use both speedup confidence intervals (B = baseline CI [lo, hi],
 * C = current CI, tol = allowed regression, min = minimum speedup), first that
 * applies:
 *   missing              no current record, or the current record was skipped
 *                        where the baseline's was ok
 *   skipped              the current record was skipped (the library declined
 *                        it) and the baseline's was not ok or there is none
 *   failed-verification  the current record failed (verification, setup or run)
 *   below-threshold      C.hi < min
 *   regressed            C.hi < B.lo·(1 − tol): the current CI lies wholly below
 *                        the baseline's, by more than the tolerance
 *   inconclusive         C straddles min (C.lo < min ≤ C.hi), or the current
 *                        median is below B.lo·(1 − tol) while the intervals overlap
 *   improved             C.lo > B.hi·(1 + tol)
 *   pass                 anything else
 * B is used only when the baseline record is ok; min only when a thresholds file
 * gives one. missing, failed-verification, below-threshold and regressed fail a
 * check; inconclusive fails it only when strict; skipped never does. */
#ifndef FC_MATCH_H
#define FC_MATCH_H

#include "record.h"
#include "thresholds.h"

/* Whether a verdict fails a check (inconclusive only when strict). */
bool fc_verdict_fails(fc_verdict v, bool strict);

/* What pairs records: the problem and the backend (two machines or library
 * versions), or the problem alone (CPU against GPU, one backend against another). */
typedef enum { FC_MATCH_PROBLEM_BACKEND, FC_MATCH_PROBLEM } fc_match_by;

/* "linear_bias:m=8,k=8,n=8,dtype=fp32 on cpu.openblas" (canonical problem string,
 * whatever spelling the file used). */
void fc_record_key(const fc_record *r, fc_match_by by, char *buf, size_t n);

/* One record and its counterpart; either side may be NULL. */
typedef struct fc_pair {
    const fc_record *a, *b;
} fc_pair;

/* Which records of d are the first of their (problem, backend); free() it. */
bool *fc_doc_first_records(const fc_doc *d);

/* Pairs a's records with b's: a's order first (b = NULL when b lacks it), then
 * b's records that a lacks. By problem alone, an a record pairs with one b record
 * of its problem at most, and a b record with one a record: the one on its own
 * backend where b has it, else the first b left, in each's order; a record left
 * over is its side's alone. A key repeated within one document pairs once (its
 * first record). Returns the number of pairs; free(*out). */
int fc_match_docs(const fc_doc *a, const fc_doc *b, fc_match_by by, fc_pair **out);

/* The verdict on one record (base and cur may be NULL); why says what decided it. */
fc_verdict fc_judge(const fc_record *base, const fc_record *cur, const fc_limits *lim, char *why, size_t n);

/* ------------------------------------------------------------------ check */

#define FC_MAX_CONFIRM 16
#define FC_MAX_NOTES 24

typedef struct fc_check_item {
    const fc_record *base, *cur; /* base NULL: not in the baseline; cur NULL: missing */
    fc_limits lim;
    fc_verdict verdict;
    char why[512];
    int nconfirm, nconfirm_failed; /* re-measurements (--confirm) and how many failed again */
    fc_ratio_ci confirm[FC_MAX_CONFIRM];
    fc_verdict first; /* the verdict before re-measuring */
} fc_check_item;

typedef struct fc_check_result {
    fc_check_item *items;
    int n;
    int count[FC_NVERDICTS];
    bool have_base, strict;
    int matched;                   /* records in both documents */
    int only_current;              /* current records the baseline lacks (judged against thresholds alone) */
    char notes[FC_MAX_NOTES][320]; /* a different device, library or settings; other remarks */
    int nnotes;
} fc_check_result;

/* Judges every record: the baseline's (missing when current lacks them) and the
 * current ones the baseline lacks. base and th may be NULL (not both, for a
 * meaningful check); tolerance >= 0 overrides every limit's tolerance. Notes list
 * the ways the two documents' machines, libraries and settings differ. */
void fc_check_run(fc_check_result *c, const fc_doc *base, const fc_doc *cur, const fc_thresholds *th, double tolerance,
                  bool strict);
/* A re-measurement of item i (NULL when it produced no record). */
void fc_check_confirm(fc_check_result *c, int i, const fc_record *again);
/* After the re-measurements: an item keeps its failing verdict only when every
 * re-measurement failed too, else it becomes inconclusive. Recounts. */
void fc_check_settle(fc_check_result *c);
void fc_check_recount(fc_check_result *c);
/* Whether an item is to be re-measured by --confirm. */
bool fc_check_wants_confirm(const fc_check_item *it);

/* How a check measures records again (the command line measures: report does not
 * depend on the measuring library). */
typedef struct fc_remeasure {
    /* whether the record can be measured again here */
    bool (*can)(void *ctx, const fc_record *r);
    /* measures the records again (attempt k of n, from 0), adding the new records
     * to out; returns true when interrupted */
    bool (*again)(void *ctx, const fc_record *const *recs, int nrecs, int k, int n, fc_doc *out);
    void *ctx;
} fc_remeasure;

/* --confirm: measures each item that wants it (and that m can measure) up to n
 * times, judging every new record against the item's baseline and limits, then
 * settles. A record an interrupted attempt did not reach counts for nothing.
 * Returns true when interrupted. */
bool fc_check_confirm_all(fc_check_result *c, int n, const fc_remeasure *m);
/* Whether the check has records and the library declined every one: nothing measured. */
bool fc_check_all_skipped(const fc_check_result *c);
/* FC_EXIT_OK or FC_EXIT_FAIL. Nothing checked (no records at all, or every one skipped) fails. */
int fc_check_exit_code(const fc_check_result *c);
void fc_check_add_note(fc_check_result *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fc_check_free(fc_check_result *c);

/* The ways b's machine, libraries, tool and settings differ from a's, one line
 * each ("different device: cpu model 'X' (baseline) vs 'Y' (current)"). Returns
 * how many lines were written. an/bn name the two sides. */
int fc_doc_differences(const fc_doc *a, const fc_doc *b, const char *an, const char *bn, char (*lines)[320], int max);

/* ------------------------------------------------------------------ compare */

typedef struct fc_compare_row {
    const fc_record *a, *b;
    bool both_ok;
    double speedup_change; /* b's speedup / a's */
    double fused_ratio;    /* b's fused latency / a's */
    double unfused_ratio;  /* b's unfused latency / a's */
    int shift;             /* +1: b's speedup CI wholly above a's, -1 wholly below, 0 overlap */
    bool flip;             /* the fuse decision differs */
} fc_compare_row;

typedef struct fc_compare {
    fc_compare_row *rows; /* matched pairs */
    int n;
    const fc_record **only_a, **only_b;
    int na, nb;
    int ngeo; /* rows in the geometric means (both ok) */
    double geo_a, geo_b, geo_change, geo_fused, geo_unfused;
    int flips, up, down;
} fc_compare;

void fc_compare_docs(const fc_doc *a, const fc_doc *b, fc_match_by by, fc_compare *out);
void fc_compare_free(fc_compare *c);

#endif
