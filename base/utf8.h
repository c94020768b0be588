// UTF-8: one rule for what a well-formed character is, for every layer (the tokenizers, the
// structured-output matcher, the server's strings).
#ifndef CABIN_BASE_UTF8_H
#define CABIN_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

#define UNICODE_MAX 0x10FFFFu
#define UNICODE_REPLACEMENT 0xFFFDu

// Length of the UTF-8 sequence that first byte c starts, from its high bits alone (1 for a
// continuation or invalid byte); nothing is validated (utf8_decode does that).
static inline int utf8_len_from_first(unsigned char c) {
    static const int8_t lens[16] = { 1,1,1,1,1,1,1,1, 1,1,1,1, 2,2, 3, 4 };
    return lens[c >> 4];
}

// Decodes one code point from s (n > 0 bytes available). Returns the bytes used (1..4) and sets
// *cp. A malformed sequence (bad continuation, overlong form, surrogate, past U+10FFFF, truncated)
// uses 1 byte and gives U+FFFD, so every byte of the input belongs to exactly one code point.
int utf8_decode(const char *s, size_t n, uint32_t *cp);
// Encodes cp (<= U+10FFFF) into out (4 bytes room). Returns the length (1..4); 0 for cp past
// U+10FFFF.
int utf8_encode(uint32_t cp, char *out);

// The length of the well-formed character at s[0..n) (n > 0), 0 when it is not one (a stray
// continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short).
size_t utf8_valid_len(const char *s, size_t n);
// How many continuation bytes a well-formed character led by byte c has (0..3), -1 when c can
// lead none (a continuation byte, C0, C1, F5..FF).
static inline int utf8_lead_more(unsigned char c) {
    return c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
}
// Whether b may follow lead byte `lead` as its second byte: a continuation byte, in the narrower
// range that keeps out overlong forms (after E0, F0), surrogates (ED) and code points past
// U+10FFFF (F4). utf8_decode and the byte-at-a-time matcher (engine/json_schema.c) both use it.
static inline int utf8_second_ok(unsigned char lead, unsigned char b) {
    unsigned lo = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
    unsigned hi = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
    return b >= lo && b <= hi;
}

#endif
