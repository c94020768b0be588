// The workbench's session, the same for every face (ui/session.h): what the terminal and the
// window do that is not drawing or reading keys.
#include "ui/session.h"
#include "app/compare.h"
#include "app/heatmap.h"
#include "base/clock.h"
#include "base/mem.h"
#include "engine/wtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ui_session_notice(ui_session *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notice, sizeof s->notice, fmt, ap);
    va_end(ap);
    s->notice_until = now_sec() + 3.0;
    s->dirty = true;
}

static void say(ui_session *s, const char *text) {
    if (worker_busy(s->w)) { ui_session_notice(s, "busy: a reply is being written (Ctrl-C stops it)"); return; }
    chat_add(&s->chat, MSG_USER, text);
    s->chat.streaming = chat_add(&s->chat, MSG_ASSIST, "");
    s->chat.scroll = 0;
    worker_say(s->w, text);
}

static void request_plan(ui_session *s, const char *spec) {
    precision_plan p;
    errbuf err = {{0}};
    if (plan_parse_any(&p, spec, s->snap.n_layer, &err)) { chat_add(&s->chat, MSG_ERROR, err.msg); return; }
    worker_request_plan(s->w, &p, spec);
    ui_session_notice(s, "precision: switching to %s", spec);
}

void ui_session_cycle_precision(ui_session *s) {
    static const char *const order[] = { "f16", "q8_0", "q4_0" };
    int cur = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(s->snap.plan_name, order[i]) == 0) cur = i;
    if (cur < 0) {   // "as in file" or mixed: start from the type most layers have
        uint32_t t0 = s->snap.n_layer ? s->snap.types[0][0] : WT_F16;
        for (int i = 0; i < 3; i++) if (wtype_from_name(order[i]) == (int)t0) cur = i;
    }
    request_plan(s, order[(cur + 1) % 3]);
}

void ui_session_cycle_kv(ui_session *s) {
    static const char *const kv[] = { "f16", "q8", "q4" };
    int cur = 0;
    for (int i = 0; i < 3; i++) if (!strcmp(s->snap.kv_format, kv[i])) cur = i;
    const char *next = kv[(cur + 1) % 3];
    worker_request_kv(s->w, next);
    ui_session_notice(s, worker_busy(s->w) ? "KV cache: %s after this reply" : "KV cache: switching to %s", next);
}

void ui_session_cycle_heat(ui_session *s) {
    s->snap.heat_mode = (s->snap.heat_mode + 1) % HEAT_MODES;
    s->dirty = true;
}

void ui_session_talk(ui_session *s) {
    char m[300];
    if (tvoice_ptt(s->tv, m, sizeof m) < 0) chat_add(&s->chat, MSG_INFO, m);   // voice off: why
    ui_session_notice(s, "%.120s", m);
}

void ui_session_talk_hold(ui_session *s, bool down) {
    if (tvoice_talking(s->tv) == down) return;
    ui_session_talk(s);
}

bool ui_session_stop(ui_session *s) {
    if (!worker_busy(s->w)) return false;
    worker_cancel(s->w);
    ui_session_notice(s, "stopped");
    return true;
}

// ---- the session's own handlers of the command table's rows (front: the ui_session); a row
// without one runs on the worker thread through cmdlang (worker_exec) ----
static int own_quit(void *front, cmd_line *l, errbuf *err) { (void)l; (void)err; ((ui_session *)front)->quit = true; return 0; }
static int own_help(void *front, cmd_line *l, errbuf *err) { (void)l; (void)err; ((ui_session *)front)->help = true; return 0; }

static int own_clear(void *front, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    ui_session *s = front;
    chat_free(&s->chat);
    chat_init(&s->chat);
    s->cmp_msg = -1;   // a compare still streaming starts its next prompt anew
    return 0;
}

static int own_save(void *front, cmd_line *l, errbuf *err) {
    ui_session *s = front;
    if (chat_save_json(&s->chat, &s->snap, l->argv[0], err)) return -1;
    char m[1100];
    snprintf(m, sizeof m, "saved transcript and stats to %s", l->argv[0]);
    chat_add(&s->chat, MSG_INFO, m);
    return 0;
}

// Measured aside on a second session (the conversation is kept) or loaded, for the panel.
static int own_heatmap(void *front, cmd_line *l, errbuf *err) {
    (void)err;
    ui_session *s = front;
    uint32_t type;
    const char *file;
    heatmap_args(l->argc, l->argv, &type, &file);
    if (s->heat) { sensitivity_map_free(s->heat); free(s->heat); s->heat = NULL; s->snap.heat = NULL; }
    snprintf(s->snap.heat_status, sizeof s->snap.heat_status, "%s", file && heatmap_is_map(file) ? "loading..." : "computing...");
    s->snap.heat_mode = HEAT_SENSITIVITY;
    worker_heatmap(s->w, type, file ? file : "");
    return 0;
}

// Through the session's pipeline, so the Voice panel follows it.
static int own_voice(void *front, cmd_line *l, errbuf *err) {
    ui_session *s = front;
    char echo[1100];
    snprintf(echo, sizeof echo, ":voice %s", l->argv[0]);
    chat_add(&s->chat, MSG_INFO, echo);
    return tvoice_file(s->tv, l->argv[0], err);
}

// The path's kind is checked here, once for every face: a PNG is the window's picture, text
// the terminal's.
static int own_snapshot(void *front, cmd_line *l, errbuf *err) {
    ui_session *s = front;
    const char *path = l->argv[0];
    bool png = app_snapshot_is_png(path);
    if (png && !s->face.snapshot_png) return app_snapshot_needs_window(path, err);
    if (!png && s->face.snapshot_png) return err_set(err, "snapshot %s: the window writes PNG pictures (FILE.png)", path);
    if (s->face.snapshot(s->face.ud, path, err)) return -1;
    char line[512];
    snprintf(line, sizeof line, "snapshot written to %s", path);   // after the picture: it is not in it
    chat_add(&s->chat, MSG_INFO, line);
    return 0;
}
static int own_type(void *front, cmd_line *l, errbuf *err) {
    (void)err;
    ui_session *s = front;
    s->face.type(s->face.ud, l->rest);
    s->dirty = true;
    return 0;
}
static int own_say(void *front, cmd_line *l, errbuf *err) { (void)err; say(front, l->rest); return 0; }
// live: a reply being written goes on
static int own_precision(void *front, cmd_line *l, errbuf *err) { (void)err; request_plan(front, l->rest); return 0; }
// a scene's `wait`: the next scene line runs after it
static int own_wait(void *front, cmd_line *l, errbuf *err) { (void)err; ((ui_session *)front)->scene_resume = now_sec() + l->number / 1000.0; return 0; }

static const cmd_own session_own[] = {
    { "quit", own_quit }, { "help", own_help }, { "clear", own_clear }, { "save", own_save }, { "heatmap", own_heatmap },
    { "voice", own_voice }, { "snapshot", own_snapshot }, { "say", own_say }, { "precision", own_precision },
    { "wait", own_wait }, { "type", own_type }, { NULL, NULL },
};

// A parsed line: the session's own handler, else on the worker (text: the line as typed).
static void run_line(ui_session *s, cmd_line *l, const char *text) {
    errbuf err = {{0}};
    int (*own)(void *, cmd_line *, errbuf *) = cmdlang_own_handler(session_own, l->def);
    if (own) {
        if (own(s, l, &err)) chat_add(&s->chat, MSG_ERROR, err.msg);
    } else if (!strcmp(l->def->name, "kv") && worker_busy(s->w)) {
        chat_add(&s->chat, MSG_INFO, "kv: applied after this reply");
        worker_exec(s->w, text);
    } else {
        char echo[600];
        snprintf(echo, sizeof echo, ":%s", text);
        chat_add(&s->chat, MSG_INFO, echo);
        worker_exec(s->w, text);
    }
}

// A `:` line: parsed (and checked) at once on this thread, then run.
static void run_command(ui_session *s, const char *text) {
    while (*text == ' ') text++;
    errbuf err = {{0}};
    cmd_line l;
    int r = cmdlang_parse(text, CMDLANG_TYPED, 1, CMD_IN_WORKBENCH, &l, &err);
    if (r < 0) { chat_add(&s->chat, MSG_ERROR, err.msg); return; }
    if (r == 0) return;
    run_line(s, &l, text);
    cmdlang_free(&l);
}

void ui_session_submit(ui_session *s, const char *line) {
    const char *p = line;
    while (*p == ' ') p++;
    if (*p == ':') run_command(s, p + 1);
    else if (*p) say(s, p);
    s->dirty = true;
}

void ui_session_enter(ui_session *s, line_edit *le) {
    char *line = xstrdup(le->buf);
    le_history_add(le, line);
    le_clear(le);
    ui_session_submit(s, line);
    free(line);
}

// `compare` as it streams: one message per prompt, its two replies side by side, redrawn at each
// piece to the width of the conversation pane (border and the message's indent left out).
static void compare_event(ui_session *s, const ui_event *e) {
    if (e->msg_kind < 0) {
        free(s->cmp_prompt);
        s->cmp_prompt = xstrdup(e->text ? e->text : "");
        strbuf_clear(&s->cmp_reply[0]);
        strbuf_clear(&s->cmp_reply[1]);
        s->cmp_msg = chat_add(&s->chat, MSG_INFO, "");
        s->chat.scroll = 0;
    } else if (s->cmp_msg >= 0 && e->text) {
        strbuf_puts(&s->cmp_reply[e->msg_kind ? 1 : 0], e->text);
    }
    if (s->cmp_msg < 0) return;
    strbuf t = {0};
    strbuf_printf(&t, "compare: %s\n", s->cmp_prompt);
    compare_columns(strbuf_str(&s->cmp_reply[0]), strbuf_str(&s->cmp_reply[1]), s->face.chat_cols(s->face.ud) - 4, &t);
    chat_set_text(&s->chat, s->cmp_msg, strbuf_str(&t));
    strbuf_free(&t);
}

static void drain_events(ui_session *s) {
    ui_event ev[64];
    int n;
    while ((n = worker_drain(s->w, ev, 64)) > 0) {
        for (int i = 0; i < n; i++) {
            ui_event *e = &ev[i];
            if (e->kind == EV_TOKEN) {
                if (s->chat.streaming < 0) s->chat.streaming = chat_add(&s->chat, MSG_ASSIST, "");
                chat_append(&s->chat, s->chat.streaming, e->text, strlen(e->text));
            } else if (e->kind == EV_USER) {   // a spoken turn, recognised
                chat_add(&s->chat, MSG_USER, e->text);
                s->chat.streaming = chat_add(&s->chat, MSG_ASSIST, "");
                s->chat.scroll = 0;
            } else if (e->kind == EV_LINE) {
                chat_add(&s->chat, e->msg_kind, e->text);
            } else if (e->kind == EV_TURN_DONE) {
                if (s->chat.streaming >= 0 && e->text) chat_set_text(&s->chat, s->chat.streaming, e->text);
                s->chat.streaming = -1;
                worker_snapshot(s->w, &s->snap);   // the finished turn's stats go into the autosave
                errbuf err;
                if (s->autosave[0] && chat_save_json(&s->chat, &s->snap, s->autosave, &err) != 0)
                    ui_session_notice(s, "autosave failed: %s", err.msg);
            } else if (e->kind == EV_COMPARE) {
                compare_event(s, e);
            } else if (e->kind == EV_HEATMAP) {
                if (e->heat) {
                    if (s->heat) { sensitivity_map_free(s->heat); free(s->heat); }
                    s->heat = e->heat;
                    s->snap.heat_status[0] = 0;
                } else if (e->text) {
                    snprintf(s->snap.heat_status, sizeof s->snap.heat_status, "computing sensitivity %s", e->text);
                }
            }
            free(e->text);
            s->dirty = true;
        }
    }
    s->snap.heat = s->heat;
}

// What changes off the worker's snapshot: the voice pipeline and the plan's measured KL.
static void poll_aside(ui_session *s) {
    ui_voice_view v;
    tvoice_view(s->tv, &v);
    double kl, agree;
    int kl_done, kl_total;
    int st = worker_plan_quality(s->w, &kl, &agree, &kl_done, &kl_total);
    const ui_voice_view *o = &s->snap.voice;
    bool changed = v.state != o->state || v.turns != o->turns || v.hands_free != o->hands_free ||
                   v.have_level != o->have_level || (v.have_level && (int)v.level_db != (int)o->level_db) ||
                   strcmp(v.transcript, o->transcript) != 0 || strcmp(v.line, o->line) != 0;
    if (v.refused > o->refused) {   // a spoken turn refused as not a command: say so in the conversation
        char m[400];
        snprintf(m, sizeof m, "voice: heard \"%s\": not a command, not sent to the model", v.refused_text);
        chat_add(&s->chat, MSG_INFO, m);
        changed = true;
    }
    if (changed || st != s->snap.kl_state || kl != s->snap.kl || kl_done != s->snap.kl_done) s->dirty = true;
    s->snap.kl_done = kl_done;
    s->snap.kl_total = kl_total;
    s->snap.voice = v;
    s->snap.kl_state = st;
    s->snap.kl = kl;
    s->snap.agree = agree;
}

static void read_power(ui_session *s) {
    ui_snapshot *sn = &s->snap;
    if (sn->hw_t == 0 || sn->now - sn->hw_t >= 0.5) {   // a few dozen sysfs reads: 2 Hz is plenty
        hw_state prev = sn->hw;
        hw_state_read("/", &sn->hw);
        sn->hw_throttling = sn->hw_t > 0 && hw_state_throttled(&prev, &sn->hw);
        sn->hw_t = sn->now;
    }
    sn->n_pw = s->pm ? power_monitor_read(s->pm, sn->pw, TEL_MAX_SOURCES) : 0;
    if (sn->n_pw > TEL_MAX_SOURCES) sn->n_pw = TEL_MAX_SOURCES;
    if (!s->pm) return;
    const char *from = power_monitor_total_from(s->pm, &sn->power_measured);
    snprintf(sn->power_from, sizeof sn->power_from, "%s", from);
    // the total is the sum of the sources of the class the monitor totals (telemetry.h)
    bool est = strcmp(from, "estimate") == 0;
    double w = 0;
    for (int i = 0; i < sn->n_pw; i++) {
        const power_reading *p = &sn->pw[i];
        if (!p->readable) continue;
        bool cls = est ? p->kind == PWR_ESTIMATE
                       : p->in_total && strstr(from, power_kind_name(p->kind)) != NULL;
        if (cls) w += p->watts;
    }
    sn->watts = w;
}

// Scene lines, one at a time, each after the worker is idle (and a `wait` has passed).
static void step_scene(ui_session *s) {
    if (!s->have_scene || worker_busy(s->w) || tvoice_busy(s->tv) || now_sec() < s->scene_resume) return;
    if (s->scene_i >= s->sc.n) {
        if (s->exit_after_scene && s->chat.streaming < 0) s->quit = true;
        return;
    }
    cmd_line *l = &s->sc.lines[s->scene_i++];
    if (!strcmp(l->def->name, "model") && s->scene_i == 1) return;   // opened already
    char text[1200];
    snprintf(text, sizeof text, "%s %s", l->def->name, l->rest ? l->rest : "");
    run_command(s, text);
}

bool ui_session_poll(ui_session *s, double now, double fps) {
    drain_events(s);
    if (worker_snapshot(s->w, &s->snap)) s->dirty = true;
    poll_aside(s);
    step_scene(s);
    if (s->notice_until && now > s->notice_until) { s->notice[0] = 0; s->notice_until = 0; s->dirty = true; }
    if (now - s->last_draw >= 0.5) s->dirty = true;   // power and clocks move on their own
    if (!s->dirty || now - s->last_draw < 1.0 / fps) return false;
    s->snap.now = now;
    read_power(s);
    s->last_draw = now;
    s->dirty = false;
    return true;
}

int ui_session_open(ui_session *s, const ui_opts *o, const ui_face *face, errbuf *err) {
    memset(s, 0, sizeof *s);
    s->face = *face;
    s->cmp_msg = -1;
    if (o->scene) {
        if (scene_load(&s->sc, o->scene, err)) { err_prefix(err, "cabin"); return 2; }
        s->have_scene = true;
        s->exit_after_scene = o->exit_after_scene;
    }
    session_opts so = o->s;
    if (s->have_scene && s->sc.n > 0 && !strcmp(s->sc.lines[0].def->name, "model")) so.model_path = s->sc.lines[0].argv[0];
    s->c.speed = 0;
    s->c.front = CMD_IN_WORKBENCH;
    if (cmdlang_check_own(session_own, CMD_IN_WORKBENCH, err) || app_open(&s->c, &so, o->free_actions, err)) {
        err_prefix(err, "%s", face->name);
        if (s->have_scene) scene_free(&s->sc);
        return 1;
    }
    s->pm = power_monitor_open("/", err);
    if (s->pm && power_monitor_start(s->pm, 10, err) == 0) session_set_power(s->c.as.s, s->pm);
    ui_state_path("workbench-autosave.json", s->autosave, sizeof s->autosave);
    chat_init(&s->chat);
    s->snap.kl = s->snap.agree = -1;
    s->w = worker_start(&s->c, err);
    if (!s->w) {
        err_prefix(err, "%s", face->name);
        session_set_power(s->c.as.s, NULL);
        app_close(&s->c);
        power_monitor_close(s->pm);
        chat_free(&s->chat);
        if (s->have_scene) scene_free(&s->sc);
        return 1;
    }
    s->tv = tvoice_start(s->w, o->audio_in, o->audio_out, o->no_voice);
    if (o->governor) {   // --governor: the loop starts on the worker, as `:governor SPEC` would
        char line[600];
        snprintf(line, sizeof line, "governor %s", o->governor);
        worker_exec(s->w, line);
    }
    char welcome[200];
    snprintf(welcome, sizeof welcome, "%s: type a message and Enter; :help or F1 for keys and commands.", face->name);
    chat_add(&s->chat, MSG_INFO, welcome);
    s->dirty = true;
    if (o->attach) {
        if (o->attach(s, o->attach_ud, err)) {
            err_prefix(err, "%s", face->name);
            ui_session_close(s);
            return 1;
        }
        s->detach = o->detach;
        s->attach_ud = o->attach_ud;
    }
    return 0;
}

int ui_session_close(ui_session *s) {
    tvoice_stop(s->tv);   // first: a spoken turn in flight waits for the worker
    worker_stop(s->w);
    if (s->detach) s->detach(s, s->attach_ud);   // its turns waiting were told the worker stopped
    drain_events(s);      // what the worker posted before it stopped
    worker_free(s->w);
    errbuf err;
    if (s->autosave[0] && s->chat.n > 1) {
        if (chat_save_json(&s->chat, &s->snap, s->autosave, &err)) fprintf(stderr, "cabin: autosave: %s\n", err.msg);
        else fprintf(stderr, "cabin: transcript saved to %s\n", s->autosave);
    }
    chat_free(&s->chat);
    free(s->cmp_prompt);
    strbuf_free(&s->cmp_reply[0]);
    strbuf_free(&s->cmp_reply[1]);
    if (s->heat) { sensitivity_map_free(s->heat); free(s->heat); }
    session_set_power(s->c.as.s, NULL);
    app_close(&s->c);
    power_monitor_close(s->pm);
    if (s->have_scene) scene_free(&s->sc);
    return s->c.failed ? 1 : 0;
}
