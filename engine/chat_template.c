#include "chat_template.h"
#include "base/base.h"

#include <stdio.h>
#include <string.h>

static const chat_template templates[] = {
    { "llama-3", "<|start_header_id|>system<|end_header_id|>\n\n", "<|eot_id|>",
      "<|start_header_id|>user<|end_header_id|>\n\n",
      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", "", false, false },
    { "chatml", "<|im_start|>system\n", "<|im_end|>\n", "<|im_start|>user\n",
      "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>", "\n", false, false },
    { "llama-2", "<<SYS>>\n", "\n<</SYS>>\n\n", "[INST] ", " [/INST]", "</s>", "", true, true },
    { "zephyr", "<|system|>\n", "</s>\n", "<|user|>\n", "</s>\n<|assistant|>\n", "</s>", "\n", false, false },
    { "phi-3", "<|system|>\n", "<|end|>\n", "<|user|>\n", "<|end|>\n<|assistant|>\n", "<|end|>", "\n", false, false },
    { "plain", "", "\n\n", "User: ", "\nAssistant:", "", "\n", false, false },
};
#define N_TEMPLATES (sizeof templates / sizeof templates[0])

const chat_template *chat_template_by_name(const char *name) {
    for (size_t i = 0; i < N_TEMPLATES; i++)
        if (strcmp(templates[i].name, name) == 0) return &templates[i];
    return NULL;
}

const char *chat_template_names(void) { return "llama-3, chatml, llama-2, zephyr, phi-3, plain"; }

const chat_template *chat_template_detect(const char *src) {
    if (!src) return chat_template_by_name("plain");
    if (strstr(src, "<|start_header_id|>")) return chat_template_by_name("llama-3");
    if (strstr(src, "<|im_start|>")) return chat_template_by_name("chatml");
    if (strstr(src, "<|user|>") && strstr(src, "<|end|>")) return chat_template_by_name("phi-3");
    if (strstr(src, "<|user|>")) return chat_template_by_name("zephyr");
    if (strstr(src, "[INST]")) return chat_template_by_name("llama-2");
    return chat_template_by_name("plain");
}

char *chat_template_render_turn(const chat_template *t, const char *system, const char *user,
                                bool first, bool close_previous) {
    bool has_sys = system && *system;
    size_t cap = strlen(user) + (has_sys ? strlen(system) : 0) + 256;
    char *out = xmalloc(cap);
    size_t n = 0;
#define PUT(s) do { size_t l_ = strlen(s); memcpy(out + n, s, l_); n += l_; } while (0)
    if (!first) {
        if (close_previous) PUT(t->assistant_end);
        PUT(t->after_assistant);
        if (t->bos_each_turn) PUT("<s>");
    }
    if (t->system_in_first_user) {
        PUT(t->user_prefix);
        if (first && has_sys) { PUT(t->system_prefix); PUT(system); PUT(t->system_suffix); }
    } else {
        if (first && has_sys) { PUT(t->system_prefix); PUT(system); PUT(t->system_suffix); }
        PUT(t->user_prefix);
    }
    PUT(user);
    PUT(t->user_suffix);
#undef PUT
    out[n] = 0;
    return out;
}
