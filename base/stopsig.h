// Stopping on SIGINT, SIGTERM and SIGHUP the orderly way: the handler only records the signal
// (and runs one async-signal-safe callback, e.g. session_cancel), the program's loop sees it,
// leaves as it would on a quit (terminal restored, files saved whole), and then ends with the
// status a shell expects of that signal (128 + its number: 130 for SIGINT, 143 for SIGTERM).
#ifndef CABIN_BASE_STOPSIG_H
#define CABIN_BASE_STOPSIG_H

#include <stdbool.h>

// Installs the handlers. on_signal (may be NULL) is called from the handler: it must be
// async-signal-safe (an atomic store). restart: a blocking read or write the signal lands in goes
// on (SA_RESTART); false, it fails with EINTR, so a loop waiting on input sees the signal.
// Installed before initscr, they keep ncurses from installing its own (which end the program at
// once with status 1, nothing saved).
void stopsig_catch(void (*on_signal)(void), bool restart);
// The signal received since stopsig_catch, or 0.
int stopsig_pending(void);
// Puts the default actions back; when a signal was received, ends the program by it (as if the
// signal had not been caught). Call after the cleanup.
void stopsig_finish(void);

#endif
