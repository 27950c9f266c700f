/* ceilcache.c — see ceilcache.h. */
#include "ceilcache.h"
#include "host.h"
#include "jsonfile.h"
#include "kind.h"
#include "record.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

bool fc_ceilings_cache_path(const char *device, char *buf, size_t n)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int len;
    if (xdg && xdg[0] == '/') len = snprintf(buf, n, "%s/fusecal/ceilings-%s.json", xdg, device);
    else if (home && home[0])
        len = snprintf(buf, n, "%s/.cache/fusecal/ceilings-%s.json", home, device);
    else
        return false;
    return len > 0 && (size_t)len < n;
}

/* Seconds since a "2026-11-22T11:38:13Z" timestamp; negative when it does not parse. */
static double age_of(const char *utc)
{
    struct tm tm = {0};
    const char *end = utc ? strptime(utc, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
    if (!end || *end) return -1;
    time_t t = timegm(&tm);
    return t == (time_t)-1 ? -1 : difftime(time(NULL), t);
}

/* Whether a kept info document is this machine now: the same boot, fusecal build,
 * host and libraries, and the same inventory of the device. */
static bool still_this_machine(const cJSON *doc, const char *device, const cJSON *host)
{
    const cJSON *then = cJSON_GetObjectItemCaseSensitive(doc, "host");
    const char *boot = fc_json_str(host, "boot_id", "");
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(doc, "tool");
    char why[256];
    return boot[0] && !strcmp(boot, fc_json_str(then, "boot_id", "")) &&
           !strcmp(fc_json_str(tool, "git_revision", ""), fc_git_revision) &&
           !strcmp(fc_json_str(tool, "version", ""), fc_version_string) &&
           fc_host_compatible(then, host, why, sizeof why) &&
           cJSON_Compare(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(then, "devices"), device),
                         cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(host, "devices"), device),
                         true);
}

bool fc_ceilings_cache_load(const char *device, const cJSON *host, fc_ceilings *c, double *age_s)
{
    char path[4096];
    cJSON *doc;
    const fc_kind *k;
    fc_err e;
    if (!fc_ceilings_cache_path(device, path, sizeof path) || fc_kind_read(path, &doc, &k, &e) != 0) return false;
    const cJSON *ceil = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "ceilings"), device);
    bool ok = k == &fc_kinds[FC_KIND_info] && fc_kind_validate(k, path, doc, &e) == 0 && ceil &&
              still_this_machine(doc, device, host);
    if (ok) {
        fc_ceilings kept;
        fc_ceilings_read(ceil, &kept);
        *age_s = age_of(kept.measured_utc);
        ok = *age_s >= 0 && *age_s < FC_CEILINGS_LIFETIME_S;
        kept.cached = true;
        if (ok) *c = kept;
    }
    cJSON_Delete(doc);
    return ok;
}

/* mkdir -p of the directory that holds path */
static bool make_dirs(const char *path)
{
    char dir[4096];
    fc_strlcpy(dir, path, sizeof dir);
    char *slash = strrchr(dir, '/');
    if (!slash) return false;
    *slash = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
        *p = '/';
    }
    return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

void fc_ceilings_cache_save(const char *device, const cJSON *host, const fc_ceilings *c)
{
    char path[4096];
    if (!fc_ceilings_cache_path(device, path, sizeof path) || !make_dirs(path)) return;
    cJSON *doc = fc_kind_document(FC_KIND_info);
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    cJSON_AddStringToObject(tool, "name", "fusecal");
    cJSON_AddStringToObject(tool, "version", fc_version_string);
    cJSON_AddStringToObject(tool, "git_revision", fc_git_revision);
    cJSON_AddStringToObject(doc, "created_utc", c->measured_utc);
    cJSON_AddItemToObject(doc, "host", cJSON_Duplicate(host, true));
    cJSON_AddItemToObject(cJSON_AddObjectToObject(doc, "ceilings"), device, fc_ceilings_json(c));
    char *text = fc_add_newline(cJSON_Print(doc));
    fc_err e;
    (void)fc_write_file_atomic(path, text, strlen(text), &e);
    free(text);
    cJSON_Delete(doc);
}
