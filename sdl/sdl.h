// The window's drawing layer (sdl/draw.c) and its panels (sdl/panels.c): what sdl/window.c and
// the panel files share. Coordinates are output pixels (HiDPI: the window's points times
// g->scale); text is one monospace font, each character one cell of g->cw x g->ch pixels.
#ifndef CABIN_SDL_SDL_H
#define CABIN_SDL_SDL_H

#include "ui/lineedit.h"
#include "ui/palette.h"
#include "ui/panel_data.h"
#include "ui/session.h"

#include <SDL2/SDL.h>
#include <SDL2/SDL_ttf.h>

// Colours that carry no meaning beyond the look (meaningful ones: ui/palette.h).
extern const ui_rgb C_BG, C_PANEL, C_BORDER, C_TITLE, C_TEXT, C_DIM, C_USER, C_ASSIST, C_ACTION,
    C_VEHICLE, C_REFUSED, C_ERROR, C_INFO, C_GOOD, C_WARN, C_GRIDLINE;

#define GLYPH_CACHE 512
typedef struct gfx {
    SDL_Renderer *r;
    TTF_Font *font;
    int cw, ch;                  // a character cell, pixels
    float scale;                 // output pixels per window point
    struct { uint32_t cp; SDL_Texture *t; int w, h; } glyph[GLYPH_CACHE];   // white glyphs, tinted
} gfx;

int gfx_open_font(gfx *g, const char *path, int pt, errbuf *err);
void gfx_close(gfx *g);
void gfx_fill(gfx *g, SDL_Rect r, ui_rgb c);
void gfx_frame(gfx *g, SDL_Rect r, ui_rgb c);   // a one-pixel outline
void gfx_line(gfx *g, int x0, int y0, int x1, int y1, ui_rgb c);
// UTF-8 text at (x, y) (top-left), at most max_w pixels wide (cut at a character); control
// bytes and broken UTF-8 are drawn as '?'. Returns the width drawn.
int gfx_text(gfx *g, int x, int y, const char *s, ui_rgb c, int max_w);
int gfx_textf(gfx *g, int x, int y, int max_w, ui_rgb c, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
int gfx_text_cols(const char *s, int bytes);     // characters in s[0..bytes)
ui_rgb gfx_tone(int tone);                       // the colour of an enum ui_tone
// A line of ui/panel_data.h in its tone's colour; returns the width drawn.
int gfx_line_text(gfx *g, int x, int y, const ui_line *l, int max_w);
// A panel's frame and title; returns the rectangle inside it.
SDL_Rect gfx_box(gfx *g, SDL_Rect r, const char *title);
// A plot of v[0..n) (oldest first) in r with its axes: y from 0 to the max (ticks labelled in
// unit), x the last n_max samples (the newest at the right; n_max 0: the n there are), labelled
// x_label.
void gfx_plot(gfx *g, SDL_Rect r, const float *v, int n, int n_max, ui_rgb c, const char *unit, const char *x_label);
// A horizontal bar of frac (0..1), its empty part in a darker shade.
void gfx_bar(gfx *g, SDL_Rect r, double frac, ui_rgb c);
// The heat scale as a gradient from frac 0 to 1, lo and hi written at its ends with unit.
void gfx_heat_legend(gfx *g, int x, int y, int w, double lo, double hi, const char *unit);

// What a panel may know of the pointer: its position (pixels) and where to say the value under it.
typedef struct gui_pointer {
    int x, y;                    // -1: outside the window
    char hover[160];             // set by the panel under the pointer ("" none)
} gui_pointer;

// Where the pixel test looks (the snapshot's tEXt chunk "cabin-regions" lists them).
#define GUI_MAX_CELLS (UI_MAX_LAYERS * UI_LAYER_KINDS)
typedef struct gui_regions {
    SDL_Rect chat, input, heat;
    int n_panels;
    struct { const char *name; SDL_Rect r; } panel[8];   // the panels drawn, top to bottom
    int n_cells;
    struct { int layer, kind; SDL_Rect r; } cell[GUI_MAX_CELLS];   // the precision grid's cells
} gui_regions;

// A panel: its name, the height it wants for a width, a function that reads the newest snapshot
// (keeping whatever history it plots), and one that draws into a rectangle.
typedef struct gui_panel {
    const char *name;
    int (*height)(gfx *g, const ui_snapshot *s, int w);       // the height it would like
    // the least it can be drawn in (its plot shrunk or left out: text only); NULL: height
    int (*min_height)(gfx *g, const ui_snapshot *s, int w);
    void (*update)(const ui_snapshot *s);
    void (*draw)(gfx *g, SDL_Rect r, const ui_snapshot *s, gui_pointer *p, gui_regions *reg);
} gui_panel;
const gui_panel *const *gui_panels(int *n);   // the table (sdl/panels.c)

// The conversation (sdl/chat.c): messages wrapped to the width, newest at the bottom, scrolled
// up by c->scroll rows.
void gui_chat_draw(gfx *g, SDL_Rect r, chat_log *c);
// The input line (sdl/chat.c): prompt, text, cursor, the reverse search when on.
void gui_input_draw(gfx *g, SDL_Rect r, const line_edit *e);

#endif
