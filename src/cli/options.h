/* The option tables of the CLI: each subcommand describes its options once, in a table that
 * gives both its parsing and its --help (in the manner of perf's parse-options). Values are
 * offsets into the command's own struct, so that a table is a constant and one command can
 * take another's options (profile takes record's and report's). */
#ifndef LP_CLI_OPTIONS_H
#define LP_CLI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "llmprof/model.h"

enum lp_cli_opt_kind {
    LP_CLI_OPT_KIND_END,      /* ends a table */
    LP_CLI_OPT_KIND_TEXT,     /* --help only: HELP as it is (a heading, a paragraph), or PRINT */
    LP_CLI_OPT_KIND_HELP,     /* -h, --help: prints the command's help; the command exits 0 */
    LP_CLI_OPT_KIND_FLAG,     /* int at OFF = SET */
    LP_CLI_OPT_KIND_STRING,   /* const char * at OFF = the argument */
    LP_CLI_OPT_KIND_INT,      /* int64_t at OFF: a whole number from MIN to MAX */
    LP_CLI_OPT_KIND_DOUBLE,   /* double at OFF: a number above 0, at most DMAX (no NaN, inf) */
    LP_CLI_OPT_KIND_CALLBACK, /* PARSE, given the value at OFF */
    LP_CLI_OPT_KIND_TABLE,    /* the options of TABLE, on the struct at OFF; not in --help */
};

struct lp_cli_opt {
    enum lp_cli_opt_kind kind;
    const char *name, *alias;   /* "--output", "-o" (either may be NULL) */
    const char *arg;            /* the value's name in --help ("DIR"); NULL: takes no value */
    const char *help;           /* lines ('\n' between) from the help column; NULL: not shown
                                   (a line before documents it) */
    const char *spell;          /* --help's left column when not "ALIAS, NAME ARG" */
    size_t off;                 /* where the value is in the command's struct */
    int set;                    /* FLAG */
    int64_t min, max;           /* INT */
    double dmax;                /* DOUBLE */
    const char *missing;        /* STRING: "OPT needs MISSING" without an argument ("a value") */
    const char *empty;          /* STRING: "OPT needs EMPTY" for an empty one (NULL: taken) */
    /* CALLBACK: 0, or -1 with a message; ARG is NULL when the command line ends first */
    int (*parse)(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                 const char *arg);
    const struct lp_cli_opt *table; /* TABLE */
    void (*print)(FILE *f);         /* TEXT made when printed */
};

/* A subcommand: its name (in messages), its table, and what its operands are. */
struct lp_cli_cmd {
    const char *name;
    const struct lp_cli_opt *opts;
    int help_col;               /* the column of the options' help in --help */
    /* OPERAND operands (1 or 2), stored from OPERAND_OFF on (an array of const char *); one
     * more is refused with "TOO_MANY: 'A' and 'B'" (TOO_MANY NULL: "unexpected 'B'", as for
     * an unknown option) */
    int operand;
    size_t operand_off;
    const char *too_many;
    int unexpected;             /* an unknown option is "unexpected 'X'" (else "unknown option") */
    /* no operand of its own: the first word that is not an option (or the one after "--")
     * ends the options; it is the command to run (record, profile) */
    int stops_at_command;
};

/* Parses ARGV[1..] into CTX: 0, 1 when --help (or --list-options) was printed, -1 after a
 * message (a mistake: status 2). *FIRST (may be NULL) is the index of the command to run
 * (stops_at_command). */
int lp_cli_parse(const struct lp_cli_cmd *c, void *ctx, int argc, char **argv, int *first);
/* The hidden first word of every command, "llmprof CMD --list-options": every spelling of
 * an option C accepts (its table and the tables it takes in), one a line, "NAME\tARG" when
 * it takes a value; what tests/cli_help.py holds each --help to. lp_cli_parse answers it; a
 * command that parses alone calls lp_cli_list_options: 1 when WORD asked and the list was
 * printed, else 0. */
#define LP_CLI_LIST_OPTIONS "--list-options"
int lp_cli_list_options(const struct lp_cli_cmd *c, const char *word);
/* Levenshtein distance of A and B, stopping at LIMIT + 1: only near misses matter. */
size_t lp_cli_edit_distance(const char *a, const char *b, size_t limit);
/* The one of NAMES (N of them) within two edits of WORD, nearest first, for "did you
 * mean"; NULL when none is (a word of one or two letters is within two edits of too much). */
const char *lp_cli_nearest(const char *word, const char *const *names, size_t n);
/* "OPT takes A, B or C, not 'V'" on stderr, with "; did you mean 'B'?" when one of NAMES
 * (N of them) is near V (NULL: the command line ended): -1. */
int lp_cli_bad_value(const char *cmd, const char *opt, const char *v, const char *const *names,
                     size_t n);
/* 1 when WORD is C's -h or --help, else 0 */
int lp_cli_is_help(const struct lp_cli_cmd *c, const char *word);
/* C's --help, from its table. */
void lp_cli_help(const struct lp_cli_cmd *c, FILE *f);
/* LEAD, then the options of TABLE (and of the tables it takes in) but --help and those named
 * in EXCEPT (NULL-terminated, or NULL), spelt "-o/--output DIR" and separated by commas in
 * lines of at most LP_CLI_HELP_WIDTH, then TAIL ("." or NULL) and a newline: how the --help
 * of a command that takes another's table names every option it takes from it. */
void lp_cli_help_names(FILE *f, const char *lead, const struct lp_cli_opt *table,
                       const char *const *except, const char *tail);
/* TEXT as a paragraph of lines of at most WIDTH columns, broken at spaces. */
void lp_cli_wrap(FILE *f, const char *text, int width);
#define LP_CLI_HELP_WIDTH 90

/* Option values; on a bad one they print "llmprof CMD: OPT takes ..." (or "OPT V is too
 * large" past the range) and return -1. */
int lp_cli_parse_range(const char *cmd, const char *opt, const char *v, int64_t min,
                       int64_t max, int64_t *out);
int lp_cli_parse_double(const char *cmd, const char *opt, const char *v, double max, double *out);
/* A CALLBACK's PARSE for a size in bytes: digits and an optional K, M, G or T (powers of
 * 1024), below 2^63 bytes; a uint64_t at OFF. */
/* A repeatable option's values, in order (free V; the strings are argv's) */
struct lp_cli_words {
    const char **v;
    size_t n;
};
/* CALLBACKs on a struct lp_cli_words at OFF: each value appended ("OPT needs ARG" when
 * missing); a stage rule, NAME=REGEX, checked for its '=' first (report, watch) */
int lp_cli_opt_append(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                      const char *arg);
int lp_cli_opt_stage(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg);
int lp_cli_opt_bytes(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg);

/* ---- the workload and GPU options of model and report (workload.c) ---- */

struct lp_cli_workload {
    struct lp_workload w;
    const char *gpu, *hw_file;
    double peak_tflops, mem_bw_gbs; /* 0: the table's */
    int vision_set;                 /* --vision or --tiles was given */
    int prefill_logits_set;         /* --prefill-logits was given */
};
void lp_cli_workload_init(struct lp_cli_workload *g);

/* The callbacks behind the entries below: the dtypes get their enum lp_dtype, the others
 * the struct lp_cli_workload. */
int lp_cli_opt_dtype(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg);
int lp_cli_opt_compute_dtype(const struct lp_cli_opt *o, void *value, const char *cmd,
                             const char *opt, const char *arg);
int lp_cli_opt_prefill_logits(const struct lp_cli_opt *o, void *value, const char *cmd,
                              const char *opt, const char *arg);
int lp_cli_opt_vision(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                      const char *arg);
int lp_cli_opt_tiles(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                     const char *arg);

/* The group's entries, each defined here once: OFF is where the command's struct holds its
 * struct lp_cli_workload; SP and HL are the command's --help for it (the left column, NULL
 * for the usual one; the text, NULL when a line before documents it). */
#define LP_CLI_WL_CB(nm, ar, fn, sp, hl, o)                                                   \
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = nm, .arg = ar, .spell = sp, .help = hl,       \
     .off = (o), .parse = fn}
#define LP_CLI_WL_FIELD(o, field) ((o) + offsetof(struct lp_cli_workload, field))
#define LP_CLI_OPT_WEIGHTS(o, sp, hl)                                                         \
    LP_CLI_WL_CB("--weights", "DT", lp_cli_opt_dtype, sp, hl, LP_CLI_WL_FIELD(o, w.weights))
#define LP_CLI_OPT_ACT(o, sp, hl)                                                             \
    LP_CLI_WL_CB("--act", "DT", lp_cli_opt_compute_dtype, sp, hl,                             \
                 LP_CLI_WL_FIELD(o, w.activations))
#define LP_CLI_OPT_KV(o, sp, hl)                                                              \
    LP_CLI_WL_CB("--kv", "DT", lp_cli_opt_dtype, sp, hl, LP_CLI_WL_FIELD(o, w.kv))
#define LP_CLI_OPT_PREFILL_LOGITS(o, sp, hl)                                                  \
    LP_CLI_WL_CB("--prefill-logits", "all|last", lp_cli_opt_prefill_logits, sp, hl, o)
#define LP_CLI_OPT_VISION(o, sp, hl) LP_CLI_WL_CB("--vision", "MODE", lp_cli_opt_vision, sp, hl, o)
#define LP_CLI_OPT_TILES(o, sp, hl) LP_CLI_WL_CB("--tiles", "WxH", lp_cli_opt_tiles, sp, hl, o)
#define LP_CLI_OPT_GPU(o, sp, hl)                                                             \
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--gpu", .arg = "NAME", .spell = sp, .help = hl, \
     .off = LP_CLI_WL_FIELD(o, gpu), .missing = "a name"}
#define LP_CLI_OPT_HW_FILE(o, sp, hl)                                                         \
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "--hw-file", .arg = "FILE", .spell = sp,         \
     .help = hl, .off = LP_CLI_WL_FIELD(o, hw_file), .missing = "a file"}
#define LP_CLI_OPT_PEAK_TFLOPS(o, sp, hl)                                                     \
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--peak-tflops", .arg = "X", .spell = sp,        \
     .help = hl, .off = LP_CLI_WL_FIELD(o, peak_tflops),                  \
     .dmax = LP_MODEL_MAX_TFLOPS}
#define LP_CLI_OPT_MEM_BW(o, sp, hl)                                                          \
    {.kind = LP_CLI_OPT_KIND_DOUBLE, .name = "--mem-bw", .arg = "GBS", .spell = sp,           \
     .help = hl, .off = LP_CLI_WL_FIELD(o, mem_bw_gbs),                   \
     .dmax = LP_MODEL_MAX_BW_GBS}

/* --listen's HOST:PORT or [IPV6]:PORT into HOST (BUF, without brackets; localhost is
 * 127.0.0.1) and *PORT: 0, or -1 with a message */
int lp_cli_split_listen(const char *cmd, const char *spec, char *buf, size_t len, unsigned *port);

#endif
