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
pseudo-word put into a turn: unknown_word), --synonyms P (one word replaced by a WordNet
synonym: synonym_word; needs Debian's wordnet-base), --extra-frames P (a share of the draws from
a phrasing list take one of its extra training frames, tools/corpus/extra_frames.json:
extra_frame), and --decontaminate 1 (no training dialogue repeats a held-out user text). None
of them changes the held-out file.

The phrase tables (sentence frames, synonyms, slot values, replies, refusals, fillers, ...) are
in corpus_phrases.py and the training-only augmentation in augment.py; this file holds the
mechanics: drawing (pick, pick_syn, pick_value), the per-intent generators (gen_*), speech
noise, dialogue assembly and the command line.

usage: gen_corpus.py [--train N] [--heldout N] [--seed S] [--train-out PATH] [--heldout-out PATH]
                     [--no-heldout] [--pseudo P] [--frames P] [--spoken-house P] [--fillers P]
                     [--one-way 0|1] [--word-drop P] [--unknown-words P] [--synonyms P]
                     [--extra-frames P] [--decontaminate 0|1]
"""
import argparse
import json
import os
import random

import augment
import corpus_phrases
from corpus_phrases import (  # the tables the mechanics below use
    ONES, TENS, TEMPS_HELD, TEMPS_TRAIN_W, VOL_HELD, VOL_TRAIN, WIN_HELD, WIN_TRAIN, ZONES, SEATS,
    WINDOWS, CONTACTS_TRAIN, CONTACTS_HELD, PLACES_TRAIN, PLACES_HELD, STREETS_TRAIN, STREETS_HELD,
    HOUSE_NUMS_TRAIN, HOUSE_NUMS_HELD, NEUTRAL_FILLERS, REFUSALS,
    TEMP_UNIT, CLIMATE_SET_T, CLIMATE_SET_ZONE_T, WARMER_VAGUE, COOLER_VAGUE, WARMER_N, COOLER_N,
    COLD_STATEMENTS, HOT_STATEMENTS, ZONE_SUFFIX, FAN_LEVEL, FAN_UP, FAN_DOWN, FAN_OFF, FAN_MAX,
    AC_ON, AC_OFF, DEFROST_ON, DEFROST_OFF, DEFROST_TARGET, SEAT_LEVEL_WORDS, SEAT_HEAT_ON,
    SEAT_HEAT_LEVEL, SEAT_HEAT_OFF, SEAT_COOL_ON, SEAT_COOL_LEVEL, SEAT_COOL_OFF, WIN_OPEN,
    WIN_CLOSE, WIN_PART, WIN_CRACK, PART_WORDS, SUN_OPEN, SUN_CLOSE, SUN_PART, LIGHT_NAMES,
    LIGHT_ON, LIGHT_OFF, NAV_GO, NAV_HOME, NAV_WORK, NAV_ETA, NAV_CANCEL, MEDIA, VOL_SET, VOL_UP,
    VOL_DOWN, VOL_UP_N, VOL_DOWN_N, VOL_MUTE, SOURCES, SOURCE_T, CALL_T, REDIAL_T, STATUS,
    STATUS_SENT, LOCK, UNLOCK, FEATURES, ASSIST_ON, ASSIST_OFF, COUNTRIES, TOPICS, CITIES,
    REFUSE_T, LANGS, AND_TOO, ACTUALLY_T, TURN_IT_OFF_AGAIN, TURN_IT_ON_AGAIN, CLOSE_IT, OPEN_MORE,
    HIGHER, LOWER, UNLOCK_AGAIN, LOCK_AGAIN, PREFIXES, POLITE_PREFIXES, SUFFIXES, IMPERATIVE)
from augment import (  # training-only augmentation
    AUGMENT, augment_frame, drop_word, extra_frame, pseudo_contact, pseudo_place, pseudo_street,
    synonym_word, unknown_word)

# Every table of corpus_phrases (those above and the rest) is a name of this module as well:
# build_grammar.py, build_lm.py and tests/test_corpus.py read them as gen_corpus.NAME.
globals().update((k, v) for k, v in vars(corpus_phrases).items() if not k.startswith("_"))


# ---------------------------------------------------------------------------- numbers in words
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
    extra = extra_frame(rng, items) if split == TRAIN and AUGMENT["extra_frames"] > 0 else None
    if extra is not None:
        t = extra
    elif len(items) < 4:
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


# ---------------------------------------------------------------------------- slot values
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


# ---------------------------------------------------------------------------- replies
def reply(action, sentence):
    return "<act>%s</act> %s" % (action, sentence)


# ---------------------------------------------------------------------------- intents
# Each generator: (rng, split, ctx) -> (user, reply, new_ctx). ctx describes the previous turn
# so that follow-ups ("a bit warmer", "and the passenger side too") can refer to it.


def temp_phrase(rng, t):
    return spoken_num(rng, t) + rng.choice(TEMP_UNIT)


def zone_sentence(zone):
    return {"all": "", "driver": " on the driver side", "passenger": " on the passenger side",
            "rear": " in the back"}[zone]


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


def gen_climate_ac(rng, split, ctx):
    on = rng.random() < 0.5
    user = pick(rng, AC_ON if on else AC_OFF, split)
    s = rng.choice(["Air conditioning on.", "Turning the A/C on."] if on else
                   ["Air conditioning off.", "Turning the A/C off."])
    return user, reply("climate.ac state=%s" % ("on" if on else "off"), s), \
        {"kind": "ac", "state": on}


def gen_climate_defrost(rng, split, ctx):
    on = rng.random() < 0.6
    tgt = rng.choice(["front", "rear"])
    user = pick(rng, DEFROST_ON if on else DEFROST_OFF, split).format(
        w=pick_syn(rng, DEFROST_TARGET[tgt]))
    s = ("Defrosting the %s." % ("windshield" if tgt == "front" else "rear window")) if on else \
        ("Turning off the %s defroster." % tgt)
    return user, reply("climate.defrost target=%s state=%s" % (tgt, "on" if on else "off"), s), \
        {"kind": "defrost", "target": tgt}


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


def gen_lights(rng, split, ctx):
    tgt = rng.choice(list(LIGHT_NAMES))
    on = rng.random() < 0.55
    user = pick(rng, LIGHT_ON if on else LIGHT_OFF, split).format(l=pick_syn(rng, LIGHT_NAMES[tgt]))
    nice = {"headlights": "headlights", "fog": "fog lights", "interior": "interior light",
            "ambient": "ambient lighting"}[tgt]
    s = "Turning %s the %s." % ("on" if on else "off", nice)
    return user, reply("lights.set target=%s state=%s" % (tgt, "on" if on else "off"), s), \
        {"kind": "lights", "target": tgt, "state": on}


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


def gen_phone(rng, split, ctx):
    if rng.random() < 0.8:
        spoken, slot = pick_contact(rng, split)
        user = pick(rng, CALL_T, split).format(c=spoken)
        s = rng.choice(["Calling %s.", "Calling %s now.", "Dialing %s."]) % spoken
        return user, reply("phone.call contact=%s" % slot, s), {"kind": "phone"}
    return pick(rng, REDIAL_T, split), reply("phone.redial", rng.choice(["Redialing.", "Calling the last number."])), \
        {"kind": "phone"}


def gen_status(rng, split, ctx):
    item = rng.choice(list(STATUS))
    return pick(rng, STATUS[item], split), reply("status.query item=%s" % item, STATUS_SENT[item]), \
        {"kind": "status"}


def gen_doors(rng, split, ctx):
    lock = rng.random() < 0.5
    user = pick(rng, LOCK if lock else UNLOCK, split)
    return user, reply("doors.lock state=%s" % ("locked" if lock else "unlocked"),
                       "Locking the doors." if lock else "Unlocking the doors."), {"kind": "doors", "lock": lock}


def gen_assist(rng, split, ctx):
    feat = rng.choice(list(FEATURES))
    on = rng.random() < 0.5
    user = pick(rng, ASSIST_ON if on else ASSIST_OFF, split).format(f=pick_syn(rng, FEATURES[feat]))
    nice = {"lane_keep": "lane keeping", "cruise": "cruise control",
            "parking_sensors": "parking sensors", "blind_spot": "blind spot monitoring"}[feat]
    s = "%s %s." % (nice[0].upper() + nice[1:], "on" if on else "off")
    return user, reply("assist.set feature=%s state=%s" % (feat, "on" if on else "off"), s), \
        {"kind": "assist", "feature": feat, "state": on}


def gen_refusal(rng, split, ctx):
    t = pick(rng, REFUSE_T, split)
    user = t.format(country=rng.choice(COUNTRIES), a=spoken_num(rng, rng.randint(2, 99)),
                    b=spoken_num(rng, rng.randint(2, 20)), city=rng.choice(CITIES),
                    topic=rng.choice(TOPICS), lang=rng.choice(LANGS))
    return user, reply("none", rng.choice(REFUSALS)), {"kind": "none"}


# ---------------------------------------------------------------------------- follow-ups
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
        if split == TRAIN and AUGMENT["synonyms"] > 0 and rng.random() < AUGMENT["synonyms"]:
            user = synonym_word(rng, user, rep)
        turns.append({"user": add_noise(rng, user), "reply": rep})
    return {"turns": turns}


def norm_text(text):
    return " ".join("".join(c for c in text.lower() if c.isalnum() or c == " ").split())


def heldout_dialogues(seed, n):
    """The held-out split's n dialogues for generator seed (its own stream, seed + 1: training
    options and the training stream never change it)."""
    rng = random.Random(seed + 1)
    return [gen_dialogue(rng, HELDOUT) for _ in range(n)]


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
    ap.add_argument("--synonyms", type=float, default=AUGMENT["synonyms"],
                    help="training share of turns with one word replaced by a WordNet synonym "
                    "(synonym_word; needs wordnet-base)")
    ap.add_argument("--extra-frames", type=float, default=AUGMENT["extra_frames"],
                    help="training share of draws from a phrasing list that take one of its extra "
                    "frames (tools/corpus/extra_frames.json, or the --extra-frames-file files)")
    ap.add_argument("--extra-frames-file", action="append", default=None, metavar="JSON",
                    help="extra frames to use (repeatable; default tools/corpus/extra_frames.json)")
    ap.add_argument("--no-heldout", action="store_true", help="write only the training set")
    ap.add_argument("--decontaminate", type=int, default=0,
                    help="1: replace training dialogues with a held-out user text (case and "
                    "punctuation ignored)")
    a = ap.parse_args()
    AUGMENT.update(pseudo=a.pseudo, frames=a.frames, spoken_house=a.spoken_house, fillers=a.fillers,
                   one_way=a.one_way, word_drop=a.word_drop,
                   unknown_words=a.unknown_words, synonyms=a.synonyms,
                   extra_frames=a.extra_frames)
    if a.extra_frames_file:
        augment.EXTRA_FRAMES_PATH = a.extra_frames_file
    rng_train = random.Random(a.seed)
    held = heldout_dialogues(a.seed, a.heldout)
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
