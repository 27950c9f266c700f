/* predict.h — what fusion does at problems nobody measured, from calibration
 * records: a latency model per machine, backend and problem class fitted to the
 * records, its predictions with intervals and decisions, a summary over a list of
 * sites with multiplicities (the problems of a network), and the model's
 * leave-one-out validation against the uncalibrated roofline.
 *
 * The model, per machine, backend and class (pattern, dtype, layout and switches
 * such as causal=1: what changes the implementation, not the size):
 *
 *   fused   t_f = o_f + F / (e_F·C_F) + [(B_f − S_f)·g(B_f − S_f) + S_f] / (e_B·C_B)
 *   unfused t_u = k·t_f·t̂_f(S_u)/t̂_f(S_f) + o_u + (B_u − B_f)·g(B_u − S_u) / (e_u·C_B)
 *   g(b)    = min(1, (C_D / bw(φ·b))^γ)     with the device's measured curve
 *   g(b)    = h₂/c₂ + (h₃ − h₂)/c₃ + (1 − h₃),  h₃ = min(1, LLC/b), h₂ = min(1, MLC/b)  without
 *
 * g is the traffic's time per byte relative to DRAM's. Where the records' device
 * measured its bandwidth by working set (a warm copy's and triad's rate bw at
 * footprints from 32 KiB to past the LLC, the ceilings' bandwidth_by_footprint, ended
 * by C_D, the device-memory ceiling), g follows that curve: a working set of b bytes on
 * paper counts as φ·b of the copy's (φ in [1, 2]: look-ahead, write-allocated lines and
 * the other operands fill the cache before the bytes on paper do), and the variant
 * gains γ of what the copy gains there (both fitted per variant). The curve says where
 * the caches stop helping as these VMs have them: the Zen 4 VM's copy falls from 198
 * GB/s at 16 MB to 143 at its 32 MB L3 and 98 at 64 MB, where a share of LLC/b still
 * put half of the traffic in cache; the Intel VM's falls from 196 GB/s at 2 MB to 55
 * at 8 MB, under a 260 MB L3 the sizes' shares counted whole; the Zen 5 VM names no
 * cache sizes at all. Leave-one-out on the four committed standard CPU calibrations,
 * sizes' shares → curve: decisions reproduced 263 → 279 of 315 (Zen 4), 302 → 303 of
 * 331 (Zen 4, AVX2 only), 197 → 210 of 297 (Zen 5), 143 → 144 of 240 (Intel); p90
 * latency error unfused / fused 30.2 / 30.8 → 31.9 / 28.7 %, 33.0 / 31.9 → 33.1 /
 * 30.9 %, 33.7 / 24.5 → 24.7 / 20.8 %, 35.0 / 26.6 → 27.0 / 25.1 %; rerun95 coverage
 * 93.9 → 91.6 %, 94.3 → 94.1 %, 96.1 → 95.0 %, 94.4 → 95.3 %. Without a curve (older
 * documents, GPUs), the sizes' shares: the share of b that fits in the mid-level
 * caches the run's threads have (on a CPU its cores' L2s; none on a GPU)
 * moves c₂ times faster, the share that fits only in the last-level cache c₃ times
 * (c₂ ≥ c₃ ≥ 1, both fitted per variant), the rest at the ceiling's rate.
 *
 * F the useful FLOPs, B_f and B_u the bytes each variant moves on paper, C_F and
 * C_B the measured ceilings the record names. S_f and S_u are the bytes of those that
 * each variant writes past the caches (streaming stores; the record's streamed_bytes,
 * or where it does not say, and for a problem not measured, fc_backend.streamed_bytes
 * at the document's LLC; 0 where the backend says nothing): they go to memory
 * whatever the cache holds, and the rest is what competes for it. The unfused chain does the
 * fused form's work as the chain streams it: t̂_f(S) is the fused form at S streamed
 * bytes, 1 where both stream alike. fusecal's CPU norms stream from the LLC's size on,
 * the fused add + RMSNorm h and y, its chain y alone: at 512 × 4096 (33.5 MB, the Zen 4
 * VM's LLC) the chain's h stays in cache, the fused h goes to memory, and fusion
 * measures 0.98–1.02 where the model without S predicted 1.6, which widened the whole
 * class's intervals. Leave-one-out on the four committed standard CPU calibrations,
 * decisions reproduced 263 → 278 of 332 (Zen 4) and 297 → 302 of 331 (Zen 4, AVX2
 * only); the other two, where no record streams (an LLC of 260 MB, none named),
 * unchanged; fused p90 error 35.7 → 30.5 % and 33.1 → 31.9 %; rerun95 coverage 93.9
 * → 93.4 % and 94.3 → 94.3 %. The fused form is a roofline with
 * fitted efficiencies and a fixed per-call cost whose compute and memory times add
 * rather than overlap (the max of the two): with the efficiencies fitted, the sum
 * also follows the problems bound by neither, skinny GEMMs and stencils, whose time
 * the max puts at the larger bound alone (leave-one-out on the committed standard
 * calibrations, fused p90 error max → sum: Intel 36.2 → 25.2 %, AMD 29.8 → 24.1 %;
 * unfused 38.6 → 32.7 % and 22.7 → 24.2 %). The unfused chain is the fused
 * form's work (k: how the library's unfused main op compares with the fused one)
 * plus the passes fusion removes, which write and re-read the intermediates
 * (memory-bound) and cost launches of their own. Parameters are fitted by
 * minimising a Huber loss of the log residuals (δ = 0.05: noise below 5 % counts
 * quadratically, misfits linearly), with weak priors that keep an efficiency the
 * data cannot see at the ceiling and k near 1.
 *
 * The speedup's intervals come from the speedup's own errors: each record held out
 * of both fits in turn and its speedup predicted by the others (ŝ = t_u/t_f), s the
 * root mean square of the log residuals (n of them; for a problem inside the
 * records' span, those of the records that lay inside the others' span; for one
 * beyond it, those of the records that lay beyond the others' span, shrunk toward
 * the median of the machine's other classes' such spread² as below). An extrapolation
 * errs more than an interpolation, and with the spread of all records its intervals
 * were too narrow: leave-one-out on the four committed standard CPU calibrations, the
 * rerun95 intervals of the records beyond the others' span held 76.9 / 89.4 / 91.7 /
 * 93.0 % of their measured speedups (Zen 4, Zen 4 AVX2 only, Zen 5, Intel), those
 * inside 95.6–96.2 %; with their own spread 90.4 / 92.3 / 92.7 / 90.7 %, all records
 * 94.8 / 94.8 / 95.3 / 94.7 % (were 91.6 / 94.1 / 95.0 / 95.3); decisions reproduced
 * 279 → 272, 303 → 300, 210 → 213, 144 → 145. A held-out residual is the model's
 * error at the problem plus the record's measurement error (the spread of its own
 * speedup estimate, σ_m, from its interval), so
 *   rerun95  exp(± t(n − 1) · s): where a measurement of the problem would fall
 *            (what leave-one-out checks: its coverage);
 *   ci95     exp(± t(n − 1) · √max(s² − σ̄_m², s²/4)): the problem's speedup itself,
 *            the measurement's share taken out (at most halving the spread), as a
 *            record's ci95 is of the speedup its run estimates; the decision is
 *            made on it, as a record's is on its ci95.
 *
 *
 * The speedup is corrected locally: a class's held-out residuals are not one
 * population but vary with the problem (a library's other kernel over a range of
 * sizes leaves a bias the forms cannot see, shared by that range's records), so ŝ
 * is multiplied by exp of the weighted mean of the held-out residuals of the
 * FC_PREDICT_LOCAL records nearest to the problem (weights 1/(d₀ + d), d the distance
 * over the log sizes of the problems' dims, d₀ = FC_PREDICT_LOCAL_D0); the intervals
 * keep one spread for the class, that of the corrected residuals (each held-out
 * residual less the correction its FC_PREDICT_LOCAL nearest other records give it:
 * the error of the predictor as it is used, which is what the intervals describe;
 * against the uncorrected residuals' spread, on three standard calibrations (AMD of
 * 657d92b and of 012dc40, Intel of 3fda440) decisions reproduced 166 → 168, 157 →
 * 155 and 128 → 129, rerun95 coverage 93.8 → 94.3 %, 94.1 → 94.3 % and 95.0 →
 * 95.9 %). The latencies stay the forms'. Leave-one-out, the speedup
 * error median / p90 and decisions reproduced without → with the correction: the
 * Intel standard calibration of 52b7dbf 4.0 / 20.5 % → 3.7 / 15.8 %, 51.3 → 53.8 %;
 * its rerun at 3fda440 4.3 / 23.0 % → 3.4 / 18.0 %, 51.2 → 53.3 %; AMD 2.5 / 22.3 % →
 * 2.2 / 21.0 %, 49.6 → 50.0 %. (A local spread as well, the rms of the nearest
 * records' corrected residuals, gave 57.3 % on the first but 45.4 % on AMD: left
 * out.)
 *
 * The speedup's error grows with what fusion saves: a speedup near 1 is two nearly
 * equal times whose ratio the forms get right to a per cent or two, a speedup of 2
 * rests on the removed passes' fitted cost (on the four committed standard CPU
 * calibrations, the median held-out |log error| is 1.2 % where the predicted saving
 * 1 − 1/ŝ is below 0.05, 2.2, 3.4 and 6.5 % up to 0.1, 0.2 and 0.35, and 7.9 %
 * beyond). So the spreads are of the residuals over the saving weight
 * w(x) = FC_PREDICT_SAVING_W0 + |1 − 1/x|, each at the larger of its record's two
 * savings, the one predicted (ŝ, as used) and the one measured (s): an error is as
 * large as the saving there is or the saving predicted, whichever is the larger (a
 * prediction of 1.0 where fusion saves 15 % missed a 15 % saving). A prediction's
 * intervals follow the same rule on each side: the log half-width x toward the end
 * at ŝ·e^(±x) is the least x = t·s·max(w(ŝ), w(ŝ·e^(±x))), so the side away from 1
 * is wider than w(ŝ) alone makes it, the side toward 1 not (and a loss's side that
 * no x bounds is a millionfold). Against w at the prediction alone, over the
 * committed sweeps of the four CPU folders (31, validated by one build: the
 * residuals scaled so and the intervals w(ŝ)'s): decisions reproduced 7040 → 7168
 * of 9020 (the newest Zen 5 sweep 312 → 322 of 350), contradicted 22 → 30, rerun95
 * coverage per folder 94.2 / 94.9 / 94.6 / 94.4 → 94.7 / 94.9 / 94.8 / 96.8 %
 * (Zen 4, Zen 4 AVX2 only, Zen 5, Intel); the residuals so scaled with intervals
 * of w(ŝ) alone 7555 but coverage 91.3–92.4 % (too narrow for what they claim),
 * w at the measured saving alone 7086 with 53 contradicted. Scaled so, the classes of
 * a machine have comparable spreads, and a class's few records (4–13: t(n − 1) up
 * to 3.2) borrow from the others: its spread² and noise² are shrunk toward the
 * median over the machine's other fitted classes, which counts as
 * FC_PREDICT_PRIOR_RECORDS records (degrees of freedom n − 1 + that), as one
 * pools variances across many small groups (a moderated t). Leave-one-out on the
 * four committed standard CPU calibrations (AVX2 and AVX-512 Zen 3/4, Zen 5, Intel),
 * decisions reproduced 679 → 771 of 1126 (60.3 → 68.5 %), rerun95 coverage 94.3 /
 * 94.5 / 93.9 / 95.9 % → 93.1 / 96.3 / 96.1 / 94.7 %; the weight alone 695, the
 * pooling of unscaled spreads alone 604 (the near-1 classes' small spreads pulled
 * up, the others' down: 4 contradicted). */
#ifndef FC_PREDICT_H
#define FC_PREDICT_H

#include "record.h"
#include "registry.h"

/* Records a class needs before the model predicts: three parameters per variant
 * and one degree of freedom for the residual spread. */
enum { FC_PREDICT_MIN_RECORDS = 4 };
/* Held-out records inside the others' span a class needs before an interpolation
 * takes their spread rather than every record's. */
enum { FC_PREDICT_MIN_INSIDE = 4 };
/* How far the model goes beyond the measured span: FLOPs and each variant's bytes
 * within [smallest / 4, largest · 4] of the class's records. Leave-one-out on the
 * committed standard CPU calibration predicted problems up to 4x beyond the others
 * as well as those inside (median speedup error 1–4 %); at 8x below the smallest
 * (128³ GEMMs, where the per-call cost dominates) latency errors reached 30–90 %. */
#define FC_PREDICT_SPAN 4.0
/* How many nearest measured problems a prediction names. */
enum { FC_PREDICT_NEAREST = 2 };
/* The local correction's records (the comment at the top) and the distance that
 * keeps a weight finite. */
enum { FC_PREDICT_LOCAL = 4 };
#define FC_PREDICT_LOCAL_D0 0.25
/* The saving weight's floor and the weight of the machine's pooled spread, in
 * records (the comment at the top); the pool needs FC_PREDICT_PRIOR_CLASSES other
 * fitted classes. On the same four calibrations, W0 0.05 / 0.1 / 0.2 with 5 / 10 /
 * 20 records reproduced 65.6–72.1 % of the decisions; every pair but this one and
 * (0.1, 5), (0.2, 5) put some machine's coverage below 93 % (91.6 % at 0.05 with
 * 10 or 20 records, where the most decisions were). */
#define FC_PREDICT_SAVING_W0 0.1
#define FC_PREDICT_PRIOR_RECORDS 10
enum { FC_PREDICT_PRIOR_CLASSES = 3 };

/* The bandwidth a document's device reached by working set, warm (its ceilings'
 * bandwidth_by_footprint, ascending footprints), ended by the device-memory ceiling at
 * twice the last footprint where that is lower (on a CPU the ceiling's copy runs over
 * two arrays of the last footprint each; a GPU's over larger ones, past its L2 all
 * the same); n = 0 where none was measured. */
typedef struct fc_cache_curve {
    int n;
    double footprint[FC_MAX_BW_POINTS], gbs[FC_MAX_BW_POINTS];
} fc_cache_curve;

/* One record as the model sees it. */
typedef struct fc_obs {
    const fc_record *rec;
    double flops;
    double bytes[FC_NVARIANTS];    /* on paper, unfused and fused */
    double streamed[FC_NVARIANTS]; /* of those, written past the caches (the comment at the top) */
    double ceil_gflops, ceil_gbs;
    double llc_bytes;        /* the device's last-level cache (0: unknown) */
    double mlc_bytes;        /* the mid-level caches the run's threads have: L2 per core x threads (0: none) */
    fc_cache_curve curve;    /* its device's bandwidth by working set */
    double ms[FC_NVARIANTS]; /* measured medians */
    double ms_base;          /* the median its decisive speedup is over the fused one's: the control's where
                              * the fusion split decided (fc_record_decisive_base), else the unfused chain's */
    double speedup;          /* the record's speedup estimate (the one its decision used) */
    double speedup_sd;       /* its measurement error: the standard deviation of its log, from its ci95 */
} fc_obs;

/* A fitted variant. Fused: overhead_ms, eff_flops, eff_bw. Unfused: k,
 * overhead_ms and eff_bw of the removed passes. */
typedef struct fc_fit {
    double overhead_ms;
    double eff_flops;
    double eff_bw;
    /* the cache term (predict.h's top): with the records' measured curve, */
    double cache_exp;     /* γ: how far the variant follows the curve (0: not at all, 1: as a copy) */
    double cache_ws;      /* φ: its working set as the curve counts it, per byte on paper (1 to 2) */
    fc_cache_curve curve; /* the curve (n = 0: none measured, the sizes' shares instead) */
    /* ... without one, from the cache sizes: */
    double cache;     /* how much faster traffic that fits in the last-level cache moves (c₃ >= 1) */
    double cache_mlc; /* ... and traffic that fits in the mid-level caches (c₂ >= c₃) */
    double llc_bytes; /* the last-level cache of the records it was fitted to (0: unknown) */
    double mlc_bytes; /* their mid-level caches (0: none) */
    double k;
    double spread; /* 1.4826 × the median absolute leave-one-out log residual: a robust standard
                    * deviation of the error at a problem the fit has not seen (the unfused
                    * form's given the measured fused time) */
} fc_fit;

/* A class's fit: both forms, and the spreads of its speedup. Where records of the
 * class were decided on the fusion split (a control measured: the fused form changes
 * more than the fusion), the unfused form is fitted once more to the decisive base
 * times (the controls', the unfused chains' elsewhere): base, whose time over the
 * fused form's is the speedup the model predicts and decides on. */
typedef struct fc_class_fit {
    fc_fit v[FC_NVARIANTS];
    bool has_base; /* some record was decided on the fusion split: base is fitted */
    fc_fit base;
    double spread;        /* root mean square of the held-out log speedup residuals, locally corrected,
                           * each over its saving weight (fc_saving_weight) */
    double spread_inside; /* ... of the records that lie inside the others' span (0: too few) */
    int n_inside;         /* those records */
    double spread_beyond; /* ... of the others, which lie beyond the others' span (0: none) */
    int n_beyond;         /* those records */
    double noise;         /* the records' measurement error of their log speedups (root mean square),
                           * each over the same weight */
    int n;                /* records */
    double *held;         /* each record's held-out log speedup residual (n; owned) */
} fc_class_fit;

/* predict_fit.c: the two forms fitted to n records, each record held out of both
 * in turn for the spreads. */
void fc_fit_class(const fc_obs *o, int n, fc_class_fit *f);
void fc_class_fit_free(fc_class_fit *f);
/* Distance between two problems of a class: over the log sizes of their dims (not
 * the derived ones or switches). */
double fc_problem_distance(const fc_problem *a, const fc_problem *b);
/* The k records of o[0..n) nearest to problem p, in idx[] nearest first with their
 * distances in d[]; returns how many (at most k). */
int fc_nearest_records(const fc_obs *o, int n, const fc_problem *p, int k, int *idx, double *d);
/* The local correction of a log speedup at problem p from the class's n records o
 * (fitted to f): the weighted mean of their held-out residuals (predict.h's top). */
double fc_local_correction(const fc_class_fit *f, const fc_obs *o, const fc_problem *p);

double fc_fit_fused_ms(const fc_fit *f, double flops, double bytes_fused, double streamed_fused, double ceil_gflops,
                       double ceil_gbs);
double fc_fit_unfused_ms(const fc_fit *f, const fc_fit *fused, double fused_ms, double flops,
                         const double bytes[FC_NVARIANTS], const double streamed[FC_NVARIANTS], double ceil_gflops,
                         double ceil_gbs);
/* The uncalibrated roofline: max(F / C_F, B / C_B), in ms. */
double fc_roofline_ms(double flops, double bytes, double ceil_gflops, double ceil_gbs);

/* The saving weight at a speedup s: FC_PREDICT_SAVING_W0 + |1 − 1/s|. */
double fc_saving_weight(double s);
/* A held-out residual's weight: the saving weight at the larger of the saving
 * predicted (ŝ) and the saving measured (s), as the comment at the top says. */
double fc_residual_weight(double predicted, double measured);
/* The log half-width x on one side of a predicted speedup s (dir +1 above, −1
 * below) for k = t·spread: the least x with x = k·max(w(s), w(s·e^(dir·x))), w the
 * saving weight; log(FC_PREDICT_UNBOUNDED) where none is below it (a loss the
 * spread cannot bound). */
double fc_weighted_half_width(double s, double k, int dir);
/* What an interval side is when the spread cannot bound it: a millionfold. */
#define FC_PREDICT_UNBOUNDED 1e6
/* The spread a class's intervals use (the comment at the top): its own (scaled)
 * spread and noise over n records, shrunk toward a pool's; n_eff the degrees of
 * freedom plus one, for the t quantile. */
typedef struct fc_spread_prior {
    double spread2, noise2; /* the pool's squared spread and noise (medians over classes) */
    int classes;            /* how many classes it is over; 0: no pool */
    double spread2_beyond;  /* the squared spread of the records beyond the others' span (median over the classes
                             * with such records) */
    int classes_beyond;     /* how many classes that is over */
} fc_spread_prior;
/* A class's intervals at a predicted speedup s: its (scaled) spread and noise over n
 * records, shrunk toward the prior's where it has one (NULL: none), each side's log
 * half-width from fc_weighted_half_width (the comment at the top). */
void fc_class_intervals(double s, double spread, double noise, int n, const fc_spread_prior *prior, fc_ratio_ci *out);
/* The model's estimate for problem p of cost (flops, bytes) under the given
 * ceilings: both latencies, the base's (the control's where the class has the fusion
 * split decide: fc_class_fit; else the unfused one) and the speedup with its
 * intervals (the comment at the top): with the records o the fit was made from,
 * locally corrected; with o NULL, the forms' ŝ = t_base/t_f. prior: the machine's
 * pool the class's spread is shrunk toward (NULL or none: the class's alone). */
void fc_model_estimate(const fc_class_fit *fit, const fc_spread_prior *prior, const fc_obs *o, const fc_problem *p,
                       double flops, const double bytes[FC_NVARIANTS], const double streamed[FC_NVARIANTS],
                       double ceil_gflops, double ceil_gbs, bool inside, double ms[FC_NVARIANTS], double *base_ms,
                       fc_ratio_ci *speedup);
/* Whether FLOPs and both variants' bytes lie inside the records' span (between
 * their smallest and largest): an interpolation, whose errors are the held-out
 * errors of the records inside the others' span; beyond it (up to
 * FC_PREDICT_SPAN), those of all records. */
bool fc_model_inside(const fc_obs *o, int n, double flops, const double bytes[FC_NVARIANTS]);
/* The intervals around a predicted speedup s from a predictor's held-out spread
 * and the records' noise over n records: lo/hi the speedup's (ci95), rerun_lo/hi a
 * measurement's (rerun95). */
void fc_speedup_intervals(double s, double spread, double noise, int n, fc_ratio_ci *out);
/* The speedup's spread from n held-out log residuals: their root mean square (about
 * zero: a predictor's bias is part of its error). Its held-out residuals have heavy
 * tails (a class's smallest and largest problems, held out, lie outside what the
 * others span), which a median-based spread leaves out: on the committed standard
 * calibrations the model's 95 % intervals held 89.4 % (Intel) and 84.9 % (AMD) of the
 * held-out measured speedups with 1.4826 × median |r|, 93.5 and 92.8 % with this. */
double fc_speedup_spread(const double *r, int n);
/* The records' measurement error of their log speedups: the root mean square of
 * their speedup_sd. */
double fc_obs_noise(const fc_obs *o, int n);
/* Whether FLOPs and both variants' bytes lie within FC_PREDICT_SPAN of the
 * records' span; when not, why in why[n]. */
bool fc_model_within_span(const fc_obs *o, int n, double flops, const double bytes[FC_NVARIANTS], char *why,
                          size_t nwhy);

/* The records of one machine, backend and class. */
typedef struct fc_model_class {
    int machine;
    char backend[32];
    char cls[96]; /* "linear_bias_relu fp32", "conv_bn fp32 nhwc", "attention fp32 causal=0 decode" */
    fc_obs *obs;
    int n, cap;
    bool fitted;
    fc_class_fit fit;
} fc_model_class;

typedef struct fc_model_machine {
    char name[192]; /* "AMD EPYC (vm, family 26 model 2, AVX-512 BF16 kernels, 2 threads, warm cache)" */
    char device[16];
} fc_model_machine;

typedef struct fc_model_backend {
    int machine;
    char backend[32];
} fc_model_backend;

typedef struct fc_model {
    const fc_registry *reg; /* the backends that say what their variants stream (NULL: none) */
    fc_model_machine *machine;
    int nmachines;
    fc_model_backend *pair; /* every machine and backend with a record */
    int npairs;
    fc_model_class *cls;
    int ncls;
} fc_model;

/* Gathers the usable records of the documents (status ok, both variants timed,
 * ceilings known; of a problem measured twice on one machine and backend, the
 * later document's) and fits each class with enough of them. The documents must
 * outlive the model. */
void fc_model_build(fc_model *m, const fc_doc *docs, int ndocs, const fc_registry *reg);
void fc_model_free(fc_model *m);
/* The pool of the machine's fitted classes other than skip (NULL: all of them). */
void fc_model_prior(const fc_model *m, int machine, const fc_model_class *skip, fc_spread_prior *out);
/* The class a problem belongs to, as fc_model_class.cls spells it. */
void fc_problem_class(const fc_problem *p, char *buf, size_t n);

/* ------------------------------------------------------------------ predictions */

/* A problem a network (or the command line) asks about. */
typedef struct fc_site {
    fc_problem prob;
    double multiplicity; /* how many times it runs per inference */
    const char *name;    /* its name in the model, or NULL */
} fc_site;

#define FC_PRED_SOURCE_LIST(X)         \
    X(FC_SRC_, MEASURED, "measured")   \
    X(FC_SRC_, PREDICTED, "predicted") \
    X(FC_SRC_, UNKNOWN, "unknown")
typedef enum { FC_PRED_SOURCE_LIST(FC_VOCAB_ENUM) FC_NSOURCES } fc_pred_source;
const char *fc_pred_source_name(fc_pred_source s);

typedef struct fc_prediction {
    int site;    /* index into the sites */
    int machine; /* index into the model's machines */
    char backend[32];
    fc_pred_source source;
    double unfused_ms, fused_ms; /* 0 when unknown */
    double control_ms;           /* the decisive speedup's base where it is the control's (the fusion split
                                  * decides: measured, its median; predicted, the model's); else 0 */
    fc_ratio_ci speedup;
    double threshold;
    fc_decision decision; /* meaningless when unknown */
    char reason[320];     /* unknown: why; predicted: which class and how many records */
    int nnearest;
    const fc_record *nearest[FC_PREDICT_NEAREST]; /* the closest measured problems of the class */
    const fc_record *record;                      /* measured: the record */
    const fc_model_class *cls;                    /* predicted: the fitted class */
} fc_prediction;

/* "yes", "no", "inconclusive" or "unknown". */
const char *fc_prediction_decision(const fc_prediction *p);

/* For each site and each machine and backend of the model, in that order: the
 * record when there is one, else the model's prediction, else unknown with the
 * reason. *out is allocated (free it); returns the count. */
int fc_predict_sites(const fc_model *m, const fc_site *sites, int nsites, fc_prediction **out);

/* What fusing a list of sites saves on one machine and backend. Savings are per
 * inference: multiplicity × (unfused − fused), the control's time in place of the
 * unfused one's where the fusion split decides (control_ms). The interval adds the sites'
 * interval bounds (saving at the speedup's low and high ends): sites of one class
 * share the model's error, so none is assumed to cancel another. */
typedef struct fc_predict_summary {
    int machine;
    char backend[32];
    int sites, known, fuse, losing; /* sites; with an answer; decided yes; whose speedup interval lies below 1 */
    double unfused_ms;              /* the known sites' unfused time */
    double saving_ms, saving_lo, saving_hi; /* fusing every yes site */
} fc_predict_summary;

/* One summary per machine and backend of the predictions; *out is allocated. */
int fc_predict_summarize(const fc_model *m, const fc_site *sites, const fc_prediction *p, int np,
                         fc_predict_summary **out);

/* ------------------------------------------------------------------ validation */

/* Figures of one predictor over the held-out records. */
typedef struct fc_loo_figures {
    int n;                                            /* records it predicted (errors are over these) */
    double median_err[3], p90_err[3];                 /* |predicted/measured − 1|: unfused, fused, speedup */
    int decided;                                      /* records decided yes or no */
    int reproduced, contradicted, undecided, unknown; /* of the decided: same, opposite, inconclusive, none */
    int point_reproduced; /* decided records whose speedup estimate falls on the record's side */
    double coverage;      /* held-out speedups inside the predicted rerun95 (a measurement's interval) */
} fc_loo_figures;

enum { FC_LOO_MODEL, FC_LOO_ROOFLINE, FC_LOO_NPREDICTORS };

typedef struct fc_loo_row {
    const fc_model_class *cls;
    const fc_record *rec;
    bool known;                                  /* the model predicted it */
    char reason[320];                            /* why not */
    double ms[FC_LOO_NPREDICTORS][FC_NVARIANTS]; /* predicted unfused, fused */
    fc_ratio_ci speedup[FC_LOO_NPREDICTORS];
    fc_decision decision[FC_LOO_NPREDICTORS];
} fc_loo_row;

typedef struct fc_validation {
    fc_loo_row *row;
    int n;
    fc_loo_figures fig[FC_LOO_NPREDICTORS];
} fc_validation;

/* Leave-one-out over every record of the model's classes: each record predicted
 * by the model fitted to the others of its class (the same span and record rules
 * as a prediction), and by the uncalibrated roofline, whose interval is its
 * residual spread over the same others. */
void fc_predict_validate(const fc_model *m, fc_validation *v);
void fc_validation_free(fc_validation *v);

/* ------------------------------------------------------------------ JSON */

/* The documents (schemas/predict.schema.json): predictions with their summary, or
 * a validation. inputs names the calibration files; query[i] is site i as given. */
cJSON *fc_predict_json(const fc_model *m, const char *const *inputs, int ninputs, const fc_site *sites,
                       const char *const *query, int nsites, const fc_prediction *p, int np);
cJSON *fc_validation_json(const fc_model *m, const char *const *inputs, int ninputs, const fc_validation *v);

#define FC_PREDICT_VERSION 1

#endif
