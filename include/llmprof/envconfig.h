/* The LLMPROF_* environment: one table of every variable the collector reads (name, type,
 * default, bounds, where it lands, one line of doc) and the variables only the CLI reads,
 * with one parser that fills struct lp_envconfig once at the collector's start. The CLI
 * (`record`) sets the collector's variables by the names of this table, and
 * docs/collector.md's table of variables is written from it (tests/test_envconfig.c).
 * Plain types only: the collector maps the struct to its parts, the CLI to its options. */
#ifndef LLMPROF_ENVCONFIG_H
#define LLMPROF_ENVCONFIG_H

#include <stddef.h>
#include <stdint.h>

/* One per variable, in the order of the table (docs/collector.md's too). */
enum lp_envconfig_var {
    LP_ENVCONFIG_VAR_OUT,
    LP_ENVCONFIG_VAR_QUIET,
    LP_ENVCONFIG_VAR_LIGHT,
    LP_ENVCONFIG_VAR_KINDS,
    LP_ENVCONFIG_VAR_NVML_HZ,
    LP_ENVCONFIG_VAR_FLUSH_MS,
    LP_ENVCONFIG_VAR_BUFFER_KB,
    LP_ENVCONFIG_VAR_MAX_BUFFERS,
    LP_ENVCONFIG_VAR_DEVICE_BUFFER_KB,
    LP_ENVCONFIG_VAR_DEVICE_BUFFER_LIMIT,
    LP_ENVCONFIG_VAR_DEVICE_BUFFERS,
    LP_ENVCONFIG_VAR_SUBSCRIBE,
    LP_ENVCONFIG_VAR_CUPTI_PATH,
    LP_ENVCONFIG_VAR_NVML_PATH,
    LP_ENVCONFIG_VAR_GRAPH_NODES,
    LP_ENVCONFIG_VAR_GEMM,
    LP_ENVCONFIG_VAR_COUNTERS,
    LP_ENVCONFIG_VAR_COUNTER_RANGES,
    LP_ENVCONFIG_VAR_COUNTER_SEGMENTS,
    LP_ENVCONFIG_VAR_GRAPHS,
    LP_ENVCONFIG_VAR_CAPTURE,
    LP_ENVCONFIG_VAR_LAUNCH,
    LP_ENVCONFIG_VAR_FINALIZE,
    LP_ENVCONFIG_VAR_FINALIZE_AFTER_MS,
    LP_ENVCONFIG_VAR_PM_SAMPLING,
    LP_ENVCONFIG_VAR_PM_BUFFER_MB,
    LP_ENVCONFIG_VAR_TEST_HOST,
    LP_ENVCONFIG_VAR_TEST_CLOCK_SHIFT_NS,
    /* read by the CLI only: listed, never parsed into struct lp_envconfig */
    LP_ENVCONFIG_VAR_LIB,
    LP_ENVCONFIG_VAR_EXPORT_WARN_MIB,
    LP_ENVCONFIG_VAR_MEM_AVAILABLE_MIB,
    LP_ENVCONFIG_VAR_COUNT
};

/* How a value is read. Every type: unset and empty are the default. */
enum lp_envconfig_type {
    LP_ENVCONFIG_TYPE_FLAG,   /* a non-negative decimal number; more than 0: on (int 0 or 1) */
    LP_ENVCONFIG_TYPE_NUMBER, /* a decimal number within [min, max] (double) */
    LP_ENVCONFIG_TYPE_COUNT,  /* a whole decimal number within [min, max] (uint64_t) */
    LP_ENVCONFIG_TYPE_WORD,   /* one of words[] (int: its index) */
    LP_ENVCONFIG_TYPE_TEXT,   /* any text (const char *, NULL when unset); its syntax is
                               * checked where it is used (kinds, capture, regex ...) */
};

enum lp_envconfig_reader {
    LP_ENVCONFIG_READER_COLLECTOR, /* libllmprof.so, parsed by lp_envconfig_parse */
    LP_ENVCONFIG_READER_CLI,       /* llmprof itself (where `lands` says) */
};

enum lp_envconfig_flag {
    LP_ENVCONFIG_FLAG_RAISE = 1u,    /* number, count: below min is raised to min, unwarned */
    LP_ENVCONFIG_FLAG_ZERO_OFF = 2u, /* number, count: 0 means off, whatever min; text: "0" is
                                      * read as unset */
};

/* The values of the WORD variables. */
enum lp_envconfig_graphs { LP_ENVCONFIG_GRAPHS_REPLAY, LP_ENVCONFIG_GRAPHS_NODE };
enum lp_envconfig_launch {
    LP_ENVCONFIG_LAUNCH_CALLBACKS,
    LP_ENVCONFIG_LAUNCH_ACTIVITY,
    LP_ENVCONFIG_LAUNCH_DRIVER
};

/* The collector's configuration, one field per collector variable (the table's offsets).
 * Texts point into the environment as it was parsed. */
struct lp_envconfig {
    const char *out;
    int quiet, light;
    const char *kinds;
    double nvml_hz, flush_ms;
    uint64_t buffer_kb, max_buffers;
    uint64_t device_buffer_kb, device_buffer_limit, device_buffers;
    int subscribe;
    const char *cupti_path, *nvml_path;
    int graph_nodes, gemm;
    const char *counters, *counter_ranges;
    uint64_t counter_segments;
    int graphs; /* enum lp_envconfig_graphs */
    const char *capture;
    int launch; /* enum lp_envconfig_launch */
    int finalize;
    uint64_t finalize_after_ms;
    double pm_sampling_us, pm_buffer_mb;
    const char *test_host;        /* tests only: a second host simulated on this one */
    uint64_t test_clock_shift_ns;
};

struct lp_envconfig_entry {
    const char *name;         /* LLMPROF_... */
    enum lp_envconfig_type type;
    enum lp_envconfig_reader reader;
    size_t offset;            /* collector: its field in struct lp_envconfig */
    double def;               /* flag, number, count; word: the index of the default */
    const char *def_text;     /* text: the default (NULL: none) */
    double min, max;          /* number, count (max INFINITY: no bound) */
    unsigned flags;           /* enum lp_envconfig_flag */
    const char *const *words; /* word: its values, NULL-terminated */
    uint32_t loss_source;     /* enum lp_loss_source (trace.h) its warning is recorded under */
    const char *lands;        /* where it lands: the file that acts on it */
    const char *doc;          /* one line: what it does (Markdown) */
};

/* Indexed by enum lp_envconfig_var. */
extern const struct lp_envconfig_entry lp_envconfig_table[LP_ENVCONFIG_VAR_COUNT];

/* The variable's name ("LLMPROF_OUT"). */
const char *lp_envconfig_name(enum lp_envconfig_var var);

typedef const char *(*lp_envconfig_getter)(const char *name);
/* MESSAGE says what was wrong and what is used instead ("ignoring LLMPROF_X=V: ...; the
 * default, D, is used"). */
typedef void (*lp_envconfig_warner)(void *ctx, enum lp_envconfig_var var, const char *message);

/* Fills OUT with every collector variable read through GET (getenv when NULL): the value, or
 * the default where unset, empty or bad. A bad value (not a decimal number, nan, inf, hex,
 * trailing text, overflow, negative, a fraction for a count, past the bounds unless raised,
 * a word not listed) is given to WARN (may be NULL), one message per variable. Never fails;
 * returns how many values were bad. */
size_t lp_envconfig_parse(struct lp_envconfig *out, lp_envconfig_getter get,
                          lp_envconfig_warner warn, void *ctx);

/* The default of ENTRY as the docs and warnings say it ("4096", "replay", "0 (off)"). */
void lp_envconfig_default_text(const struct lp_envconfig_entry *e, char *buf, size_t len);
/* Its bounds ("64–1048576, less raised to 64", "replay, node"; "" when none). */
void lp_envconfig_bounds_text(const struct lp_envconfig_entry *e, char *buf, size_t len);

#endif
