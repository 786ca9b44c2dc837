/* llmprof: a profiler for LLM inference on NVIDIA GPUs. Dispatches to one file per
 * subcommand, in the manner of git and perf builtins. */
#include <stdio.h>
#include <string.h>

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
    {"export", lp_cmd_export, "write a trace for ui.perfetto.dev (--perfetto)"},
    {"model", lp_cmd_model, "analytic params, FLOPs, bytes and roofline of an LLM from config.json"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: llmprof <command> [options]\n\n"
               "Where does the time of my prefill and decode go?\n\n"
               "commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'llmprof <command> --help' explains a command. Typical use:\n"
               "  llmprof record -o run1 -- python3 infer.py\n"
               "  llmprof report run1 --model config.json\n"
               "  llmprof profile -- python3 infer.py      (record, then report)\n"
               "  llmprof info run1\n"
               "  llmprof model config.json --gpu H200\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("llmprof %s\n", LLMPROF_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "llmprof: '%s' is not a command; see 'llmprof --help'\n", argv[1]);
    return 2;
}
