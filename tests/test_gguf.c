// GGUF reader/writer tests: writer -> reader round trips, hostile files (every prefix of a valid
// file, hand-made bad headers, a mutation fuzz loop) and, with ../shared/ref, the reference files.
#include "engine/gguf.h"
#include "base/base.h"
#include "engine/wtype.h"
#include "tests/test.h"
#include "tests/rng.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// ---- small helpers ----


// A growable byte buffer for building files by hand.
typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        while (b->n + n > b->cap) b->cap = b->cap ? b->cap * 2 : 256;
        b->p = xrealloc(b->p, b->cap);
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void b_u8(bytes *b, uint8_t v) { b_put(b, &v, 1); }
static void b_u32(bytes *b, uint32_t v) { b_put(b, &v, 4); }
static void b_u64(bytes *b, uint64_t v) { b_put(b, &v, 8); }
static void b_str(bytes *b, const char *s) { b_u64(b, strlen(s)); b_put(b, s, strlen(s)); }
static void b_hdr(bytes *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b_put(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}
static void b_kv_head(bytes *b, const char *key, uint32_t type) { b_str(b, key); b_u32(b, type); }
static void b_kv_u32(bytes *b, const char *key, uint32_t v) { b_kv_head(b, key, GGUF_U32); b_u32(b, v); }
static void b_tinfo(bytes *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
                    uint64_t offset) {
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < (n_dims <= 5 ? n_dims : 1); d++) b_u64(b, ne[d]); // ne has n_dims entries (1 when absurd)
    b_u32(b, type);
    b_u64(b, offset);
}
static void b_pad(bytes *b, size_t align) { while (b->n % align) b_u8(b, 0); }
static void b_zeros(bytes *b, size_t n) { for (size_t i = 0; i < n; i++) b_u8(b, 0); }

static bool one_line_msg(const char *msg, const char *name) {
    return msg[0] != 0 && strchr(msg, '\n') == NULL && strstr(msg, name) != NULL;
}

static bool all_zero(const void *p, size_t n) {
    const uint8_t *q = p;
    for (size_t i = 0; i < n; i++)
        if (q[i]) return false;
    return true;
}

// Opens `n` bytes from an exact-size heap copy (so ASan sees any overread) and expects failure
// with a one-line message naming the file and containing `want` (when not NULL).
static void expect_reject(const void *data, size_t n, const char *label, const char *want) {
    char name[160];
    snprintf(name, sizeof name, "hostile-%s.gguf", label);
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, data, n);
    gguf_file g;
    errbuf err = {{0}};
    int r = gguf_open_memory(&g, copy, n, name, &err);
    CHECK(r == -1, "%s: accepted", label);
    if (r == 0) { gguf_close(&g); free(copy); return; }
    CHECK(one_line_msg(err.msg, name), "%s: message not one line naming the file: \"%s\"", label, err.msg);
    if (want) CHECK(strstr(err.msg, want) != NULL, "%s: message \"%s\" lacks \"%s\"", label, err.msg, want);
    CHECK(g.kv == NULL && g.tensors == NULL && g.path == NULL && g.n_kv == 0, "%s: not left closed", label);
    gguf_close(&g); // closing a closed file is harmless
    free(copy);
}

static void expect_reject_b(bytes *b, const char *label, const char *want) {
    expect_reject(b->p, b->n, label, want);
    free(b->p);
    memset(b, 0, sizeof *b);
}

// ---- round trip ----

typedef struct tensor_spec {
    const char *name;
    uint32_t type, n_dims;
    uint64_t ne[4];
    uint8_t *data;
    uint64_t n_bytes;
} tensor_spec;

enum { N_TSPEC = 6 };
static tensor_spec tspecs[N_TSPEC] = {
    { "f32.1d", WT_F32, 1, { 7, 1, 1, 1 }, NULL, 0 },
    { "f16.2d", WT_F16, 2, { 5, 3, 1, 1 }, NULL, 0 },
    { "bf16.3d", WT_BF16, 3, { 4, 3, 2, 1 }, NULL, 0 },
    { "q8_0.4d", WT_Q8_0, 4, { 64, 2, 3, 2 }, NULL, 0 },
    { "q4_0.2d", WT_Q4_0, 2, { 96, 3, 1, 1 }, NULL, 0 },
    { "blk.0.attn_q.weight", WT_Q4_0, 1, { 32, 1, 1, 1 }, NULL, 0 },
};

static void make_tensor_data(void) {
    for (int i = 0; i < N_TSPEC; i++) {
        tensor_spec *t = &tspecs[i];
        uint64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        t->n_bytes = wtype_row_bytes(t->type, t->ne[0]) * (n / t->ne[0]);
        t->data = xmalloc(t->n_bytes);
        for (uint64_t k = 0; k < t->n_bytes; k++) t->data[k] = (uint8_t)rng_u64();
    }
}

static const int8_t v_i8 = -128;
static const uint8_t v_u8 = 255;
static const uint16_t v_u16 = 65535;
static const int16_t v_i16 = -32768;
static const uint32_t v_u32 = 4000000000u;
static const int32_t v_i32 = INT32_MIN;
static const uint64_t v_u64 = UINT64_MAX;
static const int64_t v_i64 = INT64_MIN;
static const double v_f64 = -1.0 / 3.0;
static const uint8_t arr_u8[] = { 0, 1, 255 };
static const int8_t arr_i8[] = { -128, 0, 127 };
static const uint16_t arr_u16[] = { 0, 65535, 1234 };
static const int16_t arr_i16[] = { -32768, 32767, -1 };
static const uint32_t arr_u32[] = { 0, UINT32_MAX, 7 };
static const int32_t arr_i32[] = { INT32_MIN, INT32_MAX, -5 };
static const float arr_f32[] = { 1.5f, -0.0f, 3.4028235e38f, 1e-45f, NAN };
static const uint8_t arr_bool[] = { 1, 0, 1, 1 };
static const uint64_t arr_u64[] = { UINT64_MAX, 0, 1ull << 63 };
static const int64_t arr_i64[] = { INT64_MIN, INT64_MAX, -1 };
static const double arr_f64[] = { 1e300, -2.5, 5e-324, -1e300 };

static const struct { const char *key; uint32_t type; const void *data; uint64_t n; } arrs[] = {
    { "arr.u8", GGUF_U8, arr_u8, 3 }, { "arr.i8", GGUF_I8, arr_i8, 3 },
    { "arr.u16", GGUF_U16, arr_u16, 3 }, { "arr.i16", GGUF_I16, arr_i16, 3 },
    { "arr.u32", GGUF_U32, arr_u32, 3 }, { "arr.i32", GGUF_I32, arr_i32, 3 },
    { "arr.f32", GGUF_F32, arr_f32, 5 }, { "arr.bool", GGUF_BOOL, arr_bool, 4 },
    { "arr.u64", GGUF_U64, arr_u64, 3 }, { "arr.i64", GGUF_I64, arr_i64, 3 },
    { "arr.f64", GGUF_F64, arr_f64, 4 }, { "arr.empty_i32", GGUF_I32, arr_i32, 0 },
};
#define N_ARRS (sizeof arrs / sizeof arrs[0])

static const char *const strs_plain[] = { "", "hello", "", "ünïcödé ▁tok", "last" };
static const gguf_str strs_nul[] = { { "a\0b", 3 }, { "", 0 }, { "\0", 1 }, { "xyz", 3 } };

static gguf_writer *make_writer(uint32_t alignment) {
    gguf_writer *w = gguf_writer_new();
    gguf_set_str(w, "general.architecture", "llama");
    gguf_set_scalar(w, "s.u8", GGUF_U8, &v_u8);
    gguf_set_scalar(w, "s.i8", GGUF_I8, &v_i8);
    gguf_set_scalar(w, "s.u16", GGUF_U16, &v_u16);
    gguf_set_scalar(w, "s.i16", GGUF_I16, &v_i16);
    gguf_set_u32(w, "s.u32", v_u32);
    gguf_set_i32(w, "s.i32", v_i32);
    gguf_set_f32(w, "s.f32", 0.1f);
    gguf_set_f32(w, "s.f32.negzero", -0.0f);
    gguf_set_f32(w, "s.f32.inf", INFINITY);
    gguf_set_bool(w, "s.bool.true", true);
    gguf_set_bool(w, "s.bool.false", false);
    gguf_set_str(w, "s.string", "a value with spaces\nand a newline");
    gguf_set_str(w, "s.string.empty", "");
    gguf_set_u64(w, "s.u64", v_u64);
    gguf_set_scalar(w, "s.i64", GGUF_I64, &v_i64);
    gguf_set_scalar(w, "s.f64", GGUF_F64, &v_f64);
    gguf_set_u32(w, "s.replaced", 1);
    gguf_set_str(w, "s.replaced", "second"); // replaces value and type, keeps position
    if (alignment) gguf_writer_set_alignment(w, alignment);
    for (size_t i = 0; i < N_ARRS; i++)
        gguf_set_arr_data(w, arrs[i].key, arrs[i].type, arrs[i].data, arrs[i].n);
    gguf_set_arr_str(w, "arr.str", strs_plain, 5);
    gguf_set_arr_str(w, "arr.str.empty", strs_plain, 0);
    gguf_set_arr_strn(w, "arr.strn", strs_nul, 4);
    return w;
}

static int add_tensors(gguf_writer *w, const gguf_file *from) {
    errbuf err = {{0}};
    for (int i = 0; i < N_TSPEC; i++) {
        const tensor_spec *t = &tspecs[i];
        const void *data = t->data;
        if (from) {
            const gguf_tensor *gt = gguf_find_tensor(from, t->name);
            if (!gt) return -1;
            data = gt->data;
        }
        int r = gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, data, &err);
        CHECK(r == 0, "add_tensor %s: %s", t->name, err.msg);
        if (r) return -1;
    }
    return 0;
}

static bool str_eq(gguf_str s, const void *p, uint64_t len) {
    return s.len == len && (len == 0 || memcmp(s.ptr, p, len) == 0);
}

static void check_contents(const gguf_file *g, uint32_t alignment, const char *what) {
    errbuf err = {{0}};
    CHECK(g->version == 3, "%s: version %u", what, g->version);
    CHECK(g->alignment == (alignment ? alignment : GGUF_DEFAULT_ALIGNMENT), "%s: alignment %" PRIu64,
          what, g->alignment);
    // number of kvs: 18 scalars (one replaced) + alignment + arrays + 3 string arrays
    uint64_t want_kv = 18 + (alignment ? 1 : 0) + N_ARRS + 3;
    CHECK(g->n_kv == want_kv, "%s: %" PRIu64 " kvs, want %" PRIu64, what, g->n_kv, want_kv);
    CHECK(strcmp(g->kv[0].key, "general.architecture") == 0, "%s: first key %s", what, g->kv[0].key);
    const gguf_kv *kv;
#define SCALAR(key_, type_, field_, val_) do { \
        kv = gguf_find_kv(g, key_); \
        CHECK(kv && kv->type == (type_) && kv->v.field_ == (val_), "%s: %s", what, key_); } while (0)
    SCALAR("s.u8", GGUF_U8, u, 255);
    SCALAR("s.i8", GGUF_I8, i, -128);
    SCALAR("s.u16", GGUF_U16, u, 65535);
    SCALAR("s.i16", GGUF_I16, i, -32768);
    SCALAR("s.u32", GGUF_U32, u, 4000000000u);
    SCALAR("s.i32", GGUF_I32, i, INT32_MIN);
    SCALAR("s.f32", GGUF_F32, f, (double)0.1f);
    SCALAR("s.bool.true", GGUF_BOOL, u, 1);
    SCALAR("s.bool.false", GGUF_BOOL, u, 0);
    SCALAR("s.u64", GGUF_U64, u, UINT64_MAX);
    SCALAR("s.i64", GGUF_I64, i, INT64_MIN);
    SCALAR("s.f64", GGUF_F64, f, -1.0 / 3.0);
#undef SCALAR
    kv = gguf_find_kv(g, "s.f32.negzero");
    CHECK(kv && kv->type == GGUF_F32 && kv->v.f == 0.0 && signbit(kv->v.f), "%s: -0.0", what);
    kv = gguf_find_kv(g, "s.f32.inf");
    CHECK(kv && kv->type == GGUF_F32 && isinf(kv->v.f) && kv->v.f > 0, "%s: inf", what);
    kv = gguf_find_kv(g, "s.string");
    const char *sv = "a value with spaces\nand a newline";
    CHECK(kv && kv->type == GGUF_STRING && str_eq(kv->v.s, sv, strlen(sv)), "%s: string", what);
    kv = gguf_find_kv(g, "s.string.empty");
    CHECK(kv && kv->type == GGUF_STRING && kv->v.s.len == 0, "%s: empty string", what);
    kv = gguf_find_kv(g, "s.replaced");
    CHECK(kv && kv->type == GGUF_STRING && str_eq(kv->v.s, "second", 6) && kv == &g->kv[17],
          "%s: replaced key", what);
    if (alignment) {
        kv = gguf_find_kv(g, "general.alignment");
        CHECK(kv && kv->type == GGUF_U32 && kv->v.u == alignment, "%s: general.alignment", what);
    }
    for (size_t i = 0; i < N_ARRS; i++) {
        kv = gguf_find_kv(g, arrs[i].key);
        CHECK(kv && kv->type == GGUF_ARRAY && kv->arr_type == arrs[i].type && kv->arr_n == arrs[i].n,
              "%s: %s header", what, arrs[i].key);
        if (!kv) continue;
        uint32_t es = gguf_vtype_size(arrs[i].type);
        CHECK(arrs[i].n == 0 || memcmp(kv->arr_data, arrs[i].data, arrs[i].n * es) == 0,
              "%s: %s bytes", what, arrs[i].key);
    }
    // typed element access
    kv = gguf_find_kv(g, "arr.i64");
    CHECK(kv && gguf_arr_i64(kv, 0) == INT64_MIN && gguf_arr_i64(kv, 2) == -1, "%s: arr_i64", what);
    kv = gguf_find_kv(g, "arr.i16");
    CHECK(kv && gguf_arr_i64(kv, 0) == -32768 && gguf_arr_f64(kv, 2) == -1.0, "%s: arr i16", what);
    kv = gguf_find_kv(g, "arr.u32");
    CHECK(kv && gguf_arr_i64(kv, 1) == UINT32_MAX, "%s: arr u32", what);
    kv = gguf_find_kv(g, "arr.f32");
    CHECK(kv && gguf_arr_f64(kv, 0) == 1.5 && gguf_arr_f64(kv, 3) == (double)1e-45f, "%s: arr f32", what);
    kv = gguf_find_kv(g, "arr.f64");
    CHECK(kv && gguf_arr_f64(kv, 2) == 5e-324, "%s: arr f64", what);
    CHECK(kv && gguf_arr_i64(kv, 0) == INT64_MAX && gguf_arr_i64(kv, 1) == -2 &&
          gguf_arr_i64(kv, 3) == INT64_MIN, "%s: f64 as i64 saturates", what);
    kv = gguf_find_kv(g, "arr.f32");
    CHECK(kv && gguf_arr_i64(kv, 2) == INT64_MAX && gguf_arr_i64(kv, 0) == 1 &&
          gguf_arr_i64(kv, 4) == 0 && isnan(gguf_arr_f64(kv, 4)), "%s: f32 as i64 (NaN -> 0)", what);
    kv = gguf_find_kv(g, "arr.str");
    CHECK(kv && kv->arr_type == GGUF_STRING && kv->arr_n == 5, "%s: arr.str", what);
    if (kv && kv->arr_n == 5)
        for (int i = 0; i < 5; i++)
            CHECK(str_eq(kv->arr_strs[i], strs_plain[i], strlen(strs_plain[i])), "%s: arr.str[%d]", what, i);
    kv = gguf_find_kv(g, "arr.str.empty");
    CHECK(kv && kv->arr_type == GGUF_STRING && kv->arr_n == 0, "%s: arr.str.empty", what);
    kv = gguf_find_kv(g, "arr.strn");
    CHECK(kv && kv->arr_type == GGUF_STRING && kv->arr_n == 4, "%s: arr.strn", what);
    if (kv && kv->arr_n == 4)
        for (int i = 0; i < 4; i++)
            CHECK(str_eq(kv->arr_strs[i], strs_nul[i].ptr, strs_nul[i].len), "%s: arr.strn[%d]", what, i);

    // getters
    uint32_t u32 = 0;
    int64_t i64 = 0;
    float f32 = 0;
    bool bv = false;
    gguf_str gs;
    char *dup = NULL;
    const gguf_kv *arr = NULL;
    CHECK(gguf_get_u32(g, "s.u32", &u32, &err) == 1 && u32 == 4000000000u, "%s: get_u32", what);
    CHECK(gguf_get_u32(g, "s.u8", &u32, &err) == 1 && u32 == 255, "%s: get_u32 of u8", what);
    CHECK(gguf_get_u32(g, "s.i32", &u32, &err) == -1 && one_line_msg(err.msg, "s.i32"),
          "%s: get_u32 of negative: %s", what, err.msg);
    CHECK(gguf_get_u32(g, "s.u64", &u32, &err) == -1, "%s: get_u32 of u64 max", what);
    CHECK(gguf_get_i64(g, "s.u64", &i64, &err) == -1, "%s: get_i64 of u64 max", what);
    CHECK(gguf_get_i64(g, "s.i64", &i64, &err) == 1 && i64 == INT64_MIN, "%s: get_i64", what);
    CHECK(gguf_get_i64(g, "s.string", &i64, &err) == -1, "%s: get_i64 of a string", what);
    CHECK(gguf_get_u32(g, "no.such.key", &u32, &err) == 0, "%s: absent key", what);
    CHECK(gguf_get_f32(g, "s.f64", &f32, &err) == 1 && f32 == (float)(-1.0 / 3.0), "%s: get_f32", what);
    CHECK(gguf_get_f32(g, "s.i16", &f32, &err) == 1 && f32 == -32768.0f, "%s: get_f32 of int", what);
    CHECK(gguf_get_f32(g, "s.bool.true", &f32, &err) == -1, "%s: get_f32 of bool", what);
    CHECK(gguf_get_bool(g, "s.bool.true", &bv, &err) == 1 && bv, "%s: get_bool", what);
    CHECK(gguf_get_bool(g, "s.u8", &bv, &err) == -1, "%s: get_bool of u8", what);
    CHECK(gguf_get_str(g, "general.architecture", &gs, &err) == 1 && str_eq(gs, "llama", 5), "%s: get_str", what);
    CHECK(gguf_get_str(g, "s.u8", &gs, &err) == -1, "%s: get_str of u8", what);
    CHECK(gguf_get_strdup(g, "general.architecture", &dup, &err) == 1 && dup && strcmp(dup, "llama") == 0,
          "%s: get_strdup", what);
    free(dup);
    CHECK(gguf_get_arr(g, "arr.u16", GGUF_I64, &arr, &err) == 1 && arr && gguf_arr_i64(arr, 1) == 65535,
          "%s: get_arr as I64", what);
    CHECK(gguf_get_arr(g, "arr.f32", GGUF_F64, &arr, &err) == 1, "%s: get_arr f32 as F64", what);
    CHECK(gguf_get_arr(g, "arr.str", GGUF_I64, &arr, &err) == -1, "%s: get_arr str as I64", what);
    CHECK(gguf_get_arr(g, "s.u8", GGUF_U8, &arr, &err) == -1, "%s: get_arr of scalar", what);
    CHECK(gguf_get_arr(g, "arr.str", GGUF_STRING, &arr, &err) == 1, "%s: get_arr str", what);

    // formatting never overflows, even into tiny buffers
    for (uint64_t i = 0; i < g->n_kv; i++) {
        char big[300], tiny[9];
        gguf_kv_format(&g->kv[i], big, sizeof big);
        CHECK(strlen(big) < sizeof big, "%s: format %s", what, g->kv[i].key);
        gguf_kv_format(&g->kv[i], tiny, sizeof tiny);
        CHECK(strlen(tiny) < sizeof tiny, "%s: tiny format %s", what, g->kv[i].key);
    }

    // tensors
    CHECK(g->n_tensors == N_TSPEC, "%s: %" PRIu64 " tensors", what, g->n_tensors);
    uint64_t al = g->alignment;
    CHECK(g->data_offset % al == 0, "%s: data offset %" PRIu64, what, g->data_offset);
    for (int i = 0; i < N_TSPEC && (uint64_t)i < g->n_tensors; i++) {
        const tensor_spec *s = &tspecs[i];
        const gguf_tensor *t = &g->tensors[i];
        CHECK(strcmp(t->name, s->name) == 0, "%s: tensor %d name %s", what, i, t->name);
        CHECK(t->type == s->type && t->n_dims == s->n_dims && memcmp(t->ne, s->ne, sizeof t->ne) == 0,
              "%s: tensor %s type/dims", what, s->name);
        CHECK(t->n_bytes == s->n_bytes && t->n_elements == s->ne[0] * s->ne[1] * s->ne[2] * s->ne[3],
              "%s: tensor %s size", what, s->name);
        CHECK(t->offset % al == 0 && ((const uint8_t *)t->data - g->base) % al == 0,
              "%s: tensor %s alignment", what, s->name);
        CHECK(memcmp(t->data, s->data, s->n_bytes) == 0, "%s: tensor %s data", what, s->name);
        CHECK(gguf_find_tensor(g, s->name) == t, "%s: find_tensor %s", what, s->name);
    }
    CHECK(gguf_find_tensor(g, "nope") == NULL, "%s: find_tensor absent", what);
}

static int write_mem(gguf_writer *w, uint8_t **out, uint64_t *n) {
    errbuf err = {{0}};
    int r = gguf_write_memory(w, out, n, &err);
    CHECK(r == 0, "write_memory: %s", err.msg);
    return r;
}

static int count_dir_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static bool file_equals(const char *path, const uint8_t *p, uint64_t n) {
    errbuf err;
    size_t len = 0;
    char *got = read_file_all(path, &len, &err);
    bool eq = got && len == n && memcmp(got, p, n) == 0;
    free(got);
    return eq;
}

static void test_round_trip(const char *tmpdir) {
    make_tensor_data();
    errbuf err = {{0}};
    for (int pass = 0; pass < 2; pass++) {
        uint32_t alignment = pass == 0 ? 0 : 64;
        char what[64];
        snprintf(what, sizeof what, "round trip (alignment %u)", alignment ? alignment : 32);
        gguf_writer *w = make_writer(alignment);
        if (add_tensors(w, NULL)) { gguf_writer_free(w); continue; }
        uint8_t *buf = NULL;
        uint64_t n = 0;
        if (write_mem(w, &buf, &n)) { gguf_writer_free(w); continue; }
        // exact-size copy so ASan sees any read past the end
        uint8_t *exact = xmalloc(n);
        memcpy(exact, buf, n);
        gguf_file g;
        int r = gguf_open_memory(&g, exact, n, "roundtrip.gguf", &err);
        CHECK(r == 0, "%s: %s", what, err.msg);
        if (r == 0) {
            check_contents(&g, alignment, what);
            // writer -> reader -> copy kvs + re-add tensors -> writer: byte-identical
            gguf_writer *w2 = gguf_writer_new();
            gguf_copy_kvs(w2, &g);
            uint8_t *buf2 = NULL;
            uint64_t n2 = 0;
            if (add_tensors(w2, &g) == 0 && write_mem(w2, &buf2, &n2) == 0) {
                CHECK(n2 == n && memcmp(buf, buf2, n) == 0, "%s: copy is not byte-identical (%" PRIu64
                      " vs %" PRIu64 " bytes)", what, n2, n);
                free(buf2);
            }
            gguf_writer_free(w2);
            // copy_kvs keeps what the writer already has
            gguf_writer *w3 = gguf_writer_new();
            gguf_set_str(w3, "general.architecture", "qwen2");
            gguf_copy_kvs(w3, &g);
            if (write_mem(w3, &buf2, &n2) == 0) {
                gguf_file g3;
                CHECK(gguf_open_memory(&g3, buf2, n2, "copy.gguf", &err) == 0, "copy: %s", err.msg);
                gguf_str s = { 0 };
                CHECK(gguf_get_str(&g3, "general.architecture", &s, &err) == 1 && str_eq(s, "qwen2", 5) &&
                      g3.n_kv == g.n_kv, "copy_kvs overwrote an existing key");
                gguf_close(&g3);
                free(buf2);
            }
            gguf_writer_free(w3);
            gguf_close(&g);
        }
        free(exact);

        // the same through a file: identical bytes, atomic replace, no temp file left
        char path[512];
        snprintf(path, sizeof path, "%s/model-%d.gguf", tmpdir, pass);
        FILE *old = fopen(path, "wb");
        if (old) { fputs("old contents", old); fclose(old); }
        gguf_file og;
        CHECK(gguf_open(&og, path, &err) == -1 && one_line_msg(err.msg, path), "old file: %s", err.msg);
        struct stat st_before = { 0 }, st_after = { 0 };
        stat(path, &st_before);
        r = gguf_write_file(w, path, &err);
        CHECK(r == 0, "%s: write_file: %s", what, err.msg);
        stat(path, &st_after);
        CHECK(st_before.st_ino != st_after.st_ino, "%s: file replaced in place, not by rename", what);
        CHECK(count_dir_entries(tmpdir) == pass + 1, "%s: temp file left in %s (%d entries)", what,
              tmpdir, count_dir_entries(tmpdir));
        CHECK(file_equals(path, buf, n), "%s: file differs from memory output", what);
        r = gguf_open(&g, path, &err);
        CHECK(r == 0, "%s: open file: %s", what, err.msg);
        if (r == 0) {
            CHECK(g.mapped, "%s: not mapped", what);
            check_contents(&g, alignment, what);
            // A second write over a mapped file: the old mapping keeps the old bytes (rename, not
            // truncate-and-rewrite), the path gets the new ones.
            gguf_set_str(w, "general.architecture", "qwen2");
            CHECK(gguf_write_file(w, path, &err) == 0, "%s: rewrite: %s", what, err.msg);
            CHECK(gguf_find_kv(&g, "general.architecture")->v.s.ptr[0] == 'l', "%s: mapping changed", what);
            CHECK(memcmp(g.tensors[N_TSPEC - 1].data, tspecs[N_TSPEC - 1].data, 18) == 0,
                  "%s: mapped tensor changed", what);
            gguf_file g2;
            gguf_str s = { 0 };
            CHECK(gguf_open(&g2, path, &err) == 0 && gguf_get_str(&g2, "general.architecture", &s, &err) == 1 &&
                  str_eq(s, "qwen2", 5), "%s: rewritten file: %s", what, err.msg);
            gguf_close(&g2);
            gguf_close(&g);
            CHECK(g.base == NULL && g.kv == NULL, "close leaves the struct zeroed");
        }
        CHECK(count_dir_entries(tmpdir) == pass + 1, "%s: temp file left after rewrite", what);
        free(buf);
        gguf_writer_free(w);
    }

    // Failing writes: say why, leave nothing behind.
    gguf_writer *w = make_writer(0);
    char path[512];
    snprintf(path, sizeof path, "%s/no/such/dir/x.gguf", tmpdir);
    CHECK(gguf_write_file(w, path, &err) == -1 && one_line_msg(err.msg, "x.gguf"), "write into missing dir: %s", err.msg);
    snprintf(path, sizeof path, "%s/subdir", tmpdir);
    mkdir(path, 0700);
    int before = count_dir_entries(tmpdir);
    CHECK(gguf_write_file(w, path, &err) == -1 && one_line_msg(err.msg, "subdir"), "write over a directory: %s", err.msg);
    CHECK(count_dir_entries(tmpdir) == before, "failed write left a temp file");
    rmdir(path);
    // An empty writer gives a valid empty file.
    gguf_writer *we = gguf_writer_new();
    uint8_t *buf = NULL;
    uint64_t n = 0;
    if (write_mem(we, &buf, &n) == 0) {
        gguf_file g;
        int r = gguf_open_memory(&g, buf, n, "empty.gguf", &err);
        CHECK(r == 0 && n <= 32 && g.n_kv == 0 && g.n_tensors == 0, "empty writer (%" PRIu64 " bytes): %s",
              n, err.msg);
        if (r == 0) gguf_close(&g);
        free(buf);
    }
    gguf_writer_free(we);
    // Bad tensors are refused by the writer.
    uint64_t ne33[1] = { 33 }, ne0[2] = { 32, 0 }, ne32[1] = { 32 };
    CHECK(gguf_add_tensor(w, "x", WT_Q4_0, 1, ne33, tspecs[0].data, &err) == -1 && strstr(err.msg, "x"),
          "writer accepted Q4_0 row of 33");
    CHECK(gguf_add_tensor(w, "y", 99, 1, ne32, tspecs[0].data, &err) == -1, "writer accepted type 99");
    CHECK(gguf_add_tensor(w, "z", WT_F32, 0, ne32, tspecs[0].data, &err) == -1, "writer accepted 0 dims");
    CHECK(gguf_add_tensor(w, "z", WT_F32, 5, ne32, tspecs[0].data, &err) == -1, "writer accepted 5 dims");
    uint64_t ne_big[2] = { 1ull << 32, 1ull << 31 }, ne_huge[1] = { 1ull << 63 };
    CHECK(gguf_add_tensor(w, "z", WT_F32, 2, ne0, tspecs[0].data, &err) == -1 && strstr(err.msg, "dimension 1 is 0"),
          "writer accepted a zero dimension: %s", err.msg);
    CHECK(gguf_add_tensor(w, "z", WT_F32, 2, ne_big, tspecs[0].data, &err) == -1, "writer accepted 2^63 elements");
    CHECK(gguf_add_tensor(w, "z", WT_F32, 1, ne_huge, tspecs[0].data, &err) == -1, "writer accepted dim 2^63");
    CHECK(gguf_add_tensor(w, "", WT_F32, 1, ne32, tspecs[0].data, &err) == -1, "writer accepted an empty name");
    CHECK(gguf_add_tensor(w, "d", WT_F32, 1, ne32, tspecs[3].data, &err) == 0, "add d: %s", err.msg);
    CHECK(gguf_add_tensor(w, "d", WT_F32, 1, ne32, tspecs[3].data, &err) == -1 && strstr(err.msg, "duplicate"),
          "writer accepted a duplicate tensor");
    gguf_writer_free(w);

    // Settings that would make an unreadable file are refused at write time, with a message.
    static const uint32_t bad_align[] = { 0, 2, 4, 48, 0xffffffffu };
    for (size_t i = 0; i < sizeof bad_align / sizeof bad_align[0]; i++) {
        w = gguf_writer_new();
        gguf_writer_set_alignment(w, bad_align[i]);
        buf = NULL;
        CHECK(gguf_write_memory(w, &buf, &n, &err) == -1 && strstr(err.msg, "power of two") && !buf,
              "writer accepted alignment %u", bad_align[i]);
        snprintf(path, sizeof path, "%s/bad-align.gguf", tmpdir);
        CHECK(gguf_write_file(w, path, &err) == -1 && one_line_msg(err.msg, path) && access(path, F_OK) != 0,
              "writer wrote a file with alignment %u", bad_align[i]);
        gguf_writer_free(w);
    }
    w = gguf_writer_new();
    gguf_set_u64(w, "general.alignment", 64);
    CHECK(gguf_write_memory(w, &buf, &n, &err) == -1 && strstr(err.msg, "general.alignment"),
          "writer accepted a u64 general.alignment");
    gguf_writer_free(w);
    w = gguf_writer_new();
    gguf_set_u32(w, "", 1);
    CHECK(gguf_write_memory(w, &buf, &n, &err) == -1 && strstr(err.msg, "length 0"), "writer accepted an empty key");
    gguf_writer_free(w);

    // general.alignment set as a plain key must govern the layout too (else the file is corrupt)
    w = gguf_writer_new();
    gguf_set_u32(w, "general.alignment", 128);
    add_tensors(w, NULL);
    if (write_mem(w, &buf, &n) == 0) {
        gguf_file g;
        int r = gguf_open_memory(&g, buf, n, "align128.gguf", &err);
        CHECK(r == 0 && g.alignment == 128, "general.alignment via set_u32: %s", err.msg);
        for (uint64_t i = 0; r == 0 && i < g.n_tensors; i++)
            CHECK(memcmp(g.tensors[i].data, tspecs[i].data, tspecs[i].n_bytes) == 0 &&
                  ((const uint8_t *)g.tensors[i].data - g.base) % 128 == 0, "align128 tensor %" PRIu64, i);
        if (r == 0) gguf_close(&g);
        free(buf);
    }
    gguf_writer_free(w);
}

// ---- hostile files ----

// A small valid file: a few kvs and tensors, used for truncation and mutation.
static void make_small_valid(uint8_t **out, uint64_t *n) {
    gguf_writer *w = gguf_writer_new();
    static const char *const toks[] = { "<s>", "", "a" };
    static const int32_t ids[] = { 1, -2, 3 };
    static const float sc[] = { 0.5f, -1.0f };
    gguf_set_str(w, "general.architecture", "llama");
    gguf_set_u32(w, "llama.block_count", 2);
    gguf_set_bool(w, "b", true);
    gguf_set_f32(w, "f", 1e-5f);
    gguf_set_u64(w, "u", 7);
    gguf_set_arr_str(w, "tokenizer.ggml.tokens", toks, 3);
    gguf_set_arr_data(w, "ids", GGUF_I32, ids, 3);
    gguf_set_arr_data(w, "sc", GGUF_F32, sc, 2);
    static uint8_t data[256];
    for (int i = 0; i < 256; i++) data[i] = (uint8_t)(i * 37 + 11);
    errbuf err;
    uint64_t ne_a[2] = { 4, 2 }, ne_b[1] = { 32 }, ne_c[3] = { 2, 1, 3 }, ne_d[1] = { 32 };
    gguf_add_tensor(w, "a", WT_F32, 2, ne_a, data, &err);
    gguf_add_tensor(w, "b.q4", WT_Q4_0, 1, ne_b, data, &err);
    gguf_add_tensor(w, "c", WT_F16, 3, ne_c, data, &err);
    gguf_add_tensor(w, "d.q8", WT_Q8_0, 1, ne_d, data, &err);
    CHECK(gguf_write_memory(w, out, n, &err) == 0, "small file: %s", err.msg);
    gguf_writer_free(w);
}

static void test_truncations(void) {
    uint8_t *buf;
    uint64_t n;
    make_small_valid(&buf, &n);
    gguf_file g;
    errbuf err = {{0}};
    CHECK(gguf_open_memory(&g, buf, n, "small.gguf", &err) == 0 && g.n_tensors == 4 && g.n_kv == 8,
          "small file: %s", err.msg);
    gguf_close(&g);
    int accepted = 0, bad_msg = 0;
    for (uint64_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        err.msg[0] = 0;
        if (gguf_open_memory(&g, copy, len, "prefix.gguf", &err) == 0) {
            accepted++;
            gguf_close(&g);
        } else if (!one_line_msg(err.msg, "prefix.gguf")) {
            if (bad_msg++ < 3) fprintf(stderr, "prefix %" PRIu64 ": \"%s\"\n", len, err.msg);
        }
        free(copy);
    }
    CHECK(accepted == 0, "%d of %" PRIu64 " truncated prefixes accepted", accepted, n);
    CHECK(bad_msg == 0, "%d truncations without a proper message", bad_msg);
    free(buf);
}

static void test_hostile(const char *tmpdir) {
    bytes b = { 0 };
    const uint64_t ne1[1] = { 32 };

    // header
    expect_reject("", 0, "empty", "not a GGUF file");
    expect_reject("GGU", 3, "3-bytes", "not a GGUF file");
    b_put(&b, "GGUF", 4); b_u32(&b, 3); b_u64(&b, 0); expect_reject_b(&b, "no-kv-count", "truncated");
    b_put(&b, "GGUZ", 4); b_u32(&b, 3); b_u64(&b, 0); b_u64(&b, 0); expect_reject_b(&b, "bad-magic", "magic");
    b_hdr(&b, 1, 0, 0); expect_reject_b(&b, "version1", "version 1");
    b_hdr(&b, 4, 0, 0); expect_reject_b(&b, "version4", "version 4");
    b_hdr(&b, 0xffffffffu, 0, 0); expect_reject_b(&b, "version-max", "version");
    // a header with no kvs and no tensors is a valid empty file
    b_hdr(&b, 3, 0, 0);
    {
        gguf_file g;
        errbuf err;
        CHECK(gguf_open_memory(&g, b.p, b.n, "empty-ok.gguf", &err) == 0, "empty header: %s", err.msg);
        gguf_close(&g);
        b.n = 0;
    }
    b_hdr(&b, 2, 0, 0); b_kv_u32(&b, "k", 1);
    {
        // v2 counts are u64 too; set n_kv=1
        uint64_t one = 1;
        memcpy(b.p + 16, &one, 8);
        gguf_file g;
        errbuf err;
        CHECK(gguf_open_memory(&g, b.p, b.n, "v2.gguf", &err) == 0 && g.version == 2, "v2: %s", err.msg);
        gguf_close(&g);
        b.n = 0;
    }
    b_hdr(&b, 3, UINT64_MAX, 0); expect_reject_b(&b, "huge-tensor-count", "tensor count");
    b_hdr(&b, 3, 1ull << 40, 1); b_kv_u32(&b, "k", 1); expect_reject_b(&b, "huge-tensor-count-with-kv", "tensor count");
    b_hdr(&b, 3, 0, UINT64_MAX); expect_reject_b(&b, "huge-kv-count", "key/value count");
    b_hdr(&b, 3, 2, UINT64_MAX / 2); b_zeros(&b, 64); expect_reject_b(&b, "huge-kv-count-with-tensors", "key/value count");
    b_hdr(&b, 3, 0, 3); b_kv_u32(&b, "k", 1); expect_reject_b(&b, "kv-count-beyond-data", NULL);
    // a kv error while tensors are announced
    b_hdr(&b, 3, 1, 1); b_kv_head(&b, "k", 99); b_zeros(&b, 40); expect_reject_b(&b, "kv-error-with-tensors", "unknown value type");

    // strings
    b_hdr(&b, 3, 0, 1); b_u64(&b, 1000); b_put(&b, "key", 3); b_zeros(&b, 16); expect_reject_b(&b, "key-len-past-eof", "runs past end");
    b_hdr(&b, 3, 0, 1); b_u64(&b, UINT64_MAX); b_put(&b, "key", 3); b_zeros(&b, 16); expect_reject_b(&b, "key-len-max", "runs past end");
    b_hdr(&b, 3, 0, 1); b_u64(&b, 0); b_u32(&b, GGUF_U8); b_zeros(&b, 16); expect_reject_b(&b, "key-empty", "invalid length");
    b_hdr(&b, 3, 0, 1); b_u64(&b, 3); b_put(&b, "a\0b", 3); b_u32(&b, GGUF_U8); b_u8(&b, 0); expect_reject_b(&b, "key-nul", "NUL");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "s", GGUF_STRING); b_u64(&b, 100); b_put(&b, "abc", 3); expect_reject_b(&b, "str-len-past-eof", "runs past end");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "s", GGUF_STRING); b_u64(&b, UINT64_MAX); b_zeros(&b, 16); expect_reject_b(&b, "str-len-max", "runs past end");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "s", GGUF_STRING); b_u64(&b, UINT64_MAX - 7); expect_reject_b(&b, "str-len-max-7", "runs past end");

    // value types
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "k", GGUF_VTYPE_COUNT); b_zeros(&b, 16); expect_reject_b(&b, "vtype-13", "unknown value type 13");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "k", 0xffffffffu); b_zeros(&b, 16); expect_reject_b(&b, "vtype-max", "unknown value type");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "k", GGUF_U64); b_u32(&b, 1); expect_reject_b(&b, "u64-short", "truncated");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "k", GGUF_BOOL); b_u8(&b, 2); expect_reject_b(&b, "bool-2", "bool");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "k", GGUF_BOOL); b_u8(&b, 255); expect_reject_b(&b, "bool-255", "bool");
    // a key with control characters must not break the one-line message
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "evil\nkey\r", GGUF_BOOL); b_u8(&b, 2); expect_reject_b(&b, "bool-2-newline-key", "bool");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "evil\nkey", 77); expect_reject_b(&b, "vtype-newline-key", "unknown value type");

    // arrays
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, 13); b_u64(&b, 1); b_zeros(&b, 8); expect_reject_b(&b, "arr-type-13", "array element type");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, 0x80000000u); b_u64(&b, 0); expect_reject_b(&b, "arr-type-huge", "array element type");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_ARRAY); b_u64(&b, 1); b_u32(&b, GGUF_U8); b_u64(&b, 1); b_u8(&b, 1);
    expect_reject_b(&b, "arr-nested", "array element type");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_U64); b_u64(&b, (1ull << 61) + 1); b_zeros(&b, 16); expect_reject_b(&b, "arr-bytes-overflow", "array of");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_U32); b_u64(&b, UINT64_MAX); b_zeros(&b, 16); expect_reject_b(&b, "arr-count-max", "array of");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_U16); b_u64(&b, 5); b_zeros(&b, 9); expect_reject_b(&b, "arr-past-eof", "array of");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_STRING); b_u64(&b, UINT64_MAX); b_zeros(&b, 16); expect_reject_b(&b, "arr-str-count-max", "strings");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_STRING); b_u64(&b, 2); b_str(&b, "x"); b_u64(&b, 1ull << 62); b_zeros(&b, 8);
    expect_reject_b(&b, "arr-str-elem-len", "runs past end");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "a", GGUF_ARRAY); b_u32(&b, GGUF_STRING); b_u64(&b, 3); b_str(&b, "x"); b_str(&b, "y");
    expect_reject_b(&b, "arr-str-short", NULL);

    // Many entries: duplicate detection must not be quadratic (100000 keys would take minutes).
    {
        enum { MANY = 100000 };
        b_hdr(&b, 3, 0, MANY);
        char key[32];
        for (int i = 0; i < MANY - 1; i++) {
            snprintf(key, sizeof key, "k.%06d", (i * 7919) % (MANY - 1));
            b_kv_head(&b, key, GGUF_U8);
            b_u8(&b, 1);
        }
        gguf_file g;
        errbuf err;
        b_kv_head(&b, "k.999999", GGUF_U8); b_u8(&b, 1);
        double t0 = now_sec();
        int r = gguf_open_memory(&g, b.p, b.n, "many-keys.gguf", &err);
        CHECK(r == 0 && g.n_kv == MANY, "100000 keys: %s", err.msg);
        if (r == 0) gguf_close(&g);
        memcpy(b.p + b.n - 1 - 4 - 6, "012345", 6); // the last key now repeats an earlier one
        expect_reject_b(&b, "many-keys-one-duplicate", "duplicate key k.012345");
        printf("100000 keys: opened and checked in %.3f s\n", now_sec() - t0);
    }
    // duplicate keys
    b_hdr(&b, 3, 0, 3); b_kv_u32(&b, "k", 1); b_kv_u32(&b, "j", 1); b_kv_u32(&b, "k", 2); expect_reject_b(&b, "dup-key", "duplicate key k");

    // alignment
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "general.alignment", GGUF_U64); b_u64(&b, 32); expect_reject_b(&b, "align-u64", "general.alignment");
    b_hdr(&b, 3, 0, 1); b_kv_head(&b, "general.alignment", GGUF_STRING); b_str(&b, "32"); expect_reject_b(&b, "align-str", "general.alignment");
    b_hdr(&b, 3, 0, 1); b_kv_u32(&b, "general.alignment", 0); expect_reject_b(&b, "align-0", "power of two");
    b_hdr(&b, 3, 0, 1); b_kv_u32(&b, "general.alignment", 48); expect_reject_b(&b, "align-48", "power of two");
    b_hdr(&b, 3, 0, 1); b_kv_u32(&b, "general.alignment", 1); expect_reject_b(&b, "align-1", "at least 8");
    b_hdr(&b, 3, 0, 1); b_kv_u32(&b, "general.alignment", 2); expect_reject_b(&b, "align-2", "at least 8");
    b_hdr(&b, 3, 0, 1); b_kv_u32(&b, "general.alignment", 0xffffffffu); expect_reject_b(&b, "align-max", "power of two");

    // tensor infos: one tensor "t" after a header with no kvs; data section at 64 (aligned 32)
#define TENSOR_FILE(label, want, n_dims, ne, type, offset, data_bytes) do {                \
        b_hdr(&b, 3, 1, 0); b_tinfo(&b, "t", n_dims, ne, type, offset); b_pad(&b, 32);    \
        b_zeros(&b, data_bytes); expect_reject_b(&b, label, want); } while (0)
    {
        const uint64_t ne5[5] = { 32, 1, 1, 1, 1 }, ne_zero[2] = { 32, 0 };
        const uint64_t ne_ovf[3] = { 1ull << 32, 1ull << 32, 1ull << 32 };
        const uint64_t ne_big[2] = { 1ull << 32, 1ull << 31 }; // 2^63 elements: > INT64_MAX
        const uint64_t ne_dim_big[1] = { 1ull << 63 };
        const uint64_t ne33[2] = { 33, 2 };
        const uint64_t ne_bytes_ovf[2] = { 1ull << 35, 1ull << 27 }; // 2^62 F32 = 2^64 bytes
        TENSOR_FILE("ndims-0", "dimensions", 0, ne1, WT_F32, 0, 128);
        TENSOR_FILE("ndims-5", "dimensions", 5, ne5, WT_F32, 0, 128);
        b_hdr(&b, 3, 1, 0); b_tinfo(&b, "t", 0xffffffffu, ne1, WT_F32, 0); b_zeros(&b, 64);
        expect_reject_b(&b, "ndims-max", "dimensions");
        TENSOR_FILE("dim-zero", "dimension 1 is 0", 2, ne_zero, WT_F32, 0, 128);
        TENSOR_FILE("dims-overflow", "overflows", 3, ne_ovf, WT_F32, 0, 128);
        TENSOR_FILE("nelem-gt-int64max", "overflows", 2, ne_big, WT_F32, 0, 128);
        TENSOR_FILE("dim-gt-int64max", "dimension 0", 1, ne_dim_big, WT_F32, 0, 128);
        TENSOR_FILE("bytes-overflow", NULL, 2, ne_bytes_ovf, WT_F32, 0, 128);
        TENSOR_FILE("type-99", "unknown tensor type 99", 1, ne1, 99, 0, 128);
        TENSOR_FILE("type-4", "unknown tensor type 4", 1, ne1, 4, 0, 128);
        TENSOR_FILE("type-fp8", "unknown tensor type 63", 1, ne1, WT_FP8, 0, 128);   // cabin's own, never in a file
        TENSOR_FILE("type-max", "unknown tensor type", 1, ne1, 0xffffffffu, 0, 128);
        TENSOR_FILE("q4_0-row-33", "block size", 2, ne33, WT_Q4_0, 0, 128);
        TENSOR_FILE("offset-misaligned", "not aligned", 1, ne1, WT_F32, 4, 256);
        TENSOR_FILE("data-past-eof", "past end", 1, ne1, WT_F32, 0, 127);
        TENSOR_FILE("offset-past-eof", "past end", 1, ne1, WT_F32, 1024, 128);
        TENSOR_FILE("offset-plus-size-overflow", "past end", 1, ne1, WT_F32, UINT64_MAX - 31, 128);
        TENSOR_FILE("offset-2^63", "past end", 1, ne1, WT_F32, 1ull << 63, 128);
        // tensor infos end exactly at the end of the file: data section missing
        b_hdr(&b, 3, 1, 0); b_tinfo(&b, "t", 1, ne1, WT_F32, 0); expect_reject_b(&b, "no-data-section", "past end");
        b_hdr(&b, 3, 1, 0); b_u64(&b, 0); b_u32(&b, 1); b_u64(&b, 32); b_u32(&b, 0); b_u64(&b, 0); b_zeros(&b, 200);
        expect_reject_b(&b, "tensor-name-empty", "invalid name");
        b_hdr(&b, 3, 1, 0); b_tinfo(&b, "bad\nname", 1, ne1, 99, 0); b_zeros(&b, 200);
        expect_reject_b(&b, "tensor-newline-name", "unknown tensor type");
        // duplicate tensor names
        b_hdr(&b, 3, 2, 0); b_tinfo(&b, "t", 1, ne1, WT_F32, 0); b_tinfo(&b, "t", 1, ne1, WT_F32, 128);
        b_pad(&b, 32); b_zeros(&b, 256); expect_reject_b(&b, "dup-tensor", "duplicate tensor name t");
        // alignment honoured for offsets: 64-aligned file with a 32-aligned offset
        b_hdr(&b, 3, 1, 1); b_kv_u32(&b, "general.alignment", 64); b_tinfo(&b, "t", 1, ne1, WT_F32, 32);
        b_pad(&b, 64); b_zeros(&b, 256); expect_reject_b(&b, "offset-misaligned-64", "not aligned to 64");
        // and the same file with offset 64 is fine
        b_hdr(&b, 3, 1, 1); b_kv_u32(&b, "general.alignment", 64); b_tinfo(&b, "t", 1, ne1, WT_F32, 64);
        b_pad(&b, 64); b_zeros(&b, 192);
        gguf_file g;
        errbuf err;
        int r = gguf_open_memory(&g, b.p, b.n, "align64.gguf", &err);
        CHECK(r == 0 && g.data_offset % 64 == 0 && (const uint8_t *)g.tensors[0].data == b.p + g.data_offset + 64,
              "64-aligned hand-made file: %s", err.msg);
        if (r == 0) gguf_close(&g);
        free(b.p);
        memset(&b, 0, sizeof b);
    }
#undef TENSOR_FILE

    // files on disk: empty, directory, missing, truncated
    char path[512];
    errbuf err = {{0}};
    gguf_file g;
    snprintf(path, sizeof path, "%s/empty.gguf", tmpdir);
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
    CHECK(gguf_open(&g, path, &err) == -1 && one_line_msg(err.msg, path), "empty file: %s", err.msg);
    unlink(path);
    CHECK(gguf_open(&g, tmpdir, &err) == -1 && one_line_msg(err.msg, tmpdir), "directory: %s", err.msg);
    snprintf(path, sizeof path, "%s/does-not-exist.gguf", tmpdir);
    CHECK(gguf_open(&g, path, &err) == -1 && one_line_msg(err.msg, path) && strstr(err.msg, "No such file"),
          "missing file: %s", err.msg);
    snprintf(path, sizeof path, "%s/fifo.gguf", tmpdir);
    if (mkfifo(path, 0600) == 0) { // must be refused at once, not wait for a writer
        CHECK(gguf_open(&g, path, &err) == -1 && one_line_msg(err.msg, path), "fifo: %s", err.msg);
        unlink(path);
    }
    uint8_t *small;
    uint64_t n;
    make_small_valid(&small, &n);
    snprintf(path, sizeof path, "%s/truncated.gguf", tmpdir);
    f = fopen(path, "wb");
    if (f) { fwrite(small, 1, n - 1, f); fclose(f); }
    CHECK(gguf_open(&g, path, &err) == -1 && one_line_msg(err.msg, path), "truncated file: %s", err.msg);
    f = fopen(path, "wb");
    if (f) { fwrite(small, 1, n, f); fclose(f); }
    CHECK(gguf_open(&g, path, &err) == 0 && g.n_tensors == 4, "full file: %s", err.msg);
    gguf_close(&g);
    unlink(path);
    free(small);
}

// ---- mutation fuzz ----

static volatile uint64_t fuzz_sink;

// Touches everything a successful open exposes, so ASan checks every pointer it handed out.
static void walk(const gguf_file *g) {
    uint64_t acc = 0;
    char buf[256];
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const gguf_kv *kv = &g->kv[i];
        acc += strlen(kv->key) + kv->type;
        gguf_kv_format(kv, buf, sizeof buf);
        acc += strlen(buf);
        if (kv->type == GGUF_STRING)
            for (uint64_t k = 0; k < kv->v.s.len; k++) acc += (uint8_t)kv->v.s.ptr[k];
        if (kv->type != GGUF_ARRAY) continue;
        if (kv->arr_type == GGUF_STRING) {
            for (uint64_t j = 0; j < kv->arr_n; j++)
                for (uint64_t k = 0; k < kv->arr_strs[j].len; k++) acc += (uint8_t)kv->arr_strs[j].ptr[k];
        } else {
            for (uint64_t j = 0; j < kv->arr_n; j++) {
                acc += (uint64_t)gguf_arr_i64(kv, j);
                double d = gguf_arr_f64(kv, j);
                acc += d == d ? 1 : 0;
            }
        }
        if (gguf_find_kv(g, kv->key) != kv) acc = 0; // keys are unique
    }
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const gguf_tensor *t = &g->tensors[i];
        const uint8_t *p = t->data;
        if (p < g->base || (uint64_t)(p - g->base) > g->size || t->n_bytes > g->size - (uint64_t)(p - g->base))
            CHECK(0, "tensor %s outside the file", t->name);
        for (uint64_t k = 0; k < t->n_bytes; k++) acc += p[k];
        acc += strlen(t->name) + t->n_elements;
        if (gguf_find_tensor(g, t->name) != t) acc = 0;
    }
    fuzz_sink += acc;
}

// Mutates a valid file `iters` times; every result must open cleanly or fail with a message.
static void fuzz_file(const uint8_t *base, uint64_t n, int iters, const char *what) {
    int ok = 0, rejected = 0, bad_msg = 0;
    errbuf err;
    for (int it = 0; it < iters; it++) {
        uint64_t len = n;
        if (rng_u64() % 16 == 0) len = rng_u64() % (n + 1);
        if (rng_u64() % 32 == 0) len = n + rng_u64() % 64; // trailing junk
        uint8_t *p = malloc(len ? len : 1);
        for (uint64_t k = 0; k < len; k++) p[k] = k < n ? base[k] : (uint8_t)rng_u64();
        int n_mut = 1 + (int)(rng_u64() % 4);
        for (int m = 0; m < n_mut && len > 0; m++) {
            uint64_t at = rng_u64() % len;
            switch (rng_u64() % 5) {
            case 0: p[at] ^= (uint8_t)(1u << (rng_u64() % 8)); break;
            case 1: p[at] = (uint8_t)rng_u64(); break;
            case 2: case 3: { // an 8-byte field gets an extreme value
                static const uint64_t ext[] = { 0, 1, 2, 31, 32, 33, 64, 1ull << 31, 1ull << 32,
                                                (1ull << 32) - 1, 1ull << 62, 1ull << 63,
                                                (1ull << 63) - 1, UINT64_MAX, UINT64_MAX - 31 };
                uint64_t v = ext[rng_u64() % (sizeof ext / sizeof ext[0])];
                uint64_t r = rng_u64() % 4;
                if (r == 0) v = len - 1;
                if (r == 1) v = len;
                if (at + 8 > len) at = len >= 8 ? len - 8 : 0;
                memcpy(p + at, &v, len - at < 8 ? len - at : 8);
                break;
            }
            case 4: { // a 4-byte field (type, n_dims) gets a small or extreme value
                static const uint32_t ext[] = { 0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 13, 30, 99, 0xffffffffu };
                uint32_t v = ext[rng_u64() % (sizeof ext / sizeof ext[0])];
                if (at + 4 > len) at = len >= 4 ? len - 4 : 0;
                memcpy(p + at, &v, len - at < 4 ? len - at : 4);
                break;
            }
            }
        }
        gguf_file g;
        err.msg[0] = 0;
        if (gguf_open_memory(&g, p, len, "fuzz.gguf", &err) == 0) {
            ok++;
            walk(&g);
            gguf_close(&g);
        } else {
            rejected++;
            if (!one_line_msg(err.msg, "fuzz.gguf") && bad_msg++ < 3)
                fprintf(stderr, "fuzz iteration %d: bad message \"%s\"\n", it, err.msg);
        }
        free(p);
    }
    printf("fuzz %s (%" PRIu64 " bytes): %d iterations, %d opened, %d rejected\n", what, n, iters,
           ok, rejected);
    CHECK(ok + rejected == iters && rejected > iters / 4 && ok > 0, "fuzz %s coverage: %d ok %d rejected",
          what, ok, rejected);
    CHECK(bad_msg == 0, "%d fuzz rejections without a one-line message (%s)", bad_msg, what);
}

static void test_fuzz(void) {
    test_seed();
    int iters = 20000;
    const char *env = getenv("CABIN_FUZZ_ITERS");
    if (env && *env) iters = atoi(env);
    printf("fuzz: %d iterations (CABIN_FUZZ_ITERS for more)\n", iters);
    uint8_t *small, *full;
    uint64_t n_small, n_full;
    make_small_valid(&small, &n_small);
    fuzz_file(small, n_small, iters, "small file");
    // the round-trip file: every value type, 64-byte alignment
    gguf_writer *w = make_writer(64);
    add_tensors(w, NULL);
    if (write_mem(w, &full, &n_full) == 0) {
        fuzz_file(full, n_full, iters / 4, "all-types file");
        free(full);
    }
    gguf_writer_free(w);
    free(small);
}

// ---- reference files ----

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

// Writing a reference file back (copy kvs + tensors) gives its bytes, up to the reference's
// trailing padding after the last tensor.
static void check_rewrite(const gguf_file *g, const char *path) {
    gguf_writer *w = gguf_writer_new();
    errbuf err = {{0}};
    gguf_copy_kvs(w, g);
    int r = 0;
    for (uint64_t i = 0; i < g->n_tensors && r == 0; i++) {
        const gguf_tensor *t = &g->tensors[i];
        r = gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
    }
    CHECK(r == 0, "%s: re-adding tensors: %s", path, err.msg);
    uint8_t *buf = NULL;
    uint64_t n = 0;
    if (r == 0 && gguf_write_memory(w, &buf, &n, &err) == 0) {
        // The writers differ only in trailing padding: the reference pads after the last
        // tensor, cabin pads the metadata even when no tensor follows.
        uint64_t common = n < g->size ? n : g->size;
        const uint8_t *longer = n < g->size ? g->base : buf;
        uint64_t extra = (n < g->size ? g->size : n) - common;
        CHECK(memcmp(buf, g->base, common) == 0 && extra < g->alignment && all_zero(longer + common, extra),
              "%s: rewritten file differs (%" PRIu64 " vs %" PRIu64 " bytes)", path, n, g->size);
        free(buf);
    }
    gguf_writer_free(w);
}

static void test_ref_files(void) {
    const char *ref = test_ref_dir();
    if (!ref) { SKIP("../shared/ref not present: reference GGUF files not checked"); return; }
    static const char *const subdirs[] = { "vocab", "models", "next/vocab", "next/models" };
    int opened = 0;
    for (int s = 0; s < 4; s++) {
        char dpath[600];
        snprintf(dpath, sizeof dpath, "%s/%s", ref, subdirs[s]);
        DIR *d = opendir(dpath);
        CHECK(d != NULL || s >= 2, "cannot list %s", dpath);
        if (!d) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!ends_with(e->d_name, ".gguf")) continue;
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", dpath, e->d_name);
            gguf_file g;
            errbuf err = {{0}};
            int r = gguf_open(&g, path, &err);
            CHECK(r == 0, "%s: %s", path, err.msg);
            if (r) continue;
            opened++;
            CHECK(g.n_kv > 0 && gguf_find_kv(&g, "general.architecture"), "%s: no architecture", path);
            for (uint64_t i = 0; i < g.n_tensors; i++) {
                const gguf_tensor *t = &g.tensors[i];
                uint64_t off = (uint64_t)((const uint8_t *)t->data - g.base);
                CHECK(off >= g.data_offset && off <= g.size && t->n_bytes <= g.size - off &&
                      off % g.alignment == 0 && t->n_bytes == wtype_row_bytes(t->type, t->ne[0]) *
                      (t->n_elements / t->ne[0]), "%s: tensor %s placement", path, t->name);
            }
            if (s % 2 == 0 || strstr(e->d_name, "d64-F16") || strstr(e->d_name, "Q4_K_M"))
                check_rewrite(&g, path);
            gguf_close(&g);
        }
        closedir(d);
    }
    CHECK(opened >= 10, "only %d reference files opened", opened);

    char path[1200];
    snprintf(path, sizeof path, "%s/models/llama-spm-d64-F16.gguf", ref);
    gguf_file g;
    errbuf err = {{0}};
    if (gguf_open(&g, path, &err) != 0) { CHECK(0, "%s: %s", path, err.msg); return; }
    char *arch = NULL;
    uint32_t emb = 0, blocks = 0;
    CHECK(gguf_get_strdup(&g, "general.architecture", &arch, &err) == 1 && strcmp(arch, "llama") == 0,
          "architecture %s", arch ? arch : "(none)");
    free(arch);
    CHECK(gguf_get_u32(&g, "llama.embedding_length", &emb, &err) == 1 && emb == 64, "embedding length %u", emb);
    CHECK(gguf_get_u32(&g, "llama.block_count", &blocks, &err) == 1 && blocks == 2, "block count %u", blocks);
    const gguf_tensor *te = gguf_find_tensor(&g, "token_embd.weight");
    CHECK(te && te->n_dims == 2 && te->ne[0] == 64 && te->ne[1] == 32000 && te->type == WT_F16 &&
          te->n_bytes == 64ull * 32000 * 2, "token_embd.weight shape");
    const gguf_kv *toks = NULL;
    CHECK(gguf_get_arr(&g, "tokenizer.ggml.tokens", GGUF_STRING, &toks, &err) == 1 && toks->arr_n == 32000,
          "tokens: %s", err.msg);
    gguf_str model = { 0 };
    CHECK(gguf_get_str(&g, "tokenizer.ggml.model", &model, &err) == 1 && str_eq(model, "llama", 5), "tokenizer model");
    const gguf_tensor *norm = gguf_find_tensor(&g, "blk.0.attn_norm.weight");
    CHECK(norm && norm->n_dims == 1 && norm->ne[0] == 64 && norm->type == WT_F32, "attn_norm");
    gguf_close(&g);

    snprintf(path, sizeof path, "%s/models/qwen2-d64-F16.gguf", ref);
    if (gguf_open(&g, path, &err) == 0) {
        gguf_str a = { 0 };
        CHECK(gguf_get_str(&g, "general.architecture", &a, &err) == 1 && str_eq(a, "qwen2", 5), "qwen2 arch");
        const gguf_tensor *bq = gguf_find_tensor(&g, "blk.0.attn_q.bias");
        CHECK(bq && bq->n_dims == 1 && bq->ne[0] == 64, "qwen2 q bias");
        gguf_close(&g);
    } else {
        CHECK(0, "%s: %s", path, err.msg);
    }
    snprintf(path, sizeof path, "%s/models/llama-spm-d64-Q4_0.gguf", ref);
    if (gguf_open(&g, path, &err) == 0) {
        const gguf_tensor *t = gguf_find_tensor(&g, "blk.1.ffn_down.weight");
        CHECK(t && t->type == WT_Q4_0 && t->ne[0] == 192 && t->ne[1] == 64 && t->n_bytes == 192 / 32 * 18 * 64,
              "Q4_0 ffn_down");
        gguf_close(&g);
    } else {
        CHECK(0, "%s: %s", path, err.msg);
    }
}

int main(void) {
    char tmpl[] = "/tmp/cabin-test-gguf-XXXXXX";
    char *tmpdir = mkdtemp(tmpl);
    CHECK(tmpdir != NULL, "mkdtemp: %s", strerror(errno));
    if (!tmpdir) return test_finish();
    rng_state = 12345;
    test_round_trip(tmpdir);
    test_truncations();
    test_hostile(tmpdir);
    test_fuzz();
    test_ref_files();
    // clean up the temp dir
    DIR *d = opendir(tmpdir);
    if (d) {
        struct dirent *e;
        char p[600];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    CHECK(rmdir(tmpdir) == 0, "rmdir %s: %s", tmpdir, strerror(errno));
    for (int i = 0; i < N_TSPEC; i++) free(tspecs[i].data);
    return test_finish();
}
