/* host.h — the host block of a calibration document. */
#ifndef FC_HOST_H
#define FC_HOST_H

#include "registry.h"

/* Machine, OS, memory, load; each open device's inventory under "devices"; the
 * libraries of the registry's backends on those devices under "libraries". */
cJSON *fc_host_block(const fc_registry *reg, const fc_device *const *devs, void *const *ctxs, int ndev);

/* Whether records measured under host block a can sit beside records measured
 * under b: same machine (hostname, CPU model, GPU), same library builds. */
bool fc_host_compatible(const cJSON *a, const cJSON *b, char *why, size_t n);

#endif
