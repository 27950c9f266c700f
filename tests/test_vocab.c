/* test_vocab.c — the JSON Schemas' enums against the lists they mirror: each
 * enum of the embedded schemas holds exactly the words of its vocabulary
 * (src/core/vocab.h), the pattern and family registry (src/core/pattern.h) or
 * the embedded sweeps, apart from the exceptions written in the table; every enum
 * of every kind's schema (src/core/kind.h) has a row here, so a new one cannot go
 * unchecked. */
#include "jsonfile.h"
#include "jsonschema.h"
#include "kind.h"
#include "pattern.h"
#include "test.h"
#include "vocab.h"

#define MAX_WORDS 64

/* embedded documents, parsed once, freed at the end */
static struct {
    const char *path;
    cJSON *doc;
} docs[FC_NKINDS + 8];

static const cJSON *embedded(const char *path)
{
    size_t i = 0;
    for (; i < FC_ARRAY_LEN(docs) && docs[i].path; i++)
        if (!strcmp(docs[i].path, path)) return docs[i].doc;
    if (i == FC_ARRAY_LEN(docs)) abort();
    docs[i].path = path;
    docs[i].doc = fc_json_embedded(path);
    return docs[i].doc;
}

typedef struct word_list {
    const char *w[MAX_WORDS];
    int n;
} word_list;

static void add_word(word_list *l, const char *w)
{
    if (l->n < MAX_WORDS) l->w[l->n++] = w;
}

static void pattern_names(word_list *l)
{
    for (int i = 0; i < FC_NPATTERNS; i++) add_word(l, fc_patterns[i].name);
}

/* families in id order, each named by the family of a pattern in it */
static void family_names(word_list *l)
{
    for (int f = 0; f < FC_NFAMILIES; f++) {
        const char *name = NULL;
        for (int i = 0; i < FC_NPATTERNS && !name; i++)
            if (fc_patterns[i].family == (fc_family_id)f) name = fc_family_of(&fc_patterns[i])->name;
        CHECK_MSG(name != NULL, "family %d has no pattern", f);
        if (name) add_word(l, name);
    }
}

/* the sweeps of the embedded sweep file */
static void sweep_names(word_list *l)
{
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(embedded("patterns/sweeps.json"), "sweeps");
    for (const cJSON *s = sw ? sw->child : NULL; s; s = s->next) add_word(l, s->string);
}

typedef struct enum_case {
    const char *schema;        /* embedded path */
    const char *pointer;       /* JSON pointer to the schema object whose "enum" mirrors a list */
    const fc_words *words;     /* the list: a vocabulary ... */
    bool choices;              /* ... from its first user choice (layouts without "none") */
    void (*list)(word_list *); /* or another list when words is NULL */
    const char *extra;         /* in the schema only, and why: "word: why" */
    const char *omitted;       /* in the list only, and why */
} enum_case;

#define CAL "schemas/calibration.schema.json"
#define CAT "schemas/catalogue.schema.json"
#define THR "schemas/thresholds.schema.json"
#define INF "schemas/info.schema.json"
#define CHK "schemas/check.schema.json"
#define CMP "schemas/compare.schema.json"
#define PRD "schemas/predict.schema.json"
#define NET "schemas/network.schema.json"

static const enum_case cases[] = {
    {CAL, "/$defs/record/properties/pattern", NULL, false, pattern_names, NULL, NULL},
    {CAL, "/$defs/record/properties/family", NULL, false, family_names, NULL, NULL},
    {CAL, "/$defs/record/properties/device", &fc_device_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/backend", &fc_backend_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/dtype", &fc_dtype_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/layout", &fc_layout_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/status", &fc_status_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/decision", &fc_decision_words, false, NULL,
     "none: a record that is not ok has no decision", NULL},
    {CAL, "/$defs/record/then/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/network_site/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/settings/properties/cache", &fc_cache_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/settings/properties/attention_kernel", &fc_attn_kernel_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/variant/properties/attention_kernel", &fc_attn_kernel_words, false, NULL,
     "decode: cuda.custom's split-KV kernels, which decode-shaped problems run whatever --kernel says", NULL},
    {CAL, "/$defs/variant/properties/bound", &fc_bound_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/variant/properties/stop_rule", &fc_stop_rule_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/stop_rule", &fc_stop_rule_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/decided_by", &fc_decider_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/state/properties/span_variant", &fc_variant_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/record/properties/state/properties/withheld", &fc_decision_words, false, NULL, NULL,
     "inconclusive: only a decision the interval made can be withheld"},
    {CAL, "/$defs/ceilings/properties/gflops/propertyNames", &fc_dtype_words, false, NULL, NULL, NULL},
    {CAL, "/$defs/ceilings/properties/peak_gflops/propertyNames", &fc_dtype_words, false, NULL, NULL, NULL},
    {CAT, "/$defs/entry/properties/layout", &fc_layout_words, true, NULL, NULL, NULL},
    {CAT, "/$defs/entry/properties/dtypes/items", &fc_dtype_words, false, NULL, NULL, NULL},
    {CAT, "/$defs/sweep/properties/extends", NULL, false, sweep_names, NULL, NULL},
    {THR, "/$defs/rule/properties/device", &fc_device_words, false, NULL, NULL, NULL},
    {THR, "/$defs/rule/properties/dtype", &fc_dtype_words, false, NULL, NULL, NULL},
    {THR, "/$defs/rule/properties/layout", &fc_layout_words, true, NULL, NULL, NULL},
    {INF, "/$defs/ceilings/properties/gflops/propertyNames", &fc_dtype_words, false, NULL, NULL, NULL},
    {INF, "/$defs/ceilings/properties/peak_gflops/propertyNames", &fc_dtype_words, false, NULL, NULL, NULL},
    {CHK, "/properties/counts/propertyNames", &fc_verdict_words, false, NULL, NULL, NULL},
    {CHK, "/$defs/side/anyOf/1/properties/status", &fc_status_words, false, NULL, NULL, NULL},
    {CHK, "/$defs/side/anyOf/1/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
    {CHK, "/$defs/item/properties/verdict", &fc_verdict_words, false, NULL, NULL, NULL},
    {CHK, "/$defs/item/properties/first_verdict", &fc_verdict_words, false, NULL, NULL, NULL},
    {CMP, "/$defs/side/properties/status", &fc_status_words, false, NULL, NULL, NULL},
    {CMP, "/$defs/side/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
    {PRD, "/properties/machines/items/properties/device", &fc_device_words, false, NULL, NULL, NULL},
    {PRD, "/$defs/prediction/properties/device", &fc_device_words, false, NULL, NULL, NULL},
    {PRD, "/$defs/decision", &fc_decision_words, false, NULL, "unknown: a problem no record and no model answers",
     NULL},
    {PRD, "/$defs/prediction/else/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
    {PRD, "/$defs/estimate/properties/decision", &fc_decision_words, false, NULL, NULL, NULL},
};

/* enums that mirror no list */
static const struct {
    const char *schema, *pointer, *why;
} not_lists[] = {
    {CAL, "/$defs/metric/anyOf/1", "the strings a non-finite measurement is written as"},
    {CHK, "/properties/result", "the check's outcome, its exit code's meaning"},
    {CHK, "/properties/exit_code", "the exit codes check ends with"},
    {CMP, "/properties/by", "compare's --by choices (src/cli/cmd_compare.c)"},
    {CMP, "/$defs/row/properties/shift", "where B's interval lies against A's"},
    {CMP, "/$defs/move/properties/direction", "which way a threshold crossing goes"},
    {PRD, "/properties/kind", "what a predict document holds: predictions or their validation"},
    {PRD, "/$defs/prediction/properties/source", "where an answer comes from: a record, the model, or neither"},
    {NET, "/$defs/site/properties/scale/additionalProperties", "what a dim scales with: test_network reads each"},
};

/* The node at a JSON pointer ("/a/b/0"; ~0 and ~1 unescaped), or NULL. */
static const cJSON *at_pointer(const cJSON *root, const char *pointer)
{
    const cJSON *n = root;
    const char *p = pointer;
    while (n && *p == '/') {
        char key[128];
        size_t k = 0;
        for (p++; *p && *p != '/' && k + 1 < sizeof key; p++) {
            bool escaped = *p == '~' && (p[1] == '0' || p[1] == '1');
            key[k++] = !escaped ? *p : *++p == '0' ? '~' : '/';
        }
        key[k] = 0;
        n = cJSON_IsArray(n) ? cJSON_GetArrayItem(n, atoi(key)) : cJSON_GetObjectItemCaseSensitive(n, key);
    }
    return *p ? NULL : n;
}

/* the word an exception is about: "none: why" -> "none" */
static void word_of(const char *why, char *buf, size_t n) { snprintf(buf, n, "%.*s", (int)strcspn(why, ":"), why); }

static bool listed(const char *why, const char *w)
{
    char x[64];
    if (!why) return false;
    word_of(why, x, sizeof x);
    return !strcmp(x, w);
}

static bool in_list(const word_list *l, const char *w)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->w[i], w)) return true;
    return false;
}

static void check_case(const enum_case *c)
{
    const cJSON *node = at_pointer(embedded(c->schema), c->pointer);
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(node, "enum");
    CHECK_MSG(cJSON_IsArray(en), "%s %s: no enum", c->schema, c->pointer);
    if (!cJSON_IsArray(en)) return;
    word_list want = {0}, have = {0};
    if (c->words)
        for (int i = c->choices ? c->words->first : 0; i < c->words->n; i++) add_word(&want, c->words->names[i]);
    else
        c->list(&want);
    for (const cJSON *e = en->child; e; e = e->next) {
        CHECK_MSG(cJSON_IsString(e), "%s %s: an enum value that is not a string", c->schema, c->pointer);
        if (!cJSON_IsString(e)) continue;
        CHECK_MSG(!in_list(&have, e->valuestring), "%s %s: '%s' twice", c->schema, c->pointer, e->valuestring);
        add_word(&have, e->valuestring);
        CHECK_MSG(in_list(&want, e->valuestring) || listed(c->extra, e->valuestring),
                  "%s %s: '%s' is in the schema's enum but not in the list it mirrors", c->schema, c->pointer,
                  e->valuestring);
    }
    for (int i = 0; i < want.n; i++)
        CHECK_MSG(in_list(&have, want.w[i]) || listed(c->omitted, want.w[i]),
                  "%s %s: '%s' is missing from the schema's enum", c->schema, c->pointer, want.w[i]);
    /* the exceptions are real: an extra word is in the schema only, an omitted one in the list only */
    char x[64];
    if (c->extra) {
        word_of(c->extra, x, sizeof x);
        CHECK_MSG(!in_list(&want, x) && in_list(&have, x), "%s %s: stale exception '%s'", c->schema, c->pointer, x);
    }
    if (c->omitted) {
        word_of(c->omitted, x, sizeof x);
        CHECK_MSG(in_list(&want, x) && !in_list(&have, x), "%s %s: stale exception '%s'", c->schema, c->pointer, x);
    }
}

static void schema_enums(void)
{
    for (size_t i = 0; i < FC_ARRAY_LEN(cases); i++) check_case(&cases[i]);
}

/* every "enum" in a schema has a row above */
static void walk(const char *schema, const cJSON *n, char *path, size_t len, size_t cap, int *unchecked)
{
    if (cJSON_IsObject(n) && cJSON_GetObjectItemCaseSensitive(n, "enum")) {
        bool found = false;
        for (size_t i = 0; i < FC_ARRAY_LEN(cases) && !found; i++)
            found = !strcmp(cases[i].schema, schema) && !strcmp(cases[i].pointer, path);
        for (size_t i = 0; i < FC_ARRAY_LEN(not_lists) && !found; i++)
            found = !strcmp(not_lists[i].schema, schema) && !strcmp(not_lists[i].pointer, path);
        CHECK_MSG(found, "%s %s: an enum with no row in tests/test_vocab.c", schema, path);
        *unchecked += !found;
    }
    int i = 0;
    for (const cJSON *c = n ? n->child : NULL; c; c = c->next, i++) {
        size_t l = cJSON_IsArray(n) ? (size_t)snprintf(path + len, cap - len, "/%d", i)
                                    : (size_t)snprintf(path + len, cap - len, "/%s", c->string);
        if (len + l < cap) walk(schema, c, path, len + l, cap, unchecked);
        path[len] = 0;
    }
}

static void every_enum_checked(void)
{
    for (int k = 0; k < FC_NKINDS; k++) { /* every kind's schema */
        char path[512] = "";
        int unchecked = 0;
        walk(fc_kinds[k].schema, embedded(fc_kinds[k].schema), path, 0, sizeof path, &unchecked);
        CHECK(unchecked == 0);
    }
}

/* the record's backend enum at work: a name outside the list is refused */
static void backend_enum_refuses(void)
{
    const cJSON *b = at_pointer(embedded(CAL), "/$defs/record/properties/backend");
    CHECK(b != NULL);
    fc_err e;
    for (int i = 0; i < fc_backend_words.n; i++) {
        cJSON *ok = cJSON_CreateString(fc_backend_words.names[i]);
        CHECK_MSG(fc_schema_validate(b, ok, &e) == 0, "%s refused", fc_backend_words.names[i]);
        cJSON_Delete(ok);
    }
    cJSON *bad = cJSON_CreateString("cpu.nonesuch");
    CHECK(fc_schema_validate(b, bad, &e) != 0);
    cJSON_Delete(bad);
}

int main(int argc, char **argv)
{
    static const t_case tests[] = {T(schema_enums), T(every_enum_checked), T(backend_enum_refuses)};
    int rc = t_run(tests, FC_ARRAY_LEN(tests), argc, argv);
    for (size_t i = 0; i < FC_ARRAY_LEN(docs); i++) cJSON_Delete(docs[i].doc);
    return rc;
}
