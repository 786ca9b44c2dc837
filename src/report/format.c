/* Number formatting shared by every output (the writers here and the CLI's messages):
 * durations, bytes, shares. */
#include <stdio.h>

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

void lp_md_cell(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', f);
        else
            fputc(*s, f);
    }
}
