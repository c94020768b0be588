// PNG (ISO/IEC 15948): the signature, then chunks of (length, type, data, CRC-32 of type and
// data), big-endian: IHDR, an optional tEXt, one IDAT with the zlib stream, IEND.
#include "sdl/png.h"
#include "base/afile.h"
#include "base/mem.h"
#include "base/str.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static void put_u32(strbuf *b, uint32_t v) {
    char c[4] = { (char)(v >> 24), (char)(v >> 16), (char)(v >> 8), (char)v };
    strbuf_append(b, c, 4);
}

static void put_chunk(strbuf *b, const char type[4], const void *data, size_t n) {
    put_u32(b, (uint32_t)n);
    size_t at = b->len;
    strbuf_append(b, type, 4);
    if (n) strbuf_append(b, (const char *)data, n);
    uLong crc = crc32(0L, (const Bytef *)strbuf_str(b) + at, (uInt)(4 + n));
    put_u32(b, (uint32_t)crc);
}

int png_write_rgb(const char *path, const uint8_t *rgb, int w, int h, const char *key, const char *text, errbuf *err) {
    if (w <= 0 || h <= 0 || w > 1 << 15 || h > 1 << 15) return err_set(err, "snapshot %s: bad image size %dx%d", path, w, h);
    size_t row = (size_t)w * 3 + 1;   // the filter byte, then the pixels
    size_t raw_n = row * (size_t)h;
    uint8_t *raw = xmalloc(raw_n);
    for (int y = 0; y < h; y++) {
        raw[row * (size_t)y] = 0;
        memcpy(raw + row * (size_t)y + 1, rgb + (size_t)y * w * 3, (size_t)w * 3);
    }
    uLongf z_n = compressBound((uLong)raw_n);
    uint8_t *z = xmalloc(z_n);
    int zr = compress2(z, &z_n, raw, (uLong)raw_n, 6);
    free(raw);
    if (zr != Z_OK) { free(z); return err_set(err, "snapshot %s: zlib compress2 failed (%d)", path, zr); }
    strbuf b = {0};
    strbuf_append(&b, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13] = { (uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                         (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h,
                         8, 2, 0, 0, 0 };   // 8 bits, truecolour (RGB), deflate, filter set 0, no interlace
    put_chunk(&b, "IHDR", ihdr, sizeof ihdr);
    if (key && text) {   // keyword, NUL, text
        strbuf t = {0};
        strbuf_append(&t, key, strlen(key) + 1);
        strbuf_puts(&t, text);
        put_chunk(&b, "tEXt", strbuf_str(&t), t.len);
        strbuf_free(&t);
    }
    put_chunk(&b, "IDAT", z, (size_t)z_n);
    free(z);
    put_chunk(&b, "IEND", NULL, 0);
    int rc = afile_write_all(path, strbuf_str(&b), b.len, err);
    strbuf_free(&b);
    return rc ? err_prefix(err, "snapshot") : 0;
}
