// Where cabin keeps its own files in the user's home: XDG base directories.
#ifndef CABIN_BASE_DIRS_H
#define CABIN_BASE_DIRS_H

#include <stddef.h>

// "$XDG_VAR/cabin/NAME", else "$HOME/HOME_REL/cabin/NAME" (e.g. "XDG_STATE_HOME",
// ".local/state"); the folders up to NAME's last component are made (mode 0700) when missing.
// out is "" when neither variable is set.
void user_file_path(const char *xdg_var, const char *home_rel, const char *name, char *out, size_t n);

#endif
