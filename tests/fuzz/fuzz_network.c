/* libFuzzer harness: network files (run --network FILE), loaded, then rewritten
 * for another batch size and sequence length. */
#include "network.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    fc_network net;
    fc_err e;
    if (fc_network_parse("fuzz.json", (const char *)data, size, &net, &e) == 0) {
        int64_t runs = fc_network_runs(&net);
        (void)runs;
        fc_network_rescale(&net, 3, net.seq ? 5 : 0, &e);
        char names[256];
        for (int i = 0; i < net.n; i++) fc_net_site_names(&net.site[i], names, sizeof names);
        fc_network_free(&net);
    }
    return 0;
}
