/* svg.c — see svg.h. */
#include "svg.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (!n) return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    unsigned cp = n == 2   ? (c & 0x1F) << 6 | (s[1] & 0x3F)
                  : n == 3 ? (c & 0x0F) << 12 | (s[1] & 0x3F) << 6 | (s[2] & 0x3F)
                           : (c & 0x07) << 18 | (s[1] & 0x3F) << 12 | (s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0; /* overlong, too big */
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                                          /* surrogates */
    if (cp == 0xFFFE || cp == 0xFFFF) return 0;                                          /* not XML chars */
    return n;
}

void fc_xml_escape(fc_str *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        unsigned char c = *p;
        switch (c) {
        case '&':
            fc_str_add(b, "&amp;");
            p++;
            continue;
        case '<':
            fc_str_add(b, "&lt;");
            p++;
            continue;
        case '>':
            fc_str_add(b, "&gt;");
            p++;
            continue;
        case '"':
            fc_str_add(b, "&quot;");
            p++;
            continue;
        case '\'':
            fc_str_add(b, "&#39;");
            p++;
            continue;
        case '\t':
        case '\n':
        case '\r':
            fc_str_addf(b, "&#%d;", c);
            p++;
            continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7F) {
            fc_str_add(b, "\xEF\xBF\xBD");
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (!n) {
            fc_str_add(b, "\xEF\xBF\xBD");
            p++;
            continue;
        }
        fc_str_addf(b, "%.*s", n, (const char *)p);
        p += n;
    }
}

void fc_xml_addf(fc_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    char *tmp = fc_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap);
    va_end(ap);
    fc_xml_escape(b, tmp);
    free(tmp);
}

static void si(double v, const char *unit, char *buf, size_t n)
{
    static const struct {
        double f;
        const char *p;
    } pre[] = {{1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}, {1e-3, "m"}, {1e-6, "\xC2\xB5"}};
    const char *sp = unit ? " " : "";
    if (!unit) unit = "";
    if (!isfinite(v)) {
        snprintf(buf, n, "?%s%s", sp, unit);
        return;
    }
    if (v == 0) {
        snprintf(buf, n, "0%s%s", sp, unit);
        return;
    }
    double a = fabs(v);
    for (size_t i = 0; i < FC_ARRAY_LEN(pre); i++)
        if (a >= pre[i].f * 0.9995 || i + 1 == FC_ARRAY_LEN(pre)) {
            snprintf(buf, n, "%.3g%s%s%s", v / pre[i].f, sp, pre[i].p, unit);
            return;
        }
}

void fc_si_format(double v, char *buf, size_t n) { si(v, NULL, buf, n); }
void fc_si_unit(double v, const char *unit, char *buf, size_t n) { si(v, unit, buf, n); }

/* ------------------------------------------------------------------ axes */

/* The decades a log axis spans at most either side of 1 (padded, 1e-135 to 1e135:
 * their ratio is finite too) */
#define LOG_LIMIT 120.0

void fc_axis_fit(fc_axis *a, const double *v, int n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i]) || (a->log && v[i] <= 0)) continue;
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    if (lo > hi) {
        lo = a->log ? 1 : 0;
        hi = a->log ? 10 : 1;
    }
    if (a->log) {
        /* in decades, the data's kept within LOG_LIMIT of 1: the ends, their ratio and
         * every coordinate stay finite however far apart the values are */
        double l = fmax(log10(lo), -LOG_LIMIT), h = fmin(log10(hi), LOG_LIMIT);
        if (h - l < log10(1.5)) {
            double m = (l + h) / 2;
            l = m - log10(1.5);
            h = m + log10(1.5);
        }
        double pad = (h - l) * 0.06;
        a->lo = pow(10, l - pad);
        a->hi = pow(10, h + pad);
    } else {
        if (hi - lo < 1e-12 * (fabs(hi) + 1)) {
            lo -= fabs(lo) * 0.1 + 0.5;
            hi += fabs(hi) * 0.1 + 0.5;
        }
        double pad = (hi - lo) * 0.06;
        a->lo = lo - pad;
        a->hi = hi + pad;
    }
}

void fc_axis_include(fc_axis *a, double v)
{
    if (!isfinite(v) || (a->log && v <= 0)) return;
    if (a->log) {
        v = fmin(fmax(v, pow(10, -LOG_LIMIT)), pow(10, LOG_LIMIT));
        if (v < a->lo) a->lo = v / 1.15;
        if (v > a->hi) a->hi = v * 1.15;
    } else {
        double pad = (a->hi - a->lo) * 0.05;
        if (v < a->lo) a->lo = v - pad;
        if (v > a->hi) a->hi = v + pad;
    }
}

/* Where v lies along the axis, 0 to 1 inside it; a value far outside (or not
 * positive on a log axis) is held a plot's length beyond its edge, so a coordinate
 * is finite unless v is NaN. */
static double frac(const fc_axis *a, double v)
{
    double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo)) : (v - a->lo) / (a->hi - a->lo);
    return isnan(f) ? f : fmin(fmax(f, -1), 2);
}

double fc_chart_px(const fc_chart *c, double x) { return c->left + frac(&c->x, x) * (c->right - c->left); }
double fc_chart_py(const fc_chart *c, double y) { return c->bottom - frac(&c->y, y) * (c->bottom - c->top); }

bool fc_chart_inside(const fc_chart *c, double x, double y)
{
    if (!isfinite(x) || !isfinite(y)) return false;
    if ((c->x.log && x <= 0) || (c->y.log && y <= 0)) return false;
    return x >= c->x.lo && x <= c->x.hi && y >= c->y.lo && y <= c->y.hi;
}

#define MAX_TICKS 40

/* Tick values of an axis: 1-2-5 steps on linear axes; on log axes decades, with
 * 2 and 5 (and 3) between them when the span is short, even steps when it is
 * less than a decade. */
static int ticks(const fc_axis *a, double *t)
{
    int n = 0;
    if (a->log && log10(a->hi / a->lo) < 0.75) {
        /* less than a decade: evenly stepped values read better than 1-2-5 */
        fc_axis lin = *a;
        lin.log = false;
        int m = ticks(&lin, t), k = 0;
        for (int i = 0; i < m; i++)
            if (t[i] > 0) t[k++] = t[i];
        return k;
    }
    if (a->log) {
        double span = log10(a->hi / a->lo);
        int d0 = (int)floor(log10(a->lo)), d1 = (int)ceil(log10(a->hi));
        static const double m125[] = {1, 2, 5}, m1235[] = {1, 2, 3, 5};
        const double *mult = span <= 1.5 ? m1235 : m125;
        int nm = span <= 1.5 ? 4 : span <= 3 ? 3 : 1;
        int step = span > 8 ? (int)fmax(2, ceil(span / 10)) : 1;
        for (int d = d0; d <= d1 && n < MAX_TICKS; d++) {
            if (nm == 1 && (d - d0) % step) continue;
            for (int k = 0; k < nm && n < MAX_TICKS; k++) {
                double v = mult[k] * pow(10, d);
                if (v >= a->lo * 0.9999 && v <= a->hi * 1.0001) t[n++] = v;
            }
        }
        return n;
    }
    double span = a->hi - a->lo;
    double raw = span / 6, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
    for (double v = ceil(a->lo / step) * step; v <= a->hi + step * 1e-9 && n < MAX_TICKS; v += step)
        t[n++] = fabs(v) < step * 1e-9 ? 0 : v;
    return n;
}

static void tick_label(const fc_axis *a, double v, char *buf, size_t n)
{
    char num[48];
    if (a->si) fc_si_format(v, num, sizeof num);
    else
        snprintf(num, sizeof num, "%g", !a->log && fabs(v) < 1e-12 ? 0 : v);
    snprintf(buf, n, "%s%s", num, a->suffix ? a->suffix : "");
}

void fc_chart_begin(fc_chart *c, fc_str *out, double w, double h, const char *title, const char *desc,
                    const char *attrs)
{
    c->out = out;
    c->w = w;
    c->h = h;
    c->left = 72;
    c->right = w - 18;
    c->top = 14;
    c->bottom = h - 50;
    fc_str_addf(out,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
                "role=\"img\" font-size=\"12\"%s%s>\n<title>",
                w, h, w, h, attrs ? " " : "", attrs ? attrs : "");
    fc_xml_escape(out, title);
    fc_str_add(out, "</title>\n<desc>");
    fc_xml_escape(out, desc ? desc : "");
    fc_str_add(out, "</desc>\n");
}

void fc_chart_axes(fc_chart *c)
{
    fc_str *o = c->out;
    double t[MAX_TICKS];
    char lab[64];
    fc_str_addf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#ffffff\" stroke=\"#9a9a9a\"/>\n",
                c->left, c->top, c->right - c->left, c->bottom - c->top);
    fc_str_add(o, "<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
    int nx = c->x.label ? ticks(&c->x, t) : 0;
    for (int i = 0; i < nx; i++) {
        double x = fc_chart_px(c, t[i]);
        fc_str_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, c->top + 0.5, x,
                    c->bottom - 0.5);
    }
    double ty[MAX_TICKS];
    int ny = c->y.label ? ticks(&c->y, ty) : 0;
    for (int i = 0; i < ny; i++) {
        double y = fc_chart_py(c, ty[i]);
        fc_str_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", c->left + 0.5, y, c->right - 0.5,
                    y);
    }
    fc_str_add(o, "</g>\n<g class=\"ticks\" fill=\"#333333\">\n");
    for (int i = 0; i < nx; i++) {
        tick_label(&c->x, t[i], lab, sizeof lab);
        double x = fc_chart_px(c, t[i]);
        fc_str_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9a9a9a\"/>", x, c->bottom, x,
                    c->bottom + 4);
        fc_str_addf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, c->bottom + 17);
        fc_xml_escape(o, lab);
        fc_str_add(o, "</text>\n");
    }
    for (int i = 0; i < ny; i++) {
        tick_label(&c->y, ty[i], lab, sizeof lab);
        double y = fc_chart_py(c, ty[i]);
        fc_str_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#9a9a9a\"/>", c->left - 4, y,
                    c->left, y);
        fc_str_addf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", c->left - 7, y + 4);
        fc_xml_escape(o, lab);
        fc_str_add(o, "</text>\n");
    }
    if (c->x.label) {
        fc_str_addf(o, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"13\">",
                    (c->left + c->right) / 2, c->h - 10);
        fc_xml_escape(o, c->x.label);
        fc_str_add(o, "</text>\n");
    }
    if (c->y.label) {
        fc_str_addf(o,
                    "<text class=\"axis-title\" transform=\"translate(16 %.1f) rotate(-90)\" "
                    "text-anchor=\"middle\" font-size=\"13\">",
                    (c->top + c->bottom) / 2);
        fc_xml_escape(o, c->y.label);
        fc_str_add(o, "</text>\n");
    }
    fc_str_add(o, "</g>\n");
}

void fc_chart_end(fc_chart *c) { fc_str_add(c->out, "</svg>\n"); }

void fc_svg_marker(fc_str *b, int shape, double x, double y, double r, const char *color, bool filled)
{
    const char *fill = filled ? color : "#ffffff";
    switch (((shape % FC_NSHAPES) + FC_NSHAPES) % FC_NSHAPES) {
    case 0:
        fc_str_addf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.6\"/>", x,
                    y, r, fill, color);
        break;
    case 1:
        fc_str_addf(b,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" stroke=\"%s\" "
                    "stroke-width=\"1.6\"/>",
                    x - r * 0.9, y - r * 0.9, r * 1.8, r * 1.8, fill, color);
        break;
    case 2:
        fc_str_addf(b, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.6\"/>",
                    x, y - r * 1.15, x + r * 1.05, y + r * 0.75, x - r * 1.05, y + r * 0.75, fill, color);
        break;
    case 3:
        fc_str_addf(b,
                    "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\" stroke=\"%s\" "
                    "stroke-width=\"1.6\"/>",
                    x, y - r * 1.25, x + r * 1.1, y, x, y + r * 1.25, x - r * 1.1, y, fill, color);
        break;
    default:
        fc_str_addf(b, "<path d=\"M%.1f %.1fL%.1f %.1fL%.1f %.1fZ\" fill=\"%s\" stroke=\"%s\" stroke-width=\"1.6\"/>",
                    x, y + r * 1.15, x + r * 1.05, y - r * 0.75, x - r * 1.05, y - r * 0.75, fill, color);
        break;
    }
}

void fc_svg_swatch(fc_str *b, const char *colour, int shape, bool line, bool filled, const char *dash)
{
    fc_str_add(b,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 28 14\" width=\"28\" height=\"14\" "
               "aria-hidden=\"true\">");
    if (line)
        fc_str_addf(b, "<line x1=\"1\" y1=\"7\" x2=\"27\" y2=\"7\" stroke=\"%s\" stroke-width=\"1.6\"%s%s%s/>", colour,
                    dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    if (shape >= 0) fc_svg_marker(b, shape, 14, 7, 4, colour, filled);
    fc_str_add(b, "</svg>");
}

const char *fc_palette(int i)
{
    static const char *const colours[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00",
                                          "#56B4E9", "#882255", "#332288", "#999933", "#666666"};
    return colours[((i % (int)FC_ARRAY_LEN(colours)) + (int)FC_ARRAY_LEN(colours)) % (int)FC_ARRAY_LEN(colours)];
}
