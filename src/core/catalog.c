/* catalog.c — see catalog.h. */
#include "catalog.h"
#include "embedded.h"
#include "jsonfile.h"
#include "jsonschema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CATALOGUE_SCHEMA "schemas/catalogue.schema.json"
#define MAX_SWEEP_PROBLEMS 100000

static const char *const builtin_sweeps[] = {"quick", "standard", "full"};

const char *fc_sweep_names(void) { return "quick, standard, full"; }

void fc_sweep_free(fc_sweep *sw)
{
    free(sw->prob);
    memset(sw, 0, sizeof *sw);
}

static int push(const char *name, fc_sweep *sw, const fc_problem *p, fc_err *e)
{
    char a[256], b[256];
    fc_problem_string(p, a, sizeof a);
    for (int i = 0; i < sw->n; i++) {
        fc_problem_string(&sw->prob[i], b, sizeof b);
        if (!strcmp(a, b)) return 0; /* listed twice (overlapping entries): measure once */
    }
    if (sw->n >= MAX_SWEEP_PROBLEMS) return fc_errf(e, "%s: more than %d problems", name, MAX_SWEEP_PROBLEMS);
    if (sw->n == sw->cap) {
        sw->cap = sw->cap ? 2 * sw->cap : 64;
        sw->prob = fc_xrealloc(sw->prob, (size_t)sw->cap * sizeof *sw->prob);
    }
    sw->prob[sw->n++] = *p;
    return 0;
}

/* One entry: {"problems": [...]} or {"patterns": [...], "shapes": [...], "layout", "dtypes"}. */
static int parse_entry(const char *name, int idx, const cJSON *en, fc_sweep *sw, fc_err *e)
{
    fc_err pe;
    const cJSON *probs = cJSON_GetObjectItemCaseSensitive(en, "problems");
    for (const cJSON *s = probs ? probs->child : NULL; s; s = s->next) {
        fc_problem p;
        if (fc_problem_parse(s->valuestring, NULL, &p, &pe) != 0)
            return fc_errf(e, "%s: entry %d: %s", name, idx, pe.msg);
        if (push(name, sw, &p, e) != 0) return -1;
    }
    const cJSON *pats = cJSON_GetObjectItemCaseSensitive(en, "patterns");
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(en, "shapes");
    const cJSON *dtypes = cJSON_GetObjectItemCaseSensitive(en, "dtypes");
    const char *layout = fc_json_str(en, "layout", NULL);
    for (const cJSON *pn = pats ? pats->child : NULL; pn; pn = pn->next) {
        const fc_pattern *pat = fc_pattern_find(pn->valuestring);
        if (!pat)
            return fc_errf(e, "%s: entry %d: unknown pattern '%s' (valid: %s)", name, idx, pn->valuestring,
                           fc_pattern_names());
        int nd = dtypes ? cJSON_GetArraySize(dtypes) : 1;
        for (int di = 0; di < nd; di++) {
            const char *dts = dtypes ? cJSON_GetArrayItem(dtypes, di)->valuestring : "fp32";
            fc_dtype dt;
            if (fc_dtype_parse(dts, &dt) != 0) return fc_errf(e, "%s: entry %d: unknown dtype '%s'", name, idx, dts);
            for (const cJSON *sh = shapes ? shapes->child : NULL; sh; sh = sh->next) {
                fc_problem p;
                fc_problem_init(&p, pat, dt);
                uint32_t seen = 0;
                for (const cJSON *kv = sh->child; kv; kv = kv->next) {
                    char val[32];
                    if (!cJSON_IsNumber(kv) || kv->valuedouble != floor(kv->valuedouble) ||
                        fabs(kv->valuedouble) > 9e15)
                        return fc_errf(e, "%s: entry %d: dimension '%s' is not an integer", name, idx, kv->string);
                    int di = fc_problem_dim_index(&p, kv->string); /* keys regardless of case: M and m are one */
                    if (di >= 0 && (seen & (1u << di)))
                        return fc_errf(e, "%s: entry %d: dimension '%s' given twice", name, idx, kv->string);
                    if (di >= 0) seen |= 1u << di;
                    snprintf(val, sizeof val, "%lld", (long long)kv->valuedouble);
                    if (fc_problem_set(&p, kv->string, val, &pe) != 0)
                        return fc_errf(e, "%s: entry %d: %s", name, idx, pe.msg);
                }
                if (layout && fc_family_of(pat)->has_layout && fc_problem_set(&p, "layout", layout, &pe) != 0)
                    return fc_errf(e, "%s: entry %d: %s", name, idx, pe.msg);
                if (fc_problem_finish(&p, &pe) != 0) return fc_errf(e, "%s: entry %d: %s", name, idx, pe.msg);
                if (push(name, sw, &p, e) != 0) return -1;
            }
        }
    }
    return 0;
}

static int parse_entries(const char *name, const cJSON *entries, fc_sweep *sw, fc_err *e)
{
    int i = 0;
    for (const cJSON *en = entries ? entries->child : NULL; en; en = en->next, i++)
        if (parse_entry(name, i, en, sw, e) != 0) return -1;
    return 0;
}

static void parse_stop(const cJSON *st, fc_sweep *sw)
{
    if (!st) return;
    sw->has_stop = true;
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "min_samples"))) {
        sw->stop.min_samples = fc_json_int_of(k, 0);
        sw->stop_set |= FC_STOP_MIN_SAMPLES;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "min_time_s"))) {
        sw->stop.min_time = k->valuedouble;
        sw->stop_set |= FC_STOP_MIN_TIME;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "max_noise"))) {
        sw->stop.max_noise = k->valuedouble;
        sw->stop_set |= FC_STOP_MAX_NOISE;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "max_time_s"))) {
        sw->stop.max_time = k->valuedouble;
        sw->stop_set |= FC_STOP_MAX_TIME;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "max_samples"))) {
        sw->stop.max_samples = fc_json_int_of(k, 0);
        sw->stop_set |= FC_STOP_MAX_SAMPLES;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(st, "target_sample_s"))) sw->target_sample = k->valuedouble;
}

void fc_sweep_parse_stop(const void *json, fc_sweep *sw) { parse_stop(json, sw); }

void fc_sweep_apply_stop(const fc_sweep *sw, fc_stop *s, double *target_sample)
{
    if (sw->stop_set & FC_STOP_MIN_SAMPLES) s->min_samples = sw->stop.min_samples;
    if (sw->stop_set & FC_STOP_MIN_TIME) s->min_time = sw->stop.min_time;
    if (sw->stop_set & FC_STOP_MAX_NOISE) s->max_noise = sw->stop.max_noise;
    if (sw->stop_set & FC_STOP_MAX_TIME) s->max_time = sw->stop.max_time;
    if (sw->stop_set & FC_STOP_MAX_SAMPLES) s->max_samples = sw->stop.max_samples;
    if (sw->target_sample > 0 && target_sample) *target_sample = sw->target_sample;
}

static void parse_thresholds(const cJSON *th, fc_sweep *sw)
{
    for (const cJSON *t = th ? th->child : NULL; t; t = t->next) {
        const fc_pattern *pat = fc_pattern_find(t->string);
        if (pat) sw->threshold[pat->id] = t->valuedouble;
    }
}

/* Schema, then names and dims against the registry. */
int fc_catalog_check(const char *name, const void *json, fc_err *e)
{
    const cJSON *root = json;
    if (fc_schema_check(CATALOGUE_SCHEMA, root, name, e) != 0) return -1;
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (sv->valuedouble > FC_SCHEMA_VERSION)
        return fc_errf(e, "%s: schema version %g is newer than this fusecal reads (%d)", name, sv->valuedouble,
                       FC_SCHEMA_VERSION);
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(root, "thresholds");
    for (const cJSON *t = th ? th->child : NULL; t; t = t->next)
        if (!fc_pattern_find(t->string))
            return fc_errf(e, "%s: threshold for unknown pattern '%s' (valid: %s)", name, t->string,
                           fc_pattern_names());
    fc_sweep tmp = {0};
    int rc = parse_entries(name, cJSON_GetObjectItemCaseSensitive(root, "entries"), &tmp, e);
    const cJSON *sweeps = cJSON_GetObjectItemCaseSensitive(root, "sweeps");
    for (const cJSON *s = sweeps ? sweeps->child : NULL; s && rc == 0; s = s->next) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s: sweep '%s'", name, s->string);
        rc = parse_entries(sub, cJSON_GetObjectItemCaseSensitive(s, "entries"), &tmp, e);
    }
    fc_sweep_free(&tmp);
    return rc;
}

static bool is_builtin(const char *name)
{
    for (size_t i = 0; i < FC_ARRAY_LEN(builtin_sweeps); i++)
        if (!strcmp(name, builtin_sweeps[i])) return true;
    return false;
}

static bool embedded_catalogue_file(const fc_embedded_file *f)
{
    return !strncmp(f->path, "patterns/", 9) && strncmp(f->path, "patterns/networks/", 18);
}

/* The chain of sweeps a built-in sweep extends, most specific first. */
static int sweep_chain(const char *name, const char *chain[], int max)
{
    int n = 0;
    const char *cur = name;
    while (cur && n < max) {
        chain[n++] = cur;
        const char *next = NULL;
        for (const fc_embedded_file *f = fc_embedded_files; f->path; f++) {
            if (!embedded_catalogue_file(f)) continue;
            cJSON *j = fc_json_embedded(f->path);
            const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "sweeps"), cur);
            const char *ext = fc_json_str(s, "extends", NULL);
            for (size_t i = 0; ext && i < FC_ARRAY_LEN(builtin_sweeps); i++)
                if (!strcmp(ext, builtin_sweeps[i])) next = builtin_sweeps[i];
            cJSON_Delete(j);
            if (next) break;
        }
        cur = next;
    }
    return n;
}

int fc_sweep_load(const char *name, fc_sweep *sw, fc_err *e)
{
    memset(sw, 0, sizeof *sw);
    fc_stop_defaults(&sw->stop);
    fc_strlcpy(sw->name, name, sizeof sw->name);
    if (is_builtin(name)) {
        const char *chain[8];
        int nchain = sweep_chain(name, chain, 8);
        /* earliest sweep first, so a quick problem keeps its place in standard */
        for (int c = nchain - 1; c >= 0; c--)
            for (const fc_embedded_file *f = fc_embedded_files; f->path; f++) {
                if (!embedded_catalogue_file(f)) continue;
                cJSON *j = fc_json_embedded(f->path);
                const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "sweeps"),
                                                                  chain[c]);
                int rc = parse_entries(f->path, cJSON_GetObjectItemCaseSensitive(s, "entries"), sw, e);
                if (c == 0) parse_stop(cJSON_GetObjectItemCaseSensitive(s, "stop"), sw);
                parse_thresholds(cJSON_GetObjectItemCaseSensitive(j, "thresholds"), sw);
                cJSON_Delete(j);
                if (rc != 0) {
                    fc_sweep_free(sw);
                    return -1;
                }
            }
        return 0;
    }
    char *text;
    size_t len;
    if (fc_read_file(name, FC_JSON_MAX_BYTES, &text, &len, e) != 0) {
        if (!strchr(name, '/') && !strchr(name, '.'))
            return fc_errf(e, "unknown sweep '%s' (valid: %s, or a sweep file)", name, fc_sweep_names());
        return -1;
    }
    int rc = fc_sweep_parse(name, text, len, sw, e);
    free(text);
    return rc;
}

int fc_sweep_parse(const char *name, const char *text, size_t len, fc_sweep *sw, fc_err *e)
{
    memset(sw, 0, sizeof *sw);
    fc_stop_defaults(&sw->stop);
    fc_strlcpy(sw->name, name, sizeof sw->name);
    cJSON *root;
    if (fc_json_parse(name, text, len, &root, e) != 0) return -1;
    if (fc_catalog_check(name, root, e) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!entries) {
        cJSON_Delete(root);
        return fc_errf(e, "%s: a sweep file needs \"entries\" (named sweeps are for the built-in catalogue)", name);
    }
    int rc = parse_entries(name, entries, sw, e);
    parse_stop(cJSON_GetObjectItemCaseSensitive(root, "stop"), sw);
    parse_thresholds(cJSON_GetObjectItemCaseSensitive(root, "thresholds"), sw);
    cJSON_Delete(root);
    if (rc == 0 && sw->n == 0) rc = fc_errf(e, "%s: the sweep has no problems", name);
    if (rc != 0) fc_sweep_free(sw);
    return rc;
}

double fc_catalog_threshold(const fc_pattern *pat)
{
    static double cache[FC_NPATTERNS];
    static bool loaded;
    if (!loaded) {
        for (const fc_embedded_file *f = fc_embedded_files; f->path; f++) {
            if (!embedded_catalogue_file(f)) continue;
            cJSON *j = fc_json_embedded(f->path);
            const cJSON *th = cJSON_GetObjectItemCaseSensitive(j, "thresholds");
            for (const cJSON *t = th ? th->child : NULL; t; t = t->next) {
                const fc_pattern *p = fc_pattern_find(t->string);
                if (p) cache[p->id] = t->valuedouble;
            }
            cJSON_Delete(j);
        }
        loaded = true;
    }
    return cache[pat->id] > 0 ? cache[pat->id] : FC_DEFAULT_THRESHOLD;
}
