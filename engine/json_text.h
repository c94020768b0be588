// A cJSON tree as text owned by the caller: the one place that pairs cJSON_Print with the
// allocator cabin frees with (cJSON's may differ) and deletes the tree.
#ifndef CABIN_JSON_TEXT_H
#define CABIN_JSON_TEXT_H

#include <stdbool.h>

struct cJSON;

// root printed (formatted) and deleted; the text is xmalloc'd (free() it), with a '\n' at the
// end when newline.
char *json_text(struct cJSON *root, bool newline);

#endif
