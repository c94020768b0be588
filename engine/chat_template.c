#include "chat_template.h"
#include "base/base.h"
#include "base/str.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// DeepSeek's special tokens spell "|" as U+FF5C FULLWIDTH VERTICAL LINE and " " as U+2581
// (SentencePiece's space): <｜User｜>, <｜Assistant｜>, <｜end▁of▁sentence｜>. Separate literals, so
// that no hex escape runs on into the letters after it.
#define FW_BAR "\xEF\xBD\x9C"
#define SP_SPACE "\xE2\x96\x81"
#define DS_USER "<" FW_BAR "User" FW_BAR ">"
#define DS_ASSISTANT "<" FW_BAR "Assistant" FW_BAR ">"
#define DS_EOS "<" FW_BAR "end" SP_SPACE "of" SP_SPACE "sentence" FW_BAR ">"

#define LLAMA3_HEADER(role) "<|start_header_id|>" role "<|end_header_id|>\n\n"

// name, system prefix/suffix, user prefix/suffix, assistant_end, after_assistant, then the flags
// system_in_first_user, bos_each_turn, system_always, trim. Each row renders what the family's
// own template renders for a system text and user turns (docs/TEMPLATES.md says where not).
static const chat_template templates[] = {
    { "gemma", "", "\n\n", "<start_of_turn>user\n", "<end_of_turn>\n<start_of_turn>model\n",
      "<end_of_turn>", "\n", true, false, false, true },
    { "llama-3", LLAMA3_HEADER("system"), "<|eot_id|>", LLAMA3_HEADER("user"),
      "<|eot_id|>" LLAMA3_HEADER("assistant"), "<|eot_id|>", "", false, false, false, true },
    // Llama 3.1, 3.2, 3.3: a system block in every conversation, with the template's knowledge
    // and date lines; the date is the template's own default, so a conversation renders the
    // same on every day.
    { "llama-3.1", LLAMA3_HEADER("system") "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n",
      "<|eot_id|>", LLAMA3_HEADER("user"), "<|eot_id|>" LLAMA3_HEADER("assistant"), "<|eot_id|>", "",
      false, false, true, true },
    { "chatml", "<|im_start|>system\n", "<|im_end|>\n", "<|im_start|>user\n",
      "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>", "\n", false, false, false, false },
    { "phi-4", "<|im_start|>system<|im_sep|>", "<|im_end|>", "<|im_start|>user<|im_sep|>",
      "<|im_end|><|im_start|>assistant<|im_sep|>", "<|im_end|>", "", false, false, false, false },
    { "phi-3", "<|system|>\n", "<|end|>\n", "<|user|>\n", "<|end|>\n<|assistant|>\n", "<|end|>", "\n",
      false, false, false, false },
    { "zephyr", "<|system|>\n", "</s>\n", "<|user|>\n", "</s>\n<|assistant|>\n", "</s>", "\n",
      false, false, false, false },
    { "llama-2", "<<SYS>>\n", "\n<</SYS>>\n\n", "[INST] ", " [/INST]", "</s>", "", true, true, false, true },
    // Mistral's [INST] layouts differ in their spaces. None has a system turn of its own: the
    // system text opens the first user turn, as mistral-common does for tokenizer v1.
    { "mistral", "", "\n\n", "[INST] ", " [/INST]", "</s>", "", true, false, false, false },
    { "mistral-v1", "", "\n\n", " [INST] ", " [/INST]", "</s>", "", true, false, false, false },
    { "mistral-v3", "", "\n\n", "[INST] ", "[/INST]", "</s>", "", true, false, false, false },
    { "mistral-v3-tekken", "", "\n\n", "[INST]", "[/INST]", "</s>", "", true, false, false, false },
    { "mistral-v7", "[SYSTEM_PROMPT] ", "[/SYSTEM_PROMPT]", "[INST] ", "[/INST]", "</s>", "",
      false, false, false, false },
    { "mistral-v7-tekken", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[INST]", "[/INST]", "</s>", "",
      false, false, false, false },
    // DeepSeek V2.5/V3 and the R1 distills: the system text right after BOS, no separator.
    { "deepseek-3", "", "", DS_USER, DS_ASSISTANT, DS_EOS, "", false, false, false, false },
    { "deepseek-r1", "", "", DS_USER, DS_ASSISTANT "<think>\n", DS_EOS, "", false, false, false, false },
    { "deepseek-llm", "", "\n\n", "User: ", "\n\nAssistant:", DS_EOS, "", false, false, false, false },
    { "deepseek-coder", "", "\n", "### Instruction:\n", "\n### Response:\n", "<|EOT|>", "\n",
      false, false, false, false },
    { "plain", "", "\n\n", "User: ", "\nAssistant:", "", "\n", false, false, false, false },
};
#define N_TEMPLATES ((int)(sizeof templates / sizeof templates[0]))

int chat_template_count(void) { return N_TEMPLATES; }
const chat_template *chat_template_at(int i) { return i >= 0 && i < N_TEMPLATES ? &templates[i] : NULL; }

const chat_template *chat_template_by_name(const char *name) {
    for (int i = 0; i < N_TEMPLATES; i++)
        if (strcmp(templates[i].name, name) == 0) return &templates[i];
    return NULL;
}


static char names_text[512];
static void make_names(void) {
    size_t n = 0;
    for (int i = 0; i < N_TEMPLATES && n < sizeof names_text; i++)
        n += (size_t)snprintf(names_text + n, sizeof names_text - n, "%s%s", i ? ", " : "", templates[i].name);
}

const char *chat_template_names(void) {   // made once: help text may be printed from any thread
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_names);
    return names_text;
}

static bool has(const char *src, const char *s) { return strstr(src, s) != NULL; }

// s as (the start of) a string literal in the source: right after a ' or a ".
static bool opens_literal(const char *src, const char *s) {
    for (const char *p = src; (p = strstr(p, s)); p++)
        if (p > src && (p[-1] == '\'' || p[-1] == '"')) return true;
    return false;
}

// s as a whole string literal: '[INST]' or "[INST]".
static bool whole_literal(const char *src, const char *s) {
    size_t n = strlen(s);
    for (const char *p = src; (p = strstr(p, s)); p++)
        if (p > src && (p[-1] == '\'' || p[-1] == '"') && p[n] == p[-1]) return true;
    return false;
}

// The [INST] family. Mistral's layouts differ only in spaces, so the tests read the literals:
// [SYSTEM_PROMPT] only in v7 (with a space after it in v7, none in v7-tekken); <<SYS>> only in
// Llama 2; ' [INST] ' (a space before) only in v1; '[INST]' (no space at all) only in
// v3-tekken; ' [/INST]' (a space before the close) in the first Mistral and Mixtral Instruct
// templates; "[INST] " ... "[/INST]" is v3 (Mistral 7B v0.3, Mixtral 8x22B, Large 2407).
static const char *inst_family(const char *src) {
    if (has(src, "[SYSTEM_PROMPT]")) return has(src, "[SYSTEM_PROMPT] ") ? "mistral-v7" : "mistral-v7-tekken";
    if (has(src, "<<SYS>>")) return "llama-2";
    if (opens_literal(src, " [INST]")) return "mistral-v1";
    if (whole_literal(src, "[INST]")) return "mistral-v3-tekken";
    if (opens_literal(src, " [/INST]")) return "mistral";
    return "mistral-v3";
}

// Ordered: each test is for markers only its family writes, and where two families share one
// (<|im_start|>, <|start_header_id|>, [INST], <|user|>) the one that adds something is tested
// first. The families told by plain words (deepseek-coder, deepseek-llm) come last: such words
// could appear inside another family's default system text.
static const char *match_name(const char *src) {
    if (has(src, "<start_of_turn>")) return "gemma";
    if (has(src, DS_USER) && has(src, DS_ASSISTANT)) return has(src, DS_ASSISTANT "<think>") ? "deepseek-r1" : "deepseek-3";
    if (has(src, "<|start_header_id|>") && has(src, "<|end_header_id|>"))
        return has(src, "Cutting Knowledge Date") ? "llama-3.1" : "llama-3";
    if (has(src, "<|im_start|>")) return has(src, "<|im_sep|>") ? "phi-4" : "chatml";
    if (has(src, "[INST]")) return inst_family(src);
    if (has(src, "<|end|>") && (has(src, "<|user|>") || has(src, "<|assistant|>"))) return "phi-3";
    if (has(src, "<|user|>")) return "zephyr";
    if (has(src, "### Instruction:") && has(src, "### Response:") && has(src, "<|EOT|>")) return "deepseek-coder";
    if (has(src, "User: ") && has(src, "Assistant:")) return "deepseek-llm";
    return NULL;
}

const chat_template *chat_template_match(const char *src) {
    const char *name = src ? match_name(src) : NULL;
    return name ? chat_template_by_name(name) : NULL;
}

const chat_template *chat_template_for_file(const char *src, const char *arch, bool *unrecognised) {
    const chat_template *t = chat_template_match(src);
    if (unrecognised) *unrecognised = src && !t;
    if (!t && !src && arch && !strncmp(arch, "gemma", 5)) t = chat_template_by_name("gemma");
    return t ? t : chat_template_by_name("plain");
}

// Where text starts at src[i] (a '\n' in text may be written "\n" in a Jinja string literal, or
// be a real newline): the index after it, or 0 when it is not there.
static size_t match_at(const char *src, size_t i, const char *text) {
    for (; *text; text++) {
        if (*text == '\n' && src[i] == '\\' && src[i + 1] == 'n') { i += 2; continue; }
        if (src[i] != *text) return 0;
        i++;
    }
    return i;
}

static bool ends_with(const char *s, size_t n, const char *suffix, size_t k) {
    return k > 0 && n > k && memcmp(s + n - k, suffix, k) == 0;
}

char *chat_template_default_system(const chat_template *t, const char *src) {
    if (!src || !src[0] || !t->system_prefix[0]) return NULL;
    size_t k = strlen(t->system_suffix);
    size_t k_bare = k && t->system_suffix[k - 1] == '\n' ? k - 1 : k;   // a literal may stop before the newline
    for (size_t i = 1; src[i]; i++) {
        char q = src[i - 1];
        if (q != '\'' && q != '"') continue;
        size_t j = match_at(src, i, t->system_prefix);
        if (!j) continue;
        // the literal's text up to its closing quote, escapes resolved
        strbuf b = {0};
        bool closed = false, plain = true;
        for (; src[j]; j++) {
            if (src[j] == q) { closed = true; break; }
            if (src[j] == '{' || src[j] == '}') plain = false;
            if (src[j] == '\\' && src[j + 1]) {
                j++;
                char c = src[j] == 'n' ? '\n' : src[j] == 't' ? '\t' : src[j];
                strbuf_append(&b, &c, 1);
            } else {
                strbuf_append(&b, &src[j], 1);
            }
        }
        const char *s = strbuf_str(&b);
        size_t cut = ends_with(s, b.len, t->system_suffix, k) ? k : ends_with(s, b.len, t->system_suffix, k_bare) ? k_bare : 0;
        if (closed && plain && cut) {
            b.s[b.len - cut] = 0;
            return b.s;
        }
        strbuf_free(&b);
        if (!closed) return NULL;
        i = j;   // on past this literal: each character of the source is read once
    }
    return NULL;
}

// s without the white space at its ends: [*start, *start + *len)
static void trimmed(const char *s, const char **start, size_t *len) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char)*s)) { s++; n--; }
    while (n && isspace((unsigned char)s[n - 1])) n--;
    *start = s;
    *len = n;
}

char *chat_template_render_turn(const chat_template *t, const char *system, const char *user,
                                bool first, bool close_previous) {
    const char *sys = system ? system : "", *usr = user;
    size_t sys_len = strlen(sys), usr_len = strlen(usr);
    if (t->trim) {
        trimmed(sys, &sys, &sys_len);
        trimmed(usr, &usr, &usr_len);
    }
    bool sys_block = first && (sys_len > 0 || t->system_always);
    strbuf b = {0};
    if (!first) {
        if (close_previous) strbuf_puts(&b, t->assistant_end);
        strbuf_puts(&b, t->after_assistant);
        if (t->bos_each_turn) strbuf_puts(&b, "<s>");
    }
    if (t->system_in_first_user) strbuf_puts(&b, t->user_prefix);
    if (sys_block) {
        strbuf_puts(&b, t->system_prefix);
        strbuf_append(&b, sys, sys_len);
        strbuf_puts(&b, t->system_suffix);
    }
    if (!t->system_in_first_user) strbuf_puts(&b, t->user_prefix);
    strbuf_append(&b, usr, usr_len);
    strbuf_puts(&b, t->user_suffix);
    return b.s ? b.s : xstrdup("");
}
