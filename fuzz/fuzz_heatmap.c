// Sensitivity heat maps: sensitivity_from_json on any text, for a map of 2 layers at q4_0 (the
// shape of the seeds); a map that loads is written back (sensitivity_to_json) and must load again.
#include "fuzz/fuzz.h"
#include "engine/sensitivity.h"
#include "engine/wtype.h"

#define MAP_LAYERS 2

int LLVMFuzzerInitialize(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fuzz_text(data, size);
    sensitivity_map m;
    sensitivity_map_init(&m, MAP_LAYERS, WT_Q4_0);
    errbuf err = {{0}};
    if (sensitivity_from_json(&m, text, &err) == 0) {
        char *js = sensitivity_to_json(&m);
        FUZZ_CHECK(js != NULL, "sensitivity_to_json");
        sensitivity_map m2;
        sensitivity_map_init(&m2, MAP_LAYERS, WT_Q4_0);
        FUZZ_CHECK(sensitivity_from_json(&m2, js, &err) == 0, "%s: %s", js, err.msg);
        sensitivity_map_free(&m2);
        free(js);
    } else {
        FUZZ_CHECK(err.msg[0] != 0, "a refused map says why");
    }
    sensitivity_map_free(&m);
    free(text);
    return 0;
}
