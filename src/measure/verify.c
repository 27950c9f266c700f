/* verify.c — see verify.h. */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

int fc_reference_build(const fc_problem *p, const fc_workload *w, uint64_t seed, fc_reference *ref)
{
    memset(ref, 0, sizeof *ref);
    double t0 = fc_now();
    const fc_family *f = fc_family_of(p->pat);
    size_t n = w->out_n;
    ref->full = (double)n * f->ref_cost(p) <= FC_VERIFY_FULL_BUDGET || n <= FC_VERIFY_SAMPLES;
    if (ref->full) {
        ref->n = n;
        ref->idx = fc_xmalloc(n * sizeof *ref->idx);
        for (size_t i = 0; i < n; i++) ref->idx[i] = i;
    } else {
        /* the whole first and last row (where tiles begin and end; up to a quarter of
         * the samples each), then random elements */
        ref->n = FC_VERIFY_SAMPLES;
        ref->idx = fc_xmalloc(ref->n * sizeof *ref->idx);
        size_t row = w->out_row ? w->out_row : 1, edge = row < ref->n / 4 ? row : ref->n / 4, k = 0;
        for (size_t i = 0; i < edge; i++) {
            ref->idx[k++] = i;
            ref->idx[k++] = n - 1 - i;
        }
        fc_rng rng;
        fc_rng_seed(&rng, seed);
        while (k < ref->n) ref->idx[k++] = fc_rng_below(&rng, n);
        qsort(ref->idx, ref->n, sizeof *ref->idx, cmp_size); /* walk memory in order */
    }
    ref->val = fc_xmalloc(ref->n * sizeof *ref->val);
    size_t zeros = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : zeros)
    for (size_t i = 0; i < ref->n; i++) {
        ref->val[i] = f->reference(p, w, ref->idx[i]);
        zeros += ref->val[i] == 0.0;
    }
    ref->zero_frac = ref->n ? (double)zeros / (double)ref->n : 0;
    ref->ms = (fc_now() - t0) * 1e3;
    return 0;
}

void fc_reference_free(fc_reference *ref)
{
    free(ref->idx);
    free(ref->val);
    memset(ref, 0, sizeof *ref);
}

#define REF_FILE_MAGIC 0x66637266u /* "fcrf" */

typedef struct ref_file_head {
    uint32_t magic;
    char key[256];
    size_t n;
    bool full;
    double zero_frac, ms;
} ref_file_head;

int fc_reference_save(const fc_reference *ref, const char *key, const char *path)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp) return -1;
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    ref_file_head h;
    memset(&h, 0, sizeof h);
    h.magic = REF_FILE_MAGIC;
    snprintf(h.key, sizeof h.key, "%s", key);
    h.n = ref->n;
    h.full = ref->full;
    h.zero_frac = ref->zero_frac;
    h.ms = ref->ms;
    bool ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(ref->idx, sizeof *ref->idx, ref->n, f) == ref->n &&
              fwrite(ref->val, sizeof *ref->val, ref->n, f) == ref->n;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0) return 0;
    remove(tmp);
    return -1;
}

bool fc_reference_load(fc_reference *ref, const char *key, const char *path)
{
    memset(ref, 0, sizeof *ref);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    ref_file_head h;
    bool ok = fread(&h, sizeof h, 1, f) == 1 && h.magic == REF_FILE_MAGIC && h.n > 0 && h.n <= ((size_t)1 << 32) &&
              !strncmp(h.key, key, sizeof h.key - 1);
    if (ok) {
        ref->idx = fc_xmalloc(h.n * sizeof *ref->idx);
        ref->val = fc_xmalloc(h.n * sizeof *ref->val);
        ok = fread(ref->idx, sizeof *ref->idx, h.n, f) == h.n && fread(ref->val, sizeof *ref->val, h.n, f) == h.n &&
             fgetc(f) == EOF;
    }
    fclose(f);
    if (!ok) {
        fc_reference_free(ref);
        return false;
    }
    ref->n = h.n;
    ref->full = h.full;
    ref->zero_frac = h.zero_frac;
    ref->ms = h.ms;
    return true;
}

double fc_reference_tolerance(const fc_problem *p, const fc_reference *ref)
{
    if (!ref || !ref->n) return fc_problem_tolerance(p);
    double sq = 0;
    size_t nonzero = 0;
    for (size_t i = 0; i < ref->n; i++) {
        sq += ref->val[i] * ref->val[i];
        nonzero += ref->val[i] != 0.0;
    }
    return fc_problem_tolerance_for(p, (double)nonzero, nonzero ? sqrt(sq / (double)nonzero) : INFINITY);
}

void fc_check_output(const fc_reference *ref, const float *out, size_t out_n, double tol, fc_check *c)
{
    memset(c, 0, sizeof *c);
    c->tol = tol;
    c->checked = ref->n;
    c->sampled = !ref->full;
    size_t nonfinite = 0, zeros = 0;
#pragma omp parallel for simd reduction(+ : nonfinite, zeros)
    for (size_t i = 0; i < out_n; i++) {
        nonfinite += !isfinite(out[i]);
        zeros += out[i] == 0.0f;
    }
    c->nonfinite = nonfinite;
    c->zero_frac = out_n ? (double)zeros / (double)out_n : 0;
    double num = 0, den = 0, maxabs = 0;
    for (size_t i = 0; i < ref->n; i++) {
        double o = out[ref->idx[i]], r = ref->val[i];
        if (!isfinite(o)) continue;
        double d = fabs(o - r);
        num += d * d;
        den += r * r;
        if (d > maxabs) maxabs = d;
    }
    c->rel_err = den > 0 ? sqrt(num / den) : sqrt(num);
    c->max_abs_err = maxabs;
    if (nonfinite) {
        c->passed = false;
        snprintf(c->reason, sizeof c->reason, "%zu of %zu outputs are NaN or infinite (unwritten or overflowed)",
                 nonfinite, out_n);
    } else if (!(c->rel_err <= tol)) {
        c->passed = false;
        snprintf(c->reason, sizeof c->reason, "relative error %.3g exceeds tolerance %.3g", c->rel_err, tol);
    } else {
        c->passed = true;
    }
    /* After benchdnn's "mistrusted": a result made mostly of exact zeros proves
     * little, unless the reference itself is that sparse (ReLU, causal masks). */
    c->trusted = c->passed;
    if (c->passed && c->zero_frac > 0.30 && c->zero_frac > ref->zero_frac + 0.10) {
        c->trusted = false;
        snprintf(c->reason, sizeof c->reason, "%.0f%% of outputs are exact zeros (reference: %.0f%%)",
                 100 * c->zero_frac, 100 * ref->zero_frac);
    }
}

double fc_rel_diff(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den)
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}
