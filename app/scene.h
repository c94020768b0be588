// Scenes: files of command-language lines, replayed with timing. Loading parses and validates
// every line (following includes) before anything runs.
#ifndef CABIN_SCENE_H
#define CABIN_SCENE_H

#include "app/app.h"

#include <stdint.h>

typedef struct scene {
    cmd_line *lines;
    int n, cap;
    char **paths;          // every file read (owned; lines point at these names)
    int n_paths;
    uint64_t bytes;        // read so far, the file and its includes (a scene's limit counts all)
} scene;

// Loads FILE and its includes. On error nothing is kept and err says "FILE:LINE: ...".
int scene_load(scene *sc, const char *path, errbuf *err);
void scene_free(scene *sc);
// Runs every line; stops at the first error (and, with c->check, the first failed expectation).
int scene_run(scene *sc, app_ctx *c, errbuf *err);

#endif
