/* main.c — fusecal's command table. */
#include "cmd.h"
#include "util.h"

#include <stdarg.h>
#include <string.h>

static const fc_command commands[] = {
    {"run", cmd_run, "measure unfused against fused op chains and write calibration records"},
    {"list", cmd_list, "patterns, backends and devices this build and machine can measure"},
    {"info", cmd_info, "host inventory and measured ceilings of this machine"},
    {"validate", cmd_validate, "check a calibration or catalogue file against its schema"},
    {"check", cmd_check, "pass or fail records against a baseline and thresholds, for CI"},
    {"compare", cmd_compare, "two calibrations side by side: speedups, flips, geometric mean"},
    {"report", cmd_report, "draw calibrations into one self-contained HTML page"},
};

int fc_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fusecal: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return FC_EXIT_USAGE;
}

int fc_fail(int code, const fc_err *e)
{
    fprintf(stderr, "fusecal: error: %s\n", e->msg);
    return code;
}

bool fc_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) break;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    }
    return false;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: fusecal <command> [options]\n\n"
                 "Measures whether fusing a chain of neural-network ops pays on this machine.\n\ncommands:\n");
    for (size_t i = 0; i < FC_ARRAY_LEN(commands); i++) fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'fusecal <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FC_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            for (size_t i = 0; i < FC_ARRAY_LEN(commands); i++)
                if (!strcmp(argv[2], commands[i].name)) {
                    char *args[] = {argv[2], "--help", NULL};
                    return commands[i].fn(2, args);
                }
            return fc_usage_error("unknown command '%s'", argv[2]);
        }
        usage(stdout);
        return FC_EXIT_OK;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("fusecal %s (%s)\n", fc_version_string, fc_git_revision);
        return FC_EXIT_OK;
    }
    for (size_t i = 0; i < FC_ARRAY_LEN(commands); i++)
        if (!strcmp(name, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    char valid[256] = "";
    for (size_t i = 0; i < FC_ARRAY_LEN(commands); i++) {
        size_t l = strlen(valid);
        snprintf(valid + l, sizeof valid - l, "%s%s", i ? ", " : "", commands[i].name);
    }
    return fc_usage_error("unknown command '%s' (valid: %s)", name, valid);
}
