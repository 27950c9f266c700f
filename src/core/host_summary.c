/* host_summary.c — see host_summary.h. */
#include "host_summary.h"
#include "jsonfile.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* A library's identity: a string entry itself, its "version", or else all its
 * fields but the thread counts, which are settings compared elsewhere. */
static char *library_id(const cJSON *l)
{
    if (cJSON_IsString(l)) return fc_xstrdup(l->valuestring);
    const char *v = fc_json_str(l, "version", NULL);
    if (v) return fc_xstrdup(v);
    cJSON *copy = cJSON_Duplicate(l, 1);
    if (cJSON_IsObject(copy)) {
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "threads");
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "omp_max_threads");
    }
    char *s = cJSON_PrintUnformatted(copy);
    cJSON_Delete(copy);
    return s ? s : fc_xstrdup("?");
}

void fc_host_summary_read(const cJSON *host, fc_host_summary *s)
{
    memset(s, 0, sizeof *s);
    const cJSON *devs = cJSON_GetObjectItemCaseSensitive(host, "devices");
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(devs, "cpu");
    s->hostname = fc_json_str(host, "hostname", NULL);
    s->cpu_model = fc_json_str(cpu, "model", NULL);
    s->kernels = fc_json_str(cJSON_GetObjectItemCaseSensitive(cpu, "kernels"), "isa", NULL);
    s->gpu_name = fc_json_str(cJSON_GetObjectItemCaseSensitive(devs, "cuda"), "name", NULL);
    s->threads = fc_json_int(cpu, "threads", 0);
    s->family = fc_json_int(cpu, "family", -1);
    s->model = fc_json_int(cpu, "model_number", -1);
    const cJSON *libs = cJSON_GetObjectItemCaseSensitive(host, "libraries");
    s->has_libraries = cJSON_IsObject(libs);
    if (!s->has_libraries) return;
    int n = cJSON_GetArraySize(libs);
    s->libs = fc_xcalloc((size_t)(n ? n : 1), sizeof *s->libs);
    for (const cJSON *l = libs->child; l && s->nlibs < n; l = l->next) {
        if (!l->string) continue;
        s->libs[s->nlibs].name = l->string;
        s->libs[s->nlibs].id = library_id(l);
        s->nlibs++;
    }
}

const char *fc_host_summary_lib(const fc_host_summary *s, const char *name)
{
    for (int i = 0; i < s->nlibs; i++)
        if (!strcmp(s->libs[i].name, name)) return s->libs[i].id;
    return NULL;
}

void fc_host_summary_free(fc_host_summary *s)
{
    for (int i = 0; i < s->nlibs; i++) free(s->libs[i].id);
    free(s->libs);
    memset(s, 0, sizeof *s);
}
