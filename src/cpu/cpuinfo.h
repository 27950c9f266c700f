/* cpuinfo.h — facts about the host CPU, read from /sys and /proc. */
#ifndef FC_CPUINFO_H
#define FC_CPUINFO_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Bytes of the last-level cache (0 when unknown). */
size_t fc_host_llc_bytes(void);
/* Model, vendor, ISA flags, caches, clocks, governor into `cpu`. */
void fc_host_inventory(cJSON *cpu);

#endif
