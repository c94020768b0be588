// The SVG charts: both kinds written to a temporary folder, parsed as XML by python3 where it
// is installed, checked for their series names, escaped text and round tick labels; a path that
// cannot be written gives one line naming it.
#include "app/plot.h"
#include "base/str.h"
#include "tests/test.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

// 1 parsed, 0 not well-formed, -1 python3 missing
static int xml_parses(const char *path) {
    if (system("command -v python3 >/dev/null 2>&1") != 0) return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '%s'", path);
    return system(cmd) == 0;
}

static void check_parses(const char *path) {
    int ok = xml_parses(path);
    if (ok < 0) SKIP("%s: python3 is not installed, the XML is not parsed", path);
    else CHECK(ok == 1, "%s is not well-formed XML", path);
}

int main(void) {
    char dir[] = "/tmp/cabin_plot_XXXXXX";
    if (!mkdtemp(dir)) { printf("0 passed, 1 failed\n"); return 1; }
    char lines_path[256], bars_path[256];
    snprintf(lines_path, sizeof lines_path, "%s/trace.svg", dir);
    snprintf(bars_path, sizeof bars_path, "%s/bars.svg", dir);
    errbuf err = {{0}};

    double ticks[16];
    int n = plot_nice_ticks(0.13, 9.7, 6, ticks, 16);
    CHECK(n == 6 && ticks[0] == 0.0 && ticks[5] == 10.0, "ticks of [0.13, 9.7]: %d from %g to %g", n, ticks[0], ticks[n - 1]);
    n = plot_nice_ticks(-0.031, 0.042, 6, ticks, 16);
    CHECK(n >= 2 && ticks[0] <= -0.031 && ticks[n - 1] >= 0.042 && fabs(ticks[1] - ticks[0] - 0.02) < 1e-12,
          "ticks of [-0.031, 0.042]: %d, step %g", n, n > 1 ? ticks[1] - ticks[0] : 0.0);

    double t[] = { 0, 1, 2, 3, 4, 5 }, tps[] = { 10, 12, NAN, 14, 15, 15.5 }, watts[] = { 20, 20, 18, 18, 17, 17 };
    plot_series s[2] = {
        { .name = "decode tok/s", .x = t, .y = tps, .n = 6, .axis = 0 },
        { .name = "watts <est> & \"plan\"", .x = t, .y = watts, .n = 6, .axis = 1, .step = true },
    };
    plot_opts o = plot_opts_default();
    o.title = "governor: hold 14 tok/s";
    o.xlabel = "seconds";
    o.ylabel_left = "tok/s";
    o.ylabel_right = "W";
    o.hline_left = 14.0;
    o.hline_label = "target";
    CHECK(plot_svg_lines(lines_path, &o, s, 2, &err) == 0, "lines: %s", err.msg);
    char *text = read_file_all(lines_path, NULL, &err);
    CHECK(text && strstr(text, "decode tok/s") && strstr(text, "watts &lt;est&gt; &amp; &quot;plan&quot;"),
          "the series names, escaped");
    CHECK(text && strstr(text, "stroke-dasharray") && strstr(text, ">target<"), "the target line and its label");
    CHECK(text && strstr(text, ">16<") && !strstr(text, "<est>"), "round ticks, nothing unescaped");
    free(text);
    check_parses(lines_path);
    CHECK(access(lines_path, F_OK) == 0, "written");
    int entries = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
    if (d) closedir(d);
    CHECK(entries == 1, "%d files in the folder: the chart alone, no temporary left", entries);

    const char *labels[] = { "turn the <heat> up", "call mum", "navigate home" };
    double a_tps[] = { 30, 31, 29 }, b_tps[] = { 45, 44, 46 }, kl[] = { 0.01, 0.02, 0.005 };
    plot_series bars[3] = {
        { .name = "A q8_0 tok/s", .y = a_tps, .n = 3 },
        { .name = "B q4_0 tok/s", .y = b_tps, .n = 3 },
        { .name = "KL(A||B)", .y = kl, .n = 3, .axis = 1 },
    };
    plot_opts ob = plot_opts_default();
    ob.title = "A/B";
    ob.ylabel_left = "tok/s";
    ob.ylabel_right = "KL";
    CHECK(plot_svg_bars(bars_path, &ob, labels, 3, bars, 3, &err) == 0, "bars: %s", err.msg);
    text = read_file_all(bars_path, NULL, &err);
    CHECK(text && strstr(text, "A q8_0 tok/s") && strstr(text, "B q4_0 tok/s") && strstr(text, "KL(A||B)"), "bar series names");
    CHECK(text && strstr(text, "turn the &lt;heat&gt; up"), "group labels escaped");
    int rects = 0;
    for (const char *p = text; p && (p = strstr(p, "<rect x=")); p++) rects++;
    CHECK(rects >= 6, "%d bars and frames drawn (6 bars at least)", rects);
    free(text);
    check_parses(bars_path);
    bars[0].n = 2;
    CHECK(plot_svg_bars(bars_path, &ob, labels, 3, bars, 3, &err) != 0 && strstr(err.msg, "2 values for 3 groups"),
          "short series: %s", err.msg);

    // a folder that does not exist: one line naming the path
    err.msg[0] = 0;
    CHECK(plot_svg_lines("/nonexistent-dir/x.svg", &o, s, 2, &err) != 0, "bad path refused");
    CHECK(strncmp(err.msg, "/nonexistent-dir/x.svg: ", 24) == 0 && strlen(err.msg) > 24 && !strchr(err.msg, '\n'),
          "error: %s", err.msg);

    remove(lines_path);
    remove(bars_path);
    rmdir(dir);
    return test_finish();
}
