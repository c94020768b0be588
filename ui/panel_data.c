// What the panels show, worked out once: both faces (tui/, sdl/) draw these strings and ranges
// in their own way.
#include "ui/ui.h"
#include "engine/wtype.h"

#include <math.h>
#include <stdio.h>

void ui_fmt_bytes(char *out, size_t n, double v) {
    if (v >= 1 << 30) snprintf(out, n, "%.2f GiB", v / (1 << 30));
    else if (v >= 1 << 20) snprintf(out, n, "%.2f MiB", v / (1 << 20));
    else snprintf(out, n, "%.0f KiB", v / 1024);
}

void ui_bytes_by_type(const ui_snapshot *s, char *out, size_t n) {
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

void ui_kl_text(const ui_snapshot *s, bool ascii, char *out, size_t n, int *tone) {
    *tone = 1;
    switch (s->kl_state) {   // the plan's weights vs the file's (ui/measure.c)
    case KL_DONE:   // small KLs (f16, q8_0) keep their digits; below 1e-9 it is rounding only
        *tone = 0;
        if (s->kl < 1e-9) snprintf(out, n, "KL 0  top-1 %.1f%%", 100 * s->agree);
        else snprintf(out, n, s->kl < 0.001 ? "KL %.1e  top-1 %.1f%%" : "KL %.4f  top-1 %.1f%%", s->kl, 100 * s->agree);
        break;
    case KL_FILE: snprintf(out, n, "KL 0 (the file's precision)"); break;
    case KL_MEASURING: snprintf(out, n, "%s", ascii ? "KL vs file: measuring..." : "KL vs file: measuring…"); break;
    case KL_FAILED: snprintf(out, n, "KL vs file: could not measure"); *tone = 2; break;
    default: snprintf(out, n, "KL vs file: not measured"); break;
    }
}

void ui_heat_range(const sensitivity_map *m, double *lo, double *hi) {
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
