// The workbench's UI thread: opens the session (through app_ctx), starts the worker, and loops:
// read keys, drain the worker's events into the conversation, take the newest snapshot, and
// redraw at most FPS times a second. It is the only thread that calls ncurses.
#include "tui/layout.h"
#include "app/compare.h"
#include "app/heatmap.h"
#include "app/scene.h"
#include "engine/wtype.h"

#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FPS 15
#define CTRL(c) ((c) & 0x1f)

typedef struct wb {
    app_ctx c;
    worker *w;
    tvoice *tv;               // the voice pipeline (F5, :voice)
    power_monitor *pm;
    chat_log chat;
    line_edit le;
    layout_state ls;
    ui_snapshot snap;
    sensitivity_map *heat;
    double notice_until;
    char autosave[1024];
    bool quit, dirty;
    // a scene played in the workbench (cabin scene --tui)
    scene sc;
    bool have_scene, exit_after_scene;
    int scene_i;
    double scene_resume;      // `wait`: the time the next line may run
    // `compare` streaming: the prompt running, A's and B's reply so far, its message
    char *cmp_prompt;
    strbuf cmp_reply[2];
    int cmp_msg;              // -1 none
} wb;

static void notice(wb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notice(wb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->ls.notice, sizeof b->ls.notice, fmt, ap);
    va_end(ap);
    b->notice_until = now_sec() + 3.0;
    b->dirty = true;
}

static void say(wb *b, const char *text) {
    if (worker_busy(b->w)) { notice(b, "busy: a reply is being written (Ctrl-C stops it)"); return; }
    chat_add(&b->chat, MSG_USER, text);
    b->chat.streaming = chat_add(&b->chat, MSG_ASSIST, "");
    b->chat.scroll = 0;
    worker_say(b->w, text);
}

static void request_plan(wb *b, const char *spec) {
    precision_plan p;
    errbuf err = {{0}};
    if (plan_parse_any(&p, spec, b->snap.n_layer, &err)) { chat_add(&b->chat, MSG_ERROR, err.msg); return; }
    worker_request_plan(b->w, &p, spec);
    notice(b, "precision: switching to %s", spec);
}

// F2: the next weight type after the one in force.
static void cycle_precision(wb *b) {
    static const char *const order[] = { "f16", "q8_0", "q4_0" };
    int cur = -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(b->snap.plan_name, order[i]) == 0) cur = i;
    if (cur < 0) {   // "as in file" or mixed: start from the type most layers have
        uint32_t t0 = b->snap.n_layer ? b->snap.types[0][0] : WT_F16;
        for (int i = 0; i < 3; i++) if (wtype_from_name(order[i]) == (int)t0) cur = i;
    }
    request_plan(b, order[(cur + 1) % 3]);
}

// ---- the workbench's own handlers of the command table's rows (front: the wb); a row without
// one runs on the worker thread through cmdlang (worker_exec) ----
static int wb_quit(void *front, cmd_line *l, errbuf *err) { (void)l; (void)err; ((wb *)front)->quit = true; return 0; }
static int wb_help(void *front, cmd_line *l, errbuf *err) { (void)l; (void)err; ((wb *)front)->ls.help = true; return 0; }

static int wb_clear(void *front, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    wb *b = front;
    chat_free(&b->chat);
    chat_init(&b->chat);
    b->cmp_msg = -1;   // a compare still streaming starts its next prompt anew
    return 0;
}

static int wb_save(void *front, cmd_line *l, errbuf *err) {
    wb *b = front;
    if (chat_save_json(&b->chat, &b->snap, l->argv[0], err)) return -1;
    char m[1100];
    snprintf(m, sizeof m, "saved transcript and stats to %s", l->argv[0]);
    chat_add(&b->chat, MSG_INFO, m);
    return 0;
}

// Measured aside on a second session (the conversation is kept) or loaded, for the panel.
static int wb_heatmap(void *front, cmd_line *l, errbuf *err) {
    (void)err;
    wb *b = front;
    uint32_t type;
    const char *file;
    heatmap_args(l->argc, l->argv, &type, &file);
    if (b->heat) { sensitivity_map_free(b->heat); free(b->heat); b->heat = NULL; b->snap.heat = NULL; }
    snprintf(b->snap.heat_status, sizeof b->snap.heat_status, "%s", file && heatmap_is_map(file) ? "loading..." : "computing...");
    b->snap.heat_mode = HEAT_SENSITIVITY;
    worker_heatmap(b->w, type, file ? file : "");
    return 0;
}

// Through the workbench's pipeline, so the Voice panel follows it.
static int wb_voice(void *front, cmd_line *l, errbuf *err) {
    wb *b = front;
    char echo[1100];
    snprintf(echo, sizeof echo, ":voice %s", l->argv[0]);
    chat_add(&b->chat, MSG_INFO, echo);
    return tvoice_file(b->tv, l->argv[0], err);
}

static int wb_snapshot(void *front, cmd_line *l, errbuf *err) { (void)front; return layout_snapshot(l->argv[0], err); }
static int wb_say(void *front, cmd_line *l, errbuf *err) { (void)err; say(front, l->rest); return 0; }
// live: a reply being written goes on
static int wb_precision(void *front, cmd_line *l, errbuf *err) { (void)err; request_plan(front, l->rest); return 0; }
// a scene's `wait`: the next scene line runs after it
static int wb_wait(void *front, cmd_line *l, errbuf *err) { (void)err; ((wb *)front)->scene_resume = now_sec() + l->number / 1000.0; return 0; }

static const cmd_own wb_own[] = {
    { "quit", wb_quit }, { "help", wb_help }, { "clear", wb_clear }, { "save", wb_save }, { "heatmap", wb_heatmap },
    { "voice", wb_voice }, { "snapshot", wb_snapshot }, { "say", wb_say }, { "precision", wb_precision },
    { "wait", wb_wait }, { NULL, NULL },
};

// A parsed line: the workbench's own handler, else on the worker (text: the line as typed).
static void run_line(wb *b, cmd_line *l, const char *text) {
    errbuf err = {{0}};
    int (*own)(void *, cmd_line *, errbuf *) = cmdlang_own_handler(wb_own, l->def);
    if (own) {
        if (own(b, l, &err)) chat_add(&b->chat, MSG_ERROR, err.msg);
    } else if (!strcmp(l->def->name, "kv") && worker_busy(b->w)) {
        chat_add(&b->chat, MSG_INFO, "kv: applied after this reply");
        worker_exec(b->w, text);
    } else {
        char echo[600];
        snprintf(echo, sizeof echo, ":%s", text);
        chat_add(&b->chat, MSG_INFO, echo);
        worker_exec(b->w, text);
    }
}

// A `:` line: parsed (and checked) at once on this thread, then run.
static void run_command(wb *b, const char *text) {
    while (*text == ' ') text++;
    errbuf err = {{0}};
    cmd_line l;
    int r = cmdlang_parse(text, "command line", 1, CMD_IN_WORKBENCH, &l, &err);
    if (r < 0) { chat_add(&b->chat, MSG_ERROR, err.msg); return; }
    if (r == 0) return;
    run_line(b, &l, text);
    cmdlang_free(&l);
}

static void enter_line(wb *b) {
    char *line = xstrdup(b->le.buf);
    le_history_add(&b->le, line);
    le_clear(&b->le);
    char *p = line;
    while (*p == ' ') p++;
    if (*p == ':') run_command(b, p + 1);
    else if (*p) say(b, p);
    free(line);
}

static void on_key(wb *b, int is_key, wint_t ch) {
    b->dirty = true;
    if (b->ls.help) { b->ls.help = false; if (!(is_key && ch == KEY_RESIZE)) return; }
    int page = LINES - 4 > 1 ? LINES - 4 : 1;
    if (is_key) {
        switch (ch) {
        case KEY_RESIZE: clearok(curscr, TRUE); return;
        case KEY_F(1): b->ls.help = true; return;
        case KEY_F(2): cycle_precision(b); return;
        case KEY_F(3): {   // f16 -> q8 -> q4 -> f16, applied between turns
            static const char *const kv[] = { "f16", "q8", "q4" };
            int cur = 0;
            for (int i = 0; i < 3; i++) if (!strcmp(b->snap.kv_format, kv[i])) cur = i;
            const char *next = kv[(cur + 1) % 3];
            worker_request_kv(b->w, next);
            notice(b, worker_busy(b->w) ? "KV cache: %s after this reply" : "KV cache: switching to %s", next);
            return;
        }
        case KEY_F(4): b->snap.heat_mode = (b->snap.heat_mode + 1) % HEAT_MODES; return;
        case KEY_F(5): {
            char m[300];
            if (tvoice_ptt(b->tv, m, sizeof m) < 0) chat_add(&b->chat, MSG_INFO, m);   // voice off: why
            notice(b, "%.120s", m);
            return;
        }
        case KEY_PPAGE: b->chat.scroll += page; return;
        case KEY_NPAGE: b->chat.scroll -= page; if (b->chat.scroll < 0) b->chat.scroll = 0; return;
        case KEY_BTAB: b->ls.focus = b->ls.focus > 0 ? b->ls.focus - 1 : FOCUS_CHAT; return;
        case KEY_MOUSE: {
            MEVENT me;
            if (getmouse(&me) == OK) {
                if (me.bstate & BUTTON4_PRESSED) b->chat.scroll += 3;
#ifdef BUTTON5_PRESSED
                else if (me.bstate & BUTTON5_PRESSED) { b->chat.scroll -= 3; if (b->chat.scroll < 0) b->chat.scroll = 0; }
#endif
            }
            return;
        }
        default: break;
        }
        if (b->ls.focus == FOCUS_CHAT && (ch == KEY_UP || ch == KEY_DOWN)) {
            b->chat.scroll += ch == KEY_UP ? 1 : -1;
            if (b->chat.scroll < 0) b->chat.scroll = 0;
            return;
        }
    } else {
        if (ch == CTRL('c')) {
            if (worker_busy(b->w)) { worker_cancel(b->w); notice(b, "stopped"); }
            else le_clear(&b->le);
            return;
        }
        if (ch == CTRL('d') && b->le.len == 0) { b->quit = true; return; }
        if (ch == CTRL('l')) { clearok(curscr, TRUE); return; }
        if (ch == '\t' && !(b->le.buf[0] == ':' && b->ls.focus == FOCUS_INPUT)) {
            int n_panels;
            tui_panels(&n_panels);
            int n_focus = FOCUS_PANELS + (layout_wide() ? n_panels : 0);
            b->ls.focus = (b->ls.focus + 1) % n_focus;
            return;
        }
        if (ch >= 32 && ch != 127) b->ls.focus = FOCUS_INPUT;
    }
    if (b->ls.focus != FOCUS_INPUT && !(is_key && (ch == KEY_ENTER))) {
        if (!is_key && (ch == '\n' || ch == '\r')) b->ls.focus = FOCUS_INPUT;
        return;
    }
    if (le_key(&b->le, is_key, ch)) enter_line(b);
}

// `compare` as it streams: one message per prompt, its two replies side by side, redrawn at each
// piece to the width of the conversation pane (border and the message's indent left out).
static void compare_event(wb *b, const ui_event *e) {
    if (e->msg_kind < 0) {
        free(b->cmp_prompt);
        b->cmp_prompt = xstrdup(e->text ? e->text : "");
        strbuf_clear(&b->cmp_reply[0]);
        strbuf_clear(&b->cmp_reply[1]);
        b->cmp_msg = chat_add(&b->chat, MSG_INFO, "");
        b->chat.scroll = 0;
    } else if (b->cmp_msg >= 0 && e->text) {
        strbuf_puts(&b->cmp_reply[e->msg_kind ? 1 : 0], e->text);
    }
    if (b->cmp_msg < 0) return;
    strbuf t = {0};
    strbuf_printf(&t, "compare: %s\n", b->cmp_prompt);
    compare_columns(strbuf_str(&b->cmp_reply[0]), strbuf_str(&b->cmp_reply[1]), layout_chat_cols() - 4, &t);
    chat_set_text(&b->chat, b->cmp_msg, strbuf_str(&t));
    strbuf_free(&t);
}

static void drain_events(wb *b) {
    ui_event ev[64];
    int n;
    while ((n = worker_drain(b->w, ev, 64)) > 0) {
        for (int i = 0; i < n; i++) {
            ui_event *e = &ev[i];
            if (e->kind == EV_TOKEN) {
                if (b->chat.streaming < 0) b->chat.streaming = chat_add(&b->chat, MSG_ASSIST, "");
                chat_append(&b->chat, b->chat.streaming, e->text, strlen(e->text));
            } else if (e->kind == EV_USER) {   // a spoken turn, recognised
                chat_add(&b->chat, MSG_USER, e->text);
                b->chat.streaming = chat_add(&b->chat, MSG_ASSIST, "");
                b->chat.scroll = 0;
            } else if (e->kind == EV_LINE) {
                chat_add(&b->chat, e->msg_kind, e->text);
            } else if (e->kind == EV_TURN_DONE) {
                if (b->chat.streaming >= 0 && e->text) chat_set_text(&b->chat, b->chat.streaming, e->text);
                b->chat.streaming = -1;
                worker_snapshot(b->w, &b->snap);   // the finished turn's stats go into the autosave
                errbuf err;
                if (b->autosave[0] && chat_save_json(&b->chat, &b->snap, b->autosave, &err) != 0)
                    notice(b, "autosave failed: %s", err.msg);
            } else if (e->kind == EV_COMPARE) {
                compare_event(b, e);
            } else if (e->kind == EV_HEATMAP) {
                if (e->heat) {
                    if (b->heat) { sensitivity_map_free(b->heat); free(b->heat); }
                    b->heat = e->heat;
                    b->snap.heat_status[0] = 0;
                } else if (e->text) {
                    snprintf(b->snap.heat_status, sizeof b->snap.heat_status, "computing sensitivity %s", e->text);
                }
            }
            free(e->text);
            b->dirty = true;
        }
    }
    b->snap.heat = b->heat;
}

// What changes off the worker's snapshot: the voice pipeline and the plan's measured KL.
static void poll_aside(wb *b) {
    ui_voice_view v;
    tvoice_view(b->tv, &v);
    double kl, agree;
    int st = worker_plan_quality(b->w, &kl, &agree);
    const ui_voice_view *o = &b->snap.voice;
    bool changed = v.state != o->state || v.turns != o->turns || v.hands_free != o->hands_free ||
                   v.have_level != o->have_level || (v.have_level && (int)v.level_db != (int)o->level_db) ||
                   strcmp(v.transcript, o->transcript) != 0 || strcmp(v.line, o->line) != 0;
    if (v.refused > o->refused) {   // a spoken turn refused as not a command: say so in the conversation
        char m[400];
        snprintf(m, sizeof m, "voice: heard \"%s\": not a command, not sent to the model", v.refused_text);
        chat_add(&b->chat, MSG_INFO, m);
        changed = true;
    }
    if (changed || st != b->snap.kl_state || kl != b->snap.kl) b->dirty = true;
    b->snap.voice = v;
    b->snap.kl_state = st;
    b->snap.kl = kl;
    b->snap.agree = agree;
}

static void read_power(wb *b) {
    ui_snapshot *s = &b->snap;
    if (s->hw_t == 0 || s->now - s->hw_t >= 0.5) {   // a few dozen sysfs reads: 2 Hz is plenty
        hw_state_read("/", &s->hw);
        s->hw_t = s->now;
    }
    s->n_pw = b->pm ? power_monitor_read(b->pm, s->pw, TEL_MAX_SOURCES) : 0;
    if (s->n_pw > TEL_MAX_SOURCES) s->n_pw = TEL_MAX_SOURCES;
    if (!b->pm) return;
    const char *from = power_monitor_total_from(b->pm, &s->power_measured);
    snprintf(s->power_from, sizeof s->power_from, "%s", from);
    // the total is the sum of the sources of the class the monitor totals (telemetry.h)
    bool est = strcmp(from, "estimate") == 0;
    double w = 0;
    for (int i = 0; i < s->n_pw; i++) {
        const power_reading *p = &s->pw[i];
        if (!p->readable) continue;
        bool cls = est ? p->kind == PWR_ESTIMATE
                       : p->in_total && strstr(from, power_kind_name(p->kind)) != NULL;
        if (cls) w += p->watts;
    }
    s->watts = w;
}

// Scene lines, one at a time, each after the worker is idle (and a `wait` has passed).
static void step_scene(wb *b) {
    if (!b->have_scene || worker_busy(b->w) || tvoice_busy(b->tv) || now_sec() < b->scene_resume) return;
    if (b->scene_i >= b->sc.n) {
        if (b->exit_after_scene && b->chat.streaming < 0) b->quit = true;
        return;
    }
    cmd_line *l = &b->sc.lines[b->scene_i++];
    if (!strcmp(l->def->name, "model") && b->scene_i == 1) return;   // opened already
    char text[1200];
    snprintf(text, sizeof text, "%s %s", l->def->name, l->rest ? l->rest : "");
    run_command(b, text);
}

int tui_workbench_run(const tui_opts *o) {
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    tui_ascii = !(cs && (strcasecmp(cs, "UTF-8") == 0 || strcasecmp(cs, "utf8") == 0));
    wb *b = xcalloc(1, sizeof *b);
    errbuf err = {{0}};
    if (o->scene) {
        if (scene_load(&b->sc, o->scene, &err)) { fprintf(stderr, "cabin: %s\n", err.msg); free(b); return 2; }
        b->have_scene = true;
        b->exit_after_scene = o->exit_after_scene;
    }
    session_opts so = o->s;
    if (b->have_scene && b->sc.n > 0 && !strcmp(b->sc.lines[0].def->name, "model")) so.model_path = b->sc.lines[0].argv[0];
    b->c.speed = 0;
    b->c.front = CMD_IN_WORKBENCH;
    if (cmdlang_check_own(wb_own, CMD_IN_WORKBENCH, &err) || app_open(&b->c, &so, o->free_actions, &err)) {
        fprintf(stderr, "cabin workbench: %s\n", err.msg);
        if (b->have_scene) scene_free(&b->sc);
        free(b);
        return 1;
    }
    b->pm = power_monitor_open("/", &err);
    if (b->pm && power_monitor_start(b->pm, 10, &err) == 0) session_set_power(b->c.as.s, b->pm);
    char hist[1024];
    ui_state_path("workbench_history", hist, sizeof hist);
    ui_state_path("workbench-autosave.json", b->autosave, sizeof b->autosave);
    le_init(&b->le, hist);
    chat_init(&b->chat);
    b->cmp_msg = -1;
    b->snap.kl = b->snap.agree = -1;
    b->w = worker_start(&b->c, &err);
    if (!b->w) { fprintf(stderr, "cabin workbench: %s\n", err.msg); app_close(&b->c); free(b); return 1; }
    b->tv = tvoice_start(b->w, o->audio_in, o->audio_out, o->no_voice);
    if (o->governor) {   // --governor: the loop starts on the worker, as `:governor SPEC` would
        char line[600];
        snprintf(line, sizeof line, "governor %s", o->governor);
        worker_exec(b->w, line);
    }

    initscr();
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    mousemask(BUTTON4_PRESSED
#ifdef BUTTON5_PRESSED
              | BUTTON5_PRESSED
#endif
              , NULL);
    tui_colors_init();
    chat_add(&b->chat, MSG_INFO, "cabin workbench: type a message and Enter; :help or F1 for keys and commands.");
    double last_draw = 0;
    b->dirty = true;
    while (!b->quit && !stopsig_pending()) {   // SIGTERM, SIGINT, SIGHUP: leave as :quit does
        wint_t ch;
        timeout(1000 / FPS / 2);
        int r = wget_wch(stdscr, &ch);
        while (r != ERR) {
            on_key(b, r == KEY_CODE_YES, ch);
            if (b->quit) break;
            timeout(0);
            r = wget_wch(stdscr, &ch);
        }
        drain_events(b);
        if (worker_snapshot(b->w, &b->snap)) b->dirty = true;
        poll_aside(b);
        step_scene(b);
        double t = now_sec();
        if (b->notice_until && t > b->notice_until) { b->ls.notice[0] = 0; b->notice_until = 0; b->dirty = true; }
        if (t - last_draw >= 0.5) b->dirty = true;   // power and clocks move on their own
        if (b->dirty && t - last_draw >= 1.0 / FPS) {
            b->snap.now = t;
            read_power(b);
            int n_panels;
            const tui_panel *const *panels = tui_panels(&n_panels);
            for (int i = 0; i < n_panels; i++) panels[i]->update(&b->snap);
            layout_draw(&b->ls, &b->chat, &b->le, &b->snap);
            last_draw = t;
            b->dirty = false;
        }
    }
    endwin();
    tvoice_stop(b->tv);   // first: a spoken turn in flight waits for the worker
    worker_stop(b->w);
    drain_events(b);   // what the worker posted before it stopped
    worker_free(b->w);
    if (b->autosave[0] && b->chat.n > 1) {
        if (chat_save_json(&b->chat, &b->snap, b->autosave, &err)) fprintf(stderr, "cabin: autosave: %s\n", err.msg);
        else fprintf(stderr, "cabin: transcript saved to %s\n", b->autosave);
    }
    le_free(&b->le);
    chat_free(&b->chat);
    free(b->cmp_prompt);
    strbuf_free(&b->cmp_reply[0]);
    strbuf_free(&b->cmp_reply[1]);
    if (b->heat) { sensitivity_map_free(b->heat); free(b->heat); }
    session_set_power(b->c.as.s, NULL);
    app_close(&b->c);
    power_monitor_close(b->pm);
    if (b->have_scene) scene_free(&b->sc);
    int rc = b->c.failed ? 1 : 0;
    free(b);
    return rc;
}
