// What the panels show, worked out once: both faces (tui/, sdl/) draw these lines, cells and
// ranges in their own way (ui/panel_data.h).
#include "ui/panel_data.h"
#include "ui/palette.h"
#include "engine/backend.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

// Copies s into out, "·" as "|" and "°", "…", "→" dropped or spelt in ASCII when ascii.
static void put_text(char *out, size_t n, const char *s, bool ascii) {
    if (!ascii) { snprintf(out, n, "%s", s); return; }
    static const char *const utf8[][2] = { { "·", "|" }, { "°", "" }, { "…", "..." }, { "→", "->" }, { "│", "|" } };
    size_t o = 0;
    while (*s && o + 4 < n) {
        size_t i = 0, k = sizeof utf8 / sizeof utf8[0];
        for (; i < k; i++)
            if (!strncmp(s, utf8[i][0], strlen(utf8[i][0]))) break;
        if (i < k) {
            size_t r = strlen(utf8[i][1]);
            memcpy(out + o, utf8[i][1], r);
            o += r;
            s += strlen(utf8[i][0]);
        } else {
            out[o++] = *s++;
        }
    }
    out[o] = 0;
}

static void line_set(ui_line *l, int tone, bool ascii, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void line_set(ui_line *l, int tone, bool ascii, const char *fmt, ...) {
    char tmp[sizeof l->text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put_text(l->text, sizeof l->text, tmp, ascii);
    l->tone = tone;
}

void ui_fmt_bytes(char *out, size_t n, double v) {
    if (v >= 1 << 30) snprintf(out, n, "%.2f GiB", v / (1 << 30));
    else if (v >= 1 << 20) snprintf(out, n, "%.2f MiB", v / (1 << 20));
    else snprintf(out, n, "%.0f KiB", v / 1024);
}

static double decode_tps(const session_stats *st) { return st->decode_tps > 0 ? st->decode_tps : st->decode_tps_last32; }

// ---- the status bar ----

void ui_status_line(const ui_snapshot *s, const char *notice, bool ascii, char *out, size_t n) {
    const char *sep = " │ ";
    const session_stats *st = &s->st;
    char sw[64] = "", tmp[512];
    if (s->switch_target[0] && st->switch_progress >= 0)
        snprintf(sw, sizeof sw, "%s→ %s %.0f%%", sep, s->switch_target, 100.0 * st->switch_progress);
    snprintf(tmp, sizeof tmp, " %s%s%s%s%s%.1f tok/s%sTTFT %.0f ms%s%.1f W%s%sKV %d/%d%sF1 help",
             notice && notice[0] ? notice : (s->generating ? "generating…" : "ready"), sep,
             s->plan_name[0] ? s->plan_name : "-", sw, sep, decode_tps(st), sep, st->ttft_ms, sep, s->watts,
             s->power_measured ? "" : " est.", sep, st->n_past, st->n_ctx, sep);
    put_text(out, n, tmp, ascii);
}

// ---- the help overlay ----

const char ui_help_commands_title[] = "commands (type : first)";

int ui_help_commands(ui_help_row *rows, int max) { return cmdlang_help_rows(CMD_IN_WORKBENCH, ":", rows, max); }

// Columns of UTF-8 text (one per code point: the help is ASCII but for a few dashes).
static int text_cols(const char *s, size_t n) {
    int c = 0;
    for (size_t i = 0; i < n && s[i]; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

// Bytes of s that fill at most cols columns.
static size_t bytes_for_cols(const char *s, int cols) {
    size_t i = 0;
    for (int c = 0; s[i]; c++) {
        if (c == cols) break;
        i++;
        while (((unsigned char)s[i] & 0xC0) == 0x80) i++;
    }
    return i;
}

// Bytes of the longest run of whole words of p that fits in cols columns (a word wider than
// cols alone is split).
static size_t words_fitting(const char *p, int cols) {
    size_t fit = bytes_for_cols(p, cols);
    if (!p[fit] || p[fit] == ' ') return fit;
    size_t sp = fit;
    while (sp > 0 && p[sp] != ' ') sp--;
    return sp > 0 ? sp : fit;
}

// Appends one entry: key and its description wrapped into cols columns.
static int help_entry(const char *key, const char *desc, int key_w, int cols, ui_help_line *out, int n, int max) {
    if (text_cols(key, strlen(key)) > key_w - 1) {   // a long usage: lines of its own, wrapped over the whole width
        for (const char *p = key; *p && n < max; n++) {
            size_t take = words_fitting(p, key_w + cols);
            out[n] = (ui_help_line){ .tone = UI_USER };
            snprintf(out[n].key, sizeof out[n].key, "%.*s", (int)take, p);
            p += take;
            while (*p == ' ') p++;
        }
        key = "";
    }
    bool first = true;
    const char *p = desc;
    while (n < max && (first || *p)) {
        size_t take = words_fitting(p, cols);
        out[n] = (ui_help_line){ .tone = first && key[0] ? UI_USER : UI_PLAIN };
        if (first) snprintf(out[n].key, sizeof out[n].key, "%s", key);
        snprintf(out[n].text, sizeof out[n].text, "%.*s", (int)take, p);
        n++;
        p += take;
        while (*p == ' ') p++;
        first = false;
    }
    return n;
}

int ui_help_layout(const char *const keys[][2], int n_keys, int width, int key_w, ui_help_line *out, int max) {
    int cols = width - key_w;
    if (cols < 8) cols = 8;
    int n = 0;
    for (int i = 0; i < n_keys; i++) n = help_entry(keys[i][0], keys[i][1], key_w, cols, out, n, max);
    if (n < max) out[n++] = (ui_help_line){ .tone = UI_PLAIN };
    if (n < max) { out[n] = (ui_help_line){ .tone = UI_TITLE }; snprintf(out[n].text, sizeof out[n].text, "%s", ui_help_commands_title); n++; }
    ui_help_row cmds[UI_MAX_HELP_ROWS];
    int n_cmd = ui_help_commands(cmds, UI_MAX_HELP_ROWS);
    for (int i = 0; i < n_cmd; i++) n = help_entry(cmds[i].usage, cmds[i].help, key_w, cols, out, n, max);
    return n;
}

// ---- grids of layers ----

const char *ui_kind_letter(int kind) {
    static const char *const letters[TK_LAYER_KINDS] = { "q", "k", "v", "o", "g", "u", "d" };
    return kind >= 0 && kind < TK_LAYER_KINDS ? letters[kind] : "?";
}

int ui_grid_layer(int n_layer, int rows, int i, bool more_row) {
    if (n_layer <= rows) return i;
    if (i == rows - 1) return n_layer - 1;
    if (more_row && i == rows - 2) return -1;
    return i;
}

void ui_grid_more_text(int n_layer, int rows, bool ascii, char *out, size_t n) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, " … %d more layers", n_layer - rows);
    put_text(out, n, tmp, ascii);
}

// ---- the Precision panel ----

int ui_type_class(uint32_t t) {
    switch (t) {
    case WT_F32: return UI_TYPE_F32;
    case WT_F16: return UI_TYPE_F16;
    case WT_BF16: return UI_TYPE_BF16;
    case WT_Q8_0: return UI_TYPE_Q8;
    case WT_Q4_0: return UI_TYPE_Q4;
    default: return UI_TYPE_OTHER;
    }
}

const char *ui_type_cell(uint32_t t) {
    static const char *const cell[UI_TYPE_CLASSES] = { "32", "16", "bf", "q8", "q4", " ?" };
    return t == 255 || t == PLAN_KEEP ? " -" : cell[ui_type_class(t)];   // 255: a grid cell of no tensor (uint8_t)
}

// The weights' bytes by type, "Q4_0 1.19 MiB  Q8_0 765 KiB" ("bytes by type: -" when none).
static void bytes_by_type(const ui_snapshot *s, char *out, size_t n) {
    size_t o = 0;
    out[0] = 0;
    for (int t = 0; t < WT_COUNT && o + 40 < n; t++)
        if (s->st.bytes_by_type[t]) {
            char b[32];
            ui_fmt_bytes(b, sizeof b, (double)s->st.bytes_by_type[t]);
            o += (size_t)snprintf(out + o, n - o, "%s%s %s", o ? "  " : "", wtype_name((uint32_t)t), b);
        }
    if (!o) snprintf(out, n, "bytes by type: -");
}

// The plan's KL against the file's precision (ui/measure.c) in words.
static void kl_line(const ui_snapshot *s, bool ascii, ui_line *l) {
    switch (s->kl_state) {
    case KL_DONE:   // small KLs (f16, q8_0) keep their digits; below 1e-9 it is rounding only
        if (s->kl < 1e-9) line_set(l, UI_PLAIN, ascii, "KL 0  top-1 %.1f%%", 100 * s->agree);
        else if (s->kl < 0.001) line_set(l, UI_PLAIN, ascii, "KL %.1e  top-1 %.1f%%", s->kl, 100 * s->agree);
        else line_set(l, UI_PLAIN, ascii, "KL %.4f  top-1 %.1f%%", s->kl, 100 * s->agree);
        break;
    case KL_FILE: line_set(l, UI_DIM, ascii, "KL 0 (the file's precision)"); break;
    // short: it shares a line with the KV format in a 52-column panel
    case KL_WAITING: line_set(l, UI_DIM, ascii, "KL vs file: waits for idle"); break;
    case KL_MEASURING: line_set(l, UI_DIM, ascii, "KL vs file: window %d/%d", s->kl_done, s->kl_total); break;
    case KL_FAILED: line_set(l, UI_WARN, ascii, "KL vs file: could not measure"); break;
    default: line_set(l, UI_DIM, ascii, "KL vs file: not measured"); break;
    }
}

void ui_precision_text_make(const ui_snapshot *s, bool ascii, ui_precision_text *p) {
    memset(p, 0, sizeof *p);
    char wb[32], kb[32], bt[256];
    ui_fmt_bytes(wb, sizeof wb, (double)s->st.weight_bytes);
    ui_fmt_bytes(kb, sizeof kb, (double)s->st.kv_bytes);
    p->switching = s->switch_target[0] && s->st.switch_progress >= 0;
    p->progress = p->switching ? s->st.switch_progress : 0;
    if (p->switching) line_set(&p->head, UI_WARN, ascii, "switching to %s", s->switch_target);
    else line_set(&p->head, UI_PLAIN, ascii, "plan %s   weights %s", s->plan_name, wb);
    bytes_by_type(s, bt, sizeof bt);
    line_set(&p->bytes, UI_DIM, ascii, "%s", bt);
    line_set(&p->kv, UI_PLAIN, ascii, "KV %s (%s)", s->kv_format, kb);
    kl_line(s, ascii, &p->kl);
    if (s->governor[0]) {   // the governor's state and its last change (app/govern.h)
        p->n_governor = 2;
        line_set(&p->governor[0], UI_INFO, ascii, "%s", s->governor);
        line_set(&p->governor[1], UI_DIM, ascii, "%s", s->governor_last[0] ? s->governor_last : "no change yet");
    }
    snprintf(p->ends, sizeof p->ends, "embd %s   out %s", s->embd_type != PLAN_KEEP ? wtype_name(s->embd_type) : "-",
             s->output_type != PLAN_KEEP ? wtype_name(s->output_type) : "-");
    bool seen[256] = { false };
    for (int l = 0; l < s->n_layer && l < UI_MAX_LAYERS; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) seen[s->types[l][k]] = true;
    for (int t = 0; t < 255 && p->n_legend < 16; t++)
        if (seen[t]) {
            p->legend[p->n_legend] = (uint32_t)t;
            snprintf(p->legend_name[p->n_legend++], sizeof p->legend_name[0], "%s", wtype_name((uint32_t)t));
        }
}

void ui_precision_cell_text(const ui_snapshot *s, int layer, int kind, char *out, size_t n) {
    snprintf(out, n, "layer %d %s: %s", layer, tensor_kind_name(kind), wtype_name(s->types[layer][kind]));
}

// ---- the Heat map panel ----

// The sensitivity map's colour-scale range: the smallest and largest KL of the cells done (each
// at least 1e-9), hi above lo.
static void heat_range(const sensitivity_map *m, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = 0;
    for (int l = 0; l < m->n_layer; l++)
        for (int k = 0; k < TK_LAYER_KINDS; k++) {
            const sens_cell *c = sens_at(m, l, k);
            if (!c->done) continue;
            double v = c->kl_mean > 1e-9 ? c->kl_mean : 1e-9;
            if (v < *lo) *lo = v;
            if (v > *hi) *hi = v;
        }
    if (!(*lo < INFINITY)) *lo = *hi = 1e-9;
    if (*hi <= *lo) *hi = *lo * 10;
}

static void heat_sensitivity(const ui_snapshot *s, bool ascii, ui_heat_text *h) {
    const sensitivity_map *m = s->heat;
    if (!m) {
        h->shape = UI_HEAT_LINES;
        h->n_lines = 3;
        line_set(&h->lines[0], s->heat_status[0] ? UI_WARN : UI_DIM, ascii, "%s", s->heat_status[0] ? s->heat_status : "no data yet");
        line_set(&h->lines[1], UI_DIM, ascii, ":heatmap computes one (or :heatmap FILE.json");
        line_set(&h->lines[2], UI_DIM, ascii, "from `cabin heatmap --json`)");
        return;
    }
    h->shape = UI_HEAT_CELLS;
    h->n_layer = m->n_layer;
    h->n_cols = TK_LAYER_KINDS;
    h->kind_cols = true;
    heat_range(m, &h->lo, &h->hi);
    h->unit = "nats";
    h->n_lines = 1;
    line_set(&h->lines[0], UI_PLAIN, ascii, "KL per tensor at %s%s", wtype_name(m->type), s->heat_status[0] ? "  (updating)" : "");
}

static void heat_kv(const ui_snapshot *s, bool ascii, ui_heat_text *h) {
    double frac = s->st.n_ctx > 0 ? (double)s->st.n_past / s->st.n_ctx : 0;
    h->shape = UI_HEAT_BARS;
    h->n_layer = s->n_layer;
    h->lo = 0.01;
    h->hi = 1;
    h->unit = "of the context";
    h->n_lines = 2;
    line_set(&h->lines[0], UI_PLAIN, ascii, "KV %s, policy %s: %d / %d tokens", s->kv_format,
             s->kv_policy[0] ? s->kv_policy : "none", s->st.n_past, s->st.n_ctx);
    line_set(&h->lines[1], UI_DIM, ascii, "%.2f of %.2f MiB (%.1f%%); bar: filled, marked: quantized",
             (double)s->st.kv_used_bytes / (1 << 20), (double)s->st.kv_bytes / (1 << 20), 100 * frac);
}

// Attention of the newest token over the context (mean over heads), layers x bins of slots.
static void heat_attention(const ui_snapshot *s, bool ascii, ui_heat_text *h) {
    if (s->att_bins <= 0) {
        h->shape = UI_HEAT_LINES;
        h->n_lines = 1;
        line_set(&h->lines[0], UI_DIM, ascii, "no data yet (after the first token)");
        return;
    }
    h->shape = UI_HEAT_CELLS;
    h->n_layer = s->n_layer;
    h->n_cols = s->att_bins;
    h->lo = 1e-4;
    h->hi = 0;
    for (int l = 0; l < s->n_layer; l++)
        for (int b = 0; b < s->att_bins; b++) if (s->att[l][b] > h->hi) h->hi = s->att[l][b];
    if (h->hi <= h->lo) h->hi = h->lo * 10;
    h->unit = "weight";
    h->n_lines = 1;
    line_set(&h->lines[0], UI_PLAIN, ascii, "last token over %d slots (%d per column)", s->att_slots,
             (s->att_slots + s->att_bins - 1) / s->att_bins);
}

void ui_heat_text_make(const ui_snapshot *s, bool ascii, ui_heat_text *h) {
    memset(h, 0, sizeof *h);
    snprintf(h->title, sizeof h->title, "Heat map: %s", ui_heat_modes[s->heat_mode]);
    if (s->heat_mode == HEAT_SENSITIVITY) heat_sensitivity(s, ascii, h);
    else if (s->heat_mode == HEAT_KV) heat_kv(s, ascii, h);
    else heat_attention(s, ascii, h);
}

double ui_heat_cell(const ui_snapshot *s, const ui_heat_text *h, int layer, int col) {
    if (h->shape != UI_HEAT_CELLS) return -1;
    if (s->heat_mode == HEAT_SENSITIVITY) {
        const sens_cell *c = sens_at(s->heat, layer, col);
        return c->done ? ui_heat_frac(c->kl_mean, h->lo, h->hi) : -1;
    }
    double v = s->att[layer][col];
    return v < h->lo ? 0 : ui_heat_frac(v, h->lo, h->hi);
}

void ui_heat_bar(const ui_snapshot *s, int layer, double *filled, double *quantized, double *frac) {
    *filled = s->st.n_ctx > 0 ? (double)s->kv_used[layer] / s->st.n_ctx : 0;
    *quantized = s->st.n_ctx > 0 ? (double)s->kv_quant[layer] / s->st.n_ctx : 0;
    *frac = ui_heat_frac(*filled > 0.01 ? *filled : 0.01, 0.01, 1);
}

void ui_heat_hover(const ui_snapshot *s, const ui_heat_text *h, int layer, int col, char *out, size_t n) {
    if (s->heat_mode == HEAT_SENSITIVITY && s->heat) {
        const sens_cell *c = sens_at(s->heat, layer, col);
        snprintf(out, n, "layer %d %s at %s: KL %.3g nats, top-1 %.1f%%", layer, tensor_kind_name(col),
                 wtype_name(s->heat->type), c->kl_mean, 100 * c->top1);
    } else if (s->heat_mode == HEAT_KV) {
        if (s->kv_cap[layer] > 0 && s->kv_cap[layer] < s->st.n_ctx)
            snprintf(out, n, "layer %d: %d slots filled, of a window ring of %d (context %d)", layer, s->kv_used[layer],
                     s->kv_cap[layer], s->st.n_ctx);
        else
            snprintf(out, n, "layer %d: %d slots filled, %d quantized, of %d", layer, s->kv_used[layer],
                     s->kv_quant[layer], s->st.n_ctx);
    } else if (h->n_cols > 0) {
        int per = (s->att_slots + s->att_bins - 1) / s->att_bins;
        snprintf(out, n, "layer %d, slots %d-%d: weight %.4f", layer, col * per, (col + 1) * per - 1, s->att[layer][col]);
    } else {
        out[0] = 0;
    }
}

// ---- the Latency panel ----

int ui_token_times(const ui_snapshot *s, float *out, int max) {
    const session_stats *st = &s->st;
    int n = st->tok_ms_count < SESSION_TOK_RING ? st->tok_ms_count : SESSION_TOK_RING;
    if (n > max) n = max;
    for (int i = 0; i < n; i++) out[i] = st->tok_ms[(st->tok_ms_count - n + i) % SESSION_TOK_RING];
    return n;
}

void ui_latency_text_make(const ui_snapshot *s, ui_latency_text *t) {
    memset(t, 0, sizeof *t);
    const session_stats *st = &s->st;
    t->have = st->turns > 0 || st->gen_tokens > 0;
    if (!t->have) { line_set(&t->ttft, UI_DIM, false, "no reply yet"); return; }
    line_set(&t->ttft, UI_PLAIN, false, "TTFT %.0f ms   prefill %.0f tok/s (%d tok)", st->ttft_ms, st->prefill_tps, st->prompt_tokens);
    line_set(&t->decode, UI_GOOD, false, "decode %.1f tok/s   %d tokens", decode_tps(st), st->gen_tokens);
    float ring[SESSION_TOK_RING];
    int n = ui_token_times(s, ring, SESSION_TOK_RING);
    float lo = 1e30f, hi = 0, sum = 0;
    for (int i = 0; i < n; i++) { if (ring[i] < lo) lo = ring[i]; if (ring[i] > hi) hi = ring[i]; sum += ring[i]; }
    if (n) line_set(&t->per_token, UI_DIM, false, "ms/token min %.2f  avg %.2f  max %.2f", lo, sum / n, hi);
    else line_set(&t->per_token, UI_DIM, false, "ms/token: -");
    if (!st->op_profiled) return;
    double tot = 0;
    for (int k = 0; k < OP_COUNT; k++) tot += st->op_ms[k];
    for (int k = 0; k < OP_COUNT && t->n_ops < (int)(sizeof t->ops / sizeof t->ops[0]); k++) {
        if (st->op_ms[k] <= 0) continue;
        snprintf(t->ops[t->n_ops].name, sizeof t->ops[0].name, "%s", op_kind_name((enum op_kind)k));
        t->ops[t->n_ops].ms = st->op_ms[k];
        t->ops[t->n_ops++].share = tot > 0 ? st->op_ms[k] / tot : 0;
    }
}

// ---- the Power panel ----

void ui_power_text_make(const ui_snapshot *s, bool ascii, ui_power_text *p) {
    memset(p, 0, sizeof *p);
    p->have = s->n_pw > 0;
    if (!p->have) { line_set(&p->now, UI_DIM, ascii, "no power sources"); return; }
    line_set(&p->now, s->power_measured ? UI_GOOD : UI_WARN, ascii, "%.2f W now  (%s%s)", s->watts, s->power_from,
             s->power_measured ? ", measured" : strcmp(s->power_from, "estimate") ? ", estimated" : "d from CPU time");
    const energy_turn *e = &s->st.energy;
    if (e->total_from[0] && s->st.gen_tokens > 0)
        line_set(&p->joules, UI_PLAIN, ascii, "%.3f J/token decode, %.3f J/token prefill%s", e->decode_j_per_token,
                 e->prefill_j_per_token, e->total_measured ? "" : " (est.)");
    else line_set(&p->joules, UI_DIM, ascii, "J/token: after the first reply");
    for (int i = 0; i < s->n_pw && p->n_sources < 3; i++) {
        const power_reading *r = &s->pw[i];
        if (!r->readable) continue;
        line_set(&p->source[p->n_sources++], UI_DIM, ascii, "%-22.22s %7.2f W%s", r->name, r->watts, r->measured ? "" : " est.");
    }
    char hw[200];
    hw_state_line(&s->hw, hw, sizeof hw);
    line_set(&p->hw, s->hw_throttling ? UI_WARN : UI_DIM, ascii, "%s%s", hw, s->hw_throttling ? " THROTTLING" : "");
}

// ---- the Voice panel ----

const char ui_voice_off_hint[] = "typing works; :voice FILE.wav plays a recording";

const char *ui_voice_state_name(const ui_voice_view *v) {
    switch (v->state) {
    case TV_OFF: return "off";
    case TV_STARTING: return "starting";
    case TV_IDLE: return "idle";
    case TV_LISTENING: return v->hands_free ? "listening (VAD)" : "listening";
    case TV_RECOGNISING: return "recognising";
    case TV_THINKING: return "thinking";
    case TV_SPEAKING: return "speaking";
    default: return "?";
    }
}

double ui_voice_level_frac(const ui_voice_view *v, bool *loud) {
    *loud = v->have_level && v->level_db > -3;
    if (!v->have_level) return 0;
    double f = (v->level_db + 60.0) / 60.0;   // -60 .. 0 dBFS
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

void ui_voice_latency_text(const ui_voice_view *v, bool ascii, ui_line *out) {
    if (v->turns <= 0) { line_set(out, UI_DIM, ascii, "latency: no spoken turn yet"); return; }
    char a[32] = "-", t[32] = "-";
    if (v->asr_ms >= 0) snprintf(t, sizeof t, "%.0f ms", v->asr_ms);
    if (v->first_audio_ms >= 0) snprintf(a, sizeof a, "%.0f ms", v->first_audio_ms);
    line_set(out, UI_PLAIN, ascii, "%s → transcript %s, → audio %s%s", v->turn_vad ? "end" : "release", t, a,
             v->barged_in ? " (cut off)" : "");
}

// ---- the Vehicle panel ----

bool ui_vfield_changed(const ui_snapshot *s, int i) { return s->vchanged[i] > 0 && s->vchanged[i] == s->turn; }

void ui_vfield_label(const char *f, char *out, size_t n) {
    static const char *const map[][2] = { { "climate.", "" }, { "seat.", "" }, { "window.", "win." }, { "lights.", "" },
                                          { "status.", "" }, { "media.", "" }, { "phone.", "" } };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t k = strlen(map[i][0]);
        if (strncmp(f, map[i][0], k) == 0) { snprintf(out, n, "%s%s", map[i][1], f + k); return; }
    }
    snprintf(out, n, "%s", f);
}

int ui_vfield_order(const ui_snapshot *s, int capacity, int *order) {
    bool all_fit = s->n_vfields <= capacity;
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->n_vfields && n < capacity; i++)
            if (all_fit ? pass == 0 : (pass == 0) == ui_vfield_changed(s, i)) order[n++] = i;
    return n;
}
