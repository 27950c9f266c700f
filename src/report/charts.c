/* charts.c — see charts.h. */
#include "charts.h"
#include "jsonfile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ series */

int fc_series_of(fc_series_set *set, int file, const fc_record *r)
{
    for (int i = 0; i < set->n; i++) {
        const fc_series *s = &set->s[i];
        if (s->file == file && s->dtype == r->prob.dtype && s->layout == r->prob.layout &&
            !strcmp(s->backend, r->backend))
            return i;
    }
    if (set->n == set->cap) {
        set->cap = set->cap ? 2 * set->cap : 16;
        set->s = fc_xrealloc(set->s, (size_t)set->cap * sizeof *set->s);
    }
    fc_series *s = &set->s[set->n];
    memset(s, 0, sizeof *s);
    s->file = file;
    fc_strlcpy(s->backend, r->backend, sizeof s->backend);
    s->dtype = r->prob.dtype;
    s->layout = r->prob.layout;
    return set->n++;
}

void fc_series_free(fc_series_set *set)
{
    free(set->s);
    memset(set, 0, sizeof *set);
}

/* ------------------------------------------------------------------ speedup */

bool fc_speedup_plottable(const fc_record *r)
{
    const fc_ratio_ci *s = fc_record_decisive_speedup(r);
    return r->status == FC_STATUS_OK && r->flops > 0 && isfinite(r->flops) && s->ratio > 0 && s->lo > 0 && s->hi > 0 &&
           isfinite(s->ratio) && isfinite(s->lo) && isfinite(s->hi) && r->threshold > 0;
}

static int point_cmp(const void *x, const void *y)
{
    const fc_speedup_point *a = x, *b = y;
    if (a->series != b->series) return a->series - b->series;
    return (a->r->flops > b->r->flops) - (a->r->flops < b->r->flops);
}

void fc_speedup_collect(fc_speedup_data *d, const fc_pattern *pat, const fc_report_input *in, int n, fc_series_set *set)
{
    memset(d, 0, sizeof *d);
    d->pat = pat;
    int cap = 16;
    d->pt = fc_xmalloc((size_t)cap * sizeof *d->pt);
    for (int f = 0; f < n; f++)
        for (int i = 0; i < in[f].doc->n; i++) {
            const fc_record *r = &in[f].doc->rec[i];
            if (r->prob.pat != pat) continue;
            d->total++;
            if (!fc_speedup_plottable(r)) {
                d->nbad++;
                continue;
            }
            if (d->np == cap) d->pt = fc_xrealloc(d->pt, (size_t)(cap *= 2) * sizeof *d->pt);
            d->pt[d->np++] = (fc_speedup_point){r, fc_series_of(set, f, r)};
        }
    qsort(d->pt, (size_t)d->np, sizeof *d->pt, point_cmp);
}

static void speedup_ranges(fc_speedup_data *d)
{
    double *xs = fc_xmalloc((size_t)(d->np + 1) * sizeof *xs), *ys = fc_xmalloc((size_t)(4 * d->np + 2) * sizeof *ys);
    for (int i = 0; i < d->np; i++) {
        const fc_record *r = d->pt[i].r;
        xs[i] = r->flops;
        const fc_ratio_ci *s = fc_record_decisive_speedup(r);
        ys[4 * i] = s->lo;
        ys[4 * i + 1] = s->hi;
        ys[4 * i + 2] = s->ratio;
        ys[4 * i + 3] = r->threshold;
        bool seen = false;
        for (int k = 0; k < d->nth; k++) seen |= fabs(d->th[k] - r->threshold) < 1e-9;
        if (!seen && d->nth < FC_MAX_THRESHOLD_LINES) d->th[d->nth++] = r->threshold;
    }
    ys[4 * d->np] = 1.0; /* no change */
    d->x = (fc_axis){.log = true};
    d->y = (fc_axis){.log = true};
    fc_axis_fit(&d->x, xs, d->np);
    fc_axis_fit(&d->y, ys, 4 * d->np + 1);
    free(xs);
    free(ys);
}

/* records of one document in document order (records of a document are one array) */
static int by_address(const void *x, const void *y)
{
    const fc_record *a = *(const fc_record *const *)x, *b = *(const fc_record *const *)y;
    return (a > b) - (a < b);
}

static void series_crossings(fc_speedup_data *d, fc_speedup_series *s)
{
    const fc_record **r = fc_xmalloc((size_t)(s->b - s->a) * sizeof *r);
    for (int i = s->a; i < s->b; i++) {
        r[i - s->a] = d->pt[i].r;
        fc_decision dc = d->pt[i].r->decision;
        s->yes += dc == FC_DECIDE_YES;
        s->no += dc == FC_DECIDE_NO;
        s->inconclusive += dc != FC_DECIDE_YES && dc != FC_DECIDE_NO;
    }
    qsort(r, (size_t)(s->b - s->a), sizeof *r, by_address);
    fc_crossings_find(r, s->b - s->a, &s->x);
    free(r);
}

void fc_speedup_analyse(fc_speedup_data *d)
{
    speedup_ranges(d);
    d->ser = fc_xcalloc((size_t)(d->np ? d->np : 1), sizeof *d->ser);
    for (int a = 0; a < d->np;) {
        int b = a;
        while (b < d->np && d->pt[b].series == d->pt[a].series) b++;
        fc_speedup_series *s = &d->ser[d->nser++];
        s->series = d->pt[a].series;
        s->a = a;
        s->b = b;
        series_crossings(d, s);
        a = b;
    }
}

void fc_speedup_free(fc_speedup_data *d)
{
    for (int i = 0; i < d->nser; i++) fc_crossings_free(&d->ser[i].x);
    free(d->ser);
    free(d->pt);
    memset(d, 0, sizeof *d);
}

/* ------------------------------------------------------------------ roofline */

void fc_roofline_collect(fc_roofline_data *d, const fc_doc *doc, const char *device)
{
    memset(d, 0, sizeof *d);
    d->doc = doc;
    d->device = device;
    d->rec = fc_xmalloc((size_t)(doc->n ? doc->n : 1) * sizeof *d->rec);
    for (int i = 0; i < doc->n; i++) {
        const fc_record *r = &doc->rec[i];
        if (strcmp(r->device, device) || r->status != FC_STATUS_OK) continue;
        d->rec[d->n++] = r;
        d->used[r->prob.dtype] = true;
        d->pat_used[r->prob.pat->id] = true;
    }
}

/* The device's bandwidth from the document's ceilings (the first record's where
 * the document has none); per dtype the arithmetic peak the first record's
 * percentages are of (the GEMM rate in records written before the peak was
 * measured), else the document's (the better of its peak and its GEMM rate), else
 * the record's GEMM rate. */
static void roofline_ceilings(fc_roofline_data *d)
{
    d->ceilings = cJSON_GetObjectItemCaseSensitive(d->doc->ceilings, d->device);
    d->bw = fc_json_num(d->ceilings, "bandwidth_gbs", 0);
    const cJSON *gf = cJSON_GetObjectItemCaseSensitive(d->ceilings, "gflops");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(d->ceilings, "peak_gflops");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = d->rec[i];
        const char *dt = fc_dtype_name(r->prob.dtype);
        double *peak = &d->peak[r->prob.dtype];
        if (*peak <= 0) *peak = r->peak_gflops;
        if (*peak <= 0) *peak = fmax(fc_json_num(pk, dt, 0), fc_json_num(gf, dt, 0));
        if (*peak <= 0) *peak = r->ceil_gflops;
        if (d->bw <= 0) d->bw = r->ceil_gbs;
    }
}

static void roofline_ranges(fc_roofline_data *d)
{
    double *xs = fc_xmalloc((size_t)(2 * d->n + FC_NDTYPES) * sizeof *xs);
    double *ys = fc_xmalloc((size_t)(2 * d->n + FC_NDTYPES) * sizeof *ys);
    int nx = 0, ny = 0;
    for (int i = 0; i < d->n; i++)
        for (int v = 0; v < FC_NVARIANTS; v++) {
            xs[nx++] = d->rec[i]->v[v].intensity;
            ys[ny++] = d->rec[i]->v[v].gflops * 1e9;
        }
    for (int t = 0; t < FC_NDTYPES; t++)
        if (d->used[t] && d->peak[t] > 0) {
            ys[ny++] = d->peak[t] * 1e9;
            if (d->bw > 0) xs[nx++] = d->peak[t] / d->bw; /* the ridge */
        }
    d->x = (fc_axis){.log = true};
    d->y = (fc_axis){.log = true};
    fc_axis_fit(&d->x, xs, nx);
    fc_axis_fit(&d->y, ys, ny);
    free(xs);
    free(ys);
}

/* Peak P and bandwidth B (per second) in the ranges: the slope from where it enters
 * (the left edge, or the bottom), the ridge when inside, the right edge. */
static fc_roof roof_of(double P, double B, const fc_axis *x, const fc_axis *y)
{
    fc_roof r = {0};
    if (B <= 0) {
        r = (fc_roof){2, {x->lo, x->hi}, {P, P}};
        return r;
    }
    double ridge = P / B, x0 = x->lo, y0 = fmin(P, B * x0);
    if (B * x0 < y->lo) { /* the slope enters through the bottom */
        x0 = y->lo / B;
        y0 = y->lo;
    }
    r.x[r.n] = x0;
    r.y[r.n++] = y0;
    if (ridge > x0 && ridge < x->hi) {
        r.x[r.n] = ridge;
        r.y[r.n++] = P;
    }
    r.x[r.n] = x->hi;
    r.y[r.n++] = fmin(P, B * x->hi);
    return r;
}

void fc_roofline_analyse(fc_roofline_data *d)
{
    roofline_ceilings(d);
    roofline_ranges(d);
    for (int t = 0; t < FC_NDTYPES; t++)
        if (d->used[t] && d->peak[t] > 0) d->roof[t] = roof_of(d->peak[t] * 1e9, d->bw * 1e9, &d->x, &d->y);
}

void fc_roofline_free(fc_roofline_data *d)
{
    free(d->rec);
    memset(d, 0, sizeof *d);
}
