// SVG line and bar charts (see plot.h).
#include "app/plot.h"
#include "base/afile.h"
#include "base/str.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_MAX_TICKS 16

// Colours of the series in order (then repeated); the target line is grey.
static const char *const PALETTE[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b" };
#define N_PALETTE (int)(sizeof PALETTE / sizeof PALETTE[0])

plot_opts plot_opts_default(void) {
    return (plot_opts){ .hline_left = NAN };
}

// Text with &, <, >, " and ' escaped; control bytes (not allowed in XML 1.0) become spaces.
static void put_text(strbuf *b, const char *s) {
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': strbuf_puts(b, "&amp;"); break;
        case '<': strbuf_puts(b, "&lt;"); break;
        case '>': strbuf_puts(b, "&gt;"); break;
        case '"': strbuf_puts(b, "&quot;"); break;
        case '\'': strbuf_puts(b, "&apos;"); break;
        default: strbuf_append(b, c < 0x20 ? " " : (const char *)&c, 1);
        }
    }
}

int plot_nice_ticks(double lo, double hi, int want, double *ticks, int max) {
    if (!(hi > lo)) hi = lo + 1.0;
    if (want < 2) want = 2;
    double raw = (hi - lo) / (want - 1), mag = pow(10.0, floor(log10(raw))), step;
    double f = raw / mag;
    step = (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
    double first = floor(lo / step + 1e-9) * step;
    int n = 0;
    for (double v = first; n < max; v = first + n * step) {
        ticks[n++] = fabs(v) < step * 1e-9 ? 0.0 : v;   // no "-0"
        if (v >= hi - step * 1e-9) break;
    }
    return n;
}

// A tick label: as few decimals as the step needs.
static void put_number(strbuf *b, double v, double step) {
    int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (dec > 6) dec = 6;
    strbuf_printf(b, "%.*f", dec, v);
}

// One y axis: its ticks and the value -> pixel map.
typedef struct axis {
    double ticks[PLOT_MAX_TICKS];
    int n;
    double lo, hi;
    bool used;
} axis;

static void axis_fit(axis *a, double lo, double hi) {
    if (!(lo <= hi)) lo = 0.0, hi = 1.0;
    a->n = plot_nice_ticks(lo, hi, 6, a->ticks, PLOT_MAX_TICKS);
    a->lo = a->ticks[0];
    a->hi = a->ticks[a->n - 1];
    if (!(a->hi > a->lo)) a->hi = a->lo + 1.0;
}

// The frame: margins in px, and the plot rectangle inside them.
typedef struct frame {
    int w, h;
    double x0, y0, x1, y1;   // plot area: left, top, right, bottom
} frame;

static double ypix(const frame *f, const axis *a, double v) {
    return f->y1 - (v - a->lo) / (a->hi - a->lo) * (f->y1 - f->y0);
}

// The widest tick label of an axis, in characters.
static int tick_chars(const axis *a) {
    double step = a->n > 1 ? a->ticks[1] - a->ticks[0] : 1.0;
    int w = 0;
    for (int i = 0; i < a->n; i++) {
        strbuf t = {0};
        put_number(&t, a->ticks[i], step);
        if ((int)t.len > w) w = (int)t.len;
        strbuf_free(&t);
    }
    return w;
}

// Margins wide enough for each axis's tick labels (about 7 px a character) and its label.
static void frame_init(frame *f, const plot_opts *o, const axis *left, const axis *right) {
    f->w = o->width > 0 ? o->width : 800;
    f->h = o->height > 0 ? o->height : 400;
    f->x0 = 34 + 7 * tick_chars(left);
    f->x1 = f->w - (right ? 34 + 7 * tick_chars(right) : 20);
    f->y0 = o->title ? 40 : 20;
    f->y1 = f->h - 70;
}

static void svg_open(strbuf *b, const frame *f, const plot_opts *o) {
    strbuf_printf(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"sans-serif\" font-size=\"12\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", f->w, f->h, f->w, f->h);
    if (o->title) {
        strbuf_printf(b, "<text x=\"%d\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">", f->w / 2);
        put_text(b, o->title);
        strbuf_puts(b, "</text>\n");
    }
}

// Grid lines and tick labels of one y axis (side 0 left, 1 right), and its label.
static void svg_y_axis(strbuf *b, const frame *f, const axis *a, int side, const char *label) {
    double step = a->n > 1 ? a->ticks[1] - a->ticks[0] : 1.0;
    for (int i = 0; i < a->n; i++) {
        double y = ypix(f, a, a->ticks[i]);
        if (side == 0)
            strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", f->x0, y, f->x1, y);
        strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", side == 0 ? f->x0 - 6 : f->x1 + 6, y + 4,
                      side == 0 ? "end" : "start");
        put_number(b, a->ticks[i], step);
        strbuf_puts(b, "</text>\n");
    }
    if (label) {
        double x = side == 0 ? 16 : f->w - 10, y = (f->y0 + f->y1) / 2;
        strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">", x, y, x, y);
        put_text(b, label);
        strbuf_puts(b, "</text>\n");
    }
}

static void svg_frame_and_xlabel(strbuf *b, const frame *f, const char *xlabel) {
    strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                  f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    if (xlabel) {
        strbuf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (f->x0 + f->x1) / 2, f->y1 + 38);
        put_text(b, xlabel);
        strbuf_puts(b, "</text>\n");
    }
}

// The legend: one swatch and name per series in a row under the chart, then the target line's.
static void svg_legend(strbuf *b, const frame *f, const plot_series *s, int n, const plot_opts *o) {
    double x = f->x0, y = f->h - 14;
    for (int i = 0; i < n; i++) {
        strbuf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\">", x, y - 10, PALETTE[i % N_PALETTE], x + 16, y);
        put_text(b, s[i].name ? s[i].name : "");
        strbuf_printf(b, "%s</text>\n", s[i].axis ? " (right)" : "");
        x += 30 + 7.0 * (double)(strlen(s[i].name ? s[i].name : "") + (s[i].axis ? 8 : 0));
    }
    if (!isnan(o->hline_left)) {
        strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\" stroke-dasharray=\"6 4\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\">", x, y - 4, x + 20, y - 4, x + 24, y);
        put_text(b, o->hline_label ? o->hline_label : "target");
        strbuf_puts(b, "</text>\n");
    }
}

// The whole chart or nothing (base/afile.h: a temporary renamed over path).
static int write_atomic(const char *path, const strbuf *b, errbuf *err) {
    return afile_write_all(path, strbuf_str(b), b->len, err);
}

// The range of the finite y values of the series on one axis (from0: include 0).
static bool y_range(const plot_series *s, int n, int which, int count, bool from0, double *lo, double *hi) {
    *lo = from0 ? 0.0 : INFINITY;
    *hi = from0 ? 0.0 : -INFINITY;
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (s[i].axis != which) continue;
        int m = count >= 0 ? count : s[i].n;
        for (int j = 0; j < m; j++)
            if (isfinite(s[i].y[j])) {
                any = true;
                if (s[i].y[j] < *lo) *lo = s[i].y[j];
                if (s[i].y[j] > *hi) *hi = s[i].y[j];
            }
    }
    return any;
}

static double x_at(const plot_series *s, int j) { return s->x ? s->x[j] : (double)j; }

// The x ticks of a line chart, as vertical grid lines with labels.
static void svg_x_axis(strbuf *b, const frame *f, const axis *xa) {
    double step = xa->n > 1 ? xa->ticks[1] - xa->ticks[0] : 1.0;
    for (int i = 0; i < xa->n; i++) {
        double x = f->x0 + (xa->ticks[i] - xa->lo) / (xa->hi - xa->lo) * (f->x1 - f->x0);
        strbuf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, f->y0, x, f->y1, x, f->y1 + 16);
        put_number(b, xa->ticks[i], step);
        strbuf_puts(b, "</text>\n");
    }
}

// One series as a polyline (a staircase when s->step); a NaN starts a new piece.
static void svg_series_line(strbuf *b, const frame *f, const axis *xa, const axis *ya, const plot_series *s,
                            const char *colour) {
    bool open = false;
    double prev_y = 0;
    for (int j = 0; j < s->n; j++) {
        if (!isfinite(s->y[j])) {
            if (open) strbuf_puts(b, "\"/>\n");
            open = false;
            continue;
        }
        double x = f->x0 + (x_at(s, j) - xa->lo) / (xa->hi - xa->lo) * (f->x1 - f->x0), y = ypix(f, ya, s->y[j]);
        if (!open) {
            strbuf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
            open = true;
        } else if (s->step) {
            strbuf_printf(b, "%.1f,%.1f ", x, prev_y);
        }
        strbuf_printf(b, "%.1f,%.1f ", x, y);
        prev_y = y;
    }
    if (open) strbuf_puts(b, "\"/>\n");
}

int plot_svg_lines(const char *path, const plot_opts *o, const plot_series *s, int n, errbuf *err) {
    double xlo = INFINITY, xhi = -INFINITY, lo, hi;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < s[i].n; j++) {
            if (x_at(&s[i], j) < xlo) xlo = x_at(&s[i], j);
            if (x_at(&s[i], j) > xhi) xhi = x_at(&s[i], j);
        }
    if (!(xlo <= xhi)) xlo = 0, xhi = 1;
    axis xa, ya[2];
    memset(&xa, 0, sizeof xa);
    memset(ya, 0, sizeof ya);
    axis_fit(&xa, xlo, xhi);
    for (int k = 0; k < 2; k++) {
        ya[k].used = y_range(s, n, k, -1, false, &lo, &hi);
        if (k == 0 && !isnan(o->hline_left)) {
            lo = ya[0].used ? fmin(lo, o->hline_left) : o->hline_left;
            hi = ya[0].used ? fmax(hi, o->hline_left) : o->hline_left;
            ya[0].used = true;
        }
        if (ya[k].used) axis_fit(&ya[k], lo, hi == lo ? lo + fabs(lo) * 0.1 + 1e-9 : hi);
    }
    if (!ya[0].used) axis_fit(&ya[0], 0, 1);
    frame f;
    frame_init(&f, o, &ya[0], ya[1].used ? &ya[1] : NULL);
    strbuf b = {0};
    svg_open(&b, &f, o);
    svg_x_axis(&b, &f, &xa);
    svg_y_axis(&b, &f, &ya[0], 0, o->ylabel_left);
    if (ya[1].used) svg_y_axis(&b, &f, &ya[1], 1, o->ylabel_right);
    svg_frame_and_xlabel(&b, &f, o->xlabel);
    if (!isnan(o->hline_left)) {
        double y = ypix(&f, &ya[0], o->hline_left);
        strbuf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"6 4\"/>\n", f.x0, y, f.x1, y);
    }
    for (int i = 0; i < n; i++) svg_series_line(&b, &f, &xa, &ya[s[i].axis ? 1 : 0], &s[i], PALETTE[i % N_PALETTE]);
    svg_legend(&b, &f, s, n, o);
    strbuf_puts(&b, "</svg>\n");
    int rc = write_atomic(path, &b, err);
    strbuf_free(&b);
    return rc;
}

int plot_svg_bars(const char *path, const plot_opts *o, const char *const *labels, int n_groups,
                  const plot_series *s, int n_series, errbuf *err) {
    for (int i = 0; i < n_series; i++)
        if (s[i].n < n_groups)
            return err_set(err, "%s: series '%s' has %d values for %d groups", path, s[i].name ? s[i].name : "", s[i].n,
                           n_groups);
    axis ya[2];
    memset(ya, 0, sizeof ya);
    double lo, hi;
    int n_bars = 0;
    for (int k = 0; k < 2; k++) {
        ya[k].used = y_range(s, n_series, k, n_groups, true, &lo, &hi);
        if (k == 0 && !isnan(o->hline_left)) hi = fmax(hi, o->hline_left), lo = fmin(lo, o->hline_left);
        axis_fit(&ya[k], lo, hi > lo ? hi : lo + 1.0);
    }
    for (int i = 0; i < n_series; i++) n_bars += s[i].axis == 0;
    frame f;
    frame_init(&f, o, &ya[0], ya[1].used ? &ya[1] : NULL);
    strbuf b = {0};
    svg_open(&b, &f, o);
    svg_y_axis(&b, &f, &ya[0], 0, o->ylabel_left);
    if (ya[1].used) svg_y_axis(&b, &f, &ya[1], 1, o->ylabel_right);
    svg_frame_and_xlabel(&b, &f, o->xlabel);
    double gw = (f.x1 - f.x0) / (n_groups > 0 ? n_groups : 1), bw = gw * 0.8 / (n_bars > 0 ? n_bars : 1);
    for (int g = 0; g < n_groups; g++) {
        double gx = f.x0 + g * gw;
        int bar = 0;
        for (int i = 0; i < n_series; i++) {
            double v = s[i].y[g];
            if (!isfinite(v)) { bar += s[i].axis == 0; continue; }
            if (s[i].axis == 0) {
                double x = gx + gw * 0.1 + bar++ * bw, y = ypix(&f, &ya[0], v), y0 = ypix(&f, &ya[0], 0.0);
                strbuf_printf(&b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x,
                              fmin(y, y0), bw * 0.95, fabs(y0 - y), PALETTE[i % N_PALETTE]);
            } else {
                strbuf_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"black\"/>\n", gx + gw / 2,
                              ypix(&f, &ya[1], v), PALETTE[i % N_PALETTE]);
            }
        }
        strbuf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", gx + gw / 2, f.y1 + 16);
        put_text(&b, labels && labels[g] ? labels[g] : "");
        strbuf_puts(&b, "</text>\n");
    }
    if (!isnan(o->hline_left)) {
        double y = ypix(&f, &ya[0], o->hline_left);
        strbuf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777\" stroke-dasharray=\"6 4\"/>\n",
                      f.x0, y, f.x1, y);
    }
    svg_legend(&b, &f, s, n_series, o);
    strbuf_puts(&b, "</svg>\n");
    int rc = write_atomic(path, &b, err);
    strbuf_free(&b);
    return rc;
}
