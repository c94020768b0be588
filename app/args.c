#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is(const args *a, const char *name, const char *alt) {
    const char *s = a->argv[a->i];
    return strcmp(s, name) == 0 || (alt && strcmp(s, alt) == 0);
}

bool arg_flag(args *a, const char *name, const char *alt) {
    if (a->i >= a->argc || !is(a, name, alt)) return false;
    a->i++;
    return true;
}

bool arg_str(args *a, const char *name, const char *alt, const char **out) {
    if (a->i >= a->argc || !is(a, name, alt)) return false;
    if (a->i + 1 >= a->argc) {
        fprintf(stderr, "%s: option %s needs a value\n", a->cmd, a->argv[a->i]);
        a->failed = true;
        a->i = a->argc;
        return true;
    }
    *out = a->argv[a->i + 1];
    a->i += 2;
    return true;
}

bool arg_int(args *a, const char *name, const char *alt, int *out) {
    const char *v = NULL;
    const char *opt = a->i < a->argc ? a->argv[a->i] : "";
    if (!arg_str(a, name, alt, &v)) return false;
    if (!v) return true;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < -2147483647L || x > 2147483647L) {
        fprintf(stderr, "%s: option %s: '%s' is not an integer\n", a->cmd, opt, v);
        a->failed = true;
    } else {
        *out = (int)x;
    }
    return true;
}

bool arg_u64(args *a, const char *name, const char *alt, uint64_t *out) {
    const char *v = NULL;
    const char *opt = a->i < a->argc ? a->argv[a->i] : "";
    if (!arg_str(a, name, alt, &v)) return false;
    if (!v) return true;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || end == v || v[0] == '-') {
        fprintf(stderr, "%s: option %s: '%s' is not a non-negative integer\n", a->cmd, opt, v);
        a->failed = true;
    } else {
        *out = x;
    }
    return true;
}

bool arg_float(args *a, const char *name, const char *alt, float *out) {
    const char *v = NULL;
    const char *opt = a->i < a->argc ? a->argv[a->i] : "";
    if (!arg_str(a, name, alt, &v)) return false;
    if (!v) return true;
    char *end;
    errno = 0;
    float x = strtof(v, &end);
    if (errno || *end || end == v) {
        fprintf(stderr, "%s: option %s: '%s' is not a number\n", a->cmd, opt, v);
        a->failed = true;
    } else {
        *out = x;
    }
    return true;
}

bool arg_unknown(args *a) {
    const char *s = a->argv[a->i];
    if (s[0] == '-') fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", a->cmd, s, a->cmd);
    else fprintf(stderr, "%s: unexpected argument '%s' (see %s --help)\n", a->cmd, s, a->cmd);
    a->failed = true;
    return false;
}

bool arg_help(args *a) { return arg_flag(a, "-h", "--help"); }
