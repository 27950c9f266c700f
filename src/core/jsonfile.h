/* jsonfile.h — strict JSON input and careful JSON output on top of cJSON.
 *
 * Input from other machines and versions is checked before anything reads it: a
 * size limit, well-formed JSON (with the line and column of the first error), no
 * duplicate keys, no non-finite numbers, bounded nesting. Output never lets a NaN
 * or infinity become null silently. */
#ifndef FC_JSONFILE_H
#define FC_JSONFILE_H

#include "fusecal.h"

#include <cjson/cJSON.h>

#define FC_JSON_MAX_BYTES (256u << 20)
#define FC_JSON_MAX_DEPTH 64

/* Parses text strictly; `name` (a file name) starts every error message. */
int fc_json_parse(const char *name, const char *text, size_t len, cJSON **out, fc_err *e);
/* Reads a file and parses it strictly. */
int fc_json_load(const char *path, cJSON **out, fc_err *e);

/* Adds a number; a non-finite one is written as "NaN", "Infinity" or "-Infinity". */
void fc_json_add_num(cJSON *obj, const char *key, double v);
cJSON *fc_json_num_item(double v);
/* Readers for checked documents (defaults when absent or of another type). */
double fc_json_num(const cJSON *obj, const char *key, double def);
/* Integer readers: the schema bounds these fields; a value outside the type's range
 * (or NaN) is clamped to it (NaN reads as def), never converted with undefined behaviour. */
int fc_json_int(const cJSON *obj, const char *key, int def);
int fc_json_int_of(const cJSON *item, int def); /* the same, of an item */
size_t fc_json_count(const cJSON *obj, const char *key, size_t def);
const char *fc_json_str(const cJSON *obj, const char *key, const char *def);
bool fc_json_bool(const cJSON *obj, const char *key, bool def);

/* Parses an embedded file (patterns/..., schemas/...); aborts if it is broken,
 * which the test suite rules out. */
cJSON *fc_json_embedded(const char *path);

#endif
