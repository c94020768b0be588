// Chat templates, recognised from tokenizer.chat_template (or chosen by name). Rendering is
// incremental: each user turn yields the text to append after what the cache already holds.
#ifndef CABIN_CHAT_TEMPLATE_H
#define CABIN_CHAT_TEMPLATE_H

#include <stdbool.h>

typedef struct chat_template {
    const char *name;            // "llama-3", "chatml", "llama-2", "zephyr", "phi-3", "cabin", "plain"
    const char *system_prefix, *system_suffix;
    const char *user_prefix;
    const char *user_suffix;     // ends with the assistant header
    const char *assistant_end;   // the text (usually one special token) that closes a reply
    const char *after_assistant; // text between a closed reply and the next user turn
    bool system_in_first_user;   // llama-2: <<SYS>> block inside the first [INST]
    bool bos_each_turn;          // llama-2: every turn starts with <s>
} chat_template;

const chat_template *chat_template_detect(const char *jinja_source);   // NULL source -> plain
const chat_template *chat_template_by_name(const char *name);          // NULL if unknown
const char *chat_template_names(void);                                 // for help text

// Text for one user turn (malloc'd). first: the conversation is empty (system goes here).
// close_previous: the previous reply ended without its assistant_end token in the cache.
char *chat_template_render_turn(const chat_template *t, const char *system, const char *user,
                                bool first, bool close_previous);

#endif
