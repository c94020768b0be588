// UTF-8 (see utf8.h).
#include "base/utf8.h"

int utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    int more = utf8_lead_more(c);
    *cp = UNICODE_REPLACEMENT;   // until the character proves well-formed
    if (more == 0) { *cp = c; return 1; }
    // a byte that leads nothing, a character cut short, or a second byte outside the lead's range
    // (overlong, surrogate, past U+10FFFF): one byte, U+FFFD
    if (more < 0 || (size_t)more >= n || !utf8_second_ok(c, u[1])) return 1;
    uint32_t v = c & (0x7Fu >> (more + 1));
    for (int i = 1; i <= more; i++) {
        if ((u[i] & 0xC0) != 0x80) return 1;
        v = v << 6 | (u[i] & 0x3F);
    }
    *cp = v;
    return more + 1;
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
