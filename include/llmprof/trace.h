/* llmprof trace format v1: the records every stage reads, the writer the collector uses,
 * and the reader every later stage uses. The on-disk layout is documented in
 * docs/trace-format.md; this header is its C view. */
#ifndef LLMPROF_TRACE_H
#define LLMPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/status.h"

#define LP_TRACE_MAGIC "LLMPROF\0"
#define LP_TRACE_VERSION_MAJOR 1
#define LP_TRACE_VERSION_MINOR 8
#define LP_TRACE_SUFFIX ".lpt"

/* Record types. Values are part of the on-disk format: never renumber. */
enum lp_rec_type {
    LP_REC_STRING = 1,   /* interned string definition (internal to the stream) */
    LP_REC_KERNEL = 2,
    LP_REC_MEMCPY = 3,
    LP_REC_MEMSET = 4,
    LP_REC_MEMORY = 5,   /* device memory allocation or release */
    LP_REC_MARKER = 6,   /* NVTX marker: range start/end or instant */
    LP_REC_API = 7,      /* a selected CUDA runtime/driver call (launches, copies, syncs) */
    LP_REC_NVML = 8,     /* one NVML sample of one device */
    LP_REC_DEVICE = 9,   /* static facts about one GPU */
    LP_REC_OVERHEAD = 10, /* time CUPTI spent on its own work */
    LP_REC_LOSS = 11,    /* records that were not recorded, with the reason */
    LP_REC_GEMM = 12,    /* one cuBLAS/cuBLASLt matrix multiply call (format 1.1) */
    LP_REC_GRAPH = 13,   /* a CUDA graph node made, copied or changed (format 1.2) */
    LP_REC_COUNTERS = 14, /* hardware counters of one segment of the run (format 1.3) */
    LP_REC_PM_SAMPLE = 15, /* one PM sample of the GPU's throughput counters (format 1.4) */
    LP_REC_WINDOW = 16,  /* a capture window: kernels recorded from start to end (format 1.5) */
    LP_REC_TYPE_COUNT
};

/* String ids index the trace's string table; 0 is the empty string. */
typedef uint32_t lp_str;

enum lp_kernel_flag {
    LP_KERNEL_FLAG_GRAPH = 1 << 0, /* launched as part of a CUDA graph */
    LP_KERNEL_FLAG_REPLAY = 1 << 1, /* (format 1.6) not a kernel: one whole replay of the CUDA
                                       graph GRAPH_ID (record --graphs replay), from its first
                                       node's start to its last node's end; its kernels were
                                       not recorded one by one. No name, grid or node id. */
};

struct lp_kernel {
    uint64_t start, end;          /* ns, trace clock */
    lp_str name;                  /* mangled name as the driver reports it */
    uint32_t correlation;         /* matches lp_api.correlation of the launching call */
    uint32_t device, context, stream;
    int32_t grid[3], block[3];
    uint32_t registers;           /* per thread */
    uint32_t static_smem, dynamic_smem; /* bytes per block */
    uint32_t local_mem_per_thread;
    uint32_t graph_id;            /* 0 when not launched through a graph */
    uint64_t graph_node_id;
    uint32_t flags;               /* enum lp_kernel_flag */
};

/* A kept row's duration when it is under 2^31 ns (2.1 s); else, or when the row ends before
 * it starts, LP_REC_LONG | i: its end is lp_trace.long_ends[i]. Read the end through
 * lp_trace_kernel_end, lp_trace_api_end and lp_trace_gemm. */
#define LP_REC_LONG 0x80000000u

/* A kernel as the reader keeps it (lp_trace.kernels): its times and launch call, and the
 * rest as an index into lp_trace.kernel_configs, where each distinct one is kept once (a
 * decode step launches the same few thousand kernels over and over: two thirds of the bytes
 * of a kernel record are what it shares with the kernels launched alike). 20 bytes: the
 * report keeps one per kernel, so 4-byte alignment saves a fifth of them. */
struct __attribute__((packed, aligned(4))) lp_kernel_rec {
    uint64_t start;               /* ns, trace clock */
    uint32_t dur;                 /* ns, or LP_REC_LONG | an index (above) */
    uint32_t correlation;
    uint32_t config;              /* index into lp_trace.kernel_configs */
};

/* The rest of a kernel record, shared by the kernels launched alike */
struct lp_kernel_config {
    lp_str name;
    uint32_t device, stream;
    uint32_t graph_id;
    uint32_t flags;               /* enum lp_kernel_flag */
    int32_t grid[3], block[3];
    uint32_t registers, static_smem, dynamic_smem, local_mem_per_thread;
    uint32_t context;
    uint64_t graph_node_id;
};

/* Memory kinds follow CUpti_ActivityMemoryKind: 0 unknown, 1 pageable, 2 pinned,
 * 3 device, 4 array, 5 managed, 6 device static, 7 managed static. */
struct lp_memcpy {
    uint64_t start, end, bytes;
    uint32_t correlation, device, context, stream;
    uint32_t copy_kind;           /* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP ... */
    uint32_t src_kind, dst_kind;  /* memory kinds */
    uint32_t graph_id;
};

struct lp_memset {
    uint64_t start, end, bytes;
    uint32_t correlation, device, context, stream;
    uint32_t value, memory_kind;
    uint32_t graph_id;
};

enum lp_memory_op { LP_MEMORY_OP_ALLOC = 1, LP_MEMORY_OP_FREE = 2 };

struct lp_memory {
    uint64_t timestamp, address, bytes;
    uint32_t correlation, device, context, stream;
    uint32_t op;                  /* enum lp_memory_op */
    uint32_t memory_kind;
};

enum lp_marker_flag {
    LP_MARKER_FLAG_INSTANT = 1 << 0,
    LP_MARKER_FLAG_START = 1 << 1,
    LP_MARKER_FLAG_END = 1 << 2,
};

struct lp_marker {
    uint64_t timestamp;
    uint32_t id;                  /* pairs a start with its end */
    uint32_t flags;               /* enum lp_marker_flag */
    lp_str name;                  /* 0 on end markers */
    lp_str domain;                /* 0 for the default domain */
    uint32_t thread;              /* CUPTI thread id, same space as lp_api.thread */
};

enum lp_api_domain { LP_API_DOMAIN_RUNTIME = 1, LP_API_DOMAIN_DRIVER = 2 };

struct lp_api {
    uint64_t start, end;
    uint32_t correlation, thread;
    uint32_t domain;              /* enum lp_api_domain */
    uint32_t cbid;                /* CUPTI callback id within the domain */
    lp_str name;                  /* e.g. "cudaLaunchKernel" */
    uint32_t status;              /* return value of the call */
};

/* An API call as the reader keeps it (lp_trace.apis): its times and correlation, and the
 * rest as an index into lp_trace.api_kinds, where each distinct one is kept once (a program
 * makes the same few calls from the same few threads). 20 bytes, as lp_kernel_rec. */
struct __attribute__((packed, aligned(4))) lp_api_rec {
    uint64_t start;
    uint32_t dur;                 /* ns, or LP_REC_LONG | an index (above) */
    uint32_t correlation;
    uint32_t kind;                /* index into lp_trace.api_kinds */
};

/* The rest of an API call record, shared by the calls alike */
struct lp_api_kind {
    uint32_t thread;
    uint32_t domain;              /* enum lp_api_domain */
    uint32_t cbid;                /* CUPTI callback id within the domain */
    lp_str name;                  /* e.g. "cudaLaunchKernel" */
    uint32_t status;              /* return value of the call */
    uint32_t pad;                 /* 0: the reader compares kinds as bytes */
};

/* Bits of lp_nvml_sample.valid: which fields were read successfully. */
enum lp_nvml_field {
    LP_NVML_FIELD_POWER = 1 << 0,
    LP_NVML_FIELD_ENERGY = 1 << 1,
    LP_NVML_FIELD_SM_CLOCK = 1 << 2,
    LP_NVML_FIELD_MEM_CLOCK = 1 << 3,
    LP_NVML_FIELD_UTIL = 1 << 4,
    LP_NVML_FIELD_TEMP = 1 << 5,
    LP_NVML_FIELD_CLOCK_EVENTS = 1 << 6,
    LP_NVML_FIELD_MEM_USED = 1 << 7,
    LP_NVML_FIELD_POWER_AVERAGED = 1 << 8, /* power is NVML's ~1 s average, not instantaneous */
};

struct lp_nvml_sample {
    uint64_t timestamp;           /* midpoint of the queries, trace clock */
    uint32_t query_ns;            /* how long the queries took: the alignment uncertainty */
    uint32_t device;              /* CUDA device ordinal as the process sees it */
    uint32_t valid;               /* enum lp_nvml_field */
    uint32_t power_mw;
    uint64_t energy_mj;           /* since driver load: use differences */
    uint32_t sm_mhz, mem_mhz;
    uint32_t util_gpu, util_mem;  /* percent over NVML's sample period */
    uint32_t temp_c;
    uint64_t clock_events;        /* nvmlClocksEventReasons bitmask */
    uint64_t mem_used;            /* bytes, whole device */
};

struct lp_device {
    uint32_t id;                  /* CUDA device ordinal */
    lp_str name;
    uint8_t uuid[16];
    uint32_t cc_major, cc_minor;
    uint32_t sm_count;
    uint64_t mem_bytes;
    uint64_t mem_bandwidth_kbps;  /* as CUPTI reports it (KB/s) */
    uint32_t core_clock_khz;
    uint32_t max_sm_mhz, max_mem_mhz; /* from NVML, 0 if unknown */
    uint32_t power_limit_mw;      /* from NVML, 0 if unknown */
};

struct lp_overhead {
    uint64_t start, end;
    uint32_t kind;                /* CUpti_ActivityOverheadKind */
    uint32_t thread;
};

enum lp_loss_source {
    LP_LOSS_SOURCE_CUPTI_DROPPED = 1,    /* CUPTI dropped activity records (buffers full) */
    LP_LOSS_SOURCE_BUFFER_DENIED = 2,    /* buffer pool at its bound: CUPTI had no buffer */
    LP_LOSS_SOURCE_COLLECTOR = 3,        /* a part of the collector could not start: see what */
    LP_LOSS_SOURCE_WRITE = 4,            /* records that could not be written (disk full ...) */
    LP_LOSS_SOURCE_NVML = 5,             /* NVML unavailable or failing */
    LP_LOSS_SOURCE_GEMM = 6,             /* GEMM records dropped or GEMM capture failing */
    LP_LOSS_SOURCE_COUNTERS = 7,         /* hardware counters refused, busy or not decoded */
    LP_LOSS_SOURCE_PM = 8,               /* PM samples refused, busy or lost (buffer overflow) */
    LP_LOSS_SOURCE_LAUNCH = 9,           /* launch records dropped (their queue was full) */
};

struct lp_loss {
    uint32_t source;              /* enum lp_loss_source */
    uint64_t count;               /* records lost, 0 when unknown (a whole source missing) */
    lp_str what;                  /* human-readable reason */
};

enum lp_gemm_flag {
    LP_GEMM_FLAG_ALGO_FIRST = 1 << 0, /* algo and tile were read on the first call of this
                                         shape (cuBLASLt's logger) and copied to later ones */
};

/* One matrix multiply as cuBLAS sees it (column-major): D (m x n) = op(A) (m x k) x op(B)
 * (k x n), BATCH times. For PyTorch's linear y = x W^T, m is out_features and n the tokens.
 * Types are cudaDataType_t values, compute_type a cublasComputeType_t, trans a
 * cublasOperation_t (0 N, 1 T, 2 C). The kernels it launched are those whose launching call
 * ran on THREAD within [start, end]. */
struct lp_gemm {
    uint64_t start, end;          /* the host call, trace clock */
    uint32_t thread;              /* same id space as lp_api.thread */
    lp_str api;                   /* entry point: "cublasGemmEx", "cublasLtMatmul", ... */
    uint64_t m, n, k, batch;
    uint32_t transa, transb;
    uint32_t a_type, b_type, c_type, d_type;
    uint32_t compute_type;
    int32_t algo;                 /* cuBLASLt algo id, -1 unknown */
    lp_str tile;                  /* e.g. "256x128", 0 unknown */
    uint32_t splitk;              /* split-K factor, 0 unknown */
    uint32_t epilogue;            /* cublasLtEpilogue_t, 1 (default) for cuBLAS calls */
    uint32_t status;              /* return value of the call */
    uint32_t flags;               /* enum lp_gemm_flag */
};

/* A GEMM call as the reader keeps it (lp_trace.gemms): its times, and the rest as an index
 * into lp_trace.gemm_kinds, where each distinct one is kept once (a model makes the same
 * few shapes from the same thread over and over: a call record is 112 bytes, a row 16).
 * Read a whole call through lp_trace_gemm. */
struct __attribute__((packed, aligned(4))) lp_gemm_rec {
    uint64_t start;               /* the host call, trace clock */
    uint32_t dur;                 /* ns, or LP_REC_LONG | an index (above) */
    uint32_t kind;                /* index into lp_trace.gemm_kinds */
};

/* The rest of a GEMM call record (struct lp_gemm but its times), shared by the calls alike */
struct lp_gemm_kind {
    uint32_t thread;
    lp_str api;
    uint64_t m, n, k, batch;
    uint32_t transa, transb;
    uint32_t a_type, b_type, c_type, d_type;
    uint32_t compute_type;
    int32_t algo;
    lp_str tile;
    uint32_t splitk, epilogue, status, flags;
    uint32_t pad;                 /* 0: the reader compares kinds as bytes */
};

/* What happened to a CUDA graph node. A replayed kernel carries the id of a node of the
 * executable graph; that node was cloned, at instantiation, from a node made while the
 * program captured a stream, inside the library call (a GEMM) and the NVTX ranges open on
 * THREAD at TIMESTAMP. */
enum lp_graph_event {
    LP_GRAPH_EVENT_NODE_CREATED = 1,    /* node added to graph_id (stream capture or graph API) */
    LP_GRAPH_EVENT_NODE_CLONED = 2,     /* node copied from original_node_id: instantiation, or
                                     cudaGraphClone */
    LP_GRAPH_EVENT_NODE_UPDATED = 3,    /* cudaGraphExecUpdate gave node (of an executable graph)
                                     the parameters of original_node_id */
    LP_GRAPH_EVENT_NODE_SET_PARAMS = 4, /* node's parameters set in executable graph exec_id */
    LP_GRAPH_EVENT_EXEC_CREATED = 5,    /* executable graph exec_id instantiated from graph_id */
};

struct lp_graph {
    uint64_t timestamp;           /* trace clock, inside the call that caused it */
    uint32_t thread;              /* same id space as lp_api.thread */
    uint32_t event;               /* enum lp_graph_event */
    uint32_t graph_id, original_graph_id, exec_id; /* CUPTI's ids, 0 when not given */
    uint32_t node_type;           /* CUgraphNodeType: 0 kernel, 1 memcpy, 2 memset ... */
    uint64_t node_id, original_node_id; /* CUPTI's ids, 0 when not given */
};

/* The hardware counters a counters record can carry, in their on-disk slot order (never
 * renumber). Each is a sum over the segment as CUPTI's range profiler evaluated it
 * (docs/collector.md names the metric behind each). */
enum lp_counter {
    LP_COUNTER_GPU_NS = 0,        /* GPU time of the segment, ns */
    LP_COUNTER_SM_CYCLES = 1,     /* elapsed SM cycles (the busiest SM) */
    LP_COUNTER_DRAM_READ = 2,     /* bytes read from DRAM */
    LP_COUNTER_DRAM_WRITE = 3,    /* bytes written to DRAM */
    LP_COUNTER_L2_BYTES = 4,      /* bytes of L2 traffic */
    LP_COUNTER_TENSOR_BF16 = 5,   /* tensor-core FLOPs with bf16 inputs (fp32 accumulate) */
    LP_COUNTER_TENSOR_FP16 = 6,   /* tensor-core FLOPs with fp16 inputs */
    LP_COUNTER_TENSOR_FP8 = 7,    /* tensor-core FLOPs with fp8 inputs */
    LP_COUNTER_TENSOR_TF32 = 8,   /* tensor-core FLOPs with tf32 inputs */
    LP_COUNTER_COUNT
};
#define LP_COUNTER_SLOTS 16       /* values every counters record has room for */

/* The counters of one segment. Segments tile the run on one thread from the first counted
 * NVTX range on: each starts and ends where such a range starts or ends, so a segment holds
 * the GPU work launched on its context between START and END (host times of the profiler's
 * range push and pop). VALID has bit (1 << enum lp_counter) for each value collected. */
struct lp_counters {
    uint64_t start, end;          /* host, trace clock */
    uint32_t thread;              /* same id space as lp_api.thread */
    uint32_t device;              /* CUDA device ordinal */
    uint32_t index;               /* the segment's number in the run, from 0 */
    uint32_t valid;               /* bits of enum lp_counter */
    uint64_t value[LP_COUNTER_SLOTS];
};

/* The values a PM sample can carry, in their on-disk slot order (never renumber): CUPTI's
 * PM sampling over the sample's interval, percentages of the peak sustained rate in
 * hundredths (10000 = 100 %), except DRAM (KiB moved) and the clock (docs/collector.md
 * names the metric behind each). */
enum lp_pm {
    LP_PM_GR_ACTIVE = 0,     /* the compute engine had work: % of cycles */
    LP_PM_SM_ACTIVE = 1,     /* SMs with a warp in flight: % of SM cycles */
    LP_PM_SM_ISSUE = 2,      /* warp schedulers that issued: % of cycles */
    LP_PM_TENSOR = 3,        /* tensor pipes active: % of cycles */
    LP_PM_DRAM_READ = 4,     /* DRAM read: KiB in the sample */
    LP_PM_DRAM_WRITE = 5,    /* DRAM written: KiB in the sample */
    LP_PM_L2 = 6,            /* L2 throughput: % of peak */
    LP_PM_IDLE_SM_WARPS = 7, /* warp slots unused because their SM is idle: % of all */
    LP_PM_GPC_MHZ = 8,       /* GPC clock, MHz (not hundredths) */
    LP_PM_COUNT
};
#define LP_PM_SLOTS 12       /* values every PM sample has room for */

/* One PM sample: the device's counters over [START, END), sampled by the GPU at a fixed
 * interval whatever runs (record --counters). VALID has bit (1 << enum lp_pm) for each
 * value collected. */
struct lp_pm_sample {
    uint64_t start, end;     /* trace clock (CUPTI's sample timestamps) */
    uint32_t device;         /* CUDA device ordinal */
    uint32_t valid;          /* bits of enum lp_pm */
    uint32_t value[LP_PM_SLOTS];
};

/* What opened a capture window (record --capture). */
enum lp_window_cause {
    LP_WINDOW_CAUSE_PROFILER_API = 1, /* cudaProfilerStart ... cudaProfilerStop */
    LP_WINDOW_CAUSE_NVTX = 2,         /* an NVTX range chosen by name and occurrence */
    LP_WINDOW_CAUSE_SIGNAL = 3,       /* SIGUSR1 ... SIGUSR1 */
    LP_WINDOW_CAUSE_GRAPH_STEP = 4,   /* steps counted by CUDA graph launches (format 1.7) */
};

/* A capture window: kernels, copies, sets and allocations were recorded from START to END
 * (host times of the calls that opened and closed it; END is the end of the recording when
 * the program never closed it; the collector writes one with END = START when it opens, in
 * case it never closes). Outside every window only NVTX, NVML, graph records, counters, PM
 * samples and device facts are recorded; launch calls too when the header's
 * "launch_records" is not "callbacks". Allocations are recorded while kernel activity is on
 * (the windows, and the wait for the GPU after each). A trace has windows only when its
 * header's "capture" is not "all". */
struct lp_window {
    uint64_t start, end;          /* trace clock */
    uint32_t cause;               /* enum lp_window_cause */
    uint32_t thread;              /* the thread that opened it (same id space as lp_api.thread) */
};

struct lp_record {
    uint32_t type; /* enum lp_rec_type */
    union {
        struct lp_kernel kernel;
        struct lp_memcpy memcpy;
        struct lp_memset memset;
        struct lp_memory memory;
        struct lp_marker marker;
        struct lp_api api;
        struct lp_nvml_sample nvml;
        struct lp_device device;
        struct lp_overhead overhead;
        struct lp_loss loss;
        struct lp_gemm gemm;
        struct lp_graph graph;
        struct lp_counters counters;
        struct lp_pm_sample pm;
        struct lp_window window;
    } u;
};

/* A counter's short name ("gpu_ns", "dram_read", "tensor_bf16", ...), NULL past the list. */
const char *lp_counter_name(enum lp_counter c);
/* The input dtype a tensor-core counter counts ("bf16", "fp16", "fp8", "tf32"), NULL for
 * the counters that are not tensor work. */
const char *lp_counter_dtype(enum lp_counter c);
/* LIST of dtypes, comma-separated ("bf16,fp8"), as bits (1 << enum lp_counter) of their
 * tensor counters in *BITS; LP_ERR_ARG naming an unknown one in ERR. */
int lp_counter_parse_dtypes(const char *list, unsigned *bits, char *err, size_t errlen);
/* A PM value's short name ("gr_active", "tensor", "dram_read", ...), NULL past the list. */
const char *lp_pm_name(enum lp_pm p);
/* The value in its unit: percent for the throughputs (hundredths on disk), bytes for DRAM
 * (KiB on disk), MHz for the clock. */
double lp_pm_value(const struct lp_pm_sample *s, enum lp_pm p);

/* ---- writer: single-threaded; callers serialise access ---- */

struct lp_trace_writer;

struct lp_trace_writer_options {
    int zstd_level;       /* 0 = default (3) */
    size_t chunk_bytes;   /* raw bytes that trigger a chunk, 0 = default (1 MiB), at most
                             16 MiB (larger is taken as 16 MiB) */
    size_t max_strings;   /* strings held for interning, 0 = default (262144); past it the
                             table starts over and repeated strings are written again */
    uint64_t clock_shift_ns; /* tests only: added to every record's times (a host whose clock
                                is that far ahead); 0 = none */
};

/* Creates PATH exclusively (never overwrites). */
int lp_trace_writer_open(struct lp_trace_writer **w, const char *path,
                         const struct lp_trace_writer_options *opt, char *err, size_t errlen);
/* Header key/value pairs: write_header writes those set so far; close writes all of
 * them again in the END chunk, so values set late (end times) reach the reader. */
int lp_trace_writer_set_meta(struct lp_trace_writer *w, const char *key, const char *value);
/* Writes the META chunk now; records added before this are written after it. */
int lp_trace_writer_write_header(struct lp_trace_writer *w);
/* Strings longer than 1 MiB are written cut to 1 MiB. */
lp_str lp_trace_writer_intern(struct lp_trace_writer *w, const char *s);
/* Encodes one record; writes a chunk when the pending bytes exceed chunk_bytes. */
int lp_trace_writer_add(struct lp_trace_writer *w, const struct lp_record *r);
/* Compresses and writes pending records as one chunk. */
int lp_trace_writer_flush(struct lp_trace_writer *w);
/* Flushes, writes the END chunk with the meta set since, closes, frees. */
int lp_trace_writer_close(struct lp_trace_writer *w);
const char *lp_trace_writer_error(const struct lp_trace_writer *w);
uint64_t lp_trace_writer_records(const struct lp_trace_writer *w);

/* ---- reader: loads a whole trace into arrays ---- */

struct lp_meta_kv {
    char *key, *value;
};

struct lp_trace {
    char *path;
    uint32_t version_major, version_minor;
    struct lp_meta_kv *meta;
    size_t n_meta;
    int complete;                 /* the END chunk was read: the process exited cleanly */
    /* The string table. The reader numbers strings densely: ids in the arrays below index
     * STRINGS (equal to the file's ids whenever those were 1, 2, 3 ..., as the writer
     * makes them); an id that was used but never defined has a NULL entry. */
    char **strings;
    size_t n_strings;
    struct lp_kernel_rec *kernels;    size_t n_kernels;
    struct lp_kernel_config *kernel_configs; size_t n_kernel_configs;
    struct lp_memcpy *memcpys;        size_t n_memcpys;
    struct lp_memset *memsets;        size_t n_memsets;
    struct lp_memory *memory;         size_t n_memory;
    struct lp_marker *markers;        size_t n_markers;
    struct lp_api_rec *apis;          size_t n_apis;
    struct lp_api_kind *api_kinds;    size_t n_api_kinds;
    uint64_t *long_ends;              size_t n_long_ends; /* see LP_REC_LONG */
    struct lp_nvml_sample *nvml;      size_t n_nvml;
    struct lp_device *devices;        size_t n_devices;
    struct lp_overhead *overheads;    size_t n_overheads;
    struct lp_loss *losses;           size_t n_losses;
    struct lp_gemm_rec *gemms;        size_t n_gemms;
    struct lp_gemm_kind *gemm_kinds;  size_t n_gemm_kinds;
    struct lp_graph *graphs;          size_t n_graphs;
    struct lp_counters *counters;     size_t n_counters;
    struct lp_pm_sample *pm;          size_t n_pm;
    struct lp_window *windows;        size_t n_windows;
    uint64_t n_records;           /* all records decoded */
    uint64_t n_chunks;
    uint64_t file_bytes;
    /* recovery: what the reader skipped, one line each (at most about 40 lines: past
     * that, one line counts the rest) */
    char **warnings;
    size_t n_warnings;
    uint64_t dropped_bytes;       /* bytes of torn or corrupt chunks skipped */
    /* records decoded but left out of the arrays above because their times cannot be
     * true (docs/trace-format.md, "Implausible records"); the warnings say which */
    uint64_t implausible;
    /* the chunks against the trace's own account (format 1.8 numbers its chunks; the END
     * chunk says the records written): enum lp_trace_altered bits, and the records the END
     * chunk says were written that no chunk read holds (chunks missing or damaged) */
    uint32_t altered;
    uint64_t records_unread;
};

/* How a trace's chunks depart from what its writer wrote (lp_trace.altered); each found is
 * also one warning that says where and what the reader did. */
enum lp_trace_altered {
    LP_TRACE_ALTERED_REPEATED = 1 << 0,  /* a chunk found twice: read once */
    LP_TRACE_ALTERED_MISSING = 1 << 1,   /* chunk numbers skipped */
    LP_TRACE_ALTERED_ORDER = 1 << 2,     /* chunks out of their written order: read in it */
    LP_TRACE_ALTERED_UNKNOWN = 1 << 3,   /* a chunk type its format version does not have */
    LP_TRACE_ALTERED_EXTRA = 1 << 4,     /* more records than the END chunk says were written */
    LP_TRACE_ALTERED_UNNUMBERED = 1 << 5, /* a chunk without a number among numbered ones */
};

/* Loads PATH. Memory and time are bounded by the file: see docs/trace-format.md, "Reading".
 * An empty file, or one with nothing after the file header, is an error (LP_ERR_FORMAT)
 * that says so. */
int lp_trace_read(struct lp_trace **t, const char *path, char *err, size_t errlen);
void lp_trace_free(struct lp_trace *t);
const char *lp_trace_meta(const struct lp_trace *t, const char *key);
/* 1 when the collector recorded kernels: bit 0 of the header's "kinds" (the collector's
 * list); traces without the header (older ones) recorded them. 0: --light. */
int lp_trace_kernels_recorded(const struct lp_trace *t);
/* Never NULL: unknown ids (from a lost chunk) read as "<unknown>". */
const char *lp_trace_str(const struct lp_trace *t, lp_str id);
/* What API call A of T shares with the calls alike: its thread, domain, callback id, name and
 * status (never NULL; zeros for an index past the table) */
static inline const struct lp_api_kind *lp_trace_api_kind(const struct lp_trace *t,
                                                          const struct lp_api_rec *a)
{
    static const struct lp_api_kind none;
    return a->kind < t->n_api_kinds ? &t->api_kinds[a->kind] : &none;
}
/* What kernel K of T shares with the kernels launched alike: its name, device, stream,
 * graph, flags and launch configuration (never NULL; zeros for an index past the table) */
static inline const struct lp_kernel_config *lp_trace_kernel_config(const struct lp_trace *t,
                                                                    const struct lp_kernel_rec *k)
{
    static const struct lp_kernel_config none;
    return k->config < t->n_kernel_configs ? &t->kernel_configs[k->config] : &none;
}
/* The end of a kept row whose start is START and duration field DUR (LP_REC_LONG) */
static inline uint64_t lp_trace_row_end(const struct lp_trace *t, uint64_t start, uint32_t dur)
{
    if (!(dur & LP_REC_LONG))
        return start + dur;
    uint32_t i = dur & ~LP_REC_LONG;
    return i < t->n_long_ends ? t->long_ends[i] : start;
}
/* The end of kernel K of T, ns */
static inline uint64_t lp_trace_kernel_end(const struct lp_trace *t, const struct lp_kernel_rec *k)
{
    return lp_trace_row_end(t, k->start, k->dur);
}
/* The end of API call A of T, ns */
static inline uint64_t lp_trace_api_end(const struct lp_trace *t, const struct lp_api_rec *a)
{
    return lp_trace_row_end(t, a->start, a->dur);
}
/* What GEMM call G of T shares with the calls alike: all but its times (never NULL; zeros
 * for an index past the table) */
static inline const struct lp_gemm_kind *lp_trace_gemm_kind(const struct lp_trace *t,
                                                            const struct lp_gemm_rec *g)
{
    static const struct lp_gemm_kind none;
    return g->kind < t->n_gemm_kinds ? &t->gemm_kinds[g->kind] : &none;
}
/* GEMM call I of T (I < t->n_gemms) whole, as it was recorded: its row and its kind */
static inline struct lp_gemm lp_trace_gemm(const struct lp_trace *t, size_t i)
{
    const struct lp_gemm_rec *g = &t->gemms[i];
    const struct lp_gemm_kind *k = lp_trace_gemm_kind(t, g);
    return (struct lp_gemm){
        .start = g->start, .end = lp_trace_row_end(t, g->start, g->dur), .thread = k->thread,
        .api = k->api, .m = k->m, .n = k->n, .k = k->k, .batch = k->batch,
        .transa = k->transa, .transb = k->transb, .a_type = k->a_type, .b_type = k->b_type,
        .c_type = k->c_type, .d_type = k->d_type, .compute_type = k->compute_type,
        .algo = k->algo, .tile = k->tile, .splitk = k->splitk, .epilogue = k->epilogue,
        .status = k->status, .flags = k->flags};
}
/* Bytes of S (LEN) that are not UTF-8 replaced by '?', in place (names from outside must be
 * valid in JSON and Prometheus' text); returns how many. */
size_t lp_utf8_repair(char *s, size_t len);
/* Decodes PATH from an in-memory image; used by the fuzzer and tests. */
int lp_trace_read_mem(struct lp_trace **t, const void *data, size_t size, const char *name,
                      char *err, size_t errlen);

#endif
