/* kind.h — the kinds of JSON document fusecal writes and reads, one list.
 *
 * A document says its kind in its "schema" member, "fusecal-<kind>", beside a
 * "schema_version"; its JSON Schema is schemas/<kind>.schema.json (embedded at
 * build time, installed under share/fusecal/schemas). `fusecal validate` checks
 * a file of any kind; `report`, `compare` and `check` take a folder's files as
 * they are: each file's kind is detected, a document of a kind the command does
 * not use is skipped with a note, and a file that is no fusecal document is an
 * error.
 *
 * Adding a kind: a row in FC_KIND_LIST (name, the version this build writes, what
 * it is), schemas/<name>.schema.json with "schema": {"const": "fusecal-<name>"}
 * and "schema_version" bounded by that version, the writer starting its document
 * with fc_kind_document(); tests/test_kind.c then checks the schema and the row
 * agree. A kind that predates the "schema" member gets a detector (below).
 */
#ifndef FC_KIND_H
#define FC_KIND_H

#include "fusecal.h"

#include <cjson/cJSON.h>

/* clang-format off: one kind per line */
/* name, the version this build writes, what it is (a noun phrase) and what writes it */
#define FC_KIND_LIST(X)                                                                                   \
    X(calibration, 2, "calibration document (records from 'fusecal run' or 'fusecal check --run --out')") \
    X(info, 1, "info document (host inventory and ceilings: 'fusecal info --format json')")               \
    X(thresholds, 1, "thresholds file (minimum speedups and allowed regressions for 'fusecal check')")    \
    X(check, 1, "check summary ('fusecal check --format json')")                                          \
    X(compare, 1, "comparison of two calibrations ('fusecal compare --format json')")                     \
    X(predict, 1, "predictions or their validation ('fusecal predict --format json')")                    \
    X(catalogue, 1, "catalogue or sweep file (patterns/*.json, 'fusecal run --sweep FILE')")              \
    X(network, 1, "network file (a model's fusion sites: patterns/networks/, 'fusecal run --network')")
/* clang-format on */

#define FC_KIND_ENUM(name, version, what) FC_KIND_##name,
typedef enum { FC_KIND_LIST(FC_KIND_ENUM) FC_NKINDS } fc_kind_id;

typedef struct fc_kind {
    fc_kind_id id;
    const char *name;   /* "info" */
    const char *tag;    /* its "schema" member: "fusecal-info" */
    const char *schema; /* "schemas/info.schema.json" */
    int version;        /* the schema_version this build writes */
    const char *what;
} fc_kind;

extern const fc_kind fc_kinds[FC_NKINDS];

/* The kind of a parsed document, or NULL when it is no fusecal document of a
 * known kind. By its "schema" member; files older than that member are known by
 * their shape (an info document: tool, host and ceilings; a catalogue or sweep
 * file: schema_version and no "schema"). */
const fc_kind *fc_kind_detect(const cJSON *root);
/* The "fusecal-..." tag of a document of a kind this build does not know (a newer
 * fusecal's), else NULL. */
const char *fc_kind_unknown_tag(const cJSON *root);
const fc_kind *fc_kind_find(const char *name);

/* A new document of kind id: {"schema": "fusecal-<name>", "schema_version": N}. */
cJSON *fc_kind_document(fc_kind_id id);

/* Checks a document against its kind's schema; a version newer than this build
 * writes is refused with its own message. name starts messages. */
int fc_kind_validate(const fc_kind *k, const char *name, const cJSON *root, fc_err *e);

/* Reads a file strictly (fc_json_parse's rules) and detects its kind: 0 with *kind
 * NULL when it parses but is no fusecal document; -1 when it cannot be read or
 * parsed. *root is the caller's to delete. */
int fc_kind_read(const char *path, cJSON **root, const fc_kind **kind, fc_err *e);

#endif
