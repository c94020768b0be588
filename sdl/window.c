// cabin gui: the workbench's session (ui/session.h) in an SDL2 window. One thread draws (this
// one); it reads events, turns keys into session calls, and redraws when the session says a
// frame is due (something changed, at most FPS a second), never per token.
#include "sdl/window.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/stopsig.h"
#include "sdl/png.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FPS 20
#define DEFAULT_FONT "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"

bool gui_available(char *why, size_t n) { if (n) why[0] = 0; return true; }

// Output pixels per point (HiDPI), and the font at that scale.
static int fit_scale(gui *w, errbuf *err) {
    int ww, wh, ow, oh;
    SDL_GetWindowSize(w->win, &ww, &wh);
    SDL_GetRendererOutputSize(w->g.r, &ow, &oh);
    float scale = ww > 0 ? (float)ow / (float)ww : 1;
    if (scale < 1) scale = 1;
    if (w->g.font && scale == w->g.scale) return 0;
    gfx_close(&w->g);
    w->g.scale = scale;
    return gfx_open_font(&w->g, w->font_path, (int)(w->font_pt * scale + 0.5f), err);
}

// `:snapshot FILE.png`: the frame drawn now, read back, written as PNG with the regions.
static int gui_snapshot(void *ud, const char *path, errbuf *err) {
    gui *w = ud;
    w->s.snap.now = now_sec();
    gui_draw_frame(w);
    int W, H;
    SDL_GetRendererOutputSize(w->g.r, &W, &H);
    uint8_t *px = xmalloc((size_t)W * H * 3);
    int rc;
    if (SDL_RenderReadPixels(w->g.r, NULL, SDL_PIXELFORMAT_RGB24, px, W * 3) != 0) {
        rc = err_set(err, "snapshot %s: reading the window back: %s", path, SDL_GetError());
    } else {
        strbuf regions = {0};
        gui_regions_text(w, &regions);
        rc = png_write_rgb(path, px, W, H, "cabin-regions", strbuf_str(&regions), err);
        strbuf_free(&regions);
    }
    free(px);
    SDL_RenderPresent(w->g.r);
    return rc;
}

static int gui_chat_cols_cb(void *ud) { return gui_chat_cols(ud); }
static void gui_type(void *ud, const char *text) { le_insert_text(&((gui *)ud)->le, text); }

static int le_key_of(SDL_Keycode k) {
    switch (k) {
    case SDLK_RETURN: case SDLK_KP_ENTER: return LE_ENTER;
    case SDLK_LEFT: return LE_LEFT;
    case SDLK_RIGHT: return LE_RIGHT;
    case SDLK_HOME: return LE_HOME;
    case SDLK_END: return LE_END;
    case SDLK_BACKSPACE: return LE_BACKSPACE;
    case SDLK_DELETE: return LE_DELETE;
    case SDLK_UP: return LE_UP;
    case SDLK_DOWN: return LE_DOWN;
    default: return LE_NONE;
    }
}

static void scroll_chat(gui *w, int rows) {
    w->s.chat.scroll += rows;
    if (w->s.chat.scroll < 0) w->s.chat.scroll = 0;
}

static void on_key_down(gui *w, const SDL_KeyboardEvent *e) {
    ui_session *s = &w->s;
    SDL_Keycode k = e->keysym.sym;
    bool ctrl = (e->keysym.mod & KMOD_CTRL) != 0;
    s->dirty = true;
    // hold-to-talk (voice off: the key types as any other; F5 still says why it is off)
    if (k == w->talk_key && !ctrl && (w->talk_held || (w->le.len == 0 && s->snap.voice.state != TV_OFF))) {
        w->drop_text = true;
        if (!e->repeat && !w->talk_held) { w->talk_held = true; ui_session_talk_hold(s, true); }
        return;
    }
    if (w->help) {   // PgUp/PgDn (and Up/Down) scroll a help longer than the window; any other key closes it
        int pg = w->help_page;
        if (pg && (k == SDLK_PAGEDOWN || k == SDLK_DOWN)) { w->help_top += k == SDLK_PAGEDOWN ? pg : 1; return; }
        if (pg && (k == SDLK_PAGEUP || k == SDLK_UP)) { w->help_top -= k == SDLK_PAGEUP ? pg : 1; return; }
        w->help = false;
        if (k == SDLK_ESCAPE || k == SDLK_F1) return;
    }
    int page = w->reg.chat.h / (w->g.ch > 0 ? w->g.ch : 16) - 1;
    switch (k) {
    case SDLK_F1: w->help = true; w->help_top = 0; return;
    case SDLK_F2: ui_session_cycle_precision(s); return;
    case SDLK_F3: ui_session_cycle_kv(s); return;
    case SDLK_F4: ui_session_cycle_heat(s); return;
    case SDLK_F5: ui_session_talk(s); return;
    case SDLK_PAGEUP: scroll_chat(w, page > 1 ? page : 1); return;
    case SDLK_PAGEDOWN: scroll_chat(w, -(page > 1 ? page : 1)); return;
    default: break;
    }
    if (ctrl) {
        if (k == SDLK_c) { if (!ui_session_stop(s)) le_clear(&w->le); return; }
        if (k == SDLK_d && w->le.len == 0) { s->quit = true; return; }
        if (k == SDLK_v) {
            char *t = SDL_GetClipboardText();
            if (t) { le_insert_text(&w->le, t); SDL_free(t); }
            return;
        }
        if (k >= SDLK_a && k <= SDLK_z) { if (le_key(&w->le, 0, (wint_t)(k - SDLK_a + 1))) ui_session_enter(&w->s, &w->le); }
        return;
    }
    if (k == SDLK_TAB) { le_key(&w->le, 0, '\t'); return; }
    if (k == SDLK_ESCAPE) { if (w->le.searching) le_key(&w->le, 0, 27); return; }
    int lk = le_key_of(k);
    if (lk != LE_NONE && le_key(&w->le, 1, (wint_t)lk)) ui_session_enter(&w->s, &w->le);
}

static void on_text(gui *w, const char *t) {
    if (w->drop_text) { w->drop_text = false; if (!strcmp(t, " ")) return; }
    if (w->help) { w->help = false; return; }
    if (!w->le.searching) { le_insert_text(&w->le, t); return; }
    // the reverse search takes characters one at a time
    mbstate_t ms;
    memset(&ms, 0, sizeof ms);
    size_t n = strlen(t);
    while (n > 0) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, t, n, &ms);
        if (k == (size_t)-1 || k == (size_t)-2 || k == 0) break;
        le_key(&w->le, 0, (wint_t)wc);
        t += k;
        n -= k;
    }
}

static void on_event(gui *w, const SDL_Event *e) {
    ui_session *s = &w->s;
    switch (e->type) {
    case SDL_QUIT: s->quit = true; break;
    case SDL_KEYDOWN: on_key_down(w, &e->key); break;
    case SDL_KEYUP:
        if (e->key.keysym.sym == w->talk_key && w->talk_held) { w->talk_held = false; ui_session_talk_hold(s, false); s->dirty = true; }
        break;
    case SDL_TEXTINPUT: on_text(w, e->text.text); s->dirty = true; break;
    case SDL_MOUSEWHEEL: scroll_chat(w, 3 * e->wheel.y); s->dirty = true; break;
    case SDL_MOUSEMOTION:
        w->ptr.x = (int)(e->motion.x * w->g.scale);
        w->ptr.y = (int)(e->motion.y * w->g.scale);
        s->dirty = true;
        break;
    case SDL_WINDOWEVENT:
        if (e->window.event == SDL_WINDOWEVENT_LEAVE) w->ptr.x = w->ptr.y = -1;
        if (e->window.event == SDL_WINDOWEVENT_SIZE_CHANGED) {
            errbuf err;
            if (fit_scale(w, &err)) ui_session_notice(s, "%s", err.msg);
        }
        s->dirty = true;
        break;
    default: break;
    }
}

// The window, its renderer and the font: 0, or 2 with one line in err (no display, no driver,
// no font).
static int open_window(gui *w, const gui_opts *g, errbuf *err) {
    // A display server only (SDL_VIDEODRIVER chooses another): without one SDL would fall back
    // to the console's framebuffer, where no window shows.
    if (!getenv("SDL_VIDEODRIVER")) SDL_SetHint(SDL_HINT_VIDEODRIVER, getenv("WAYLAND_DISPLAY") ? "wayland,x11" : "x11");
    if (SDL_Init(SDL_INIT_VIDEO) != 0) {
        if (!getenv("DISPLAY") && !getenv("WAYLAND_DISPLAY"))
            return err_set(err, "cabin gui: no display (DISPLAY and WAYLAND_DISPLAY are not set): %s", SDL_GetError()), 2;
        return err_set(err, "cabin gui: no window: %s", SDL_GetError()), 2;
    }
    if (TTF_Init() != 0) return err_set(err, "cabin gui: SDL2_ttf: %s", TTF_GetError()), 2;
    int W = g->width > 0 ? g->width : 1280, H = g->height > 0 ? g->height : 800;
    w->win = SDL_CreateWindow("cabin", SDL_WINDOWPOS_CENTERED, SDL_WINDOWPOS_CENTERED, W, H,
                              SDL_WINDOW_RESIZABLE | SDL_WINDOW_ALLOW_HIGHDPI);
    if (!w->win) return err_set(err, "cabin gui: no window: %s", SDL_GetError()), 2;
    SDL_SetWindowMinimumSize(w->win, GUI_MIN_W, GUI_MIN_H);
    w->g.r = SDL_CreateRenderer(w->win, -1, SDL_RENDERER_ACCELERATED);
    if (!w->g.r) w->g.r = SDL_CreateRenderer(w->win, -1, SDL_RENDERER_SOFTWARE);
    if (!w->g.r) return err_set(err, "cabin gui: no renderer: %s", SDL_GetError()), 2;
    w->font_path = g->font ? g->font : DEFAULT_FONT;
    w->font_pt = 14;
    if (fit_scale(w, err)) return err_prefix(err, "cabin gui"), 2;
    const char *key = g->talk_key ? g->talk_key : "Space";
    w->talk_key = SDL_GetKeyFromName(key);
    if (w->talk_key == SDLK_UNKNOWN) return err_set(err, "cabin gui: --talk-key %s: not a key SDL knows (e.g. Space, F6, Right Ctrl)", key), 2;
    return 0;
}

static void close_window(gui *w) {
    gfx_close(&w->g);
    if (w->g.r) SDL_DestroyRenderer(w->g.r);
    if (w->win) SDL_DestroyWindow(w->win);
    if (TTF_WasInit()) TTF_Quit();
    SDL_Quit();
}

int gui_run(const ui_opts *o, const gui_opts *g) {
    setlocale(LC_ALL, "");
    gui *w = xcalloc(1, sizeof *w);
    w->ptr.x = w->ptr.y = -1;
    errbuf err = {{0}};
    int rc = open_window(w, g, &err);   // before the model: no display fails at once
    if (rc) { fprintf(stderr, "%s\n", err.msg); close_window(w); free(w); return rc; }
    ui_face face = { "cabin gui", w, gui_snapshot, gui_type, gui_chat_cols_cb, true };
    rc = ui_session_open(&w->s, o, &face, &err);
    if (rc) { fprintf(stderr, "%s\n", err.msg); close_window(w); free(w); return rc; }
    char hist[1024];
    ui_state_path("workbench_history", hist, sizeof hist);
    le_init(&w->le, hist);
    SDL_StartTextInput();
    while (!w->s.quit && !stopsig_pending()) {
        SDL_Event e;
        if (SDL_WaitEventTimeout(&e, 1000 / FPS / 2)) {
            on_event(w, &e);
            while (!w->s.quit && SDL_PollEvent(&e)) on_event(w, &e);
        }
        if (ui_session_poll(&w->s, now_sec(), FPS)) {
            if (w->s.help) { w->help = true; w->s.help = false; }
            gui_draw_frame(w);
            SDL_RenderPresent(w->g.r);
        }
    }
    SDL_StopTextInput();
    close_window(w);
    rc = ui_session_close(&w->s);
    le_free(&w->le);
    free(w);
    return rc;
}
