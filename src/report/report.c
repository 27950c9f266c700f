/* report.c — see report.h. The charts' data comes from charts.c (collect and
 * analyse); this file draws it. Every string from a document goes through
 * fc_xml_escape; numbers written into SVG are finite (points that are not are
 * left out and counted). */
#include "report.h"
#include "charts.h"
#include "format.h"
#include "jsonfile.h"
#include "report_network.h"
#include "svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TIMES "\xC3\x97"      /* × */
#define APPROX "\xE2\x89\x88" /* ≈ */
#define NDASH "\xE2\x80\x93"  /* – */
#define MDASH "\xE2\x80\x94"  /* — */

#define CHART_W 640
#define CHART_H 380

typedef struct rpt {
    const fc_report_input *in;
    int n;
    fc_series_set ser;
    char (*tag)[128]; /* per file: what tells it apart in labels ("" with one file) */
    fc_str o;
} rpt;

static const char *doc_str(const cJSON *host, const char *a, const char *b, const char *c)
{
    const cJSON *n = host;
    if (a) n = cJSON_GetObjectItemCaseSensitive(n, a);
    if (b) n = cJSON_GetObjectItemCaseSensitive(n, b);
    if (c) n = cJSON_GetObjectItemCaseSensitive(n, c);
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

/* The last k parts of path ("B/quick-1.json" for k = 2), or all of it when it has
 * no more. */
static const char *path_tail(const char *path, int k)
{
    for (const char *p = path + strlen(path); p > path; p--)
        if (p[-1] == '/' && --k == 0) return p;
    return path;
}

/* What tells file i's name apart from the others': its base name, or where others
 * share that, the fewest last parts of its path that no other's same parts spell
 * ("A/quick-1.json" beside "B/quick-1.json"); else the whole path. */
static const char *file_tag(const fc_report_input *in, int n, int i)
{
    for (int k = 1;; k++) {
        const char *t = path_tail(in[i].name, k);
        bool unique = true;
        for (int j = 0; j < n && unique; j++)
            if (j != i && !strcmp(t, path_tail(in[j].name, k))) unique = false;
        if (unique || t == in[i].name) return t;
    }
}

/* "cpu.onednn fp32 nhwc · quick-1.json" */
static void series_label(const rpt *R, int i, char *buf, size_t n)
{
    const fc_series *s = &R->ser.s[i];
    const char *tag = R->tag[s->file];
    snprintf(buf, n, "%s %s%s%s%s%s", s->backend, fc_dtype_name(s->dtype), s->layout != FC_LAYOUT_NONE ? " " : "",
             s->layout != FC_LAYOUT_NONE ? fc_layout_name(s->layout) : "", tag[0] ? " \xC2\xB7 " : "", tag);
}

/* ------------------------------------------------------------------ speedup */

static void speedup_thresholds(const fc_chart *c, const fc_speedup_data *d)
{
    fc_str *o = c->out;
    double y1 = fc_chart_py(c, 1.0); /* no change */
    fc_str_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#6b6b6b\" stroke-width=\"1\"/>\n",
                c->left, y1, c->right, y1);
    for (int k = 0; k < d->nth; k++) {
        double y = fc_chart_py(c, d->th[k]);
        fc_str_addf(o,
                    "<g class=\"threshold\"><title>fuse threshold %.3g%s</title><line x1=\"%.1f\" y1=\"%.1f\" "
                    "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#B00020\" stroke-width=\"1.6\" stroke-dasharray=\"7 4\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#B00020\" font-size=\"11\">threshold "
                    "%.3g%s</text></g>\n",
                    d->th[k], TIMES, c->left, y, c->right, y, c->right - 4, y - 4, d->th[k], TIMES);
    }
}

/* one series: a line through the medians, whiskers for the intervals, markers */
static void speedup_series(const rpt *R, const fc_chart *c, const fc_speedup_data *d, const fc_speedup_series *s)
{
    fc_str *o = c->out;
    const char *col = fc_palette(s->series);
    int shape = s->series % FC_NSHAPES;
    char label[256];
    series_label(R, s->series, label, sizeof label);
    fc_str_add(o, "<g class=\"series\">\n");
    if (s->b - s->a > 1) {
        fc_str_addf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-opacity=\"0.75\" points=\"",
                    col);
        for (int i = s->a, k = 0; i < s->b; i++) {
            double x = fc_chart_px(c, d->pt[i].r->flops),
                   y = fc_chart_py(c, fc_record_decisive_speedup(d->pt[i].r)->ratio);
            if (isfinite(x) && isfinite(y)) fc_str_addf(o, "%s%.1f,%.1f", k++ ? " " : "", x, y);
        }
        fc_str_add(o, "\"/>\n");
    }
    for (int i = s->a; i < s->b; i++) {
        const fc_record *r = d->pt[i].r;
        const fc_ratio_ci *sp = fc_record_decisive_speedup(r);
        double x = fc_chart_px(c, r->flops), ylo = fc_chart_py(c, sp->lo), yhi = fc_chart_py(c, sp->hi),
               ym = fc_chart_py(c, sp->ratio);
        if (!isfinite(x) || !isfinite(ylo) || !isfinite(yhi) || !isfinite(ym))
            continue; /* every number drawn is finite */
        char fl[32], dims[256];
        fc_si_unit(r->flops, "FLOP", fl, sizeof fl);
        fc_format_dims(&r->prob, dims, sizeof dims);
        fc_str_add(o, "<g><title>");
        fc_xml_addf(o, "%s %s: %s%.3g%s [%.3g, %.3g], %s, fuse: %s", label, dims,
                    r->decided_by == FC_DECIDER_FUSION ? "fusion " : "", sp->ratio, TIMES, sp->lo, sp->hi, fl,
                    fc_decision_name(r->decision));
        fc_str_addf(o,
                    "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.3\"/>"
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.3\"/>"
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.3\"/>",
                    x, ylo, x, yhi, col, x - 3.5, ylo, x + 3.5, ylo, col, x - 3.5, yhi, x + 3.5, yhi, col);
        fc_svg_marker(o, shape, x, ym, 4.2, col, r->decision == FC_DECIDE_YES);
        fc_str_add(o, "</g>\n");
    }
    fc_str_add(o, "</g>\n");
}

/* a crossing: a dashed line at its FLOPs, a marker on the threshold, "m ≈ 12.3" */
static void speedup_crossing(const rpt *R, const fc_chart *c, const fc_speedup_series *s, const fc_crossing *x, int k)
{
    fc_str *o = c->out;
    const char *col = fc_palette(s->series);
    double px = fc_chart_px(c, x->flops), py = fc_chart_py(c, x->threshold);
    char label[256], text[512], fx[32], at[32];
    series_label(R, s->series, label, sizeof label);
    fc_crossing_text(&s->x, x, false, text, sizeof text);
    fc_si_unit(x->flops, "FLOP", fx, sizeof fx);
    fc_str_add(o, "<g class=\"crossover\"><title>");
    fc_xml_addf(o, "%s: %s, %s %s per call", label, text, APPROX, fx);
    fc_str_addf(o,
                "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.4\" "
                "stroke-dasharray=\"3 3\"/>",
                px, c->top + 2, px, c->bottom, col);
    fc_svg_marker(o, 3, px, py, 5.5, col, true);
    bool right = px < (c->left + c->right) / 2;
    snprintf(at, sizeof at, x->at >= 100 ? "%.0f" : "%.3g", x->at);
    fc_str_addf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"%s\" font-size=\"11\">",
                right ? px + 4 : px - 4, c->top + 13 + 13 * (k % 4), right ? "start" : "end", col);
    fc_xml_addf(o, "%s %s %s", fc_sweep_line_dim(&s->x.lines[x->line]), APPROX, at);
    fc_str_add(o, "</text></g>\n");
}

static void speedup_plot(const rpt *R, fc_chart *c, const fc_speedup_data *d)
{
    fc_str *o = c->out;
    speedup_thresholds(c, d);
    for (int i = 0; i < d->nser; i++) speedup_series(R, c, d, &d->ser[i]);
    int k = 0;
    for (int i = 0; i < d->nser; i++)
        for (int j = 0; j < d->ser[i].x.n; j++) speedup_crossing(R, c, &d->ser[i], &d->ser[i].x.cross[j], k++);
    if (d->np == 0)
        fc_str_addf(o,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555555\">no successful "
                    "measurement to draw</text>\n",
                    (c->left + c->right) / 2, (c->top + c->bottom) / 2);
}

static void speedup_legend(rpt *R, const fc_speedup_data *d)
{
    fc_str *o = &R->o;
    char label[256];
    fc_str_add(o, "<ul class=\"legend\">\n");
    for (int i = 0; i < d->nser; i++) {
        fc_str_add(o, "<li>");
        fc_svg_swatch(o, fc_palette(d->ser[i].series), d->ser[i].series % FC_NSHAPES, true, true, NULL);
        fc_str_add(o, " ");
        series_label(R, d->ser[i].series, label, sizeof label);
        fc_xml_escape(o, label);
        fc_str_add(o, "</li>\n");
    }
    fc_str_add(o, "<li>");
    fc_svg_swatch(o, "#B00020", -1, true, false, "7 4");
    fc_str_add(o, " fuse threshold</li>\n<li>");
    fc_svg_swatch(o, "#B00020", 3, false, true, NULL);
    fc_str_add(o, " threshold crossing</li>\n</ul>\n");
}

/* per series, its crossings in words, or why there is none */
static void speedup_caption(rpt *R, const fc_speedup_data *d)
{
    fc_str *o = &R->o;
    fc_str_add(o,
               "<figcaption>\n<p>Whiskers: 95% confidence interval of the speedup. "
               "Filled marker: fuse = yes (the whole interval above the threshold); hollow: no or inconclusive. "
               "Where a control was measured, the point is the fusion split (control / fused), which decides; the "
               "table has the whole speedup.");
    if (d->nbad) fc_str_addf(o, " %d of %d records not drawn (failed or skipped: see the table).", d->nbad, d->total);
    fc_str_add(o, "</p>\n<ul class=\"crossings\">\n");
    for (int i = 0; i < d->nser; i++) {
        const fc_speedup_series *s = &d->ser[i];
        char label[256], text[512];
        series_label(R, s->series, label, sizeof label);
        fc_str_add(o, "<li><span class=\"swatch\" style=\"color:");
        fc_str_add(o, fc_palette(s->series));
        fc_str_add(o, "\">\xE2\x96\xA0</span> ");
        fc_xml_escape(o, label);
        fc_str_add(o, ": ");
        for (int k = 0; k < s->x.n; k++) {
            fc_crossing_text(&s->x, &s->x.cross[k], false, text, sizeof text);
            fc_xml_addf(o, "%s%s", k ? "; " : "", text);
        }
        int np = s->b - s->a;
        if (!s->x.n && s->x.nlines == 0 && np > 1)
            fc_str_addf(o,
                        "no crossing: no two of the %d measured sizes differ in one dimension alone (fuse: %d yes, "
                        "%d no, %d inconclusive)",
                        np, s->yes, s->no, s->inconclusive);
        else if (!s->x.n)
            fc_str_addf(o, "no crossing at the %d measured size%s (fuse: %d yes, %d no, %d inconclusive)", np,
                        np > 1 ? "s" : "", s->yes, s->no, s->inconclusive);
        fc_str_add(o, "</li>\n");
    }
    fc_str_add(o, "</ul>\n</figcaption>\n");
}

static void speedup_draw(rpt *R, const fc_speedup_data *d)
{
    fc_str *o = &R->o;
    const fc_pattern *pat = d->pat;
    fc_chart c;
    memset(&c, 0, sizeof c);
    c.x = d->x;
    c.x.si = true;
    c.x.label = "problem size (FLOP per call, log scale)";
    c.y = d->y;
    c.y.label = "speedup = unfused (or control) / fused latency (log scale)";
    c.y.suffix = TIMES;
    fc_str_addf(o, "<figure class=\"chart speedup\" id=\"speedup-%s\">\n<h3>%s <span class=\"math\">", pat->name,
                pat->name);
    fc_xml_escape(o, pat->math);
    fc_str_add(o, "</span></h3>\n<div class=\"plot\">");
    char attrs[256], title[256], desc[512];
    snprintf(attrs, sizeof attrs, "data-chart=\"speedup\" data-pattern=\"%s\"", pat->name);
    snprintf(title, sizeof title, "%s: speedup of the fused form against problem size", pat->name);
    snprintf(desc, sizeof desc,
             "Speedup (unfused latency / fused latency, ratio of medians; control / fused where a control was "
             "measured) of %d records against FLOPs per call, "
             "with 95%% confidence intervals as whiskers and the fuse threshold as a dashed line.",
             d->np);
    fc_chart_begin(&c, o, CHART_W, CHART_H, title, desc, attrs);
    fc_chart_axes(&c);
    speedup_plot(R, &c, d);
    fc_chart_end(&c);
    fc_str_add(o, "</div>\n");
    speedup_legend(R, d);
    speedup_caption(R, d);
    fc_str_add(o, "</figure>\n");
}

static void speedup_chart(rpt *R, const fc_pattern *pat)
{
    fc_speedup_data d;
    fc_speedup_collect(&d, pat, R->in, R->n, &R->ser);
    fc_speedup_analyse(&d);
    speedup_draw(R, &d);
    fc_speedup_free(&d);
}

/* ------------------------------------------------------------------ traffic */

static void traffic_chart(rpt *R, const bool *present)
{
    fc_str *o = &R->o;
    int nrows = 0;
    for (int i = 0; i < FC_NPATTERNS; i++) nrows += present[i];
    if (!nrows) return;
    const double rowh = 26;
    fc_chart c;
    memset(&c, 0, sizeof c);
    c.x = (fc_axis){.lo = 0,
                    .hi = 100,
                    .label = "memory traffic saved by fusion (% of the unfused chain's bytes)",
                    .suffix = "%"};
    c.y = (fc_axis){.lo = 0, .hi = nrows, .label = NULL};
    /* a pattern whose fused form moves more than the unfused one goes left of 0 */
    for (int f = 0; f < R->n; f++)
        for (int i = 0; i < R->in[f].doc->n; i++) {
            double v = 100 * R->in[f].doc->rec[i].traffic_reduction;
            if (isfinite(v) && v < c.x.lo) c.x.lo = v - 5;
        }
    fc_str_add(o,
               "<figure class=\"chart traffic\" id=\"traffic\">\n<h3>Memory traffic saved, per pattern</h3>\n"
               "<div class=\"plot\">");
    fc_chart_begin(&c, o, CHART_W, 14 + nrows * rowh + 46, "memory traffic saved by fusion, per pattern",
                   "Share of the unfused chain's bytes (read and written, counted on paper) that the fused form does "
                   "not move; one dot per problem, the bar spans each pattern's range.",
                   "data-chart=\"traffic\"");
    c.left = 150;
    c.top = 14;
    c.bottom = c.top + nrows * rowh;
    fc_chart_axes(&c);
    int row = 0;
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        if (!present[pi]) continue;
        double lo = INFINITY, hi = -INFINITY;
        double y = c.top + (row + 0.5) * rowh;
        const char *col = fc_palette(pi);
        fc_str_addf(o, "<g><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", c.left - 8, y + 4,
                    fc_patterns[pi].name);
        /* distinct problems (the figure is on paper: the same on every backend) */
        fc_str dots = {0};
        int nd = 0;
        for (int f = 0; f < R->n; f++)
            for (int i = 0; i < R->in[f].doc->n; i++) {
                const fc_record *r = &R->in[f].doc->rec[i];
                if (r->prob.pat->id != (fc_pattern_id)pi || !isfinite(r->traffic_reduction)) continue;
                bool dup = false;
                for (int g = 0; g <= f && !dup; g++)
                    for (int j = 0; j < (g == f ? i : R->in[g].doc->n) && !dup; j++)
                        dup = !strcmp(R->in[g].doc->rec[j].problem, r->problem);
                if (dup) continue;
                double v = 100 * r->traffic_reduction;
                if (v < lo) lo = v;
                if (v > hi) hi = v;
                char dims[256];
                fc_format_dims(&r->prob, dims, sizeof dims);
                fc_str_addf(&dots,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.6\" fill=\"%s\" fill-opacity=\"0.85\"><title>",
                            fc_chart_px(&c, v), y, col);
                fc_xml_addf(&dots, "%s %s %s: %.1f%% of %.4g bytes saved", r->prob.pat->name,
                            fc_dtype_name(r->prob.dtype), dims, v, r->v[FC_UNFUSED].bytes);
                fc_str_add(&dots, "</title></circle>\n");
                nd++;
            }
        if (nd) {
            fc_str_addf(
                o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" fill-opacity=\"0.22\"/>\n",
                fc_chart_px(&c, lo) - 4, y - 7, fc_chart_px(&c, hi) - fc_chart_px(&c, lo) + 8, 14.0, col);
            fc_str_add(o, fc_str_cstr(&dots));
            bool right = hi < 80;
            char rng[64];
            if (hi - lo < 0.5) snprintf(rng, sizeof rng, "%.0f%%", hi);
            else
                snprintf(rng, sizeof rng, "%.0f" NDASH "%.0f%%", lo, hi);
            fc_str_addf(o,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"11\" fill=\"#333333\">%s</text>\n",
                        right ? fc_chart_px(&c, hi) + 8 : fc_chart_px(&c, lo) - 8, y + 4, right ? "start" : "end", rng);
        }
        fc_str_free(&dots);
        fc_str_add(o, "</g>\n");
        row++;
    }
    fc_chart_end(&c);
    fc_str_add(o,
               "</div>\n<figcaption><p>Bytes read and written by the unfused chain (every intermediate written and "
               "read back) against the fused form (inputs read once, output written once), counted on paper per "
               "dtype. One dot per problem; the bar spans the pattern's range.</p></figcaption>\n</figure>\n");
}

/* ------------------------------------------------------------------ roofline */

static void roofline_roofs(const fc_chart *c, const fc_roofline_data *d)
{
    fc_str *o = c->out;
    for (int t = 0; t < FC_NDTYPES; t++) {
        const fc_roof *r = &d->roof[t];
        if (!r->n) continue;
        fc_str_add(o, "<g class=\"roof\"><polyline fill=\"none\" stroke=\"#444444\" stroke-width=\"2\" points=\"");
        for (int i = 0; i < r->n; i++)
            fc_str_addf(o, "%s%.1f,%.1f", i ? " " : "", fc_chart_px(c, r->x[i]), fc_chart_py(c, r->y[i]));
        char ps[32];
        fc_si_unit(d->peak[t] * 1e9, "FLOP/s", ps, sizeof ps);
        fc_str_addf(o,
                    "\"/><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\" fill=\"#444444\">%s peak "
                    "%s</text></g>\n",
                    c->right - 4, fc_chart_py(c, d->peak[t] * 1e9) - 5, fc_dtype_name((fc_dtype)t), ps);
    }
    if (d->bw <= 0) return;
    /* label the bandwidth roof near its left end, where it is below every compute roof */
    double xl = c->x.lo * pow(c->x.hi / c->x.lo, 0.04), yl = d->bw * 1e9 * xl;
    double lowest = INFINITY;
    for (int t = 0; t < FC_NDTYPES; t++)
        if (d->roof[t].n && d->peak[t] * 1e9 < lowest) lowest = d->peak[t] * 1e9;
    /* only where the slope is well below the flat roofs, so the label crosses no line */
    if (fc_chart_inside(c, xl, yl) && fc_chart_py(c, yl) - fc_chart_py(c, lowest) > 30) {
        char bs[32];
        fc_si_unit(d->bw * 1e9, "B/s", bs, sizeof bs);
        fc_str_addf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">memory %s</text>\n",
                    fc_chart_px(c, xl) + 2, fc_chart_py(c, yl) - 8, bs);
    }
}

/* each record: its unfused (hollow) and fused (filled) point, joined */
static void roofline_points(const fc_chart *c, const fc_roofline_data *d)
{
    fc_str *o = c->out;
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = d->rec[i];
        const fc_variant_rec *u = &r->v[FC_UNFUSED], *fz = &r->v[FC_FUSED];
        if (!fc_chart_inside(c, u->intensity, u->gflops * 1e9) || !fc_chart_inside(c, fz->intensity, fz->gflops * 1e9))
            continue;
        const char *col = fc_palette(r->prob.pat->id);
        double ux = fc_chart_px(c, u->intensity), uy = fc_chart_py(c, u->gflops * 1e9);
        double fx = fc_chart_px(c, fz->intensity), fy = fc_chart_py(c, fz->gflops * 1e9);
        char dims[256];
        fc_format_dims(&r->prob, dims, sizeof dims);
        fc_str_add(o, "<g><title>");
        fc_xml_addf(o,
                    "%s %s %s %s: unfused %.3g GFLOP/s at %.3g FLOP/B (%.0f%% of roofline), fused %.3g GFLOP/s at "
                    "%.3g FLOP/B (%.0f%% of roofline)",
                    r->prob.pat->name, r->backend, fc_dtype_name(r->prob.dtype), dims, u->gflops, u->intensity,
                    u->pct_roofline, fz->gflops, fz->intensity, fz->pct_roofline);
        fc_str_addf(o,
                    "</title><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.1\" "
                    "stroke-opacity=\"0.6\"/>",
                    ux, uy, fx, fy, col);
        fc_svg_marker(o, 0, ux, uy, 3.6, col, false);
        fc_svg_marker(o, 0, fx, fy, 3.6, col, true);
        fc_str_add(o, "</g>\n");
    }
}

static void roofline_caption(rpt *R, const fc_roofline_data *d)
{
    fc_str *o = &R->o;
    fc_str_add(o, "<ul class=\"legend\">\n");
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        if (!d->pat_used[pi]) continue;
        fc_str_add(o, "<li>");
        fc_svg_swatch(o, fc_palette(pi), 0, false, true, NULL);
        fc_str_addf(o, " %s</li>\n", fc_patterns[pi].name);
    }
    fc_str_add(o, "<li>");
    fc_svg_swatch(o, "#333333", 0, false, false, NULL);
    fc_str_add(o, " unfused</li>\n<li>");
    fc_svg_swatch(o, "#333333", 0, false, true, NULL);
    fc_str_add(o, " fused</li>\n</ul>\n<figcaption><p>Roofs:");
    char un[32];
    for (int t = 0; t < FC_NDTYPES; t++)
        if (d->roof[t].n) {
            fc_si_unit(d->peak[t] * 1e9, "FLOP/s", un, sizeof un);
            fc_str_addf(o, " %s peak %s;", fc_dtype_name((fc_dtype)t), un);
        }
    fc_si_unit(d->bw * 1e9, "B/s", un, sizeof un);
    fc_str_addf(o, " memory %s, measured on the same machine (", un);
    fc_xml_escape(o, fc_json_str(d->ceilings, "method", "method not recorded"));
    fc_str_add(o,
               "). Intensity is FLOPs per byte moved, counted on paper; fusion moves fewer bytes, so the fused point "
               "sits to the right of its unfused one.</p></figcaption>\n");
}

static void roofline_draw(rpt *R, int f, const fc_roofline_data *d)
{
    fc_str *o = &R->o;
    const char *device = d->device;
    fc_chart c;
    memset(&c, 0, sizeof c);
    c.x = d->x;
    c.x.label = "arithmetic intensity (FLOP/byte, log scale)";
    c.y = d->y;
    c.y.si = true;
    c.y.label = "achieved FLOP/s (log scale)";
    const char *what = strcmp(device, "cpu") ? doc_str(d->doc->host, "devices", device, "name")
                                             : doc_str(d->doc->host, "devices", "cpu", "model");
    fc_str_addf(o, "<figure class=\"chart roofline\" id=\"roofline-%d-%s\">\n<h3>", f, device);
    fc_xml_addf(o, "Roofline %s %s%s%s%s", MDASH, device, what ? " (" : "", what ? what : "", what ? ")" : "");
    if (R->tag[f][0]) {
        fc_str_add(o, " \xC2\xB7 ");
        fc_xml_escape(o, R->tag[f]);
    }
    fc_str_add(o, "</h3>\n<div class=\"plot\">");
    char attrs[128], title[160];
    snprintf(attrs, sizeof attrs, "data-chart=\"roofline\" data-device=\"%s\"", device);
    snprintf(title, sizeof title, "roofline of %s: achieved FLOP/s against arithmetic intensity", device);
    fc_chart_begin(&c, o, CHART_W, CHART_H, title,
                   "Each record's unfused chain (hollow) and fused form (filled), joined by a line, under the "
                   "measured compute ceiling per dtype and the memory-bandwidth ceiling.",
                   attrs);
    fc_chart_axes(&c);
    roofline_roofs(&c, d);
    roofline_points(&c, d);
    fc_chart_end(&c);
    fc_str_add(o, "</div>\n");
    roofline_caption(R, d);
    fc_str_add(o, "</figure>\n");
}

static void roofline_chart(rpt *R, int f, const char *device)
{
    fc_roofline_data d;
    fc_roofline_collect(&d, R->in[f].doc, device);
    if (d.n) {
        fc_roofline_analyse(&d);
        roofline_draw(R, f, &d);
    }
    fc_roofline_free(&d);
}

/* ------------------------------------------------------------------ tables */

static void num_cell(fc_str *o, const char *fmt, double v)
{
    if (isfinite(v)) {
        fc_str_add(o, "<td class=\"num\">");
        fc_str_addf(o, fmt, v);
        fc_str_add(o, "</td>");
    } else {
        fc_str_add(o, "<td class=\"num\">" NDASH "</td>");
    }
}

static void records_table(rpt *R, int f)
{
    fc_str *o = &R->o;
    const fc_doc *d = R->in[f].doc;
    fc_str_add(o, "<h3>");
    fc_xml_escape(o, R->in[f].name);
    fc_str_addf(o,
                " (%d record%s)</h3>\n<div class=\"scroll\"><table class=\"records\">\n<thead><tr>"
                "<th>pattern</th><th>backend</th><th>dtype</th><th>dims</th><th>status</th>"
                "<th>unfused ms</th><th>fused ms</th><th>speedup [95%% CI]</th><th>threshold</th><th>fuse</th>"
                "<th>traffic saved</th><th>unfused GFLOP/s</th><th>fused GFLOP/s</th><th>fused %% of roofline</th>"
                "<th>verified</th><th>unfused implementation</th><th>fused implementation</th><th>note</th>"
                "</tr></thead>\n<tbody>\n",
                d->n, d->n == 1 ? "" : "s");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = &d->rec[i];
        bool ok = r->status == FC_STATUS_OK;
        char dims[256];
        fc_format_dims(&r->prob, dims, sizeof dims);
        fc_str_addf(o, "<tr><td>%s</td><td>", r->prob.pat->name);
        fc_xml_escape(o, r->backend);
        fc_str_addf(o, "</td><td>%s</td><td>", fc_dtype_name(r->prob.dtype));
        fc_xml_escape(o, dims);
        fc_str_addf(o, "</td><td%s>%s</td>", ok ? "" : " class=\"bad\"", fc_status_name(r->status));
        if (ok) {
            num_cell(o, "%.4g", r->v[FC_UNFUSED].lat.median);
            num_cell(o, "%.4g", r->v[FC_FUSED].lat.median);
            fc_str_addf(o, "<td class=\"num\">%.3g%s [%.3g, %.3g]</td>", r->speedup.ratio, TIMES, r->speedup.lo,
                        r->speedup.hi);
        } else {
            fc_str_add(o, "<td class=\"num\">" NDASH "</td><td class=\"num\">" NDASH "</td><td class=\"num\">" NDASH
                          "</td>");
        }
        fc_str_addf(o, "<td class=\"num\">%.3g%s</td><td>%s</td>", r->threshold, TIMES,
                    ok ? fc_decision_name(r->decision) : NDASH);
        num_cell(o, "%.0f%%", 100 * r->traffic_reduction);
        if (ok) {
            num_cell(o, "%.4g", r->v[FC_UNFUSED].gflops);
            num_cell(o, "%.4g", r->v[FC_FUSED].gflops);
            num_cell(o, "%.0f%%", r->v[FC_FUSED].pct_roofline);
        } else {
            fc_str_add(o, "<td class=\"num\">" NDASH "</td><td class=\"num\">" NDASH "</td><td class=\"num\">" NDASH
                          "</td>");
        }
        fc_str_addf(o, "<td%s>%s</td><td class=\"impl\">", r->verified ? "" : " class=\"bad\"",
                    r->verified ? "yes" : "no");
        fc_xml_escape(o, r->v[FC_UNFUSED].impl.name);
        fc_str_add(o, "</td><td class=\"impl\">");
        fc_xml_escape(o, r->v[FC_FUSED].impl.name);
        fc_str_add(o, "</td><td class=\"note\">");
        bool sep = false;
        if (r->reason[0]) {
            fc_xml_escape(o, r->reason);
            sep = true;
        }
        for (int v = 0; v < FC_NVARIANTS; v++)
            if (r->v[v].impl.fallback) {
                fc_xml_addf(o, "%s%s ran a fallback: %s", sep ? "; " : "", fc_variant_name((fc_variant)v),
                            r->v[v].impl.fallback_why);
                sep = true;
            }
        if (ok && !(r->v[0].check.trusted && r->v[1].check.trusted)) {
            fc_str_addf(o, "%suntrusted output (many exact zeros)", sep ? "; " : "");
            sep = true;
        }
        if (ok && r->has_control) {
            fc_str_addf(o, "%sspeedup split: implementation %.3g%s [%.3g, %.3g] (unfused against the control: ",
                        sep ? "; " : "", r->split_implementation.ratio, TIMES, r->split_implementation.lo,
                        r->split_implementation.hi);
            fc_xml_escape(o, r->v[FC_CONTROL].impl.name);
            fc_str_addf(o, "), fusion %.3g%s [%.3g, %.3g], which decided", r->split_fusion.ratio, TIMES,
                        r->split_fusion.lo, r->split_fusion.hi);
            sep = true;
        }
        for (int v = 0; ok && v < (r->has_control ? FC_MAX_VARIANTS : FC_NVARIANTS); v++)
            if (r->v[v].over_ceiling) {
                fc_str_addf(o, "%s%s above a measured ceiling (%.0f%% of peak FLOP/s, %.0f%% of bandwidth",
                            sep ? "; " : "", fc_variant_name((fc_variant)v), r->v[v].pct_peak_flops,
                            r->v[v].pct_peak_bw);
                if (r->v[v].beside_gbs > 0) fc_str_addf(o, ", %.0f%% of that beside its rounds", r->v[v].pct_bw_beside);
                if (r->peak_beside_gflops > 0)
                    fc_str_addf(o, ", %.0f%% of the peak beside its rounds", r->v[v].pct_peak_beside);
                fc_str_add(o, ")");
                sep = true;
            }
        if (ok && r->v[FC_FUSED].beside_gbs > 0) { /* the ceiling of the state it ran in */
            fc_str_addf(o,
                        "%sbandwidth beside the rounds: fused %.3g GB/s of %.3g (%.0f%%), unfused %.3g of %.3g "
                        "(%.0f%%); of the device's ceilings %.0f%% and %.0f%%",
                        sep ? "; " : "", r->v[FC_FUSED].gbs, r->v[FC_FUSED].beside_gbs, r->v[FC_FUSED].pct_bw_beside,
                        r->v[FC_UNFUSED].gbs, r->v[FC_UNFUSED].beside_gbs, r->v[FC_UNFUSED].pct_bw_beside,
                        r->v[FC_FUSED].pct_peak_bw, r->v[FC_UNFUSED].pct_peak_bw);
            sep = true;
        }
        if (ok && r->peak_beside_gflops > 0) { /* the peak at the clocks it ran at */
            fc_str_addf(o,
                        "%sarithmetic peak beside the rounds %.4g GFLOP/s: fused %.0f%%, unfused %.0f%%; of the "
                        "device's peak %.0f%% and %.0f%%",
                        sep ? "; " : "", r->peak_beside_gflops, r->v[FC_FUSED].pct_peak_beside,
                        r->v[FC_UNFUSED].pct_peak_beside, r->v[FC_FUSED].pct_peak_flops,
                        r->v[FC_UNFUSED].pct_peak_flops);
            sep = true;
        }
        if (ok && r->has_graph_speedup) { /* which timing decided, where there were two */
            fc_str_addf(o, "%sgraph-replay speedup %.3g%s [%.3g, %.3g]; decided by %s", sep ? "; " : "",
                        r->speedup_graph.ratio, TIMES, r->speedup_graph.lo, r->speedup_graph.hi,
                        r->decided_by == FC_DECIDER_GRAPH ? "the graph replay (launch-bound)" : "eager launches");
            sep = true;
        }
        if (r->throttled) fc_str_addf(o, "%sclocks dropped during the problem", sep ? "; " : "");
        if (r->contended)
            fc_str_addf(o, "%sanother fusecal run measured on the machine at the same time",
                        r->throttled || sep ? "; " : "");
        fc_str_add(o, "</td></tr>\n");
    }
    fc_str_add(o, "</tbody>\n</table></div>\n");
}

/* "key: value; key: value" for a JSON object's members (nested objects in braces). */
static void json_inline(fc_str *o, const cJSON *j)
{
    if (cJSON_IsString(j)) {
        fc_xml_escape(o, j->valuestring);
        return;
    }
    if (cJSON_IsNumber(j)) {
        fc_str_addf(o, "%.6g", j->valuedouble);
        return;
    }
    if (cJSON_IsBool(j)) {
        fc_str_add(o, cJSON_IsTrue(j) ? "yes" : "no");
        return;
    }
    if (cJSON_IsArray(j)) {
        int i = 0;
        for (const cJSON *c = j->child; c; c = c->next, i++) {
            if (i) fc_str_add(o, ", ");
            json_inline(o, c);
        }
        return;
    }
    if (cJSON_IsObject(j)) {
        int i = 0;
        for (const cJSON *c = j->child; c; c = c->next, i++) {
            if (i) fc_str_add(o, "; ");
            fc_xml_escape(o, c->string);
            fc_str_add(o, ": ");
            if (cJSON_IsObject(c)) fc_str_add(o, "{");
            json_inline(o, c);
            if (cJSON_IsObject(c)) fc_str_add(o, "}");
        }
    }
}

static void kv_row(fc_str *o, const char *k) { fc_str_addf(o, "<tr><th>%s</th><td>", k); }

/* Rows of a host block and its ceilings (a calibration's or an info document's). */
static void host_rows(fc_str *o, const cJSON *host, const cJSON *ceilings)
{
    kv_row(o, "host");
    fc_xml_addf(o, "%s %s %s, %s %s",
                doc_str(host, "hostname", NULL, NULL) ? doc_str(host, "hostname", NULL, NULL) : "?", MDASH,
                doc_str(host, "distribution", NULL, NULL) ? doc_str(host, "distribution", NULL, NULL) : "",
                doc_str(host, "os", NULL, NULL) ? doc_str(host, "os", NULL, NULL) : "",
                doc_str(host, "kernel", NULL, NULL) ? doc_str(host, "kernel", NULL, NULL) : "");
    fc_str_add(o, "</td></tr>\n");
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(host, "devices");
    for (const cJSON *dv = devs ? devs->child : NULL; dv; dv = dv->next) {
        fc_str_add(o, "<tr><th>device ");
        fc_xml_escape(o, dv->string);
        fc_str_add(o, "</th><td>");
        json_inline(o, dv);
        fc_str_add(o, "</td></tr>\n");
    }
    kv_row(o, "libraries");
    json_inline(o, cJSON_GetObjectItemCaseSensitive(host, "libraries"));
    fc_str_add(o, "</td></tr>\n");
    for (const cJSON *cd = ceilings ? ceilings->child : NULL; cd; cd = cd->next) {
        fc_str_add(o, "<tr><th>ceilings ");
        fc_xml_escape(o, cd->string);
        fc_str_add(o, "</th><td>");
        static const char *const rates[][2] = {{"peak_gflops", "peak"}, {"gflops", "GEMM"}};
        for (size_t k = 0; k < FC_ARRAY_LEN(rates); k++) {
            const cJSON *by = cJSON_GetObjectItemCaseSensitive(cd, rates[k][0]);
            for (const cJSON *g = by ? by->child : NULL; g; g = g->next) {
                fc_xml_escape(o, g->string);
                fc_str_addf(o, " %s %.4g GFLOP/s, ", rates[k][1], cJSON_IsNumber(g) ? g->valuedouble : 0);
            }
        }
        fc_str_addf(o, "memory %.4g GB/s", fc_json_num(cd, "bandwidth_gbs", 0));
        if (fc_json_num(cd, "launch_us", 0) > 0)
            fc_str_addf(o, ", launch %.3g \xC2\xB5s", fc_json_num(cd, "launch_us", 0));
        fc_str_add(o, "<br/><span class=\"method\">");
        fc_xml_escape(o, fc_json_str(cd, "method", ""));
        fc_str_add(o, "</span></td></tr>\n");
    }
}

/* An info document: when and by what it was made, its host and ceilings. */
static void info_block(fc_str *o, const fc_report_info *in)
{
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(in->doc, "tool");
    const cJSON *ceil = cJSON_GetObjectItemCaseSensitive(in->doc, "ceilings");
    fc_str_add(o, "<h3>");
    fc_xml_escape(o, in->name);
    fc_str_add(o, "</h3>\n<div class=\"scroll\"><table class=\"kv\">\n");
    kv_row(o, "created");
    fc_xml_addf(o, "%s by fusecal info %s (%s)%s", fc_json_str(in->doc, "created_utc", "(no time recorded)"),
                fc_json_str(tool, "version", "?"), fc_json_str(tool, "git_revision", "?"),
                ceil && ceil->child ? "" : "; no ceilings measured");
    fc_str_add(o, "</td></tr>\n");
    host_rows(o, cJSON_GetObjectItemCaseSensitive(in->doc, "host"), ceil);
    fc_str_add(o, "</table></div>\n");
}

static void host_block(rpt *R, int f)
{
    fc_str *o = &R->o;
    const fc_doc *d = R->in[f].doc;
    const fc_settings *s = &d->settings;
    fc_str_add(o, "<h3>");
    fc_xml_escape(o, R->in[f].name);
    fc_str_add(o, "</h3>\n<div class=\"scroll\"><table class=\"kv\">\n");
    kv_row(o, "created");
    fc_xml_addf(o, "%s by fusecal %s (%s), %.0f s of measuring%s", d->created, d->tool_version, d->git_revision,
                d->elapsed_s, d->complete ? "" : "; INCOMPLETE: the run stopped early");
    fc_str_add(o, "</td></tr>\n");
    host_rows(o, d->host, d->ceilings);
    kv_row(o, "settings");
    fc_str_add(o, "sweep ");
    fc_xml_escape(o, s->sweep);
    fc_str_addf(o, "; cache %s; %d threads; threshold ", s->cold ? "cold" : "warm", s->threads);
    if (s->threshold > 0) fc_str_addf(o, "%.3g%s", s->threshold, TIMES);
    else
        fc_str_add(o, "from the catalogue");
    fc_str_addf(o,
                "; stop: at least %d rounds, %d sample tuples and %.3g s per variant, more rounds until the "
                "speedup interval's half-width %s %.3g%s or %.3g s per variant; graph replay %s; seed %llu",
                s->rounds, s->stop.min_samples, s->stop.min_time, "\xE2\x89\xA4", 100 * s->stop.max_noise, " %",
                s->stop.max_time, s->graph ? "on" : "off", (unsigned long long)s->seed);
    fc_str_add(o, "</td></tr>\n");
    if (cJSON_GetArraySize(d->argv) > 0) {
        kv_row(o, "command");
        fc_str_add(o, "<code>");
        int i = 0;
        for (const cJSON *a = d->argv->child; a; a = a->next, i++) {
            if (i) fc_str_add(o, " ");
            if (cJSON_IsString(a)) fc_xml_escape(o, a->valuestring);
        }
        fc_str_add(o, "</code></td></tr>\n");
    }
    fc_str_add(o, "</table></div>\n");
}

/* ------------------------------------------------------------------ page */

static const char css[] =
    ":root{color-scheme:light}\n"
    "body{font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif;margin:0 auto;"
    "max-width:1280px;padding:0 16px 32px;color:#1a1a1a;background:#ffffff;line-height:1.4}\n"
    "h1{font-size:1.6em;margin:.8em 0 .2em}\n"
    "h2{font-size:1.3em;margin:1.6em 0 .6em;border-bottom:1px solid #d0d0d0;padding-bottom:.2em}\n"
    "h3{font-size:1.02em;margin:.2em 0 .4em}\n"
    ".math{font-weight:normal;color:#555555;margin-left:.5em}\n"
    ".meta{color:#444444;margin:.2em 0}\n"
    "nav ul{display:flex;flex-wrap:wrap;gap:.2em 1.2em;padding:0;margin:.6em 0;list-style:none}\n"
    ".charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,540px),1fr));gap:16px}\n"
    "figure{margin:0;padding:10px;border:1px solid #dddddd;border-radius:4px;break-inside:avoid;"
    "page-break-inside:avoid;min-width:0;background:#ffffff}\n"
    ".plot{overflow-x:auto}\n"
    ".plot svg{display:block;width:100%;min-width:420px;height:auto}\n"
    "figcaption{font-size:.85em;color:#333333}\n"
    "figcaption p{margin:.3em 0}\n"
    ".crossings{margin:.2em 0;padding-left:1.2em}\n"
    ".legend{list-style:none;padding:0;margin:.4em 0;display:flex;flex-wrap:wrap;gap:.2em 1.1em;font-size:.85em}\n"
    ".legend svg{display:inline-block;width:28px;height:14px;vertical-align:middle}\n"
    ".scroll{overflow-x:auto;max-width:100%}\n"
    "table{border-collapse:collapse;font-size:.82em}\n"
    "th,td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;vertical-align:top}\n"
    "thead th{position:sticky;top:0;background:#f4f4f4}\n"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
    "td.impl{min-width:16em;max-width:30em;font-size:.92em;color:#444444}\n"
    "td.note{min-width:10em;max-width:30em}\n"
    "table.kv th{white-space:nowrap;color:#444444;font-weight:600}\n"
    ".method{color:#555555;font-size:.92em}\n"
    ".bad{color:#B00020;font-weight:600}\n"
    "code{font-size:.92em;word-break:break-all}\n"
    "@media print{body{max-width:none;padding:0;font-size:9.5pt}nav{display:none}"
    ".charts{display:block}figure{border:none;padding:0;margin:0 0 12pt}.plot{overflow:visible}"
    ".plot svg{min-width:0;max-height:9cm}.scroll{overflow:visible}table{font-size:7pt}"
    "thead th{position:static}h2{break-after:avoid;page-break-after:avoid}"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\n"
    "@page{margin:12mm}\n";

char *fc_report_html(const fc_report_page *page)
{
    const fc_report_input *in = page->in;
    int n = page->n;
    const char *title = page->title;
    rpt R;
    memset(&R, 0, sizeof R);
    R.in = in;
    R.n = n;
    R.tag = fc_xcalloc((size_t)(n ? n : 1), sizeof *R.tag);
    if (n > 1) {
        /* hostnames tell the files apart when they differ; else the file names, with
         * as much of their paths as tells them apart */
        bool distinct = true;
        for (int i = 0; i < n && distinct; i++) {
            const char *hi = doc_str(in[i].doc->host, "hostname", NULL, NULL);
            if (!hi || !hi[0]) distinct = false;
            for (int j = 0; j < i && distinct; j++) {
                const char *hj = doc_str(in[j].doc->host, "hostname", NULL, NULL);
                if (hj && !strcmp(hi, hj)) distinct = false;
            }
        }
        for (int i = 0; i < n; i++)
            fc_strlcpy(R.tag[i], distinct ? doc_str(in[i].doc->host, "hostname", NULL, NULL) : file_tag(in, n, i),
                       sizeof R.tag[i]);
    }
    bool present[FC_NPATTERNS] = {false};
    int nrec = 0, nok = 0, dec[3] = {0, 0, 0};
    for (int f = 0; f < n; f++)
        for (int i = 0; i < in[f].doc->n; i++) {
            const fc_record *r = &in[f].doc->rec[i];
            present[r->prob.pat->id] = true;
            fc_series_of(&R.ser, f, r); /* colours in the order records appear */
            nrec++;
            if (r->status == FC_STATUS_OK) {
                nok++;
                dec[r->decision]++;
            }
        }
    fc_str *o = &R.o;
    const char *t = title && title[0] ? title : "fusecal calibration report";
    char now[32];
    fc_utc_timestamp(now);
    fc_str_add(
        o,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\" xml:lang=\"en\">\n<head>\n"
        "<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
    fc_str_addf(o, "<meta name=\"generator\" content=\"fusecal %s\"/>\n<title>", fc_version_string);
    fc_xml_escape(o, t);
    fc_str_addf(o, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>", css);
    fc_xml_escape(o, t);
    fc_str_add(o, "</h1>\n<p class=\"meta\">");
    fc_xml_addf(o, "%d record%s (%d ok; fuse: %d yes, %d no, %d inconclusive) from %d file%s: ", nrec,
                nrec == 1 ? "" : "s", nok, dec[FC_DECIDE_YES], dec[FC_DECIDE_NO], dec[FC_DECIDE_INCONCLUSIVE], n,
                n == 1 ? "" : "s");
    for (int f = 0; f < n; f++) {
        if (f) fc_str_add(o, ", ");
        fc_str_add(o, "<code>");
        fc_xml_escape(o, in[f].name);
        fc_str_add(o, "</code>");
        const char *h = doc_str(in[f].doc->host, "hostname", NULL, NULL);
        if (h) {
            fc_str_add(o, " (");
            fc_xml_escape(o, h);
            fc_str_add(o, ")");
        }
    }
    fc_str_addf(o, ". Made by fusecal %s (%s) on %s.</p>\n</header>\n<nav><ul>\n", fc_version_string, fc_git_revision,
                now);
    if (fc_report_has_network(in, n)) fc_str_add(o, "<li><a href=\"#network\">networks</a></li>\n");
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        if (present[pi])
            fc_str_addf(o, "<li><a href=\"#speedup-%s\">%s</a></li>\n", fc_patterns[pi].name, fc_patterns[pi].name);
    fc_str_add(o,
               "<li><a href=\"#traffic\">memory traffic</a></li>\n<li><a href=\"#rooflines\">rooflines</a></li>\n"
               "<li><a href=\"#records\">records</a></li>\n<li><a href=\"#hosts\">host and settings</a></li>\n"
               "</ul></nav>\n<main>\n");
    fc_report_network(o, in, n);

    fc_str_add(o,
               "<section id=\"speedups\">\n<h2>Speedup against problem size</h2>\n"
               "<p>Speedup = unfused latency / fused latency (ratio of medians of paired, interleaved samples); "
               "where the fused form changes more than the fusion and a control was measured, control / fused, the "
               "fusion split the decision is made on. "
               "Fusion pays where the whole interval is above the threshold; where a series crosses the threshold "
               "line, fusion stops (or starts) paying. Crossings are found along one dimension at a time, every "
               "other dimension fixed, between sizes decided yes and no.</p>\n<div class=\"charts\">\n");
    for (int pi = 0; pi < FC_NPATTERNS; pi++)
        if (present[pi]) speedup_chart(&R, &fc_patterns[pi]);
    fc_str_add(
        o, "</div>\n</section>\n<section id=\"traffic-section\">\n<h2>Memory traffic</h2>\n<div class=\"charts\">\n");
    traffic_chart(&R, present);
    fc_str_add(o, "</div>\n</section>\n<section id=\"rooflines\">\n<h2>Rooflines</h2>\n<div class=\"charts\">\n");
    for (int f = 0; f < n; f++) {
        const char *seen[8];
        int nseen = 0;
        for (int i = 0; i < in[f].doc->n && nseen < 8; i++) {
            const char *dv = in[f].doc->rec[i].device;
            bool dup = false;
            for (int k = 0; k < nseen; k++) dup |= !strcmp(seen[k], dv);
            if (dup) continue;
            seen[nseen++] = dv;
            roofline_chart(&R, f, dv);
        }
    }
    fc_str_add(o, "</div>\n</section>\n<section id=\"records\">\n<h2>Records</h2>\n");
    for (int f = 0; f < n; f++) records_table(&R, f);
    fc_str_add(o, "</section>\n<section id=\"hosts\">\n<h2>Host and settings</h2>\n");
    for (int f = 0; f < n; f++) host_block(&R, f);
    for (int i = 0; i < page->ninfo; i++) info_block(o, &page->info[i]);
    fc_str_add(o, "</section>\n</main>\n</body>\n</html>\n");
    fc_series_free(&R.ser);
    free(R.tag);
    return R.o.s;
}
