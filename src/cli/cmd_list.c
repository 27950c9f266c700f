/* cmd_list.c — `fusecal list [patterns|backends|devices|networks]`: what this build and
 * this machine can measure. */
#include "builtin.h"
#include "catalog.h"
#include "cmd.h"
#include "network.h"
#include "select.h"

#include <stdlib.h>
#include <string.h>

static int list(const fc_args *args);

enum { O_FORMAT, O_DEVICE, O_COUNT };

static const char *const format_names[] = {"text", "json"};
static const fc_words format_words = {"format", format_names, 2, 0};
static const char *const list_names[] = {"patterns", "backends", "devices", "networks"};
static const fc_words list_words = {"list", list_names, 4, 0};

static const fc_option options[] = {
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &format_words,
                  .def = "text",
                  .help = "text for a terminal, or JSON"},
    [O_DEVICE] = {.name = "device",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &fc_device_words,
                  .also = "all",
                  .def = "all",
                  .help = "only the backends and devices of this device, built and usable here or not"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "list options");

static const fc_operand operands[] = {
    {"patterns", "the op chains, their dimensions and fuse thresholds", &list_words, false},
    {"backends",
     "every backend fusecal knows: built or not, usable here or not, and which patterns and dtypes each "
     "implements",
     &list_words, false},
    {"devices", "the devices fusecal knows and whether this build and machine have them", &list_words, false},
    {"networks", "the built-in networks (run --network): their sizes, sites, unique problems and runs per inference",
     &list_words, false},
};

const fc_cmd_spec fc_cmd_list = {
    .name = "list",
    .summary = "patterns, backends and devices this build and machine can measure",
    .synopsis = "[patterns|backends|devices|networks] [options]",
    .description =
        "Lists what this build of fusecal and this machine can measure, and why not where they cannot: "
        "one of the lists below, or with no argument all four.",
    .operands = operands,
    .noperands = (int)FC_ARRAY_LEN(operands),
    .options = options,
    .noptions = O_COUNT,
    .exit_status = "0 listed, 2 bad usage.",
    .run = list,
};

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
            if (f->dims[d].def == FC_DIM_REQUIRED)
                off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%s", off ? "," : "", f->dims[d].name);
            else if (f->dims[d].follows)
                off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%s=%s", off ? "," : "", f->dims[d].name,
                                        f->dims[d].follows);
            else
                off += (size_t)snprintf(dims + off, sizeof dims - off, "%s%s=%lld", off ? "," : "", f->dims[d].name,
                                        (long long)f->dims[d].def);
        }
        off = 0;
        for (int k = 0; k < p->nops; k++)
            off += (size_t)snprintf(ops + off, sizeof ops - off, "%s%s", k ? " -> " : "", fc_op_name(p->ops[k]));
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

/* The patterns b implements in dtype dt (as sample problems), noting the
 * layouts and masks it lacks; the first reason it gives when none. */
static void backend_dtype(const fc_backend *b, fc_dtype dt, cJSON *list, char *line, size_t n, char *reason, size_t rn)
{
    size_t off = 0;
    for (int i = 0; i < FC_NPATTERNS; i++) {
        const fc_pattern *pat = &fc_patterns[i];
        fc_problem pr;
        char w1[256] = "", w2[256] = "", note[64] = "";
        sample_problem(pat, dt, FC_NHWC, false, &pr);
        if (!b->supports(&pr, w1, sizeof w1)) {
            if (!reason[0]) fc_strlcpy(reason, w1, rn);
            continue;
        }
        if (fc_family_of(pat)->has_layout) {
            sample_problem(pat, dt, FC_NCHW, false, &pr);
            if (!b->supports(&pr, w2, sizeof w2)) snprintf(note, sizeof note, "(nhwc only)");
        }
        if (fc_pattern_has_op(pat, FC_OP_SOFTMAX)) {
            sample_problem(pat, dt, FC_NHWC, true, &pr);
            if (!b->supports(&pr, w2, sizeof w2)) snprintf(note, sizeof note, "(no causal)");
        }
        cJSON_AddItemToArray(list, cJSON_CreateString(pat->name));
        off += (size_t)snprintf(line + off, n - off, "%s%s%s", off ? ", " : "", pat->name, note);
    }
}

static void backend_supports(const fc_backend *b, cJSON *o, bool json)
{
    cJSON *sup = cJSON_AddObjectToObject(o, "supports");
    for (int dt = 0; dt < FC_NDTYPES; dt++) {
        cJSON *list = cJSON_AddArrayToObject(sup, fc_dtype_name((fc_dtype)dt));
        char line[1024] = "", reason[256] = "";
        backend_dtype(b, (fc_dtype)dt, list, line, sizeof line, reason, sizeof reason);
        if (json) continue;
        if (line[0]) printf("      %-5s %s\n", fc_dtype_name((fc_dtype)dt), line);
        else
            printf("      %-5s unsupported: %s\n", fc_dtype_name((fc_dtype)dt), reason);
    }
}

static void list_backend(int k, cJSON *arr, bool json)
{
    const char *name = fc_backend_words.names[k];
    const fc_backend *b = fc_builtin.backend[k];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(arr, o);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddBoolToObject(o, "built", b != NULL);
    if (!b) {
        cJSON_AddStringToObject(o, "why", fc_builtin.backend_why_not[k]);
        if (!json) printf("  %-13s not built: %s\n", name, fc_builtin.backend_why_not[k]);
        return;
    }
    char why[256] = "", dwhy[256] = "";
    bool avail = b->available(why, sizeof why);
    const fc_device *dev = fc_device_find(&fc_builtin, b->device);
    bool dev_ok = dev && dev->available(dwhy, sizeof dwhy);
    cJSON_AddStringToObject(o, "device", b->device);
    cJSON_AddStringToObject(o, "summary", b->summary);
    cJSON_AddBoolToObject(o, "usable", avail && dev_ok);
    if (!avail || !dev_ok) cJSON_AddStringToObject(o, "why", !avail ? why : dwhy);
    if (!json)
        printf("  %-13s %-5s %s\n  %-13s       %s\n", b->name, b->device,
               avail && dev_ok ? "usable here" : (!avail ? why : dwhy), "", b->summary);
    backend_supports(b, o, json);
}

static void list_backends(cJSON *out, bool json, const bool on[FC_NDEVICES])
{
    if (!json) printf("backends:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "backends");
    for (int k = 0; k < FC_NBACKENDS; k++)
        if (on[fc_backend_device((fc_backend_id)k)]) list_backend(k, arr, json);
}

static void list_devices(cJSON *out, bool json, const bool on[FC_NDEVICES])
{
    if (!json) printf("devices:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "devices");
    for (int d = 0; d < FC_NDEVICES; d++) {
        if (!on[d]) continue;
        const fc_device *dev = fc_builtin.device[d];
        char why[256] = "";
        bool ok = dev && dev->available(why, sizeof why);
        if (!dev) snprintf(why, sizeof why, "not built: %s", fc_builtin.device_why_not[d]);
        if (!json)
            printf("  %-5s %s%s\n", fc_device_words.names[d],
                   ok    ? "usable here"
                   : dev ? "not usable here: "
                         : "",
                   ok ? "" : why);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", fc_device_words.names[d]);
        cJSON_AddBoolToObject(o, "built", dev != NULL);
        cJSON_AddBoolToObject(o, "usable", ok);
        if (!ok) cJSON_AddStringToObject(o, "why", why);
        cJSON_AddItemToArray(arr, o);
    }
}

static void list_network(const fc_network *net, int nsites, cJSON *arr, bool json)
{
    int64_t runs = fc_network_runs(net);
    if (!json) {
        printf("  %-18s batch %lld", net->name, (long long)net->batch);
        if (net->seq) printf(", seq %lld", (long long)net->seq);
        printf(": %d sites, %d unique, %lld runs per inference\n      %s\n", nsites, net->n, (long long)runs,
               net->description);
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", net->name);
    cJSON_AddStringToObject(o, "description", net->description);
    cJSON_AddNumberToObject(o, "batch", (double)net->batch);
    if (net->seq) cJSON_AddNumberToObject(o, "seq", (double)net->seq);
    cJSON_AddNumberToObject(o, "unique_sites", net->n);
    cJSON_AddNumberToObject(o, "runs_per_inference", (double)runs);
    cJSON_AddItemToArray(arr, o);
}

static void list_networks(cJSON *out, bool json)
{
    if (!json) printf("networks:\n");
    cJSON *arr = cJSON_AddArrayToObject(out, "networks");
    for (int i = 0; fc_network_embedded(i); i++) {
        fc_network net;
        fc_err e;
        if (fc_network_load(fc_network_embedded(i), &net, &e) != 0) continue; /* the tests load every one */
        int nsites = 0;
        for (int k = 0; k < net.n; k++) nsites += net.site[k].nnames;
        list_network(&net, nsites, arr, json);
        fc_network_free(&net);
    }
}

static int list(const fc_args *args)
{
    if (args->noperands > 1) return fc_usage_error("unexpected argument '%s'", args->operands[1]);
    const char *what = args->noperands ? args->operands[0] : NULL;
    if (what && fc_word_index(&list_words, what) < 0)
        return fc_usage_error("unknown list '%s' (valid: %s)", what, fc_words_valid(&list_words));
    bool json = args->v[O_FORMAT].s && !strcmp(args->v[O_FORMAT].s, "json");
    bool on[FC_NDEVICES];
    fc_err e;
    if (fc_select_named_devices(args->v[O_DEVICE].s, "all", on, &e) != 0) return fc_usage_error("%s", e.msg);
    cJSON *out = cJSON_CreateObject();
    if (!what || !strcmp(what, "patterns")) list_patterns(out, json);
    if (!what || !strcmp(what, "backends")) list_backends(out, json, on);
    if (!what || !strcmp(what, "devices")) list_devices(out, json, on);
    if (!what || !strcmp(what, "networks")) list_networks(out, json);
    if (json) {
        char *s = cJSON_Print(out);
        puts(s);
        free(s);
    }
    cJSON_Delete(out);
    return FC_EXIT_OK;
}
