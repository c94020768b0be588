// Minimal test harness: each test binary counts checks and ends with one line
// "N passed, N failed" (plus ", N skipped" and a reason line per skip).
#ifndef CABIN_TEST_H
#define CABIN_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_skipped;

#define CHECK(cond, ...) do {                                                        \
    if (cond) { t_passed++; }                                                        \
    else { t_failed++; fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
           fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }                      \
} while (0)

#define SKIP(...) do { t_skipped++; printf("skipped: "); printf(__VA_ARGS__); printf("\n"); } while (0)

// Path of ../shared/ref relative to the repository root, or NULL (and the caller skips).
static inline const char *test_ref_dir(void) {
    const char *env = getenv("CABIN_REF_DIR");
    static const char *cands[] = { "../shared/ref", "../../shared/ref", NULL };
    if (env && *env) return env;
    for (int i = 0; cands[i]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/README.md", cands[i]);
        FILE *f = fopen(p, "r");
        if (f) { fclose(f); return cands[i]; }
    }
    return NULL;
}

static inline int test_finish(void) {
    if (t_skipped) printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
    else printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed ? 1 : 0;
}

#endif
