/* format.h — a calibration document as JSON, JSON lines, CSV, markdown or a
 * terminal table. */
#ifndef FC_FORMAT_H
#define FC_FORMAT_H

#include "record.h"

/* The format a file name implies by its extension (json when none matches). */
fc_format fc_format_for_path(const char *path);
/* Serializes the document; caller frees. */
char *fc_format_doc(const fc_doc *d, fc_format f);
/* A readable table of the records for a terminal. */
void fc_print_table(FILE *out, const fc_doc *d);
/* "1.23x [1.20, 1.26]"; where the fusion split decided, it follows: "; fusion 1.02x [0.98, 1.06]" */
void fc_format_speedup(const fc_record *r, char *buf, size_t n);
/* "m=512,k=1024,n=1024" (dims only) */
void fc_format_dims(const fc_problem *p, char *buf, size_t n);

#endif
