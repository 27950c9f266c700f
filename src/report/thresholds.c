/* thresholds.c — see thresholds.h. */
#include "thresholds.h"
#include "jsonfile.h"
#include "jsonschema.h"
#include "kind.h"

#include <stdlib.h>
#include <string.h>

#define MAX_RULES 10000

bool fc_is_thresholds_json(const cJSON *root) { return fc_kind_detect(root) == &fc_kinds[FC_KIND_thresholds]; }

static bool glob_matches_a_pattern(const char *glob)
{
    for (int i = 0; i < FC_NPATTERNS; i++)
        if (fc_glob_match(glob, fc_patterns[i].name)) return true;
    return false;
}

static bool glob_matches_a_backend(const char *glob)
{
    for (int i = 0; i < FC_NBACKENDS; i++)
        if (fc_glob_match(glob, fc_backend_words.names[i])) return true;
    return false;
}

static const char *all_backend_names(void) { return fc_words_valid(&fc_backend_words); }

int fc_thresholds_check(const char *name, const cJSON *root, fc_err *e)
{
    if (!cJSON_IsObject(root)) return fc_errf(e, "%s: not a thresholds file (expected a JSON object)", name);
    if (!fc_is_thresholds_json(root))
        return fc_errf(e, "%s: not a fusecal thresholds file (expected \"schema\": \"fusecal-thresholds\")", name);
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (cJSON_IsNumber(sv) && sv->valuedouble > FC_THRESHOLDS_VERSION)
        return fc_errf(e, "%s: schema version %g is newer than this fusecal reads (%d); upgrade fusecal", name,
                       sv->valuedouble, FC_THRESHOLDS_VERSION);
    if (fc_schema_check(FC_THRESHOLDS_SCHEMA, root, name, e) != 0) return -1;
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
    if (cJSON_GetArraySize(rules) > MAX_RULES) return fc_errf(e, "%s: more than %d rules", name, MAX_RULES);
    int i = 0;
    for (const cJSON *r = rules ? rules->child : NULL; r; r = r->next, i++) {
        const char *pat = fc_json_str(r, "pattern", NULL), *be = fc_json_str(r, "backend", NULL);
        if (pat && !glob_matches_a_pattern(pat))
            return fc_errf(e, "%s: rule %d: pattern '%s' matches no pattern (valid: %s)", name, i, pat,
                           fc_pattern_names());
        if (be && !glob_matches_a_backend(be))
            return fc_errf(e, "%s: rule %d: backend '%s' matches no backend (valid: %s)", name, i, be,
                           all_backend_names());
    }
    return 0;
}

static void read_limits(const cJSON *o, fc_threshold_rule *r)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "min_speedup");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "max_regression");
    r->has_min = cJSON_IsNumber(m);
    r->min_speedup = r->has_min ? m->valuedouble : 0;
    r->has_tol = cJSON_IsNumber(t);
    r->tolerance = r->has_tol ? t->valuedouble : 0;
}

int fc_thresholds_parse(const char *name, const char *text, size_t len, fc_thresholds *t, fc_err *e)
{
    memset(t, 0, sizeof *t);
    fc_strlcpy(t->name, name, sizeof t->name);
    cJSON *root;
    if (fc_json_parse(name, text, len, &root, e) != 0) return -1;
    if (fc_thresholds_check(name, root, e) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    read_limits(cJSON_GetObjectItemCaseSensitive(root, "defaults"), &t->defaults);
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(root, "rules");
    int n = cJSON_GetArraySize(rules);
    t->rules = n ? fc_xcalloc((size_t)n, sizeof *t->rules) : NULL;
    for (const cJSON *r = rules ? rules->child : NULL; r; r = r->next) {
        fc_threshold_rule *x = &t->rules[t->n++];
        fc_strlcpy(x->pattern, fc_json_str(r, "pattern", ""), sizeof x->pattern);
        fc_strlcpy(x->backend, fc_json_str(r, "backend", ""), sizeof x->backend);
        fc_strlcpy(x->shape, fc_json_str(r, "shape", ""), sizeof x->shape);
        fc_strlcpy(x->device, fc_json_str(r, "device", ""), sizeof x->device);
        fc_strlcpy(x->dtype, fc_json_str(r, "dtype", ""), sizeof x->dtype);
        fc_strlcpy(x->layout, fc_json_str(r, "layout", ""), sizeof x->layout);
        read_limits(r, x);
    }
    cJSON_Delete(root);
    return 0;
}

int fc_thresholds_load(const char *path, fc_thresholds *t, fc_err *e)
{
    char *text;
    size_t len;
    memset(t, 0, sizeof *t);
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, e) != 0) return -1;
    int rc = fc_thresholds_parse(path, text, len, t, e);
    free(text);
    return rc;
}

void fc_thresholds_free(fc_thresholds *t)
{
    free(t->rules);
    memset(t, 0, sizeof *t);
}

void fc_shape_string(const fc_problem *p, char *buf, size_t n)
{
    const fc_family *f = fc_family_of(p->pat);
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < f->ndims && off < n; i++)
        if (fc_problem_dim_shown(p, i))
            off += (size_t)snprintf(buf + off, n - off, "%s%s=%lld", off ? "," : "", f->dims[i].name,
                                    (long long)p->d[i]);
}

static bool rule_matches(const fc_threshold_rule *x, const fc_record *r, const char *shape)
{
    if (x->pattern[0] && !fc_glob_match(x->pattern, r->prob.pat->name)) return false;
    if (x->backend[0] && !fc_glob_match(x->backend, r->backend)) return false;
    if (x->device[0] && strcmp(x->device, r->device)) return false;
    if (x->dtype[0] && strcmp(x->dtype, fc_dtype_name(r->prob.dtype))) return false;
    if (x->layout[0] && (r->prob.layout == FC_LAYOUT_NONE || strcmp(x->layout, fc_layout_name(r->prob.layout))))
        return false;
    if (x->shape[0] && !fc_glob_match(x->shape, shape)) return false;
    return true;
}

void fc_thresholds_apply(const fc_thresholds *t, const fc_record *r, fc_limits *out)
{
    memset(out, 0, sizeof *out);
    out->tolerance = FC_DEFAULT_TOLERANCE;
    fc_strlcpy(out->min_from, "none", sizeof out->min_from);
    fc_strlcpy(out->tol_from, "built-in", sizeof out->tol_from);
    if (!t) return;
    bool min_set = false, tol_set = false;
    char shape[256];
    fc_shape_string(&r->prob, shape, sizeof shape);
    for (int i = 0; i < t->n && !(min_set && tol_set); i++) {
        const fc_threshold_rule *x = &t->rules[i];
        if (!rule_matches(x, r, shape)) continue;
        if (x->has_min && !min_set) {
            out->min_speedup = x->min_speedup;
            snprintf(out->min_from, sizeof out->min_from, "rule %d", i);
            min_set = true;
        }
        if (x->has_tol && !tol_set) {
            out->tolerance = x->tolerance;
            snprintf(out->tol_from, sizeof out->tol_from, "rule %d", i);
            tol_set = true;
        }
    }
    if (!min_set && t->defaults.has_min) {
        out->min_speedup = t->defaults.min_speedup;
        fc_strlcpy(out->min_from, "defaults", sizeof out->min_from);
    }
    if (!tol_set && t->defaults.has_tol) {
        out->tolerance = t->defaults.tolerance;
        fc_strlcpy(out->tol_from, "defaults", sizeof out->tol_from);
    }
}
