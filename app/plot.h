// SVG charts with no dependencies: a line chart with two y axes (a governor's trace: tok/s on the
// left, watts or KL on the right, a dashed target line) and grouped bars (per prompt: plan A
// beside plan B). Used by cabin compare --plot and the governor's trace.
//
// Axes get ticks at nice round numbers (1, 2 or 5 times a power of ten); every text is escaped
// for XML; the file is written whole or not at all (base/afile.h), so a reader never sees half a
// chart.
#ifndef CABIN_PLOT_H
#define CABIN_PLOT_H

#include "base/err.h"

#include <stdbool.h>

typedef struct plot_series {
    const char *name;        // legend text
    const double *x, *y;     // n points; x may be NULL (0, 1, 2, ...); a NaN y leaves a gap
    int n;
    int axis;                // 0 left y axis, 1 right y axis
    bool step;               // staircase: y holds until the next x (a plan switch, a setting)
} plot_series;

typedef struct plot_opts {
    const char *title, *xlabel, *ylabel_left, *ylabel_right;   // NULL: none
    double hline_left;       // a dashed target line on the left axis; NAN none
    const char *hline_label;
    int width, height;       // px, 0: 800 x 400
} plot_opts;

// The defaults: no texts, no target line, 800 x 400.
plot_opts plot_opts_default(void);

// A line chart of n series on a shared x axis, each on the left or the right y axis, with a
// legend. 0, or -1 with "PATH: ..." in err.
int plot_svg_lines(const char *path, const plot_opts *o, const plot_series *s, int n, errbuf *err);

// Grouped bars: n_groups groups (labels[g] under each), one bar per series in each group
// (series[i].y[g]; x is unused; n must be >= n_groups). Series on axis 1 are drawn as points on
// the right axis rather than bars (a KL beside two speeds). 0, or -1 with "PATH: ..." in err.
int plot_svg_bars(const char *path, const plot_opts *o, const char *const *labels, int n_groups,
                  const plot_series *s, int n_series, errbuf *err);

// The ticks of an axis over [lo, hi]: a round step (1, 2 or 5 x 10^k) giving about `want` ticks,
// the first tick at or below lo and the last at or above hi. Returns the number of ticks (at
// most max) and fills ticks[].
int plot_nice_ticks(double lo, double hi, int want, double *ticks, int max);

#endif
