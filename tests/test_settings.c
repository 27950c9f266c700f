/* test_settings.c — the settings table (src/core/settings.h) against the bounds of
 * schemas/calibration.schema.json ($defs/settings, $defs/stop) and of the sweep
 * files' stop rule (schemas/catalogue.schema.json): the table and the schemas must
 * say the same, the command line must ask only what a document may hold, and the
 * record reader must bound what it reads. */
#include "jsonfile.h"
#include "record.h"
#include "settings.h"
#include "test.h"

#include <limits.h>

/* The number schema of a property: through a "$ref" to "#/$defs/...", and the
 * numeric branch of an "anyOf" (a threshold is a number or "catalogue"). */
static const cJSON *number_schema(const cJSON *root, const cJSON *prop)
{
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(prop, "$ref");
    if (cJSON_IsString(ref) && !strncmp(ref->valuestring, "#/$defs/", 8))
        return number_schema(root, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "$defs"),
                                                                    ref->valuestring + 8));
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(prop, "anyOf");
    for (const cJSON *b = any ? any->child : NULL; b; b = b->next)
        if (cJSON_GetObjectItemCaseSensitive(b, "type")) return number_schema(root, b);
    return prop;
}

typedef struct range {
    bool found, integer, min_excluded;
    double min, max;
} range;

static range schema_range(const cJSON *root, const cJSON *props, const char *key)
{
    range r = {.min = -INFINITY, .max = INFINITY};
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(props, key);
    if (!p) return r;
    p = number_schema(root, p);
    r.found = true;
    r.integer = !strcmp(fc_json_str(p, "type", ""), "integer");
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(p, "minimum"),
                *xlo = cJSON_GetObjectItemCaseSensitive(p, "exclusiveMinimum");
    if (cJSON_IsNumber(lo)) r.min = lo->valuedouble;
    if (cJSON_IsNumber(xlo)) {
        r.min = xlo->valuedouble;
        r.min_excluded = true;
    }
    r.max = fc_json_num(p, "maximum", INFINITY);
    return r;
}

static const cJSON *defs_props(const cJSON *root, const char *def)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "$defs"), def);
    return cJSON_GetObjectItemCaseSensitive(d, "properties");
}

/* Every setting's document range is the calibration schema's, exactly. */
static void table_matches_calibration_schema(void)
{
    cJSON *root = fc_json_embedded("schemas/calibration.schema.json");
    for (int i = 0; i < FC_NSETTINGS; i++) {
        const fc_setting *s = &fc_settings_table[i];
        range r = schema_range(root, defs_props(root, s->in_stop ? "stop" : "settings"), s->key);
        CHECK_MSG(r.found, "setting '%s' is not in the schema's %s", s->key, s->in_stop ? "stop" : "settings");
        if (!r.found) continue;
        CHECK_MSG(r.integer == s->integer, "'%s': integer in the table %d, in the schema %d", s->key, s->integer,
                  r.integer);
        CHECK_MSG(r.min == s->min && r.min_excluded == s->min_excluded,
                  "'%s': minimum %g%s in the table, %g%s in the schema", s->key, s->min,
                  s->min_excluded ? " (excluded)" : "", r.min, r.min_excluded ? " (excluded)" : "");
        CHECK_MSG(r.max == s->max, "'%s': maximum %g in the table, %g in the schema", s->key, s->max, r.max);
    }
    cJSON_Delete(root);
}

/* Every numeric property of settings and stop has a row: a new one cannot go unbounded. */
static void every_schema_number_has_a_row(void)
{
    cJSON *root = fc_json_embedded("schemas/calibration.schema.json");
    const char *defs[] = {"settings", "stop"};
    for (int d = 0; d < 2; d++) {
        const cJSON *props = defs_props(root, defs[d]);
        CHECK(props != NULL);
        for (const cJSON *p = props ? props->child : NULL; p; p = p->next) {
            const char *type = fc_json_str(number_schema(root, p), "type", "");
            if (strcmp(type, "number") && strcmp(type, "integer")) continue;
            bool row = false;
            for (int i = 0; i < FC_NSETTINGS; i++)
                row |= !strcmp(fc_settings_table[i].key, p->string) && fc_settings_table[i].in_stop == (d == 1);
            CHECK_MSG(row, "schema property %s/%s has no row in the settings table", defs[d], p->string);
        }
    }
    cJSON_Delete(root);
}

/* The command line asks only what a document may hold; defaults are askable. */
static void command_line_within_document(void)
{
    for (int i = 0; i < FC_NSETTINGS; i++) {
        const fc_setting *s = &fc_settings_table[i];
        CHECK_MSG(s->ask_min <= s->ask_max, "'%s': empty command-line range", s->key);
        CHECK_MSG(fc_setting_in_range((fc_setting_id)i, s->ask_min) &&
                      fc_setting_in_range((fc_setting_id)i, s->ask_max),
                  "'%s': command-line range [%g, %g] leaves the document's", s->key, s->ask_min, s->ask_max);
        if (!isnan(s->def) && s->def != 0)
            CHECK_MSG(s->def >= s->ask_min && s->def <= s->ask_max, "'%s': default %g out of range", s->key, s->def);
        if (s->integer) CHECK_MSG(s->max <= INT_MAX, "'%s': integer maximum %g beyond an int", s->key, s->max);
    }
}

/* A sweep file's stop rule always makes a document the calibration schema accepts. */
static void sweep_stop_within_document(void)
{
    cJSON *root = fc_json_embedded("schemas/catalogue.schema.json");
    const cJSON *props = NULL;
    for (const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "$defs")->child; d && !props; d = d->next)
        if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d, "properties"), "max_time_s"))
            props = cJSON_GetObjectItemCaseSensitive(d, "properties");
    CHECK(props != NULL);
    int checked = 0;
    for (int i = 0; props && i < FC_NSETTINGS; i++) {
        const fc_setting *s = &fc_settings_table[i];
        range r = schema_range(root, props, s->key);
        if (!r.found) continue;
        checked++;
        bool lo_ok = r.min > s->min || (r.min == s->min && (r.min_excluded || !s->min_excluded));
        CHECK_MSG(lo_ok && r.max <= s->max, "sweep stop '%s' allows [%g, %g], a document only [%g, %g]", s->key, r.min,
                  r.max, s->min, s->max);
    }
    CHECK_MSG(checked >= 5, "only %d stop fields found in the catalogue schema", checked);
    cJSON_Delete(root);
}

/* The record reader bounds integer settings by the table, whatever the input. */
static void reader_bounds_integers(void)
{
    cJSON *o = cJSON_Parse("{\"threads\": 1e12, \"rounds\": -5, \"target_sample_s\": 1}");
    CHECK(fc_setting_read_int(o, FC_SET_THREADS, 0) == FC_MAX_THREADS);
    CHECK(fc_setting_read_int(o, FC_SET_ROUNDS, 3) == 1);
    CHECK(fc_setting_read_int(o, FC_SET_MIN_SAMPLES, 10) == 10); /* absent */
    cJSON_Delete(o);
}

/* The defaults the record code starts from are the table's. */
static void defaults_from_table(void)
{
    fc_settings s;
    fc_settings_defaults(&s);
    CHECK(s.stop.min_samples == fc_setting_default(FC_SET_MIN_SAMPLES));
    CHECK(s.stop.max_time == fc_setting_default(FC_SET_MAX_TIME));
    CHECK(s.rounds == fc_setting_default(FC_SET_ROUNDS));
    CHECK(s.target_sample == fc_setting_default(FC_SET_TARGET_SAMPLE));
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(table_matches_calibration_schema), T(every_schema_number_has_a_row), T(command_line_within_document),
        T(sweep_stop_within_document),       T(reader_bounds_integers),        T(defaults_from_table),
    };
    return t_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
