#include "base/progress.h"

#include <stdarg.h>
#include <unistd.h>

void progress_start(progress *p, FILE *f) {
    p->f = f;
    p->tty = isatty(fileno(f));
    p->open = false;
}

void progress_report(progress *p, int done, int total, const char *fmt, ...) {
    bool last = total > 0 && done >= total;
    if (!p->tty && total > 0 && !last) {
        int step = total / 10 > 0 ? total / 10 : 1;
        if (done % step != 0) return;
    }
    va_list ap;
    va_start(ap, fmt);
    if (p->tty) fputc('\r', p->f);
    vfprintf(p->f, fmt, ap);
    va_end(ap);
    if (!p->tty || last) {
        fputc('\n', p->f);
        p->open = false;
    } else {
        p->open = true;
    }
    fflush(p->f);
}

void progress_end(progress *p) {
    if (p->open) fputc('\n', p->f);
    p->open = false;
}
