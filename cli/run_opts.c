// The options every model-running command shares: one table for parsing and --help.
#include "cli/commands.h"
#include "engine/backend.h"
#include "engine/chat_template.h"
#include "base/threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// "this cabin has: auto, cpu, ..." under --backend's help
static char backend_choices_text[160];
static void make_backend_choices(void) {
    snprintf(backend_choices_text, sizeof backend_choices_text, "this cabin has: %s", backend_names());
}
static const char *backend_choices(void) {   // made once: --help may be printed from any thread
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_backend_choices);
    return backend_choices_text;
}

// --chat-template NAME: a name of engine/chat_template.c's table, checked when parsed (an
// unknown one is a usage error, exit 2, with the names listed).
static int set_chat_template(void *base, const char *name, errbuf *err) {
    if (!chat_template_by_name(name))
        return err_set(err, "--chat-template: unknown template '%s' (known: %s)", name, chat_template_names());
    ((run_opts *)base)->s.template_name = name;
    return 0;
}

// "known: gemma, llama-3, ..." under --chat-template's help, in lines of at most 76 columns
static char template_choices_text[640];
static void make_template_choices(void) {
    const char *names = chat_template_names();
    size_t n = (size_t)snprintf(template_choices_text, sizeof template_choices_text, "known:"), col = n;
    while (*names && n + 2 < sizeof template_choices_text) {
        size_t len = strcspn(names, ",");
        bool wrap = col + 1 + len + 1 > 76;
        int w = snprintf(template_choices_text + n, sizeof template_choices_text - n, "%s%.*s%s", wrap ? "\n" : " ",
                         (int)len, names, names[len] ? "," : "");
        if (w < 0 || (size_t)w >= sizeof template_choices_text - n) break;
        n += (size_t)w;
        col = (wrap ? 0 : col + 1) + len + 1;
        names += len + (names[len] ? 2 : 0);   // past ", "
    }
}
static const char *template_choices(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_template_choices);
    return template_choices_text;
}

void note_threads(const char *cmd, const char *opt, double value) {
    static atomic_bool said;
    int cpus = usable_cpus();
    if (value > cpus && !atomic_exchange(&said, true))
        fprintf(stderr, "%s: %s %g: more threads than the %d CPUs this process may use; they will take turns\n",
                cmd, opt, value, cpus);
}

#define RO(field) offsetof(run_opts, field)
static const opt_def RUN_OPT_DEFS[] = {
    { "--model", "-m", OPT_STR, RO(model), "FILE", "GGUF model", "$CABIN_MODEL or " CABIN_DEFAULT_MODEL, NULL, NULL },
    { "--threads", "-t", OPT_INT, RO(s.backend.n_threads), "N", "CPU threads", "the physical cores", NULL, NULL, OPT_RANGE(1, 256), .note = note_threads },
    { "--backend", NULL, OPT_STR, RO(s.backend.name), "NAME", "compute backend (cpu-scalar: the scalar reference path;\n"
      "auto: the first this cabin has)", "auto", NULL, backend_choices },
    { "--device", NULL, OPT_STR, RO(s.backend.device), "N", "Vulkan device index (cabin devices lists them)", "the best", NULL, NULL },
    { "--kernels", NULL, OPT_STR, RO(s.backend.kernels), "NAME", "CPU kernel set: auto | avx512 | avx2 | scalar", "auto", NULL, NULL },
    { "--ctx", "-c", OPT_INT, RO(s.n_ctx), "N", "context length in tokens", "the model's, at most 4096", NULL, NULL, OPT_RANGE(1, 16777216) },
    { "--batch", "-b", OPT_INT, RO(s.n_batch), "N", "prompt tokens per forward pass", NULL, NULL, NULL, OPT_RANGE(1, 65536) },
    { "--temp", NULL, OPT_FLOAT, RO(s.sampling.temp), "T", "temperature; 0 = greedy", NULL, NULL, NULL, OPT_RANGE(0, 100) },
    { "--top-k", NULL, OPT_INT, RO(s.sampling.top_k), "K", "0 = off", NULL, NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--top-p", NULL, OPT_FLOAT, RO(s.sampling.top_p), "P", "1 = off", NULL, NULL, NULL, OPT_RANGE(0, 1) },
    { "--min-p", NULL, OPT_FLOAT, RO(s.sampling.min_p), "P", "0 = off", NULL, NULL, NULL, OPT_RANGE(0, 1) },
    { "--repeat-penalty", NULL, OPT_FLOAT, RO(s.sampling.repeat_penalty), "R", "1 = off", NULL, NULL, NULL, OPT_RANGE(0.1, 10) },
    { "--repeat-last-n", NULL, OPT_INT, RO(s.sampling.repeat_last_n), "N", "tokens the penalty looks back", NULL, NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--seed", NULL, OPT_U64, RO(s.sampling.seed), "S", "sampling seed: the same seed gives the same text", NULL, NULL, NULL },
    { "--chat-template", NULL, OPT_CALL, 0, "NAME", "chat template (docs/TEMPLATES.md); a file's that cabin does not\n"
      "recognise gives plain, and one line saying so", "recognised from the file", set_chat_template, template_choices },
    { "--template", NULL, OPT_CALL, 0, "NAME", "the same as --chat-template", "", set_chat_template, NULL },
    { "--precision", NULL, OPT_STR, RO(s.precision), "TYPE", "convert every layer matrix to f32 | f16 | bf16 | q8_0 | q4_0 at load\n"
      "(token embedding and output stay as in the file)", "as in the file", NULL, NULL },
    { "--kv", NULL, OPT_STR, RO(s.kv_format), "FORMAT", "KV cache: f16 | q8 | q4 | f32 (docs/KV.md)", "f16", NULL, NULL },
    { "--kv-policy", NULL, OPT_STR, RO(s.kv_policy), "P", "when the context fills: none (stop) | window:N | h2o:N | entropy:N\n"
      "(keep N slots and go on; cpu backend)", "none", NULL, NULL },
    { "--kv-recent", NULL, OPT_INT, RO(s.kv_recent), "R", "newest tokens the q8/q4 caches keep in f16", "32", NULL, NULL, OPT_RANGE(0, HUGE_VAL) },
    { "--ignore-eos", NULL, OPT_FLAG, RO(s.ignore_eog), NULL, "keep generating past end-of-generation tokens (benchmarks)", NULL, NULL, NULL },
    { "--mmap", NULL, OPT_FLAG, RO(s.mmap_weights), NULL, "cpu: read the weights from the mapped file (no copy into 2 MiB pages:\n"
      "less anonymous memory, slower decode)", NULL, NULL, NULL },
    { "--no-jump-forward", NULL, OPT_FLAG, RO(s.no_jump_forward), NULL, "feed every generated token in a forward pass of its own, also those\n"
      "the action grammar or a JSON schema forces (the same text, more passes)", NULL, NULL, NULL },
    { "--free-actions", NULL, OPT_FLAG, RO(free_actions), NULL, "do not constrain the assistant's <act> lines to the action grammar\n"
      "nor its spoken sentence to what the action holds (the model's raw\noutput; docs/ASSISTANT.md)", NULL, NULL, NULL },
};

// -n for the commands that chat: most tokens per reply, into the session's options.
static const opt_def REPLY_OPT_DEFS[] = {
    { "--n-predict", "-n", OPT_INT, RO(s.max_reply_tokens), "N", "most tokens per reply", NULL, NULL, NULL, OPT_RANGE(1, HUGE_VAL) },
};

// --governor for the commands that hold a conversation (chat, voice, scene, workbench).
static const opt_def GOVERNOR_OPT_DEFS[] = {
    { "--governor", NULL, OPT_STR, RO(governor), "SPEC", "precision governor: tps>=N | watts<=W | j_per_token<=J\n"
      "[kl<=K] [knob=V ...] (docs/GOVERNOR.md)", "off", NULL, NULL },
};

void run_opts_init(run_opts *r) {
    r->s = session_opts_default();
    r->model = NULL;
    r->free_actions = false;
    r->governor = NULL;
}

opt_table run_opts_table(run_opts *r) { return OPT_TABLE(RUN_OPT_DEFS, r); }
opt_table run_opts_reply_table(run_opts *r) { return OPT_TABLE(REPLY_OPT_DEFS, r); }
opt_table run_opts_governor_table(run_opts *r) { return OPT_TABLE(GOVERNOR_OPT_DEFS, r); }

int run_opts_parse_with(const cmd_spec *c, const opt_table *own, run_opts *r, int argc, char **argv) {
    opt_table tables[2] = { *own, run_opts_table(r) };
    return opts_parse(c, tables, 2, argc, argv);
}

int run_opts_parse_chat(const cmd_spec *c, const opt_table *own, run_opts *r, int argc, char **argv) {
    opt_table tables[4] = { *own, run_opts_reply_table(r), run_opts_governor_table(r), run_opts_table(r) };
    return opts_parse(c, tables, 4, argc, argv);
}

const char *run_opts_model(const run_opts *r) {
    if (r->model) return r->model;
    const char *env = getenv("CABIN_MODEL");
    return env && *env ? env : CABIN_DEFAULT_MODEL;
}
