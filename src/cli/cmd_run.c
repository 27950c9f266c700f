/* cmd_run.c — `fusecal run`: build a plan from the options, measure it, write
 * records after every problem. */
#include "builtin.h"
#include "calibrate.h"
#include "catalog.h"
#include "cmd.h"
#include "continue.h"
#include "format.h"
#include "host.h"
#include "jsonfile.h"
#include "netsum.h"
#include "progress.h"
#include "select.h"
#include "signals.h"
#include "writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int run(const fc_args *args);

enum {
    O_PATTERN,
    O_DEVICE,
    O_BACKEND,
    O_DTYPE,
    O_SHAPE,
    O_SWEEP,
    O_NETWORK,
    O_BATCH,
    O_SEQ,
    O_LAYOUT,
    O_CACHE,
    O_THREADS,
    O_THRESHOLD,
    O_MIN_SAMPLES,
    O_MIN_TIME,
    O_MAX_NOISE,
    O_MAX_TIME,
    O_ROUNDS,
    O_RUN_NOISE,
    O_QUICK,
    O_NO_GRAPH,
    O_NO_BESIDE,
    O_NO_PEAK_BESIDE,
    O_ONE_PROCESS,
    O_KERNEL,
    O_SEED,
    O_MAX_MEMORY,
    O_MAX_TIME_TOTAL,
    O_OUT,
    O_FORMAT,
    O_QUIET,
    O_DRY_RUN,
    O_RESUME,
    O_APPEND,
    O_COUNT
};

#define WHAT "what to measure"
#define HOW "how to measure"
#define OUTPUT "output"
#define SETTING(id) (&fc_settings_table[FC_SET_##id])
static const fc_option options[] = {
    [O_PATTERN] = {.name = "pattern",
                   .kind = FC_OPT_LIST,
                   .metavar = "P[,P...]|all",
                   .section = WHAT,
                   .words_fn = fc_pattern_words,
                   .also = "all",
                   .def = "all",
                   .help = "patterns to measure; 'fusecal list patterns' describes them"},
    [O_DEVICE] = {.name = "device",
                  .kind = FC_OPT_CHOICE,
                  .section = WHAT,
                  .words = &fc_device_words,
                  .also = "all",
                  .def = "cpu",
                  .help = "devices; all measures the GPU when there is one and says so when not"},
    [O_BACKEND] = {.name = "backend",
                   .kind = FC_OPT_LIST,
                   .metavar = "NAME[,NAME...]",
                   .section = WHAT,
                   .words = &fc_backend_words,
                   .def = "every usable one on the devices",
                   .help = "backends"},
    [O_DTYPE] = {.name = "dtype",
                 .kind = FC_OPT_LIST,
                 .metavar = "T[,T...]",
                 .section = WHAT,
                 .words = &fc_dtype_words,
                 .def = "the sweep's, fp32",
                 .help = "element types: fp32, tf32, bf16, fp16 (CPU backends compute fp32, cpu.onednn also bf16 "
                         "on CPUs with avx512_bf16 or AMX; CUDA backends all four)"},
    [O_SHAPE] = {.name = "shape",
                 .kind = FC_OPT_MULTI,
                 .metavar = "k=v,...",
                 .section = WHAT,
                 .help = "dims applied to every selected pattern that has them, or a whole problem string such as "
                         "'conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1'; repeatable; replaces the sweep"},
    [O_SWEEP] = {.name = "sweep",
                 .kind = FC_OPT_TEXT,
                 .section = WHAT,
                 .words_fn = fc_sweep_words,
                 .file = true,
                 .metavar = "NAME|FILE",
                 .def = "quick",
                 .help = "a built-in sweep (quick, standard, full) or a sweep file (schemas/catalogue.schema.json)"},
    [O_NETWORK] = {.name = "network",
                   .kind = FC_OPT_TEXT,
                   .section = WHAT,
                   .words_fn = fc_network_words,
                   .file = true,
                   .metavar = "NAME|FILE",
                   .help = "every fusion site of a model ('fusecal list networks', or a network file: "
                           "schemas/network.schema.json), each unique site once; the document gets a network "
                           "summary: per backend the saving per inference of fusing every yes site; replaces the "
                           "sweep"},
    [O_BATCH] = {.name = "batch",
                 .kind = FC_OPT_INT,
                 .metavar = "N",
                 .section = WHAT,
                 .min = 1,
                 .max = 1000000,
                 .def = "the network file's",
                 .help = "with --network: the batch size, rewriting the dims the file scales with it"},
    [O_SEQ] = {.name = "seq",
               .kind = FC_OPT_INT,
               .metavar = "S",
               .section = WHAT,
               .min = 1,
               .max = 100000000,
               .def = "the network file's",
               .help = "with --network: the sequence length, rewriting the dims the file scales with it"},
    [O_LAYOUT] = {.name = "layout",
                  .kind = FC_OPT_CHOICE,
                  .section = WHAT,
                  .words = &fc_layout_words,
                  .def = "the sweep's, nhwc, the layout the libraries are fast in",
                  .help = "activation layout of conv problems"},
    [O_CACHE] = {.name = "cache",
                 .kind = FC_OPT_CHOICE,
                 .section = HOW,
                 .words = &fc_cache_words,
                 .def = "warm",
                 .help = "resident data, or caches flushed before every sample (a buffer twice the LLC on the CPU; on "
                         "the GPU a write, then a read, of buffers twice the L2, leaving clean lines)"},
    [O_THREADS] = {.name = "threads",
                   .kind = FC_OPT_INT,
                   .metavar = "N",
                   .section = HOW,
                   .setting = SETTING(THREADS),
                   .def = "each CPU this process may use",
                   .help = "host threads for OpenBLAS, oneDNN and fusecal's loops, one OpenMP pool"},
    [O_THRESHOLD] = {.name = "threshold",
                     .kind = FC_OPT_NUM,
                     .metavar = "X",
                     .section = HOW,
                     .setting = SETTING(THRESHOLD),
                     .def = "the sweep's, else the catalogue's, 1.1",
                     .help = "fuse when the speedup's 95% interval lies above X"},
    [O_MIN_SAMPLES] = {.name = "min-samples",
                       .kind = FC_OPT_INT,
                       .metavar = "N",
                       .section = HOW,
                       .setting = SETTING(MIN_SAMPLES),
                       .help = "stopping rule: at least N sample tuples per record, spread over the first --rounds "
                               "rounds, whatever --max-time says"},
    [O_MIN_TIME] = {.name = "min-time",
                    .kind = FC_OPT_NUM,
                    .metavar = "S",
                    .section = HOW,
                    .setting = SETTING(MIN_TIME),
                    .help = "... and at least S seconds of samples per variant"},
    [O_MAX_NOISE] = {.name = "max-noise",
                     .kind = FC_OPT_NUM,
                     .metavar = "X",
                     .section = HOW,
                     .setting = SETTING(MAX_NOISE),
                     .help = "... then more rounds until the rounds' 95% interval of every speedup that may decide is "
                             "this narrow (half-width / speedup at most X)"},
    [O_MAX_TIME] = {.name = "max-time",
                    .kind = FC_OPT_NUM,
                    .metavar = "S",
                    .section = HOW,
                    .setting = SETTING(MAX_TIME),
                    .help = "... or S seconds of samples per variant at most; a sweep may set its own stopping rule, "
                            "the command line wins"},
    [O_ROUNDS] = {.name = "rounds",
                  .kind = FC_OPT_INT,
                  .metavar = "N",
                  .section = HOW,
                  .setting = SETTING(ROUNDS),
                  .help =
                      "fresh setups per problem at least (new buffers, plans, algorithm choices): the speedup's "
                      "interval is a t interval over the rounds' speedups, so it covers what changes between setups"},
    [O_RUN_NOISE] = {.name = "run-noise",
                     .kind = FC_OPT_NUM,
                     .metavar = "X",
                     .section = HOW,
                     .setting = SETTING(RUN_NOISE),
                     .help = "a run-level standard deviation (log scale) added to the rounds' interval in quadrature: "
                             "for machine states that last longer than a run (a busy stretch of a shared host), "
                             "which rounds cannot see; bench/repeatability.sh estimates it; 0 turns it off"},
    [O_QUICK] = {.name = "quick",
                 .kind = FC_OPT_FLAG,
                 .section = HOW,
                 .help = "stop as the quick sweep does (its stopping rule in patterns/sweeps.json: a fraction of a "
                         "second of samples per variant): a first answer in seconds, with wider intervals where the "
                         "machine is noisy; --min-samples, --min-time, --max-noise and --max-time still win"},
    [O_NO_GRAPH] = {.name = "no-graph",
                    .kind = FC_OPT_FLAG,
                    .section = HOW,
                    .help = "on CUDA, skip the graph-replay timing"},
    [O_NO_BESIDE] = {.name = "no-bandwidth-beside",
                     .kind = FC_OPT_FLAG,
                     .section = HOW,
                     .help =
                         "skip the bandwidth measured beside each round of a memory-bound record (by default, on "
                         "the CPU and CUDA, its working sets' stream rates are measured as each round ends, and its "
                         "variants' pct_bandwidth_beside are of them: a shared host's memory moves by 2x within "
                         "minutes, and device ceilings kept from an hour before judge it in another state)"},
    [O_NO_PEAK_BESIDE] =
        {.name = "no-peak-beside",
         .kind = FC_OPT_FLAG,
         .section = HOW,
         .help = "skip the arithmetic peak measured beside each round of a compute-bound record (by "
                 "default, on the CPU and for fp32 on CUDA, the ceilings' multiply-add loop runs briefly as each round "
                 "ends, and its variants' pct_peak_flops_beside are of it: a shared host's clocks "
                 "move within minutes)"},
    [O_ONE_PROCESS] = {.name = "one-process",
                       .kind = FC_OPT_FLAG,
                       .section = HOW,
                       .help = "measure every round in this process, problem after problem (by default each pass "
                               "of rounds over the problems runs in a fresh worker process, so the intervals cover "
                               "what changes between processes)"},
    [O_KERNEL] = {.name = "kernel",
                  .kind = FC_OPT_CHOICE,
                  .section = HOW,
                  .words = &fc_attn_kernel_words,
                  .def = "reference",
                  .help =
                      "cuda.custom's fused attention kernel (attention, qk_softmax): reference (64x64 tiles) or "
                      "flash2 (FlashAttention-2 class: 128 queries per block, double-buffered K/V); recorded in "
                      "the settings and in each record that ran it (decode-shaped attention, s < 16 with at most 16 "
                      "query rows a key/value head, runs the split-KV decode kernel whichever is set, and its "
                      "records say decode)"},
    [O_SEED] = {.name = "seed",
                .kind = FC_OPT_SEED,
                .metavar = "N",
                .section = HOW,
                .def = "from the clock",
                .help = "inputs and sample order, recorded in the document"},
    [O_MAX_MEMORY] = {.name = "max-memory",
                      .kind = FC_OPT_BYTES,
                      .metavar = "BYTES",
                      .section = HOW,
                      .setting = SETTING(MAX_MEMORY),
                      .def = "what is available",
                      .help = "skip problems needing more host memory; a suffix K, M, G or T multiplies by 1024^1..4"},
    [O_MAX_TIME_TOTAL] = {.name = "max-time-total",
                          .kind = FC_OPT_NUM,
                          .metavar = "S",
                          .section = HOW,
                          .setting = SETTING(MAX_TIME_TOTAL),
                          .def = "no limit",
                          .help = "end the sweep after S seconds; the records so far are kept, marked complete: "
                                  "false (measured in one process, problem after problem, as with --one-process)"},
    [O_OUT] = {.name = "out",
               .kind = FC_OPT_TEXT,
               .metavar = "FILE",
               .section = OUTPUT,
               .file = true,
               .def = "fusecal-<time>.json, or -2, -3, ... before .json when taken",
               .help = "where records go, rewritten atomically after every record"},
    [O_FORMAT] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = OUTPUT,
                  .words = &fc_format_words,
                  .def = "from --out's extension, json",
                  .help = "the records as JSON, JSON lines, CSV or markdown"},
    [O_QUIET] = {.name = "quiet", .kind = FC_OPT_FLAG, .section = OUTPUT, .help = "no table or progress"},
    [O_DRY_RUN] = {.name = "dry-run", .kind = FC_OPT_FLAG, .section = OUTPUT, .help = "print the plan and exit"},
    [O_RESUME] = {.name = "resume",
                  .kind = FC_OPT_TEXT,
                  .metavar = "FILE",
                  .section = OUTPUT,
                  .file = true,
                  .help = "finish an interrupted calibration: re-run the command recorded in FILE with its seed, "
                          "skipping the problems it holds, writing to FILE (only --quiet, --dry-run and "
                          "--max-time-total may go with it)"},
    [O_APPEND] = {.name = "append",
                  .kind = FC_OPT_TEXT,
                  .metavar = "FILE",
                  .section = OUTPUT,
                  .file = true,
                  .help = "add this run's problems to FILE (those it holds are skipped); refused when FILE was made "
                          "with other settings or on another host or library build"},
};
_Static_assert(FC_ARRAY_LEN(options) == O_COUNT && O_COUNT <= FC_MAX_OPTIONS, "run options");

const fc_cmd_spec fc_cmd_run = {
    .name = "run",
    .summary = "measure unfused against fused op chains and write calibration records",
    .synopsis = "[options]",
    .description =
        "Measures each problem's unfused chain against its fused form, paired and interleaved, verifies "
        "both against a float64 reference, and writes a record per problem and backend: latencies, the "
        "speedup with its 95% interval, traffic, roofline, verification and the fuse decision.",
    .options = options,
    .noptions = O_COUNT,
    .exit_status =
        "0 every record ok, 1 a record failed (verification, setup or run), 2 bad usage or input, 130 "
        "interrupted: the first SIGINT, SIGTERM or SIGHUP (unless ignored from the start: nohup) finishes "
        "the current sample and writes every finished record with complete: false (--resume picks it up); "
        "a second exits at once, leaving the last whole file.",
    .run = run,
};

/* ------------------------------------------------------------------ options */

typedef struct run_opts {
    const char **patterns, **backends, **dtypes, **shapes;
    int npatterns, nbackends, ndtypes, nshapes;
    const char *device, *sweep, *network, *layout, *out, *format, *resume, *append;
    int64_t batch, seq; /* 0: the network file's */
    bool quiet, dry_run, seed_set, quick;
    fc_settings set;
    unsigned stop_set; /* FC_STOP_* the command line sets */
} run_opts;

/* The stopping-rule options and the sweep field each overrides. */
static const struct {
    int opt;
    unsigned bit;
} stop_opts[] = {
    {O_MIN_SAMPLES, FC_STOP_MIN_SAMPLES},
    {O_MIN_TIME, FC_STOP_MIN_TIME},
    {O_MAX_NOISE, FC_STOP_MAX_NOISE},
    {O_MAX_TIME, FC_STOP_MAX_TIME},
};

static void settings_from(const fc_args *a, run_opts *o)
{
    fc_settings *s = &o->set;
    fc_settings_defaults(s);
    s->cold = a->v[O_CACHE].s && !strcmp(a->v[O_CACHE].s, "cold");
    if (a->v[O_THREADS].given) s->threads = (int)a->v[O_THREADS].i;
    if (a->v[O_THRESHOLD].given) s->threshold = a->v[O_THRESHOLD].d;
    if (a->v[O_MIN_SAMPLES].given) s->stop.min_samples = (int)a->v[O_MIN_SAMPLES].i;
    if (a->v[O_MIN_TIME].given) s->stop.min_time = a->v[O_MIN_TIME].d;
    if (a->v[O_MAX_NOISE].given) s->stop.max_noise = a->v[O_MAX_NOISE].d;
    if (a->v[O_MAX_TIME].given) s->stop.max_time = a->v[O_MAX_TIME].d;
    if (a->v[O_ROUNDS].given) s->rounds = (int)a->v[O_ROUNDS].i;
    if (a->v[O_RUN_NOISE].given) s->run_noise = a->v[O_RUN_NOISE].d;
    if (a->v[O_NO_GRAPH].given) s->graph = false;
    if (a->v[O_NO_BESIDE].given) s->bandwidth_beside = false;
    if (a->v[O_NO_PEAK_BESIDE].given) s->peak_beside = false;
    s->processes = !a->v[O_ONE_PROCESS].given;
    if (a->v[O_KERNEL].given) s->attn_kernel = (fc_attn_kernel)fc_word_index(&fc_attn_kernel_words, a->v[O_KERNEL].s);
    if (a->v[O_MAX_MEMORY].given) s->max_memory = a->v[O_MAX_MEMORY].d;
    if (a->v[O_MAX_TIME_TOTAL].given) s->max_time_total = a->v[O_MAX_TIME_TOTAL].d;
    if ((o->seed_set = a->v[O_SEED].given)) s->seed = a->v[O_SEED].u;
    for (size_t i = 0; i < FC_ARRAY_LEN(stop_opts); i++)
        if (a->v[stop_opts[i].opt].given) o->stop_set |= stop_opts[i].bit;
}

static int run_opts_from(const fc_args *a, run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->patterns = a->v[O_PATTERN].list;
    o->npatterns = a->v[O_PATTERN].n;
    o->backends = a->v[O_BACKEND].list;
    o->nbackends = a->v[O_BACKEND].n;
    o->dtypes = a->v[O_DTYPE].list;
    o->ndtypes = a->v[O_DTYPE].n;
    o->shapes = a->v[O_SHAPE].list;
    o->nshapes = a->v[O_SHAPE].n;
    o->device = a->v[O_DEVICE].s;
    o->sweep = a->v[O_SWEEP].s;
    o->network = a->v[O_NETWORK].s;
    o->batch = a->v[O_BATCH].given ? a->v[O_BATCH].i : 0;
    o->seq = a->v[O_SEQ].given ? a->v[O_SEQ].i : 0;
    o->layout = a->v[O_LAYOUT].s;
    o->out = a->v[O_OUT].s;
    o->format = a->v[O_FORMAT].s;
    o->resume = a->v[O_RESUME].s;
    o->append = a->v[O_APPEND].s;
    o->quiet = a->v[O_QUIET].given;
    o->dry_run = a->v[O_DRY_RUN].given;
    o->quick = a->v[O_QUICK].given;
    settings_from(a, o);
    if (a->noperands) return fc_usage_error("unexpected argument '%s' (see 'fusecal run --help')", a->operands[0]);
    if ((o->batch || o->seq) && !o->network)
        return fc_usage_error("--%s rewrites a network's sites: give --network too", o->batch ? "batch" : "seq");
    if ((o->stop_set & FC_STOP_MIN_TIME) && (o->stop_set & FC_STOP_MAX_TIME) &&
        o->set.stop.min_time > o->set.stop.max_time)
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
            return fc_usage_error("unknown dtype '%s' (valid: %s)", o->dtypes[i], fc_words_valid(&fc_dtype_words));
        bool dup = false;
        for (int j = 0; j < s->ndtypes; j++) dup |= s->dtypes[j] == d;
        if (!dup) s->dtypes[s->ndtypes++] = d;
    }
    return 0;
}

/* Whether another pattern takes the shape "k=v,...": then a shape pat turns down
 * (dwconv_bn_relu's g = c = k; linear's m,k,n lacking k where the norm family's m,n is
 * whole) was meant for the others. */
static bool sibling_takes(const fc_pattern *pat, const char *shape)
{
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        fc_problem p;
        fc_err e;
        if (&fc_patterns[pi] != pat && fc_problem_parse(shape, &fc_patterns[pi], &p, &e) == 0) return true;
    }
    return false;
}

/* Problems from --shape: a whole problem string, or k=v applied to every selected
 * pattern whose family has all the keys (and, unless --pattern names it, that takes
 * the shape where another pattern does). */
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
            int len = snprintf(spec, sizeof spec, "%s:%s", fc_patterns[pi].name, sh);
            if (len < 0 || (size_t)len >= sizeof spec)
                return fc_usage_error("bad --shape '%.64s...': problem string too long (%zu characters)", sh,
                                      strlen(sh));
            fc_problem p;
            if (fc_problem_parse(spec, &fc_patterns[pi], &p, &e) != 0) {
                /* a key of another family, or a shape for its siblings: this pattern is not meant */
                if (strstr(e.msg, "unknown dimension") ||
                    (!s->explicit_patterns && sibling_takes(&fc_patterns[pi], sh))) {
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
                              avail / (1 << 30),
                              max_memory > 0 && max_memory <= avail ? "allowed by --max-memory" : "available");
    return 0;
}

/* --network: the network's sites (at --batch, --seq, in the one --dtype and the
 * --layout asked for) as the sweep, the file's stopping rule as the sweep's. */
static int network_problems(const run_opts *o, const selection *s, fc_network *net, fc_sweep *sw)
{
    fc_err e;
    if (o->nshapes || o->sweep) return fc_usage_error("--network excludes --%s", o->nshapes ? "shape" : "sweep");
    if (s->ndtypes > 1) return fc_usage_error("--network takes one --dtype (the summary adds up one network)");
    if (fc_network_load(o->network, net, &e) != 0 || fc_network_rescale(net, o->batch, o->seq, &e) != 0)
        return fc_usage_error("%s", e.msg);
    fc_layout layout = FC_LAYOUT_NONE;
    if (o->layout && fc_layout_parse(o->layout, &layout) != 0)
        return fc_usage_error("unknown layout '%s' (valid: %s)", o->layout, fc_words_valid(&fc_layout_words));
    /* before the sites are listed: sites that differ only in dtype or layout become one */
    fc_network_retype(net, s->ndtypes ? &s->dtypes[0] : NULL, layout);
    *sw = net->stop;
    snprintf(sw->name, sizeof sw->name, "network %s", net->name);
    sw->prob = fc_xcalloc((size_t)net->n, sizeof *sw->prob);
    for (int i = 0; i < net->n; i++) {
        fc_problem *p = &net->site[i].prob;
        if (check_fits(p, o->set.max_memory) != 0) return FC_EXIT_USAGE;
        sw->prob[sw->n++] = *p;
    }
    return 0;
}

/* The problems: from --shape, --network, or the sweep's. */
static int load_problems(const run_opts *o, const selection *s, fc_network *net, fc_sweep *sw)
{
    fc_err e;
    if (o->network) return network_problems(o, s, net, sw);
    if (o->nshapes && o->sweep) return fc_usage_error("--shape and --sweep exclude each other");
    if (!o->nshapes) {
        if (fc_sweep_load(o->sweep ? o->sweep : "quick", sw, &e) != 0) return fc_usage_error("%s", e.msg);
        return 0;
    }
    memset(sw, 0, sizeof *sw);
    fc_strlcpy(sw->name, "custom", sizeof sw->name);
    if (shape_problems(o, s, sw) != 0) return FC_EXIT_USAGE;
    for (int i = 0; i < sw->n; i++)
        if (check_fits(&sw->prob[i], o->set.max_memory) != 0) return FC_EXIT_USAGE;
    return 0;
}

/* The stopping rule: the defaults, then the sweep's (or with --quick the quick
 * sweep's), then the command line's. */
static int merge_stop(run_opts *o, const fc_sweep *sw)
{
    fc_stop cli = o->set.stop;
    fc_stop_defaults(&o->set.stop);
    fc_sweep_apply_stop(sw, &o->set.stop, &o->set.target_sample);
    if (o->quick) {
        fc_sweep quick;
        fc_err e;
        if (fc_sweep_load("quick", &quick, &e) != 0) return fc_usage_error("%s", e.msg);
        fc_sweep_apply_stop(&quick, &o->set.stop, &o->set.target_sample);
        fc_sweep_free(&quick);
    }
    if (o->stop_set & FC_STOP_MIN_SAMPLES) o->set.stop.min_samples = cli.min_samples;
    if (o->stop_set & FC_STOP_MIN_TIME) o->set.stop.min_time = cli.min_time;
    if (o->stop_set & FC_STOP_MAX_NOISE) o->set.stop.max_noise = cli.max_noise;
    if (o->stop_set & FC_STOP_MAX_TIME) o->set.stop.max_time = cli.max_time;
    if (o->set.stop.min_time > o->set.stop.max_time) o->set.stop.min_time = o->set.stop.max_time;
    return 0;
}

/* Problems a backend turns down: the first, and how many. */
typedef struct turned_down {
    int n;
    char first[512];
    bool say_each; /* the user chose backends or patterns: name every one */
} turned_down;

static void add_problem(const selection *s, const fc_problem *p, double threshold, fc_plan *plan, turned_down *td,
                        fc_progress *pg)
{
    for (int bi = 0; bi < s->nbackends; bi++) {
        char why[256] = "";
        if (s->backends[bi]->supports(p, why, sizeof why)) {
            fc_plan_add(plan, p, s->backends[bi], threshold);
            continue;
        }
        char ps[256];
        fc_problem_string(p, ps, sizeof ps);
        if (!td->n++) snprintf(td->first, sizeof td->first, "%s on %s: %s", ps, s->backends[bi]->name, why);
        else if (td->say_each)
            fc_progress_note(pg, "fusecal: note: not measured: %s on %s: %s", ps, s->backends[bi]->name, why);
    }
}

/* Family order (linear, conv, attention), sweep order within a family. */
static void sort_by_family(fc_plan *plan)
{
    for (int i = 1; i < plan->n; i++) {
        fc_job j = plan->jobs[i];
        int k = i - 1;
        while (k >= 0 && plan->jobs[k].prob.pat->family > j.prob.pat->family) {
            plan->jobs[k + 1] = plan->jobs[k];
            k--;
        }
        plan->jobs[k + 1] = j;
    }
}

/* Every selected problem, in each selected dtype, on each backend that takes it. */
static int add_jobs(const run_opts *o, const selection *s, const fc_sweep *sw, fc_plan *plan, fc_progress *pg)
{
    fc_layout layout = FC_LAYOUT_NONE;
    if (o->layout && fc_layout_parse(o->layout, &layout) != 0)
        return fc_usage_error("unknown layout '%s' (valid: %s)", o->layout, fc_words_valid(&fc_layout_words));
    turned_down td = {.say_each = o->nbackends || s->explicit_patterns};
    for (int i = 0; i < sw->n; i++) {
        fc_problem base = sw->prob[i];
        if (!s->pattern[base.pat->id]) continue;
        if (layout != FC_LAYOUT_NONE && fc_family_of(base.pat)->has_layout) base.layout = layout;
        for (int di = 0; di < (s->ndtypes ? s->ndtypes : 1); di++) {
            fc_problem p = base;
            if (s->ndtypes) p.dtype = s->dtypes[di];
            double th = o->set.threshold > 0           ? o->set.threshold
                        : sw->threshold[p.pat->id] > 0 ? sw->threshold[p.pat->id]
                                                       : fc_catalog_threshold(p.pat);
            add_problem(s, &p, th, plan, &td, pg);
        }
    }
    sort_by_family(plan);
    if (plan->n == 0 && td.n)
        return fc_usage_error("nothing to measure: %s%s", td.first,
                              td.n > 1 ? " (and more: see 'fusecal list backends')" : "");
    if (plan->n == 0) return fc_usage_error("nothing to measure: the selection holds no problem");
    if (td.n && td.say_each) fc_progress_note(pg, "fusecal: note: not measured: %s", td.first);
    return 0;
}

static int build_plan(run_opts *o, fc_plan *plan, fc_network *net, fc_sweep *sw, fc_progress *pg)
{
    selection s = {0};
    if (select_patterns(o, &s) || select_dtypes(o, &s) || select_backends(o, &s, pg)) return FC_EXIT_USAGE;
    int rc = load_problems(o, &s, net, sw);
    if (rc) return rc;
    fc_strlcpy(o->set.sweep, sw->name, sizeof o->set.sweep);
    return merge_stop(o, sw) ? FC_EXIT_USAGE : add_jobs(o, &s, sw, plan, pg);
}

static void print_summary(fc_progress *pg, const fc_doc *doc, const char *out, bool quiet, int *failed_out)
{
    int failed = 0, skipped = 0, fallbacks = 0, untrusted = 0, over = 0, withheld = 0, dec[3] = {0, 0, 0};
    for (int i = 0; i < doc->n; i++) {
        const fc_record *r = &doc->rec[i];
        failed += r->status == FC_STATUS_FAILED;
        skipped += r->status == FC_STATUS_SKIPPED;
        if (r->status == FC_STATUS_OK) dec[r->decision]++;
        withheld += r->status == FC_STATUS_OK && r->state.withheld;
        for (int v = 0; v < FC_NVARIANTS; v++) {
            if (r->v[v].impl.fallback) {
                fallbacks++;
                fc_progress_note(pg, "fusecal: warning: %s %s %s ran a fallback: %s", r->backend, r->problem,
                                 fc_variant_name((fc_variant)v), r->v[v].impl.fallback_why);
            }
            if (r->status == FC_STATUS_OK && !r->v[v].check.trusted) untrusted++;
            if (r->status == FC_STATUS_OK && r->v[v].over_ceiling) {
                over++;
                fc_progress_note(pg,
                                 "fusecal: warning: %s %s %s is faster than a measured ceiling (%.0f%% of peak "
                                 "FLOP/s, %.0f%% of the peak beside its rounds, %.0f%% of bandwidth, %.0f%% of the "
                                 "bandwidth beside its rounds): the ceiling or the count of its work is off",
                                 r->backend, r->problem, fc_variant_name((fc_variant)v), r->v[v].pct_peak_flops,
                                 r->v[v].pct_peak_beside, r->v[v].pct_peak_bw, r->v[v].pct_bw_beside);
            }
        }
        if (r->throttled)
            fc_progress_note(pg, "fusecal: warning: %s on %s: clocks dropped during the problem", r->problem,
                             r->backend);
        if (r->contended)
            fc_progress_note(pg,
                             "fusecal: warning: %s on %s: another fusecal run was measuring on this machine: "
                             "its timings are disturbed",
                             r->problem, r->backend);
    }
    if (!quiet) {
        fc_print_table(stdout, doc);
        fflush(stdout);
    }
    char held[96] = "";
    if (withheld) snprintf(held, sizeof held, " (%d withheld: the machine's state moved)", withheld);
    fc_progress_note(
        pg,
        "fusecal: wrote %d records to %s (%d ok, %d failed, %d skipped%s); fuse: %d yes, %d no, %d inconclusive%s%s%s%s",
        doc->n, out, doc->n - failed - skipped, failed, skipped, doc->complete ? "" : ", INCOMPLETE",
        dec[FC_DECIDE_YES], dec[FC_DECIDE_NO], dec[FC_DECIDE_INCONCLUSIVE], held,
        fallbacks ? "; fallback implementations flagged" : "", untrusted ? "; untrusted outputs flagged" : "",
        over ? "; variants above a ceiling flagged" : "");
    *failed_out = failed;
}

/* Warnings about the machine's state, recorded in the host block too. */
static void environment_guards(fc_progress *pg, const fc_settings *set, const cJSON *host)
{
    int cores = fc_allowed_cpus();
    if (set->threads > cores)
        fc_progress_note(pg, "fusecal: warning: %d threads on %d CPU(s) this process may use: threads will share them",
                         set->threads, cores);
    const cJSON *la = cJSON_GetObjectItemCaseSensitive(host, "loadavg");
    if (cJSON_IsNumber(cJSON_GetArrayItem(la, 0)) && cJSON_GetArrayItem(la, 0)->valuedouble > 0.5 * cores)
        fc_progress_note(pg, "fusecal: warning: load average %.2f on %d CPU(s): other work will add noise",
                         cJSON_GetArrayItem(la, 0)->valuedouble, cores);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(host, "devices"), "cpu");
    const char *gov = fc_json_str(cpu, "governor", "unknown");
    if (strcmp(gov, "performance") && strcmp(gov, "unknown"))
        fc_progress_note(pg, "fusecal: warning: CPU frequency governor is '%s', not 'performance': clocks may vary",
                         gov);
}

/* ------------------------------------------------------------------ a run */

typedef struct run_state {
    fc_args replay; /* --resume: the command line recorded in the document */
    fc_continuation cont;
    fc_plan plan;
    fc_sweep sw;
    fc_network net; /* --network, else empty */
    fc_session ses;
    fc_doc doc;
    fc_progress pg;
    char outbuf[256];
    bool taken; /* outbuf was made, empty, for this run (default_out) */
    const char *out;
    fc_format fmt;
    double t0;
} run_state;

/* --resume: the options become those of the command recorded in the document,
 * but for the few that only say how this run goes. */
static int replay(const fc_args *args, run_opts *o, run_state *st)
{
    static const int allowed[] = {O_QUIET, O_DRY_RUN, O_MAX_TIME_TOTAL, O_RESUME, -1};
    const char *name;
    if (fc_args_other_than(&fc_cmd_run, args, allowed, &name))
        return fc_usage_error(
            "--resume re-runs the command recorded in '%s': give no other measuring options "
            "(not --%s)",
            o->resume, name);
    fc_err e;
    int n;
    char **argv;
    if (fc_continue_argv(&st->cont, &n, &argv, &e) != 0) return fc_usage_error("%s", e.msg);
    char cmd[64], why[512] = "";
    fc_strlcpy(cmd, n ? argv[0] : "", sizeof cmd);
    run_opts again;
    bool ok = false;
    if (!strcmp(cmd, "run")) {
        fc_usage_capture(why, sizeof why); /* the parser's reason goes into this run's one line */
        ok = fc_args_parse(&fc_cmd_run, n, argv, &st->replay) && run_opts_from(&st->replay, &again) == 0;
        fc_usage_capture(NULL, 0);
    }
    for (int i = 0; i < n; i++) free(argv[i]);
    free(argv);
    if (cmd[0] && strcmp(cmd, "run"))
        return fc_usage_error("cannot resume '%s': it was written by 'fusecal %s', not 'fusecal run'", o->resume, cmd);
    if (!ok)
        return fc_usage_error("cannot resume '%s': its command line does not parse%s%s", o->resume, why[0] ? ": " : "",
                              why);
    again.quiet = o->quiet;
    again.dry_run = o->dry_run;
    if (o->set.max_time_total > 0) again.set.max_time_total = o->set.max_time_total;
    again.resume = o->resume;
    again.append = NULL;
    again.format = NULL;
    *o = again;
    return 0;
}

/* --resume and --append: the document to carry on, which the run writes to. */
static int carry_on(const fc_args *args, run_opts *o, run_state *st)
{
    if (o->resume && o->append) return fc_usage_error("--resume and --append exclude each other");
    if (o->append && o->out) return fc_usage_error("--append writes to the file it adds to: give no --out");
    const char *path = o->resume ? o->resume : o->append;
    fc_err e;
    if (fc_continue_load(&st->cont, path, o->resume != NULL, &e) != 0) return fc_usage_error("%s", e.msg);
    if (!path) return 0;
    int rc = o->resume ? replay(args, o, st) : 0;
    if (rc) return rc;
    o->out = path;
    if (!o->seed_set) {
        o->set.seed = st->cont.prev.settings.seed;
        o->seed_set = true;
    }
    return 0;
}

/* The output without --out: fusecal-<time>.json, else the first of -2, -3, ...
 * that is free. A run that measures takes the name at once (an empty file, made
 * exclusively, which its first save replaces), so runs started in the same second
 * and folder each get their own; a dry run only names it. */
static int default_out(run_state *st, bool take, fc_err *e)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    char stamp[64];
    strftime(stamp, sizeof stamp, "fusecal-%Y%m%d-%H%M%S", &tm);
    for (int k = 1; k <= 999; k++) {
        if (k == 1) snprintf(st->outbuf, sizeof st->outbuf, "%s.json", stamp);
        else
            snprintf(st->outbuf, sizeof st->outbuf, "%s-%d.json", stamp, k);
        if (!take) {
            if (access(st->outbuf, F_OK) != 0) return 0;
            continue;
        }
        FILE *f = fopen(st->outbuf, "wx"); /* C11's exclusive create */
        if (f) {
            fclose(f);
            st->taken = true;
            return 0;
        }
        if (errno != EEXIST) return fc_errf(e, "cannot write '%s': %s", st->outbuf, strerror(errno));
    }
    return fc_errf(e, "cannot name the output: %s.json to %s-999.json are taken (give --out)", stamp, stamp);
}

static int choose_output(const run_opts *o, run_state *st)
{
    fc_err e;
    st->out = o->out;
    if (!st->out) {
        if (default_out(st, !o->dry_run, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
        st->out = st->outbuf;
    }
    st->fmt = fc_format_for_path(st->out);
    if (o->format && fc_format_parse(o->format, &st->fmt) != 0)
        return fc_usage_error("unknown format '%s' (valid: %s)", o->format, fc_words_valid(&fc_format_words));
    if (st->cont.path && st->fmt != FC_FMT_JSON)
        return fc_usage_error("--resume and --append continue a JSON document; '%s' is not one", st->out);
    if (fc_check_writable(st->out, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    return 0;
}

/* The seed and threads left to the machine; the document carried on must
 * share the settings, and what it holds is not measured again. */
static int settle(run_opts *o, run_state *st)
{
    fc_err e;
    if (!o->seed_set) o->set.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (!o->set.threads) o->set.threads = fc_allowed_cpus();
    fc_progress_test_fast(&st->pg, &o->set, true);
    if (!st->cont.path) return 0;
    if (fc_continue_check_settings(&st->cont, &o->set, &e) != 0) return fc_usage_error("%s", e.msg);
    int dropped = fc_continue_drop_measured(&st->cont, &st->plan);
    fc_progress_note(&st->pg, "fusecal: '%s' holds %d records; %d of this run's problems already measured, %d to go",
                     st->cont.path, st->cont.prev.n, dropped, st->plan.n);
    return 0;
}

static int print_plan(const run_opts *o, const fc_plan *plan)
{
    for (int i = 0; i < plan->n; i++) {
        char ps[256];
        fc_problem_string(&plan->jobs[i].prob, ps, sizeof ps);
        printf("%-14s %s (threshold %.3g)\n", plan->jobs[i].backend->name, ps, plan->jobs[i].threshold);
    }
    const fc_stop *st = &o->set.stop;
    printf(
        "%d problems x backends; sweep %s; stop: at least %d rounds, %d tuples and %.3gs per variant, more rounds "
        "until the interval's half-width <= %.3g or %.3gs per variant\n",
        plan->n, o->set.sweep, o->set.rounds, st->min_samples, st->min_time, st->max_noise, st->max_time);
    return FC_EXIT_OK;
}

static void show_start(void *ctx, int i, int n, int pass, int npass, const fc_job *job)
{
    fc_progress_start(ctx, i, n, pass, npass, job);
}

static int show_record(void *ctx, int i, int n, const fc_doc *d, const fc_record *r)
{
    (void)d;
    fc_progress_record(ctx, i, n, r);
    return 0;
}

/* The network summary of the records into the document. */
static void network_summary(run_state *st)
{
    fc_netsum *ns;
    int n = fc_netsum_build(&st->net, &st->doc, &ns);
    cJSON_Delete(st->doc.network);
    st->doc.network = fc_netsum_json(&st->net, ns, n);
    fc_netsum_free(ns, n);
}

/* One line per backend of the network summary. */
static void print_network(run_state *st)
{
    const cJSON *sums = cJSON_GetObjectItemCaseSensitive(st->doc.network, "summaries");
    for (const cJSON *s = sums ? sums->child : NULL; s; s = s->next) {
        const cJSON *ci = cJSON_GetObjectItemCaseSensitive(s, "saving_ci95");
        fc_progress_note(&st->pg,
                         "fusecal: network %s (batch %lld) on %s: %d of %d sites measured, %.4g ms per inference "
                         "unfused; fusing the %d yes sites saves %.4g ms [%.4g, %.4g]; %d lose when fused",
                         st->net.name, (long long)st->net.batch, fc_json_str(s, "backend", ""),
                         fc_json_int(s, "measured", 0), fc_json_int(s, "sites", 0), fc_json_num(s, "unfused_ms", 0),
                         fc_json_int(s, "fuse_yes", 0), fc_json_num(s, "saving_ms", 0),
                         cJSON_GetArrayItem(ci, 0)->valuedouble, cJSON_GetArrayItem(ci, 1)->valuedouble,
                         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "losing")));
    }
}

/* The ceilings a record ran above (GEMM, or its working set's bandwidth) are
 * measured again (fc_session_recheck_ceilings); a failed measurement keeps the
 * first one and says so. */
static void recheck_ceilings(run_state *st)
{
    fc_err e = {{0}};
    int n = fc_session_recheck_ceilings(&st->ses, &st->doc, &e);
    if (n > 0)
        fc_progress_note(&st->pg,
                         "fusecal: a record ran above a ceiling: measured the ceilings again and kept "
                         "the best of the measurements");
    else if (n < 0)
        fc_progress_note(&st->pg, "fusecal: measuring the ceilings again failed (%s); the first measurement stands",
                         e.msg);
}

/* Opens the devices, measures their ceilings, starts the document (fresh or
 * carried on) and writes it; then every job, the document rewritten after each. */
static int measure(run_opts *o, run_state *st, int argc, char **argv)
{
    fc_err e;
    if (fc_session_open(&st->ses, &fc_builtin, &st->plan, &o->set, &e) != 0) return fc_fail(FC_EXIT_USAGE, &e);
    /* before anything is saved: a second run writing the same file would replace the
     * other's records with its own at every save */
    int other = fc_progress_peers(&st->pg, st->out);
    if (other) return fc_output_taken(st->out, other, ", or --append to it once that run ends");
    if (fc_progress_ceilings(&st->pg, &st->ses, &e) != 0) return fc_fail(FC_EXIT_FAIL, &e);
    fc_progress_stop_rule(&st->pg, &st->plan, &o->set);
    cJSON *host, *ceilings;
    fc_session_describe(&st->ses, &host, &ceilings);
    environment_guards(&st->pg, &o->set, host);
    if (fc_continue_begin(&st->cont, &o->set, host, ceilings, fc_command_line_json(argc, argv), &st->doc, &e) != 0)
        return fc_usage_error("%s", e.msg);
    fc_writer w = {.path = st->out,
                   .fmt = st->fmt,
                   .t0 = st->t0,
                   .base = st->doc.elapsed_s,
                   .pg = &st->pg,
                   .show = {show_start, show_record, &st->pg}};
    if (fc_writer_save(&w, &st->doc) != 0) return fc_fail(FC_EXIT_USAGE, &w.err);
    fc_observer obs = fc_writer_observer(&w);
    if (fc_calibrate(&st->ses, &st->plan, &o->set, &st->doc, &obs, &fc_interrupted, &e) != 0) {
        fc_writer_calibrate_failed(&w, &st->doc, &e);
        return FC_EXIT_USAGE;
    }
    fc_continue_end(&st->cont, &st->doc);
    fc_progress_end(&st->pg);
    if (!fc_interrupted) recheck_ceilings(st);
    if (o->network) network_summary(st);
    if (fc_writer_save(&w, &st->doc) != 0) return fc_fail(FC_EXIT_USAGE, &w.err);
    int failed = 0;
    print_summary(&st->pg, &st->doc, st->out, o->quiet, &failed);
    if (o->network) print_network(st);
    return fc_interrupted ? FC_EXIT_INTERRUPTED : failed ? FC_EXIT_FAIL : FC_EXIT_OK;
}

static int run(const fc_args *args)
{
    run_opts o;
    run_state st = {.t0 = fc_now()};
    fc_doc_init(&st.doc);
    int rc = run_opts_from(args, &o);
    if (!rc) {
        fc_progress_init(&st.pg, stderr, o.quiet);
        fc_signals_install(); /* from here on an interrupt stops the run cleanly (ceilings included) */
        rc = carry_on(args, &o, &st);
    }
    if (!rc) rc = build_plan(&o, &st.plan, &st.net, &st.sw, &st.pg);
    if (!rc) rc = choose_output(&o, &st);
    if (!rc) rc = settle(&o, &st);
    if (!rc) rc = o.dry_run ? print_plan(&o, &st.plan) : measure(&o, &st, args->argc, args->argv);
    struct stat sb; /* a name taken that no save filled: the run wrote nothing */
    if (st.taken && stat(st.outbuf, &sb) == 0 && sb.st_size == 0) unlink(st.outbuf);
    fc_continue_free(&st.cont);
    fc_doc_free(&st.doc);
    fc_session_close(&st.ses);
    fc_plan_free(&st.plan);
    fc_sweep_free(&st.sw);
    fc_network_free(&st.net);
    fc_args_free(&st.replay);
    return rc;
}
