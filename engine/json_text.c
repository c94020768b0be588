// cJSON trees as caller-owned text (engine/json_text.h).
#include "engine/json_text.h"
#include "base/mem.h"

#include <cjson/cJSON.h>
#include <string.h>

char *json_text(cJSON *root, bool newline) {
    char *t = cJSON_Print(root);
    cJSON_Delete(root);
    size_t n = t ? strlen(t) : 0;
    char *out = xmalloc(n + 2);
    if (t) memcpy(out, t, n);
    if (newline) out[n++] = '\n';
    out[n] = 0;
    cJSON_free(t);
    return out;
}
