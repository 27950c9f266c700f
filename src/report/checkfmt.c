/* checkfmt.c — see checkfmt.h. */
#include "checkfmt.h"
#include "format.h"
#include "host_summary.h"
#include "jsonfile.h"
#include "kind.h"
#include "svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int severity(fc_verdict v)
{
    static const int rank[FC_NVERDICTS] = {
        [FC_VERDICT_MISSING] = 0,         [FC_VERDICT_FAILED_VERIFICATION] = 1,
        [FC_VERDICT_BELOW_THRESHOLD] = 2, [FC_VERDICT_REGRESSED] = 3,
        [FC_VERDICT_INCONCLUSIVE] = 4,    [FC_VERDICT_SKIPPED] = 5,
        [FC_VERDICT_IMPROVED] = 6,        [FC_VERDICT_PASS] = 7,
    };
    return rank[v];
}

int *fc_check_order(const fc_check_result *c)
{
    int *ord = fc_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *ord);
    int k = 0;
    for (int s = 0; s < FC_NVERDICTS; s++)
        for (int i = 0; i < c->n; i++)
            if (severity(c->items[i].verdict) == s) ord[k++] = i;
    return ord;
}

static const fc_record *rec_of(const fc_check_item *it) { return it->cur ? it->cur : it->base; }

static bool item_fails(const fc_check_result *c, const fc_check_item *it)
{
    return fc_verdict_fails(it->verdict, c->strict);
}

static int nfailing(const fc_check_result *c)
{
    int n = 0;
    for (int i = 0; i < c->n; i++) n += item_fails(c, &c->items[i]);
    return n;
}

/* "3 regressed, 1 inconclusive, 10 pass" (failing ones in bold for markdown) */
static void counts_text(fc_str *b, const fc_check_result *c, bool md)
{
    static const fc_verdict order[] = {FC_VERDICT_MISSING,         FC_VERDICT_FAILED_VERIFICATION,
                                       FC_VERDICT_BELOW_THRESHOLD, FC_VERDICT_REGRESSED,
                                       FC_VERDICT_INCONCLUSIVE,    FC_VERDICT_SKIPPED,
                                       FC_VERDICT_IMPROVED,        FC_VERDICT_PASS};
    int k = 0;
    for (size_t i = 0; i < FC_ARRAY_LEN(order); i++) {
        int n = c->count[order[i]];
        if (!n) continue;
        bool bold = md && fc_verdict_fails(order[i], c->strict);
        fc_str_addf(b, "%s%s%d %s%s", k++ ? ", " : "", bold ? "**" : "", n, fc_verdict_name(order[i]),
                    bold ? "**" : "");
    }
    if (!k) fc_str_add(b, "no records");
}

static void ci_cell(fc_str *b, const fc_record *r)
{
    if (!r) fc_str_add(b, "-");
    else if (r->status != FC_STATUS_OK)
        fc_str_addf(b, "%s", fc_status_name(r->status));
    else {
        const fc_ratio_ci *s = fc_record_fusion_speedup(r);
        fc_str_addf(b, "%.3fx [%.3f, %.3f]%s", s->ratio, s->lo, s->hi, fc_record_fusion_counts(r) ? " (fusion)" : "");
    }
}

/* the speedup check judged, for the JUnit failure text; or why there is none */
static void junit_speedup(fc_str *b, const fc_record *r, const char *none)
{
    if (r && r->status == FC_STATUS_OK) {
        const fc_ratio_ci *s = fc_record_fusion_speedup(r);
        fc_str_addf(b, "%.4g [%.4g, %.4g]", s->ratio, s->lo, s->hi);
    } else
        fc_str_add(b, r ? fc_status_name(r->status) : none);
}

static void md_text(fc_str *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '|') fc_str_add(b, "\\|");
        else if (*p == '\n' || *p == '\r')
            fc_str_add(b, " ");
        else if (*p == '<')
            fc_str_add(b, "&lt;");
        else if (*p == '>')
            fc_str_add(b, "&gt;");
        else if (*p == '`')
            fc_str_add(b, "'");
        else
            fc_str_addf(b, "%c", *p);
    }
}

static void doc_line(fc_str *b, const fc_doc *d)
{
    fc_host_summary h;
    fc_host_summary_read(d->host, &h);
    fc_str_addf(b, "fusecal %s, %s, host ", d->tool_version, d->created);
    md_text(b, h.hostname ? h.hostname : "?");
    if (h.cpu_model) {
        fc_str_add(b, ", ");
        md_text(b, h.cpu_model);
    }
    if (h.gpu_name) {
        fc_str_add(b, ", ");
        md_text(b, h.gpu_name);
    }
    fc_str_addf(b, ", %d records%s", d->n, d->complete ? "" : ", incomplete");
    fc_host_summary_free(&h);
}

char *fc_check_markdown(const fc_check_result *c, const fc_check_info *in)
{
    fc_str b = {0};
    bool fail = fc_check_exit_code(c) != FC_EXIT_OK;
    fc_str_addf(&b, "## fusecal check: %s\n\n", in->interrupted ? "INTERRUPTED" : fail ? "FAIL" : "PASS");
    counts_text(&b, c, true);
    fc_str_addf(&b, " (%d record%s", c->n, c->n == 1 ? "" : "s");
    if (c->have_base) fc_str_addf(&b, "; %d in both baseline and current", c->matched);
    if (c->have_base && c->only_current) fc_str_addf(&b, "; %d not in the baseline", c->only_current);
    fc_str_add(&b, ")\n\n");
    if (in->baseline) {
        fc_str_add(&b, "- baseline: `");
        md_text(&b, in->baseline);
        fc_str_add(&b, "` (");
        if (in->base_doc) doc_line(&b, in->base_doc);
        fc_str_add(&b, ")\n");
    }
    fc_str_add(&b, "- current: ");
    if (in->current) {
        fc_str_add(&b, "`");
        md_text(&b, in->current);
        fc_str_add(&b, "`");
    } else {
        fc_str_add(&b, "measured now with the baseline's settings");
    }
    if (in->cur_doc) {
        fc_str_add(&b, " (");
        doc_line(&b, in->cur_doc);
        fc_str_add(&b, ")");
    }
    fc_str_add(&b, "\n- thresholds: ");
    if (in->thresholds) {
        fc_str_add(&b, "`");
        md_text(&b, in->thresholds);
        fc_str_add(&b, "`\n");
    } else {
        fc_str_add(&b, "none (no minimum speedup)\n");
    }
    if (in->tolerance >= 0) fc_str_addf(&b, "- allowed regression: %.3g%% (--tolerance)\n", 100 * in->tolerance);
    else
        fc_str_addf(&b, "- allowed regression: %s\n",
                    in->thresholds ? "from the thresholds file (5% where it sets none)" : "5% (built-in)");
    if (c->strict) fc_str_add(&b, "- strict: inconclusive records fail\n");
    if (in->confirm > 0)
        fc_str_addf(&b, "- regressed and below-threshold records re-measured %d times (--confirm)\n", in->confirm);
    if (in->interrupted) fc_str_add(&b, "- **interrupted**: records not measured yet are missing\n");
    for (int i = 0; i < c->nnotes; i++) {
        fc_str_add(&b, "- **note**: ");
        md_text(&b, c->notes[i]);
        fc_str_add(&b, "\n");
    }
    fc_str_add(&b,
               "\n| verdict | pattern | backend | dtype | dims | baseline speedup [95% CI] | current speedup [95% CI] "
               "| change | min speedup | detail |\n|---|---|---|---|---|---|---|---:|---:|---|\n");
    int *ord = fc_check_order(c);
    for (int k = 0; k < c->n; k++) {
        const fc_check_item *it = &c->items[ord[k]];
        const fc_record *r = rec_of(it);
        char dims[256];
        fc_format_dims(&r->prob, dims, sizeof dims);
        bool f = item_fails(c, it);
        fc_str_addf(&b, "| %s%s%s | %s | ", f ? "**" : "", fc_verdict_name(it->verdict), f ? "**" : "",
                    r->prob.pat->name);
        md_text(&b, r->backend);
        fc_str_addf(&b, " | %s | ", fc_dtype_name(r->prob.dtype));
        md_text(&b, dims);
        fc_str_add(&b, " | ");
        ci_cell(&b, it->base);
        fc_str_add(&b, " | ");
        ci_cell(&b, it->cur);
        fc_str_add(&b, " | ");
        if (it->base && it->cur && it->base->status == FC_STATUS_OK && it->cur->status == FC_STATUS_OK)
            fc_str_addf(&b, "%+.1f%%",
                        100 *
                            (fc_record_fusion_speedup(it->cur)->ratio / fc_record_fusion_speedup(it->base)->ratio - 1));
        else
            fc_str_add(&b, "-");
        if (it->lim.min_speedup > 0) fc_str_addf(&b, " | %.3gx | ", it->lim.min_speedup);
        else
            fc_str_add(&b, " | - | ");
        md_text(&b, it->why);
        fc_str_add(&b, " |\n");
    }
    free(ord);
    if (c->n == 0) fc_str_add(&b, "| - | - | - | - | - | - | - | - | - | nothing to check: no records |\n");
    fc_str_add(&b, "\n");
    return b.s;
}

/* ------------------------------------------------------------------ JUnit */

static void xml_attr(fc_str *b, const char *name, const char *value)
{
    fc_str_addf(b, " %s=\"", name);
    fc_xml_escape(b, value ? value : "");
    fc_str_add(b, "\"");
}

char *fc_check_junit(const fc_check_result *c, const fc_check_info *in)
{
    fc_str b = {0};
    int failures = nfailing(c);
    /* skipped records and (unless strict) inconclusive ones: neither passes nor fails */
    int skipped = c->count[FC_VERDICT_SKIPPED] + (c->strict ? 0 : c->count[FC_VERDICT_INCONCLUSIVE]);
    char now[32];
    fc_utc_timestamp(now);
    now[19] = 0; /* JUnit timestamps carry no zone */
    fc_str_add(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fc_str_addf(&b,
                "<testsuites name=\"fusecal check\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
                "time=\"%.3f\">\n",
                c->n, failures, skipped, in->elapsed_s);
    fc_str_addf(&b,
                "<testsuite name=\"fusecal check\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" "
                "time=\"%.3f\" timestamp=\"%s\"",
                c->n, failures, skipped, in->elapsed_s, now);
    if (in->cur_doc) xml_attr(&b, "hostname", fc_json_str(in->cur_doc->host, "hostname", ""));
    fc_str_add(&b, ">\n<properties>\n");
    fc_str_add(&b, "<property");
    xml_attr(&b, "name", "baseline");
    xml_attr(&b, "value", in->baseline ? in->baseline : "none");
    fc_str_add(&b, "/>\n<property");
    xml_attr(&b, "name", "current");
    xml_attr(&b, "value", in->current ? in->current : "measured now (--run)");
    fc_str_add(&b, "/>\n<property");
    xml_attr(&b, "name", "thresholds");
    xml_attr(&b, "value", in->thresholds ? in->thresholds : "none");
    fc_str_addf(&b, "/>\n<property name=\"strict\" value=\"%s\"/>\n", c->strict ? "true" : "false");
    for (int i = 0; i < c->nnotes; i++) {
        fc_str_add(&b, "<property");
        xml_attr(&b, "name", "note");
        xml_attr(&b, "value", c->notes[i]);
        fc_str_add(&b, "/>\n");
    }
    fc_str_add(&b, "</properties>\n");
    for (int i = 0; i < c->n; i++) {
        const fc_check_item *it = &c->items[i];
        const fc_record *r = rec_of(it);
        char cls[96], name[512], ps[256];
        fc_problem_string(&r->prob, ps, sizeof ps);
        snprintf(cls, sizeof cls, "fusecal.%s.%s", r->backend, r->prob.pat->name);
        snprintf(name, sizeof name, "%s on %s", ps, r->backend);
        double t = it->cur ? it->cur->v[0].sampled_s + it->cur->v[1].sampled_s : 0;
        fc_str_add(&b, "<testcase");
        xml_attr(&b, "classname", cls);
        xml_attr(&b, "name", name);
        fc_str_addf(&b, " time=\"%.3f\">\n", isfinite(t) && t >= 0 ? t : 0);
        char msg[640];
        snprintf(msg, sizeof msg, "%s: %s", fc_verdict_name(it->verdict), it->why);
        if (item_fails(c, it)) {
            fc_str_add(&b, "<failure");
            xml_attr(&b, "type", fc_verdict_name(it->verdict));
            xml_attr(&b, "message", msg);
            fc_str_add(&b, ">");
            fc_xml_escape(&b, msg);
            fc_str_add(&b, "\nbaseline: ");
            junit_speedup(&b, it->base, "none");
            fc_str_add(&b, "\ncurrent: ");
            junit_speedup(&b, it->cur, "missing");
            fc_str_add(&b, "\nrepro: fusecal run --shape ");
            fc_xml_escape(&b, ps);
            fc_str_add(&b, " --backend ");
            fc_xml_escape(&b, r->backend);
            fc_str_add(&b, "</failure>\n");
        } else if (it->verdict == FC_VERDICT_INCONCLUSIVE || it->verdict == FC_VERDICT_SKIPPED) {
            fc_str_add(&b, "<skipped");
            xml_attr(&b, "message", msg);
            fc_str_add(&b, "/>\n");
        } else {
            fc_str_add(&b, "<system-out>");
            fc_xml_escape(&b, msg);
            fc_str_add(&b, "</system-out>\n");
        }
        fc_str_add(&b, "</testcase>\n");
    }
    fc_str_add(&b, "</testsuite>\n</testsuites>\n");
    return b.s;
}

/* ------------------------------------------------------------------ JSON */

static cJSON *ci_json(const fc_record *r)
{
    if (!r) return cJSON_CreateNull();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", fc_status_name(r->status));
    if (r->status == FC_STATUS_OK) {
        const fc_ratio_ci *s = fc_record_fusion_speedup(r);
        fc_json_add_num(o, "speedup", s->ratio);
        cJSON *ci = cJSON_AddArrayToObject(o, "ci95");
        cJSON_AddItemToArray(ci, fc_json_num_item(s->lo));
        cJSON_AddItemToArray(ci, fc_json_num_item(s->hi));
        fc_json_add_num(o, "unfused_latency_ms", r->v[FC_UNFUSED].lat.median);
        fc_json_add_num(o, "fused_latency_ms", r->v[FC_FUSED].lat.median);
        cJSON_AddStringToObject(o, "decision", fc_decision_name(r->decision));
    } else if (r->reason[0]) {
        cJSON_AddStringToObject(o, "reason", r->reason);
    }
    return o;
}

static cJSON *source_json(const char *path, const fc_doc *d)
{
    cJSON *o = cJSON_CreateObject();
    if (path) cJSON_AddStringToObject(o, "file", path);
    else
        cJSON_AddNullToObject(o, "file");
    if (d) {
        cJSON_AddStringToObject(o, "fusecal_version", d->tool_version);
        cJSON_AddStringToObject(o, "created_utc", d->created);
        cJSON_AddStringToObject(o, "hostname", fc_json_str(d->host, "hostname", ""));
        cJSON_AddNumberToObject(o, "records", d->n);
        cJSON_AddBoolToObject(o, "complete", d->complete);
    }
    return o;
}

char *fc_check_json(const fc_check_result *c, const fc_check_info *in)
{
    cJSON *o = fc_kind_document(FC_KIND_check); /* schemas/check.schema.json */
    int code = in->interrupted ? FC_EXIT_INTERRUPTED : fc_check_exit_code(c);
    cJSON_AddStringToObject(o, "result", code == FC_EXIT_OK ? "pass" : code == FC_EXIT_FAIL ? "fail" : "interrupted");
    cJSON_AddNumberToObject(o, "exit_code", code);
    cJSON_AddBoolToObject(o, "strict", c->strict);
    cJSON_AddBoolToObject(o, "interrupted", in->interrupted);
    cJSON_AddItemToObject(o, "baseline",
                          in->baseline || in->base_doc ? source_json(in->baseline, in->base_doc) : cJSON_CreateNull());
    cJSON *cur = source_json(in->current, in->cur_doc);
    cJSON_AddBoolToObject(cur, "measured_now", in->current == NULL);
    cJSON_AddItemToObject(o, "current", cur);
    if (in->thresholds) cJSON_AddStringToObject(o, "thresholds", in->thresholds);
    else
        cJSON_AddNullToObject(o, "thresholds");
    cJSON *counts = cJSON_AddObjectToObject(o, "counts");
    for (int v = 0; v < FC_NVERDICTS; v++) cJSON_AddNumberToObject(counts, fc_verdict_name((fc_verdict)v), c->count[v]);
    cJSON_AddNumberToObject(o, "records", c->n);
    cJSON_AddNumberToObject(o, "matched", c->matched);
    cJSON_AddNumberToObject(o, "failing", nfailing(c));
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    for (int i = 0; i < c->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(c->notes[i]));
    cJSON *recs = cJSON_AddArrayToObject(o, "records_checked");
    int *ord = fc_check_order(c);
    for (int k = 0; k < c->n; k++) {
        const fc_check_item *it = &c->items[ord[k]];
        const fc_record *r = rec_of(it);
        cJSON *j = cJSON_CreateObject();
        char ps[256];
        fc_problem_string(&r->prob, ps, sizeof ps);
        cJSON_AddStringToObject(j, "problem", ps);
        cJSON_AddStringToObject(j, "backend", r->backend);
        cJSON_AddStringToObject(j, "pattern", r->prob.pat->name);
        cJSON_AddStringToObject(j, "device", r->device);
        cJSON_AddStringToObject(j, "dtype", fc_dtype_name(r->prob.dtype));
        cJSON_AddStringToObject(j, "verdict", fc_verdict_name(it->verdict));
        cJSON_AddBoolToObject(j, "fails", item_fails(c, it));
        cJSON_AddStringToObject(j, "why", it->why);
        cJSON_AddItemToObject(j, "baseline", ci_json(it->base));
        cJSON_AddItemToObject(j, "current", ci_json(it->cur));
        if (it->lim.min_speedup > 0) fc_json_add_num(j, "min_speedup", it->lim.min_speedup);
        else
            cJSON_AddNullToObject(j, "min_speedup");
        cJSON_AddStringToObject(j, "min_speedup_from", it->lim.min_from);
        fc_json_add_num(j, "tolerance", it->lim.tolerance);
        cJSON_AddStringToObject(j, "tolerance_from", it->lim.tol_from);
        if (it->nconfirm) {
            cJSON_AddStringToObject(j, "first_verdict", fc_verdict_name(it->first));
            cJSON *cf = cJSON_AddArrayToObject(j, "confirmations");
            for (int m = 0; m < it->nconfirm; m++) {
                const fc_ratio_ci *ci = &it->confirm[m];
                if (ci->ratio > 0) {
                    cJSON *x = cJSON_CreateObject();
                    fc_json_add_num(x, "speedup", ci->ratio);
                    cJSON *a = cJSON_AddArrayToObject(x, "ci95");
                    cJSON_AddItemToArray(a, fc_json_num_item(ci->lo));
                    cJSON_AddItemToArray(a, fc_json_num_item(ci->hi));
                    cJSON_AddItemToArray(cf, x);
                } else {
                    cJSON_AddItemToArray(cf, cJSON_CreateNull());
                }
            }
            cJSON_AddNumberToObject(j, "confirmed", it->nconfirm_failed);
        }
        cJSON_AddItemToArray(recs, j);
    }
    free(ord);
    char *text = fc_add_newline(cJSON_Print(o));
    cJSON_Delete(o);
    return text;
}
