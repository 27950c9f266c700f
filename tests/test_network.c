/* Network files: every embedded network loads and its problems parse; an unknown
 * pattern, a bad scale and schema violations are refused with a clear message;
 * --batch/--seq rewriting; identical sites merged; the network summary on
 * synthetic records (saving, interval, losers, unmeasured sites, order). */
#include "jsonfile.h"
#include "jsonschema.h"
#include "netsum.h"
#include "network.h"
#include "stats.h"
#include "test.h"

static int parse(const char *text, fc_network *net, fc_err *e)
{
    return fc_network_parse("t.json", text, strlen(text), net, e);
}

#define HEAD "{\"schema\":\"fusecal-network\",\"schema_version\":1,\"name\":\"t\",\"batch\":2,\"seq\":4,\"sites\":["

static const fc_net_site *find_site(const fc_network *net, const char *problem)
{
    for (int i = 0; i < net->n; i++) {
        char ps[256];
        fc_problem_string(&net->site[i].prob, ps, sizeof ps);
        if (!strcmp(ps, problem)) return &net->site[i];
    }
    return NULL;
}

static void every_embedded_network_loads(void)
{
    int n = 0;
    for (int i = 0; fc_network_embedded(i); i++, n++) {
        fc_network net;
        fc_err e = {{0}};
        CHECK_MSG(fc_network_load(fc_network_embedded(i), &net, &e) == 0, "%s", e.msg);
        CHECK(net.n > 0 && net.batch >= 1);
        CHECK(!strcmp(net.name, fc_network_embedded(i)));
        fc_network_free(&net);
    }
    CHECK(n >= 6);
    const char *must[] = {"resnet50", "mobilenet_v2", "bert_base", "vit_b16", "llama3_8b_prefill", "llama3_8b_decode"};
    for (size_t i = 0; i < FC_ARRAY_LEN(must); i++) CHECK_STR_CONTAINS(fc_network_names(), must[i]);
}

/* ResNet-50: 53 conv sites and the fc, 25 unique problems; the 3x3 of layer1
 * runs three times per inference. */
static void resnet50_sites(void)
{
    fc_network net;
    fc_err e;
    CHECK(fc_network_load("resnet50", &net, &e) == 0);
    int names = 0;
    for (int i = 0; i < net.n; i++) names += net.site[i].nnames;
    CHECK(names == 54);
    CHECK(net.n == 25);
    CHECK(fc_network_runs(&net) == 54);
    const fc_net_site *s =
        find_site(&net, "conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32");
    CHECK(s && s->multiplicity == 3 && s->nnames == 3);
    if (s) CHECK(!strcmp(s->names[0], "layer1.0.conv2+bn2+relu"));
    /* v1.5: the stride is in the 3x3 */
    CHECK(find_site(&net, "conv_bn_relu:n=1,c=128,h=56,w=56,k=128,r=3,s=3,stride=2,pad=1,layout=nhwc,dtype=fp32"));
    CHECK(find_site(&net, "conv_bn:n=1,c=256,h=56,w=56,k=512,r=1,s=1,stride=2,pad=0,layout=nhwc,dtype=fp32"));
    s = find_site(&net, "conv_bn_add_relu:n=1,c=512,h=7,w=7,k=2048,r=1,s=1,stride=1,pad=0,layout=nhwc,dtype=fp32");
    CHECK(s && s->multiplicity == 3);
    fc_network_free(&net);
}

static void rescale_batch_and_seq(void)
{
    fc_network net;
    fc_err e;
    CHECK(fc_network_load("resnet50", &net, &e) == 0);
    CHECK(fc_network_rescale(&net, 32, 0, &e) == 0);
    CHECK(net.batch == 32 && net.n == 25);
    for (int i = 0; i < net.n; i++) {
        const fc_problem *p = &net.site[i].prob;
        CHECK(p->pat->family == FC_FAM_CONV ? p->d[FC_CONV_N] == 32 : p->d[FC_LIN_M] == 32);
    }
    CHECK(fc_network_rescale(&net, 0, 128, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "no sequence length");
    fc_network_free(&net);

    CHECK(fc_network_load("bert_base", &net, &e) == 0);
    CHECK(net.batch == 1 && net.seq == 128);
    CHECK(find_site(&net, "linear_bias:m=128,k=768,n=768,dtype=fp32")->multiplicity == 48);
    CHECK(fc_network_rescale(&net, 8, 512, &e) == 0);
    CHECK(find_site(&net, "linear_bias:m=4096,k=768,n=768,dtype=fp32")->multiplicity == 48);
    CHECK(find_site(&net, "linear_bias_gelu:m=4096,k=768,n=3072,dtype=fp32"));
    CHECK(find_site(&net, "attention:b=8,h=12,hkv=12,s=512,skv=512,d=64,causal=0,dtype=fp32"));
    CHECK(find_site(&net, "add_layernorm:m=4096,n=768,dtype=fp32")->multiplicity == 25);
    CHECK(find_site(&net, "linear_bias:m=8,k=768,n=768,dtype=fp32")); /* the pooler: per sequence */
    fc_network_free(&net);
}

/* LLaMA-3-8B: six sites per layer over 32 layers, five unique problems; decode's
 * attention is one token against the KV cache, and --seq moves the cache alone. */
static void llama3_sites(void)
{
    fc_network net;
    fc_err e;
    CHECK_MSG(fc_network_load("llama3_8b_prefill", &net, &e) == 0, "%s", e.msg);
    CHECK(net.n == 5 && fc_network_runs(&net) == 32 * 6);
    CHECK(find_site(&net, "add_rmsnorm:m=512,n=4096,dtype=fp32")->multiplicity == 64);
    CHECK(find_site(&net, "linear_swiglu:m=512,k=4096,n=14336,dtype=fp32")->multiplicity == 32);
    CHECK(find_site(&net, "qk_norm_rope:m=512,h=8,d=128,dtype=fp32"));
    CHECK(find_site(&net, "attention:b=1,h=32,hkv=8,s=512,skv=512,d=128,causal=1,dtype=fp32"));
    fc_network_free(&net);

    CHECK_MSG(fc_network_load("llama3_8b_decode", &net, &e) == 0, "%s", e.msg);
    CHECK(net.n == 5 && net.seq == 4096);
    CHECK(find_site(&net, "attention:b=1,h=32,hkv=8,s=1,skv=4096,d=128,causal=1,dtype=fp32"));
    CHECK(find_site(&net, "linear_swiglu:m=1,k=4096,n=14336,dtype=fp32"));
    CHECK(fc_network_rescale(&net, 4, 2048, &e) == 0);
    CHECK(find_site(&net, "attention:b=4,h=32,hkv=8,s=1,skv=2048,d=128,causal=1,dtype=fp32"));
    CHECK(find_site(&net, "add_rmsnorm:m=4,n=4096,dtype=fp32")->multiplicity == 64);
    fc_network_free(&net);
}

static void merges_identical_sites(void)
{
    fc_network net;
    fc_err e;
    /* the same problem twice; and two that become one at batch 4 */
    CHECK_MSG(parse(HEAD "{\"problem\":\"linear_bias:m=8,k=16,n=16\",\"multiplicity\":3,\"names\":[\"a\"]},"
                         "{\"problem\":\"linear_bias:m=8,k=16,n=16\",\"multiplicity\":2,\"names\":[\"b\",\"c\"]},"
                         "{\"problem\":\"linear_bias:m=16,k=16,n=16\",\"multiplicity\":1,\"names\":[\"d\"]},"
                         "{\"problem\":\"linear_bias:m=8,k=16,n=16\",\"multiplicity\":1,\"names\":[\"e\"],"
                         "\"scale\":{\"m\":\"batch\"}}]}",
                    &net, &e) == 0,
              "%s", e.msg);
    CHECK(net.n == 2);
    const fc_net_site *s = find_site(&net, "linear_bias:m=8,k=16,n=16,dtype=fp32");
    CHECK(s && s->multiplicity == 6 && s->nnames == 4);
    if (s) CHECK(!strcmp(s->names[2], "c") && !strcmp(s->names[3], "e"));
    /* at batch 4, e moves to m=16 and joins d; a, b, c stay */
    CHECK(fc_network_rescale(&net, 4, 0, &e) == 0);
    CHECK(net.n == 2);
    s = find_site(&net, "linear_bias:m=8,k=16,n=16,dtype=fp32");
    CHECK(s && s->multiplicity == 5 && s->nnames == 3);
    s = find_site(&net, "linear_bias:m=16,k=16,n=16,dtype=fp32");
    CHECK(s && s->multiplicity == 2 && s->nnames == 2);
    /* and back: the file's sites, not the merged ones, are rescaled */
    CHECK(fc_network_rescale(&net, 2, 0, &e) == 0);
    CHECK(net.n == 2 && find_site(&net, "linear_bias:m=8,k=16,n=16,dtype=fp32")->multiplicity == 6);
    fc_network_free(&net);
}

/* --dtype and --layout put every site in one dtype and layout before the sites are
 * listed: sites that differ only there become one, and a rescale keeps them. */
static void retype_merges(void)
{
    fc_network net;
    fc_err e;
    CHECK(parse(HEAD "{\"problem\":\"linear_bias:m=8,k=16,n=16\",\"multiplicity\":3,\"names\":[\"a\"],"
                     "\"scale\":{\"m\":\"batch\"}},"
                     "{\"problem\":\"linear_bias:m=8,k=16,n=16,dtype=bf16\",\"multiplicity\":2,\"names\":[\"b\"],"
                     "\"scale\":{\"m\":\"batch\"}},"
                     "{\"problem\":\"conv_bn:n=2,c=8,h=8,w=8,k=8,layout=nchw\",\"multiplicity\":1,\"names\":[\"c\"]},"
                     "{\"problem\":\"conv_bn:n=2,c=8,h=8,w=8,k=8\",\"multiplicity\":1,\"names\":[\"d\"]}]}",
                &net, &e) == 0);
    CHECK(net.n == 4);
    const fc_dtype bf16 = FC_BF16;
    fc_network_retype(&net, &bf16, FC_LAYOUT_NONE);
    CHECK(net.n == 3);
    const fc_net_site *s = find_site(&net, "linear_bias:m=8,k=16,n=16,dtype=bf16");
    CHECK(s && s->multiplicity == 5 && s->nnames == 2);
    CHECK(find_site(&net, "conv_bn:n=2,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=0,layout=nchw,dtype=bf16"));
    fc_network_retype(&net, NULL, FC_NHWC);
    CHECK(net.n == 2);
    s = find_site(&net, "conv_bn:n=2,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=0,layout=nhwc,dtype=bf16");
    CHECK(s && s->multiplicity == 2 && s->nnames == 2);
    CHECK(fc_network_rescale(&net, 4, 0, &e) == 0 && net.n == 2);
    s = find_site(&net, "linear_bias:m=16,k=16,n=16,dtype=bf16");
    CHECK(s && s->multiplicity == 5);
    fc_network_free(&net);
}

static void refuses_bad_files(void)
{
    static const struct {
        const char *sites, *says;
    } bad[] = {
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"]},"
         "{\"problem\":\"conv_bn_gelu:n=1,c=8,h=8,w=8,k=8\",\"multiplicity\":1,\"names\":[\"x\"]}",
         "site 1 ('conv_bn_gelu:n=1,c=8,h=8,w=8,k=8'): unknown pattern 'conv_bn_gelu'"},
        {"{\"problem\":\"linear_bias:m=8,k=8\",\"multiplicity\":1,\"names\":[\"a\"]}", "site 0"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":0,\"names\":[\"a\"]}", "multiplicity"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1}", "names"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"],\"scale\":{\"q\":\"batch\"}}",
         "scale names 'q', not a dim of linear_bias"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"],\"scale\":{\"m\":\"tokens\"}}",
         "scale"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"],\"extra\":1}", "extra"},
        /* a layer named twice would count its runs twice */
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\",\"l.0\"]},"
         "{\"problem\":\"linear_bias:m=8,k=8,n=16\",\"multiplicity\":1,\"names\":[\"b\"]},"
         "{\"problem\":\"linear_bias:m=8,k=8,n=32\",\"multiplicity\":1,\"names\":[\"a\"]},"
         "{\"problem\":\"linear_bias:m=8,k=8,n=64\",\"multiplicity\":1,\"names\":[\"b\"]}",
         "t.json: site 2: name 'a' also names site 0"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"]},"
         "{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"]}",
         "t.json: site 1: name 'a' also names site 0"},
        {"{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"b\",\"a\",\"b\"]}",
         "t.json: site 0: name 'b' given twice"},
    };
    for (size_t i = 0; i < FC_ARRAY_LEN(bad); i++) {
        char text[1024];
        snprintf(text, sizeof text, HEAD "%s]}", bad[i].sites);
        fc_network net;
        fc_err e = {{0}};
        CHECK_MSG(parse(text, &net, &e) != 0, "case %zu accepted", i);
        CHECK_STR_CONTAINS(e.msg, "t.json");
        CHECK_STR_CONTAINS(e.msg, bad[i].says);
    }
    fc_network net;
    fc_err e;
    CHECK(parse("{\"schema\":\"fusecal-network\",\"schema_version\":1,\"name\":\"t\",\"batch\":1,\"sites\":["
                "{\"problem\":\"attention:b=1,h=2,s=8,d=8\",\"multiplicity\":1,\"names\":[\"a\"],"
                "\"scale\":{\"s\":\"seq\"}}]}",
                &net, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "sequence length, which the network does not give");
    CHECK(parse(HEAD "{\"problem\":\"linear_bias:m=6,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"],"
                     "\"scale\":{\"m\":\"batch*seq\"}}]}",
                &net, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "site 0 (a): m=6 is not a multiple of batch*seq=8");
    CHECK(parse(HEAD "{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":1,\"names\":[\"a\"],"
                     "\"scale\":{\"m\":\"batch*seq\"}}]}",
                &net, &e) == 0);
    CHECK(fc_network_rescale(&net, 3, 0, &e) == 0 && net.site[0].prob.d[FC_LIN_M] == 12);
    fc_network_free(&net);
    CHECK(fc_network_load("no_such_net", &net, &e) != 0);
    CHECK_STR_CONTAINS(e.msg, "unknown network 'no_such_net' (valid: ");
}

/* ------------------------------------------------------------------ summary */

/* A record of problem ps on backend with R rounds of (u, f) medians. */
static void add_rec(fc_doc *d, const char *ps, const char *backend, int R, const double *u, const double *f,
                    fc_decision dec, double lo, double hi)
{
    fc_record *r = fc_doc_add(d);
    fc_err e;
    CHECK(fc_problem_parse(ps, NULL, &r->prob, &e) == 0);
    fc_problem_string(&r->prob, r->problem, sizeof r->problem);
    fc_strlcpy(r->backend, backend, sizeof r->backend);
    fc_strlcpy(r->device, "cpu", sizeof r->device);
    r->status = FC_STATUS_OK;
    r->rounds = R;
    double su = 0, sf = 0;
    for (int i = 0; i < R; i++) {
        r->round[i].median_ms[FC_UNFUSED] = u[i];
        r->round[i].median_ms[FC_FUSED] = f[i];
        su += u[i];
        sf += f[i];
    }
    r->v[FC_UNFUSED].lat.n = r->v[FC_FUSED].lat.n = 10 * R;
    r->v[FC_UNFUSED].lat.median = su / R;
    r->v[FC_FUSED].lat.median = sf / R;
    r->speedup = (fc_ratio_ci){.ratio = su / sf, .lo = lo, .hi = hi};
    r->decision = dec;
}

static void summary_on_synthetic_records(void)
{
    fc_network net;
    fc_err e;
    CHECK(parse(HEAD "{\"problem\":\"linear_bias:m=8,k=8,n=8\",\"multiplicity\":4,\"names\":[\"a\"]},"
                     "{\"problem\":\"linear_bias:m=16,k=8,n=8\",\"multiplicity\":2,\"names\":[\"b\"]},"
                     "{\"problem\":\"linear_bias:m=32,k=8,n=8\",\"multiplicity\":1,\"names\":[\"c\"]},"
                     "{\"problem\":\"linear_bias:m=64,k=8,n=8\",\"multiplicity\":1,\"names\":[\"d\"]},"
                     "{\"problem\":\"linear_bias:m=128,k=8,n=8\",\"multiplicity\":1,\"names\":[\"e\"]}]}",
                &net, &e) == 0);
    fc_doc d;
    fc_doc_init(&d);
    const double rn = 0.025, z = 1.959964;
    d.settings.run_noise = rn;
    /* a: saves 4 x (1.0 - 0.5) = 2 ms; rounds differ by 0.4, 0.5, 0.6 (sd 0.1) */
    add_rec(&d, "linear_bias:m=8,k=8,n=8", "cpu.x", 3, (double[]){0.9, 1.0, 1.1}, (double[]){0.5, 0.5, 0.5},
            FC_DECIDE_YES, 1.8, 2.2);
    /* b: saves 2 x (1.2 - 1.0) = 0.4 ms; rounds 0.1, 0.3 */
    add_rec(&d, "linear_bias:m=16,k=8,n=8", "cpu.x", 2, (double[]){1.1, 1.3}, (double[]){1.0, 1.0}, FC_DECIDE_YES, 1.15,
            1.25);
    /* c: loses, 1 x (1 - 2) = -1 ms, not fused */
    add_rec(&d, "linear_bias:m=32,k=8,n=8", "cpu.x", 2, (double[]){1.0, 1.0}, (double[]){1.9, 2.1}, FC_DECIDE_NO, 0.45,
            0.55);
    /* d: not measured on cpu.x; on cpu.y only */
    add_rec(&d, "linear_bias:m=64,k=8,n=8", "cpu.y", 2, (double[]){2.0, 2.0}, (double[]){1.0, 1.0}, FC_DECIDE_YES, 1.9,
            2.1);
    /* e: launch-bound, decided on the graph replays: 1.0 against 0.7 there (saves 0.3
     * ms), 3.0 against 1.0 eager; its rounds' medians are eager ones */
    add_rec(&d, "linear_bias:m=128,k=8,n=8", "cpu.x", 2, (double[]){3.0, 3.0}, (double[]){1.0, 1.0}, FC_DECIDE_YES, 2.8,
            3.2);
    fc_record *g = &d.rec[d.n - 1];
    g->decided_by = FC_DECIDER_GRAPH;
    g->has_graph_speedup = g->v[FC_UNFUSED].has_graph = g->v[FC_FUSED].has_graph = true;
    g->v[FC_UNFUSED].lat_graph.median = 1.0;
    g->v[FC_FUSED].lat_graph.median = 0.7;
    g->speedup_graph = (fc_ratio_ci){.ratio = 1 / 0.7, .lo = 1.2, .hi = 1.7};
    fc_netsum *s;
    int n = fc_netsum_build(&net, &d, &s);
    CHECK(n == 2);
    CHECK(!strcmp(s[0].backend, "cpu.x") && !strcmp(s[1].backend, "cpu.y"));
    CHECK(s[0].sites == 5 && s[0].measured == 4 && s[0].fuse == 3 && s[0].losing == 1);
    /* the latencies of the timing that decided: e's graph replays' */
    CHECK_NEAR(s[0].unfused_ms, 4 * 1.0 + 2 * 1.2 + 1 * 1.0 + 1 * 1.0, 1e-12);
    CHECK_NEAR(s[0].saving_ms, 2.0 + 0.4 + 0.3, 1e-12);
    /* a's interval: its rounds' 4 x t(2) x 0.1/sqrt(3), and the run-level part 4 x 0.5 (fused) x 1.96 x run_noise */
    double ha = 4 * fc_t975(2) * 0.1 / sqrt(3), ra = 4 * 0.5 * z * rn;
    CHECK(s[0].s[0].site == 0);
    CHECK_NEAR(s[0].s[0].hi - s[0].s[0].saving_ms, sqrt(ha * ha + ra * ra), 1e-9);
    /* the total: a's and b's savings pass by pass over b's 2 rounds, 4 x 0.4 + 2 x 0.1 =
     * 1.8 and 4 x 0.5 + 2 x 0.3 = 2.6 (sd 0.566), t(1) x sd/sqrt(2); their run-level parts
     * (4 x 0.5 and 2 x 1.0, x 1.96 x run_noise) correlated 0.05; e's bounds (from its
     * graph speedup) in quadrature */
    double hp = fc_t975(1) * sqrt(0.32) / sqrt(2), a1 = 4 * 0.5 * z * rn, a2 = 2 * 1.0 * z * rn;
    double run2 = 0.95 * (a1 * a1 + a2 * a2) + 0.05 * (a1 + a2) * (a1 + a2);
    double elo = 0.3 - (1 - 1 / 1.2), ehi = (1 - 1 / 1.7) - 0.3;
    CHECK_NEAR(s[0].saving_ms - s[0].saving_lo, sqrt(hp * hp + run2 + elo * elo), 1e-9);
    CHECK_NEAR(s[0].saving_hi - s[0].saving_ms, sqrt(hp * hp + run2 + ehi * ehi), 1e-9);
    /* largest saving first, the unmeasured last */
    CHECK(s[0].s[1].site == 1 && s[0].s[2].site == 4 && s[0].s[3].site == 2 && s[0].s[4].rec == NULL);
    CHECK_NEAR(s[0].s[2].saving_ms, 0.3, 1e-12);
    CHECK_NEAR(s[0].s[3].saving_ms, -1.0, 1e-12);
    CHECK(s[1].measured == 1 && s[1].fuse == 1);
    CHECK_NEAR(s[1].saving_ms, 1.0, 1e-12);

    /* with its rounds' graph speedups (1.25 and 1.6), e's rounds say: its per-round
     * savings are 1.0 (graph unfused) x (1 - 1/q), 0.2 and 0.375, and join the passes */
    {
        g->round[0].ratio_graph = 1.25;
        g->round[1].ratio_graph = 1.6;
        fc_netsum *s2;
        CHECK(fc_netsum_build(&net, &d, &s2) == 2);
        CHECK_NEAR(s2[0].saving_ms, 2.7, 1e-12);
        const fc_netsum_site *es = NULL;
        for (int i = 0; i < s2[0].sites; i++)
            if (s2[0].s[i].site == 4) es = &s2[0].s[i];
        CHECK(es != NULL);
        double he = fc_t975(1) * (0.375 - 0.2) / 2, re = 1 * 0.7 * z * rn;
        CHECK_NEAR(es->hi - es->saving_ms, sqrt(he * he + re * re), 1e-9);
        CHECK_NEAR(es->saving_ms - es->lo, sqrt(he * he + re * re), 1e-9);
        /* passes: 4 x 0.4 + 2 x 0.1 + 0.2 = 2.0 and 4 x 0.5 + 2 x 0.3 + 0.375 = 2.975 */
        double hp2 = fc_t975(1) * (2.975 - 2.0) / 2, a3 = 1 * 0.7 * z * rn;
        double run3 = 0.95 * (a1 * a1 + a2 * a2 + a3 * a3) + 0.05 * (a1 + a2 + a3) * (a1 + a2 + a3);
        CHECK_NEAR(s2[0].saving_hi - s2[0].saving_ms, sqrt(hp2 * hp2 + run3), 1e-9);
        CHECK_NEAR(s2[0].saving_ms - s2[0].saving_lo, sqrt(hp2 * hp2 + run3), 1e-9);
        fc_netsum_free(s2, 2);
        g->round[0].ratio_graph = g->round[1].ratio_graph = 0;
    }

    cJSON *j = fc_netsum_json(&net, s, n);
    const cJSON *sum0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "summaries"), 0);
    const cJSON *losing = cJSON_GetObjectItemCaseSensitive(sum0, "losing");
    CHECK(cJSON_GetArraySize(losing) == 1);
    CHECK(!strcmp(cJSON_GetArrayItem(losing, 0)->valuestring, "linear_bias:m=32,k=8,n=8,dtype=fp32"));
    CHECK(fc_json_num(j, "runs_per_inference", 0) == 9);
    /* each site's times are those its saving is of: e's graph replays' */
    const cJSON *e_site = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sum0, "per_site"), 2);
    CHECK(!strcmp(fc_json_str(e_site, "problem", ""), "linear_bias:m=128,k=8,n=8,dtype=fp32"));
    CHECK_NEAR(fc_json_num(e_site, "unfused_ms", 0), 1.0, 1e-12);
    CHECK_NEAR(fc_json_num(e_site, "fused_ms", 0), 0.7, 1e-12);
    CHECK_NEAR(fc_json_num(sum0, "unfused_ms", 0), 8.4, 1e-12);
    /* the block is what the calibration schema's $defs/network describes */
    cJSON *schema = fc_json_embedded("schemas/calibration.schema.json");
    cJSON *sub = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(schema, "$defs"),
                                                                  "network"),
                                 1);
    cJSON_AddItemToObject(sub, "$defs", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(schema, "$defs"), 1));
    CHECK_MSG(fc_schema_validate(sub, j, &e) == 0, "%s", e.msg);
    cJSON_Delete(sub);
    cJSON_Delete(schema);
    cJSON_Delete(j);
    fc_netsum_free(s, n);
    fc_doc_free(&d);
    fc_network_free(&net);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(every_embedded_network_loads), T(resnet50_sites),    T(llama3_sites),  T(rescale_batch_and_seq),
        T(merges_identical_sites),       T(refuses_bad_files), T(retype_merges), T(summary_on_synthetic_records),
    };
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
