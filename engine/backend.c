#include "backend.h"

#include <stdlib.h>
#include <string.h>

static const char *const op_names[OP_COUNT] = {
    "embed", "rmsnorm", "matmul", "bias", "rope", "kv_store", "attention", "swiglu", "add",
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

int backend_registry(const backend_info *const **rows) {
    static const backend_info *present[N_REGISTRY_ROWS];
    static int n = -1;
    if (n < 0) {   // the rows are constant, so racing first callers write the same values
        int k = 0;
        for (size_t i = 0; i < N_REGISTRY_ROWS; i++)
            if (registry_rows[i]) present[k++] = registry_rows[i];
        n = k;
    }
    *rows = present;
    return n;
}

const backend_info *backend_find(const char *name) {
    const backend_info *const *rows;
    int n = backend_registry(&rows);
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i]->name, name) == 0) return rows[i];
    return NULL;
}

const char *backend_names(void) {
    static char names[256];
    if (!names[0]) {
        const backend_info *const *rows;
        int n = backend_registry(&rows);
        size_t k = (size_t)snprintf(names, sizeof names, "auto");
        for (int i = 0; i < n && k < sizeof names; i++)
            k += (size_t)snprintf(names + k, sizeof names - k, ", %s", rows[i]->name);
    }
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
        backend_check_name(name, err);
        return NULL;
    }
    backend_opts defaults = {0};
    backend *b = row->create(o ? o : &defaults, err);
    if (b) {
        b->name = row->name;
        b->caps = row->caps;
    }
    return b;
}

void backend_destroy(backend *b) {
    if (b) b->destroy(b);
}
