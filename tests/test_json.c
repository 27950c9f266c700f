/* test_json.c — strict JSON input, the schema validator, records to JSON and
 * back, the embedded catalogue and its sweeps. */
#include "catalog.h"
#include "embedded.h"
#include "jsonfile.h"
#include "jsonschema.h"
#include "record.h"
#include "test.h"

static int parse(const char *text, cJSON **out, fc_err *e)
{
    return fc_json_parse("t.json", text, strlen(text), out, e);
}

static void strict_parser(void)
{
    cJSON *j;
    fc_err e;
    CHECK(parse("{\"a\": 1, \"b\": [1, 2]}", &j, &e) == 0);
    cJSON_Delete(j);
    struct {
        const char *text, *needle;
    } bad[] = {
        {"", "empty"},
        {"   \n", "empty"},
        {"{\"a\": 1,", "truncated"},
        {"{\"a\": 1} x", "invalid JSON"},
        {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
        {"{\"a\": {\"b\": 1, \"b\": 1}}", "duplicate key 'b' at /a"},
        {"{\"a\": 1e999}", "number out of range at /a"},
        {"[-1e400]", "out of range"},
        {"{\"a\": NaN}", "invalid JSON"},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(bad); i++) {
        e.msg[0] = 0;
        int rc = parse(bad[i].text, &j, &e);
        CHECK_MSG(rc != 0, "'%s' accepted", bad[i].text);
        if (rc == 0) cJSON_Delete(j);
        else
            CHECK_STR_CONTAINS(e.msg, bad[i].needle);
        CHECK_STR_CONTAINS(e.msg, "t.json");
    }
    /* deep nesting */
    char deep[400];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    deep[200] = 0;
    CHECK(parse(deep, &j, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "nesting");
}

/* Duplicate keys in an object of 400000 members: the one reported is the first
 * member whose key an earlier one has, wherever in the object the pair lies (each
 * member checked against every earlier one would take minutes here). */
static void large_object_duplicates(void)
{
    enum { N = 400000 };
    char *text = fc_xmalloc((size_t)N * 24 + 64);
    for (int round = 0; round < 3; round++) {
        size_t off = (size_t)sprintf(text, "{\"o\": {");
        for (int i = 0; i < N; i++) {
            /* round 1: member N-1 repeats member 3's key; round 2 also member N/2
             * member 7's, which comes first */
            int key = round >= 1 && i == N - 1 ? 3 : round == 2 && i == N / 2 ? 7 : i;
            off += (size_t)sprintf(text + off, "%s\"k%d\": %d", i ? ", " : "", key, i);
        }
        off += (size_t)sprintf(text + off, "}}");
        cJSON *j = NULL;
        fc_err e = {{0}};
        int rc = fc_json_parse("big.json", text, off, &j, &e);
        if (round == 0) {
            CHECK_MSG(rc == 0, "distinct keys refused: %s", e.msg);
            CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "o")) == N);
        } else {
            CHECK(rc != 0);
            CHECK_STR_CONTAINS(e.msg, round == 1 ? "big.json: duplicate key 'k3' at /o" : "duplicate key 'k7' at /o");
        }
        cJSON_Delete(j);
    }
    free(text);
}

static void validator(void)
{
    const char *schema_text =
        "{\"type\":\"object\",\"required\":[\"n\",\"kind\"],\"additionalProperties\":false,"
        "\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10},"
        "\"kind\":{\"enum\":[\"a\",\"b\"]},\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\",\"maxLength\":5},"
        "\"xs\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/pos\"},\"minItems\":1,\"maxItems\":2},"
        "\"v\":{\"anyOf\":[{\"type\":\"number\"},{\"const\":\"NaN\"}]}},"
        "\"if\":{\"properties\":{\"kind\":{\"const\":\"b\"}}},\"then\":{\"required\":[\"name\"]},"
        "\"$defs\":{\"pos\":{\"type\":\"number\",\"exclusiveMinimum\":0}}}";
    cJSON *schema = cJSON_Parse(schema_text);
    CHECK(schema != NULL);
    struct {
        const char *doc;
        const char *needle;
    } cases[] = {
        {"{\"n\":3,\"kind\":\"a\"}", NULL},
        {"{\"n\":3,\"kind\":\"b\",\"name\":\"abc\",\"xs\":[1.5],\"v\":\"NaN\"}", NULL},
        {"{\"n\":3}", "missing required member 'kind'"},
        {"{\"n\":3.5,\"kind\":\"a\"}", "expected integer"},
        {"{\"n\":0,\"kind\":\"a\"}", "less than the minimum"},
        {"{\"n\":11,\"kind\":\"a\"}", "more than the maximum"},
        {"{\"n\":1,\"kind\":\"c\"}", "not one of the allowed values"},
        {"{\"n\":1,\"kind\":\"a\",\"extra\":1}", "unexpected member 'extra'"},
        {"{\"n\":1,\"kind\":\"b\"}", "missing required member 'name'"},
        {"{\"n\":1,\"kind\":\"a\",\"name\":\"ABC\"}", "does not match the pattern"},
        {"{\"n\":1,\"kind\":\"a\",\"name\":\"abcdef\"}", "longer than"},
        {"{\"n\":1,\"kind\":\"a\",\"xs\":[]}", "fewer than"},
        {"{\"n\":1,\"kind\":\"a\",\"xs\":[1,2,3]}", "more than"},
        {"{\"n\":1,\"kind\":\"a\",\"xs\":[0]}", "at /xs/0"},
        {"{\"n\":1,\"kind\":\"a\",\"v\":\"Infinity\"}", "none of the allowed forms"},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(cases); i++) {
        cJSON *doc = cJSON_Parse(cases[i].doc);
        fc_err e = {{0}};
        int rc = fc_schema_validate(schema, doc, &e);
        if (!cases[i].needle) CHECK_MSG(rc == 0, "%s: %s", cases[i].doc, e.msg);
        else {
            CHECK_MSG(rc != 0, "%s accepted", cases[i].doc);
            CHECK_STR_CONTAINS(e.msg, cases[i].needle);
        }
        cJSON_Delete(doc);
    }
    cJSON_Delete(schema);
    /* an unsupported keyword is an error, not ignored */
    schema = cJSON_Parse("{\"type\":\"object\",\"dependentRequired\":{\"a\":[\"b\"]}}");
    cJSON *doc = cJSON_Parse("{}");
    fc_err e;
    CHECK(fc_schema_validate(schema, doc, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "not supported");
    cJSON_Delete(schema);
    cJSON_Delete(doc);
}

static fc_record sample_record(void)
{
    fc_record r;
    memset(&r, 0, sizeof r);
    fc_err e;
    fc_problem_parse("linear_bias_relu:m=64,k=32,n=16", NULL, &r.prob, &e);
    fc_problem_string(&r.prob, r.problem, sizeof r.problem);
    strcpy(r.device, "cpu");
    strcpy(r.backend, "cpu.openblas");
    r.status = FC_STATUS_OK;
    r.threshold = 1.1;
    r.decision = FC_DECIDE_YES;
    r.rounds = 3;
    strcpy(r.stop_rule, "precision");
    r.margin = 1.4 / 1.1 - 1;
    for (int k = 0; k < 3; k++)
        r.round[k] = (fc_round_rec){.median_ms = {2.0, 1.0 + 0.1 * k},
                                    .ratio = 2.0 / (1.0 + 0.1 * k),
                                    .pairs = 7,
                                    .batch = {1, 2}};
    r.flops = 12345;
    r.ceil_gflops = 100;
    r.ceil_gbs = 20;
    r.speedup = (fc_ratio_ci){.ratio = 1.5, .lo = 1.4, .hi = 1.6};
    r.traffic_reduction = 0.4;
    r.verified = true;
    r.seed = 18446744073709551615ULL;
    for (int v = 0; v < 2; v++) {
        fc_variant_rec *vr = &r.v[v];
        snprintf(vr->impl.name, sizeof vr->impl.name, "impl %d \"quoted\"", v);
        vr->impl.nkernels = v ? 1 : 3;
        vr->lat = (fc_stats){20, 1.0 + v, 1.1 + v, 0.9 + v, 1.5 + v, 0.95 + v, 1.2 + v, 0.1, 0.09};
        vr->batch = 1;
        strcpy(vr->stop_rule, "precision");
        vr->samples_at_stop = 20;
        vr->bytes = 1000;
        if (v == FC_FUSED) { /* the unfused variant as a document before the footprints */
            vr->footprint_bytes = 900;
            vr->ceil_gbs = 55;
        }
        strcpy(vr->bound, "memory");
        vr->gflops = 3;
        vr->check = (fc_check){.passed = true,
                               .trusted = true,
                               .rel_err = 1e-7,
                               .max_abs_err = 1e-6,
                               .tol = 1e-5,
                               .checked = 1024};
        vr->stable = true;
    }
    return r;
}

static void record_round_trip(void)
{
    fc_doc d;
    fc_doc_init(&d);
    d.host = cJSON_CreateObject();
    cJSON_AddStringToObject(d.host, "hostname", "h");
    cJSON_AddObjectToObject(d.host, "devices");
    cJSON_AddObjectToObject(d.host, "libraries");
    d.settings.threads = 2;
    d.settings.seed = 42;
    d.complete = true;
    *fc_doc_add(&d) = sample_record();
    fc_record *skipped = fc_doc_add(&d);
    *skipped = sample_record();
    skipped->status = FC_STATUS_SKIPPED;
    strcpy(skipped->reason, "needs 9 GiB");
    char *text = fc_doc_to_json(&d);
    fc_doc back;
    fc_err e = {{0}};
    int rc = fc_doc_parse("rt.json", text, &back, &e);
    CHECK_MSG(rc == 0, "%s", e.msg);
    if (rc == 0) {
        CHECK(back.n == 2 && back.complete);
        const fc_record *r = &back.rec[0];
        CHECK(r->prob.pat->id == FC_P_linear_bias_relu && r->prob.d[FC_LIN_K] == 32);
        CHECK_NEAR(r->speedup.ratio, 1.5, 0);
        CHECK_NEAR(r->speedup.lo, 1.4, 0);
        CHECK(r->rounds == 3 && !strcmp(r->stop_rule, "precision") && r->round[2].pairs == 7);
        CHECK_NEAR(r->round[1].median_ms[FC_FUSED], 1.1, 1e-15);
        CHECK_NEAR(r->margin, 1.4 / 1.1 - 1, 1e-15);
        CHECK(!r->has_control);
        CHECK_NEAR(r->v[FC_FUSED].lat.median, 2.0, 0);
        CHECK(r->v[FC_UNFUSED].impl.nkernels == 3);
        CHECK(r->v[FC_FUSED].footprint_bytes == 900 && r->v[FC_FUSED].ceil_gbs == 55);
        CHECK(r->v[FC_UNFUSED].footprint_bytes == 0 && r->v[FC_UNFUSED].ceil_gbs == 20); /* the record's */
        CHECK(!strcmp(r->v[FC_FUSED].impl.name, "impl 1 \"quoted\""));
        CHECK(r->seed == 18446744073709551615ULL);
        CHECK(r->decision == FC_DECIDE_YES);
        CHECK(back.rec[1].status == FC_STATUS_SKIPPED);
        CHECK(back.settings.seed == 42);
        fc_doc_free(&back);
    }
    /* the flat fields an existing partitioner reads */
    CHECK_STR_CONTAINS(text, "\"fusion_pattern\":");
    CHECK_STR_CONTAINS(text, "\"speedup_factor\":");
    CHECK_STR_CONTAINS(text, "\"memory_reduction\":");
    free(text);

    /* a NaN metric is spelled as a string and accepted there ... */
    d.rec[0].v[FC_FUSED].check.rel_err = NAN;
    text = fc_doc_to_json(&d);
    CHECK_STR_CONTAINS(text, "\"rel_err\":\t\"NaN\"");
    CHECK(fc_doc_parse("nan.json", text, &back, &e) == 0);
    fc_doc_free(&back);
    free(text);
    /* ... but never where a number is required */
    d.rec[0].v[FC_FUSED].lat.median = NAN;
    text = fc_doc_to_json(&d);
    CHECK(fc_doc_parse("nan2.json", text, &back, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "non-finite number spelled as a string");
    free(text);
    fc_doc_free(&d);
}

static void version_and_kind_errors(void)
{
    fc_doc d;
    fc_err e;
    CHECK(fc_doc_parse("v.json", "{\"schema\":\"fusecal-calibration\",\"schema_version\":99}", &d, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "newer than this fusecal reads");
    CHECK(fc_doc_parse("k.json", "{\"records\":[]}", &d, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "not a fusecal calibration");
    CHECK(fc_doc_parse("a.json", "[1,2]", &d, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "a.json");
}

static void embedded_catalogue(void)
{
    int files = 0;
    for (const fc_embedded_file *f = fc_embedded_files; f->path; f++) {
        cJSON *j = fc_json_embedded(f->path); /* aborts if broken */
        fc_err e = {{0}};
        if (!strncmp(f->path, "patterns/", 9) && strncmp(f->path, "patterns/networks/", 18)) {
            CHECK_MSG(fc_catalog_check(f->path, j, &e) == 0, "%s", e.msg);
            files++;
        }
        cJSON_Delete(j);
    }
    CHECK(files >= 3);
    /* quick holds the reference shapes; standard and full extend it */
    fc_sweep q, s, f;
    fc_err e;
    CHECK(fc_sweep_load("quick", &q, &e) == 0);
    CHECK(fc_sweep_load("standard", &s, &e) == 0);
    CHECK(fc_sweep_load("full", &f, &e) == 0);
    CHECK(q.n > 0 && s.n > q.n && f.n > s.n);
    const char *must[] = {
        "linear_bias_relu:m=128,k=512,n=512,dtype=fp32",
        "linear_bias:m=512,k=1024,n=1024,dtype=fp32",
        "linear_bias_gelu:m=1024,k=784,n=2048,dtype=fp32",
        "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32",
        "conv_bn_relu:n=4,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32",
        "conv_bn_relu:n=8,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32",
        "attention:b=2,h=4,hkv=4,s=128,skv=128,d=64,causal=0,dtype=fp32",
        "attention:b=1,h=8,hkv=2,s=256,skv=256,d=64,causal=0,dtype=fp32",
        "attention:b=1,h=8,hkv=2,s=256,skv=256,d=64,causal=1,dtype=fp32",
        "attention:b=1,h=8,hkv=2,s=1,skv=2048,d=64,causal=0,dtype=fp32",
    };
    for (size_t m = 0; m < FC_ARRAY_LEN(must); m++) {
        bool found = false;
        for (int i = 0; i < q.n && !found; i++) {
            char buf[256];
            fc_problem_string(&q.prob[i], buf, sizeof buf);
            found = !strcmp(buf, must[m]);
        }
        CHECK_MSG(found, "quick lacks %s", must[m]);
    }
    /* every pattern appears in quick */
    for (int p = 0; p < FC_NPATTERNS; p++) {
        bool found = false;
        for (int i = 0; i < q.n; i++) found |= q.prob[i].pat->id == (fc_pattern_id)p;
        CHECK_MSG(found, "quick lacks pattern %s", fc_patterns[p].name);
    }
    CHECK(q.stop_set & FC_STOP_MAX_TIME);
    CHECK(fc_catalog_threshold(fc_pattern_find("conv_bn_relu")) > 1.0);
    fc_sweep_free(&q);
    fc_sweep_free(&s);
    fc_sweep_free(&f);
    CHECK(fc_sweep_load("nosuchsweep", &q, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "unknown sweep 'nosuchsweep'");
}

/* fc_doc_slot_for: an interrupted record of the same problem and backend is the slot
 * a new measurement of that pair takes; a finished one, another backend's or another
 * problem's is kept and a new slot added */
static void slot_for_interrupted(void)
{
    fc_doc d;
    fc_doc_init(&d);
    const fc_record r = sample_record();
    fc_err e;
    *fc_doc_add(&d) = r; /* 0: finished, the same pair */
    fc_record *o = fc_doc_add(&d);
    *o = r; /* 1: interrupted, another backend */
    strcpy(o->stop_rule, "interrupted");
    strcpy(o->backend, "cpu.onednn");
    o = fc_doc_add(&d);
    *o = r; /* 2: interrupted, another problem */
    strcpy(o->stop_rule, "interrupted");
    fc_problem_parse("linear_bias_relu:m=64,k=32,n=17", NULL, &o->prob, &e);
    o = fc_doc_add(&d);
    *o = r; /* 3: interrupted, the same pair */
    strcpy(o->stop_rule, "interrupted");
    CHECK(fc_doc_slot_for(&d, &r) == &d.rec[3] && d.n == 4);
    CHECK(d.rec[3].rounds == 0 && d.rec[3].stop_rule[0] == 0); /* zeroed */
    CHECK(!strcmp(d.rec[0].stop_rule, "precision") && !strcmp(d.rec[1].backend, "cpu.onednn"));
    CHECK(!strcmp(d.rec[2].stop_rule, "interrupted"));
    fc_record other = r; /* the interrupted cpu.onednn record's pair */
    strcpy(other.backend, "cpu.onednn");
    CHECK(fc_doc_slot_for(&d, &other) == &d.rec[1] && d.n == 4);
    /* no interrupted record of the pair left: a new slot */
    CHECK(fc_doc_slot_for(&d, &r) == &d.rec[4] && d.n == 5);
    fc_doc_free(&d);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(strict_parser),       T(large_object_duplicates), T(validator),
                                   T(record_round_trip),   T(version_and_kind_errors), T(embedded_catalogue),
                                   T(slot_for_interrupted)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
