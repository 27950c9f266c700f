/* opts.c — see opts.h. */
#include "opts.h"
#include "catalog.h"
#include "cmd.h"
#include "network.h"
#include "pattern.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) (fc_usage_error(__VA_ARGS__), false)
#define HELP_WIDTH 80
#define HELP_MAX_COLUMN 30 /* labels longer than this put their text on the next line */

/* ------------------------------------------------------------------ choices */

const fc_words *fc_option_words(const fc_option *o) { return o->words_fn ? o->words_fn() : o->words; }

const fc_words *fc_pattern_words(void)
{
    static const char *names[FC_NPATTERNS];
    static const fc_words w = {"pattern", names, FC_NPATTERNS, 0};
    for (int i = 0; i < FC_NPATTERNS; i++) names[i] = fc_patterns[i].name;
    return &w;
}

/* fc_sweep_names() ("quick, standard, full") split into words */
const fc_words *fc_sweep_words(void)
{
    static char buf[256];
    static const char *names[16];
    static fc_words w = {"sweep", names, 0, 0};
    if (w.n) return &w;
    fc_strlcpy(buf, fc_sweep_names(), sizeof buf);
    char *save = NULL;
    for (char *t = strtok_r(buf, ", ", &save); t && w.n < (int)FC_ARRAY_LEN(names); t = strtok_r(NULL, ", ", &save))
        names[w.n++] = t;
    return &w;
}

/* The embedded networks' names */
const fc_words *fc_network_words(void)
{
    static char store[64][64];
    static const char *names[64];
    static fc_words w = {"network", names, 0, 0};
    if (w.n) return &w;
    for (int i = 0; fc_network_embedded(i) && w.n < (int)FC_ARRAY_LEN(names); i++) {
        fc_strlcpy(store[w.n], fc_network_embedded(i), sizeof store[w.n]);
        names[w.n] = store[w.n];
        w.n++;
    }
    return &w;
}

/* The word s names among the option's choices (an alias resolved), or NULL. */
static const char *choice_find(const fc_option *o, const char *s)
{
    for (const char *const *al = o->aliases; al && al[0]; al += 2)
        if (!strcmp(s, al[0])) s = al[1];
    const fc_words *w = fc_option_words(o);
    int i = w ? fc_word_index(w, s) : -1;
    if (i >= 0) return w->names[i];
    return o->also && !strcmp(s, o->also) ? o->also : NULL;
}

/* "fp32, tf32, bf16, fp16" (and the extra choice) */
static void choices_text(const fc_option *o, const char *sep, char *buf, size_t n)
{
    const fc_words *w = fc_option_words(o);
    size_t off = 0;
    buf[0] = 0;
    for (int i = w ? w->first : 0; w && i < w->n && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? sep : "", w->names[i]);
    if (o->also && off < n) snprintf(buf + off, n - off, "%s%s", off ? sep : "", o->also);
}

static bool choice_error(const fc_option *o, const char *value)
{
    char valid[1024];
    choices_text(o, ", ", valid, sizeof valid);
    const fc_words *w = fc_option_words(o);
    char what[64];
    if (w && w->what && w->what[0]) fc_strlcpy(what, w->what, sizeof what);
    else
        snprintf(what, sizeof what, "--%s", o->name);
    return FAIL("unknown %s '%s' (valid: %s)", what, value, valid);
}

/* ------------------------------------------------------------------ values */

static const char *own(fc_args *a, const char *s)
{
    if (a->nowned == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 16;
        a->owned = fc_xrealloc(a->owned, (size_t)a->cap * sizeof *a->owned);
    }
    return a->owned[a->nowned++] = fc_xstrdup(s);
}

static void push(fc_optval *v, const char *s)
{
    v->list = fc_xrealloc(v->list, (size_t)(v->n + 1) * sizeof *v->list);
    v->list[v->n++] = s;
}

static bool set_list(const fc_option *o, const char *arg, fc_optval *v, fc_args *a)
{
    char *copy = (char *)own(a, arg), *save = NULL;
    int before = v->n;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char *word = fc_option_words(o) || o->also ? choice_find(o, t) : t;
        if (!word) return choice_error(o, t);
        push(v, word);
    }
    if (v->n == before) return FAIL("empty value for --%s", o->name);
    return true;
}

static void limits_of(const fc_option *o, double *lo, double *hi)
{
    *lo = o->setting ? o->setting->ask_min : o->min;
    *hi = o->setting ? o->setting->ask_max : o->max;
}

static bool set_number(const fc_option *o, const char *arg, fc_optval *v)
{
    double lo, hi, x = 0;
    limits_of(o, &lo, &hi);
    bool integer = o->kind == FC_OPT_INT;
    bool ok = fc_parse_double(arg, &x) && x >= lo && (o->max_excluded ? x < hi : x <= hi);
    if (ok && integer) ok = fc_parse_i64(arg, &v->i);
    if (!ok)
        return FAIL("bad value for --%s: '%s' (expected %s in [%g, %g%c)", o->name, arg,
                    integer ? "an integer" : "a number", lo, hi, o->max_excluded ? ')' : ']');
    v->d = x;
    return true;
}

static bool set_bytes(const fc_option *o, const char *arg, fc_optval *v)
{
    static const char units[] = "KMGT";
    char buf[64];
    fc_strlcpy(buf, arg, sizeof buf);
    size_t l = strlen(buf);
    double mul = 1, x = 0, lo, hi;
    const char *unit = l ? strchr(units, toupper((unsigned char)buf[l - 1])) : NULL;
    if (unit && *unit) {
        mul = ldexp(1, 10 * (int)(unit - units + 1));
        buf[l - 1] = 0;
    }
    limits_of(o, &lo, &hi);
    if (strlen(arg) >= sizeof buf || !fc_parse_double(buf, &x) || !isfinite(x * mul) || x * mul < lo || x * mul > hi)
        return FAIL("bad value for --%s: '%s' (expected bytes, e.g. 8G)", o->name, arg);
    v->d = x * mul;
    return true;
}

static bool set_value(const fc_option *o, const char *arg, fc_optval *v, fc_args *a)
{
    v->given = true;
    switch (o->kind) {
    case FC_OPT_FLAG: return true;
    case FC_OPT_TEXT: v->s = own(a, arg); return true;
    case FC_OPT_CHOICE:
        if (!(v->s = choice_find(o, arg))) return choice_error(o, arg);
        return true;
    case FC_OPT_LIST: return set_list(o, arg, v, a);
    case FC_OPT_MULTI: push(v, own(a, arg)); return true;
    case FC_OPT_INT:
    case FC_OPT_NUM: return set_number(o, arg, v);
    case FC_OPT_BYTES: return set_bytes(o, arg, v);
    case FC_OPT_SEED: {
        int64_t s;
        if (!fc_parse_i64(arg, &s) || s < 0)
            return FAIL("bad value for --%s: '%s' (expected a non-negative integer)", o->name, arg);
        v->u = (uint64_t)s;
        return true;
    }
    }
    return false;
}

/* ------------------------------------------------------------------ parsing */

/* The long options and the short ones ("o:") of the table; val is 256 + index. */
static void getopt_tables(const fc_cmd_spec *spec, struct option *lo, char *shorts)
{
    char *sp = shorts;
    *sp++ = ':';
    *sp++ = 'h';
    for (int i = 0; i < spec->noptions; i++) {
        const fc_option *o = &spec->options[i];
        int arg = o->kind == FC_OPT_FLAG ? no_argument : required_argument;
        lo[i] = (struct option){o->name, arg, NULL, 256 + i};
        if (o->short_name) {
            *sp++ = o->short_name;
            if (arg == required_argument) *sp++ = ':';
        }
    }
    lo[spec->noptions] = (struct option){"help", no_argument, NULL, 'h'};
    lo[spec->noptions + 1] = (struct option){0, 0, 0, 0};
    *sp = 0;
}

/* An option getopt turned down: unknown, ambiguous, or a flag given a value. */
static void option_error(const fc_cmd_spec *spec, const char *arg)
{
    if (optopt >= 256) {
        fc_usage_error("option '--%s' takes no value", spec->options[optopt - 256].name);
        return;
    }
    if (optopt == 'h' && !strncmp(arg, "--", 2)) { /* --help=x: a long option given a value */
        fc_usage_error("option '--help' takes no value");
        return;
    }
    if (optopt) {
        fc_usage_error("unknown option '-%c' (see 'fusecal %s --help')", optopt, spec->name);
        return;
    }
    char cands[512] = "", name[128];
    int n = 0;
    fc_strlcpy(name, arg + 2, sizeof name);
    name[strcspn(name, "=")] = 0;
    for (int i = 0; i < spec->noptions && !strncmp(arg, "--", 2); i++)
        if (name[0] && !strncmp(spec->options[i].name, name, strlen(name))) {
            size_t l = strlen(cands);
            snprintf(cands + l, sizeof cands - l, "%s--%s", n++ ? ", " : "", spec->options[i].name);
        }
    if (n > 1) fc_usage_error("ambiguous option '%s' (could be %s)", arg, cands);
    else
        fc_usage_error("unknown option '%s' (see 'fusecal %s --help')", arg, spec->name);
}

static int option_index(const fc_cmd_spec *spec, int c)
{
    if (c >= 256) return c - 256;
    for (int i = 0; i < spec->noptions; i++)
        if (spec->options[i].short_name == c) return i;
    return -1;
}

bool fc_args_parse(const fc_cmd_spec *spec, int argc, char **argv, fc_args *a)
{
    memset(a, 0, sizeof *a);
    a->argc = argc;
    a->argv = argv;
    struct option lo[FC_MAX_OPTIONS + 2];
    char shorts[3 * FC_MAX_OPTIONS + 3];
    getopt_tables(spec, lo, shorts);
    optind = 0; /* GNU getopt: start afresh (a command line may be parsed twice) */
    opterr = 0;
    a->rc = FC_EXIT_USAGE;
    int c;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == 'h') {
            fc_str b = {0};
            fc_help_text(spec, &b);
            fputs(fc_str_cstr(&b), stdout);
            fc_str_free(&b);
            a->rc = FC_EXIT_OK;
            return false;
        }
        if (c == ':') return FAIL("option '%s' needs a value", argv[optind - 1]);
        int i = c == '?' ? -1 : option_index(spec, c);
        if (i < 0) {
            option_error(spec, argv[optind - 1]);
            return false;
        }
        if (!set_value(&spec->options[i], optarg, &a->v[i], a)) return false;
    }
    for (int i = optind; i < argc; i++) {
        a->operands = fc_xrealloc(a->operands, (size_t)(a->noperands + 1) * sizeof *a->operands);
        a->operands[a->noperands++] = own(a, argv[i]);
    }
    a->rc = FC_EXIT_OK;
    return true;
}

int fc_command_run(const fc_cmd_spec *spec, int argc, char **argv)
{
    fc_args args;
    int rc = fc_args_parse(spec, argc, argv, &args) ? spec->run(&args) : args.rc;
    fc_args_free(&args);
    return rc;
}

void fc_args_free(fc_args *a)
{
    for (int i = 0; i < FC_MAX_OPTIONS; i++) free(a->v[i].list);
    while (a->nowned) free(a->owned[--a->nowned]);
    free(a->owned);
    free(a->operands);
    memset(a, 0, sizeof *a);
}

bool fc_args_other_than(const fc_cmd_spec *spec, const fc_args *a, const int *except, const char **name)
{
    for (int i = 0; i < spec->noptions; i++) {
        bool allowed = false;
        for (const int *e = except; *e >= 0; e++) allowed |= *e == i;
        if (a->v[i].given && !allowed) {
            *name = spec->options[i].name;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ help */

void fc_option_metavar(const fc_option *o, char *buf, size_t n)
{
    if (o->kind == FC_OPT_FLAG) buf[0] = 0;
    else if (o->metavar)
        fc_strlcpy(buf, o->metavar, n);
    else
        choices_text(o, "|", buf, n);
}

void fc_option_label(const fc_option *o, char *buf, size_t n)
{
    char mv[256];
    fc_option_metavar(o, mv, sizeof mv);
    int l = snprintf(buf, n, "--%s%s%s", o->name, mv[0] ? " " : "", mv);
    if (o->short_name && l >= 0 && (size_t)l < n)
        snprintf(buf + l, n - (size_t)l, ", -%c%s%s", o->short_name, mv[0] ? " " : "", mv);
}

void fc_option_text(const fc_option *o, fc_str *b)
{
    fc_str_add(b, o->help);
    if (o->def) fc_str_addf(b, " (default: %s)", o->def);
    else if (o->setting && !isnan(o->setting->def))
        fc_str_addf(b, " (default: %g)", o->setting->def);
}

int fc_wrap(fc_str *b, const char *text, int col, int indent, int width)
{
    const char *p = text;
    bool first = true;
    while (*p) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, " ");
        if (!len) break;
        if (!first && col + 1 + (int)len > width) {
            fc_str_addf(b, "\n%*s", indent, "");
            col = indent;
        } else if (!first) {
            fc_str_add(b, " ");
            col++;
        }
        fc_str_addf(b, "%.*s", (int)len, p);
        col += (int)len;
        p += len;
        first = false;
    }
    return col;
}

/* Paragraphs separated by blank lines; a line that starts with a space is kept
 * as it is (a small table). */
static void paragraphs(fc_str *b, const char *text)
{
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, "\n");
        char *line = fc_xmalloc(len + 1);
        memcpy(line, p, len);
        line[len] = 0;
        if (line[0] == ' ') fc_str_add(b, line);
        else
            fc_wrap(b, line, 0, 0, HELP_WIDTH);
        fc_str_add(b, "\n");
        free(line);
        p += len + (p[len] == '\n');
    }
}

static void help_row(fc_str *b, const char *label, const fc_str *text, int column)
{
    fc_str_addf(b, "  %s", label);
    int col = 2 + (int)strlen(label);
    if (col + 2 > column) {
        fc_str_addf(b, "\n%*s", column, "");
    } else {
        fc_str_addf(b, "%*s", column - col, "");
    }
    fc_wrap(b, fc_str_cstr(text), column, column, HELP_WIDTH);
    fc_str_add(b, "\n");
}

static int label_column(const fc_cmd_spec *spec)
{
    int w = (int)strlen("--help, -h");
    for (int i = 0; i < spec->noperands; i++)
        if ((int)strlen(spec->operands[i].name) > w) w = (int)strlen(spec->operands[i].name);
    for (int i = 0; i < spec->noptions; i++) {
        char label[512];
        fc_option_label(&spec->options[i], label, sizeof label);
        if ((int)strlen(label) > w) w = (int)strlen(label);
    }
    w += 4; /* two before, two after */
    return w > HELP_MAX_COLUMN ? HELP_MAX_COLUMN : w;
}

void fc_help_text(const fc_cmd_spec *spec, fc_str *b)
{
    int column = label_column(spec);
    char usage[64];
    snprintf(usage, sizeof usage, "usage: fusecal %s", spec->name);
    fc_str_addf(b, "%s ", usage);
    fc_wrap(b, spec->synopsis, (int)strlen(usage) + 1, (int)strlen(usage) + 1, HELP_WIDTH); /* the synopsis aligned */
    fc_str_add(b, "\n\n");
    paragraphs(b, spec->description);
    if (spec->noperands) fc_str_add(b, "\narguments:\n");
    for (int i = 0; i < spec->noperands; i++) {
        fc_str t = {.s = NULL};
        fc_str_add(&t, spec->operands[i].help);
        help_row(b, spec->operands[i].name, &t, column);
        fc_str_free(&t);
    }
    const char *section = NULL;
    for (int i = 0; i <= spec->noptions; i++) {
        const fc_option *o = i < spec->noptions ? &spec->options[i] : NULL;
        const char *s = o ? o->section : "";
        if (!section || strcmp(section, s)) fc_str_addf(b, "\n%s%s", s, s[0] ? ":\n" : "");
        section = s;
        char label[512];
        fc_str t = {.s = NULL};
        if (o) {
            fc_option_label(o, label, sizeof label);
            fc_option_text(o, &t);
        } else {
            fc_strlcpy(label, "--help, -h", sizeof label);
            fc_str_add(&t, "this help");
        }
        help_row(b, label, &t, column);
        fc_str_free(&t);
    }
    fc_str exit = {0};
    fc_str_addf(&exit, "exit status: %s", spec->exit_status);
    fc_str_add(b, "\n");
    fc_wrap(b, fc_str_cstr(&exit), 0, 0, HELP_WIDTH);
    fc_str_add(b, "\n");
    fc_str_free(&exit);
}
