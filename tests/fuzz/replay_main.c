/* Replays fuzz inputs (files or directories, recursively) through the fuzz target, so
 * every build runs the corpus and the real fixtures, plus cut and bit-flipped copies. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int files;

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    uint8_t *data = NULL;
    size_t len = 0, cap = 0, n;
    uint8_t buf[65536];
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + n > cap) {
            cap = (len + n) * 2;
            data = realloc(data, cap);
        }
        memcpy(data + len, buf, n);
        len += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(data, len);
    /* mutations a fuzzer would try first: cuts and flipped bytes (fewer of a large file,
     * whose every copy is analysed whole) */
    size_t step = len / (len > (256u << 10) ? 16 : 64) + 1;
    for (size_t cut = 0; cut < len; cut += step)
        LLVMFuzzerTestOneInput(data, cut);
    for (size_t i = 16; i < len; i += step) {
        data[i] ^= 0xff;
        LLVMFuzzerTestOneInput(data, len);
        data[i] ^= 0xff;
    }
    free(data);
    files++;
}

static void walk(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        walk(sub);
    }
    if (d)
        closedir(d);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        walk(argv[i]);
    printf("replayed %d inputs with their cuts and flips\n", files);
    return files > 0 ? 0 : 1;
}
