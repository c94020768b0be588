// The engine behind cabin serve (cli/serve_app.h): requests, commands and the state on the
// assistant's session.
#include "cli/serve_app.h"
#include "app/action_tools.h"
#include "app/cmdlang.h"
#include "base/mem.h"
#include "engine/json_schema.h"
#include "engine/token_bias.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct run_state {
    serve_app *a;
    assistant *as;                 // the slot's
    const serve_request *rq;
    const serve_output *out;
    int tokens;
    bool stopped;                  // the face asked to stop (client gone, stop sequence)
    reply_split split;             // the assistant's reply: the action line held, the sentence streamed
    strbuf held;                   // a client's tool call, held whole
    bool in_call;                  // a model with call tags: between <tool_call> and </tool_call>
    bool acted;
} run_state;

cJSON *serve_state_object(const char *model_id, int n_slots, int slot, const session_stats *st, bool governor,
                          const vehicle *car) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model_id);
    cJSON_AddNumberToObject(root, "slots", n_slots);
    cJSON_AddStringToObject(root, "backend", st->backend);
    cJSON_AddStringToObject(root, "template", st->template_name);
    cJSON_AddNumberToObject(root, "turns", st->turns);
    cJSON *last = cJSON_AddObjectToObject(root, "last_turn");
    cJSON_AddNumberToObject(last, "slot", slot);
    cJSON_AddNumberToObject(last, "prompt_tokens", st->prompt_tokens);
    cJSON_AddNumberToObject(last, "cached_tokens", st->cached_tokens);
    cJSON_AddNumberToObject(last, "generated_tokens", st->gen_tokens);
    cJSON_AddNumberToObject(last, "ttft_ms", st->ttft_ms);
    cJSON_AddNumberToObject(last, "prefill_tps", st->prefill_tps);
    cJSON_AddNumberToObject(last, "decode_tps", st->decode_tps);
    cJSON_AddNumberToObject(last, "decode_j_per_token", st->energy.decode_j_per_token);
    cJSON *kv = cJSON_AddObjectToObject(root, "kv");   // the slot's cache
    cJSON_AddStringToObject(kv, "format", st->kv_format);
    cJSON_AddStringToObject(kv, "policy", st->kv_policy);
    cJSON_AddNumberToObject(kv, "tokens", st->n_past);
    cJSON_AddNumberToObject(kv, "context", st->n_ctx);
    cJSON_AddNumberToObject(kv, "bytes", (double)st->kv_bytes);
    cJSON *prec = cJSON_AddObjectToObject(root, "precision");
    cJSON_AddNumberToObject(prec, "weight_bytes", (double)st->weight_bytes);
    cJSON *by = cJSON_AddObjectToObject(prec, "bytes_by_type");
    for (int t = 0; t < WT_COUNT; t++)
        if (st->bytes_by_type[t]) cJSON_AddNumberToObject(by, wtype_name((uint32_t)t), (double)st->bytes_by_type[t]);
    cJSON_AddNumberToObject(prec, "switches", st->switches);
    cJSON_AddBoolToObject(root, "governor", governor);
    cJSON_AddNumberToObject(root, "rss_bytes", (double)st->rss_bytes);
    cJSON *fields = cJSON_AddObjectToObject(root, "vehicle");
    for (const char *const *f = vehicle_fields(); car && *f; f++) {
        char v[128];
        if (vehicle_get(car, *f, v, sizeof v) == 0) cJSON_AddStringToObject(fields, *f, v);
    }
    return root;
}

// The state /v1/cabin/state gives, made in a slot (after each request and command) and read by
// the route at any time: the slot's figures, the precision by type, and the car.
void serve_app_update_state(serve_app *a, int slot) {
    session_stats st;
    session_get_stats(a->slots[slot].as->s, &st);
    cJSON *root = serve_state_object(a->model_id, a->n_slots, slot, &st, a->c.as.gov != NULL, a->c.as.car);
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    pthread_mutex_lock(&a->state_mu);
    a->slots[slot].kv_bytes = st.kv_bytes;
    a->slots[slot].shared_passes = st.shared_passes;
    uint64_t kv_all = 0;
    long shared = 0;
    for (int i = 0; i < a->n_slots; i++) kv_all += a->slots[i].kv_bytes, shared += a->slots[i].shared_passes;
    pthread_mutex_unlock(&a->state_mu);
    strbuf m = { 0 };
    strbuf_printf(&m, "# HELP cabin_weight_bytes Weight bytes by type under the precision plan in force.\n"
                      "# TYPE cabin_weight_bytes gauge\n");
    for (int t = 0; t < WT_COUNT; t++)
        if (st.bytes_by_type[t]) strbuf_printf(&m, "cabin_weight_bytes{type=\"%s\"} %llu\n", wtype_name((uint32_t)t),
                                               (unsigned long long)st.bytes_by_type[t]);
    strbuf_printf(&m, "# HELP cabin_precision_switches_total Live precision switches.\n# TYPE cabin_precision_switches_total counter\n"
                      "cabin_precision_switches_total %d\n", st.switches);
    strbuf_printf(&m, "# HELP cabin_kv_bytes KV cache bytes allocated (every slot's), by format and policy.\n# TYPE cabin_kv_bytes gauge\n"
                      "cabin_kv_bytes{format=\"%s\",policy=\"%s\"} %llu\n", st.kv_format, st.kv_policy, (unsigned long long)kv_all);
    strbuf_printf(&m, "# HELP cabin_decode_steps_shared_total Decode steps run in one forward pass with other slots'.\n"
                      "# TYPE cabin_decode_steps_shared_total counter\ncabin_decode_steps_shared_total %ld\n", shared);
    strbuf_printf(&m, "# HELP cabin_decode_joules_per_token The last request's decode joules per token (%s).\n"
                      "# TYPE cabin_decode_joules_per_token gauge\ncabin_decode_joules_per_token %.6g\n",
                  st.energy.total_from[0] ? st.energy.total_from : "no power source", st.energy.decode_j_per_token);
    strbuf_printf(&m, "# HELP cabin_governor_on Whether the precision governor holds a target.\n# TYPE cabin_governor_on gauge\n"
                      "cabin_governor_on %d\n", a->c.as.gov != NULL);
    strbuf_printf(&m, "# HELP cabin_resident_bytes The server's resident memory.\n# TYPE cabin_resident_bytes gauge\n"
                      "cabin_resident_bytes %llu\n", (unsigned long long)st.rss_bytes);
    pthread_mutex_lock(&a->state_mu);
    free(a->state);
    a->state = xstrdup(js ? js : "{}");
    free(a->metrics);
    a->metrics = m.s;
    pthread_mutex_unlock(&a->state_mu);
    cJSON_free(js);
}

void serve_app_metrics(void *ud, strbuf *out) {
    serve_app *a = ud;
    pthread_mutex_lock(&a->state_mu);
    strbuf_puts(out, a->metrics ? a->metrics : "");
    pthread_mutex_unlock(&a->state_mu);
}

char *serve_app_state(void *ud) {
    serve_app *a = ud;
    pthread_mutex_lock(&a->state_mu);
    char *s = xstrdup(a->state ? a->state : "{}");
    pthread_mutex_unlock(&a->state_mu);
    return s;
}

// One line of the command language as cabin serve offers it (CMD_IN_HTTP): what it printed.
// It runs on the first slot's assistant, every slot held; a precision plan is the model's, so in
// force for all, and a KV format or policy is given to the others too. The governor paces one
// generation: with more slots it is refused.
int serve_app_command(void *ud, const char *line, char **output, errbuf *err) {
    serve_app *a = ud;
    *output = NULL;
    const char *w = line + strspn(line, " \t");
    if (a->n_slots > 1 && strncmp(w, "governor", 8) == 0 && (w[8] == 0 || w[8] == ' ' || w[8] == '\t')) {
        err_set(err, "governor: it paces one generation; this server runs %d slots (cabin serve --slots 1)", a->n_slots);
        return 400;
    }
    size_t before = a->c.transcript.len;
    int rc = cmdlang_exec(&a->c, line, err);
    size_t after = a->c.transcript.len;
    *output = xstrndup(strbuf_str(&a->c.transcript) + (after >= before ? before : after), after >= before ? after - before : 0);
    session_stats st0;
    session_get_stats(a->c.as.s, &st0);
    for (int i = 1; i < a->n_slots; i++) {
        errbuf e2 = { { 0 } };
        session_stats sti;
        session_get_stats(a->slots[i].as->s, &sti);
        if (strcmp(sti.kv_format, st0.kv_format) == 0 && strcmp(sti.kv_policy, st0.kv_policy) == 0) continue;
        if (session_set_kv(a->slots[i].as->s, st0.kv_format, st0.kv_policy, &e2) && rc >= 0) {
            err_set(err, "slot %d: %s", i, e2.msg);
            rc = -1;
        }
        serve_app_update_state(a, i);
    }
    serve_app_update_state(a, 0);
    if (rc < 0) {
        char msg[ERR_LINE];
        snprintf(msg, sizeof msg, "%s", cmdlang_for_person(err->msg));
        err_set(err, "%s", msg);
        return 400;
    }
    return 0;
}

static bool plain_token(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    run_state *r = ud;
    r->tokens++;
    if (!r->out->content(r->out->ud, piece, (size_t)len)) r->stopped = true;
    return !r->stopped;
}

// A reply that is a tool call is held, not streamed as text: it is said as a call when whole.
static bool held_token(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    run_state *r = ud;
    r->tokens++;
    strbuf_append(&r->held, piece, (size_t)len);
    return true;
}

// {"name": F, "arguments": {...}} -> a tool call; a call cut short (max_tokens) is said as text.
static void say_tool_call(run_state *r, bool complete) {
    cJSON *j = complete ? cJSON_Parse(strbuf_str(&r->held)) : NULL;
    const cJSON *name = j ? cJSON_GetObjectItemCaseSensitive(j, "name") : NULL;
    const cJSON *args = j ? cJSON_GetObjectItemCaseSensitive(j, "arguments") : NULL;
    if (cJSON_IsString(name) && args) {
        char *a = cJSON_PrintUnformatted(args);
        r->out->tool_call(r->out->ud, name->valuestring, a ? a : "{}", NULL);
        cJSON_free(a);
        r->acted = true;
    } else if (r->held.len) {
        r->out->content(r->out->ud, r->held.s, r->held.len);
    }
    cJSON_Delete(j);
}

// A model that writes its calls in tags (tool_call.h): the text streams as content, a call is
// held from its opening tag and said as a call at its closing one.
static bool tagged_token(void *ud, int32_t token, const char *piece, int len) {
    run_state *r = ud;
    if (token == r->a->call_tags.open && !r->in_call) {
        r->tokens++;
        r->in_call = true;
        strbuf_clear(&r->held);
        return true;
    }
    if (token == r->a->call_tags.close && r->in_call) {
        r->tokens++;
        r->in_call = false;
        say_tool_call(r, true);
        strbuf_clear(&r->held);
        return true;
    }
    return r->in_call ? held_token(ud, token, piece, len) : plain_token(ud, token, piece, len);
}

// The action line is complete: it is carried out (unless tool_choice is none) and said as a
// tool call, with the car's change or refusal in cabin's own field.
static void act(void *ud, const char *line, size_t n) {
    run_state *r = ud;
    if (r->rq->tool_choice == SERVE_TOOLS_NONE) return;
    char *text = xstrndup(line, n);
    action_call c = { 0 };
    const turn_hooks h = { .ud = &c, .on_action = action_call_on_action, .on_vehicle_change = action_call_on_change,
                           .on_refused = action_call_on_refused };
    assistant_act_line(r->as, text, &h);
    free(text);
    if (c.args) {
        char *res = action_call_result(&c);
        r->out->tool_call(r->out->ud, c.name, c.args, res);
        r->acted = !c.refused;
        free(res);
    }
    action_call_free(&c);
}

static bool send_text(void *ud, const char *s, size_t n) {
    run_state *r = ud;
    if (!r->out->content(r->out->ud, s, n)) r->stopped = true;
    return !r->stopped;
}

// The assistant's reply as it comes: "<act>LINE</act> sentence". The line is held back until it
// closes; the sentence streams as content.
static bool assistant_token(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    run_state *r = ud;
    r->tokens++;
    return reply_split_feed(&r->split, piece, (size_t)len, act, send_text, r);
}

// An assistant message of the conversation as the model wrote it: the action line, then the
// text; on another model, the text, then the call it made in the form it makes them.
static char *assistant_text(const serve_app *a, const serve_message *m, errbuf *err) {
    strbuf b = { 0 };
    if (!a->has_tools && m->tool_name) {
        strbuf_puts(&b, m->content ? m->content : "");
        if (a->has_call_tags) {
            if (b.len) strbuf_puts(&b, "\n");
            tool_call_render(&b, m->tool_name, m->tool_args);
        } else {   // the bare object a call held to the schema is
            tool_call_json(&b, m->tool_name, m->tool_args);
        }
        return b.s;
    }
    if (a->has_tools) {
        char line[512] = "none";
        if (m->tool_name) {
            action act;
            if (action_from_tool_call(m->tool_name, m->tool_args, &act, err)) return NULL;
            action_format(&act, line, sizeof line);
        }
        strbuf_printf(&b, "<act>%s</act> ", line);
    }
    strbuf_puts(&b, m->content ? m->content : "");
    return b.s ? b.s : xstrdup("");
}

// Whether a request's tools are the client's own, called through a tool-call schema: a model
// without the car's tools, a tool choice that asks for a call.
static bool client_tool_call(const serve_app *a, const serve_request *rq) {
    return !a->has_tools && rq->n_tools > 0 && rq->tool_choice != SERVE_TOOLS_NONE;
}

static int check_tools(const serve_app *a, const serve_request *rq, errbuf *err) {
    if (!a->has_tools) {   // the client's own tools: a call when one is asked for
        if (rq->tool_choice_name && rq->n_tools == 0) return err_set(err, "tool_choice: names a function, but no tools were given");
        if (rq->n_tools && rq->tool_choice == SERVE_TOOLS_AUTO && !rq->tool_choice_name && !a->has_call_tags)
            return err_set(err, "tool_choice: auto needs a model that says when it calls a tool; %s does not: ask for "
                           "\"required\" or name a function (or \"none\")", a->model_id);
        return 0;
    }
    for (int i = 0; i < rq->n_tools; i++)
        if (!action_tool_known(rq->tools[i]))
            return err_set(err, "tools: '%.60s' is not one of this server's (GET /v1/cabin/tools); tools of the client's own are not supported", rq->tools[i]);
    if (rq->tool_choice == SERVE_TOOLS_REQUIRED)
        return err_set(err, "tool_choice: only auto and none are supported (the model decides whether to act)");
    return 0;
}

// The conversation before the last user turn into the cache; *last gets that turn's text.
static int load_conversation(serve_app *a, session *s, const serve_request *rq, strbuf *last, int *status, errbuf *err) {
    int i = 0;
    const char *system = a->system;
    if (rq->n_msgs && strcmp(rq->msgs[0].role, "system") == 0) system = rq->msgs[i++].content;
    if (client_tool_call(a, rq) && a->has_call_tags) {   // in the words the model was tuned on
        char *sys = tool_call_system(system ? system : session_default_system(s), rq->tools_json);
        session_set_system(s, sys);
        free(sys);
    } else if (client_tool_call(a, rq)) {   // the model is told the functions and the form of a call
        strbuf sys = { 0 };
        if (system && *system) strbuf_printf(&sys, "%s\n\n", system);
        strbuf_printf(&sys, "You call one of these functions: %s\nAnswer with a JSON object {\"name\": FUNCTION, \"arguments\": {...}}.",
                      rq->tools_json);
        session_set_system(s, strbuf_str(&sys));
        strbuf_free(&sys);
    } else {
        session_set_system(s, system);
    }
    strbuf user = { 0 };
    int rc = 0;
    for (; i < rq->n_msgs && !rc; i++) {
        const serve_message *m = &rq->msgs[i];
        if (strcmp(m->role, "user") == 0) {
            if (user.len) strbuf_puts(&user, "\n");
            strbuf_puts(&user, m->content);
        } else if (strcmp(m->role, "assistant") == 0) {
            char *reply = assistant_text(a, m, err);
            if (!reply) rc = -1, *status = 400;
            else if (session_add_turn(s, strbuf_str(&user), reply, err)) rc = -1, *status = strstr(err->msg, "context full") ? 400 : 500;
            free(reply);
            strbuf_clear(&user);
        } else if (!a->has_tools) {   // a client's function's result, read in the user's turn
            if (user.len) strbuf_puts(&user, "\n");
            tool_call_render_result(&user, m->content);
        }   // a tool message on the embedded model: the car's tools ran here, their result is in the conversation already
    }
    if (!rc && user.len == 0) rc = err_set(err, "messages: no user or tool message after the last assistant message"), *status = 400;
    *last = user;
    return rc;
}

// The filter a request's generation runs under: its logit biases (token_bias.h) around `inner`
// (zeroed: none).
static void set_filter(session *s, token_bias *tb, const serve_request *rq, token_filter inner) {
    *tb = (token_bias){ rq->bias_ids, rq->bias, rq->n_bias, inner };
    token_filter f = rq->n_bias ? token_bias_filter(tb) : inner;
    session_set_filter(s, f.mask || f.forced ? &f : NULL);
}

int serve_app_run(void *ud, int slot, const serve_request *rq, const serve_output *out, serve_result *res, errbuf *err) {
    serve_app *a = ud;
    assistant *as = a->slots[slot].as;
    session *s = as->s;
    // The conversation is sent whole each time: what the cache holds of it from the request
    // before is taken again (session_restart), unless --no-prompt-cache. The car keeps its state:
    // it is one car, whoever asks.
    if (a->prompt_cache) session_restart(s);
    else session_reset(s);
    sampler_params p = a->sampling;
    if (rq->has_temperature) p.temp = (float)rq->temperature;
    if (rq->has_top_p) p.top_p = (float)rq->top_p;
    if (rq->has_top_k) p.top_k = rq->top_k;
    if (rq->has_seed) p.seed = rq->seed;
    int max = rq->max_tokens > 0 ? rq->max_tokens : a->max_reply;
    if (session_set_sampling(s, &p, max, err)) return 500;
    session_set_seed(s, p.seed);
    run_state r = { .a = a, .as = as, .rq = rq, .out = out };
    int status = 0, rc = 0;
    session_stats st;
    token_bias tb;
    if (rq->n_bias && a->has_tools) {
        status = 400, err_set(err, "logit_bias: the assistant's replies are held to its action grammar (not with the car's tools)");
    } else if (token_bias_check(rq->bias_ids, rq->n_bias, session_n_vocab(s), err)) {
        status = 400;
    } else if (rq->kind == SERVE_COMPLETION) {
        int32_t *ids = NULL;
        int n = session_tokenize(s, rq->prompt, true, &ids, err);
        free(ids);
        session_get_stats(s, &st);
        if (n < 0) status = 400;
        else if (n + 1 > st.n_ctx) status = 400, err_set(err, "the prompt is %d tokens; the context holds %d (cabin serve --ctx)", n, st.n_ctx);
        else {
            set_filter(s, &tb, rq, (token_filter){ 0 });
            if (session_complete(s, rq->prompt, max, plain_token, &r, err)) status = 500;
            session_set_filter(s, NULL);
        }
        res->prompt_tokens = n;
    } else {
        strbuf last = { 0 };
        json_filter *jf = NULL;
        json_schema *schema = NULL;
        if (check_tools(a, rq, err)) status = 400;
        else if (rq->format != SERVE_FORMAT_TEXT &&
                 !(schema = json_schema_compile(rq->format == SERVE_FORMAT_SCHEMA ? rq->json_schema : NULL, err)))
            status = 400, err_prefix(err, "response_format.json_schema");
        else if (client_tool_call(a, rq) && !(schema = json_schema_compile_tools(rq->tools_json, rq->tool_choice_name, err)))
            status = 400;
        else if (load_conversation(a, s, rq, &last, &status, err)) rc = -1;
        // a model with call tags decides whether to call (auto), or is held to call (required)
        const bool tagged = client_tool_call(a, rq) && a->has_call_tags;
        tool_call_filter *tcf = NULL;
        if (schema) {   // structured output: the tokens held to the schema, no action line
            pthread_mutex_lock(&a->vocab_mu);
            if (!a->vocab) a->vocab = json_vocab_new(s);
            pthread_mutex_unlock(&a->vocab_mu);
            if (tagged) tcf = tool_call_filter_new(a->call_tags, schema, a->vocab, rq->tool_choice == SERVE_TOOLS_REQUIRED);
            else jf = json_filter_new(schema, a->vocab);
        }
        if (!status && !rc) {
            int n = session_turn_tokens(s, strbuf_str(&last), err);
            session_get_stats(s, &st);
            if (n < 0) status = 400;
            else if (st.n_past + n + 1 > st.n_ctx && strcmp(st.kv_policy, "none") == 0)
                status = 400, err_set(err, "the conversation is %d tokens; the context holds %d (cabin serve --ctx)", st.n_past + n, st.n_ctx);
            else if (tcf) {
                set_filter(s, &tb, rq, tool_call_filter_token_filter(tcf));
                if (session_chat(s, strbuf_str(&last), tagged_token, &r, err)) status = 500;
                session_set_filter(s, NULL);
                if (!status && r.in_call) say_tool_call(&r, false);   // cut short: said as the text it is
            } else if (jf) {
                set_filter(s, &tb, rq, json_filter_token_filter(jf));
                bool call = client_tool_call(a, rq);
                if (session_chat(s, strbuf_str(&last), call ? held_token : plain_token, &r, err)) status = 500;
                session_set_filter(s, NULL);
                if (!status && call) say_tool_call(&r, json_filter_complete(jf));
            } else if (a->has_tools) {
                if (assistant_generate(as, strbuf_str(&last), assistant_token, &r, err)) status = 500;
            } else {
                set_filter(s, &tb, rq, (token_filter){ 0 });
                if (session_chat(s, strbuf_str(&last), plain_token, &r, err)) status = 500;
                session_set_filter(s, NULL);
            }
            res->prompt_tokens = n >= 0 ? st.n_past + n : 0;
        }
        if (jf || tcf) {
            int calls;
            double secs;
            if (tcf) tool_call_filter_cost(tcf, &calls, &secs);
            else json_filter_cost(jf, &calls, &secs);
            res->grammar_ms_per_token = calls ? secs * 1e3 / calls : 0;
        }
        json_filter_free(jf);
        tool_call_filter_free(tcf);
        json_schema_free(schema);
        if (!status && a->has_tools && !jf) reply_split_finish(&r.split, send_text, &r);
        strbuf_free(&last);
    }
    reply_split_free(&r.split);
    strbuf_free(&r.held);
    session_set_sampling(s, &a->sampling, a->max_reply, NULL);
    session_set_seed(s, a->sampling.seed);
    session_get_stats(s, &st);
    res->cached_tokens = st.cached_tokens;
    serve_app_update_state(a, slot);
    if (status) return status;
    res->completion_tokens = r.tokens;
    res->finish = r.acted ? SERVE_FINISH_TOOL_CALLS : r.tokens >= max && !r.stopped ? SERVE_FINISH_LENGTH : SERVE_FINISH_STOP;
    return 0;
}



void serve_model_id(const char *path, char *buf, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".gguf") == 0) len -= 5;
    snprintf(buf, n, "%.*s", (int)len, base);
}

bool serve_app_has_tool(void *ud, const char *name) {
    serve_app *a = ud;
    return a->has_tools && action_tool_known(name);
}

// ---- slots ----

int serve_app_open_slots(serve_app *a, int n, errbuf *err) {
    a->slots = xcalloc((size_t)n, sizeof *a->slots);
    a->slots[0].as = &a->c.as;
    a->n_slots = 1;
    for (int i = 1; i < n; i++) {
        if (assistant_open_sibling(&a->slots[i].own, &a->c.as, err)) return err_prefix(err, "--slots %d: slot %d", n, i);
        a->slots[i].as = &a->slots[i].own;
        a->n_slots++;
    }
    return 0;
}

void serve_app_close_slots(serve_app *a) {
    for (int i = a->n_slots - 1; i >= 0; i--) {
        if (i > 0) assistant_close_sibling(&a->slots[i].own);
        free(a->slots[i].conv);
    }
    free(a->slots);
    a->slots = NULL;
    a->n_slots = 0;
}

// A message as a number (FNV-1a over its role, text and call), to compare conversations.
static uint64_t message_hash(const serve_message *m) {
    uint64_t h = 1469598103934665603ull;
    const char *parts[4] = { m->role, m->content, m->tool_name, m->tool_args };
    for (int p = 0; p < 4; p++) {
        for (const unsigned char *c = (const unsigned char *)(parts[p] ? parts[p] : ""); *c; c++) h = (h ^ *c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;   // a separator no text holds
    }
    return h;
}

// The free slot whose cache holds most of this conversation: the one whose last request shares
// the most messages with it from the start, a shared system message alone not counting (every
// conversation of an app may begin with the same one); otherwise, and between equals, the one
// taken longest ago. It then holds this conversation. Called with the queue locked.
int serve_app_pick_slot(void *ud, const serve_request *rq, const bool *free_slot, int n_slots) {
    serve_app *a = ud;
    int n = rq->kind == SERVE_CHAT ? rq->n_msgs : 0;
    uint64_t *h = xcalloc((size_t)n + 1, sizeof *h);
    for (int i = 0; i < n; i++) h[i] = message_hash(&rq->msgs[i]);
    const int sys = n > 0 && strcmp(rq->msgs[0].role, "system") == 0;
    int best = -1, best_score = -1;
    for (int i = 0; i < n_slots && i < a->n_slots; i++) {
        if (!free_slot[i]) continue;
        serve_slot *sl = &a->slots[i];
        int same = 0;
        while (same < n && same < sl->n_conv && h[same] == sl->conv[same]) same++;
        int score = same > sys ? same : 0;
        if (score > best_score || (score == best_score && sl->last_used < a->slots[best].last_used)) best = i, best_score = score;
    }
    if (best >= 0) {
        serve_slot *sl = &a->slots[best];
        free(sl->conv);
        sl->conv = h;
        sl->n_conv = n;
        sl->last_used = ++a->picks;
    } else {
        free(h);
    }
    return best;
}
