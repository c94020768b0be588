// What the panels show, in words, ranges and cells, worked out once for every face (tui/, sdl/):
// a face draws these lines and cells its own way (characters and colour pairs, or pixels) and
// names nothing of the engine or the app itself. ascii: no UTF-8 drawing characters (a terminal
// without a UTF-8 locale); the window always draws UTF-8.
#ifndef CABIN_UI_PANEL_DATA_H
#define CABIN_UI_PANEL_DATA_H

#include "ui/ui.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// What a line means; each face has its own colour for each.
enum ui_tone { UI_PLAIN, UI_DIM, UI_WARN, UI_GOOD, UI_INFO, UI_TITLE, UI_USER };
typedef struct ui_line { char text[256]; int tone; } ui_line;

// "1.19 MiB" (KiB, MiB, GiB).
void ui_fmt_bytes(char *out, size_t n, double bytes);

// ---- the status bar ----
// " ready │ q8_0 │ 55.1 tok/s │ TTFT 80 ms │ 3.2 W est. │ KV 12/512 │ F1 help" (notice: a short
// message shown in place of ready / generating; "" none).
void ui_status_line(const ui_snapshot *s, const char *notice, bool ascii, char *out, size_t n);

// ---- the help overlay ----
// The workbench's commands (usage ":precision SPEC", help line), from the one command table.
// Returns how many (at most max; UI_MAX_HELP_ROWS holds them all).
#define UI_MAX_HELP_ROWS CMD_MAX_ROWS
typedef cmd_help_row ui_help_row;
int ui_help_commands(ui_help_row *rows, int max);
extern const char ui_help_commands_title[];   // the heading over them
// The overlay laid out for a text area `width` columns wide, the same way in both faces: the
// face's keys (key, what it does), a blank line, the commands' title, the commands. A
// description is wrapped at spaces into the columns after the first key_w (never cut inside a
// word); a key or usage wider than key_w - 1 takes a line of its own. Returns the line count (at
// most max; UI_MAX_HELP_LINES holds every line at any width of 30 columns or more).
#define UI_MAX_HELP_LINES 400
typedef struct ui_help_line {
    char key[96];    // the key or the command's usage, on its first line only ("" on the rest)
    char text[192];  // a piece of the description, or the title
    int tone;        // UI_USER (a key line), UI_TITLE, UI_PLAIN
} ui_help_line;
int ui_help_layout(const char *const keys[][2], int n_keys, int width, int key_w, ui_help_line *out, int max);

// ---- grids of layers ----
#define UI_LAYER_KINDS TK_LAYER_KINDS          // columns of the precision and sensitivity grids
const char *ui_kind_letter(int kind);          // "q", "k", "v", "o", "g", "u", "d"
// The layer drawn on row i of a grid of rows rows over n_layer layers. With more layers than
// rows: the first ones and the last on the last row; with more_row, row rows-2 is a "… N more
// layers" row (-1; ui_grid_more_text says it).
int ui_grid_layer(int n_layer, int rows, int i, bool more_row);
void ui_grid_more_text(int n_layer, int rows, bool ascii, char *out, size_t n);

// ---- the Precision panel ----
// A weight type's colour class (ui/palette.h gives the window's colours; the terminal has a pair
// for each).
enum ui_type_class { UI_TYPE_F32, UI_TYPE_F16, UI_TYPE_BF16, UI_TYPE_Q8, UI_TYPE_Q4, UI_TYPE_OTHER, UI_TYPE_CLASSES };
int ui_type_class(uint32_t type);
// Two characters for a grid cell: "32", "16", "bf", "q8", "q4"; " -" for none, " ?" others.
const char *ui_type_cell(uint32_t type);
typedef struct ui_precision_text {
    bool switching;              // a live switch is being prepared: head says to what, progress how far
    double progress;             // 0..1
    ui_line head;                // "plan q8_0   weights 1.19 MiB" or "switching to q4_0"
    ui_line bytes;               // the weights' bytes by type
    ui_line kv;                  // "KV f16 (12 KiB)"
    ui_line kl;                  // the plan's KL against the file's precision
    int n_governor;              // 0, or 2: the governor's state and its last change
    ui_line governor[2];
    char ends[64];               // "embd Q8_0   out Q8_0"
    int n_legend;                // the types present in the grid, in id order
    uint32_t legend[16];
    char legend_name[16][12];
} ui_precision_text;
void ui_precision_text_make(const ui_snapshot *s, bool ascii, ui_precision_text *out);
// The value under the pointer: "layer 3 attn_q: Q8_0".
void ui_precision_cell_text(const ui_snapshot *s, int layer, int kind, char *out, size_t n);

// ---- the Heat map panel (F4: sensitivity, KV cache, attention) ----
enum ui_heat_shape { UI_HEAT_LINES, UI_HEAT_CELLS, UI_HEAT_BARS };
typedef struct ui_heat_text {
    char title[64];              // "Heat map: sensitivity"
    int n_lines;                 // lines above the grid (or, UI_HEAT_LINES, all there is)
    ui_line lines[3];
    int shape;                   // enum ui_heat_shape
    int n_layer, n_cols;         // cells: a row per layer, n_cols columns
    bool kind_cols;              // the columns are tensor kinds (ui_kind_letter)
    double lo, hi;               // the colour scale's range (ui_heat_frac) ...
    const char *unit;            // ... and its unit, for the legend
} ui_heat_text;
void ui_heat_text_make(const ui_snapshot *s, bool ascii, ui_heat_text *out);
// Cells: where the cell of (layer, col) falls on the colour scale, 0..1; < 0 not measured yet.
double ui_heat_cell(const ui_snapshot *s, const ui_heat_text *h, int layer, int col);
// Bars (the KV cache): the share of the context the layer's slots fill and the share quantized
// (0..1), and where the fill falls on the colour scale.
void ui_heat_bar(const ui_snapshot *s, int layer, double *filled, double *quantized, double *frac);
// The value under the pointer: "layer 3 attn_q at Q4_0: KL 0.012 nats, top-1 98.0%".
void ui_heat_hover(const ui_snapshot *s, const ui_heat_text *h, int layer, int col, char *out, size_t n);

// ---- the Latency panel ----
typedef struct ui_latency_text {
    bool have;                   // false: no reply yet (lines[0] says so)
    ui_line ttft, decode, per_token;   // "TTFT 80 ms   prefill ...", "decode 55.1 tok/s   12 tokens", "ms/token min .."
    int n_ops;                   // the profiled turn's time per op (a bar each), largest share first
    struct { char name[16]; double ms, share; } ops[32];
} ui_latency_text;
void ui_latency_text_make(const ui_snapshot *s, ui_latency_text *out);
// The per-token times of the current (or last) reply, oldest first: up to max, returns how many.
int ui_token_times(const ui_snapshot *s, float *out, int max);

// ---- the Power panel ----
typedef struct ui_power_text {
    bool have;                   // false: no power sources (now says so)
    ui_line now;                 // "3.21 W now  (rapl, measured)"
    ui_line joules;              // "0.123 J/token decode, ..." or when it comes
    int n_sources;               // up to 3 readable sources, a line each
    ui_line source[3];
    ui_line hw;                  // the hardware line (clock, throttling, temperature, supply)
} ui_power_text;
void ui_power_text_make(const ui_snapshot *s, bool ascii, ui_power_text *out);

// ---- the Voice panel ----
// The voice pipeline's state in words ("listening (VAD)").
const char *ui_voice_state_name(const ui_voice_view *v);
extern const char ui_voice_off_hint[];         // under why voice is off
// The input level as a meter's fill, 0..1 (-60 .. 0 dBFS), and whether it is near clipping.
double ui_voice_level_frac(const ui_voice_view *v, bool *loud);
// "release → transcript 130 ms, → audio 340 ms" (or "latency: no spoken turn yet"); tone UI_DIM
// when there is none.
void ui_voice_latency_text(const ui_voice_view *v, bool ascii, ui_line *out);

// ---- the Vehicle panel ----
// Whether field i changed in the last turn (drawn apart).
bool ui_vfield_changed(const ui_snapshot *s, int i);
// A field's label in a panel: "climate.passenger_temp" -> "passenger_temp", "window.rear_left" ->
// "win.rear_left" (short, and still unique).
void ui_vfield_label(const char *field, char *out, size_t n);
// The fields to show in a panel of `capacity` places, in order: all of them when they fit, else
// the ones the last turn changed first. Returns how many (at most capacity).
int ui_vfield_order(const ui_snapshot *s, int capacity, int *order);

#endif
