#!/usr/bin/python3
"""A long scripted conversation through `cabin chat`: does it keep answering, in bounded memory?

The opening requests of the held-out dialogues (assets/eval/heldout.jsonl), cycled, are typed
into one `cabin chat` session (greedy) under an eviction policy until the conversation has
passed TOKENS tokens (prompts + replies). Each turn is followed by /stats, whose line separates
the turns and gives the turn's token counts and the cache occupancy. Reported: total tokens,
peak RSS (/usr/bin/time), cache occupancy, and the action exact-match of the replies (against
the held-out reference for that request) in the first and the last WINDOW turns, so a
conversation that degrades as it goes shows up as a drop.

Usage: tools/long_chat.py [--cabin build/cabin] [--model M] [--tokens 20000]
                          [--policy window:512] [--kv f16] [--window 100]
"""
import argparse, json, re, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--cabin", default="build/cabin")
ap.add_argument("--model", default="assets/models/cabin-tiny.gguf")
ap.add_argument("--tokens", type=int, default=20000)
ap.add_argument("--policy", default="window:512")
ap.add_argument("--kv", default="f16")
ap.add_argument("--window", type=int, default=100)
a = ap.parse_args()

first_turns = []
for line in open("assets/eval/heldout.jsonl"):
    t = json.loads(line)["turns"][0]
    m = re.match(r"<act>(.*?)</act>", t["reply"])
    first_turns.append((t["user"], m.group(1).strip() if m else None))

# about 40 tokens per turn on this model: type enough turns, the run stops being scored at TOKENS
n_turns = a.tokens // 25 + 50
turns = [first_turns[i % len(first_turns)] for i in range(n_turns)]
script = "".join("%s\n/stats\n" % u for u, _ in turns)
with tempfile.NamedTemporaryFile("w", suffix=".time") as tf:
    cmd = ["/usr/bin/time", "-f", "%M", "-o", tf.name, a.cabin, "chat", "-m", a.model, "--temp", "0",
           "--kv", a.kv, "--kv-policy", a.policy, "-t", "1"]
    print("$ " + " ".join(cmd[5:]) + "  (%d turns piped, each followed by /stats)" % n_turns)
    p = subprocess.run(cmd, input=script, capture_output=True, text=True)
    peak_kib = int(open(tf.name).read().split()[-1])
if p.returncode != 0:
    print("cabin chat failed (exit %d): %s" % (p.returncode, p.stderr.strip()[-500:]))
    sys.exit(1)

stat_re = re.compile(r"^\[prompt (\d+) tok.*?, (\d+) tok at .*\| cache (\d+)/(\d+) \|")
results, actions, total, max_used, n_ctx = [], [], 0, 0, 0
for line in p.stdout.splitlines():
    if line.startswith("[action] "):
        actions.append(line[len("[action] "):].strip())
        continue
    m = stat_re.match(line)
    if not m:
        continue
    k = len(results)
    total += int(m.group(1)) + int(m.group(2))
    max_used, n_ctx = max(max_used, int(m.group(3))), int(m.group(4))
    want = turns[k][1]
    results.append((total, actions[-1] if actions else None, want))
    actions = []

if not results or results[-1][0] < a.tokens:
    print("the conversation stopped at %d tokens after %d turns (wanted %d)" % (total, len(results), a.tokens))
    sys.exit(1)
upto = next(i for i, r in enumerate(results) if r[0] >= a.tokens) + 1
results = results[:upto]
def exact(rs):
    return sum(1 for _, got, want in rs if got == want) / max(1, len(rs))
w = min(a.window, len(results) // 2)
print("%d turns, %d tokens through a %d-slot cache (policy %s, kv %s); cache never held more than %d"
      % (len(results), results[-1][0], n_ctx, a.policy, a.kv, max_used))
print("peak RSS %.1f MiB" % (peak_kib / 1024))
print("action exact-match: first %d turns %.1f%%, last %d turns %.1f%%"
      % (w, 100 * exact(results[:w]), w, 100 * exact(results[-w:])))
