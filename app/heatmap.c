// Heat maps measured and loaded the one way every front end uses (see heatmap.h).
#include "app/heatmap.h"
#include "engine/wtype.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void heatmap_args(int argc, char *const *argv, uint32_t *type, const char **file) {
    *type = WT_Q4_0;
    *file = NULL;
    for (int i = 0; i < argc; i++) {
        int t = wtype_from_name(argv[i]);
        if (t >= 0 && access(argv[i], R_OK) != 0) *type = (uint32_t)t;
        else *file = argv[i];
    }
}

bool heatmap_is_map(const char *path) {
    size_t n = strlen(path);
    return n > 5 && strcasecmp(path + n - 5, ".json") == 0;
}

int heatmap_load(sensitivity_map *m, int n_layer, uint32_t type, const char *path, errbuf *err) {
    sensitivity_map_init(m, n_layer, type);
    char *js = read_file_all(path, NULL, err);
    int rc = js ? sensitivity_from_json(m, js, err) : -1;
    free(js);
    if (rc) sensitivity_map_free(m);
    return rc;
}

int heatmap_measure(session *s, const char *text, const heatmap_opts *o, sensitivity_map *m, errbuf *err) {
    int32_t *ids = NULL;
    int n = session_tokenize(s, text, false, &ids, err);
    if (n < 0) return -1;
    if (o->max_tokens > 0 && n > o->max_tokens) n = o->max_tokens;
    int ctx = o->ctx_fits_text && n < o->ctx ? n : o->ctx;
    sensitivity_map_init(m, session_model(s)->hp.n_layer, o->type);
    int rc = sensitivity_run(s, ids, n, ctx, o->max_windows, o->progress, o->ud, m, err);
    free(ids);
    if (rc) sensitivity_map_free(m);
    return rc;
}
