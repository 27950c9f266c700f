/* cmd_validate.c — `fusecal validate FILE...`: checks calibration documents and
 * catalogue/sweep files against their schemas. */
#include "catalog.h"
#include "cmd.h"
#include "jsonfile.h"
#include "record.h"
#include "thresholds.h"

#include <stdlib.h>
#include <string.h>

static const char validate_help[] =
    "usage: fusecal validate FILE...\n"
    "\n"
    "Checks each file against its schema: a calibration document (written by\n"
    "'fusecal run') against schemas/calibration.schema.json, a catalogue or sweep\n"
    "file against schemas/catalogue.schema.json, a thresholds file (\"schema\":\n"
    "\"fusecal-thresholds\") against schemas/thresholds.schema.json. Reports the\n"
    "first problem of each invalid file on one line.\n"
    "\n"
    "exit status: 0 every file valid, 1 a file invalid, 2 bad usage or unreadable file\n";

int cmd_validate(int argc, char **argv)
{
    if (fc_wants_help(argc, argv)) {
        fputs(validate_help, stdout);
        return FC_EXIT_OK;
    }
    if (argc < 2) return fc_usage_error("validate needs a file (see 'fusecal validate --help')");
    int rc = FC_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *path = argv[i];
        if (path[0] == '-' && path[1]) return fc_usage_error("unknown option '%s'", path);
        fc_err e;
        char *text;
        size_t len;
        if (fc_read_file(path, FC_JSON_MAX_BYTES, &text, &len, &e) != 0) {
            fprintf(stderr, "fusecal: error: %s\n", e.msg);
            rc = FC_EXIT_USAGE;
            continue;
        }
        cJSON *root = NULL;
        int ok = fc_json_parse(path, text, len, &root, &e);
        const char *kind = "calibration";
        if (ok == 0) {
            bool calib = cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "schema");
            if (fc_is_thresholds_json(root)) {
                kind = "thresholds";
                ok = fc_thresholds_check(path, root, &e);
            } else if (calib) {
                fc_doc d;
                ok = fc_doc_parse(path, text, &d, &e);
                if (ok == 0) fc_doc_free(&d);
            } else {
                kind = "catalogue";
                ok = fc_catalog_check(path, root, &e);
            }
        }
        cJSON_Delete(root);
        free(text);
        if (ok != 0) {
            fprintf(stderr, "fusecal: invalid: %s\n", e.msg);
            if (rc == FC_EXIT_OK) rc = FC_EXIT_FAIL;
        } else {
            printf("%s: valid %s file\n", path, kind);
        }
    }
    return rc;
}
