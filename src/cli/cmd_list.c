/* cmd_list.c — `fusecal list [patterns|backends|devices]`: what this build and
 * this machine can measure. */
#include "builtin.h"
#include "catalog.h"
#include "cmd.h"

#include <stdlib.h>
#include <string.h>

static const char list_help[] =
    "usage: fusecal list [patterns|backends|devices] [--format text|json]\n"
    "\n"
    "patterns  the op chains, their dimensions and fuse thresholds\n"
    "backends  every backend fusecal knows: built or not, usable here or not, and\n"
    "          which patterns and dtypes each implements\n"
    "devices   the devices of this build and whether this machine has them\n"
    "With no argument, all three.\n";

/* A small problem of a pattern, for asking a backend what it supports. */
static void sample_problem(const fc_pattern *pat, fc_dtype dt, fc_layout layout, bool causal, fc_problem *p)
{
    fc_problem_init(p, pat, dt);
    const fc_family *f = fc_family_of(pat);
    for (int i = 0; i < f->ndims; i++)
        if (p->d[i] == FC_DIM_REQUIRED) p->d[i] = 64; /* a common size: d=64 heads, 64 channels */
    if (f->has_layout) p->layout = layout;
    int ci = fc_problem_dim_index(p, "causal");
    if (ci >= 0) p->d[ci] = causal;
    fc_err e;
    fc_problem_finish(p, &e);
}

static void list_patterns(cJSON *out, bool json)
{
    if (!json) printf("patterns:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "patterns");
    for (int i = 0; i < FC_NPATTERNS; i++) {
        const fc_pattern *p = &fc_patterns[i];
        const fc_family *f = fc_family_of(p);
        char dims[256] = "", ops[128] = "";
        size_t off = 0;
        for (int d = 0; d < f->ndims; d++) {
            if (f->dims[d].derived) continue;
            if (f->dims[d].def == FC_DIM_REQUIRED) off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%s", off ? "," : "", f->dims[d].name);
            else off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%s=%lld", off ? "," : "", f->dims[d].name, (long long)f->dims[d].def);
        }
        off = 0;
        for (int k = 0; k < p->nops; k++) off += (size_t)snprintf(ops + off, sizeof ops - off, "%s%s", k ? " -> " : "", fc_op_name(p->ops[k]));
        if (!json) {
            /* pad by characters, not bytes: the formulas hold · ᵀ √ */
            int chars = 0;
            for (const unsigned char *c = (const unsigned char *)p->math; *c; c++) chars += (*c & 0xC0) != 0x80;
            printf("  %-21s %-9s %s%*s dims: %s%s  fuse if speedup > %.3g\n      unfused: %s\n", p->name, f->name,
                   p->math, chars < 30 ? 30 - chars : 1, "", dims, f->has_layout ? ",layout=nhwc|nchw" : "",
                   fc_catalog_threshold(p), ops);
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", p->name);
        cJSON_AddStringToObject(o, "family", f->name);
        cJSON_AddStringToObject(o, "math", p->math);
        cJSON_AddStringToObject(o, "unfused_ops", ops);
        cJSON_AddStringToObject(o, "dims", dims);
        cJSON_AddNumberToObject(o, "threshold", fc_catalog_threshold(p));
        cJSON_AddItemToArray(arr, o);
    }
}

static void list_backends(cJSON *out, bool json)
{
    if (!json) printf("backends:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "backends");
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const char *name = fc_backend_words.names[k];
        const fc_backend *b = fc_builtin.backend[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddBoolToObject(o, "built", b != NULL);
        if (!b) {
            cJSON_AddStringToObject(o, "why", fc_builtin.backend_why_not[k]);
            if (!json) printf("  %-13s not built: %s\n", name, fc_builtin.backend_why_not[k]);
            continue;
        }
        char why[256] = "";
        bool avail = b->available(why, sizeof why);
        const fc_device *dev = fc_device_find(&fc_builtin, b->device);
        char dwhy[256] = "";
        bool dev_ok = dev && dev->available(dwhy, sizeof dwhy);
        cJSON_AddStringToObject(o, "device", b->device);
        cJSON_AddStringToObject(o, "summary", b->summary);
        cJSON_AddBoolToObject(o, "usable", avail && dev_ok);
        if (!avail || !dev_ok) cJSON_AddStringToObject(o, "why", !avail ? why : dwhy);
        if (!json)
            printf("  %-13s %-5s %s\n  %-13s       %s\n", b->name, b->device,
                   avail && dev_ok ? "usable here" : (!avail ? why : dwhy), "", b->summary);
        cJSON *sup = cJSON_AddObjectToObject(o, "supports");
        for (int dt = 0; dt < FC_NDTYPES; dt++) {
            cJSON *list = cJSON_AddArrayToObject(sup, fc_dtype_name((fc_dtype)dt));
            char line[1024] = "", reason[256] = "";
            size_t off = 0;
            int n = 0;
            for (int i = 0; i < FC_NPATTERNS; i++) {
                const fc_pattern *pat = &fc_patterns[i];
                fc_problem pr;
                char w1[256] = "", w2[256] = "";
                sample_problem(pat, (fc_dtype)dt, FC_NHWC, false, &pr);
                bool ok = b->supports(&pr, w1, sizeof w1);
                if (!ok) {
                    if (!reason[0]) fc_strlcpy(reason, w1, sizeof reason);
                    continue;
                }
                char note[64] = "";
                if (fc_family_of(pat)->has_layout) {
                    sample_problem(pat, (fc_dtype)dt, FC_NCHW, false, &pr);
                    if (!b->supports(&pr, w2, sizeof w2)) snprintf(note, sizeof note, "(nhwc only)");
                }
                if (fc_pattern_has_op(pat, FC_OP_SOFTMAX)) {
                    sample_problem(pat, (fc_dtype)dt, FC_NHWC, true, &pr);
                    if (!b->supports(&pr, w2, sizeof w2)) snprintf(note, sizeof note, "(no causal)");
                }
                cJSON *po = cJSON_CreateString(pat->name);
                cJSON_AddItemToArray(list, po);
                off += (size_t)snprintf(line + off, sizeof line - off, "%s%s%s", n ? ", " : "", pat->name, note);
                n++;
            }
            if (!json) {
                if (n) printf("      %-5s %s\n", fc_dtype_name((fc_dtype)dt), line);
                else printf("      %-5s unsupported: %s\n", fc_dtype_name((fc_dtype)dt), reason);
            }
        }
    }
}

static void list_devices(cJSON *out, bool json)
{
    if (!json) printf("devices:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "devices");
    for (int d = 0; d < FC_NDEVICES; d++) {
        const fc_device *dev = fc_builtin.device[d];
        char why[256] = "";
        bool ok = dev && dev->available(why, sizeof why);
        if (!dev) snprintf(why, sizeof why, "not built: %s", fc_builtin.device_why_not[d]);
        if (!json) printf("  %-5s %s%s\n", fc_device_words.names[d], ok ? "usable here" : dev ? "not usable here: " : "", ok ? "" : why);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", fc_device_words.names[d]);
        cJSON_AddBoolToObject(o, "built", dev != NULL);
        cJSON_AddBoolToObject(o, "usable", ok);
        if (!ok) cJSON_AddStringToObject(o, "why", why);
        cJSON_AddItemToArray(arr, o);
    }
}

int cmd_list(int argc, char **argv)
{
    if (fc_wants_help(argc, argv)) {
        fputs(list_help, stdout);
        return FC_EXIT_OK;
    }
    const char *what = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            i++;
            if (!strcmp(argv[i], "json")) json = true;
            else if (strcmp(argv[i], "text")) return fc_usage_error("unknown format '%s' (valid: text, json)", argv[i]);
        } else if (!strcmp(argv[i], "--format=json")) {
            json = true;
        } else if (argv[i][0] == '-') {
            return fc_usage_error("unknown option '%s' (see 'fusecal list --help')", argv[i]);
        } else if (!what) {
            what = argv[i];
        } else {
            return fc_usage_error("unexpected argument '%s'", argv[i]);
        }
    }
    if (what && strcmp(what, "patterns") && strcmp(what, "backends") && strcmp(what, "devices"))
        return fc_usage_error("unknown list '%s' (valid: patterns, backends, devices)", what);
    cJSON *out = cJSON_CreateObject();
    if (!what || !strcmp(what, "patterns")) list_patterns(out, json);
    if (!what || !strcmp(what, "backends")) list_backends(out, json);
    if (!what || !strcmp(what, "devices")) list_devices(out, json);
    if (json) {
        char *s = cJSON_Print(out);
        puts(s);
        free(s);
    }
    cJSON_Delete(out);
    return FC_EXIT_OK;
}
