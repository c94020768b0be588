// UTF-8 decoding/encoding and Unicode general categories by code point (tables generated from
// the Unicode Character Database by tools/gen_unicode_data.py into engine/unicode_data.c).
#ifndef CABIN_UNICODE_H
#define CABIN_UNICODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/utf8.h"

// General category, one value per Unicode category (order fixed by the generator).
enum ucat {
    UCAT_CN = 0,                                    // unassigned
    UCAT_LU, UCAT_LL, UCAT_LT, UCAT_LM, UCAT_LO,    // letters
    UCAT_MN, UCAT_MC, UCAT_ME,                      // marks
    UCAT_ND, UCAT_NL, UCAT_NO,                      // numbers
    UCAT_PC, UCAT_PD, UCAT_PS, UCAT_PE, UCAT_PI, UCAT_PF, UCAT_PO, // punctuation
    UCAT_SM, UCAT_SC, UCAT_SK, UCAT_SO,             // symbols
    UCAT_ZS, UCAT_ZL, UCAT_ZP,                      // separators
    UCAT_CC, UCAT_CF, UCAT_CS, UCAT_CO,             // control, format, surrogate, private use
    UCAT_COUNT
};

// Flags of a code point: its category group (exactly one of the group bits) plus properties.
enum {
    UFLAG_LETTER     = 1u << 0,  // \p{L}
    UFLAG_MARK       = 1u << 1,  // \p{M}
    UFLAG_NUMBER     = 1u << 2,  // \p{N}
    UFLAG_PUNCT      = 1u << 3,  // \p{P}
    UFLAG_SYMBOL     = 1u << 4,  // \p{S}
    UFLAG_SEPARATOR  = 1u << 5,  // \p{Z}
    UFLAG_CONTROL    = 1u << 6,  // \p{C} except unassigned: Cc, Cf, Cs, Co
    UFLAG_UNASSIGNED = 1u << 7,  // Cn, and values past U+10FFFF
    UFLAG_WHITESPACE = 1u << 8,  // the White_Space property (\s in Unicode regexes)
};

enum ucat unicode_category(uint32_t cp);
unsigned unicode_flags(uint32_t cp);
static inline bool unicode_is_whitespace(uint32_t cp) {
    return (unicode_flags(cp) & UFLAG_WHITESPACE) != 0;
}
static inline bool unicode_is_letter(uint32_t cp) { return (unicode_flags(cp) & UFLAG_LETTER) != 0; }
static inline bool unicode_is_number(uint32_t cp) { return (unicode_flags(cp) & UFLAG_NUMBER) != 0; }
// Two-letter category name ("Lu", "Nd", ...).
const char *unicode_category_name(enum ucat c);

// ---- generated data (engine/unicode_data.c) ----
extern const char unicode_data_version[];
extern const uint32_t unicode_runs[];
extern const uint32_t unicode_runs_n;

#endif
