/* Makes fuzz seeds from real traces (tests/fixtures): the META payload and the first
 * records of two RECORDS chunks, cut at record boundaries, as an input of
 * fuzz_trace_records (NAME.rec), and the same wrapped into a small whole trace for
 * fuzz_trace_reader (NAME.lpt). The records are the fixture's bytes, untouched.
 * Usage: fuzz_make_seeds RECORDS_DIR TRACES_DIR FIXTURE.lpt... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "fuzz.h"
#include "trace/codec.h"

#define PART_BYTES 4096 /* records taken from each chunk: small seeds fuzz fast */

/* The decoded payload of the Nth chunk of TYPE in the file image, or NULL. */
static uint8_t *chunk_payload(const uint8_t *d, size_t n, uint32_t type, int nth, size_t *len)
{
    for (size_t off = LP_FILE_HEADER_SIZE; off + LP_CHUNK_HEADER_SIZE <= n;) {
        struct lp_chunk_header h;
        if (lp_chunk_header_unpack(d + off, &h) != 0 ||
            h.payload_size > n - off - LP_CHUNK_HEADER_SIZE || h.raw_size > LP_CHUNK_MAX_RAW)
            return NULL;
        const uint8_t *p = d + off + LP_CHUNK_HEADER_SIZE;
        off += LP_CHUNK_HEADER_SIZE + h.payload_size;
        if (h.type != type || nth-- > 0)
            continue;
        uint8_t *raw = malloc(h.raw_size ? h.raw_size : 1);
        if (!raw)
            return NULL;
        if (h.codec == LP_CODEC_RAW && h.raw_size == h.payload_size)
            memcpy(raw, p, h.raw_size);
        else if (h.codec != LP_CODEC_ZSTD ||
                 ZSTD_decompress(raw, h.raw_size, p, h.payload_size) != h.raw_size) {
            free(raw);
            return NULL;
        }
        *len = h.raw_size;
        return raw;
    }
    return NULL;
}

/* Length of the longest run of whole records at the start of S that fits MAX bytes and
 * holds no separator. */
static size_t record_prefix(const uint8_t *s, size_t n, size_t max)
{
    struct lp_cursor c = {s, s + n, 0};
    size_t keep = 0;
    while (c.p < c.end) {
        lp_cur_uvar(&c);
        uint64_t body = lp_cur_uvar(&c);
        if (c.bad || body > (size_t)(c.end - c.p))
            break;
        size_t next = (size_t)(c.p - s) + (size_t)body;
        if (next > max ||
            memmem(s, next, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1))
            break;
        c.p += body;
        keep = next;
    }
    return keep;
}

static int write_file(const char *dir, const char *name, const char *ext, const void *p,
                      size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "wb");
    int bad = !f || fwrite(p, 1, n, f) != n;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad)
        fprintf(stderr, "cannot write %s\n", path);
    return bad ? -1 : 0;
}

/* NAME: the fixture's directory, e.g. tests/fixtures/hf-moe/trace.vm.588.lpt -> hf-moe */
static void seed_name(const char *path, char *name, size_t len)
{
    const char *end = strrchr(path, '/'), *start = end;
    while (start && start > path && start[-1] != '/')
        start--;
    if (!end || start == end)
        snprintf(name, len, "seed");
    else
        snprintf(name, len, "%.*s", (int)(end - start), start);
}

static int seed(const char *rec_dir, const char *trace_dir, const char *path)
{
    int rc = -1;
    uint8_t *file = NULL, *meta = NULL, *first = NULL, *later = NULL;
    struct lp_buf in = {0}, image = {0};
    size_t n = 0, meta_len = 0, first_len = 0, later_len = 0;
    FILE *f = fopen(path, "rb");
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        rewind(f);
        if (size > 0 && (file = malloc((size_t)size)) && fread(file, 1, (size_t)size, f) == (size_t)size)
            n = (size_t)size;
    }
    if (f)
        fclose(f);
    if (!n || !(meta = chunk_payload(file, n, LP_CHUNK_META, 0, &meta_len)) ||
        !(first = chunk_payload(file, n, LP_CHUNK_RECORDS, 0, &first_len))) {
        fprintf(stderr, "%s: not a trace with a META and a RECORDS chunk\n", path);
        goto out;
    }
    /* a later chunk: decode steps rather than start-up; its deltas start afresh too */
    later = chunk_payload(file, n, LP_CHUNK_RECORDS, 2, &later_len);
    if (!later)
        later = chunk_payload(file, n, LP_CHUNK_RECORDS, 1, &later_len);
    if (memmem(meta, meta_len, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1)) {
        fprintf(stderr, "%s: the META payload holds the separator\n", path);
        goto out;
    }
    lp_buf_put(&in, meta, meta_len);
    lp_buf_put(&in, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1);
    lp_buf_put(&in, first, record_prefix(first, first_len, PART_BYTES));
    if (later) {
        lp_buf_put(&in, LP_FUZZ_CHUNK_SEP, sizeof LP_FUZZ_CHUNK_SEP - 1);
        lp_buf_put(&in, later, record_prefix(later, later_len, PART_BYTES));
    }
    char name[256];
    seed_name(path, name, sizeof name);
    if (in.oom || lp_fuzz_trace_build(in.data, in.len, 1, &image) != 0) {
        fprintf(stderr, "out of memory\n");
        goto out;
    }
    if (write_file(rec_dir, name, "rec", in.data, in.len) == 0 &&
        write_file(trace_dir, name, "lpt", image.data, image.len) == 0) {
        printf("%s: %zu bytes of input, a %zu-byte trace\n", name, in.len, image.len);
        rc = 0;
    }
out:
    free(file);
    free(meta);
    free(first);
    free(later);
    lp_buf_free(&in);
    lp_buf_free(&image);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s RECORDS_DIR TRACES_DIR FIXTURE.lpt...\n", argv[0]);
        return 2;
    }
    int rc = 0;
    for (int i = 3; i < argc; i++)
        if (seed(argv[1], argv[2], argv[i]) != 0)
            rc = 1;
    return rc;
}
