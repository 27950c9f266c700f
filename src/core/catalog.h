/* catalog.h — the pattern catalogue (patterns/<family>.json, embedded at build time) and
 * sweep files: which problems a sweep measures, with what stopping rule, and each
 * pattern's fuse threshold. Format: schemas/catalogue.schema.json. */
#ifndef FC_CATALOG_H
#define FC_CATALOG_H

#include "measures.h"
#include "pattern.h"

#define FC_DEFAULT_THRESHOLD 1.1

typedef struct fc_sweep {
    char name[256];
    fc_problem *prob;
    int n, cap;
    bool has_stop;
    fc_stop stop;                   /* fields the sweep sets; others keep their defaults */
    unsigned stop_set;              /* bit per field set: see FC_STOP_* */
    double target_sample;           /* 0 = not set */
    double threshold[FC_NPATTERNS]; /* 0 = not set */
} fc_sweep;

enum {
    FC_STOP_MIN_SAMPLES = 1,
    FC_STOP_MIN_TIME = 2,
    FC_STOP_MAX_NOISE = 4,
    FC_STOP_MAX_TIME = 8,
    FC_STOP_MAX_SAMPLES = 16
};

/* "quick", "standard", "full" (the embedded catalogue) or a file path. */
int fc_sweep_load(const char *name, fc_sweep *sw, fc_err *e);
/* A sweep file's text (name starts messages). */
int fc_sweep_parse(const char *name, const char *text, size_t len, fc_sweep *sw, fc_err *e);
void fc_sweep_free(fc_sweep *sw);
/* Names of the embedded sweeps: "quick, standard, full". */
const char *fc_sweep_names(void);
/* The catalogue's threshold for a pattern (FC_DEFAULT_THRESHOLD when it sets none). */
double fc_catalog_threshold(const fc_pattern *pat);
/* Reads a "stop" object (schemas/catalogue.schema.json's, already checked) into sw. */
void fc_sweep_parse_stop(const void *json, fc_sweep *sw);
/* Applies the sweep's stop fields onto s. */
void fc_sweep_apply_stop(const fc_sweep *sw, fc_stop *s, double *target_sample);

/* Checks a catalogue or sweep file (parsed JSON) against the schema and the
 * registry: pattern names, dims, layouts. name starts messages. */
int fc_catalog_check(const char *name, const void *json, fc_err *e);

#endif
