/* jsonfile.c — see jsonfile.h. */
#include "jsonfile.h"
#include "embedded.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const fc_embedded_file *fc_embedded_find(const char *path)
{
    for (const fc_embedded_file *f = fc_embedded_files; f->path; f++)
        if (strcmp(f->path, path) == 0) return f;
    return NULL;
}

static void line_col(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

/* A member's key and its place among the object's members. */
typedef struct keyed {
    const char *key;
    int at;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The place of the first member (in the object's order) whose key an earlier member
 * already has, or -1: the keys sorted with their places, so that an object of n
 * members costs n log n however many it has (the input limit allows millions). */
static int first_duplicate(const cJSON *obj)
{
    int n = 0;
    for (const cJSON *c = obj->child; c; c = c->next) n += c->string != NULL;
    if (n < 2) return -1;
    keyed *k = fc_xmalloc((size_t)n * sizeof *k);
    int i = 0, at = 0;
    for (const cJSON *c = obj->child; c; c = c->next, at++)
        if (c->string) k[i++] = (keyed){c->string, at};
    qsort(k, (size_t)n, sizeof *k, by_key);
    int first = -1;
    for (i = 1; i < n; i++)
        if (!strcmp(k[i - 1].key, k[i].key) && (first < 0 || k[i].at < first)) first = k[i].at;
    free(k);
    return first;
}

/* Walks the tree: duplicate keys, non-finite numbers, depth; the first fault in
 * the document's order is the one reported. */
static int check_tree(const char *name, const cJSON *node, int depth, char *path, size_t plen, fc_err *e)
{
    if (depth > FC_JSON_MAX_DEPTH)
        return fc_errf(e, "%s: nesting deeper than %d levels at %s", name, FC_JSON_MAX_DEPTH, path[0] ? path : "/");
    if (cJSON_IsNumber(node) && !isfinite(node->valuedouble))
        return fc_errf(e, "%s: number out of range at %s", name, path[0] ? path : "/");
    if (!cJSON_IsObject(node) && !cJSON_IsArray(node)) return 0;
    const int dup = cJSON_IsObject(node) ? first_duplicate(node) : -1;
    size_t base = strlen(path);
    int i = 0;
    for (const cJSON *c = node->child; c; c = c->next, i++) {
        if (cJSON_IsObject(node)) {
            if (i == dup) return fc_errf(e, "%s: duplicate key '%s' at %s", name, c->string, path[0] ? path : "/");
            snprintf(path + base, plen - base, "/%s", c->string ? c->string : "?");
        } else {
            snprintf(path + base, plen - base, "/%d", i);
        }
        if (check_tree(name, c, depth + 1, path, plen, e) != 0) return -1;
        path[base] = 0;
    }
    return 0;
}

int fc_json_parse(const char *name, const char *text, size_t len, cJSON **out, fc_err *e)
{
    *out = NULL;
    size_t ws = 0;
    while (ws < len && (text[ws] == ' ' || text[ws] == '\t' || text[ws] == '\r' || text[ws] == '\n')) ws++;
    if (ws == len) return fc_errf(e, "%s: empty file, expected JSON", name);
    if (memchr(text, 0, len)) return fc_errf(e, "%s: contains a NUL byte, not JSON text", name);
    const char *end = NULL;
    /* parse exactly len bytes (text need not be terminated), then allow only
     * whitespace after the value */
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        if (!at || at < text || at > text + len) at = text + len;
        /* an error at the last non-blank character means the text stopped early */
        size_t last = len;
        while (last > 0 &&
               (text[last - 1] == ' ' || text[last - 1] == '\t' || text[last - 1] == '\r' || text[last - 1] == '\n'))
            last--;
        if ((size_t)(at - text) + 1 >= last) return fc_errf(e, "%s: truncated JSON (ends inside a value)", name);
        int line, col;
        line_col(text, at, &line, &col);
        return fc_errf(e, "%s: invalid JSON at line %d, column %d", name, line, col);
    }
    for (const char *p = end; p < text + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            int line, col;
            line_col(text, p, &line, &col);
            cJSON_Delete(root);
            return fc_errf(e, "%s: invalid JSON at line %d, column %d (text after the value)", name, line, col);
        }
    char path[1024] = "";
    if (check_tree(name, root, 0, path, sizeof path, e) != 0) {
        cJSON_Delete(root);
        return -1;
    }
    *out = root;
    return 0;
}

int fc_json_load(const char *path, cJSON **out, fc_err *e)
{
    char *text;
    size_t len;
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, e) != 0) return -1;
    int rc = fc_json_parse(path, text, len, out, e);
    free(text);
    return rc;
}

cJSON *fc_json_num_item(double v)
{
    if (isfinite(v)) return cJSON_CreateNumber(v);
    return cJSON_CreateString(isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity"));
}

void fc_json_add_num(cJSON *obj, const char *key, double v) { cJSON_AddItemToObject(obj, key, fc_json_num_item(v)); }

double fc_json_num(const cJSON *obj, const char *key, double def)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(n) ? n->valuedouble : def;
}

int fc_json_int(const cJSON *obj, const char *key, int def)
{
    return fc_json_int_of(cJSON_GetObjectItemCaseSensitive(obj, key), def);
}

int fc_json_int_of(const cJSON *n, int def)
{
    if (!cJSON_IsNumber(n) || isnan(n->valuedouble)) return def;
    double v = n->valuedouble;
    if (v <= (double)INT_MIN) return INT_MIN;
    if (v >= (double)INT_MAX) return INT_MAX;
    return (int)v;
}

size_t fc_json_count(const cJSON *obj, const char *key, size_t def)
{
    double v = fc_json_num(obj, key, (double)def);
    if (isnan(v)) return def;
    if (v <= 0) return 0;
    if (v >= 9007199254740992.0) return (size_t)9007199254740992ULL; /* 2^53: larger counts are not exact */
    return (size_t)v;
}

const char *fc_json_str(const cJSON *obj, const char *key, const char *def)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(n) && n->valuestring ? n->valuestring : def;
}

bool fc_json_bool(const cJSON *obj, const char *key, bool def)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(n) ? cJSON_IsTrue(n) : def;
}

cJSON *fc_json_embedded(const char *path)
{
    const fc_embedded_file *f = fc_embedded_find(path);
    fc_err e;
    cJSON *j = NULL;
    if (!f || fc_json_parse(path, f->data, f->len, &j, &e) != 0) {
        fprintf(stderr, "fusecal: internal error: embedded '%s' is %s\n", path, f ? e.msg : "missing");
        abort();
    }
    return j;
}
