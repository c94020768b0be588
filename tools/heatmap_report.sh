#!/bin/sh
# Does the sensitivity heat map pick the right tensors? On a model (default: the embedded one):
# `cabin heatmap` on calibration text (training dialogues) derives a plan at BUDGET bits per
# weight (Q8_0 for the most sensitive layer matrices, Q4_0 for the rest); that plan, uniform
# Q4_0, and SEEDS plans that spend the same budget on randomly chosen tensors are then judged on
# different text (held-out dialogues) by KL against the file's precision (`cabin ppl --kl-base`).
# Usage: sh tools/heatmap_report.sh [BUILD] [MODEL] [BUDGET] [SEEDS]
set -e
BUILD=${1:-build}
M=${2:-assets/models/cabin-tiny.gguf}
BUDGET=${3:-5.5}
SEEDS=${4:-5}
CABIN="$BUILD/cabin"
T=$(mktemp -d /tmp/cabin-heat-XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -f build/corpus/train.jsonl ] || /usr/bin/python3 tools/corpus/gen_corpus.py --train-out build/corpus/train.jsonl --heldout-out "$T/unused.jsonl" >/dev/null
/usr/bin/python3 tools/corpus/chat_text.py build/corpus/train.jsonl "$T/calib.txt" --limit 400
/usr/bin/python3 tools/corpus/chat_text.py assets/eval/heldout.jsonl "$T/heldout.txt"
echo "model $M, budget $BUDGET bits per weight over the layer matrices"
echo "heat map: $CABIN heatmap -m $M -f calib.txt --type q4_0 --tokens 512 --json hm.json --plan-out plan.json --budget $BUDGET"
"$CABIN" heatmap -m "$M" -f "$T/calib.txt" --type q4_0 --tokens 512 --json "$T/hm.json" \
    --plan-out "$T/plan.json" --budget "$BUDGET" --no-cache -q | grep '^plan'
# random plans: tensors in a random order, each promoted to Q8_0 while the budget allows
/usr/bin/python3 - "$T/hm.json" "$BUDGET" "$SEEDS" "$T" <<'PY'
import json, random, sys
hm = json.load(open(sys.argv[1])); budget = float(sys.argv[2]); seeds = int(sys.argv[3]); out = sys.argv[4]
cells = hm["cells"]
total = sum(c["n_weights"] for c in cells)
for seed in range(1, seeds + 1):
    rng = random.Random(seed)
    order = cells[:]; rng.shuffle(order)
    bits = 4.5 * total; chosen = []
    for c in order:
        if (bits + 4.0 * c["n_weights"]) / total <= budget:
            bits += 4.0 * c["n_weights"]; chosen.append(c)
    plan = {"default": "q4_0", "rules": [{"layers": str(c["layer"]), "tensors": [c["kind"]], "type": "q8_0"} for c in chosen]}
    json.dump(plan, open("%s/random%d.json" % (out, seed), "w"))
    print("random plan %d: %d of %d tensors at Q8_0, %.3f bits/weight" % (seed, len(chosen), len(cells), bits / total))
PY
PPL="$CABIN ppl -m $M -f heldout.txt --ctx 256 --chunks 40"
echo "judged on held-out dialogues: $PPL --save-base base.kl, then --precision PLAN --kl-base base.kl"
"$CABIN" ppl -m "$M" -f "$T/heldout.txt" --ctx 256 --chunks 40 --save-base "$T/base.kl" >/dev/null 2>&1
kl() {   # NAME PLAN
    "$CABIN" ppl -m "$M" -f "$T/heldout.txt" --ctx 256 --chunks 40 --precision "$2" --kl-base "$T/base.kl" 2>/dev/null \
        | grep "vs base" | sed "s|^|$1: |"
}
kl "uniform q4_0" q4_0 | tee "$T/r.txt"
kl "heat-map plan" "$T/plan.json" | tee -a "$T/r.txt"
s=1
while [ $s -le "$SEEDS" ]; do kl "random plan $s" "$T/random$s.json" | tee -a "$T/r.txt"; s=$((s + 1)); done
/usr/bin/python3 - "$T/r.txt" <<'PY'
import re, statistics, sys
kl = {}
for line in open(sys.argv[1]):
    m = re.search(r"mean KL ([0-9.eE+-]+)", line)
    if m: kl[line.split(":")[0]] = float(m.group(1))
u, h = kl["uniform q4_0"], kl["heat-map plan"]
r = [v for k, v in kl.items() if k.startswith("random")]
print("mean KL: uniform q4_0 %.5f, heat-map plan %.5f (%.0f%% lower), random plans mean %.5f (min %.5f, max %.5f)"
      % (u, h, 100 * (1 - h / u), statistics.mean(r), min(r), max(r)))
PY
