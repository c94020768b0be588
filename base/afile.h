// Writing a file whole or not at all: the bytes go to "PATH.tmp.PID" beside it, are flushed and
// fsync'd, and the temporary is renamed over PATH; on any error the old file stays as it was and
// the temporary is removed. A PATH that exists and is not a regular file (a device such as
// /dev/null or /dev/full, a FIFO) is written in place: renaming over it would replace the node.
// Errors name the path and the reason ("out.gguf: write failed: No space left on device").
// A temporary left by an earlier save that was killed (its process gone) is removed then.
#ifndef CABIN_BASE_AFILE_H
#define CABIN_BASE_AFILE_H

#include "base/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef struct afile {
    FILE *f;                 // write here between open and close
    char *path, *tmp;        // tmp NULL: written in place
} afile;

int afile_open(afile *a, const char *path, errbuf *err);   // failed: errno says why
// Flushes, syncs and renames; failed: true when a write already failed (e.g. fwrite returned
// short), so the file is not kept. 0, or -1 with err.
int afile_close(afile *a, bool failed, errbuf *err);
// All of data[0..n) into path.
int afile_write_all(const char *path, const void *data, size_t n, errbuf *err);

#endif
