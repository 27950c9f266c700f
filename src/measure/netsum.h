/* netsum.h — a network's summary from measured records: per backend, each unique
 * site's decision and saving per inference (multiplicity × (unfused − fused), the
 * records' median latencies in the timing that decided: fc_record_decisive_ms), the
 * sites' total unfused time, the saving if every
 * yes site is fused, and the sites that lose when fused (speedup interval below 1).
 *
 * The saving's interval: each site's from its record's rounds (each round a fresh
 * setup with its own medians): multiplicity × t(R − 1) · sd/√R of the rounds'
 * differences unfused − fused around the site's saving; the sites of a network
 * were measured apart, so their errors are independent and the half-widths add in
 * quadrature. A record of one round has no spread over rounds: its speedup
 * interval's ends give the site's bounds instead. */
#ifndef FC_NETSUM_H
#define FC_NETSUM_H

#include "network.h"
#include "record.h"

typedef struct fc_netsum_site {
    int site;             /* index into the network's sites */
    const fc_record *rec; /* NULL: not measured on this backend */
    double saving_ms;     /* per inference */
    double lo, hi;        /* its 95 % interval */
} fc_netsum_site;

typedef struct fc_netsum {
    char device[16], backend[32];
    int sites, measured, fuse, losing;
    double unfused_ms;                      /* measured sites, per inference */
    double saving_ms, saving_lo, saving_hi; /* fusing every yes site */
    fc_netsum_site *s;                      /* every site, largest saving first, unmeasured last */
} fc_netsum;

#define FC_NETSUM_METHOD                                                                                        \
    "per site: multiplicity x t(R-1) x sd/sqrt(R) of the record's per-round differences of median latencies "   \
    "(unfused - fused) over its R rounds (R = 1: the speedup interval's ends); sites measured apart, so their " \
    "half-widths add in quadrature"

/* One summary per backend with a record of a site, in the order backends first
 * appear in the document; *out is allocated (fc_netsum_free). */
int fc_netsum_build(const fc_network *net, const fc_doc *doc, fc_netsum **out);
void fc_netsum_free(fc_netsum *s, int n);
/* The document's "network" block (schemas/calibration.schema.json $defs/network). */
cJSON *fc_netsum_json(const fc_network *net, const fc_netsum *s, int n);

#endif
