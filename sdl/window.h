// The window's state, shared by its loop (sdl/window.c) and its frame (sdl/layout.c).
#ifndef CABIN_SDL_WINDOW_H
#define CABIN_SDL_WINDOW_H

#include "base/str.h"
#include "sdl/gui.h"
#include "sdl/sdl.h"

typedef struct gui {
    ui_session s;
    line_edit le;
    SDL_Window *win;
    gfx g;
    const char *font_path;
    int font_pt;                 // points at scale 1
    gui_pointer ptr;
    gui_regions reg;             // where the last frame put things
    int chat_w;                  // the conversation's width, pixels
    bool help;
    int help_top, help_page;     // the help overlay's first line, lines a page scrolls (0: it fits)
    SDL_Keycode talk_key;
    bool talk_held;              // the talk key is down and talking
    bool drop_text;              // the talk key's own text event is not typed
} gui;

void gui_draw_frame(gui *w);
int gui_chat_cols(const gui *w);
// "scale S", "chat X Y W H", "input ...", "heat ...", "panel-NAME X Y W H" (each panel drawn),
// "cell LAYER KIND X Y W H" lines (pixels).
void gui_regions_text(const gui *w, strbuf *out);

#endif
