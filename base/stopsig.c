#include "base/stopsig.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define N_STOP_SIGNALS (sizeof stop_signals / sizeof stop_signals[0])
static atomic_int pending;
static void (*volatile callback)(void);

static void on_stop_signal(int sig) {
    int none = 0;
    atomic_compare_exchange_strong(&pending, &none, sig);   // the first one is what the program ends by
    if (callback) callback();
}

void stopsig_catch(void (*on_signal)(void), bool restart) {
    callback = on_signal;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = restart ? SA_RESTART : 0;
    for (size_t i = 0; i < N_STOP_SIGNALS; i++) sigaction(stop_signals[i], &sa, NULL);
}

int stopsig_pending(void) { return atomic_load(&pending); }

void stopsig_finish(void) {
    for (size_t i = 0; i < N_STOP_SIGNALS; i++) signal(stop_signals[i], SIG_DFL);
    callback = NULL;
    int sig = atomic_load(&pending);
    if (!sig) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}
