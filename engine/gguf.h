// GGUF reader (v2, v3; memory-mapped; little-endian) and writer.
// Every count, length, offset and size read from a file is checked before use; a bad file gets
// one line in errbuf naming the file and the problem.
#ifndef CABIN_GGUF_H
#define CABIN_GGUF_H

#include "base/base.h"

#include <stdbool.h>
#include <stdint.h>

enum gguf_vtype {
    GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
    GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11,
    GGUF_F64 = 12, GGUF_VTYPE_COUNT
};

#define GGUF_DEFAULT_ALIGNMENT 32

// A usable general.alignment: a power of two of at least 8 (the format asks for a multiple of 8;
// tensor data is read in place, so an F32 tensor must start on a 4-byte boundary at least).
static inline bool gguf_alignment_ok(uint64_t a) { return a >= 8 && (a & (a - 1)) == 0; }
#define GGUF_MAX_DIMS 4

// A string inside the file: not NUL-terminated, points into the mapping.
typedef struct gguf_str {
    const char *ptr;
    uint64_t len;
} gguf_str;

typedef struct gguf_kv {
    char *key;               // NUL-terminated copy
    uint32_t type;           // enum gguf_vtype
    union {
        uint64_t u;          // U8..U64 and BOOL, zero-extended
        int64_t i;           // I8..I64, sign-extended
        double f;            // F32, F64
        gguf_str s;          // STRING
    } v;
    // ARRAY: element type, count, and elements. Numeric elements are raw little-endian at
    // arr_data (possibly unaligned: read with memcpy or the gguf_arr_* helpers); string elements
    // are parsed into arr_strs.
    uint32_t arr_type;
    uint64_t arr_n;
    const uint8_t *arr_data;
    gguf_str *arr_strs;
} gguf_kv;

typedef struct gguf_tensor {
    char *name;              // NUL-terminated copy
    uint32_t n_dims;
    uint64_t ne[GGUF_MAX_DIMS]; // ne[0] is the contiguous (row) dimension; unused dims are 1
    uint32_t type;           // enum wtype
    uint64_t offset;         // relative to the data section
    uint64_t n_elements;
    uint64_t n_bytes;
    const void *data;        // into the mapping
} gguf_tensor;

typedef struct gguf_file {
    char *path;
    const uint8_t *base;     // whole file
    uint64_t size;
    bool mapped;             // base came from mmap (else borrowed memory)
    int fd;                  // the mapped file, kept open to see it shrink (-1: memory)
    uint32_t version;
    uint64_t alignment;
    uint64_t n_kv;
    gguf_kv *kv;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    uint64_t data_offset;    // start of the tensor data section
} gguf_file;

// Opens and validates a file. On failure *g is left closed and err says why.
int gguf_open(gguf_file *g, const char *path, errbuf *err);
// The same over memory the caller keeps alive (name is used in messages); data must start on an
// 8-byte boundary (malloc's blocks do), else it is refused.
int gguf_open_memory(gguf_file *g, const void *data, uint64_t size, const char *name, errbuf *err);
void gguf_close(gguf_file *g);
// Whether the mapped file still holds every byte that was mapped: reading a page past a
// truncated file's end kills the process (SIGBUS). 0, or -1 with "FILE: the file shrank on disk
// (N -> M bytes) while in use; reopen the model".
int gguf_check_size(const gguf_file *g, errbuf *err);

const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key);
const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name);

// Typed getters. Return 1 if found and converted, 0 if absent, -1 (err set) if present with a
// type that does not convert (or an integer out of range for the target).
int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out, errbuf *err);
int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out, errbuf *err);
int gguf_get_f32(const gguf_file *g, const char *key, float *out, errbuf *err);
int gguf_get_bool(const gguf_file *g, const char *key, bool *out, errbuf *err);
// *out points into the file (not NUL-terminated: use len). Use gguf_get_strdup for a C string.
int gguf_get_str(const gguf_file *g, const char *key, gguf_str *out, errbuf *err);
int gguf_get_strdup(const gguf_file *g, const char *key, char **out, errbuf *err);
// Array getter: checks the element type (any of the integer types where want_type is GGUF_I64).
int gguf_get_arr(const gguf_file *g, const char *key, uint32_t want_type, const gguf_kv **out,
                 errbuf *err);
// Element i of a numeric array, converted.
int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i);
double gguf_arr_f64(const gguf_kv *kv, uint64_t i);

const char *gguf_vtype_name(uint32_t t);
// Size in bytes of a scalar value type; 0 for STRING/ARRAY/unknown.
uint32_t gguf_vtype_size(uint32_t t);
// Value as text for `cabin info` (arrays abbreviated).
void gguf_kv_format(const gguf_kv *kv, char *buf, size_t n);

// ---- writer ----
typedef struct gguf_writer gguf_writer;

gguf_writer *gguf_writer_new(void);
void gguf_writer_free(gguf_writer *w);
void gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment);
// Setting a key that exists replaces its value.
void gguf_set_u32(gguf_writer *w, const char *key, uint32_t v);
void gguf_set_i32(gguf_writer *w, const char *key, int32_t v);
void gguf_set_u64(gguf_writer *w, const char *key, uint64_t v);
void gguf_set_f32(gguf_writer *w, const char *key, float v);
void gguf_set_bool(gguf_writer *w, const char *key, bool v);
void gguf_set_str(gguf_writer *w, const char *key, const char *v);
// Scalar of any numeric type given raw little-endian bytes (size gguf_vtype_size(type)).
void gguf_set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v);
// Array of numeric elements: n elements of gguf_vtype_size(type) bytes each, copied.
void gguf_set_arr_data(gguf_writer *w, const char *key, uint32_t type, const void *data, uint64_t n);
void gguf_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
// Same with explicit lengths (strings may contain NUL).
void gguf_set_arr_strn(gguf_writer *w, const char *key, const gguf_str *strs, uint64_t n);
// Copies every key/value of a reader file (except those the writer already has).
void gguf_copy_kvs(gguf_writer *w, const gguf_file *g);
// Adds a tensor; data is NOT copied and must stay valid until the write. ne as in gguf_tensor.
int gguf_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                    const uint64_t *ne, const void *data, errbuf *err);
// Writes atomically (temp file + rename).
int gguf_write_file(gguf_writer *w, const char *path, errbuf *err);
// Writes to a malloc'd buffer.
int gguf_write_memory(gguf_writer *w, uint8_t **out, uint64_t *out_size, errbuf *err);

#endif
