#!/usr/bin/python3
"""Dialogues (JSONL, one {"turns": [{"user", "reply"}, ...]} per line) as text in the embedded
model's chat layout, for cabin ppl, heatmap and quantize --calib:
    chat_text.py IN.jsonl OUT.txt [--limit N]      (the first N dialogues; default all)"""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("src")
ap.add_argument("dst")
ap.add_argument("--limit", type=int, default=None)
a = ap.parse_args()
with open(a.dst, "w") as out:
    for i, line in enumerate(open(a.src)):
        if a.limit is not None and i >= a.limit:
            break
        for t in json.loads(line)["turns"]:
            out.write("<|user|>\n%s<|end|>\n<|assistant|>\n%s<|end|>\n" % (t["user"], t["reply"]))
