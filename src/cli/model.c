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

static const char help[] =
    "usage: llmprof model CONFIG [options]\n"
    "\n"
    "Reads a Hugging Face config.json (or a model directory holding one: its safetensors\n"
    "headers, never the weights, then give exact counts per dtype and tensor group, compared\n"
    "with the analytic ones) and prints, for a\n"
    "workload, the parameters, matmul and other FLOPs, bytes read and written (weights,\n"
    "activations, KV cache) and arithmetic intensity of every module, per stage (vision\n"
    "encoder, prefill, one decode step, the whole request), the KV cache per token, and on a\n"
    "GPU the roofline lower bounds: TTFT >=, TPOT >=, tokens/s <=.\n"
    "Architectures: llama, mistral, qwen2, qwen3, mixtral, gpt2, deepseek_v2, deepseek_v3,\n"
    "deepseek_vl_v2 (DeepSeek-OCR).\n"
    "\n"
    "workload:\n"
    "  --batch N            sequences (default 1)\n"
    "  --prompt N           prompt tokens per sequence (default 512)\n"
    "  --gen N              generated tokens per sequence (default 128)\n"
    "  --context N          context of the \"one decode step\" stage (default prompt + gen/2)\n"
    "  --weights DT         fp32, bf16, fp16, fp8, int8 or int4 (weight-only) (default bf16)\n"
    "  --act DT             activation dtype; matmuls run in it (default bf16)\n"
    "  --kv DT              KV cache dtype (default bf16)\n"
    "  --prefill-logits all|last   logits for every prompt token (HF's default) or only\n"
    "                       the last (serving engines; default)\n"
    "  --vision MODE        DeepSeek-OCR: tiny, small, base (default), large, gundam, none;\n"
    "                       DeepSeek-OCR-2: base (a 1024 page) or gundam (and 768 crops)\n"
    "  --tiles WxH          Gundam mode's tiles, OCR-2's crops (2 to 9 in all; default 3x2)\n"
    "hardware:\n"
    "  --gpu NAME           a row of the hardware table (H200, \"H100 SXM\", A100 ...) or a\n"
    "                       device name as nvidia-smi shows it\n"
    "  --hw-file FILE       extra hardware rows (data/hardware.tsv's format)\n"
    "  --peak-tflops X      override the matmul peak for the activation dtype\n"
    "  --mem-bw GBS         override the memory bandwidth (GB/s)\n"
    "  --list-gpus          print the hardware table and exit\n"
    "output:\n"
    "  --format md|json     (default md; the JSON schema is in docs/model.md)\n"
    "  -o FILE              write there instead of standard output ('-'); written under a\n"
    "                       temporary name and moved in when complete, a device or FIFO\n"
    "                       in place, a symbolic link followed; never one of the inputs\n"
    "\n"
    "example:\n"
    "  llmprof model meta-llama/Llama-2-7b-hf/ --gpu H200 --prompt 2048 --gen 256\n";

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
        printf("%-16s %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %10.0f\n", g->name,
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

int lp_cmd_model(int argc, char **argv)
{
    struct lp_workload w;
    lp_workload_defaults(&w);
    const char *config = NULL, *gpu_name = NULL, *hw_file = NULL, *format = "md", *out_path = NULL;
    double peak = 0, bw = 0;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0, takes = 1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (!strcmp(a, "--batch")) {
            rc = lp_cli_parse_range("model", a, v, 1, LP_MODEL_MAX_BATCH, &w.batch);
        } else if (!strcmp(a, "--prompt")) {
            rc = lp_cli_parse_range("model", a, v, 1, LP_MODEL_MAX_TOKENS, &w.prompt);
        } else if (!strcmp(a, "--gen")) {
            rc = lp_cli_parse_range("model", a, v, 1, LP_MODEL_MAX_TOKENS, &w.generated);
        } else if (!strcmp(a, "--context")) {
            rc = lp_cli_parse_range("model", a, v, 1, LP_MODEL_MAX_TOKENS, &w.decode_context);
        } else if (!strcmp(a, "--weights")) {
            rc = lp_cli_parse_dtype("model", a, v, &w.weights);
        } else if (!strcmp(a, "--act")) {
            rc = lp_cli_parse_dtype("model", a, v, &w.activations);
            if (!rc && (w.activations == LP_DTYPE_INT4)) {
                lp_cli_error("model", "--act int4 is not a compute format; int4 is weight-only");
                rc = -1;
            }
        } else if (!strcmp(a, "--kv")) {
            rc = lp_cli_parse_dtype("model", a, v, &w.kv);
        } else if (!strcmp(a, "--prefill-logits")) {
            if (v && (!strcmp(v, "all") || !strcmp(v, "last"))) {
                w.prefill_logits_all = !strcmp(v, "all");
            } else {
                lp_cli_error("model", "--prefill-logits takes all or last");
                rc = -1;
            }
        } else if (!strcmp(a, "--vision")) {
            rc = lp_cli_parse_vision("model", a, v, &w.vision_mode);
        } else if (!strcmp(a, "--tiles")) {
            rc = lp_cli_parse_tiles("model", a, v, &w);
        } else if (!strcmp(a, "--gpu")) {
            gpu_name = v;
        } else if (!strcmp(a, "--hw-file")) {
            hw_file = v;
        } else if (!strcmp(a, "--peak-tflops")) {
            rc = lp_cli_parse_double("model", a, v, LP_MODEL_MAX_TFLOPS, &peak);
        } else if (!strcmp(a, "--mem-bw")) {
            rc = lp_cli_parse_double("model", a, v, LP_MODEL_MAX_BW_GBS, &bw);
        } else if (!strcmp(a, "--format")) {
            format = v;
            if (!v || (strcmp(v, "md") && strcmp(v, "json"))) {
                lp_cli_error("model", "--format takes md or json");
                rc = -1;
            }
        } else if (!strcmp(a, "-o")) {
            out_path = v;
            if (v && !*v) {
                lp_cli_error("model", "-o needs a file ('-': standard output), not an empty path");
                rc = -1;
            }
        } else if (!strcmp(a, "--list-gpus")) {
            list = 1;
            takes = 0;
        } else if (a[0] == '-') {
            lp_cli_error("model", "unknown option '%s'; see 'llmprof model --help'", a);
            return 2;
        } else if (!config) {
            config = a;
            takes = 0;
        } else {
            lp_cli_error("model", "one config at a time: '%s' and '%s'", config, a);
            return 2;
        }
        if (rc)
            return 2;
        if (takes && !v) {
            lp_cli_error("model", "%s needs a value", a);
            return 2;
        }
        i += takes;
    }
    char err[1024];
    struct lp_gpu_table table;
    if (lp_gpu_table_load(&table, hw_file, err, sizeof err) != 0) {
        lp_cli_error("model", "%s", err);
        return 1;
    }
    int status = 1;
    struct lp_model_result *r = NULL;
    struct lp_cli_outs outs = {.cmd = "model"};
    if (list) {
        list_gpus(&table);
        status = 0;
        goto done;
    }
    if (!config) {
        lp_cli_error("model", "no config given; usage: llmprof model CONFIG [options]");
        status = 2;
        goto done;
    }
    struct lp_gpu gpu;
    if (gpu_name) {
        const struct lp_gpu *g = lp_gpu_find(&table, gpu_name);
        if (!g) {
            lp_cli_error("model", "no GPU named '%s' in the hardware table; see --list-gpus, or "
                                  "add a row with --hw-file", gpu_name);
            status = 2;
            goto done;
        }
        gpu = *g;
        if (peak > 0)
            gpu.tflops[w.activations] = peak;
        if (bw > 0)
            gpu.mem_bw_gbs = bw;
        if (gpu.tflops[w.activations] <= 0) {
            lp_cli_error("model", "%s has no dense %s peak in the table; give --peak-tflops",
                         gpu.name, lp_dtype_name(w.activations));
            status = 2;
            goto done;
        }
    } else if (peak > 0 || bw > 0) {
        lp_cli_error("model", "--peak-tflops and --mem-bw override a --gpu; name one");
        status = 2;
        goto done;
    }
    /* the output is checked before any work: never one of the inputs */
    if (out_path && (output_is_input(out_path, config, hw_file) ||
                     lp_cli_out_check("model", out_path, 1) != 0)) {
        status = 2;
        goto done;
    }
    struct lp_model m;
    if (lp_model_load(config, &m, err, sizeof err) != 0) {
        lp_cli_error("model", "%s", err);
        goto done;
    }
    if (m.vision.kind == LP_VISION_NONE)
        w.vision_mode = LP_VISION_MODE_NONE;
    if (!(r = malloc(sizeof *r)) || lp_model_analyze(&m, &w, r, err, sizeof err) != 0) {
        lp_cli_error("model", "%s", r ? err : "out of memory");
        status = 2;
        goto done;
    }
    struct lp_model_bounds bounds;
    if (gpu_name)
        lp_model_bounds(r, &w, &gpu, &bounds);
    /* a model directory: compare with the weights' headers */
    struct lp_weights wt;
    struct stat st;
    int have_weights = 0;
    if (stat(config, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (lp_weights_scan(config, &m, &wt, &have_weights, err, sizeof err) != LP_OK) {
            lp_cli_error("model", "%s", err);
            goto done;
        }
    }
    struct lp_model_report rep = {&m, &w, r, gpu_name ? &bounds : NULL,
                                  have_weights ? &wt : NULL};
    /* standard output too goes through the helpers, so that a write error is reported */
    FILE *out = lp_cli_outs_open(&outs, out_path ? out_path : "-", 1);
    if (!out)
        goto done;
    int wrc = !strcmp(format, "json") ? lp_report_model_json(out, &rep) : lp_report_model_md(out, &rep);
    if (lp_cli_outs_close(&outs, out, wrc) != 0 || lp_cli_outs_commit(&outs) != 0)
        goto done;
    status = 0;
done:
    free(r);
    lp_cli_outs_free(&outs);
    lp_gpu_table_free(&table);
    return status;
}
