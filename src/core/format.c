/* format.c — see format.h. */
#include "format.h"
#include "jsonfile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

fc_format fc_format_for_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    fc_format f = FC_FMT_JSON;
    if (dot && fc_format_parse(dot + 1, &f) == 0) return f;
    if (dot && !strcmp(dot, ".markdown")) return FC_FMT_MD;
    return FC_FMT_JSON;
}

void fc_format_dims(const fc_problem *p, char *buf, size_t n)
{
    const fc_family *f = fc_family_of(p->pat);
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < f->ndims && off < n; i++) {
        if (f->dims[i].derived) continue;
        /* leave out defaults that say nothing (stride=1, pad=0, causal=0, hkv=h, skv=s) */
        if (fc_problem_dim_is_default(p, i) && strcmp(f->dims[i].name, "r") && strcmp(f->dims[i].name, "s")) continue;
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%lld", off ? "," : "", f->dims[i].name, (long long)p->d[i]);
    }
    if (f->has_layout && off < n) snprintf(buf + off, n - off, ",%s", fc_layout_name(p->layout));
}

void fc_format_speedup(const fc_record *r, char *buf, size_t n)
{
    if (r->status != FC_STATUS_OK) snprintf(buf, n, "-");
    else if (r->decided_by == FC_DECIDER_FUSION) /* the split that decided beside the whole */
        snprintf(buf, n, "%.3fx [%.3f, %.3f]; fusion %.3fx [%.3f, %.3f]", r->speedup.ratio, r->speedup.lo,
                 r->speedup.hi, r->split_fusion.ratio, r->split_fusion.lo, r->split_fusion.hi);
    else
        snprintf(buf, n, "%.3fx [%.3f, %.3f]", r->speedup.ratio, r->speedup.lo, r->speedup.hi);
}

static void csv_field(fc_str *b, const char *s)
{
    bool quote = strpbrk(s, ",\"\n") != NULL;
    if (!quote) {
        fc_str_add(b, s);
        return;
    }
    fc_str_add(b, "\"");
    for (const char *p = s; *p; p++) fc_str_addf(b, "%s", *p == '"' ? "\"\"" : (char[]){*p, 0});
    fc_str_add(b, "\"");
}

static char *format_csv(const fc_doc *d)
{
    fc_str b = {0};
    fc_str_add(&b,
               "pattern,device,backend,dtype,layout,problem,status,unfused_latency_ms,fused_latency_ms,"
               "speedup,speedup_ci_lo,speedup_ci_hi,threshold,decision,memory_reduction,unfused_gflops,"
               "fused_gflops,verified,unfused_impl,fused_impl,reason,margin,rounds,stop_rule,"
               "speedup_implementation,speedup_fusion,decided_by\n");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = &d->rec[i];
        bool ok = r->status == FC_STATUS_OK;
        fc_str_addf(&b, "%s,%s,%s,%s,%s,", r->prob.pat->name, r->device, r->backend, fc_dtype_name(r->prob.dtype),
                    fc_layout_name(r->prob.layout));
        csv_field(&b, r->problem);
        fc_str_addf(&b, ",%s,", fc_status_name(r->status));
        if (ok)
            fc_str_addf(&b, "%.6g,%.6g,%.6g,%.6g,%.6g,", r->v[FC_UNFUSED].lat.median, r->v[FC_FUSED].lat.median,
                        r->speedup.ratio, r->speedup.lo, r->speedup.hi);
        else
            fc_str_add(&b, ",,,,,");
        fc_str_addf(&b, "%.6g,%s,%.6g,", r->threshold, ok ? fc_decision_name(r->decision) : "none",
                    r->traffic_reduction);
        if (ok) fc_str_addf(&b, "%.6g,%.6g,", r->v[FC_UNFUSED].gflops, r->v[FC_FUSED].gflops);
        else
            fc_str_add(&b, ",,");
        fc_str_addf(&b, "%s,", r->verified ? "true" : "false");
        csv_field(&b, r->v[FC_UNFUSED].impl.name);
        fc_str_add(&b, ",");
        csv_field(&b, r->v[FC_FUSED].impl.name);
        fc_str_add(&b, ",");
        csv_field(&b, r->reason);
        if (ok) fc_str_addf(&b, ",%.6g,%d,%s,", r->margin, r->rounds, r->stop_rule);
        else
            fc_str_add(&b, ",,,,");
        if (ok && r->has_control) fc_str_addf(&b, "%.6g,%.6g", r->split_implementation.ratio, r->split_fusion.ratio);
        else
            fc_str_add(&b, ",");
        /* which speedup the decision was made on (record.h's fc_record_decisive_speedup) */
        fc_str_addf(&b, ",%s\n", ok ? fc_word_name(&fc_decider_words, r->decided_by) : "");
    }
    return b.s ? b.s : fc_xstrdup("");
}

static void md_escape(fc_str *b, const char *s)
{
    for (const char *p = s; *p; p++) {
        if (*p == '|') fc_str_add(b, "\\|");
        else if (*p == '\n')
            fc_str_add(b, " ");
        else
            fc_str_addf(b, "%c", *p);
    }
}

static char *format_md(const fc_doc *d)
{
    fc_str b = {0};
    fc_str_addf(&b, "# fusecal calibration\n\n%s, fusecal %s (%s)%s\n\n", d->created, d->tool_version, d->git_revision,
                d->complete ? "" : " — **incomplete**");
    fc_str_add(&b,
               "| pattern | backend | dtype | dims | unfused ms | fused ms | speedup [95% CI] | traffic saved | "
               "fuse | verified |\n|---|---|---|---|---:|---:|---|---:|---|---|\n");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = &d->rec[i];
        char dims[256], sp[96];
        fc_format_dims(&r->prob, dims, sizeof dims);
        fc_format_speedup(r, sp, sizeof sp);
        fc_str_addf(&b, "| %s | %s | %s | %s | ", r->prob.pat->name, r->backend, fc_dtype_name(r->prob.dtype), dims);
        if (r->status == FC_STATUS_OK)
            fc_str_addf(&b, "%.4g | %.4g | %s | %.0f%% | %s%s | %s |\n", r->v[FC_UNFUSED].lat.median,
                        r->v[FC_FUSED].lat.median, sp, 100 * r->traffic_reduction, fc_decision_name(r->decision),
                        r->state.withheld ? " (withheld: the state moved)" : "", r->verified ? "yes" : "**no**");
        else {
            fc_str_addf(&b, "- | - | %s: ", fc_status_name(r->status));
            md_escape(&b, r->reason);
            fc_str_addf(&b, " | %.0f%% | - | %s |\n", 100 * r->traffic_reduction, r->verified ? "yes" : "**no**");
        }
    }
    return b.s;
}

static char *format_jsonl(const fc_doc *d)
{
    /* first line: the document without records; then one record per line */
    char *full = fc_doc_to_json(d);
    cJSON *root = cJSON_Parse(full);
    free(full);
    cJSON *recs = cJSON_DetachItemFromObjectCaseSensitive(root, "records");
    fc_str b = {0};
    char *head = cJSON_PrintUnformatted(root);
    fc_str_addf(&b, "%s\n", head);
    free(head);
    for (cJSON *r = recs ? recs->child : NULL; r; r = r->next) {
        char *line = cJSON_PrintUnformatted(r);
        fc_str_addf(&b, "%s\n", line);
        free(line);
    }
    cJSON_Delete(recs);
    cJSON_Delete(root);
    return b.s;
}

char *fc_format_doc(const fc_doc *d, fc_format f)
{
    switch (f) {
    case FC_FMT_JSONL: return format_jsonl(d);
    case FC_FMT_CSV: return format_csv(d);
    case FC_FMT_MD: return format_md(d);
    default: return fc_add_newline(fc_doc_to_json(d));
    }
}

void fc_print_table(FILE *out, const fc_doc *d)
{
    fprintf(out, "%-21s %-12s %-5s %-34s %10s %10s  %-25s %6s %-12s %s\n", "pattern", "backend", "dtype", "dims",
            "unfused ms", "fused ms", "speedup [95% CI]", "saved", "fuse", "check");
    for (int i = 0; i < d->n; i++) {
        const fc_record *r = &d->rec[i];
        char dims[256], sp[96];
        fc_format_dims(&r->prob, dims, sizeof dims);
        fc_format_speedup(r, sp, sizeof sp);
        if (r->status == FC_STATUS_OK)
            fprintf(out, "%-21s %-12s %-5s %-34s %10.4g %10.4g  %-25s %5.0f%% %-12s %s\n", r->prob.pat->name,
                    r->backend, fc_dtype_name(r->prob.dtype), dims, r->v[FC_UNFUSED].lat.median,
                    r->v[FC_FUSED].lat.median, sp, 100 * r->traffic_reduction, fc_decision_name(r->decision),
                    r->v[0].check.trusted && r->v[1].check.trusted ? "ok" : "untrusted");
        if (r->status == FC_STATUS_OK && r->has_control)
            fprintf(out,
                    "%-21s %-12s %-5s %-34s   split: implementation %.3fx [%.3f, %.3f] (unfused/control), fusion "
                    "%.3fx [%.3f, %.3f] (control/fused)\n",
                    "", "", "", "", r->split_implementation.ratio, r->split_implementation.lo,
                    r->split_implementation.hi, r->split_fusion.ratio, r->split_fusion.lo, r->split_fusion.hi);
        if (r->status == FC_STATUS_OK && r->state.withheld)
            fprintf(out, "%-21s %-12s %-5s %-34s   %s\n", "", "", "", "", r->reason);
        if (r->status != FC_STATUS_OK)
            fprintf(out, "%-21s %-12s %-5s %-34s %s: %s\n", r->prob.pat->name, r->backend, fc_dtype_name(r->prob.dtype),
                    dims, fc_status_name(r->status), r->reason);
    }
}
