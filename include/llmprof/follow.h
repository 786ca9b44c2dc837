/* Following a trace while its process writes it (llmprof watch): the chunks appended since
 * the last poll are decoded and each record handed to the caller, in file order; nothing is
 * kept but the string table (bounded) and the header pairs. A chunk not yet wholly written
 * is waited for, not an error. The whole-file reader (trace.h) stays the one that recovers,
 * orders and checks a finished trace for a report. */
#ifndef LLMPROF_FOLLOW_H
#define LLMPROF_FOLLOW_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/trace.h"

struct lp_follow;

/* What following a trace has met so far. */
struct lp_follow_stats {
    uint64_t bytes;          /* of the file consumed: whole chunks read or skipped */
    uint64_t chunks;         /* chunks decoded */
    uint64_t records;        /* records handed on (strings left out) */
    uint64_t bad_chunks;     /* corrupt headers, checksums or frames: skipped */
    uint64_t dropped_bytes;  /* bytes of those */
    uint64_t repeated;       /* chunks whose number was read before: skipped */
    uint64_t missing;        /* chunk numbers skipped over */
    uint64_t unknown_strings; /* names asked for that no chunk read defined */
    uint64_t restarts;       /* the file was replaced or cut shorter: read again from its start */
    uint64_t over_budget;    /* chunks past the decode budget (a file of zstd bombs): skipped */
    int complete;            /* its END chunk was read: the process exited cleanly */
    int waiting;             /* the file ends inside a chunk: waited for */
};

/* Receives one record; a non-zero return stops the poll and is returned by it. */
typedef int (*lp_follow_fn)(void *ctx, struct lp_follow *f, const struct lp_record *r);

/* Follows PATH (it need not exist yet). The file stays open while it is being written, and is
 * closed once its END chunk is read. A file removed keeps what was read. LP_OK or
 * LP_ERR_NOMEM. */
int lp_follow_open(struct lp_follow **f, const char *path);
/* Reads the whole chunks appended since the last call, up to MAX_BYTES of the file (0: no
 * bound) so a long backlog is taken in parts, and hands their records to FN. Returns LP_OK
 * (*MORE set when bytes are left for the next call), LP_ERR_FORMAT or LP_ERR_VERSION when the
 * file is not a trace this build reads (ERR says why; later polls return the same), LP_ERR_IO,
 * LP_ERR_NOMEM, or what FN returned. */
int lp_follow_poll(struct lp_follow *f, uint64_t max_bytes, lp_follow_fn fn, void *ctx,
                   int *more, char *err, size_t errlen);
/* When the file was replaced or cut shorter (a new trace in its place), the poll that finds
 * it returns LP_OK at once with *MORE set and lp_follow_stats' restarts grown, before handing
 * on anything of the new file, so that the caller can start its figures over. */
/* A string of the records handed on: "" for 0, "<unknown>" when never defined (counted). */
const char *lp_follow_str(struct lp_follow *f, lp_str id);
/* A header pair (the META chunk, then the END chunk's), NULL when absent. */
const char *lp_follow_meta(const struct lp_follow *f, const char *key);
struct lp_follow_stats lp_follow_stats(const struct lp_follow *f);
void lp_follow_free(struct lp_follow *f);

#endif
