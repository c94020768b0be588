// GGUF reader and writer. Layout (little-endian):
//   magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv (v1 used u32 counts: rejected)
//   n_kv × (string key, u32 type, value) | n_tensors × (string name, u32 n_dims, u64 ne[n_dims],
//   u32 type, u64 offset) | padding to alignment | tensor data (each tensor at an aligned offset)
// A string is u64 length + bytes (no NUL).
#include "gguf.h"
#include "wtype.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

// Limits that protect against hostile counts before any allocation is sized from them.
#define GGUF_MAX_KEY_LEN (1u << 16)

static const uint32_t vtype_sizes[GGUF_VTYPE_COUNT] = {
    [GGUF_U8] = 1, [GGUF_I8] = 1, [GGUF_U16] = 2, [GGUF_I16] = 2, [GGUF_U32] = 4, [GGUF_I32] = 4,
    [GGUF_F32] = 4, [GGUF_BOOL] = 1, [GGUF_STRING] = 0, [GGUF_ARRAY] = 0, [GGUF_U64] = 8,
    [GGUF_I64] = 8, [GGUF_F64] = 8,
};
static const char *const vtype_names[GGUF_VTYPE_COUNT] = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
};

uint32_t gguf_vtype_size(uint32_t t) { return t < GGUF_VTYPE_COUNT ? vtype_sizes[t] : 0; }
const char *gguf_vtype_name(uint32_t t) { return t < GGUF_VTYPE_COUNT ? vtype_names[t] : "unknown"; }

// ---- reader ----

typedef struct cursor {
    const uint8_t *base;
    uint64_t size, pos;
    const char *path;
    errbuf *err;
} cursor;

static int need(cursor *c, uint64_t n, const char *what) {
    if (n > c->size - c->pos)
        return err_set(c->err, "%s: truncated: %s needs %" PRIu64 " bytes at offset %" PRIu64
                       " but the file has %" PRIu64, c->path, what, n, c->pos, c->size);
    return 0;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    if (need(c, 4, what)) return -1;
    memcpy(v, c->base + c->pos, 4);
    c->pos += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    if (need(c, 8, what)) return -1;
    memcpy(v, c->base + c->pos, 8);
    c->pos += 8;
    return 0;
}

static int rd_str(cursor *c, gguf_str *s, const char *what) {
    uint64_t len;
    if (rd_u64(c, &len, what)) return -1;
    if (len > c->size - c->pos)
        return err_set(c->err, "%s: %s: string length %" PRIu64 " at offset %" PRIu64
                       " runs past end of file (%" PRIu64 " bytes)", c->path, what, len,
                       c->pos - 8, c->size);
    s->ptr = (const char *)c->base + c->pos;
    s->len = len;
    c->pos += len;
    return 0;
}

static void scalar_into(gguf_kv *kv, uint32_t type, const uint8_t *p) {
    switch (type) {
    case GGUF_U8: case GGUF_BOOL: kv->v.u = p[0]; break;
    case GGUF_I8: kv->v.i = (int8_t)p[0]; break;
    case GGUF_U16: { uint16_t x; memcpy(&x, p, 2); kv->v.u = x; break; }
    case GGUF_I16: { int16_t x; memcpy(&x, p, 2); kv->v.i = x; break; }
    case GGUF_U32: { uint32_t x; memcpy(&x, p, 4); kv->v.u = x; break; }
    case GGUF_I32: { int32_t x; memcpy(&x, p, 4); kv->v.i = x; break; }
    case GGUF_F32: { float x; memcpy(&x, p, 4); kv->v.f = x; break; }
    case GGUF_U64: { uint64_t x; memcpy(&x, p, 8); kv->v.u = x; break; }
    case GGUF_I64: { int64_t x; memcpy(&x, p, 8); kv->v.i = x; break; }
    case GGUF_F64: { double x; memcpy(&x, p, 8); kv->v.f = x; break; }
    default: break;
    }
}

static int read_kv(cursor *c, gguf_kv *kv, uint64_t idx) {
    gguf_str key;
    char what[96];
    snprintf(what, sizeof what, "key #%" PRIu64, idx);
    if (rd_str(c, &key, what)) return -1;
    if (key.len == 0 || key.len > GGUF_MAX_KEY_LEN)
        return err_set(c->err, "%s: key #%" PRIu64 " has invalid length %" PRIu64, c->path, idx,
                       key.len);
    if (memchr(key.ptr, 0, key.len))
        return err_set(c->err, "%s: key #%" PRIu64 " contains a NUL byte", c->path, idx);
    kv->key = xstrndup(key.ptr, key.len);
    if (rd_u32(c, &kv->type, kv->key)) return -1;
    if (kv->type >= GGUF_VTYPE_COUNT)
        return err_set(c->err, "%s: key %s: unknown value type %u", c->path, kv->key, kv->type);
    if (kv->type == GGUF_STRING) return rd_str(c, &kv->v.s, kv->key);
    if (kv->type != GGUF_ARRAY) {
        uint32_t sz = vtype_sizes[kv->type];
        if (need(c, sz, kv->key)) return -1;
        scalar_into(kv, kv->type, c->base + c->pos);
        if (kv->type == GGUF_BOOL && kv->v.u > 1)
            return err_set(c->err, "%s: key %s: bool value %u is neither 0 nor 1", c->path,
                           kv->key, (unsigned)kv->v.u);
        c->pos += sz;
        return 0;
    }
    if (rd_u32(c, &kv->arr_type, kv->key) || rd_u64(c, &kv->arr_n, kv->key)) return -1;
    if (kv->arr_type >= GGUF_VTYPE_COUNT || kv->arr_type == GGUF_ARRAY)
        return err_set(c->err, "%s: key %s: unsupported array element type %u", c->path, kv->key,
                       kv->arr_type);
    kv->arr_data = c->base + c->pos;
    if (kv->arr_type == GGUF_STRING) {
        // Each string needs at least its 8-byte length, which bounds n before allocating.
        if (kv->arr_n > (c->size - c->pos) / 8)
            return err_set(c->err, "%s: key %s: array of %" PRIu64 " strings cannot fit in the "
                           "remaining %" PRIu64 " bytes", c->path, kv->key, kv->arr_n,
                           c->size - c->pos);
        kv->arr_strs = try_malloc((size_t)(kv->arr_n ? kv->arr_n : 1) * sizeof(gguf_str));
        if (!kv->arr_strs)
            return err_set(c->err, "%s: key %s: out of memory for an array of %" PRIu64 " strings",
                           c->path, kv->key, kv->arr_n);
        for (uint64_t i = 0; i < kv->arr_n; i++)
            if (rd_str(c, &kv->arr_strs[i], kv->key)) return -1;
        return 0;
    }
    uint64_t bytes;
    if (!mul_u64(kv->arr_n, vtype_sizes[kv->arr_type], &bytes) || bytes > c->size - c->pos)
        return err_set(c->err, "%s: key %s: array of %" PRIu64 " %s runs past end of file "
                       "(%" PRIu64 " bytes)", c->path, kv->key, kv->arr_n,
                       vtype_names[kv->arr_type], c->size);
    c->pos += bytes;
    return 0;
}

static int read_tensor_info(cursor *c, gguf_tensor *t, uint64_t idx) {
    gguf_str name;
    char what[96];
    snprintf(what, sizeof what, "tensor info #%" PRIu64, idx);
    if (rd_str(c, &name, what)) return -1;
    if (name.len == 0 || name.len > GGUF_MAX_KEY_LEN || memchr(name.ptr, 0, name.len))
        return err_set(c->err, "%s: tensor #%" PRIu64 " has an invalid name", c->path, idx);
    t->name = xstrndup(name.ptr, name.len);
    if (rd_u32(c, &t->n_dims, t->name)) return -1;
    if (t->n_dims == 0 || t->n_dims > GGUF_MAX_DIMS)
        return err_set(c->err, "%s: tensor %s: %u dimensions (1 to %d allowed)", c->path, t->name,
                       t->n_dims, GGUF_MAX_DIMS);
    uint64_t n = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && rd_u64(c, &t->ne[d], t->name)) return -1;
        if (t->ne[d] == 0 || t->ne[d] > INT64_MAX)
            return err_set(c->err, "%s: tensor %s: dimension %u is %" PRIu64, c->path, t->name, d,
                           t->ne[d]);
        if (!mul_u64(n, t->ne[d], &n) || n > INT64_MAX)
            return err_set(c->err, "%s: tensor %s: element count overflows (dims %" PRIu64
                           " x %" PRIu64 " x %" PRIu64 " x %" PRIu64 ")", c->path, t->name,
                           t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    }
    t->n_elements = n;
    if (rd_u32(c, &t->type, t->name) || rd_u64(c, &t->offset, t->name)) return -1;
    const wtype_info *ti = wtype_get(t->type);
    if (!ti || ti->in_memory_only)
        return err_set(c->err, "%s: tensor %s: unknown tensor type %u", c->path, t->name, t->type);
    if (t->ne[0] % ti->block_size)
        return err_set(c->err, "%s: tensor %s: row length %" PRIu64 " is not a multiple of the "
                       "%s block size %u", c->path, t->name, t->ne[0], ti->name, ti->block_size);
    if (!mul_u64(n / ti->block_size, ti->block_bytes, &t->n_bytes))
        return err_set(c->err, "%s: tensor %s: byte size overflows", c->path, t->name);
    return 0;
}

// Rejects duplicate keys (kv) or tensor names. Sorting copies of the name pointers keeps this
// O(n log n): a hostile file can hold hundreds of thousands of entries.
static int cmp_names(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int check_unique(gguf_file *g, bool kv, errbuf *err) {
    uint64_t n = kv ? g->n_kv : g->n_tensors;
    if (n < 2) return 0;
    const char **names = try_malloc((size_t)n * sizeof *names);
    if (!names) return err_set(err, "%s: out of memory checking %" PRIu64 " names", g->path, n);
    for (uint64_t i = 0; i < n; i++) names[i] = kv ? g->kv[i].key : g->tensors[i].name;
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    int r = 0;
    for (uint64_t i = 1; i < n && r == 0; i++)
        if (strcmp(names[i - 1], names[i]) == 0)
            r = err_set(err, "%s: duplicate %s %s", g->path, kv ? "key" : "tensor name", names[i]);
    free(names);
    return r;
}

static int gguf_parse(gguf_file *g, errbuf *err) {
    cursor c = { .base = g->base, .size = g->size, .pos = 0, .path = g->path, .err = err };
    uint32_t magic;
    if (g->size < 4) return err_set(err, "%s: not a GGUF file (only %" PRIu64 " bytes)", g->path, g->size);
    memcpy(&magic, g->base, 4);
    if (memcmp(g->base, "GGUF", 4) != 0)
        return err_set(err, "%s: not a GGUF file (bad magic %02x %02x %02x %02x)", g->path,
                       g->base[0], g->base[1], g->base[2], g->base[3]);
    c.pos = 4;
    if (rd_u32(&c, &g->version, "version")) return -1;
    if (g->version != 2 && g->version != 3)
        return err_set(err, "%s: unsupported GGUF version %u (2 and 3 are supported)", g->path,
                       g->version);
    // The counts go into locals: g->n_kv and g->n_tensors only ever count entries that exist in
    // g->kv / g->tensors, so gguf_close frees correctly whatever point parsing stops at.
    uint64_t n_t, n_kv;
    if (rd_u64(&c, &n_t, "tensor count") || rd_u64(&c, &n_kv, "key/value count")) return -1;
    // A key/value needs at least 8 (key length) + 1 (key) + 4 (type) + 1 bytes; a tensor info at
    // least 8 + 1 + 4 + 8 + 4 + 8. Counts beyond what the file could hold are rejected up front.
    if (n_kv > (g->size - c.pos) / 14)
        return err_set(err, "%s: key/value count %" PRIu64 " cannot fit in a %" PRIu64
                       "-byte file", g->path, n_kv, g->size);
    if (n_t > (g->size - c.pos) / 33)
        return err_set(err, "%s: tensor count %" PRIu64 " cannot fit in a %" PRIu64
                       "-byte file", g->path, n_t, g->size);
    g->kv = try_calloc((size_t)(n_kv ? n_kv : 1), sizeof(gguf_kv));
    if (!g->kv) return err_set(err, "%s: out of memory for %" PRIu64 " key/values", g->path, n_kv);
    for (uint64_t i = 0; i < n_kv; i++) {
        g->n_kv = i + 1;
        if (read_kv(&c, &g->kv[i], i)) return -1;
    }
    if (check_unique(g, true, err)) return -1;
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    const gguf_kv *al = gguf_find_kv(g, "general.alignment");
    if (al) {
        if (al->type != GGUF_U32)
            return err_set(err, "%s: general.alignment has type %s (u32 expected)", g->path,
                           gguf_vtype_name(al->type));
        if (!gguf_alignment_ok(al->v.u))
            return err_set(err, "%s: general.alignment %" PRIu64 " is not a power of two of at "
                           "least 8 (tensor data is read in place)", g->path, al->v.u);
        g->alignment = al->v.u;
    }
    g->tensors = try_calloc((size_t)(n_t ? n_t : 1), sizeof(gguf_tensor));
    if (!g->tensors) return err_set(err, "%s: out of memory for %" PRIu64 " tensor infos", g->path, n_t);
    for (uint64_t i = 0; i < n_t; i++) {
        g->n_tensors = i + 1;
        if (read_tensor_info(&c, &g->tensors[i], i)) return -1;
    }
    if (check_unique(g, false, err)) return -1;
    if (!align_up_u64(c.pos, g->alignment, &g->data_offset) || g->data_offset > g->size) {
        if (n_t == 0) { g->data_offset = g->size; return 0; }
        return err_set(err, "%s: data section at %" PRIu64 " (aligned to %" PRIu64
                       ") starts past end of file (%" PRIu64 " bytes)", g->path, c.pos,
                       g->alignment, g->size);
    }
    for (uint64_t i = 0; i < n_t; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (t->offset % g->alignment)
            return err_set(err, "%s: tensor %s: data offset %" PRIu64 " is not aligned to %" PRIu64,
                           g->path, t->name, t->offset, g->alignment);
        uint64_t start, end;
        if (!add_u64(g->data_offset, t->offset, &start) || !add_u64(start, t->n_bytes, &end) ||
            end > g->size)
            return err_set(err, "%s: tensor %s: data [%" PRIu64 ", +%" PRIu64 ") runs past end "
                           "of file (%" PRIu64 " bytes)", g->path, t->name, start, t->n_bytes,
                           g->size);
        t->data = g->base + start;
    }
    return 0;
}

// Messages quote keys and tensor names taken from the file (and the caller's path): control
// characters in them would break the one-line message, so they become '?'.
static int fail_one_line(errbuf *err) {
    if (err)
        for (char *p = err->msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return -1;
}

int gguf_open_memory(gguf_file *g, const void *data, uint64_t size, const char *name, errbuf *err) {
    memset(g, 0, sizeof *g);
    g->path = xstrdup(name);
    g->base = data;
    g->size = size;
    g->fd = -1;
    if ((uintptr_t)data % 8) {
        err_set(err, "%s: the buffer does not start on an 8-byte boundary", name);
        gguf_close(g);
        return fail_one_line(err);
    }
    if (gguf_parse(g, err)) { gguf_close(g); return fail_one_line(err); }
    return 0;
}

static int open_file(gguf_file *g, const char *path, errbuf *err) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below, not a file).
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return err_set(err, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) { close(fd); return err_set(err, "%s: %s", path, strerror(errno)); }
    if (!S_ISREG(st.st_mode)) { close(fd); return err_set(err, "%s: not a regular file", path); }
    if (st.st_size == 0) { close(fd); return err_set(err, "%s: empty file (not a GGUF file)", path); }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    if (m == MAP_FAILED) { close(fd); return err_set(err, "%s: mmap failed: %s", path, strerror(e)); }
    g->fd = fd;
    g->path = xstrdup(path);
    g->base = m;
    g->size = (uint64_t)st.st_size;
    g->mapped = true;
    if (gguf_parse(g, err)) { gguf_close(g); return -1; }
    return 0;
}

int gguf_open(gguf_file *g, const char *path, errbuf *err) {
    memset(g, 0, sizeof *g);
    g->fd = -1;
    return open_file(g, path, err) ? fail_one_line(err) : 0;
}

void gguf_close(gguf_file *g) {
    if (!g) return;
    for (uint64_t i = 0; i < g->n_kv; i++) {
        free(g->kv[i].key);
        free(g->kv[i].arr_strs);
    }
    free(g->kv);
    for (uint64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->tensors);
    if (g->mapped && g->base) munmap((void *)g->base, (size_t)g->size);
    if (g->fd >= 0) close(g->fd);
    free(g->path);
    memset(g, 0, sizeof *g);
    g->fd = -1;
}

int gguf_check_size(const gguf_file *g, errbuf *err) {
    struct stat st;
    if (g->fd < 0 || fstat(g->fd, &st) != 0 || (uint64_t)st.st_size >= g->size) return 0;
    return err_set(err, "%s: the file shrank on disk (%llu -> %lld bytes) while in use; reopen the model", g->path,
                   (unsigned long long)g->size, (long long)st.st_size);
}

const gguf_kv *gguf_find_kv(const gguf_file *g, const char *key) {
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (g->kv[i].key && strcmp(g->kv[i].key, key) == 0) return &g->kv[i];
    return NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *g, const char *name) {
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].name && strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
    return NULL;
}

static bool is_signed_int(uint32_t t) { return t == GGUF_I8 || t == GGUF_I16 || t == GGUF_I32 || t == GGUF_I64; }
static bool is_unsigned_int(uint32_t t) { return t == GGUF_U8 || t == GGUF_U16 || t == GGUF_U32 || t == GGUF_U64; }

int gguf_get_i64(const gguf_file *g, const char *key, int64_t *out, errbuf *err) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (is_signed_int(kv->type)) { *out = kv->v.i; return 1; }
    if (is_unsigned_int(kv->type)) {
        if (kv->v.u > INT64_MAX) return err_set(err, "%s: %s: value %" PRIu64 " out of range", g->path, key, kv->v.u);
        *out = (int64_t)kv->v.u;
        return 1;
    }
    return err_set(err, "%s: %s has type %s (an integer expected)", g->path, key, gguf_vtype_name(kv->type));
}

int gguf_get_u32(const gguf_file *g, const char *key, uint32_t *out, errbuf *err) {
    int64_t v;
    int r = gguf_get_i64(g, key, &v, err);
    if (r <= 0) return r;
    if (v < 0 || v > UINT32_MAX)
        return err_set(err, "%s: %s: value %" PRId64 " out of range", g->path, key, v);
    *out = (uint32_t)v;
    return 1;
}

int gguf_get_f32(const gguf_file *g, const char *key, float *out, errbuf *err) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (kv->type == GGUF_F32 || kv->type == GGUF_F64) { *out = (float)kv->v.f; return 1; }
    if (is_signed_int(kv->type)) { *out = (float)kv->v.i; return 1; }
    if (is_unsigned_int(kv->type)) { *out = (float)kv->v.u; return 1; }
    return err_set(err, "%s: %s has type %s (a number expected)", g->path, key, gguf_vtype_name(kv->type));
}

int gguf_get_bool(const gguf_file *g, const char *key, bool *out, errbuf *err) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (kv->type == GGUF_BOOL) { *out = kv->v.u != 0; return 1; }
    return err_set(err, "%s: %s has type %s (bool expected)", g->path, key, gguf_vtype_name(kv->type));
}

int gguf_get_str(const gguf_file *g, const char *key, gguf_str *out, errbuf *err) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (kv->type == GGUF_STRING) { *out = kv->v.s; return 1; }
    return err_set(err, "%s: %s has type %s (string expected)", g->path, key, gguf_vtype_name(kv->type));
}

int gguf_get_strdup(const gguf_file *g, const char *key, char **out, errbuf *err) {
    gguf_str s;
    int r = gguf_get_str(g, key, &s, err);
    if (r <= 0) return r;
    *out = xstrndup(s.ptr, s.len);
    return 1;
}

int gguf_get_arr(const gguf_file *g, const char *key, uint32_t want_type, const gguf_kv **out,
                 errbuf *err) {
    const gguf_kv *kv = gguf_find_kv(g, key);
    if (!kv) return 0;
    if (kv->type != GGUF_ARRAY)
        return err_set(err, "%s: %s has type %s (array expected)", g->path, key, gguf_vtype_name(kv->type));
    bool ok = kv->arr_type == want_type ||
              (want_type == GGUF_I64 && (is_signed_int(kv->arr_type) || is_unsigned_int(kv->arr_type))) ||
              (want_type == GGUF_F64 && (kv->arr_type == GGUF_F32 || kv->arr_type == GGUF_F64));
    if (!ok)
        return err_set(err, "%s: %s is an array of %s (%s expected)", g->path, key,
                       gguf_vtype_name(kv->arr_type), gguf_vtype_name(want_type));
    *out = kv;
    return 1;
}

int64_t gguf_arr_i64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp;
    scalar_into(&tmp, kv->arr_type, kv->arr_data + i * vtype_sizes[kv->arr_type]);
    if (is_signed_int(kv->arr_type)) return tmp.v.i;
    if (is_unsigned_int(kv->arr_type) || kv->arr_type == GGUF_BOOL) return (int64_t)tmp.v.u;
    // float elements: saturate (NaN -> 0) rather than convert out of range, which C leaves undefined
    if (!(tmp.v.f == tmp.v.f)) return 0;
    if (tmp.v.f >= 9223372036854775808.0) return INT64_MAX;
    if (tmp.v.f < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)tmp.v.f;
}

double gguf_arr_f64(const gguf_kv *kv, uint64_t i) {
    gguf_kv tmp;
    scalar_into(&tmp, kv->arr_type, kv->arr_data + i * vtype_sizes[kv->arr_type]);
    if (kv->arr_type == GGUF_F32 || kv->arr_type == GGUF_F64) return tmp.v.f;
    if (is_signed_int(kv->arr_type)) return (double)tmp.v.i;
    return (double)tmp.v.u;
}

static void fmt_str(char *buf, size_t n, const char *p, uint64_t len) {
    size_t o = 0;
    if (n < 8) { if (n) buf[0] = 0; return; }
    buf[o++] = '"';
    for (uint64_t i = 0; i < len && o + 6 < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\n') { buf[o++] = '\\'; buf[o++] = 'n'; }
        else if (ch < 32) o += (size_t)snprintf(buf + o, n - o, "\\x%02x", ch);
        else buf[o++] = (char)ch;
    }
    if (o + 2 < n) buf[o++] = '"';
    buf[o] = 0;
}

void gguf_kv_format(const gguf_kv *kv, char *buf, size_t n) {
    gguf_kv tmp = *kv;
    switch (kv->type) {
    case GGUF_STRING: fmt_str(buf, n, kv->v.s.ptr, kv->v.s.len > 200 ? 200 : kv->v.s.len); return;
    case GGUF_BOOL: snprintf(buf, n, "%s", kv->v.u ? "true" : "false"); return;
    case GGUF_F32: case GGUF_F64: snprintf(buf, n, "%g", kv->v.f); return;
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64:
        snprintf(buf, n, "%" PRId64, kv->v.i); return;
    case GGUF_ARRAY: break;
    default: snprintf(buf, n, "%" PRIu64, tmp.v.u); return;
    }
    size_t o = (size_t)snprintf(buf, n, "[%s x %" PRIu64 "]", gguf_vtype_name(kv->arr_type), kv->arr_n);
    for (uint64_t i = 0; i < kv->arr_n && i < 4 && o + 40 < n; i++) {
        if (kv->arr_type == GGUF_STRING) {
            buf[o++] = ' ';
            fmt_str(buf + o, n - o < 40 ? n - o : 40, kv->arr_strs[i].ptr, kv->arr_strs[i].len);
            o += strlen(buf + o);
        } else if (kv->arr_type == GGUF_F32 || kv->arr_type == GGUF_F64) {
            o += (size_t)snprintf(buf + o, n - o, " %g", gguf_arr_f64(kv, i));
        } else {
            o += (size_t)snprintf(buf + o, n - o, " %" PRId64, gguf_arr_i64(kv, i));
        }
    }
    if (kv->arr_n > 4 && o + 5 < n) snprintf(buf + o, n - o, " ...");
}

// ---- writer ----

typedef struct wkv {
    char *key;
    uint32_t type;       // GGUF_* value type
    uint32_t arr_type;
    uint64_t arr_n;
    uint8_t *bytes;      // serialized value (after the type field)
    uint64_t n_bytes;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    uint64_t ne[GGUF_MAX_DIMS];
    uint64_t n_bytes, offset;
    const void *data;
} wtensor;

struct gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
};

gguf_writer *gguf_writer_new(void) {
    gguf_writer *w = xcalloc(1, sizeof *w);
    w->alignment = GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) { free(w->kv[i].key); free(w->kv[i].bytes); }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

void gguf_writer_set_alignment(gguf_writer *w, uint32_t alignment) {
    w->alignment = alignment;
    gguf_set_u32(w, "general.alignment", alignment);
}

static wkv *slot(gguf_writer *w, const char *key) {
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) { free(w->kv[i].bytes); w->kv[i].bytes = NULL; return &w->kv[i]; }
    if (w->n_kv == w->cap_kv) {
        w->cap_kv = w->cap_kv ? w->cap_kv * 2 : 32;
        w->kv = xrealloc(w->kv, w->cap_kv * sizeof *w->kv);
    }
    wkv *k = &w->kv[w->n_kv++];
    memset(k, 0, sizeof *k);
    k->key = xstrdup(key);
    return k;
}

void gguf_set_scalar(gguf_writer *w, const char *key, uint32_t type, const void *v) {
    wkv *k = slot(w, key);
    k->type = type;
    k->n_bytes = gguf_vtype_size(type);
    k->bytes = xmalloc(k->n_bytes);
    memcpy(k->bytes, v, k->n_bytes);
    // Readers lay the data section out by this key, so the writer must follow it however it
    // was set (gguf_writer_set_alignment, gguf_set_u32, gguf_copy_kvs).
    if (type == GGUF_U32 && strcmp(key, "general.alignment") == 0) memcpy(&w->alignment, v, 4);
}

void gguf_set_u32(gguf_writer *w, const char *key, uint32_t v) { gguf_set_scalar(w, key, GGUF_U32, &v); }
void gguf_set_i32(gguf_writer *w, const char *key, int32_t v) { gguf_set_scalar(w, key, GGUF_I32, &v); }
void gguf_set_u64(gguf_writer *w, const char *key, uint64_t v) { gguf_set_scalar(w, key, GGUF_U64, &v); }
void gguf_set_f32(gguf_writer *w, const char *key, float v) { gguf_set_scalar(w, key, GGUF_F32, &v); }
void gguf_set_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    gguf_set_scalar(w, key, GGUF_BOOL, &b);
}

static uint8_t *put_str(uint8_t *p, const char *s, uint64_t len) {
    memcpy(p, &len, 8);
    memcpy(p + 8, s, len);
    return p + 8 + len;
}

void gguf_set_str(gguf_writer *w, const char *key, const char *v) {
    wkv *k = slot(w, key);
    uint64_t len = strlen(v);
    k->type = GGUF_STRING;
    k->n_bytes = 8 + len;
    k->bytes = xmalloc(k->n_bytes);
    put_str(k->bytes, v, len);
}

void gguf_set_arr_data(gguf_writer *w, const char *key, uint32_t type, const void *data, uint64_t n) {
    wkv *k = slot(w, key);
    uint64_t body = n * gguf_vtype_size(type);
    k->type = GGUF_ARRAY;
    k->arr_type = type;
    k->arr_n = n;
    k->n_bytes = 12 + body;
    k->bytes = xmalloc(k->n_bytes);
    memcpy(k->bytes, &type, 4);
    memcpy(k->bytes + 4, &n, 8);
    if (body) memcpy(k->bytes + 12, data, body);
}

void gguf_set_arr_strn(gguf_writer *w, const char *key, const gguf_str *strs, uint64_t n) {
    wkv *k = slot(w, key);
    uint64_t body = 0;
    for (uint64_t i = 0; i < n; i++) body += 8 + strs[i].len;
    uint32_t type = GGUF_STRING;
    k->type = GGUF_ARRAY;
    k->arr_type = type;
    k->arr_n = n;
    k->n_bytes = 12 + body;
    k->bytes = xmalloc(k->n_bytes);
    memcpy(k->bytes, &type, 4);
    memcpy(k->bytes + 4, &n, 8);
    uint8_t *p = k->bytes + 12;
    for (uint64_t i = 0; i < n; i++) p = put_str(p, strs[i].ptr, strs[i].len);
}

void gguf_set_arr_str(gguf_writer *w, const char *key, const char *const *strs, uint64_t n) {
    gguf_str *s = xmalloc((size_t)(n ? n : 1) * sizeof *s);
    for (uint64_t i = 0; i < n; i++) { s[i].ptr = strs[i]; s[i].len = strlen(strs[i]); }
    gguf_set_arr_strn(w, key, s, n);
    free(s);
}

void gguf_copy_kvs(gguf_writer *w, const gguf_file *g) {
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv *kv = &g->kv[i];
        bool have = false;
        for (size_t j = 0; j < w->n_kv && !have; j++) have = strcmp(w->kv[j].key, kv->key) == 0;
        if (have) continue;
        if (kv->type == GGUF_STRING) {
            char *s = xstrndup(kv->v.s.ptr, kv->v.s.len);
            gguf_set_str(w, kv->key, s);
            free(s);
        } else if (kv->type == GGUF_ARRAY && kv->arr_type == GGUF_STRING) {
            gguf_set_arr_strn(w, kv->key, kv->arr_strs, kv->arr_n);
        } else if (kv->type == GGUF_ARRAY) {
            gguf_set_arr_data(w, kv->key, kv->arr_type, kv->arr_data, kv->arr_n);
        } else {
            uint8_t raw[8] = {0};
            uint32_t sz = gguf_vtype_size(kv->type);
            // Re-serialize from the widened value (little-endian host).
            if (kv->type == GGUF_F32) { float f = (float)kv->v.f; memcpy(raw, &f, 4); }
            else if (kv->type == GGUF_F64) memcpy(raw, &kv->v.f, 8);
            else if (is_signed_int(kv->type)) memcpy(raw, &kv->v.i, sz);
            else memcpy(raw, &kv->v.u, sz);
            gguf_set_scalar(w, kv->key, kv->type, raw);
        }
    }
}

int gguf_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                    const uint64_t *ne, const void *data, errbuf *err) {
    // Refuse whatever the reader would refuse, so every file written can be read back.
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > GGUF_MAX_KEY_LEN)
        return err_set(err, "tensor name of length %zu (1 to %u allowed)", name_len, GGUF_MAX_KEY_LEN);
    const wtype_info *ti = wtype_get(type);
    if (!ti) return err_set(err, "tensor %s: unknown type %u", name, type);
    if (ti->in_memory_only)
        return err_set(err, "tensor %s: %s is cabin's own in-memory type; files keep standard types "
                       "(write q8_0, q4_0, f16, ...)", name, ti->name);
    if (n_dims == 0 || n_dims > GGUF_MAX_DIMS)
        return err_set(err, "tensor %s: %u dimensions", name, n_dims);
    uint64_t n = 1, n_bytes;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > INT64_MAX)
            return err_set(err, "tensor %s: dimension %u is %" PRIu64, name, d, ne[d]);
        if (!mul_u64(n, ne[d], &n) || n > INT64_MAX)
            return err_set(err, "tensor %s: size overflows", name);
    }
    if (ne[0] % ti->block_size)
        return err_set(err, "tensor %s: row length %" PRIu64 " not a multiple of %u (%s)", name,
                       ne[0], ti->block_size, ti->name);
    if (!mul_u64(n / ti->block_size, ti->block_bytes, &n_bytes))
        return err_set(err, "tensor %s: byte size overflows", name);
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) return err_set(err, "duplicate tensor %s", name);
    if (w->n_t == w->cap_t) {
        w->cap_t = w->cap_t ? w->cap_t * 2 : 32;
        w->t = xrealloc(w->t, w->cap_t * sizeof *w->t);
    }
    wtensor *t = &w->t[w->n_t++];
    memset(t, 0, sizeof *t);
    t->name = xstrdup(name);
    t->type = type;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) t->ne[d] = d < n_dims ? ne[d] : 1;
    t->n_bytes = n_bytes;
    t->data = data;
    return 0;
}

// Emits the file through a sink; the same code serves files and memory.
typedef struct sink {
    FILE *f;
    uint8_t *buf;
    uint64_t len, cap;
    bool failed;
} sink;

static void emit(sink *s, const void *p, uint64_t n) {
    if (s->failed || n == 0) return;
    if (s->f) {
        if (fwrite(p, 1, n, s->f) != n) s->failed = true;
        return;
    }
    if (s->len + n > s->cap) {
        while (s->len + n > s->cap) s->cap = s->cap ? s->cap * 2 : 4096;
        s->buf = xrealloc(s->buf, s->cap);
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void emit_pad(sink *s, uint64_t *pos, uint64_t align) {
    static const uint8_t zeros[256];
    uint64_t target;
    align_up_u64(*pos, align, &target);
    while (*pos < target) {
        uint64_t n = target - *pos > sizeof zeros ? sizeof zeros : target - *pos;
        emit(s, zeros, n);
        *pos += n;
    }
}

static void write_all(gguf_writer *w, sink *s) {
    uint32_t version = 3;
    uint64_t n_t = w->n_t, n_kv = w->n_kv, pos = 0;
    emit(s, "GGUF", 4);
    emit(s, &version, 4);
    emit(s, &n_t, 8);
    emit(s, &n_kv, 8);
    pos = 24;
    for (size_t i = 0; i < w->n_kv; i++) {
        uint64_t klen = strlen(w->kv[i].key);
        emit(s, &klen, 8);
        emit(s, w->kv[i].key, klen);
        emit(s, &w->kv[i].type, 4);
        emit(s, w->kv[i].bytes, w->kv[i].n_bytes);
        pos += 8 + klen + 4 + w->kv[i].n_bytes;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        wtensor *t = &w->t[i];
        align_up_u64(off, w->alignment, &off);
        t->offset = off;
        off += t->n_bytes;
        uint64_t nlen = strlen(t->name);
        emit(s, &nlen, 8);
        emit(s, t->name, nlen);
        emit(s, &t->n_dims, 4);
        emit(s, t->ne, 8ull * t->n_dims);
        emit(s, &t->type, 4);
        emit(s, &t->offset, 8);
        pos += 8 + nlen + 4 + 8ull * t->n_dims + 4 + 8;
    }
    emit_pad(s, &pos, w->alignment);
    uint64_t data_start = pos;
    for (size_t i = 0; i < w->n_t; i++) {
        uint64_t rel = pos - data_start;
        emit_pad(s, &rel, w->alignment);
        pos = data_start + rel;
        emit(s, w->t[i].data, w->t[i].n_bytes);
        pos += w->t[i].n_bytes;
    }
}

// What would make the written file unreadable: an alignment that is not a power of two, a
// general.alignment key of a type other than u32, an empty or over-long key.
static int writer_check(const gguf_writer *w, const char *path, errbuf *err) {
    if (!gguf_alignment_ok(w->alignment))
        return err_set(err, "%s: alignment %u is not a power of two of at least 8", path, w->alignment);
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, "general.alignment") == 0 && w->kv[i].type != GGUF_U32)
            return err_set(err, "%s: general.alignment has type %s (u32 expected)", path,
                           gguf_vtype_name(w->kv[i].type));
    for (size_t i = 0; i < w->n_kv; i++) {
        size_t len = strlen(w->kv[i].key);
        if (len == 0 || len > GGUF_MAX_KEY_LEN)
            return err_set(err, "%s: key #%zu has length %zu (1 to %u allowed)", path, i, len,
                           GGUF_MAX_KEY_LEN);
    }
    return 0;
}

int gguf_write_memory(gguf_writer *w, uint8_t **out, uint64_t *out_size, errbuf *err) {
    if (writer_check(w, "gguf", err)) return -1;
    sink s = {0};
    write_all(w, &s);
    if (s.failed) { free(s.buf); return err_set(err, "gguf: write to memory failed"); }
    *out = s.buf;
    *out_size = s.len;
    return 0;
}

int gguf_write_file(gguf_writer *w, const char *path, errbuf *err) {
    if (writer_check(w, path, err)) return -1;
    afile a;
    if (afile_open(&a, path, err)) return -1;
    sink s = { .f = a.f };
    write_all(w, &s);
    int e = errno;
    if (s.failed) {
        afile_close(&a, true, err);
        return err_set(err, "%s: write failed: %s", path, strerror(e));
    }
    return afile_close(&a, false, err);
}
