#include "backend.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[OP_COUNT] = {
    "embed", "rmsnorm", "matmul", "bias", "rope", "kv_store", "attention", "glu", "add", "scale",
};

const char *op_kind_name(enum op_kind k) { return k < OP_COUNT ? op_names[k] : "?"; }

// The registry: one row per backend, in order of preference ("auto" takes the first). A
// backend's row is its `backend_info`, defined in its own folder. A backend outside engine/ is
// declared weak here, so a program linked without it (VULKAN=0, or a test that needs no
// device) has a NULL row, which is left out.
extern const backend_info backend_vulkan_info __attribute__((weak));   // vulkan/backend_vulkan.c

static const backend_info *const registry_rows[] = {
    &backend_cpu_info,
    &backend_cpu_scalar_info,
    &backend_vulkan_info,
};
#define N_REGISTRY_ROWS (sizeof registry_rows / sizeof registry_rows[0])

// The rows this program has, and their names for messages: made once, by the first caller.
static const backend_info *present[N_REGISTRY_ROWS];
static int n_present;
static char names[256];
static pthread_once_t registry_once = PTHREAD_ONCE_INIT;

static void registry_make(void) {
    for (size_t i = 0; i < N_REGISTRY_ROWS; i++)
        if (registry_rows[i]) present[n_present++] = registry_rows[i];
    size_t k = (size_t)snprintf(names, sizeof names, "auto");
    for (int i = 0; i < n_present && k < sizeof names; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, ", %s", present[i]->name);
}

int backend_registry(const backend_info *const **rows) {
    pthread_once(&registry_once, registry_make);
    *rows = present;
    return n_present;
}

const backend_info *backend_find(const char *name) {
    const backend_info *const *rows;
    int n = backend_registry(&rows);
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i]->name, name) == 0) return rows[i];
    return NULL;
}

const char *backend_names(void) {
    pthread_once(&registry_once, registry_make);
    return names;
}

int backend_check_name(const char *name, errbuf *err) {
    if (strcmp(name, "auto") == 0 || backend_find(name)) return 0;
    return err_set(err, "unknown backend '%s' (available: %s)", name, backend_names());
}

backend *backend_create(const backend_opts *o, errbuf *err) {
    const char *name = o && o->name ? o->name : "auto";
    const backend_info *const *rows;
    const backend_info *row = NULL;
    if (strcmp(name, "auto") == 0) {
        if (backend_registry(&rows) > 0) row = rows[0];
    } else {
        row = backend_find(name);
    }
    if (!row) {
        if (backend_check_name(name, err) == 0) err_set(err, "no backend is built in");
        return NULL;
    }
    // create names the backend and sets its caps (the cpu row's kernels=scalar is "cpu-scalar")
    backend_opts defaults = {0};
    return row->create(o ? o : &defaults, err);
}

void backend_destroy(backend *b) {
    if (b) b->destroy(b);
}
