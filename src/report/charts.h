/* charts.h — what the report's charts show, computed from the documents without
 * markup; report.c draws it with svg.c. Each chart is made in three steps:
 * collect (the records it shows), analyse (ranges, thresholds, crossings,
 * ceilings and roofs), draw. The first two are pure, so tests check them.
 *
 *   speedup: one pattern's plottable records of every document, in series
 *            (document, backend, dtype, layout), each ordered by FLOPs per call;
 *            the axis ranges, the distinct thresholds, and each series' threshold
 *            crossings along one dimension (crossing.h).
 *   roofline: one document's ok records on one device, as unfused and fused
 *            points (arithmetic intensity, FLOP/s); the compute ceiling per dtype
 *            and the memory bandwidth (the document's measured ceilings, else the
 *            records' own), the axis ranges and each dtype's roof. */
#ifndef FC_CHARTS_H
#define FC_CHARTS_H

#include "crossing.h"
#include "report.h"
#include "svg.h"

/* ------------------------------------------------------------------ series */

/* One document's records of one backend, dtype and layout. Colours and markers
 * follow the order in which series are first met. */
typedef struct fc_series {
    int file;
    char backend[32];
    fc_dtype dtype;
    fc_layout layout;
} fc_series;

typedef struct fc_series_set {
    fc_series *s;
    int n, cap;
} fc_series_set;

/* The series of record r of document `file`, added when new. */
int fc_series_of(fc_series_set *set, int file, const fc_record *r);
void fc_series_free(fc_series_set *set);

/* ------------------------------------------------------------------ speedup */

/* Whether a record has a speedup to draw: ok, finite positive FLOPs, ratio, interval and threshold. */
bool fc_speedup_plottable(const fc_record *r);

typedef struct fc_speedup_point {
    const fc_record *r;
    int series;
} fc_speedup_point;

typedef struct fc_speedup_series {
    int series; /* index into the series set */
    int a, b;   /* its points: pt[a .. b) */
    int yes, no, inconclusive;
    fc_crossings x; /* its sweep lines and their crossings */
} fc_speedup_series;

#define FC_MAX_THRESHOLD_LINES 4

typedef struct fc_speedup_data {
    const fc_pattern *pat;
    fc_speedup_point *pt; /* plottable records, by series, then FLOPs */
    int np;
    int total, nbad; /* the pattern's records, and those not plottable */
    fc_speedup_series *ser;
    int nser;
    double th[FC_MAX_THRESHOLD_LINES]; /* distinct thresholds, first met first */
    int nth;
    fc_axis x, y; /* log ranges: FLOPs; speedups, intervals, thresholds and 1 */
} fc_speedup_data;

/* Collects pattern pat's records of every document (series added to set as met). */
void fc_speedup_collect(fc_speedup_data *d, const fc_pattern *pat, const fc_report_input *in, int n,
                        fc_series_set *set);
/* Groups the points by series and fills the ranges, thresholds and crossings. */
void fc_speedup_analyse(fc_speedup_data *d);
void fc_speedup_free(fc_speedup_data *d);

/* ------------------------------------------------------------------ roofline */

typedef struct fc_roof {
    int n; /* vertices, in data units (FLOP/byte, FLOP/s): bandwidth slope, ridge, flat top */
    double x[3], y[3];
} fc_roof;

typedef struct fc_roofline_data {
    const fc_doc *doc;
    const char *device;
    const fc_record **rec; /* ok records on the device, in document order */
    int n;
    bool used[FC_NDTYPES];
    bool pat_used[FC_NPATTERNS];
    const cJSON *ceilings;   /* the document's ceilings of the device (may be NULL) */
    double peak[FC_NDTYPES]; /* GFLOP/s per dtype used; 0: unknown */
    double bw;               /* GB/s; 0: unknown */
    fc_axis x, y;            /* log ranges: intensity; FLOP/s */
    fc_roof roof[FC_NDTYPES];
} fc_roofline_data;

/* Collects doc's ok records on device. */
void fc_roofline_collect(fc_roofline_data *d, const fc_doc *doc, const char *device);
/* Ceilings, bandwidth, axis ranges and roofs. */
void fc_roofline_analyse(fc_roofline_data *d);
void fc_roofline_free(fc_roofline_data *d);

#endif
