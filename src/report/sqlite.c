/* The SQLite export (llmprof export --sqlite; docs/sqlite-schema.md): every record of each
 * trace of a run as rows, with the analysis's stage of each kernel and the stage spans, so
 * pandas, DuckDB or sqlite3 can query runs of any size, and many runs together. Writes only:
 * the numbers are the trace's and the analysis's. */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "llmprof/report.h"
#include "report_internal.h"

/* One table per concept; every one has trace_id, the traces row its records came from. */
static const char schema[] =
    "CREATE TABLE traces(trace_id INTEGER PRIMARY KEY, path TEXT NOT NULL, version TEXT,"
    " complete INTEGER NOT NULL, records INTEGER NOT NULL, first_ns INTEGER, last_ns INTEGER,"
    " rank INTEGER, host TEXT, clock_offset_ns INTEGER);"
    "CREATE TABLE meta(trace_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT);"
    "CREATE TABLE devices(trace_id INTEGER NOT NULL, device INTEGER NOT NULL, name TEXT,"
    " uuid TEXT, cc_major INTEGER, cc_minor INTEGER, sm_count INTEGER, mem_bytes INTEGER,"
    " max_sm_mhz INTEGER, max_mem_mhz INTEGER, power_limit_mw INTEGER);"
    "CREATE TABLE stages(trace_id INTEGER NOT NULL, stage_id INTEGER NOT NULL, name TEXT NOT NULL,"
    " kind TEXT NOT NULL);"
    "CREATE TABLE stage_spans(trace_id INTEGER NOT NULL, stage_id INTEGER NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);"
    "CREATE TABLE kernel_names(trace_id INTEGER NOT NULL, name_id INTEGER NOT NULL,"
    " name TEXT, short_name TEXT, category TEXT);"
    /* a kernel is an event (kernel_events: its times, name, stage and call) and the
     * configuration it shares with kernels launched alike (kernel_configs); the view
     * kernels joins them. Kept in start order, the events need no index of their own. */
    "CREATE TABLE kernel_configs(trace_id INTEGER NOT NULL, config_id INTEGER NOT NULL,"
    " device INTEGER, stream INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,"
    " block_x INTEGER, block_y INTEGER, block_z INTEGER, registers INTEGER,"
    " static_smem INTEGER, dynamic_smem INTEGER, graph_id INTEGER, graph_node_id INTEGER,"
    " flags INTEGER, PRIMARY KEY (trace_id, config_id)) WITHOUT ROWID;"
    "CREATE TABLE kernel_events(trace_id INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " kernel_id INTEGER NOT NULL, end_ns INTEGER NOT NULL, name_id INTEGER NOT NULL,"
    " stage_id INTEGER, correlation INTEGER, config_id INTEGER NOT NULL, api_id INTEGER,"
    " PRIMARY KEY (trace_id, start_ns, kernel_id)) WITHOUT ROWID;"
    "CREATE TABLE memcpys(trace_id INTEGER NOT NULL, device INTEGER, stream INTEGER,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, bytes INTEGER, copy_kind INTEGER,"
    " src_kind INTEGER, dst_kind INTEGER, correlation INTEGER, graph_id INTEGER, api_id INTEGER);"
    "CREATE TABLE memsets(trace_id INTEGER NOT NULL, device INTEGER, stream INTEGER,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, bytes INTEGER, value INTEGER,"
    " memory_kind INTEGER, correlation INTEGER, graph_id INTEGER, api_id INTEGER);"
    /* a call likewise: api_events and api_kinds (thread, function, status), the view
     * api_calls */
    "CREATE TABLE api_kinds(trace_id INTEGER NOT NULL, kind_id INTEGER NOT NULL,"
    " thread INTEGER, name TEXT, domain TEXT, cbid INTEGER, status INTEGER,"
    " PRIMARY KEY (trace_id, kind_id)) WITHOUT ROWID;"
    "CREATE TABLE api_events(api_id INTEGER PRIMARY KEY, trace_id INTEGER NOT NULL,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, kind_id INTEGER NOT NULL,"
    " correlation INTEGER);"
    /* a range is an event naming its name and domain by id: a trace can give thousands of
     * ranges one long name; the view ranges joins them */
    "CREATE TABLE range_names(trace_id INTEGER NOT NULL, name_id INTEGER NOT NULL, name TEXT,"
    " PRIMARY KEY (trace_id, name_id)) WITHOUT ROWID;"
    "CREATE TABLE range_events(trace_id INTEGER NOT NULL, thread INTEGER,"
    " start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, name_id INTEGER, domain_id INTEGER,"
    " depth INTEGER);"
    "CREATE TABLE gemms(trace_id INTEGER NOT NULL, thread INTEGER, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, api TEXT, m INTEGER, n INTEGER, k INTEGER, batch INTEGER,"
    " transa INTEGER, transb INTEGER, a_type INTEGER, b_type INTEGER, c_type INTEGER,"
    " d_type INTEGER, compute_type INTEGER, algo INTEGER, tile TEXT, splitk INTEGER,"
    " epilogue INTEGER, status INTEGER, flags INTEGER);"
    "CREATE TABLE nvml(trace_id INTEGER NOT NULL, device INTEGER, ts_ns INTEGER NOT NULL,"
    " power_w REAL, energy_j REAL, sm_mhz INTEGER, mem_mhz INTEGER, util_gpu INTEGER,"
    " util_mem INTEGER, temp_c INTEGER, clock_events INTEGER, mem_used_bytes INTEGER);"
    "CREATE TABLE windows(trace_id INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, cause INTEGER);"
    "CREATE TABLE losses(trace_id INTEGER NOT NULL, source INTEGER, count INTEGER, what TEXT);"
    "CREATE TABLE groups(group_id INTEGER PRIMARY KEY, members INTEGER NOT NULL, hosts INTEGER,"
    " collectives INTEGER, operations TEXT, comm_ns INTEGER, wait_ns INTEGER,"
    " end_spread_ns REAL, waited_for INTEGER, replica_of INTEGER);"
    "CREATE TABLE group_members(group_id INTEGER NOT NULL, trace_id INTEGER NOT NULL,"
    " wait_ns INTEGER);"
    /* a kernel and a call as one row each, with the columns they had as tables (before
     * 2026-11-28), then the kernel's place in its trace's record order */
    "CREATE VIEW kernels AS SELECT e.trace_id AS trace_id, c.device AS device,"
    " c.stream AS stream, e.start_ns AS start_ns, e.end_ns AS end_ns, e.name_id AS name_id,"
    " e.stage_id AS stage_id, e.correlation AS correlation, c.grid_x AS grid_x,"
    " c.grid_y AS grid_y, c.grid_z AS grid_z, c.block_x AS block_x, c.block_y AS block_y,"
    " c.block_z AS block_z, c.registers AS registers, c.static_smem AS static_smem,"
    " c.dynamic_smem AS dynamic_smem, c.graph_id AS graph_id,"
    " c.graph_node_id AS graph_node_id, c.flags AS flags, e.api_id AS api_id,"
    " e.kernel_id AS kernel_id"
    " FROM kernel_events e JOIN kernel_configs c"
    " ON c.trace_id = e.trace_id AND c.config_id = e.config_id;"
    "CREATE VIEW api_calls AS SELECT e.api_id AS api_id, e.trace_id AS trace_id,"
    " k.thread AS thread, e.start_ns AS start_ns, e.end_ns AS end_ns, k.name AS name,"
    " k.domain AS domain, k.cbid AS cbid, e.correlation AS correlation, k.status AS status"
    " FROM api_events e JOIN api_kinds k ON k.trace_id = e.trace_id AND k.kind_id = e.kind_id;"
    "CREATE VIEW ranges AS SELECT e.trace_id AS trace_id, e.thread AS thread,"
    " e.start_ns AS start_ns, e.end_ns AS end_ns, n.name AS name, d.name AS domain,"
    " e.depth AS depth FROM range_events e"
    " LEFT JOIN range_names n ON n.trace_id = e.trace_id AND n.name_id = e.name_id"
    " LEFT JOIN range_names d ON d.trace_id = e.trace_id AND d.name_id = e.domain_id;";

/* Made with the tables, before the rows: the rows come in the indexes' order (time within
 * a trace), so each insert lands at the right edge of its index, which cost 15 % fewer
 * instructions than sorting each index after the load (callgrind, 100 k kernels). Work rows
 * name their launching call by api_id, the call's rowid: joined without an index of
 * correlation ids (two such indexes were a fifth of an export's time). The kernels' stage
 * is not indexed: a stage is a large share of the rows, which a scan reads as fast, and that
 * index was a seventh of an export. */
static const char indexes[] =
    "CREATE UNIQUE INDEX kernel_names_id ON kernel_names(trace_id, name_id);"
    "CREATE INDEX api_events_time ON api_events(trace_id, start_ns);"
    "CREATE INDEX range_events_time ON range_events(trace_id, start_ns);"
    "CREATE INDEX gemms_time ON gemms(trace_id, start_ns);"
    "CREATE INDEX memcpys_time ON memcpys(trace_id, start_ns);"
    "CREATE INDEX nvml_time ON nvml(trace_id, ts_ns);";

/* The errno of a failed write to DB's file that SQLite did not keep, 0 unknown: the
 * process's file size limit reached (ulimit -f: EFBIG), or no space left on its file system
 * (ENOSPC; SQLite's SQLITE_FULL says as much). */
static int write_errno(sqlite3 *db, int full)
{
    struct rlimit lim;
    struct stat st;
    struct statvfs fs;
    const char *path = sqlite3_db_filename(db, "main");
    if (!path || !*path)
        return full ? ENOSPC : 0;
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        stat(path, &st) == 0 && (rlim_t)st.st_size + 65536 >= lim.rlim_cur)
        return EFBIG;
    if (full || (statvfs(path, &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < 65536))
        return ENOSPC;
    return 0;
}

/* Why the last call on DB failed, in BUF: for a failed read or write, the system's cause
 * first, which SQLite's own words ("disk I/O error", "database or disk is full") leave out.
 * SQLite keeps no errno for a short write (SQLITE_FULL) nor, on some paths, for a failed
 * one: those are told apart here. */
static const char *cause(sqlite3 *db, char *buf, size_t len)
{
    int code = sqlite3_extended_errcode(db), sys = sqlite3_system_errno(db);
    int io = (code & 0xff) == SQLITE_IOERR || (code & 0xff) == SQLITE_FULL ||
             (code & 0xff) == SQLITE_CANTOPEN;
    if (io && !sys && ((code & 0xff) == SQLITE_FULL || code == SQLITE_IOERR_WRITE))
        sys = write_errno(db, (code & 0xff) == SQLITE_FULL);
    if (io && sys)
        snprintf(buf, len, "%s (SQLite: %s)", strerror(sys), sqlite3_errmsg(db));
    else
        snprintf(buf, len, "%s", sqlite3_errmsg(db));
    return buf;
}

static int fail(sqlite3 *db, char *err, size_t errlen, const char *what)
{
    char why[256];
    snprintf(err, errlen, "%s: %s", what, cause(db, why, sizeof why));
    return -1;
}

int lp_sqlite_open(sqlite3 **out, const char *path, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    *out = NULL;
    /* one thread writes it: no mutexes */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                       SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        char why[256];
        snprintf(err, errlen, "%s: %s", path, db ? cause(db, why, sizeof why) : "out of memory");
        sqlite3_close(db);
        return -1;
    }
    /* a new file, moved in when complete (the CLI's part): no journal needed; large pages,
     * one lock for the whole write, a cache of 64 MiB (bounded: pages past it are written
     * out) */
    if (sqlite3_exec(db, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF;"
                         " PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE;"
                         " PRAGMA cache_size=-65536;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, indexes, NULL, NULL, NULL) != SQLITE_OK) {
        fail(db, err, errlen, "creating the tables");
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

int lp_sqlite_close(sqlite3 *db, char *err, size_t errlen)
{
    if (sqlite3_close(db) != SQLITE_OK) {
        snprintf(err, errlen, "closing the database failed");
        return -1;
    }
    return 0;
}

/* One prepared INSERT into TABLE of N columns, bound by position. A table whose row count
 * is known inserts up to 64 rows per statement (a step per batch instead of per row: a
 * quarter less CPU on a million kernels), the last batch by a statement of its own size.
 * After the first failure nothing more is written (with the journal off, writes after a
 * failed one only damage the file further: "database disk image is malformed"), and WHY
 * keeps that failure's cause, which later calls would overwrite ("not an error"). */
enum { INS_BATCH = 64 };

/* What a parameter was last bound to: SQLite keeps bindings across steps, so a value equal
 * to the one already bound in its place (the same kernel shape, stream or trace id in the
 * same row of the next batch) is not bound again (binding was a fifth of an export) */
enum bound_kind { BOUND_NONE, BOUND_INT, BOUND_NULL, BOUND_TEXT };
struct bound {
    uint8_t kind;
    union {
        int64_t i;
        const char *s;
    } v;
};

struct ins {
    sqlite3 *db;
    sqlite3_stmt *st;
    const char *table;
    int n, col, failed;
    size_t rows, done, per, in_batch;  /* rows 0: unknown, one per statement */
    struct bound *bound;               /* per parameter of ST, from 1 */
    char why[256];
};

static void check(struct ins *q, int rc, int ok)
{
    if (rc != ok && !q->failed) {
        q->failed = 1;
        cause(q->db, q->why, sizeof q->why);
    }
}

/* a statement inserting PER rows into Q's table */
static int ins_prepare(struct ins *q, size_t per)
{
    size_t cap = 64 + strlen(q->table) + per * (2 * (size_t)q->n + 3);
    char *sql = malloc(cap);
    if (!sql)
        return -1;
    size_t len = (size_t)snprintf(sql, cap, "INSERT INTO %s VALUES", q->table);
    for (size_t r = 0; r < per; r++) {
        len += (size_t)snprintf(sql + len, cap - len, "%s(?", r ? "," : "");
        for (int i = 1; i < q->n; i++)
            len += (size_t)snprintf(sql + len, cap - len, ",?");
        len += (size_t)snprintf(sql + len, cap - len, ")");
    }
    sqlite3_finalize(q->st);
    q->st = NULL;
    q->per = per;
    free(q->bound); /* a new statement has nothing bound */
    q->bound = calloc(per * (size_t)q->n + 1, sizeof *q->bound);
    int rc = q->bound ? sqlite3_prepare_v2(q->db, sql, -1, &q->st, NULL) : SQLITE_NOMEM;
    free(sql);
    if (rc != SQLITE_OK) {
        free(q->bound);
        q->bound = NULL;
        return -1;
    }
    return 0;
}

static int ins_open(struct ins *q, sqlite3 *db, const char *table, int n, size_t rows)
{
    *q = (struct ins){.db = db, .table = table, .n = n, .rows = rows};
    /* a build of SQLite before 3.32 binds at most 999 parameters to a statement */
    int vars = sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, -1);
    size_t per = vars > n ? (size_t)(vars / n) : 1;
    per = per < INS_BATCH ? per : INS_BATCH;
    return ins_prepare(q, rows ? (rows < per ? rows : per) : 1);
}

/* Q's next parameter's cache; NULL past the statement's parameters (SQLite refuses that
 * bind: SQLITE_RANGE) */
static struct bound *next_slot(struct ins *q)
{
    return ++q->col <= (int)(q->per * (size_t)q->n) ? &q->bound[q->col] : NULL;
}

/* 1 when Q's next parameter already holds (KIND, V); else it is taken to hold it once the
 * caller binds it */
static int bound(struct ins *q, uint8_t kind, int64_t i, const char *s)
{
    struct bound *b = next_slot(q);
    if (!b)
        return 0;
    if (b->kind == kind && (kind == BOUND_NULL || (kind == BOUND_INT ? b->v.i == i : b->v.s == s)))
        return 1;
    b->kind = kind;
    if (kind == BOUND_INT)
        b->v.i = i;
    else
        b->v.s = s;
    return 0;
}

static void i64(struct ins *q, int64_t v)
{
    if (!q->failed && !bound(q, BOUND_INT, v, NULL))
        check(q, sqlite3_bind_int64(q->st, q->col, v), SQLITE_OK);
}
/* SQLite's integers are int64: a value past INT64_MAX (only an absurd trace holds one) is
 * stored as INT64_MAX, never as the negative number a cast would make */
static void u64v(struct ins *q, uint64_t v) { i64(q, v > INT64_MAX ? INT64_MAX : (int64_t)v); }
static void dbl(struct ins *q, double v)
{
    if (!q->failed) {
        struct bound *b = next_slot(q);
        if (b)
            b->kind = BOUND_NONE;
        check(q, sqlite3_bind_double(q->st, q->col, v), SQLITE_OK);
    }
}
static void null(struct ins *q)
{
    if (!q->failed && !bound(q, BOUND_NULL, 0, NULL))
        check(q, sqlite3_bind_null(q->st, q->col), SQLITE_OK);
}
/* S's first N bytes (-1: all of it), bound in place (SQLITE_STATIC): S must stay as it is
 * until the row is stepped */
static void text_n(struct ins *q, const char *s, int n)
{
    if (!s) {
        null(q);
        return;
    }
    if (!q->failed) {
        struct bound *b = next_slot(q);
        if (b)
            b->kind = BOUND_NONE;
        check(q, sqlite3_bind_text(q->st, q->col, s, n, SQLITE_STATIC), SQLITE_OK);
    }
}
static void text(struct ins *q, const char *s) { text_n(q, s, -1); }
/* S's first lp_fmt_cut_len bytes: a name every row repeats */
static void text_cut(struct ins *q, const char *s)
{
    text_n(q, s, s ? (int)lp_fmt_cut_len(s) : -1);
}
/* text whose S stays as it is until the export ends (the trace's strings, constants): bound
 * again only when S is another string */
static void text_kept(struct ins *q, const char *s)
{
    if (!s)
        null(q);
    else if (!q->failed && !bound(q, BOUND_TEXT, 0, s))
        check(q, sqlite3_bind_text(q->st, q->col, s, -1, SQLITE_STATIC), SQLITE_OK);
}

static void row(struct ins *q)
{
    if (q->failed)
        return;
    q->done++;
    if (++q->in_batch < q->per)
        return;
    check(q, sqlite3_step(q->st), SQLITE_DONE);
    sqlite3_reset(q->st);
    q->col = 0;
    q->in_batch = 0;
    size_t left = q->rows - q->done;
    if (q->rows && left && left < q->per && ins_prepare(q, left) != 0 && !q->failed) {
        q->failed = 1;
        cause(q->db, q->why, sizeof q->why);
    }
}

static int ins_close(struct ins *q)
{
    sqlite3_finalize(q->st);
    free(q->bound);
    if (!q->failed && q->rows && q->done != q->rows) { /* a batch bound but never stepped */
        q->failed = 1;
        snprintf(q->why, sizeof q->why, "%zu rows of %zu written", q->done, q->rows);
    }
    return q->failed ? -1 : 0;
}

/* TABLE's rows, N columns, each from BODY (which binds every column, then row(&q)); ROWS
 * is how many BODY writes, 0 when not known beforehand */
#define TABLE_OF(table, n, rows, body)                                                         \
    do {                                                                                       \
        struct ins q;                                                                          \
        if (ins_open(&q, db, table, n, rows) != 0)                                             \
            return fail(db, err, errlen, "preparing " table);                                  \
        body;                                                                                  \
        if (ins_close(&q) != 0) {                                                              \
            snprintf(err, errlen, "writing %s: %s", table, q.why);                             \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)
#define TABLE(table, n, body) TABLE_OF(table, n, 0, body)
static const char *api_domain(uint32_t d)
{
    return d == LP_API_DOMAIN_RUNTIME ? "runtime" : d == LP_API_DOMAIN_DRIVER ? "driver" : NULL;
}

/* the trace, its metadata and GPUs, the stages and their spans, the kernel groups */
static int run_rows(sqlite3 *db, int64_t id, const char *path, const struct lp_run *r,
                      char *err, size_t errlen)
{
    const struct lp_trace *t = r->trace;
    char version[32];
    snprintf(version, sizeof version, "%u.%u", t->version_major, t->version_minor);
    const char *rank = lp_trace_meta(t, "rank");
    char *end = NULL;
    long long rank_n = rank ? strtoll(rank, &end, 10) : -1;
    TABLE("traces", 10, {
        i64(&q, id); text(&q, path); text(&q, version); i64(&q, t->complete);
        u64v(&q, t->n_records);
        u64v(&q, r->timeline.first_ns);
        u64v(&q, r->timeline.last_ns);
        if (rank && *rank && !*end && rank_n >= 0)
            i64(&q, rank_n);
        else
            null(&q);
        text(&q, lp_trace_meta(t, "host"));
        i64(&q, 0); /* one trace, or one host: its own clock (lp_sqlite_set_clock) */
        row(&q);
    });
    TABLE("meta", 3, {
        for (size_t i = 0; i < t->n_meta; i++) {
            i64(&q, id); text(&q, t->meta[i].key); text(&q, t->meta[i].value); row(&q);
        }
    });
    TABLE("devices", 11, {
        for (size_t i = 0; i < t->n_devices; i++) {
            const struct lp_device *d = &t->devices[i];
            char uuid[33];
            for (int b = 0; b < 16; b++)
                snprintf(uuid + 2 * b, 3, "%02x", d->uuid[b]);
            i64(&q, id); u64v(&q, d->id); text(&q, lp_trace_str(t, d->name)); text(&q, uuid);
            u64v(&q, d->cc_major); u64v(&q, d->cc_minor); u64v(&q, d->sm_count);
            u64v(&q, d->mem_bytes); u64v(&q, d->max_sm_mhz); u64v(&q, d->max_mem_mhz);
            u64v(&q, d->power_limit_mw); row(&q);
        }
    });
    TABLE("stages", 4, {
        for (size_t i = 0; i < r->n_stages; i++) {
            i64(&q, id); u64v(&q, i); text(&q, r->stages[i].name);
            text(&q, lp_stage_kind_name(r->stages[i].kind)); row(&q);
        }
    });
    TABLE("stage_spans", 4, {
        for (size_t i = 0; i < r->n_spans; i++) {
            i64(&q, id); i64(&q, r->spans[i].stage); u64v(&q, r->spans[i].start);
            u64v(&q, r->spans[i].end); row(&q);
        }
    });
    TABLE("kernel_names", 5, {
        for (size_t i = 0; i < r->n_names; i++) {
            i64(&q, id); u64v(&q, i); text(&q, r->names[i]); text(&q, r->short_names[i]);
            text(&q, lp_kcat_name(r->cats[i])); row(&q);
        }
    });
    return 0;
}

/* The api_id of the call of CORRELATION: the trace's calls are rows BASE + 1 on, in its order */
static void call_of(struct ins *q, const struct lp_calls *calls, int64_t base, uint32_t correlation)
{
    int64_t i = lp_calls_find(calls, correlation);
    if (i >= 0)
        i64(q, base + 1 + i);
    else
        null(q);
}

/* the GPU's work: kernels, copies and sets, each with its call (BASE: the api_id before the
 * trace's first) */
static int gpu_rows(sqlite3 *db, int64_t id, const struct lp_run *r, const struct lp_calls *calls,
                    int64_t base, char *err, size_t errlen)
{
    const struct lp_trace *t = r->trace;
    TABLE_OF("kernel_configs", 16, t->n_kernel_configs, {
        for (size_t i = 0; i < t->n_kernel_configs; i++) {
            const struct lp_kernel_config *c = &t->kernel_configs[i];
            i64(&q, id); u64v(&q, i); u64v(&q, c->device); u64v(&q, c->stream);
            for (int d = 0; d < 3; d++)
                i64(&q, c->grid[d]);
            for (int d = 0; d < 3; d++)
                i64(&q, c->block[d]);
            u64v(&q, c->registers); u64v(&q, c->static_smem); u64v(&q, c->dynamic_smem);
            u64v(&q, c->graph_id); u64v(&q, c->graph_node_id); u64v(&q, c->flags); row(&q);
        }
    });
    TABLE_OF("kernel_events", 9, t->n_kernels, {
        for (size_t i = 0; i < t->n_kernels; i++) {
            const struct lp_kernel_rec *k = &t->kernels[i];
            i64(&q, id); u64v(&q, k->start); u64v(&q, i); u64v(&q, lp_trace_kernel_end(t, k));
            u64v(&q, lp_run_kernel_group(r, i));
            if (lp_run_kernel_stage(r, i) >= 0)
                i64(&q, lp_run_kernel_stage(r, i));
            else
                null(&q);
            u64v(&q, k->correlation); u64v(&q, k->config);
            call_of(&q, calls, base, k->correlation); row(&q);
        }
    });
    TABLE_OF("memcpys", 12, t->n_memcpys, {
        for (size_t i = 0; i < t->n_memcpys; i++) {
            const struct lp_memcpy *m = &t->memcpys[i];
            i64(&q, id); u64v(&q, m->device); u64v(&q, m->stream); u64v(&q, m->start);
            u64v(&q, m->end); u64v(&q, m->bytes); u64v(&q, m->copy_kind); u64v(&q, m->src_kind);
            u64v(&q, m->dst_kind); u64v(&q, m->correlation); u64v(&q, m->graph_id);
            call_of(&q, calls, base, m->correlation); row(&q);
        }
    });
    TABLE_OF("memsets", 11, t->n_memsets, {
        for (size_t i = 0; i < t->n_memsets; i++) {
            const struct lp_memset *m = &t->memsets[i];
            i64(&q, id); u64v(&q, m->device); u64v(&q, m->stream); u64v(&q, m->start);
            u64v(&q, m->end); u64v(&q, m->bytes); u64v(&q, m->value); u64v(&q, m->memory_kind);
            u64v(&q, m->correlation); u64v(&q, m->graph_id);
            call_of(&q, calls, base, m->correlation); row(&q);
        }
    });
    return 0;
}


/* The strings USED marks (by id; the last for ids no string was defined for) as range_names */
static int range_names(sqlite3 *db, int64_t id, const struct lp_trace *t, const uint8_t *used,
                       char *err, size_t errlen)
{
    TABLE("range_names", 3, {
        for (size_t s = 0; s <= t->n_strings; s++)
            if (used[s]) {
                i64(&q, id); u64v(&q, s); text(&q, lp_trace_str(t, (lp_str)s)); row(&q);
            }
    });
    return 0;
}
/* the host's: CUDA calls, NVTX ranges, GEMM calls */
static int host_rows(sqlite3 *db, int64_t id, const struct lp_run *r, char *err,
                     size_t errlen)
{
    const struct lp_trace *t = r->trace;
    TABLE_OF("api_kinds", 7, t->n_api_kinds, {
        for (size_t i = 0; i < t->n_api_kinds; i++) {
            const struct lp_api_kind *k = &t->api_kinds[i];
            i64(&q, id); u64v(&q, i); u64v(&q, k->thread); text_kept(&q, lp_trace_str(t, k->name));
            text_kept(&q, api_domain(k->domain)); u64v(&q, k->cbid); u64v(&q, k->status);
            row(&q);
        }
    });
    /* api_id NULL: SQLite's next rowid (the largest plus one), the fast way to append; the
     * work rows were given those numbers, checked once written */
    TABLE_OF("api_events", 6, t->n_apis, {
        for (size_t i = 0; i < t->n_apis; i++) {
            const struct lp_api_rec *a = &t->apis[i];
            null(&q); i64(&q, id); u64v(&q, a->start); u64v(&q, lp_trace_api_end(t, a));
            u64v(&q, a->kind);
            u64v(&q, a->correlation); row(&q);
        }
    });
    /* the names and domains ranges use, once each (by the trace's string id) */
    uint8_t *used = calloc(t->n_strings + 1, 1);
    if (!used) {
        snprintf(err, errlen, "writing range_names: out of memory");
        return -1;
    }
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < (k ? r->ranges.n_req : r->ranges.n); i++) {
            const struct lp_range *g = k ? &r->ranges.req[i] : &r->ranges.v[i];
            used[g->name < t->n_strings ? g->name : t->n_strings] = 1;
            if (g->domain)
                used[g->domain < t->n_strings ? g->domain : t->n_strings] = 1;
        }
    int rc = range_names(db, id, t, used, err, errlen);
    free(used);
    if (rc)
        return rc;
    TABLE("range_events", 7, {
        /* the request convention's ranges (the second part) overlap: no depth */
        for (size_t k = 0; k < 2; k++)
            for (size_t i = 0; i < (k ? r->ranges.n_req : r->ranges.n); i++) {
                const struct lp_range *g = k ? &r->ranges.req[i] : &r->ranges.v[i];
                i64(&q, id); u64v(&q, g->thread); u64v(&q, g->start); u64v(&q, g->end);
                u64v(&q, g->name < t->n_strings ? g->name : t->n_strings);
                if (g->domain)
                    u64v(&q, g->domain < t->n_strings ? g->domain : t->n_strings);
                else
                    null(&q);
                if (k)
                    null(&q);
                else
                    u64v(&q, g->depth);
                row(&q);
            }
    });
    TABLE("gemms", 22, {
        for (size_t i = 0; i < t->n_gemms; i++) {
            const struct lp_gemm call = lp_trace_gemm(t, i);
            const struct lp_gemm *g = &call;
            i64(&q, id); u64v(&q, g->thread); u64v(&q, g->start); u64v(&q, g->end);
            text_cut(&q, lp_trace_str(t, g->api)); u64v(&q, g->m); u64v(&q, g->n); u64v(&q, g->k);
            u64v(&q, g->batch); u64v(&q, g->transa); u64v(&q, g->transb); u64v(&q, g->a_type);
            u64v(&q, g->b_type); u64v(&q, g->c_type); u64v(&q, g->d_type);
            u64v(&q, g->compute_type);
            if (g->algo >= 0)
                i64(&q, g->algo);
            else
                null(&q);
            text_cut(&q, g->tile ? lp_trace_str(t, g->tile) : NULL);
            if (g->splitk)
                u64v(&q, g->splitk);
            else
                null(&q);
            u64v(&q, g->epilogue); u64v(&q, g->status); u64v(&q, g->flags); row(&q);
        }
    });
    return 0;
}

/* NVML samples, capture windows, losses */
static int sample_rows(sqlite3 *db, int64_t id, const struct lp_run *r, char *err,
                       size_t errlen)
{
    const struct lp_trace *t = r->trace;
    TABLE("nvml", 12, {
        for (size_t i = 0; i < t->n_nvml; i++) {
            const struct lp_nvml_sample *s = &t->nvml[i];
            uint32_t v = s->valid;
            i64(&q, id); u64v(&q, s->device); u64v(&q, s->timestamp);
            if (v & LP_NVML_FIELD_POWER) dbl(&q, s->power_mw / 1000.0); else null(&q);
            if (v & LP_NVML_FIELD_ENERGY) dbl(&q, (double)s->energy_mj / 1000.0); else null(&q);
            if (v & LP_NVML_FIELD_SM_CLOCK) u64v(&q, s->sm_mhz); else null(&q);
            if (v & LP_NVML_FIELD_MEM_CLOCK) u64v(&q, s->mem_mhz); else null(&q);
            if (v & LP_NVML_FIELD_UTIL) { u64v(&q, s->util_gpu); u64v(&q, s->util_mem); }
            else { null(&q); null(&q); }
            if (v & LP_NVML_FIELD_TEMP) u64v(&q, s->temp_c); else null(&q);
            if (v & LP_NVML_FIELD_CLOCK_EVENTS) u64v(&q, s->clock_events); else null(&q);
            if (v & LP_NVML_FIELD_MEM_USED) u64v(&q, s->mem_used); else null(&q);
            row(&q);
        }
    });
    TABLE("windows", 4, {
        for (size_t i = 0; i < r->capture.n_windows; i++) { /* each once, closed */
            const struct lp_window *w = &r->capture.windows[i];
            i64(&q, id); u64v(&q, w->start); u64v(&q, w->end); u64v(&q, w->cause); row(&q);
        }
    });
    TABLE("losses", 4, {
        for (size_t i = 0; i < t->n_losses; i++) {
            const struct lp_loss *l = &t->losses[i];
            i64(&q, id); u64v(&q, l->source); u64v(&q, l->count);
            text(&q, lp_trace_str(t, l->what)); row(&q);
        }
    });
    return 0;
}

/* The largest api_id so far, -1 when it cannot be read */
static int64_t last_call(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(max(api_id), 0) FROM api_events", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int write_rows(sqlite3 *db, int64_t id, const char *path, const struct lp_run *r,
                      char *err, size_t errlen)
{
    int64_t base = last_call(db);
    if (base < 0)
        return fail(db, err, errlen, "reading api_events");
    struct lp_calls *calls = lp_calls_index(r->trace);
    if (!calls) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = run_rows(db, id, path, r, err, errlen) ||
             gpu_rows(db, id, r, calls, base, err, errlen) ||
             host_rows(db, id, r, err, errlen) || sample_rows(db, id, r, err, errlen);
    lp_calls_free(calls);
    if (rc)
        return -1;
    int64_t last = last_call(db);
    if (last != base + (int64_t)r->trace->n_apis) { /* SQLite numbered them otherwise */
        snprintf(err, errlen, "api_events numbered %lld to %lld, not %lld on",
                 (long long)base + 1, (long long)last, (long long)base + 1);
        return -1;
    }
    return 0;
}

int lp_sqlite_add_trace(sqlite3 *db, int64_t trace_id, const char *path, const struct lp_run *r,
                        char *err, size_t errlen)
{
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return fail(db, err, errlen, "starting a transaction");
    if (write_rows(db, trace_id, path, r, err, errlen) != 0) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return fail(db, err, errlen, "committing");
    return 0;
}

int lp_sqlite_set_clock(struct sqlite3 *db, int64_t trace_id, const int64_t *offset_ns,
                        char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int ok = sqlite3_prepare_v2(db, "UPDATE traces SET clock_offset_ns = ?1 WHERE trace_id = ?2",
                                -1, &st, NULL) == SQLITE_OK &&
             (offset_ns ? sqlite3_bind_int64(st, 1, *offset_ns) : sqlite3_bind_null(st, 1)) ==
                 SQLITE_OK &&
             sqlite3_bind_int64(st, 2, trace_id) == SQLITE_OK && sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok ? 0 : fail(db, err, errlen, "setting a trace's clock offset");
}

/* V, or NULL when not KNOWN */
static int bind_opt(sqlite3_stmt *st, int col, int known, int64_t v)
{
    return known ? sqlite3_bind_int64(st, col, v) : sqlite3_bind_null(st, col);
}

static int64_t clamp_i64(uint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

int lp_sqlite_add_groups(struct sqlite3 *db, const struct lp_ranks *rk, const int64_t *trace_of,
                         char *err, size_t errlen)
{
    sqlite3_stmt *g = NULL, *m = NULL;
    int ok = sqlite3_prepare_v2(db, "INSERT INTO groups VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
                                    " ?9, ?10)", -1, &g, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, "INSERT INTO group_members VALUES(?1, ?2, ?3)", -1, &m,
                                NULL) == SQLITE_OK;
    int waits = rk->waits == LP_RANKS_WAIT_DONE;
    for (size_t i = 0; ok && i < rk->n_groups; i++) {
        const struct lp_ranks_group *gr = &rk->groups[i];
        char ops[128] = "";
        for (int o = 0; o < LP_COLL_OP_COUNT; o++)
            if (gr->ops & (1u << o))
                snprintf(ops + strlen(ops), sizeof ops - strlen(ops), "%s%s", ops[0] ? "," : "",
                         lp_text_coll_op_key(o));
        int waited = waits && gr->straggler < rk->n && trace_of[gr->straggler] > 0;
        ok = sqlite3_reset(g) == SQLITE_OK && sqlite3_bind_int64(g, 1, (int64_t)i) == SQLITE_OK &&
             sqlite3_bind_int64(g, 2, (int64_t)gr->n_members) == SQLITE_OK &&
             sqlite3_bind_int64(g, 3, (int64_t)gr->n_hosts) == SQLITE_OK &&
             sqlite3_bind_int64(g, 4, (int64_t)gr->collectives) == SQLITE_OK &&
             sqlite3_bind_text(g, 5, ops, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
             sqlite3_bind_int64(g, 6, clamp_i64(gr->comm_ns)) == SQLITE_OK &&
             bind_opt(g, 7, waits, clamp_i64(gr->wait_ns)) == SQLITE_OK &&
             sqlite3_bind_double(g, 8, gr->end_spread_ns) == SQLITE_OK &&
             bind_opt(g, 9, waited, waited ? trace_of[gr->straggler] : 0) == SQLITE_OK &&
             bind_opt(g, 10, gr->replica_of != SIZE_MAX, (int64_t)gr->replica_of) == SQLITE_OK &&
             sqlite3_step(g) == SQLITE_DONE;
        for (size_t q = 0; ok && q < gr->n_members; q++)
            ok = trace_of[gr->members[q]] <= 0 || /* a member without a row: none here */
                 (sqlite3_reset(m) == SQLITE_OK &&
                  sqlite3_bind_int64(m, 1, (int64_t)i) == SQLITE_OK &&
                  sqlite3_bind_int64(m, 2, trace_of[gr->members[q]]) == SQLITE_OK &&
                  bind_opt(m, 3, waits, clamp_i64(gr->member_wait_ns[q])) == SQLITE_OK &&
                  sqlite3_step(m) == SQLITE_DONE);
    }
    sqlite3_finalize(g);
    sqlite3_finalize(m);
    return ok ? 0 : fail(db, err, errlen, "writing the ranks' groups");
}
