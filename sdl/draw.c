// The window's drawing layer (sdl/sdl.h): rectangles, lines, text from a glyph cache, boxes,
// plots with axes, bars and the heat scale. Text is drawn a character at a time from white glyph
// textures tinted to the colour, so a frame renders no text through the font.
#include "sdl/sdl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const ui_rgb C_BG = { 22, 24, 30 }, C_PANEL = { 30, 33, 41 }, C_BORDER = { 62, 68, 84 }, C_TITLE = { 150, 190, 255 },
             C_TEXT = { 220, 223, 228 }, C_DIM = { 130, 136, 150 }, C_USER = { 120, 200, 255 }, C_ASSIST = { 230, 230, 235 },
             C_ACTION = { 190, 150, 255 }, C_VEHICLE = { 110, 220, 150 }, C_REFUSED = { 255, 170, 90 },
             C_ERROR = { 255, 95, 95 }, C_INFO = { 150, 160, 180 }, C_GOOD = { 120, 220, 120 }, C_WARN = { 255, 200, 80 },
             C_GRIDLINE = { 48, 52, 64 };

int gfx_open_font(gfx *g, const char *path, int pt, errbuf *err) {
    g->font = TTF_OpenFont(path, pt);
    if (!g->font) return err_set(err, "font %s: %s", path, TTF_GetError());
    int minx, maxx, miny, maxy, adv;
    if (TTF_GlyphMetrics32(g->font, 'M', &minx, &maxx, &miny, &maxy, &adv) != 0 || adv <= 0) adv = pt * 6 / 10;
    g->cw = adv;
    g->ch = TTF_FontLineSkip(g->font);
    return 0;
}

void gfx_close(gfx *g) {
    for (int i = 0; i < GLYPH_CACHE; i++)
        if (g->glyph[i].t) SDL_DestroyTexture(g->glyph[i].t);
    memset(g->glyph, 0, sizeof g->glyph);
    if (g->font) TTF_CloseFont(g->font);
    g->font = NULL;
}

static void set_color(gfx *g, ui_rgb c) { SDL_SetRenderDrawColor(g->r, c.r, c.g, c.b, 255); }

void gfx_fill(gfx *g, SDL_Rect r, ui_rgb c) {
    if (r.w <= 0 || r.h <= 0) return;
    set_color(g, c);
    SDL_RenderFillRect(g->r, &r);
}

void gfx_frame(gfx *g, SDL_Rect r, ui_rgb c) {
    set_color(g, c);
    SDL_RenderDrawRect(g->r, &r);
}

void gfx_line(gfx *g, int x0, int y0, int x1, int y1, ui_rgb c) {
    set_color(g, c);
    SDL_RenderDrawLine(g->r, x0, y0, x1, y1);
}

// The code point at s (at most n bytes) and its length; broken UTF-8 and control bytes are '?'.
static int next_cp(const char *s, int n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    int len = u[0] < 0x80 ? 1 : (u[0] & 0xe0) == 0xc0 ? 2 : (u[0] & 0xf0) == 0xe0 ? 3 : (u[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n) { *cp = '?'; return 1; }
    uint32_t v = len == 1 ? u[0] : u[0] & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xc0) != 0x80) { *cp = '?'; return 1; }
        v = v << 6 | (u[i] & 0x3f);
    }
    if (v < 0x20 || v == 0x7f || (v >= 0x80 && v < 0xa0) || (len > 1 && v < 0x80) || v > 0x10ffff) v = '?';
    *cp = v;
    return len;
}

int gfx_text_cols(const char *s, int bytes) {
    int n = 0;
    uint32_t cp;
    for (int i = 0; i < bytes; i += next_cp(s + i, bytes - i, &cp)) n++;
    return n;
}

// The glyph's white texture, cached by code point (open addressing; a full cache renders anew).
static SDL_Texture *glyph(gfx *g, uint32_t cp, int *w, int *h, bool *owned) {
    *owned = false;
    for (int k = 0; k < GLYPH_CACHE; k++) {
        int i = (int)((cp + (uint32_t)k) % GLYPH_CACHE);
        if (g->glyph[i].t && g->glyph[i].cp == cp) { *w = g->glyph[i].w; *h = g->glyph[i].h; return g->glyph[i].t; }
        if (!g->glyph[i].t) {
            SDL_Surface *sf = TTF_RenderGlyph32_Blended(g->font, cp, (SDL_Color){ 255, 255, 255, 255 });
            if (!sf) return NULL;
            SDL_Texture *t = SDL_CreateTextureFromSurface(g->r, sf);
            g->glyph[i].cp = cp;
            g->glyph[i].t = t;
            g->glyph[i].w = *w = sf->w;
            g->glyph[i].h = *h = sf->h;
            SDL_FreeSurface(sf);
            return t;
        }
    }
    SDL_Surface *sf = TTF_RenderGlyph32_Blended(g->font, cp, (SDL_Color){ 255, 255, 255, 255 });
    if (!sf) return NULL;
    SDL_Texture *t = SDL_CreateTextureFromSurface(g->r, sf);
    *w = sf->w;
    *h = sf->h;
    SDL_FreeSurface(sf);
    *owned = true;
    return t;
}

int gfx_text(gfx *g, int x, int y, const char *s, ui_rgb c, int max_w) {
    int n = (int)strlen(s), x0 = x;
    for (int i = 0; i < n;) {
        uint32_t cp;
        i += next_cp(s + i, n - i, &cp);
        if (x + g->cw > x0 + max_w) break;
        if (cp != ' ') {
            int w, h;
            bool owned;
            SDL_Texture *t = glyph(g, cp, &w, &h, &owned);
            if (t) {
                SDL_SetTextureColorMod(t, c.r, c.g, c.b);
                SDL_Rect d = { x, y, w, h };
                SDL_RenderCopy(g->r, t, NULL, &d);
                if (owned) SDL_DestroyTexture(t);
            }
        }
        x += g->cw;
    }
    return x - x0;
}

int gfx_textf(gfx *g, int x, int y, int max_w, ui_rgb c, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return gfx_text(g, x, y, buf, c, max_w);
}

SDL_Rect gfx_box(gfx *g, SDL_Rect r, const char *title) {
    gfx_fill(g, r, C_PANEL);
    gfx_frame(g, r, C_BORDER);
    int pad = g->cw / 2 + 2;
    gfx_text(g, r.x + pad, r.y + 3, title, C_TITLE, r.w - 2 * pad);
    int top = g->ch + 6;
    gfx_line(g, r.x + 1, r.y + top - 2, r.x + r.w - 2, r.y + top - 2, C_GRIDLINE);
    return (SDL_Rect){ r.x + pad, r.y + top, r.w - 2 * pad, r.h - top - 3 };
}

static double nice_max(double v) {
    if (!(v > 0)) return 1;
    double p = pow(10, floor(log10(v)));
    for (double m = 1; m <= 10; m *= 2) if (v <= m * p) return m * p;
    return 10 * p;
}

void gfx_plot(gfx *g, SDL_Rect r, const float *v, int n, int n_max, ui_rgb c, const char *unit, const char *x_label) {
    int lw = g->cw * 6;   // y labels
    SDL_Rect a = { r.x + lw, r.y + g->ch / 2, r.w - lw - 2, r.h - g->ch - g->ch / 2 - 2 };
    if (a.w < 8 || a.h < 8) return;
    double hi = 0;
    for (int i = 0; i < n; i++) if (v[i] > hi) hi = v[i];
    hi = nice_max(hi);
    for (int k = 0; k <= 2; k++) {   // grid lines and ticks at 0, half, max
        int y = a.y + a.h - k * a.h / 2;
        gfx_line(g, a.x, y, a.x + a.w, y, C_GRIDLINE);
        char t[32];
        double val = hi * k / 2;
        snprintf(t, sizeof t, val >= 100 ? "%.0f" : val >= 10 ? "%.1f" : "%.2f", val);
        gfx_text(g, r.x, y - g->ch / 2, t, C_DIM, lw - g->cw / 2);
    }
    gfx_line(g, a.x, a.y, a.x, a.y + a.h, C_BORDER);
    gfx_line(g, a.x, a.y + a.h, a.x + a.w, a.y + a.h, C_BORDER);
    char xl[96];
    snprintf(xl, sizeof xl, "%s  (%s)", x_label, unit);
    gfx_text(g, a.x + 2, a.y + a.h + 1, xl, C_DIM, a.w);
    if (n < 2) return;
    if (n_max < n) n_max = n;
    int skip = n_max - n;   // the oldest slots are empty: the line starts further right
    set_color(g, c);
    for (int i = 1; i < n; i++) {
        int x0 = a.x + (int)((double)(skip + i - 1) * a.w / (n_max - 1)), x1 = a.x + (int)((double)(skip + i) * a.w / (n_max - 1));
        int y0 = a.y + a.h - (int)(v[i - 1] / hi * a.h), y1 = a.y + a.h - (int)(v[i] / hi * a.h);
        SDL_RenderDrawLine(g->r, x0, y0, x1, y1);
        SDL_RenderDrawLine(g->r, x0, y0 - 1, x1, y1 - 1);   // two pixels thick
    }
}

void gfx_bar(gfx *g, SDL_Rect r, double frac, ui_rgb c) {
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    gfx_fill(g, r, C_GRIDLINE);
    SDL_Rect f = r;
    f.w = (int)(r.w * frac + 0.5);
    gfx_fill(g, f, c);
}

void gfx_heat_legend(gfx *g, int x, int y, int w, double lo, double hi, const char *unit) {
    char a[32], b[64];
    snprintf(a, sizeof a, "%.2g ", lo);
    snprintf(b, sizeof b, " %.2g %s", hi, unit);
    int aw = gfx_text(g, x, y, a, C_DIM, w);
    int bw = g->cw * gfx_text_cols(b, (int)strlen(b));
    int gw = w - aw - bw;
    if (gw < 16) gw = 16;
    for (int i = 0; i < gw; i++) {   // its first column is the scale's 0, its last the 1
        ui_rgb c = ui_heat_rgb(gw > 1 ? (double)i / (gw - 1) : 0);
        gfx_fill(g, (SDL_Rect){ x + aw + i, y + 2, 1, g->ch - 4 }, c);
    }
    gfx_text(g, x + aw + gw, y, b, C_DIM, bw);
}

ui_rgb gfx_tone(int tone) {
    switch (tone) {
    case UI_DIM: return C_DIM;
    case UI_WARN: return C_WARN;
    case UI_GOOD: return C_GOOD;
    case UI_INFO: return C_INFO;
    case UI_TITLE: return C_TITLE;
    case UI_USER: return C_USER;
    default: return C_TEXT;
    }
}

int gfx_line_text(gfx *g, int x, int y, const ui_line *l, int max_w) { return gfx_text(g, x, y, l->text, gfx_tone(l->tone), max_w); }
