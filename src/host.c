/* host.c — host inventory: machine, CPU, memory, load, libraries. */
#include "host.h"
#include "backend.h"
#include "jsonfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

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
        else if (unit == 'M') v *= 1024 * 1024;
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
            else if (!strncmp(line, "vendor_id", 9) && !strcmp(vendor, "unknown")) fc_strlcpy(vendor, val, sizeof vendor);
            else if (!strncmp(line, "flags", 5) && !flags[0]) fc_strlcpy(flags, val, sizeof flags);
        }
        fclose(f);
    }
    cJSON_AddStringToObject(cpu, "model", model);
    cJSON_AddStringToObject(cpu, "vendor", vendor);
    cJSON_AddNumberToObject(cpu, "cores", fc_online_cpus());
    static const char *const isa[] = {"sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                      "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16"};
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

cJSON *fc_host_block(const fc_device *const *devs, void *const *ctxs, int ndev)
{
    cJSON *h = cJSON_CreateObject();
    char name[256] = "unknown";
    gethostname(name, sizeof name - 1);
    cJSON_AddStringToObject(h, "hostname", name);
    struct utsname u;
    if (uname(&u) == 0) {
        cJSON_AddStringToObject(h, "os", u.sysname);
        cJSON_AddStringToObject(h, "kernel", u.release);
        cJSON_AddStringToObject(h, "arch", u.machine);
    }
    char pretty[256] = "";
    FILE *f = fopen("/etc/os-release", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "PRETTY_NAME=", 12)) {
                char *v = line + 12;
                v[strcspn(v, "\n")] = 0;
                if (*v == '"') v++;
                size_t l = strlen(v);
                if (l && v[l - 1] == '"') v[l - 1] = 0;
                fc_strlcpy(pretty, v, sizeof pretty);
            }
        fclose(f);
    }
    cJSON_AddStringToObject(h, "distribution", pretty[0] ? pretty : "unknown");
    cJSON *mem = cJSON_AddObjectToObject(h, "memory");
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    cJSON_AddNumberToObject(mem, "total_bytes", pages > 0 && psize > 0 ? (double)pages * (double)psize : 0);
    cJSON_AddNumberToObject(mem, "available_bytes", (double)fc_host_mem_available());
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) == 3) {
        cJSON *l = cJSON_AddArrayToObject(h, "loadavg");
        for (int i = 0; i < 3; i++) cJSON_AddItemToArray(l, cJSON_CreateNumber(load[i]));
    }
    cJSON *devices = cJSON_AddObjectToObject(h, "devices");
    for (int i = 0; i < ndev; i++) {
        cJSON *d = cJSON_AddObjectToObject(devices, devs[i]->name);
        devs[i]->inventory(ctxs[i], d);
    }
    cJSON *libs = cJSON_AddObjectToObject(h, "libraries");
    cJSON_AddStringToObject(libs, "cjson", cJSON_Version());
    for (const fc_backend_entry *b = fc_backend_registry; b->name; b++) {
        if (!b->built || !b->built->inventory) continue;
        bool on_device = false;
        for (int i = 0; i < ndev; i++)
            if (!strcmp(devs[i]->name, b->built->device)) on_device = true;
        if (on_device) b->built->inventory(libs);
    }
    return h;
}

static const char *str_at(const cJSON *root, const char *a, const char *b, const char *c)
{
    const cJSON *n = root;
    if (a) n = cJSON_GetObjectItemCaseSensitive(n, a);
    if (b) n = cJSON_GetObjectItemCaseSensitive(n, b);
    if (c) n = cJSON_GetObjectItemCaseSensitive(n, c);
    return cJSON_IsString(n) ? n->valuestring : "";
}

bool fc_host_compatible(const cJSON *a, const cJSON *b, char *why, size_t n)
{
    static const char *const keys[][3] = {
        {"hostname", NULL, NULL}, {"devices", "cpu", "model"}, {"devices", "cuda", "name"},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(keys); i++) {
        const char *x = str_at(a, keys[i][0], keys[i][1], keys[i][2]), *y = str_at(b, keys[i][0], keys[i][1], keys[i][2]);
        if (strcmp(x, y)) {
            snprintf(why, n, "%s%s%s%s%s '%s' vs '%s'", keys[i][0], keys[i][1] ? "." : "", keys[i][1] ? keys[i][1] : "",
                     keys[i][2] ? "." : "", keys[i][2] ? keys[i][2] : "", x, y);
            return false;
        }
    }
    /* every library version string present in both */
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(a, "libraries"), *lb = cJSON_GetObjectItemCaseSensitive(b, "libraries");
    for (const cJSON *l = la ? la->child : NULL; l; l = l->next) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(lb, l->string);
        if (!m) continue;
        char *x = cJSON_PrintUnformatted(l), *y = cJSON_PrintUnformatted(m);
        /* thread counts of OpenBLAS are settings, compared elsewhere */
        bool same = !strcmp(x, y) || (!strcmp(l->string, "openblas") &&
                                      !strcmp(fc_json_str(l, "config", ""), fc_json_str(m, "config", "")));
        free(x);
        free(y);
        if (!same) {
            snprintf(why, n, "library '%s' differs", l->string);
            return false;
        }
    }
    return true;
}
