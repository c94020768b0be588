#include "unicode.h"

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
