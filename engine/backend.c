#include "backend.h"

#include <stdlib.h>
#include <string.h>

static const char *const op_names[OP_COUNT] = {
    "embed", "rmsnorm", "matmul", "bias", "rope", "kv_store", "attention", "swiglu", "add",
};

const char *op_kind_name(enum op_kind k) { return k < OP_COUNT ? op_names[k] : "?"; }

backend *backend_create(const backend_opts *o, errbuf *err) {
    const char *name = o && o->name ? o->name : "auto";
    int threads = o ? o->n_threads : 0;
    if (strcmp(name, "auto") == 0 || strcmp(name, "cpu") == 0)
        return backend_cpu_new(threads, o && o->kernels ? o->kernels : "auto", err);
    if (strcmp(name, "cpu-scalar") == 0) return backend_cpu_new(threads, "scalar", err);
    if (strcmp(name, "vulkan") == 0) {
        const char *dev = o ? o->device : NULL;
        int index = -1;
        if (dev && *dev && strcmp(dev, "auto") != 0) {
            char *end;
            long v = strtol(dev, &end, 10);
            if (*end || v < 0 || v > 1000) {
                err_set(err, "vulkan: device '%s' is not an index (see cabin devices)", dev);
                return NULL;
            }
            index = (int)v;
        }
        return backend_vulkan_new(index, err);
    }
    err_set(err, "unknown backend '%s' (available: auto, cpu, cpu-scalar, vulkan)", name);
    return NULL;
}

void backend_destroy(backend *b) {
    if (b) b->destroy(b);
}
