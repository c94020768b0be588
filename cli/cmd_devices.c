// cabin devices: the backends this build has (the registry) and the devices of each backend
// that has several, numbered as --device takes them.
#include "cli/commands.h"
#include "audio/audio.h"
#include "engine/backend.h"

#include <stdio.h>
#include <string.h>

static const char *caps_text(unsigned caps, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s%s", caps & BACKEND_CAP_HOST_WEIGHTS ? "host-weights " : "",
             caps & BACKEND_CAP_HOST_KV ? "host-kv " : "", caps & BACKEND_CAP_DEVICES ? "devices " : "");
    size_t n = strlen(buf);
    if (n) buf[n - 1] = 0;
    return buf;
}

static const cmd_spec DEVICES_SPEC = {
    "cabin devices", "cabin devices",
    "Lists the backends this cabin was built with (--backend NAME; auto takes the\n"
    "first) and their capabilities, whether it has audio (make AUDIO=0 builds it\n"
    "without; tests read that line), then the devices of each backend that has several:\n"
    "index (for --backend vulkan --device N), name, type, driver, memory heaps,\n"
    "subgroup size and the shader features cabin uses. Without --device, the Vulkan\n"
    "backend picks a discrete GPU, then an integrated one, then any other, then a CPU\n"
    "implementation (lavapipe). Exits 1 when a backend cannot list its devices.\n",
};

int cmd_devices(int argc, char **argv) {
    int prc = opts_parse(&DEVICES_SPEC, NULL, 0, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    const backend_info *const *rows;
    int n = backend_registry(&rows);
    char caps[64];
    printf("backends (--backend NAME; auto = %s):\n", n > 0 ? rows[0]->name : "none");
    for (int i = 0; i < n; i++)
        printf("  %-12s %-24s %s\n", rows[i]->name, caps_text(rows[i]->caps, caps, sizeof caps), rows[i]->summary);
    printf("audio: %s\n", audio_built_in() ? "built in (cabin audio devices lists its devices)" : AUDIO_OFF_MSG);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (!rows[i]->list_devices) continue;
        printf("%s devices:\n", rows[i]->name);
        fflush(stdout);
        errbuf err = {{0}};
        if (rows[i]->list_devices(stdout, &err)) {
            fprintf(stderr, "cabin devices: %s\n", err.msg);
            rc = 1;
        }
    }
    return rc;
}
