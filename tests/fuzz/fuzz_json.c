/* libFuzzer harness: the strict JSON layer and the schema validator on any text,
 * against both embedded schemas. */
#include "jsonfile.h"
#include "jsonschema.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    cJSON *j;
    fc_err e;
    if (fc_json_parse("fuzz.json", (const char *)data, size, &j, &e) == 0) {
        fc_schema_check("schemas/calibration.schema.json", j, "fuzz.json", &e);
        fc_schema_check("schemas/catalogue.schema.json", j, "fuzz.json", &e);
        cJSON_Delete(j);
    }
    return 0;
}
