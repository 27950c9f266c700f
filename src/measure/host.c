/* host.c — the host block of a document (machine, memory, load, devices,
 * libraries) and whether two documents come from the same host. */
#include "host.h"
#include "jsonfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

cJSON *fc_host_block(const fc_registry *reg, const fc_device *const *devs, void *const *ctxs, int ndev)
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
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const fc_backend *b = reg->backend[k];
        if (!b || !b->inventory) continue;
        bool on_device = false;
        for (int i = 0; i < ndev; i++)
            if (!strcmp(devs[i]->name, b->device)) on_device = true;
        if (on_device) b->inventory(libs);
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
