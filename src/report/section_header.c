/* The report's header: the trace (its file, format, records and GPUs), the command and how
 * busy the GPU was, in report.md; report.json's "trace", the options the run was analysed
 * with ("options"), the model given, its config.json kept whole ("model"), and the request
 * the program stated (record's LLMPROF_REQUEST_FILE, "request"). */
#include <stdio.h>
#include "section.h"

static void header_md(FILE *f, const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    char b1[32], b2[32], b4[32];
    fprintf(f, "- trace: ");
    lp_md_code(f, t->path ? t->path : "");
    fprintf(f, " (format %u.%u, %s, %llu records, %s)\n", t->version_major, t->version_minor,
            t->complete ? "complete" : "INCOMPLETE", (unsigned long long)t->n_records,
            BYTES(t->file_bytes));
    if (lp_md_command(r)[0]) {
        fprintf(f, "- command: ");
        lp_md_code(f, lp_md_command(r));
        fprintf(f, "\n");
    }
    if (r->opt.request) {
        fprintf(f, "- request (as the program stated it): ");
        if (lp_md_code_cut(f, r->opt.request, 400))
            fprintf(f, " (whole in report.json)");
        fprintf(f, "\n");
    }
    for (size_t i = 0; i < t->n_devices; i++) {
        fprintf(f, "- GPU %u: ", t->devices[i].id);
        lp_fmt_puts(f, lp_trace_str(t, t->devices[i].name));
        fprintf(f, ", cc %u.%u, %u SMs, %s\n", t->devices[i].cc_major, t->devices[i].cc_minor,
                t->devices[i].sm_count, BYTES(t->devices[i].mem_bytes));
    }
    if (r->kernels_recorded && r->timeline.unrecorded_ns)
        fprintf(f,
                "- GPU work from first to last: %s, %s of it between capture windows (not "
                "recorded); GPU busy %.1f %% of the rest%s (measured)\n",
                NS(r->timeline.last_ns - r->timeline.first_ns), NS2(r->timeline.unrecorded_ns),
                100 * r->timeline.busy_share, lp_md_after_warmup(r));
    else if (r->kernels_recorded)
        fprintf(f, "- GPU work from first to last: %s; GPU busy %.1f %% of it%s (measured)\n",
                NS(r->timeline.last_ns - r->timeline.first_ns), 100 * r->timeline.busy_share,
                lp_md_after_warmup(r));
    else
        fprintf(f, "- GPU work: no kernels recorded (--light), so how busy the GPU was is not "
                   "known; stage times come from the NVTX ranges\n");
}

static json_t *trace_json(const struct lp_run *r)
{
    const struct lp_trace *t = r->trace;
    json_t *meta = json_object(), *warn = json_array(), *loss = json_array(),
           *devs = json_array();
    for (size_t i = 0; i < t->n_meta; i++)
        json_object_set_new(meta, t->meta[i].key, json_string(t->meta[i].value));
    for (size_t i = 0; i < t->n_warnings; i++)
        json_array_append_new(warn, json_string(t->warnings[i]));
    for (size_t i = 0; i < t->n_losses; i++)
        json_array_append_new(loss, json_pack("{s:i,s:o,s:s}", "source", (int)t->losses[i].source,
                                              "count", lp_json_u64(t->losses[i].count), "what",
                                              lp_trace_str(t, t->losses[i].what)));
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct lp_device *d = &t->devices[i];
        char cc[16];
        snprintf(cc, sizeof cc, "%u.%u", d->cc_major, d->cc_minor);
        json_array_append_new(
            devs, json_pack("{s:i,s:s,s:s,s:i,s:o,s:i,s:i}", "id", (int)d->id, "name",
                            lp_trace_str(t, d->name), "cc", cc, "sms", (int)d->sm_count,
                            "mem_bytes", lp_json_u64(d->mem_bytes), "max_sm_mhz",
                            (int)d->max_sm_mhz, "power_limit_mw", (int)d->power_limit_mw));
    }
    json_t *o =
        json_pack("{s:s,s:i,s:i,s:b,s:o,s:o,s:o,s:o}", "path", t->path ? t->path : "",
                  "version_major", (int)t->version_major, "version_minor", (int)t->version_minor,
                  "complete", t->complete, "records", lp_json_u64(t->n_records), "file_bytes",
                  lp_json_u64(t->file_bytes), "dropped_bytes", lp_json_u64(t->dropped_bytes),
                  "lost_records", lp_json_u64(r->lost_records));
    json_object_set_new(o, "losses_uncounted", json_integer((json_int_t)r->losses_uncounted));
    /* the chunks against the writer's account (format 1.8): how the file was altered */
    static const char *const altered_keys[] = {"repeated", "missing", "order", "unknown_type",
                                               "extra_records", "unnumbered"};
    json_t *alt = json_array();
    for (size_t b = 0; b < sizeof altered_keys / sizeof *altered_keys; b++)
        if (t->altered & 1u << b)
            json_array_append_new(alt, json_string(altered_keys[b]));
    json_object_set_new(o, "altered", alt);
    json_object_set_new(o, "records_unread", lp_json_u64(t->records_unread));
    json_object_set_new(o, "counts",
                        json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "kernels",
                                  (json_int_t)t->n_kernels, "memcpy", (json_int_t)t->n_memcpys,
                                  "memset", (json_int_t)t->n_memsets, "markers",
                                  (json_int_t)t->n_markers, "api", (json_int_t)t->n_apis, "nvml",
                                  (json_int_t)t->n_nvml, "ranges", (json_int_t)r->ranges.n));
    json_object_set_new(o, "meta", meta);
    if (r->opt.command)
        json_object_set_new(meta, "command", json_string(r->opt.command));
    json_object_set_new(o, "warnings", warn);
    json_object_set_new(o, "losses", loss);
    json_object_set_new(o, "devices", devs);
    return o;
}

static json_t *options_json(const struct lp_run *r)
{
    const struct lp_run_options *op = &r->opt;
    return json_pack("{s:I,s:o,s:b,s:I,s:I,s:I}", "top_k", (json_int_t)op->top_k,
                     "gap_threshold_ns", lp_json_u64(op->gap_ns), "keep_warmup",
                     op->keep_warmup, "prefill_tokens", (json_int_t)op->prefill_tokens,
                     "decode_tokens", (json_int_t)op->decode_tokens, "batch",
                     (json_int_t)op->batch);
}

/* the model given (--model): its config.json's path, type and whole text, parsed (a text
 * that no longer parses is kept as a string); null without one */
static json_t *model_json(const struct lp_run *r)
{
    const struct lp_run_options *op = &r->opt;
    if (!op->model)
        return json_null();
    json_error_t e;
    json_t *config = op->model_config ? json_loads(op->model_config, 0, &e) : NULL;
    if (!config && op->model_config)
        config = json_string(op->model_config);
    return json_pack("{s:o,s:s,s:o}", "config_file",
                     op->model_file ? json_string(op->model_file) : json_null(), "model_type",
                     op->model->model_type, "config", config ? config : json_null());
}

/* what the program said it was asked to do (meta.json's "request"); null without one */
static json_t *request_json(const struct lp_run *r)
{
    json_t *req = r->opt.request ? json_loads(r->opt.request, 0, NULL) : NULL;
    return req ? req : json_null();
}

static const struct lp_section_key keys[] = {
    {"trace", trace_json},
    {"options", options_json},
    {"model", model_json},
    {"request", request_json},
    {NULL, NULL},
};

const struct lp_section lp_section_header = {
    .name = "header",
    .md = header_md,
    .json = keys,
};
