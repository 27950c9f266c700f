/* verify.h — numeric verification against a float64 reference.
 *
 * The reference is computed once per problem, on every output element when that is
 * cheap and on a random sample (at least 1024 elements, always the first and the
 * last) when it is not. Each variant's output, produced into a buffer poisoned with
 * NaN, must have no non-finite element, and its relative L2 error ‖out−ref‖/‖ref‖
 * over the checked elements must be within the problem's tolerance (precision.h).
 */
#ifndef FC_VERIFY_H
#define FC_VERIFY_H

#include "measures.h"
#include "pattern.h"
#include "precision.h"

#define FC_VERIFY_SAMPLES 4096
#define FC_VERIFY_FULL_BUDGET 4e7 /* multiply-adds below which every element is checked */

typedef struct fc_reference {
    size_t n;         /* elements checked */
    size_t *idx;      /* their indices in the output */
    double *val;      /* float64 reference values */
    bool full;        /* every element */
    double zero_frac; /* fraction of exact zeros in the reference */
    double ms;        /* time it took */
} fc_reference;

int fc_reference_build(const fc_problem *p, const fc_workload *w, uint64_t seed, fc_reference *ref);
void fc_reference_free(fc_reference *ref);

/* A reference in a file, so that the worker processes of one run build each
 * problem's once (calibrate.c): key says what it is the reference of (problem and
 * seed). Save writes path atomically (a temporary name, then rename) and returns 0
 * or -1; load fills ref and returns true only from a whole file of the same key. */
int fc_reference_save(const fc_reference *ref, const char *key, const char *path);
bool fc_reference_load(fc_reference *ref, const char *key, const char *path);

/* Problem p's tolerance over the reference's nonzero values (precision.h: wider
 * over few outputs). */
double fc_reference_tolerance(const fc_problem *p, const fc_reference *ref);
/* Checks out[0..out_n) against the reference with tolerance tol. */
void fc_check_output(const fc_reference *ref, const float *out, size_t out_n, double tol, fc_check *c);
/* ‖a − b‖ / ‖b‖ over n elements (fused against unfused). */
double fc_rel_diff(const float *a, const float *b, size_t n);

#endif
