/* commands.c — fusecal's command table and what `fusecal` alone, `fusecal help`
 * and `fusecal --version` say. */
#include "cmd.h"
#include "util.h"

#include "builtin.h"
#include "calibrate.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char fc_tool_summary[] = "Measures whether fusing a chain of neural-network ops pays on this machine.";

const fc_cmd_spec *const fc_commands[] = {
    &fc_cmd_run,   &fc_cmd_list,    &fc_cmd_info,   &fc_cmd_validate,
    &fc_cmd_check, &fc_cmd_compare, &fc_cmd_report, &fc_cmd_predict,
};
const int fc_ncommands = (int)FC_ARRAY_LEN(fc_commands);

const fc_cmd_spec *fc_command_find(const char *name)
{
    for (int i = 0; i < fc_ncommands; i++)
        if (!strcmp(name, fc_commands[i]->name)) return fc_commands[i];
    return NULL;
}

static char *capture;
static size_t capture_n;

void fc_usage_capture(char *buf, size_t n)
{
    capture = n ? buf : NULL;
    capture_n = n;
    if (capture) capture[0] = 0;
}

int fc_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (capture) {
        if (!capture[0]) vsnprintf(capture, capture_n, fmt, ap);
        va_end(ap);
        return FC_EXIT_USAGE;
    }
    fputs("fusecal: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return FC_EXIT_USAGE;
}

int fc_output_taken(const char *out, int pid, const char *then)
{
    return fc_usage_error(
        "'%s' is being written by another fusecal run (pid %d); each saves the whole document after "
        "every record, so one would drop the other's records: give another --out%s",
        out, pid, then);
}

int fc_fail(int code, const fc_err *e)
{
    fprintf(stderr, "fusecal: error: %s\n", e->msg);
    return code;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: fusecal <command> [options]\n\n%s\n\ncommands:\n", fc_tool_summary);
    for (int i = 0; i < fc_ncommands; i++) fprintf(out, "  %-10s %s\n", fc_commands[i]->name, fc_commands[i]->summary);
    fprintf(out,
            "\n'fusecal help <command>' or 'fusecal <command> --help' describes a command's options;\n"
            "'fusecal --version' names this build.\n");
}

static int unknown_command(const char *name)
{
    char valid[256] = "";
    for (int i = 0; i < fc_ncommands; i++) {
        size_t l = strlen(valid);
        snprintf(valid + l, sizeof valid - l, "%s%s", i ? ", " : "", fc_commands[i]->name);
    }
    return fc_usage_error("unknown command '%s' (valid: %s)", name, valid);
}

/* `fusecal help [command]` */
static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return FC_EXIT_OK;
    }
    const fc_cmd_spec *c = fc_command_find(argv[2]);
    if (!c) return unknown_command(argv[2]);
    fc_str b = {0};
    fc_help_text(c, &b);
    fputs(fc_str_cstr(&b), stdout);
    fc_str_free(&b);
    return FC_EXIT_OK;
}

int fc_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return FC_EXIT_USAGE;
    }
    /* a file past the size limit (ulimit -f): the write fails (EFBIG) and the
     * command says so, its temporary file removed, instead of dying by SIGXFSZ */
    signal(SIGXFSZ, SIG_IGN);
    const char *name = argv[1];
    if (!strcmp(name, "__rounds")) { /* a worker of `run` (calibrate.c): not a command */
        int fd = dup(STDOUT_FILENO); /* its results go on the pipe; stray prints to stderr */
        FILE *out = fd >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) >= 0 ? fdopen(fd, "wb") : NULL;
        return out ? fc_rounds_worker(&fc_builtin, stdin, out) : 2;
    }
    if (!strcmp(name, "help")) return help(argc, argv);
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) return help(1, argv);
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("fusecal %s (%s)\n", fc_version_string, fc_git_revision);
        return FC_EXIT_OK;
    }
    const fc_cmd_spec *c = fc_command_find(name);
    return c ? fc_command_run(c, argc - 1, argv + 1) : unknown_command(name);
}
