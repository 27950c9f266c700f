/* cmd_run.c — `fusecal run`: build a plan from the options, measure it, write
 * records after every problem. */
#include "catalog.h"
#include "builtin.h"
#include "calibrate.h"
#include "cmd.h"
#include "format.h"
#include "host.h"
#include "jsonfile.h"
#include "progress.h"
#include "select.h"
#include "signals.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char run_help[] =
    "usage: fusecal run [options]\n"
    "\n"
    "Measures each problem's unfused chain against its fused form, paired and\n"
    "interleaved, verifies both against a float64 reference, and writes records.\n"
    "\n"
    "what to measure:\n"
    "  --pattern P[,P...]|all   patterns (default all); see 'fusecal list patterns'\n"
    "  --device cpu|cuda|all    devices (default cpu)\n"
    "  --backend NAME[,NAME]    backends (default: every usable one on the devices)\n"
    "  --dtype T[,T...]         fp32, tf32, bf16, fp16 (default: the sweep's, fp32)\n"
    "  --shape k=v,...          dims for the chosen patterns, or a whole problem string\n"
    "                           'conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1';\n"
    "                           repeatable; replaces the sweep\n"
    "  --sweep NAME|FILE        quick, standard, full, or a sweep file (default quick)\n"
    "  --layout nchw|nhwc       activation layout of conv problems (default: the sweep's)\n"
    "\n"
    "how to measure:\n"
    "  --cache warm|cold        resident data, or a flushed cache before every sample\n"
    "  --threads N              host threads for BLAS, oneDNN and fusecal (default: cores)\n"
    "  --threshold X            fuse when the speedup CI is above X (default: catalogue, 1.1)\n"
    "  --min-samples N          stopping rule: at least N samples per variant (10)\n"
    "  --min-time S             ... and at least S seconds of samples (0.5)\n"
    "  --max-noise X            ... until the relative stdev is at most X (0.005)\n"
    "  --max-time S             ... or S seconds per variant at most (15)\n"
    "  --rounds N               fresh setups per problem (default 3): the stopping budget is\n"
    "                           split among them and the speedup's interval covers what\n"
    "                           changes between setups (buffer placement, algorithms)\n"
    "  --no-graph               on CUDA, skip the graph-replay timing\n"
    "  --seed N                 inputs and sample order (default: from the clock)\n"
    "  --max-memory BYTES       skip problems needing more (suffixes K, M, G)\n"
    "  --max-time-total S       stop the sweep after S seconds (records so far are kept)\n"
    "\n"
    "output:\n"
    "  --out FILE               where records go (default fusecal-<time>.json)\n"
    "  --format json|jsonl|csv|md  (default: from --out's extension, json)\n"
    "  --quiet                  no table or progress\n"
    "  --dry-run                print the plan and exit\n"
    "  --resume FILE            finish an interrupted calibration: re-run FILE's command,\n"
    "                           skipping the problems it holds, writing to FILE\n"
    "  --append FILE            add this run's problems to FILE (those it holds are skipped)\n"
    "                           --resume and --append refuse a FILE of other settings or host\n"
    "\n"
    "exit status: 0 all records ok, 1 a record failed (verification, setup, run),\n"
    "2 bad usage or input, 130 interrupted (records so far written, complete=false).\n";

#define MAX_LIST 64

typedef struct run_opts {
    const char *patterns[MAX_LIST];
    int npatterns;
    const char *backends[MAX_LIST];
    int nbackends;
    const char *dtypes[MAX_LIST];
    int ndtypes;
    const char *shapes[MAX_LIST];
    int nshapes;
    const char *device, *sweep, *layout, *out, *format, *resume, *append;
    bool quiet, dry_run;
    fc_settings set;
    bool seed_set;
    unsigned stop_set;
} run_opts;

enum {
    OPT_PATTERN = 256, OPT_DEVICE, OPT_BACKEND, OPT_DTYPE, OPT_SHAPE, OPT_SWEEP, OPT_LAYOUT, OPT_CACHE, OPT_THREADS,
    OPT_THRESHOLD, OPT_MIN_SAMPLES, OPT_MIN_TIME, OPT_MAX_NOISE, OPT_MAX_TIME, OPT_NO_GRAPH, OPT_SEED,
    OPT_MAX_MEMORY, OPT_MAX_TIME_TOTAL, OPT_OUT, OPT_FORMAT, OPT_QUIET, OPT_DRY_RUN, OPT_RESUME, OPT_APPEND,
    OPT_ROUNDS,
};

static const struct option long_opts[] = {
    {"pattern", required_argument, 0, OPT_PATTERN},       {"device", required_argument, 0, OPT_DEVICE},
    {"backend", required_argument, 0, OPT_BACKEND},       {"dtype", required_argument, 0, OPT_DTYPE},
    {"shape", required_argument, 0, OPT_SHAPE},           {"sweep", required_argument, 0, OPT_SWEEP},
    {"layout", required_argument, 0, OPT_LAYOUT},         {"cache", required_argument, 0, OPT_CACHE},
    {"threads", required_argument, 0, OPT_THREADS},       {"threshold", required_argument, 0, OPT_THRESHOLD},
    {"min-samples", required_argument, 0, OPT_MIN_SAMPLES}, {"min-time", required_argument, 0, OPT_MIN_TIME},
    {"max-noise", required_argument, 0, OPT_MAX_NOISE},   {"max-time", required_argument, 0, OPT_MAX_TIME},
    {"no-graph", no_argument, 0, OPT_NO_GRAPH},           {"seed", required_argument, 0, OPT_SEED},
    {"max-memory", required_argument, 0, OPT_MAX_MEMORY}, {"max-time-total", required_argument, 0, OPT_MAX_TIME_TOTAL},
    {"out", required_argument, 0, OPT_OUT},               {"format", required_argument, 0, OPT_FORMAT},
    {"quiet", no_argument, 0, OPT_QUIET},                 {"dry-run", no_argument, 0, OPT_DRY_RUN},
    {"resume", required_argument, 0, OPT_RESUME},         {"append", required_argument, 0, OPT_APPEND},
    {"rounds", required_argument, 0, OPT_ROUNDS},
    {"help", no_argument, 0, 'h'},                        {0, 0, 0, 0},
};

/* Strings the options point into, freed when the command returns. */
static char *owned[4 * MAX_LIST + 64];
static int nowned;

static char *own(char *s)
{
    if (nowned < (int)FC_ARRAY_LEN(owned)) owned[nowned++] = s;
    return s;
}

static void free_owned(void)
{
    while (nowned) free(owned[--nowned]);
}

/* Splits "a,b,c" into list entries (pointing into a copy owned until the end). */
static int add_list(const char **list, int *n, const char *arg, const char *opt, bool split)
{
    if (nowned >= (int)FC_ARRAY_LEN(owned)) return fc_usage_error("too many options");
    char *copy = own(fc_xstrdup(arg));
    char *save = NULL;
    if (!split) {
        if (*n >= MAX_LIST) return fc_usage_error("too many %s options", opt);
        list[(*n)++] = copy;
        return 0;
    }
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= MAX_LIST) return fc_usage_error("too many values for %s", opt);
        list[(*n)++] = t;
    }
    if (!arg[0]) return fc_usage_error("empty value for %s", opt);
    return 0;
}

static int num_opt(const char *opt, const char *arg, double lo, double hi, double *out)
{
    double v = 0;
    if (!fc_parse_double(arg, &v) || v < lo || v > hi)
        return fc_usage_error("bad value for %s: '%s' (expected a number in %g..%g)", opt, arg, lo, hi);
    *out = v;
    return 0;
}

static int bytes_opt(const char *opt, const char *arg, double *out)
{
    char buf[64];
    fc_strlcpy(buf, arg, sizeof buf);
    size_t l = strlen(buf);
    double mul = 1;
    if (l && strchr("KkMmGgTt", buf[l - 1])) {
        char c = (char)(buf[l - 1] | 0x20);
        mul = c == 'k' ? 1024.0 : c == 'm' ? 1048576.0 : c == 'g' ? 1073741824.0 : 1099511627776.0;
        buf[l - 1] = 0;
    }
    double v = 0;
    if (!fc_parse_double(buf, &v) || v <= 0) return fc_usage_error("bad value for %s: '%s' (expected bytes, e.g. 8G)", opt, arg);
    *out = v * mul;
    return 0;
}

static int parse_opts(int argc, char **argv, run_opts *o)
{
    memset(o, 0, sizeof *o);
    fc_settings_defaults(&o->set);
    o->device = NULL;
    optind = 1;
    opterr = 0;
    int c;
    double v = 0;
    while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case OPT_PATTERN: rc = add_list(o->patterns, &o->npatterns, optarg, "--pattern", true); break;
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_BACKEND: rc = add_list(o->backends, &o->nbackends, optarg, "--backend", true); break;
        case OPT_DTYPE: rc = add_list(o->dtypes, &o->ndtypes, optarg, "--dtype", true); break;
        case OPT_SHAPE: rc = add_list(o->shapes, &o->nshapes, optarg, "--shape", false); break;
        case OPT_SWEEP: o->sweep = optarg; break;
        case OPT_LAYOUT: o->layout = optarg; break;
        case OPT_CACHE:
            if (strcmp(optarg, "warm") && strcmp(optarg, "cold"))
                return fc_usage_error("unknown cache mode '%s' (valid: warm, cold)", optarg);
            o->set.cold = !strcmp(optarg, "cold");
            break;
        case OPT_THREADS:
            if ((rc = num_opt("--threads", optarg, 1, 4096, &v)) == 0) {
                if (v != floor(v)) return fc_usage_error("bad value for --threads: '%s' (expected an integer)", optarg);
                o->set.threads = (int)v;
            }
            break;
        case OPT_THRESHOLD: rc = num_opt("--threshold", optarg, 1e-6, 1e6, &o->set.threshold); break;
        case OPT_MIN_SAMPLES:
            if ((rc = num_opt("--min-samples", optarg, 2, 1e6, &v)) == 0) {
                o->set.stop.min_samples = (int)v;
                o->stop_set |= FC_STOP_MIN_SAMPLES;
            }
            break;
        case OPT_MIN_TIME:
            if ((rc = num_opt("--min-time", optarg, 0, 86400, &o->set.stop.min_time)) == 0) o->stop_set |= FC_STOP_MIN_TIME;
            break;
        case OPT_MAX_NOISE:
            if ((rc = num_opt("--max-noise", optarg, 0, 10, &o->set.stop.max_noise)) == 0) o->stop_set |= FC_STOP_MAX_NOISE;
            break;
        case OPT_MAX_TIME:
            if ((rc = num_opt("--max-time", optarg, 1e-3, 86400, &o->set.stop.max_time)) == 0) o->stop_set |= FC_STOP_MAX_TIME;
            break;
        case OPT_NO_GRAPH: o->set.graph = false; break;
        case OPT_SEED: {
            int64_t s;
            if (!fc_parse_i64(optarg, &s) || s < 0) return fc_usage_error("bad value for --seed: '%s' (expected a non-negative integer)", optarg);
            o->set.seed = (uint64_t)s;
            o->seed_set = true;
            break;
        }
        case OPT_MAX_MEMORY: rc = bytes_opt("--max-memory", optarg, &o->set.max_memory); break;
        case OPT_ROUNDS:
            if ((rc = num_opt("--rounds", optarg, 1, FC_MAX_ROUNDS, &v)) == 0) {
                if (v != floor(v)) return fc_usage_error("bad value for --rounds: '%s' (expected an integer)", optarg);
                o->set.rounds = (int)v;
            }
            break;
        case OPT_MAX_TIME_TOTAL: rc = num_opt("--max-time-total", optarg, 1e-3, 1e7, &o->set.max_time_total); break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_FORMAT: o->format = optarg; break;
        case OPT_QUIET: o->quiet = true; break;
        case OPT_DRY_RUN: o->dry_run = true; break;
        case OPT_RESUME: o->resume = optarg; break;
        case OPT_APPEND: o->append = optarg; break;
        case 'h': fputs(run_help, stdout); return -1;
        case ':': return fc_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return fc_usage_error("unknown option '%s' (see 'fusecal run --help')", argv[optind - 1]);
        }
        if (rc) return rc;
    }
    if (optind < argc) return fc_usage_error("unexpected argument '%s' (see 'fusecal run --help')", argv[optind]);
    if ((o->stop_set & FC_STOP_MIN_TIME) && (o->stop_set & FC_STOP_MAX_TIME) && o->set.stop.min_time > o->set.stop.max_time)
        return fc_usage_error("--min-time %g is more than --max-time %g", o->set.stop.min_time, o->set.stop.max_time);
    return 0;
}

/* ------------------------------------------------------------------ the plan */

typedef struct selection {
    bool pattern[FC_NPATTERNS];
    bool explicit_patterns;
    fc_dtype dtypes[FC_NDTYPES];
    int ndtypes;
    const fc_backend *backends[FC_NBACKENDS];
    int nbackends;
} selection;

static int select_patterns(const run_opts *o, selection *s)
{
    if (o->npatterns == 0) {
        for (int i = 0; i < FC_NPATTERNS; i++) s->pattern[i] = true;
        return 0;
    }
    s->explicit_patterns = true;
    for (int i = 0; i < o->npatterns; i++) {
        if (!strcmp(o->patterns[i], "all")) {
            for (int j = 0; j < FC_NPATTERNS; j++) s->pattern[j] = true;
            s->explicit_patterns = false;
            continue;
        }
        const fc_pattern *p = fc_pattern_find(o->patterns[i]);
        if (!p) return fc_usage_error("unknown pattern '%s' (valid: %s, all)", o->patterns[i], fc_pattern_names());
        s->pattern[p->id] = true;
    }
    return 0;
}

static void progress_note(void *ctx, const char *msg) { fc_progress_note(ctx, "fusecal: note: %s", msg); }

static int select_backends(const run_opts *o, selection *s, fc_progress *pg)
{
    fc_err e;
    bool on[FC_NDEVICES];
    if (fc_select_devices(&fc_builtin, o->device, "cpu", on, progress_note, pg, &e) != 0 ||
        fc_select_backends(&fc_builtin, on, o->device != NULL, o->backends, o->nbackends, s->backends, &s->nbackends,
                           progress_note, pg, &e) != 0)
        return fc_usage_error("%s", e.msg);
    return 0;
}

static int select_dtypes(const run_opts *o, selection *s)
{
    for (int i = 0; i < o->ndtypes; i++) {
        fc_dtype d;
        if (fc_dtype_parse(o->dtypes[i], &d) != 0)
            return fc_usage_error("unknown dtype '%s' (valid: fp32, tf32, bf16, fp16)", o->dtypes[i]);
        bool dup = false;
        for (int j = 0; j < s->ndtypes; j++) dup |= s->dtypes[j] == d;
        if (!dup) s->dtypes[s->ndtypes++] = d;
    }
    return 0;
}

/* Problems from --shape: a whole problem string, or k=v applied to every selected
 * pattern whose family has all the keys. */
static int shape_problems(const run_opts *o, const selection *s, fc_sweep *sw)
{
    fc_err e;
    for (int i = 0; i < o->nshapes; i++) {
        const char *sh = o->shapes[i];
        int made = 0;
        if (strchr(sh, ':')) {
            fc_problem p;
            if (fc_problem_parse(sh, NULL, &p, &e) != 0) return fc_usage_error("bad --shape '%s': %s", sh, e.msg);
            if (s->explicit_patterns && !s->pattern[p.pat->id])
                return fc_usage_error("--shape '%s' names pattern '%s', which --pattern leaves out", sh, p.pat->name);
            sw->prob = fc_xrealloc(sw->prob, (size_t)(sw->n + 1) * sizeof *sw->prob);
            sw->prob[sw->n++] = p;
            continue;
        }
        char first_err[512] = "";
        for (int pi = 0; pi < FC_NPATTERNS; pi++) {
            if (!s->pattern[pi]) continue;
            char spec[1024];
            snprintf(spec, sizeof spec, "%s:%s", fc_patterns[pi].name, sh);
            fc_problem p;
            if (fc_problem_parse(spec, &fc_patterns[pi], &p, &e) != 0) {
                /* a key of another family: this pattern is not meant */
                if (strstr(e.msg, "unknown dimension")) {
                    if (!first_err[0]) fc_strlcpy(first_err, e.msg, sizeof first_err);
                    continue;
                }
                return fc_usage_error("bad --shape '%s': %s", sh, e.msg);
            }
            sw->prob = fc_xrealloc(sw->prob, (size_t)(sw->n + 1) * sizeof *sw->prob);
            sw->prob[sw->n++] = p;
            made++;
        }
        if (!made) return fc_usage_error("bad --shape '%s': %s", sh, first_err[0] ? first_err : "no pattern selected");
    }
    return 0;
}

/* An explicit problem that cannot fit in host memory is a usage error, found
 * before anything is allocated (sweep problems are skipped at run time instead). */
static int check_fits(const fc_problem *p, double max_memory)
{
    fc_err e;
    size_t need;
    char ps[256];
    fc_problem_string(p, ps, sizeof ps);
    if (fc_problem_host_bytes(p, &need, &e) != 0) return fc_usage_error("bad --shape '%s': %s", ps, e.msg);
    double avail = (double)fc_host_mem_available();
    if (max_memory > 0 && max_memory < avail) avail = max_memory;
    if ((double)need > avail)
        return fc_usage_error("problem '%s' needs %.2f GiB of host memory, %.2f GiB %s", ps, (double)need / (1 << 30),
                              avail / (1 << 30), max_memory > 0 && max_memory <= avail ? "allowed by --max-memory" : "available");
    return 0;
}

static int build_plan(run_opts *o, fc_plan *plan, fc_sweep *sw, fc_progress *pg)
{
    selection s = {0};
    fc_err e;
    if (select_patterns(o, &s) || select_dtypes(o, &s) || select_backends(o, &s, pg)) return FC_EXIT_USAGE;
    fc_layout layout = FC_LAYOUT_NONE;
    if (o->layout && fc_layout_parse(o->layout, &layout) != 0)
        return fc_usage_error("unknown layout '%s' (valid: nchw, nhwc)", o->layout);
    if (o->nshapes && o->sweep) return fc_usage_error("--shape and --sweep exclude each other");
    if (o->nshapes) {
        memset(sw, 0, sizeof *sw);
        fc_strlcpy(sw->name, "custom", sizeof sw->name);
        if (shape_problems(o, &s, sw) != 0) return FC_EXIT_USAGE;
        for (int i = 0; i < sw->n; i++)
            if (check_fits(&sw->prob[i], o->set.max_memory) != 0) return FC_EXIT_USAGE;
    } else {
        const char *name = o->sweep ? o->sweep : "quick";
        if (fc_sweep_load(name, sw, &e) != 0) return fc_usage_error("%s", e.msg);
    }
    fc_strlcpy(o->set.sweep, sw->name, sizeof o->set.sweep);
    /* stopping rule: defaults < sweep < command line */
    fc_stop cli = o->set.stop;
    fc_stop_defaults(&o->set.stop);
    fc_sweep_apply_stop(sw, &o->set.stop, &o->set.target_sample);
    if (o->stop_set & FC_STOP_MIN_SAMPLES) o->set.stop.min_samples = cli.min_samples;
    if (o->stop_set & FC_STOP_MIN_TIME) o->set.stop.min_time = cli.min_time;
    if (o->stop_set & FC_STOP_MAX_NOISE) o->set.stop.max_noise = cli.max_noise;
    if (o->stop_set & FC_STOP_MAX_TIME) o->set.stop.max_time = cli.max_time;
    if (o->set.stop.min_time > o->set.stop.max_time) o->set.stop.min_time = o->set.stop.max_time;

    int unsupported = 0;
    char first_unsupported[512] = "";
    for (int i = 0; i < sw->n; i++) {
        fc_problem base = sw->prob[i];
        if (!s.pattern[base.pat->id]) continue;
        if (layout != FC_LAYOUT_NONE && fc_family_of(base.pat)->has_layout) base.layout = layout;
        int nd = s.ndtypes ? s.ndtypes : 1;
        for (int di = 0; di < nd; di++) {
            fc_problem p = base;
            if (s.ndtypes) p.dtype = s.dtypes[di];
            double th = o->set.threshold > 0 ? o->set.threshold
                        : sw->threshold[p.pat->id] > 0 ? sw->threshold[p.pat->id]
                                                        : fc_catalog_threshold(p.pat);
            for (int bi = 0; bi < s.nbackends; bi++) {
                char why[256] = "";
                if (!s.backends[bi]->supports(&p, why, sizeof why)) {
                    char ps[256];
                    fc_problem_string(&p, ps, sizeof ps);
                    if (!unsupported++)
                        snprintf(first_unsupported, sizeof first_unsupported, "%s on %s: %s", ps,
                                 s.backends[bi]->name, why);
                    else if (o->nbackends || s.explicit_patterns)
                        fc_progress_note(pg, "fusecal: note: not measured: %s on %s: %s", ps, s.backends[bi]->name, why);
                    continue;
                }
                fc_plan_add(plan, &p, s.backends[bi], th);
            }
        }
    }
    /* family order (linear, conv, attention), sweep order within a family */
    for (int i = 1; i < plan->n; i++) {
        fc_job j = plan->jobs[i];
        int k = i - 1;
        while (k >= 0 && plan->jobs[k].prob.pat->family > j.prob.pat->family) {
            plan->jobs[k + 1] = plan->jobs[k];
            k--;
        }
        plan->jobs[k + 1] = j;
    }
    if (plan->n == 0) {
        if (unsupported)
            return fc_usage_error("nothing to measure: %s%s", first_unsupported,
                                  unsupported > 1 ? " (and more: see 'fusecal list backends')" : "");
        return fc_usage_error("nothing to measure: the selection holds no problem");
    }
    if (unsupported && (o->nbackends || s.explicit_patterns))
        fc_progress_note(pg, "fusecal: note: not measured: %s", first_unsupported);
    return 0;
}

/* ------------------------------------------------------------------ output */

typedef struct writer {
    double t0, base; /* start of this run; time already spent by the runs it continues */
    const char *path;
    fc_format fmt;
    fc_progress *pg;
    fc_err err;
} writer;

static int write_doc(writer *w, fc_doc *d)
{
    d->elapsed_s = w->base + (fc_now() - w->t0);
    char *text = fc_format_doc(d, w->fmt);
    int rc = fc_write_file_atomic(w->path, text, strlen(text), &w->err);
    free(text);
    return rc;
}

static void on_start(void *ctx, int i, int n, const fc_job *job)
{
    writer *w = ctx;
    fc_progress_start(w->pg, i, n, job);
}

static int on_record(void *ctx, int i, int n, const fc_doc *d, const fc_record *r)
{
    writer *w = ctx;
    fc_progress_record(w->pg, i, n, r);
    if (write_doc(w, (fc_doc *)d) != 0) {
        fc_progress_end(w->pg);
        fprintf(stderr, "fusecal: error: %s\n", w->err.msg);
        return -1;
    }
    return 0;
}

static void default_out(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "fusecal-%Y%m%d-%H%M%S.json", &tm);
}

/* Re-reads the options of the command that made a document (its argv). */
static int replay_opts(const fc_doc *prev, const char *path, run_opts *o)
{
    int n = cJSON_GetArraySize(prev->argv);
    if (n < 2) return fc_usage_error("cannot resume '%s': it records no command line", path);
    char **args = fc_xcalloc((size_t)n, sizeof *args);
    int k = 0;
    for (int i = 1; i < n; i++) { /* drop "fusecal" */
        const cJSON *a = cJSON_GetArrayItem(prev->argv, i);
        if (!cJSON_IsString(a)) break;
        if (nowned >= (int)FC_ARRAY_LEN(owned)) break;
        args[k++] = own(fc_xstrdup(a->valuestring)); /* options point into them */
    }
    int rc = parse_opts(k, args, o);
    free(args);
    if (rc) return fc_usage_error("cannot resume '%s': its command line does not parse", path);
    return 0;
}

/* Drops the jobs whose (problem, backend) the document already holds. */
static int drop_measured(fc_plan *plan, const fc_doc *prev)
{
    int kept = 0;
    for (int i = 0; i < plan->n; i++) {
        char ps[256];
        fc_problem_string(&plan->jobs[i].prob, ps, sizeof ps);
        bool done = false;
        for (int r = 0; r < prev->n && !done; r++)
            done = !strcmp(prev->rec[r].problem, ps) && !strcmp(prev->rec[r].backend, plan->jobs[i].backend->name);
        if (!done) plan->jobs[kept++] = plan->jobs[i];
    }
    int dropped = plan->n - kept;
    plan->n = kept;
    return dropped;
}

static void print_summary(fc_progress *pg, const fc_doc *doc, const char *out, bool quiet, int *failed_out)
{
    int failed = 0, skipped = 0, fallbacks = 0, untrusted = 0, dec[3] = {0, 0, 0};
    for (int i = 0; i < doc->n; i++) {
        const fc_record *r = &doc->rec[i];
        failed += r->status == FC_STATUS_FAILED;
        skipped += r->status == FC_STATUS_SKIPPED;
        if (r->status == FC_STATUS_OK) dec[r->decision]++;
        for (int v = 0; v < FC_NVARIANTS; v++) {
            if (r->v[v].impl.fallback) {
                fallbacks++;
                fc_progress_note(pg, "fusecal: warning: %s %s %s ran a fallback: %s", r->backend, r->problem,
                                 fc_variant_name((fc_variant)v), r->v[v].impl.fallback_why);
            }
            if (r->status == FC_STATUS_OK && !r->v[v].check.trusted) untrusted++;
        }
        if (r->throttled) fc_progress_note(pg, "fusecal: warning: %s on %s: clocks dropped during the problem", r->problem, r->backend);
    }
    if (!quiet) {
        fc_print_table(stdout, doc);
        fflush(stdout);
    }
    fc_progress_note(pg, "fusecal: wrote %d records to %s (%d ok, %d failed, %d skipped%s); fuse: %d yes, %d no, %d inconclusive%s%s",
                     doc->n, out, doc->n - failed - skipped, failed, skipped, doc->complete ? "" : ", INCOMPLETE",
                     dec[FC_DECIDE_YES], dec[FC_DECIDE_NO], dec[FC_DECIDE_INCONCLUSIVE],
                     fallbacks ? "; fallback implementations flagged" : "", untrusted ? "; untrusted outputs flagged" : "");
    *failed_out = failed;
}

/* Warnings about the machine's state, recorded in the host block too. */
static void environment_guards(fc_progress *pg, const fc_settings *set, const cJSON *host)
{
    int cores = fc_online_cpus();
    if (set->threads > cores)
        fc_progress_note(pg, "fusecal: warning: %d threads on %d cores: threads will share cores", set->threads, cores);
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(host, "loadavg");
    if (cJSON_IsNumber(cJSON_GetArrayItem(la, 0)) && cJSON_GetArrayItem(la, 0)->valuedouble > 0.5 * cores)
        fc_progress_note(pg, "fusecal: warning: load average %.2f on %d cores: other work will add noise",
                         cJSON_GetArrayItem(la, 0)->valuedouble, cores);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(host, "devices"), "cpu");
    const char *gov = fc_json_str(cpu, "governor", "unknown");
    if (strcmp(gov, "performance") && strcmp(gov, "unknown"))
        fc_progress_note(pg, "fusecal: warning: CPU frequency governor is '%s', not 'performance': clocks may vary", gov);
}

static int run_command(int argc, char **argv);

int cmd_run(int argc, char **argv)
{
    int rc = run_command(argc, argv);
    free_owned();
    return rc;
}

static int run_command(int argc, char **argv)
{
    run_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc < 0) return FC_EXIT_OK; /* --help */
    if (rc) return rc;
    const double t_start = fc_now();
    fc_progress pg;
    fc_progress_init(&pg, stderr, o.quiet);
    fc_err e;
    /* from here on an interrupt stops the run cleanly (also while ceilings are measured) */
    fc_signals_install();

    /* --resume / --append: the document to continue */
    fc_doc prev;
    bool have_prev = false;
    const char *prev_path = o.resume ? o.resume : o.append;
    if (o.resume && o.append) return fc_usage_error("--resume and --append exclude each other");
    if (prev_path) {
        if (fc_doc_load(prev_path, &prev, &e) != 0) return fc_usage_error("cannot continue '%s': %s", prev_path, e.msg);
        have_prev = true;
        if (o.resume) {
            if (o.npatterns || o.nbackends || o.nshapes || o.ndtypes || o.sweep || o.device || o.layout || o.seed_set ||
                o.stop_set || o.out) {
                fc_doc_free(&prev);
                return fc_usage_error("--resume re-runs the command recorded in '%s': give no other measuring options",
                                      prev_path);
            }
            run_opts again;
            if (replay_opts(&prev, prev_path, &again) != 0) {
                fc_doc_free(&prev);
                return FC_EXIT_USAGE;
            }
            again.quiet = o.quiet;
            again.dry_run = o.dry_run;
            if (o.set.max_time_total > 0) again.set.max_time_total = o.set.max_time_total;
            again.resume = o.resume;
            again.append = NULL;
            o = again;
            o.format = NULL;
        }
        o.out = prev_path;
        if (!o.seed_set) {
            o.set.seed = prev.settings.seed;
            o.seed_set = true;
        }
    }

    fc_plan plan = {0};
    fc_sweep sw = {0};
    fc_session ses = {0};
    fc_doc doc;
    fc_doc_init(&doc);
    if ((rc = build_plan(&o, &plan, &sw, &pg)) != 0) goto done;

    char outbuf[256];
    const char *out = o.out;
    if (!out) {
        default_out(outbuf, sizeof outbuf);
        out = outbuf;
    }
    fc_format fmt = fc_format_for_path(out);
    if (o.format && fc_format_parse(o.format, &fmt) != 0) {
        rc = fc_usage_error("unknown format '%s' (valid: json, jsonl, csv, md)", o.format);
        goto done;
    }
    if (have_prev && fmt != FC_FMT_JSON) {
        rc = fc_usage_error("--resume and --append continue a JSON document; '%s' is not one", out);
        goto done;
    }
    if (fc_check_writable(out, &e) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &e);
        goto done;
    }
    if (!o.seed_set) o.set.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (!o.set.threads) o.set.threads = fc_online_cpus();
    if (have_prev) {
        char why[256];
        if (!fc_settings_compatible(&o.set, &prev.settings, why, sizeof why)) {
            rc = fc_usage_error("cannot continue '%s': its settings differ: %s", prev_path, why);
            goto done;
        }
        int dropped = drop_measured(&plan, &prev);
        fc_progress_note(&pg, "fusecal: '%s' holds %d records; %d of this run's problems already measured, %d to go",
                         prev_path, prev.n, dropped, plan.n);
    }

    if (o.dry_run) {
        for (int i = 0; i < plan.n; i++) {
            char ps[256];
            fc_problem_string(&plan.jobs[i].prob, ps, sizeof ps);
            printf("%-14s %s (threshold %.3g)\n", plan.jobs[i].backend->name, ps, plan.jobs[i].threshold);
        }
        printf("%d problems x backends; sweep %s; stop: min %d samples, min %.3gs, noise <= %.3g, max %.3gs\n", plan.n,
               o.set.sweep, o.set.stop.min_samples, o.set.stop.min_time, o.set.stop.max_noise, o.set.stop.max_time);
        rc = FC_EXIT_OK;
        goto done;
    }

    if (fc_session_open(&ses, &fc_builtin, &plan, &o.set, &e) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &e);
        goto done;
    }
    fc_progress_note(&pg, "fusecal: measuring this machine's ceilings");
    if (fc_session_ceilings(&ses, &e) != 0) {
        rc = fc_fail(FC_EXIT_FAIL, &e);
        goto done;
    }
    cJSON *host, *ceilings;
    fc_session_describe(&ses, &host, &ceilings);
    environment_guards(&pg, &o.set, host);
    cJSON *argv_json = cJSON_CreateArray();
    cJSON_AddItemToArray(argv_json, cJSON_CreateString("fusecal"));
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(argv_json, cJSON_CreateString(argv[i]));
    bool prev_complete = true;
    if (have_prev) {
        char why[256];
        if (!fc_host_compatible(prev.host, host, why, sizeof why)) {
            cJSON_Delete(host);
            cJSON_Delete(ceilings);
            cJSON_Delete(argv_json);
            rc = fc_usage_error("cannot continue '%s': it was measured on another host or library build: %s",
                                prev_path, why);
            goto done;
        }
        cJSON_Delete(host);
        cJSON_Delete(ceilings);
        fc_doc_free(&doc);
        doc = prev; /* keep its records, host, ceilings and settings */
        have_prev = false;
        prev_complete = doc.complete || o.resume;
        if (!doc.history) doc.history = cJSON_CreateArray();
        cJSON *h = cJSON_CreateObject();
        char now[32];
        fc_utc_timestamp(now);
        cJSON_AddStringToObject(h, "created_utc", now);
        cJSON_AddItemToObject(h, "argv", argv_json);
        cJSON_AddItemToArray(doc.history, h);
    } else {
        doc.settings = o.set;
        doc.argv = argv_json;
        doc.host = host;
        doc.ceilings = ceilings;
    }

    writer w = {.t0 = t_start, .base = doc.elapsed_s, .path = out, .fmt = fmt, .pg = &pg};
    if (write_doc(&w, &doc) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &w.err);
        goto done;
    }
    fc_observer obs = {on_start, on_record, &w};
    if (fc_calibrate(&ses, &plan, &o.set, &doc, &obs, &fc_interrupted, &e) != 0) {
        rc = FC_EXIT_USAGE; /* the message came from on_record; the file holds every earlier record */
        goto done;
    }
    doc.complete = doc.complete && prev_complete;
    fc_progress_end(&pg);
    if (write_doc(&w, &doc) != 0) {
        rc = fc_fail(FC_EXIT_USAGE, &w.err);
        goto done;
    }
    int failed = 0;
    print_summary(&pg, &doc, out, o.quiet, &failed);
    rc = fc_interrupted ? FC_EXIT_INTERRUPTED : failed ? FC_EXIT_FAIL : FC_EXIT_OK;
done:
    if (have_prev) fc_doc_free(&prev);
    fc_doc_free(&doc);
    fc_session_close(&ses);
    fc_plan_free(&plan);
    fc_sweep_free(&sw);
    return rc;
}
