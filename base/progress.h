// Progress of a long run on a stream (stderr as a rule). On a terminal one line is rewritten in
// place ("\r[30/299] ppl 551.2"); anywhere else (a log file, a pipe) each report is a line of its
// own, and only about ten of them are written per run, so a log gets ten short lines rather
// than one line of thousands of carriage returns.
#ifndef CABIN_BASE_PROGRESS_H
#define CABIN_BASE_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct progress {
    FILE *f;
    bool tty;     // f is a terminal
    bool open;    // a rewritten line is on the terminal without its newline
} progress;

void progress_start(progress *p, FILE *f);
// One report: done of total (total <= 0 when unknown: then every call is a report off a terminal
// too). Reports at done == total end the line.
void progress_report(progress *p, int done, int total, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
// Ends a rewritten line, if one is open, so that what follows starts a line.
void progress_end(progress *p);

#endif
