/* test_predict.c — the latency model of `fusecal predict` on synthetic
 * calibrations whose latencies follow a known roofline: an unmeasured problem
 * predicted within 1 %, the records' own numbers for a measured one, refusal
 * beyond the measured span and below the minimum of records, classes kept apart,
 * the later document's record, the summary's arithmetic, leave-one-out on exact
 * and on noisy data, outputs streamed past the caches, and the JSON documents against
 * schemas/predict.schema.json. */
#include "embedded.h"
#include "jsonfile.h"
#include "jsonschema.h"
#include "predict.h"
#include "stats.h"
#include "test.h"

/* The machine: ceilings 100 GFLOP/s and 20 GB/s. The truth: fused reaches 60 % of
 * the FLOP ceiling and 50 % of the bandwidth after 0.05 ms per call, its compute and
 * memory times adding; the unfused chain takes 1.05 x the fused work, 0.02 ms more per call, and moves the bytes
 * fusion removes at 80 % of the bandwidth. */
#define CEIL_GF 100.0
#define CEIL_GBS 20.0
static const fc_fit truth_fused = {.overhead_ms = 0.05, .eff_flops = 0.6, .eff_bw = 0.5, .k = 1};
static const fc_fit truth_unfused = {.overhead_ms = 0.02, .eff_bw = 0.8, .k = 1.05};

static fc_problem problem(const char *s)
{
    fc_problem p;
    fc_err e;
    if (fc_problem_parse(s, NULL, &p, &e) != 0) {
        fprintf(stderr, "bad test problem '%s': %s\n", s, e.msg);
        abort();
    }
    return p;
}

/* The caches of the two-level case (two_cache_levels): none unless set. Traffic that
 * fits in the cores' L2s (MLC bytes) moves C2 times faster than DRAM, traffic that
 * fits only in the L3 (LLC bytes) C3 times. */
static double truth_llc, truth_mlc;
/* the FLOP ceiling the records name (the two-level case raises it so that the norms'
 * compute time, which adds to every cache regime alike, does not blur the factors) */
static double truth_gf = CEIL_GF;
#define TRUTH_C3 3.0
#define TRUTH_C2 5.0

/* The measured curve's case (measured_cache_curve): the device's bandwidth by working
 * set, GB/s at footprints in MiB, ending above DRAM's CEIL_GBS; a variant's working
 * set counts TRUTH_PHI of its bytes, and it gains TRUTH_GAMMA of the copy's gain. */
static bool truth_curve;
static const double curve_mib[] = {0.03125, 1, 8, 16, 32, 64}, curve_gbs[] = {200, 150, 120, 90, 40, 25};
#define TRUTH_GAMMA 0.8
#define TRUTH_PHI 1.5

/* the curve's rate at b bytes, written out: log-log between points, its ends beyond,
 * and DRAM's at twice the last footprint */
static double truth_curve_gbs(double b)
{
    size_t n = FC_ARRAY_LEN(curve_mib);
    double fp[8], gb[8];
    for (size_t i = 0; i < n; i++) {
        fp[i] = curve_mib[i] * 1048576;
        gb[i] = curve_gbs[i];
    }
    fp[n] = 2 * fp[n - 1];
    gb[n++] = CEIL_GBS;
    if (b <= fp[0]) return gb[0];
    for (size_t i = 1; i < n; i++)
        if (b <= fp[i])
            return exp(log(gb[i - 1]) + log(b / fp[i - 1]) / log(fp[i] / fp[i - 1]) * log(gb[i] / gb[i - 1]));
    return gb[n - 1];
}

/* time per byte of b relative to DRAM's, the shares written out by hand */
static double truth_cache(double b)
{
    if (truth_curve) return fmin(1, pow(CEIL_GBS / truth_curve_gbs(TRUTH_PHI * b), TRUTH_GAMMA));
    if (!(truth_llc > 0)) return 1;
    double in_l3 = b <= truth_llc ? 1 : truth_llc / b, in_l2 = b <= truth_mlc ? 1 : truth_mlc / b;
    return in_l2 / TRUTH_C2 + (in_l3 - in_l2) / TRUTH_C3 + (1 - in_l3);
}

/* The streamed outputs' case (streamed_outputs): from the LLC's size on, the fused
 * add_rmsnorm writes y and h past the caches, the unfused chain y alone (as
 * fusecal's CPU kernels do); the test backend says so to the model. */
static bool truth_streams;

static double test_streamed_bytes(const fc_problem *p, fc_variant v, double llc)
{
    fc_cost c = {0};
    fc_family_of(p->pat)->cost(p, &c);
    if (!(llc > 0) || c.bytes[FC_FUSED] < llc || v == FC_CONTROL) return 0;
    double y = 4.0 * (double)p->d[FC_NORM_M] * (double)p->d[FC_NORM_N];
    return v == FC_FUSED ? 2 * y : y;
}

/* whether the records say what they streamed (fc_impl.streamed_bytes), as a document
 * of this build's does; else the model asks the backend */
static bool g_streamed_records;

/* the fused form's time where s of its bytes go past the caches */
static double truth_fused_ms(const fc_cost *c, double s)
{
    const fc_fit *f = &truth_fused;
    double compute = c->flops / (f->eff_flops * truth_gf * 1e6), cached = c->bytes[FC_FUSED] - s;
    return f->overhead_ms + compute + (cached * truth_cache(cached) + s) / (f->eff_bw * CEIL_GBS * 1e6);
}

/* The truth written out, not through the model's functions, so that a broken form
 * cannot agree with itself: ms = FLOPs / (GFLOP/s · 1e6) + bytes / (GB/s · 1e6). The
 * unfused chain does the fused form's work as the chain streams it. */
static void truth(const fc_problem *p, double ms[FC_NVARIANTS])
{
    fc_cost c = {0};
    fc_family_of(p->pat)->cost(p, &c);
    const fc_fit *u = &truth_unfused;
    double s[FC_NVARIANTS] = {0};
    for (int v = 0; truth_streams && v < FC_NVARIANTS; v++) s[v] = test_streamed_bytes(p, (fc_variant)v, truth_llc);
    ms[FC_FUSED] = truth_fused_ms(&c, s[FC_FUSED]);
    ms[FC_UNFUSED] = u->k * truth_fused_ms(&c, s[FC_UNFUSED]) + u->overhead_ms +
                     (c.bytes[FC_UNFUSED] - c.bytes[FC_FUSED]) * truth_cache(c.bytes[FC_UNFUSED] - s[FC_UNFUSED]) /
                         (u->eff_bw * CEIL_GBS * 1e6);
}

/* A record of problem s on backend b whose latencies are the truth times noise. */
static void add_record(fc_doc *d, const char *s, const char *backend, double noise_u, double noise_f)
{
    fc_record *r = fc_doc_add(d);
    r->prob = problem(s);
    fc_problem_string(&r->prob, r->problem, sizeof r->problem);
    fc_strlcpy(r->device, "cpu", sizeof r->device);
    fc_strlcpy(r->backend, backend, sizeof r->backend);
    r->status = FC_STATUS_OK;
    r->threshold = 1.1;
    r->ceil_gflops = truth_gf;
    r->ceil_gbs = CEIL_GBS;
    fc_cost c = {0};
    fc_family_of(r->prob.pat)->cost(&r->prob, &c);
    r->flops = c.flops;
    double ms[FC_NVARIANTS];
    truth(&r->prob, ms);
    ms[FC_UNFUSED] *= noise_u;
    ms[FC_FUSED] *= noise_f;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        r->v[v].bytes = c.bytes[v];
        r->v[v].lat.median = ms[v];
        /* what it streamed, as a record says (streamed_records), else unknown */
        r->v[v].impl.streamed_bytes = truth_streams && g_streamed_records
                                          ? test_streamed_bytes(&r->prob, (fc_variant)v, truth_llc)
                                          : -1;
    }
    double sp = ms[FC_UNFUSED] / ms[FC_FUSED];
    r->speedup = (fc_ratio_ci){.ratio = sp, .lo = sp * 0.99, .hi = sp * 1.01};
    r->decision = fc_decide(&r->speedup, r->threshold);
    r->rounds = 3;
}

static void doc_init(fc_doc *d, const char *hostname)
{
    fc_doc_init(d);
    d->settings.threads = 2;
    d->host = cJSON_Parse("{\"devices\": {\"cpu\": {\"model\": \"Test CPU 9000\"}}}");
    cJSON_AddStringToObject(d->host, "hostname", hostname);
}

/* A ladder of linear_bias_relu problems spanning memory- and compute-bound:
 * m from 8 to 2048 at two widths, and a few other shapes. */
static const char *const ladder[] = {
    "linear_bias_relu:m=8,k=1024,n=1024",    "linear_bias_relu:m=32,k=1024,n=1024",
    "linear_bias_relu:m=128,k=1024,n=1024",  "linear_bias_relu:m=512,k=1024,n=1024",
    "linear_bias_relu:m=2048,k=1024,n=1024", "linear_bias_relu:m=8,k=4096,n=4096",
    "linear_bias_relu:m=64,k=4096,n=4096",   "linear_bias_relu:m=512,k=4096,n=4096",
    "linear_bias_relu:m=256,k=256,n=256",    "linear_bias_relu:m=1024,k=512,n=2048",
};

static void ladder_doc(fc_doc *d, int n, const char *backend)
{
    doc_init(d, "host-a");
    for (int i = 0; i < n; i++) add_record(d, ladder[i], backend, 1, 1);
}

static fc_site site(const char *s, double mult) { return (fc_site){.prob = problem(s), .multiplicity = mult}; }

/* the registry the model asks what a backend streams: none, or the test's */
static const fc_registry *g_reg;

static void predict_one(const fc_doc *d, int nd, const char *s, fc_prediction *out)
{
    fc_model m;
    fc_model_build(&m, d, nd, g_reg);
    fc_site st = site(s, 1);
    fc_prediction *p;
    int np = fc_predict_sites(&m, &st, 1, &p);
    CHECK(np == 1);
    *out = p[0];
    free(p);
    fc_model_free(&m);
}

/* The prediction for query from d: predicted by the model, both latencies within 1 %
 * of the truth; the truth's speedup in *s. */
static void predicted_within_1pct(const fc_doc *d, const char *query, fc_prediction *p, double *s)
{
    predict_one(d, 1, query, p);
    fc_problem q = problem(query);
    double ms[FC_NVARIANTS];
    truth(&q, ms);
    CHECK_MSG(p->source == FC_SRC_PREDICTED, "%s: %s (%s)", query, fc_pred_source_name(p->source), p->reason);
    CHECK_MSG(fabs(p->unfused_ms / ms[FC_UNFUSED] - 1) < 0.01, "%s: unfused %g, truth %g", query, p->unfused_ms,
              ms[FC_UNFUSED]);
    CHECK_MSG(fabs(p->fused_ms / ms[FC_FUSED] - 1) < 0.01, "%s: fused %g, truth %g", query, p->fused_ms, ms[FC_FUSED]);
    *s = ms[FC_UNFUSED] / ms[FC_FUSED];
}

/* The prediction for query from d misses the truth's fused latency by more than 5 %
 * (what a model without some term must do) */
static void fused_missed(const fc_doc *d, const char *query, const char *without)
{
    fc_prediction p;
    predict_one(d, 1, query, &p);
    double t[FC_NVARIANTS];
    fc_problem q = problem(query);
    truth(&q, t);
    CHECK_MSG(p.source == FC_SRC_PREDICTED && fabs(p.fused_ms / t[FC_FUSED] - 1) > 0.05, "%s, fused %g against %g",
              without, p.fused_ms, t[FC_FUSED]);
}

/* ------------------------------------------------------------------ cases */

static void known_roofline_within_1pct(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    const char *queries[] = {"linear_bias_relu:m=96,k=2048,n=2048", "linear_bias_relu:m=16,k=4096,n=2048",
                             "linear_bias_relu:m=1536,k=1024,n=1024", "linear_bias_relu:m=300,k=700,n=900",
                             "linear_bias_relu:m=32,k=256,n=512"};
    for (size_t i = 0; i < FC_ARRAY_LEN(queries); i++) {
        fc_prediction p;
        double s;
        predicted_within_1pct(&d, queries[i], &p, &s);
        CHECK_MSG(fabs(p.speedup.ratio / s - 1) < 0.01, "%s: speedup %g, truth %g", queries[i], p.speedup.ratio, s);
        CHECK(p.speedup.lo <= p.speedup.ratio && p.speedup.ratio <= p.speedup.hi);
        CHECK(p.decision == fc_decide(&p.speedup, 1.1));
        CHECK(p.nnearest == FC_PREDICT_NEAREST);
    }
    fc_doc_free(&d);
}

/* the fitted parameters are the truth's */
static void fit_recovers_parameters(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted && m.cls[0].n == (int)FC_ARRAY_LEN(ladder));
    const fc_fit *f = &m.cls[0].fit.v[FC_FUSED], *u = &m.cls[0].fit.v[FC_UNFUSED];
    CHECK_NEAR(f->eff_flops, truth_fused.eff_flops, 0.01 * truth_fused.eff_flops);
    CHECK_NEAR(f->eff_bw, truth_fused.eff_bw, 0.01 * truth_fused.eff_bw);
    CHECK_NEAR(u->k, truth_unfused.k, 0.01);
    CHECK(f->spread < 1e-3 && u->spread < 1e-3 && m.cls[0].fit.spread < 1e-3);
    /* the records' noise: each one's ci95 (±1 %, 3 rounds) over its t quantile, over
     * its saving weight (the held-out predictions are the truth's speedups, to the
     * fits' precision, and so are the measured ones) */
    double sd = log(1.01 / 0.99) / (2 * fc_t975(2)), nn = 0;
    for (int i = 0; i < m.cls[0].n; i++) nn += pow(sd / fc_saving_weight(m.cls[0].obs[i].speedup), 2);
    CHECK_NEAR(m.cls[0].fit.noise, sqrt(nn / m.cls[0].n), 1e-3 * m.cls[0].fit.noise);
    CHECK(m.cls[0].fit.noise > sd); /* every weight below 1 */
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* A record measured beside another fusecal run (contended) is not fitted: its times
 * are the two runs' together. One of the ladder so marked and slowed down 2x leaves
 * the class one record short and the fit the truth's. */
static void contended_left_out(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    d.rec[0].contended = true;
    for (int v = 0; v < FC_NVARIANTS; v++) d.rec[0].v[v].lat.median *= 2;
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].n == (int)FC_ARRAY_LEN(ladder) - 1);
    CHECK_NEAR(m.cls[0].fit.v[FC_FUSED].eff_flops, truth_fused.eff_flops, 0.01 * truth_fused.eff_flops);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* The two cache levels' machine (16 MiB L3, 1 MiB L2 x 2 threads, a FLOP ceiling high
 * enough that the norms' compute time does not blur the cache factors) and a
 * document of add_rmsnorm records on it, m over ms[n] at n = 1024; undone by
 * cache_truth_reset. */
static void cache_ladder_doc(fc_doc *d, const int *ms, size_t n)
{
    truth_llc = 16 << 20;
    truth_mlc = 2.0 * (1 << 20);
    truth_gf = 100 * CEIL_GF;
    doc_init(d, "host-a");
    cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->host, "devices"), "cpu");
    cJSON *cb = cJSON_AddObjectToObject(cpu, "cache_bytes");
    cJSON_AddNumberToObject(cb, "L2", 1 << 20);
    cJSON_AddNumberToObject(cb, "L3", truth_llc);
    for (size_t i = 0; i < n; i++) {
        char s[64];
        snprintf(s, sizeof s, "add_rmsnorm:m=%d,n=1024", ms[i]);
        add_record(d, s, "cpu.openblas", 1, 1);
    }
}

static void cache_truth_reset(void)
{
    truth_llc = truth_mlc = 0;
    truth_gf = CEIL_GF;
}

/* A host block with no cache sizes (a VM whose /sys has no cache directory) but the
 * LLC the kernels took (llc_assumed_bytes): the model's records take that LLC; with
 * neither, none (0); with both, the named L3. */
static void assumed_llc(void)
{
    const double want[] = {24 << 20, 0, 16 << 20};
    for (int k = 0; k < 3; k++) {
        fc_doc d;
        ladder_doc(&d, 4, "cpu.openblas");
        cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d.host, "devices"), "cpu");
        if (k != 1) cJSON_AddNumberToObject(cpu, "llc_assumed_bytes", 24 << 20);
        if (k == 2) cJSON_AddNumberToObject(cJSON_AddObjectToObject(cpu, "cache_bytes"), "L3", 16 << 20);
        fc_model m;
        fc_model_build(&m, &d, 1, NULL);
        CHECK(m.ncls == 1 && m.cls[0].n == 4);
        for (int i = 0; i < m.cls[0].n; i++) CHECK_NEAR(m.cls[0].obs[i].llc_bytes, want[k], 0.5);
        fc_model_free(&m);
        fc_doc_free(&d);
    }
}

/* Memory-bound problems from inside the cores' L2s to past the L3: the model reads
 * both cache sizes from the host block (L2 per core x threads), fits both factors
 * and predicts a problem in each regime within 1 %. */
static void two_cache_levels(void)
{
    const int ms[] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    fc_doc d;
    cache_ladder_doc(&d, ms, FC_ARRAY_LEN(ms));
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted);
    const fc_fit *f = &m.cls[0].fit.v[FC_FUSED];
    CHECK_NEAR(f->mlc_bytes, truth_mlc, 1);
    CHECK_NEAR(f->cache, TRUTH_C3, 0.03 * TRUTH_C3);
    CHECK_NEAR(f->cache_mlc, TRUTH_C2, 0.03 * TRUTH_C2);
    fc_model_free(&m);
    /* 384 KiB in the L2s, 6 MiB in the L3, 96 MiB mostly past it */
    const char *queries[] = {"add_rmsnorm:m=24,n=1024", "add_rmsnorm:m=384,n=1024", "add_rmsnorm:m=6000,n=1024"};
    for (size_t i = 0; i < FC_ARRAY_LEN(queries); i++) {
        fc_prediction p;
        double s;
        predicted_within_1pct(&d, queries[i], &p, &s);
    }
    fc_doc_free(&d);
    cache_truth_reset();
}

/* A device that measured its bandwidth by working set: the model follows the curve
 * the document carries (ceilings.cpu.bandwidth_by_footprint, ended by the ceiling's
 * bandwidth), fits how far each variant follows it and how its working set counts,
 * and predicts problems in the L2s, on the curve's fall and past it within 1 %. The
 * same records without the curve (and no cache sizes) miss by more than 5 %. */
static void measured_cache_curve(void)
{
    const int ms[] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};
    truth_curve = true;
    truth_gf = 100 * CEIL_GF;
    fc_doc d;
    doc_init(&d, "host-a");
    for (size_t i = 0; i < FC_ARRAY_LEN(ms); i++) {
        char s[64];
        snprintf(s, sizeof s, "add_rmsnorm:m=%d,n=1024", ms[i]);
        add_record(&d, s, "cpu.openblas", 1, 1);
    }
    d.ceilings = cJSON_CreateObject();
    cJSON *cpu = cJSON_AddObjectToObject(d.ceilings, "cpu");
    cJSON_AddNumberToObject(cpu, "bandwidth_gbs", CEIL_GBS);
    cJSON *curve = cJSON_AddArrayToObject(cpu, "bandwidth_by_footprint");
    for (size_t i = 0; i < FC_ARRAY_LEN(curve_mib); i++) {
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddNumberToObject(pt, "footprint_bytes", curve_mib[i] * 1048576);
        cJSON_AddNumberToObject(pt, "gbs", curve_gbs[i]);
        cJSON_AddItemToArray(curve, pt);
    }
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted);
    const fc_fit *f = &m.cls[0].fit.v[FC_FUSED], *u = &m.cls[0].fit.v[FC_UNFUSED];
    CHECK(f->curve.n == (int)FC_ARRAY_LEN(curve_mib) + 1 && f->curve.gbs[f->curve.n - 1] == CEIL_GBS);
    CHECK_NEAR(f->cache_exp, TRUTH_GAMMA, 0.03 * TRUTH_GAMMA);
    CHECK_NEAR(f->cache_ws, TRUTH_PHI, 0.03 * TRUTH_PHI);
    CHECK_NEAR(f->eff_bw, truth_fused.eff_bw, 0.02 * truth_fused.eff_bw);
    CHECK(u->spread < 0.01 && m.cls[0].fit.spread < 0.02);
    fc_model_free(&m);
    /* 384 KiB, 12 MiB (the fall begins at 1.5 x), 24 MiB, 96 MiB (past the curve) */
    const char *queries[] = {"add_rmsnorm:m=24,n=1024", "add_rmsnorm:m=768,n=1024", "add_rmsnorm:m=1536,n=1024",
                             "add_rmsnorm:m=6000,n=1024"};
    for (size_t i = 0; i < FC_ARRAY_LEN(queries); i++) {
        fc_prediction p;
        double s;
        predicted_within_1pct(&d, queries[i], &p, &s);
    }
    cJSON_Delete(d.ceilings);
    d.ceilings = NULL;
    fused_missed(&d, queries[2], "without the curve");
    fc_doc_free(&d);
    truth_curve = false;
    truth_gf = CEIL_GF;
}

/* add_rmsnorm from in the L2s to past the L3, its outputs streamed from the LLC's size
 * on (test_streamed_bytes): told what each variant streams, by the records or by the
 * backend, the model predicts within 1 % on both sides of the LLC, and at the LLC's
 * size a speedup below 1 (the fused h goes to memory, the chain's stays in cache);
 * told by neither, it misses there. */
static void streamed_outputs_told(bool by_records)
{
    static fc_backend test_backend = {.name = "cpu.openblas", .device = "cpu", .streamed_bytes = test_streamed_bytes};
    static fc_registry reg;
    reg.backend[FC_BK_cpu_openblas] = &test_backend;
    truth_streams = true;
    g_streamed_records = by_records;
    const int ms[] = {8, 16, 32, 96, 128, 256, 512, 1536, 2048, 3072, 4096, 8192};
    fc_doc d;
    cache_ladder_doc(&d, ms, FC_ARRAY_LEN(ms));
    /* 768 KiB in the L2s, 12 MiB in the L3, 16 MiB (streamed, the LLC's size), 48 MiB */
    const char *queries[] = {"add_rmsnorm:m=48,n=1024", "add_rmsnorm:m=768,n=1024", "add_rmsnorm:m=1024,n=1024",
                             "add_rmsnorm:m=3000,n=1024"};
    if (by_records) { /* no backend to ask: the fit's parameters are the truth's */
        fc_model m;
        fc_model_build(&m, &d, 1, NULL);
        CHECK(m.ncls == 1 && m.cls[0].fitted);
        const fc_fit *f = &m.cls[0].fit.v[FC_FUSED], *u = &m.cls[0].fit.v[FC_UNFUSED];
        CHECK_NEAR(f->eff_bw, truth_fused.eff_bw, 0.02 * truth_fused.eff_bw);
        CHECK_NEAR(f->cache, TRUTH_C3, 0.03 * TRUTH_C3);
        CHECK(u->spread < 0.01);
        CHECK(m.cls[0].fit.spread < 0.02);
        fc_model_free(&m);
    }
    g_reg = &reg;
    for (size_t i = 0; i < FC_ARRAY_LEN(queries); i++) {
        fc_prediction p;
        double s;
        predicted_within_1pct(&d, queries[i], &p, &s);
        if (i == 2) CHECK_MSG(s < 1 && p.speedup.ratio < 1, "at the LLC: truth %g, predicted %g", s, p.speedup.ratio);
    }
    g_reg = NULL;
    if (!by_records) fused_missed(&d, queries[2], "not told what streams"); /* told by neither */
    fc_doc_free(&d);
    cache_truth_reset();
    truth_streams = g_streamed_records = false;
}

/* the records of a document written before they said what they streamed: the backend
 * tells the model */
static void streamed_outputs(void) { streamed_outputs_told(false); }
/* a document of this build's: the records tell it, without a backend to ask (and the
 * backend the queries') */
static void streamed_outputs_recorded(void) { streamed_outputs_told(true); }

static void measured_problem_is_its_record(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    fc_prediction p;
    predict_one(&d, 1, "linear_bias_relu:m=512,k=1024,n=1024,dtype=fp32", &p);
    CHECK(p.source == FC_SRC_MEASURED && p.record == &d.rec[3]);
    CHECK(p.unfused_ms == d.rec[3].v[FC_UNFUSED].lat.median && p.fused_ms == d.rec[3].v[FC_FUSED].lat.median);
    CHECK(p.speedup.lo == d.rec[3].speedup.lo && p.decision == d.rec[3].decision);
    CHECK(!strcmp(p.reason, "a record of this problem"));
    /* a record whose decision the state check withheld: inconclusive, and says why */
    d.rec[3].decision = FC_DECIDE_INCONCLUSIVE;
    d.rec[3].state =
        (fc_state){.made = true, .span = 2.5, .rounds_against = 3, .said = FC_DECIDE_YES, .withheld = true};
    predict_one(&d, 1, "linear_bias_relu:m=512,k=1024,n=1024,dtype=fp32", &p);
    CHECK(p.source == FC_SRC_MEASURED && p.decision == FC_DECIDE_INCONCLUSIVE);
    CHECK_STR_CONTAINS(p.reason, "its interval's yes withheld");
    fc_doc_free(&d);
}

static void refuses_beyond_span(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    fc_prediction p;
    /* 4x above the largest FLOPs is the edge; beyond it, unknown */
    predict_one(&d, 1, "linear_bias_relu:m=8192,k=4096,n=4096", &p);
    CHECK(p.source == FC_SRC_UNKNOWN);
    CHECK_STR_CONTAINS(p.reason, "above the measured");
    CHECK_STR_CONTAINS(p.reason, "4x beyond at most");
    CHECK(!strcmp(fc_prediction_decision(&p), "unknown"));
    predict_one(&d, 1, "linear_bias_relu:m=1,k=64,n=64", &p);
    CHECK(p.source == FC_SRC_UNKNOWN);
    CHECK_STR_CONTAINS(p.reason, "below the measured");
    /* within 4x of the largest FLOPs (3x): predicted */
    predict_one(&d, 1, "linear_bias_relu:m=1536,k=4096,n=4096", &p);
    CHECK_MSG(p.source == FC_SRC_PREDICTED, "%s", p.reason);
    fc_doc_free(&d);
}

static void needs_min_records(void)
{
    fc_doc d;
    ladder_doc(&d, FC_PREDICT_MIN_RECORDS - 1, "cpu.openblas");
    fc_prediction p;
    predict_one(&d, 1, "linear_bias_relu:m=64,k=1024,n=1024", &p);
    CHECK(p.source == FC_SRC_UNKNOWN);
    CHECK_STR_CONTAINS(p.reason, "3 records of linear_bias_relu fp32; the model needs 4");
    CHECK(p.nnearest == 2 && !strcmp(p.nearest[0]->problem, "linear_bias_relu:m=32,k=1024,n=1024,dtype=fp32"));
    /* another pattern or dtype: no record of its class */
    predict_one(&d, 1, "linear_bias_gelu:m=64,k=1024,n=1024", &p);
    CHECK(p.source == FC_SRC_UNKNOWN);
    CHECK_STR_CONTAINS(p.reason, "no record of linear_bias_gelu fp32");
    fc_doc_free(&d);
}

static void classes_apart(void)
{
    char a[96], b[96];
    fc_problem p = problem("conv_bn_relu:n=1,c=8,h=8,w=8,k=8,layout=nchw");
    fc_problem_class(&p, a, sizeof a);
    CHECK(!strcmp(a, "conv_bn_relu fp32 nchw"));
    p = problem("conv_bn_relu:n=1,c=8,h=8,w=8,k=8");
    fc_problem_class(&p, b, sizeof b);
    CHECK(!strcmp(b, "conv_bn_relu fp32 nhwc"));
    /* groups: dense, grouped and depthwise apart */
    p = problem("conv_bn_relu:n=1,c=8,h=8,w=8,k=8,g=2");
    fc_problem_class(&p, a, sizeof a);
    CHECK_MSG(!strcmp(a, "conv_bn_relu fp32 nhwc grouped"), "%s", a);
    /* g = c = k is dwconv_bn_relu's chain: its class; a channel multiplier (k = 2c)
     * is not */
    p = problem("conv_bn_relu:n=1,c=8,h=8,w=8,k=8,g=8");
    fc_problem_class(&p, a, sizeof a);
    CHECK_MSG(!strcmp(a, "dwconv_bn_relu fp32 nhwc depthwise"), "%s", a);
    p = problem("dwconv_bn_relu:n=1,c=8,h=8,w=8,k=8");
    fc_problem_class(&p, b, sizeof b);
    CHECK_MSG(!strcmp(a, b), "%s", b);
    p = problem("conv_bn_relu:n=1,c=8,h=8,w=8,k=16,g=8");
    fc_problem_class(&p, a, sizeof a);
    CHECK_MSG(!strcmp(a, "conv_bn_relu fp32 nhwc depthwise"), "%s", a);
    p = problem("conv_bn:n=1,c=8,h=8,w=8,k=8,g=8"); /* no ReLU: its own */
    fc_problem_class(&p, a, sizeof a);
    CHECK_MSG(!strcmp(a, "conv_bn fp32 nhwc depthwise"), "%s", a);
    p = problem("attention:b=1,h=2,s=64,d=64,causal=1");
    fc_problem_class(&p, a, sizeof a);
    CHECK(!strcmp(a, "attention fp32 causal=1"));
    p = problem("attention:b=1,h=2,s=64,d=64,dtype=bf16");
    fc_problem_class(&p, a, sizeof a);
    CHECK(!strcmp(a, "attention bf16 causal=0"));
    /* two backends and two hosts: a class each, a prediction per machine and backend */
    fc_doc d[2];
    ladder_doc(&d[0], (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    for (size_t i = 0; i < FC_ARRAY_LEN(ladder); i++) add_record(&d[0], ladder[i], "cpu.onednn", 1, 1);
    doc_init(&d[1], "host-b");
    for (size_t i = 0; i < FC_ARRAY_LEN(ladder); i++) add_record(&d[1], ladder[i], "cpu.openblas", 1, 1);
    fc_model m;
    fc_model_build(&m, d, 2, NULL);
    CHECK(m.nmachines == 2 && m.npairs == 3 && m.ncls == 3);
    CHECK_STR_CONTAINS(m.machine[0].name, "Test CPU 9000 (host-a, 2 threads, warm cache)");
    fc_site s = site("linear_bias_relu:m=100,k=1000,n=1000", 1);
    fc_prediction *pr;
    CHECK(fc_predict_sites(&m, &s, 1, &pr) == 3);
    for (int i = 0; i < 3; i++) CHECK(pr[i].source == FC_SRC_PREDICTED);
    CHECK(pr[0].machine == 0 && pr[2].machine == 1 && !strcmp(pr[1].backend, "cpu.onednn"));
    free(pr);
    fc_model_free(&m);
    fc_doc_free(&d[0]);
    fc_doc_free(&d[1]);
    /* one model name and hostname, two CPUs (family and model) or two builds of the
     * host kernels: a machine each, named by what differs */
    const char *const cpus[] = {"{\"model\": \"Test CPU 9000\", \"family\": 25, \"model_number\": 17}",
                                "{\"model\": \"Test CPU 9000\", \"family\": 26, \"model_number\": 2}",
                                "{\"model\": \"Test CPU 9000\", \"family\": 26, \"model_number\": 2, "
                                "\"kernels\": {\"isa\": \"AVX2\"}}"};
    fc_doc c[3];
    for (int k = 0; k < 3; k++) {
        doc_init(&c[k], "host-a");
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(c[k].host, "devices"), "cpu", cJSON_Parse(cpus[k]));
        for (size_t i = 0; i < FC_ARRAY_LEN(ladder); i++) add_record(&c[k], ladder[i], "cpu.openblas", 1, 1);
    }
    fc_model_build(&m, c, 3, NULL);
    CHECK_MSG(m.nmachines == 3, "%d machines", m.nmachines);
    if (m.nmachines == 3) {
        CHECK_STR_CONTAINS(m.machine[0].name, "Test CPU 9000 (host-a, family 25 model 17, 2 threads, warm cache)");
        CHECK_STR_CONTAINS(m.machine[2].name, "(host-a, family 26 model 2, AVX2 kernels, 2 threads, warm cache)");
    }
    fc_model_free(&m);
    for (int k = 0; k < 3; k++) fc_doc_free(&c[k]);
}

/* the same problem in two documents of one machine: the later's record, once */
static void later_record_wins(void)
{
    fc_doc d[2];
    ladder_doc(&d[0], (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    doc_init(&d[1], "host-a");
    add_record(&d[1], ladder[2], "cpu.openblas", 1.5, 1);
    fc_model m;
    fc_model_build(&m, d, 2, NULL);
    CHECK(m.ncls == 1 && m.cls[0].n == (int)FC_ARRAY_LEN(ladder));
    fc_site s = site(ladder[2], 1);
    fc_prediction *p;
    fc_predict_sites(&m, &s, 1, &p);
    CHECK(p[0].source == FC_SRC_MEASURED && p[0].record == &d[1].rec[0]);
    free(p);
    fc_model_free(&m);
    fc_doc_free(&d[0]);
    fc_doc_free(&d[1]);
}

/* savings per inference: multiplicity x (unfused − fused) over the yes sites,
 * the interval from the speedups' ends, the losing sites counted */
static void summary_adds_sites(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    d.rec[0].speedup = (fc_ratio_ci){.ratio = 2.0, .lo = 1.8, .hi = 2.2};    /* yes */
    d.rec[0].v[FC_FUSED].lat.median = d.rec[0].v[FC_UNFUSED].lat.median / 2; /* as the speedup says */
    d.rec[0].decision = FC_DECIDE_YES;
    d.rec[1].speedup = (fc_ratio_ci){.ratio = 0.9, .lo = 0.85, .hi = 0.95}; /* no, slower fused */
    d.rec[1].decision = FC_DECIDE_NO;
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    fc_site s[3] = {site(ladder[0], 3), site(ladder[1], 2), site("linear_bias_gelu:m=8,k=8,n=8", 1)};
    fc_prediction *p;
    int np = fc_predict_sites(&m, s, 3, &p);
    fc_predict_summary *sum;
    CHECK(fc_predict_summarize(&m, s, p, np, &sum) == 1);
    const fc_record *r0 = &d.rec[0], *r1 = &d.rec[1];
    double u0 = r0->v[FC_UNFUSED].lat.median, f0 = r0->v[FC_FUSED].lat.median;
    CHECK(sum[0].sites == 3 && sum[0].known == 2 && sum[0].fuse == 1 && sum[0].losing == 1);
    CHECK_NEAR(sum[0].unfused_ms, 3 * u0 + 2 * r1->v[FC_UNFUSED].lat.median, 1e-12);
    CHECK_NEAR(sum[0].saving_ms, 3 * (u0 - f0), 1e-12); /* measured: the record's latencies */
    CHECK_NEAR(sum[0].saving_lo, 3 * u0 * (1 - 1 / 1.8), 1e-12);
    CHECK_NEAR(sum[0].saving_hi, 3 * u0 * (1 - 1 / 2.2), 1e-12);
    free(sum);
    free(p);
    fc_model_free(&m);
    fc_doc_free(&d);
}

static void loo_exact_data(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    fc_validation v;
    fc_predict_validate(&m, &v);
    CHECK(v.n == (int)FC_ARRAY_LEN(ladder));
    const fc_loo_figures *f = &v.fig[FC_LOO_MODEL], *r = &v.fig[FC_LOO_ROOFLINE];
    CHECK(f->n >= 6);
    for (int q = 0; q <= FC_NVARIANTS; q++) CHECK_MSG(f->p90_err[q] < 0.01, "p90 error %d: %g", q, f->p90_err[q]);
    CHECK(f->median_err[FC_FUSED] < r->median_err[FC_FUSED]);
    CHECK(f->reproduced + f->unknown + f->undecided == f->decided && f->contradicted == 0);
    CHECK(f->unknown == (int)FC_ARRAY_LEN(ladder) - f->n); /* the ladder's ends lie beyond the others' span */
    for (int i = 0; i < v.n; i++)
        if (!v.row[i].known) CHECK_STR_CONTAINS(v.row[i].reason, "the model goes 4x beyond at most");
    fc_validation_free(&v);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* noise of a few percent: errors of that order, the interval covers most records */
static void loo_noisy_data(void)
{
    fc_doc d;
    doc_init(&d, "host-a");
    fc_rng rng;
    fc_rng_seed(&rng, 7);
    for (int rep = 0; rep < 3; rep++)
        for (size_t i = 0; i < FC_ARRAY_LEN(ladder); i++) {
            char s[128];
            snprintf(s, sizeof s, "%s", ladder[i]);
            if (rep) snprintf(s, sizeof s, "linear_bias_relu:m=%d,k=1024,n=%d", 8 << i, 512 << rep);
            double nu = exp(0.03 * (2 * fc_rng_uniform(&rng) - 1)), nf = exp(0.03 * (2 * fc_rng_uniform(&rng) - 1));
            add_record(&d, s, "cpu.openblas", nu, nf);
        }
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    fc_validation v;
    fc_predict_validate(&m, &v);
    const fc_loo_figures *f = &v.fig[FC_LOO_MODEL];
    CHECK(f->n >= 20);
    CHECK_MSG(f->median_err[FC_FUSED] < 0.04 && f->median_err[FC_UNFUSED] < 0.04, "median errors %g %g",
              f->median_err[FC_FUSED], f->median_err[FC_UNFUSED]);
    CHECK_MSG(f->coverage > 0.8, "coverage %g", f->coverage);
    fc_validation_free(&v);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* The two intervals: a measurement's exp(± t(n − 1) s); the speedup's with the
 * records' noise taken out in quadrature, never below half the spread. */
static void speedup_intervals(void)
{
    fc_ratio_ci c = {0};
    double t = fc_t975(9);
    fc_speedup_intervals(1.2, 0.05, 0.03, 10, &c);
    CHECK_NEAR(c.ratio, 1.2, 1e-12);
    CHECK_NEAR(c.rerun_lo, 1.2 * exp(-t * 0.05), 1e-12);
    CHECK_NEAR(c.rerun_hi, 1.2 * exp(t * 0.05), 1e-12);
    CHECK_NEAR(c.lo, 1.2 * exp(-t * 0.04), 1e-12); /* √(0.05² − 0.03²) */
    CHECK_NEAR(c.hi, 1.2 * exp(t * 0.04), 1e-12);
    fc_speedup_intervals(1.2, 0.05, 0.06, 10, &c); /* noise above the spread: half of it */
    CHECK_NEAR(c.lo, 1.2 * exp(-t * 0.025), 1e-12);
    CHECK_NEAR(c.hi, 1.2 * exp(t * 0.025), 1e-12);
    CHECK(c.rerun_lo < c.lo && c.hi < c.rerun_hi);
}

/* A class's intervals scale with the saving weight: at the same spread, a speedup
 * near 1 gets a narrower interval (in log) than a speedup of 2, by the weights' ratio
 * on the side toward 1 (where the weight at the predicted speedup is the larger);
 * each side's log half-width x is the least x = k·max(w(ŝ), w(ŝ·e^(±x))), so the
 * side away from 1 is wider than w(ŝ) alone makes it, and a loss the spread cannot
 * bound gets a millionfold; and a prior shrinks the class's spread² and noise²
 * toward its own, counted as FC_PREDICT_PRIOR_RECORDS records (degrees of freedom
 * n − 1 + that). */
static void saving_weight_and_prior(void)
{
    CHECK_NEAR(fc_saving_weight(1.0), FC_PREDICT_SAVING_W0, 1e-15);
    CHECK_NEAR(fc_saving_weight(2.0), FC_PREDICT_SAVING_W0 + 0.5, 1e-15);
    CHECK_NEAR(fc_saving_weight(0.5), FC_PREDICT_SAVING_W0 + 1.0, 1e-15); /* a loss weighs as much */
    CHECK_NEAR(fc_residual_weight(1.0, 2.0), fc_saving_weight(2.0), 1e-15);
    CHECK_NEAR(fc_residual_weight(2.0, 1.0), fc_saving_weight(2.0), 1e-15);
    CHECK_NEAR(fc_residual_weight(0.5, 1.5), fc_saving_weight(0.5), 1e-15);
    /* the fixed point, both sides, a gain and a loss */
    const double ss[] = {0.7, 1.02, 1.3, 2.0}, ks[] = {0.05, 0.3, 0.6};
    for (size_t i = 0; i < FC_ARRAY_LEN(ss); i++)
        for (size_t j = 0; j < FC_ARRAY_LEN(ks); j++)
            for (int dir = -1; dir <= 1; dir += 2) {
                double x = fc_weighted_half_width(ss[i], ks[j], dir);
                if (x == log(FC_PREDICT_UNBOUNDED)) { /* no fixed point: only a loss's side */
                    CHECK(dir < 0 && ss[i] < 1);
                    continue;
                }
                double w = fmax(fc_saving_weight(ss[i]), fc_saving_weight(ss[i] * exp(dir * x)));
                CHECK_MSG(fabs(x - ks[j] * w) < 1e-9 * x, "s %g k %g dir %d: x %g, k·w %g", ss[i], ks[j], dir, x,
                          ks[j] * w);
                CHECK(x >= ks[j] * fc_saving_weight(ss[i]) * (1 - 1e-12));
            }
    /* above 1, moving down toward 1 lowers the weight: that side is w(ŝ)'s alone */
    CHECK_NEAR(fc_weighted_half_width(2.0, 0.2, -1), 0.2 * fc_saving_weight(2.0), 1e-15);
    CHECK(fc_weighted_half_width(2.0, 0.2, 1) > 0.2 * fc_saving_weight(2.0) * 1.05);
    /* the least fixed point, not a larger one: below 1 at k = 0.3, x = 0.3·(W0 + e^x/ŝ − 1)
     * has two; the iteration stops at the first */
    double lo = fc_weighted_half_width(0.7, 0.3, -1);
    CHECK(lo < 1 && lo > 0.3 * fc_saving_weight(0.7));
    /* no fixed point: the loss side unbounded, the gain side bounded */
    CHECK_NEAR(fc_weighted_half_width(0.7, 3.0, -1), log(FC_PREDICT_UNBOUNDED), 1e-12);
    CHECK(fc_weighted_half_width(0.7, 3.0, 1) < 3.0 * (FC_PREDICT_SAVING_W0 + 1));
    CHECK(fc_weighted_half_width(1.3, 0.0, 1) == 0);

    fc_ratio_ci a = {0}, b = {0}, want = {0};
    fc_class_intervals(1.02, 0.1, 0.02, 8, NULL, &a);
    fc_class_intervals(2.0, 0.1, 0.02, 8, NULL, &b);
    CHECK_NEAR(log(a.ratio / a.rerun_lo) / log(b.ratio / b.rerun_lo), fc_saving_weight(1.02) / fc_saving_weight(2.0),
               1e-12);
    fc_speedup_intervals(2.0, 0.1 * fc_saving_weight(2.0), 0.02 * fc_saving_weight(2.0), 8, &want);
    CHECK_NEAR(b.lo, want.lo, 1e-12);
    CHECK_NEAR(b.rerun_lo, want.rerun_lo, 1e-12);
    CHECK(b.hi > want.hi && b.rerun_hi > want.rerun_hi);
    const double t = fc_t975(7);
    CHECK_NEAR(log(b.rerun_hi / 2.0), fc_weighted_half_width(2.0, t * 0.1, 1), 1e-12);
    CHECK_NEAR(log(b.hi / 2.0), fc_weighted_half_width(2.0, t * sqrt(0.01 - 0.0004), 1), 1e-12);
    /* the prior: spread² (7·0.3² + R·0.1²)/(7 + R), noise² likewise, t at 7 + R */
    fc_spread_prior pr = {.spread2 = 0.01, .noise2 = 0.0001, .classes = 5};
    const double R = FC_PREDICT_PRIOR_RECORDS, s2 = (7 * 0.09 + R * 0.01) / (7 + R);
    const double n2 = (7 * 0.0004 + R * 0.0001) / (7 + R);
    fc_class_intervals(1.5, 0.3, 0.02, 8, &pr, &a);
    fc_speedup_intervals(1.5, sqrt(s2) * fc_saving_weight(1.5), sqrt(n2) * fc_saving_weight(1.5), 8 + (int)R, &want);
    CHECK_NEAR(a.lo, want.lo, 1e-12);
    CHECK_NEAR(a.rerun_lo, want.rerun_lo, 1e-12);
    CHECK_NEAR(log(a.rerun_hi / 1.5), fc_weighted_half_width(1.5, fc_t975(7 + (int)R) * sqrt(s2), 1), 1e-12);
    pr.classes = 0; /* no pool: the class's own */
    fc_class_intervals(1.5, 0.3, 0.02, 8, &pr, &a);
    fc_class_intervals(1.5, 0.3, 0.02, 8, NULL, &b);
    CHECK(a.lo == b.lo && a.rerun_hi == b.rerun_hi);
}

/* The pool of a machine: the medians of its other fitted classes' spread² and
 * noise², from FC_PREDICT_PRIOR_CLASSES of them; another machine's classes, unfitted
 * ones and the skipped one are not in it. */
static void machine_prior(void)
{
    fc_model_class c[6] = {0};
    const double sp[6] = {0.1, 0.2, 0.4, 0.8, 5.0, 9.0}, nz[6] = {0.01, 0.03, 0.02, 0.04, 0.5, 0.9};
    for (int i = 0; i < 6; i++) {
        c[i].fitted = i != 5;
        c[i].machine = i == 4;
        c[i].fit.spread = sp[i];
        c[i].fit.noise = nz[i];
    }
    fc_model m = {.cls = c, .ncls = 6};
    fc_spread_prior pr;
    fc_model_prior(&m, 0, NULL, &pr); /* 0.1, 0.2, 0.4, 0.8 */
    CHECK(pr.classes == 4);
    CHECK_NEAR(pr.spread2, (0.04 + 0.16) / 2, 1e-15);
    CHECK_NEAR(pr.noise2, (0.0004 + 0.0009) / 2, 1e-15);
    fc_model_prior(&m, 0, &c[3], &pr); /* 0.1, 0.2, 0.4 */
    CHECK(pr.classes == 3);
    CHECK_NEAR(pr.spread2, 0.04, 1e-15);
    CHECK_NEAR(pr.noise2, 0.0004, 1e-15);
    fc_model_prior(&m, 1, NULL, &pr); /* one class: no pool */
    CHECK(pr.classes == 0 && pr.spread2 == 0);
    /* the extrapolations' pool: over the classes with records beyond the others' span */
    const double sb[4] = {0.3, 0.5, 0.7, 0.9};
    for (int i = 0; i < 4; i++) {
        c[i].fit.n_beyond = i == 2 ? 0 : 2;
        c[i].fit.spread_beyond = sb[i];
    }
    fc_model_prior(&m, 0, NULL, &pr); /* 0.3, 0.5, 0.9 */
    CHECK(pr.classes == 4 && pr.classes_beyond == 3);
    CHECK_NEAR(pr.spread2_beyond, 0.25, 1e-15);
    fc_model_prior(&m, 0, &c[3], &pr); /* 0.3, 0.5: too few */
    CHECK(pr.classes == 3 && pr.classes_beyond == 0 && pr.spread2_beyond == 0);
}

/* Records whose two variants are off the truth by one shared factor (a slower or
 * faster moment of the machine, as both variants of a record are measured in the
 * same rounds): each latency's held-out error is that factor, the speedup's is
 * not. The speedup's spread is its own, well below what the variants' spreads
 * composed would give. A prediction's intervals are the spread's. */
static void speedup_spread_is_its_own(void)
{
    fc_doc d;
    doc_init(&d, "host-a");
    fc_rng rng;
    fc_rng_seed(&rng, 11);
    for (size_t i = 0; i < FC_ARRAY_LEN(ladder); i++) {
        double shared = exp(0.15 * (2 * fc_rng_uniform(&rng) - 1)), own = exp(0.005 * (2 * fc_rng_uniform(&rng) - 1));
        add_record(&d, ladder[i], "cpu.openblas", shared * own, shared);
    }
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted);
    const fc_class_fit *f = &m.cls[0].fit;
    CHECK_MSG(f->v[FC_FUSED].spread > 0.04, "fused spread %g", f->v[FC_FUSED].spread);
    CHECK_MSG(f->spread < 0.3 * f->v[FC_FUSED].spread, "speedup spread %g, fused %g", f->spread, f->v[FC_FUSED].spread);
    fc_site st = site("linear_bias_relu:m=300,k=700,n=900", 1);
    fc_prediction *p;
    CHECK(fc_predict_sites(&m, &st, 1, &p) == 1);
    CHECK(p[0].source == FC_SRC_PREDICTED);
    fc_ratio_ci want = {0};
    CHECK(f->n_inside >= FC_PREDICT_MIN_INSIDE); /* an interpolation: the inside records' spread */
    fc_class_intervals(p[0].speedup.ratio, f->spread_inside, f->noise, f->n_inside, NULL, &want);
    CHECK_NEAR(p[0].speedup.lo, want.lo, 1e-12);
    CHECK_NEAR(p[0].speedup.rerun_hi, want.rerun_hi, 1e-12);
    CHECK(p[0].decision == fc_decide(&want, 1.1));
    free(p);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* A class whose smallest and largest problems are off the truth (the ends of a
 * sweep, where a per-call cost or a cache edge the form lacks shows): held out,
 * those ends are extrapolations and miss by much, the records inside the others'
 * span by little. An interpolation takes the inside records' spread, a problem
 * beyond the span every record's. */
static void inside_and_beyond(void)
{
    fc_doc d;
    doc_init(&d, "host-a");
    const int ms[] = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
    fc_rng rng;
    fc_rng_seed(&rng, 5);
    for (size_t i = 0; i < FC_ARRAY_LEN(ms); i++) {
        char s[64];
        snprintf(s, sizeof s, "linear_bias_relu:m=%d,k=1024,n=1024", ms[i]);
        bool end = i == 0 || i + 1 == FC_ARRAY_LEN(ms);
        double nu = exp((end ? 0.25 : 0.004) * (2 * fc_rng_uniform(&rng) - 1));
        add_record(&d, s, "cpu.openblas", nu * (end ? 1.2 : 1), 1);
    }
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted);
    const fc_class_fit *f = &m.cls[0].fit;
    CHECK_MSG(f->n_inside == (int)FC_ARRAY_LEN(ms) - 2, "%d inside", f->n_inside);
    CHECK_MSG(f->n_beyond == 2 && f->spread_inside < 0.5 * f->spread_beyond && f->spread_inside < f->spread,
              "inside %g, beyond %g, all %g", f->spread_inside, f->spread_beyond, f->spread);
    fc_site st[2] = {site("linear_bias_relu:m=300,k=1024,n=1024", 1), site("linear_bias_relu:m=6000,k=1024,n=1024", 1)};
    fc_prediction *p;
    CHECK(fc_predict_sites(&m, st, 2, &p) == 2);
    CHECK(p[0].source == FC_SRC_PREDICTED && p[1].source == FC_SRC_PREDICTED);
    fc_ratio_ci in = {0}, out = {0};
    fc_class_intervals(p[0].speedup.ratio, f->spread_inside, f->noise, f->n_inside, NULL, &in);
    fc_class_intervals(p[1].speedup.ratio, f->spread, f->noise, f->n, NULL, &out);
    CHECK_NEAR(p[0].speedup.rerun_hi, in.rerun_hi, 1e-12);
    CHECK_NEAR(p[1].speedup.rerun_hi, out.rerun_hi, 1e-12);
    CHECK(p[0].speedup.hi / p[0].speedup.ratio < p[1].speedup.hi / p[1].speedup.ratio);
    CHECK_MSG(f->n_beyond == 2 && f->spread_beyond > f->spread, "%d beyond, spread %g, all %g", f->n_beyond,
              f->spread_beyond, f->spread);
    free(p);
    fc_model_free(&m);
    /* With three more classes on the machine (the same ladder, exact, on other
     * patterns): the pool exists, and the extrapolation takes the spread of the
     * records beyond the others' span, shrunk toward the pool's, the interpolation
     * the inside records' toward the pool of all. */
    const char *const other[] = {"linear_bias", "linear_bias_gelu", "linear_residual_relu"};
    for (size_t c = 0; c < FC_ARRAY_LEN(other); c++)
        for (size_t i = 0; i < FC_ARRAY_LEN(ms); i++) {
            char s[64];
            snprintf(s, sizeof s, "%s:m=%d,k=1024,n=1024", other[c], ms[i]);
            add_record(&d, s, "cpu.openblas", 1, 1);
        }
    fc_model_build(&m, &d, 1, NULL);
    const fc_model_class *cl = NULL;
    for (int i = 0; i < m.ncls; i++)
        if (!strcmp(m.cls[i].cls, "linear_bias_relu fp32")) cl = &m.cls[i];
    CHECK(m.ncls == 4 && cl && cl->fitted);
    f = &cl->fit;
    fc_spread_prior pr;
    fc_model_prior(&m, 0, cl, &pr);
    CHECK(pr.classes == 3 && pr.classes_beyond == 3 && pr.spread2_beyond < 1e-4);
    CHECK(fc_predict_sites(&m, st, 2, &p) == 2);
    fc_class_intervals(p[0].speedup.ratio, f->spread_inside, f->noise, f->n_inside, &pr, &in);
    fc_spread_prior pb = pr;
    pb.spread2 = pr.spread2_beyond;
    fc_class_intervals(p[1].speedup.ratio, f->spread_beyond, f->noise, f->n_beyond, &pb, &out);
    CHECK_NEAR(p[0].speedup.rerun_hi, in.rerun_hi, 1e-12);
    CHECK_NEAR(p[1].speedup.rerun_hi, out.rerun_hi, 1e-12);
    free(p);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* A speedup the forms cannot express: on a sweep of m, the fused kernel runs 25 %
 * slower from m = 256 to 1024 (a library's other kernel at those sizes). Held out,
 * a problem inside that range is predicted from its neighbours' held-out residuals
 * within 5 %; the forms' ratio alone misses it by more than 10 %. */
static void local_correction(void)
{
    const int ms[] = {8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 2048, 4096, 8192};
    fc_doc d;
    doc_init(&d, "host-a");
    for (size_t i = 0; i < FC_ARRAY_LEN(ms); i++) {
        char s[64];
        snprintf(s, sizeof s, "linear_bias_relu:m=%d,k=1024,n=1024", ms[i]);
        if (ms[i] != 512) add_record(&d, s, "cpu.openblas", 1, ms[i] >= 256 && ms[i] <= 1024 ? 1.25 : 1);
    }
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    CHECK(m.ncls == 1 && m.cls[0].fitted);
    fc_site st = site("linear_bias_relu:m=512,k=1024,n=1024", 1);
    double truth_ms[FC_NVARIANTS];
    truth(&st.prob, truth_ms);
    double want = truth_ms[FC_UNFUSED] / (1.25 * truth_ms[FC_FUSED]);
    fc_prediction *p;
    CHECK(fc_predict_sites(&m, &st, 1, &p) == 1);
    CHECK(p[0].source == FC_SRC_PREDICTED);
    CHECK_MSG(fabs(p[0].speedup.ratio / want - 1) < 0.05, "corrected %g, truth %g", p[0].speedup.ratio, want);
    CHECK_MSG(fabs(p[0].unfused_ms / p[0].fused_ms / want - 1) > 0.10, "the forms alone %g, truth %g",
              p[0].unfused_ms / p[0].fused_ms, want);
    CHECK(p[0].speedup.rerun_lo <= want && want <= p[0].speedup.rerun_hi);
    /* the intervals' spread is of the corrected residuals, each record's correction
     * from its FC_PREDICT_LOCAL nearest others (written out here): smaller than the
     * uncorrected ones' where a range shares its bias */
    const fc_class_fit *f = &m.cls[0].fit;
    const fc_obs *o = m.cls[0].obs;
    double ss = 0, ss_raw = 0;
    for (int i = 0; i < f->n; i++) {
        double dist[64], sw = 0, sm = 0;
        bool used[64] = {false};
        for (int j = 0; j < f->n; j++) dist[j] = fc_problem_distance(&o[i].rec->prob, &o[j].rec->prob);
        for (int k = 0; k < FC_PREDICT_LOCAL; k++) {
            int best = -1;
            for (int j = 0; j < f->n; j++)
                if (j != i && !used[j] && (best < 0 || dist[j] < dist[best])) best = j;
            used[best] = true;
            sw += 1 / (FC_PREDICT_LOCAL_D0 + dist[best]);
            sm += f->held[best] / (FC_PREDICT_LOCAL_D0 + dist[best]);
        }
        /* over the saving weight at the larger of the saving predicted and measured */
        double r = f->held[i] - sm / sw;
        ss += pow(r / fmax(fc_saving_weight(o[i].speedup * exp(-r)), fc_saving_weight(o[i].speedup)), 2);
        ss_raw += pow(f->held[i] / fc_residual_weight(o[i].speedup * exp(-f->held[i]), o[i].speedup), 2);
    }
    CHECK_NEAR(f->spread, sqrt(ss / f->n), 1e-12);
    CHECK_MSG(f->spread < 0.9 * sqrt(ss_raw / f->n), "corrected %g, uncorrected %g", f->spread, sqrt(ss_raw / f->n));
    free(p);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* ------------------------------------------------------------------ the documents */

#define SCHEMA "schemas/predict.schema.json"

static void json_valid(void)
{
    fc_doc d;
    ladder_doc(&d, (int)FC_ARRAY_LEN(ladder), "cpu.openblas");
    fc_model m;
    fc_model_build(&m, &d, 1, NULL);
    fc_site s[3] = {site(ladder[0], 1), site("linear_bias_relu:m=100,k=1000,n=1000", 2),
                    site("linear_bias_relu:m=1,k=8,n=8", 1)};
    s[1].name = "layer1.fc";
    const char *query[3] = {"q0", "q1", "q2"}, *inputs[1] = {"synthetic.json"};
    fc_prediction *p;
    int np = fc_predict_sites(&m, s, 3, &p);
    cJSON *o = fc_predict_json(&m, inputs, 1, s, query, 3, p, np);
    fc_err e;
    CHECK_MSG(fc_schema_check(SCHEMA, o, "predictions", &e) == 0, "%s", e.msg);
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "predictions");
    CHECK(cJSON_GetArraySize(arr) == 3);
    CHECK(!strcmp(fc_json_str(cJSON_GetArrayItem(arr, 0), "source", ""), "measured"));
    CHECK(!strcmp(fc_json_str(cJSON_GetArrayItem(arr, 1), "name", ""), "layer1.fc"));
    CHECK(!strcmp(fc_json_str(cJSON_GetArrayItem(arr, 2), "decision", ""), "unknown"));
    /* the schema can fail: a prediction without its decision */
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetArrayItem(arr, 1), "decision");
    CHECK(fc_schema_check(SCHEMA, o, "broken", &e) != 0);
    cJSON_Delete(o);
    free(p);
    fc_validation v;
    fc_predict_validate(&m, &v);
    o = fc_validation_json(&m, inputs, 1, &v);
    CHECK_MSG(fc_schema_check(SCHEMA, o, "validation", &e) == 0, "%s", e.msg);
    cJSON_Delete(o);
    fc_validation_free(&v);
    fc_model_free(&m);
    fc_doc_free(&d);
}

/* the schema's enums hold the words the code writes */
static void schema_enums(void)
{
    cJSON *schema = NULL;
    const fc_embedded_file *f = fc_embedded_find(SCHEMA);
    fc_err e;
    CHECK(f && fc_json_parse(SCHEMA, f->data, f->len, &schema, &e) == 0);
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(schema, "$defs");
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, "prediction"),
                                                         "properties");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pred, "source"), "enum");
    CHECK(cJSON_GetArraySize(src) == FC_NSOURCES);
    for (int i = 0; i < FC_NSOURCES; i++)
        CHECK(!strcmp(cJSON_GetArrayItem(src, i)->valuestring, fc_pred_source_name((fc_pred_source)i)));
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(defs, "decision"), "enum");
    CHECK(cJSON_GetArraySize(dec) == FC_NDECISIONS + 1);
    for (int i = 0; i < FC_NDECISIONS; i++)
        CHECK(!strcmp(cJSON_GetArrayItem(dec, i)->valuestring, fc_decision_name((fc_decision)i)));
    CHECK(!strcmp(cJSON_GetArrayItem(dec, FC_NDECISIONS)->valuestring, "unknown"));
    cJSON_Delete(schema);
}

int main(int argc, char **argv)
{
    static const t_case tests[] = {
        T(known_roofline_within_1pct),
        T(fit_recovers_parameters),
        T(two_cache_levels),
        T(assumed_llc),
        T(measured_cache_curve),
        T(streamed_outputs),
        T(streamed_outputs_recorded),
        T(measured_problem_is_its_record),
        T(refuses_beyond_span),
        T(needs_min_records),
        T(classes_apart),
        T(later_record_wins),
        T(summary_adds_sites),
        T(loo_exact_data),
        T(loo_noisy_data),
        T(speedup_intervals),
        T(contended_left_out),
        T(saving_weight_and_prior),
        T(machine_prior),
        T(speedup_spread_is_its_own),
        T(inside_and_beyond),
        T(local_correction),
        T(json_valid),
        T(schema_enums),
    };
    return t_run(tests, FC_ARRAY_LEN(tests), argc, argv);
}
