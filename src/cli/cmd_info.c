/* cmd_info.c — `fusecal info`: host inventory and measured ceilings. */
#include "builtin.h"
#include "calibrate.h"
#include "cmd.h"
#include "jsonfile.h"
#include "kind.h"
#include "select.h"

#include <stdlib.h>
#include <string.h>

static int info(const fc_args *args);

enum { O_FORMAT, O_DEVICE, O_THREADS, O_NO_MEASURE, O_COUNT };

static const char *const format_names[] = {"text", "json"};
static const fc_words format_words = {"format", format_names, 2, 0};

static const fc_option options[] = {
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &format_words,
                  .def = "text",
                  .help = "indented text, or JSON"},
    [O_DEVICE] = {.name = "device",
                  .kind = FC_OPT_CHOICE,
                  .section = "options",
                  .words = &fc_device_words,
                  .also = "all",
                  .def = "all",
                  .help = "the devices to describe and measure"},
    [O_THREADS] = {.name = "threads",
                   .kind = FC_OPT_INT,
                   .metavar = "N",
                   .section = "options",
                   .setting = &fc_settings_table[FC_SET_THREADS],
                   .def = "each CPU this process may use",
                   .help = "host threads for the CPU ceilings"},
    [O_NO_MEASURE] = {.name = "no-measure",
                      .kind = FC_OPT_FLAG,
                      .section = "options",
                      .help = "skip the measurements: the inventory alone"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "info options");

const fc_cmd_spec fc_cmd_info = {
    .name = "info",
    .summary = "host inventory and measured ceilings of this machine",
    .synopsis = "[options]",
    .description =
        "Prints the host inventory (CPU model, cores, ISA, caches, memory, load; OpenBLAS build and threads, "
        "oneDNN version and ISA, cJSON; the GPU and CUDA libraries when present) and measures this "
        "machine's ceilings: GEMM GFLOP/s and memory bandwidth (and, on a GPU, launch latency), as "
        "'fusecal run' does before it measures. With --format json it writes an info document "
        "(schemas/info.schema.json), which 'fusecal report' shows beside the calibrations of the same folder.",
    .options = options,
    .noptions = O_COUNT,
    .exit_status = "0 described, 1 a device or a measurement failed, 2 bad usage.",
    .run = info,
};

/* The bandwidth by working set on one line: "32K 638, 64K 599, ... GB/s"; the
 * read-only stream's on the next where it was measured. */
static void print_curve(const cJSON *a, int indent)
{
    static const char *const keys[] = {"gbs", "read_gbs"}, *const names[] = {"bandwidth_by_footprint", "  read"};
    for (int k = 0; k < 2; k++) {
        if (k && fc_json_num(a->child, keys[k], 0) <= 0) break;
        printf("%*s%-18s ", indent, "", names[k]);
        const cJSON *p;
        cJSON_ArrayForEach(p, a)
        {
            double b = fc_json_num(p, "footprint_bytes", 0);
            const char *unit = b >= (1 << 30) ? "G" : b >= (1 << 20) ? "M" : "K";
            double v = b / (b >= (1 << 30) ? (1 << 30) : b >= (1 << 20) ? (1 << 20) : 1024);
            printf("%s%.4g%s %.0f", p == a->child ? "" : ", ", v, unit, fc_json_num(p, keys[k], 0));
        }
        printf(" GB/s\n");
    }
}

static void print_obj(const cJSON *o, int indent)
{
    for (const cJSON *c = o->child; c; c = c->next) {
        if (cJSON_IsArray(c) && !strcmp(c->string, "bandwidth_by_footprint")) {
            print_curve(c, indent);
        } else if (cJSON_IsObject(c)) {
            printf("%*s%s:\n", indent, "", c->string);
            print_obj(c, indent + 2);
        } else {
            char *v = cJSON_IsString(c) ? NULL : cJSON_PrintUnformatted(c);
            printf("%*s%-18s %s\n", indent, "", c->string, v ? v : c->valuestring);
            free(v);
        }
    }
}

/* What the devices left out are, for the text output. */
static void print_left_out(const bool on[FC_NDEVICES])
{
    for (int d = 0; d < FC_NDEVICES; d++) {
        char why[256] = "";
        if (on[d]) continue;
        if (!fc_builtin.device[d])
            printf("%s: not built: %s\n", fc_device_words.names[d], fc_builtin.device_why_not[d]);
        else if (!fc_builtin.device[d]->available(why, sizeof why))
            printf("%s: not usable here: %s\n", fc_device_words.names[d], why);
    }
}

/* The inventory and (when measure) ceilings of the selected devices. */
static int describe(const bool on[FC_NDEVICES], const fc_settings *set, bool measure, cJSON **host, cJSON **ceil)
{
    fc_err e;
    fc_session s;
    if (fc_session_open(&s, &fc_builtin, NULL, set, &e) != 0) return fc_fail(FC_EXIT_FAIL, &e);
    int rc = FC_EXIT_OK;
    for (int d = 0; d < FC_NDEVICES && rc == FC_EXIT_OK; d++) {
        if (!on[d] || d == FC_DEV_cpu) continue; /* the session always holds the host CPU */
        if (fc_session_add(&s, fc_builtin.device[d], set, &e) != 0) rc = fc_fail(FC_EXIT_FAIL, &e);
    }
    if (rc == FC_EXIT_OK && measure && fc_session_ceilings(&s, &e) != 0) rc = fc_fail(FC_EXIT_FAIL, &e);
    if (rc == FC_EXIT_OK) fc_session_describe(&s, host, ceil);
    fc_session_close(&s);
    return rc;
}

static int info(const fc_args *args)
{
    if (args->noperands) return fc_usage_error("unexpected argument '%s'", args->operands[0]);
    bool json = args->v[O_FORMAT].s && !strcmp(args->v[O_FORMAT].s, "json");
    fc_settings set;
    fc_settings_defaults(&set);
    if (args->v[O_THREADS].given) set.threads = (int)args->v[O_THREADS].i;
    fc_err e;
    bool on[FC_NDEVICES];
    if (fc_select_devices(&fc_builtin, args->v[O_DEVICE].s, "all", on, NULL, NULL, &e) != 0)
        return fc_usage_error("%s", e.msg);
    cJSON *host, *ceil;
    int rc = describe(on, &set, !args->v[O_NO_MEASURE].given, &host, &ceil);
    if (rc != FC_EXIT_OK) return rc;
    if (!json) print_left_out(on);
    /* JSON: an info document (schemas/info.schema.json) */
    cJSON *root = json ? fc_kind_document(FC_KIND_info) : cJSON_CreateObject();
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    cJSON_AddStringToObject(tool, "name", "fusecal");
    cJSON_AddStringToObject(tool, "version", fc_version_string);
    cJSON_AddStringToObject(tool, "git_revision", fc_git_revision);
    if (json) {
        char now[32];
        fc_utc_timestamp(now);
        cJSON_AddStringToObject(root, "created_utc", now);
    }
    cJSON_AddItemToObject(root, "host", host);
    cJSON_AddItemToObject(root, "ceilings", ceil);
    if (json) {
        char *txt = cJSON_Print(root);
        puts(txt);
        free(txt);
    } else {
        print_obj(root, 0);
    }
    cJSON_Delete(root);
    return FC_EXIT_OK;
}
