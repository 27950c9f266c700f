/* backend.c — the registries of devices and backends. This is the only file that
 * knows which optional parts (oneDNN, CUDA, cuDNN) were built. The fuzzing build
 * (FUSECAL_PARSERS_ONLY) links the parsers alone: the registry keeps its names. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

#ifndef FUSECAL_PARSERS_ONLY
extern const fc_device fc_device_cpu;
#endif
#ifdef FUSECAL_WITH_CUDA
extern const fc_device fc_device_cuda;
#endif

const fc_device *const fc_devices[] = {
#ifndef FUSECAL_PARSERS_ONLY
    &fc_device_cpu,
#endif
#ifdef FUSECAL_WITH_CUDA
    &fc_device_cuda,
#endif
    NULL,
};

#ifndef FUSECAL_PARSERS_ONLY
extern const fc_backend fc_backend_openblas;
#endif
#ifdef FUSECAL_WITH_ONEDNN
extern const fc_backend fc_backend_onednn;
#endif
#ifdef FUSECAL_WITH_CUDA
extern const fc_backend fc_backend_cublas, fc_backend_custom;
#endif
#ifdef FUSECAL_WITH_CUDNN
extern const fc_backend fc_backend_cudnn;
#endif

#define NOT_BUILT(n, why) {n, NULL, why}

const fc_backend_entry fc_backend_registry[] = {
#ifndef FUSECAL_PARSERS_ONLY
    {"cpu.openblas", &fc_backend_openblas, NULL},
#else
    NOT_BUILT("cpu.openblas", "the parsers-only (fuzzing) build has no backends"),
#endif
#ifdef FUSECAL_WITH_ONEDNN
    {"cpu.onednn", &fc_backend_onednn, NULL},
#else
    NOT_BUILT("cpu.onednn", "built without oneDNN (FUSECAL_ONEDNN=OFF)"),
#endif
#ifdef FUSECAL_WITH_CUDA
    {"cuda.cublas", &fc_backend_cublas, NULL},
#else
    NOT_BUILT("cuda.cublas", "built without CUDA (no CUDA compiler found, or FUSECAL_CUDA=OFF)"),
#endif
#ifdef FUSECAL_WITH_CUDNN
    {"cuda.cudnn", &fc_backend_cudnn, NULL},
#else
    NOT_BUILT("cuda.cudnn", "built without cuDNN (FUSECAL_CUDNN=OFF or cuDNN not found)"),
#endif
#ifdef FUSECAL_WITH_CUDA
    {"cuda.custom", &fc_backend_custom, NULL},
#else
    NOT_BUILT("cuda.custom", "built without CUDA (no CUDA compiler found, or FUSECAL_CUDA=OFF)"),
#endif
    {NULL, NULL, NULL},
};

const fc_backend *fc_backend_find(const char *name)
{
    for (const fc_backend_entry *b = fc_backend_registry; b->name; b++)
        if (b->built && strcmp(b->name, name) == 0) return b->built;
    return NULL;
}

static void join_names(char *buf, size_t n, bool devices)
{
    size_t off = 0;
    buf[0] = 0;
    if (devices) {
        for (int i = 0; fc_devices[i] && off < n; i++)
            off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", fc_devices[i]->name);
    } else {
        for (const fc_backend_entry *b = fc_backend_registry; b->name && off < n; b++)
            if (b->built) off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", b->name);
    }
}

const char *fc_backend_names(void)
{
    static char buf[256];
    if (!buf[0]) join_names(buf, sizeof buf, false);
    return buf;
}

const fc_device *fc_device_find(const char *name)
{
    for (int i = 0; fc_devices[i]; i++)
        if (strcmp(fc_devices[i]->name, name) == 0) return fc_devices[i];
    return NULL;
}

const char *fc_device_names(void)
{
    static char buf[128];
    if (!buf[0]) join_names(buf, sizeof buf, true);
    return buf;
}

int fc_backend_launch(void *call, fc_variant v, fc_err *e)
{
    fc_backend_call *c = call;
    return c->b->run(c->state, v, e);
}
