/* Subcommands of the llmprof CLI, one file each, and the helpers they share. */
#ifndef LP_CLI_H
#define LP_CLI_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <jansson.h>

#include "llmprof/analyze.h"
#include "llmprof/compare.h"
#include "llmprof/model.h"
#include "options.h"

/* The exit status of every command, one rule (README's "Exit status", `llmprof --help`):
 * 0 success; LP_CLI_EXIT_INPUT when an input could not be used (missing, unreadable, not a
 * regular file, damaged; a config or hardware table that cannot be parsed; a run of several
 * traces where one is needed; runs that cannot be compared) or the work failed midway (an
 * output could not be written, ncu failed); LP_CLI_EXIT_USAGE when the command line is wrong
 * (an unknown option, a missing operand or value, a bad value, options that conflict, an
 * output refused before any work: one of the inputs, a directory where a file goes, a file
 * or run already there without --force). Exceptions, each for a reason: record and profile
 * exit with the profiled command's status (127 when it cannot be run); diff exits with
 * LP_CLI_EXIT_RULE when a --fail-if rule failed or its figure was not measured in both runs,
 * so that a CI gate tells a regression from a run that could not be read. */
#define LP_CLI_EXIT_INPUT 1
#define LP_CLI_EXIT_USAGE 2
#define LP_CLI_EXIT_RULE 3

int lp_cmd_record(int argc, char **argv);
int lp_cmd_info(int argc, char **argv);
int lp_cmd_model(int argc, char **argv);
int lp_cmd_report(int argc, char **argv);
int lp_cmd_export(int argc, char **argv);
int lp_cmd_profile(int argc, char **argv);
int lp_cmd_deep(int argc, char **argv);
int lp_cmd_diff(int argc, char **argv);
int lp_cmd_serve(int argc, char **argv);
int lp_cmd_watch(int argc, char **argv);
int lp_cmd_runs(int argc, char **argv);

/* "llmprof <cmd>: message" on stderr. */
void lp_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Finds CMD like execvp would (a path with '/' as it is, else through PATH): 0 with PATH
 * set to an executable regular file, else -1. */
int lp_cli_resolve(const char *cmd, char *path, size_t len);
/* Directory of the running executable, without trailing slash. */
int lp_cli_exe_dir(char *buf, size_t len);
/* Lists DIR's trace files (sorted); returns the count, -1 if DIR cannot be read. */
int lp_cli_list_traces(const char *dir, char ***paths);
void lp_cli_free_list(char **paths, int n);
/* mkdir -p (0, or -1 with errno: ENOTDIR when DIR is something else, ENOENT when empty)
 * that appends each level it created (top down, malloc'd) to *MADE, *N_MADE
 * (both start NULL, 0), also when it fails, so that a failed command removes them. */
int lp_cli_mkdir_made(const char *dir, char ***made, size_t *n_made);
/* rmdir of each of MADE when REMOVE, deepest first (one that holds files stays); frees MADE. */
void lp_cli_unmake_dirs(char **made, size_t n_made, int remove);
/* 1 when DIR holds a recorded run (an llmprof meta.json or trace*.lpt files), 0 when not, -1
 * with errno when DIR cannot be read. */
int lp_cli_dir_holds_run(const char *dir);
/* DIR/meta.json as record writes it (a regular file, not a link, holding a JSON object whose
 * "format" is "llmprof-run"): 1 when it is one, 0 when there is none, -1 when there is
 * another (a user's file, a link, a directory) or it cannot be read. */
int lp_cli_run_meta(const char *dir);
/* The run's meta.json of PATH: PATH/meta.json for a directory, else the one beside the trace
 * PATH (record writes it there). 0, or -1 with ENAMETOOLONG when it does not fit LEN. */
int lp_cli_meta_path(const char *path, char *buf, size_t len);
/* The words of CMD (meta.json's "command") on F, joined by spaces; a word that is not a
 * string is written as BAD, or left out when BAD is NULL. Returns how many were not strings,
 * -1 (nothing written) when CMD is not an array. */
int lp_cli_meta_command(FILE *f, const json_t *cmd, const char *bad);

/* The command line from the run's meta.json beside trace PATH, its string words joined by
 * spaces into BUF; NULL when there is none. */
const char *lp_cli_recorded_command(const char *path, char *buf, size_t len);
/* The program's request (request.c): record makes an empty file in ABS_DIR for the program
 * (its path in PATH, for LLMPROF_REQUEST_FILE): 0, or -1 with errno. After the run,
 * lp_cli_request_take keeps a JSON object the program wrote there in META's "request" (one
 * that is not, or is over 64 KiB, is warned about and said in "request_error") and removes
 * the file; an empty PATH does nothing. lp_cli_recorded_request: the "request" of the
 * meta.json beside TRACE_PATH as compact JSON (malloc'd), NULL without one. */
int lp_cli_request_make(const char *abs_dir, char *path, size_t len);
void lp_cli_request_take(const char *path, json_t *meta);
char *lp_cli_recorded_request(const char *trace_path);

/* 0 when PATH is a regular file, a directory, or not there (its reader says so); -1 with
 * "PATH is a FIFO, not a regular file, ..." when it is a FIFO, socket or device, which a
 * reader could wait on forever: an input that cannot be used (LP_CLI_EXIT_INPUT). Input
 * files are checked so before they are opened (a stat: a FIFO put in its place after it
 * still waits). */
int lp_cli_input_check(const char *cmd, const char *path);
/* lp_cli_input_check of what a command reads of RUN (a run directory or a trace): the trace,
 * or each *.lpt in the directory, and the run's meta.json. 0, or -1 with a message. */
int lp_cli_run_check(const char *cmd, const char *run);
/* A directory of repeats (profile --repeat): DIR/meta.json's "repeats": {"runs": [NAME...]},
 * each NAME a directory of DIR (one word, not hidden, no symbolic link, not named twice).
 * lp_cli_repeats_read: 0 when DIR is none, else their count with NAMES (malloc'd, NAMES may
 * be NULL), or -1 with a message (a list that cannot be used). lp_cli_repeats_said: 1 when
 * DIR is one, having said so ("give one of them") or what is wrong with its list, else 0
 * and nothing said. */
#define LP_CLI_REPEATS_MAX 1000
int lp_cli_repeats_read(const char *cmd, const char *dir, char ***names);
int lp_cli_repeats_said(const char *cmd, const char *dir);
/* The traces of a run: RUN is a run directory or one trace file. Returns the count (0 with
 * a message when none), -1 with a message when RUN cannot be read or it, a trace in it or the
 * meta.json beside one is a FIFO, socket or device (lp_cli_input_check). */
int lp_cli_run_traces(const char *cmd, const char *run, char ***paths);
/* The one trace of RUN into PATH: a trace file, a run directory holding one, or a report
 * directory whose report.json names one that is there (diff's operands, report's
 * --baseline); then *REPORT_JSON (when not NULL) is that report.json's path (malloc'd),
 * else NULL. 0, or -1 with a message. */
int lp_cli_one_trace(const char *cmd, const char *run, char *path, size_t len,
                     char **report_json);
/* 1 when directory DIR is the one FILE is in (the same directory, however named). */
int lp_cli_dir_holds_file(const char *dir, const char *file);
/* 1 when paths A and B name one file or directory (however named). */
int lp_cli_same_file(const char *a, const char *b);

/* ---- report's files and output helpers (output.c) ---- */

/* The files 'llmprof report' writes into its directory, with their writers, ending with a
 * NULL name (report.c): the one list that report, its --help and record --force use. */
struct lp_cli_report_output {
    const char *name;
    int (*write)(FILE *f, const struct lp_run *r);
    /* with --baseline, instead of WRITE (D: the baseline against the run); a file without
       WRITE is written only then */
    int (*write_baseline)(FILE *f, const struct lp_run *r, const struct lp_diff *d);
    const char *note;             /* what it is, in --help; NULL: the name says it */
};
/* in the order they are written and listed: report.md, summary.md and report.json, the
 * sections' CSV files (src/report/sections.c), report.html, and the baseline's */
const struct lp_cli_report_output *lp_cli_report_outputs(void);

/* The outputs of one command, all or none: each regular file is written under a temporary
 * name beside it and moved in by lp_cli_outs_commit only when all are complete; '-' is
 * standard output, a device or FIFO is written in place (never replaced), a symbolic link
 * is followed. lp_cli_outs_free removes temporaries and, unless committed, the directories
 * lp_cli_outs_mkdir made. Zero-initialise with .cmd set. */
struct lp_cli_out;
struct lp_cli_outs {
    const char *cmd;
    struct lp_cli_out **v;
    size_t n, cap;
    char **made_dirs;
    size_t n_made;
    int failed, committed;
};
/* 1 with "OUT is one of the inputs (IN): choose another path" when OUT is the same file as
 * one of INPUTS (NULL entries skipped), or with a message when OUT is empty; else 0. */
int lp_cli_out_is_input(const char *cmd, const char *out, const char *const *inputs,
                        size_t n_inputs);
/* 0 when PATH can be written as an output (missing, a regular file, a link to one, or with
 * ALLOW_IN_PLACE '-', a device or a FIFO), else -1 with the reason. Writes nothing. */
int lp_cli_out_check(const char *cmd, const char *path, int allow_in_place);
/* 0 when OUT may be replaced: not there, not a regular file (standard output, a device or a
 * FIFO, written in place), or FORCE; else -1 with "OUT is already there: --force replaces
 * it". A symbolic link is followed. */
int lp_cli_out_existing(const char *cmd, const char *out, int force);
/* The first name ".NAME.WHAT.PID.N" beside PATH (N = 0, 1, ...) that CLAIM takes (0; -1 with
 * errno EEXIST passes it over): malloc'd, or NULL with errno. Each temporary or aside file
 * of the CLI is named so. */
char *lp_cli_side_name(const char *path, const char *what,
                       int (*claim)(const char *side, void *arg), void *arg);
/* mkdir -p, remembering the levels it made: 0, or -1 with errno. */
int lp_cli_outs_mkdir(struct lp_cli_outs *s, const char *dir);
/* A stream for PATH (see above); NULL with a message. */
FILE *lp_cli_outs_open(struct lp_cli_outs *s, const char *path, int allow_in_place);
/* The file F writes (the temporary), for a writer that takes a path (SQLite); NULL when F
 * is not one of S's. */
const char *lp_cli_outs_file(const struct lp_cli_outs *s, FILE *f);
/* Closes F; WRITE_STATUS is the writer's return. 0, or -1 with "writing PATH failed: why". */
int lp_cli_outs_close(struct lp_cli_outs *s, FILE *f, int write_status);
/* Moves every file in; if one cannot be, puts back what was there. 0, or -1 with a message. */
int lp_cli_outs_commit(struct lp_cli_outs *s);
void lp_cli_outs_free(struct lp_cli_outs *s);

/* ---- report's options, shared with profile (report.c) ---- */

struct lp_cli_report {
    const char *cmd;              /* "report" or "profile": names the messages */
    const char *run;              /* report's operand */
    const char *out, *model_path;
    const char *baseline;         /* --baseline: the run this one is compared with */
    char *baseline_trace;         /* its trace (lp_cli_report_prepare) */
    char *baseline_json;          /* the report.json that named it, when BASELINE is a
                                     report directory: an input too */
    struct lp_trace *base_trace;  /* read and analysed by lp_cli_report_baseline */
    struct lp_run base;
    int base_loaded;
    char base_cmdline[2048];      /* BASE points to it */
    struct lp_cli_words stages;   /* --stage rules */
    int quiet;
    struct lp_cli_workload wl;
    struct lp_run_options run_opt;
    struct lp_model model;        /* loaded by lp_cli_report_prepare */
    char model_file[PATH_MAX];    /* the config.json it came from */
    char *model_text;             /* that file's text, for report.json (malloc'd; NULL none) */
    struct lp_gpu_table gpus;
    /* one repeat of a directory of repeats (profile --repeat) being reported: its figures
     * go to TAKE_REPEAT under REPEAT_LABEL (NULL: not one) */
    struct lp_repeat *take_repeat;
    const char *repeat_label;
};
void lp_cli_report_init(struct lp_cli_report *r, const char *cmd);
/* report's options, on a struct lp_cli_report (profile takes them too) */
extern const struct lp_cli_opt lp_cli_report_options[];
/* Loads and checks what the options name (hardware table, --gpu, --model, --stage rules,
 * --baseline's trace) before any work: 0, or the exit status with a message
 * (LP_CLI_EXIT_USAGE for a bad --stage or --gpu, LP_CLI_EXIT_INPUT for a file that cannot
 * be used). */
int lp_cli_report_prepare(struct lp_cli_report *r);
/* Reads and analyses the baseline (--baseline), once: 0 (also without one), or the exit
 * status with a message (LP_CLI_EXIT_USAGE for a stage rule it refutes, else
 * LP_CLI_EXIT_INPUT). lp_cli_report_run calls it after checking its outputs; profile before
 * it runs the program, which then cannot be run for nothing. */
int lp_cli_report_baseline(struct lp_cli_report *r);
/* Forgets the baseline: the report is written without it. */
void lp_cli_report_baseline_drop(struct lp_cli_report *r);
/* Reports on RUN into r->out (default the run's directory): the exit status, 0,
 * LP_CLI_EXIT_INPUT (a trace or a write failed: nothing written) or LP_CLI_EXIT_USAGE (an
 * output refused before any work, a stage rule a trace refutes). */
int lp_cli_report_run(struct lp_cli_report *r, const char *run);
void lp_cli_report_free(struct lp_cli_report *r);

/* ---- progress and trace warnings (util.c) ---- */

/* "llmprof CMD: ..." on one line of stderr, replaced by the next, when stderr is a terminal
 * (never in pipes and logs); lp_cli_error clears it first. */
void lp_cli_progress(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lp_cli_progress_end(void);
/* Says on stderr that T (read from PATH) is not whole and what the reader skipped; WHAT
 * ("report", "export") is what shows what is there. */
void lp_cli_trace_warnings(const char *cmd, const char *path, const struct lp_trace *t,
                           const char *what);
/* Bytes of memory this process can still take, about: the system's MemAvailable, less where
 * its cgroup's limit or one above it leaves less (v2 or v1); LLMPROF_MEM_AVAILABLE_MIB says
 * it instead. 0 when none of them can be read, or that variable is 0. */
uint64_t lp_cli_memory_available(void);

/* ---- record, shared with profile (record.c) ---- */

struct lp_cli_record_opts {
    const char *out;
    double nvml_hz;
    int light, quiet, force;      /* light: NVTX, counters, NVML; no kernel or API records */
    int gemm;                     /* -1: the default (on unless --light) */
    int counters;                 /* hardware counters per segment (--counters) */
    const char *counter_dtypes;   /* tensor dtypes counted; NULL: the collector's default */
    const char *counter_ranges;   /* regex of the NVTX ranges that cut; NULL: stage rules' */
    double pm_sampling_us;        /* PM sampling interval (--pm-sampling); 0: off */
    const char *capture;          /* --capture: all or cuda-profiler; NULL: all */
    const char *graphs;           /* --graphs: replay or node; NULL: the collector's (replay) */
    int finalize;                 /* --finalize: CUPTI finalized between capture windows */
    char **cmd;                   /* the command to run, NULL-terminated */
    char default_out[64];         /* out when no -o: llmprof-YYYYmmdd-HHMMSS */
};
void lp_cli_record_init(struct lp_cli_record_opts *o);
/* record's options, on a struct lp_cli_record_opts (profile takes them too) */
extern const struct lp_cli_opt lp_cli_record_options[];
/* 'llmprof record' of O: its exit status; *RAN is 1 once the command was started, 0 when
 * record refused or failed first (then the run directory is as it was). O->out is the run
 * directory after. */
int lp_cli_record(struct lp_cli_record_opts *o, int *ran);

/* ---- deep, shared with profile (deep.c) ---- */

/* The files llmprof deep writes into RUN/deep/, NULL-terminated (record --force removes them). */
extern const char *const lp_cli_deep_files[];
struct lp_cli_deep_opts {
    const char *run, *ncu, *clock;  /* clock: ncu's --clock-control; NULL: none */
    const char *sections;           /* report (NULL) or full: what ncu collects */
    int64_t top, instances, skip;   /* 0, 0, -1: the defaults (10, 2, automatic) */
    double budget_min;
    int dry_run, force, quiet;
    char ncu_path[4096], version[64]; /* set by lp_cli_deep_prepare */
};
void lp_cli_deep_init(struct lp_cli_deep_opts *o);
/* Checks the options and finds ncu and its version (not for a dry run), before any work:
 * 0, or -1 with a message (a bad --clock-control or --ncu, or no usable ncu: status
 * LP_CLI_EXIT_USAGE, the fix being --ncu PATH). */
int lp_cli_deep_prepare(struct lp_cli_deep_opts *o);
/* The deep dive of O->run: runs CMD (in this directory; NULL: the command the run recorded,
 * in its directory) under ncu. The exit status: 0, LP_CLI_EXIT_INPUT (the run cannot be
 * used, or ncu failed or measured nothing: what there is was kept) or LP_CLI_EXIT_USAGE
 * (refused before ncu ran: an earlier deep dive without --force, a --budget too small). */
int lp_cli_deep_run(struct lp_cli_deep_opts *o, char *const *cmd);

#endif
