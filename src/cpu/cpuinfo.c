/* cpuinfo.c — the host CPU: caches, model, flags, clocks. */
#include "cpuinfo.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t read_cache_size(int index)
{
    char path[128], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t v = 0;
    char unit = 0;
    if (fgets(buf, sizeof buf, f) && sscanf(buf, "%zu%c", &v, &unit) >= 1) {
        if (unit == 'K') v *= 1024;
        else if (unit == 'M')
            v *= 1024 * 1024;
    }
    fclose(f);
    return v;
}

static int read_cache_level(int index)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int l = 0;
    if (fscanf(f, "%d", &l) != 1) l = 0;
    fclose(f);
    return l;
}

/* read once: the kernels ask on every call, from the thread that calls them, before
 * their parallel regions */
size_t fc_host_llc_bytes(void)
{
    static size_t known;
    static bool read;
    if (read) return known;
    size_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 8; i++) {
        int l = read_cache_level(i);
        if (l >= best_level && l > 0) {
            size_t s = read_cache_size(i);
            if (s) {
                best = s;
                best_level = l;
            }
        }
    }
    known = best;
    read = true;
    return best;
}

static size_t g_llc_pretend; /* fc_host_llc_pretend's (0: none) */

/* Where /sys has no cache directory (the Zen 5 VM; CPUID's leaf 0x8000001D is
 * hidden there too, and leaf 0x80000006 gives 508 MiB, the whole socket's L3s), 32
 * MiB: both AMD VMs' L3 per core complex, as the Zen 4 VM's /sys says, and where the
 * Zen 5 VM's copy rate falls (171 GB/s at 32 MiB, 104 at 64 MiB). */
size_t fc_host_llc_assumed(void)
{
    const size_t llc = g_llc_pretend ? g_llc_pretend : fc_host_llc_bytes();
    return llc ? llc : FC_LLC_ASSUMED;
}

void fc_host_llc_pretend(size_t llc) { g_llc_pretend = llc; }

static void read_line_file(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(buf, (int)n, f)) buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

void fc_host_cpu_id(fc_cpu_id *id)
{
    fc_strlcpy(id->model, "unknown", sizeof id->model);
    fc_strlcpy(id->vendor, "unknown", sizeof id->vendor);
    id->flags[0] = 0;
    id->family = id->model_number = -1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *val = colon + 1;
        while (*val == ' ') val++;
        val[strcspn(val, "\n")] = 0;
        if (!strncmp(line, "model name", 10) && !strcmp(id->model, "unknown"))
            fc_strlcpy(id->model, val, sizeof id->model);
        else if (!strncmp(line, "vendor_id", 9) && !strcmp(id->vendor, "unknown"))
            fc_strlcpy(id->vendor, val, sizeof id->vendor);
        else if (!strncmp(line, "flags", 5) && !id->flags[0])
            fc_strlcpy(id->flags, val, sizeof id->flags);
        else if (!strncmp(line, "cpu family", 10) && id->family < 0)
            id->family = atoi(val);
        else if (!strncmp(line, "model", 5) && (line[5] == ' ' || line[5] == '\t') && id->model_number < 0)
            id->model_number = atoi(val);
    }
    fclose(f);
}

bool fc_cpu_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
        if ((p == flags || p[-1] == ' ') && (p[n] == 0 || p[n] == ' ')) return true;
    return false;
}

bool fc_cpu_bf16_native(const char *flags, const char *model, char *why, size_t n)
{
    if (fc_cpu_flag(flags, "avx512_bf16") || fc_cpu_flag(flags, "amx_bf16")) return true;
    const char *isa = fc_cpu_flag(flags, "avx512f") ? "AVX-512 without BF16"
                      : fc_cpu_flag(flags, "avx2")  ? "AVX2"
                      : fc_cpu_flag(flags, "avx")   ? "AVX"
                                                    : "no AVX";
    snprintf(why, n, "bf16 needs avx512_bf16 or amx_bf16; this CPU has %s only (%s)", isa, model);
    return false;
}

static const char *pretend_flags, *pretend_model;

void fc_host_bf16_pretend(const char *flags, const char *model)
{
    pretend_flags = flags;
    pretend_model = model;
}

bool fc_host_bf16(char *why, size_t n)
{
    static int native = -1; /* the host's answer, read once */
    static char host_why[256];
    if (pretend_flags) return fc_cpu_bf16_native(pretend_flags, pretend_model ? pretend_model : "?", why, n);
    if (native < 0) {
        fc_cpu_id id;
        fc_host_cpu_id(&id);
        native = fc_cpu_bf16_native(id.flags, id.model, host_why, sizeof host_why);
    }
    if (!native) fc_strlcpy(why, host_why, n);
    return native;
}

void fc_host_inventory(cJSON *cpu)
{
    fc_cpu_id id;
    fc_host_cpu_id(&id);
    cJSON_AddStringToObject(cpu, "model", id.model);
    cJSON_AddStringToObject(cpu, "vendor", id.vendor);
    /* the numbers tell generations apart that share a model name (AMD 25: Zen 3/4,
     * 26: Zen 5; Intel 6/143: Sapphire Rapids, 6/207: Emerald Rapids) */
    if (id.family >= 0) cJSON_AddNumberToObject(cpu, "family", id.family);
    if (id.model_number >= 0) cJSON_AddNumberToObject(cpu, "model_number", id.model_number);
    cJSON_AddNumberToObject(cpu, "cores", fc_allowed_cpus());
    static const char *const isa[] = {"sse4_2",   "avx",         "avx2",        "fma",         "avx512f",  "avx512bw",
                                      "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"};
    cJSON *arr = cJSON_AddArrayToObject(cpu, "isa");
    for (size_t i = 0; i < FC_ARRAY_LEN(isa); i++)
        if (fc_cpu_flag(id.flags, isa[i])) cJSON_AddItemToArray(arr, cJSON_CreateString(isa[i]));
    cJSON *caches = cJSON_AddObjectToObject(cpu, "cache_bytes");
    for (int i = 0; i < 8; i++) {
        int l = read_cache_level(i);
        if (!l) continue;
        char type[32], key[16];
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        read_line_file(path, type, sizeof type);
        if (!strcmp(type, "Instruction")) continue;
        snprintf(key, sizeof key, "L%d%s", l, l == 1 ? "d" : "");
        cJSON_AddNumberToObject(caches, key, (double)read_cache_size(i));
    }
    /* what the kernels took the LLC to be where /sys does not say (predict reads it) */
    if (!fc_host_llc_bytes()) cJSON_AddNumberToObject(cpu, "llc_assumed_bytes", (double)FC_LLC_ASSUMED);
    char gov[64];
    read_line_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    cJSON_AddStringToObject(cpu, "governor", gov[0] ? gov : "unknown");
}
