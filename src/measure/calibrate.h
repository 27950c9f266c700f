/* calibrate.h — the work of a calibration, shared by `run` and `check --run`:
 * a plan of (problem, backend) jobs, the devices they need, and the loop that
 * turns each job into a record (inputs, reference, setup, verification, paired
 * timing, statistics, decision). */
#ifndef FC_CALIBRATE_H
#define FC_CALIBRATE_H

#include "bench.h"
#include "record.h"
#include "registry.h"
#include "settings.h"
#include "stats.h"
#include "verify.h"

#include <signal.h>

typedef struct fc_job {
    fc_problem prob;
    const fc_backend *backend;
    double threshold;
} fc_job;

typedef struct fc_plan {
    fc_job *jobs;
    int n, cap;
} fc_plan;

void fc_plan_add(fc_plan *plan, const fc_problem *p, const fc_backend *b, double threshold);
void fc_plan_free(fc_plan *plan);

/* Devices opened for a calibration, with their measured ceilings. */
#define FC_MAX_DEVICES 4
typedef struct fc_session {
    const fc_registry *reg;
    int ndev;
    const fc_device *dev[FC_MAX_DEVICES];
    void *ctx[FC_MAX_DEVICES];
    fc_ceilings ceil[FC_MAX_DEVICES];
    bool measured[FC_MAX_DEVICES];
} fc_session;

/* Opens the host CPU and every device a backend of the plan runs on. */
int fc_session_open(fc_session *s, const fc_registry *reg, const fc_plan *plan, const fc_settings *set, fc_err *e);
/* Opens one more device (no-op when it is open). */
int fc_session_add(fc_session *s, const fc_device *d, const fc_settings *set, fc_err *e);
/* Takes the ceilings an earlier command kept (src/measure/ceilcache.h) for every
 * open device they are still usable for; returns how many devices got them, and
 * in *age_s how old the oldest are. */
int fc_session_reuse_ceilings(fc_session *s, double *age_s);
/* Measures the ceilings of every open device that has none yet (once per run)
 * and keeps them for later commands. */
int fc_session_ceilings(fc_session *s, fc_err *e);
/* After a run: a device whose GEMM or bandwidth ceiling a record's variant ran
 * above had it measured in a slow stretch (a shared host's peak moves: 250-323
 * GFLOP/s within 20 minutes on one 2-core VM; the Zen 4 VM's memory gave 47.7 GB/s
 * to one measurement and 77.9 to one a minute later), so it is measured again, up
 * to FC_RECHECK_TRIES times while a record is still above, and the best of the
 * measurements kept, per dtype and for the bandwidth (each point of its curve);
 * every record of the device gets its percentages again, the document's ceilings
 * block is replaced and the cache kept up to date. A record still above after the
 * last stays flagged. Returns how many devices were measured again (0: none needed
 * it), -1 when the first measurement failed (e says why; nothing changed; a later one
 * that fails ends the tries). */
enum { FC_RECHECK_TRIES = 3 };
int fc_session_recheck_ceilings(fc_session *s, fc_doc *doc, fc_err *e);
void fc_session_close(fc_session *s);
/* The host block and ceilings of an open session, for a document. */
void fc_session_describe(const fc_session *s, cJSON **host, cJSON **ceilings);

typedef struct fc_observer {
    /* before job i of n, in pass `pass` of npass (a pass runs one round of every job) */
    void (*start)(void *ctx, int i, int n, int pass, int npass, const fc_job *job);
    /* after a record was added to the document (write it out here) */
    int (*record)(void *ctx, int i, int n, const fc_doc *doc, const fc_record *r);
    void *ctx;
} fc_observer;

/* The worker of fc_calibrate's passes (`fusecal __rounds`): reads its jobs from
 * in, writes what each round gave to out. Returns the exit status. */
int fc_rounds_worker(const fc_registry *reg, FILE *in, FILE *out);

/* Runs every job of the plan, appending records to doc in the plan's order (a
 * record doc holds for the same problem and backend that an interrupt closed early
 * is replaced in place: fc_doc_slot_for). With
 * settings.processes (and no total time budget) it runs in passes, each a worker
 * process (/proc/self/exe __rounds, fc_rounds_worker) that measures one round of
 * every job still open, so a record's rounds come from separate processes spread
 * over the sweep; else every job in this process, each to the end of its rounds.
 * Stops early (doc->complete stays false) on *interrupt or when
 * settings.max_time_total runs out; in passes it keeps the records that have two
 * rounds or more (stop rule "interrupted", inconclusive below the minimum of
 * rounds). Returns 0 when the loop ran (records may still have failed), -1 when
 * an observer failed or no worker could start; then too the records closed are
 * in doc, those of the passes added after the failure without the observer. */
int fc_calibrate(fc_session *s, const fc_plan *plan, const fc_settings *set, fc_doc *doc, const fc_observer *obs,
                 volatile sig_atomic_t *interrupt, fc_err *e);

/* The test hook FUSECAL_TEST_FAST=1: the shortest stopping settings (2 rounds of
 * 2 sample tuples, no minimum time, 1 ms of samples per variant) replace whatever
 * the command line, a sweep or a baseline says, and `run` ends a sweep after
 * FC_TEST_FAST_TOTAL_S (its records so far kept, complete: false). For tests of
 * what the commands do (tests/cli_readme.sh runs README.md's commands with it),
 * never of what they measure: the commands say so on stderr. Returns whether it
 * applied. */
#define FC_TEST_FAST_TOTAL_S 5.0
bool fc_test_fast_settings(fc_settings *s);

/* Measures one job into r (used by fc_calibrate and by tests). */
void fc_measure_job(fc_session *s, const fc_job *job, const fc_settings *set, const fc_workload *w,
                    const fc_reference *ref, volatile sig_atomic_t *interrupt, fc_record *r, bool *interrupted);

#endif
