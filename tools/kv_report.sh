#!/bin/sh
# The KV-cache tables of docs/KV.md: decode tok/s at depths 512/2048/4096 for each KV format and
# for each eviction policy at a budget of 25% of the context (cabin bench --depth), on a model.
# Usage: sh tools/kv_report.sh [BUILD] MODEL [THREADS]
# Each row is one `cabin bench -m MODEL -t THREADS -c 4096+NGEN+48 --kv F [--kv-policy P] --depth D
# -n NGEN -r REPS` (NGEN=16, REPS=1 by default: the median of REPS runs of NGEN decoded tokens after
# filling the cache to depth D; small models need NGEN=256 to time more than scheduling noise).
set -e
BUILD=${1:-build}
M=${2:?usage: kv_report.sh BUILD MODEL [THREADS]}
THREADS=${3:-2}
REPS=${REPS:-1}
NGEN=${NGEN:-16}
CABIN="$BUILD/cabin"
CTX=$((4096 + NGEN + 48))          # 4096 + the decoded tokens + slack
BUDGET=$((4096 / 4))           # 25% of the context
row() {   # FORMAT POLICY DEPTH
    "$CABIN" bench -m "$M" -t "$THREADS" -c $CTX --kv "$1" --kv-policy "$2" --depth "$3" -n "$NGEN" -r "$REPS" --json \
        | /usr/bin/python3 -c "
import json, sys
j = json.load(sys.stdin)
print('| %-4s | %-14s | %5d | %9.2f | %8.1f |' % (j['kv_format'], j['kv_policy'], j['depth'], j['decode_tps'], j['kv_bytes'] / 1048576))"
}
echo "model $M, $THREADS threads, context $CTX, $NGEN decoded tokens per run, median of $REPS"
echo "| KV   | policy         | depth | decode tok/s | KV MiB |"
echo "|---|---|---:|---:|---:|"
for f in f16 q8 q4; do
    for d in 512 2048 4096; do row $f none $d; done
done
for p in window:$BUDGET h2o:$BUDGET entropy:$BUDGET; do
    for d in 512 2048 4096; do row f16 "$p" $d; done
done
