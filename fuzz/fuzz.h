// The fuzz targets' common part. Each fuzz/fuzz_NAME.c defines the two libFuzzer entry points;
// `make fuzz` links them with libFuzzer (clang -fsanitize=fuzzer), and fuzz/replay.c links them
// with a plain main that runs saved inputs through them, with any compiler (make test).
// A target checks what must hold of any input it accepts (round trips, bounds) with FUZZ_CHECK:
// a broken property aborts, which libFuzzer saves as a crash and the replay reports as a failure.
#ifndef CABIN_FUZZ_H
#define CABIN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...) do { \
        if (!(cond)) { fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
                       fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } \
    } while (0)

// The input as a NUL-terminated string (malloc'd; the caller frees): the parsers take C text.
static inline char *fuzz_text(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) abort();
    if (size) memcpy(s, data, size);
    s[size] = 0;
    return s;
}

#endif
