// Build-time check: every shader variant the Vulkan backend asks for is embedded
// (vulkan/vk_variants.c). Exits 1, naming each missing variant, when one is not.
#include "vulkan/vk.h"

int main(void) {
    int missing = vk_variants_missing(stderr);
    if (missing) {
        fprintf(stderr, "vk_variants_check: %d shader variant%s missing; the build stops here\n", missing,
                missing == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
