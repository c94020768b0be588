// UTF-8 (see utf8.h).
#include "base/utf8.h"

int utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    if (c < 0x80) { *cp = c; return 1; }
    int len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF)      { len = 2; v = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; v = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; v = c & 0x07; min = 0x10000; }
    else { *cp = UNICODE_REPLACEMENT; return 1; }   // continuation byte, C0/C1, F5..FF
    if ((size_t)len > n) { *cp = UNICODE_REPLACEMENT; return 1; }
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) { *cp = UNICODE_REPLACEMENT; return 1; }
        v = v << 6 | (u[i] & 0x3F);
    }
    if (v < min || v > UNICODE_MAX || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = UNICODE_REPLACEMENT;
        return 1;
    }
    *cp = v;
    return len;
}

int utf8_encode(uint32_t cp, char *out) {
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= UNICODE_MAX) {
        o[0] = (unsigned char)(0xF0 | cp >> 18);
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

size_t utf8_valid_len(const char *s, size_t n) {
    uint32_t cp;
    int k = utf8_decode(s, n, &cp);
    return k == 1 && cp == UNICODE_REPLACEMENT && (unsigned char)s[0] >= 0x80 ? 0 : (size_t)k;
}
