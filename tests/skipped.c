// Stands in for a test this build cannot compile (make VULKAN=0 or AUDIO=0 leaves out the layer
// it needs): prints the reason and the closing line tests/run.sh reads. SKIP_REASON comes from
// the Makefile ("test_vulkan: built without Vulkan (make VULKAN=1)").
#include <stdio.h>

#ifndef SKIP_REASON
#error "SKIP_REASON: the Makefile defines it"
#endif

int main(void) {
    printf("skipped: %s\n", SKIP_REASON);
    printf("0 passed, 0 failed, 1 skipped\n");
    return 0;
}
