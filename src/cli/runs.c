/* llmprof runs: the runs directory of `llmprof serve` without a server. `list` reads its
 * index (a server may be running); `prune` applies the server's retention (src/serve/
 * retain.c) when no server holds the directory. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "llmprof/report.h"
#include "llmprof/serve.h"

struct runs_opts {
    const char *args[2]; /* the operands: DIR, list|prune */
    int json, dry_run;
    int64_t keep;
    uint64_t max_run_bytes;
};

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof runs DIR list [--json]\n"
    "       llmprof runs DIR prune [--keep N] [--max-run-bytes SIZE] [--dry-run] [--json]\n"
    "\n"
    "DIR is the runs directory of 'llmprof serve --runs DIR'. 'list' prints its runs, newest\n"
    "first: status, tag, runner, when made, their files on the disk (whole, trimmed or\n"
    "archived) and the headline (TTFT, TPOT, MFU); it only reads, a server may be running.\n"
    "'prune' applies the server's retention: each ended run's files capped (traces first,\n"
    "the report's own files kept, trimmed.json says what went), and of each tag the runs\n"
    "older than the newest N compressed into DIR/runs/ID.tar.zst (read back before the\n"
    "directory goes). A server applies it after each run, so 'prune' refuses a directory a\n"
    "server holds. Exit status: 0, 1 when DIR is not a runs directory, a server holds it or\n"
    "a run could not be pruned (said), 2 on a mistake of the command line.\n"
    "\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--json",
     .help = "list: the runs as GET /runs gives them, with disk_bytes; prune:\n"
             "the changes as an array",
     .off = offsetof(struct runs_opts, json), .set = 1},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--keep", .arg = "N",
     .help = "prune: ended runs of each tag kept whole (default 5)",
     .off = offsetof(struct runs_opts, keep), .min = 0, .max = 1000000},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--max-run-bytes", .arg = "SIZE",
     .help = "prune: a run's files at most (default 2G; 0: no cap)",
     .off = offsetof(struct runs_opts, max_run_bytes), .parse = lp_cli_opt_bytes},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--dry-run",
     .help = "prune: print what would change, change nothing",
     .off = offsetof(struct runs_opts, dry_run), .set = 1},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd runs_cmd = {
    .name = "runs", .opts = options, .help_col = 26, .operand = 2,
    .operand_off = offsetof(struct runs_opts, args), .too_many = "DIR and one action",
};

static void put_json(json_t *j)
{
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (text)
        printf("%s\n", text);
    free(text);
}

static void put_number(json_t *v, double scale, const char *unit)
{
    if (json_is_number(v))
        printf("  %9.3f %-2s", json_number_value(v) * scale, unit);
    else
        printf("  %9s %-2s", "-", "");
}

static void print_list(json_t *runs)
{
    json_t *run;
    size_t i;
    char b[32];
    printf("%-22s  %-9s  %-12s  %-12s  %-20s  %-20s  %12s  %12s  %12s\n", "run", "status", "tag",
           "runner", "created", "files", "TTFT", "TPOT", "MFU");
    json_array_foreach(runs, i, run) {
        json_t *h = json_object_get(run, "headline"), *disk = json_object_get(run, "disk_bytes");
        const char *state = json_is_object(json_object_get(run, "archive")) ? "archived"
                            : json_is_object(json_object_get(run, "trimmed")) ? "trimmed"
                                                                               : "whole";
        static const char *const cols[] = {"run_id", "status", "tag", "runner", "created"};
        static const int width[] = {22, 9, 12, 12, 20};
        for (size_t k = 0; k < 5; k++) {
            char cell[256];
            lp_fmt_escape(cell, sizeof cell, json_string_value(json_object_get(run, cols[k])));
            printf("%-*s  ", width[k], cell);
        }
        if (json_is_integer(disk))
            printf("%-9s %-10s", lp_fmt_bytes((double)json_integer_value(disk), b, sizeof b),
                   state);
        else
            printf("%-20s", "none");
        put_number(json_object_get(h, "ttft_s"), 1e3, "ms");
        put_number(json_object_get(h, "tpot_s"), 1e3, "ms");
        put_number(json_object_get(h, "mfu"), 100, "%");
        printf("\n");
    }
    printf("%zu run%s\n", json_array_size(runs), json_array_size(runs) == 1 ? "" : "s");
}

static void print_actions(json_t *actions, int dry_run)
{
    json_t *a;
    size_t i;
    char x[32], y[32], id[64];
    json_array_foreach(actions, i, a) {
        const char *what = json_string_value(json_object_get(a, "action"));
        lp_fmt_escape(id, sizeof id, json_string_value(json_object_get(a, "run_id")));
        json_t *t = json_object_get(a, "trimmed"), *ar = json_object_get(a, "archive");
        if (json_object_get(a, "error")) {
            printf("%s: could not %s it: ", id, what);
            lp_fmt_puts(stdout, json_string_value(json_object_get(a, "error")));
            printf("\n");
        } else if (!strcmp(what, "trim")) {
            printf("%s: %s %zu file%s, %s -> %s%s\n", id, dry_run ? "would trim" : "trimmed",
                   json_array_size(json_object_get(t, "removed")),
                   json_array_size(json_object_get(t, "removed")) == 1 ? "" : "s",
                   lp_fmt_bytes((double)json_integer_value(json_object_get(t, "bytes_before")),
                                x, sizeof x),
                   lp_fmt_bytes((double)json_integer_value(json_object_get(t, "bytes_after")),
                                y, sizeof y),
                   json_is_true(json_object_get(t, "over_cap"))
                       ? " (still over the cap: the report's own files are kept)"
                       : "");
        } else if (!strcmp(what, "archive") && ar) {
            long long files = (long long)json_integer_value(json_object_get(ar, "files"));
            printf("%s: archived, %lld file%s, %s -> %s\n", id, files, files == 1 ? "" : "s",
                   lp_fmt_bytes((double)json_integer_value(json_object_get(ar, "bytes_before")),
                                x, sizeof x),
                   lp_fmt_bytes((double)json_integer_value(json_object_get(ar, "bytes")), y,
                                sizeof y));
        } else if (!strcmp(what, "archive") && !dry_run) {
            printf("%s: could not archive it (no reason recorded)\n", id);
        } else if (!strcmp(what, "archive")) {
            printf("%s: would archive %s\n", id,
                   lp_fmt_bytes((double)json_integer_value(json_object_get(a, "bytes_before")),
                                x, sizeof x));
        } else if (!strcmp(what, "tidy")) {
            printf("%s: %s its directory (its archive was made before and holds it all)\n", id,
                   dry_run ? "would remove" : "removed");
        } else {
            printf("%s: ", id);
            lp_fmt_puts(stdout, what);
            printf("\n");
        }
    }
    if (!json_array_size(actions))
        printf("nothing to prune\n");
}

int lp_cmd_runs(int argc, char **argv)
{
    struct runs_opts o = {.keep = 5, .max_run_bytes = 2ULL << 30};
    int rc = lp_cli_parse(&runs_cmd, &o, argc, argv, NULL);
    if (rc != 0)
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    int list = o.args[1] && !strcmp(o.args[1], "list");
    int prune = o.args[1] && !strcmp(o.args[1], "prune");
    if (!o.args[0] || !*o.args[0] || !(list || prune)) {
        char word[64];
        if (o.args[1] && !list && !prune)
            lp_cli_error("runs", "'%s' is not an action: list or prune",
                         lp_fmt_escape(word, sizeof word, o.args[1]));
        else
            lp_cli_error("runs", "give DIR and an action: llmprof runs DIR list|prune");
        return LP_CLI_EXIT_USAGE;
    }
    char err[1024];
    size_t failed = 0;
    struct lp_serve_retention p = {.keep = (size_t)o.keep, .max_run_bytes = o.max_run_bytes};
    json_t *out = list ? lp_runs_list(o.args[0], err, sizeof err)
                       : lp_runs_prune(o.args[0], &p, o.dry_run, &failed, err, sizeof err);
    if (!out) {
        lp_cli_error("runs", "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    if (o.json)
        put_json(out);
    else if (list)
        print_list(out);
    else
        print_actions(out, o.dry_run);
    json_decref(out);
    if (failed)
        lp_cli_error("runs", "%zu change%s failed (said above): the runs stay as they were",
                     failed, failed == 1 ? "" : "s");
    return failed ? LP_CLI_EXIT_INPUT : 0;
}
