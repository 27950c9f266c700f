/* libFuzzer harness: catalogue and sweep files (--sweep FILE). */
#include "catalog.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fc_sweep sw;
    fc_err e;
    if (fc_sweep_parse("fuzz.json", (const char *)data, size, &sw, &e) == 0) {
        fc_stop st;
        fc_stop_defaults(&st);
        double target = 0;
        fc_sweep_apply_stop(&sw, &st, &target);
        fc_sweep_free(&sw);
    }
    return 0;
}
