// cabin built without SDL2 (make SDL=0, or sdl2 / SDL2_ttf not found): the window says so.
#include "sdl/gui.h"

#include <stdio.h>

bool gui_available(char *why, size_t n) {
    snprintf(why, n, "built without the window (SDL2 and SDL2_ttf; make SDL=1)");
    return false;
}

int gui_run(const ui_opts *o, const gui_opts *g) {
    (void)o; (void)g;
    char why[128];
    gui_available(why, sizeof why);
    fprintf(stderr, "cabin gui: %s\n", why);
    return 2;
}
