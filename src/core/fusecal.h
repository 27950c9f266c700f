/* fusecal.h — vocabulary shared by every part of fusecal.
 *
 * A *pattern* is an op chain a partitioner may fuse; a *problem* is a pattern with
 * dimensions, dtype and layout; a *backend* implements a problem's two *variants*
 * (unfused: one op per library call or kernel; fused: one call); a *record* is one
 * problem measured on one backend.
 */
#ifndef FUSECAL_H
#define FUSECAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vocab.h"

#define FC_SCHEMA_VERSION 1

extern const char fc_version_string[];
extern const char fc_git_revision[];

size_t fc_dtype_size(fc_dtype d); /* bytes per element in memory */

/* An error message; functions that fail fill it and return -1. The message says what
 * failed first and quotes the subject, with no trailing period. */
typedef struct fc_err {
    char msg[512];
} fc_err;

int fc_errf(fc_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Process exit codes. */
enum { FC_EXIT_OK = 0, FC_EXIT_FAIL = 1, FC_EXIT_USAGE = 2, FC_EXIT_INTERRUPTED = 130 };

#endif
