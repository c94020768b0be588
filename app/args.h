// Tiny command-line helpers shared by the cabin commands.
#ifndef CABIN_ARGS_H
#define CABIN_ARGS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct args {
    int argc;
    char **argv;
    int i;              // next index
    const char *cmd;    // for messages: "cabin generate"
    bool failed;
} args;

// True if argv[i] is `name` (or one of two spellings); advances past it.
bool arg_flag(args *a, const char *name, const char *alt);
// True if argv[i] is `name` followed by a value; stores it and advances. Missing value: error.
bool arg_str(args *a, const char *name, const char *alt, const char **out);
bool arg_int(args *a, const char *name, const char *alt, int *out);
bool arg_u64(args *a, const char *name, const char *alt, uint64_t *out);
bool arg_float(args *a, const char *name, const char *alt, float *out);
// Reports an unknown option or unexpected argument at argv[i]; returns false.
bool arg_unknown(args *a);
bool arg_help(args *a);   // -h / --help

#endif
