/* kind.c — see kind.h. */
#include "kind.h"
#include "jsonfile.h"
#include "jsonschema.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define FC_KIND_ROW(kname, kversion, kwhat)                          \
    [FC_KIND_##kname] = {.id = FC_KIND_##kname,                      \
                         .name = #kname,                             \
                         .tag = "fusecal-" #kname,                   \
                         .schema = "schemas/" #kname ".schema.json", \
                         .version = kversion,                        \
                         .what = kwhat},
const fc_kind fc_kinds[FC_NKINDS] = {FC_KIND_LIST(FC_KIND_ROW)};

static bool has(const cJSON *root, const char *key) { return cJSON_GetObjectItemCaseSensitive(root, key) != NULL; }

/* Documents without a "schema" member: what they hold says what they are. */
static const fc_kind *detect_by_shape(const cJSON *root)
{
    /* 'fusecal info --format json' before info documents carried their kind */
    if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "host")) &&
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "ceilings")) &&
        cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "tool")) && !has(root, "records"))
        return &fc_kinds[FC_KIND_info];
    /* the catalogue and sweep files are written by hand: schema_version and what a sweep holds */
    if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(root, "schema_version")) &&
        (has(root, "sweeps") || has(root, "entries") || has(root, "thresholds") || has(root, "stop")))
        return &fc_kinds[FC_KIND_catalogue];
    return NULL;
}

const fc_kind *fc_kind_detect(const cJSON *root)
{
    if (!cJSON_IsObject(root)) return NULL;
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!tag) return detect_by_shape(root);
    if (!cJSON_IsString(tag)) return NULL;
    for (int k = 0; k < FC_NKINDS; k++)
        if (!strcmp(tag->valuestring, fc_kinds[k].tag)) return &fc_kinds[k];
    return NULL;
}

const char *fc_kind_unknown_tag(const cJSON *root)
{
    if (fc_kind_detect(root)) return NULL;
    const char *tag = fc_json_str(root, "schema", NULL);
    return tag && !strncmp(tag, "fusecal-", 8) ? tag : NULL;
}

const fc_kind *fc_kind_find(const char *name)
{
    for (int k = 0; k < FC_NKINDS; k++)
        if (!strcmp(name, fc_kinds[k].name)) return &fc_kinds[k];
    return NULL;
}

cJSON *fc_kind_document(fc_kind_id id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "schema", fc_kinds[id].tag);
    cJSON_AddNumberToObject(o, "schema_version", fc_kinds[id].version);
    return o;
}

int fc_kind_validate(const fc_kind *k, const char *name, const cJSON *root, fc_err *e)
{
    const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
    if (cJSON_IsNumber(sv) && sv->valuedouble > k->version)
        return fc_errf(e, "%s: %s schema version %g is newer than this fusecal reads (%d); upgrade fusecal", name,
                       k->name, sv->valuedouble, k->version);
    return fc_schema_check(k->schema, root, name, e);
}

int fc_kind_read(const char *path, cJSON **root, const fc_kind **kind, fc_err *e)
{
    char *text;
    size_t len;
    *root = NULL;
    *kind = NULL;
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, e) != 0) return -1;
    int rc = strlen(text) != len ? fc_errf(e, "%s: contains a NUL byte, not JSON text", path)
                                 : fc_json_parse(path, text, len, root, e);
    free(text);
    if (rc == 0) *kind = fc_kind_detect(*root);
    return rc;
}
