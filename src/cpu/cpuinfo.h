/* cpuinfo.h — facts about the host CPU, read from /sys and /proc. */
#ifndef FC_CPUINFO_H
#define FC_CPUINFO_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

/* Bytes of the last-level cache (0 when unknown). */
size_t fc_host_llc_bytes(void);
/* What the host kernels' rules (an output streamed past the caches, the decode
 * kernel's reads, OpenBLAS's blocks) and the cache flush take the last-level cache to
 * hold: fc_host_llc_bytes, or FC_LLC_ASSUMED where the host does not say. */
#define FC_LLC_ASSUMED ((size_t)32 << 20)
size_t fc_host_llc_assumed(void);
/* Makes fc_host_llc_assumed give llc instead (0: the host's again; tests). */
void fc_host_llc_pretend(size_t llc);
/* The first CPU of /proc/cpuinfo: model name, vendor and flags ("unknown", "unknown"
 * and "" when absent), x86 family and model numbers (-1 when absent). */
typedef struct {
    char model[256], vendor[64], flags[4096];
    int family, model_number;
} fc_cpu_id;
void fc_host_cpu_id(fc_cpu_id *id);
/* Whether the space-separated flags hold `flag` as a whole word. */
bool fc_cpu_flag(const char *flags, const char *flag);
/* Model, vendor, ISA flags, caches, clocks, governor into `cpu`. */
void fc_host_inventory(cJSON *cpu);

/* Whether a CPU with these /proc/cpuinfo flags (space-separated) computes bf16
 * natively (avx512_bf16 or amx_bf16); when not, why, naming the ISA it has and
 * the model. */
bool fc_cpu_bf16_native(const char *flags, const char *model, char *why, size_t n);
/* The same for this host (its /proc/cpuinfo), or for the flags and model last
 * given to fc_host_bf16_pretend (flags NULL: the host's again; tests). */
bool fc_host_bf16(char *why, size_t n);
void fc_host_bf16_pretend(const char *flags, const char *model);

#endif
