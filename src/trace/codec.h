/* Record codec of trace format v1: varints, per-chunk delta state, and the field tables
 * that define how each record type is laid out inside a chunk. Shared by writer and reader
 * so the layout is written down exactly once. */
#ifndef LP_TRACE_CODEC_H
#define LP_TRACE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "llmprof/trace.h"

/* Chunk types and codecs (on-disk values). */
enum lp_chunk_type { LP_CHUNK_META = 1, LP_CHUNK_RECORDS = 2, LP_CHUNK_END = 3 };
enum lp_chunk_codec { LP_CODEC_RAW = 0, LP_CODEC_ZSTD = 1 };

#define LP_FILE_HEADER_SIZE 16
#define LP_CHUNK_HEADER_SIZE 32
#define LP_CHUNK_MAGIC 0x4b43504cu /* "LPCK" */
/* A chunk decodes to at most this many bytes: the writer's chunks hold about 1 MiB (at most
 * LP_WRITER_MAX_CHUNK plus one record or string), so a larger raw_size is corrupt. */
#define LP_CHUNK_MAX_RAW (64u << 20)
#define LP_WRITER_MAX_CHUNK (16u << 20) /* the largest chunk_bytes the writer takes */
/* What reading a trace may decode (docs/trace-format.md, "Reading"): raw bytes at most
 * LP_READ_RAW_BASE plus LP_READ_RAW_PER_BYTE per byte of the chunks decoded (real traces
 * compress 3-10 times, the synthetic benchmark trace 22 times); the whole-file reader and
 * the follower alike, so a small file cannot make either decode gigabytes. */
#define LP_READ_RAW_BASE (16ull << 20)
#define LP_READ_RAW_PER_BYTE 128u
#define LP_WRITER_MAX_STRING (1u << 20) /* longer strings are cut to this many bytes */

struct lp_chunk_header {
    uint32_t type, codec, payload_size, raw_size, n_records, payload_crc;
    uint32_t seq; /* its place among the file's chunks, from 1 (format 1.8); 0: not numbered */
};

void lp_chunk_header_pack(const struct lp_chunk_header *h, uint8_t out[LP_CHUNK_HEADER_SIZE]);
/* LP_OK, or LP_ERR_FORMAT when magic or header checksum do not match. */
int lp_chunk_header_unpack(const uint8_t in[LP_CHUNK_HEADER_SIZE], struct lp_chunk_header *h);
uint32_t lp_crc32(const void *data, size_t n);

/* Growable byte buffer. */
struct lp_buf {
    uint8_t *data;
    size_t len, cap;
    int oom;
};
void lp_buf_reserve(struct lp_buf *b, size_t extra);
void lp_buf_put(struct lp_buf *b, const void *p, size_t n);
void lp_buf_put_uvar(struct lp_buf *b, uint64_t v);
void lp_buf_free(struct lp_buf *b);

/* Bounds-checked cursor; any overrun sets bad and yields zeros. */
struct lp_cursor {
    const uint8_t *p, *end;
    int bad;
};
uint64_t lp_cur_uvar_slow(struct lp_cursor *c);
/* an unsigned LEB128 varint; most fields are one byte: that case inline */
static inline uint64_t lp_cur_uvar(struct lp_cursor *c)
{
    if (c->p < c->end && !(*c->p & 0x80))
        return *c->p++;
    return lp_cur_uvar_slow(c);
}
const uint8_t *lp_cur_bytes(struct lp_cursor *c, size_t n);

/* The next key/value pair of a META or END chunk's body at C (a length-prefixed key, then
 * value): 1 with K, KL, V, VL set; 0 at the body's end; -1 when malformed. */
int lp_meta_next(struct lp_cursor *c, const uint8_t **k, size_t *kl, const uint8_t **v,
                 size_t *vl);

/* Delta bases, reset at every chunk so each chunk decodes on its own. */
struct lp_delta_state {
    uint64_t ts[LP_REC_TYPE_COUNT];
    uint32_t corr[LP_REC_TYPE_COUNT];
};

/* Appends type, length and fields of R. Strings are not handled here. */
void lp_record_encode(struct lp_buf *b, struct lp_delta_state *st, const struct lp_record *r);
/* Decodes the fields of a record of TYPE from exactly LEN bytes at C. Fields a newer
 * minor version appended are skipped; fields a later version appended and an older writer
 * did not write read as 0. Returns LP_OK, or LP_ERR_FORMAT on a malformed record (including
 * one shorter than the fields its type always has). Unknown types must be skipped by the caller. */
int lp_record_decode(struct lp_cursor *c, size_t len, struct lp_delta_state *st, uint32_t type,
                     struct lp_record *r);
int lp_record_type_known(uint32_t type);
/* A kernel or API call record of TYPE decoded in two steps, which together do what
 * lp_record_decode does: its head (start, end, correlation id, and a kernel's name: what
 * differs from one launch to the next), with *TAIL set to the rest of its body (what
 * kernels launched alike, or calls alike, share, byte for byte: equal tails decode alike,
 * so a reader may reuse what it made of an earlier one); then, where needed, the tail.
 * Each returns LP_OK or LP_ERR_FORMAT, as lp_record_decode (other types: LP_ERR_FORMAT). */
int lp_record_decode_head(struct lp_cursor *c, size_t len, struct lp_delta_state *st,
                          uint32_t type, struct lp_record *r, struct lp_cursor *tail);
int lp_record_decode_tail(struct lp_cursor *tail, uint32_t type, struct lp_record *r);

/* Where a record type keeps what the reader checks and rewrites: its first timestamp
 * (start or timestamp), its end, and its string ids, as offsets into its struct. */
struct lp_record_layout {
    size_t size; /* of the struct */
    int has_ts, has_end;
    int end_is_dur; /* END is a kept row's 32-bit duration field (LP_REC_LONG) */
    size_t ts, end;
    size_t n_str, str[4];
};
/* LP_OK for a record type with a field table (not strings), LP_ERR_ARG otherwise. */
int lp_record_layout(uint32_t type, struct lp_record_layout *l);

#endif
