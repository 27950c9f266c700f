/* jsonschema.h — a JSON Schema (2020-12) validator for the subset of keywords
 * fusecal's own schemas use. A keyword outside that subset is an error, never
 * silently ignored, so a schema cannot promise a check this validator skips.
 *
 * Supported: $ref (local "#/..." pointers), $defs, $schema, $id, $comment, title,
 * description, default, examples, type, enum, const, properties, required,
 * additionalProperties, propertyNames, minProperties, maxProperties, items,
 * minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, minLength, maxLength, pattern (POSIX extended syntax),
 * allOf, anyOf, oneOf, not, if/then/else, format (an annotation only).
 */
#ifndef FC_JSONSCHEMA_H
#define FC_JSONSCHEMA_H

#include "fusecal.h"

#include <cjson/cJSON.h>

/* Validates instance against schema (root = the schema document for $ref).
 * Returns 0, or -1 with "at /json/pointer: what is wrong" in e. */
int fc_schema_validate(const cJSON *schema, const cJSON *instance, fc_err *e);

/* Validates against an embedded schema ("schemas/calibration.schema.json");
 * the message starts with `name`. */
int fc_schema_check(const char *schema_path, const cJSON *instance, const char *name, fc_err *e);

#endif
