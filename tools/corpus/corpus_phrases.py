"""The phrase tables of cabin's corpus generator (tools/corpus/gen_corpus.py): sentence frames
per intent, closed synonym lists, slot values (training and held-out), reply sentences,
refusals, spoken prefixes and suffixes, and the material of the training-only augmentation
(pseudo-word parts, PHRASE_GROUPS, fillers). Data only: gen_corpus.py holds the mechanics and
makes every table here one of its own names as well (gen_corpus.NAME).

Held-out rule: a phrasing list (sentence frames, drawn with gen_corpus.pick) of 4 or more
entries reserves index % 4 == 3 for the held-out split, and paraphrasing never makes such a
frame (gen_corpus._reserved_frames); closed synonym lists (zones, seats, windows, ...) are
shared by both splits; open-class values are split by the *_TRAIN / *_HELD lists. Adding,
removing or moving an entry changes the generated corpus, the committed
assets/eval/heldout.jsonl included (tests/corpus.sh checks it).
"""

# ---------------------------------------------------------------------------- numbers in words
ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
        "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

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

# ---------------------------------------------------------------------------- training-only augmentation
# Pieces of pseudo-words (pseudo_word) and the words pseudo contacts, places and streets
# are built around (pseudo_contact, pseudo_place, pseudo_street).
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

# ---------------------------------------------------------------------------- replies
REFUSALS = [
    "Sorry, I can only help with the car.",
    "I can't help with that, but I can control the car for you.",
    "Sorry, that's outside what I can do. I handle the car's controls.",
    "I'm only able to help with things in the car.",
    "Sorry, I can't answer that. Ask me about the car instead.",
    "That's not something I can do. I can help with climate, media, navigation and more.",
]

# ---------------------------------------------------------------------------- intents
# Per intent: its sentence frames ({slots} are filled in by gen_corpus.py's gen_* functions)
# and the closed synonym lists of its slots.

# climate.set (gen_climate_set)
TEMP_UNIT = ["", " degrees", " degrees", " degrees celsius", " celsius"]
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

# climate.adjust (gen_climate_adjust)
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

# climate.fan (gen_climate_fan)
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

# climate.ac (gen_climate_ac)
AC_ON = ["turn on the ac", "ac on", "switch on the air conditioning", "turn the a c on",
         "start the air con", "i need some ac", "enable air conditioning", "put the ac on",
         "can we get the air conditioning going", "turn on the air conditioner",
         "activate the ac", "ac on please"]
AC_OFF = ["turn off the ac", "ac off", "switch off the air conditioning", "turn the a c off",
          "stop the air con", "no more ac", "disable air conditioning", "kill the ac",
          "shut the air conditioning off", "turn off the air conditioner",
          "deactivate the ac", "ac off please"]

# climate.defrost (gen_climate_defrost)
DEFROST_ON = ["defrost the {w}", "turn on the {w} defroster", "the {w} is fogged up",
              "i can't see through the {w}", "demist the {w}", "clear the {w}",
              "{w} defrost on", "start defrosting the {w}", "the {w} is all foggy",
              "switch on the {w} demister", "can you defog the {w}", "heat the {w}"]
DEFROST_OFF = ["turn off the {w} defroster", "stop defrosting the {w}", "{w} defrost off",
               "the {w} is clear now", "switch off the {w} demister", "no more {w} defrost",
               "disable the {w} defroster", "the {w} is fine now"]
DEFROST_TARGET = {"front": ["windshield", "windscreen", "front window", "front glass"],
                  "rear": ["rear window", "back window", "rear windscreen", "back glass"]}

# seat.heat, seat.cool (gen_seat)
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

# window.set (gen_window)
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

# sunroof.set (gen_sunroof)
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

# lights.set (gen_lights)
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

# nav.* (gen_nav)
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

# media.* (gen_media): verb -> (frames, reply sentences)
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

# phone.* (gen_phone)
CALL_T = ["call {c}", "phone {c}", "ring {c}", "give {c} a call", "dial {c}", "can you call {c}",
          "i need to call {c}", "call {c} for me", "get {c} on the phone", "make a call to {c}",
          "please call {c}", "start a call with {c}", "connect me to {c}", "call up {c}",
          "i want to talk to {c}", "phone call to {c}"]
REDIAL_T = ["redial", "call the last number again", "call back", "redial the last number",
            "call them again", "try that call again", "call the last person again",
            "ring them back", "dial again", "repeat the last call", "call again",
            "return the last call"]

# status.query (gen_status): item -> frames
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

# doors.lock (gen_doors)
LOCK = ["lock the doors", "lock the car", "lock up", "lock all doors", "doors locked please",
        "can you lock the doors", "lock it", "secure the car", "lock everything",
        "make sure the doors are locked", "central locking on", "lock the doors now"]
UNLOCK = ["unlock the doors", "unlock the car", "open the locks", "unlock all doors",
          "doors unlocked please", "can you unlock the doors", "unlock it", "let them in",
          "unlock everything", "release the locks", "central locking off", "unlock the doors now"]

# assist.set (gen_assist)
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

# none (gen_refusal)
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
UNLOCK_AGAIN = ["unlock them again", "actually unlock them", "unlock again", "open them again",
                "now unlock", "okay unlock them now", "unlock it again", "let me out unlock"]
LOCK_AGAIN = ["lock them again", "actually lock them", "lock again", "lock it again",
              "now lock", "okay lock them now", "lock up again", "lock the doors again"]

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

# Words a dropped-word augmentation never removes: the ones that carry a request's direction,
# state or amount (removing "off" or "not" would make the label a lie).
KEEP_WORDS = set("""on off up down in out not no don't can't open close closed lock unlock
higher lower more less max min full all half warmer cooler hotter colder""".split()) | \
    set(ONES) | set(t for t in TENS if t)
