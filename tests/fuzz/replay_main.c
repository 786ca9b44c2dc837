/* Replays fuzz inputs (files or directories, recursively) through a fuzz target, so every
 * build runs the corpora and the real fixtures, plus the cut and byte-flipped copies a
 * fuzzer would try first. Whole files must get the verdict their switch expects; copies
 * need only not crash.
 * Usage: REPLAY [--whole|--partial|--rejected|--any] PATH... (a switch applies to the
 * paths after it; --any, the default, is for inputs a fuzzer found: replayed as they are,
 * with no copies, and only a crash fails). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

enum expect { EXPECT_ANY = -1 }; /* otherwise an enum lp_fuzz_verdict */

static const char *const verdict_names[] = {"rejected", "partial", "whole"};

struct tally {
    unsigned long whole[3], copies[3]; /* by verdict */
    int files, failures;
};

static int read_file(const char *path, uint8_t **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint8_t *d = NULL;
    size_t n = 0, cap = 0, k;
    int rc = 0;
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *p = realloc(d, cap);
            if (!p) {
                rc = -1;
                break;
            }
            d = p;
        }
        k = fread(d + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    if (ferror(f))
        rc = -1;
    fclose(f);
    if (rc != 0) {
        free(d);
        return -1;
    }
    *data = d;
    *len = n;
    return 0;
}

static enum lp_fuzz_verdict run(const uint8_t *data, size_t len)
{
    lp_fuzz_verdict = LP_FUZZ_REJECTED;
    LLVMFuzzerTestOneInput(data, len);
    return lp_fuzz_verdict;
}

static void replay_file(const char *path, int expect, struct tally *t)
{
    uint8_t *data = NULL;
    size_t len = 0;
    if (read_file(path, &data, &len) != 0) {
        fprintf(stderr, "FAIL %s: cannot read: %s\n", path, strerror(errno));
        t->failures++;
        return;
    }
    t->files++;
    enum lp_fuzz_verdict v = run(data, len);
    t->whole[v]++;
    if (expect != EXPECT_ANY && (int)v != expect) {
        fprintf(stderr, "FAIL %s: expected %s, the target's verdict is %s\n", path,
                verdict_names[expect], verdict_names[v]);
        t->failures++;
    }
    if (expect == EXPECT_ANY) { /* already mutants: their copies add time, not coverage */
        free(data);
        return;
    }
    /* cuts and flipped bytes, fewer of a large file, whose every copy is analysed whole */
    size_t step = len / (len > (256u << 10) ? 16 : 64) + 1;
    for (size_t cut = 0; cut < len; cut += step)
        t->copies[run(data, cut)]++;
    for (size_t i = 16; i < len; i += step) {
        data[i] ^= 0xff;
        t->copies[run(data, len)]++;
        data[i] ^= 0xff;
    }
    free(data);
}

/* Returns the number of files found under PATH. */
static int walk(const char *path, int expect, struct tally *t)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path, expect, t);
        return 1;
    }
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < sizeof sub)
            found += walk(sub, expect, t);
    }
    closedir(d);
    return found;
}

int main(int argc, char **argv)
{
    struct tally t = {0};
    int expect = EXPECT_ANY;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--whole") == 0)
            expect = LP_FUZZ_WHOLE;
        else if (strcmp(argv[i], "--partial") == 0)
            expect = LP_FUZZ_PARTIAL;
        else if (strcmp(argv[i], "--rejected") == 0)
            expect = LP_FUZZ_REJECTED;
        else if (strcmp(argv[i], "--any") == 0)
            expect = EXPECT_ANY;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "unknown option %s; usage: %s [--whole|--partial|--rejected|--any] "
                            "PATH...\n", argv[i], argv[0]);
            return 2;
        } else if (walk(argv[i], expect, &t) == 0) {
            /* a corpus that went missing must not pass as an empty one */
            fprintf(stderr, "FAIL %s: no input there\n", argv[i]);
            t.failures++;
        }
    }
    printf("%d whole files: %lu whole, %lu partial, %lu rejected\n", t.files,
           t.whole[LP_FUZZ_WHOLE], t.whole[LP_FUZZ_PARTIAL], t.whole[LP_FUZZ_REJECTED]);
    printf("%lu cut and flipped copies: %lu whole, %lu partial, %lu rejected\n",
           t.copies[0] + t.copies[1] + t.copies[2], t.copies[LP_FUZZ_WHOLE],
           t.copies[LP_FUZZ_PARTIAL], t.copies[LP_FUZZ_REJECTED]);
    if (t.failures)
        printf("%d failures\n", t.failures);
    return t.failures || t.files == 0 ? 1 : 0;
}
