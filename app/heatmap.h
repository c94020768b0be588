// Sensitivity heat maps (engine/sensitivity.h) as cabin's front ends take them: `cabin heatmap`,
// the command language's `heatmap` (scenes), and the workbench's `:heatmap` (run aside) all
// measure with heatmap_measure and load a map written by `cabin heatmap --json` with
// heatmap_load.
#ifndef CABIN_APP_HEATMAP_H
#define CABIN_APP_HEATMAP_H

#include "engine/sensitivity.h"
#include "engine/session.h"

#include <stdbool.h>
#include <stdint.h>

// The command language's arguments, [TYPE] [FILE] in any order: a weight type (default q4_0)
// and a file, a map to load when it ends in .json, else a text to measure on (NULL: none).
// Checked by the parser already; an argument that is a type and no readable file is the type.
void heatmap_args(int argc, char *const *argv, uint32_t *type, const char **file);
bool heatmap_is_map(const char *path);   // ends in .json

// Loads a map (JSON from sensitivity_to_json) into m, made for n_layer layers at type.
int heatmap_load(sensitivity_map *m, int n_layer, uint32_t type, const char *path, errbuf *err);

typedef struct heatmap_opts {
    uint32_t type;            // the type each tensor is tried at
    int max_tokens;           // the text's first tokens used (0: all)
    int ctx;                  // window in tokens
    bool ctx_fits_text;       // a text shorter than ctx shrinks the window (else sensitivity_run
                              // says it is too short)
    int max_windows;          // 0: every window
    sens_progress_fn progress;   // may be NULL
    void *ud;
} heatmap_opts;

// Tokenizes text with s's tokenizer and measures every (layer, tensor kind) on it: m is made
// (sensitivity_map_init) and filled. 0, or -1 with err (m then freed).
int heatmap_measure(session *s, const char *text, const heatmap_opts *o, sensitivity_map *m, errbuf *err);

#endif
