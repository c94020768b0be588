// Chat templates, recognised from tokenizer.chat_template (or chosen by name). Rendering is
// incremental: each user turn yields the text to append after what the cache already holds, so
// a conversation is prefilled once, never re-rendered. docs/TEMPLATES.md lists the templates,
// what each renders, and where cabin's rendering departs from a file's Jinja source.
#ifndef CABIN_CHAT_TEMPLATE_H
#define CABIN_CHAT_TEMPLATE_H

#include <stdbool.h>

// One conversation in a template, turn by turn (BOS comes from the tokenizer, not from here):
//   first turn:  [system block] user_prefix USER user_suffix      (system_in_first_user: the
//                system block goes after user_prefix, inside the first user turn)
//   the reply:   the model writes it, and assistant_end (usually one special token) closes it
//   next turns:  after_assistant ["<s>" if bos_each_turn] user_prefix USER user_suffix
// system block: system_prefix SYSTEM system_suffix.
typedef struct chat_template {
    const char *name;            // "gemma", "llama-3", "chatml", ... (chat_template_names)
    const char *system_prefix, *system_suffix;
    const char *user_prefix;
    const char *user_suffix;     // ends with the assistant header
    const char *assistant_end;   // the text (usually one special token) that closes a reply
    const char *after_assistant; // text between a closed reply and the next user turn
    bool system_in_first_user;   // llama-2, gemma, mistral [INST]: no system turn of its own
    bool bos_each_turn;          // llama-2: every turn starts with <s>
    bool system_always;          // llama-3.1: the system block is there even with no system text
    bool trim;                   // the user and system texts are trimmed (Jinja's | trim)
} chat_template;

// The template a tokenizer.chat_template source is recognised as, or NULL when the source is
// NULL or none matches.
const chat_template *chat_template_match(const char *jinja_source);
const chat_template *chat_template_by_name(const char *name);          // NULL if unknown
// The template a file chats in when none is named, the one rule for every front end: its
// tokenizer.chat_template's family (src); for a file without one, its architecture's (arch
// "gemma3": Gemma's turns); else plain. *unrecognised (may be NULL): the file has a template
// cabin does not recognise, and so chats in plain.
const chat_template *chat_template_for_file(const char *src, const char *arch, bool *unrecognised);
const char *chat_template_names(void);                                 // "gemma, llama-3, ..."
int chat_template_count(void);
const chat_template *chat_template_at(int i);                          // 0 <= i < count

// The system text a file's template renders when the conversation has none (Qwen2.5's "You are
// Qwen, created by Alibaba Cloud. ...", SmolLM2's): a literal in the source written as t's system
// block, e.g. '<|im_start|>system\nTEXT<|im_end|>\n'. malloc'd, or NULL when there is none.
char *chat_template_default_system(const chat_template *t, const char *jinja_source);

// Text for one user turn (malloc'd). first: the conversation is empty (system goes here).
// close_previous: the previous reply ended without its assistant_end token in the cache.
char *chat_template_render_turn(const chat_template *t, const char *system, const char *user,
                                bool first, bool close_previous);

#endif
