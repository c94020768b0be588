#include "base/afile.h"
#include "base/mem.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Removes the temporaries of earlier saves of path that were killed mid-write ("NAME.tmp.PID"
// beside it, whose process is gone); one whose process still runs is left to it.
static void remove_stale_temporaries(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (slash == path) snprintf(dir, sizeof dir, "/");
    const char *base = slash ? slash + 1 : path;
    size_t nb = strlen(base);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const char *n = e->d_name;
        if (strncmp(n, base, nb) != 0 || strncmp(n + nb, ".tmp.", 5) != 0) continue;
        char *end;
        long pid = strtol(n + nb + 5, &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char stale[8192];
        snprintf(stale, sizeof stale, "%s/%s", dir, n);
        unlink(stale);
    }
    if (d) closedir(d);
}

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
        remove_stale_temporaries(a->path);
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
