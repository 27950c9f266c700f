/* record.h — calibration records and documents, and their JSON form
 * (schemas/calibration.schema.json). The same structs serve the writer (run) and
 * the readers (validate, check, compare, report). */
#ifndef FC_RECORD_H
#define FC_RECORD_H

#include "backend.h"
#include "measures.h"

#include <cjson/cJSON.h>

/* Version of the calibration document format (schemas/calibration.schema.json; its
 * row in FC_KIND_LIST, src/core/kind.h, says the same: tests/test_kind.c). 2:
 * intervals over measurement rounds, per-round summaries, margins, the control
 * variant and the speedup split, ceiling flags. */
#define FC_CALIBRATION_VERSION 2


typedef struct fc_variant_rec {
    fc_impl impl;
    fc_stats lat; /* eager launches, ms per call */
    bool has_graph;
    fc_stats lat_graph; /* replayed graph, ms per call */
    int batch;
    char stop_rule[16];
    int samples_at_stop;
    double sampled_s;
    double gflops, bytes, gbs;
    /* percentages: of the arithmetic peak, of the bandwidth ceiling, of the roofline
     * (min(peak, intensity x bandwidth ceiling)), and of the GEMM rate (a reference
     * a kernel may pass: not a ceiling) */
    double pct_peak_flops, pct_peak_bw, pct_roofline, pct_gemm;
    bool over_ceiling; /* a ceiling's percentage above 100: the ceiling or the count of work is off */
    double intensity;  /* FLOPs per byte of this variant */
    char bound[8];     /* "memory" or "compute" */
    double peak_inter_bytes;
    /* the bytes one call touches: the fused op's (each tensor once), the unfused
     * chain's largest op's; shown beside its bandwidth ceiling */
    double footprint_bytes;
    double ceil_gbs;   /* its bandwidth ceiling (fc_ceilings_stream_at), GB/s */
    double read_bytes; /* the fused op's bytes read (all but its output), which bound ceil_gbs */
    /* its bandwidth ceiling beside its rounds: the median over the rounds of
     * fc_round_rec.beside_gbs (0: not measured), and its rate's percentage of it */
    double beside_gbs, pct_bw_beside;
    /* its rate's percentage of the arithmetic peak beside its rounds
     * (fc_record.peak_beside_gflops; 0: not measured) */
    double pct_peak_beside;
    fc_check check;
    bool stable; /* output after timing equals the verified output */
} fc_variant_rec;

typedef struct fc_record {
    fc_problem prob;
    char problem[256];
    char device[16];
    char backend[32];
    fc_status status;
    char reason[512];
    double threshold;
    fc_decision decision;
    int rounds; /* measurement rounds, each a fresh setup */
    fc_round_rec round[FC_MAX_ROUNDS];
    char stop_rule[16]; /* why the rounds stopped */
    bool has_control;   /* v[FC_CONTROL] was measured */
    fc_variant_rec v[FC_MAX_VARIANTS];
    fc_ratio_ci speedup;
    double margin; /* how far the interval clears the threshold (fc_decision_margin) */
    char interval_method[256];
    bool in_processes;                /* its rounds ran in worker processes, one per pass (the method says so) */
    fc_ratio_ci split_implementation; /* unfused/control: what the fused form's implementation changes */
    fc_ratio_ci split_fusion;         /* control/fused: what fusion alone saves */
    bool has_graph_speedup;
    fc_ratio_ci speedup_graph;
    fc_decider decided_by; /* the speedup the decision was made on (fc_record_decisive_speedup) */
    fc_state state;        /* whether the machine's state moved under the rounds (fc_state_check) */
    double flops;          /* useful FLOPs (conv: padding taps excluded) */
    double flops_padded;   /* conv: FLOPs counting the taps on zero padding (0 elsewhere) */
    double traffic_reduction;
    double ceil_gflops, ceil_gbs; /* the GEMM rate and the device-memory bandwidth */
    double peak_gflops;           /* the arithmetic peak (fc_ceilings_peak) */
    /* the arithmetic peak beside the rounds: the median over the rounds of
     * fc_round_rec.beside_gflops (0: not measured) */
    double peak_beside_gflops;
    double fused_vs_unfused; /* ‖fused − unfused‖/‖unfused‖, checked against the tolerance */
    bool verified;           /* both variants passed */
    double reference_ms, prepare_ms, setup_ms;
    fc_sense before, after;
    bool throttled;
    bool contended; /* another fusecal run measured on the host before, after or between its rounds (peers.h) */
    uint64_t seed;
} fc_record;

typedef struct fc_settings {
    char sweep[256];
    bool cold;
    int threads;
    double threshold; /* <= 0: per-pattern threshold from the catalogue */
    uint64_t seed;
    fc_stop stop;
    double target_sample;       /* seconds */
    bool graph;                 /* also time CUDA graph replays */
    bool bandwidth_beside;      /* measure memory-bound records' bandwidth ceilings beside each round */
    bool peak_beside;           /* measure compute-bound records' arithmetic peak beside each round */
    fc_attn_kernel attn_kernel; /* cuda.custom's fused attention kernel */
    int rounds;                 /* fresh setups per problem; the stop budget is split among them */
    double max_time_total;      /* seconds, 0 = no limit */
    double max_memory;          /* bytes, 0 = what is available */
    double run_noise;           /* sd of the run-level effect on a log speedup (fc_interval_runs) */
    bool processes;             /* each round of a sweep in a worker process (not in the document) */
} fc_settings;

void fc_settings_defaults(fc_settings *s);

/* The speedup a record's decision was made on: the fusion split's (control/fused)
 * where a control was measured, the graph replay's where it was launch-bound, else
 * the eager one's (unfused/fused). */
static inline const fc_ratio_ci *fc_record_decisive_speedup(const fc_record *r)
{
    return r->decided_by == FC_DECIDER_FUSION  ? &r->split_fusion
           : r->decided_by == FC_DECIDER_GRAPH ? &r->speedup_graph
                                               : &r->speedup;
}

/* Whether the fusion split is what fusing buys: a control was measured and the
 * implementation's split is no loss (its interval not wholly below 1). Where it is a
 * loss (the fused form's own GEMM slower than the unfused chain's library call), a
 * partitioner keeps the faster call by not fusing, so the whole speedup counts. Read
 * from the record's splits, so that a document from before the rule is judged alike. */
static inline bool fc_record_fusion_counts(const fc_record *r)
{
    return r->has_control && !(r->split_implementation.hi < 1.0);
}

/* The speedup `check` judges: the fusion split where it counts (fc_record_fusion_counts,
 * whatever the document's decided_by, so that a baseline from before decisions were made
 * on it is judged alike), else the eager one. */
static inline const fc_ratio_ci *fc_record_fusion_speedup(const fc_record *r)
{
    return fc_record_fusion_counts(r) ? &r->split_fusion : &r->speedup;
}

/* The variant whose time over the fused form's the decisive speedup is: the control
 * where the fusion split decided, else the unfused chain. What fusing saves is its
 * time less the fused form's. */
static inline fc_variant fc_record_decisive_base(const fc_record *r)
{
    return r->decided_by == FC_DECIDER_FUSION ? FC_CONTROL : FC_UNFUSED;
}

/* Variant v's median latency in the timing whose speedup decided: the graph replays'
 * where they did, else the eager calls'. */
static inline double fc_record_decisive_ms(const fc_record *r, fc_variant v)
{
    const bool graph = r->decided_by == FC_DECIDER_GRAPH && r->v[v].has_graph;
    return graph ? r->v[v].lat_graph.median : r->v[v].lat.median;
}

typedef struct fc_doc {
    int schema_version;
    char tool_version[32];
    char git_revision[64];
    char created[32];
    double elapsed_s; /* from the start of the run to this write */
    bool complete;
    cJSON *argv;     /* owned */
    cJSON *host;     /* owned */
    cJSON *ceilings; /* owned: {"cpu": {...}, "cuda": {...}} */
    cJSON *history;  /* owned, may be NULL: later runs that added to it (--resume/--append) */
    cJSON *network;  /* owned, may be NULL: run --network's summary (schema $defs/network) */
    fc_settings settings;
    fc_record *rec;
    int n, cap;
} fc_doc;

void fc_doc_init(fc_doc *d);
void fc_doc_free(fc_doc *d);
fc_record *fc_doc_add(fc_doc *d); /* zeroed slot */
/* The slot for a record of r's problem and backend: the record of the same pair
 * that an interrupt closed early (stop rule "interrupted"), which a run carrying
 * the document on measures again and which stays in the document until then; else
 * a new one (fc_doc_add). Either way zeroed. */
fc_record *fc_doc_slot_for(fc_doc *d, const fc_record *r);

/* Ceilings as JSON and back (a field absent reads as 0, as not measured) */
cJSON *fc_ceilings_json(const fc_ceilings *c);
void fc_ceilings_read(const cJSON *o, fc_ceilings *c);

/* Whole document to JSON text (caller frees). Non-finite numbers never silently
 * become null: they are written as the strings "NaN", "Infinity", "-Infinity",
 * which the schema rejects wherever a number is required. */
char *fc_doc_to_json(const fc_doc *d);
/* One record as a JSON object (jsonl lines use it). */
cJSON *fc_record_to_json(const fc_record *r);

/* Reads and checks a calibration file: valid JSON, no duplicate keys, finite
 * numbers, the calibration schema, a schema version this build reads. */
int fc_doc_load(const char *path, fc_doc *d, fc_err *e);
/* The same from text already in memory (name is used in messages). */
int fc_doc_parse(const char *name, const char *text, fc_doc *d, fc_err *e);
/* The same from parsed JSON, which it takes (and deletes). */
int fc_doc_from_json(const char *name, cJSON *root, fc_doc *d, fc_err *e);

/* Settings that must match for records to be comparable or resumable. */
bool fc_settings_compatible(const fc_settings *a, const fc_settings *b, char *why, size_t n);

#endif
