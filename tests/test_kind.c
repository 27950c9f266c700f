/* test_kind.c — the document kinds (src/core/kind.h) against their schemas: each
 * kind's schema is embedded, says the kind's tag and the version this build
 * writes; the readers' version constants agree with the list; documents are told
 * apart by their kind (and older ones by their shape); the blocks the info
 * document shares with the calibration document are the same in both schemas. */
#include "catalog.h"
#include "embedded.h"
#include "jsonfile.h"
#include "kind.h"
#include "network.h"
#include "record.h"
#include "test.h"
#include "thresholds.h"

static const cJSON *at(const cJSON *o, const char *a, const char *b)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, a);
    return b ? cJSON_GetObjectItemCaseSensitive(n, b) : n;
}

/* Every kind's schema: embedded, its "schema" member the kind's tag (the
 * catalogue's files predate tags: none), its schema_version the list's. */
static void schemas_match_the_list(void)
{
    for (int k = 0; k < FC_NKINDS; k++) {
        const fc_kind *kd = &fc_kinds[k];
        CHECK(kd->id == (fc_kind_id)k && fc_kind_find(kd->name) == kd);
        CHECK_MSG(fc_embedded_find(kd->schema) != NULL, "%s is not embedded", kd->schema);
        if (!fc_embedded_find(kd->schema)) continue;
        cJSON *s = fc_json_embedded(kd->schema);
        const cJSON *props = at(s, "properties", NULL);
        const cJSON *tag = at(props, "schema", "const");
        if (k == FC_KIND_catalogue) CHECK(tag == NULL);
        else
            CHECK_MSG(cJSON_IsString(tag) && !strcmp(tag->valuestring, kd->tag), "%s: \"schema\" is not %s", kd->schema,
                      kd->tag);
        const cJSON *ver = at(props, "schema_version", "const");
        const cJSON *min = at(props, "schema_version", "minimum");
        if (ver)
            CHECK_MSG(ver->valuedouble == kd->version, "%s: schema_version %g, the list says %d", kd->schema,
                      ver->valuedouble, kd->version);
        else
            CHECK_MSG(cJSON_IsNumber(min) && min->valuedouble <= kd->version, "%s: schema_version unbounded",
                      kd->schema);
        const cJSON *req = at(s, "required", NULL);
        bool has_schema = false, has_version = false;
        for (const cJSON *r = req ? req->child : NULL; r; r = r->next) {
            has_schema |= !strcmp(r->valuestring, "schema");
            has_version |= !strcmp(r->valuestring, "schema_version");
        }
        CHECK_MSG(has_version && (has_schema || k == FC_KIND_catalogue), "%s: kind members not required", kd->schema);
        cJSON_Delete(s);
    }
    CHECK(fc_kinds[FC_KIND_calibration].version == FC_CALIBRATION_VERSION);
    CHECK(fc_kinds[FC_KIND_thresholds].version == FC_THRESHOLDS_VERSION);
    CHECK(fc_kinds[FC_KIND_catalogue].version == FC_SCHEMA_VERSION);
    CHECK(fc_kinds[FC_KIND_network].version == FC_NETWORK_VERSION);
}

static const fc_kind *detect(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    CHECK_MSG(j != NULL, "%s", json);
    const fc_kind *k = fc_kind_detect(j);
    cJSON_Delete(j);
    return k;
}

static void detection(void)
{
    for (int k = 0; k < FC_NKINDS; k++) {
        cJSON *d = fc_kind_document((fc_kind_id)k);
        CHECK_MSG(k == FC_KIND_catalogue || fc_kind_detect(d) == &fc_kinds[k], "%s", fc_kinds[k].name);
        CHECK(fc_kind_unknown_tag(d) == NULL);
        cJSON_Delete(d);
    }
    /* older documents by their shape */
    CHECK(detect("{\"tool\": {}, \"host\": {}, \"ceilings\": {}}") == &fc_kinds[FC_KIND_info]);
    CHECK(detect("{\"schema_version\": 1, \"entries\": []}") == &fc_kinds[FC_KIND_catalogue]);
    CHECK(detect("{\"schema_version\": 1, \"sweeps\": {}}") == &fc_kinds[FC_KIND_catalogue]);
    /* not fusecal documents, or of kinds this build does not know */
    CHECK(detect("{\"tool\": {}, \"host\": {}}") == NULL);
    CHECK(detect("{\"tool\": {}, \"host\": {}, \"ceilings\": {}, \"records\": []}") == NULL);
    CHECK(detect("{\"schema\": \"fusecal-calibration\"}") == &fc_kinds[FC_KIND_calibration]);
    CHECK(detect("{\"schema\": \"other-calibration\", \"schema_version\": 1, \"entries\": []}") == NULL);
    CHECK(detect("{\"schema\": 7}") == NULL);
    CHECK(detect("[1, 2]") == NULL);
    cJSON *net = cJSON_Parse("{\"schema\": \"fusecal-future\"}");
    CHECK(fc_kind_detect(net) == NULL && !strcmp(fc_kind_unknown_tag(net), "fusecal-future"));
    cJSON_Delete(net);
    CHECK(detect("{\"schema\": \"fusecal-network\", \"schema_version\": 1}") == &fc_kinds[FC_KIND_network]);
    cJSON *other = cJSON_Parse("{\"schema\": \"mine\"}");
    CHECK(fc_kind_unknown_tag(other) == NULL);
    cJSON_Delete(other);
}

/* A newer version of a kind is refused by its number, before the schema's const says so. */
static void newer_versions(void)
{
    cJSON *d = fc_kind_document(FC_KIND_info);
    cJSON_ReplaceItemInObject(d, "schema_version", cJSON_CreateNumber(fc_kinds[FC_KIND_info].version + 1));
    fc_err e;
    CHECK(fc_kind_validate(&fc_kinds[FC_KIND_info], "i.json", d, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "i.json: info schema version 2 is newer than this fusecal reads (1)");
    cJSON_Delete(d);
}

/* The info document holds the calibration document's host, tool and ceilings
 * blocks: their schemas are the same. */
static void shared_blocks(void)
{
    cJSON *cal = fc_json_embedded(fc_kinds[FC_KIND_calibration].schema);
    cJSON *inf = fc_json_embedded(fc_kinds[FC_KIND_info].schema);
    static const char *const props[] = {"host", "tool", "created_utc"};
    for (size_t i = 0; i < FC_ARRAY_LEN(props); i++)
        CHECK_MSG(cJSON_Compare(at(cal, "properties", props[i]), at(inf, "properties", props[i]), true),
                  "properties/%s differ", props[i]);
    static const char *const defs[] = {"ceilings", "nonneg"};
    for (size_t i = 0; i < FC_ARRAY_LEN(defs); i++)
        CHECK_MSG(cJSON_Compare(at(cal, "$defs", defs[i]), at(inf, "$defs", defs[i]), true), "$defs/%s differ",
                  defs[i]);
    cJSON_Delete(cal);
    cJSON_Delete(inf);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(schemas_match_the_list), T(detection), T(newer_versions), T(shared_blocks)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
