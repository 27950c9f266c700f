/* test_check.c — the verdicts of `fusecal check` and every exit-code decision,
 * on synthetic records with known confidence intervals; thresholds files;
 * pairing; compare's means; threshold crossings along one dimension and how
 * they move between documents; the report's chart data (collected and
 * analysed), XML escaping, the report's markup and the check outputs. */
#include "charts.h"
#include "checkfmt.h"
#include "crossing.h"
#include "host.h"
#include "host_summary.h"
#include "stats.h"
#include "embedded.h"
#include "jsonfile.h"
#include "match.h"
#include "report.h"
#include "svg.h"
#include "test.h"
#include "thresholds.h"

static fc_record mk(const char *problem, const char *backend, double lo, double ratio, double hi, fc_status st)
{
    fc_record r;
    memset(&r, 0, sizeof r);
    fc_err e;
    if (fc_problem_parse(problem, NULL, &r.prob, &e) != 0) {
        fprintf(stderr, "bad test problem '%s': %s\n", problem, e.msg);
        abort();
    }
    fc_strlcpy(r.problem, problem, sizeof r.problem); /* as the file spelled it */
    fc_strlcpy(r.backend, backend, sizeof r.backend);
    fc_strlcpy(r.device, strncmp(backend, "cuda", 4) ? "cpu" : "cuda", sizeof r.device);
    r.status = st;
    r.threshold = 1.1;
    r.speedup = (fc_ratio_ci){.ratio = ratio, .lo = lo, .hi = hi};
    r.decision = fc_decide(&r.speedup, r.threshold);
    r.verified = st == FC_STATUS_OK;
    r.flops = 1e6;
    r.traffic_reduction = 0.5;
    r.v[FC_FUSED].lat.median = 0.1;
    r.v[FC_UNFUSED].lat.median = 0.1 * ratio;
    for (int v = 0; v < FC_NVARIANTS; v++) {
        r.v[v].check.passed = r.v[v].check.trusted = st == FC_STATUS_OK;
        r.v[v].gflops = 10;
        r.v[v].intensity = v ? 4 : 2;
    }
    if (st != FC_STATUS_OK) snprintf(r.reason, sizeof r.reason, "verification failed (fused): rel err 0.5");
    return r;
}

#define LB "linear_bias:m=8,k=8,n=8,dtype=fp32"
#define LR "linear_bias_relu:m=64,k=64,n=64,dtype=fp32"
#define CV "conv_bn_relu:n=1,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"

static fc_limits lim(double min, double tol)
{
    fc_limits l;
    memset(&l, 0, sizeof l);
    l.min_speedup = min;
    l.tolerance = tol;
    return l;
}

static fc_verdict judge(const fc_record *b, const fc_record *c, double min, double tol, char *why)
{
    fc_limits l = lim(min, tol);
    return fc_judge(b, c, &l, why, 512);
}

/* c's rounds: ten, each's speedup 1.3 but the last `odd`, which are `odd_ratio`; the
 * state's span as given */
static void rounds_of(fc_record *c, double span, int odd, double odd_ratio)
{
    c->rounds = 10;
    for (int k = 0; k < 10; k++) c->round[k].ratio = k >= 10 - odd ? odd_ratio : 1.3;
    c->state = (fc_state){.made = true, .span = span, .said = c->decision};
}

/* The state check's rule for check's verdicts: when the machine's state moved under
 * the rounds (span 2 or more) and a tenth of them or more lie across the bound, a
 * below-threshold, regressed or passing verdict is inconclusive instead. */
static void state_moved_verdicts(void)
{
    char why[512];
    fc_record c = mk(LB, "cpu.openblas", 1.20, 1.30, 1.40, FC_STATUS_OK);
    rounds_of(&c, 2.5, 2, 1.6); /* two rounds above the minimum 1.5 */
    CHECK(judge(NULL, &c, 1.5, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK_STR_CONTAINS(why, "below the minimum 1.5x, but the machine's state moved under its rounds");
    CHECK_STR_CONTAINS(why, "2 of its 10 rounds' speedups lie above it");
    rounds_of(&c, 1.8, 2, 1.6); /* the state held: noise, the interval stands */
    CHECK(judge(NULL, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    rounds_of(&c, 2.5, 0, 0); /* no round reaches the minimum */
    CHECK(judge(NULL, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    /* regressed against a baseline, unless rounds reach its floor (2.0 * 0.95 = 1.9) */
    fc_record high = mk(LB, "cpu.openblas", 2.0, 2.1, 2.2, FC_STATUS_OK);
    CHECK(judge(&high, &c, 0, 0.05, why) == FC_VERDICT_REGRESSED);
    rounds_of(&c, 2.5, 1, 1.95);
    CHECK(judge(&high, &c, 0, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK_STR_CONTAINS(why, "the baseline's floor");
    /* a pass above the minimum 1.1, unless rounds fall below it */
    rounds_of(&c, 2.5, 0, 0);
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_PASS);
    rounds_of(&c, 2.5, 2, 1.0);
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK_STR_CONTAINS(why, "above the minimum 1.1x");
    /* no minimum: nothing to withhold */
    CHECK(judge(NULL, &c, 0, 0.05, why) == FC_VERDICT_PASS);
    /* a record with a control judges the fusion split's rounds; a document from before
     * they were kept has none, and the interval stands */
    c.has_control = true;
    c.split_fusion = c.speedup;
    c.split_implementation = (fc_ratio_ci){.ratio = 1.0, .lo = 0.95, .hi = 1.05}; /* no loss: the fusion split counts */
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_PASS);
    for (int k = 0; k < 10; k++) c.round[k].ratio_fusion = k < 3 ? 1.05 : 1.3;
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    /* a losing implementation: the whole speedup and its rounds are judged, as the
     * decision is made, not the fusion split (which alone would be below 1.1) */
    c.split_implementation = (fc_ratio_ci){.ratio = 0.8, .lo = 0.75, .hi = 0.85};
    c.split_fusion = (fc_ratio_ci){.ratio = 1.0, .lo = 0.95, .hi = 1.05};
    rounds_of(&c, 2.5, 0, 0); /* every whole round 1.3; three fusion rounds 1.05 still */
    CHECK(fc_record_fusion_speedup(&c) == &c.speedup);
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_PASS);
}

/* A record below both the minimum and the baseline's floor: each bound is judged by
 * the rounds that reach it, and the verdict is withheld only when both are in doubt. */
static void state_moved_both_bounds(void)
{
    char why[512];
    fc_record base = mk(LB, "cpu.openblas", 1.45, 1.50, 1.55, FC_STATUS_OK); /* floor 1.45 * 0.95 = 1.38 */
    fc_record c = mk(LB, "cpu.openblas", 0.80, 0.85, 0.90, FC_STATUS_OK);
    rounds_of(&c, 2.5, 1, 1.0); /* one of ten rounds reaches the minimum 0.95, none the floor */
    for (int k = 0; k < 9; k++) c.round[k].ratio = 0.85;
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_REGRESSED);
    CHECK(judge(NULL, &c, 0.95, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK(judge(&base, &c, 0.95, 0.05, why) == FC_VERDICT_REGRESSED);
    CHECK_STR_CONTAINS(why, "wholly below the baseline's");
    CHECK_STR_CONTAINS(why, "below the minimum 0.95x too, which 1 of its 10 rounds reach");
    /* a round at the floor but none at the minimum 1.6: below-threshold stands */
    c.round[9].ratio = 1.4;
    CHECK(judge(&base, &c, 1.6, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    /* rounds reach both: withheld */
    CHECK(judge(&base, &c, 0.95, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK_STR_CONTAINS(why, "below the minimum 0.95x, but the machine's state moved");
}

static void verdict_names(void)
{
    const char *want[FC_NVERDICTS] =
        {"pass",   "improved", "skipped", "inconclusive", "regressed", "below-threshold", "failed-verification",
         "missing"};
    for (int v = 0; v < FC_NVERDICTS; v++) CHECK(!strcmp(fc_verdict_name((fc_verdict)v), want[v]));
    CHECK(!fc_verdict_fails(FC_VERDICT_PASS, true));
    CHECK(!fc_verdict_fails(FC_VERDICT_IMPROVED, true));
    CHECK(!fc_verdict_fails(FC_VERDICT_INCONCLUSIVE, false));
    CHECK(fc_verdict_fails(FC_VERDICT_INCONCLUSIVE, true));
    for (int v = FC_VERDICT_REGRESSED; v < FC_NVERDICTS; v++) {
        CHECK(fc_verdict_fails((fc_verdict)v, false));
        CHECK(fc_verdict_fails((fc_verdict)v, true));
    }
}

static void every_verdict(void)
{
    char why[512];
    fc_record base = mk(LB, "cpu.openblas", 1.20, 1.30, 1.40, FC_STATUS_OK);
    /* overlapping intervals: pass */
    fc_record c = mk(LB, "cpu.openblas", 1.18, 1.28, 1.38, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_PASS);
    /* a decision that flips (yes -> inconclusive) while the intervals overlap is
     * noise: pass, and said so */
    c = mk(LB, "cpu.openblas", 1.05, 1.22, 1.32, FC_STATUS_OK);
    CHECK(base.decision == FC_DECIDE_YES && c.decision == FC_DECIDE_INCONCLUSIVE);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_PASS);
    CHECK_STR_CONTAINS(why, "decision yes -> inconclusive with overlapping intervals: noise");
    /* wholly above by more than the tolerance: improved (1.50 > 1.40 * 1.05 = 1.47) */
    c = mk(LB, "cpu.openblas", 1.50, 1.60, 1.70, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_IMPROVED);
    /* above, but within the tolerance: pass (1.45 < 1.47) */
    c = mk(LB, "cpu.openblas", 1.45, 1.55, 1.65, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_PASS);
    /* wholly below by more than the tolerance: regressed (1.10 < 1.20 * 0.95 = 1.14) */
    c = mk(LB, "cpu.openblas", 0.90, 1.00, 1.10, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_REGRESSED);
    CHECK_STR_CONTAINS(why, "wholly below");
    /* the same with a 10% tolerance (1.10 < 1.08 is false): the median is below it, the intervals overlap */
    CHECK(judge(&base, &c, 0, 0.10, why) == FC_VERDICT_INCONCLUSIVE);
    /* wholly below, but within the tolerance: not regressed (1.15 >= 1.14) */
    c = mk(LB, "cpu.openblas", 1.00, 1.10, 1.15, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_INCONCLUSIVE); /* median 1.10 < 1.14 */
    c = mk(LB, "cpu.openblas", 1.10, 1.16, 1.19, FC_STATUS_OK);
    CHECK(judge(&base, &c, 0, 0.05, why) == FC_VERDICT_PASS); /* median 1.16 >= 1.14 */
    /* below the minimum speedup: below-threshold, with or without a baseline */
    c = mk(LB, "cpu.openblas", 1.20, 1.30, 1.40, FC_STATUS_OK);
    CHECK(judge(NULL, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    CHECK_STR_CONTAINS(why, "below the minimum");
    CHECK(judge(&base, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    /* straddling the minimum: inconclusive */
    CHECK(judge(NULL, &c, 1.3, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK_STR_CONTAINS(why, "straddles");
    /* wholly above the minimum: pass; at exactly the upper bound: inconclusive */
    CHECK(judge(NULL, &c, 1.1, 0.05, why) == FC_VERDICT_PASS);
    CHECK(judge(NULL, &c, 1.4, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    /* below-threshold comes before regressed */
    fc_record high = mk(LB, "cpu.openblas", 2.0, 2.1, 2.2, FC_STATUS_OK);
    CHECK(judge(&high, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    CHECK(judge(&high, &c, 0, 0.05, why) == FC_VERDICT_REGRESSED);
    /* an improvement that straddles the minimum is inconclusive */
    fc_record low = mk(LB, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK);
    CHECK(judge(&low, &c, 1.3, 0.05, why) == FC_VERDICT_INCONCLUSIVE);
    CHECK(judge(&low, &c, 0, 0.05, why) == FC_VERDICT_IMPROVED);
    /* missing: absent, or skipped where the baseline measured it */
    CHECK(judge(&base, NULL, 0, 0.05, why) == FC_VERDICT_MISSING);
    fc_record sk = mk(LB, "cpu.openblas", 0, 0, 0, FC_STATUS_SKIPPED);
    snprintf(sk.reason, sizeof sk.reason, "needs 80 GiB");
    CHECK(judge(&base, &sk, 0, 0.05, why) == FC_VERDICT_MISSING);
    CHECK_STR_CONTAINS(why, "needs 80 GiB");
    /* skipped, which passes: declined in the baseline too, or no baseline record */
    CHECK(judge(&sk, &sk, 0, 0.05, why) == FC_VERDICT_SKIPPED);
    CHECK_STR_CONTAINS(why, "skipped: needs 80 GiB");
    CHECK(judge(NULL, &sk, 1.0, 0.05, why) == FC_VERDICT_SKIPPED);
    CHECK(!fc_verdict_fails(FC_VERDICT_SKIPPED, true));
    /* declined in the baseline and not attempted now: nothing lost, so skipped */
    CHECK(judge(&sk, NULL, 0, 0.05, why) == FC_VERDICT_SKIPPED);
    CHECK_STR_CONTAINS(why, "skipped in the baseline too: needs 80 GiB");
    /* failed: failed-verification, whatever the baseline */
    fc_record bad = mk(LB, "cpu.openblas", 0, 0, 0, FC_STATUS_FAILED);
    CHECK(judge(&base, &bad, 0, 0.05, why) == FC_VERDICT_FAILED_VERIFICATION);
    CHECK_STR_CONTAINS(why, "verification failed");
    CHECK(judge(NULL, &bad, 1.0, 0.05, why) == FC_VERDICT_FAILED_VERIFICATION);
    CHECK(judge(&bad, &bad, 0, 0.05, why) == FC_VERDICT_FAILED_VERIFICATION);
    /* a failed baseline record gives no interval: only the minimum applies */
    CHECK(judge(&bad, &c, 0, 0.05, why) == FC_VERDICT_PASS);
    CHECK(judge(&bad, &c, 1.5, 0.05, why) == FC_VERDICT_BELOW_THRESHOLD);
    /* nothing to compare with: pass */
    CHECK(judge(NULL, &c, 0, 0.05, why) == FC_VERDICT_PASS);
}

/* ------------------------------------------------------------------ documents */

static void host_json(fc_doc *d, const char *cpu, const char *onednn)
{
    char text[512];
    snprintf(text, sizeof text,
             "{\"hostname\": \"h\", \"devices\": {\"cpu\": {\"model\": \"%s\"}}, "
             "\"libraries\": {\"onednn\": {\"version\": \"%s\"}, \"openblas\": {\"config\": \"x\", \"threads\": 2}}}",
             cpu, onednn);
    d->host = cJSON_Parse(text);
    d->ceilings = cJSON_Parse("{\"cpu\": {\"gflops\": {\"fp32\": 100}, \"bandwidth_gbs\": 20, \"method\": \"m\"}}");
    d->complete = true;
}

/* h with devices.cpu.kernels.isa set */
static cJSON *with_kernels(cJSON *h, const char *isa)
{
    cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(h, "devices"), "cpu");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cpu, "kernels"), "isa", isa);
    return h;
}

static void add(fc_doc *d, fc_record r) { *fc_doc_add(d) = r; }

static int run_check(fc_doc *base, fc_doc *cur, const fc_thresholds *th, bool strict, fc_check_result *c)
{
    fc_check_run(c, base, cur, th, -1, strict);
    return fc_check_exit_code(c);
}

static void exit_codes(void)
{
    fc_doc base, cur;
    fc_check_result c;
    fc_doc_init(&base);
    host_json(&base, "CPU A", "2.6.3");
    add(&base, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&base, mk(LR, "cpu.openblas", 1.5, 1.6, 1.7, FC_STATUS_OK));

    /* everything passes */
    fc_doc_init(&cur);
    host_json(&cur, "CPU A", "2.6.3");
    add(&cur, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&cur, mk(LR, "cpu.openblas", 1.6, 1.7, 1.8, FC_STATUS_OK));
    CHECK(run_check(&base, &cur, NULL, false, &c) == FC_EXIT_OK);
    CHECK(c.count[FC_VERDICT_PASS] == 2 && c.matched == 2 && c.nnotes == 0);
    fc_check_free(&c);

    /* inconclusive passes, unless strict */
    cur.rec[0] = mk(LB, "cpu.openblas", 1.0, 1.1, 1.3, FC_STATUS_OK);
    CHECK(run_check(&base, &cur, NULL, false, &c) == FC_EXIT_OK);
    CHECK(c.count[FC_VERDICT_INCONCLUSIVE] == 1);
    fc_check_free(&c);
    CHECK(run_check(&base, &cur, NULL, true, &c) == FC_EXIT_FAIL);
    fc_check_free(&c);

    /* improved passes */
    cur.rec[0] = mk(LB, "cpu.openblas", 2.0, 2.1, 2.2, FC_STATUS_OK);
    CHECK(run_check(&base, &cur, NULL, true, &c) == FC_EXIT_OK);
    CHECK(c.count[FC_VERDICT_IMPROVED] == 1);
    fc_check_free(&c);

    /* regressed fails */
    cur.rec[0] = mk(LB, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK);
    CHECK(run_check(&base, &cur, NULL, false, &c) == FC_EXIT_FAIL);
    CHECK(c.count[FC_VERDICT_REGRESSED] == 1);
    fc_check_free(&c);

    /* failed verification fails */
    cur.rec[0] = mk(LB, "cpu.openblas", 0, 0, 0, FC_STATUS_FAILED);
    CHECK(run_check(&base, &cur, NULL, false, &c) == FC_EXIT_FAIL);
    CHECK(c.count[FC_VERDICT_FAILED_VERIFICATION] == 1);
    fc_check_free(&c);

    /* a missing record fails; a current record the baseline lacks is judged alone */
    cur.rec[0] = mk(CV, "cpu.onednn", 1.2, 1.3, 1.4, FC_STATUS_OK);
    CHECK(run_check(&base, &cur, NULL, false, &c) == FC_EXIT_FAIL);
    CHECK(c.count[FC_VERDICT_MISSING] == 1 && c.matched == 1 && c.only_current == 1 && c.n == 3);
    fc_check_free(&c);

    /* below the thresholds file's minimum fails */
    cur.rec[0] = mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK);
    fc_thresholds th;
    const char *tt =
        "{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, "
        "\"rules\": [{\"pattern\": \"linear_bias_relu\", \"min_speedup\": 2.0}]}";
    fc_err e;
    CHECK(fc_thresholds_parse("t.json", tt, strlen(tt), &th, &e) == 0);
    CHECK(run_check(&base, &cur, &th, false, &c) == FC_EXIT_FAIL);
    CHECK(c.count[FC_VERDICT_BELOW_THRESHOLD] == 1 && c.count[FC_VERDICT_PASS] == 1);
    fc_check_free(&c);
    /* thresholds alone, no baseline */
    fc_check_run(&c, NULL, &cur, &th, -1, false);
    CHECK(fc_check_exit_code(&c) == FC_EXIT_FAIL && c.count[FC_VERDICT_BELOW_THRESHOLD] == 1 && c.n == 2);
    fc_check_free(&c);
    fc_thresholds_free(&th);

    /* a current record whose decision the state check withheld: a note says so */
    cur.rec[0].state =
        (fc_state){.made = true, .span = 2.4, .rounds_against = 2, .said = FC_DECIDE_YES, .withheld = true};
    fc_check_run(&c, NULL, &cur, NULL, -1, false);
    bool withheld = false;
    for (int i = 0; i < c.nnotes; i++)
        withheld |= strstr(c.notes[i], "1 current record had its decision withheld (state.withheld; first: ") != NULL;
    CHECK(withheld);
    fc_check_free(&c);
    cur.rec[0].state = (fc_state){0};

    /* a --tolerance that covers the drop: no regression */
    cur.rec[0] = mk(LB, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK);
    fc_check_run(&c, &base, &cur, NULL, 0.5, false);
    CHECK(fc_check_exit_code(&c) == FC_EXIT_OK);
    CHECK(!strcmp(c.items[0].lim.tol_from, "--tolerance"));
    fc_check_free(&c);

    /* empty intersection: every baseline record missing, exit 1, said in a note */
    fc_doc other;
    fc_doc_init(&other);
    host_json(&other, "CPU A", "2.6.3");
    add(&other, mk(CV, "cpu.onednn", 1.2, 1.3, 1.4, FC_STATUS_OK));
    CHECK(run_check(&base, &other, NULL, false, &c) == FC_EXIT_FAIL);
    CHECK(c.matched == 0 && c.count[FC_VERDICT_MISSING] == 2);
    bool said = false;
    for (int i = 0; i < c.nnotes; i++) said |= strstr(c.notes[i], "no current record matches the baseline") != NULL;
    CHECK(said);
    fc_check_free(&c);

    /* nothing at all to check fails */
    fc_doc empty;
    fc_doc_init(&empty);
    fc_check_run(&c, NULL, &empty, NULL, -1, false);
    CHECK(fc_check_exit_code(&c) == FC_EXIT_FAIL);
    fc_check_free(&c);

    /* every record skipped (declined), with or without a baseline that declined them
     * too: nothing was measured, so no pass, and a note says why; one measured
     * record beside them passes */
    fc_doc declined;
    fc_doc_init(&declined);
    host_json(&declined, "CPU A", "2.6.3");
    add(&declined, mk(LB, "cpu.openblas", 0, 0, 0, FC_STATUS_SKIPPED));
    add(&declined, mk(LR, "cpu.openblas", 0, 0, 0, FC_STATUS_SKIPPED));
    for (int with_base = 0; with_base < 2; with_base++) {
        fc_check_run(&c, with_base ? &declined : NULL, &declined, NULL, -1, false);
        CHECK(c.count[FC_VERDICT_SKIPPED] == 2 && fc_check_exit_code(&c) == FC_EXIT_FAIL);
        bool told = false;
        for (int i = 0; i < c.nnotes; i++) told |= strstr(c.notes[i], "every record was skipped") != NULL;
        CHECK(told);
        fc_check_free(&c);
    }
    /* the baseline's declined record absent now: skipped, not missing */
    fc_doc one_ok;
    fc_doc_init(&one_ok);
    host_json(&one_ok, "CPU A", "2.6.3");
    add(&one_ok, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    fc_doc mixed;
    fc_doc_init(&mixed);
    host_json(&mixed, "CPU A", "2.6.3");
    add(&mixed, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&mixed, mk(LR, "cpu.openblas", 0, 0, 0, FC_STATUS_SKIPPED));
    CHECK(run_check(&mixed, &one_ok, NULL, false, &c) == FC_EXIT_OK);
    CHECK(c.count[FC_VERDICT_SKIPPED] == 1 && c.count[FC_VERDICT_PASS] == 1 && c.count[FC_VERDICT_MISSING] == 0);
    fc_check_free(&c);
    fc_doc_free(&mixed);
    fc_doc_free(&one_ok);
    fc_doc_free(&declined);

    /* another device and library version: reported in the notes, not failed */
    fc_doc moved;
    fc_doc_init(&moved);
    host_json(&moved, "CPU B", "3.1.0");
    with_kernels(base.host, "AVX-512");
    with_kernels(moved.host, "AVX2");
    add(&moved, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&moved, mk(LR, "cpu.openblas", 1.5, 1.6, 1.7, FC_STATUS_OK));
    CHECK(run_check(&base, &moved, NULL, false, &c) == FC_EXIT_OK);
    bool dev = false, lib = false, blas = false, kern = false;
    for (int i = 0; i < c.nnotes; i++) {
        dev |= strstr(c.notes[i], "different device") && strstr(c.notes[i], "CPU A") && strstr(c.notes[i], "CPU B");
        lib |= strstr(c.notes[i], "onednn") && strstr(c.notes[i], "3.1.0");
        blas |= strstr(c.notes[i], "openblas") != NULL; /* a thread count is not a library version */
        kern |= strstr(c.notes[i], "different host kernels") && strstr(c.notes[i], "AVX-512") &&
                strstr(c.notes[i], "AVX2");
    }
    CHECK(dev && lib && !blas && kern);
    fc_check_free(&c);

    fc_doc_free(&moved);
    fc_doc_free(&empty);
    fc_doc_free(&other);
    fc_doc_free(&cur);
    fc_doc_free(&base);
}

static void confirmations(void)
{
    fc_doc base, cur;
    fc_doc_init(&base);
    fc_doc_init(&cur);
    add(&base, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&base, mk(LR, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&cur, mk(LB, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK));
    add(&cur, mk(LR, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK));
    fc_check_result c;
    fc_check_run(&c, &base, &cur, NULL, -1, false);
    CHECK(c.count[FC_VERDICT_REGRESSED] == 2);
    CHECK(fc_check_wants_confirm(&c.items[0]) && fc_check_wants_confirm(&c.items[1]));
    fc_record again_bad = mk(LB, "cpu.openblas", 0.8, 0.85, 0.9, FC_STATUS_OK);
    fc_record again_ok = mk(LR, "cpu.openblas", 1.25, 1.3, 1.35, FC_STATUS_OK);
    fc_record again_bad2 = mk(LR, "cpu.openblas", 0.8, 0.85, 0.9, FC_STATUS_OK);
    /* item 0: regressed in both re-measurements; item 1: once of twice */
    fc_check_confirm(&c, 0, &again_bad);
    fc_check_confirm(&c, 0, &again_bad);
    fc_check_confirm(&c, 1, &again_bad2);
    fc_check_confirm(&c, 1, &again_ok);
    fc_check_settle(&c);
    CHECK(c.items[0].verdict == FC_VERDICT_REGRESSED && c.items[0].nconfirm == 2 && c.items[0].nconfirm_failed == 2);
    CHECK_STR_CONTAINS(c.items[0].why, "confirmed by 2 of 2");
    CHECK(c.items[1].verdict == FC_VERDICT_INCONCLUSIVE && c.items[1].first == FC_VERDICT_REGRESSED);
    CHECK_STR_CONTAINS(c.items[1].why, "only 1 of 2");
    CHECK(c.count[FC_VERDICT_REGRESSED] == 1 && c.count[FC_VERDICT_INCONCLUSIVE] == 1);
    CHECK(fc_check_exit_code(&c) == FC_EXIT_FAIL);
    /* when neither reproduces, the check passes (inconclusive), and fails when strict */
    fc_check_free(&c);
    fc_check_run(&c, &base, &cur, NULL, -1, false);
    fc_check_confirm(&c, 0, &again_ok);
    fc_check_confirm(&c, 1, &again_ok);
    fc_check_settle(&c);
    CHECK(fc_check_exit_code(&c) == FC_EXIT_OK && c.count[FC_VERDICT_INCONCLUSIVE] == 2);
    c.strict = true;
    CHECK(fc_check_exit_code(&c) == FC_EXIT_FAIL);
    /* a re-measurement that produced no record counts as a failure */
    fc_check_free(&c);
    fc_check_run(&c, &base, &cur, NULL, -1, false);
    fc_check_confirm(&c, 0, NULL);
    fc_check_settle(&c);
    CHECK(c.items[0].verdict == FC_VERDICT_REGRESSED);
    CHECK(!fc_check_wants_confirm(&(fc_check_item){.cur = &cur.rec[0], .first = FC_VERDICT_INCONCLUSIVE}));
    fc_check_free(&c);
    fc_doc_free(&base);
    fc_doc_free(&cur);
}

/* ------------------------------------------------------------------ thresholds */

static void thresholds_files(void)
{
    const char *text =
        "{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1,"
        " \"defaults\": {\"min_speedup\": 1.0, \"max_regression\": 0.1},"
        " \"rules\": ["
        "  {\"pattern\": \"linear_*\", \"shape\": \"m=64,*\", \"min_speedup\": 1.5},"
        "  {\"pattern\": \"linear_*\", \"device\": \"cpu\", \"dtype\": \"fp32\", \"min_speedup\": 1.2, \"max_regression\": 0.2},"
        "  {\"backend\": \"cpu.one*\", \"layout\": \"nhwc\", \"max_regression\": 0.3},"
        "  {\"layout\": \"nchw\", \"min_speedup\": 9}"
        " ]}";
    fc_thresholds t;
    fc_err e;
    CHECK(fc_thresholds_parse("t.json", text, strlen(text), &t, &e) == 0);
    CHECK(t.n == 4);
    fc_limits l;
    fc_record r = mk(LR, "cpu.openblas", 1, 1, 1, FC_STATUS_OK);
    fc_thresholds_apply(&t, &r, &l);
    /* min from rule 0 (shape matches), tolerance from rule 1 (rule 0 sets none) */
    CHECK_NEAR(l.min_speedup, 1.5, 1e-12);
    CHECK_NEAR(l.tolerance, 0.2, 1e-12);
    CHECK(!strcmp(l.min_from, "rule 0") && !strcmp(l.tol_from, "rule 1"));
    r = mk(LB, "cpu.openblas", 1, 1, 1, FC_STATUS_OK);
    fc_thresholds_apply(&t, &r, &l);
    CHECK_NEAR(l.min_speedup, 1.2, 1e-12); /* m=8: rule 0's shape does not match */
    r = mk(LB, "cuda.cublas", 1, 1, 1, FC_STATUS_OK);
    fc_thresholds_apply(&t, &r, &l);
    CHECK_NEAR(l.min_speedup, 1.0, 1e-12); /* device cuda: the defaults */
    CHECK_NEAR(l.tolerance, 0.1, 1e-12);
    CHECK(!strcmp(l.min_from, "defaults"));
    r = mk(CV, "cpu.onednn", 1, 1, 1, FC_STATUS_OK);
    fc_thresholds_apply(&t, &r, &l);
    CHECK_NEAR(l.tolerance, 0.3, 1e-12);   /* layout nhwc, backend glob */
    CHECK_NEAR(l.min_speedup, 1.0, 1e-12); /* rule 3 wants nchw */
    char shape[256];
    fc_shape_string(&r.prob, shape, sizeof shape);
    CHECK(!strcmp(shape, "n=1,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1"));
    fc_thresholds_free(&t);
    /* no file: no minimum, the built-in tolerance */
    fc_thresholds_apply(NULL, &r, &l);
    CHECK(l.min_speedup == 0 && l.tolerance == FC_DEFAULT_TOLERANCE && !strcmp(l.tol_from, "built-in"));

    struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"schema\": \"fusecal-thresholds\",", "truncated"},
        {"[1, 2]", "not a thresholds file"},
        {"{\"schema\": \"fusecal-calibration\", \"schema_version\": 1}", "not a fusecal thresholds file"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 2}", "newer"},
        {"{\"schema\": \"fusecal-thresholds\"}", "schema_version"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"pattern\": \"x\"}]}",
         "does not match"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"min_speedup\": -1}]}",
         "does not match"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"bogus\": 1}", "does not match"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"pattern\": \"lnear_bias\", "
         "\"min_speedup\": 1}]}",
         "matches no pattern"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"backend\": \"cpu.mkl\", "
         "\"min_speedup\": 1}]}",
         "matches no backend"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"defaults\": {\"max_regression\": 1.5}}",
         "does not match"},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(bad); i++) {
        e.msg[0] = 0;
        int rc = fc_thresholds_parse("bad.json", bad[i].text, strlen(bad[i].text), &t, &e);
        CHECK_MSG(rc != 0, "accepted: %s", bad[i].text);
        if (rc == 0) fc_thresholds_free(&t);
        CHECK_STR_CONTAINS(e.msg, bad[i].needle);
        CHECK_STR_CONTAINS(e.msg, "bad.json");
        CHECK(strchr(e.msg, '\n') == NULL);
    }
}

/* ------------------------------------------------------------------ pairing */

static void pairing(void)
{
    fc_doc a, b;
    fc_doc_init(&a);
    fc_doc_init(&b);
    /* the same problem spelled two ways pairs by its canonical string */
    add(&a, mk("linear_bias:m=8,k=8,n=8", "cpu.openblas", 1, 1, 1, FC_STATUS_OK));
    add(&a, mk(LB, "cpu.onednn", 1, 1, 1, FC_STATUS_OK));
    add(&a, mk(LB, "cpu.onednn", 2, 2, 2, FC_STATUS_OK)); /* a repeated key pairs once */
    add(&b, mk("linear_bias:n=8,k=8,m=8,dtype=fp32", "cpu.openblas", 1, 1, 1, FC_STATUS_OK));
    add(&b, mk(LB, "cuda.cublas", 1, 1, 1, FC_STATUS_OK));
    add(&b, mk(LR, "cpu.openblas", 1, 1, 1, FC_STATUS_OK));
    fc_pair *p;
    int n = fc_match_docs(&a, &b, FC_MATCH_PROBLEM_BACKEND, &p);
    CHECK(n == 4);
    CHECK(n == 4 && p[0].a == &a.rec[0] && p[0].b == &b.rec[0]);
    CHECK(n == 4 && p[1].a == &a.rec[1] && p[1].b == NULL);
    CHECK(n == 4 && p[2].a == NULL && p[2].b == &b.rec[1]);
    CHECK(n == 4 && p[3].a == NULL && p[3].b == &b.rec[2]);
    free(p);
    /* by problem: each record once, its own backend first (openblas with openblas),
     * then the others in order (onednn with cublas) */
    n = fc_match_docs(&a, &b, FC_MATCH_PROBLEM, &p);
    CHECK_MSG(n == 3, "%d pairs", n);
    CHECK(n == 3 && p[0].a == &a.rec[0] && p[0].b == &b.rec[0]);
    CHECK(n == 3 && p[1].a == &a.rec[1] && p[1].b == &b.rec[1]);
    CHECK(n == 3 && p[2].a == NULL && p[2].b == &b.rec[2]);
    free(p);
    /* the own backend wins though it comes later; an a record left over is a's alone */
    fc_doc c;
    fc_doc_init(&c);
    add(&c, mk(LB, "cuda.cublas", 1, 1, 1, FC_STATUS_OK));
    add(&c, mk(LB, "cpu.onednn", 1, 1, 1, FC_STATUS_OK));
    n = fc_match_docs(&a, &c, FC_MATCH_PROBLEM, &p);
    CHECK_MSG(n == 2, "%d pairs", n);
    CHECK(n == 2 && p[0].a == &a.rec[0] && p[0].b == &c.rec[0]);
    CHECK(n == 2 && p[1].a == &a.rec[1] && p[1].b == &c.rec[1]);
    free(p);
    fc_doc_free(&c);
    fc_doc_init(&c);
    add(&c, mk(LB, "cuda.cublas", 1, 1, 1, FC_STATUS_OK));
    n = fc_match_docs(&a, &c, FC_MATCH_PROBLEM, &p);
    CHECK(n == 2 && p[0].a == &a.rec[0] && p[0].b == &c.rec[0] && p[1].a == &a.rec[1] && p[1].b == NULL);
    free(p);
    fc_doc_free(&c);
    char key[320];
    fc_record_key(&a.rec[0], FC_MATCH_PROBLEM_BACKEND, key, sizeof key);
    CHECK(!strcmp(key, "linear_bias:m=8,k=8,n=8,dtype=fp32 on cpu.openblas"));
    fc_doc_free(&a);
    fc_doc_free(&b);
}

static void compare_means(void)
{
    fc_doc a, b;
    fc_doc_init(&a);
    fc_doc_init(&b);
    add(&a, mk(LB, "cpu.openblas", 1.9, 2.0, 2.1, FC_STATUS_OK));
    add(&a, mk(LR, "cpu.openblas", 7.9, 8.0, 8.1, FC_STATUS_OK));
    add(&a, mk(CV, "cpu.onednn", 1.0, 1.0, 1.0, FC_STATUS_OK));
    add(&b, mk(LB, "cpu.openblas", 3.9, 4.0, 4.1, FC_STATUS_OK));
    add(&b, mk(LR, "cpu.openblas", 3.9, 4.0, 4.1, FC_STATUS_OK));
    add(&b, mk(CV, "cpu.onednn", 0, 0, 0, FC_STATUS_FAILED));
    fc_compare c;
    fc_compare_docs(&a, &b, FC_MATCH_PROBLEM_BACKEND, &c);
    CHECK(c.n == 3 && c.na == 0 && c.nb == 0);
    CHECK(c.ngeo == 2);
    CHECK_NEAR(c.geo_a, 4.0, 1e-9);
    CHECK_NEAR(c.geo_b, 4.0, 1e-9);
    CHECK_NEAR(c.geo_change, 1.0, 1e-9);
    CHECK(c.up == 1 && c.down == 1);
    /* decisions: 2.0 yes -> 4.0 yes; 8 yes -> 4 yes; ok -> failed flips */
    CHECK(c.flips == 1 && c.rows[2].flip && !c.rows[0].flip);
    fc_compare_free(&c);
    b.rec[0] = mk(LB, "cpu.openblas", 0.9, 1.0, 1.05, FC_STATUS_OK); /* yes -> no */
    fc_compare_docs(&a, &b, FC_MATCH_PROBLEM_BACKEND, &c);
    CHECK(c.flips == 2 && c.rows[0].flip && c.rows[0].shift == -1);
    fc_compare_free(&c);
    fc_doc_free(&a);
    fc_doc_free(&b);
}

/* ------------------------------------------------------------------ crossings */

/* A record of a sweep: its FLOPs on paper, a ±5 % interval around ratio, decided
 * against 1.1 as a run decides. */
static fc_record swept(const char *problem, const char *backend, double ratio)
{
    fc_record r = mk(problem, backend, ratio * 0.95, ratio, ratio * 1.05, FC_STATUS_OK);
    fc_cost cost;
    memset(&cost, 0, sizeof cost);
    fc_family_of(r.prob.pat)->cost(&r.prob, &cost);
    r.flops = cost.flops;
    return r;
}

/* the same with an interval [1.0, 1.2] that straddles the threshold: inconclusive */
static fc_record straddling(const char *problem, const char *backend, double ratio)
{
    fc_record r = swept(problem, backend, ratio);
    r.speedup.lo = 1.0;
    r.speedup.hi = 1.2;
    r.decision = fc_decide(&r.speedup, r.threshold);
    return r;
}

static void find(const fc_record *recs, int n, fc_crossings *x)
{
    const fc_record *p[32];
    for (int i = 0; i < n && i < 32; i++) p[i] = &recs[i];
    fc_crossings_find(p, n, x);
}

/* log-linear interpolation between (a, ra) and (b, rb) where the ratio meets th */
static double expect_at(double a, double ra, double b, double rb, double th)
{
    double t = log(ra / th) / (log(ra / th) - log(rb / th));
    return exp(log(a) + t * (log(b) - log(a)));
}

static void crossing_one(void)
{
    fc_record r[] = {
        swept("linear_bias:m=64,k=256,n=256", "cpu.onednn", 0.6), /* out of order: the line orders them */
        swept("linear_bias:m=8,k=256,n=256", "cpu.onednn", 2.0),
        swept("linear_bias:m=16,k=256,n=256", "cpu.onednn", 1.5),
        swept("linear_bias:m=32,k=256,n=256", "cpu.onednn", 0.8),
    };
    CHECK(r[2].decision == FC_DECIDE_YES && r[3].decision == FC_DECIDE_NO);
    fc_crossings x;
    find(r, 4, &x);
    CHECK(x.nlines == 1 && x.n == 1);
    if (x.nlines == 1 && x.n == 1) {
        const fc_sweep_line *l = &x.lines[0];
        CHECK(!strcmp(fc_sweep_line_dim(l), "m") && l->n == 4 && l->lo == 8 && l->hi == 64);
        CHECK(l->yes == 2 && l->no == 2 && l->inconclusive == 0 && l->first == 0 && l->ncross == 1);
        const fc_crossing *c = &x.cross[0];
        CHECK(c->falls && c->from == &r[2] && c->to == &r[3] && c->line == 0);
        CHECK_NEAR(c->threshold, 1.1, 1e-12);
        double at = expect_at(16, 1.5, 32, 0.8, 1.1);
        CHECK_NEAR(c->at, at, 1e-9);
        /* FLOPs are interpolated alike: linear in m here, so the FLOPs at `at` */
        double t = log(at / 16) / log(2);
        CHECK_NEAR(c->flops, exp(log(r[2].flops) + t * (log(r[3].flops) - log(r[2].flops))), 1e-6 * c->flops);
        char fixed[64], text[512];
        fc_sweep_line_fixed(l, fixed, sizeof fixed);
        CHECK(!strcmp(fixed, "k=256,n=256"));
        fc_crossing_text(&x, c, true, text, sizeof text);
        CHECK_STR_CONTAINS(text, "speedup falls below the 1.1x threshold along m (k=256,n=256) at m ~ 2");
        CHECK_STR_CONTAINS(text, "(fuse: yes at m=16, no at m=32)");
    }
    fc_crossings_free(&x);
}

static void crossing_none(void)
{
    fc_crossings x;
    /* all yes; yes, inconclusive, yes: a line, no crossing */
    fc_record a[] = {swept("linear_bias:m=8,k=64,n=64", "cpu.openblas", 2.0),
                     straddling("linear_bias:m=16,k=64,n=64", "cpu.openblas", 1.05),
                     swept("linear_bias:m=32,k=64,n=64", "cpu.openblas", 1.5)};
    CHECK(a[1].decision == FC_DECIDE_INCONCLUSIVE);
    find(a, 3, &x);
    CHECK(x.nlines == 1 && x.n == 0 && x.lines[0].inconclusive == 1);
    fc_crossings_free(&x);
    /* noise around the threshold: medians on both sides, intervals straddling it */
    fc_record b[] = {straddling("linear_bias:m=8,k=64,n=64", "cpu.openblas", 1.15),
                     straddling("linear_bias:m=16,k=64,n=64", "cpu.openblas", 1.05)};
    find(b, 2, &x);
    CHECK(x.nlines == 1 && x.n == 0);
    fc_crossings_free(&x);
    /* one size alone, and failed records: no line */
    fc_record c[] = {swept("linear_bias:m=8,k=64,n=64", "cpu.openblas", 2.0),
                     mk("linear_bias:m=16,k=64,n=64", "cpu.openblas", 0, 0, 0, FC_STATUS_FAILED)};
    find(c, 2, &x);
    CHECK(x.nlines == 0 && x.n == 0);
    fc_crossings_free(&x);
    find(c, 0, &x);
    CHECK(x.nlines == 0 && x.n == 0);
    fc_crossings_free(&x);
}

static void crossing_two(void)
{
    /* yes, no, inconclusive, yes: falls, then rises (passing over the inconclusive size) */
    fc_record r[] = {swept("qk_scale:b=1,h=8,s=128,d=64", "cpu.onednn", 1.6),
                     swept("qk_scale:b=1,h=8,s=256,d=64", "cpu.onednn", 0.9),
                     straddling("qk_scale:b=1,h=8,s=512,d=64", "cpu.onednn", 1.15),
                     swept("qk_scale:b=1,h=8,s=1024,d=64", "cpu.onednn", 1.4)};
    fc_crossings x;
    find(r, 4, &x);
    CHECK(x.nlines == 1 && x.n == 2);
    if (x.n == 2) {
        CHECK(x.cross[0].falls && x.cross[0].from == &r[0] && x.cross[0].to == &r[1]);
        CHECK_NEAR(x.cross[0].at, expect_at(128, 1.6, 256, 0.9, 1.1), 1e-9);
        /* the medians cross between 256 (0.9) and 512 (1.15), not beside the decided 1024 */
        CHECK(!x.cross[1].falls && x.cross[1].from == &r[1] && x.cross[1].to == &r[3]);
        CHECK_NEAR(x.cross[1].at, expect_at(256, 0.9, 512, 1.15, 1.1), 1e-9);
        CHECK(x.cross[1].at > 256 && x.cross[1].at < 512);
        /* FLOPs grow about as s² here: log FLOPs are interpolated at the same fraction as log s */
        double slope = log(r[1].flops / r[0].flops) / log(2);
        CHECK(slope > 1.9 && slope < 2.1);
        CHECK_NEAR(log(x.cross[0].flops / r[0].flops) / log(x.cross[0].at / 128), slope, 1e-9);
    }
    fc_crossings_free(&x);
}

static void crossing_fixed_dims(void)
{
    /* two lines along m, at k=n=256 and at k=n=512: ordered by m alone they would
     * read yes, no, yes, no (three crossings); one dimension at a time, one each */
    fc_record r[] = {swept("linear_bias:m=8,k=256,n=256", "cpu.onednn", 2.0),
                     swept("linear_bias:m=16,k=512,n=512", "cpu.onednn", 0.8),
                     swept("linear_bias:m=32,k=512,n=512", "cpu.onednn", 1.6),
                     swept("linear_bias:m=64,k=256,n=256", "cpu.onednn", 0.7)};
    fc_crossings x;
    find(r, 4, &x);
    CHECK(x.nlines == 2 && x.n == 2);
    if (x.nlines == 2 && x.n == 2) {
        char f0[64], f1[64];
        fc_sweep_line_fixed(&x.lines[0], f0, sizeof f0);
        fc_sweep_line_fixed(&x.lines[1], f1, sizeof f1);
        CHECK(!strcmp(f0, "k=256,n=256") && !strcmp(f1, "k=512,n=512"));
        CHECK(x.cross[0].falls && x.cross[0].line == 0 && x.cross[0].from == &r[0] && x.cross[0].to == &r[3]);
        CHECK(!x.cross[1].falls && x.cross[1].line == 1 && x.cross[1].from == &r[1] && x.cross[1].to == &r[2]);
    }
    fc_crossings_free(&x);
    /* sizes that differ in two dims (m and k together) make no line */
    fc_record d[] = {swept("linear_bias:m=64,k=64,n=256", "cpu.onednn", 2.0),
                     swept("linear_bias:m=128,k=128,n=256", "cpu.onednn", 0.8)};
    find(d, 2, &x);
    CHECK(x.nlines == 0 && x.n == 0);
    fc_crossings_free(&x);
    /* backends, dtypes and layouts are not mixed */
    fc_record e[] = {swept("linear_bias:m=8,k=64,n=64", "cpu.onednn", 2.0),
                     swept("linear_bias:m=16,k=64,n=64", "cpu.openblas", 0.8),
                     swept("linear_bias:m=16,k=64,n=64,dtype=bf16", "cpu.onednn", 0.8),
                     swept("conv_relu:n=1,c=8,h=8,w=8,k=8,layout=nhwc", "cpu.onednn", 2.0),
                     swept("conv_relu:n=2,c=8,h=8,w=8,k=8,layout=nchw", "cpu.onednn", 0.8)};
    find(e, 5, &x);
    CHECK(x.nlines == 0 && x.n == 0);
    fc_crossings_free(&x);
    /* a repeated problem counts once: its first record */
    fc_record g[] = {swept("linear_bias:m=8,k=64,n=64", "cpu.onednn", 2.0),
                     swept("linear_bias:m=8,k=64,n=64", "cpu.onednn", 0.5),
                     swept("linear_bias:m=16,k=64,n=64", "cpu.onednn", 0.8)};
    find(g, 3, &x);
    CHECK(x.nlines == 1 && x.lines[0].n == 2 && x.n == 1 && x.cross[0].from == &g[0] && x.cross[0].to == &g[2]);
    fc_crossings_free(&x);
    /* flags are never swept (causal); derived dims (a conv's p, q) never hold a line apart */
    fc_record f[] = {swept("qk_softmax:b=1,h=8,s=128,d=64,causal=0", "cpu.onednn", 2.0),
                     swept("qk_softmax:b=1,h=8,s=128,d=64,causal=1", "cpu.onednn", 0.8),
                     swept("conv_relu:n=1,c=8,h=8,w=16,k=8,pad=1,layout=nhwc", "cpu.onednn", 2.0),
                     swept("conv_relu:n=1,c=8,h=32,w=16,k=8,pad=1,layout=nhwc", "cpu.onednn", 0.8)};
    find(f, 4, &x);
    CHECK(x.nlines == 1 && x.n == 1);
    if (x.nlines == 1) {
        char fixed[128];
        fc_sweep_line_fixed(&x.lines[0], fixed, sizeof fixed);
        CHECK(!strcmp(fc_sweep_line_dim(&x.lines[0]), "h"));
        CHECK(!strcmp(fixed, "n=1,c=8,w=16,k=8,r=3,s=3,pad=1,nhwc"));
    }
    fc_crossings_free(&x);
    /* a dim that follows another by default moves with it: skv = s along s is one line,
     * a record with skv set apart is not on it; along skv (decode) s stays fixed */
    fc_record k[] = {swept("attention:b=1,h=8,s=128,d=64", "cpu.openblas", 2.0),
                     swept("attention:b=1,h=8,s=256,skv=256,d=64", "cpu.openblas", 1.5),
                     swept("attention:b=1,h=8,s=512,d=64", "cpu.openblas", 0.8),
                     swept("attention:b=1,h=8,s=384,skv=1024,d=64", "cpu.openblas", 0.9),
                     swept("attention:b=1,h=8,hkv=2,s=1,skv=512,d=64", "cpu.openblas", 2.0),
                     swept("attention:b=1,h=8,hkv=2,s=1,skv=4096,d=64", "cpu.openblas", 0.8)};
    find(k, 6, &x);
    CHECK_MSG(x.nlines == 2 && x.n == 2, "%d lines, %d crossings", x.nlines, x.n);
    for (int i = 0; i < x.nlines; i++) {
        char fixed[128];
        fc_sweep_line_fixed(&x.lines[i], fixed, sizeof fixed);
        const char *dim = fc_sweep_line_dim(&x.lines[i]);
        if (!strcmp(dim, "s")) CHECK_MSG(x.lines[i].n == 3 && !strcmp(fixed, "b=1,h=8,d=64"), "along s: %s", fixed);
        else
            CHECK_MSG(!strcmp(dim, "skv") && x.lines[i].n == 2 && !strcmp(fixed, "b=1,h=8,hkv=2,s=1,d=64"),
                      "along %s: %s", dim, fixed);
    }
    fc_crossings_free(&x);
    /* skv=2048 given at s=1 shares its value with s=2048's default skv, and s=256 with
     * its default is on that one's line: whatever the order, the default skv line
     * (s=256, s=2048) is one, and s=1 with skv set is not on it */
    fc_record mix[] = {swept("attention:b=1,h=8,hkv=2,s=2048,d=64", "cpu.openblas", 0.8),
                       swept("attention:b=1,h=8,hkv=2,s=256,d=64", "cpu.openblas", 0.9),
                       swept("attention:b=1,h=8,hkv=2,s=1,skv=2048,d=64", "cpu.openblas", 2.2)};
    for (int order = 0; order < 2; order++) {
        fc_record m3[3];
        for (int i = 0; i < 3; i++) m3[i] = mix[order ? 2 - i : i];
        find(m3, 3, &x);
        CHECK_MSG(x.n == 0, "order %d: %d crossings", order, x.n);
        for (int i = 0; i < x.nlines; i++) {
            char fixed[128];
            fc_sweep_line_fixed(&x.lines[i], fixed, sizeof fixed);
            CHECK_MSG(x.lines[i].n == 2 && !strcmp(fixed, "b=1,h=8,hkv=2,d=64"), "order %d: %d records, %s", order,
                      x.lines[i].n, fixed);
        }
        CHECK_MSG(x.nlines == 1, "order %d: %d lines", order, x.nlines);
        fc_crossings_free(&x);
    }
}

static void crossing_moves(void)
{
    fc_doc a, b;
    fc_doc_init(&a);
    fc_doc_init(&b);
    const char *m8 = "linear_bias:m=8,k=256,n=256", *m16 = "linear_bias:m=16,k=256,n=256",
               *m32 = "linear_bias:m=32,k=256,n=256";
    /* onednn: falls between 8 and 16 in A, between 16 and 32 in B */
    add(&a, swept(m8, "cpu.onednn", 2.0));
    add(&a, swept(m16, "cpu.onednn", 0.8));
    add(&a, swept(m32, "cpu.onednn", 0.7));
    add(&b, swept(m8, "cpu.onednn", 2.0));
    add(&b, swept(m16, "cpu.onednn", 1.5));
    add(&b, swept(m32, "cpu.onednn", 0.7));
    /* openblas: a crossing in A, none in B (all no) */
    add(&a, swept(m8, "cpu.openblas", 2.0));
    add(&a, swept(m16, "cpu.openblas", 0.8));
    add(&b, swept(m8, "cpu.openblas", 0.9));
    add(&b, swept(m16, "cpu.openblas", 0.8));
    fc_crossings xa, xb;
    const fc_record *pa[8], *pb[8];
    for (int i = 0; i < a.n; i++) pa[i] = &a.rec[i];
    for (int i = 0; i < b.n; i++) pb[i] = &b.rec[i];
    fc_crossings_find(pa, a.n, &xa);
    fc_crossings_find(pb, b.n, &xb);
    fc_crossing_move *m;
    int n = fc_crossing_moves(&xa, &xb, FC_MATCH_PROBLEM_BACKEND, &m);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(m[0].a && m[0].b && !strcmp(m[0].la->rec->backend, "cpu.onednn"));
        CHECK(m[0].a->at > 8 && m[0].a->at < 16 && m[0].b->at > 16 && m[0].b->at < 32);
        CHECK(m[1].a && !m[1].b && m[1].lb && m[1].lb->no == 2 && !strcmp(m[1].lb->rec->backend, "cpu.openblas"));
    }
    free(m);
    /* by problem alone, each A line pairs with both B lines */
    n = fc_crossing_moves(&xa, &xb, FC_MATCH_PROBLEM, &m);
    CHECK(n == 4);
    free(m);
    fc_crossings_free(&xa);
    fc_crossings_free(&xb);

    fc_str s = {0};
    fc_crossing_compare_text(&s, &a, &b, FC_MATCH_PROBLEM_BACKEND, false);
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "threshold crossings along one dimension (the others fixed), A -> B:\n");
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "  linear_bias cpu.onednn fp32 along m (k=256,n=256): falls below 1.1x: m ~ ");
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "-> none (2 sizes: 0 yes, 2 no, 0 inconclusive)");
    fc_str_free(&s);
    fc_crossing_compare_text(&s, &a, &a, FC_MATCH_PROBLEM_BACKEND, true);
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "### threshold crossings");
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "(B/A 1x)");
    fc_str_free(&s);
    cJSON *j = fc_crossing_compare_json(&a, &b, FC_MATCH_PROBLEM_BACKEND);
    CHECK(cJSON_GetArraySize(j) == 2);
    const cJSON *j0 = cJSON_GetArrayItem(j, 0), *j1 = cJSON_GetArrayItem(j, 1);
    CHECK(!strcmp(fc_json_str(j0, "dim", ""), "m") && !strcmp(fc_json_str(j0, "direction", ""), "falls"));
    CHECK(fc_json_num(cJSON_GetObjectItemCaseSensitive(j0, "fixed"), "k", 0) == 256);
    const cJSON *xa0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j0, "a"), "crossing");
    const cJSON *xb0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j0, "b"), "crossing");
    CHECK_NEAR(fc_json_num(j0, "change", 0), fc_json_num(xb0, "at", 0) / fc_json_num(xa0, "at", 1), 1e-9);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j1, "b"), "crossing")));
    cJSON_Delete(j);
    /* no crossing anywhere */
    fc_doc_free(&b);
    fc_doc_init(&b);
    fc_crossing_compare_text(&s, &b, &b, FC_MATCH_PROBLEM_BACKEND, false);
    CHECK_STR_CONTAINS(fc_str_cstr(&s), "no threshold crossing along one dimension");
    fc_str_free(&s);
    fc_doc_free(&a);
    fc_doc_free(&b);
}

/* ------------------------------------------------------------------ chart data */

static void speedup_analysis(void)
{
    fc_doc d;
    fc_doc_init(&d);
    add(&d, swept("linear_bias:m=32,k=64,n=64", "cpu.onednn", 0.5));
    add(&d, swept("linear_bias:m=8,k=64,n=64", "cpu.onednn", 3.0));
    add(&d, swept("linear_bias:m=8,k=64,n=64", "cpu.openblas", 1.5));
    fc_record t = swept("linear_bias:m=16,k=64,n=64", "cpu.openblas", 1.4);
    t.threshold = 1.2;
    add(&d, t);
    add(&d, mk("linear_bias:m=64,k=64,n=64", "cpu.openblas", 0, 0, 0, FC_STATUS_FAILED));
    add(&d, swept("conv_relu:n=1,c=8,h=8,w=8,k=8,layout=nhwc", "cpu.onednn", 1.0));
    fc_report_input in = {"d.json", &d};
    fc_series_set set = {0};
    fc_speedup_data s;
    fc_speedup_collect(&s, fc_pattern_find("linear_bias"), &in, 1, &set);
    fc_speedup_analyse(&s);
    CHECK(s.total == 5 && s.nbad == 1 && s.np == 4 && s.nser == 2 && set.n == 2);
    /* by series (first met first), then FLOPs */
    CHECK(s.np == 4 && s.pt[0].r == &d.rec[1] && s.pt[1].r == &d.rec[0] && s.pt[2].r == &d.rec[2] &&
          s.pt[3].r == &d.rec[3]);
    CHECK(s.nser == 2 && s.ser[0].a == 0 && s.ser[0].b == 2 && s.ser[1].a == 2 && s.ser[1].b == 4);
    CHECK(s.nser == 2 && s.ser[0].x.n == 1 && s.ser[1].x.n == 0 && s.ser[0].yes == 1 && s.ser[0].no == 1);
    CHECK(s.nth == 2 && s.th[0] == 1.1 && s.th[1] == 1.2);
    /* the speedup range holds every interval; the FLOP range every size */
    CHECK(s.y.log && s.y.lo < 0.5 * 0.95 && s.y.hi > 3.0 * 1.05);
    CHECK(s.x.log && s.x.lo < d.rec[1].flops && s.x.hi > d.rec[0].flops);
    fc_speedup_free(&s);
    /* 1 (no change) is always in range */
    fc_speedup_collect(&s, fc_pattern_find("conv_relu"), &in, 1, &set);
    fc_speedup_analyse(&s);
    CHECK(s.np == 1 && s.y.lo < 0.95 && s.y.hi > 1.1);
    CHECK(set.n == 3); /* conv_relu's cpu.onednn fp32 nhwc: a series of its own */
    fc_speedup_free(&s);
    fc_series_free(&set);
    fc_doc_free(&d);
}

static void roofline_analysis(void)
{
    fc_doc d;
    fc_doc_init(&d);
    host_json(&d, "CPU", "2.6.3"); /* ceilings: fp32 100 GFLOP/s, 20 GB/s */
    fc_record r = mk(LB, "cpu.openblas", 1.9, 2.0, 2.1, FC_STATUS_OK);
    r.v[FC_UNFUSED].gflops = 1;
    r.v[FC_FUSED].gflops = 4;
    add(&d, r);
    fc_record h = mk("linear_bias:m=8,k=8,n=8,dtype=bf16", "cpu.onednn", 1.9, 2.0, 2.1, FC_STATUS_OK);
    h.ceil_gflops = 400; /* not in the document's ceilings: the record's own */
    add(&d, h);
    add(&d, mk(LR, "cpu.onednn", 0, 0, 0, FC_STATUS_FAILED));
    fc_roofline_data g;
    fc_roofline_collect(&g, &d, "cpu");
    CHECK(g.n == 2 && g.used[FC_FP32] && g.used[FC_BF16] && !g.used[FC_FP16]);
    CHECK(g.pat_used[FC_P_linear_bias] && !g.pat_used[FC_P_linear_bias_relu]);
    fc_roofline_analyse(&g);
    CHECK(g.peak[FC_FP32] == 100 && g.peak[FC_BF16] == 400 && g.bw == 20);
    /* the ranges hold the points (intensity 2 and 4) and the ridges (5 and 20 FLOP/B) */
    CHECK(g.x.lo < 2 && g.x.hi > 20 && g.y.lo < 1e9 && g.y.hi > 400e9);
    /* fp32's roof: the slope from the left edge, the ridge at 5 FLOP/B, flat to the right */
    const fc_roof *f = &g.roof[FC_FP32];
    CHECK(f->n == 3 && f->x[0] == g.x.lo && f->x[1] == 5 && f->y[1] == 100e9 && f->x[2] == g.x.hi);
    CHECK_NEAR(f->y[0], 20e9 * g.x.lo, 1);
    CHECK(f->y[2] == 100e9);
    CHECK(g.roof[FC_FP16].n == 0);
    fc_roofline_free(&g);
    /* no bandwidth anywhere: flat roofs across the chart */
    cJSON_Delete(d.ceilings);
    d.ceilings = NULL;
    fc_roofline_collect(&g, &d, "cpu");
    fc_roofline_analyse(&g);
    CHECK(g.bw == 0 && g.peak[FC_FP32] == 0 && g.peak[FC_BF16] == 400);
    CHECK(g.roof[FC_BF16].n == 2 && g.roof[FC_BF16].y[0] == 400e9 && g.roof[FC_BF16].y[1] == 400e9);
    CHECK(g.roof[FC_FP32].n == 0);
    fc_roofline_free(&g);
    /* a record's own arithmetic peak before the document's GEMM rate */
    d.rec[0].peak_gflops = 150;
    fc_roofline_collect(&g, &d, "cpu");
    fc_roofline_analyse(&g);
    CHECK(g.peak[FC_FP32] == 150 && g.peak[FC_BF16] == 400);
    fc_roofline_free(&g);
    /* no record on the device: nothing */
    fc_roofline_collect(&g, &d, "cuda");
    CHECK(g.n == 0);
    fc_roofline_free(&g);
    fc_doc_free(&d);
}

/* ------------------------------------------------------------------ markup */

static void xml_escaping(void)
{
    fc_str b = {0};
    fc_xml_escape(&b, "<a href=\"x\">&'\x01\xff\xc3\x97\xe2\x89\x88\xed\xa0\x80\xc0\xaf");
    CHECK(!strcmp(fc_str_cstr(&b),
                  "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\xEF\xBF\xBD\xEF\xBF\xBD\xc3\x97\xe2\x89\x88"
                  "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
    fc_str_free(&b);
    fc_xml_escape(&b, NULL);
    CHECK(b.len == 0);
    fc_xml_addf(&b, "%d<%s>", 3, "b&");
    CHECK(!strcmp(fc_str_cstr(&b), "3&lt;b&amp;&gt;"));
    fc_str_free(&b);
    char s[32];
    fc_si_format(16.3e6, s, sizeof s);
    CHECK(!strcmp(s, "16.3M"));
    fc_si_unit(1e11, "FLOP/s", s, sizeof s);
    CHECK(!strcmp(s, "100 GFLOP/s"));
    fc_si_format(0.002, s, sizeof s);
    CHECK(!strcmp(s, "2m"));
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* An interval from 1e-300 to 1e300: the log axes stay finite, ends and ratio, and
 * so does every number the page draws. */
static void report_far_values(void)
{
    fc_axis a = {.log = true};
    const double v[] = {1e-300, 1, 1e300};
    fc_axis_fit(&a, v, 3);
    CHECK_MSG(isfinite(a.lo) && isfinite(a.hi) && a.lo > 0 && isfinite(a.hi / a.lo) && a.hi / a.lo > 1, "[%g, %g]",
              a.lo, a.hi);
    fc_chart c = {.left = 0, .right = 100, .top = 0, .bottom = 100, .x = a, .y = a};
    for (int i = 0; i < 3; i++) CHECK(isfinite(fc_chart_px(&c, v[i])) && isfinite(fc_chart_py(&c, v[i])));
    CHECK(isfinite(fc_chart_px(&c, 0)) && isfinite(fc_chart_px(&c, INFINITY)));
    fc_doc d;
    fc_doc_init(&d);
    host_json(&d, "CPU", "2.6.3");
    add(&d, mk(LB, "cpu.openblas", 1e-300, 1.0, 1e300, FC_STATUS_OK));
    fc_report_input in = {"far.json", &d};
    fc_report_page page = {.in = &in, .n = 1};
    char *html = fc_report_html(&page);
    CHECK(count(html, "data-chart=\"speedup\"") == 1);
    CHECK_MSG(!strstr(html, "nan") && !strstr(html, "inf\""), "%.80s",
              strstr(html, "nan") ? strstr(html, "nan") - 40 : "");
    free(html);
    fc_doc_free(&d);
}

static void report_markup(void)
{
    fc_doc d;
    fc_doc_init(&d);
    host_json(&d, "CPU <A>", "2.6.3");
    add(&d, mk(LB, "cpu.openblas", 1.9, 2.0, 2.1, FC_STATUS_OK));
    fc_record r = mk("linear_bias:m=64,k=8,n=8,dtype=fp32", "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK);
    r.flops = 1e8;
    snprintf(r.v[FC_FUSED].impl.name, sizeof r.v[FC_FUSED].impl.name, "<script>alert('x')</script> & \x01");
    add(&d, r);
    add(&d, mk(CV, "cpu.onednn", 0, 0, 0, FC_STATUS_FAILED));
    fc_report_input in = {"a<b>.json", &d};
    /* an info document beside it: its host and ceilings in the host section */
    cJSON *info = cJSON_Parse(
        "{\"schema\": \"fusecal-info\", \"created_utc\": \"2026-01-02T03:04:05Z\", "
        "\"host\": {\"hostname\": \"box<1>\"}, \"ceilings\": {\"cpu\": {\"gflops\": "
        "{\"fp32\": 123.5}, \"bandwidth_gbs\": 45.25, \"method\": \"m\"}}}");
    fc_report_info inf = {"info.json", info};
    fc_report_page page = {.in = &in, .n = 1, .info = &inf, .ninfo = 1, .title = "t & <t>"};
    char *html = fc_report_html(&page);
    CHECK_STR_CONTAINS(html, "<h3>info.json</h3>");
    CHECK_STR_CONTAINS(html, "2026-01-02T03:04:05Z by fusecal info");
    CHECK_STR_CONTAINS(html, "box&lt;1&gt;");
    CHECK_STR_CONTAINS(html, "fp32 GEMM 123.5 GFLOP/s, memory 45.25 GB/s");
    cJSON_Delete(info);
    CHECK(count(html, "data-chart=\"speedup\"") == 2); /* linear_bias and conv_bn_relu */
    CHECK(count(html, "data-pattern=\"linear_bias\"") == 1);
    CHECK(count(html, "data-pattern=\"conv_bn_relu\"") == 1);
    CHECK(count(html, "data-chart=\"traffic\"") == 1);
    CHECK(count(html, "data-chart=\"roofline\"") == 1);
    CHECK(count(html, "class=\"crossover\"") == 1); /* along m: 2.0 at m=8, 0.9 at m=64 */
    CHECK_STR_CONTAINS(html, "speedup falls below the 1.1\xC3\x97 threshold along m (k=8,n=8) at m \xE2\x89\x88 ");
    CHECK(strstr(html, "<script") == NULL);
    CHECK(strstr(html, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; \xEF\xBF\xBD") != NULL);
    CHECK(strstr(html, "a&lt;b&gt;.json") != NULL && strstr(html, "CPU &lt;A&gt;") != NULL);
    CHECK(strstr(html, "<title>t &amp; &lt;t&gt;</title>") != NULL);
    /* nothing from the network: the only URLs are XML namespace names */
    for (const char *p = strstr(html, "http"); p; p = strstr(p + 1, "http"))
        CHECK_MSG(!strncmp(p, "http://www.w3.org/", 18), "%.40s", p);
    CHECK(strstr(html, "src=") == NULL && strstr(html, "@import") == NULL && strstr(html, "url(") == NULL);
    free(html);
    fc_doc_free(&d);
}

static void check_outputs(void)
{
    fc_doc base, cur;
    fc_doc_init(&base);
    fc_doc_init(&cur);
    host_json(&base, "CPU A", "2.6.3");
    host_json(&cur, "CPU A", "2.6.3");
    add(&base, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&base, mk(LR, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&base, mk(CV, "cpu.onednn", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&cur, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&cur, mk(LR, "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK));
    fc_record bad = mk(CV, "cpu.onednn", 0, 0, 0, FC_STATUS_FAILED);
    snprintf(bad.reason, sizeof bad.reason, "verification failed: <&\"|>");
    add(&cur, bad);
    fc_check_result c;
    fc_check_run(&c, &base, &cur, NULL, -1, false);
    fc_check_info info = {.baseline = "b.json",
                          .current = "c.json",
                          .base_doc = &base,
                          .cur_doc = &cur,
                          .tolerance = -1};
    int *ord = fc_check_order(&c);
    CHECK(c.items[ord[0]].verdict == FC_VERDICT_FAILED_VERIFICATION &&
          c.items[ord[1]].verdict == FC_VERDICT_REGRESSED && c.items[ord[2]].verdict == FC_VERDICT_PASS);
    free(ord);
    char *md = fc_check_markdown(&c, &info);
    CHECK_STR_CONTAINS(md, "## fusecal check: FAIL");
    CHECK_STR_CONTAINS(md, "| **regressed** | linear_bias_relu | cpu.openblas |");
    CHECK_STR_CONTAINS(md, "&lt;&\"\\|&gt;");
    free(md);
    char *ju = fc_check_junit(&c, &info);
    CHECK(count(ju, "<testcase ") == 3);
    CHECK(count(ju, "<failure ") == 2);
    CHECK_STR_CONTAINS(ju, "type=\"regressed\"");
    CHECK_STR_CONTAINS(ju, "type=\"failed-verification\"");
    CHECK_STR_CONTAINS(ju, "&lt;&amp;&quot;|&gt;");
    free(ju);
    char *js = fc_check_json(&c, &info);
    cJSON *j = cJSON_Parse(js);
    CHECK(j != NULL);
    CHECK(!strcmp(fc_json_str(j, "result", ""), "fail"));
    CHECK(fc_json_num(j, "exit_code", -1) == 1);
    CHECK(fc_json_num(cJSON_GetObjectItemCaseSensitive(j, "counts"), "regressed", -1) == 1);
    cJSON_Delete(j);
    free(js);
    fc_check_free(&c);
    fc_doc_free(&base);
    fc_doc_free(&cur);
}

/* A host block; gpu or onednn NULL leave that entry out. */
static cJSON *host_block(const char *hostname, const char *cpu, const char *gpu, const char *onednn,
                         const char *blas_config, int blas_threads)
{
    char gpu_entry[96] = "", onednn_entry[96] = "", text[1024];
    if (gpu) snprintf(gpu_entry, sizeof gpu_entry, ", \"cuda\": {\"name\": \"%s\"}", gpu);
    if (onednn)
        snprintf(onednn_entry, sizeof onednn_entry, ", \"onednn\": {\"version\": \"%s\", \"isa\": \"x\"}", onednn);
    snprintf(text, sizeof text,
             "{\"hostname\": \"%s\", \"devices\": {\"cpu\": {\"model\": \"%s\", \"threads\": 2}%s}, \"libraries\": "
             "{\"cjson\": \"1.7.15\", \"openblas\": {\"config\": \"%s\", \"parallel\": \"openmp\", "
             "\"threads\": %d}%s}}",
             hostname, cpu, gpu_entry, blas_config, blas_threads, onednn_entry);
    return cJSON_Parse(text);
}

/* A host block read once: the machine's fields, each library's identity (its version,
 * or its fields less thread counts); and whether two blocks are the same host. */
static void host_summaries(void)
{
    cJSON *a = host_block("vm", "AMD EPYC", "H100", "2.6.3", "c", 2);
    fc_host_summary s;
    fc_host_summary_read(a, &s);
    CHECK(!strcmp(s.hostname, "vm") && !strcmp(s.cpu_model, "AMD EPYC") && !strcmp(s.gpu_name, "H100"));
    CHECK(s.threads == 2 && s.has_libraries && s.nlibs == 3);
    CHECK(!strcmp(fc_host_summary_lib(&s, "cjson"), "1.7.15"));
    CHECK(!strcmp(fc_host_summary_lib(&s, "onednn"), "2.6.3"));
    CHECK_MSG(!strcmp(fc_host_summary_lib(&s, "openblas"), "{\"config\":\"c\",\"parallel\":\"openmp\"}"), "'%s'",
              fc_host_summary_lib(&s, "openblas"));
    CHECK(fc_host_summary_lib(&s, "cublas") == NULL);
    fc_host_summary_free(&s);
    cJSON *bare = cJSON_Parse("{\"devices\": {\"cpu\": {}}}");
    fc_host_summary_read(bare, &s);
    CHECK(!s.hostname && !s.cpu_model && !s.gpu_name && s.threads == 0 && !s.has_libraries && s.nlibs == 0);
    fc_host_summary_free(&s);
    cJSON_Delete(bare);

    struct {
        cJSON *b;
        const char *why; /* what fc_host_compatible(a, b) says, NULL: compatible */
    } cases[] = {
        {host_block("vm", "AMD EPYC", "H100", "2.6.3", "c", 2), NULL},
        {host_block("other", "AMD EPYC", "H100", "2.6.3", "c", 2), "hostname 'vm' vs 'other'"},
        {host_block("vm", "Intel", "H100", "2.6.3", "c", 2), "devices.cpu.model 'AMD EPYC' vs 'Intel'"},
        {host_block("vm", "AMD EPYC", NULL, "2.6.3", "c", 2), "devices.cuda.name 'H100' vs ''"},
        {host_block("vm", "AMD EPYC", "H100", "3.1.0", "c", 2), "library 'onednn' differs"},
        {host_block("vm", "AMD EPYC", "H100", "2.6.3", "d", 2), "library 'openblas' differs"},
        {host_block("vm", "AMD EPYC", "H100", "2.6.3", "c", 4), NULL}, /* threads: a setting, not the build */
        {host_block("vm", "AMD EPYC", "H100", NULL, "c", 2), NULL},    /* a library in one block only */
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(cases); i++) {
        char why[256] = "";
        bool ok = fc_host_compatible(a, cases[i].b, why, sizeof why);
        CHECK_MSG(ok == (cases[i].why == NULL), "case %zu: compatible %d (%s)", i, ok, why);
        if (cases[i].why) CHECK_STR_CONTAINS(why, cases[i].why);
        cJSON_Delete(cases[i].b);
    }
    cJSON_Delete(a);

    /* the ISA the host kernels were built for: compared where both blocks name it */
    cJSON *k512 = with_kernels(host_block("vm", "AMD EPYC", NULL, "2.6.3", "c", 2), "AVX-512"),
          *k2 = with_kernels(host_block("vm", "AMD EPYC", NULL, "2.6.3", "c", 2), "AVX2"),
          *none = host_block("vm", "AMD EPYC", NULL, "2.6.3", "c", 2);
    fc_host_summary_read(k512, &s);
    CHECK(s.kernels && !strcmp(s.kernels, "AVX-512"));
    fc_host_summary_free(&s);
    char why[256] = "";
    CHECK(!fc_host_compatible(k512, k2, why, sizeof why));
    CHECK_STR_CONTAINS(why, "devices.cpu.kernels.isa 'AVX-512' vs 'AVX2'");
    CHECK(fc_host_compatible(k512, none, why, sizeof why) && fc_host_compatible(none, k2, why, sizeof why));
    cJSON_Delete(k512);
    cJSON_Delete(k2);
    cJSON_Delete(none);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(verdict_names),       T(every_verdict),  T(state_moved_verdicts), T(state_moved_both_bounds),
        T(exit_codes),          T(confirmations),  T(thresholds_files),     T(pairing),
        T(compare_means),       T(crossing_one),   T(crossing_none),        T(crossing_two),
        T(crossing_fixed_dims), T(crossing_moves), T(speedup_analysis),     T(roofline_analysis),
        T(xml_escaping),        T(report_markup),  T(report_far_values),    T(check_outputs),
        T(host_summaries),
    };
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
