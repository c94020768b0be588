// cabin devices: the Vulkan devices this machine offers, numbered as --device takes them.
#include "app/commands.h"
#include "vulkan/vulkan_backend.h"

#include <stdio.h>
#include <string.h>

int cmd_devices(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: cabin devices\n\n"
                   "Lists the Vulkan devices: index (for --backend vulkan --device N), name, type,\n"
                   "driver, memory heaps, subgroup size and the shader features cabin uses.\n"
                   "Without --device, the Vulkan backend picks a discrete GPU, then an integrated\n"
                   "one, then any other, then a CPU implementation (lavapipe).\n");
            return 0;
        }
        fprintf(stderr, "cabin devices: unknown option '%s'\n", argv[i]);
        return 2;
    }
    errbuf err = {{0}};
    if (backend_vulkan_list_devices(stdout, &err)) {
        fprintf(stderr, "cabin devices: %s\n", err.msg);
        return 1;
    }
    return 0;
}
