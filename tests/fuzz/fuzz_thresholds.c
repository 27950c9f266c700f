/* libFuzzer harness: thresholds files (fusecal check --thresholds); whatever
 * loads is applied to a record. */
#include "thresholds.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fc_thresholds t;
    fc_err e;
    if (fc_thresholds_parse("fuzz.json", (const char *)data, size, &t, &e) == 0) {
        fc_record r;
        memset(&r, 0, sizeof r);
        if (fc_problem_parse("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1", NULL, &r.prob, &e) == 0) {
            fc_problem_string(&r.prob, r.problem, sizeof r.problem);
            strcpy(r.device, "cpu");
            strcpy(r.backend, "cpu.onednn");
            fc_limits lim;
            fc_thresholds_apply(&t, &r, &lim);
        }
        fc_thresholds_free(&t);
    }
    return 0;
}
