/* svg.h — markup helpers and the charts fusecal draws itself: XML escaping that
 * keeps any input well-formed, number formats for axes, and an x/y chart (linear
 * or log axes, grid, ticks, labelled axes with units) written as inline SVG. */
#ifndef FC_SVG_H
#define FC_SVG_H

#include "util.h"

/* Appends s escaped for XML text and attribute values: & < > " ' become
 * entities; control characters that XML 1.0 forbids and bytes that are not valid
 * UTF-8 become U+FFFD. */
void fc_xml_escape(fc_str *b, const char *s);
/* Appends printf-formatted text, escaped as fc_xml_escape does. */
void fc_xml_addf(fc_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1.5k, 2.1M, 3G, 12T, 0.5m: three significant digits and an SI prefix. */
void fc_si_format(double v, char *buf, size_t n);
/* The same with a unit after a space: "16.3 MFLOP", "19 GB/s", "100 GFLOP/s". */
void fc_si_unit(double v, const char *unit, char *buf, size_t n);

typedef struct fc_axis {
    double lo, hi;      /* data range shown */
    bool log;           /* log10 scale */
    bool si;            /* tick labels with SI prefixes (FLOPs, bytes) */
    const char *label;  /* with its unit; NULL: no ticks, grid or title on this axis */
    const char *suffix; /* appended to tick labels ("x", "%") */
} fc_axis;

/* Fits an axis to values (non-finite and, on log axes, non-positive ones are
 * ignored), padded a little; a single value or none gives a sensible span. A log
 * axis keeps within 1e-135 to 1e135, so its ends and their ratio are finite. */
void fc_axis_fit(fc_axis *a, const double *v, int n);
/* Widens an axis to include v. */
void fc_axis_include(fc_axis *a, double v);

typedef struct fc_chart {
    fc_str *out;
    double w, h;                     /* the viewBox */
    double left, right, top, bottom; /* the plot area */
    fc_axis x, y;
} fc_chart;

/* Opens <svg> with a viewBox of w×h, a <title> and <desc>, and extra attributes
 * (already escaped, may be NULL). The plot area leaves room for tick labels and
 * axis titles. Set c->x and c->y before drawing. */
void fc_chart_begin(fc_chart *c, fc_str *out, double w, double h, const char *title, const char *desc,
                    const char *attrs);
double fc_chart_px(const fc_chart *c, double x);
double fc_chart_py(const fc_chart *c, double y);
/* Whether a data point lies in the plot's ranges. */
bool fc_chart_inside(const fc_chart *c, double x, double y);
/* Frame, grid lines, ticks with labels, and both axis titles. */
void fc_chart_axes(fc_chart *c);
void fc_chart_end(fc_chart *c);

/* A data marker of one of FC_NSHAPES shapes, hollow or filled. */
#define FC_NSHAPES 5
void fc_svg_marker(fc_str *b, int shape, double x, double y, double r, const char *color, bool filled);
/* A 28×14 legend swatch: a line (dashed when dash is not NULL) and/or a marker
 * (shape < 0: none). */
void fc_svg_swatch(fc_str *b, const char *colour, int shape, bool line, bool filled, const char *dash);
/* Colour-blind-safe palette, cycling. */
const char *fc_palette(int i);

#endif
