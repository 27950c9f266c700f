/* ceilcache.h — a device's measured ceilings, kept for a short while.
 *
 * Every command that measures ceilings (info, run, check --run) keeps them in
 * $XDG_CACHE_HOME/fusecal/ceilings-<device>.json (~/.cache/fusecal when unset),
 * an info document (schemas/info.schema.json). A later run or check --run uses
 * them instead of measuring again when they are still this machine's: the same
 * boot (host.boot_id), the same host, device and library builds, thread count
 * and pinning (fc_host_compatible and the CPU block), the same fusecal build, and
 * measured less than FC_CEILINGS_LIFETIME_S ago. Ceilings are peaks (the best of
 * repeated runs): within a boot and an hour they do not move unless the machine
 * does, and a record says when its ceilings were measured and that they were
 * cached (ceilings.<device>.measured_utc, .cached). `fusecal info` always
 * measures afresh. */
#ifndef FC_CEILCACHE_H
#define FC_CEILCACHE_H

#include "device.h"

#include <cjson/cJSON.h>

#define FC_CEILINGS_LIFETIME_S 3600

/* The cache file of a device; false when there is no cache directory (no
 * XDG_CACHE_HOME and no HOME). */
bool fc_ceilings_cache_path(const char *device, char *buf, size_t n);
/* Ceilings of `device` an earlier command kept, when still usable for a host
 * block like `host` (the device's inventory and libraries): true with c filled
 * (c->cached set) and *age_s how long ago they were measured. */
bool fc_ceilings_cache_load(const char *device, const cJSON *host, fc_ceilings *c, double *age_s);
/* Keeps a device's freshly measured ceilings. A cache that cannot be written only
 * costs time later: failures are ignored. */
void fc_ceilings_cache_save(const char *device, const cJSON *host, const fc_ceilings *c);

#endif
