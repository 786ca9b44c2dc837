/* llmprof model: analytic parameters, FLOPs, bytes and roofline of an LLM from its
 * config.json, with no GPU. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "llmprof/model.h"
#include "llmprof/report.h"

struct model_opts {
    struct lp_cli_workload wl;
    const char *config, *format, *out;
    int list, force;
};

/* "Architectures: llama, ...": the model layer's one list */
static void print_architectures(FILE *f)
{
    char types[512], line[600];
    lp_model_types(types, sizeof types);
    snprintf(line, sizeof line, "Architectures: %s.", types);
    lp_cli_wrap(f, line, LP_CLI_HELP_WIDTH);
}

static int parse_format(const struct lp_cli_opt *o, void *value, const char *cmd, const char *opt,
                        const char *arg)
{
    (void)o;
    static const char *const formats[] = {"md", "json"};
    if (!arg || (strcmp(arg, "md") && strcmp(arg, "json")))
        return lp_cli_bad_value(cmd, opt, arg, formats, 2);
    *(const char **)value = arg;
    return 0;
}

#define WL offsetof(struct model_opts, wl)
#define TOKENS(nm, field, hl)                                                                 \
    {.kind = LP_CLI_OPT_KIND_INT, .name = nm, .arg = "N", .help = hl,                         \
     .off = LP_CLI_WL_FIELD(WL, w.field), .min = 1, .max = LP_MODEL_MAX_TOKENS}

static const struct lp_cli_opt options[] = {
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "usage: llmprof model CONFIG [options]\n"
    "\n"
    "Reads a Hugging Face config.json (or a model directory holding one: its safetensors\n"
    "headers, never the weights, then give exact counts per dtype and tensor group, compared\n"
    "with the analytic ones) and prints, for a workload, the parameters, matmul and other\n"
    "FLOPs, bytes read and written (weights, activations, KV cache) and arithmetic intensity\n"
    "of every module, per stage (vision encoder, prefill, one decode step, the whole\n"
    "request), the KV cache per token, and on a GPU (--gpu) the roofline lower bounds:\n"
    "TTFT >=, TPOT >=, tokens/s <=. Exit status: 0, 1 when the config, the weights' headers\n"
    "or --hw-file cannot be read or parsed, 2 on a mistake of the command line (also a\n"
    "workload the model cannot take, such as a context past max_position_embeddings).\n"},
    {.kind = LP_CLI_OPT_KIND_TEXT, .print = print_architectures},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "\nworkload:\n"},
    {.kind = LP_CLI_OPT_KIND_HELP, .name = "--help", .alias = "-h"},
    {.kind = LP_CLI_OPT_KIND_INT, .name = "--batch", .arg = "N", .help = "sequences (default 1)",
     .off = LP_CLI_WL_FIELD(WL, w.batch), .min = 1, .max = LP_MODEL_MAX_BATCH},
    TOKENS("--prompt", prompt, "prompt tokens per sequence (default 512)"),
    TOKENS("--gen", generated, "generated tokens per sequence (default 128)"),
    TOKENS("--context", decode_context,
           "context of the \"one decode step\" stage (default prompt + gen/2)"),
    LP_CLI_OPT_WEIGHTS(WL, NULL,
                       "fp32, tf32, bf16, fp16, fp8, int8 or int4 (weight-only)\n"
                       "(default bf16)"),
    LP_CLI_OPT_ACT(WL, NULL, "activation dtype, as --weights but for int4; matmuls run in it\n"
                             "(default bf16)"),
    LP_CLI_OPT_KV(WL, NULL, "KV cache dtype, as --weights (default bf16)"),
    LP_CLI_OPT_PREFILL_LOGITS(WL, NULL, "logits for every prompt token (HF's default) or only\n"
                                        "the last (serving engines; default)"),
    LP_CLI_OPT_VISION(WL, NULL, "DeepSeek-OCR: tiny, small, base (default), large, gundam, none;\n"
                                "DeepSeek-OCR-2: base (a 1024 page) or gundam (and 768 crops)"),
    LP_CLI_OPT_TILES(WL, NULL, "Gundam mode's tiles, OCR-2's crops (2 to 9 in all; default 3x2)"),
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "hardware:\n"},
    LP_CLI_OPT_GPU(WL, NULL, "a row of the hardware table (H200, \"H100 SXM\", A100 ...) or a\n"
                             "device name as nvidia-smi shows it"),
    LP_CLI_OPT_HW_FILE(WL, NULL, "extra hardware rows (data/hardware.tsv's format)"),
    LP_CLI_OPT_PEAK_TFLOPS(WL, NULL, "override the matmul peak for the activation dtype"),
    LP_CLI_OPT_MEM_BW(WL, NULL, "override the memory bandwidth (GB/s)"),
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--list-gpus",
     .help = "print the hardware table and exit", .off = offsetof(struct model_opts, list),
     .set = 1},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help = "output:\n"},
    {.kind = LP_CLI_OPT_KIND_CALLBACK, .name = "--format", .arg = "md|json",
     .help = "(default md; the JSON schema is in docs/model.md)",
     .off = offsetof(struct model_opts, format), .parse = parse_format},
    {.kind = LP_CLI_OPT_KIND_STRING, .name = "-o", .arg = "FILE",
     .help = "write there instead of standard output ('-'); written under a\n"
             "temporary name and moved in when complete, a device or FIFO\n"
             "in place, a symbolic link followed; never one of the inputs",
     .off = offsetof(struct model_opts, out),
     .empty = "a file ('-': standard output), not an empty path"},
    {.kind = LP_CLI_OPT_KIND_FLAG, .name = "--force",
     .help = "replace FILE when it is already there (else refused, status 2)",
     .off = offsetof(struct model_opts, force), .set = 1},
    {.kind = LP_CLI_OPT_KIND_TEXT, .help =
    "\n"
    "example:\n"
    "  llmprof model meta-llama/Llama-2-7b-hf/ --gpu H200 --prompt 2048 --gen 256\n"},
    {.kind = LP_CLI_OPT_KIND_END},
};

static const struct lp_cli_cmd model_cmd = {
    .name = "model", .opts = options, .help_col = 23, .operand = 1,
    .operand_off = offsetof(struct model_opts, config), .too_many = "one config at a time",
};

/* one more input path: DIR/NAME, or NAME when DIR is NULL */
static int add_input(char ***in, size_t *n, size_t *cap, const char *dir, const char *name)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        char **v = realloc(*in, c * sizeof *v);
        if (!v)
            return -1;
        *in = v;
        *cap = c;
    }
    if (dir ? asprintf(&(*in)[*n], "%s/%s", dir, name) < 0 : !((*in)[*n] = strdup(name)))
        return -1;
    (*n)++;
    return 0;
}

static void list_gpus(const struct lp_gpu_table *t)
{
    printf("%-16s %8s %8s %8s %8s %8s %8s %10s\n", "name", "fp32", "tf32", "bf16", "fp16", "fp8",
           "int8", "mem GB/s");
    for (size_t i = 0; i < t->n; i++) {
        const struct lp_gpu *g = &t->v[i];
        char name[256]; /* a row of --hw-file: any bytes, escaped (docs/report.md) */
        printf("%-16s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %10.0f\n",
               lp_fmt_escape(name, sizeof name, g->name),
               g->tflops[LP_DTYPE_FP32], g->tflops[LP_DTYPE_TF32], g->tflops[LP_DTYPE_BF16],
               g->tflops[LP_DTYPE_FP16], g->tflops[LP_DTYPE_FP8], g->tflops[LP_DTYPE_INT8],
               g->mem_bw_gbs);
    }
    printf("dense TFLOP/s (TOP/s for int8) from vendor datasheets; sparse peaks are 2x\n");
}

/* OUT against what the model command reads: CONFIG (or its config.json, safetensors index
 * and shards when it is a directory) and the hardware file. */
static int output_is_input(const char *out, const char *config, const char *hw_file)
{
    char **in = NULL;
    size_t n = 0, cap = 0;
    int hit = 0;
    DIR *d = opendir(config);
    const char *fixed[] = {"config.json", "model.safetensors.index.json"};
    struct dirent *e;
    for (size_t i = 0; d && i < 2; i++)
        if (add_input(&in, &n, &cap, config, fixed[i]) != 0)
            goto done;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), sl = strlen(".safetensors");
        if (l > sl && !strcmp(e->d_name + l - sl, ".safetensors") &&
            add_input(&in, &n, &cap, config, e->d_name) != 0)
            goto done;
    }
    if (add_input(&in, &n, &cap, NULL, config) != 0 ||
        (hw_file && add_input(&in, &n, &cap, NULL, hw_file) != 0))
        goto done;
    hit = lp_cli_out_is_input("model", out, (const char *const *)in, n);
done:
    if (d)
        closedir(d);
    for (size_t i = 0; i < n; i++)
        free(in[i]);
    free(in);
    return hit;
}

/* The GPU of --gpu, with --peak-tflops and --mem-bw applied: 0, or LP_CLI_EXIT_USAGE with
 * a message; *GPU unset without --gpu. */
static int resolve_gpu(const struct lp_cli_workload *g, const struct lp_gpu_table *t,
                       struct lp_gpu *gpu)
{
    if (!g->gpu) {
        if (g->peak_tflops > 0 || g->mem_bw_gbs > 0) {
            lp_cli_error("model", "--peak-tflops and --mem-bw override a --gpu; name one");
            return LP_CLI_EXIT_USAGE;
        }
        return 0;
    }
    char err[1024], said[2048];
    const struct lp_gpu *row = lp_gpu_resolve(t, g->gpu, err, sizeof err);
    if (!row) { /* it quotes the name as given: escaped */
        lp_cli_error("model", "%s", lp_fmt_escape(said, sizeof said, err));
        return LP_CLI_EXIT_USAGE;
    }
    *gpu = *row;
    lp_gpu_override(gpu, g->w.activations, g->peak_tflops, g->mem_bw_gbs);
    if (gpu->tflops[g->w.activations] <= 0) {
        lp_cli_error("model", "%s has no dense %s peak in the table; give --peak-tflops",
                     gpu->name, lp_dtype_name(g->w.activations));
        return LP_CLI_EXIT_USAGE;
    }
    return 0;
}

/* Analyses the model of O->config for O's workload (on GPU when --gpu was given) and writes
 * the report: the exit status. */
static int analyze_and_write(struct model_opts *o, const struct lp_gpu *gpu)
{
    char err[1024];
    struct lp_workload *w = &o->wl.w;
    struct lp_model_result *r = NULL;
    struct lp_cli_outs outs = {.cmd = "model"};
    int status = LP_CLI_EXIT_INPUT;
    struct lp_model m;
    if (lp_model_load(o->config, &m, err, sizeof err) != LP_OK) {
        lp_cli_error("model", "%s", err);
        goto done;
    }
    if (m.vision.kind == LP_VISION_KIND_NONE)
        w->vision_mode = LP_VISION_MODE_NONE;
    if (!(r = malloc(sizeof *r))) {
        lp_cli_error("model", "out of memory");
        goto done;
    }
    enum lp_status arc = lp_model_analyze(&m, w, r, err, sizeof err);
    if (arc != LP_OK) {
        lp_cli_error("model", "%s", err);
        /* a workload the model cannot take (past its context, a vision mode it has not) is
           the command line's */
        status = arc == LP_ERR_ARG ? LP_CLI_EXIT_USAGE : LP_CLI_EXIT_INPUT;
        goto done;
    }
    struct lp_model_bounds bounds;
    if (gpu)
        lp_model_bounds_compute(r, w, gpu, &bounds);
    /* a model directory: compare with the weights' headers */
    struct lp_weights wt;
    struct stat st;
    int have_weights = 0;
    if (stat(o->config, &st) == 0 && S_ISDIR(st.st_mode) &&
        lp_weights_scan(o->config, &m, &wt, &have_weights, err, sizeof err) != LP_OK) {
        lp_cli_error("model", "%s", err);
        goto done;
    }
    struct lp_model_report rep = {&m, w, r, gpu ? &bounds : NULL, have_weights ? &wt : NULL};
    /* standard output too goes through the helpers, so that a write error is reported */
    FILE *out = lp_cli_outs_open(&outs, o->out ? o->out : "-", 1);
    if (!out)
        goto done;
    int wrc = !strcmp(o->format, "json") ? lp_report_model_json(out, &rep)
                                         : lp_report_model_md(out, &rep);
    if (lp_cli_outs_close(&outs, out, wrc) != 0 || lp_cli_outs_commit(&outs) != 0)
        goto done;
    status = 0;
done:
    free(r);
    lp_cli_outs_free(&outs);
    return status;
}

/* Everything after the options, with the hardware table loaded: the exit status. */
static int run(struct model_opts *o, const struct lp_gpu_table *table)
{
    if (o->list) {
        list_gpus(table);
        return 0;
    }
    if (!o->config) {
        lp_cli_error("model", "no config given; usage: llmprof model CONFIG [options]");
        return LP_CLI_EXIT_USAGE;
    }
    struct lp_gpu gpu;
    int status = resolve_gpu(&o->wl, table, &gpu);
    if (status != 0)
        return status;
    /* the output is checked before any work: never one of the inputs */
    if (o->out && (output_is_input(o->out, o->config, o->wl.hw_file) ||
                   lp_cli_out_check("model", o->out, 1) != 0 ||
                   lp_cli_out_existing("model", o->out, o->force) != 0))
        return LP_CLI_EXIT_USAGE;
    return analyze_and_write(o, o->wl.gpu ? &gpu : NULL);
}

int lp_cmd_model(int argc, char **argv)
{
    struct model_opts o = {.format = "md"};
    lp_cli_workload_init(&o.wl);
    int rc = lp_cli_parse(&model_cmd, &o, argc, argv, NULL);
    if (rc != 0)
        return rc > 0 ? 0 : LP_CLI_EXIT_USAGE;
    char err[1024];
    struct lp_gpu_table table;
    if (lp_gpu_table_load(&table, o.wl.hw_file, err, sizeof err) != LP_OK) {
        lp_cli_error("model", "%s", err);
        return LP_CLI_EXIT_INPUT;
    }
    rc = run(&o, &table);
    lp_gpu_table_free(&table);
    return rc;
}
