#!/usr/bin/python3
"""Builds cabin's JSGF command grammar (assets/asr/cabin.gram) from the corpus generator.

Every sentence frame of tools/corpus/corpus_phrases.py (training and held-out phrasings alike: both
are the product's phrasings) becomes an alternative of one rule; its {slots} become rules over
the generator's slot values (numbers spelled as the recogniser writes them, zones, seats,
windows, contacts, destinations, media sources, ...). Around each command: the generator's
spoken prefixes ("uh", "hey cabin", "can you", "please", ...) and suffixes ("please", "for me",
"thanks", ...). Hesitations ("uh", "um", "er", "hmm") are fillers of the recogniser's noise
dictionary, not grammar words (HESITATION_WEIGHT 0); any literal word may be said twice, a
stutter, with a low probability (--stutter). Out-of-scope requests are in the grammar as well
(so that "tell me a joke" is heard as such); phrasing the generator never makes is left to the
n-gram LM, which runs beside the grammar (audio/asr.c decides which result to use).

Alternatives are weighted (JSGF /w/) by how often the corpus uses them: a command frame gets
its intent's share of the generator's sentences, spread evenly over that intent's phrasings
(training and held-out phrasings alike: the held-out ones are product phrasings too); the
optional prefix and suffix get the generator's rates. audio/asr.c scales the weights by the
language weight, so they count against the acoustic scores as an n-gram LM's would.

usage: build_grammar.py [--out assets/asr/cabin.gram] [--words] [--uniform] [--stutter P]
  (--words: print the vocabulary; --uniform: no weights and no stutters, every alternative
  alike; --stutter: probability that a word is said twice, default 0.01)
"""
import argparse
import collections
import os
import random
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "corpus"))
sys.path.insert(0, os.path.join(ROOT, "tools", "voice"))
import gen_corpus as g  # noqa: E402
from build_lm import normalise, num_words  # noqa: E402

for _k in getattr(g, "AUGMENT", {}):   # the model's training-only augmentation: not speech
    g.AUGMENT[_k] = 0

HESITATIONS = ["uh", "um", "er", "like"]
HESITATION_WEIGHT = 0.0    # share of word gaps given to an optional hesitation (0: none)
# A stutter: a word said twice ("ring ring them back"). gen_corpus.add_noise repeats one word in
# 6% of sentences, about one word in a hundred; each literal word of a command may be doubled
# with this probability (0: never).
STUTTER_RATE = 0.01
# Rates of the optional parts around a command, as gen_corpus.add_noise and gen_climate_adjust
# make them (a prefix before ~40% of commands, a suffix after 20%; "the driver says" and an
# explicit zone after an adjustment are rare).
P_PREFIX, P_SUFFIX, P_SAYS, P_ZONE_SUFFIX = 0.40, 0.20, 0.02, 0.03
SIM_SENTENCES = 40000      # sentences simulated to count how often each frame list is used


def alts(items):
    """A JSGF alternative over phrases (normalised, deduplicated, order kept)."""
    seen = []
    for it in items:
        it = it.strip()
        if it[:1] in "<([":
            key = it
        else:
            key = normalise(it)
        if key and key not in seen:
            seen.append(key)
    return "(" + " | ".join(seen) + ")" if len(seen) > 1 else seen[0]


def nums(values):
    return [num_words(v) for v in values]


def slot_rules():
    """Rule name -> JSGF body for every slot the frames use."""
    r = {}
    whole = [int(t) for t in g.TEMPS_ALL if float(t).is_integer()]
    r["tnum"] = "%s [point five | and a half]" % alts(nums(whole))
    r["temp"] = "<tnum> [degrees | degrees celsius | celsius]"
    r["zone"] = alts([z for zs in g.ZONES.values() for z in zs])
    r["zone_all"] = alts(["<zone>", "everywhere", "all zones", "the whole car", "every zone"])
    r["delta"] = alts(nums(range(1, 6)))
    r["fan_n"] = alts(nums(range(1, 8)))
    r["defrost_target"] = alts([w for ws in g.DEFROST_TARGET.values() for w in ws])
    r["seat"] = alts(["my seat" if s == "my" else s for ss in g.SEATS.values() for s in ss])
    r["seat_level"] = alts([w for ws in g.SEAT_LEVEL_WORDS.values() for w in ws])
    r["window"] = alts([w for ws in g.WINDOWS.values() for w in ws])
    r["pct"] = alts(nums(range(5, 100, 5)) + ["one hundred"])
    r["part"] = alts([w for ws in g.PART_WORDS.values() for w in ws])
    r["win_part"] = alts(["<part>", "[to] <pct> [percent]"])
    r["sun_part"] = alts(["<part>", "<pct> percent"])
    r["light"] = alts([w for ws in g.LIGHT_NAMES.values() for w in ws])
    places = []
    for name, article in g.PLACES_TRAIN + g.PLACES_HELD:
        places.append(("[the] " + normalise(name)) if article else normalise(name))
    r["place"] = alts(places)
    r["house"] = alts(nums(range(1, 200)))
    r["street"] = alts(g.STREETS_TRAIN + g.STREETS_HELD)
    r["dest"] = alts(["<place>", "<house> <street>"])
    r["vol"] = alts(nums(range(0, 31)))
    r["vol_delta"] = alts(nums([1, 2, 3, 4, 5, 10]))
    r["source"] = alts([w for ws in g.SOURCES.values() for w in ws])
    r["contact"] = alts(g.CONTACTS_TRAIN + g.CONTACTS_HELD)
    r["feature"] = alts([w for ws in g.FEATURES.values() for w in ws])
    r["other"] = alts(["<zone>", "<seat>", "<window>"])
    r["number"] = alts(nums(range(2, 100)) + ["<tnum>"])
    r["country"] = alts(g.COUNTRIES)
    r["city"] = alts(g.CITIES)
    r["topic"] = alts(g.TOPICS)
    r["lang"] = alts(g.LANGS)
    return r


# Frame lists and what their {slots} stand for. A list the generator has but this table lacks
# is an error (see check_complete): a new intent must be added here too.
FRAMES = [
    ("CLIMATE_SET_T", {"t": "temp"}), ("CLIMATE_SET_ZONE_T", {"z": "zone_all", "t": "temp"}),
    ("WARMER_VAGUE", {}), ("COOLER_VAGUE", {}), ("WARMER_N", {"n": "delta"}),
    ("COOLER_N", {"n": "delta"}), ("COLD_STATEMENTS", {}), ("HOT_STATEMENTS", {}),
    ("FAN_LEVEL", {"n": "fan_n"}), ("FAN_UP", {}), ("FAN_DOWN", {}), ("FAN_OFF", {}),
    ("FAN_MAX", {}), ("AC_ON", {}), ("AC_OFF", {}),
    ("DEFROST_ON", {"w": "defrost_target"}), ("DEFROST_OFF", {"w": "defrost_target"}),
    ("SEAT_HEAT_ON", {"s": "seat"}), ("SEAT_HEAT_LEVEL", {"s": "seat", "l": "seat_level"}),
    ("SEAT_HEAT_OFF", {"s": "seat"}), ("SEAT_COOL_ON", {"s": "seat"}),
    ("SEAT_COOL_LEVEL", {"s": "seat", "l": "seat_level"}), ("SEAT_COOL_OFF", {"s": "seat"}),
    ("WIN_OPEN", {"w": "window"}), ("WIN_CLOSE", {"w": "window"}),
    ("WIN_PART", {"w": "window", "p": "win_part"}), ("WIN_CRACK", {"w": "window"}),
    ("SUN_OPEN", {}), ("SUN_CLOSE", {}), ("SUN_PART", {"p": "sun_part"}),
    ("LIGHT_ON", {"l": "light"}), ("LIGHT_OFF", {"l": "light"}),
    ("NAV_GO", {"d": "dest"}), ("NAV_HOME", {}), ("NAV_WORK", {}), ("NAV_ETA", {}),
    ("NAV_CANCEL", {}), ("VOL_SET", {"n": "vol"}), ("VOL_UP", {}), ("VOL_DOWN", {}),
    ("VOL_UP_N", {"n": "vol_delta"}), ("VOL_DOWN_N", {"n": "vol_delta"}), ("VOL_MUTE", {}),
    ("SOURCE_T", {"x": "source"}), ("CALL_T", {"c": "contact"}), ("REDIAL_T", {}),
    ("LOCK", {}), ("UNLOCK", {}), ("LOCK_AGAIN", {}), ("UNLOCK_AGAIN", {}),
    ("ASSIST_ON", {"f": "feature"}), ("ASSIST_OFF", {"f": "feature"}),
    ("AND_TOO", {"x": "other"}), ("ACTUALLY_T", {"t": "temp_or_vol"}),
    ("TURN_IT_OFF_AGAIN", {}), ("TURN_IT_ON_AGAIN", {}), ("CLOSE_IT", {}), ("OPEN_MORE", {}),
    ("HIGHER", {}), ("LOWER", {}),
    ("REFUSE_T", {"country": "country", "a": "number", "b": "number", "city": "city",
                  "topic": "topic", "lang": "lang"}),
]
# Lists of values or replies, not sentence frames.
NOT_FRAMES = {"ONES", "TENS", "TEMPS_ALL", "TEMPS_HELD", "TEMPS_TRAIN", "TEMPS_TRAIN_W",
              "VOL_HELD", "VOL_TRAIN", "WIN_HELD", "WIN_TRAIN", "CONTACTS_TRAIN", "CONTACTS_HELD",
              "PLACES_TRAIN", "PLACES_HELD", "STREETS_TRAIN", "STREETS_HELD", "HOUSE_NUMS_TRAIN",
              "HOUSE_NUMS_HELD", "REFUSALS", "TEMP_UNIT", "COUNTRIES", "TOPICS", "CITIES",
              "LANGS", "PREFIXES", "POLITE_PREFIXES", "SUFFIXES", "ZONE_SUFFIX", "GENERATORS",
              # training-only augmentation of the model's corpus (pseudo-word names, paraphrases):
              # not phrasings a driver uses, so not in the grammar
              "PSEUDO_ONSETS", "PSEUDO_VOWELS", "PSEUDO_CODAS", "TITLES", "PLACE_NOUNS",
              "STREET_TYPES", "PHRASE_GROUPS", "PHRASE_ONE_WAY", "NEUTRAL_FILLERS"}


def check_complete():
    known = {n for n, _ in FRAMES} | NOT_FRAMES
    missing = [n for n, v in vars(g).items() if n.isupper() and isinstance(v, list) and n not in known]
    if missing:
        sys.exit("build_grammar: corpus_phrases.py has frame lists this tool does not know: %s "
                 "(add them to FRAMES or NOT_FRAMES)" % " ".join(missing))


def frame_to_jsgf(frame, slots, stutter=0.0):
    """'set {z} to {t}' -> 'set <zone_all> to <temp>' (literal words normalised, each one
    doubled with probability stutter)."""
    out = []
    for part in re.split(r"(\{\w+\})", frame):
        m = re.fullmatch(r"\{(\w+)\}", part)
        if m:
            out.append("<%s>" % slots[m.group(1)])
        elif part.strip():
            words = normalise(part).split()
            out += [stuttered("(degrees | degree)" if w == "degrees" else w, stutter) for w in words]
    return out


def stuttered(word, p):
    """A literal word (or alternative) said twice with probability p:
    '(/0.99/ ring | /0.01/ ring ring)'; the word itself when p is 0."""
    if p <= 0:
        return word
    return "(/%.4f/ %s | /%.4f/ %s %s)" % (1 - p, word, p, word, word)


def with_hesitations(tokens):
    """Tokens joined with an optional, low-weight hesitation between them."""
    return (" <gap> " if HESITATION_WEIGHT > 0 else " ").join(tokens)


def list_usage():
    """How many of SIM_SENTENCES generated sentences drew a frame from each list (by id):
    gen_corpus.pick counted while dialogues of both splits are generated."""
    counts = collections.Counter()
    real_pick = g.pick

    def counting_pick(rng, items, split):
        counts[id(items)] += 1
        return real_pick(rng, items, split)
    g.pick = counting_pick
    try:
        rng = random.Random(1234)
        n = 0
        while n < SIM_SENTENCES:
            d = g.gen_dialogue(rng, g.HELDOUT if n % 4 == 3 else g.TRAIN)
            n += len(d["turns"])
    finally:
        g.pick = real_pick
    return counts, n


def jsgf_weight(w, top):
    """A weight as sphinxbase's JSGF reader takes it (digits and a point, no exponent),
    relative to the largest of its alternatives (the reader normalises each alternative)."""
    return "/%.4f/" % max(100.0 * w / top, 0.0001)


def weighted(items):
    """A JSGF alternative over (phrase, weight) pairs; equal phrases add their weights."""
    acc = collections.OrderedDict()
    for it, w in items:
        acc[it] = acc.get(it, 0.0) + w
    if len(acc) == 1:
        return next(iter(acc))
    top = max(acc.values())
    return "(" + " | ".join("%s %s" % (jsgf_weight(w, top), it) for it, w in acc.items()) + ")"


def optional(rule, p):
    """[rule] taken with probability p (JSGF's [..] gives 1/2 either way)."""
    return "(/%.4f/ <NULL> | /%.4f/ %s)" % (1 - p, p, rule)


def build(uniform=False, stutter=STUTTER_RATE):
    """The grammar's text and its number of command frames; uniform: no weights and no
    stutters."""
    if uniform:
        stutter = 0.0
    check_complete()
    rules = slot_rules()
    rules["temp_or_vol"] = alts(["<temp>", "<vol>"])
    usage, n_sim = list_usage()
    bodies = []   # (tokens, weight)

    def add_list(items, slots):
        # the list's share of sentences, spread evenly over its phrasings; a list the
        # simulation never drew (only in follow-ups it did not reach) counts as drawn once
        w = max(usage.get(id(items), 0), 1) / n_sim / len(items)
        for frame in items:
            bodies.append((frame_to_jsgf(frame, slots, stutter), w))
    for name, slots in FRAMES:
        add_list(getattr(g, name), slots)
    for f in g.MEDIA.values():
        add_list(f[0], {})
    for f in g.STATUS.values():
        add_list(f, {})
    # climate adjustments: an explicit zone after, "the driver says ..." before statements
    zone_suffix = alts(["(" + " ".join(frame_to_jsgf(z, {"z": "zone"}, stutter)) + ")" for z in g.ZONE_SUFFIX])
    says = alts(["the driver says", "my passenger says", "the kids in the back say"])
    body_w = collections.OrderedDict()
    for b, w in bodies:
        key = with_hesitations(b)
        body_w[key] = body_w.get(key, 0.0) + w
    rules["says"] = says
    rules["zone_suffix"] = zone_suffix
    pre_items = [p.strip() for p in g.PREFIXES + g.POLITE_PREFIXES]
    suf_items = [s.strip() for s in g.SUFFIXES]
    hes = alts(HESITATIONS)
    w_no = 1.0 - HESITATION_WEIGHT
    if uniform:
        pre, suf = alts(pre_items), alts(suf_items)
        top = "[<pre>] [<says>] <body> [<zone_suffix>] [<suf>]"
        body = "\n    | ".join(body_w)
    else:
        pre = weighted([(" ".join(frame_to_jsgf(p, {}, stutter)), 1.0) for p in pre_items])
        suf = weighted([(" ".join(frame_to_jsgf(p, {}, stutter)), 1.0) for p in suf_items])
        top = " ".join([optional("<pre>", P_PREFIX), optional("<says>", P_SAYS), "<body>",
                        optional("<zone_suffix>", P_ZONE_SUFFIX), optional("<suf>", P_SUFFIX)])
        top_w = max(body_w.values())
        body = "\n    | ".join("%s %s" % (jsgf_weight(w, top_w), b) for b, w in body_w.items())
    body_alts = list(body_w)
    lines = ["#JSGF V1.0;", "", "// Generated by tools/voice/build_grammar.py from tools/corpus/gen_corpus.py;",
             "// do not edit by hand.", "grammar cabin;", "",
             "public <command> = %s;" % top,
             "<pre> = %s;" % pre, "<suf> = %s;" % suf,
             "<gap> = /%.3f/ <NULL> | /%.3f/ %s;" % (w_no, HESITATION_WEIGHT, hes) if HESITATION_WEIGHT > 0 else "",
             "<body> = %s;" % body]
    for k, v in rules.items():
        lines.append("<%s> = %s;" % (k, v))
    text = "\n".join(lines) + "\n"
    return text, len(body_alts)


def vocabulary(text):
    body = re.sub(r"//[^\n]*", " ", text.split("grammar cabin;", 1)[1])
    body = re.sub(r"<[^>]*>|/[0-9.]+/|[()\[\]|;=*+]", " ", body)
    return sorted({w for w in body.split() if w != "public"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "assets", "asr", "cabin.gram"))
    ap.add_argument("--words", action="store_true", help="print the grammar's words and exit")
    ap.add_argument("--uniform", action="store_true", help="no weights: every alternative alike")
    ap.add_argument("--stutter", type=float, default=STUTTER_RATE,
                    help="probability that a literal word is said twice (0: no stutters)")
    a = ap.parse_args()
    text, n = build(a.uniform, a.stutter)
    if a.words:
        print("\n".join(vocabulary(text)))
        return
    with open(a.out, "w") as f:
        f.write(text)
    print("build_grammar: %d command frames, %d words -> %s" % (n, len(vocabulary(text)), a.out))


if __name__ == "__main__":
    main()
