/* predict_validate.c — leave-one-out over the records of the model's classes,
 * for the model and for the uncalibrated roofline (predict.h). */
#include "predict.h"
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double measured_speedup(const fc_record *r) { return fc_record_decisive_speedup(r)->ratio; }

/* The uncalibrated roofline: each variant at the measured ceilings, no overhead;
 * its intervals from its log speedup residuals over the training records, by the
 * model's rule. */
static void roofline_row(const fc_obs *train, int n, const fc_obs *o, fc_loo_row *row)
{
    double *ms = row->ms[FC_LOO_ROOFLINE];
    for (int v = 0; v < FC_NVARIANTS; v++) ms[v] = fc_roofline_ms(o->flops, o->bytes[v], o->ceil_gflops, o->ceil_gbs);
    /* one training record says nothing about the spread: a millionfold interval,
     * unbounded for any decision yet a number a document can hold */
    double spread = log(1e6) / fc_t975(1), noise = 0;
    if (n >= 2) {
        double *a = fc_xmalloc((size_t)n * sizeof *a);
        for (int i = 0; i < n; i++) {
            const fc_obs *t = &train[i];
            double sr = fc_roofline_ms(t->flops, t->bytes[FC_UNFUSED], t->ceil_gflops, t->ceil_gbs) /
                        fc_roofline_ms(t->flops, t->bytes[FC_FUSED], t->ceil_gflops, t->ceil_gbs);
            a[i] = log(t->speedup) - log(sr);
        }
        spread = fc_speedup_spread(a, n);
        noise = fc_obs_noise(train, n);
        free(a);
    }
    fc_ratio_ci *ci = &row->speedup[FC_LOO_ROOFLINE];
    memset(ci, 0, sizeof *ci);
    fc_speedup_intervals(ms[FC_UNFUSED] / ms[FC_FUSED], spread, noise, n >= 2 ? n : 2, ci);
    row->decision[FC_LOO_ROOFLINE] = fc_decide(ci, o->rec->threshold);
}

static void model_row(const fc_model_class *c, const fc_spread_prior *prior, const fc_obs *train, int n,
                      const fc_obs *o, fc_loo_row *row)
{
    if (n < FC_PREDICT_MIN_RECORDS) {
        snprintf(row->reason, sizeof row->reason, "%d other record%s of %s; the model needs %d", n, n == 1 ? "" : "s",
                 c->cls, FC_PREDICT_MIN_RECORDS);
        return;
    }
    if (!fc_model_within_span(train, n, o->flops, o->bytes, row->reason, sizeof row->reason)) return;
    fc_class_fit fit;
    fc_fit_class(train, n, &fit);
    fc_model_estimate(&fit, prior, train, &o->rec->prob, o->flops, o->bytes, o->streamed, o->ceil_gflops, o->ceil_gbs,
                      fc_model_inside(train, n, o->flops, o->bytes), row->ms[FC_LOO_MODEL], NULL,
                      &row->speedup[FC_LOO_MODEL]);
    row->decision[FC_LOO_MODEL] = fc_decide(&row->speedup[FC_LOO_MODEL], o->rec->threshold);
    row->known = true;
    fc_class_fit_free(&fit);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* |predicted/measured − 1| of latency v (or of the speedup, v = FC_NVARIANTS) */
static double rel_err(const fc_loo_row *row, int p, int v)
{
    const fc_record *r = row->rec;
    if (v == FC_NVARIANTS) return fabs(row->speedup[p].ratio / measured_speedup(r) - 1);
    return fabs(row->ms[p][v] / r->v[v].lat.median - 1);
}

static bool decided(fc_decision d) { return d == FC_DECIDE_YES || d == FC_DECIDE_NO; }

static void decisions(const fc_validation *v, int p, fc_loo_figures *f)
{
    for (int i = 0; i < v->n; i++) {
        const fc_loo_row *row = &v->row[i];
        const fc_record *r = row->rec;
        if (!decided(r->decision)) continue;
        f->decided++;
        if (p == FC_LOO_MODEL && !row->known) {
            f->unknown++;
            continue;
        }
        fc_decision d = row->decision[p];
        if (d == r->decision) f->reproduced++;
        else if (decided(d))
            f->contradicted++;
        else
            f->undecided++;
        bool above = row->speedup[p].ratio > r->threshold;
        f->point_reproduced += above == (r->decision == FC_DECIDE_YES);
    }
}

/* Errors over the records the model predicted, for both predictors alike. */
static void figures(const fc_validation *v, int p, fc_loo_figures *f)
{
    memset(f, 0, sizeof *f);
    double *e = fc_xmalloc((v->n > 0 ? (size_t)v->n : 1) * sizeof *e);
    for (int q = 0; q <= FC_NVARIANTS; q++) {
        int n = 0;
        for (int i = 0; i < v->n; i++)
            if (v->row[i].known) e[n++] = rel_err(&v->row[i], p, q);
        qsort(e, (size_t)n, sizeof *e, cmp_double);
        f->median_err[q] = n ? fc_percentile_sorted(e, n, 0.5) : NAN;
        f->p90_err[q] = n ? fc_percentile_sorted(e, n, 0.9) : NAN;
        f->n = n;
    }
    free(e);
    int covered = 0;
    for (int i = 0; i < v->n; i++) {
        const fc_loo_row *row = &v->row[i];
        double s = measured_speedup(row->rec);
        if (row->known) covered += s >= row->speedup[p].rerun_lo && s <= row->speedup[p].rerun_hi;
    }
    f->coverage = f->n ? (double)covered / f->n : NAN;
    decisions(v, p, f);
}

void fc_predict_validate(const fc_model *m, fc_validation *v)
{
    memset(v, 0, sizeof *v);
    int total = 0;
    for (int c = 0; c < m->ncls; c++) total += m->cls[c].n;
    v->row = fc_xcalloc(total > 0 ? (size_t)total : 1, sizeof *v->row);
    for (int c = 0; c < m->ncls; c++) {
        const fc_model_class *cl = &m->cls[c];
        fc_spread_prior prior; /* of the machine's other classes: none has seen this class's records */
        fc_model_prior(m, cl->machine, cl, &prior);
        fc_obs *train = fc_xmalloc((size_t)cl->n * sizeof *train);
        for (int i = 0; i < cl->n; i++) {
            int n = 0;
            for (int j = 0; j < cl->n; j++)
                if (j != i) train[n++] = cl->obs[j];
            fc_loo_row *row = &v->row[v->n++];
            row->cls = cl;
            row->rec = cl->obs[i].rec;
            model_row(cl, &prior, train, n, &cl->obs[i], row);
            roofline_row(train, n, &cl->obs[i], row);
        }
        free(train);
    }
    for (int p = 0; p < FC_LOO_NPREDICTORS; p++) figures(v, p, &v->fig[p]);
}

void fc_validation_free(fc_validation *v)
{
    free(v->row);
    memset(v, 0, sizeof *v);
}
