#include "unicode.h"

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

// The run holding cp: the last run whose first code point is <= cp.
static uint32_t run_of(uint32_t cp) {
    if (cp > UNICODE_MAX) return UCAT_CN;
    uint32_t lo = 0, hi = unicode_runs_n;  // answer in [lo, hi)
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((unicode_runs[mid] >> 8) <= cp) lo = mid;
        else hi = mid;
    }
    return unicode_runs[lo];
}

enum ucat unicode_category(uint32_t cp) {
    return (enum ucat)(run_of(cp) & 0x1F);
}

static const uint16_t cat_flags[UCAT_COUNT] = {
    [UCAT_CN] = UFLAG_UNASSIGNED,
    [UCAT_LU] = UFLAG_LETTER, [UCAT_LL] = UFLAG_LETTER, [UCAT_LT] = UFLAG_LETTER,
    [UCAT_LM] = UFLAG_LETTER, [UCAT_LO] = UFLAG_LETTER,
    [UCAT_MN] = UFLAG_MARK, [UCAT_MC] = UFLAG_MARK, [UCAT_ME] = UFLAG_MARK,
    [UCAT_ND] = UFLAG_NUMBER, [UCAT_NL] = UFLAG_NUMBER, [UCAT_NO] = UFLAG_NUMBER,
    [UCAT_PC] = UFLAG_PUNCT, [UCAT_PD] = UFLAG_PUNCT, [UCAT_PS] = UFLAG_PUNCT,
    [UCAT_PE] = UFLAG_PUNCT, [UCAT_PI] = UFLAG_PUNCT, [UCAT_PF] = UFLAG_PUNCT,
    [UCAT_PO] = UFLAG_PUNCT,
    [UCAT_SM] = UFLAG_SYMBOL, [UCAT_SC] = UFLAG_SYMBOL, [UCAT_SK] = UFLAG_SYMBOL,
    [UCAT_SO] = UFLAG_SYMBOL,
    [UCAT_ZS] = UFLAG_SEPARATOR, [UCAT_ZL] = UFLAG_SEPARATOR, [UCAT_ZP] = UFLAG_SEPARATOR,
    [UCAT_CC] = UFLAG_CONTROL, [UCAT_CF] = UFLAG_CONTROL, [UCAT_CS] = UFLAG_CONTROL,
    [UCAT_CO] = UFLAG_CONTROL,
};

unsigned unicode_flags(uint32_t cp) {
    uint32_t r = run_of(cp);
    unsigned f = cat_flags[r & 0x1F];
    if (r & 0x20) f |= UFLAG_WHITESPACE;
    return f;
}

const char *unicode_category_name(enum ucat c) {
    static const char names[UCAT_COUNT][3] = {
        "Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No",
        "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So",
        "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
    };
    return (unsigned)c < UCAT_COUNT ? names[c] : "??";
}
