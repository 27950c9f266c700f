/* rounds_wire.h — how the rounds of a sweep travel between `fusecal run` and its
 * worker processes (calibrate.c): a worker is this program again (/proc/self/exe
 * __rounds), fed on its stdin the settings and a list of (job, round, backend,
 * problem); for each it builds the problem's inputs from the run's seed, reads its
 * float64 reference from the run's folder of references (or builds it there, in the
 * problem's first round), runs that one round (setup, verification, timing,
 * teardown) and writes back on its stdout what the round gave. Both ends are the
 * same binary, so the structs travel as bytes. */
#ifndef FC_ROUNDS_WIRE_H
#define FC_ROUNDS_WIRE_H

#include "bench.h"
#include "calibrate.h"
#include "verify.h"

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#define WIRE_MAGIC 0x66637277u /* "fcrw" */

/* a job's round, as the parent asks for it */
typedef struct wire_item {
    int job, round;
    bool beside;      /* measure the bandwidth beside the round (the parent's judgement: job_beside) */
    bool peak_beside; /* measure the arithmetic peak beside it (job_peak_beside) */
    char backend[32];
    char problem[256];
} wire_item;

/* after the items: the run's folder of float64 references, which the worker of a
 * problem's first round writes and the later ones read ("" for none) */
typedef struct wire_cache {
    char dir[256];
} wire_cache;

/* A fresh folder under $TMPDIR (else /tmp) for the run's references; dir stays ""
 * when none can be made (each round then builds its own). Close removes the folder
 * and the files in it. */
void fc_wire_cache_open(wire_cache *c);
void fc_wire_cache_close(wire_cache *c);

/* what a round gave, as the worker answers; its samples follow it */
typedef struct wire_head {
    int job, round, rc; /* rc as one_round's */
    fc_status status;
    char reason[sizeof((fc_record *)0)->reason];
    int nvar, ngraph;
    bool has_control, verified;
    double setup_ms, prepare_ms, reference_ms, fused_vs_unfused;
    fc_impl impl[FC_MAX_VARIANTS];
    fc_check check[FC_MAX_VARIANTS];
    bool stable[FC_MAX_VARIANTS];
    fc_round_rec rr;
} wire_head;

typedef struct wire_samples {
    int n, batch;
    double sampled_s;
} wire_samples;

bool fc_wire_put(FILE *f, const void *p, size_t n);
/* Reads n bytes; false on end of file, an error or an interrupt. */
bool fc_wire_get(FILE *f, void *p, size_t n);
/* The samples of nvar variants (each a count, a batch, the seconds sampled, then the
 * samples); fc_wire_get_samples allocates them. */
bool fc_wire_put_samples(FILE *f, const fc_samples *smp, int nvar);
bool fc_wire_get_samples(FILE *f, fc_samples *smp, int nvar);
/* Starts a worker (with the process's CPU set, not only the CPU the calling thread is
 * pinned to); *to and *from are its stdin and stdout. Returns its pid, or -1. */
pid_t fc_wire_spawn_worker(FILE **to, FILE **from, fc_err *e);

#endif
