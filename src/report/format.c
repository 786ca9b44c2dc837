/* Formatting shared by every output (the writers here and the CLI's messages): durations,
 * bytes, shares, and the one way text from outside (names) is written (docs/report.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

const char *lp_fmt_ns(double ns, char *buf, size_t len)
{
    if (ns >= 10e9)
        snprintf(buf, len, "%.2f s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(buf, len, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.0f ns", ns);
    return buf;
}

const char *lp_fmt_bytes(double b, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

const char *lp_fmt_pct(double share, char *buf, size_t len)
{
    if (!(share >= 0)) /* negative or NaN: not known */
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f %%", 100 * share);
    return buf;
}

size_t lp_fmt_cut_len(const char *s)
{
    size_t n = strnlen(s, LP_NAME_CUT + 1);
    if (n <= LP_NAME_CUT)
        return n;
    n = LP_NAME_CUT;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) /* inside a character: before it */
        n--;
    return n;
}

const char *lp_fmt_cut(const char *s, char (*buf)[LP_NAME_CUT + 4])
{
    size_t n = lp_fmt_cut_len(s);
    if (!s[n])
        return s;
    memcpy(*buf, s, n);
    memcpy(*buf + n, "\xe2\x80\xa6", 4); /* "…" and the end */
    return *buf;
}

/* ---- text from outside: names ----
 *
 * Kernel, device, range, operator, host and command names come from the trace (which may hold
 * any bytes), from meta.json, a config or Nsight Compute's CSV. Wherever they are written as
 * text (terminal, Markdown, CSV) one rule applies, so that no name can move the cursor, set
 * a terminal's title, or forge a line, a table row or a cell: a control character (a byte
 * below 0x20, 0x7f, and U+0080..U+009F), a bidirectional control (U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) and any byte that is not part of well-formed UTF-8 is
 * shown as \xNN, one per byte (U+009B is \xc2\x9b); every other character is kept, a
 * backslash too. Markdown table cells also show '|' as "\|" (and a backslash just before a
 * '|' as \x5c, so that the pipe's escape stays one) and, outside code spans, '`' as "\`";
 * a code span's fence is longer than any run of backticks in the name. CSV fields are
 * quoted as RFC 4180 says. report.json, report.html and the Perfetto JSON escape as JSON
 * and HTML do instead. */

enum {
    ESC_CELL = 1,      /* Markdown table cell: '|' */
    ESC_TICK = 2,      /* Markdown outside a code span: '`' */
    ESC_QUOTE = 4,     /* inside a quoted CSV field: '"' doubled */
    ESC_LINES = 8,     /* newlines kept: text of several lines composed here */
};

/* Where escaped text goes: a stream, or a buffer filled with whole characters and escapes
 * only (a name cut there never ends in half an escape or half a character). */
struct sink {
    FILE *f;
    char *buf;
    size_t len, used;
    int full;
};

static void put(struct sink *o, const void *p, size_t n)
{
    if (o->f) {
        fwrite(p, 1, n, o->f);
        return;
    }
    if (o->full || o->used + n >= o->len) {
        o->full = 1;
        return;
    }
    memcpy(o->buf + o->used, p, n);
    o->used += n;
    o->buf[o->used] = 0;
}

/* The bytes of the character at S when it is shown as it is, 0 when S[0] is shown as \xNN:
 * a control character (C0, DEL, and C1: U+0080..U+009F, UTF-8 C2 80..C2 9F) or a byte that
 * is not part of well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
 * past U+10FFFF). S is NUL-terminated: a NUL fails the check of the byte it stands for, so
 * nothing past it is read. */
static size_t shown_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0x20 || c == 0x7f)
        return 0;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2, lo = c == 0xc2 ? 0xa0 : 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* the bidirectional controls that reorder a line on screen: U+200E, U+200F,
     * U+202A..U+202E, U+2066..U+2069 */
    if (c == 0xe2 && ((s[1] == 0x80 && (s[2] == 0x8e || s[2] == 0x8f ||
                                        (s[2] >= 0xaa && s[2] <= 0xae))) ||
                      (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
        return 0;
    return n;
}

/* The bytes of the character at S written as they are under HOW, 0 when it is escaped. */
static size_t plain_len(const unsigned char *s, unsigned how)
{
    if ((how & ESC_CELL) && (*s == '|' || (*s == '\\' && s[1] == '|')))
        return 0;
    if (((how & ESC_TICK) && *s == '`') || ((how & ESC_QUOTE) && *s == '"'))
        return 0;
    if ((how & ESC_LINES) && *s == '\n')
        return 1;
    return shown_len(s);
}

static void escape(struct sink *o, const char *str, unsigned how)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        /* a stream takes the longest plain run at once, a buffer one character at a time;
         * the NUL ends a run (shown_len gives it 0) */
        size_t run = 0, n;
        while ((n = plain_len(s + run, how)) && (o->f || !run))
            run += n;
        if (run) {
            put(o, s, run);
            s += run;
            continue;
        }
        char e[8];
        if (*s == '|')
            snprintf(e, sizeof e, "\\|");
        else if (*s == '`')
            snprintf(e, sizeof e, "\\`");
        else if (*s == '"')
            snprintf(e, sizeof e, "\"\"");
        else /* a control character, a byte that is not UTF-8, a backslash before a '|' */
            snprintf(e, sizeof e, "\\x%02x", *s);
        put(o, e, strlen(e));
        s++;
    }
}

void lp_fmt_puts(FILE *f, const char *s)
{
    struct sink o = {.f = f};
    escape(&o, s, 0);
}

void lp_fmt_put_lines(FILE *f, const char *s)
{
    struct sink o = {.f = f};
    escape(&o, s, ESC_LINES);
}

const char *lp_fmt_escape(char *buf, size_t len, const char *s)
{
    struct sink o = {.buf = buf, .len = len};
    if (len)
        buf[0] = 0;
    escape(&o, s, 0);
    return buf;
}

void lp_md_cell(FILE *f, const char *s)
{
    struct sink o = {.f = f};
    escape(&o, s, ESC_CELL | ESC_TICK);
}

/* `S` with a fence longer than S's longest run of backticks, padded with a space on each
 * side where S starts or ends with one (CommonMark strips one space each side then). */
static void md_code(FILE *f, const char *s, unsigned how)
{
    size_t run = 0, longest = 0, n = strlen(s), spaces = strspn(s, " ");
    for (const char *p = s; *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > longest)
            longest = run;
    }
    int pad = n && (s[0] == '`' || s[n - 1] == '`' ||
                    (s[0] == ' ' && s[n - 1] == ' ' && spaces < n));
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
    if (pad)
        fputc(' ', f);
    struct sink o = {.f = f};
    escape(&o, s, how);
    if (pad)
        fputc(' ', f);
    for (size_t i = 0; i <= longest; i++)
        fputc('`', f);
}

void lp_md_code(FILE *f, const char *s)
{
    md_code(f, s, 0);
}

void lp_md_code_cell(FILE *f, const char *s)
{
    md_code(f, s, ESC_CELL);
}

int lp_md_code_cut(FILE *f, const char *s, size_t max)
{
    size_t n = strlen(s), k = n < max ? n : max;
    while (k < n && k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
        k--; /* at a character's start */
    char *cut = strndup(s, k);
    md_code(f, cut ? cut : "", 0);
    free(cut);
    if (k < n)
        fprintf(f, " …");
    return k < n;
}

void lp_csv_field(FILE *f, const char *s)
{
    struct sink o = {.f = f};
    /* control characters are escaped, so only commas and quotes call for quotes */
    if (strpbrk(s, ",\"")) {
        fputc('"', f);
        escape(&o, s, ESC_QUOTE);
        fputc('"', f);
    } else {
        escape(&o, s, 0);
    }
}

const char *lp_fmt_uuid(const uint8_t u[16], char *buf, size_t len)
{
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
             u[13], u[14], u[15]);
    return buf;
}
