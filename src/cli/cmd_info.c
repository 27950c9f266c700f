/* cmd_info.c — `fusecal info`: host inventory and measured ceilings. */
#include "builtin.h"
#include "calibrate.h"
#include "select.h"
#include "cmd.h"
#include "jsonfile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char info_help[] =
    "usage: fusecal info [--format text|json] [--device cpu|cuda|all] [--threads N] [--no-measure]\n"
    "\n"
    "Prints the host inventory (CPU model, cores, ISA, caches, memory, load; OpenBLAS\n"
    "build and threads, oneDNN version and ISA, cJSON; the GPU and CUDA libraries when\n"
    "present) and measures this machine's ceilings: GEMM GFLOP/s and memory bandwidth\n"
    "(and, on a GPU, launch latency). --no-measure skips the measurements.\n";

static void print_obj(const cJSON *o, int indent)
{
    for (const cJSON *c = o->child; c; c = c->next) {
        if (cJSON_IsObject(c)) {
            printf("%*s%s:\n", indent, "", c->string);
            print_obj(c, indent + 2);
        } else {
            char *v = cJSON_IsString(c) ? NULL : cJSON_PrintUnformatted(c);
            printf("%*s%-18s %s\n", indent, "", c->string, v ? v : c->valuestring);
            free(v);
        }
    }
}

int cmd_info(int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, 0, 'f'}, {"device", required_argument, 0, 'd'},
                                         {"threads", required_argument, 0, 't'}, {"no-measure", no_argument, 0, 'n'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool json = false, measure = true;
    const char *device = NULL;
    fc_settings set;
    fc_settings_defaults(&set);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (!strcmp(optarg, "json")) json = true;
            else if (strcmp(optarg, "text")) return fc_usage_error("unknown format '%s' (valid: text, json)", optarg);
            break;
        case 'd': device = optarg; break;
        case 't': {
            int64_t t;
            if (!fc_parse_i64(optarg, &t) || t < 1 || t > 4096) return fc_usage_error("bad value for --threads: '%s'", optarg);
            set.threads = (int)t;
            break;
        }
        case 'n': measure = false; break;
        case 'h': fputs(info_help, stdout); return FC_EXIT_OK;
        case ':': return fc_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return fc_usage_error("unknown option '%s' (see 'fusecal info --help')", argv[optind - 1]);
        }
    }
    if (optind < argc) return fc_usage_error("unexpected argument '%s'", argv[optind]);
    fc_err e;
    bool on[FC_NDEVICES];
    if (fc_select_devices(&fc_builtin, device, "all", on, NULL, NULL, &e) != 0) return fc_usage_error("%s", e.msg);
    fc_session s;
    if (fc_session_open(&s, &fc_builtin, NULL, &set, &e) != 0) return fc_fail(FC_EXIT_FAIL, &e);
    for (int d = 0; d < FC_NDEVICES; d++) {
        if (!on[d] || d == FC_DEV_cpu) continue; /* the session always holds the host CPU */
        if (fc_session_add(&s, fc_builtin.device[d], &set, &e) != 0) {
            fc_session_close(&s);
            return fc_fail(FC_EXIT_FAIL, &e);
        }
    }
    for (int d = 0; d < FC_NDEVICES && !json; d++) {
        char why[256] = "";
        if (on[d]) continue;
        if (!fc_builtin.device[d]) printf("%s: not built: %s\n", fc_device_words.names[d], fc_builtin.device_why_not[d]);
        else if (!fc_builtin.device[d]->available(why, sizeof why))
            printf("%s: not usable here: %s\n", fc_device_words.names[d], why);
    }
    if (measure && fc_session_ceilings(&s, &e) != 0) {
        fc_session_close(&s);
        return fc_fail(FC_EXIT_FAIL, &e);
    }
    cJSON *host, *ceil;
    fc_session_describe(&s, &host, &ceil);
    fc_session_close(&s);
    cJSON *root = cJSON_CreateObject();
    cJSON *tool = cJSON_AddObjectToObject(root, "tool");
    cJSON_AddStringToObject(tool, "version", fc_version_string);
    cJSON_AddStringToObject(tool, "git_revision", fc_git_revision);
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
