// base/afile: a file is written whole or not at all; devices are written in place.
#include "base/base.h"
#include "test.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

// Files in dir besides the one named keep (temporaries left behind).
static int others(const char *dir, const char *keep) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.' && strcmp(e->d_name, keep) != 0) n++;
    if (d) closedir(d);
    return n;
}

int main(void) {
    char dir[] = "/tmp/cabin-afile-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/out.txt", dir);
    errbuf err = { { 0 } };
    CHECK(afile_write_all(path, "first", 5, &err) == 0, "%s", err.msg);
    CHECK(strcmp(slurp(path), "first") == 0, "%s", slurp(path));
    CHECK(afile_write_all(path, "second", 6, &err) == 0, "%s", err.msg);
    CHECK(strcmp(slurp(path), "second") == 0, "replaced: %s", slurp(path));
    // a write that failed part way: the old file stays, no temporary is left
    afile a;
    CHECK(afile_open(&a, path, &err) == 0, "%s", err.msg);
    fputs("half", a.f);
    CHECK(afile_close(&a, true, &err) != 0 && strstr(err.msg, "out.txt: write failed"), "%s", err.msg);
    CHECK(strcmp(slurp(path), "second") == 0, "the old file stays: %s", slurp(path));
    CHECK(others(dir, "out.txt") == 0, "no temporary left");
    // a symbolic link is written through (the link stays a link), and the file keeps its mode
    char link[300];
    snprintf(link, sizeof link, "%s/link.txt", dir);
    CHECK(chmod(path, 0640) == 0 && symlink(path, link) == 0, "setup");
    CHECK(afile_write_all(link, "third", 5, &err) == 0, "%s", err.msg);
    struct stat lst;
    CHECK(lstat(link, &lst) == 0 && S_ISLNK(lst.st_mode), "the link is still a link");
    CHECK(strcmp(slurp(path), "third") == 0, "its target written: %s", slurp(path));
    CHECK(stat(path, &lst) == 0 && (lst.st_mode & 0777) == 0640, "mode kept: %o", (unsigned)(lst.st_mode & 0777));
    unlink(link);
    // a device is written in place, not replaced; a full one says so
    CHECK(afile_write_all("/dev/null", "x", 1, &err) == 0, "%s", err.msg);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null is still a device");
    if (access("/dev/full", W_OK) == 0) {
        char big[1 << 16];
        memset(big, 'x', sizeof big);
        err.msg[0] = 0;
        CHECK(afile_write_all("/dev/full", big, sizeof big, &err) != 0 && strstr(err.msg, "/dev/full: write failed: No space left"),
              "%s", err.msg);
        CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");
    } else {
        SKIP("/dev/full is not writable here");
    }
    // a folder that does not exist: one line naming the path
    snprintf(path, sizeof path, "%s/no/such/out.txt", dir);
    CHECK(afile_write_all(path, "x", 1, &err) != 0 && strstr(err.msg, "no/such/out.txt: No such file") && !strchr(err.msg, '\n'),
          "%s", err.msg);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    unlink(path);
    rmdir(dir);
    return test_finish();
}
