// Stop sequences over streamed text (serve.h): the tail of the text that could still grow into
// a stop sequence is held back; the rest is sent at once.
#include "serve/serve.h"
#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void stop_filter_init(stop_filter *f, char *const *stop, int n_stop) {
    memset(f, 0, sizeof *f);
    f->stop = stop;
    f->n_stop = n_stop;
}

// The length of the longest tail of s[0..n) that is a proper beginning of some stop sequence.
static size_t open_tail(const stop_filter *f, const char *s, size_t n) {
    size_t best = 0;
    for (int i = 0; i < f->n_stop; i++) {
        size_t k = strlen(f->stop[i]);
        for (size_t t = (k - 1 < n ? k - 1 : n); t > best; t--)
            if (memcmp(s + n - t, f->stop[i], t) == 0) {
                best = t;
                break;
            }
    }
    return best;
}

bool stop_filter_feed(stop_filter *f, const char *piece, size_t len, void (*emit)(void *ud, const char *s, size_t n), void *ud) {
    if (f->stopped) return false;
    if (f->n_held + len + 1 > f->cap) {
        f->cap = (f->n_held + len + 1) * 2;
        f->held = xrealloc(f->held, f->cap);
    }
    memcpy(f->held + f->n_held, piece, len);
    f->n_held += len;
    f->held[f->n_held] = 0;
    // the stop sequence that is complete first (the earliest end; of two ending together, the
    // one that began first) ends the stream where it begins, however the text came in pieces
    size_t cut = f->n_held, end = SIZE_MAX;
    for (int i = 0; i < f->n_stop; i++) {
        size_t k = strlen(f->stop[i]);
        const char *at = memmem(f->held, f->n_held, f->stop[i], k);
        if (!at) continue;
        size_t s = (size_t)(at - f->held);
        if (s + k < end || (s + k == end && s < cut)) end = s + k, cut = s;
    }
    if (cut < f->n_held) {
        if (cut) emit(ud, f->held, cut);
        f->n_held = 0;
        f->stopped = true;
        return false;
    }
    size_t keep = open_tail(f, f->held, f->n_held);
    size_t send = f->n_held - keep;
    if (send) {
        emit(ud, f->held, send);
        memmove(f->held, f->held + send, keep);
        f->n_held = keep;
    }
    return true;
}

void stop_filter_flush(stop_filter *f, void (*emit)(void *ud, const char *s, size_t n), void *ud) {
    if (!f->stopped && f->n_held) emit(ud, f->held, f->n_held);
    f->n_held = 0;
}

void stop_filter_free(stop_filter *f) {
    free(f->held);
    f->held = NULL;
    f->n_held = f->cap = 0;
}
