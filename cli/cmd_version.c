// cabin version (and cabin --version): the release, the commit, the layers this build has and
// the CPU kernel tables it carries, with the one this machine would use.
#include "cli/commands.h"
#include "audio/audio.h"
#include "base/version.h"
#include "engine/backend.h"
#include "engine/cpu/kernels.h"
#include "sdl/gui.h"

#include <stdio.h>
#include <string.h>

static const cmd_spec VERSION_SPEC = {
    "cabin version", "cabin version (or cabin --version)",
    "The version, the commit it was built from, the layers of this build (Vulkan, audio,\n"
    "window) and the CPU kernel tables, with the one `--kernels auto` takes on this machine.\n",
};

int cmd_version(int argc, char **argv) {
    int prc = opts_parse(&VERSION_SPEC, NULL, 0, argc, argv);
    if (prc) return prc == OPTS_DONE ? 0 : prc;
    printf("cabin %s (commit %s)\n", CABIN_VERSION, cabin_commit());
    const char *backends = backend_names();
    printf("backends:    %s\n", backends);
    printf("vulkan:      %s\n", strstr(backends, "vulkan") ? "built in (cabin devices lists the devices)"
                                                           : "built without Vulkan (make VULKAN=1)");
    printf("audio:       %s\n", audio_built_in() ? "built in: PortAudio, pocketsphinx, espeak-ng" : AUDIO_OFF_MSG);
    char why[160];
    printf("window:      %s\n", gui_available(why, sizeof why) ? "built in: SDL2, SDL2_ttf" : why);
    // Every table is compiled in; the ones this processor (and OS) can run are marked.
    const cpu_kernels *pick = cpu_kernels_select("auto");
    const cpu_kernels *tables[] = { cpu_kernels_avx512(), cpu_kernels_avx2(), cpu_kernels_scalar() };
    const char *names[] = { "avx512", "avx2", "scalar" };
    printf("cpu kernels:");
    for (int i = 0; i < 3; i++)
        printf("%s %s (%s)", i ? "," : "", names[i],
               !tables[i] ? "not on this cpu" : tables[i] == pick ? "runs here, auto takes it" : "runs here");
    printf("\n");
    if (cpu_kernels_avx512_bf16())   // which BF16 kernels the avx512 table runs, timed at startup
        printf("avx512 bf16: %s\n", cpu_kernels_avx512() == cpu_kernels_avx512_bf16()
                                        ? "vdpbf16ps (AVX-512 BF16; faster than the FMA kernels here)"
                                        : "FMA kernels (faster here than AVX-512 BF16's vdpbf16ps)");
    if (tables[0]) {   // the avx512 table's prefill kernels: AMX where the processor has it and the OS allows it
        const cpu_features *f = cpu_get_features();
        if (tables[0]->prefill_min_tokens)
            printf("avx512 amx:  F16 and BF16 prefill on AMX tiles (%d tokens or more at a time)\n", tables[0]->prefill_min_tokens);
        else
            printf("avx512 amx:  not used (%s)\n", !f->amx_tile_advertised ? "this cpu has no AMX"
                                                   : !f->amx_bf16           ? "this cpu's AMX has no BF16"
                                                                            : "the OS did not grant the tile state");
    }
    return 0;
}
