/* Nsight Compute's raw page (`ncu -i REPORT --csv --page raw`) into kernels with the metrics
 * a deep dive reads, in base units. The CSV itself is parsed by libcsv; this file maps its
 * columns, converts units and bounds the work: no input makes it allocate without bound. */
#include <ctype.h>
#include <csv.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llmprof/ncu.h"
#include "llmprof/status.h"

#define MAX_KERNELS 100000
#define MAX_COLUMNS 20000
#define MAX_STALLS 64            /* ncu 2025.3 reports 19 */
#define NVTX_COLUMN "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"

_Static_assert(LP_NCU_METRIC_COUNT <= 32, "lp_ncu_kernel.valid has 32 bits");
#define STALL_PREFIX "smsp__average_warps_issue_stalled_"
#define STALL_SUFFIX "_per_issue_active.ratio"

static const struct {
    const char *column;
    enum lp_ncu_unit unit;
    int required;
} metrics[] = {
#define LP_NCU_METRIC_INFO(id, column, unit, required) {column, unit, required},
    LP_NCU_METRIC_LIST(LP_NCU_METRIC_INFO)
#undef LP_NCU_METRIC_INFO
};

const char *lp_ncu_metric_column(enum lp_ncu_metric m)
{
    return (unsigned)m < LP_NCU_METRIC_COUNT ? metrics[m].column : NULL;
}

/* What a column is for: an identification field, a metric, a stall reason, or nothing. */
enum role {
    ROLE_SKIP, ROLE_ID, ROLE_NAME, ROLE_DEVICE, ROLE_NVTX, ROLE_GRID, ROLE_BLOCK, ROLE_METRIC,
    ROLE_STALL
};
struct column {
    enum role role;
    int index;                 /* the metric or the stall reason */
    double scale;              /* to the base unit (from the units row) */
};

struct parse {
    const char *name;
    char *err;
    size_t errlen;
    int failed;                /* the status: LP_ERR_FORMAT or LP_ERR_NOMEM */
    size_t row, field;         /* row 0 names, row 1 units, then kernels */
    char **cells;              /* this row's fields */
    size_t n_cells, cap_cells;
    struct column *cols;
    size_t n_cols;
    struct lp_ncu_report *r;
    size_t cap_kernels;
};

static void fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct parse *p, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = strcmp(fmt, "out of memory") ? LP_ERR_FORMAT : LP_ERR_NOMEM;
    if (!p->err || !p->errlen)
        return;
    int n = snprintf(p->err, p->errlen, "%s: ", p->name);
    if (n < 0 || (size_t)n >= p->errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
}

static void on_field(void *s, size_t len, void *data)
{
    struct parse *p = data;
    if (p->failed)
        return;
    if (memchr(s, 0, len)) {
        fail(p, "row %zu, field %zu holds a NUL byte: not a CSV file", p->row + 1,
             p->n_cells + 1);
        return;
    }
    if (p->n_cells >= MAX_COLUMNS) {
        fail(p, "row %zu has more than %d columns: not an Nsight Compute raw page", p->row + 1,
             MAX_COLUMNS);
        return;
    }
    if (p->n_cells == p->cap_cells) {
        size_t cap = p->cap_cells ? 2 * p->cap_cells : 64;
        char **c = realloc(p->cells, cap * sizeof *c);
        if (!c) {
            fail(p, "out of memory");
            return;
        }
        p->cells = c;
        p->cap_cells = cap;
    }
    char *v = malloc(len + 1);
    if (!v) {
        fail(p, "out of memory");
        return;
    }
    if (len)
        memcpy(v, s, len);
    v[len] = 0;
    p->cells[p->n_cells++] = v;
}

/* "us" -> 1e3 for a time; 0 when the unit is not one this kind of metric may have. */
static double unit_scale(enum lp_ncu_unit kind, const char *u)
{
    static const struct {
        const char *prefix;
        double scale;
    } si[] = {{"", 1}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
    static const struct {
        const char *unit;
        double ns;
    } times[] = {{"ns", 1},     {"nsecond", 1},     {"us", 1e3}, {"usecond", 1e3},
                 {"ms", 1e6},   {"msecond", 1e6},   {"s", 1e9},  {"second", 1e9}};
    static const struct {
        const char *unit;
        double hz;
    } cycles[] = {{"cycle/second", 1}, {"cycle/usecond", 1e6}, {"cycle/nsecond", 1e9}};
    char want[32];
    switch (kind) {
    case LP_NCU_UNIT_TIME:
        for (size_t i = 0; i < sizeof times / sizeof *times; i++)
            if (!strcmp(u, times[i].unit))
                return times[i].ns;
        return 0;
    case LP_NCU_UNIT_PCT: return !strcmp(u, "%") ? 1 : 0;
    case LP_NCU_UNIT_RATE:
    case LP_NCU_UNIT_FREQ:
        for (size_t i = 0; kind == LP_NCU_UNIT_FREQ && i < sizeof cycles / sizeof *cycles; i++)
            if (!strcmp(u, cycles[i].unit))
                return cycles[i].hz;
        for (size_t i = 0; i < sizeof si / sizeof *si; i++) {
            snprintf(want, sizeof want, "%s%s", si[i].prefix,
                     kind == LP_NCU_UNIT_RATE ? "byte/s" : "hz");
            if (!strcasecmp(u, want))
                return si[i].scale;
            snprintf(want, sizeof want, "%sbyte/second", si[i].prefix);
            if (kind == LP_NCU_UNIT_RATE && !strcasecmp(u, want))
                return si[i].scale;
        }
        return 0;
    case LP_NCU_UNIT_ANY: return 1;
    case LP_NCU_UNIT_COUNT:
        /* "Minst", "Kop": a prefix when a lowercase word follows it */
        for (size_t i = 1; i < sizeof si / sizeof *si; i++)
            if (u[0] == si[i].prefix[0] && islower((unsigned char)u[1]))
                return si[i].scale;
        return 1;
    }
    return 0;
}

/* Row 0: which column is what. */
static void map_names(struct parse *p)
{
    p->cols = calloc(p->n_cells ? p->n_cells : 1, sizeof *p->cols);
    if (!p->cols) {
        fail(p, "out of memory");
        return;
    }
    p->n_cols = p->n_cells;
    int have[LP_NCU_METRIC_COUNT] = {0}, have_id = 0, have_name = 0;
    size_t stalls = 0;
    for (size_t i = 0; i < p->n_cells; i++) {
        const char *h = p->cells[i];
        struct column *c = &p->cols[i];
        size_t hl = strlen(h), pl = strlen(STALL_PREFIX), sl = strlen(STALL_SUFFIX);
        if (!strcmp(h, "ID")) {
            c->role = ROLE_ID;
            have_id++;
        } else if (!strcmp(h, "Kernel Name")) {
            c->role = ROLE_NAME;
            have_name++;
        } else if (!strcmp(h, "device__attribute_display_name")) {
            c->role = ROLE_DEVICE;
        } else if (!strcmp(h, NVTX_COLUMN)) {
            c->role = ROLE_NVTX;
        } else if (!strcmp(h, "Grid Size")) {
            c->role = ROLE_GRID;
        } else if (!strcmp(h, "Block Size")) {
            c->role = ROLE_BLOCK;
        } else if (hl > pl + sl && !strncmp(h, STALL_PREFIX, pl) &&
                   !strcmp(h + hl - sl, STALL_SUFFIX)) {
            c->role = ROLE_STALL;
            c->index = (int)stalls++;
        } else {
            for (int m = 0; m < LP_NCU_METRIC_COUNT; m++)
                if (!strcmp(h, metrics[m].column)) {
                    c->role = ROLE_METRIC;
                    c->index = m;
                    have[m]++;
                    break;
                }
        }
        /* a column read twice would be read from either: refused */
        for (size_t j = 0; j < i && c->role != ROLE_SKIP; j++)
            if (!strcmp(p->cells[j], h)) {
                fail(p, "column '%.200s' appears twice: not a raw page as ncu writes it", h);
                return;
            }
    }
    if (stalls > MAX_STALLS) {
        fail(p, "%zu warp-stall columns, more than %d: not a raw page as ncu writes it", stalls,
             MAX_STALLS);
        return;
    }
    if (!have_id || !have_name) {
        int utf16 = p->n_cells && (!strncmp(p->cells[0], "\xff\xfe", 2) ||
                                   !strncmp(p->cells[0], "\xfe\xff", 2));
        fail(p, "no '%s' column: %s (export it with ncu -i REPORT.ncu-rep --csv --page raw > "
             "FILE.csv)", have_id ? "Kernel Name" : "ID",
             utf16 ? "the file is UTF-16 (as PowerShell's > writes): write it as UTF-8"
                   : "not the raw page of an Nsight Compute report");
        return;
    }
    for (int m = 0; m < LP_NCU_METRIC_COUNT; m++)
        if (metrics[m].required && !have[m]) {
            fail(p, "no '%s' column: the report lacks the SpeedOfLight section's metrics "
                 "(profile with --section SpeedOfLight, as llmprof deep does)", metrics[m].column);
            return;
        }
    p->r->stall_names = calloc(stalls ? stalls : 1, sizeof *p->r->stall_names);
    if (!p->r->stall_names) {
        fail(p, "out of memory");
        return;
    }
    for (size_t i = 0; i < p->n_cells; i++)
        if (p->cols[i].role == ROLE_STALL) {
            const char *h = p->cells[i] + strlen(STALL_PREFIX);
            size_t n = strlen(h) - strlen(STALL_SUFFIX);
            char *s = strndup(h, n);
            if (!s) {
                fail(p, "out of memory");
                return;
            }
            p->r->stall_names[p->r->n_stalls++] = s;
        }
}

/* Row 1: the units of the metrics read. */
static void map_units(struct parse *p)
{
    if (p->n_cells != p->n_cols) {
        fail(p, "row 2 has %zu fields, the names row %zu: the file is cut or not a raw page "
             "(export it again with ncu -i REPORT.ncu-rep --csv --page raw)", p->n_cells,
             p->n_cols);
        return;
    }
    for (size_t i = 0; i < p->n_cols; i++) {
        struct column *c = &p->cols[i];
        if (c->role == ROLE_ID && p->cells[i][0]) {
            fail(p, "row 2 is not the units row (its ID is '%.20s'): export the raw page as ncu "
                 "writes it, units row included (ncu -i REPORT.ncu-rep --csv --page raw)",
                 p->cells[i]);
            return;
        }
        c->scale = 1;
        if (c->role != ROLE_METRIC)
            continue;
        c->scale = unit_scale(metrics[c->index].unit, p->cells[i]);
        if (c->scale == 0 && !metrics[c->index].required) {
            c->role = ROLE_SKIP; /* an optional metric in another unit: left absent */
        } else if (c->scale == 0) {
            fail(p, "column '%s' is in '%.40s', a unit llmprof does not read: export with "
                 "--print-units base", metrics[c->index].column, p->cells[i]);
            return;
        }
    }
}

/* "2,028" -> 2028; 0 when the text is not a number (empty, "n/a"). */
static int number(const char *s, double *v)
{
    char buf[64];
    size_t n = 0;
    for (; *s && n + 1 < sizeof buf; s++)
        if (*s != ',')
            buf[n++] = *s;
    buf[n] = 0;
    if (*s || n == 0 || strpbrk(buf, "xXpP")) /* too long, empty, or hexadecimal */
        return 0;
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    while (isspace((unsigned char)*end))
        end++;
    return *end == 0 && errno == 0 && isfinite(*v);
}

/* "(4, 22, 1)" -> {4, 22, 1}; all 0 when the text is not three counts so written. */
static void dims(const char *s, int32_t out[3])
{
    long v[3];
    char tail;
    if (sscanf(s, " (%ld ,%ld ,%ld )%c", &v[0], &v[1], &v[2], &tail) != 3 || v[0] < 0 ||
        v[1] < 0 || v[2] < 0 || v[0] > INT32_MAX || v[1] > INT32_MAX || v[2] > INT32_MAX) {
        out[0] = out[1] = out[2] = 0;
        return;
    }
    for (int i = 0; i < 3; i++)
        out[i] = (int32_t)v[i];
}

/* Rows 2 on: one kernel each. */
static void add_kernel(struct parse *p)
{
    struct lp_ncu_report *r = p->r;
    if (p->n_cells != p->n_cols) {
        fail(p, "row %zu has %zu fields, the names row %zu: the file is cut or not a raw page "
             "(export it again with ncu -i REPORT.ncu-rep --csv --page raw)", p->row + 1,
             p->n_cells, p->n_cols);
        return;
    }
    if (r->n_kernels >= MAX_KERNELS) {
        fail(p, "more than %d kernels: profile fewer (llmprof deep picks the top ones)",
             MAX_KERNELS);
        return;
    }
    if (r->n_kernels == p->cap_kernels) {
        size_t cap = p->cap_kernels ? 2 * p->cap_kernels : 16;
        struct lp_ncu_kernel *k = realloc(r->kernels, cap * sizeof *k);
        if (!k) {
            fail(p, "out of memory");
            return;
        }
        r->kernels = k;
        p->cap_kernels = cap;
    }
    struct lp_ncu_kernel *k = &r->kernels[r->n_kernels];
    memset(k, 0, sizeof *k);
    k->stall = malloc((r->n_stalls ? r->n_stalls : 1) * sizeof *k->stall);
    if (!k->stall) {
        fail(p, "out of memory");
        return;
    }
    r->n_kernels++; /* freed with the report from here on */
    for (size_t s = 0; s < r->n_stalls; s++)
        k->stall[s] = NAN;
    for (size_t i = 0; i < p->n_cols; i++) {
        const struct column *c = &p->cols[i];
        const char *cell = p->cells[i];
        double v;
        switch (c->role) {
        case ROLE_SKIP: break;
        case ROLE_ID:
            if (!number(cell, &v) || v < 0 || v > UINT32_MAX || v != floor(v)) {
                fail(p, "row %zu: ID '%.20s' is not a kernel number: not a raw page as ncu "
                     "writes it (export it again with ncu -i REPORT.ncu-rep --csv --page raw)",
                     p->row + 1, cell);
                return;
            }
            k->id = (uint32_t)v;
            break;
        case ROLE_NAME:
            if (!(k->name = strdup(cell))) {
                fail(p, "out of memory");
                return;
            }
            break;
        case ROLE_NVTX:
            free(k->nvtx);
            if (!(k->nvtx = strdup(cell))) {
                fail(p, "out of memory");
                return;
            }
            break;
        case ROLE_GRID: dims(cell, k->grid); break;
        case ROLE_BLOCK: dims(cell, k->block); break;
        case ROLE_DEVICE:
            if (!r->device && !(r->device = strdup(cell))) {
                fail(p, "out of memory");
                return;
            }
            break;
        case ROLE_METRIC:
            if (number(cell, &v)) {
                k->metric[c->index] = v * c->scale;
                k->valid |= 1u << c->index;
            } /* else absent: "n/a", or what ncu could not measure */
            break;
        case ROLE_STALL:
            if (number(cell, &v))
                k->stall[c->index] = v;
            break;
        }
    }
    if (!k->nvtx && !(k->nvtx = strdup("")))
        fail(p, "out of memory");
}

static void on_row(int terminator, void *data)
{
    (void)terminator;
    struct parse *p = data;
    if (!p->failed) {
        if (p->row == 0)
            map_names(p);
        else if (p->row == 1)
            map_units(p);
        else
            add_kernel(p);
    }
    for (size_t i = 0; i < p->n_cells; i++)
        free(p->cells[i]);
    p->n_cells = 0;
    p->row++;
}

void lp_ncu_free(struct lp_ncu_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_kernels; i++) {
        free(r->kernels[i].name);
        free(r->kernels[i].nvtx);
        free(r->kernels[i].stall);
    }
    for (size_t i = 0; i < r->n_stalls; i++)
        free(r->stall_names[i]);
    free(r->stall_names);
    free(r->kernels);
    free(r->device);
    free(r->name);
    free(r);
}

int lp_ncu_parse(struct lp_ncu_report **out, const void *data, size_t size, const char *name,
                 char *err, size_t errlen)
{
    *out = NULL;
    struct parse p = {.name = name, .err = err, .errlen = errlen};
    if (size > LP_NCU_MAX_BYTES) {
        fail(&p, "%zu bytes, more than %zu: not a raw page llmprof reads", size,
             LP_NCU_MAX_BYTES);
        return LP_ERR_FORMAT;
    }
    p.r = calloc(1, sizeof *p.r);
    if (!p.r || !(p.r->name = strdup(name))) {
        free(p.r);
        fail(&p, "out of memory");
        return LP_ERR_NOMEM;
    }
    struct csv_parser csv;
    /* strict: stray quotes are errors, and a file cut inside a quoted field is refused, not
     * read short */
    if (csv_init(&csv, CSV_APPEND_NULL | CSV_STRICT | CSV_STRICT_FINI) != 0) {
        lp_ncu_free(p.r);
        fail(&p, "out of memory");
        return LP_ERR_NOMEM;
    }
    if (size >= 3 && !memcmp(data, "\xef\xbb\xbf", 3)) { /* a UTF-8 byte-order mark */
        data = (const char *)data + 3;
        size -= 3;
    }
    if (csv_parse(&csv, data, size, on_field, on_row, &p) != size && !p.failed)
        fail(&p, "row %zu: %s", p.row + 1, csv_strerror(csv_error(&csv)));
    if (!p.failed && csv_fini(&csv, on_field, on_row, &p) != 0)
        fail(&p, "row %zu: %s: the file is cut (export it again)", p.row + 1,
             csv_strerror(csv_error(&csv)));
    csv_free(&csv);
    for (size_t i = 0; i < p.n_cells; i++)
        free(p.cells[i]);
    free(p.cells);
    free(p.cols);
    if (!p.failed && p.row < 2)
        fail(&p, "%s: not the raw page of an Nsight Compute report (export it with ncu -i "
             "REPORT.ncu-rep --csv --page raw)", p.row ? "no units row" : "empty");
    if (!p.failed && p.r->n_kernels == 0)
        fail(&p, "no kernel rows: the report profiled no kernel (check ncu's -k, --nvtx-include "
             "and --launch-skip filters)");
    if (p.failed) {
        lp_ncu_free(p.r);
        return p.failed;
    }
    *out = p.r;
    return LP_OK;
}

int lp_ncu_read(struct lp_ncu_report **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    /* O_NONBLOCK: a FIFO must not make the open wait; only regular files are read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return LP_ERR_IO;
    }
    struct stat st;
    int rc = LP_ERR_IO;
    char *buf = NULL;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > LP_NCU_MAX_BYTES) {
        snprintf(err, errlen, "%s: %s", path, S_ISREG(st.st_mode)
                 ? "larger than 256 MiB: not a raw page llmprof reads" : "not a regular file");
        rc = LP_ERR_FORMAT;
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = LP_ERR_NOMEM;
    } else {
        size_t got = 0;
        while (got < (size_t)st.st_size) {
            ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (got == (size_t)st.st_size)
            rc = lp_ncu_parse(out, buf, got, path, err, errlen);
        else
            snprintf(err, errlen, "%s: cut short while read", path);
    }
    free(buf);
    close(fd);
    return rc;
}
