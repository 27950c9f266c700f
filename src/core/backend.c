/* backend.c — looking things up in a registry; the launch adapter. */
#include "registry.h"

#include <stdio.h>
#include <string.h>

const fc_backend *fc_backend_find(const fc_registry *r, const char *name)
{
    fc_backend_id id;
    return fc_backend_id_parse(name, &id) == 0 ? r->backend[id] : NULL;
}

const fc_device *fc_device_find(const fc_registry *r, const char *name)
{
    fc_device_id id;
    return fc_device_id_parse(name, &id) == 0 ? r->device[id] : NULL;
}

const char *fc_backend_names(const fc_registry *r, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < FC_NBACKENDS && off < n; i++)
        if (r->backend[i]) off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", fc_backend_words.names[i]);
    return buf;
}

const char *fc_device_names(const fc_registry *r, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < FC_NDEVICES && off < n; i++)
        if (r->device[i]) off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", fc_device_words.names[i]);
    return buf;
}

int fc_backend_launch(void *call, fc_variant v, fc_err *e)
{
    fc_backend_call *c = call;
    return c->b->run(c->state, v, e);
}
