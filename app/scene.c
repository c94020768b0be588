#include "app/scene.h"

#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_INCLUDE_DEPTH 16
#define MAX_SCENE_BYTES (4u << 20)   // a scene file, read whole: 4 MiB
#define MAX_LINE_BYTES (64u << 10)   // one line (a `say` of a few thousand words)

static int load_file(scene *sc, const char *path, const char *const *stack, int depth, errbuf *err) {
    char real[PATH_MAX];
    if (!realpath(path, real)) return err_set(err, "%s: file not found", path);
    for (int i = 0; i < depth; i++)
        if (strcmp(stack[i], real) == 0) return err_set(err, "%s: include loop (the file includes itself)", path);
    if (depth >= MAX_INCLUDE_DEPTH) return err_set(err, "%s: includes nested more than %d deep", path, MAX_INCLUDE_DEPTH);
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) return err_set(err, "%s: not a regular file", path);
    if ((uint64_t)st.st_size + sc->bytes > MAX_SCENE_BYTES)   // its includes count too
        return err_set(err, "%s: %lld bytes, more than a scene may hold (%u MiB with its includes)", path,
                       (long long)st.st_size + (long long)sc->bytes, MAX_SCENE_BYTES >> 20);
    size_t len;
    char *text = read_file_all(path, &len, err);
    if (!text) return -1;
    sc->bytes += len;
    if (sc->bytes > MAX_SCENE_BYTES) {   // it grew since stat
        free(text);
        return err_set(err, "%s: more than a scene may hold (%u MiB with its includes)", path, MAX_SCENE_BYTES >> 20);
    }
    if (memchr(text, 0, len)) { free(text); return err_set(err, "%s: not a text file", path); }
    sc->paths = xrealloc(sc->paths, (size_t)(sc->n_paths + 1) * sizeof(char *));
    char *name = sc->paths[sc->n_paths++] = xstrdup(path);
    const char *new_stack[MAX_INCLUDE_DEPTH + 1];
    for (int i = 0; i < depth; i++) new_stack[i] = stack[i];
    new_stack[depth] = real;
    int rc = 0, line_no = 0;
    char *save = NULL;
    // split keeping empty lines counted
    char *p = text;
    while (p && !rc) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        line_no++;
        size_t ll = strlen(p);
        if (ll > MAX_LINE_BYTES) {
            rc = err_set(err, "%s:%d: a line of %zu bytes, longer than a scene line may be (%u KiB)", name, line_no, ll,
                         MAX_LINE_BYTES >> 10);
            break;
        }
        (void)save;
        cmd_line l;
        int r = cmdlang_parse(p, name, line_no, CMD_IN_SCENE, &l, err);
        if (r < 0) { rc = -1; break; }
        if (r > 0 && strcmp(l.def->name, "include") == 0) {
            // resolved relative to the including file
            char *dirbuf = xstrdup(path);
            char inc[PATH_MAX];
            if (l.argv[0][0] == '/') snprintf(inc, sizeof inc, "%s", l.argv[0]);
            else snprintf(inc, sizeof inc, "%s/%s", dirname(dirbuf), l.argv[0]);
            free(dirbuf);
            errbuf inner = {{0}};
            if (load_file(sc, inc, new_stack, depth + 1, &inner)) {
                rc = err_set(err, "%s:%d: include %s: %s", name, line_no, l.argv[0], inner.msg);
            }
            cmdlang_free(&l);
        } else if (r > 0) {
            if (sc->n == sc->cap) {
                sc->cap = sc->cap ? sc->cap * 2 : 32;
                sc->lines = xrealloc(sc->lines, (size_t)sc->cap * sizeof(cmd_line));
            }
            sc->lines[sc->n++] = l;
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    return rc;
}

int scene_load(scene *sc, const char *path, errbuf *err) {
    memset(sc, 0, sizeof *sc);
    if (load_file(sc, path, NULL, 0, err)) { scene_free(sc); return -1; }
    return 0;
}

void scene_free(scene *sc) {
    for (int i = 0; i < sc->n; i++) cmdlang_free(&sc->lines[i]);
    free(sc->lines);
    for (int i = 0; i < sc->n_paths; i++) free(sc->paths[i]);
    free(sc->paths);
    memset(sc, 0, sizeof *sc);
}

int scene_run(scene *sc, app_ctx *c, errbuf *err) {
    for (int i = 0; i < sc->n && !c->quit; i++) {
        cmd_line *l = &sc->lines[i];
        char echo[600];
        snprintf(echo, sizeof echo, "> %s%s%s", l->def->name, l->rest[0] ? " " : "", l->rest);
        app_print(c, "%s", echo);
        if (cmdlang_run(c, l, err)) {
            if (strncmp(err->msg, l->file, strlen(l->file)) != 0) err_prefix(err, "%s:%d", l->file, l->line);
            return -1;
        }
    }
    return 0;
}
