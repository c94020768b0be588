#!/usr/bin/python3
"""Deterministic generator of in-car assistant dialogues for cabin's embedded model.

Output: JSONL, one dialogue per line: {"turns": [{"user": "...", "reply": "..."}, ...]}.
A reply is `<act>ACTION</act> SENTENCE` (grammar in docs/ASSISTANT.md).

Held-out split: every phrasing list (sentence frames) reserves every fourth entry (index % 4 == 3)
for the held-out set, and several slot-value lists (temperatures, volumes, window positions,
contacts, destinations, street numbers) reserve values that never occur in training. Held-out
dialogues draw only from held-out phrasings (where a list has any) and often from held-out
values, so the evaluation measures generalisation, not recall.

Training-only augmentation (off by default; docs/ASSISTANT.md): --pseudo P (pseudo-word
contacts/places/streets), --frames P (paraphrased frames, never a reserved one), --spoken-house P,
--fillers P, --one-way 1, --word-drop P (one word of a turn dropped, never a number, a slot
value's word or one that carries the direction or state: drop_word), --unknown-words P (one
pseudo-word put into a turn: unknown_word), and --decontaminate 1 (no
training dialogue repeats a held-out user text). None of them changes the held-out file.

usage: gen_corpus.py [--train N] [--heldout N] [--seed S] [--train-out PATH] [--heldout-out PATH]
                     [--no-heldout] [--pseudo P] [--frames P] [--spoken-house P] [--fillers P]
                     [--one-way 0|1] [--word-drop P] [--unknown-words P] [--decontaminate 0|1]
"""
import argparse
import json
import os
import random

# ---------------------------------------------------------------------------- numbers in words
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def int_words(n):
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    return "one hundred"  # known flaw: 101-199 are all "one hundred" (kept so the shipped corpus regenerates)


def fmt_num(x):
    """Slot form of a number: digits, '.5' kept, whole numbers without a point."""
    return str(int(x)) if float(x).is_integer() else ("%.1f" % x)


def spoken_num(rng, x):
    """A number as speech recognition might deliver it: digits or words."""
    whole = float(x).is_integer()
    if rng.random() < 0.5:
        return fmt_num(x)
    if whole:
        return int_words(int(x))
    w = int_words(int(x))
    return rng.choice([w + " point five", w + " and a half", w + " point five"])


# ---------------------------------------------------------------------------- the split
HELDOUT = "heldout"
TRAIN = "train"


def pick(rng, items, split):
    """A template from a phrasing list: index % 4 == 3 is held out (lists of 4 or more).
    Training frames are often paraphrased further (augment_frame); held-out frames never are,
    and the held-out draws consume the random stream exactly as before."""
    if len(items) < 4:
        t = rng.choice(items)
    else:
        idx = [i for i in range(len(items)) if (i % 4 == 3) == (split == HELDOUT)]
        t = items[rng.choice(idx)]
    if split == TRAIN and AUGMENT["frames"] > 0 and rng.random() < AUGMENT["frames"]:
        t = augment_frame(rng, t)
    return t


def pick_syn(rng, items):
    """A word from a closed synonym list (zone, seat, window, light, feature, source, level
    names): the app's fixed vocabulary, known to both splits; only sentence frames and
    open-class values (numbers, names, places) are held out."""
    return rng.choice(items)


def pick_value(rng, train_vals, held_vals, split, p_held=0.6):
    if split == HELDOUT and held_vals and rng.random() < p_held:
        return rng.choice(held_vals)
    return rng.choice(train_vals)


# ---------------------------------------------------------------------------- slot vocabularies
TEMPS_ALL = [t / 2 for t in range(32, 61)]           # 16.0 .. 30.0 by 0.5
TEMPS_HELD = [21.0, 24.5, 27.0, 18.5]
TEMPS_TRAIN = [t for t in TEMPS_ALL if t not in TEMPS_HELD]
# Whole degrees are far more common in speech; weight them.
TEMPS_TRAIN_W = [t for t in TEMPS_TRAIN for _ in range(3 if float(t).is_integer() else 1)]

VOL_HELD = [13, 27]
VOL_TRAIN = [v for v in range(0, 31) if v not in VOL_HELD]
WIN_HELD = [35, 65, 15]
WIN_TRAIN = [p for p in range(5, 100, 5) if p not in WIN_HELD]

ZONES = {  # slot -> spoken forms (after "for"/"on" etc. the template supplies the glue)
    "driver": ["the driver side", "my side", "the driver's side", "the driver"],
    "passenger": ["the passenger side", "the passenger", "my passenger", "the passenger's side"],
    "rear": ["the back", "the rear", "the back seats", "the rear seats"],
}
SEATS = {
    "driver": ["my seat", "the driver seat", "the driver's seat", "my"],
    "passenger": ["the passenger seat", "the passenger's seat", "my passenger's seat", "the passenger"],
}
WINDOWS = {
    "driver": ["my window", "the driver window", "the driver's window", "the driver side window"],
    "passenger": ["the passenger window", "the passenger side window", "the passenger's window",
                  "the window on the passenger side"],
    "rear_left": ["the rear left window", "the back left window", "the left rear window",
                  "the left back window"],
    "rear_right": ["the rear right window", "the back right window", "the right rear window",
                   "the right back window"],
    "all": ["all the windows", "the windows", "every window", "all windows"],
}

CONTACTS_TRAIN = [
    "mom", "dad", "anna", "ben", "carlos", "diana", "eric", "fatima", "george", "hannah", "ivan",
    "julia", "kevin", "laura", "mike", "nina", "oscar", "paula", "quentin", "rachel", "sam",
    "tina", "victor", "wendy", "yusuf", "zoe", "grandma", "grandpa", "uncle bob", "aunt lisa",
    "dr patel", "the office", "jake", "emma", "liam", "olivia", "noah", "ava", "lucas", "mia",
    "ethan", "sofia", "daniel", "chloe", "ahmed", "priya", "kenji", "mei", "lars", "ingrid",
    "pedro", "lucia", "tom", "sarah", "peter", "claire", "martin", "sophie", "frank", "helen",
    "my wife", "my husband", "my boss", "coach miller", "aunt rosa", "uncle jim", "dr smith",
    "marco", "elena", "omar", "leila", "tobias", "greta", "felix", "nora", "simon", "alice",
    "robert", "linda", "hugo", "clara", "jonas", "maya", "theo", "ruby", "adam", "eva", "max",
    "lena", "paul", "rosa", "jan", "ida", "karl", "vera", "luke", "amy", "dave", "kate",
]
CONTACTS_HELD = [
    "aunt maria", "bartholomew", "svetlana", "uncle teodor", "dr okafor", "rafaela", "gwendolyn",
    "mustafa", "beatrix", "cornelius", "ximena", "oluwaseun", "magnus", "henrietta", "grandma jo",
    "ludmila", "coach rivera", "isadora", "thaddeus", "wilhelmina",
]

PLACES_TRAIN = [  # (spoken words, takes an article)
    ("central station", True), ("airport", True), ("city hospital", True), ("main street", False),
    ("union square", False), ("harbor bridge", True), ("oak park mall", True),
    ("lakeside gym", True), ("public library", True), ("train station", True),
    ("football stadium", True), ("old town", False), ("city center", True), ("beach", True),
    ("zoo", True), ("museum of art", True), ("university", True), ("pharmacy", True),
    ("supermarket", True), ("gas station", True), ("charging station", True), ("bakery", True),
    ("dentist", True), ("post office", True), ("hotel astoria", False), ("river park", False),
    ("north mall", True), ("west end", True), ("fire station", True), ("grand theater", True),
    ("cinema", True), ("bus station", True), ("market hall", True), ("sunset boulevard", False),
    ("pine lake", False), ("maple avenue", False), ("hilltop cafe", True), ("city hall", False),
    ("kings cross", False), ("ferry terminal", True), ("convention center", True),
    ("golf club", True), ("ice rink", True), ("school", True), ("kindergarten", True),
    ("office park", True), ("botanical garden", True), ("swimming pool", True),
    ("parking garage", True), ("car wash", True), ("mountain lodge", True), ("marina", True),
    ("stadium", True), ("harbor", True), ("castle", True), ("vet", True), ("garage", True),
]
PLACES_HELD = [
    ("riverside clinic", True), ("elmwood cemetery", True), ("quayside market", True),
    ("lighthouse point", False), ("orchard plaza", False), ("velodrome", True),
    ("observatory", True), ("cathedral square", False), ("brewery", True),
    ("aquarium", True), ("tennis center", True), ("willow creek", False),
    ("chestnut hall", False), ("planetarium", True), ("greenfield outlet", True),
]
STREETS_TRAIN = ["elm street", "baker street", "high street", "park lane", "church road",
                 "mill road", "station road", "king street", "queen street", "bridge street",
                 "lake road", "forest avenue", "oak street", "cedar lane", "hill road"]
STREETS_HELD = ["juniper way", "falcon drive", "copper row", "heron close", "tamarind street"]
HOUSE_NUMS_TRAIN = [n for n in range(1, 200) if n % 7 != 3]
HOUSE_NUMS_HELD = [n for n in range(1, 200) if n % 7 == 3]


def slotify(words):
    return words.replace("'", "").replace(" ", "_")


def pick_contact(rng, split):
    if split == TRAIN and AUGMENT["pseudo"] > 0 and rng.random() < AUGMENT["pseudo"]:
        c = pseudo_contact(rng)
        return c, slotify(c)
    c = pick_value(rng, CONTACTS_TRAIN, CONTACTS_HELD, split)
    return c, slotify(c)


def pick_place(rng, split):
    """-> (spoken, slot). Spoken may carry 'the'; addresses carry a house number."""
    if rng.random() < 0.15:
        if split == TRAIN and AUGMENT["pseudo"] > 0 and rng.random() < AUGMENT["pseudo"]:
            street = pseudo_street(rng)
        else:
            street = pick_value(rng, STREETS_TRAIN, STREETS_HELD, split)
        num = pick_value(rng, HOUSE_NUMS_TRAIN, HOUSE_NUMS_HELD, split, 0.7)
        if split == TRAIN and AUGMENT["spoken_house"] > 0 and rng.random() < AUGMENT["spoken_house"]:
            return "%s %s" % (int_words(num), street), slotify("%d %s" % (num, street))
        return "%d %s" % (num, street), slotify("%d %s" % (num, street))
    if split == TRAIN and AUGMENT["pseudo"] > 0 and rng.random() < AUGMENT["pseudo"]:
        name, article = pseudo_place(rng)
    else:
        name, article = pick_value(rng, PLACES_TRAIN, PLACES_HELD, split)
    spoken = ("the " + name) if article and rng.random() < 0.85 else name
    return spoken, slotify(name)


# ---------------------------------------------------------------------------- training-only augmentation
# None of this is used for the held-out split (its random stream and output are unchanged).
# pseudo: share of contacts, places and streets that are random pseudo-words, so the model
#   learns to copy a name it has never seen into contact=/dest= instead of recalling one it knows;
# frames: share of training frames rewritten by augment_frame (phrase swaps, article dropout);
# spoken_house: share of training addresses whose house number is spoken in words.
# unknown_words: share of training turns given one pseudo-word (inserted, or in place of a word
#   drop_word could remove), so the model learns that a word it has never seen does not change
#   a request it otherwise knows; a refusal gets 1-3 of its words replaced and stays a refusal.
AUGMENT = {"pseudo": 0.0, "frames": 0.0, "spoken_house": 0.0, "fillers": 0.0, "one_way": 0,
           "word_drop": 0.0, "unknown_words": 0.0}

PSEUDO_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v",
                 "w", "y", "z", "br", "ch", "sh", "th", "st", "tr", "gr", "kl", "pr", "dr", "fl",
                 "sl", "bl", "kr", "sk", "", ""]
PSEUDO_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ou", "ee", "oo", "ia", "y", "au"]
PSEUDO_CODAS = ["", "", "", "", "n", "r", "l", "s", "m", "k", "th", "nd", "st", "x", "sh", "t", "d"]
TITLES = ["aunt", "uncle", "dr", "coach", "grandma", "grandpa", "cousin", "mr", "mrs", "miss",
          "professor", "nurse", "officer", "pastor", "captain", "sister", "brother"]
PLACE_NOUNS = ["station", "park", "mall", "square", "plaza", "center", "market", "hall", "clinic",
               "hospital", "library", "gym", "cafe", "hotel", "museum", "garden", "gardens",
               "bridge", "tower", "point", "creek", "lake", "hill", "bay", "port", "gate", "court",
               "field", "arena", "church", "school", "outlet", "theater", "lodge", "harbor",
               "pier", "farm", "camp", "mill", "yard", "terminal", "stadium", "college", "bakery",
               "pharmacy", "diner", "inn", "heights", "village", "springs", "falls", "beach",
               "studio", "campus", "tavern", "gallery", "pavilion", "chapel", "cemetery",
               "office", "factory", "depot", "warehouse", "marina", "zoo", "rink", "pool", "spa"]
STREET_TYPES = ["street", "road", "lane", "avenue", "way", "drive", "row", "close", "court",
                "place", "boulevard", "crescent", "terrace", "grove", "hill", "walk", "parkway"]


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


# Interchangeable phrases for training frames (meaning-preserving in every frame they occur in).
# A rewritten frame that equals any reserved (held-out) frame is thrown away.
PHRASE_GROUPS = [
    ["turn on", "switch on"], ["turn off", "switch off", "shut off"],
    ["turn up the", "raise the", "crank up the"], ["turn down the", "lower the", "bring down the"],
    ["turn it up", "crank it up"], ["turn it down", "bring it down"],
    ["increase", "raise", "boost"], ["decrease", "reduce", "cut"],
    ["music", "tunes"], ["song", "track", "tune"], ["volume", "sound"],
    ["temperature", "temp"], ["fan", "blower"],
    ["can you", "could you", "would you", "will you"], ["i want", "i'd like", "i need"],
    ["a bit", "a little", "a tad", "slightly", "a touch"], ["close", "shut"],
    ["cold", "chilly"], ["freezing", "frozen"], ["warmer", "hotter"], ["cooler", "colder"],
    ["navigation", "guidance"], ["take me", "bring me", "get me", "drive me"],
    ["tyre", "tire"], ["tyres", "tires"], ["gas", "fuel", "petrol"], ["check", "inspect"],
    ["enable", "activate", "engage"], ["disable", "deactivate", "disengage"],
    ["start", "begin"], ["stop", "halt"], ["defroster", "demister", "defogger"],
    ["fogged up", "misted up", "steamed up"], ["defrost", "defog", "demist"],
    ["the car", "the vehicle"], ["air conditioning", "air conditioner", "air con"],
    ["what's", "what is"], ["it's", "it is"], ["i'm", "i am"], ["don't", "do not"],
    ["can't", "cannot"], ["set", "change", "adjust"], ["how long", "how much time"],
    ["directions", "the route"], ["really", "very", "so"], ["in here", "inside"],
]
# One-way rewrites (the reverse would change the meaning somewhere): in a volume frame the
# volume may be called the music or the audio.
PHRASE_ONE_WAY = [("the volume", ["the music", "the audio"]), ("volume", ["audio"])]
# Words a speaker may add anywhere without changing the request (training only).
NEUTRAL_FILLERS = ["basically", "kinda", "maybe", "just", "really", "quickly", "so", "like",
                   "you know", "i guess", "i think", "right", "yeah", "oh", "man", "okay so",
                   "hmm", "well", "actually", "sort of", "erm", "ah"]
DROPPABLE = {"the", "please", "a", "some", "just"}
RESERVED_FRAMES = None


def _reserved_frames():
    """Every held-out frame of every phrasing list (index % 4 == 3 of lists of 4 or more)."""
    out = set()

    def add(lst):
        if isinstance(lst, list) and len(lst) >= 4 and all(isinstance(x, str) for x in lst):
            out.update(lst[i] for i in range(3, len(lst), 4))

    for v in list(globals().values()):
        add(v)
        if isinstance(v, dict):
            for x in v.values():
                add(x)
                if isinstance(x, tuple):
                    for y in x:
                        add(y)
    return out


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


# ---------------------------------------------------------------------------- replies
def reply(action, sentence):
    return "<act>%s</act> %s" % (action, sentence)


REFUSALS = [
    "Sorry, I can only help with the car.",
    "I can't help with that, but I can control the car for you.",
    "Sorry, that's outside what I can do. I handle the car's controls.",
    "I'm only able to help with things in the car.",
    "Sorry, I can't answer that. Ask me about the car instead.",
    "That's not something I can do. I can help with climate, media, navigation and more.",
]

# ---------------------------------------------------------------------------- intents
# Each generator: (rng, split, ctx) -> (user, reply, new_ctx). ctx describes the previous turn
# so that follow-ups ("a bit warmer", "and the passenger side too") can refer to it.

TEMP_UNIT = ["", " degrees", " degrees", " degrees celsius", " celsius"]


def temp_phrase(rng, t):
    return spoken_num(rng, t) + rng.choice(TEMP_UNIT)


def zone_sentence(zone):
    return {"all": "", "driver": " on the driver side", "passenger": " on the passenger side",
            "rear": " in the back"}[zone]


CLIMATE_SET_T = [
    "set the temperature to {t}", "make it {t}", "set it to {t}", "temperature {t}",
    "change the temperature to {t}", "i want it at {t}", "put the heat at {t}", "set climate to {t}",
    "can you make it like {t}", "adjust the temperature to {t}", "set the cabin to {t}",
    "i'd like {t} in here", "bring the temperature to {t}", "make the car {t}", "heat it to {t}",
    "turn the temperature to {t}",
]
CLIMATE_SET_ZONE_T = [
    "set {z} to {t}", "make {z} {t}", "set the temperature for {z} to {t}", "{z} to {t}",
    "change {z} temperature to {t}", "put {z} at {t}", "i want {z} at {t}",
    "set the heat on {z} to {t}", "make it {t} for {z}", "temperature on {z} {t}",
    "bring {z} to {t}", "can {z} be {t}",
]


def gen_climate_set(rng, split, ctx):
    t = pick_value(rng, TEMPS_TRAIN_W, TEMPS_HELD, split)
    if rng.random() < 0.4:
        zone = "all"
        user = pick(rng, CLIMATE_SET_T, split).format(t=temp_phrase(rng, t))
    else:
        zone = rng.choice(["driver", "passenger", "rear", "all"])
        zs = pick_syn(rng, ZONES[zone]) if zone != "all" else rng.choice(["everywhere", "all zones", "the whole car", "every zone"])
        user = pick(rng, CLIMATE_SET_ZONE_T, split).format(z=zs, t=temp_phrase(rng, t))
    s = rng.choice(["Setting the temperature to %s degrees%s.", "Temperature set to %s degrees%s.",
                    "Okay, %s degrees%s."]) % (fmt_num(t), zone_sentence(zone))
    return user, reply("climate.set zone=%s temp=%s" % (zone, fmt_num(t)), s), \
        {"kind": "climate", "zone": zone, "temp": t}


WARMER_VAGUE = ["a bit warmer", "warmer please", "make it warmer", "a little warmer",
                "turn up the heat", "warmer", "can you make it warmer", "bit warmer",
                "a tad warmer", "raise the temperature a bit", "heat it up a little",
                "i'd like it warmer"]
COOLER_VAGUE = ["a bit cooler", "cooler please", "make it cooler", "a little cooler",
                "turn down the heat", "cooler", "can you make it cooler", "bit colder",
                "a tad cooler", "lower the temperature a bit", "cool it down a little",
                "i'd like it cooler"]
WARMER_N = ["{n} degrees warmer", "raise the temperature by {n} degrees",
            "turn the heat up {n} degrees", "up {n} degrees", "make it {n} degrees warmer",
            "increase the temperature by {n}", "warmer by {n} degrees", "bump it up {n} degrees"]
COOLER_N = ["{n} degrees cooler", "lower the temperature by {n} degrees",
            "turn the heat down {n} degrees", "down {n} degrees", "make it {n} degrees cooler",
            "decrease the temperature by {n}", "cooler by {n} degrees", "drop it {n} degrees"]
COLD_STATEMENTS = ["it's cold in here", "i'm freezing", "i'm cold", "it's freezing in here",
                   "brr it's chilly", "it's really cold", "i'm a bit cold", "it's too cold",
                   "i am so cold", "it's chilly in here", "my hands are freezing",
                   "it is way too cold in here"]
HOT_STATEMENTS = ["it's hot in here", "i'm too warm", "i'm sweating", "it's boiling in here",
                  "it's stuffy in here", "it's really hot", "i'm a bit warm", "it's too hot",
                  "i am so hot", "it's warm in here", "it feels like an oven in here",
                  "it is way too hot in here"]
ZONE_SUFFIX = [" for {z}", " on {z}", " for {z} please", " on {z} only"]


def gen_climate_adjust(rng, split, ctx):
    zone = ctx.get("zone", "all") if ctx.get("kind") == "climate" else "all"
    r = rng.random()
    if r < 0.3:
        up = rng.random() < 0.5
        user = pick(rng, WARMER_VAGUE if up else COOLER_VAGUE, split)
        d = 1
    elif r < 0.55:
        up = rng.random() < 0.5
        d = rng.choice([1, 2, 2, 3, 4, 5])
        user = pick(rng, WARMER_N if up else COOLER_N, split).format(n=spoken_num(rng, d))
        if d == 1:
            user = user.replace("degrees", "degree")
    else:
        up = rng.random() < 0.5
        user = pick(rng, COLD_STATEMENTS if up else HOT_STATEMENTS, split)
        d = 2
    if r < 0.55 and rng.random() < 0.3:   # an explicit zone overrides the context
        zone = rng.choice(["driver", "passenger", "rear"])
        user += pick(rng, ZONE_SUFFIX, split).format(z=pick_syn(rng, ZONES[zone]))
    elif r >= 0.55 and rng.random() < 0.2:
        zone = rng.choice(["driver", "passenger", "rear"])
        user = {"driver": "the driver says ", "passenger": "my passenger says ",
                "rear": "the kids in the back say "}[zone] + user
    delta = ("+%d" if up else "-%d") % d
    s = ("Warming it up%s." if up else "Cooling it down%s.") % zone_sentence(zone)
    if rng.random() < 0.4:
        s = ("Raising the temperature by %d degree%s%s." if up else
             "Lowering the temperature by %d degree%s%s.") % (d, "" if d == 1 else "s", zone_sentence(zone))
    newctx = {"kind": "climate", "zone": zone}
    if ctx.get("kind") == "climate" and "temp" in ctx and ctx.get("zone") == zone:
        newctx["temp"] = min(30.0, max(16.0, ctx["temp"] + (d if up else -d)))
    return user, reply("climate.adjust zone=%s delta=%s" % (zone, delta), s), newctx


FAN_LEVEL = ["set the fan to {n}", "fan speed {n}", "fan to {n}", "put the fan on {n}",
             "change the fan speed to {n}", "blower to {n}", "set the blower to level {n}",
             "fan level {n}", "make the fan {n}", "turn the fan to {n}", "i want fan speed {n}",
             "adjust the fan to {n}"]
FAN_UP = ["turn up the fan", "more fan", "fan up", "increase the fan speed", "stronger fan",
          "more air please", "blow harder", "crank the fan a bit", "speed up the fan",
          "a bit more air", "fan higher", "raise the fan"]
FAN_DOWN = ["turn down the fan", "less fan", "fan down", "decrease the fan speed",
            "weaker fan", "less air please", "the fan is too loud", "lower the fan a bit",
            "slow down the fan", "a bit less air", "fan lower", "reduce the fan"]
FAN_OFF = ["turn off the fan", "fan off", "stop the fan", "switch the fan off"]
FAN_MAX = ["max fan", "fan on full", "full blast", "fan all the way up"]


def gen_climate_fan(rng, split, ctx):
    r = rng.random()
    if r < 0.45:
        n = rng.randint(1, 7)
        user = pick(rng, FAN_LEVEL, split).format(n=spoken_num(rng, n))
        a, s = "climate.fan level=%d" % n, rng.choice(["Fan set to %d.", "Setting the fan to level %d."]) % n
    elif r < 0.8:
        up = rng.random() < 0.5
        user = pick(rng, FAN_UP if up else FAN_DOWN, split)
        a = "climate.fan delta=%s" % ("+1" if up else "-1")
        s = rng.choice(["Turning the fan up.", "More air coming."] if up else
                       ["Turning the fan down.", "Less air."])
    elif r < 0.9:
        user = pick(rng, FAN_OFF, split)
        a, s = "climate.fan level=0", "Turning the fan off."
    else:
        user = pick(rng, FAN_MAX, split)
        a, s = "climate.fan level=7", "Fan at maximum."
    return user, reply(a, s), {"kind": "fan"}


AC_ON = ["turn on the ac", "ac on", "switch on the air conditioning", "turn the a c on",
         "start the air con", "i need some ac", "enable air conditioning", "put the ac on",
         "can we get the air conditioning going", "turn on the air conditioner",
         "activate the ac", "ac on please"]
AC_OFF = ["turn off the ac", "ac off", "switch off the air conditioning", "turn the a c off",
          "stop the air con", "no more ac", "disable air conditioning", "kill the ac",
          "shut the air conditioning off", "turn off the air conditioner",
          "deactivate the ac", "ac off please"]


def gen_climate_ac(rng, split, ctx):
    on = rng.random() < 0.5
    user = pick(rng, AC_ON if on else AC_OFF, split)
    s = rng.choice(["Air conditioning on.", "Turning the A/C on."] if on else
                   ["Air conditioning off.", "Turning the A/C off."])
    return user, reply("climate.ac state=%s" % ("on" if on else "off"), s), \
        {"kind": "ac", "state": on}


DEFROST_ON = ["defrost the {w}", "turn on the {w} defroster", "the {w} is fogged up",
              "i can't see through the {w}", "demist the {w}", "clear the {w}",
              "{w} defrost on", "start defrosting the {w}", "the {w} is all foggy",
              "switch on the {w} demister", "can you defog the {w}", "heat the {w}"]
DEFROST_OFF = ["turn off the {w} defroster", "stop defrosting the {w}", "{w} defrost off",
               "the {w} is clear now", "switch off the {w} demister", "no more {w} defrost",
               "disable the {w} defroster", "the {w} is fine now"]
DEFROST_TARGET = {"front": ["windshield", "windscreen", "front window", "front glass"],
                  "rear": ["rear window", "back window", "rear windscreen", "back glass"]}


def gen_climate_defrost(rng, split, ctx):
    on = rng.random() < 0.6
    tgt = rng.choice(["front", "rear"])
    user = pick(rng, DEFROST_ON if on else DEFROST_OFF, split).format(
        w=pick_syn(rng, DEFROST_TARGET[tgt]))
    s = ("Defrosting the %s." % ("windshield" if tgt == "front" else "rear window")) if on else \
        ("Turning off the %s defroster." % tgt)
    return user, reply("climate.defrost target=%s state=%s" % (tgt, "on" if on else "off"), s), \
        {"kind": "defrost", "target": tgt}


SEAT_LEVEL_WORDS = {1: ["low", "level one", "one", "1"], 2: ["medium", "level two", "two", "2"],
                    3: ["high", "max", "level three", "3"]}
SEAT_HEAT_ON = ["turn on {s} heating", "heat {s}", "warm up {s}", "{s} heater on",
                "turn on the seat heater for {s}", "i want {s} heated", "switch on {s} warmer",
                "can you heat {s}", "seat heating on for {s}", "start heating {s}",
                "{s} is cold", "put the heat on in {s}"]
SEAT_HEAT_LEVEL = ["set {s} heating to {l}", "{s} heater on {l}", "heat {s} on {l}",
                   "seat heat {l} for {s}", "put {s} heating on {l}", "turn {s} heater to {l}",
                   "heated seat {l} for {s}", "{s} warmer to {l}"]
SEAT_HEAT_OFF = ["turn off {s} heating", "{s} heater off", "stop heating {s}",
                 "no more seat heat for {s}", "switch off {s} warmer", "{s} is warm enough",
                 "disable seat heating for {s}", "turn the seat heater off for {s}"]
SEAT_COOL_ON = ["turn on {s} cooling", "cool {s}", "ventilate {s}", "{s} cooling on",
                "turn on the seat fan for {s}", "i want {s} cooled", "switch on {s} ventilation",
                "can you cool {s}", "seat cooling on for {s}", "start cooling {s}",
                "{s} is too hot", "my back is sweaty cool {s}"]
SEAT_COOL_LEVEL = ["set {s} cooling to {l}", "{s} cooling on {l}", "cool {s} on {l}",
                   "seat cooling {l} for {s}", "put {s} ventilation on {l}",
                   "turn {s} cooling to {l}", "ventilated seat {l} for {s}", "{s} fan to {l}"]
SEAT_COOL_OFF = ["turn off {s} cooling", "{s} cooling off", "stop cooling {s}",
                 "no more seat cooling for {s}", "switch off {s} ventilation",
                 "{s} is cool enough", "disable seat cooling for {s}",
                 "turn the seat fan off for {s}"]


def seat_words(rng, seat, split):
    w = pick_syn(rng, SEATS[seat])
    return "my seat" if w == "my" else w


def gen_seat(rng, split, ctx, kind=None):
    kind = kind or rng.choice(["heat", "heat", "cool"])
    seat = rng.choice(["driver", "passenger"])
    sw = seat_words(rng, seat, split)
    r = rng.random()
    heat = kind == "heat"
    if r < 0.4:
        level = 2
        user = pick(rng, SEAT_HEAT_ON if heat else SEAT_COOL_ON, split).format(s=sw)
    elif r < 0.8:
        level = rng.randint(1, 3)
        user = pick(rng, SEAT_HEAT_LEVEL if heat else SEAT_COOL_LEVEL, split).format(
            s=sw, l=pick_syn(rng, SEAT_LEVEL_WORDS[level]))
    else:
        level = 0
        user = pick(rng, SEAT_HEAT_OFF if heat else SEAT_COOL_OFF, split).format(s=sw)
    what = "heating" if heat else "cooling"
    who = "driver" if seat == "driver" else "passenger"
    s = ("Turning off %s seat %s." % (who, what)) if level == 0 else \
        ("%s seat %s at level %d." % (who.capitalize(), what, level))
    return user, reply("seat.%s seat=%s level=%d" % ("heat" if heat else "cool", seat, level), s), \
        {"kind": "seat", "what": kind, "seat": seat, "level": level}


WIN_OPEN = ["open {w}", "roll down {w}", "lower {w}", "put {w} down", "open up {w}",
            "wind down {w}", "can you open {w}", "let some air in through {w}",
            "i want {w} open", "bring {w} down", "drop {w}", "get {w} open"]
WIN_CLOSE = ["close {w}", "roll up {w}", "raise {w}", "put {w} up", "shut {w}",
             "wind up {w}", "can you close {w}", "it's drafty close {w}", "i want {w} closed",
             "bring {w} up", "seal {w}", "get {w} closed"]
WIN_PART = ["open {w} {p}", "roll {w} down {p}", "lower {w} {p}", "put {w} down {p}",
            "crack {w} {p}", "can you open {w} {p}", "bring {w} down {p}", "set {w} to {p}"]
WIN_CRACK = ["crack {w}", "open {w} a crack", "open {w} a little", "crack {w} open a bit",
             "open {w} just a bit", "give me a crack of {w}", "open {w} slightly",
             "just a little air from {w}"]
PART_WORDS = {50: ["halfway", "half way", "half open", "to half"], 25: ["a quarter", "a quarter of the way"],
              75: ["three quarters", "three quarters of the way"], 100: ["all the way", "fully"]}


def gen_window(rng, split, ctx):
    win = rng.choice(["driver", "passenger", "rear_left", "rear_right", "all", "driver", "all"])
    ww = pick_syn(rng, WINDOWS[win])
    r = rng.random()
    if r < 0.25:
        pos, user = 100, pick(rng, WIN_OPEN, split).format(w=ww)
    elif r < 0.5:
        pos, user = 0, pick(rng, WIN_CLOSE, split).format(w=ww)
    elif r < 0.65:
        pos, user = 20, pick(rng, WIN_CRACK, split).format(w=ww)
    elif r < 0.82:
        pos = rng.choice([25, 50, 50, 75, 100])
        user = pick(rng, WIN_PART, split).format(w=ww, p=pick_syn(rng, PART_WORDS[pos]))
    else:
        pos = pick_value(rng, WIN_TRAIN, WIN_HELD, split)
        pp = spoken_num(rng, pos) + rng.choice([" percent", "%", " percent", ""])
        if pp.endswith("%") and not pp[0].isdigit():
            pp = pp[:-1] + " percent"
        user = pick(rng, WIN_PART, split).format(w=ww, p="to " + pp if rng.random() < 0.5 else pp)
    return user, reply("window.set window=%s position=%d" % (win, pos), window_sentence(win, pos)), \
        {"kind": "window", "window": win, "pos": pos}


def window_sentence(win, pos):
    name = {"driver": "the driver window", "passenger": "the passenger window",
            "rear_left": "the rear left window", "rear_right": "the rear right window",
            "all": "all windows"}[win]
    if pos == 0:
        return "Closing %s." % name
    if pos == 100:
        return "Opening %s." % name
    return "Opening %s to %d percent." % (name, pos)


SUN_OPEN = ["open the sunroof", "sunroof open", "slide the sunroof open", "open the roof",
            "let some sun in", "can you open the moonroof", "i want the sunroof open",
            "open up the sunroof", "roof open please", "pop the sunroof", "open the sky window",
            "retract the sunroof"]
SUN_CLOSE = ["close the sunroof", "sunroof closed", "shut the sunroof", "close the roof",
             "it's raining close the roof", "can you close the moonroof",
             "i want the sunroof shut", "close up the sunroof", "roof closed please",
             "seal the sunroof", "shut the sky window", "close the top"]
SUN_PART = ["open the sunroof {p}", "sunroof to {p}", "set the sunroof to {p}",
            "open the roof {p}", "slide the sunroof {p}", "moonroof {p}"]


def gen_sunroof(rng, split, ctx):
    r = rng.random()
    if r < 0.35:
        pos, user = 100, pick(rng, SUN_OPEN, split)
    elif r < 0.7:
        pos, user = 0, pick(rng, SUN_CLOSE, split)
    else:
        if rng.random() < 0.5:
            pos = rng.choice([25, 50, 75, 100])
            p = pick_syn(rng, PART_WORDS[pos])
        else:
            pos = pick_value(rng, WIN_TRAIN, WIN_HELD, split)
            p = spoken_num(rng, pos) + " percent"
        user = pick(rng, SUN_PART, split).format(p=p)
    s = "Closing the sunroof." if pos == 0 else ("Opening the sunroof." if pos == 100 else
                                                 "Opening the sunroof to %d percent." % pos)
    return user, reply("sunroof.set position=%d" % pos, s), {"kind": "sunroof", "pos": pos}


LIGHT_NAMES = {"headlights": ["headlights", "headlamps", "main lights", "head lights"],
               "fog": ["fog lights", "fog lamps", "foglights", "fog light"],
               "interior": ["interior light", "cabin light", "dome light", "reading light"],
               "ambient": ["ambient lighting", "mood lighting", "ambient lights", "ambient light"]}
LIGHT_ON = ["turn on the {l}", "{l} on", "switch on the {l}", "can you turn the {l} on",
            "put the {l} on", "i need the {l}", "activate the {l}", "lights on the {l} please",
            "enable the {l}", "could i get the {l}", "start the {l}", "the {l} on please"]
LIGHT_OFF = ["turn off the {l}", "{l} off", "switch off the {l}", "can you turn the {l} off",
             "put the {l} out", "i don't need the {l}", "deactivate the {l}", "kill the {l}",
             "disable the {l}", "shut off the {l}", "stop the {l}", "the {l} off please"]


def gen_lights(rng, split, ctx):
    tgt = rng.choice(list(LIGHT_NAMES))
    on = rng.random() < 0.55
    user = pick(rng, LIGHT_ON if on else LIGHT_OFF, split).format(l=pick_syn(rng, LIGHT_NAMES[tgt]))
    nice = {"headlights": "headlights", "fog": "fog lights", "interior": "interior light",
            "ambient": "ambient lighting"}[tgt]
    s = "Turning %s the %s." % ("on" if on else "off", nice)
    return user, reply("lights.set target=%s state=%s" % (tgt, "on" if on else "off"), s), \
        {"kind": "lights", "target": tgt, "state": on}


NAV_GO = ["take me to {d}", "navigate to {d}", "drive to {d}", "directions to {d}",
          "let's go to {d}", "i need to get to {d}", "route to {d}", "get me to {d}",
          "how do i get to {d}", "set the destination to {d}", "head to {d}", "go to {d}",
          "find a route to {d}", "start navigation to {d}", "bring me to {d}", "i want to go to {d}"]
NAV_HOME = ["take me home", "navigate home", "let's go home", "drive home", "home please",
            "get me home", "route home", "i want to go home", "head home", "directions home",
            "start navigation home", "bring me home"]
NAV_WORK = ["take me to work", "navigate to work", "let's go to work", "drive to the office",
            "work please", "get me to work", "route to work", "i need to get to work",
            "head to the office", "directions to work", "start navigation to work",
            "bring me to the office"]
NAV_ETA = ["when will we get there", "how long until we arrive", "what's my eta",
           "how much longer", "are we there yet", "when do we arrive", "how far is it still",
           "what time will we get there", "how long is the drive", "eta please",
           "how many minutes left", "when will i arrive", "how long will it take",
           "what's the arrival time", "how long to go", "remaining time please"]
NAV_CANCEL = ["cancel navigation", "stop the route", "stop navigating", "end navigation",
              "cancel the route", "forget the destination", "i don't need directions anymore",
              "stop guidance", "turn off navigation", "cancel the directions", "clear the route",
              "no more directions"]


def gen_nav(rng, split, ctx):
    r = rng.random()
    if r < 0.5:
        spoken, slot = pick_place(rng, split)
        user = pick(rng, NAV_GO, split).format(d=spoken)
        s = rng.choice(["Starting navigation to %s.", "Navigating to %s.", "Route to %s set."]) % spoken
        return user, reply("nav.go dest=%s" % slot, s), {"kind": "nav", "dest": slot}
    if r < 0.65:
        user = pick(rng, NAV_HOME, split)
        return user, reply("nav.go dest=home", rng.choice(["Taking you home.", "Navigating home."])), \
            {"kind": "nav", "dest": "home"}
    if r < 0.75:
        user = pick(rng, NAV_WORK, split)
        return user, reply("nav.go dest=work", rng.choice(["Navigating to work.", "Route to work set."])), \
            {"kind": "nav", "dest": "work"}
    if r < 0.9:
        user = pick(rng, NAV_ETA, split)
        return user, reply("nav.eta", rng.choice(["Checking the arrival time.", "Let me check the ETA."])), \
            {"kind": "nav"}
    user = pick(rng, NAV_CANCEL, split)
    return user, reply("nav.cancel", rng.choice(["Navigation cancelled.", "Stopping the route."])), \
        {"kind": "navoff"}


MEDIA = {
    "play": (["play some music", "resume", "play", "resume the music", "start the music",
              "play music", "unpause", "continue playing", "put some music on",
              "i want some music", "keep playing", "play the song again"],
             ["Playing.", "Resuming playback."]),
    "pause": (["pause", "pause the music", "stop the music", "hold the music", "pause playback",
               "quiet for a moment", "stop playing", "pause it", "hit pause",
               "silence the music please", "pause the song", "stop the song"],
              ["Paused.", "Pausing playback."]),
    "next": (["next song", "skip", "next track", "skip this song", "play the next one",
              "skip this one", "next", "i don't like this song", "go to the next track",
              "skip ahead", "change the song", "another song please"],
             ["Skipping to the next track.", "Next track."]),
    "previous": (["previous song", "go back a song", "previous track", "play the last song again",
                  "back one track", "the song before", "go back", "previous",
                  "replay the previous track", "back to the last song", "last track please",
                  "play the one before"],
                 ["Going back a track.", "Previous track."]),
}
VOL_SET = ["set the volume to {n}", "volume {n}", "volume to {n}", "turn the volume to {n}",
           "make the volume {n}", "put the volume at {n}", "change volume to {n}",
           "i want volume {n}", "audio level {n}", "set it to volume {n}", "sound to {n}",
           "adjust the volume to {n}"]
VOL_UP = ["louder", "turn it up", "volume up", "turn up the music", "crank it up",
          "a bit louder", "increase the volume", "i can't hear it", "pump up the volume",
          "make it louder", "raise the volume", "more volume"]
VOL_DOWN = ["quieter", "turn it down", "volume down", "turn down the music", "too loud",
            "a bit quieter", "decrease the volume", "that's too loud", "lower the volume",
            "make it quieter", "reduce the volume", "less volume"]
VOL_UP_N = ["turn the volume up by {n}", "volume up {n}", "louder by {n}", "raise the volume by {n}",
            "up {n} on the volume", "increase volume by {n}", "bump the volume {n}", "plus {n} volume"]
VOL_DOWN_N = ["turn the volume down by {n}", "volume down {n}", "quieter by {n}",
              "lower the volume by {n}", "down {n} on the volume", "decrease volume by {n}",
              "drop the volume {n}", "minus {n} volume"]
VOL_MUTE = ["mute", "mute the audio", "mute the sound", "silence"]
SOURCES = {"radio": ["the radio", "radio", "fm radio", "fm"],
           "bluetooth": ["bluetooth", "my phone", "bluetooth audio", "the phone"],
           "usb": ["usb", "the usb stick", "the usb drive", "usb music"],
           "podcast": ["podcasts", "a podcast", "my podcasts", "the podcast app"]}
SOURCE_T = ["switch to {x}", "play {x}", "change the source to {x}", "put on {x}",
            "listen to {x}", "source {x}", "use {x}", "can we listen to {x}", "play from {x}",
            "switch the audio to {x}", "change to {x}", "i want {x}"]


def gen_media(rng, split, ctx):
    r = rng.random()
    if r < 0.4:
        verb = rng.choice(list(MEDIA))
        temps, sents = MEDIA[verb]
        return pick(rng, temps, split), reply("media.%s" % verb, rng.choice(sents)), {"kind": "media"}
    if r < 0.55:
        n = pick_value(rng, VOL_TRAIN, VOL_HELD, split)
        user = pick(rng, VOL_SET, split).format(n=spoken_num(rng, n))
        return user, reply("media.volume level=%d" % n, "Volume set to %d." % n), \
            {"kind": "volume", "level": n}
    if r < 0.72:
        up = rng.random() < 0.5
        user = pick(rng, VOL_UP if up else VOL_DOWN, split)
        return user, reply("media.volume delta=%s" % ("+2" if up else "-2"),
                           "Turning it up." if up else "Turning it down."), {"kind": "volume"}
    if r < 0.8:
        up = rng.random() < 0.5
        n = rng.choice([1, 2, 3, 4, 5, 5, 10])
        user = pick(rng, VOL_UP_N if up else VOL_DOWN_N, split).format(n=spoken_num(rng, n))
        return user, reply("media.volume delta=%s%d" % ("+" if up else "-", n),
                           "Volume %s by %d." % ("up" if up else "down", n)), {"kind": "volume"}
    if r < 0.83:
        return pick(rng, VOL_MUTE, split), reply("media.volume level=0", "Muted."), {"kind": "volume", "level": 0}
    src = rng.choice(list(SOURCES))
    user = pick(rng, SOURCE_T, split).format(x=pick_syn(rng, SOURCES[src]))
    nice = {"radio": "the radio", "bluetooth": "Bluetooth audio", "usb": "USB", "podcast": "podcasts"}[src]
    return user, reply("media.source source=%s" % src, "Switching to %s." % nice), {"kind": "media"}


CALL_T = ["call {c}", "phone {c}", "ring {c}", "give {c} a call", "dial {c}", "can you call {c}",
          "i need to call {c}", "call {c} for me", "get {c} on the phone", "make a call to {c}",
          "please call {c}", "start a call with {c}", "connect me to {c}", "call up {c}",
          "i want to talk to {c}", "phone call to {c}"]
REDIAL_T = ["redial", "call the last number again", "call back", "redial the last number",
            "call them again", "try that call again", "call the last person again",
            "ring them back", "dial again", "repeat the last call", "call again",
            "return the last call"]


def gen_phone(rng, split, ctx):
    if rng.random() < 0.8:
        spoken, slot = pick_contact(rng, split)
        user = pick(rng, CALL_T, split).format(c=spoken)
        s = rng.choice(["Calling %s.", "Calling %s now.", "Dialing %s."]) % spoken
        return user, reply("phone.call contact=%s" % slot, s), {"kind": "phone"}
    return pick(rng, REDIAL_T, split), reply("phone.redial", rng.choice(["Redialing.", "Calling the last number."])), \
        {"kind": "phone"}


STATUS = {
    "range": ["how far can i drive", "what's my range", "how much range do i have left",
              "how many miles can i go", "will i make it on this charge", "range please",
              "how far can we go", "what's the remaining range", "how many kilometers left",
              "check my range", "distance to empty", "how far until i need to refuel"],
    "tyres": ["check the tyre pressure", "how are my tires", "tire pressure please",
              "are the tyres okay", "what's the tire pressure", "do i have a flat",
              "check the tires", "how's the tyre pressure", "tyre status",
              "is a tire low", "any problem with the tires", "show tire pressure"],
    "doors": ["are the doors locked", "did i lock the car", "are all doors closed",
              "is the car locked", "door status", "is a door open", "check the doors",
              "are the doors shut", "is any door unlocked", "did i close all the doors",
              "is the trunk closed", "are we locked"],
    "fuel": ["how much fuel do i have", "how much gas is left", "fuel level", "check the fuel",
             "is the tank empty", "do i need gas", "how full is the tank", "what's my fuel level",
             "gas level please", "am i low on fuel", "how much petrol is left", "do i need to fill up"],
    "battery": ["what's the battery level", "how charged is the battery", "battery status",
                "check the battery", "how much charge is left", "state of charge",
                "is the battery low", "battery percentage", "how's the battery",
                "do i need to charge", "what's my charge", "charge level please"],
    "oil": ["check the oil", "oil level", "how's the oil", "do i need an oil change",
            "is the oil okay", "oil status", "check the engine oil", "what's the oil level",
            "is the oil low", "oil check please", "when is the oil change due", "engine oil level"],
}
STATUS_SENT = {"range": "Checking your range.", "tyres": "Checking the tyre pressure.",
               "doors": "Checking the doors.", "fuel": "Checking the fuel level.",
               "battery": "Checking the battery.", "oil": "Checking the oil level."}


def gen_status(rng, split, ctx):
    item = rng.choice(list(STATUS))
    return pick(rng, STATUS[item], split), reply("status.query item=%s" % item, STATUS_SENT[item]), \
        {"kind": "status"}


LOCK = ["lock the doors", "lock the car", "lock up", "lock all doors", "doors locked please",
        "can you lock the doors", "lock it", "secure the car", "lock everything",
        "make sure the doors are locked", "central locking on", "lock the doors now"]
UNLOCK = ["unlock the doors", "unlock the car", "open the locks", "unlock all doors",
          "doors unlocked please", "can you unlock the doors", "unlock it", "let them in",
          "unlock everything", "release the locks", "central locking off", "unlock the doors now"]


def gen_doors(rng, split, ctx):
    lock = rng.random() < 0.5
    user = pick(rng, LOCK if lock else UNLOCK, split)
    return user, reply("doors.lock state=%s" % ("locked" if lock else "unlocked"),
                       "Locking the doors." if lock else "Unlocking the doors."), {"kind": "doors", "lock": lock}


FEATURES = {"lane_keep": ["lane keeping", "lane assist", "lane keep assist", "lane keeping assist"],
            "cruise": ["cruise control", "the cruise control", "cruise", "adaptive cruise"],
            "parking_sensors": ["parking sensors", "the parking sensors", "park assist",
                                "the parking beeper"],
            "blind_spot": ["blind spot monitoring", "blind spot warning", "the blind spot assist",
                           "blind spot detection"]}
ASSIST_ON = ["turn on {f}", "enable {f}", "activate {f}", "switch on {f}", "{f} on",
             "start {f}", "can you turn on {f}", "i want {f} on", "engage {f}",
             "put {f} on", "use {f}", "{f} on please"]
ASSIST_OFF = ["turn off {f}", "disable {f}", "deactivate {f}", "switch off {f}", "{f} off",
              "stop {f}", "can you turn off {f}", "i want {f} off", "disengage {f}",
              "kill {f}", "no {f} please", "{f} off please"]


def gen_assist(rng, split, ctx):
    feat = rng.choice(list(FEATURES))
    on = rng.random() < 0.5
    user = pick(rng, ASSIST_ON if on else ASSIST_OFF, split).format(f=pick_syn(rng, FEATURES[feat]))
    nice = {"lane_keep": "lane keeping", "cruise": "cruise control",
            "parking_sensors": "parking sensors", "blind_spot": "blind spot monitoring"}[feat]
    s = "%s %s." % (nice[0].upper() + nice[1:], "on" if on else "off")
    return user, reply("assist.set feature=%s state=%s" % (feat, "on" if on else "off"), s), \
        {"kind": "assist", "feature": feat, "state": on}


# Out-of-scope requests -> none. Lists of templates with fill-ins.
COUNTRIES = ["france", "germany", "spain", "italy", "japan", "brazil", "canada", "egypt",
             "norway", "peru", "kenya", "india", "mexico", "sweden", "chile", "poland"]
TOPICS = ["black holes", "the roman empire", "photosynthesis", "quantum physics", "dinosaurs",
          "the stock market", "world war two", "volcanoes", "the moon landing", "bitcoin"]
CITIES = ["paris", "london", "tokyo", "new york", "berlin", "sydney", "rome", "madrid", "chicago",
          "moscow", "cairo", "toronto"]
REFUSE_T = [
    "what's the capital of {country}", "tell me a joke", "what's {a} times {b}",
    "who won the game last night", "what's the weather in {city}", "write me a poem",
    "explain {topic}", "who is the president of {country}", "help me with my math homework",
    "what is {a} plus {b}", "how tall is mount everest", "order me a pizza",
    "what's the meaning of life", "translate hello into {lang}", "tell me about {topic}",
    "book a table for two", "what's the population of {country}", "sing me a song",
    "who invented the light bulb", "what's the square root of {a}", "set an alarm for seven",
    "send an email to my boss", "what time is it in {city}", "how do i bake bread",
    "what's the best movie ever", "tell me a story", "will it rain in {city} tomorrow",
    "what's the news today", "how many legs does a spider have", "buy some shares",
    "what's {a} divided by {b}", "recommend a good book", "who wrote hamlet",
    "what's the speed of light", "how old is the universe", "play chess with me",
    "what language do they speak in {country}", "do my taxes", "what is love",
    "are you smarter than me", "how do you spell necessary", "what's the score in the match",
    "solve x squared equals {a}", "write my essay about {topic}", "who is the richest person",
    "how far is the moon", "what's a good name for a dog", "summarize {topic} for me",
    "what's the tallest building in the world", "who painted the mona lisa", "tell me a fun fact",
    "how do i make pasta", "what's the best restaurant in {city}", "find me a date",
    "what is {a} minus {b}", "can you write code for me", "what's the stock price of apple",
    "who is the best football player", "how many planets are there", "text my friend",
    "post this on social media", "what year did {topic} happen", "what's your favorite color",
    "do you dream", "what should i have for dinner", "teach me {lang}",
    "how big is {country}", "what's the currency of {country}", "is {country} in europe",
    "what's the time difference to {city}", "can you order groceries", "remind me to buy milk",
    "what's the weather like in {city} next week", "give me a riddle", "how do airplanes fly",
    "what's the formula for water", "who discovered gravity", "explain {topic} to a child",
    "what does photosynthesis mean", "what rhymes with orange", "can you pay my bills",
    "how old is the queen", "what's on tv tonight", "calculate {a} percent of {b}",
    "tell me about yourself", "what's the longest river", "book me a flight to {city}",
]
LANGS = ["french", "german", "spanish", "japanese", "italian"]


def gen_refusal(rng, split, ctx):
    t = pick(rng, REFUSE_T, split)
    user = t.format(country=rng.choice(COUNTRIES), a=spoken_num(rng, rng.randint(2, 99)),
                    b=spoken_num(rng, rng.randint(2, 20)), city=rng.choice(CITIES),
                    topic=rng.choice(TOPICS), lang=rng.choice(LANGS))
    return user, reply("none", rng.choice(REFUSALS)), {"kind": "none"}


# ---------------------------------------------------------------------------- follow-ups
AND_TOO = ["and {x} too", "{x} as well", "same for {x}", "also {x}", "and {x}",
           "do {x} too", "and {x} as well please", "what about {x}"]
ACTUALLY_T = ["actually make it {t}", "no make it {t}", "actually {t}", "change that to {t}",
              "hmm make that {t}", "{t} instead", "wait i meant {t}", "sorry i said {t}"]
TURN_IT_OFF_AGAIN = ["turn it off again", "actually turn it off", "switch it off again",
                     "never mind turn it off", "okay turn it off now", "off again please",
                     "now switch it off", "turn that back off"]
TURN_IT_ON_AGAIN = ["turn it on again", "actually turn it back on", "switch it on again",
                    "turn it back on", "okay turn it on now", "on again please",
                    "now switch it on", "put it back on"]
CLOSE_IT = ["close it again", "now close it", "okay close it", "actually close it",
            "shut it again", "close it back up", "that's enough close it", "roll it back up"]
OPEN_MORE = ["all the way", "open it fully", "actually all the way", "more please open it all the way",
             "fully open", "open it completely", "all the way down", "the whole way"]
HIGHER = ["higher", "turn it up", "more", "a bit higher", "up one more", "increase it",
          "one level higher", "a notch higher"]
LOWER = ["lower", "turn it down", "less", "a bit lower", "down one", "decrease it",
         "one level lower", "a notch lower"]


def gen_followup(rng, split, ctx):
    """A turn that depends on ctx, or None when ctx offers nothing to follow."""
    k = ctx.get("kind")
    if k == "climate":
        r = rng.random()
        zone = ctx["zone"]
        if r < 0.35:
            return gen_climate_adjust(rng, split, ctx)
        if r < 0.65 and "temp" in ctx:
            others = [z for z in ["driver", "passenger", "rear"] if z != zone]
            z2 = rng.choice(others)
            user = pick(rng, AND_TOO, split).format(x=pick_syn(rng, ZONES[z2]))
            t = ctx["temp"]
            return user, reply("climate.set zone=%s temp=%s" % (z2, fmt_num(t)),
                               "Setting %s degrees%s." % (fmt_num(t), zone_sentence(z2))), \
                {"kind": "climate", "zone": z2, "temp": t}
        t = pick_value(rng, TEMPS_TRAIN_W, TEMPS_HELD, split)
        user = pick(rng, ACTUALLY_T, split).format(t=temp_phrase(rng, t))
        return user, reply("climate.set zone=%s temp=%s" % (zone, fmt_num(t)),
                           "Okay, %s degrees%s." % (fmt_num(t), zone_sentence(zone))), \
            {"kind": "climate", "zone": zone, "temp": t}
    if k == "volume":
        r = rng.random()
        if r < 0.6:
            up = rng.random() < 0.5
            user = pick(rng, HIGHER if up else LOWER, split)
            return user, reply("media.volume delta=%s" % ("+2" if up else "-2"),
                               "Turning it up." if up else "Turning it down."), {"kind": "volume"}
        n = pick_value(rng, VOL_TRAIN, VOL_HELD, split)
        user = pick(rng, ACTUALLY_T, split).format(t=spoken_num(rng, n))
        return user, reply("media.volume level=%d" % n, "Volume set to %d." % n), {"kind": "volume", "level": n}
    if k == "fan":
        up = rng.random() < 0.5
        user = pick(rng, HIGHER if up else LOWER, split)
        return user, reply("climate.fan delta=%s" % ("+1" if up else "-1"),
                           "Turning the fan up." if up else "Turning the fan down."), {"kind": "fan"}
    if k == "seat":
        r = rng.random()
        seat, what, level = ctx["seat"], ctx["what"], ctx["level"]
        verb = "heat" if what == "heat" else "cool"
        if r < 0.4:
            other = "passenger" if seat == "driver" else "driver"
            user = pick(rng, AND_TOO, split).format(x=seat_words(rng, other, split))
            newseat, newlevel = other, level
        elif r < 0.75 and level > 0:
            up = level < 3 and (rng.random() < 0.5 or level == 1)
            user = pick(rng, HIGHER if up else LOWER, split)
            newseat, newlevel = seat, level + (1 if up else -1)
        else:
            user = pick(rng, TURN_IT_OFF_AGAIN, split) if level > 0 else pick(rng, TURN_IT_ON_AGAIN, split)
            newseat, newlevel = seat, 0 if level > 0 else 2
        who = "driver" if newseat == "driver" else "passenger"
        what_s = "heating" if what == "heat" else "cooling"
        s = ("Turning off %s seat %s." % (who, what_s)) if newlevel == 0 else \
            ("%s seat %s at level %d." % (who.capitalize(), what_s, newlevel))
        return user, reply("seat.%s seat=%s level=%d" % (verb, newseat, newlevel), s), \
            {"kind": "seat", "what": what, "seat": newseat, "level": newlevel}
    if k == "window":
        win, pos = ctx["window"], ctx["pos"]
        r = rng.random()
        if r < 0.35 and win != "all":
            others = [w for w in WINDOWS if w not in (win, "all")]
            w2 = rng.choice(others)
            user = pick(rng, AND_TOO, split).format(x=pick_syn(rng, WINDOWS[w2]))
            return user, reply("window.set window=%s position=%d" % (w2, pos), window_sentence(w2, pos)), \
                {"kind": "window", "window": w2, "pos": pos}
        if pos > 0 and r < 0.7:
            user = pick(rng, CLOSE_IT, split)
            return user, reply("window.set window=%s position=0" % win, window_sentence(win, 0)), \
                {"kind": "window", "window": win, "pos": 0}
        if pos < 100:
            user = pick(rng, OPEN_MORE, split)
            return user, reply("window.set window=%s position=100" % win, window_sentence(win, 100)), \
                {"kind": "window", "window": win, "pos": 100}
        return None
    if k == "sunroof":
        if ctx["pos"] > 0:
            return pick(rng, CLOSE_IT, split), reply("sunroof.set position=0", "Closing the sunroof."), \
                {"kind": "sunroof", "pos": 0}
        return pick(rng, OPEN_MORE, split), reply("sunroof.set position=100", "Opening the sunroof."), \
            {"kind": "sunroof", "pos": 100}
    if k in ("lights", "assist", "ac"):
        on = not ctx["state"]
        user = pick(rng, TURN_IT_ON_AGAIN if on else TURN_IT_OFF_AGAIN, split)
        if k == "lights":
            tgt = ctx["target"]
            nice = {"headlights": "headlights", "fog": "fog lights", "interior": "interior light",
                    "ambient": "ambient lighting"}[tgt]
            a = "lights.set target=%s state=%s" % (tgt, "on" if on else "off")
            s = "Turning %s the %s." % ("on" if on else "off", nice)
            nc = {"kind": "lights", "target": tgt, "state": on}
        elif k == "assist":
            feat = ctx["feature"]
            nice = {"lane_keep": "Lane keeping", "cruise": "Cruise control",
                    "parking_sensors": "Parking sensors", "blind_spot": "Blind spot monitoring"}[feat]
            a = "assist.set feature=%s state=%s" % (feat, "on" if on else "off")
            s = "%s %s." % (nice, "on" if on else "off")
            nc = {"kind": "assist", "feature": feat, "state": on}
        else:
            a = "climate.ac state=%s" % ("on" if on else "off")
            s = "Air conditioning %s." % ("on" if on else "off")
            nc = {"kind": "ac", "state": on}
        return user, reply(a, s), nc
    if k == "defrost":
        tgt = ctx["target"]
        user = pick(rng, TURN_IT_OFF_AGAIN, split)
        return user, reply("climate.defrost target=%s state=off" % tgt, "Turning off the %s defroster." % tgt), \
            {"kind": "none"}
    if k == "nav":
        if rng.random() < 0.6:
            return gen_nav_eta_only(rng, split)
        return pick(rng, NAV_CANCEL, split), reply("nav.cancel", "Navigation cancelled."), {"kind": "navoff"}
    if k == "phone":
        return pick(rng, REDIAL_T, split), reply("phone.redial", "Redialing."), {"kind": "phone"}
    if k == "doors":
        lock = not ctx["lock"]
        return pick(rng, LOCK_AGAIN if lock else UNLOCK_AGAIN, split), \
            reply("doors.lock state=%s" % ("locked" if lock else "unlocked"),
                  "Locking the doors." if lock else "Unlocking the doors."), {"kind": "doors", "lock": lock}
    if k == "media":
        verb = rng.choice(["next", "previous", "pause", "next"])
        temps, sents = MEDIA[verb]
        return pick(rng, temps, split), reply("media.%s" % verb, rng.choice(sents)), {"kind": "media"}
    return None


UNLOCK_AGAIN = ["unlock them again", "actually unlock them", "unlock again", "open them again",
                "now unlock", "okay unlock them now", "unlock it again", "let me out unlock"]
LOCK_AGAIN = ["lock them again", "actually lock them", "lock again", "lock it again",
              "now lock", "okay lock them now", "lock up again", "lock the doors again"]


def gen_nav_eta_only(rng, split):
    user = pick(rng, NAV_ETA, split)
    return user, reply("nav.eta", rng.choice(["Checking the arrival time.", "Let me check the ETA."])), {"kind": "nav"}


GENERATORS = [  # (weight, generator)
    (9, gen_climate_set), (6, gen_climate_adjust), (4, gen_climate_fan), (3, gen_climate_ac),
    (3, gen_climate_defrost), (5, gen_seat), (6, gen_window), (3, gen_sunroof), (4, gen_lights),
    (9, gen_nav), (10, gen_media), (7, gen_phone), (5, gen_status), (3, gen_doors),
    (4, gen_assist), (9, gen_refusal),
]


def gen_fresh(rng, split, ctx):
    total = sum(w for w, _ in GENERATORS)
    x = rng.random() * total
    for w, g in GENERATORS:
        x -= w
        if x < 0:
            return g(rng, split, ctx)
    return GENERATORS[-1][1](rng, split, ctx)


# ---------------------------------------------------------------------------- speech noise
PREFIXES = ["uh ", "um ", "hey ", "okay ", "so ", "hey cabin ", "uh ", "um ", "ok ", "hmm ",
            "well ", "alright "]
POLITE_PREFIXES = ["can you ", "could you ", "please ", "would you ", "could you maybe ",
                   "can you please ", "i want you to ", "i'd like you to ", "would you please ",
                   "uh can you ", "um could you ", "hey can you "]
SUFFIXES = [" please", " thanks", " for me", " thank you", " now", " please thanks",
            " if you can", " right now", " real quick", " okay"]
IMPERATIVE = set("""set make change put adjust bring heat turn raise lower increase decrease
crank blow speed slow reduce start stop switch enable disable kill activate deactivate defrost
demist clear warm cool ventilate open close roll wind crack give let drop get shut seal pop
slide retract take navigate drive find head go route play resume pause hold skip replay unpause
continue keep hit silence mute call phone ring dial connect redial repeat return lock unlock
secure release engage disengage use check show""".split())


def add_noise(rng, text):
    words = text.split()
    first = words[0]
    r = rng.random()
    if first in IMPERATIVE and r < 0.3:
        text = rng.choice(POLITE_PREFIXES) + text
    elif r < 0.45:
        text = rng.choice(PREFIXES) + text
    if rng.random() < 0.2:
        text += rng.choice(SUFFIXES)
    words = text.split()
    if len(words) > 2 and rng.random() < 0.12:   # a filler inside
        i = rng.randint(1, len(words) - 1)
        words.insert(i, rng.choice(["uh", "um", "like", "uh", "er"]))
    if len(words) > 2 and rng.random() < 0.06:   # a stutter
        i = rng.randint(0, len(words) - 2)
        words.insert(i, words[i])
    text = " ".join(words)
    r = rng.random()
    if r < 0.25:    # as a keyboard user would type it
        text = text[0].upper() + text[1:]
        text += rng.choice(["?", ".", "!", "", "."]) if not text.endswith("?") else ""
    return text


# Words a dropped-word augmentation never removes: the ones that carry a request's direction,
# state or amount (removing "off" or "not" would make the label a lie).
KEEP_WORDS = set("""on off up down in out not no don't can't open close closed lock unlock
higher lower more less max min full all half warmer cooler hotter colder""".split()) | \
    set(ONES) | set(t for t in TENS if t)


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


def gen_dialogue(rng, split):
    n_turns = rng.choice([1, 1, 2, 2, 2, 3, 3, 4])
    ctx = {}
    turns = []
    for i in range(n_turns):
        out = None
        if i > 0 and rng.random() < 0.6:
            out = gen_followup(rng, split, ctx)
        if out is None:
            out = gen_fresh(rng, split, ctx)
        user, rep, ctx = out
        if split == TRAIN and AUGMENT["fillers"] > 0 and rng.random() < AUGMENT["fillers"]:
            words = user.split(" ")
            i = rng.randint(0, len(words))
            user = " ".join(words[:i] + [rng.choice(NEUTRAL_FILLERS)] + words[i:])
        if split == TRAIN and AUGMENT["word_drop"] > 0 and rng.random() < AUGMENT["word_drop"]:
            user = drop_word(rng, user, rep)
        if split == TRAIN and AUGMENT["unknown_words"] > 0 and rng.random() < AUGMENT["unknown_words"]:
            user = unknown_word(rng, user, rep)
        turns.append({"user": add_noise(rng, user), "reply": rep})
    return {"turns": turns}


def norm_text(text):
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c == " ").split())


def write_jsonl(path, dialogues):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        for dlg in dialogues:
            f.write(json.dumps(dlg, ensure_ascii=True, separators=(", ", ": ")) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", type=int, default=60000, help="training dialogues")
    ap.add_argument("--heldout", type=int, default=1500, help="held-out dialogues")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--train-out", default="build/corpus/train.jsonl")
    ap.add_argument("--heldout-out", default="assets/eval/heldout.jsonl")
    ap.add_argument("--pseudo", type=float, default=AUGMENT["pseudo"],
                    help="training share of pseudo-word contacts/places/streets")
    ap.add_argument("--frames", type=float, default=AUGMENT["frames"],
                    help="training share of paraphrased frames")
    ap.add_argument("--spoken-house", type=float, default=AUGMENT["spoken_house"])
    ap.add_argument("--fillers", type=float, default=AUGMENT["fillers"],
                    help="training share of turns with one neutral filler word inserted")
    ap.add_argument("--one-way", type=int, default=AUGMENT["one_way"],
                    help="1: also the one-way rewrites of PHRASE_ONE_WAY")
    ap.add_argument("--word-drop", type=float, default=AUGMENT["word_drop"],
                    help="training share of turns with one word dropped (drop_word)")
    ap.add_argument("--unknown-words", type=float, default=AUGMENT["unknown_words"],
                    help="training share of turns with one pseudo-word put in (unknown_word)")
    ap.add_argument("--no-heldout", action="store_true", help="write only the training set")
    ap.add_argument("--decontaminate", type=int, default=0,
                    help="1: replace training dialogues with a held-out user text (case and "
                    "punctuation ignored)")
    a = ap.parse_args()
    AUGMENT.update(pseudo=a.pseudo, frames=a.frames, spoken_house=a.spoken_house, fillers=a.fillers,
                   one_way=a.one_way, word_drop=a.word_drop,
                   unknown_words=a.unknown_words)
    rng_train = random.Random(a.seed)
    rng_held = random.Random(a.seed + 1)
    held = [gen_dialogue(rng_held, HELDOUT) for _ in range(a.heldout)]
    # Decontamination: a training dialogue with a user turn that is also a held-out user text
    # (the same words, ignoring case and punctuation: a short training frame plus a noise word can
    # spell a held-out frame, "ac off" + " please") is replaced by the next one generated.
    held_texts = {norm_text(t["user"]) for d in held for t in d["turns"]} if a.decontaminate else set()
    train, dropped = [], 0
    while len(train) < a.train:
        d = gen_dialogue(rng_train, TRAIN)
        if held_texts and any(norm_text(t["user"]) in held_texts for t in d["turns"]):
            dropped += 1
            continue
        train.append(d)
    write_jsonl(a.train_out, train)
    if not a.no_heldout:
        write_jsonl(a.heldout_out, held)
    nt = sum(len(d["turns"]) for d in train)
    nh = sum(len(d["turns"]) for d in held)
    print("gen_corpus: %d train dialogues (%d turns) -> %s; %d held-out dialogues (%d turns) -> %s; "
          "%d training dialogues dropped for a held-out user text"
          % (len(train), nt, a.train_out, len(held), nh,
             "(not written)" if a.no_heldout else a.heldout_out, dropped))


if __name__ == "__main__":
    main()
