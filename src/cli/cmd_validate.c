/* cmd_validate.c — `fusecal validate FILE...`: checks each file against the
 * schema of its kind (src/core/kind.h): calibration, info, thresholds, check and
 * compare documents, catalogue and sweep files. */
#include "catalog.h"
#include "cmd.h"
#include "jsonfile.h"
#include "kind.h"
#include "network.h"
#include "record.h"
#include "thresholds.h"

#include <stdlib.h>
#include <string.h>

static int validate_files(const fc_args *args);

static const fc_operand operands[] = {
    {"FILE...",
     "documents of any fusecal kind: calibration, info, thresholds, check or compare documents, catalogue or sweep "
     "files, network files",
     NULL, true},
};

const fc_cmd_spec fc_cmd_validate = {
    .name = "validate",
    .summary = "check fusecal documents against the schemas of their kinds",
    .synopsis = "FILE...",
    .description =
        "Checks each file against the schema of its kind, which its \"schema\" member names "
        "(\"fusecal-<kind>\"): calibration (written by 'fusecal run'), info ('fusecal info --format json'), "
        "thresholds, check ('fusecal check --format json') and compare ('fusecal compare --format json') "
        "documents and network files against schemas/<kind>.schema.json; a catalogue or sweep file (no "
        "\"schema\" member) against schemas/catalogue.schema.json. Calibration, thresholds, sweep and network "
        "files are also read as their commands read them (a network file's problems against the patterns). "
        "Prints each valid file's kind; reports the first problem of each invalid file on one line.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .exit_status = "0 every file valid, 1 a file invalid or of no fusecal kind, 2 bad usage or unreadable file.",
    .run = validate_files,
};

/* Checks parsed JSON as its kind; *kind is NULL when it has none. */
static int check_json(const char *path, const char *text, const cJSON *root, const fc_kind **kind, fc_err *e)
{
    const fc_kind *k = *kind = fc_kind_detect(root);
    if (!k) {
        const char *tag = fc_kind_unknown_tag(root);
        if (tag) return fc_errf(e, "%s: a '%s' document, a kind this fusecal does not read", path, tag);
        return fc_errf(e, "%s: not a fusecal document (no \"schema\": \"fusecal-<kind>\" naming one of its kinds)",
                       path);
    }
    if (k->id == FC_KIND_thresholds) return fc_thresholds_check(path, root, e);
    if (k->id == FC_KIND_catalogue) return fc_catalog_check(path, root, e);
    if (k->id == FC_KIND_network) {
        fc_network net;
        int ok = fc_network_parse(path, text, strlen(text), &net, e);
        if (ok == 0) fc_network_free(&net);
        return ok;
    }
    if (k->id != FC_KIND_calibration) return fc_kind_validate(k, path, root, e);
    fc_doc d;
    int ok = fc_doc_parse(path, text, &d, e);
    if (ok == 0) fc_doc_free(&d);
    return ok;
}

/* FC_EXIT_OK, FC_EXIT_FAIL (invalid) or FC_EXIT_USAGE (unreadable) */
static int validate_file(const char *path)
{
    fc_err e;
    char *text;
    size_t len;
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    cJSON *root = NULL;
    const fc_kind *kind = NULL;
    int ok = fc_json_parse(path, text, len, &root, &e);
    if (ok == 0) ok = check_json(path, text, root, &kind, &e);
    cJSON_Delete(root);
    free(text);
    if (ok != 0) {
        fprintf(stderr, "fusecal: invalid: %s\n", e.msg);
        return FC_EXIT_FAIL;
    }
    printf("%s: valid %s file\n", path, kind->name);
    return FC_EXIT_OK;
}

static int validate_files(const fc_args *args)
{
    if (args->noperands < 1) return fc_usage_error("validate needs a file (see 'fusecal validate --help')");
    int rc = FC_EXIT_OK;
    for (int i = 0; i < args->noperands; i++) {
        int r = validate_file(args->operands[i]);
        if (r == FC_EXIT_USAGE || (r == FC_EXIT_FAIL && rc == FC_EXIT_OK)) rc = r;
    }
    return rc;
}
