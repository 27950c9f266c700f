/* embedded.h — the pattern catalogue and schemas, compiled into the binary
 * (cmake/embed.cmake), so fusecal runs from any directory. */
#ifndef FC_EMBEDDED_H
#define FC_EMBEDDED_H

#include <stddef.h>

typedef struct fc_embedded_file {
    const char *path; /* relative to the source tree: "patterns/linear.json" */
    const char *data; /* NUL-terminated */
    size_t len;
} fc_embedded_file;

extern const fc_embedded_file fc_embedded_files[]; /* ends with a NULL path */
const fc_embedded_file *fc_embedded_find(const char *path);

#endif
