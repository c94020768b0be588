// The plain chat front end (`cabin chat`): line editing and history, replies streamed with the
// action line shown apart, `/` commands from the one command table (app/cmdlang.c), each turn
// through the one assistant turn (app/turn.h).
#include "cli/chat.h"
#include "app/cmdlang.h"
#include "app/app.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

static session *volatile chat_session;
static atomic_bool chat_generating;

static void cancel_reply(void) {
    if (atomic_load(&chat_generating) && chat_session) session_cancel(chat_session);
}

// SIGINT on a terminal: stops the reply, or drops the line being typed; chat goes on.
static void on_sigint(int sig) {
    (void)sig;
    if (atomic_load(&chat_generating) && chat_session) {
        session_cancel(chat_session);
        return;
    }
    // At the prompt: drop the line being typed, like a shell does.
    write(STDOUT_FILENO, "\n", 1);
    rl_on_new_line();
    rl_replace_line("", 0);
    rl_redisplay();
}

static char *history_path(void) {
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[1024];
    if (state && *state) snprintf(dir, sizeof dir, "%s/cabin", state);
    else if (home && *home) snprintf(dir, sizeof dir, "%s/.local/state/cabin", home);
    else return NULL;
    // mkdir -p
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') { *p = 0; mkdir(dir, 0700); *p = '/'; }
    mkdir(dir, 0700);
    size_t n = strlen(dir) + 16;
    char *path = xmalloc(n);
    snprintf(path, n, "%s/history", dir);
    return path;
}

// ---- a turn as chat shows it ----
// Streams a reply. Replies in the assistant format ("<act>...</act> sentence") are held back
// until the action is complete, so it can be shown apart from the spoken sentence.
typedef struct chat_out {
    strbuf text;         // the reply so far
    size_t shown;        // bytes already printed
    bool is_action;      // reply starts with <act>
    bool decided;        // enough text to know whether it does
    bool sentence_started;   // after the action: the spoken sentence has begun (spaces before it are dropped)
    bool tty;            // colours
} chat_out;

static bool chat_print(void *ud, const char *piece, int len) {
    chat_out *o = ud;
    strbuf_append(&o->text, piece, (size_t)len);
    const char *text = o->text.s;
    size_t n = o->text.len;
    if (!o->decided) {
        const char *p = text;
        while (*p == ' ' || *p == '\n') p++;
        size_t have = strlen(p);
        if (have < 5 && strncmp(p, "<act>", have) == 0) return true;   // could still be <act>
        o->decided = true;
        o->is_action = strncmp(p, "<act>", 5) == 0;
    }
    if (o->is_action) {
        const char *close = strstr(text, "</act>");
        if (!close) return true;
        if (o->shown == 0) {
            action a;
            char sentence[8], err[128], desc[256];
            action_parse(text, &a, sentence, sizeof sentence, err, sizeof err);
            action_format(&a, desc, sizeof desc);
            printf("%s[action] %s%s\n", o->tty ? "\033[36m" : "", desc, o->tty ? "\033[0m" : "");
            o->shown = (size_t)(close + 6 - text);
            while (o->shown < n && text[o->shown] == ' ') o->shown++;
        }
    }
    if (o->is_action && !o->sentence_started) {
        while (o->shown < n && text[o->shown] == ' ') o->shown++;
        if (o->shown < n) o->sentence_started = true;
    }
    fwrite(text + o->shown, 1, n - o->shown, stdout);
    o->shown = n;
    fflush(stdout);
    return true;
}

// What was held back (an action line that never closed) is printed before what follows it.
static void chat_flush(chat_out *o) {
    if (o->shown < o->text.len) fwrite(o->text.s + o->shown, 1, o->text.len - o->shown, stdout);
    o->shown = o->text.len;
}

static void chat_not_understood(void *ud, const char *why) {
    chat_flush(ud);
    printf("\n[action not understood: %s]", why);
}

static void chat_vehicle(void *ud, const action *a, const char *change) {
    chat_out *o = ud;
    chat_flush(o);
    // queries (status.query, nav.eta) answer from the car's state; other actions change it
    if (change[0])
        printf("\n%s[%s] %s%s", o->tty ? "\033[32m" : "", action_is_query(a) ? "answer" : "vehicle", change, o->tty ? "\033[0m" : "");
}

static void chat_refused(void *ud, const action *a, const char *reason, const char *sentence) {
    (void)a;
    chat_out *o = ud;
    chat_flush(o);
    // the sentence says the car's reason already (action_grammar_set_car) unless the grammar is off
    bool said = strstr(sentence, reason) != NULL;
    printf("\n%s[refused]%s%s%s", o->tty ? "\033[33m" : "", said ? "" : " ", said ? "" : reason, o->tty ? "\033[0m" : "");
}

// One user turn. 0, or -1 (the error printed).
static int chat_turn(app_ctx *c, const char *line) {
    errbuf err = {{0}};
    chat_out out = { .tty = isatty(STDOUT_FILENO) };
    const turn_hooks h = { .ud = &out, .on_token = chat_print, .on_not_understood = chat_not_understood,
                           .on_vehicle_change = chat_vehicle, .on_refused = chat_refused };
    char *reply = NULL;
    atomic_store(&chat_generating, true);
    int rc = assistant_turn(&c->as, line, &h, &reply, &err);
    atomic_store(&chat_generating, false);
    if (rc) assistant_act(&c->as, reply, &h);   // a reply cut off by an error is acted on as far as it came
    chat_flush(&out);
    free(reply);
    strbuf_free(&out.text);
    printf("\n");
    if (rc) fprintf(stderr, "cabin chat: %s\n", err.msg);
    char note[ERR_LINE];   // e.g. the device lost and the CPU taking over: said once
    if (session_take_notice(c->as.s, note, sizeof note)) fprintf(stderr, "cabin chat: %s\n", note);
    return rc;
}

// ---- chat's own handlers of the command table's rows (the others run on the app object) ----
typedef struct chat_front { app_ctx c; bool quit; } chat_front;

static int chat_reset(void *front, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    chat_front *ch = front;
    assistant_reset(&ch->c.as);
    printf("[conversation cleared]\n");
    return 0;
}

static int chat_stats(void *front, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    chat_front *ch = front;
    session_stats st;
    session_get_stats(ch->c.as.s, &st);
    printf("[prompt %d tok, prefill %.0f tok/s, TTFT %.0f ms, %d tok at %.1f tok/s | cache %d/%d | "
           "weights %.1f MiB, KV %.1f MiB | %s | template %s]\n", st.prompt_tokens, st.prefill_tps,
           st.ttft_ms, st.gen_tokens, st.decode_tps, st.n_past, st.n_ctx,
           (double)st.weight_bytes / (1 << 20), (double)st.kv_bytes / (1 << 20), st.backend,
           st.template_name);
    return 0;
}

static int chat_help(void *front, cmd_line *l, errbuf *err) {
    (void)front; (void)l; (void)err;
    cmd_help_row rows[CMD_MAX_ROWS];
    int n = cmdlang_help_rows(CMD_IN_CHAT, "/", rows, CMD_MAX_ROWS);
    for (int i = 0; i < n; i++) printf("%-8s %s\n", rows[i].usage, rows[i].help);
    printf("Ctrl-D   leave\nCtrl-C   stop the reply being written\n");
    return 0;
}

static int chat_quit(void *front, cmd_line *l, errbuf *err) {
    (void)l; (void)err;
    ((chat_front *)front)->quit = true;
    return 0;
}

static const cmd_own chat_own[] = {
    { "reset", chat_reset }, { "stats", chat_stats }, { "help", chat_help }, { "quit", chat_quit }, { NULL, NULL },
};

// A `/` line: a command of the table that chat offers.
static void chat_command(chat_front *ch, const char *line) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(line + 1, " \t"), line + 1);
    if (!cmdlang_find(name, CMD_IN_CHAT)) { printf("unknown command %s (try /help)\n", line); return; }
    cmd_line l;
    errbuf err = {{0}};
    if (cmdlang_parse(line + 1, CMDLANG_TYPED, 1, CMD_IN_CHAT, &l, &err) < 0) { printf("%s\n", cmdlang_for_person(err.msg)); return; }
    int (*own)(void *, cmd_line *, errbuf *) = cmdlang_own_handler(chat_own, l.def);
    int rc = own ? own(ch, &l, &err) : cmdlang_run(&ch->c, &l, &err);
    if (rc) printf("%s\n", cmdlang_for_person(err.msg));
    cmdlang_free(&l);
}

// Called by readline when a signal interrupts its read: a stop signal ends the line at once.
static int chat_signal_hook(void) {
    if (stopsig_pending()) rl_done = 1;
    return 0;
}

// The next line: readline on a terminal, else a line of stdin. NULL at the end.
static char *chat_read(bool tty) {
    if (tty) return readline("> ");
    char *line = NULL;
    size_t cap = 0;
    ssize_t got = getline(&line, &cap, stdin);
    if (got < 0) { free(line); return NULL; }
    if (got > 0 && line[got - 1] == '\n') line[got - 1] = 0;
    return line;
}

int chat_run(const session_opts *o, bool free_actions, const char *governor) {
    chat_front ch;
    memset(&ch, 0, sizeof ch);
    errbuf err = {{0}};
    if (cmdlang_check_own(chat_own, CMD_IN_CHAT, &err)) { fprintf(stderr, "cabin chat: %s\n", err.msg); return 1; }
    ch.c.front = CMD_IN_CHAT;
    ch.c.out = stdout;
    if (app_open(&ch.c, o, free_actions, &err)) { fprintf(stderr, "cabin chat: %s\n", err.msg); return 1; }
    if (governor && app_governor_start(&ch.c, governor, &err)) {
        fprintf(stderr, "cabin chat: --governor: %s\n", err.msg);
        app_close(&ch.c);
        return 2;
    }
    session *s = ch.c.as.s;
    char note[ERR_LINE];   // e.g. the file's chat template not recognised: said once, before the first turn
    if (session_take_notice(s, note, sizeof note)) fprintf(stderr, "cabin chat: %s\n", note);
    bool tty = isatty(STDIN_FILENO);
    char *hist = NULL;
    if (tty) {
        hist = history_path();
        if (hist) read_history(hist);
        session_stats st;
        session_get_stats(s, &st);
        printf("cabin chat — %s (%s, template %s). /help for commands, Ctrl-D to leave.\n",
               session_model(s)->name, st.backend, st.template_name);
    }
    chat_session = s;
    // SIGTERM, SIGHUP (and SIGINT from a pipe, where there is no prompt to go back to) stop the
    // reply and leave: history kept, terminal restored, the status of the signal (143, 129, 130).
    stopsig_catch(cancel_reply, false);
    if (tty) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigaction(SIGINT, &sa, NULL);
        rl_signal_event_hook = chat_signal_hook;
    }
    int rc = 0;
    char *line;
    while (!ch.quit && !stopsig_pending() && (line = chat_read(tty))) {
        if (stopsig_pending()) { free(line); break; }   // the line readline was given up on
        if (*line && tty) {
            add_history(line);
            if (hist) append_history(1, hist);
        }
        if (line[0] == '/') chat_command(&ch, line);
        else if (*line && chat_turn(&ch.c, line)) rc = 1;
        fflush(stdout);   // a reader at the other end of a pipe gets each answer as it is done
        chat_session = ch.c.as.s;
        free(line);
    }
    if (tty) {
        printf("\n");
        if (hist) history_truncate_file(hist, 1000);
    }
    free(hist);
    chat_session = NULL;
    app_close(&ch.c);
    stopsig_finish();   // a stop signal ends the program by that signal, now that all is closed
    return rc && !tty ? 1 : 0;
}
