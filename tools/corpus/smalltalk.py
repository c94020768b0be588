#!/usr/bin/python3
"""The small-talk stage's corpus: the main training corpus with turns that ask nothing of the car
put in — greetings, thanks, goodbyes, small talk, questions about cabin itself and requests the
car cannot do — each answered `<act>none</act>` with a fitting sentence (a greeting back, a
one-sentence list of what cabin does, a polite no).

    smalltalk.py --train build/corpus/train.jsonl --out build/corpus/train_smalltalk.jsonl

Every dialogue of --train is kept, in order; with its own seeded stream (so the main corpus and
the held-out sets never change), a share of them gets a greeting or a question about cabin
before its first turn, a share a thanks or goodbye after its last, and standalone small-talk
dialogues of 1-3 turns come in between. Speech noise is the main corpus's (gen_corpus.add_noise).
With --teacher FILE (another draw of gen_corpus.py, e.g. another seed with more word drops and
synonyms), that file's dialogues are spread in between too, every turn marked "teacher": texts
the model is not taught on, where train.py --distill holds its answers to the model it starts
from (KL only, no cross-entropy), so that the stage moves less of what it was not shown.
No training text is a user text of the held-out sets (assets/eval/heldout.jsonl and the
hand-written assets/eval/smalltalk.jsonl), ignoring case and punctuation; tests/test_corpus.py
checks it.
"""
import argparse
import itertools
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_corpus  # noqa: E402

# Per kind: training frames (the held-out hand-written set is written apart from these) and the
# sentences that answer them.
GREET_T = ["hi", "hello", "hey", "hey cabin", "hi there", "good morning", "good evening",
           "hello cabin", "hey there", "morning", "evening", "hi hi", "yo", "hello again",
           "hey you", "good morning cabin", "hi again", "oh hi", "howdy", "hey friend",
           "hello my friend", "hi there cabin", "hey hi", "ok hello", "hello cabin good morning",
           "hi cabin good evening", "top of the morning", "hey cabin hi", "sup"]
SMALL_T = ["how are you", "how are you today", "how's it going", "how are things", "you there",
           "are you awake", "are you on", "i'm tired", "i'm hungry", "what a day", "it's a nice day",
           "i like this car", "you're great", "you're funny", "good job", "well done",
           "how have you been", "how do you feel", "i'm happy", "i'm sad", "i'm stressed", "nice car",
           "let's go", "here we go", "ready to go", "how was your day", "do you hear me",
           "hello are you on", "how are you cabin", "i'm fine", "not bad", "i'm good thanks",
           "it's been a long drive", "lovely weather today", "what a beautiful day"]
THANKS_T = ["thanks", "thank you", "thanks cabin", "thank you very much", "great", "great thank you",
            "thanks so much", "cool thanks", "ok thanks", "that's great", "many thanks", "nice",
            "thanks a bunch", "good", "that's better", "that's nice thanks", "appreciate it", "ty",
            "lovely", "excellent", "brilliant thanks", "cool", "sweet", "ok great", "thank you kindly",
            "that's exactly right", "wonderful", "fantastic thanks"]
BYE_T = ["goodbye", "bye cabin", "see you", "see you soon", "later", "bye for now", "that's it",
         "that's all", "nothing else", "no that's all", "good bye", "have a nice day",
         "catch you later", "i'm all set", "all done", "night", "goodnight cabin", "that's all thanks",
         "bye then", "okay bye", "see you tomorrow", "that will be all", "nothing more thanks",
         "we're done", "farewell"]
ABOUT_T = ["what can you do", "who are you", "help", "what can you do for me", "what do you know",
           "what are you capable of", "how can you help", "tell me your name", "who made you",
           "what is cabin", "are you a person", "are you human", "how does this work",
           "what should i say", "what can i say", "list your commands", "what are your features",
           "can you help me", "help please", "i need help", "what things can you do",
           "what can you control", "what do you help with", "are you an ai", "are you siri",
           "what's your job", "how do i talk to you", "what can you change in the car",
           "give me some examples", "what kind of things can i ask"]
CANNOT_T = ["open the hood", "open the boot", "turn on the engine", "start the car", "honk",
            "beep the horn", "adjust the mirrors", "set a reminder", "remind me about the meeting",
            "remind me to get gas", "remind me to call mom later", "set an alarm for six thirty",
            "set a timer", "wake me at seven", "read my texts", "send a text to mom",
            "check my messages", "what's on my schedule", "add milk to the list", "take a picture",
            "record a video", "order a coffee", "pay the toll", "open the gate", "park the car",
            "drive for me", "turn on autopilot", "change the oil", "wash the car",
            "lower the suspension", "check my inbox", "reply to that email", "make a note",
            "write down my parking spot", "put this on my calendar", "buy a coffee",
            "send my location to dad", "turn on the dashcam", "open the fuel door",
            "lock the phone", "charge my phone", "find my keys", "book a car wash",
            "remind me to call the bank", "remind me to call grandma on sunday", "remind me in an hour",
            "remind me to take my pills", "set a reminder for tomorrow morning", "start a countdown",
            "set a timer for five minutes", "time my run", "start a stopwatch", "pay my rent",
            "check my bank balance", "send money to john", "buy tickets for the game",
            "order flowers for my wife", "book a doctor's appointment", "cancel my meeting",
            "schedule a call with the team", "turn on the tv at home", "feed the dog",
            "water the plants", "turn on the washing machine", "make a reservation",
            "open the tailgate", "turn on the hazard lights", "flash the high beams",
            "wipe the windshield", "switch to sport mode", "turn on the massage",
            "raise the car", "open the charging port"]

REPLIES = {
    "greet": ["Hello! What can I do for you?", "Hi! How can I help?", "Hello. How can I help you today?",
              "Hi there. What would you like me to do?"],
    "small": ["I'm doing well, thanks. What can I do for you?", "I'm here and ready to help.",
              "All good here. How can I help?"],
    "thanks": ["You're welcome.", "Happy to help.", "Anytime.", "Glad I could help."],
    "bye": ["Goodbye, drive safely.", "See you later. Drive safely.", "Bye for now."],
    "about": ["I'm cabin, your car's assistant. I can help with climate, seats, windows, lights, "
              "media, navigation and calls.",
              "I can control the climate, seats, windows, sunroof, lights, media, navigation, "
              "calls and driver assists.",
              "Ask me to change the temperature, play music, navigate somewhere or call someone."],
    "cannot": ["Sorry, I can't do that from here.", "Sorry, that's not something I can do in this car.",
               "I can't do that, but I can help with the car's controls."],
}
FRAMES = {"greet": GREET_T, "small": SMALL_T, "thanks": THANKS_T, "bye": BYE_T, "about": ABOUT_T,
          "cannot": CANNOT_T}


def turn(rng, kind, held_texts):
    """A small-talk turn of this kind whose text is no held-out user text."""
    while True:
        user = gen_corpus.add_noise(rng, rng.choice(FRAMES[kind]))
        if gen_corpus.norm_text(user) not in held_texts:
            return {"user": user, "reply": "<act>none</act> " + rng.choice(REPLIES[kind]), "new": True}


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train", default="build/corpus/train.jsonl")
    ap.add_argument("--out", default="build/corpus/train_smalltalk.jsonl")
    ap.add_argument("--heldout", action="append", default=None,
                    help="held-out sets whose user texts stay out (default assets/eval/heldout.jsonl "
                    "and assets/eval/smalltalk.jsonl)")
    ap.add_argument("--seed", type=int, default=9173)
    ap.add_argument("--greet", type=float, default=0.08, help="share of dialogues opened by a greeting")
    ap.add_argument("--close", type=float, default=0.08, help="share closed by a thanks or goodbye")
    ap.add_argument("--ask", type=float, default=0.04,
                    help="share opened by small talk, a question about cabin or a request it cannot do")
    ap.add_argument("--alone", type=float, default=0.05,
                    help="standalone small-talk dialogues, per dialogue of --train")
    ap.add_argument("--teacher", default="",
                    help="a corpus of dialogues (another draw of gen_corpus.py) put in between, every "
                    "turn marked teacher: train.py --distill holds the model to its starting point there")
    a = ap.parse_args()
    held_paths = a.heldout or ["assets/eval/heldout.jsonl", "assets/eval/smalltalk.jsonl"]
    held_texts = {gen_corpus.norm_text(t["user"]) for p in held_paths for d in read_jsonl(p)
                  for t in d["turns"]}
    rng = random.Random(a.seed)
    out, added = [], 0
    train = read_jsonl(a.train)
    teacher = [d for d in (read_jsonl(a.teacher) if a.teacher else [])
               if not any(gen_corpus.norm_text(t["user"]) in held_texts for t in d["turns"])]
    teacher_rng = random.Random(a.seed + 2)   # its own stream: without --teacher the same corpus
    teacher_rate = len(teacher) / max(1, len(train))   # teacher dialogues per dialogue of --train
    teacher_left = iter(teacher)

    def put_teacher(n):
        for d in itertools.islice(teacher_left, n):
            out.append({"turns": [dict(t, teacher=True) for t in d["turns"]]})

    for d in train:
        put_teacher(int(teacher_rate) + (teacher_rng.random() < teacher_rate % 1))
        turns = list(d["turns"])
        if rng.random() < a.greet:
            turns.insert(0, turn(rng, "greet", held_texts))
        elif rng.random() < a.ask:
            turns.insert(0, turn(rng, rng.choice(["small", "about", "cannot", "cannot"]), held_texts))
        if rng.random() < a.close:
            turns.append(turn(rng, rng.choice(["thanks", "thanks", "bye"]), held_texts))
        added += len(turns) - len(d["turns"])
        out.append({"turns": turns})
        if rng.random() < a.alone:
            kinds = [rng.choice(list(FRAMES)) for _ in range(rng.choice([1, 1, 2, 3]))]
            out.append({"turns": [turn(rng, k, held_texts) for k in kinds]})
            added += len(kinds)
    put_teacher(len(teacher))   # what the draw left
    gen_corpus.write_jsonl(a.out, out)
    print("smalltalk: %d dialogues (%d small-talk turns added) -> %s" % (len(out), added, a.out))


if __name__ == "__main__":
    main()
