/* continue.h — carrying on a calibration document: `--resume` finishes an
 * interrupted one with the command that made it, `--append` adds this run's
 * problems to one. Either way the document's settings and host must be this
 * run's (else its records would not be comparable), the jobs it already holds
 * are not measured again, and the run is added to its history. */
#ifndef FC_CONTINUE_H
#define FC_CONTINUE_H

#include "calibrate.h"

typedef struct fc_continuation {
    const char *path; /* NULL: a fresh document */
    bool resume;      /* finish it (else: add to it) */
    fc_doc prev;
    bool loaded;
    bool was_complete; /* what `complete` the result may claim, whatever this run does */
} fc_continuation;

/* Loads the document at path (path NULL: a fresh run, nothing to load). */
int fc_continue_load(fc_continuation *c, const char *path, bool resume, fc_err *e);
/* The command line that made the document, as a command's argv ("run", ...,
 * without the program's name): *argv holds n strings and a NULL; free each and it. */
int fc_continue_argv(const fc_continuation *c, int *argc, char ***argv, fc_err *e);
/* Refuses a run whose settings are not the document's. */
int fc_continue_check_settings(const fc_continuation *c, const fc_settings *set, fc_err *e);
/* Drops from the plan the jobs whose (problem, backend) the document holds;
 * returns how many. Records an interrupt closed early (stop rule "interrupted")
 * are measured again when the plan has their problem and backend, and stay in
 * the document until their new records replace them (fc_calibrate). */
int fc_continue_drop_measured(fc_continuation *c, fc_plan *plan);
/* The document this run writes into doc (an empty fc_doc_init one): a fresh one
 * with these settings, argv, host and ceilings; or the previous one, refused
 * when it was measured on another host or library build, with its records,
 * settings, host and ceilings and a history entry for this run's argv. Takes
 * host, ceilings and argv over (freed on failure). */
int fc_continue_begin(fc_continuation *c, const fc_settings *set, cJSON *host, cJSON *ceilings, cJSON *argv,
                      fc_doc *doc, fc_err *e);
/* After the calibration: the document is complete only when the one it carries
 * on was too (or is being finished), and no record in it was closed early by an
 * interrupt. */
void fc_continue_end(const fc_continuation *c, fc_doc *doc);
void fc_continue_free(fc_continuation *c);

#endif
