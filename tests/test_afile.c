// base/afile: a file is written whole or not at all; devices are written in place.
#include "base/base.h"
#include "test.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

// Whether path holds exactly n bytes of the value c.
static bool all_bytes(const char *path, int c, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t got = 0;
    char buf[1 << 16];
    bool same = true;
    for (size_t k; same && (k = fread(buf, 1, sizeof buf, f)) > 0; got += k)
        for (size_t i = 0; i < k && same; i++) same = buf[i] == (char)c;
    fclose(f);
    return same && got == n;
}

// A save killed at any moment (SIGKILL: no handler runs) leaves the older file or the new one,
// never a mix or a shorter file: children write 32 MiB of 'n' over 1 MiB of 'o' and are killed
// after 0, 2, 4, ... ms. The temporary a killed child leaves is removed by the next save.
static void killed_mid_save(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/save.bin", dir);
    size_t n_old = 1 << 20, n_new = (size_t)32 << 20;
    char *old = malloc(n_old), *fresh = malloc(n_new);
    memset(old, 'o', n_old);
    memset(fresh, 'n', n_new);
    errbuf err = { { 0 } };
    int n_old_seen = 0, n_new_seen = 0, n_torn = 0, n_left = 0;
    for (int ms = 0; ms < 40; ms += 2) {
        if (afile_write_all(path, old, n_old, &err)) { CHECK(0, "%s", err.msg); break; }
        pid_t pid = fork();
        if (pid == 0) _exit(afile_write_all(path, fresh, n_new, NULL) ? 1 : 0);
        struct timespec d = { 0, (long)ms * 1000000L };
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        n_left += others(dir, "save.bin");   // the killed child's temporary, when it had one
        if (all_bytes(path, 'o', n_old)) n_old_seen++;
        else if (all_bytes(path, 'n', n_new)) n_new_seen++;
        else n_torn++;
    }
    CHECK(n_torn == 0, "killed mid-save: %d torn files (%d old, %d new)", n_torn, n_old_seen, n_new_seen);
    CHECK(afile_write_all(path, old, n_old, &err) == 0, "%s", err.msg);
    CHECK(others(dir, "save.bin") == 0, "the killed saves' temporaries (%d) are removed by the next save", n_left);
    printf("killed mid-save: %d times the older file, %d times the new one, 0 torn; %d temporaries left, "
           "then removed\n", n_old_seen, n_new_seen, n_left);
    unlink(path);
    free(old);
    free(fresh);
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
    killed_mid_save(dir);
    rmdir(dir);
    return test_finish();
}
