/* cmd_validate.c — `fusecal validate FILE...`: checks calibration documents,
 * catalogue/sweep files and thresholds files against their schemas. */
#include "catalog.h"
#include "cmd.h"
#include "jsonfile.h"
#include "network.h"
#include "record.h"
#include "thresholds.h"

#include <stdlib.h>
#include <string.h>

static int validate_files(const fc_args *args);

static const fc_operand operands[] = {
    {"FILE...", "calibration documents, catalogue or sweep files, thresholds files, network files", NULL, true},
};

const fc_cmd_spec fc_cmd_validate = {
    .name = "validate",
    .summary = "check a calibration or catalogue file against its schema",
    .synopsis = "FILE...",
    .description =
        "Checks each file against its schema: a calibration document (written by 'fusecal run') against "
        "schemas/calibration.schema.json, a catalogue or sweep file against schemas/catalogue.schema.json, a "
        "thresholds file (\"schema\": \"fusecal-thresholds\") against schemas/thresholds.schema.json, a network "
        "file (\"schema\": \"fusecal-network\") against schemas/network.schema.json and its problems against "
        "the patterns. "
        "Reports the first problem of each invalid file on one line.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .exit_status = "0 every file valid, 1 a file invalid, 2 bad usage or unreadable file.",
    .run = validate_files,
};

/* Checks parsed JSON by what it claims to be; *kind says what that is. */
static int check_json(const char *path, const char *text, const cJSON *root, const char **kind, fc_err *e)
{
    if (fc_is_thresholds_json(root)) {
        *kind = "thresholds";
        return fc_thresholds_check(path, root, e);
    }
    if (!strcmp(fc_json_str(root, "schema", ""), "fusecal-network")) {
        *kind = "network";
        fc_network net;
        int ok = fc_network_parse(path, text, strlen(text), &net, e);
        if (ok == 0) fc_network_free(&net);
        return ok;
    }
    if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "schema")) {
        *kind = "calibration";
        fc_doc d;
        int ok = fc_doc_parse(path, text, &d, e);
        if (ok == 0) fc_doc_free(&d);
        return ok;
    }
    *kind = "catalogue";
    return fc_catalog_check(path, root, e);
}

/* FC_EXIT_OK, FC_EXIT_FAIL (invalid) or FC_EXIT_USAGE (unreadable) */
static int validate_file(const char *path)
{
    fc_err e;
    char *text;
    size_t len;
    if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    cJSON *root = NULL;
    const char *kind = "calibration";
    int ok = fc_json_parse(path, text, len, &root, &e);
    if (ok == 0) ok = check_json(path, text, root, &kind, &e);
    cJSON_Delete(root);
    free(text);
    if (ok != 0) {
        fprintf(stderr, "fusecal: invalid: %s\n", e.msg);
        return FC_EXIT_FAIL;
    }
    printf("%s: valid %s file\n", path, kind);
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
