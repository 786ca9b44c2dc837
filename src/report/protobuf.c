/* A Protocol Buffers encoder of one message at a time, for the Perfetto export: each
 * TracePacket is built here and written out whole, so that a trace of any length is
 * streamed. Varints, fixed 64-bit fields and length-delimited fields; a nested message
 * reserves one byte for its length and moves its body only when the length needs more. */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

static int grow(struct lp_pb *p, size_t more)
{
    if (p->failed)
        return -1;
    if (p->cap - p->n >= more)
        return 0;
    size_t cap = p->cap ? p->cap : 256;
    while (cap - p->n < more) {
        if (cap > SIZE_MAX / 2) {
            p->failed = 1;
            return -1;
        }
        cap *= 2;
    }
    uint8_t *b = realloc(p->buf, cap);
    if (!b) {
        p->failed = 1;
        return -1;
    }
    p->buf = b;
    p->cap = cap;
    return 0;
}

static size_t put_varint(uint8_t *b, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    return n;
}

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* wire types: 0 varint, 1 fixed 64 bits, 2 length-delimited */
static void tag(struct lp_pb *p, uint32_t field, unsigned wire)
{
    p->n += put_varint(p->buf + p->n, (uint64_t)field << 3 | wire);
}

void lp_pb_varint(struct lp_pb *p, uint32_t field, uint64_t v)
{
    if (grow(p, 20) == 0) {
        tag(p, field, 0);
        p->n += put_varint(p->buf + p->n, v);
    }
}

void lp_pb_fixed64(struct lp_pb *p, uint32_t field, uint64_t v)
{
    if (grow(p, 13) == 0) {
        tag(p, field, 1);
        for (int i = 0; i < 8; i++)
            p->buf[p->n++] = (uint8_t)(v >> (8 * i));
    }
}

void lp_pb_double(struct lp_pb *p, uint32_t field, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    lp_pb_fixed64(p, field, bits);
}

void lp_pb_bytes(struct lp_pb *p, uint32_t field, const void *data, size_t n)
{
    if (grow(p, n + 15) == 0) {
        tag(p, field, 2);
        p->n += put_varint(p->buf + p->n, n);
        if (n)
            memcpy(p->buf + p->n, data, n);
        p->n += n;
    }
}

void lp_pb_str(struct lp_pb *p, uint32_t field, const char *s)
{
    lp_pb_bytes(p, field, s, strlen(s));
}

size_t lp_pb_begin(struct lp_pb *p, uint32_t field)
{
    if (grow(p, 6) != 0)
        return 0;
    tag(p, field, 2);
    p->buf[p->n] = 0;
    return p->n++;
}

void lp_pb_end(struct lp_pb *p, size_t mark)
{
    if (p->failed)
        return;
    size_t len = p->n - mark - 1, k = varint_len(len);
    if (k > 1) {
        if (grow(p, k - 1) != 0)
            return;
        memmove(p->buf + mark + k, p->buf + mark + 1, len);
        p->n += k - 1;
    }
    put_varint(p->buf + mark, len);
}

int lp_pb_emit(FILE *f, uint32_t field, struct lp_pb *p)
{
    uint8_t head[16];
    size_t h = put_varint(head, (uint64_t)field << 3 | 2);
    h += put_varint(head + h, p->n);
    int rc = p->failed || fwrite(head, 1, h, f) != h || fwrite(p->buf, 1, p->n, f) != p->n;
    p->n = 0;
    return rc ? -1 : 0;
}

void lp_pb_free(struct lp_pb *p)
{
    free(p->buf);
    memset(p, 0, sizeof *p);
}
