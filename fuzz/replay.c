// Runs saved inputs through one fuzz target without libFuzzer: `replay_NAME FILE|DIR ...` reads
// every file named (a directory: each file in it, sorted), calls LLVMFuzzerInitialize once and
// LLVMFuzzerTestOneInput on each. Built with the project's compiler and flags (ASan/UBSan under
// make test-asan), so the regression inputs of fuzz/regressions/ run wherever the tests run.
// A crash or a broken FUZZ_CHECK ends the process; otherwise it prints "N passed, 0 failed".
#include "fuzz/fuzz.h"

#include <dirent.h>
#include <sys/stat.h>

typedef struct input { char *path; uint8_t *data; size_t size; } input;
typedef struct input_list { input *items; int n, cap; } input_list;

static int read_input(input_list *l, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "replay: %s: cannot open\n", path); return -1; }
    uint8_t *data = NULL;
    size_t size = 0, cap = 0, got;
    do {
        if (size == cap) {
            cap = cap ? cap * 2 : 4096;
            if (!(data = realloc(data, cap))) abort();
        }
        got = fread(data + size, 1, cap - size, f);
        size += got;
    } while (got > 0);
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(data); fprintf(stderr, "replay: %s: read error\n", path); return -1; }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        if (!(l->items = realloc(l->items, (size_t)l->cap * sizeof *l->items))) abort();
    }
    char *p = strdup(path);
    if (!p) abort();
    l->items[l->n++] = (input){ p, data, size };
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_dir(input_list *l, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) { fprintf(stderr, "replay: %s: cannot open the directory\n", dir); return -1; }
    char **names = NULL;
    int n = 0, rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;   // ., .., and hidden notes such as .gitkeep
        if (!(names = realloc(names, (size_t)(n + 1) * sizeof *names))) abort();
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) abort();
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof *names, by_name);   // an empty directory has no list at all
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (!rc && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) rc = read_input(l, names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s FILE|DIR ...\n", argv[0]); return 2; }
    // Every input is read before the target's initialisation, which may change directory.
    input_list l = { 0 };
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) { fprintf(stderr, "replay: %s: not found\n", argv[i]); return 1; }
        if (S_ISDIR(st.st_mode) ? read_dir(&l, argv[i]) : read_input(&l, argv[i])) return 1;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 0; i < l.n; i++) {
        fprintf(stderr, "replay: %s (%zu bytes)\n", l.items[i].path, l.items[i].size);
        LLVMFuzzerTestOneInput(l.items[i].data, l.items[i].size);
        free(l.items[i].data);
        free(l.items[i].path);
    }
    free(l.items);
    printf("%d passed, 0 failed\n", l.n);
    return 0;
}
