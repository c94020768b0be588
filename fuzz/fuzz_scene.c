// The command language and scene files: every line of the input through cmdlang_parse (as scene
// files, the workbench and chat offer commands), then the whole input as a scene file
// (scene_load, includes followed) written into a temporary directory that the target works in.
// Validation reads files that lines name (`plan load FILE`, `precision FILE`), so an input is
// only taken when every word with a '/' is a /regex/ without another '/': relative names then
// stay inside the temporary directory.
#include "fuzz/fuzz.h"
#include "app/cmdlang.h"
#include "app/scene.h"

#include <ctype.h>
#include <unistd.h>

static char scene_dir[64];

// At exit: the one file the target writes, then its directory.
static void remove_scene_dir(void) {
    if (chdir("/") == 0) {
        char path[96];
        snprintf(path, sizeof path, "%s/fuzz.scene", scene_dir);
        unlink(path);
        rmdir(scene_dir);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    snprintf(scene_dir, sizeof scene_dir, "/tmp/cabin-fuzz-scene-XXXXXX");
    FUZZ_CHECK(mkdtemp(scene_dir) != NULL, "mkdtemp %s", scene_dir);
    FUZZ_CHECK(chdir(scene_dir) == 0, "chdir %s", scene_dir);
    atexit(remove_scene_dir);
    return 0;
}

// Every whitespace-separated word that holds a '/' is "/X/" with no '/' in X.
static int paths_stay_inside(const char *s) {
    while (*s) {
        while (*s && isspace((unsigned char)*s)) s++;
        const char *w = s;
        int slashes = 0;
        while (*s && !isspace((unsigned char)*s)) slashes += *s++ == '/';
        size_t len = (size_t)(s - w);
        if (slashes && !(slashes == 2 && len > 2 && w[0] == '/' && w[len - 1] == '/')) return 0;
    }
    return 1;
}

static void parse_lines(char *text) {
    static const unsigned fronts[] = { CMD_IN_SCENE, CMD_IN_WORKBENCH, CMD_IN_CHAT };
    int line_no = 0;
    for (char *p = text; p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        line_no++;
        for (size_t f = 0; f < sizeof fronts / sizeof fronts[0]; f++) {
            errbuf err = {{0}};
            cmd_line l;
            int r = cmdlang_parse(p, "fuzz.scene", line_no, fronts[f], &l, &err);
            FUZZ_CHECK(r >= -1 && r <= 1, "cmdlang_parse gave %d", r);
            if (r > 0) {
                FUZZ_CHECK(l.def != NULL && l.argc >= 0 && l.argc <= CMD_MAX_ARGS, "argc %d", l.argc);
                cmdlang_free(&l);
            } else if (r < 0) {
                FUZZ_CHECK(err.msg[0] != 0, "a refused line says why");
            }
        }
        if (nl) *nl = '\n';
        p = nl ? nl + 1 : NULL;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (memchr(data, 0, size)) return 0;   // scene files are text; scene_load refuses NUL itself
    char *text = fuzz_text(data, size);
    if (!paths_stay_inside(text)) { free(text); return 0; }
    parse_lines(text);
    FILE *f = fopen("fuzz.scene", "wb");
    FUZZ_CHECK(f != NULL, "%s/fuzz.scene: cannot write", scene_dir);
    FUZZ_CHECK(fwrite(data, 1, size, f) == size && fclose(f) == 0, "%s/fuzz.scene: write", scene_dir);
    scene sc;
    errbuf err = {{0}};
    if (scene_load(&sc, "fuzz.scene", &err) == 0) scene_free(&sc);
    else FUZZ_CHECK(err.msg[0] != 0, "a refused scene says why");
    free(text);
    return 0;
}
