/* cmd.h — the subcommands. Each is described by its table (opts.h), by which
 * its command line is parsed; the command calls the library and turns the
 * outcome into an exit code; none reaches into another. */
#ifndef FC_CMD_H
#define FC_CMD_H

#include "fusecal.h"
#include "opts.h"

#include <stdio.h>

extern const fc_cmd_spec fc_cmd_run, fc_cmd_list, fc_cmd_info, fc_cmd_validate, fc_cmd_check, fc_cmd_compare,
    fc_cmd_report, fc_cmd_predict;

/* Every command, in the order `fusecal help` lists them. */
extern const fc_cmd_spec *const fc_commands[];
extern const int fc_ncommands;
const fc_cmd_spec *fc_command_find(const char *name);

/* What fusecal is, in one line (the help and the man page). */
extern const char fc_tool_summary[];

/* The program: dispatches argv[1] to its command. */
int fc_main(int argc, char **argv);

/* "fusecal: error: ..." on stderr; returns FC_EXIT_USAGE. */
int fc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Until called again with NULL, fc_usage_error keeps the first message in buf
 * (without "fusecal: error: ") instead of printing it: for a command line read
 * from a document, whose error is said in a line of its own. */
void fc_usage_capture(char *buf, size_t n);
/* The error for an output that the live fusecal run pid writes (fc_progress_peers):
 * then ends the advice after "give another --out". Returns FC_EXIT_USAGE. */
int fc_output_taken(const char *out, int pid, const char *then);
/* "fusecal: error: <msg>" on stderr; returns code. */
int fc_fail(int code, const fc_err *e);

#endif
