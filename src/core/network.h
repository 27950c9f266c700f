/* network.h — network files: every fusion site of a model at a batch size and
 * sequence length, as problem strings with a multiplicity (times the site runs per
 * inference) and the site's names in the model (patterns/networks/NAME.json, embedded
 * at build time; format schemas/network.schema.json).
 *
 * A site says which of its dims scale with the batch and the sequence length
 * ("n": "batch", "m": "batch*seq", "s": "seq"): at --batch B --seq S the dim
 * becomes value / (B0·S0) · (B·S) for the file's B0 and S0 (the factor a dim
 * does not scale with left out), and must divide evenly. Sites whose problems are
 * the same at the size asked for are merged: one site, the multiplicities summed,
 * every name kept. A name stands for one layer: a file that gives one twice (in two
 * sites or in one) is refused. */
#ifndef FC_NETWORK_H
#define FC_NETWORK_H

#include "catalog.h"
#include "pattern.h"

#include <cjson/cJSON.h>

#define FC_NETWORK_VERSION 1

/* What a dim is proportional to. */
typedef enum { FC_SCALE_NONE, FC_SCALE_BATCH, FC_SCALE_SEQ, FC_SCALE_TOKENS } fc_scale;

typedef struct fc_net_site {
    fc_problem prob;
    int64_t multiplicity; /* runs per inference */
    char **names;         /* its names in the model (owned) */
    int nnames;
    fc_scale scale[FC_MAX_DIMS];
} fc_net_site;

typedef struct fc_network {
    char name[64];
    char origin[512];       /* the file: "patterns/networks/resnet50.json" or a path */
    char description[1024]; /* one line */
    char **notes;           /* the file's notes: what the sites stand for, what lies outside them (owned) */
    int nnotes;
    int64_t batch, seq;   /* as the sites stand now; seq 0 = the network has none */
    int64_t batch0, seq0; /* the file's */
    fc_net_site *site;    /* unique sites at batch, seq */
    int n;
    fc_net_site *raw; /* the file's sites as written, at batch0, seq0 */
    int nraw, capraw;
    fc_sweep stop; /* the file's stopping rule (stop_set says which fields; no problems) */
} fc_network;

/* An embedded network's name ("resnet50") or a network file's path. */
int fc_network_load(const char *name, fc_network *net, fc_err *e);
/* A network file's text; name starts messages. */
int fc_network_parse(const char *name, const char *text, size_t len, fc_network *net, fc_err *e);
/* Rewrites the sites for another batch size and sequence length (0 keeps the
 * current one), then merges sites made identical. */
int fc_network_rescale(fc_network *net, int64_t batch, int64_t seq, fc_err *e);
/* Puts every site in dtype (NULL keeps each site's) and, where its family has one,
 * layout (FC_LAYOUT_NONE keeps each site's), the file's sites too so that a later
 * rescale keeps them, then merges sites made identical. */
void fc_network_retype(fc_network *net, const fc_dtype *dtype, fc_layout layout);
void fc_network_free(fc_network *net);
/* Sum of the multiplicities. */
int64_t fc_network_runs(const fc_network *net);
/* What a document says of the network it answers for: name, origin, batch, seq,
 * runs_per_inference and the file's description and notes (a new object). */
cJSON *fc_network_json(const fc_network *net);
/* Its names joined with ", " into buf. */
void fc_net_site_names(const fc_net_site *s, char *buf, size_t n);

/* The embedded networks, in file order: name i (NULL past the last). */
const char *fc_network_embedded(int i);
/* "resnet50, mobilenet_v2, ..." for messages */
const char *fc_network_names(void);

#endif
