/* libFuzzer harness: the strict JSON layer, the kind detection and the schema
 * validator on any text: against the schema of the kind it claims, and against
 * the calibration and catalogue schemas whatever it claims. */
#include "jsonfile.h"
#include "jsonschema.h"
#include "kind.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    cJSON *j;
    fc_err e;
    if (fc_json_parse("fuzz.json", (const char *)data, size, &j, &e) == 0) {
        const fc_kind *k = fc_kind_detect(j);
        if (k) fc_kind_validate(k, "fuzz.json", j, &e);
        (void)fc_kind_unknown_tag(j);
        fc_schema_check("schemas/calibration.schema.json", j, "fuzz.json", &e);
        fc_schema_check("schemas/catalogue.schema.json", j, "fuzz.json", &e);
        cJSON_Delete(j);
    }
    return 0;
}
