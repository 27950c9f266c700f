/* cmd.h — the subcommands. Each parses its options, calls the library and turns
 * the outcome into an exit code; none reaches into another. */
#ifndef FC_CMD_H
#define FC_CMD_H

#include "fusecal.h"

#include <stdio.h>

typedef struct fc_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} fc_command;

int cmd_run(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* "fusecal: error: ..." on stderr; returns FC_EXIT_USAGE. */
int fc_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "fusecal: error: <msg>" on stderr; returns code. */
int fc_fail(int code, const fc_err *e);
/* True when argv holds -h or --help (commands print their help then). */
bool fc_wants_help(int argc, char **argv);

#endif
