// The SDL2 window (cabin gui): the workbench's session (ui/session.h) drawn as graphics. Built
// when pkg-config finds sdl2 and SDL2_ttf (make SDL=0 leaves it out: sdl/gui_off.c stands in).
#ifndef CABIN_SDL_GUI_H
#define CABIN_SDL_GUI_H

#include "ui/session.h"

#include <stdbool.h>

// The smallest window, points: the panels' column (the precision grid, the vehicle's two columns
// of fields) and a conversation beside it. --size below it is refused; the window cannot be
// resized below it.
#define GUI_MIN_W 960
#define GUI_MIN_H 600

typedef struct gui_opts {
    int width, height;           // the window's size in points (0: 1280 x 800)
    const char *talk_key;        // the hold-to-talk key's SDL name ("Space" when NULL; Space talks
                                 // only while the input line is empty)
    const char *font;            // a TTF file (NULL: DejaVu Sans Mono from fonts-dejavu-core)
} gui_opts;

// false, with the reason in why, when this cabin was built without the window.
bool gui_available(char *why, size_t n);
// Runs the window until :quit, the window is closed or a scene with exit_after_scene ends.
// Returns the exit status: 2 with one line on stderr when there is no display or the window
// cannot open (SDL_GetError's reason), 1 when the session did not open or a scene check failed.
int gui_run(const ui_opts *o, const gui_opts *g);

#endif
