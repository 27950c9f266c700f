/* jsonschema.c — see jsonschema.h. */
#include "jsonschema.h"
#include "jsonfile.h"
#include "util.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const cJSON *root;
    fc_err *e;
    char path[1024];
    int depth;
    bool quiet; /* inside anyOf/oneOf/not probes: no message */
} vctx;

static int fail(vctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(vctx *v, const char *fmt, ...)
{
    if (v->quiet) return -1;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fc_errf(v->e, "at %s: %s", v->path[0] ? v->path : "/", msg);
    return -1;
}

static const char *type_of(const cJSON *j)
{
    if (cJSON_IsNull(j)) return "null";
    if (cJSON_IsBool(j)) return "boolean";
    if (cJSON_IsNumber(j)) return "number";
    if (cJSON_IsString(j)) return "string";
    if (cJSON_IsArray(j)) return "array";
    if (cJSON_IsObject(j)) return "object";
    return "invalid";
}

static bool is_integer(const cJSON *j)
{
    return cJSON_IsNumber(j) && isfinite(j->valuedouble) && floor(j->valuedouble) == j->valuedouble;
}

static bool type_matches(const cJSON *j, const char *t)
{
    if (!strcmp(t, "integer")) return is_integer(j);
    return !strcmp(t, type_of(j));
}

static bool json_equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b)) return a->valuedouble == b->valuedouble;
    return cJSON_Compare(a, b, true);
}

static const cJSON *resolve_ref(vctx *v, const char *ref)
{
    if (ref[0] != '#') return NULL;
    const cJSON *node = v->root;
    const char *p = ref + 1;
    while (*p == '/') {
        p++;
        char tok[256];
        size_t n = strcspn(p, "/");
        if (n >= sizeof tok) return NULL;
        memcpy(tok, p, n);
        tok[n] = 0;
        p += n;
        node = cJSON_GetObjectItemCaseSensitive(node, tok);
        if (!node) return NULL;
    }
    return *p ? NULL : node;
}

static int validate(vctx *v, const cJSON *s, const cJSON *j);

static int sub_path(vctx *v, const cJSON *s, const cJSON *j, const char *key, int index)
{
    size_t base = strlen(v->path);
    if (key) snprintf(v->path + base, sizeof v->path - base, "/%s", key);
    else
        snprintf(v->path + base, sizeof v->path - base, "/%d", index);
    int rc = validate(v, s, j);
    v->path[base] = 0;
    return rc;
}

static int probe(vctx *v, const cJSON *s, const cJSON *j)
{
    bool q = v->quiet;
    v->quiet = true;
    int rc = validate(v, s, j);
    v->quiet = q;
    return rc;
}

static const char *const known_keywords[] = {
    "$ref",
    "$defs",
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "format",
};

static int check_numbers(vctx *v, const cJSON *s, const cJSON *j)
{
    double x = j->valuedouble;
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && x < k->valuedouble)
        return fail(v, "%g is less than the minimum %g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && x > k->valuedouble)
        return fail(v, "%g is more than the maximum %g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) && x <= k->valuedouble)
        return fail(v, "%g must be more than %g", x, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum")) && x >= k->valuedouble)
        return fail(v, "%g must be less than %g", x, k->valuedouble);
    return 0;
}

static int check_string(vctx *v, const cJSON *s, const cJSON *j)
{
    const char *str = j->valuestring;
    /* characters: a lead byte starts one, its continuation bytes do not; a stray
     * continuation byte (invalid UTF-8) counts as one, so that a prefix of the
     * string is never "shorter" than nothing */
    size_t len = 0;
    int pending = 0;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if ((*p & 0xC0) == 0x80 && pending > 0) {
            pending--;
            continue;
        }
        len++;
        pending = (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : 0;
    }
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "minLength")) && len < (size_t)k->valuedouble)
        return fail(v, "string shorter than %g characters", k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxLength")) && len > (size_t)k->valuedouble)
        return fail(v, "string longer than %g characters", k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "pattern")) && cJSON_IsString(k)) {
        regex_t re;
        if (regcomp(&re, k->valuestring, REG_EXTENDED | REG_NOSUB) != 0)
            return fail(v, "schema pattern '%s' does not compile", k->valuestring);
        int m = regexec(&re, str, 0, NULL, 0);
        regfree(&re);
        if (m != 0) return fail(v, "'%.80s' does not match the pattern '%s'", str, k->valuestring);
    }
    return 0;
}

static int check_array(vctx *v, const cJSON *s, const cJSON *j)
{
    int n = cJSON_GetArraySize(j);
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "minItems")) && n < (int)k->valuedouble)
        return fail(v, "array has %d items, fewer than %g", n, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxItems")) && n > (int)k->valuedouble)
        return fail(v, "array has %d items, more than %g", n, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "uniqueItems")) && cJSON_IsTrue(k)) {
        int i = 0;
        for (const cJSON *a = j->child; a; a = a->next, i++)
            for (const cJSON *b = a->next; b; b = b->next)
                if (json_equal(a, b)) return fail(v, "item %d is repeated", i);
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "items"))) {
        int i = 0;
        for (const cJSON *a = j->child; a; a = a->next, i++)
            if (sub_path(v, k, a, NULL, i) != 0) return -1;
    }
    return 0;
}

static int check_object(vctx *v, const cJSON *s, const cJSON *j)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(s, "propertyNames");
    const cJSON *k;
    int n = cJSON_GetArraySize(j);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "minProperties")) && n < (int)k->valuedouble)
        return fail(v, "object has %d members, fewer than %g", n, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "maxProperties")) && n > (int)k->valuedouble)
        return fail(v, "object has %d members, more than %g", n, k->valuedouble);
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    for (const cJSON *r = req ? req->child : NULL; r; r = r->next)
        if (cJSON_IsString(r) && !cJSON_GetObjectItemCaseSensitive(j, r->valuestring))
            return fail(v, "missing required member '%s'", r->valuestring);
    for (const cJSON *m = j->child; m; m = m->next) {
        if (names) {
            cJSON *name = cJSON_CreateString(m->string);
            int rc = sub_path(v, names, name, m->string, 0);
            cJSON_Delete(name);
            if (rc != 0) return -1;
        }
        const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (ps) {
            if (sub_path(v, ps, m, m->string, 0) != 0) return -1;
        } else if (addl) {
            if (cJSON_IsFalse(addl)) return fail(v, "unexpected member '%s'", m->string);
            if (cJSON_IsObject(addl) && sub_path(v, addl, m, m->string, 0) != 0) return -1;
        }
    }
    return 0;
}

static int validate(vctx *v, const cJSON *s, const cJSON *j)
{
    if (cJSON_IsTrue(s)) return 0;
    if (cJSON_IsFalse(s)) return fail(v, "no value is allowed here");
    if (!cJSON_IsObject(s)) return fail(v, "schema is not an object");
    if (++v->depth > 200) {
        v->depth--;
        return fail(v, "schema recursion too deep");
    }
    int rc = -1;
    for (const cJSON *kw = s->child; kw; kw = kw->next) {
        bool known = false;
        for (size_t i = 0; i < FC_ARRAY_LEN(known_keywords) && !known; i++)
            known = !strcmp(kw->string, known_keywords[i]);
        if (!known) {
            fail(v, "schema keyword '%s' is not supported by this validator", kw->string);
            goto out;
        }
    }
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        const cJSON *target = cJSON_IsString(k) ? resolve_ref(v, k->valuestring) : NULL;
        if (!target) {
            fail(v, "schema $ref '%s' does not resolve", cJSON_IsString(k) ? k->valuestring : "?");
            goto out;
        }
        if (validate(v, target, j) != 0) goto out;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "type"))) {
        bool ok = false;
        if (cJSON_IsString(k)) ok = type_matches(j, k->valuestring);
        else
            for (const cJSON *t = k->child; t && !ok; t = t->next)
                ok = cJSON_IsString(t) && type_matches(j, t->valuestring);
        if (!ok) {
            char want[128] = "";
            if (cJSON_IsString(k)) fc_strlcpy(want, k->valuestring, sizeof want);
            else
                for (const cJSON *t = k->child; t; t = t->next)
                    if (cJSON_IsString(t)) {
                        size_t l = strlen(want);
                        snprintf(want + l, sizeof want - l, "%s%s", l ? " or " : "", t->valuestring);
                    }
            const char *got = type_of(j);
            if (cJSON_IsString(j) && (!strcmp(j->valuestring, "NaN") || strstr(j->valuestring, "Infinity")))
                got = "a non-finite number spelled as a string";
            fail(v, "expected %s, got %s", want, got);
            goto out;
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
        bool ok = false;
        for (const cJSON *c = k->child; c && !ok; c = c->next) ok = json_equal(c, j);
        if (!ok) {
            char *txt = cJSON_PrintUnformatted(j);
            fail(v, "value %.80s is not one of the allowed values", txt ? txt : "?");
            free(txt);
            goto out;
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "const")) && !json_equal(k, j)) {
        char *want = cJSON_PrintUnformatted(k);
        fail(v, "value must be %.80s", want ? want : "?");
        free(want);
        goto out;
    }
    if (cJSON_IsNumber(j) && check_numbers(v, s, j) != 0) goto out;
    if (cJSON_IsString(j) && check_string(v, s, j) != 0) goto out;
    if (cJSON_IsArray(j) && check_array(v, s, j) != 0) goto out;
    if (cJSON_IsObject(j) && check_object(v, s, j) != 0) goto out;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "allOf")))
        for (const cJSON *c = k->child; c; c = c->next)
            if (validate(v, c, j) != 0) goto out;
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "anyOf"))) {
        bool ok = false;
        for (const cJSON *c = k->child; c && !ok; c = c->next) ok = probe(v, c, j) == 0;
        if (!ok) {
            fail(v, "value matches none of the allowed forms");
            goto out;
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "oneOf"))) {
        int matches = 0;
        for (const cJSON *c = k->child; c; c = c->next) matches += probe(v, c, j) == 0;
        if (matches != 1) {
            fail(v, matches ? "value matches more than one form where exactly one is allowed"
                            : "value matches none of the allowed forms");
            goto out;
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "not")) && probe(v, k, j) == 0) {
        fail(v, "value matches a form that is not allowed");
        goto out;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "if"))) {
        const cJSON *branch = cJSON_GetObjectItemCaseSensitive(s, probe(v, k, j) == 0 ? "then" : "else");
        if (branch && validate(v, branch, j) != 0) goto out;
    }
    rc = 0;
out:
    v->depth--;
    return rc;
}

int fc_schema_validate(const cJSON *schema, const cJSON *instance, fc_err *e)
{
    vctx v = {.root = schema, .e = e};
    return validate(&v, schema, instance);
}

int fc_schema_check(const char *schema_path, const cJSON *instance, const char *name, fc_err *e)
{
    cJSON *schema = fc_json_embedded(schema_path);
    fc_err inner;
    int rc = fc_schema_validate(schema, instance, &inner);
    cJSON_Delete(schema);
    if (rc != 0) return fc_errf(e, "%s: does not match %s %s", name, schema_path, inner.msg);
    return 0;
}
