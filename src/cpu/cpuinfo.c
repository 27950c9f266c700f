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

size_t fc_host_llc_bytes(void)
{
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
    return best;
}

static void read_line_file(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(buf, (int)n, f)) buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

void fc_host_inventory(cJSON *cpu)
{
    char model[256] = "unknown", vendor[64] = "unknown", flags[4096] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[4096];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (!colon) continue;
            char *val = colon + 1;
            while (*val == ' ') val++;
            val[strcspn(val, "\n")] = 0;
            if (!strncmp(line, "model name", 10) && !strcmp(model, "unknown")) fc_strlcpy(model, val, sizeof model);
            else if (!strncmp(line, "vendor_id", 9) && !strcmp(vendor, "unknown"))
                fc_strlcpy(vendor, val, sizeof vendor);
            else if (!strncmp(line, "flags", 5) && !flags[0])
                fc_strlcpy(flags, val, sizeof flags);
        }
        fclose(f);
    }
    cJSON_AddStringToObject(cpu, "model", model);
    cJSON_AddStringToObject(cpu, "vendor", vendor);
    cJSON_AddNumberToObject(cpu, "cores", fc_online_cpus());
    static const char *const isa[] = {"sse4_2",   "avx",         "avx2",        "fma",         "avx512f",  "avx512bw",
                                      "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"};
    cJSON *arr = cJSON_AddArrayToObject(cpu, "isa");
    char padded[4100];
    snprintf(padded, sizeof padded, " %s ", flags);
    for (size_t i = 0; i < FC_ARRAY_LEN(isa); i++) {
        char pat[64];
        snprintf(pat, sizeof pat, " %s ", isa[i]);
        if (strstr(padded, pat)) cJSON_AddItemToArray(arr, cJSON_CreateString(isa[i]));
    }
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
    char gov[64];
    read_line_file("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    cJSON_AddStringToObject(cpu, "governor", gov[0] ? gov : "unknown");
}
