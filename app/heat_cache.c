// The cache of sensitivity maps (see heat_cache.h).
#include "app/heat_cache.h"
#include "base/afile.h"
#include "base/dirs.h"
#include "base/str.h"
#include "base/version.h"
#include "engine/wtype.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SAMPLES 16                // places of the model file whose bytes go into its content hash
#define SAMPLE_BYTES (64 << 10)   // bytes read at each: 1 MiB in all, whatever the file's size

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}
#define FNV_START 1469598103934665603ull

// A hash of the file's content: all of it when small, else SAMPLES spans spread over it (the
// header with the tensor table, and weights from start to end). A rewritten model file with the
// same size and time stamp gets another hash.
static int content_hash(const char *path, uint64_t size, uint64_t *out, errbuf *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return err_set(err, "%s: %s", path, strerror(errno));
    unsigned char *buf = malloc(SAMPLE_BYTES);
    uint64_t h = FNV_START;
    int rc = 0;
    for (int i = 0; i < SAMPLES && buf && !rc; i++) {
        uint64_t off = size <= (uint64_t)SAMPLES * SAMPLE_BYTES ? (uint64_t)i * SAMPLE_BYTES
                                                                 : (size - SAMPLE_BYTES) / (SAMPLES - 1) * (uint64_t)i;
        if (off >= size) break;
        if (fseeko(f, (off_t)off, SEEK_SET) != 0) { rc = err_set(err, "%s: %s", path, strerror(errno)); break; }
        size_t got = fread(buf, 1, SAMPLE_BYTES, f);
        h = fnv(h, buf, got);
    }
    if (!buf) rc = err_set(err, "out of memory hashing %s", path);
    free(buf);
    fclose(f);
    *out = h;
    return rc;
}

int heat_cache_find(heat_cache_entry *e, const char *model_path, uint32_t type, const char *text, int tokens,
                    int window, errbuf *err) {
    memset(e, 0, sizeof *e);
    struct stat st;
    if (stat(model_path, &st) != 0) return err_set(err, "%s: %s", model_path, strerror(errno));
    uint64_t content = 0;
    if (content_hash(model_path, (uint64_t)st.st_size, &content, err)) return -1;
    const char *base = strrchr(model_path, '/');
    base = base ? base + 1 : model_path;
    snprintf(e->key, sizeof e->key, "model %.200s size %lld mtime %lld.%09ld content %016llx; type %s; text %016llx "
             "(%zu bytes), tokens %d, window %d; cabin %s", base, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec, (unsigned long long)content, wtype_name(type),
             (unsigned long long)fnv(FNV_START, text, strlen(text)), strlen(text), tokens, window, CABIN_VERSION);
    char name[400];
    snprintf(name, sizeof name, "heatmaps/%.200s-%016llx.json", base, (unsigned long long)fnv(FNV_START, e->key, strlen(e->key)));
    user_file_path("XDG_CACHE_HOME", ".cache", name, e->path, sizeof e->path);
    return 0;
}

int heat_cache_load(const heat_cache_entry *e, sensitivity_map *m, int n_layer, uint32_t type, errbuf *err) {
    sensitivity_map_init(m, n_layer, type);
    if (!e->path[0]) return err_set(err, "no cache folder ($XDG_CACHE_HOME or $HOME)");
    char *js = read_file_all(e->path, NULL, err);
    if (!js) { sensitivity_map_free(m); return -1; }
    int rc = 0;
    cJSON *root = cJSON_Parse(js);
    const cJSON *key = root ? cJSON_GetObjectItemCaseSensitive(root, "cache_key") : NULL;
    if (!cJSON_IsString(key) || strcmp(key->valuestring, e->key) != 0)
        rc = err_set(err, "%s: made for something else (its key is not this model, type, text and cabin's)", e->path);
    else if (sensitivity_from_json(m, js, err))
        rc = err_prefix(err, "%s", e->path);
    for (int i = 0; !rc && i < n_layer * TK_LAYER_KINDS; i++) {
        const sens_cell *c = &m->cells[i];
        if (!c->done) rc = err_set(err, "%s: incomplete (layer %d)", e->path, i / TK_LAYER_KINDS);
        else if (!isfinite(c->kl_mean) || !isfinite(c->kl_max) || !isfinite(c->dnll) || c->kl_mean < 0)
            rc = err_set(err, "%s: a figure that is not a number (layer %d)", e->path, i / TK_LAYER_KINDS);
    }
    cJSON_Delete(root);
    free(js);
    if (rc) sensitivity_map_free(m);
    return rc;
}

int heat_cache_save(const heat_cache_entry *e, const sensitivity_map *m, errbuf *err) {
    if (!e->path[0]) return err_set(err, "no cache folder ($XDG_CACHE_HOME or $HOME)");
    char *js = sensitivity_to_json(m);
    cJSON *root = js ? cJSON_Parse(js) : NULL;
    free(js);
    if (!root) return err_set(err, "the map did not make JSON");
    cJSON_AddStringToObject(root, "cache_key", e->key);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    int rc = afile_write_all(e->path, out, strlen(out), err);
    free(out);
    return rc;
}
