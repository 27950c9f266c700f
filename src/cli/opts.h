/* opts.h — each command described by one table: its synopsis, description,
 * arguments, options (name, value, help text, section, kind, limits, choices)
 * and exit status. The table drives the parsing (getopt_long), the checking of
 * values (numbers within limits, choices from the vocabularies of vocab.h and the
 * pattern registry), the "bad value" and "(valid: …)" messages and `--help`; the
 * man page, the bash completion and the README's option tables are generated
 * from it (gendoc.c). */
#ifndef FC_OPTS_H
#define FC_OPTS_H

#include "settings.h"
#include "util.h"
#include "vocab.h"

#include <stdio.h>

typedef enum {
    FC_OPT_FLAG,   /* no value */
    FC_OPT_TEXT,   /* any text: a file, a title, a sweep */
    FC_OPT_CHOICE, /* one of the choices */
    FC_OPT_LIST,   /* choices separated by commas; repeatable, the lists add up */
    FC_OPT_MULTI,  /* repeatable, each value whole */
    FC_OPT_INT,    /* an integer within the limits */
    FC_OPT_NUM,    /* a number within the limits */
    FC_OPT_BYTES,  /* a byte count at least the minimum, with an optional K, M, G or T */
    FC_OPT_SEED,   /* a non-negative integer */
} fc_opt_kind;

typedef struct fc_option {
    const char *name; /* the long name, without "--" */
    char short_name;  /* 'o' for -o, or 0 */
    fc_opt_kind kind;
    const char *metavar;       /* "N", "FILE"; NULL: the choices joined by '|' */
    const char *section;       /* the heading it is listed under in the help */
    const char *help;          /* what it does: one line of text, no final period */
    const char *def;           /* the default as the help shows it; NULL: the setting's, if any */
    const fc_setting *setting; /* numbers: the command-line limits of this setting, or: */
    double min, max;
    bool max_excluded;
    const fc_words *words; /* choices: a vocabulary, or one made on demand: */
    const fc_words *(*words_fn)(void);
    const char *also;           /* one more choice ("all") */
    const char *const *aliases; /* other spellings: {"markdown", "md", NULL}, pairs */
    bool file;                  /* the value may be a file name (completion offers files) */
} fc_option;

/* A positional argument. */
typedef struct fc_operand {
    const char *name; /* "FILE...", "A.json" */
    const char *help;
    const fc_words *words; /* its choices, or NULL */
    bool file;
} fc_operand;

typedef struct fc_args fc_args;

typedef struct fc_cmd_spec {
    const char *name;
    const char *summary;     /* one line for `fusecal help` */
    const char *synopsis;    /* after "fusecal NAME " */
    const char *description; /* paragraphs separated by blank lines */
    const fc_operand *operands;
    int noperands;
    const fc_option *options;
    int noptions;
    const char *exit_status;         /* "0 …, 1 …, 2 …" */
    int (*run)(const fc_args *args); /* the command, its options parsed: returns the exit status */
} fc_cmd_spec;

#define FC_MAX_OPTIONS 40

typedef struct fc_optval {
    bool given;
    const char *s;     /* TEXT; CHOICE: the word as the choices spell it */
    const char **list; /* LIST, MULTI */
    int n;
    int64_t i;  /* INT */
    double d;   /* NUM, BYTES */
    uint64_t u; /* SEED */
} fc_optval;

/* What a command line said: a value per option of the table (by index), the
 * operands, and the copies they all point into. */
struct fc_args {
    int argc; /* the command line as given (argv[0] is the command's name) */
    char **argv;
    fc_optval v[FC_MAX_OPTIONS];
    const char **operands;
    int noperands;
    char **owned;
    int nowned, cap;
    int rc; /* when parsing says stop: the exit status */
};

/* Parses the command line, then runs the command: the exit status. */
int fc_command_run(const fc_cmd_spec *spec, int argc, char **argv);
/* Parses argv (argv[0] is the command's name) by the table. Returns true to go
 * on; false when the command is to return a->rc at once: FC_EXIT_OK after --help
 * (printed), FC_EXIT_USAGE after a bad option or value (one line on stderr). */
bool fc_args_parse(const fc_cmd_spec *spec, int argc, char **argv, fc_args *a);
void fc_args_free(fc_args *a);
/* Whether any option of the table but those in `except` (indices, -1 ends) was
 * given; its name in *name. */
bool fc_args_other_than(const fc_cmd_spec *spec, const fc_args *a, const int *except, const char **name);

/* ---- what the help, the man page, the completion and the README show */
/* The choices of an option (NULL when it takes any value). */
const fc_words *fc_option_words(const fc_option *o);
/* "P[,P...]|all", "N", "cpu|cuda|all"; "" for a flag. */
void fc_option_metavar(const fc_option *o, char *buf, size_t n);
/* "--out FILE, -o FILE" */
void fc_option_label(const fc_option *o, char *buf, size_t n);
/* The help text with its default: "devices (default cpu)". */
void fc_option_text(const fc_option *o, fc_str *b);
/* The whole `--help` text of a command. */
void fc_help_text(const fc_cmd_spec *spec, fc_str *b);
/* Appends text wrapped to width columns: the first line continues at column
 * `col`, the others start at column `indent`. Returns the column it ends at. */
int fc_wrap(fc_str *b, const char *text, int col, int indent, int width);

/* The pattern registry's names and the built-in sweeps' as vocabularies. */
const fc_words *fc_pattern_words(void);
const fc_words *fc_sweep_words(void);
const fc_words *fc_network_words(void);

#endif
