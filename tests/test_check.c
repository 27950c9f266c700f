/* test_check.c — the verdicts of `fusecal check` and every exit-code decision,
 * on synthetic records with known confidence intervals; thresholds files;
 * pairing; compare's means; XML escaping; the report's markup and the check
 * outputs. */
#include "checkfmt.h"
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
    r.speedup = (fc_ratio_ci){ratio, lo, hi};
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

static void verdict_names(void)
{
    const char *want[FC_NVERDICTS] = {"pass", "improved", "inconclusive", "regressed", "below-threshold",
                                      "failed-verification", "missing"};
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
    /* missing: absent or skipped */
    CHECK(judge(&base, NULL, 0, 0.05, why) == FC_VERDICT_MISSING);
    fc_record sk = mk(LB, "cpu.openblas", 0, 0, 0, FC_STATUS_SKIPPED);
    snprintf(sk.reason, sizeof sk.reason, "needs 80 GiB");
    CHECK(judge(&base, &sk, 0, 0.05, why) == FC_VERDICT_MISSING);
    CHECK_STR_CONTAINS(why, "needs 80 GiB");
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
    const char *tt = "{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, "
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

    /* another device and library version: reported in the notes, not failed */
    fc_doc moved;
    fc_doc_init(&moved);
    host_json(&moved, "CPU B", "3.1.0");
    add(&moved, mk(LB, "cpu.openblas", 1.2, 1.3, 1.4, FC_STATUS_OK));
    add(&moved, mk(LR, "cpu.openblas", 1.5, 1.6, 1.7, FC_STATUS_OK));
    CHECK(run_check(&base, &moved, NULL, false, &c) == FC_EXIT_OK);
    bool dev = false, lib = false, blas = false;
    for (int i = 0; i < c.nnotes; i++) {
        dev |= strstr(c.notes[i], "different device") && strstr(c.notes[i], "CPU A") && strstr(c.notes[i], "CPU B");
        lib |= strstr(c.notes[i], "onednn") && strstr(c.notes[i], "3.1.0");
        blas |= strstr(c.notes[i], "openblas") != NULL; /* a thread count is not a library version */
    }
    CHECK(dev && lib && !blas);
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
    CHECK_NEAR(l.tolerance, 0.3, 1e-12); /* layout nhwc, backend glob */
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
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"pattern\": \"x\"}]}", "does not match"},
        {"{\"schema\": \"fusecal-thresholds\", \"schema_version\": 1, \"rules\": [{\"min_speedup\": -1}]}", "does not match"},
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
    /* by problem: every backend of a with every backend of b */
    n = fc_match_docs(&a, &b, FC_MATCH_PROBLEM, &p);
    CHECK(n == 5);
    int cross = 0;
    for (int i = 0; i < n; i++) cross += p[i].a && p[i].b;
    CHECK(cross == 4);
    free(p);
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

/* ------------------------------------------------------------------ markup */

static void xml_escaping(void)
{
    fc_str b = {0};
    fc_xml_escape(&b, "<a href=\"x\">&'\x01\xff\xc3\x97\xe2\x89\x88\xed\xa0\x80\xc0\xaf");
    CHECK(!strcmp(fc_str_cstr(&b), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\xEF\xBF\xBD\xEF\xBF\xBD\xc3\x97\xe2\x89\x88"
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

static void report_markup(void)
{
    fc_doc d;
    fc_doc_init(&d);
    host_json(&d, "CPU <A>", "2.6.3");
    add(&d, mk(LB, "cpu.openblas", 1.9, 2.0, 2.1, FC_STATUS_OK));
    fc_record r = mk("linear_bias:m=64,k=64,n=64,dtype=fp32", "cpu.openblas", 0.8, 0.9, 1.0, FC_STATUS_OK);
    r.flops = 1e8;
    snprintf(r.v[FC_FUSED].impl.name, sizeof r.v[FC_FUSED].impl.name, "<script>alert('x')</script> & \x01");
    add(&d, r);
    add(&d, mk(CV, "cpu.onednn", 0, 0, 0, FC_STATUS_FAILED));
    fc_report_input in = {"a<b>.json", &d};
    char *html = fc_report_html(&in, 1, "t & <t>");
    CHECK(count(html, "data-chart=\"speedup\"") == 2); /* linear_bias and conv_bn_relu */
    CHECK(count(html, "data-pattern=\"linear_bias\"") == 1);
    CHECK(count(html, "data-pattern=\"conv_bn_relu\"") == 1);
    CHECK(count(html, "data-chart=\"traffic\"") == 1);
    CHECK(count(html, "data-chart=\"roofline\"") == 1);
    CHECK(count(html, "class=\"crossover\"") == 1); /* 2.0 at 1 MFLOP, 0.9 at 100 MFLOP */
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
    fc_check_info info = {.baseline = "b.json", .current = "c.json", .base_doc = &base, .cur_doc = &cur, .tolerance = -1};
    int *ord = fc_check_order(&c);
    CHECK(c.items[ord[0]].verdict == FC_VERDICT_FAILED_VERIFICATION && c.items[ord[1]].verdict == FC_VERDICT_REGRESSED &&
          c.items[ord[2]].verdict == FC_VERDICT_PASS);
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

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(verdict_names), T(every_verdict), T(exit_codes),   T(confirmations), T(thresholds_files),
        T(pairing),       T(compare_means), T(xml_escaping), T(report_markup), T(check_outputs),
    };
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
