/* settings.h — the numeric settings of a calibration, their bounds and defaults,
 * written once. Each has two ranges: what a calibration document may hold (the
 * bounds of schemas/calibration.schema.json, $defs/settings and $defs/stop;
 * tests/test_settings.c fails when they disagree) and what a command line may ask
 * for, within it. The record reader bounds what it reads by the first; the
 * command-line options check their values against the second and show the
 * defaults in their help. */
#ifndef FC_SETTINGS_H
#define FC_SETTINGS_H

#include "fusecal.h"

#include <cjson/cJSON.h>
#include <math.h>

#define FC_MAX_ROUNDS 32
#define FC_MAX_THREADS 4096

/* id, JSON key, in "stop", integer,
 *   document: minimum, minimum excluded, maximum (INFINITY: none),
 *   command line: minimum, maximum (both included),
 *   default (NAN: none fixed: threads are the cores, the threshold the catalogue's) */
#define FC_SETTING_LIST(X)                                                                \
    X(THREADS, "threads", false, true, 1, false, FC_MAX_THREADS, 1, FC_MAX_THREADS, NAN)  \
    X(THRESHOLD, "threshold", false, false, 0, true, INFINITY, 1e-6, 1e6, NAN)            \
    X(MIN_SAMPLES, "min_samples", true, true, 1, false, 1e6, 2, 1e6, 15)                  \
    X(MIN_TIME, "min_time_s", true, false, 0, false, 86400, 0, 86400, 0.5)                \
    X(MAX_NOISE, "max_noise", true, false, 0, false, 10, 0, 10, 0.01)                     \
    X(MAX_TIME, "max_time_s", true, false, 0, true, 86400, 1e-3, 86400, 3)                \
    X(MAX_SAMPLES, "max_samples", true, true, 1, false, 1e8, 2, 1e8, 200000)              \
    X(TARGET_SAMPLE, "target_sample_s", false, false, 0, true, 60, 1e-6, 60, 0.002)       \
    X(ROUNDS, "rounds", false, true, 1, false, FC_MAX_ROUNDS, 2, FC_MAX_ROUNDS, 5)        \
    X(MAX_TIME_TOTAL, "max_time_total_s", false, false, 0, false, INFINITY, 1e-3, 1e7, 0) \
    X(MAX_MEMORY, "max_memory_bytes", false, false, 0, false, INFINITY, 1, INFINITY, 0)   \
    X(RUN_NOISE, "run_noise", false, false, 0, false, 1, 0, 0.5, 0.025)

#define FC_SETTING_ENUM(id, ...) FC_SET_##id,
typedef enum { FC_SETTING_LIST(FC_SETTING_ENUM) FC_NSETTINGS } fc_setting_id;

typedef struct fc_setting {
    const char *key; /* in the document's "settings", or in its "stop" */
    bool in_stop;
    bool integer;
    double min;
    bool min_excluded;
    double max;
    double ask_min, ask_max;
    double def;
} fc_setting;

extern const fc_setting fc_settings_table[FC_NSETTINGS];

/* The setting's default (NAN when none is fixed). */
double fc_setting_default(fc_setting_id id);
/* An integer setting of a document's settings (or stop) object: def when absent,
 * else bounded to the document's range. */
int fc_setting_read_int(const cJSON *obj, fc_setting_id id, int def);
/* Whether v lies in the document's range. */
bool fc_setting_in_range(fc_setting_id id, double v);

#endif
