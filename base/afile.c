#include "base/afile.h"
#include "base/mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int afile_open(afile *a, const char *path, errbuf *err) {
    struct stat st;
    // a symbolic link is written through: its target is replaced, the link stays
    char *real = realpath(path, NULL);
    a->path = real ? real : xstrdup(path);
    a->tmp = NULL;
    const char *target = a->path;
    bool exists = stat(a->path, &st) == 0;
    if (!exists || S_ISREG(st.st_mode)) {
        size_t n = strlen(a->path) + 32;
        a->tmp = xmalloc(n);
        snprintf(a->tmp, n, "%s.tmp.%d", a->path, (int)getpid());
        target = a->tmp;
    }
    a->f = fopen(target, "wb");
    if (!a->f) {
        int e = errno;
        int rc = err_set(err, "%s: %s", path, strerror(e));
        free(a->path);
        free(a->tmp);
        errno = e;   // for a caller that words the error its own way
        return rc;
    }
    if (a->tmp && exists) fchmod(fileno(a->f), st.st_mode & 07777);   // the file keeps its mode
    return 0;
}

int afile_close(afile *a, bool failed, errbuf *err) {
    int e = 0;
    if (!failed && fflush(a->f) != 0) { failed = true; e = errno; }
    if (!failed && a->tmp && fsync(fileno(a->f)) != 0) { failed = true; e = errno; }
    if (fclose(a->f) != 0 && !failed) { failed = true; e = errno; }
    int rc = 0;
    if (failed) {
        rc = err_set(err, "%s: write failed%s%s", a->path, e ? ": " : "", e ? strerror(e) : "");
        if (a->tmp) unlink(a->tmp);
    } else if (a->tmp && rename(a->tmp, a->path) != 0) {
        rc = err_set(err, "%s: %s", a->path, strerror(errno));
        unlink(a->tmp);
    }
    free(a->path);
    free(a->tmp);
    a->f = NULL;
    return rc;
}

int afile_write_all(const char *path, const void *data, size_t n, errbuf *err) {
    afile a;
    if (afile_open(&a, path, err)) return -1;
    bool failed = fwrite(data, 1, n, a.f) != n;
    int e = errno;
    if (failed) {
        afile_close(&a, true, err);
        return err_set(err, "%s: write failed: %s", path, strerror(e));
    }
    return afile_close(&a, false, err);
}
