#include "base/dirs.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

void user_file_path(const char *xdg_var, const char *home_rel, const char *name, char *out, size_t n) {
    const char *xdg = getenv(xdg_var), *home = getenv("HOME");
    out[0] = 0;
    if (xdg && *xdg) snprintf(out, n, "%s/cabin/%s", xdg, name);
    else if (home && *home) snprintf(out, n, "%s/%s/cabin/%s", home, home_rel, name);
    else return;
    for (char *p = out + 1; *p; p++)   // mkdir -p of every folder on the way
        if (*p == '/') { *p = 0; mkdir(out, 0700); *p = '/'; }
}
