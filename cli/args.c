#include "cli/args.h"

#include "base/afile.h"
#include "base/mem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_COLUMN 23   // where the help text starts: 2 spaces + 21 for the spellings

static void *field(const opt_table *t, const opt_def *d) { return (char *)t->base + d->off; }

static bool takes_value(const opt_def *d) {
    return d->kind != OPT_FLAG && d->kind != OPT_POS && d->kind != OPT_OUT;
}

// The default shown in --help, or "" for none.
static const char *shown_default(const opt_table *t, const opt_def *d, char *buf, size_t cap) {
    if (d->def) return d->def;
    buf[0] = 0;
    const void *p = field(t, d);
    switch (d->kind) {
    case OPT_INT: if (*(const int *)p) snprintf(buf, cap, "%d", *(const int *)p); break;
    case OPT_U64: if (*(const uint64_t *)p) snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case OPT_FLOAT: if (*(const float *)p != 0.0f) snprintf(buf, cap, "%g", (double)*(const float *)p); break;
    case OPT_STR: case OPT_LIST:
        if (*(const char *const *)p) snprintf(buf, cap, "%s", *(const char *const *)p);
        break;
    default: break;
    }
    return buf;
}

// Prints text whose '\n's continue at the help column; *col: the column after the last line.
static void print_lines(FILE *f, const char *text, int *col) {
    for (const char *line = text;;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(f, "%.*s", len, line);
        *col += len;
        if (!nl) return;
        line = nl + 1;
        fprintf(f, "\n%*s", HELP_COLUMN, "");
        *col = HELP_COLUMN;
    }
}

static void print_option(FILE *f, const opt_table *t, const opt_def *d) {
    char left[96];
    if (d->kind == OPT_POS) snprintf(left, sizeof left, "%s", d->name);
    else if (d->kind == OPT_OUT) snprintf(left, sizeof left, "%s%s%s [%s]", d->alt ? d->alt : "", d->alt ? ", " : "", d->name, d->arg ? d->arg : "FILE");
    else snprintf(left, sizeof left, "%s%s%s%s%s", d->alt ? d->alt : "", d->alt ? ", " : "", d->name,
                  d->arg ? " " : "", d->arg ? d->arg : "");
    int pad = HELP_COLUMN - 2 - (int)strlen(left);
    fprintf(f, "  %s%*s", left, pad > 1 ? pad : 2, "");
    char dbuf[64];
    const char *def = shown_default(t, d, dbuf, sizeof dbuf);
    int col = HELP_COLUMN;
    print_lines(f, d->help, &col);
    if (*def) {   // on the same line when it fits in 100 columns, else on its own
        if (strchr(def, '\n') || col + (int)strlen(def) + 11 > 100) fprintf(f, "\n%*s(default ", HELP_COLUMN, "");
        else fprintf(f, " (default ");
        print_lines(f, def, &col);
        fprintf(f, ")");
    }
    if (d->more) {   // its '\n's continue at the help column too
        fprintf(f, "\n%*s", HELP_COLUMN, "");
        col = HELP_COLUMN;
        print_lines(f, d->more(), &col);
    }
    fprintf(f, "\n");
}

void opts_help(FILE *f, const cmd_spec *c, const opt_table *tables, int n_tables) {
    fprintf(f, "usage: %s\n\n%s", c->usage, c->about);
    if (c->about[0]) fprintf(f, "\n");
    for (int t = 0; t < n_tables; t++)
        for (int i = 0; i < tables[t].n; i++) print_option(f, &tables[t], &tables[t].defs[i]);
    fprintf(f, "  -h, --help           this text (--help-options: the option spellings, one per line)\n");
}

static void print_spellings(const opt_table *tables, int n_tables) {
    static const char *const kind_names[] = { "flag", "int", "u64", "number", "string", "list", "out", "value", "pos" };
    for (int t = 0; t < n_tables; t++)
        for (int i = 0; i < tables[t].n; i++) {
            const opt_def *d = &tables[t].defs[i];
            if (d->kind == OPT_POS) continue;
            printf("%s %s\n", d->name, kind_names[d->kind]);
            if (d->alt) printf("%s %s\n", d->alt, kind_names[d->kind]);
        }
}

static const opt_def *find(const opt_table *tables, int n_tables, const char *s, const opt_table **in) {
    for (int t = 0; t < n_tables; t++)
        for (int i = 0; i < tables[t].n; i++) {
            const opt_def *d = &tables[t].defs[i];
            if (d->kind == OPT_POS) continue;
            if (strcmp(s, d->name) == 0 || (d->alt && strcmp(s, d->alt) == 0)) { *in = &tables[t]; return d; }
        }
    return NULL;
}

// The next positional row not yet filled, or NULL.
static const opt_def *next_positional(const opt_table *tables, int n_tables, int taken, const opt_table **in) {
    int k = 0;
    for (int t = 0; t < n_tables; t++)
        for (int i = 0; i < tables[t].n; i++)
            if (tables[t].defs[i].kind == OPT_POS && k++ == taken) { *in = &tables[t]; return &tables[t].defs[i]; }
    return NULL;
}

// A number against its row's range: 0, or -1 with the line printed ("cabin chat: option -t:
// 0 is out of range (1 to 256)").
static int in_range(const cmd_spec *c, const opt_def *d, const char *opt, const char *v, double x) {
    if (!d->ranged) return 0;
    if (x >= d->lo && x <= d->hi) {   // false for NaN
        if (d->note) d->note(c->cmd, opt, x);
        return 0;
    }
    if (d->hi == HUGE_VAL) fprintf(stderr, "%s: option %s: %s is out of range (at least %.10g)\n", c->cmd, opt, v, d->lo);
    else fprintf(stderr, "%s: option %s: %s is out of range (%.10g to %.10g)\n", c->cmd, opt, v, d->lo, d->hi);
    return -1;
}

// A file the command will write: its directory must take a new file, and an existing file must
// be writable. 0, or -1 with the line printed. A long run that fails at its last step, after
// minutes of work, is what this prevents.
static int check_writable(const cmd_spec *c, const char *opt, const char *path) {
    if (opts_out_is_stdout(path)) return 0;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    const char *bad = NULL;
    if (access(dir, W_OK | X_OK) != 0) bad = dir;
    else if (access(path, F_OK) == 0 && access(path, W_OK) != 0) bad = path;
    if (!bad) return 0;
    fprintf(stderr, "%s: option %s: cannot write %s (%s: %s)\n", c->cmd, opt, path, bad, strerror(errno));
    return -1;
}

// Stores one value; prints the error line and returns -1 when it is not one.
static int store(const cmd_spec *c, const opt_table *t, const opt_def *d, const char *opt, const char *v) {
    void *p = field(t, d);
    char *end;
    errno = 0;
    switch (d->kind) {
    case OPT_INT: {
        long x = strtol(v, &end, 10);
        if (errno || *end || end == v || x < -2147483647L || x > 2147483647L) {
            fprintf(stderr, "%s: option %s: '%s' is not an integer\n", c->cmd, opt, v);
            return -1;
        }
        if (in_range(c, d, opt, v, (double)x)) return -1;
        *(int *)p = (int)x;
        return 0;
    }
    case OPT_U64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || *end || end == v || v[0] == '-') {
            fprintf(stderr, "%s: option %s: '%s' is not a non-negative integer\n", c->cmd, opt, v);
            return -1;
        }
        if (in_range(c, d, opt, v, (double)x)) return -1;
        *(uint64_t *)p = x;
        return 0;
    }
    case OPT_FLOAT: {
        float x = strtof(v, &end);
        if (errno || *end || end == v || !isfinite(x)) {
            fprintf(stderr, "%s: option %s: '%s' is not a number\n", c->cmd, opt, v);
            return -1;
        }
        if (in_range(c, d, opt, v, (double)x)) return -1;
        *(float *)p = x;
        return 0;
    }
    case OPT_CALL: {
        errbuf err = {{0}};
        if (d->call(t->base, v, &err)) { fprintf(stderr, "%s: %s\n", c->cmd, err.msg); return -1; }
        return 0;
    }
    default:
        *(const char **)p = v;
        return 0;
    }
}

// A spelling in two rows would let the first shadow the second: a table error, reported on
// every run of the command (tests/cli.sh runs every command's --help).
static int check_unique(const cmd_spec *c, const opt_table *tables, int n_tables) {
    for (int t = 0; t < n_tables; t++)
        for (int i = 0; i < tables[t].n; i++) {
            const opt_def *d = &tables[t].defs[i];
            if (d->kind == OPT_POS) continue;
            const char *names[2] = { d->name, d->alt };
            for (int k = 0; k < 2; k++) {
                const opt_table *in = NULL;
                if (names[k] && find(tables, n_tables, names[k], &in) != d) {
                    fprintf(stderr, "%s: option %s is defined twice (an option table error)\n", c->cmd, names[k]);
                    return -1;
                }
            }
        }
    return 0;
}

int opts_parse(const cmd_spec *c, const opt_table *tables, int n_tables, int argc, char **argv) {
    if (check_unique(c, tables, n_tables)) return OPTS_USAGE;
    int positionals = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) { opts_help(stdout, c, tables, n_tables); return OPTS_DONE; }
        if (strcmp(s, "--help-options") == 0) { print_spellings(tables, n_tables); return OPTS_DONE; }
        const opt_table *t = NULL;
        const opt_def *d = find(tables, n_tables, s, &t);
        if (!d) {
            if ((s[0] != '-' || !s[1]) && (d = next_positional(tables, n_tables, positionals, &t))) {
                positionals++;
                *(const char **)field(t, d) = s;
                continue;
            }
            if (s[0] == '-') fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", c->cmd, s, c->cmd);
            else fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", c->cmd, s, c->cmd);
            return OPTS_USAGE;
        }
        if (d->kind == OPT_FLAG) {
            errbuf err = {{0}};
            if (d->call && d->call(t->base, NULL, &err)) { fprintf(stderr, "%s: %s\n", c->cmd, err.msg); return OPTS_USAGE; }
            if (!d->call) *(bool *)field(t, d) = true;
            continue;
        }
        if (d->kind == OPT_OUT) {   // the FILE is optional: the next word, unless it is an option
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            bool file = next && (next[0] != '-' || !next[1]);
            *(const char **)field(t, d) = file ? next : "-";
            i += file;
            if (file && check_writable(c, s, next)) return OPTS_USAGE;
            continue;
        }
        if (!takes_value(d)) continue;
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option %s needs a value\n", c->cmd, s);
            return OPTS_USAGE;
        }
        if (store(c, t, d, s, argv[++i])) return OPTS_USAGE;
        if (d->writes && check_writable(c, s, argv[i])) return OPTS_USAGE;
    }
    return OPTS_OK;
}

int opts_split_list(const char *s, char **out, int max) {
    int n = 0;
    char *copy = xstrdup(s), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        if (*t) out[n++] = xstrdup(t);
    free(copy);
    return n;
}

void opts_free_list(char **items, int n) {
    for (int i = 0; i < n; i++) free(items[i]);
}

// The outputs open now: a command writes one or two at a time, each closed before it ends.
#define MAX_OPEN_OUTS 8
static afile open_outs[MAX_OPEN_OUTS];
static pthread_mutex_t open_outs_lock = PTHREAD_MUTEX_INITIALIZER;

FILE *opts_open_out(const char *path, errbuf *err) {
    if (opts_out_is_stdout(path)) return stdout;
    pthread_mutex_lock(&open_outs_lock);
    afile *slot = NULL;
    for (int i = 0; i < MAX_OPEN_OUTS && !slot; i++)
        if (!open_outs[i].f) slot = &open_outs[i];
    FILE *f = NULL;
    if (!slot) err_set(err, "%s: cannot write (more than %d outputs open)", path, MAX_OPEN_OUTS);
    else if (afile_open(slot, path, NULL)) err_set(err, "%s: cannot write (%s)", path, strerror(errno));
    else f = slot->f;
    pthread_mutex_unlock(&open_outs_lock);
    return f;
}

int opts_close_out(FILE *f, const char *path, errbuf *err) {
    if (f == stdout) return fflush(f) == 0 ? 0 : err_set(err, "standard output: write failed");
    pthread_mutex_lock(&open_outs_lock);
    afile *slot = NULL;
    for (int i = 0; i < MAX_OPEN_OUTS && !slot; i++)
        if (open_outs[i].f == f) slot = &open_outs[i];
    int rc = slot ? afile_close(slot, ferror(f) != 0, err)
                  : fclose(f) != 0 ? err_set(err, "%s: write failed", path) : 0;
    pthread_mutex_unlock(&open_outs_lock);
    return rc;
}
