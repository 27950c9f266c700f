/* compare.c — see compare.h. */
#include "compare.h"
#include "crossing.h"
#include "format.h"
#include "jsonfile.h"
#include "kind.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ a grid of cells */

#define NCOLS 14
typedef struct grid {
    char *cell[NCOLS];
} grid_row;

typedef struct table {
    grid_row *rows;
    int n, cap, ncols;
    bool right[NCOLS];
} table;

static void add_row(table *t, const char *const *cells)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        t->rows = fc_xrealloc(t->rows, (size_t)t->cap * sizeof *t->rows);
    }
    for (int c = 0; c < t->ncols; c++) t->rows[t->n].cell[c] = fc_xstrdup(cells[c] ? cells[c] : "");
    t->n++;
}

static void free_table(table *t)
{
    for (int r = 0; r < t->n; r++)
        for (int c = 0; c < t->ncols; c++) free(t->rows[r].cell[c]);
    free(t->rows);
}

/* display width of UTF-8 text (one column per code point) */
static int width(const char *s)
{
    int w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
    return w;
}

static void md_cell(fc_str *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|') fc_str_add(b, "\\|");
        else if (*s == '\n')
            fc_str_add(b, " ");
        else
            fc_str_addf(b, "%c", *s);
    }
}

/* row 0 is the header; sep_before: a rule before that row (the geometric mean) */
static void render(fc_str *b, const table *t, fc_compare_format f, int sep_before)
{
    int w[NCOLS] = {0};
    for (int r = 0; r < t->n; r++)
        for (int c = 0; c < t->ncols; c++)
            if (width(t->rows[r].cell[c]) > w[c]) w[c] = width(t->rows[r].cell[c]);
    for (int r = 0; r < t->n; r++) {
        if (f == FC_COMPARE_MD) {
            fc_str_add(b, "|");
            for (int c = 0; c < t->ncols; c++) {
                fc_str_add(b, " ");
                md_cell(b, t->rows[r].cell[c]);
                fc_str_add(b, " |");
            }
            fc_str_add(b, "\n");
            if (r == 0) {
                fc_str_add(b, "|");
                for (int c = 0; c < t->ncols; c++) fc_str_add(b, t->right[c] ? "---:|" : "---|");
                fc_str_add(b, "\n");
            }
            continue;
        }
        if (r == sep_before || r == 1) {
            for (int c = 0; c < t->ncols; c++) {
                for (int k = 0; k < w[c]; k++) fc_str_add(b, "-");
                fc_str_add(b, c + 1 < t->ncols ? "  " : "\n");
            }
        }
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->rows[r].cell[c];
            int pad = w[c] - width(s);
            if (t->right[c]) fc_str_addf(b, "%*s%s", pad, "", s);
            else
                fc_str_addf(b, "%s%*s", s, c + 1 < t->ncols ? pad : 0, "");
            fc_str_add(b, c + 1 < t->ncols ? "  " : "\n");
        }
    }
}

/* ------------------------------------------------------------------ cells */

/* The speedup compared (fc_record_fusion_speedup): the fusion split, so marked, where
 * the record has a control. */
static void ci_text(const fc_record *r, char *buf, size_t n)
{
    const fc_ratio_ci *s = fc_record_fusion_speedup(r);
    if (r->status != FC_STATUS_OK) snprintf(buf, n, "%s", fc_status_name(r->status));
    else
        snprintf(buf, n, "%.3fx [%.3f, %.3f]%s", s->ratio, s->lo, s->hi, fc_record_fusion_counts(r) ? " fusion" : "");
}

static void ms_text(const fc_record *r, fc_variant v, char *buf, size_t n)
{
    if (r->status != FC_STATUS_OK) snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.4g", r->v[v].lat.median);
}

static const char *decision_of(const fc_record *r)
{
    return r->status == FC_STATUS_OK ? fc_decision_name(r->decision) : fc_status_name(r->status);
}

static void doc_desc(fc_str *b, const char *side, const char *path, const fc_doc *d)
{
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(d->host, "devices");
    const char *model = fc_json_str(cJSON_GetObjectItemCaseSensitive(devs, "cpu"), "model", NULL);
    const char *gpu = fc_json_str(cJSON_GetObjectItemCaseSensitive(devs, "cuda"), "name", NULL);
    fc_str_addf(b, "%s: %s (%d records; host %s%s%s%s%s; fusecal %s; %s)", side, path, d->n,
                fc_json_str(d->host, "hostname", "?"), model ? ", " : "", model ? model : "", gpu ? ", " : "",
                gpu ? gpu : "", d->tool_version, d->created);
}

/* the header and one row per matched pair */
static void pair_rows(table *t, const fc_compare *cmp, fc_match_by by)
{
    int c0 = by == FC_MATCH_PROBLEM ? 1 : 0; /* an extra backend column */
    const char *head[NCOLS] = {"pattern", c0 ? "A backend" : "backend"};
    int k = 2;
    if (c0) head[k++] = "B backend";
    const char *rest[] = {"dtype",
                          "dims",
                          "A unfused ms",
                          "A fused ms",
                          "B unfused ms",
                          "B fused ms",
                          "A speedup [95% CI]",
                          "B speedup [95% CI]",
                          "B/A",
                          "fuse A -> B",
                          "flip"};
    for (size_t i = 0; i < FC_ARRAY_LEN(rest); i++) head[k++] = rest[i];
    for (int c = 4 + c0; c <= 7 + c0; c++) t->right[c] = true; /* latencies */
    t->right[10 + c0] = true;                                  /* B/A; CIs read better left-aligned */
    add_row(t, head);
    for (int i = 0; i < cmp->n; i++) {
        const fc_compare_row *r = &cmp->rows[i];
        char dims[256], ua[32], fa[32], ub[32], fb[32], ca[96], cb[96], ch[48] = "-", dec[64];
        fc_format_dims(&r->a->prob, dims, sizeof dims);
        ms_text(r->a, FC_UNFUSED, ua, sizeof ua);
        ms_text(r->a, FC_FUSED, fa, sizeof fa);
        ms_text(r->b, FC_UNFUSED, ub, sizeof ub);
        ms_text(r->b, FC_FUSED, fb, sizeof fb);
        ci_text(r->a, ca, sizeof ca);
        ci_text(r->b, cb, sizeof cb);
        if (r->both_ok) snprintf(ch, sizeof ch, "%.3fx%s", r->speedup_change, r->shift ? " *" : "");
        snprintf(dec, sizeof dec, "%s -> %s", decision_of(r->a), decision_of(r->b));
        const char *cells[NCOLS];
        k = 0;
        cells[k++] = r->a->prob.pat->name;
        cells[k++] = r->a->backend;
        if (c0) cells[k++] = r->b->backend;
        const char *more[] =
            {fc_dtype_name(r->a->prob.dtype), dims, ua, fa, ub, fb, ca, cb, ch, dec, r->flip ? "FLIP" : ""};
        for (size_t m = 0; m < FC_ARRAY_LEN(more); m++) cells[k++] = more[m];
        add_row(t, cells);
    }
}

/* the geometric-mean row */
static void geo_row(table *t, const fc_compare *cmp, fc_match_by by)
{
    char label[64], ua[48] = "-", fa[48] = "-", ga[48] = "-", gb[48] = "-", gc[48] = "-", flips[48];
    snprintf(label, sizeof label, "geometric mean (%d)", cmp->ngeo);
    if (cmp->ngeo) {
        snprintf(ua, sizeof ua, "B/A %.3fx", cmp->geo_unfused);
        snprintf(fa, sizeof fa, "B/A %.3fx", cmp->geo_fused);
        snprintf(ga, sizeof ga, "%.3fx", cmp->geo_a);
        snprintf(gb, sizeof gb, "%.3fx", cmp->geo_b);
        snprintf(gc, sizeof gc, "%.3fx", cmp->geo_change);
    }
    snprintf(flips, sizeof flips, "%d flip%s", cmp->flips, cmp->flips == 1 ? "" : "s");
    const char *cells[NCOLS] = {0};
    int k = 0;
    cells[k++] = label;
    cells[k++] = "";
    if (by == FC_MATCH_PROBLEM) cells[k++] = "";
    const char *rest[] = {"", "", "", "", ua, fa, ga, gb, gc, "", flips};
    for (size_t m = 0; m < FC_ARRAY_LEN(rest); m++) cells[k++] = rest[m];
    add_row(t, cells);
}

/* the two documents and the ways their machines, libraries and settings differ */
static void text_head(fc_str *s, const fc_doc *a, const fc_doc *b, const char *an, const char *bn, bool md)
{
    if (md) fc_str_add(s, "## fusecal compare\n\n- ");
    doc_desc(s, "A", an, a);
    fc_str_add(s, md ? "\n- " : "\n");
    doc_desc(s, "B", bn, b);
    fc_str_add(s, "\n");
    char notes[FC_MAX_NOTES][320];
    int nn = fc_doc_differences(a, b, "A", "B", notes, FC_MAX_NOTES);
    for (int i = 0; i < nn; i++) fc_str_addf(s, "%snote: %s\n", md ? "- " : "", notes[i]);
    fc_str_add(s, "\n");
}

/* the counts, and the records only one side has */
static void text_tail(fc_str *s, const fc_compare *cmp, bool md)
{
    fc_str_addf(s,
                "\n%d matched; speedup B/A: %d higher, %d lower with non-overlapping intervals (*), %d decision "
                "flip%s",
                cmp->n, cmp->up, cmp->down, cmp->flips, cmp->flips == 1 ? "" : "s");
    if (cmp->ngeo)
        fc_str_addf(s, "; geometric mean of fused latency B/A %.3fx, unfused B/A %.3fx", cmp->geo_fused,
                    cmp->geo_unfused);
    fc_str_add(s, "\n");
    for (int side = 0; side < 2; side++) {
        int n = side ? cmp->nb : cmp->na;
        const fc_record **only = side ? cmp->only_b : cmp->only_a;
        if (!n) continue;
        fc_str_addf(s, "\n%sonly in %s (%d):\n", md ? "### " : "", side ? "B" : "A", n);
        if (md) fc_str_add(s, "\n");
        for (int i = 0; i < n; i++) {
            char key[320];
            fc_record_key(only[i], FC_MATCH_PROBLEM_BACKEND, key, sizeof key);
            fc_str_addf(s, "%s%s\n", md ? "- " : "  ", key);
        }
    }
}

static char *compare_text(const fc_compare *cmp, const fc_doc *a, const fc_doc *b, const char *an, const char *bn,
                          fc_match_by by, fc_compare_format f)
{
    fc_str s = {0};
    bool md = f == FC_COMPARE_MD;
    text_head(&s, a, b, an, bn, md);
    table t = {.ncols = by == FC_MATCH_PROBLEM ? 14 : 13};
    pair_rows(&t, cmp, by);
    int geo_at = t.n;
    geo_row(&t, cmp, by);
    render(&s, &t, f, geo_at);
    free_table(&t);
    text_tail(&s, cmp, md);
    fc_crossing_compare_text(&s, a, b, by, md);
    return s.s;
}

/* key: [ci.lo, ci.hi] */
static void add_interval(cJSON *o, const char *key, const fc_ratio_ci *ci)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    cJSON_AddItemToArray(a, fc_json_num_item(ci->lo));
    cJSON_AddItemToArray(a, fc_json_num_item(ci->hi));
}

static cJSON *side_json(const fc_record *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddStringToObject(o, "status", fc_status_name(r->status));
    if (r->status == FC_STATUS_OK) {
        fc_json_add_num(o, "unfused_latency_ms", r->v[FC_UNFUSED].lat.median);
        fc_json_add_num(o, "fused_latency_ms", r->v[FC_FUSED].lat.median);
        fc_json_add_num(o, "speedup", r->speedup.ratio);
        add_interval(o, "ci95", &r->speedup);
        cJSON_AddStringToObject(o, "decision", fc_decision_name(r->decision));
        if (r->has_control) {
            fc_json_add_num(o, "speedup_fusion", r->split_fusion.ratio);
            add_interval(o, "ci95_fusion", &r->split_fusion);
        }
    }
    return o;
}

static char *compare_json(const fc_compare *cmp, const fc_doc *a, const fc_doc *b, const char *an, const char *bn,
                          fc_match_by by)
{
    cJSON *o = fc_kind_document(FC_KIND_compare); /* schemas/compare.schema.json */
    cJSON_AddStringToObject(o, "a", an);
    cJSON_AddStringToObject(o, "b", bn);
    cJSON_AddStringToObject(o, "by", by == FC_MATCH_PROBLEM ? "problem" : "problem,backend");
    char notes[FC_MAX_NOTES][320];
    int nn = fc_doc_differences(a, b, "A", "B", notes, FC_MAX_NOTES);
    cJSON *nj = cJSON_AddArrayToObject(o, "notes");
    for (int i = 0; i < nn; i++) cJSON_AddItemToArray(nj, cJSON_CreateString(notes[i]));
    cJSON *rows = cJSON_AddArrayToObject(o, "rows");
    for (int i = 0; i < cmp->n; i++) {
        const fc_compare_row *r = &cmp->rows[i];
        cJSON *j = cJSON_CreateObject();
        char ps[256];
        fc_problem_string(&r->a->prob, ps, sizeof ps);
        cJSON_AddStringToObject(j, "problem", ps);
        cJSON_AddStringToObject(j, "pattern", r->a->prob.pat->name);
        cJSON_AddItemToObject(j, "a", side_json(r->a));
        cJSON_AddItemToObject(j, "b", side_json(r->b));
        if (r->both_ok) {
            fc_json_add_num(j, "speedup_change", r->speedup_change);
            fc_json_add_num(j, "fused_latency_ratio", r->fused_ratio);
            fc_json_add_num(j, "unfused_latency_ratio", r->unfused_ratio);
            cJSON_AddStringToObject(j, "shift", r->shift > 0 ? "higher" : r->shift < 0 ? "lower" : "overlap");
        }
        cJSON_AddBoolToObject(j, "flip", r->flip);
        cJSON_AddItemToArray(rows, j);
    }
    cJSON *g = cJSON_AddObjectToObject(o, "geomean");
    cJSON_AddNumberToObject(g, "records", cmp->ngeo);
    if (cmp->ngeo) {
        fc_json_add_num(g, "speedup_a", cmp->geo_a);
        fc_json_add_num(g, "speedup_b", cmp->geo_b);
        fc_json_add_num(g, "speedup_change", cmp->geo_change);
        fc_json_add_num(g, "fused_latency_ratio", cmp->geo_fused);
        fc_json_add_num(g, "unfused_latency_ratio", cmp->geo_unfused);
    }
    cJSON_AddNumberToObject(o, "flips", cmp->flips);
    for (int side = 0; side < 2; side++) {
        cJSON *arr = cJSON_AddArrayToObject(o, side ? "only_b" : "only_a");
        int n = side ? cmp->nb : cmp->na;
        for (int i = 0; i < n; i++) {
            char key[320];
            const fc_record *r = side ? cmp->only_b[i] : cmp->only_a[i];
            fc_record_key(r, FC_MATCH_PROBLEM, key, sizeof key);
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "problem", key);
            cJSON_AddStringToObject(x, "backend", r->backend);
            cJSON_AddItemToArray(arr, x);
        }
    }
    cJSON_AddItemToObject(o, "crossings", fc_crossing_compare_json(a, b, by));
    char *text = fc_add_newline(cJSON_Print(o));
    cJSON_Delete(o);
    return text;
}

char *fc_compare_render(const fc_compare *cmp, const fc_doc *a, const fc_doc *b, const char *an, const char *bn,
                        fc_match_by by, fc_compare_format f)
{
    return f == FC_COMPARE_JSON ? compare_json(cmp, a, b, an, bn, by) : compare_text(cmp, a, b, an, bn, by, f);
}
