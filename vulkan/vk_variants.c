// The shader variants the backend asks for, checked against those the build embedded. The
// Makefile's vk_variant lines make the SPIR-V; backend_vulkan.c's name_pipes names what it will
// ask for; a name missing from the table would fail only on first use, on a device, at run time.
// tools/vk_variants_check runs this on every build, so such a mismatch fails the build instead.
#include "vulkan/vk.h"
#include "vulkan/vk_spv.h"

#include <string.h>

static bool embedded(const char *name) {
    for (int i = 0; i < vk_spv_count; i++)
        if (strcmp(vk_spv_table[i].name, name) == 0) return true;
    return false;
}

// Missing names among one backend's pipelines, each printed once (several pipelines share a
// variant and differ in specialization constants).
static int check_backend(vk_backend *v, bool subgroup_arith, FILE *out) {
    vk_pipe *all[VK_MAX_PIPES];
    int n = vk_backend_pipes(v, all), missing = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(all[j]->name, all[i]->name) == 0;
        if (seen || embedded(all[i]->name)) continue;
        fprintf(out, "vulkan: the backend asks for shader variant '%s' (%s), which the build does not make "
                     "(Makefile: vk_variant lines)\n", all[i]->name,
                subgroup_arith ? "subgroup reductions" : "shared-memory reductions");
        missing++;
    }
    return missing;
}

// The number of variant names the backend asks for that the embedded table lacks (each printed
// to out); 0 too when the build had no glslc (then the backend refuses to start and says why).
int vk_variants_missing(FILE *out) {
    if (vk_spv_count == 0) return 0;
    int missing = 0;
    for (int sg = 0; sg < 2; sg++) {
        backend *b = vk_backend_names_only(sg == 1);
        missing += check_backend(b->impl, sg == 1, out);
        b->destroy(b);
    }
    return missing;
}
