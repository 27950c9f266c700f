/* gendoc.c — fusecal-gendoc: the documents made from the commands' tables
 * (opts.h), so that they say what `--help` says:
 *   fusecal-gendoc man [-o FILE]              the man page, fusecal.1
 *   fusecal-gendoc completion [-o FILE]       the bash completion script
 *   fusecal-gendoc markdown COMMAND [-o FILE] a command's option table in markdown
 *   fusecal-gendoc readme README.md [-o FILE] README.md with every option table
 *       (between "<!-- options: COMMAND -->" and "<!-- /options -->") generated anew
 * The build makes the first two; a test compares README.md with the last. */
#include "cmd.h"
#include "jsonfile.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define README_BEGIN "<!-- options: "
#define README_END "<!-- /options -->"

/* ------------------------------------------------------------------ man page */

/* Text for a roff text line: backslashes and dashes escaped, no control
 * character at the start. */
static void roff(fc_str *b, const char *s)
{
    if (*s == '.' || *s == '\'') fc_str_add(b, "\\&");
    for (; *s; s++) {
        if (*s == '\\') fc_str_add(b, "\\e");
        else if (*s == '-')
            fc_str_add(b, "\\-");
        else
            fc_str_addf(b, "%c", *s);
    }
}

static void roff_line(fc_str *b, const char *s)
{
    roff(b, s);
    fc_str_add(b, "\n");
}

/* "\fB--out\fR \fIFILE\fR, \fB-o\fR \fIFILE\fR" */
static void man_label(fc_str *b, const fc_option *o)
{
    char mv[256], name[64];
    fc_option_metavar(o, mv, sizeof mv);
    for (int s = 0; s < (o->short_name ? 2 : 1); s++) {
        if (s) fc_str_add(b, ", ");
        if (s) snprintf(name, sizeof name, "-%c", o->short_name);
        else
            snprintf(name, sizeof name, "--%s", o->name);
        fc_str_add(b, "\\fB");
        roff(b, name);
        fc_str_add(b, "\\fR");
        if (!mv[0]) continue;
        fc_str_add(b, " \\fI");
        roff(b, mv);
        fc_str_add(b, "\\fR");
    }
    fc_str_add(b, "\n");
}

/* Paragraphs; lines that start with a space are kept as they are. */
static void man_paragraphs(fc_str *b, const char *text)
{
    const char *p = text;
    bool verbatim = false;
    while (*p) {
        size_t len = strcspn(p, "\n");
        char *line = fc_xmalloc(len + 1);
        memcpy(line, p, len);
        line[len] = 0;
        bool pre = line[0] == ' ';
        if (pre != verbatim) fc_str_add(b, pre ? ".nf\n" : ".fi\n");
        verbatim = pre;
        if (!line[0]) fc_str_add(b, ".PP\n");
        else
            roff_line(b, line);
        free(line);
        p += len + (p[len] == '\n');
    }
    if (verbatim) fc_str_add(b, ".fi\n");
}

/* "what to measure" -> "What to measure" */
static void man_subsection(fc_str *b, const char *title)
{
    fc_str_addf(b, ".SS \"%c%s\"\n", toupper((unsigned char)title[0]), title + 1);
}

static void man_options(fc_str *b, const fc_cmd_spec *c)
{
    const char *section = NULL;
    for (int i = 0; i < c->noptions; i++) {
        const fc_option *o = &c->options[i];
        if (!section || strcmp(section, o->section)) man_subsection(b, o->section);
        section = o->section;
        fc_str_add(b, ".TP\n");
        man_label(b, o);
        fc_str t = {0};
        fc_option_text(o, &t);
        roff_line(b, fc_str_cstr(&t));
        fc_str_free(&t);
    }
    fc_str_add(b, ".TP\n\\fB\\-\\-help\\fR, \\fB\\-h\\fR\nthis help\n");
}

static void man_command(fc_str *b, const fc_cmd_spec *c)
{
    char upper[64];
    for (size_t i = 0; i <= strlen(c->name) && i < sizeof upper; i++)
        upper[i] = (char)toupper((unsigned char)c->name[i]);
    fc_str_addf(b, ".SH \"FUSECAL %s\"\n.B fusecal %s\n", upper, c->name);
    roff_line(b, c->synopsis);
    fc_str_add(b, ".PP\n");
    man_paragraphs(b, c->description);
    if (c->noperands) man_subsection(b, "arguments");
    for (int i = 0; i < c->noperands; i++) {
        fc_str_add(b, ".TP\n\\fI");
        roff(b, c->operands[i].name);
        fc_str_add(b, "\\fR\n");
        roff_line(b, c->operands[i].help);
    }
    man_options(b, c);
    man_subsection(b, "exit status");
    roff_line(b, c->exit_status);
}

static void man_page(fc_str *b)
{
    fc_str_addf(b,
                ".\\\" fusecal.1, made by fusecal-gendoc from the commands' option tables\n"
                ".TH FUSECAL 1 \"\" \"fusecal %s\" \"fusecal manual\"\n.nh\n.ad l\n.SH NAME\nfusecal \\- ",
                fc_version_string);
    roff_line(b, "measured fusion calibration of neural-network op chains");
    fc_str_add(b,
               ".SH SYNOPSIS\n.B fusecal\n\\fIcommand\\fR [\\fIoptions\\fR]\n.br\n.B fusecal help\n\\fIcommand\\fR\n"
               ".SH DESCRIPTION\n");
    roff_line(b, fc_tool_summary);
    roff_line(b, "Each command is described in a section of its own below:");
    for (int i = 0; i < fc_ncommands; i++) {
        fc_str_addf(b, ".TP\n.B %s\n", fc_commands[i]->name);
        roff_line(b, fc_commands[i]->summary);
    }
    fc_str_add(b, ".PP\n");
    roff_line(b, "Every command takes --help; 'fusecal help COMMAND' says the same.");
    for (int i = 0; i < fc_ncommands; i++) man_command(b, fc_commands[i]);
    fc_str_add(b, ".SH \"EXIT STATUS\"\n");
    roff_line(b,
              "0 success, 1 a measured or judged failure, 2 bad usage or input (one line on stderr naming what is "
              "wrong), 130 interrupted.");
    fc_str_add(b, ".SH FILES\n.TP\n.I share/fusecal/schemas/\n");
    roff_line(b,
              "the JSON Schemas of calibration documents, catalogue and sweep files, and thresholds files, beside "
              "the bin/ directory that holds fusecal");
}

/* ------------------------------------------------------------------ bash completion */

/* The words a value may take, separated by spaces. */
static void choice_words(fc_str *b, const fc_words *w, const char *also)
{
    for (int i = w ? w->first : 0; w && i < w->n; i++) fc_str_addf(b, "%s%s", b->len ? " " : "", w->names[i]);
    if (also) fc_str_addf(b, "%s%s", b->len ? " " : "", also);
}

/* "--a|--b) _fusecal_reply "$cur" "words" comma files; return ;;" for one option */
static void completion_value(fc_str *b, const fc_option *o)
{
    fc_str w = {0};
    choice_words(&w, fc_option_words(o), o->also);
    fc_str_addf(b, "    --%s", o->name);
    if (o->short_name) fc_str_addf(b, "|-%c", o->short_name);
    fc_str_addf(b, ") _fusecal_reply \"$cur\" \"%s\" %d %d; return ;;\n", fc_str_cstr(&w), o->kind == FC_OPT_LIST,
                o->file);
    fc_str_free(&w);
}

static void completion_command(fc_str *b, const fc_cmd_spec *c)
{
    fc_str_addf(b, "\n_fusecal_%s()\n{\n    local cur=$1 prev=$2\n    case $prev in\n", c->name);
    for (int i = 0; i < c->noptions; i++)
        if (c->options[i].kind != FC_OPT_FLAG) completion_value(b, &c->options[i]);
    fc_str_add(b, "    esac\n    if [[ $cur == -* ]]; then\n        _fusecal_reply \"$cur\" \"");
    for (int i = 0; i < c->noptions; i++) fc_str_addf(b, "--%s ", c->options[i].name);
    fc_str_add(b, "--help\" 0 0\n        return\n    fi\n");
    fc_str w = {0};
    bool files = false;
    for (int i = 0; i < c->noperands; i++) {
        files |= c->operands[i].file;
        if (c->operands[i].words && !w.len) choice_words(&w, c->operands[i].words, NULL);
    }
    fc_str_addf(b, "    _fusecal_reply \"$cur\" \"%s\" 0 %d\n}\n", fc_str_cstr(&w), files);
    fc_str_free(&w);
}

static void completion_script(fc_str *b)
{
    fc_str_add(b,
               "# bash completion for fusecal, made by fusecal-gendoc from the commands' option tables\n\n"
               "# _fusecal_reply CUR WORDS COMMA FILES: CUR completed from WORDS (COMMA=1: the last item of a\n"
               "# comma-separated list), and from file names when FILES=1\n"
               "_fusecal_reply()\n{\n    local cur=$1 prefix=\n"
               "    if [[ $3 == 1 && $cur == *,* ]]; then\n        prefix=${cur%,*},\n        cur=${cur##*,}\n    fi\n"
               "    COMPREPLY=($(compgen -P \"$prefix\" -W \"$2\" -- \"$cur\"))\n"
               "    if [[ $4 == 1 ]]; then COMPREPLY+=($(compgen -f -- \"$cur\")); fi\n}\n");
    for (int i = 0; i < fc_ncommands; i++) completion_command(b, fc_commands[i]);
    fc_str cmds = {0};
    for (int i = 0; i < fc_ncommands; i++) fc_str_addf(&cmds, "%s ", fc_commands[i]->name);
    fc_str_addf(b,
                "\n_fusecal()\n{\n    local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd= i\n"
                "    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
                "    # --option=value: bash splits the word at '='\n"
                "    if [[ $cur == = ]]; then cur=; fi\n"
                "    if [[ $prev == = ]] && ((COMP_CWORD > 1)); then prev=${COMP_WORDS[COMP_CWORD - 2]}; fi\n"
                "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
                "        case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break ;; esac\n    done\n"
                "    case $cmd in\n"
                "    '') _fusecal_reply \"$cur\" \"%shelp --help --version\" 0 0 ;;\n"
                "    help) _fusecal_reply \"$cur\" \"%s\" 0 0 ;;\n",
                fc_str_cstr(&cmds), fc_str_cstr(&cmds));
    for (int i = 0; i < fc_ncommands; i++)
        fc_str_addf(b, "    %s) _fusecal_%s \"$cur\" \"$prev\" ;;\n", fc_commands[i]->name, fc_commands[i]->name);
    fc_str_add(b, "    *) COMPREPLY=() ;;\n    esac\n}\ncomplete -o filenames -F _fusecal fusecal\n");
    fc_str_free(&cmds);
}

/* ------------------------------------------------------------------ markdown */

/* A table cell: '|' would end it; outside a code span '<' would start an HTML tag. */
static void md_cell(fc_str *b, const char *s, bool code)
{
    for (; *s; s++) {
        if (*s == '|') fc_str_add(b, "\\|");
        else if (*s == '<' && !code)
            fc_str_add(b, "&lt;");
        else if (*s == '>' && !code)
            fc_str_add(b, "&gt;");
        else
            fc_str_addf(b, "%c", *s);
    }
}

static void markdown_table(fc_str *b, const fc_cmd_spec *c)
{
    fc_str_add(b, "| option | meaning |\n| --- | --- |\n");
    for (int i = 0; i < c->noperands; i++) {
        fc_str_add(b, "| `");
        md_cell(b, c->operands[i].name, true);
        fc_str_add(b, "` | ");
        md_cell(b, c->operands[i].help, false);
        fc_str_add(b, " |\n");
    }
    for (int i = 0; i < c->noptions; i++) {
        char label[512];
        fc_str t = {0};
        fc_option_label(&c->options[i], label, sizeof label);
        fc_option_text(&c->options[i], &t);
        fc_str_add(b, "| `");
        md_cell(b, label, true);
        fc_str_add(b, "` | ");
        md_cell(b, fc_str_cstr(&t), false);
        fc_str_add(b, " |\n");
        fc_str_free(&t);
    }
    fc_str_add(b, "| `--help, -h` | this help |\n");
}

/* The index of the command whose table a "<!-- options: NAME -->" line opens, or -1. */
static int table_command(const char *line)
{
    const char *name = line + strlen(README_BEGIN);
    for (int i = 0; i < fc_ncommands; i++) {
        size_t l = strlen(fc_commands[i]->name);
        if (!strncmp(name, fc_commands[i]->name, l) && name[l] == ' ') return i;
    }
    return -1;
}

/* README.md with its option tables made anew; every command must have one. */
static int readme(const char *path, fc_str *b, fc_err *e)
{
    char *text;
    size_t len;
    if (fc_read_file(path, 1u << 24, &text, &len, e) != 0) return -1;
    bool seen[64] = {0}, inside = false;
    int rc = 0;
    for (char *line = text, *next; *line && rc == 0; line = next) {
        next = line + strcspn(line, "\n");
        next += *next == '\n';
        if (inside && strncmp(line, README_END, strlen(README_END))) continue; /* the old table */
        inside = false;
        fc_str_addf(b, "%.*s", (int)(next - line), line);
        if (strncmp(line, README_BEGIN, strlen(README_BEGIN))) continue;
        int c = table_command(line);
        if (c < 0) {
            rc = fc_errf(e, "%s: an option table of an unknown command: %.*s", path, (int)(next - line - 1), line);
            break;
        }
        markdown_table(b, fc_commands[c]);
        seen[c] = inside = true;
    }
    if (!rc && inside) rc = fc_errf(e, "%s: an option table without its end line '%s'", path, README_END);
    for (int i = 0; !rc && i < fc_ncommands; i++)
        if (!seen[i])
            rc = fc_errf(e, "%s: no option table of '%s' (a line '%s%s -->', the table, a line '%s')", path,
                         fc_commands[i]->name, README_BEGIN, fc_commands[i]->name, README_END);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------ main */

static int usage(void)
{
    fprintf(stderr,
            "usage: fusecal-gendoc man|completion [-o FILE]\n"
            "       fusecal-gendoc markdown COMMAND [-o FILE]\n"
            "       fusecal-gendoc readme README.md [-o FILE]\n");
    return FC_EXIT_USAGE;
}

static int generate(const char *what, const char *arg, fc_str *b, fc_err *e)
{
    if (!strcmp(what, "man") && !arg) man_page(b);
    else if (!strcmp(what, "completion") && !arg)
        completion_script(b);
    else if (!strcmp(what, "readme") && arg)
        return readme(arg, b, e);
    else if (!strcmp(what, "markdown") && arg && fc_command_find(arg))
        markdown_table(b, fc_command_find(arg));
    else if (!strcmp(what, "markdown") && arg)
        return fc_errf(e, "unknown command '%s'", arg);
    else
        return usage();
    return 0;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *what = NULL, *arg = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (!what)
            what = argv[i];
        else if (!arg)
            arg = argv[i];
        else
            return usage();
    }
    if (!what) return usage();
    fc_str b = {0};
    fc_err e;
    int rc = generate(what, arg, &b, &e);
    if (rc == -1) rc = fc_fail(FC_EXIT_FAIL, &e);
    else if (rc == 0 && out && fc_write_file_atomic(out, fc_str_cstr(&b), b.len, &e) != 0)
        rc = fc_fail(FC_EXIT_FAIL, &e);
    else if (rc == 0 && !out)
        fputs(fc_str_cstr(&b), stdout);
    fc_str_free(&b);
    return rc;
}
