/* llmprof: a profiler for LLM inference on NVIDIA GPUs. Dispatches to one file per
 * subcommand, in the manner of git and perf builtins. */
#include <stdio.h>
#include <string.h>

#include "build_info.h"
#include "cli.h"
#include "llmprof/version.h"

static const struct {
    const char *name;
    int (*run)(int, char **);
    const char *summary;
} commands[] = {
    {"record", lp_cmd_record, "run a command and record its GPU activity into a run directory"},
    {"info", lp_cmd_info, "a quick look at a recorded run: duration, counts, losses, GPUs, ranges"},
    {"report", lp_cmd_report, "stages, TTFT/TPOT, kernels, operators, MFU/MBU, power, diagnosis"},
    {"profile", lp_cmd_profile, "record a command, then report on it"},
    {"deep", lp_cmd_deep, "Nsight Compute on the top kernels of each stage (into RUN/deep/)"},
    {"diff", lp_cmd_diff, "compare two runs, with the noise, and gate on it (--fail-if)"},
    {"export", lp_cmd_export, "a run for ui.perfetto.dev (--perfetto) or SQLite (--sqlite)"},
    {"serve", lp_cmd_serve, "profiling runs over HTTP (docs/openapi.yaml), queued, with a page"},
    {"watch", lp_cmd_watch, "live metrics of a run being recorded, for Prometheus (/metrics)"},
    {"runs", lp_cmd_runs, "the runs directory of serve: list its runs, prune (retention)"},
    {"model", lp_cmd_model,
     "analytic params, FLOPs, bytes and roofline of an LLM from config.json"},
};
#define N_COMMANDS (sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: llmprof <command> [options]\n\n"
               "Where does the time of my prefill and decode go?\n\n"
               "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'llmprof <command> --help' explains a command; 'llmprof --version' says which\n"
               "build this is. Typical use:\n"
               "  llmprof record -o run1 -- python3 infer.py\n"
               "  llmprof report run1 --model config.json\n"
               "  llmprof profile -- python3 infer.py      (record, then report)\n"
               "  llmprof diff run1 run2 --fail-if 'tpot>+5%%'\n"
               "  llmprof info run1\n"
               "  llmprof model config.json --gpu H200\n"
               "\n"
               "Exit status, of every command: 0 done; 1 an input could not be used (missing,\n"
               "unreadable, damaged, a config that cannot be parsed, runs that cannot be\n"
               "compared) or the work failed midway (an output could not be written); 2 the\n"
               "command line is wrong (an unknown option, a missing or bad value, conflicting\n"
               "options, an output refused before any work). But record and profile exit with\n"
               "the profiled command's status, and diff with 3 when a --fail-if rule failed.\n");
}

/* the options of llmprof itself, before a command */
static const char *const top_options[] = {"--help", "-h", "--version"};
#define N_TOP_OPTIONS (sizeof top_options / sizeof *top_options)

/* The command (or top-level option) within two edits of WORD, NULL when none is. */
static const char *did_you_mean(const char *word)
{
    const char *names[N_COMMANDS + N_TOP_OPTIONS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    for (size_t i = 0; i < N_TOP_OPTIONS; i++)
        names[N_COMMANDS + i] = top_options[i];
    return lp_cli_nearest(word, names, N_COMMANDS + N_TOP_OPTIONS);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return LP_CLI_EXIT_USAGE;
    }
    if (argc == 2 && !strcmp(argv[1], LP_CLI_LIST_OPTIONS)) {
        /* hidden, for tests/cli_help.py: what llmprof itself takes ('llmprof CMD
           --list-options' for a command's) */
        for (size_t i = 0; i < N_TOP_OPTIONS; i++)
            printf("%s\n", top_options[i]);
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("llmprof %s (commit %s, built against CUDA %s, CUPTI API %s)\n", LLMPROF_VERSION,
               LP_BUILD_COMMIT, LP_BUILD_CUDA, LP_BUILD_CUPTI);
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    const char *near = did_you_mean(argv[1]);
    if (near)
        fprintf(stderr, "llmprof: '%s' is not a command; did you mean '%s'?\n", argv[1], near);
    else
        fprintf(stderr, "llmprof: '%s' is not a command; see 'llmprof --help'\n", argv[1]);
    return LP_CLI_EXIT_USAGE;
}
