/* netsum.h — a network's summary from measured records: per backend, each unique
 * site's decision and saving per inference (multiplicity × (unfused − fused), the
 * records' median latencies in the timing that decided: fc_record_decisive_ms), the
 * sites' total unfused time, the saving if every yes site is fused, and the sites
 * that lose when fused (speedup interval below 1).
 *
 * A site's interval: multiplicity × t(R − 1) · sd/√R of its record's R rounds'
 * differences unfused − fused (each round a fresh setup with its own medians),
 * widened in quadrature, as the record's speedup interval is, by the run-level part
 * multiplicity × fused × 1.96 · run_noise (settings.run_noise: what the rounds of
 * one run share, carried to the saving as the speedup interval's ends are). Where
 * the graph replays decided (the rounds' medians are eager ones), a round's
 * difference is the graph's unfused median × (1 − 1 / the round's graph speedup).
 * Where the rounds cannot say (one round, or a graph-decided record without its
 * rounds' graph speedups) the decisive speedup interval's ends give the site's
 * bounds instead.
 *
 * The total's interval: the sites' rounds are not independent. Round k of every
 * problem runs in the same pass (by default one worker process a pass), so the
 * machine's state of that pass moves them together, and the run-level effect is
 * one for the whole run. So the yes sites' savings are added pass by pass, S_k =
 * Σ multiplicity × (unfused_k − fused_k) over the first K passes (K the fewest
 * rounds among those sites: a site with more rounds counts its first K, so the
 * interval errs wide), and the interval is t(K − 1) · sd(S)/√K around the total,
 * widened in quadrature by the sites' run-level parts, which two records share at a
 * correlation of 0.05 (measured: netsum.c's RUN_SHARED), (1 − 0.05) Σ a² + 0.05 (Σ a)².
 * Yes sites whose rounds cannot say add their own half-widths in
 * quadrature. */
#ifndef FC_NETSUM_H
#define FC_NETSUM_H

#include "network.h"
#include "record.h"

typedef struct fc_netsum_site {
    int site;             /* index into the network's sites */
    double mult;          /* its multiplicity */
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

#define FC_NETSUM_METHOD                                                                                         \
    "per site: multiplicity x t(R-1) x sd/sqrt(R) of the record's per-round differences of median latencies "    \
    "(unfused - fused) over its R rounds (graph-decided: the graph's unfused x (1 - 1/the round's graph "        \
    "speedup)), widened in quadrature by multiplicity x fused x 1.96 x run_noise (R = 1: the speedup "           \
    "interval's ends); total: t(K-1) x sd/sqrt(K) of the per-pass totals of "                                    \
    "the yes sites' differences over the first K passes (K: their fewest rounds), widened in quadrature by the " \
    "sites' run-level parts a at a correlation of 0.05 ((1 - 0.05) sum a^2 + 0.05 (sum a)^2); sites without "    \
    "usable rounds add their half-widths in quadrature"

/* One summary per backend with a record of a site, in the order backends first
 * appear in the document; *out is allocated (fc_netsum_free). */
int fc_netsum_build(const fc_network *net, const fc_doc *doc, fc_netsum **out);
void fc_netsum_free(fc_netsum *s, int n);
/* The document's "network" block (schemas/calibration.schema.json $defs/network). */
cJSON *fc_netsum_json(const fc_network *net, const fc_netsum *s, int n);

#endif
