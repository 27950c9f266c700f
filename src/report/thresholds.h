/* thresholds.h — thresholds files (schemas/thresholds.schema.json): what
 * `fusecal check` requires of each record, a minimum speedup and an allowed
 * regression against a baseline, by pattern / device / backend / dtype / layout
 * and shape glob, with defaults.
 *
 * For each limit the first rule (file order) that matches a record and sets the
 * limit wins, then the file's defaults, then the built-in default (no minimum
 * speedup, FC_DEFAULT_TOLERANCE allowed regression). */
#ifndef FC_THRESHOLDS_H
#define FC_THRESHOLDS_H

#include "record.h"

#define FC_THRESHOLDS_SCHEMA "schemas/thresholds.schema.json"
#define FC_THRESHOLDS_VERSION 1
#define FC_DEFAULT_TOLERANCE 0.05

typedef struct fc_threshold_rule {
    char pattern[64], backend[64], shape[256]; /* globs; "" = any */
    char device[8], dtype[8], layout[8];       /* exact; "" = any */
    bool has_min, has_tol;
    double min_speedup, tolerance;
} fc_threshold_rule;

typedef struct fc_thresholds {
    char name[256]; /* the file, for messages */
    fc_threshold_rule defaults;
    fc_threshold_rule *rules;
    int n;
} fc_thresholds;

/* The limits that apply to one record, and where each came from ("rule 2",
 * "defaults", "built-in", "--tolerance"). */
typedef struct fc_limits {
    double min_speedup; /* 0 = none */
    double tolerance;   /* allowed regression, a fraction in [0, 1) */
    char min_from[24], tol_from[24];
} fc_limits;

/* Reads a thresholds file: JSON, "schema": "fusecal-thresholds", a version this
 * build reads, the schema, then globs that match a known pattern and backend.
 * Messages start with the file name. */
int fc_thresholds_load(const char *path, fc_thresholds *t, fc_err *e);
int fc_thresholds_parse(const char *name, const char *text, size_t len, fc_thresholds *t, fc_err *e);
/* The same checks on JSON already parsed (validate uses it). */
int fc_thresholds_check(const char *name, const cJSON *root, fc_err *e);
void fc_thresholds_free(fc_thresholds *t);
/* Whether parsed JSON claims to be a thresholds file. */
bool fc_is_thresholds_json(const cJSON *root);

/* The limits for a record (t may be NULL: built-in defaults). */
void fc_thresholds_apply(const fc_thresholds *t, const fc_record *r, fc_limits *out);
/* "m=512,k=1024,n=1024": a problem's dims as its problem string writes them,
 * without layout and dtype (what a rule's "shape" glob is matched against). */
void fc_shape_string(const fc_problem *p, char *buf, size_t n);

#endif
