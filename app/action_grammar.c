// Grammar-constrained decoding of action lines (see action_grammar.h).
//
// The checker works on text, not tokens: a candidate token is allowed when the reply so far plus
// the token's piece is still a prefix of "<act>" ACTION "</act>"; after </act>, that the spoken
// sentence names only what the action holds (its numbers, its values' words, the corpus's
// sentence words).
// With the embedded model's 1024 pieces that is ~1024 short parses per generated action token.
#include "app/action_grammar.h"
#include "app/reply_sentence.h"
#include "app/request_words.h"
#include "engine/tokenizer.h"
#include "base/base.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- the schema: intents, their slots in the trained order, and each slot's values ----
//
// Value specs: "a|b|c" an enumeration; "#LO-HI" an integer; "%LO-HI" degrees in halves
// (22, 22.5); "+LO-HI" a signed integer (+2, -2); "*" words copied from the request
// ("*home|work": those two words as well, when the request names them: value_named).
typedef struct slot_alt { const char *key, *values; } slot_alt;
typedef struct slot_group { slot_alt alt[2]; } slot_group;   // one of the alternatives, required
typedef struct intent_spec { const char *name; slot_group groups[2]; } intent_spec;

#define ZONES "all|driver|passenger|rear"
#define ONOFF "on|off"
static const intent_spec intents[] = {
    { "none", {{{{0}}}} },
    { "climate.set", { {{ { "zone", ZONES } }}, {{ { "temp", "%16-30" } }} } },
    { "climate.adjust", { {{ { "zone", ZONES } }}, {{ { "delta", "+1-14" } }} } },
    { "climate.fan", { {{ { "level", "#0-7" }, { "delta", "+1-7" } }} } },
    { "climate.ac", { {{ { "state", ONOFF } }} } },
    { "climate.defrost", { {{ { "target", "front|rear" } }}, {{ { "state", ONOFF } }} } },
    { "seat.heat", { {{ { "seat", "driver|passenger" } }}, {{ { "level", "#0-3" } }} } },
    { "seat.cool", { {{ { "seat", "driver|passenger" } }}, {{ { "level", "#0-3" } }} } },
    { "window.set", { {{ { "window", "all|driver|passenger|rear_left|rear_right" } }}, {{ { "position", "#0-100" } }} } },
    { "sunroof.set", { {{ { "position", "#0-100" } }} } },
    { "lights.set", { {{ { "target", "headlights|fog|interior|ambient" } }}, {{ { "state", ONOFF } }} } },
    { "nav.go", { {{ { "dest", "*home|work" } }} } },
    { "nav.eta", {{{{0}}}} },
    { "nav.cancel", {{{{0}}}} },
    { "media.play", {{{{0}}}} },
    { "media.pause", {{{{0}}}} },
    { "media.next", {{{{0}}}} },
    { "media.previous", {{{{0}}}} },
    { "media.volume", { {{ { "level", "#0-30" }, { "delta", "+1-30" } }} } },
    { "media.source", { {{ { "source", "radio|bluetooth|usb|podcast" } }} } },
    { "phone.call", { {{ { "contact", "*" } }} } },
    { "phone.redial", {{{{0}}}} },
    { "status.query", { {{ { "item", "range|tyres|doors|fuel|battery|oil" } }} } },
    { "doors.lock", { {{ { "state", "locked|unlocked" } }} } },
    { "assist.set", { {{ { "feature", "lane_keep|cruise|parking_sensors|blind_spot" } }}, {{ { "state", ONOFF } }} } },
};
#define N_INTENTS (int)(sizeof intents / sizeof intents[0])

_Static_assert(N_INTENTS <= REQUEST_MAX_INTENTS, "request_words.possible holds every intent");
typedef request_words words;   // the request as the checks read it

int action_schema_intents(void) { return N_INTENTS; }
const char *action_schema_intent(int i) { return i >= 0 && i < N_INTENTS ? intents[i].name : NULL; }

int action_schema_slots(int i, action_schema_slot *out, int cap) {
    if (i < 0 || i >= N_INTENTS) return 0;
    int n = 0;
    for (int g = 0; g < 2; g++)
        for (int a = 0; a < 2; a++)
            if (intents[i].groups[g].alt[a].key && n < cap)
                out[n++] = (action_schema_slot){ intents[i].groups[g].alt[a].key, intents[i].groups[g].alt[a].values, g };
    return n;
}

static int n_groups(const intent_spec *it) {
    int n = 0;
    while (n < 2 && it->groups[n].alt[0].key) n++;
    return n;
}

// ---- value checks: 1 complete and valid, 0 a proper prefix of a valid value, -1 neither ----

static bool is_prefix(const char *pre, size_t n, const char *full) {
    return strlen(full) >= n && memcmp(pre, full, n) == 0;
}

// s[0..n) against "a|b|c"
// named_in: only the values this request names (value_named; NULL: all).
static bool value_named(const char *value, size_t len, const words *req);
static int check_enum_named(const char *list, const char *s, size_t n, const words *named_in) {
    int best = -1;
    for (const char *p = list; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (!named_in || value_named(p, len, named_in)) {
            if (len == n && memcmp(p, s, n) == 0) return 1;
            if (len > n && memcmp(p, s, n) == 0) best = 0;
        }
        p += len + (bar ? 1 : 0);
    }
    return best;
}

static int check_enum(const char *list, const char *s, size_t n) { return check_enum_named(list, s, n, NULL); }

// Digits d[0..n) as a decimal integer in [lo, hi] (no leading zero but "0"): 1 if it is one, 0
// if more digits can make one, -1 if not.
static int check_int(const char *d, size_t n, long lo, long hi) {
    if (n == 0) return hi >= lo ? 0 : -1;
    if (n > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)d[i])) return -1;
        v = v * 10 + (d[i] - '0');
    }
    if (d[0] == '0' && n > 1) return -1;
    if (v >= lo && v <= hi) return 1;
    if (v == 0) return -1;                 // "0" takes no more digits
    for (long scale = 10; v * scale <= hi; scale *= 10)   // v followed by k more digits
        if (v * scale + scale - 1 >= lo) return 0;
    return -1;
}

// Number specs: "#LO-HI" integers, "+LO-HI" signed integers, "%LO-HI" whole or .5 degrees.
static int check_number_any(const char *spec, const char *s, size_t n) {
    char kind = spec[0];
    long lo = atol(spec + 1), hi = atol(strchr(spec + 1, '-') + 1);
    if (kind == '+') {
        if (n == 0) return 0;
        if (s[0] != '+' && s[0] != '-') return -1;
        return check_int(s + 1, n - 1, lo, hi);
    }
    if (kind == '#') return check_int(s, n, lo, hi);
    const char *dot = memchr(s, '.', n);   // '%': "22", "22.5"
    if (!dot) {
        int r = check_int(s, n, lo, hi);
        if (r == 1 && n > 0 && atol(s) == hi) return 1;
        return r;                          // a whole number may still take ".5"
    }
    size_t il = (size_t)(dot - s), fl = n - il - 1;
    if (check_int(s, il, lo, hi - 1) != 1) return -1;
    if (fl == 0) return 0;
    return fl == 1 && dot[1] == '5' ? 1 : -1;
}

// Words a copied name or place never starts with: fillers, politeness and the verbs and
// function words of the requests around it ("give maya a call", "get me to the velodrome").
static const char *const not_a_value_start[] = { "a", "about", "actually", "again", "also", "alright", "and",
    "bring", "call", "can", "cabin", "could", "d", "dial", "directions", "do", "er", "for", "get", "give", "go",
    "hey", "hmm", "how", "i", "if", "is", "it", "just", "let", "like", "maybe", "me", "navigate", "now", "ok",
    "okay", "phone", "please", "quick", "real", "ring", "route", "s", "said", "so", "sorry", "start", "take",
    "talk", "thank", "thanks", "then", "to", "try", "uh", "um", "want", "well", "what", "with", "would", "you",
    NULL };

// The words a copied value ends before, and which never occur inside one after its first word:
// the closed-class words around a name or place in a request ("give maria a call", "call maria
// please", "take me to the mall and then home"). A name is copied whole: it ends at the end of
// the request or before one of these, never in the middle of a run of other words ("the
// greenfield outlet" is greenfield_outlet). In the training corpus every copied value ends so,
// and none has one of these words after its first.
static const char *const around_a_value[] = { "a", "alright", "an", "and", "asap", "at", "but", "by", "cabin",
    "first", "for", "from", "her", "him", "if", "in", "instead", "it", "later", "me", "my", "now", "ok", "okay",
    "on", "or", "please", "quick", "quickly", "real", "right", "so", "sorry", "thank", "thanks", "the", "them",
    "then", "to", "today", "tonight", "too", "us", "via", "with", "yeah", "you", "your", "again", NULL };

typedef const char word_t[32];

static bool has_letter(const char *w) {
    for (; *w; w++)
        if (isalpha((unsigned char)*w)) return true;
    return false;
}

static bool all_digits(const char *w) {
    for (; *w; w++)
        if (!isdigit((unsigned char)*w)) return false;
    return true;
}

// A word a name may run through without it being part of the name: a filler, or the same word
// again (a stutter: "129 129 falcon drive").
static bool skippable(word_t *w, int i) { return request_is_filler(w[i]) || (i > 0 && strcmp(w[i], w[i - 1]) == 0); }

static int next_word(word_t *w, int nw, int i) {
    int e = i + 1;
    while (e < nw && skippable(w, e)) e++;
    return e;
}

// A value whose last word so far is request word i (letters: it has a word that is not a number):
// whether it can be complete (2), can only go on (1), or neither (0). It ends where the name does
// (the request's end or a word of around_a_value) and needs a word that is not a number.
static bool name_ends_before(word_t *w, int nw, int e) { return e >= nw || request_word_index(around_a_value, w[e]) >= 0; }

static int value_can_end(word_t *w, int nw, int i, bool letters) {
    int e = next_word(w, nw, i);
    if (name_ends_before(w, nw, e)) return letters ? 2 : 0;
    for (bool l = letters; !name_ends_before(w, nw, e); e = next_word(w, nw, e)) {   // the run of words after i
        l = l || has_letter(w[e]);
        if (l && name_ends_before(w, nw, next_word(w, nw, e))) return 1;
    }
    return 0;
}

// Words that lead into a name or place besides those two lists ("ring up maria", "head towards
// the harbor").
static const char *const leads_to_a_value[] = { "up", "visit", "find", "contact", "text", "reach", "head",
    "drive", "destination", "navigation", "guidance", "towards", "toward", "into", "is", NULL };

// Whether a copied value may start at request word i: a word of 2 or more letters (or digits),
// not one of not_a_value_start, nor of around_a_value but "my" ("call my sister"; places are
// named without their article, "the office" is office); and where a name can start: at the request's start, or after a word of
// those lists ("the quayside market" is never just "market").
static bool value_can_start(word_t *w, int i) {
    const char *x = w[i];
    if (request_word_index(not_a_value_start, x) >= 0 || (strlen(x) < 2 && !all_digits(x))) return false;
    if (request_word_index(around_a_value, x) >= 0 && strcmp(x, "my")) return false;
    int j = i - 1;
    while (j >= 0 && (request_is_filler(w[j]) || strcmp(w[j], x) == 0)) j--;
    return j < 0 || request_word_index(not_a_value_start, w[j]) >= 0 || request_word_index(around_a_value, w[j]) >= 0 ||
           request_word_index(leads_to_a_value, w[j]) >= 0;
}

// Words joined by '_' that occur in the request one after the other (fillers and stutters may
// come between: "city uh hall" gives city_hall), starting where value_can_start says and
// running as value_can_end says. v[0..n): the value
// so far, whose last word may be unfinished; after: the request index of the previous value word
// (-1: none yet). Returns 1 complete, 0 a prefix of a complete value, -1 neither.
static int check_copy_list(word_t *w, int nw, const char *v, size_t n, int after, bool letters) {
    const char *us = memchr(v, '_', n);
    size_t wl = us ? (size_t)(us - v) : n;
    int best = -1;
    for (int i = after + 1; i < nw; i++) {
        bool skip = after >= 0 && skippable(w, i);
        bool ok = after < 0 ? value_can_start(w, i) : !request_is_filler(w[i]) && request_word_index(around_a_value, w[i]) < 0;
        size_t len = strlen(w[i]);
        if (ok && len >= wl && memcmp(w[i], v, wl) == 0 && (wl > 0 || !us)) {
            bool l = letters || has_letter(w[i]);
            if (us) {
                if (len == wl) {
                    int r = check_copy_list(w, nw, us + 1, n - wl - 1, i, l);
                    if (r > best) best = r;
                }
            } else {
                int c = value_can_end(w, nw, i, l);
                if (c == 2 && len == wl) return 1;
                if (c > 0 && best < 0) best = 0;
            }
        }
        if (after >= 0 && !skip) break;   // the next value word is the next word of the request
    }
    return best;
}

// Values are copied from the request's words with every spoken number as its digits: "twenty
// eight queen street" is 28_queen_street and never twenty_eight_queen_street. No contact or place
// of the training corpus or the held-out set has a number word in it, and the model, given a
// spoken address by the recogniser, sometimes began the words ("directions to twenty four copper
// row" -> twenty_four_copper_row) where the grammar let it.
static int check_copy_from(const words *req, const char *v, size_t n) {
    return check_copy_list(req->copy, req->n_copy, v, n, -1, false);
}

// The largest stated number a slot takes above its range (three digits: "volume fifty",
// "set it to 72" for Fahrenheit, a house number).
#define STATED_NUMBER_MAX 999

// When the request states numbers, a numeric slot takes one of them, copied (for a signed spec,
// its size: "two degrees warmer" -> +2), and nothing else: "up 2 degrees" cannot be temp=22,
// so it is a change (delta=+2), not a setting. A stated number fits a slot when it is of the
// slot's kind (whole; halves for degrees) and not below its range; one above the range is
// taken as said ("set it to 72" -> temp=72) and the car refuses it with the range it allows,
// instead of the model writing some other number. A number below the range (2 for a
// temperature) is not taken: in the corpus those are changes. When no stated number fits, the
// slot cannot be filled (an intent that needs it is not offered); when the request states no
// number, any number in range.
static int check_number(const char *spec, const char *s, size_t n, const words *req) {
    char kind = spec[0], buf[24];
    if (kind == '%' && req->n_num == 0 && !isnan(req->kept_temp)) {   // a follow-up keeps it
        snprintf(buf, sizeof buf, req->kept_temp == floor(req->kept_temp) ? "%.0f" : "%.1f", req->kept_temp);
        return check_enum(buf, s, n);
    }
    long lo = atol(spec + 1);
    int best = -1;
    for (int i = 0; i < req->n_num; i++) {
        double x = req->num[i];
        bool whole = x == floor(x);
        if (x < lo || x > STATED_NUMBER_MAX || (!whole && (kind != '%' || x * 2 != floor(x * 2)))) continue;
        for (int sign = 0; sign < (kind == '+' ? 2 : 1); sign++) {
            if (kind == '+' && req->direction == (sign ? 1 : -1)) continue;   // sign 1 is '-'
            if (whole) snprintf(buf, sizeof buf, "%s%ld", kind == '+' ? (sign ? "-" : "+") : "", (long)x);
            else snprintf(buf, sizeof buf, "%ld.5", (long)x);
            size_t bl = strlen(buf);
            if (bl == n && memcmp(buf, s, n) == 0) return 1;
            if (bl > n && memcmp(buf, s, n) == 0) best = 0;
        }
    }
    if (req->n_num > 0) return best;
    if (kind == '+' && n > 0 && req->direction && s[0] != (req->direction > 0 ? '+' : '-')) return -1;
    return check_number_any(spec, s, n);
}

// The words that name a place the car knows without copying it: a destination is home or work
// only when the request says so ("take me home", "head to the office"), so that "get me to the
// velodrome" cannot become dest=home; any other destination is copied from the request.
static const struct { const char *value; const char *const words[4]; } named_values[] = {
    { "home", { "home", "house", NULL } },
    { "work", { "work", "office", "job", NULL } },
};

static bool value_named(const char *value, size_t len, const words *req) {
    for (size_t i = 0; i < sizeof named_values / sizeof named_values[0]; i++) {
        if (strlen(named_values[i].value) == len && memcmp(named_values[i].value, value, len) == 0)
            return request_says(req, named_values[i].words);
    }
    return true;   // not a named place: no condition
}

static int check_value(const char *spec, const char *s, size_t n, const words *req) {
    if (spec[0] == '*') {
        int r = spec[1] ? check_enum_named(spec + 1, s, n, req) : -1;
        int c = check_copy_from(req, s, n);
        return r > c ? r : c;
    }
    if (spec[0] == '#' || spec[0] == '%' || spec[0] == '+') return check_number(spec, s, n, req);
    if (strcmp(spec, ONOFF) == 0 && req->switch_to) return check_enum(req->switch_to > 0 ? "on" : "off", s, n);
    return check_enum(spec, s, n);
}

// ---- the action line ----

// False for an intent whose slot can take no value here: a contact when the request has no
// word to copy.
static bool intent_possible(const intent_spec *it, const words *req) {
    for (int g = 0; g < n_groups(it); g++) {
        bool any = false;
        for (int a = 0; a < 2 && it->groups[g].alt[a].key && !any; a++)
            any = check_value(it->groups[g].alt[a].values, "", 0, req) >= 0;
        if (!any) return false;
    }
    return true;
}

// Words of a unit name the quantity: a request that says "degrees" is about the temperature, one
// that says "percent" about how far a window or the sunroof is open ("up 4 degrees" is not the
// fan's +4). Every turn of the training corpus with these words agrees (15,202 and 2,099).
static const struct { const char *const words[4]; const char *const intents[3]; } unit_intents[] = {
    { { "degree", "degrees", "celsius", NULL }, { "climate.set", "climate.adjust", NULL } },
    { { "percent", NULL }, { "window.set", "sunroof.set", NULL } },
};

// Rules out the intents a unit the request says does not allow.
static void apply_units(words *req) {
    for (size_t u = 0; u < sizeof unit_intents / sizeof unit_intents[0]; u++) {
        bool said = request_says(req, unit_intents[u].words);
        for (int i = 0; said && i < N_INTENTS; i++)
            if (request_word_index(unit_intents[u].intents, intents[i].name) < 0) req->possible[i] = false;
    }
}

// Splits the request and decides once which intents it leaves possible.
// kept_temp: the temperature a follow-up keeps (action_line_done; NAN: none).
static void read_request(const char *text, double kept_temp, words *req) {
    request_words_read(text, req);
    req->kept_temp = kept_temp;
    for (int i = 0; i < N_INTENTS; i++) req->possible[i] = intent_possible(&intents[i], req);
    apply_units(req);
}

static const intent_spec *find_intent(const char *s, size_t n) {
    for (int i = 0; i < N_INTENTS; i++)
        if (strlen(intents[i].name) == n && memcmp(intents[i].name, s, n) == 0) return &intents[i];
    return NULL;
}

// One "key=value" field for slot group g; `complete` says whether the field must be whole.
static int check_field(const slot_group *g, const char *s, size_t n, bool complete, const words *req) {
    const char *eq = memchr(s, '=', n);
    int best = -1;
    for (int a = 0; a < 2 && g->alt[a].key; a++) {
        size_t kl = strlen(g->alt[a].key);
        if (req->set_or_change && g->alt[1].key && (strcmp(g->alt[a].key, "delta") == 0) != (req->set_or_change < 0))
            continue;   // set, or changed (request_words.h)
        if (!eq) {   // still typing the key (of a slot that can take a value here: no dead end)
            if (!complete && n <= kl && memcmp(s, g->alt[a].key, n) == 0 && check_value(g->alt[a].values, "", 0, req) >= 0)
                best = 0;
            continue;
        }
        if ((size_t)(eq - s) != kl || memcmp(s, g->alt[a].key, kl) != 0) continue;
        int r = check_value(g->alt[a].values, eq + 1, n - kl - 1, req);
        if (r > best) best = r;
    }
    if (complete && best != 1) return -1;
    return best;
}

// t[0..n): the text after "<act>", with no '<' in it. complete: must be a whole action.
static int check_action(const char *t, size_t n, bool complete, const words *req) {
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || strchr("_.+-= ", c))) return -1;
    }
    const char *sp = memchr(t, ' ', n);
    size_t il = sp ? (size_t)(sp - t) : n;
    const intent_spec *it = find_intent(t, il);
    if (!sp) {   // the intent, whole or in part
        if (it && n_groups(it) == 0) return 1;
        if (complete) return -1;
        for (int i = 0; i < N_INTENTS; i++)
            if (is_prefix(t, n, intents[i].name) && req->possible[i]) return 0;
        return -1;
    }
    if (!it || !req->possible[it - intents]) return -1;
    int ng = n_groups(it), field = 0;
    const char *p = sp + 1, *end = t + n;
    for (;;) {
        if (field >= ng) return -1;
        const char *next = memchr(p, ' ', (size_t)(end - p));
        bool last = !next;
        size_t fl = last ? (size_t)(end - p) : (size_t)(next - p);
        int r = check_field(&it->groups[field], p, fl, !last || complete, req);
        if (r < 0) return -1;
        if (last) return (r == 1 && field == ng - 1) ? 1 : (complete ? -1 : 0);
        field++;
        p = next + 1;
    }
}

static int check_reply(const char *reply, size_t len, const words *req) {
    static const char open_tag[] = "<act>", close_tag[] = "</act>";
    if (len <= 5) return memcmp(reply, open_tag, len) == 0 ? 0 : -1;
    if (memcmp(reply, open_tag, 5) != 0) return -1;
    const char *t = reply + 5;
    size_t n = len - 5;
    const char *lt = memchr(t, '<', n);
    if (!lt) {
        int r = check_action(t, n, false, req);
        return r < 0 ? -1 : 0;   // a whole action still needs its "</act>"
    }
    size_t tail = n - (size_t)(lt - t);
    if (memcmp(lt, close_tag, tail < 6 ? tail : 6) != 0) return -1;
    if (check_action(t, (size_t)(lt - t), true, req) != 1) return -1;
    return tail >= 6 ? 1 : 0;
}

int action_grammar_check(const char *reply, size_t len, const char *request) {
    words req;
    read_request(request ? request : "", NAN, &req);
    return check_reply(reply, len, &req);
}

int action_grammar_check_sentence(const char *action_line, const char *sentence, size_t len, bool ended) {
    reply_sentence_rule r;
    const char *a = strncmp(action_line, "<act>", 5) == 0 ? action_line + 5 : action_line;
    const char *close = strstr(a, "</act>");   // what follows it is not the action's
    reply_sentence_rule_init(&r, a, close ? (size_t)(close - a) : strlen(a));
    return reply_sentence_check(sentence, len, ended, &r);
}

// ---- the token filter ----

struct action_grammar {
    const tokenizer *tok;
    int n_vocab;
    char **piece;        // n_vocab pieces as generation delivers them (NUL-terminated)
    int *piece_len;
    bool *special;       // control/unknown tokens: never inside an action line
    bool *byte_twin;     // tokenizer_byte_twins: never in the action line or a refusal's sentence
    bool *eog;           // end-of-generation tokens: end the reply
    bool *ok;            // scratch: the tokens the sentence's rule allows now
    words req;
    char reply[512];     // the reply so far, while its action line is open
    size_t len;
    bool in_sentence;    // </act> seen: the spoken sentence is checked
    reply_sentence_rule rule;   // what the sentence may say (app/reply_sentence.c)
    char sentence[512];  // the spoken sentence so far
    size_t slen;
    bool done;           // the reply left the grammar (or outgrew the buffers): nothing more to mask
    const vehicle *car;  // action_grammar_set_car: actions it refuses get its reason as their sentence
    double last_temp;    // the conversation's last action was climate.set to this (NAN: it was not)
    char forced[320];    // that sentence (" The temperature can be set between ..."); "" if none
    size_t forced_len, forced_at;   // its length, and how much of it the reply already holds
    float *probe;        // n_vocab: the mask grammar_forced found (0 or -INFINITY), if probe_valid:
    bool probe_valid;    // the next grammar_mask applies it instead of checking every piece again
};

action_grammar *action_grammar_new(session *s) {
    const tokenizer *tok = session_model(s)->tok;
    if (tokenizer_find(tok, "<act>") < 0) return NULL;
    action_grammar *g = xcalloc(1, sizeof *g);
    g->tok = tok;
    g->last_temp = NAN;
    g->n_vocab = session_n_vocab(s);
    g->piece = xcalloc((size_t)g->n_vocab, sizeof *g->piece);
    g->piece_len = xcalloc((size_t)g->n_vocab, sizeof *g->piece_len);
    g->special = xcalloc((size_t)g->n_vocab, sizeof *g->special);
    g->eog = xcalloc((size_t)g->n_vocab, sizeof *g->eog);
    g->ok = xcalloc((size_t)g->n_vocab, sizeof *g->ok);
    g->probe = xcalloc((size_t)g->n_vocab, sizeof *g->probe);
    g->byte_twin = xcalloc((size_t)g->n_vocab, sizeof *g->byte_twin);
    tokenizer_byte_twins(tok, g->byte_twin);
    char buf[256];
    for (int i = 0; i < g->n_vocab; i++) {
        int n = tokenizer_piece(tok, i, false, buf, sizeof buf - 1);
        if (n < 0) n = 0;
        if (n > (int)sizeof buf - 1) n = sizeof buf - 1;
        buf[n] = 0;
        g->piece[i] = xstrdup(buf);
        g->piece_len[i] = n;
        int type = tokenizer_token_type(tok, i);
        g->eog[i] = tokenizer_is_eog(tok, i);
        g->special[i] = type == TT_CONTROL || type == TT_UNKNOWN || g->eog[i];
    }
    return g;
}

void action_grammar_free(action_grammar *g) {
    if (!g) return;
    for (int i = 0; i < g->n_vocab; i++) free(g->piece[i]);
    free(g->piece);
    free(g->piece_len);
    free(g->special);
    free(g->eog);
    free(g->ok);
    free(g->probe);
    free(g->byte_twin);
    free(g);
}

// The sentence's last word or number, still open, and the state of the rule before it: each
// candidate piece is checked from there (one short scan per vocabulary entry).
typedef struct sentence_tail {
    reply_sentence_state st;   // after sentence[0..from)
    char text[sizeof ((action_grammar *)0)->sentence + 256];   // sentence[from..slen), then the piece
    size_t len;
} sentence_tail;

static void sentence_tail_init(const action_grammar *g, sentence_tail *t) {
    size_t from = g->slen;
    while (from > 0 && (isalnum((unsigned char)g->sentence[from - 1]) || g->sentence[from - 1] == '\'' ||
                        g->sentence[from - 1] == '.'))
        from--;
    reply_sentence_start(&t->st);
    // (if the sentence so far broke the rule, after the session's fallback, every piece fails
    // from here and the reply ends)
    if (reply_sentence_scan(&t->st, g->sentence, from, false, &g->rule) != 0) t->st.broken = true;
    t->len = g->slen - from;
    memcpy(t->text, g->sentence + from, t->len);
}

static bool sentence_token_ok(const action_grammar *g, sentence_tail *t, int i) {
    if (g->special[i] && !g->eog[i]) return false;   // control and unknown tokens are not speech
    int pl = g->eog[i] ? 0 : g->piece_len[i];
    if (g->slen + (size_t)pl > sizeof g->sentence) return true;   // past the buffer: left alone
    memcpy(t->text + t->len, g->piece[i], (size_t)pl);
    reply_sentence_state st = t->st;
    return reply_sentence_scan(&st, t->text, t->len + (size_t)pl, g->eog[i], &g->rule) == 0;
}

// Does token i begin a new word of the sentence (" maria" after "Calling", "maria" after "Calling ")?
static bool starts_word(const action_grammar *g, int i) {
    const char *p = g->piece[i];
    if (g->special[i]) return false;
    bool after_space = g->slen > 0 && g->sentence[g->slen - 1] == ' ';
    return (after_space && isalpha((unsigned char)p[0])) || (p[0] == ' ' && isalpha((unsigned char)p[1]));
}

// In the sentence: each candidate token's piece appended to the sentence so far and checked
// (the end of the reply closes its last word or number). When the model's own first choice
// breaks the rules at the start of a word ("Calling " -> "fel" for contact=ximena: it reaches
// for a name, and not the action's), the word there is the action's value: only tokens that
// begin a value word are left, and the value is then said whole.
static void sentence_mask(action_grammar *g, float *logits, int n_vocab) {
    int nv = n_vocab < g->n_vocab ? n_vocab : g->n_vocab;
    sentence_tail cand;
    sentence_tail_init(g, &cand);
    int best = -1;
    for (int i = 0; i < nv; i++)
        if (logits[i] != -INFINITY && (best < 0 || logits[i] > logits[best])) best = i;
    if (best >= 0 && g->rule.n_word > 0 && starts_word(g, best) && !sentence_token_ok(g, &cand, best)) {
        g->rule.values_only = true;
        bool any = false;
        for (int i = 0; i < nv; i++)
            any |= g->ok[i] = logits[i] != -INFINITY && starts_word(g, i) && sentence_token_ok(g, &cand, i);
        g->rule.values_only = false;
        if (any) {
            for (int i = 0; i < nv; i++)
                if (!g->ok[i]) logits[i] = -INFINITY;
            return;
        }
    }
    bool any = false;
    for (int i = 0; i < nv; i++)
        any |= g->ok[i] = logits[i] != -INFINITY && sentence_token_ok(g, &cand, i);
    // A sentence the pieces cannot go on with ("Turning the," then nothing that may follow
    // "the"): the reply ends there rather than leave the rule.
    for (int i = 0; i < nv; i++)
        if (!g->ok[i] && (any || !g->eog[i])) logits[i] = -INFINITY;
}

// A complete reply so far ("<act>" ACTION "</act>" then perhaps the start of the sentence): the
// sentence's rule for its action, and where the sentence starts.
static size_t sentence_start(const char *reply, size_t n, reply_sentence_rule *rule) {
    size_t alen = (size_t)((const char *)memmem(reply, n, "</act>", 6) - reply);
    reply_sentence_rule_init(rule, reply + 5, alen - 5);
    return alen + 6;
}

// The car refuses the action: the sentence is its reason, spelled by whichever pieces the model
// likes best among those that continue it, then the end of the reply.
static void forced_mask(action_grammar *g, float *logits, int n_vocab) {
    const char *rest = g->forced + g->forced_at;
    size_t left = g->forced_len - g->forced_at;
    for (int i = 0; i < n_vocab; i++) {
        bool ok = i < g->n_vocab && (left == 0 ? g->eog[i]
                                               : !g->special[i] && !g->byte_twin[i] && g->piece_len[i] > 0 &&
                                                     (size_t)g->piece_len[i] <= left &&
                                                     memcmp(g->piece[i], rest, (size_t)g->piece_len[i]) == 0);
        if (!ok) logits[i] = -INFINITY;
    }
}

// Does the action line so far go on with text[0..n) whatever comes: is each of its characters
// the only one the grammar takes there (up to the line's close)?
static bool line_forces(const action_grammar *g, const char *text, size_t n) {
    char cand[sizeof g->reply + 256];
    size_t len = g->len;
    memcpy(cand, g->reply, len);
    for (size_t k = 0; k < n; k++) {
        if (len + 1 >= sizeof cand) return false;
        int takes = 0;
        for (int c = 32; c < 127 && takes < 2; c++) {
            cand[len] = (char)c;
            takes += check_reply(cand, len + 1, &g->req) >= 0;
        }
        cand[len] = text[k];
        int r = check_reply(cand, len + 1, &g->req);
        if (takes != 1 || r < 0) return false;
        len++;
        if (r == 1) return k + 1 == n;   // "</act>" closed it: what follows is the sentence's
    }
    return true;
}

// Where the line must go on with a slot's key ("temp=" after "zone=all ") and the pieces left
// are starts of the longest ("t", "temp"), only the longest stays: the key is spelled as the
// model was trained to read it, and the token is then forced (grammar_forced). Values copied
// from the request ("copper") a model may spell piece by piece, and are left alone.
static void whole_key(const action_grammar *g, float *logits, int n_vocab) {
    int nv = n_vocab < g->n_vocab ? n_vocab : g->n_vocab;
    int longest = -1, n_left = 0;
    for (int i = 0; i < nv; i++) {
        if (logits[i] == -INFINITY) continue;
        n_left++;
        if (longest < 0 || g->piece_len[i] > g->piece_len[longest]) longest = i;
    }
    if (n_left < 2) return;
    const char *p = g->piece[longest];
    size_t pl = (size_t)g->piece_len[longest];
    for (int i = 0; i < nv; i++)   // every other piece a shorter start of the longest
        if (logits[i] != -INFINITY && i != longest &&
            ((size_t)g->piece_len[i] == pl || memcmp(g->piece[i], p, (size_t)g->piece_len[i]) != 0))
            return;
    char key[sizeof g->reply];
    if (pl + 1 >= sizeof key) return;
    memcpy(key, p, pl);
    key[pl] = '=';
    if (!line_forces(g, key, pl + 1)) return;
    for (int i = 0; i < nv; i++)
        if (i != longest) logits[i] = -INFINITY;
}

// In the action line: every piece that keeps the reply on the grammar (and, when it closes the
// line, starts a sentence the action's rule allows).
static void line_mask(action_grammar *g, float *logits, int n_vocab) {
    char cand[sizeof g->reply + 256];
    memcpy(cand, g->reply, g->len);
    for (int i = 0; i < n_vocab && i < g->n_vocab; i++) {
        if (logits[i] == -INFINITY) continue;
        int pl = g->piece_len[i];
        if (g->special[i] || g->byte_twin[i] || pl == 0 || g->len + (size_t)pl > sizeof g->reply) {
            logits[i] = -INFINITY;
            continue;
        }
        memcpy(cand + g->len, g->piece[i], (size_t)pl);
        int r = check_reply(cand, g->len + (size_t)pl, &g->req);
        if (r == 1) {   // the piece closes the action line: what it brings after "</act>" starts the sentence
            size_t n = g->len + (size_t)pl;
            reply_sentence_rule rule;
            size_t at = sentence_start(cand, n, &rule);
            if (reply_sentence_check(cand + at, n - at, false, &rule) < 0) r = -1;
        }
        if (r < 0) logits[i] = -INFINITY;
    }
    whole_key(g, logits, n_vocab);
}

static void grammar_mask(void *ud, float *logits, int n_vocab) {
    action_grammar *g = ud;
    if (g->done) return;
    if (g->probe_valid) {   // what grammar_forced found for this very state
        g->probe_valid = false;
        for (int i = 0; i < n_vocab; i++)
            if (i < g->n_vocab && g->probe[i] == -INFINITY) logits[i] = -INFINITY;
        return;
    }
    if (g->forced_len) { forced_mask(g, logits, n_vocab); return; }
    if (g->in_sentence) { sentence_mask(g, logits, n_vocab); return; }
    line_mask(g, logits, n_vocab);
}

// The one token the grammar allows next, or -1. The action line and a refusal's sentence are
// masked by their text alone; the spoken sentence's mask reads the logits (sentence_mask), so
// nothing is forced there. A probe that leaves more than one token is kept for grammar_mask.
static int32_t grammar_forced(void *ud) {
    action_grammar *g = ud;
    g->probe_valid = false;
    if (g->done || (g->in_sentence && !g->forced_len)) return -1;
    memset(g->probe, 0, (size_t)g->n_vocab * sizeof *g->probe);
    if (g->forced_len) forced_mask(g, g->probe, g->n_vocab);
    else line_mask(g, g->probe, g->n_vocab);
    int32_t only = -1;
    for (int i = 0; i < g->n_vocab; i++) {
        if (g->probe[i] == -INFINITY) continue;
        if (only >= 0) { g->probe_valid = true; return -1; }
        only = i;
    }
    return only;   // (none at all: -1, and the session's fallback samples unmasked, as ever)
}

// The action line is complete: a temperature setting is kept for the next turn. "Also the rear"
// after "21 degrees for the driver" is climate.set zone=rear temp=21: a climate.set that states no
// number right after a climate.set keeps its temperature (every such follow-up of the training
// corpus does, 2,531 of 2,531; other slots change without a number: "max", "close it").
// Also, would the car refuse it (when the sentence has not begun)? Then its reason is the
// sentence.
static void action_line_done(action_grammar *g) {
    action a;
    char line[sizeof g->reply + 1], unused[8], perr[128], reason[256];
    memcpy(line, g->reply, g->len);
    line[g->len] = 0;
    g->last_temp = NAN;
    if (action_parse(line, &a, unused, sizeof unused, perr, sizeof perr) != 0) return;
    const char *temp = action_slot_value(&a, "temp");
    if (strcmp(a.intent, "climate.set") == 0 && temp) g->last_temp = atof(temp);
    if (!g->car || g->slen > 0) return;
    if (vehicle_check(g->car, &a, reason, sizeof reason) == 0 || !reason[0]) return;
    snprintf(g->forced, sizeof g->forced, " %s", reason);
    g->forced_len = strlen(g->forced);
    g->forced_at = 0;
}

static void grammar_accept(void *ud, int32_t token, const char *piece, int len) {
    (void)token;
    action_grammar *g = ud;
    g->probe_valid = false;
    if (g->done) return;
    if (g->in_sentence) {
        if (g->slen + (size_t)len > sizeof g->sentence) { g->done = true; return; }
        memcpy(g->sentence + g->slen, piece, (size_t)len);
        g->slen += (size_t)len;
        if (g->forced_len) g->forced_at += (size_t)len;
        return;
    }
    if (g->len + (size_t)len > sizeof g->reply) { g->done = true; return; }
    memcpy(g->reply + g->len, piece, (size_t)len);
    g->len += (size_t)len;
    // Complete (the sentence follows), or off the grammar (the session's fallback when nothing
    // valid was left).
    int r = check_reply(g->reply, g->len, &g->req);
    if (r == 1) {
        // The piece that closed the action line may already start the sentence.
        size_t at = sentence_start(g->reply, g->len, &g->rule);
        memcpy(g->sentence, g->reply + at, g->len - at);
        g->slen = g->len - at;
        g->in_sentence = true;
        action_line_done(g);
    } else if (r < 0) {
        g->done = true;
    }
}

int action_grammar_chat(action_grammar *g, session *s, const char *user_text, token_cb cb, void *ud, errbuf *err) {
    if (!g) return session_chat(s, user_text, cb, ud, err);
    session_stats st;
    session_get_stats(s, &st);
    if (st.n_past == 0) g->last_temp = NAN;   // a new conversation
    read_request(user_text, g->last_temp, &g->req);
    g->last_temp = NAN;   // until this turn's action line says otherwise
    g->len = 0;
    g->slen = 0;
    g->in_sentence = false;
    g->done = false;
    g->forced_len = g->forced_at = 0;
    g->probe_valid = false;
    token_filter f = { grammar_mask, grammar_accept, g, grammar_forced };
    session_set_filter(s, &f);
    int rc = session_chat(s, user_text, cb, ud, err);
    session_set_filter(s, NULL);
    return rc;
}

void action_grammar_set_car(action_grammar *g, const vehicle *car) {
    if (g) g->car = car;
}
