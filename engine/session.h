// One conversation: model + backend + KV cache + sampler + stats. Front ends use nothing else
// of the engine (plus engine/telemetry.h once it exists).
#ifndef CABIN_SESSION_H
#define CABIN_SESSION_H

#include "backend.h"
#include "chat_template.h"
#include "model.h"
#include "sampler.h"
#include "telemetry.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct session_opts {
    const char *model_path;
    backend_opts backend;
    int n_ctx;                   // 0: the model's training context, at most 4096
    int n_batch;                 // prompt tokens per forward pass (default 256)
    sampler_params sampling;
    const char *template_name;   // NULL: recognise from the file (not recognised: plain, and a
                                 // notice says so: session_take_notice)
    const char *system_prompt;   // NULL: the one the file's template writes when a conversation
                                 // has none (Qwen2.5, SmolLM2), if any; "": none
    int max_reply_tokens;        // per chat turn (default 512)
    const char *context_hint;    // what the front end offers when the context is full, said in
                                 // the error ("/reset, or a larger --ctx"); NULL: "a larger --ctx"
    bool ignore_eog;             // completion: keep generating past end-of-generation tokens
    const char *precision;       // NULL: as in the file; else a precision plan: shorthand
                                 // ("q4_0", "q4_0;q8_0:layers=0-3,ffn_down"), JSON, or a .json
                                 // file (engine/precision.h)
    const char *kv_format;       // NULL or "f16": F16; "f32", "q8", "q4" (docs/KV.md)
    const char *kv_policy;       // NULL or "none"; "window:N", "h2o:N", "entropy:N"
    int kv_recent;               // slots kept F16 by the quantized formats (0: 32)
    bool mmap_weights;           // cpu: read weights from the mapped file instead of a copy in
                                 // 2 MiB pages (model_copy_weights)
    bool no_jump_forward;        // feed every token on its own, even those a filter forces
                                 // (token_filter.forced): the plain decoding, for comparison
} session_opts;

session_opts session_opts_default(void);

typedef struct session_stats {
    // last turn / completion
    int prompt_tokens;
    int gen_tokens;
    double prefill_ms;
    double ttft_ms;              // from the request to the first generated token
    double decode_ms;            // generating tokens after the first
    double prefill_tps, decode_tps;  // decode: tokens fed after the first sample / decode_ms
    int decode_passes;           // forward passes that fed generated tokens (a forced run is one)
    int forced_tokens;           // generated tokens a filter forced (token_filter.forced)
    // telemetry (engine/telemetry.h): per decoded token, ms from one sampled token to the next
    // (its forward pass + sampling); a ring, the newest at (tok_ms_count - 1) % SESSION_TOK_RING
#define SESSION_TOK_RING 128
    float tok_ms[SESSION_TOK_RING];
    int tok_ms_count;            // tokens timed this turn (may exceed the ring)
    double decode_tps_last32;    // over the last (up to) 32 timed tokens
    bool op_profiled;            // op_ms valid: session_set_profiling(s, true) was on this turn
    double op_ms[OP_COUNT];      // this turn's time per op kind (prefill + decode)
    uint64_t op_calls[OP_COUNT];
    double device_ms_per_token;  // the device's own time per decode pass (its op timestamps summed
                                 // over the decode passes / their number), when op_profiled on a
                                 // backend with BACKEND_CAP_DEVICES that has timestamps; else 0
    energy_turn energy;          // this turn's joules; energy.total_from "" without a monitor
    uint64_t rss_bytes;          // process resident set (at get_stats)
    int n_device_heaps;          // device memory by heap (a device backend fills it; 0 on cpu)
    device_heap device_heaps[TEL_MAX_HEAPS];
    // totals
    int cached_tokens;           // tokens fed since the last reset that the cache held from before
                                 // a session_restart (not computed again)
    int shared_passes;           // decode steps run in one pass with other slots' (a group of
                                 // sessions: session_open_sibling), since the session opened
    int n_past;                  // tokens in the cache
    int n_ctx;
    uint64_t weight_bytes;
    uint64_t kv_bytes;           // allocated
    uint64_t kv_used_bytes;
    char kv_format[8];           // "f16", "q8", ...
    char kv_policy[32];          // "none", "window:512", ...
    double kv_token_bytes;       // bytes per token per layer (K+V) of the format
    double kv_savings;           // F16 bytes / this format's bytes for the same capacity
    int kv_ring_layers;          // window layers kept in rings (engine/kv_cache.h), and their rows
    int kv_ring_rows;
    int kv_evictions;            // eviction passes so far, and slots evicted (per layer)
    uint64_t kv_evicted;
    int turns;
    char backend[128];
    char template_name[32];
    // precision
    uint64_t bytes_by_type[WT_COUNT];   // plan-governed tensors, by weight type
    int switches;
    double last_switch_ms;          // request to swap-in
    double last_switch_convert_ms;  // conversion alone
    int last_switch_tensors;        // tensors converted
    int last_switch_upcast;         // of which given a type above the file's (dequantized copies)
    char last_switch_error[512];
    float switch_progress;          // 0..1 while a switch is being prepared, else -1
} session_stats;

typedef struct session session;

// Called for every generated token with its text piece (bytes, may be a partial UTF-8 char).
// Return false to stop generating.
typedef bool (*token_cb)(void *ud, int32_t token, const char *piece, int len);
// A token_cb that appends every piece to the strbuf ud (base/str.h) and never stops.
bool session_collect_text(void *ud, int32_t token, const char *piece, int len);

// Constrained decoding: before each sampled token of session_chat/session_complete, `mask` may
// set the logits of tokens that must not come next to -INFINITY (logits: n_vocab floats, a copy
// the sampler then uses); `accept` is told the token chosen and its text piece. If a mask
// leaves no finite logit the session samples from the unmasked logits instead. The filter's
// owner (e.g. app/action_grammar.c) keeps its own state between turns.
// Jump-forward: `forced` (optional) is asked after each accepted token for the one token that
// must come next whatever the logits (the mask would leave it alone), or -1. The session then
// accepts it without sampling (the sampler's random stream advances as a sample over one
// candidate would) and feeds the whole forced run in one forward pass: the reply is the one
// plain decoding gives, in fewer passes (session_opts.no_jump_forward turns it off).
typedef struct token_filter {
    void (*mask)(void *ud, float *logits, int n_vocab);
    void (*accept)(void *ud, int32_t token, const char *piece, int len);
    void *ud;
    int32_t (*forced)(void *ud);
} token_filter;

session *session_open(const session_opts *o, errbuf *err);
// Another session on first's model and backend (a server's slot): a cache, sampler and
// conversation of its own, the weights not held twice. The sessions' forward passes go one at a
// time on the one backend, in the order they ask, and the decode steps of those decoding at once
// share a pass (model_forward_seqs); a precision switch on any of them is in force for all, and the others' cached rows are then not reused (session_restart). The cpu
// backend only. Close the siblings before first.
session *session_open_sibling(session *first, errbuf *err);
void session_close(session *s);

// One chat turn: renders the user text with the chat template, prefills it, and generates the
// reply until end of turn, max_reply_tokens, cancel, or a false from cb.
int session_chat(session *s, const char *user_text, token_cb cb, void *ud, errbuf *err);
// A turn said before, put in the cache without generating: the user text as session_chat renders
// it, then the reply as it was given (a conversation a client sends whole, as an HTTP API does).
// The reply's closing token is written by the next turn. A turn that does not fit the context
// (with no eviction policy) is refused with a "context full" error and the cache is unchanged.
int session_add_turn(session *s, const char *user_text, const char *reply, errbuf *err);
// How many tokens the next session_chat(s, user_text) would put in the cache before its reply.
int session_turn_tokens(session *s, const char *user_text, errbuf *err);
// The system prompt of the conversation's first turn (NULL: the file template's default, if any;
// "": none). Only on an empty conversation (after session_reset): -1 otherwise.
int session_set_system(session *s, const char *system_prompt);
// The system text the file's template writes when a conversation has none (Qwen2.5's "You are
// Qwen, ..."), or NULL.
const char *session_default_system(const session *s);
// Raw completion: tokenizes prompt (BOS as the model says, special tokens parsed), appends it
// to the cache and generates up to n_predict tokens (stops early at end-of-generation tokens).
int session_complete(session *s, const char *prompt, int n_predict, token_cb cb, void *ud, errbuf *err);
// Feeds tokens; if logits is non-NULL it receives the last position's n_vocab logits.
int session_eval(session *s, const int32_t *tokens, int n, float *logits, errbuf *err);
// Feeds tokens and writes every position's logits: out is (n, n_vocab).
int session_eval_all(session *s, const int32_t *tokens, int n, float *out, errbuf *err);
// Tokenizes text with the model's tokenizer (special tokens parsed); malloc'd ids in *out.
int session_tokenize(session *s, const char *text, bool add_bos, int32_t **out, errbuf *err);
// Every token fed since the last reset, in order (prompts, replies, evaluated text): *ids is
// valid until the next eval or reset. A cache that evicts (--kv-policy) holds fewer.
int session_history(const session *s, const int32_t **ids);
// How many times the conversation was reset (session_reset, also by quality_eval): positions in
// the history are comparable only within one count.
unsigned session_resets(const session *s);
// The last eval's logits (n_vocab; the distribution the next token is sampled from, before any
// filter), or NULL before the first eval. Valid until the next eval.
const float *session_last_logits(const session *s);
// Samples the next token from the logits of the last eval.
int32_t session_sample(session *s);

// Precision plans. set_plan converts and swaps at once (call between turns); request_plan
// converts on a worker thread and the swap happens between two tokens of a running generation
// (or at session_poll_switch / session_wait_switch). A plan that fails leaves the running one.
int session_set_plan(session *s, const precision_plan *p, errbuf *err);
int session_request_plan(session *s, const precision_plan *p, errbuf *err);
int session_poll_switch(session *s);    // 1 swapped, 0 nothing ready, -1 the switch failed
int session_wait_switch(session *s);    // waits for a requested switch; as poll
float session_switch_progress(const session *s);
void session_get_plan(const session *s, precision_plan *out);

// Thread-safe: asks a running generation to stop after the current token.
void session_cancel(session *s);
// What the session has to tell the person once, e.g. that the file's chat template was not
// recognised (from session_open on), or that the device was lost and the CPU took over: true
// (and the line in buf) the first time it is asked after it happened.
bool session_take_notice(session *s, char *buf, size_t cap);
// Clears the conversation (cache, history); keeps the model.
void session_reset(session *s);
// As session_reset, but the cache's slots stay as a prompt cache for the next conversation: the
// tokens fed after it that equal the old conversation's at the same positions (a client that
// sends the whole conversation again, one turn longer) are taken from the cache instead of
// computed, up to the first that differs; the last token of each feed is always computed, for its
// logits. Only where slots can simply be dropped (kv_cache_truncatable); elsewhere, and after a
// precision switch, a KV format or policy change, or a move to the CPU, it is session_reset.
// stats.cached_tokens counts what was taken.
void session_restart(session *s);
void session_get_stats(const session *s, session_stats *out);
const model *session_model(const session *s);
// The chat template the session renders turns with (named, or the file's: chat_template_for_file).
const chat_template *session_template(const session *s);
backend *session_backend(session *s);
int session_n_vocab(const session *s);
void session_set_seed(session *s, uint64_t seed);
// Telemetry: a power monitor (engine/telemetry.h; owned by the caller, NULL to detach) whose
// marks bracket every turn's prefill and decode; op profiling per turn on the backend.
void session_set_power(session *s, power_monitor *pm);
void session_set_profiling(session *s, bool on);
// KV cache: switches the format (NULL keeps it) and the policy (NULL keeps it) between tokens;
// the cached conversation is converted, not lost. Errors leave both unchanged.
int session_set_kv(session *s, const char *format, const char *policy, errbuf *err);
// The last pass's attention weights of the last token in `layer`, for q head `head` (-1: mean
// over heads), into out[0..cap); returns the number of slots (0 before any pass), -1 on error.
int session_attention_last(const session *s, int layer, int head, float *out, int cap, errbuf *err);
// Occupancy of one layer: slots it holds, of which in the quantized store, and how many it can
// hold (the context, or a window layer's ring); -1 on a bad layer.
int session_kv_layer(const session *s, int layer, int *n_used, int *n_quantized, int *capacity);
// Installs a filter for the following generations (NULL removes it); the struct is copied.
void session_set_filter(session *s, const token_filter *f);
// New sampling settings (and reply length) for the next turns; the conversation is kept.
int session_set_sampling(session *s, const sampler_params *p, int max_reply_tokens, errbuf *err);

#endif
