// Every op of engine/backend.h on every registered backend but cpu-scalar, against cpu-scalar (the
// reference) on fresh random inputs: embed and matmul for each weight type both take, rmsnorm,
// add, scale, add_bias, glu (silu and GELU), rope (normal and NeoX, partial), kv_store and attention for every KV
// format (caches built in batches, keys rotated by slot, quantized stores pulled back from a
// backend that keeps its own copy). Tolerances: tests/op_checks.h. A backend that cannot be made
// here (no Vulkan device) is skipped with its reason. The seed: tests/rng.h.
#include "test.h"
#include "rng.h"
#include "op_checks.h"
#include "base/clock.h"

// lavapipe (LLVM) keeps allocations that LeakSanitizer would report at exit; they are not ours.
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

int main(void) {
    test_seed();
    errbuf err = {{0}};
    backend *ref = backend_create(&(backend_opts){ .name = "cpu-scalar", .n_threads = 1 }, &err);
    if (!ref) {
        CHECK(0, "the reference backend: %s", err.msg);
        return test_finish();
    }
    const backend_info *const *rows;
    int n_rows = backend_registry(&rows), tested = 0;
    printf("backends: %s\n", backend_names());
    for (int i = 0; i < n_rows; i++) {
        if (strcmp(rows[i]->name, ref->name) == 0) continue;
        backend *b = backend_create(&(backend_opts){ .name = rows[i]->name }, &err);
        if (!b) {
            SKIP("%s: %s", rows[i]->name, err.msg);
            continue;
        }
        printf("%s: %s\n", rows[i]->name, b->description);
        double t0 = now_sec();
        backend *pair[2] = { ref, b };
        op_check_all(pair, rows[i]->name);
        printf("note: %s checked in %.1f s\n", rows[i]->name, now_sec() - t0);
        backend_destroy(b);
        tested++;
    }
    CHECK(tested > 0, "no backend besides %s could be made", ref->name);
    backend_destroy(ref);
    return test_finish();
}
