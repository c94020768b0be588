#!/usr/bin/python3
"""Makes cabin's voice test audio: held-out assistant commands spoken by espeak-ng (several
voices and speeds), one WAV of all turns with pauses between them, the same mixed with car-like
noise (brown noise + 50/100 Hz hum) at a given SNR with sox, and a reference file.

Commands are the first turns of assets/eval/heldout.jsonl (a first turn needs no context) whose
action is not `none`. Reference words are normalised as the recogniser writes (build_lm.py:
numbers spelled, one spelling per spoken form, "ok" -> "okay"); espeak-ng speaks the text's
own words.

usage: make_test_audio.py --out DIR [--n 16] [--snr 10] [--skip K] [--pause-ms MS]
out: DIR/clean.wav, DIR/noisy.wav (16 kHz mono), DIR/ref.tsv (words<TAB>action per turn),
DIR/ref.jsonl and DIR/typed.jsonl (the same turns as one-turn dialogues, the words as a perfect
recogniser would give them / as typed: `cabin eval-assistant -f` gives the model's own accuracy
on them, the ceiling for actions from speech).
--skip K leaves out the first K commands: `--skip 16 --n 48` is a development set disjoint from
the test set (tests/voice.sh uses the first 16), to tune the recogniser on without tuning it to
the test.
--pause-ms MS speaks each command in two halves (split at its middle word boundary) with MS of
silence between them: a turn-taking test, a hands-free turn must not end inside the pause.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "voice"))
from build_lm import normalise  # noqa: E402

VOICES = [("en-us", 165), ("en-us+f3", 150), ("en-us+m3", 180), ("en-gb", 160), ("en-us+f2", 175),
          ("en-us+m7", 155)]


def sh(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def rms(path):
    out = subprocess.run(["sox", path, "-n", "stat"], capture_output=True, text=True).stderr
    return float(re.search(r"RMS\s+amplitude:\s+([0-9.e-]+)", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--snr", type=float, default=10.0)
    ap.add_argument("--skip", type=int, default=0, help="leave out the first K commands")
    ap.add_argument("--pause-ms", type=int, default=0, help="a pause of MS in the middle of each command")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    picked, skipped = [], 0
    with open(os.path.join(ROOT, "assets", "eval", "heldout.jsonl")) as f:
        for line in f:
            t = json.loads(line)["turns"][0]
            act = re.match(r"<act>(.*?)</act>", t["reply"])
            if not act or act.group(1) == "none":
                continue
            words = normalise(t["user"])
            spoken = normalise(t["user"], canonical=False)   # as typed: "a c" is not "ac" to espeak-ng
            if 2 <= len(words.split()) <= 9:
                if skipped < a.skip:
                    skipped += 1
                    continue
                picked.append((words, act.group(1), t, spoken))
            if len(picked) == a.n:
                break
    parts = []
    sil = os.path.join(a.out, "sil.wav")
    sh("sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", sil, "trim", "0", "0.9")
    parts.append(sil)
    for i, (_, _, _, spoken) in enumerate(picked):
        voice, wpm = VOICES[i % len(VOICES)]
        raw = os.path.join(a.out, "u%02d_raw.wav" % i)
        u = os.path.join(a.out, "u%02d.wav" % i)
        words = spoken.split()
        halves = [spoken] if not a.pause_ms else [" ".join(words[:len(words) // 2]), " ".join(words[len(words) // 2:])]
        pieces = []
        for k, text in enumerate(halves):
            piece = os.path.join(a.out, "u%02d_%d.wav" % (i, k))
            sh("espeak-ng", "-v", voice, "-s", str(wpm), "-w", raw, text)
            sh("sox", "-R", raw, "-r", "16000", "-c", "1", "-b", "16", piece)
            os.remove(raw)
            pieces.append(piece)
        if len(pieces) == 1:
            os.rename(pieces[0], u)
        else:
            gap = os.path.join(a.out, "gap.wav")
            sh("sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", gap, "trim", "0", "%.3f" % (a.pause_ms / 1000))
            # espeak-ng pads each piece with its own silence: trimmed, so that the pause is MS
            trimmed = []
            for k, piece in enumerate(pieces):
                t = piece[:-4] + "_t.wav"
                sh("sox", "-R", piece, t, "silence", "1", "0.01", "0.5%", "reverse", "silence", "1", "0.01", "0.5%", "reverse")
                trimmed.append(t)
            sh("sox", "-R", trimmed[0], gap, trimmed[1], u)
            for f in pieces + trimmed + [gap]:
                os.remove(f)
        parts += [u, sil]
    clean = os.path.join(a.out, "clean.wav")
    sh("sox", "-R", *parts, clean)
    # noise: brown noise plus engine hum, scaled to SNR against the speech's RMS
    dur = float(subprocess.run(["soxi", "-D", clean], capture_output=True, text=True).stdout)
    noise = os.path.join(a.out, "noise.wav")
    # -R (every sox call here): sox's repeatable mode (a fixed seed for its noise and for the
    # dither of each conversion), so both sets are the same audio every run
    sh("sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", noise, "synth", "%.2f" % dur, "brownnoise",
       "synth", "%.2f" % dur, "sine", "mix", "50", "synth", "%.2f" % dur, "sine", "mix", "100", "vol", "0.5")
    speech_rms = sum(rms(os.path.join(a.out, "u%02d.wav" % i)) for i in range(len(picked))) / len(picked)
    gain = speech_rms / (rms(noise) * 10 ** (a.snr / 20))
    scaled = os.path.join(a.out, "noise_s.wav")
    sh("sox", "-R", "-v", "%.5f" % gain, noise, scaled)
    sh("sox", "-R", "-m", clean, scaled, os.path.join(a.out, "noisy.wav"))
    for p in [noise, scaled, sil] + [os.path.join(a.out, "u%02d.wav" % i) for i in range(len(picked))]:
        os.remove(p)
    with open(os.path.join(a.out, "ref.tsv"), "w") as f:
        for words, act, _, _ in picked:
            f.write("%s\t%s\n" % (words, act))
    for name, spoken in (("ref.jsonl", True), ("typed.jsonl", False)):
        with open(os.path.join(a.out, name), "w") as f:
            for words, _, t, _ in picked:
                turn = {"user": words if spoken else t["user"], "reply": t["reply"]}
                f.write(json.dumps({"turns": [turn]}) + "\n")
    print("make_test_audio: %d turns, %.1f s, noise at %.0f dB SNR%s -> %s"
          % (len(picked), dur, a.snr, ", a %d ms pause inside each" % a.pause_ms if a.pause_ms else "", a.out))


if __name__ == "__main__":
    main()
