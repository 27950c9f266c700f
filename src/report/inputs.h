/* inputs.h — the files given to report, compare and check, taken as a folder
 * holds them. Each file's kind (src/core/kind.h) decides what becomes of it:
 * calibration documents are read (schema, version, records); documents of other
 * fusecal kinds are kept parsed, for the command to use (report shows info
 * documents beside the calibrations) or to skip with a note; a file that is no
 * fusecal document at all is an error, as is a calibration that does not read. */
#ifndef FC_INPUTS_H
#define FC_INPUTS_H

#include "kind.h"
#include "record.h"

typedef struct fc_input {
    const char *path;
    const fc_kind *kind; /* NULL: a newer fusecal's kind, named by tag */
    char tag[64];        /* the document's "schema" member */
    fc_doc doc;          /* a calibration's */
    cJSON *json;         /* any other kind's document */
} fc_input;

typedef struct fc_inputs {
    fc_input *in;
    int n;
    int ncal; /* calibration documents among them */
} fc_inputs;

/* Reads every file; on an error (unreadable, not JSON, no fusecal document, a
 * calibration that does not read) frees what it read and says which file. */
int fc_inputs_load(fc_inputs *s, const char *const *paths, int n, fc_err *e);
void fc_inputs_free(fc_inputs *s);
/* The i-th calibration document (0 <= i < ncal), in the order given. */
fc_input *fc_inputs_calibration(fc_inputs *s, int i);
/* What an input is, for a note: "an info document (host inventory and ceilings: ...)". */
void fc_input_describe(const fc_input *in, char *buf, size_t n);

#endif
