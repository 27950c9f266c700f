/* host_summary.h — a document's host block read once into typed fields: the
 * machine (hostname, CPU model, GPU name, threads) and each library's identity.
 * Whatever compares two documents' hosts or names one reads it through this. */
#ifndef FC_HOST_SUMMARY_H
#define FC_HOST_SUMMARY_H

#include "fusecal.h"

#include <cjson/cJSON.h>

typedef struct fc_host_lib {
    const char *name; /* its key under "libraries" */
    char *id;         /* its version when it names one, else its fields less thread counts (settings) */
} fc_host_lib;

/* Strings point into the host block, which must outlive the summary; NULL where the
 * block has no such field. */
typedef struct fc_host_summary {
    const char *hostname;
    const char *cpu_model; /* devices.cpu.model */
    const char *kernels;   /* devices.cpu.kernels.isa: the ISA fusecal's host kernels were built for */
    const char *gpu_name;  /* devices.cuda.name */
    int threads;           /* devices.cpu.threads, 0 when absent */
    int family, model;     /* devices.cpu.family and model_number, -1 when absent */
    bool has_libraries;    /* a "libraries" object, even an empty one */
    int nlibs;
    fc_host_lib *libs;
} fc_host_summary;

void fc_host_summary_read(const cJSON *host, fc_host_summary *s);
/* Library `name`'s identity, or NULL when the block lists no such library. */
const char *fc_host_summary_lib(const fc_host_summary *s, const char *name);
void fc_host_summary_free(fc_host_summary *s);

#endif
