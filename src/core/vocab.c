/* vocab.c — the vocabulary tables; see vocab.h. */
#include "vocab.h"

#include <string.h>

const fc_device_word fc_device_words[FC_NDEVICES] = {
#define X(id, name, summary) {name, summary},
    FC_DEVICE_LIST(X)
#undef X
};

const fc_backend_word fc_backend_words[FC_NBACKENDS] = {
#define X(id, name, dev) {name, FC_DEV_##dev},
    FC_BACKEND_LIST(X)
#undef X
};

int fc_device_id_parse(const char *s, fc_device_id *out)
{
    for (int i = 0; i < FC_NDEVICES; i++)
        if (!strcmp(s, fc_device_words[i].name)) {
            *out = (fc_device_id)i;
            return 0;
        }
    return -1;
}

int fc_backend_id_parse(const char *s, fc_backend_id *out)
{
    for (int i = 0; i < FC_NBACKENDS; i++)
        if (!strcmp(s, fc_backend_words[i].name)) {
            *out = (fc_backend_id)i;
            return 0;
        }
    return -1;
}
