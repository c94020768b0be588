// The cache of sensitivity maps (heat maps), shared by `cabin heatmap` and the governor:
// $XDG_CACHE_HOME/cabin/heatmaps/MODEL-KEYHASH.json (else ~/.cache/cabin/heatmaps/).
//
// A map depends on the model file, the type each tensor is tried at, the text it is scored on
// (and how much of it: tokens, window) and the code that measures it; the key covers all of
// these, and an entry whose stored key differs, or that is incomplete or not finite, is not
// used. (The map is always measured against the file's own precision: engine/sensitivity.c.)
#ifndef CABIN_APP_HEAT_CACHE_H
#define CABIN_APP_HEAT_CACHE_H

#include "base/err.h"
#include "engine/sensitivity.h"

#include <stddef.h>
#include <stdint.h>

typedef struct heat_cache_entry {
    char key[512];     // what the map depends on, in words: the file's identity and content hash,
                       // type, text hash, tokens, window, cabin version
    char path[1024];   // where it is kept; "" when there is no cache folder
} heat_cache_entry;

// The entry for a map of model_path at type on text (its first `tokens` tokens, windows of
// `window`; 0: as the caller's default). -1 with err when the model file cannot be read.
int heat_cache_find(heat_cache_entry *e, const char *model_path, uint32_t type, const char *text, int tokens,
                    int window, errbuf *err);
// The cached map (n_layer layers at type): 0, or -1 with err saying why it is not used (missing,
// another key, incomplete, not finite). m is made here and left empty on failure.
int heat_cache_load(const heat_cache_entry *e, sensitivity_map *m, int n_layer, uint32_t type, errbuf *err);
// Keeps a complete map under the entry (whole or not at all). -1 with err.
int heat_cache_save(const heat_cache_entry *e, const sensitivity_map *m, errbuf *err);

#endif
