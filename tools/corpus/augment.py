"""Training-only augmentation of cabin's corpus generator (gen_corpus.py's --pseudo, --frames,
--spoken-house, --fillers, --one-way, --word-drop, --unknown-words, --synonyms, --extra-frames;
docs/ASSISTANT.md).

Nothing here is used for the held-out split: its random stream and file are the same with any
of these options. What is here: the options' shares (AUGMENT, set by gen_corpus's command line),
pseudo-word names and places, paraphrased frames that are never a reserved (held-out) one
(augment_frame, _reserved_frames), and the per-turn rewrites (drop_word, unknown_word,
synonym_word) that keep every number and slot value's word of the action, and the extra
training frames of extra_frames.json (extra_frames_checked, extra_frame).
"""
import json
import os
import re
import string
import sys

import corpus_phrases
import wordnet
from corpus_phrases import (
    CONTACTS_HELD, DEFROST_TARGET, DROPPABLE, FEATURES, KEEP_WORDS, LIGHT_NAMES, NEUTRAL_FILLERS,
    PART_WORDS, PHRASE_GROUPS, PHRASE_ONE_WAY, PLACE_NOUNS, PLACES_HELD, POLITE_PREFIXES, PREFIXES,
    PSEUDO_CODAS, PSEUDO_ONSETS, PSEUDO_VOWELS, SEAT_LEVEL_WORDS, SEATS, SOURCES, STREET_TYPES,
    STREETS_HELD, SUFFIXES, TITLES, WINDOWS, ZONES)

# None of this is used for the held-out split (its random stream and output are unchanged).
# pseudo: share of contacts, places and streets that are random pseudo-words, so the model
#   learns to copy a name it has never seen into contact=/dest= instead of recalling one it knows;
# frames: share of training frames rewritten by augment_frame (phrase swaps, article dropout);
# spoken_house: share of training addresses whose house number is spoken in words.
# unknown_words: share of training turns given one pseudo-word (inserted, or in place of a word
#   drop_word could remove), so the model learns that a word it has never seen does not change
#   a request it otherwise knows; a refusal gets 1-3 of its words replaced and stays a refusal.
# synonyms: share of training turns in which one word is replaced by a WordNet synonym that no
#   training phrase uses (synonym_word), so the model meets more of the words people use for the
#   same request than the phrase tables hold.
# extra_frames: share of training draws from a phrasing list that take one of the list's extra
#   training frames (extra_frames.json, extra_frame) instead of one of its own training frames.
AUGMENT = {"pseudo": 0.0, "frames": 0.0, "spoken_house": 0.0, "fillers": 0.0, "one_way": 0,
           "word_drop": 0.0, "unknown_words": 0.0, "synonyms": 0.0, "extra_frames": 0.0}


def _held_words():
    w = set()
    for c in CONTACTS_HELD + STREETS_HELD + [p for p, _ in PLACES_HELD]:
        w.update(c.split())
    return w - set(TITLES) - set(PLACE_NOUNS) - set(STREET_TYPES)


HELD_WORDS = None


def pseudo_word(rng):
    """A pronounceable random word of 1-4 syllables that is no word of a held-out value."""
    global HELD_WORDS
    if HELD_WORDS is None:
        HELD_WORDS = _held_words()
    while True:
        n = rng.choice([1, 2, 2, 2, 3, 3, 3, 4])
        w = "".join(rng.choice(PSEUDO_ONSETS) + rng.choice(PSEUDO_VOWELS) for _ in range(n))
        w += rng.choice(PSEUDO_CODAS)
        if 2 <= len(w) <= 12 and w not in HELD_WORDS and w not in ("home", "work"):
            return w


def pseudo_contact(rng):
    r = rng.random()
    if r < 0.55:
        return pseudo_word(rng)
    if r < 0.8:
        return rng.choice(TITLES) + " " + pseudo_word(rng)
    return pseudo_word(rng) + " " + pseudo_word(rng)


def pseudo_place(rng):
    """-> (words, takes an article)."""
    r = rng.random()
    if r < 0.6:
        return pseudo_word(rng) + " " + rng.choice(PLACE_NOUNS), rng.random() < 0.6
    if r < 0.8:
        return pseudo_word(rng), rng.random() < 0.5
    return pseudo_word(rng) + " " + pseudo_word(rng) + " " + rng.choice(PLACE_NOUNS), rng.random() < 0.5


def pseudo_street(rng):
    return pseudo_word(rng) + " " + rng.choice(STREET_TYPES)


RESERVED_FRAMES = None


def _named_lists():
    """(name, list) for every phrasing list of corpus_phrases, nested ones included, named as
    Python spells them ("CALL_T", "STATUS['doors']", "MEDIA['next'][0]")."""
    out = []

    def walk(name, v):
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            out.append((name, v))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk("%s[%r]" % (name, k), x)
        elif isinstance(v, tuple):
            for j, x in enumerate(v):
                walk("%s[%d]" % (name, j), x)

    for k, v in vars(corpus_phrases).items():
        if not k.startswith("_"):
            walk(k, v)
    return out


def _reserved_frames():
    """Every held-out frame of every phrasing list (index % 4 == 3 of lists of 4 or more)."""
    return {lst[i] for _, lst in _named_lists() if len(lst) >= 4 for i in range(3, len(lst), 4)}


def augment_frame(rng, t):
    """A paraphrase of training frame t: one or two phrase swaps, sometimes an article or
    'please' dropped. Never returns a reserved (held-out) frame."""
    global RESERVED_FRAMES
    if RESERVED_FRAMES is None:
        RESERVED_FRAMES = _reserved_frames()
    orig = t
    for _ in range(rng.choice([1, 1, 2])):
        padded = " " + t + " "
        hits = [(g, ph) for g in PHRASE_GROUPS for ph in g if (" " + ph + " ") in padded]
        if AUGMENT["one_way"]:
            hits += [([ph] + alts, ph) for ph, alts in PHRASE_ONE_WAY if (" " + ph + " ") in padded]
        if not hits:
            break
        g, ph = rng.choice(hits)
        alt = rng.choice([x for x in g if x != ph])
        padded = padded.replace(" " + ph + " ", " " + alt + " ", 1)
        t = padded.strip()
    if rng.random() < 0.3:
        words = t.split(" ")
        keep = [w for w in words if not (w in DROPPABLE and rng.random() < 0.5)]
        if keep and any("{" not in w for w in keep):
            t = " ".join(keep)
    if t in RESERVED_FRAMES or not t.strip():
        return orig
    return t


def action_value_words(rep):
    """The words of the slot values of reply rep's action line ("contact=aunt_maria" -> aunt, maria)."""
    act = rep.split("</act>")[0]
    words = set()
    for tok in act.replace("<act>", " ").split():
        if "=" in tok:
            words.update(tok.split("=", 1)[1].split("_"))
    return words


def drop_word(rng, user, rep):
    """The user text with one word removed (training only): a word that is not a number, not
    one of KEEP_WORDS and not part of a slot value the action line names. The model learns to
    read every cue of a request rather than lean on one exact frame."""
    value_words = action_value_words(rep)
    words = user.split(" ")
    if len(words) < 3:
        return user
    cand = [i for i, w in enumerate(words)
            if w not in KEEP_WORDS and w not in value_words and not any(c.isdigit() for c in w)
            and "{" not in w]
    if not cand:
        return user
    i = rng.choice(cand)
    return " ".join(words[:i] + words[i + 1:])


def unknown_word(rng, user, rep):
    """The user text with one pseudo-word (training only): in place of a word drop_word could
    remove (a third of the time) or inserted between two words, never next to a slot value's
    word or a number, so a copied name or number stays whole and the action stays true.
    A refusal (action none) gets 1-3 of its words replaced instead."""
    value_words = action_value_words(rep)
    words = user.split(" ")

    def fixed(w):
        return w in value_words or any(c.isdigit() for c in w) or "{" in w

    if rep.startswith("<act>none</act>"):
        # a refusal stays one with unknown words in place of 1-3 of its own (a request for
        # something the model has never heard of is outside the car, not a car command)
        cand = [i for i, w in enumerate(words) if not fixed(w)]
        for i in rng.sample(cand, min(len(cand), rng.choice([1, 2, 2, 3]))):
            words[i] = pseudo_word(rng)
        return " ".join(words)
    new = pseudo_word(rng)
    if rng.random() < 1 / 3:
        cand = [i for i, w in enumerate(words) if w not in KEEP_WORDS and not fixed(w)]
        if cand and len(words) >= 3:
            i = rng.choice(cand)
            return " ".join(words[:i] + [new] + words[i + 1:])
    gaps = [i for i in range(len(words) + 1)
            if (i == 0 or not fixed(words[i - 1])) and (i == len(words) or not fixed(words[i]))]
    if not gaps:
        return user
    i = rng.choice(gaps)
    return " ".join(words[:i] + [new] + words[i:])


# Words synonym_word never replaces: function words (their WordNet "synonyms" are other senses:
# "it" -> "information technology", "here" -> "hera") and the words of the fillers, prefixes and
# suffixes around a request ("like" -> "wish", "well" -> "swell"), besides KEEP_WORDS, numbers
# and slot values: only the words of the request itself.
SYNONYM_SKIP = set("""the a an it its it's i i'm i'd me my you your we us our to of in at for and or
is are be can could would will here there this that""".split()) | \
    set(" ".join(NEUTRAL_FILLERS + PREFIXES + POLITE_PREFIXES + SUFFIXES).split()) | \
    set(" ".join(w for table in (ZONES, SEATS, WINDOWS, DEFROST_TARGET, SEAT_LEVEL_WORDS, PART_WORDS,
                                 LIGHT_NAMES, SOURCES, FEATURES)
                 for names in table.values() for w in names).split())   # slot names: "back", "whole"
SYNONYM_SENSES = 2      # a word's most frequent senses (per part of speech) whose lemmas are used
WORDNET = None          # wordnet.WordNet, loaded on first use
DOMAIN_WORDS = None     # every word of the phrase tables outside the held-out frames


def _domain_words():
    reserved = _reserved_frames()
    words = set()

    def walk(v):
        if isinstance(v, str):
            if v not in reserved:
                words.update(re.findall(r"[a-z']+", v.lower()))
        elif isinstance(v, (list, tuple, set)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)

    for k, v in vars(corpus_phrases).items():
        if not k.startswith("_"):
            walk(v)
    return words


def synonym_word(rng, user, rep):
    """The user text with one word replaced by a WordNet synonym (training only): one of the
    lemmas of the word's SYNONYM_SENSES most frequent senses that shares no word with the phrase
    tables (outside the held-out frames) or with a held-out value, so "time left" may become
    "time remaining" but "seat" never "rear". Numbers, slot values, KEEP_WORDS (direction,
    state, amount) and SYNONYM_SKIP (function words, fillers, the names of zones, seats,
    windows, lights, sources, features) stay. WordNet mixes senses ("volume" -> "bulk"): the action
    stays true either way, as with unknown_word's pseudo-words."""
    global WORDNET, DOMAIN_WORDS, HELD_WORDS
    if WORDNET is None:
        if not wordnet.available():
            sys.exit("gen_corpus: --synonyms needs WordNet: %s is missing (Debian package "
                     "wordnet-base; tools/install-deps.sh installs it)" % wordnet.WORDNET_DIR)
        WORDNET = wordnet.WordNet()
        DOMAIN_WORDS = _domain_words()
        if HELD_WORDS is None:
            HELD_WORDS = _held_words()
    value_words = action_value_words(rep)
    words = user.split(" ")
    options = []
    for i, w in enumerate(words):
        if (w in value_words or w in KEEP_WORDS or w in SYNONYM_SKIP or len(w) < 3
                or not re.fullmatch(r"[a-z]+", w)):
            continue
        syns = [s for s in WORDNET.synonyms(w, SYNONYM_SENSES)
                if re.fullmatch(r"[a-z]+( [a-z]+)?", s) and w not in s.split()
                and not any(x in DOMAIN_WORDS or x in HELD_WORDS for x in s.split())]
        if syns:
            options.append((i, syns))
    if not options:
        return user
    i, syns = rng.choice(options)
    return " ".join(words[:i] + [rng.choice(syns)] + words[i + 1:])


# ---------------------------------------------------------------------------- extra frames
# extra_frames.json: {"LIST": [frame, ...]} more training frames for the phrasing lists of
# corpus_phrases, named as Python spells the list ("CALL_T", "STATUS['doors']",
# "MEDIA['next'][0]"). They were written by writers who saw each list's meaning,
# placeholders and training frames and nothing else: not the reserved (held-out) frames, the
# held-out set or any model's errors. Training only: the held-out split never draws them.
# extra_frames_batch2.json .. batch4.json: later batches written the same way, each with the
# earlier batches' kept frames among the examples (gen_corpus.py --extra-frames-file, which sets
# EXTRA_FRAMES_PATH to a list of files; make model uses all four, docs/ASSISTANT.md).
EXTRA_FRAMES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "extra_frames.json")
EXTRA_BY_ID = None      # id(phrasing list) -> [extra frame, ...] (after extra_frames_checked)


def _placeholders(frame):
    return frozenset(f for _, f, _, _ in string.Formatter().parse(frame) if f is not None)


def one_word_apart(a, b):
    """True if frames a and b are equal or differ by one word put in, left out or replaced."""
    a, b = a.split(), b.split()
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) <= 1
    if len(a) > len(b):
        a, b = b, a
    return len(b) == len(a) + 1 and any(b[:i] + b[i + 1:] == a for i in range(len(b)))


def extra_frames_checked(path=None):
    """{list name: [frame]} of the extra frames that keep the list's form, and the ones left out
    with the reason: a frame must use exactly the placeholders of the list's own frames (any of
    them, for lists whose frames differ, as REFUSE_T's), be lower-case words and apostrophes,
    have no digits and no number word (numbers come from placeholders: a stray "one" would be
    copied into a slot), be no frame of the list already, and be no reserved frame nor one
    word from one (one_word_apart: the held-out frames stay as far from training as the
    phrase tables alone put them)."""
    global RESERVED_FRAMES
    if RESERVED_FRAMES is None:
        RESERVED_FRAMES = _reserved_frames()
    paths = path or EXTRA_FRAMES_PATH
    extra = {}
    for p in [paths] if isinstance(paths, str) else paths:    # one file or several, merged
        with open(p) as f:
            for name, frames in json.load(f).items():
                extra.setdefault(name, []).extend(frames)
    lists = dict(_named_lists())
    number_words = set(corpus_phrases.ONES) | set(corpus_phrases.TENS) | {
        "hundred", "half", "quarter", "quarters", "zero", "first", "second", "third", "double",
        "single", "couple", "dozen"}
    kept, dropped = {}, []
    for name, frames in extra.items():
        if name not in lists:
            dropped += [(name, fr, "no such list") for fr in frames]
            continue
        own = lists[name]
        shapes = {_placeholders(x) for x in own}
        allowed = frozenset().union(*shapes)
        ok = []
        for fr in frames:
            ph = _placeholders(fr)
            words = re.sub(r"\{[a-z]+\}", " ", fr).split()
            if (ph not in shapes) if len(shapes) == 1 else not ph <= allowed:
                why = "placeholders"
            elif not re.fullmatch(r"[a-z' ]*(\{[a-z]+\}[a-z' ]*)*", fr) or "  " in fr or fr != fr.strip():
                why = "characters"
            elif any(w in number_words for w in words):
                why = "number word"
            elif any(one_word_apart(fr, r) for r in RESERVED_FRAMES):
                why = "a reserved frame or one word from one"
            elif fr in own or fr in ok:
                why = "repeated"
            else:
                ok.append(fr)
                continue
            dropped.append((name, fr, why))
        kept[name] = ok
    return kept, dropped


def extra_frame(rng, items):
    """An extra training frame for phrasing list items, or None (share AUGMENT["extra_frames"]
    of the draws from a list that has extra frames)."""
    global EXTRA_BY_ID
    if EXTRA_BY_ID is None:
        kept, _ = extra_frames_checked(EXTRA_FRAMES_PATH)
        EXTRA_BY_ID = {id(lst): kept[name] for name, lst in _named_lists() if kept.get(name)}
    frames = EXTRA_BY_ID.get(id(items))
    if frames and rng.random() < AUGMENT["extra_frames"]:
        return rng.choice(frames)
    return None
