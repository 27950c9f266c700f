/* host.c — the host block of a document (machine, memory, load, devices,
 * libraries) and whether two documents come from the same host. */
#include "host.h"
#include "host_summary.h"
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
    char boot[64] = ""; /* one per boot: tells documents (and cached ceilings) of this boot apart */
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (fgets(boot, sizeof boot, f)) boot[strcspn(boot, "\n")] = 0;
        fclose(f);
    }
    if (boot[0]) cJSON_AddStringToObject(h, "boot_id", boot);
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

/* One field of the two summaries (absent reads as ""); false and why when they differ. */
static bool same_field(const char *what, const char *x, const char *y, char *why, size_t n)
{
    if (!strcmp(x ? x : "", y ? y : "")) return true;
    snprintf(why, n, "%s '%s' vs '%s'", what, x ? x : "", y ? y : "");
    return false;
}

bool fc_host_compatible(const cJSON *a, const cJSON *b, char *why, size_t n)
{
    fc_host_summary x, y;
    fc_host_summary_read(a, &x);
    fc_host_summary_read(b, &y);
    bool same = same_field("hostname", x.hostname, y.hostname, why, n) &&
                same_field("devices.cpu.model", x.cpu_model, y.cpu_model, why, n) &&
                same_field("devices.cuda.name", x.gpu_name, y.gpu_name, why, n);
    /* the kernels' build, where both blocks name it (documents before it was recorded
     * do not) */
    if (same && x.kernels && y.kernels) same = same_field("devices.cpu.kernels.isa", x.kernels, y.kernels, why, n);
    /* every library present in both, the same build */
    for (int i = 0; same && i < x.nlibs; i++) {
        const char *other = fc_host_summary_lib(&y, x.libs[i].name);
        if (other && strcmp(other, x.libs[i].id)) {
            snprintf(why, n, "library '%s' differs", x.libs[i].name);
            same = false;
        }
    }
    fc_host_summary_free(&x);
    fc_host_summary_free(&y);
    return same;
}
