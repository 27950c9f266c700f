/* replay.c — runs a libFuzzer harness over files without libFuzzer, so the normal
 * (and the GCC sanitizer) build replays the seed corpus and every regression input
 * as an ordinary test. */
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static int run_file(const char *path)
{
    char *text;
    size_t len;
    fc_err e;
    if (fc_read_file(path, 1 << 24, &text, &len, &e) != 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    /* an exact-size copy, so reading past the end is caught by the sanitizer */
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    LLVMFuzzerTestOneInput(copy, len);
    free(copy);
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            bad += run_file(argv[i]);
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        for (struct dirent *de; d && (de = readdir(d));) {
            if (de->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
            bad += run_file(p);
            files++;
        }
        if (d) closedir(d);
    }
    printf("%d passed, %d failed\n", files - bad, bad);
    return bad ? 1 : 0;
}
