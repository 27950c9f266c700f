/* test_calibrate.c — a calibration end to end (fc_measure_job: rounds, verification,
 * eager and graph-replay timing, intervals, decision) on a simulated device with
 * graphs and a simulated backend, on the CPU. The device's clock is virtual: an
 * eager call of a variant costs a launch per kernel plus its kernels' time; a replayed
 * graph of `batch` calls costs one launch plus the kernels' time alone. So a chain of
 * short kernels is launch-bound, and its decision must come from the graph replay; a
 * chain of long kernels is decided by eager launches. The record, its JSON and the
 * report say which timing decided.
 */
#include "calibrate.h"
#include "format.h"
#include "report.h"
#include "jsonfile.h"
#include "test.h"
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ the simulation */

typedef struct sim {
    double now, t0;
    double launch_s;                  /* host cost of one eager launch */
    double kernel_s[FC_MAX_VARIANTS]; /* device time of one kernel of the variant */
    int kernels[FC_MAX_VARIANTS];     /* kernels per call of the variant */
    long calls;                       /* jitter: every call differs a little */
    /* the machine's state: every fast_every-th setup (0: none) runs in another state,
     * where a kernel of the variant takes fast_s[v] */
    int fast_every, setups;
    int setup_rc;  /* what setup returns (after building its state): 0, -1 or FC_DECLINED */
    int teardowns; /* states freed */
    double fast_s[FC_MAX_VARIANTS];
    int graphs_made, graph_launches;
    /* the fused variant adds to its output (each call past the first after a poison
     * moves it by 1); declared in_place or not */
    bool adds_to_output, declares_in_place;
} sim;

static sim g_sim;
static const fc_reference *g_ref; /* what the backend's output holds */

static double jitter(void) { return 1.0 + 0.004 * (double)((g_sim.calls++ % 5) - 2); }

/* the order of the calls before each sample: 'f' after a flush, 's' after a
 * synchronize that followed one, 0 otherwise; and the samples begun in each state */
static char g_last;
static int g_begun[2]; /* [0]: after anything but a flush then a synchronize; [1]: after them */

static int sim_begin(void *ctx, fc_err *e)
{
    (void)e;
    sim *s = ctx;
    s->t0 = s->now;
    g_begun[g_last == 's']++;
    g_last = 0;
    return 0;
}

static int sim_flush(void *ctx, fc_err *e)
{
    (void)ctx;
    (void)e;
    g_last = 'f';
    return 0;
}

static int sim_sync(void *ctx, fc_err *e)
{
    (void)ctx;
    (void)e;
    g_last = g_last == 'f' ? 's' : 0;
    return 0;
}

static int sim_end(void *ctx, double *sec, fc_err *e)
{
    (void)e;
    sim *s = ctx;
    *sec = s->now - s->t0;
    return 0;
}

static size_t sim_mem(void *ctx)
{
    (void)ctx;
    return (size_t)1 << 30;
}

typedef struct sim_graph {
    fc_variant v;
    int batch;
} sim_graph;

/* Capturing records what the graph holds; nothing runs. */
static int sim_graph_create(void *ctx, fc_launch_fn fn, void *arg, fc_variant v, int batch, void **graph, fc_err *e)
{
    (void)fn;
    (void)arg;
    (void)e;
    sim *s = ctx;
    sim_graph *g = fc_xcalloc(1, sizeof *g);
    g->v = v;
    g->batch = batch;
    s->graphs_made++;
    *graph = g;
    return 0;
}

static int sim_graph_launch(void *ctx, void *graph, fc_err *e)
{
    (void)e;
    sim *s = ctx;
    const sim_graph *g = graph;
    s->now += s->launch_s + g->batch * s->kernels[g->v] * s->kernel_s[g->v] * jitter();
    s->graph_launches++;
    return 0;
}

static void sim_graph_destroy(void *graph) { free(graph); }

static void sim_inventory(void *ctx, cJSON *out)
{
    (void)ctx;
    cJSON_AddStringToObject(out, "name", "sim");
}

/* The simulated device's ceilings: 200 GFLOP/s fp32, 20 GB/s. */
/* The simulated device's GEMM rate at its measurements: g_sim_rates[k] at the k-th
 * (counted by g_sim_measured) while there are any, then 200. */
static double g_sim_rates[4];
static int g_sim_measured;

static int sim_ceilings(void *ctx, fc_ceilings *c, fc_err *e)
{
    (void)ctx;
    (void)e;
    memset(c, 0, sizeof *c);
    const int k = g_sim_measured++;
    c->gflops[FC_FP32] = k < (int)FC_ARRAY_LEN(g_sim_rates) && g_sim_rates[k] > 0 ? g_sim_rates[k] : 200;
    c->bandwidth_gbs = 20;
    snprintf(c->method, sizeof c->method, "simulated");
    return 0;
}

/* The bandwidth the simulated device streams at beside a round: 100 GB/s over
 * footprints up to 600 bytes, 50 past them (reads alone: half), times the state
 * of that call, g_beside_scale[k] at the k-th call (cycling), and what it was asked. */
static double g_beside_scale[3] = {1, 1, 1};
static int g_beside_calls;
static double g_beside_asked[8];
static int g_beside_nasked;

static int sim_stream_at(void *ctx, const double *fps, int n, fc_bw_point *pts, fc_err *e)
{
    (void)ctx;
    (void)e;
    const double s = g_beside_scale[g_beside_calls++ % 3];
    g_beside_nasked = n;
    for (int i = 0; i < n; i++) {
        const double g = (fps[i] <= 600 ? 100 : 50) * s;
        if (i < 8) g_beside_asked[i] = fps[i];
        pts[i] = (fc_bw_point){fps[i], g, g / 2};
    }
    return 0;
}

/* The arithmetic peak the simulated device measures beside a round: g_peak_base
 * times the state of that call, g_peak_scale[k] at the k-th call (cycling). */
static double g_peak_base, g_peak_scale[3] = {1, 1, 1};
static int g_peak_calls;

static double sim_peak_at(void *ctx, fc_dtype dt)
{
    (void)ctx;
    (void)dt;
    return g_peak_base * g_peak_scale[g_peak_calls++ % 3];
}

static const fc_device sim_device = {
    .name = "sim",
    .inventory = sim_inventory,
    .measure_ceilings = sim_ceilings,
    .timer_begin = sim_begin,
    .timer_end = sim_end,
    .flush_cache = sim_flush,
    .synchronize = sim_sync,
    .mem_available = sim_mem,
    .graph_create = sim_graph_create,
    .graph_launch = sim_graph_launch,
    .graph_destroy = sim_graph_destroy,
};

/* The backend: every call costs its variant's launches and kernels on the virtual
 * clock; its output is the reference itself (rounded to float), but for a fused
 * variant that adds to its output, moved by 1 for each call after the first since
 * its poison. */
typedef struct fake_state {
    size_t n;
    long runs[FC_MAX_VARIANTS]; /* since the variant's last poison */
} fake_state;

static int fake_setup(const fc_problem *p, const fc_workload *w, void *devctx, void **state, fc_err *e)
{
    (void)p;
    (void)devctx;
    (void)e;
    g_sim.setups++;
    fake_state *s = fc_xcalloc(1, sizeof *s);
    s->n = w->out_n;
    *state = s;
    return g_sim.setup_rc;
}

static int fake_run(void *state, fc_variant v, fc_err *e)
{
    (void)e;
    ((fake_state *)state)->runs[v]++;
    const bool fast = g_sim.fast_every > 0 && g_sim.setups % g_sim.fast_every == 0;
    g_sim.now += g_sim.kernels[v] * (g_sim.launch_s + (fast ? g_sim.fast_s[v] : g_sim.kernel_s[v]) * jitter());
    return 0;
}

static int fake_output(void *state, fc_variant v, float *dst, fc_err *e)
{
    (void)e;
    const fake_state *s = state;
    const float moved = g_sim.adds_to_output && v == FC_FUSED && s->runs[v] > 1 ? (float)(s->runs[v] - 1) : 0.0f;
    for (size_t i = 0; i < s->n; i++) dst[i] = moved;
    for (size_t i = 0; i < g_ref->n; i++) dst[g_ref->idx[i]] = (float)g_ref->val[i] + moved;
    return 0;
}

static int fake_poison(void *state, fc_variant v, fc_err *e)
{
    (void)e;
    ((fake_state *)state)->runs[v] = 0;
    return 0;
}

static bool fake_in_place(void *state, fc_variant v)
{
    (void)state;
    return g_sim.declares_in_place && v == FC_FUSED;
}

static void fake_describe(void *state, fc_variant v, fc_impl *impl)
{
    (void)state;
    memset(impl, 0, sizeof *impl);
    snprintf(impl->name, sizeof impl->name, "simulated %s: %d kernels", fc_variant_name(v), g_sim.kernels[v]);
    impl->nkernels = g_sim.kernels[v];
}

static void fake_teardown(void *state)
{
    g_sim.teardowns++;
    free(state);
}

/* a control variant when the simulation gives it kernels */
static bool fake_has_control(void *state)
{
    (void)state;
    return g_sim.kernels[FC_CONTROL] > 0;
}

static const fc_backend fake_backend = {
    .name = "sim.fake",
    .device = "sim",
    .setup = fake_setup,
    .run = fake_run,
    .output = fake_output,
    .poison = fake_poison,
    .describe = fake_describe,
    .teardown = fake_teardown,
    .has_control = fake_has_control,
    .in_place = fake_in_place,
};

/* ------------------------------------------------------------------ one job */

/* The simulated device's ceilings for measure(): none unless a test sets them. */
static fc_ceilings g_sim_ceil;
static bool g_cold;
static const fc_device *g_dev = &sim_device; /* the device measure() runs on */
static bool g_no_beside;                     /* measure() with settings.bandwidth_beside off */
static bool g_no_peak_beside;                /* measure() with settings.peak_beside off */
static int g_rounds;                         /* 0: 3 rounds at least, more while the interval is wider than 5 % */
static bool g_any_status;                    /* measure() takes a record that is not ok */

/* Measures linear_bias_relu:m=8,k=8,n=8 (three kernels unfused, one fused) on the
 * simulation with threshold 1.1; graph: time graph replays too. */
static void measure(bool graph, fc_record *r)
{
    fc_problem p;
    fc_err e = {{0}};
    CHECK(fc_problem_parse("linear_bias_relu:m=8,k=8,n=8,dtype=fp32", NULL, &p, &e) == 0);
    fc_workload w;
    CHECK(fc_workload_create(&p, 7, 0, &w, &e) == 0);
    fc_reference ref;
    fc_reference_build(&p, &w, 7, &ref);
    g_ref = &ref;
    fc_session ses = {.ndev = 1, .dev = {g_dev}, .ctx = {&g_sim}, .ceil = {g_sim_ceil}};
    fc_job job = {p, &fake_backend, 1.1};
    fc_settings set;
    fc_settings_defaults(&set);
    set.graph = graph;
    set.bandwidth_beside = !g_no_beside;
    set.peak_beside = !g_no_peak_beside;
    set.cold = g_cold;
    set.rounds = g_rounds ? g_rounds : 3;
    set.stop.min_samples = 6;
    set.stop.min_time = 0.03;
    set.stop.max_time = g_rounds ? 100 : 0.09;
    set.stop.max_noise = g_rounds ? 10 : 0.05; /* g_rounds: that many rounds exactly */
    set.seed = 11;
    bool interrupted = true;
    fc_measure_job(&ses, &job, &set, &w, &ref, NULL, r, &interrupted);
    CHECK(!interrupted);
    if (!g_any_status) CHECK_MSG(r->status == FC_STATUS_OK, "record %s: %s", fc_status_name(r->status), r->reason);
    fc_reference_free(&ref);
    fc_workload_free(&w);
}

/* The document of a simulated record (doc's first) as JSON the schema takes: named
 * as a CPU's record, since the schema knows no simulated device, with a host and
 * ceilings. */
static char *sim_doc_as_cpu(fc_doc *doc)
{
    fc_strlcpy(doc->rec[0].device, "cpu", sizeof doc->rec[0].device);
    fc_strlcpy(doc->rec[0].backend, "cpu.openblas", sizeof doc->rec[0].backend);
    doc->host = cJSON_Parse(
        "{\"hostname\": \"h\", \"devices\": {\"cpu\": {\"model\": \"simulated\"}}, \"libraries\": {}}");
    doc->ceilings = cJSON_Parse("{\"cpu\": {\"gflops\": {\"fp32\": 100}, \"bandwidth_gbs\": 20, \"method\": \"m\"}}");
    doc->complete = true;
    fc_settings_defaults(&doc->settings);
    doc->settings.threads = 1;
    return fc_doc_to_json(doc);
}

/* r written as a simulated document (sim_doc_as_cpu) and parsed back into back, its
 * one record, which the caller frees; false, said, when it does not parse or holds
 * another count. */
static bool read_back(const fc_record *r, fc_doc *back)
{
    fc_doc doc;
    fc_doc_init(&doc);
    *fc_doc_add(&doc) = *r;
    char *json = sim_doc_as_cpu(&doc);
    fc_err e = {{0}};
    bool ok = fc_doc_parse("sim.json", json, back, &e) == 0;
    CHECK_MSG(ok, "%s", e.msg);
    if (ok && back->n != 1) {
        CHECK_MSG(false, "%d records read back", back->n);
        fc_doc_free(back);
        ok = false;
    }
    free(json);
    fc_doc_free(&doc);
    return ok;
}

static const char *json_decided_by(const fc_record *r, char *buf, size_t n)
{
    cJSON *o = fc_record_to_json(r);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "decided_by");
    snprintf(buf, n, "%s", cJSON_IsString(d) ? d->valuestring : "(absent)");
    cJSON_Delete(o);
    return buf;
}

static char *report_of(const fc_record *r)
{
    fc_doc doc;
    fc_doc_init(&doc);
    *fc_doc_add(&doc) = *r;
    fc_report_input in = {"sim.json", &doc};
    fc_report_page page = {.in = &in, .n = 1};
    char *html = fc_report_html(&page);
    fc_doc_free(&doc);
    return html;
}

/* 5 µs per launch, three 1 µs kernels unfused, one 3.3 µs kernel fused. */
static void launch_bound_sim(void)
{
    memset(&g_sim, 0, sizeof g_sim);
    g_sim.launch_s = 5e-6;
    g_sim.kernels[FC_UNFUSED] = 3;
    g_sim.kernels[FC_FUSED] = 1;
    g_sim.kernel_s[FC_UNFUSED] = 1e-6;
    g_sim.kernel_s[FC_FUSED] = 3.3e-6;
}

/* The launch-bound simulation (launch_bound_sim): eagerly the fused form wins (18 µs
 * against 8.3), replayed it loses (3 µs against 3.3). Graph replay removes most of
 * the unfused chain's eager time, so the graph decides: no. */
static void launch_bound_decided_by_graph(void)
{
    launch_bound_sim();
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(true, r);
    CHECK(g_sim.graphs_made >= 2 * r->rounds && g_sim.graph_launches > 0);
    CHECK(r->has_graph_speedup && r->v[FC_UNFUSED].has_graph);
    CHECK_MSG(fabs(r->speedup.ratio - 18.0 / 8.3) < 0.05, "eager speedup %g", r->speedup.ratio);
    CHECK_MSG(fabs(r->speedup_graph.ratio - 3.0 / 3.3) < 0.03, "graph speedup %g", r->speedup_graph.ratio);
    CHECK(r->decided_by == FC_DECIDER_GRAPH);
    CHECK_MSG(r->decision == FC_DECIDE_NO, "decision %s", fc_decision_name(r->decision));
    CHECK_NEAR(r->margin, fc_decision_margin(&r->speedup_graph, 1.1), 1e-12);
    char buf[32];
    CHECK(!strcmp(json_decided_by(r, buf, sizeof buf), "graph"));
    char *html = report_of(r);
    CHECK_STR_CONTAINS(html, "decided by the graph replay");
    free(html);

    /* without graph replay the eager speedup decides: yes */
    measure(false, r);
    CHECK(!r->has_graph_speedup && r->decided_by == FC_DECIDER_EAGER);
    CHECK_MSG(r->decision == FC_DECIDE_YES, "decision %s", fc_decision_name(r->decision));
    CHECK(!strcmp(json_decided_by(r, buf, sizeof buf), "eager"));
    free(r);
}

/* Near the quarter of the unfused chain's eager time from which the graph speedup
 * decides, the two speedups disagreeing (eager: yes, graph: no): 10 µs launches,
 * three unfused kernels of ku, one fused kernel that makes the eager speedup 1.2; ku
 * puts the share the replay removes at 22 % (eager decides) and at 28 % (graph
 * decides). Both withhold the decision, where the bare quarter said yes for one and
 * no for the other. */
static void launch_share_near_quarter_withheld(void)
{
    const double shares[] = {0.22, 0.28};
    fc_record *r = fc_xcalloc(1, sizeof *r);
    for (size_t i = 0; i < FC_ARRAY_LEN(shares); i++) {
        memset(&g_sim, 0, sizeof g_sim);
        g_sim.launch_s = 10e-6;
        g_sim.kernels[FC_UNFUSED] = 3;
        g_sim.kernels[FC_FUSED] = 1;
        g_sim.kernel_s[FC_UNFUSED] = 10e-6 * (1 - shares[i]) / shares[i];
        g_sim.kernel_s[FC_FUSED] = 3 * (10e-6 + g_sim.kernel_s[FC_UNFUSED]) / 1.2 - 10e-6;
        measure(true, r);
        CHECK_MSG(fc_decide(&r->speedup, r->threshold) == FC_DECIDE_YES &&
                      fc_decide(&r->speedup_graph, r->threshold) == FC_DECIDE_NO,
                  "share %.2f: eager %g, graph %g", shares[i], r->speedup.ratio, r->speedup_graph.ratio);
        CHECK(r->decided_by == (shares[i] < 0.25 ? FC_DECIDER_EAGER : FC_DECIDER_GRAPH));
        CHECK_MSG(r->decision == FC_DECIDE_INCONCLUSIVE && r->margin <= 0, "share %.2f: %s", shares[i],
                  fc_decision_name(r->decision));
        CHECK_STR_CONTAINS(r->reason, "graph replay says no");
    }
    free(r);
}

/* 5 µs per launch, three 200 µs kernels unfused, one 400 µs kernel fused: replay
 * removes under a quarter of the unfused chain's time, so the eager speedup decides. */
static void kernel_bound_decided_eagerly(void)
{
    memset(&g_sim, 0, sizeof g_sim);
    g_sim.launch_s = 5e-6;
    g_sim.kernels[FC_UNFUSED] = 3;
    g_sim.kernels[FC_FUSED] = 1;
    g_sim.kernel_s[FC_UNFUSED] = 200e-6;
    g_sim.kernel_s[FC_FUSED] = 400e-6;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(true, r);
    CHECK(r->has_graph_speedup);
    CHECK_MSG(fabs(r->speedup.ratio - 615.0 / 405.0) < 0.05, "eager speedup %g", r->speedup.ratio);
    CHECK_MSG(fabs(r->speedup_graph.ratio - 1.5) < 0.05, "graph speedup %g", r->speedup_graph.ratio);
    CHECK(r->decided_by == FC_DECIDER_EAGER);
    CHECK_MSG(r->decision == FC_DECIDE_YES, "decision %s", fc_decision_name(r->decision));
    char buf[32];
    CHECK(!strcmp(json_decided_by(r, buf, sizeof buf), "eager"));
    char *html = report_of(r);
    CHECK_STR_CONTAINS(html, "decided by eager launches");
    free(html);
    free(r);
}

/* A fused form that changes more than the fusion, as cpu.openblas's blocked GEMM
 * does: the unfused chain's three kernels take 200 µs each, the control (the fused
 * form's implementation without the fusion, then the chain's passes) 120 µs each, the
 * fused form 350 µs. The speedup is 600/350 = 1.71, but fusion's part is 360/350 =
 * 1.03: the decision is made on the fusion split, no. */
/* The simulated backend with a control: the unfused chain and the control three
 * kernels of `unfused` and `control` seconds each, the fused form one of `fused`. */
static void sim_with_control(double unfused, double control, double fused)
{
    memset(&g_sim, 0, sizeof g_sim);
    g_sim.kernels[FC_UNFUSED] = g_sim.kernels[FC_CONTROL] = 3;
    g_sim.kernels[FC_FUSED] = 1;
    g_sim.kernel_s[FC_UNFUSED] = unfused;
    g_sim.kernel_s[FC_CONTROL] = control;
    g_sim.kernel_s[FC_FUSED] = fused;
}

static void control_decides_on_fusion(void)
{
    sim_with_control(200e-6, 120e-6, 350e-6);
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    CHECK(r->has_control);
    CHECK_MSG(fabs(r->speedup.ratio - 600.0 / 350.0) < 0.05, "speedup %g", r->speedup.ratio);
    CHECK_MSG(fabs(r->split_fusion.ratio - 360.0 / 350.0) < 0.03, "fusion split %g", r->split_fusion.ratio);
    CHECK(r->speedup.lo > 1.1); /* the whole speedup alone would say yes */
    CHECK(r->decided_by == FC_DECIDER_FUSION);
    CHECK(fc_record_decisive_speedup(r) == &r->split_fusion && fc_record_decisive_base(r) == FC_CONTROL);
    CHECK_MSG(r->decision == FC_DECIDE_NO, "decision %s", fc_decision_name(r->decision));
    CHECK_NEAR(r->margin, fc_decision_margin(&r->split_fusion, 1.1), 1e-12);
    char buf[32];
    CHECK(!strcmp(json_decided_by(r, buf, sizeof buf), "fusion"));
    char *html = report_of(r);
    CHECK_STR_CONTAINS(html, "which decided");
    free(html);

    /* without a control the whole speedup decides: yes */
    g_sim.kernels[FC_CONTROL] = 0;
    measure(false, r);
    CHECK(!r->has_control && r->decided_by == FC_DECIDER_EAGER);
    CHECK_MSG(r->decision == FC_DECIDE_YES, "decision %s", fc_decision_name(r->decision));
    free(r);
}

/* The precision rule judges every speedup that may decide: a control whose time
 * halves every other round leaves the whole speedup steady (its rounds' interval
 * within --max-noise at the third round) but the fusion split's, which decides, wide;
 * the rounds go on to another rule. */
static void precision_of_the_split(void)
{
    sim_with_control(200e-6, 120e-6, 350e-6);
    g_sim.fast_every = 2;
    g_sim.fast_s[FC_UNFUSED] = 200e-6;
    g_sim.fast_s[FC_CONTROL] = 60e-6;
    g_sim.fast_s[FC_FUSED] = 350e-6;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    CHECK(r->has_control);
    const double whole = (r->speedup.hi - r->speedup.lo) / (2 * r->speedup.ratio);
    CHECK_MSG(whole < 0.06, "the whole speedup's interval: half-width %g",
              whole); /* run_noise's 2.5 % and little else */
    CHECK_MSG(strcmp(r->stop_rule, "precision") != 0,
              "stopped on precision after %d rounds with the fusion split %g [%g, %g]", r->rounds,
              r->split_fusion.ratio, r->split_fusion.lo, r->split_fusion.hi);
    free(r);
}

/* A fused form whose own GEMM is slower than the unfused chain's library call, as
 * cuda.custom's may be against cuBLAS: the unfused chain's three kernels take 100 µs
 * each, the control's 200 µs, the fused form 400 µs. Fusion's part is 600/400 = 1.5,
 * but the implementation's is 300/600 = 0.5: a partitioner keeps the library call by
 * not fusing, so the whole speedup, 300/400 = 0.75, decides: no. */
static void losing_implementation_decides_whole(void)
{
    sim_with_control(100e-6, 200e-6, 400e-6);
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    CHECK(r->has_control);
    CHECK_MSG(r->split_fusion.lo > 1.1, "fusion split %g [%g, %g]", r->split_fusion.ratio, r->split_fusion.lo,
              r->split_fusion.hi); /* the fusion split alone would say yes */
    CHECK_MSG(r->split_implementation.hi < 1.0, "implementation %g", r->split_implementation.ratio);
    CHECK(r->decided_by == FC_DECIDER_EAGER);
    CHECK(fc_record_decisive_speedup(r) == &r->speedup && fc_record_decisive_base(r) == FC_UNFUSED);
    CHECK_MSG(r->decision == FC_DECIDE_NO, "decision %s", fc_decision_name(r->decision));
    char buf[32];
    CHECK(!strcmp(json_decided_by(r, buf, sizeof buf), "eager"));
    /* the implementation even: the fusion split decides again, yes */
    g_sim.kernel_s[FC_CONTROL] = 100e-6;
    g_sim.kernel_s[FC_FUSED] = 200e-6;
    measure(false, r);
    CHECK(r->has_control && r->decided_by == FC_DECIDER_FUSION);
    CHECK_MSG(r->decision == FC_DECIDE_YES, "decision %s", fc_decision_name(r->decision));
    free(r);
}

/* The machine's state moves under a record: in most rounds the unfused chain's three
 * kernels take 200 µs each and the fused one 400 µs (1.5x); every fifth round runs in
 * a state where they take 90 and 257 µs (1.05x). Ten rounds: the interval clears the
 * threshold 1.1 (its low end near 1.24), but the unfused medians span 2.2x and two
 * rounds lie below it, so the decision is withheld and the record, its JSON, its
 * table row and the report say why. With 230 µs in the fast state (1.17x) no round
 * is against it and the yes stands. */
static void state_sim(double fast_fused_s)
{
    memset(&g_sim, 0, sizeof g_sim);
    g_sim.kernels[FC_UNFUSED] = 3;
    g_sim.kernels[FC_FUSED] = 1;
    g_sim.kernel_s[FC_UNFUSED] = 200e-6;
    g_sim.kernel_s[FC_FUSED] = 400e-6;
    g_sim.fast_every = 5;
    g_sim.fast_s[FC_UNFUSED] = 90e-6;
    g_sim.fast_s[FC_FUSED] = fast_fused_s;
}

static void state_moved_withholds_decision(void)
{
    state_sim(257e-6);
    g_rounds = 10;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    CHECK_MSG(r->rounds == 10 && g_sim.setups == 10, "%d rounds, %d setups", r->rounds, g_sim.setups);
    CHECK_MSG(fc_decide(&r->speedup, 1.1) == FC_DECIDE_YES, "interval [%g, %g]", r->speedup.lo, r->speedup.hi);
    CHECK_MSG(r->decision == FC_DECIDE_INCONCLUSIVE, "decision %s", fc_decision_name(r->decision));
    CHECK(r->state.made && r->state.withheld && r->state.said == FC_DECIDE_YES && r->state.rounds_against == 2);
    CHECK(r->state.span_variant == FC_UNFUSED);
    CHECK_MSG(fabs(r->state.span - 600.0 / 270.0) < 0.05, "span %g", r->state.span);
    CHECK(r->margin <= 0);
    CHECK_STR_CONTAINS(r->reason, "decision withheld (the interval says yes)");
    CHECK_STR_CONTAINS(r->reason, "2 of the 10 rounds' speedups lie below the threshold 1.1");
    cJSON *o = fc_record_to_json(r);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "state");
    CHECK(cJSON_IsObject(st) && !strcmp(fc_json_str(st, "withheld", ""), "yes") &&
          !strcmp(fc_json_str(st, "span_variant", ""), "unfused") && fc_json_int(st, "rounds_against", -1) == 2);
    CHECK(!strcmp(fc_json_str(o, "decision", ""), "inconclusive"));
    cJSON_Delete(o);
    char *html = report_of(r);
    CHECK_STR_CONTAINS(html, "decision withheld");
    free(html);
    fc_doc doc;
    fc_doc_init(&doc);
    *fc_doc_add(&doc) = *r;
    char *md = fc_format_doc(&doc, FC_FMT_MD);
    CHECK_STR_CONTAINS(md, "inconclusive (withheld: the state moved)");
    free(md);
    char *txt = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&txt, &len);
    fc_print_table(mf, &doc);
    fclose(mf);
    CHECK_STR_CONTAINS(txt, "the machine's state moved between rounds");
    free(txt);
    /* read back: the same state, and the schema takes it (named as a CPU's record,
     * since the schema knows no simulated device) */
    char *json = sim_doc_as_cpu(&doc);
    fc_doc back;
    fc_err e = {{0}};
    CHECK_MSG(fc_doc_parse("sim.json", json, &back, &e) == 0, "%s", e.msg);
    if (back.n == 1) {
        const fc_state *b = &back.rec[0].state;
        CHECK(b->made && b->withheld && b->said == FC_DECIDE_YES && b->rounds_against == 2 &&
              b->span_variant == FC_UNFUSED && fabs(b->span - r->state.span) < 1e-9);
        CHECK(back.rec[0].decision == FC_DECIDE_INCONCLUSIVE);
        fc_doc_free(&back);
    }
    free(json);
    fc_doc_free(&doc);

    /* no state reverses it: the yes stands, the span is still recorded */
    state_sim(230e-6);
    measure(false, r);
    CHECK_MSG(r->decision == FC_DECIDE_YES, "decision %s", fc_decision_name(r->decision));
    CHECK(r->state.made && r->state.rounds_against == 0 && r->state.span > 2 && !r->reason[0]);
    g_rounds = 0;
    free(r);
}

/* The references the worker processes share: a saved one loads whole under its key,
 * sampled or full; another key, a truncated file or none loads nothing. */
static void reference_file_round_trip(void)
{
    const char *probs[] = {"linear_bias_relu:m=8,k=8,n=8,dtype=fp32", "attention:b=1,h=2,s=300,d=64,dtype=fp32"};
    char dir[] = "/tmp/fusecal-test-ref-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/r.ref", dir);
    for (size_t k = 0; k < FC_ARRAY_LEN(probs); k++) {
        fc_problem p;
        fc_err e = {{0}};
        CHECK(fc_problem_parse(probs[k], NULL, &p, &e) == 0);
        fc_workload w;
        CHECK(fc_workload_create(&p, 3, 0, &w, &e) == 0);
        fc_reference a, b;
        fc_reference_build(&p, &w, 3, &a);
        CHECK(fc_reference_save(&a, probs[k], path) == 0);
        CHECK(fc_reference_load(&b, probs[k], path));
        CHECK(b.n == a.n && b.full == a.full && b.zero_frac == a.zero_frac && b.ms == a.ms);
        CHECK(b.n && !memcmp(a.idx, b.idx, a.n * sizeof *a.idx) && !memcmp(a.val, b.val, a.n * sizeof *a.val));
        fc_reference_free(&b);
        CHECK_MSG(!fc_reference_load(&b, "another problem", path), "loaded under another key");
        CHECK(b.idx == NULL && b.n == 0);
        CHECK(truncate(path, 300) == 0);
        CHECK_MSG(!fc_reference_load(&b, probs[k], path), "loaded a truncated file");
        CHECK(remove(path) == 0);
        CHECK(!fc_reference_load(&b, probs[k], path));
        fc_reference_free(&a);
        fc_workload_free(&w);
    }
    CHECK(rmdir(dir) == 0);
}

/* The bandwidth ceiling of a working set: the point at or below its footprint and
 * every larger one (a non-monotone curve takes the larger rate), the smallest
 * point's and beyond below the curve, never under device memory's; cold or
 * without a curve, device memory's. Keeping the better of two measurements merges
 * the curves point by point. */
static void bandwidth_ceiling_by_footprint(void)
{
    fc_ceilings c = {.bandwidth_gbs = 30, .n_bw = 5};
    const double fp[] = {1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20}, gbs[] = {100, 120, 80, 50, 20};
    for (int i = 0; i < 5; i++) c.bw[i] = (fc_bw_point){.footprint_bytes = fp[i], .gbs = gbs[i]};
    CHECK(fc_ceilings_bandwidth_at(&c, 1000, false) == 120);    /* below the curve: all of it */
    CHECK(fc_ceilings_bandwidth_at(&c, 1 << 20, false) == 120); /* 1 MiB: 100, but 2 MiB ran faster */
    CHECK(fc_ceilings_bandwidth_at(&c, 3 << 20, false) == 120); /* between 2 and 4 MiB: 2 MiB's */
    CHECK(fc_ceilings_bandwidth_at(&c, 4 << 20, false) == 80);  /* exactly a point */
    CHECK(fc_ceilings_bandwidth_at(&c, 12 << 20, false) == 50); /* 8 MiB's */
    CHECK(fc_ceilings_bandwidth_at(&c, 1e12, false) == 30);     /* past it: device memory, not 20 */
    CHECK(fc_ceilings_bandwidth_at(&c, 3 << 20, true) == 30);   /* cold */
    CHECK(fc_ceilings_bandwidth_at(&c, 0, false) == 30);        /* no footprint (older records) */
    fc_ceilings none = {.bandwidth_gbs = 30};
    CHECK(fc_ceilings_bandwidth_at(&none, 3 << 20, false) == 30);
    fc_ceilings now = c;
    now.bw[2].gbs = 90;
    now.bw[3].gbs = 40;
    now.bandwidth_gbs = 25;
    now.gflops[FC_FP32] = 7;
    fc_ceilings_keep_better(&c, &now);
    CHECK(c.bw[2].gbs == 90 && c.bw[3].gbs == 50 && c.bandwidth_gbs == 30 && c.gflops[FC_FP32] == 7);
    fc_ceilings_keep_better(&none, &c); /* a first curve is taken whole */
    CHECK(none.n_bw == 5 && none.bw[4].gbs == 20);
    /* no read stream measured: the copy's ceiling whatever the reads */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, false, 1) == fc_ceilings_bandwidth_at(&c, 3 << 20, false));
    /* the reads' rate over their share, where it is below the copy's, by the same rule */
    const double rd[] = {60, 90, 40, 30, 10};
    for (int i = 0; i < 5; i++) c.bw[i].read_gbs = rd[i];
    c.read_bandwidth_gbs = 12;
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, false, 1) == 90);      /* 2 MiB's read: all reads */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, false, 0.8) == 112.5); /* 90 / 0.8, under 120 */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, false, 0.5) == 120);   /* the copy's bound */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, false, 0) == 120);     /* writes only */
    CHECK(fc_ceilings_stream_at(&c, 1e12, false, 1) == 12);         /* past it: device memory's read */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, true, 1) == 12);       /* cold */
    CHECK(fc_ceilings_stream_at(&c, 3 << 20, true, 0.25) == 30);    /* cold, 48 over the reads: the copy's */
    fc_ceilings later = c;
    later.read_bandwidth_gbs = 11;
    later.bw[1].read_gbs = 95;
    fc_ceilings_keep_better(&c, &later);
    CHECK(c.read_bandwidth_gbs == 12 && c.bw[1].read_gbs == 95 && c.bw[0].read_gbs == 60);
    cJSON *o = fc_ceilings_json(&c);
    CHECK(fc_json_num(o, "read_bandwidth_gbs", 0) == 12);
    const cJSON *p1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "bandwidth_by_footprint"), 1);
    CHECK(fc_json_num(p1, "read_gbs", 0) == 95 && fc_json_num(p1, "gbs", 0) == 120);
    cJSON_Delete(o);
}

/* The arithmetic peak: the better of the measured loop and the GEMM rate, fp32's
 * for a dtype with neither; kept the better of two measurements, per dtype; written
 * with the ceilings and read back from the kept ones. */
static void arithmetic_peak(void)
{
    fc_ceilings c = {.bandwidth_gbs = 30};
    c.gflops[FC_FP32] = 150;
    CHECK(fc_ceilings_peak(&c, FC_FP32) == 150); /* not measured: the GEMM rate */
    c.peak_gflops[FC_FP32] = 180;
    CHECK(fc_ceilings_peak(&c, FC_FP32) == 180);
    CHECK(fc_ceilings_peak(&c, FC_BF16) == 180); /* no bf16 figure: fp32's */
    c.gflops[FC_BF16] = 300;
    CHECK(fc_ceilings_peak(&c, FC_BF16) == 300); /* a bf16 GEMM, no bf16 loop */
    c.peak_gflops[FC_BF16] = 250;                /* the loop at a lower clock than the GEMM */
    CHECK(fc_ceilings_peak(&c, FC_BF16) == 300);
    fc_ceilings now = {0};
    now.peak_gflops[FC_FP32] = 170;
    now.peak_gflops[FC_BF16] = 260;
    fc_ceilings_keep_better(&c, &now);
    CHECK(c.peak_gflops[FC_FP32] == 180 && c.peak_gflops[FC_BF16] == 260 && c.gflops[FC_FP32] == 150);
    cJSON *o = fc_ceilings_json(&c);
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(o, "peak_gflops");
    CHECK(fc_json_num(pk, "fp32", 0) == 180 && fc_json_num(pk, "bf16", 0) == 260 && !cJSON_HasObjectItem(pk, "fp16"));
    cJSON_Delete(o);
}

/* The simulated device's ceilings for measure(): a GEMM rate of 200 GFLOP/s, an
 * arithmetic peak of 400 and 20 GB/s, no curve. */
static void sim_ceilings_200_400_20(void)
{
    memset(&g_sim_ceil, 0, sizeof g_sim_ceil);
    g_sim_ceil.gflops[FC_FP32] = 200;
    g_sim_ceil.peak_gflops[FC_FP32] = 400;
    g_sim_ceil.bandwidth_gbs = 20;
}

/* A record's variants take the bandwidth ceiling of their working sets: the fused
 * op's bytes; the unfused chain each op at its own bytes' rate, combined by time
 * (its footprint the largest op's); their percentages are of it and the JSON says
 * both; cold, device memory's. */
static void records_take_their_footprints_ceiling(void)
{
    launch_bound_sim();
    sim_ceilings_200_400_20();
    g_sim_ceil.n_bw = 3;
    g_sim_ceil.bw[0] = (fc_bw_point){.footprint_bytes = 512, .gbs = 400};
    g_sim_ceil.bw[1] = (fc_bw_point){.footprint_bytes = 700, .gbs = 200};
    g_sim_ceil.bw[2] = (fc_bw_point){.footprint_bytes = 1024, .gbs = 100};
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    const fc_variant_rec *f = &r->v[FC_FUSED], *u = &r->v[FC_UNFUSED];
    /* fused: x, W, y of 8x8 fp32 and the bias, 800 bytes, each once: 700's rate */
    CHECK_MSG(f->footprint_bytes == 800 && f->footprint_bytes == f->bytes, "fused footprint %g", f->footprint_bytes);
    CHECK(f->ceil_gbs == 200);
    /* unfused: the matmul's 768 bytes at 200 GB/s, the bias pass's 544 and the
     * ReLU's 512 at 400 */
    CHECK_MSG(u->footprint_bytes == 768 && u->bytes == 768 + 544 + 512, "unfused footprint %g of %g",
              u->footprint_bytes, u->bytes);
    CHECK_NEAR(u->ceil_gbs, 1824 / (768 / 200.0 + 544 / 400.0 + 512 / 400.0), 1e-9);
    CHECK_NEAR(f->pct_peak_bw, 100 * f->gbs / 200, 1e-9);
    CHECK(r->ceil_gbs == 20); /* the record's roofline block keeps device memory's */
    /* FLOP percentages: of the arithmetic peak, and of the GEMM rate apart */
    CHECK(r->peak_gflops == 400 && r->ceil_gflops == 200);
    for (int v = 0; v < FC_NVARIANTS; v++) {
        const fc_variant_rec *x = &r->v[v];
        CHECK_NEAR(x->pct_peak_flops, 100 * x->gflops / 400, 1e-9);
        CHECK_NEAR(x->pct_gemm, 100 * x->gflops / 200, 1e-9);
        CHECK_NEAR(x->pct_roofline, 100 * x->gflops / fmin(400, x->intensity * x->ceil_gbs), 1e-9);
    }
    cJSON *o = fc_record_to_json(r);
    const cJSON *fv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "variants"), "fused");
    CHECK(fc_json_num(fv, "bandwidth_ceiling_gbs", 0) == 200 && fc_json_num(fv, "footprint_bytes", 0) == 800);
    CHECK_NEAR(fc_json_num(fv, "pct_gemm", 0), f->pct_gemm, 1e-9);
    const cJSON *roof = cJSON_GetObjectItemCaseSensitive(o, "roofline");
    CHECK(fc_json_num(roof, "peak_gflops", 0) == 400 && fc_json_num(roof, "ceiling_gflops", 0) == 200 &&
          fc_json_num(roof, "machine_balance_flop_per_byte", 0) == 20);
    cJSON_Delete(o);
    /* the fused op's reads (all but its 8x8 output) bound its ceiling by the read
     * stream's rate over their share; the unfused chain's is the copy's */
    CHECK(f->read_bytes == 800 - 256);
    for (int i = 0; i < 3; i++) g_sim_ceil.bw[i].read_gbs = i < 2 ? 100 : 50;
    g_sim_ceil.read_bandwidth_gbs = 10;
    measure(false, r);
    CHECK_NEAR(f->ceil_gbs, 100 / (544 / 800.0), 1e-9);
    CHECK_NEAR(u->ceil_gbs, 1824 / (768 / 200.0 + 544 / 400.0 + 512 / 400.0), 1e-9);
    CHECK_NEAR(f->pct_peak_bw, 100 * f->gbs / f->ceil_gbs, 1e-9);
    for (int i = 0; i < 3; i++) g_sim_ceil.bw[i].read_gbs = 0;
    g_sim_ceil.read_bandwidth_gbs = 0;
    /* a kernel past the GEMM rate flags nothing; past the arithmetic peak it does */
    double rate = f->gflops;
    g_sim_ceil.gflops[FC_FP32] = rate / 4;
    g_sim_ceil.peak_gflops[FC_FP32] = rate * 4;
    measure(false, r);
    CHECK_MSG(f->pct_gemm > 200 && f->pct_peak_flops < 50 && !f->over_ceiling, "%g %% of GEMM, %g %% of peak",
              f->pct_gemm, f->pct_peak_flops);
    g_sim_ceil.peak_gflops[FC_FP32] = rate / 4;
    measure(false, r);
    CHECK_MSG(f->pct_peak_flops > 200 && f->over_ceiling, "%g %% of peak", f->pct_peak_flops);
    g_cold = true;
    measure(false, r);
    g_cold = false;
    CHECK(r->v[FC_FUSED].ceil_gbs == 20 && r->v[FC_UNFUSED].ceil_gbs == 20);
    CHECK_NEAR(r->v[FC_FUSED].pct_peak_bw, 100 * r->v[FC_FUSED].gbs / 20, 1e-9);
    memset(&g_sim_ceil, 0, sizeof g_sim_ceil);
    free(r);
}

/* A memory-bound record on a device that streams beside its rounds: each round gets
 * each variant's ceiling at its working sets, measured as it ended (the fused op's
 * bytes, bounded by the read stream over its share of reads; the chain's ops each at
 * their own, combined by time), the variant the median of its rounds' and its
 * percentage of it, flagged above 100; written and read back. Not measured when
 * turned off, cold, or on a device without the hook. */
static void bandwidth_measured_beside_rounds(void)
{
    launch_bound_sim();
    sim_ceilings_200_400_20();
    fc_device beside = sim_device;
    beside.stream_at = sim_stream_at;
    g_dev = &beside;
    g_rounds = 3;
    g_beside_calls = 0;
    g_beside_scale[0] = 1, g_beside_scale[1] = 0.5, g_beside_scale[2] = 2;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    const fc_variant_rec *f = &r->v[FC_FUSED], *u = &r->v[FC_UNFUSED];
    CHECK(!strcmp(f->bound, "memory") && r->rounds == 3 && g_beside_calls == 3);
    /* asked: the fused op's 800 bytes, then the chain's 768, 544 and 512 */
    CHECK_MSG(g_beside_nasked == 4 && g_beside_asked[0] == 800 && g_beside_asked[1] == 768 &&
                  g_beside_asked[2] == 544 && g_beside_asked[3] == 512,
              "%d footprints asked", g_beside_nasked);
    const double fused1 = fmin(50, 25 / (544 / 800.0)), chain1 = 1824 / (768 / 50.0 + 544 / 100.0 + 512 / 100.0);
    const double sc[3] = {1, 0.5, 2};
    for (int k = 0; k < 3; k++) {
        CHECK_NEAR(r->round[k].beside_gbs[FC_FUSED], fused1 * sc[k], 1e-9);
        CHECK_NEAR(r->round[k].beside_gbs[FC_UNFUSED], chain1 * sc[k], 1e-9);
    }
    CHECK_NEAR(f->beside_gbs, fused1, 1e-9); /* the median of 0.5, 1 and 2 times it */
    CHECK_NEAR(u->beside_gbs, chain1, 1e-9);
    CHECK_NEAR(f->pct_bw_beside, 100 * f->gbs / fused1, 1e-9);
    CHECK_NEAR(u->pct_bw_beside, 100 * u->gbs / chain1, 1e-9);
    CHECK_MSG(f->over_ceiling == (f->pct_bw_beside > 100 || f->pct_peak_bw > 100), "fused %g %% beside",
              f->pct_bw_beside);
    /* written and read back, and the schema takes it */
    fc_doc back;
    if (read_back(r, &back)) {
        const fc_record *b = &back.rec[0];
        CHECK(back.settings.bandwidth_beside);
        CHECK_NEAR(b->v[FC_FUSED].beside_gbs, fused1, 1e-9);
        CHECK_NEAR(b->v[FC_UNFUSED].pct_bw_beside, u->pct_bw_beside, 1e-9);
        CHECK_NEAR(b->round[1].beside_gbs[FC_UNFUSED], chain1 / 2, 1e-9);
        fc_doc_free(&back);
    }
    /* a device in a slow state beside every round: the kernel passes its ceiling, flagged */
    g_beside_scale[0] = g_beside_scale[1] = g_beside_scale[2] = 1e-6;
    measure(false, r);
    CHECK_MSG(f->pct_bw_beside > 100 && f->over_ceiling && f->pct_peak_bw < 100, "%g %% beside", f->pct_bw_beside);
    CHECK(g_beside_calls == 3 + 3 * FC_RECHECK_TRIES); /* each round measured again, twice, still above */
    /* a slow measurement beside a round that streamed faster: measured again until the
     * round is under it, the best kept (the calls' states cycle 1e-6, 1, 1e-6: round 1
     * takes 2 calls, rounds 2 and 3 take 3), and nothing flagged */
    g_beside_calls = 0;
    g_beside_scale[0] = 1e-6, g_beside_scale[1] = 1, g_beside_scale[2] = 1e-6;
    measure(false, r);
    CHECK_MSG(g_beside_calls == 8, "%d measurements beside", g_beside_calls);
    for (int k = 0; k < 3; k++) {
        CHECK_NEAR(r->round[k].beside_gbs[FC_FUSED], fused1, 1e-9);
        CHECK_NEAR(r->round[k].beside_gbs[FC_UNFUSED], chain1, 1e-9);
    }
    CHECK_MSG(f->pct_bw_beside < 100 && !f->over_ceiling && !u->over_ceiling, "%g %% beside", f->pct_bw_beside);
    g_beside_scale[0] = g_beside_scale[1] = g_beside_scale[2] = 1;
    /* turned off, cold, or a device without the hook: none measured */
    const int calls = g_beside_calls;
    g_no_beside = true;
    measure(false, r);
    g_no_beside = false;
    g_cold = true;
    measure(false, r);
    g_cold = false;
    g_dev = &sim_device;
    measure(false, r);
    CHECK(g_beside_calls == calls && f->beside_gbs == 0 && r->round[0].beside_gbs[FC_FUSED] == 0);
    cJSON *o = fc_record_to_json(r);
    const cJSON *fv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "variants"), "fused");
    CHECK(fv && !cJSON_HasObjectItem(fv, "pct_bandwidth_beside") && !cJSON_HasObjectItem(fv, "bandwidth_beside_gbs"));
    cJSON_Delete(o);
    /* a compute-bound record gets none */
    g_dev = &beside;
    g_sim_ceil.peak_gflops[FC_FP32] = 1e-3;
    g_sim_ceil.gflops[FC_FP32] = 1e-3;
    measure(false, r);
    CHECK(!strcmp(f->bound, "compute") && !strcmp(u->bound, "compute") && g_beside_calls == calls);
    g_dev = &sim_device;
    g_rounds = 0;
    memset(&g_sim_ceil, 0, sizeof g_sim_ceil);
    free(r);
}

/* A compute-bound record on a device that measures its arithmetic peak beside its
 * rounds: each round's peak, the record's the median of the rounds', each variant's
 * rate as a percentage of it, flagged above 100 and measured again while a variant of
 * the round ran faster; written and read back. None when turned off, for a
 * memory-bound record, or on a device without the hook. */
static void peak_measured_beside_rounds(void)
{
    launch_bound_sim(); /* fused 0.35 GFLOP/s, 1.44 FLOP a byte: bound by a peak of 1 */
    memset(&g_sim_ceil, 0, sizeof g_sim_ceil);
    g_sim_ceil.gflops[FC_FP32] = g_sim_ceil.peak_gflops[FC_FP32] = 1;
    g_sim_ceil.bandwidth_gbs = 20;
    fc_device dev = sim_device;
    dev.peak_at = sim_peak_at;
    g_dev = &dev;
    g_rounds = 3;
    g_peak_base = 2;
    g_peak_calls = 0;
    g_peak_scale[0] = 1, g_peak_scale[1] = 0.5, g_peak_scale[2] = 2;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    measure(false, r);
    const fc_variant_rec *f = &r->v[FC_FUSED], *u = &r->v[FC_UNFUSED];
    CHECK(!strcmp(f->bound, "compute") && r->rounds == 3 && g_peak_calls == 3);
    const double sc[3] = {1, 0.5, 2};
    for (int k = 0; k < 3; k++) CHECK_NEAR(r->round[k].beside_gflops, 2 * sc[k], 1e-12);
    CHECK_NEAR(r->peak_beside_gflops, 2, 1e-12); /* the median of 1, 2 and 4 */
    CHECK_NEAR(f->pct_peak_beside, 100 * f->gflops / 2, 1e-9);
    CHECK_NEAR(u->pct_peak_beside, u->pct_peak_flops / 2, 1e-9); /* of a peak of 2 against 1 */
    CHECK_MSG(f->pct_peak_flops < 100 && !f->over_ceiling && !u->over_ceiling, "%g %% of peak", f->pct_peak_flops);
    /* written and read back, and the schema takes it */
    fc_doc back;
    if (read_back(r, &back)) {
        const fc_record *b = &back.rec[0];
        CHECK(back.settings.peak_beside);
        CHECK_NEAR(b->peak_beside_gflops, 2, 1e-12);
        CHECK_NEAR(b->v[FC_FUSED].pct_peak_beside, f->pct_peak_beside, 1e-9);
        CHECK_NEAR(b->round[1].beside_gflops, 1, 1e-12);
        fc_doc_free(&back);
    }
    /* slow beside every round: measured again, twice, still above, flagged */
    g_peak_calls = 0;
    g_peak_scale[0] = g_peak_scale[1] = g_peak_scale[2] = 1e-3;
    measure(false, r);
    CHECK_MSG(f->pct_peak_beside > 100 && f->over_ceiling && f->pct_peak_flops < 100, "%g %% beside",
              f->pct_peak_beside);
    CHECK(g_peak_calls == 3 * FC_RECHECK_TRIES);
    /* slow, then not: measured again until the round is under it, the best kept (the
     * states cycle 1e-3, 1, 1e-3: round 1 takes 2 calls, rounds 2 and 3 take 3) */
    g_peak_calls = 0;
    g_peak_scale[0] = 1e-3, g_peak_scale[1] = 1, g_peak_scale[2] = 1e-3;
    measure(false, r);
    CHECK_MSG(g_peak_calls == 8, "%d measurements beside", g_peak_calls);
    for (int k = 0; k < 3; k++) CHECK_NEAR(r->round[k].beside_gflops, 2, 1e-12);
    CHECK(!f->over_ceiling && !u->over_ceiling);
    g_peak_scale[0] = g_peak_scale[1] = g_peak_scale[2] = 1;
    /* turned off, a memory-bound record, a device without the hook: none measured */
    const int calls = g_peak_calls;
    g_no_peak_beside = true;
    measure(false, r);
    g_no_peak_beside = false;
    CHECK(r->peak_beside_gflops == 0 && f->pct_peak_beside == 0 && r->round[0].beside_gflops == 0);
    g_sim_ceil.gflops[FC_FP32] = g_sim_ceil.peak_gflops[FC_FP32] = 1e6;
    measure(false, r);
    CHECK(!strcmp(f->bound, "memory") && r->peak_beside_gflops == 0);
    g_sim_ceil.gflops[FC_FP32] = g_sim_ceil.peak_gflops[FC_FP32] = 1;
    g_dev = &sim_device;
    measure(false, r);
    CHECK(g_peak_calls == calls && r->peak_beside_gflops == 0);
    cJSON *o = fc_record_to_json(r);
    const cJSON *fv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "variants"), "fused");
    CHECK(fv && !cJSON_HasObjectItem(fv, "pct_peak_flops_beside") &&
          !cJSON_HasObjectItem(cJSON_GetObjectItemCaseSensitive(o, "roofline"), "peak_beside_gflops"));
    cJSON_Delete(o);
    g_rounds = 0;
    memset(&g_sim_ceil, 0, sizeof g_sim_ceil);
    free(r);
}

/* A record above its device's GEMM ceiling: the ceilings are measured again, up to
 * FC_RECHECK_TRIES times while it is still above, and the best of the measurements
 * kept per component; the record's percentages and flags and the document's
 * ceilings follow. None above: nothing is measured. */
static void ceilings_measured_again(void)
{
    char dir[] = "/tmp/fusecal-test-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("XDG_CACHE_HOME", dir, 1); /* the cache the session keeps: this test's own */
    static const fc_registry none = {0};
    fc_session ses = {.reg = &none, .ndev = 1, .dev = {&sim_device}, .ctx = {&g_sim}, .measured = {true}};
    ses.ceil[0].gflops[FC_FP32] = 100; /* measured in a slow stretch */
    ses.ceil[0].bandwidth_gbs = 30;    /* better than the second measurement: kept */
    snprintf(ses.ceil[0].method, sizeof ses.ceil[0].method, "first; measured again at 2026 (old)");
    fc_doc doc;
    fc_doc_init(&doc);
    doc.ceilings = cJSON_CreateObject();
    cJSON_AddItemToObject(doc.ceilings, "sim", cJSON_CreateString("old"));
    fc_record *r = fc_doc_add(&doc);
    fc_err e = {{0}};
    CHECK(fc_problem_parse("linear_bias:m=64,k=64,n=64,dtype=fp32", NULL, &r->prob, &e) == 0);
    fc_strlcpy(r->device, "sim", sizeof r->device);
    r->status = FC_STATUS_OK;
    r->flops = 150e9 * 1e-3; /* 150 GFLOP/s at 1 ms */
    r->ceil_gflops = 100;
    r->ceil_gbs = 30;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        r->v[v].lat.median = 1.0;
        r->v[v].bytes = 1e6;
        r->v[v].intensity = r->flops / 1e6;
        r->v[v].pct_peak_flops = 150;
    }
    g_sim_measured = 0;
    CHECK(fc_session_recheck_ceilings(&ses, &doc, &e) == 1);
    CHECK(g_sim_measured == 1); /* within the ceiling after one: no more */
    CHECK(ses.ceil[0].gflops[FC_FP32] == 200 && ses.ceil[0].bandwidth_gbs == 30);
    CHECK_MSG(strstr(ses.ceil[0].method, "(old)") == NULL && strstr(ses.ceil[0].method, "measured again at"), "%s",
              ses.ceil[0].method);
    CHECK(r->ceil_gflops == 200);
    CHECK_MSG(fabs(r->v[FC_FUSED].pct_peak_flops - 75) < 1e-9 && !r->v[FC_FUSED].over_ceiling, "%g %%",
              r->v[FC_FUSED].pct_peak_flops);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(doc.ceilings, "sim");
    CHECK(cJSON_IsObject(c) && cJSON_GetArraySize(doc.ceilings) == 1);
    /* within the ceiling now: no second measurement */
    ses.ceil[0].gflops[FC_FP32] = 1;
    CHECK(fc_session_recheck_ceilings(&ses, &doc, &e) == 0);
    CHECK(ses.ceil[0].gflops[FC_FP32] == 1);
    /* still above after a measurement: measured again while it is, the best kept */
    ses.ceil[0].gflops[FC_FP32] = 100;
    for (int v = 0; v < FC_NVARIANTS; v++) r->v[v].pct_peak_flops = 150;
    g_sim_measured = 0;
    g_sim_rates[0] = 120;
    g_sim_rates[1] = 110;
    g_sim_rates[2] = 160;
    CHECK(fc_session_recheck_ceilings(&ses, &doc, &e) == 1);
    CHECK_MSG(g_sim_measured == 3 && ses.ceil[0].gflops[FC_FP32] == 160, "%d measurements, %g GFLOP/s", g_sim_measured,
              ses.ceil[0].gflops[FC_FP32]);
    CHECK(r->ceil_gflops == 160 && !r->v[FC_FUSED].over_ceiling);
    /* above after every try: FC_RECHECK_TRIES measurements, the record stays flagged */
    ses.ceil[0].gflops[FC_FP32] = 100;
    for (int v = 0; v < FC_NVARIANTS; v++) r->v[v].pct_peak_flops = 150;
    g_sim_measured = 0;
    for (int k = 0; k < 4; k++) g_sim_rates[k] = 110 + k;
    CHECK(fc_session_recheck_ceilings(&ses, &doc, &e) == 1);
    CHECK_MSG(g_sim_measured == FC_RECHECK_TRIES && ses.ceil[0].gflops[FC_FP32] == 112, "%d measurements, %g GFLOP/s",
              g_sim_measured, ses.ceil[0].gflops[FC_FP32]);
    CHECK(r->v[FC_FUSED].over_ceiling && r->v[FC_FUSED].pct_peak_flops > 100);
    memset(g_sim_rates, 0, sizeof g_sim_rates);
    fc_doc_free(&doc);
    char path[256];
    snprintf(path, sizeof path, "%s/fusecal/ceilings-sim.json", dir);
    CHECK_MSG(remove(path) == 0, "no cache kept at %s", path);
    snprintf(path, sizeof path, "%s/fusecal", dir);
    CHECK(rmdir(path) == 0 && rmdir(dir) == 0);
    unsetenv("XDG_CACHE_HOME");
}

/* A cold sample begins on an idle device: the flush, then a synchronize, then the
 * timer (on a GPU the flush is queued, and calls queued behind it would be launched
 * while it ran); a warm one without either. */
static void cold_samples_begin_idle(void)
{
    memset(&g_sim, 0, sizeof g_sim);
    g_sim.launch_s = 1e-6;
    g_sim.kernel_s[FC_UNFUSED] = g_sim.kernel_s[FC_FUSED] = 1e-5;
    g_sim.kernels[FC_UNFUSED] = 3;
    g_sim.kernels[FC_FUSED] = 1;
    fc_record *r = fc_xcalloc(1, sizeof *r);
    for (int cold = 0; cold <= 1; cold++) {
        g_begun[0] = g_begun[1] = 0;
        g_last = 0;
        g_cold = cold;
        measure(false, r);
        CHECK_MSG(cold ? g_begun[1] > 0 && g_begun[0] == 0 : g_begun[0] > 0 && g_begun[1] == 0,
                  "%s: %d samples begun after a flush and a synchronize, %d otherwise", cold ? "cold" : "warm",
                  g_begun[1], g_begun[0]);
    }
    g_cold = false;
    free(r);
}

/* A setup that fails or that the library declines, having built part of its state:
 * the record is failed or skipped with the reason, and the state is torn down all
 * the same (a GPU backend's buffers and workspace, else held until the process ends). */
static void failed_setup_torn_down(void)
{
    static const int rcs[] = {FC_DECLINED, -1};
    for (size_t i = 0; i < FC_ARRAY_LEN(rcs); i++) {
        memset(&g_sim, 0, sizeof g_sim);
        g_sim.launch_s = 1e-6;
        g_sim.kernel_s[FC_UNFUSED] = g_sim.kernel_s[FC_FUSED] = 1e-5;
        g_sim.kernels[FC_UNFUSED] = 3;
        g_sim.kernels[FC_FUSED] = 1;
        g_sim.setup_rc = rcs[i];
        fc_record r;
        g_any_status = true;
        measure(false, &r);
        g_any_status = false;
        const fc_status want = rcs[i] == FC_DECLINED ? FC_STATUS_SKIPPED : FC_STATUS_FAILED;
        CHECK_MSG(r.status == want && strstr(r.reason, rcs[i] == FC_DECLINED ? "declined" : "setup failed"),
                  "record %s: %s", fc_status_name(r.status), r.reason);
        CHECK_MSG(g_sim.setups >= 1 && g_sim.teardowns == g_sim.setups, "%d setups, %d teardowns", g_sim.setups,
                  g_sim.teardowns);
    }
    memset(&g_sim, 0, sizeof g_sim);
}

/* A fused variant that adds to its output (oneDNN's sum post-op, in place): its
 * output after the timed calls is not the verified one. Declared in_place, the
 * check after timing runs it once more from its input put back, and the record is
 * ok; undeclared, the same drift fails the record as an output changed in timing. */
static void in_place_variant_checked_from_its_input(void)
{
    for (int declared = 0; declared < 2; declared++) {
        memset(&g_sim, 0, sizeof g_sim);
        g_sim.launch_s = 1e-6;
        g_sim.kernel_s[FC_UNFUSED] = g_sim.kernel_s[FC_FUSED] = 1e-5;
        g_sim.kernels[FC_UNFUSED] = 3;
        g_sim.kernels[FC_FUSED] = 1;
        g_sim.adds_to_output = true;
        g_sim.declares_in_place = declared;
        fc_record r;
        g_any_status = true;
        measure(false, &r);
        g_any_status = false;
        if (declared)
            CHECK_MSG(r.status == FC_STATUS_OK && r.verified && r.v[FC_FUSED].stable, "declared: %s: %s",
                      fc_status_name(r.status), r.reason);
        else
            CHECK_MSG(r.status == FC_STATUS_FAILED && strstr(r.reason, "output changed during timing"),
                      "undeclared: %s: %s", fc_status_name(r.status), r.reason);
    }
    memset(&g_sim, 0, sizeof g_sim);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(launch_bound_decided_by_graph),
                                   T(launch_share_near_quarter_withheld),
                                   T(failed_setup_torn_down),
                                   T(in_place_variant_checked_from_its_input),
                                   T(cold_samples_begin_idle),
                                   T(kernel_bound_decided_eagerly),
                                   T(control_decides_on_fusion),
                                   T(precision_of_the_split),
                                   T(losing_implementation_decides_whole),
                                   T(state_moved_withholds_decision),
                                   T(reference_file_round_trip),
                                   T(ceilings_measured_again),
                                   T(bandwidth_ceiling_by_footprint),
                                   T(records_take_their_footprints_ceiling),
                                   T(bandwidth_measured_beside_rounds),
                                   T(peak_measured_beside_rounds),
                                   T(arithmetic_peak)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
