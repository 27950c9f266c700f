/* test_opts.c — the option tables' parser (src/cli/opts.c): each kind of value,
 * limits, choices with aliases and an extra word, lists that add up, operands,
 * what --help shows, and the wrapping of help text. */
#include "cmd.h"
#include "opts.h"
#include "test.h"

enum { O_FLAG, O_TEXT, O_CHOICE, O_LIST, O_MULTI, O_INT, O_NUM, O_BYTES, O_SEED, O_FRAC, O_COUNT };

static const char *const fmt_names[] = {"md", "json"};
static const fc_words fmt_words = {"format", fmt_names, 2, 0};
static const char *const aliases[] = {"markdown", "md", NULL};

static const fc_option options[] = {
    [O_FLAG] = {.name = "quiet", .kind = FC_OPT_FLAG, .section = "a", .help = "say less"},
    [O_TEXT] =
        {.name = "out", .short_name = 'o', .kind = FC_OPT_TEXT, .metavar = "FILE", .section = "a", .help = "where"},
    [O_CHOICE] = {.name = "format",
                  .kind = FC_OPT_CHOICE,
                  .section = "a",
                  .words = &fmt_words,
                  .aliases = aliases,
                  .def = "md",
                  .help = "how"},
    [O_LIST] = {.name = "dtype",
                .kind = FC_OPT_LIST,
                .metavar = "T[,T...]",
                .section = "b",
                .words = &fc_dtype_words,
                .also = "all",
                .help = "which"},
    [O_MULTI] = {.name = "shape", .kind = FC_OPT_MULTI, .metavar = "k=v,...", .section = "b", .help = "dims"},
    [O_INT] = {.name = "rounds",
               .kind = FC_OPT_INT,
               .metavar = "N",
               .section = "b",
               .setting = &fc_settings_table[FC_SET_ROUNDS],
               .help = "how many"},
    [O_NUM] = {.name = "max-time",
               .kind = FC_OPT_NUM,
               .metavar = "S",
               .section = "b",
               .setting = &fc_settings_table[FC_SET_MAX_TIME],
               .help = "how long"},
    [O_BYTES] = {.name = "max-memory",
                 .kind = FC_OPT_BYTES,
                 .metavar = "BYTES",
                 .section = "b",
                 .setting = &fc_settings_table[FC_SET_MAX_MEMORY],
                 .help = "how much"},
    [O_SEED] = {.name = "seed", .kind = FC_OPT_SEED, .metavar = "N", .section = "b", .help = "which inputs"},
    [O_FRAC] = {.name = "tolerance",
                .kind = FC_OPT_NUM,
                .metavar = "X",
                .section = "b",
                .min = 0,
                .max = 1,
                .max_excluded = true,
                .help = "how close"},
};

static const fc_cmd_spec spec = {
    .name = "demo",
    .summary = "a test",
    .synopsis = "[options] FILE",
    .description = "Demonstrates.",
    .options = options,
    .noptions = O_COUNT,
    .exit_status = "0 always.",
};

static bool parse(fc_args *a, const char *line)
{
    static char buf[1024];
    static char *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "demo %s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) argv[argc++] = t;
    argv[argc] = NULL;
    return fc_args_parse(&spec, argc, argv, a);
}

static void every_kind(void)
{
    fc_args a;
    CHECK(parse(&a,
                "--quiet -o x.json --format markdown --dtype fp32,bf16 --dtype all --shape m=1 --shape n=2 "
                "--rounds 4 --max-time 0.25 --max-memory 2K --seed 42 --tolerance 0.5 in.json"));
    CHECK(a.v[O_FLAG].given && a.v[O_TEXT].given && !strcmp(a.v[O_TEXT].s, "x.json"));
    CHECK(!strcmp(a.v[O_CHOICE].s, "md")); /* the alias resolved */
    CHECK(a.v[O_LIST].n == 3 && !strcmp(a.v[O_LIST].list[1], "bf16") && !strcmp(a.v[O_LIST].list[2], "all"));
    CHECK(a.v[O_MULTI].n == 2 && !strcmp(a.v[O_MULTI].list[1], "n=2"));
    CHECK(a.v[O_INT].i == 4 && a.v[O_NUM].d == 0.25 && a.v[O_BYTES].d == 2048 && a.v[O_SEED].u == 42);
    CHECK(a.v[O_FRAC].d == 0.5);
    CHECK(a.noperands == 1 && !strcmp(a.operands[0], "in.json"));
    const char *name = NULL;
    static const int except[] = {O_FLAG, O_TEXT, O_CHOICE, O_LIST, O_MULTI, O_INT, O_NUM, O_BYTES, O_SEED, -1};
    CHECK(fc_args_other_than(&spec, &a, except, &name) && !strcmp(name, "tolerance"));
    fc_args_free(&a);
    CHECK(parse(&a, ""));
    CHECK(!a.v[O_FLAG].given && !a.v[O_CHOICE].s && a.noperands == 0);
    fc_args_free(&a);
}

/* Values outside the limits or the choices stop the parse with a usage error. */
static void bad_values(void)
{
    const char *bad[] = {"--rounds 33",    "--rounds 2.5",
                         "--max-time 0",   "--max-time nan",
                         "--max-memory 0", "--max-memory 3X",
                         "--seed -1",      "--tolerance 1",
                         "--format html",  "--dtype fp32,fp64",
                         "--dtype ,",      "--quiet=1",
                         "--nope",         "--max",
                         "--rounds",       "-q"};
    for (size_t i = 0; i < FC_ARRAY_LEN(bad); i++) {
        fc_args a;
        CHECK_MSG(!parse(&a, bad[i]), "'%s' accepted", bad[i]);
        CHECK_MSG(a.rc == FC_EXIT_USAGE, "'%s': rc %d", bad[i], a.rc);
        fc_args_free(&a);
    }
    fc_args a;
    CHECK(!parse(&a, "--help") && a.rc == FC_EXIT_OK);
    fc_args_free(&a);
}

static void help_shows_the_table(void)
{
    fc_str b = {0};
    fc_help_text(&spec, &b);
    const char *h = fc_str_cstr(&b);
    CHECK_STR_CONTAINS(h, "usage: fusecal demo [options] FILE");
    CHECK_STR_CONTAINS(h, "--out FILE, -o FILE");
    CHECK_STR_CONTAINS(h, "--format md|json");
    CHECK_STR_CONTAINS(h, "how (default: md)");
    CHECK_STR_CONTAINS(h, "(default: 3)"); /* the setting's default */
    CHECK_STR_CONTAINS(h, "\na:\n");
    CHECK_STR_CONTAINS(h, "exit status: 0 always.");
    fc_str_free(&b);
    char mv[64];
    fc_option_metavar(&options[O_CHOICE], mv, sizeof mv);
    CHECK(!strcmp(mv, "md|json"));
}

static void wrapping(void)
{
    fc_str b = {0};
    int col = fc_wrap(&b, "aaa bbb ccc ddd", 0, 2, 9);
    CHECK(!strcmp(fc_str_cstr(&b), "aaa bbb\n  ccc ddd"));
    CHECK(col == 9);
    fc_str_free(&b);
    col = fc_wrap(&b, "a-very-long-word x", 4, 4, 10); /* a word longer than the line stays whole */
    CHECK(!strcmp(fc_str_cstr(&b), "a-very-long-word\n    x"));
    CHECK(col == 5);
    fc_str_free(&b);
}

/* Every command's table: names unique, every option in a section with help,
 * choices present where the kind needs them, numbers with limits. */
static void command_tables(void)
{
    for (int c = 0; c < fc_ncommands; c++) {
        const fc_cmd_spec *s = fc_commands[c];
        CHECK(s->run && s->summary && s->synopsis && s->description && s->exit_status);
        CHECK(s->noptions <= FC_MAX_OPTIONS);
        for (int i = 0; i < s->noptions; i++) {
            const fc_option *o = &s->options[i];
            CHECK_MSG(o->name && o->section && o->help, "%s: option %d", s->name, i);
            for (int j = 0; j < i; j++)
                CHECK_MSG(strcmp(o->name, s->options[j].name), "%s: --%s twice", s->name, o->name);
            if (o->kind == FC_OPT_CHOICE)
                CHECK_MSG(fc_option_words(o) != NULL, "%s --%s: no choices", s->name, o->name);
            if (o->kind == FC_OPT_INT || o->kind == FC_OPT_NUM)
                CHECK_MSG(o->setting || o->max > o->min, "%s --%s: no limits", s->name, o->name);
        }
    }
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(every_kind), T(bad_values), T(help_shows_the_table), T(wrapping), T(command_tables),
    };
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
