/* registry.h — what this build holds: each device and backend of the vocabulary
 * with its implementation, or NULL and the reason it was left out. The one
 * instance, fc_builtin (src/registry/registry.c), is the only place that knows
 * which optional parts were built; the layers below receive it as an argument.
 */
#ifndef FC_REGISTRY_H
#define FC_REGISTRY_H

#include "backend.h"

typedef struct fc_registry {
    const fc_device *device[FC_NDEVICES]; /* NULL: not built */
    const char *device_why_not[FC_NDEVICES];
    const fc_backend *backend[FC_NBACKENDS]; /* NULL: not built */
    const char *backend_why_not[FC_NBACKENDS];
} fc_registry;

/* Built backend or device by name; NULL when unknown or not built. */
const fc_backend *fc_backend_find(const fc_registry *r, const char *name);
const fc_device *fc_device_find(const fc_registry *r, const char *name);
/* "cpu.openblas, cpu.onednn" (the built ones) and "cpu, cuda" (the built ones),
 * for messages; the buffer is the caller's. */
const char *fc_backend_names(const fc_registry *r, char *buf, size_t n);
const char *fc_device_names(const fc_registry *r, char *buf, size_t n);

#endif
