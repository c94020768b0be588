#!/bin/sh
# End-to-end checks of the cabin command line: every command's --help, the commands on a
# generated model, and one clear line (no crash) for bad input.
TAG=cli; . "$(dirname "$0")/lib.sh"

expect_rc 0 "cabin help" -- "$CABIN" help
grep -q "generate" "$T/out" && ok || bad "help lists commands"
for c in info tokenize generate logits chat bench make-model; do
    expect_rc 0 "cabin $c --help" -- "$CABIN" $c --help
    grep -q "usage: cabin $c" "$T/out" && ok || bad "$c --help prints usage"
done
# ppl on the embedded model says what its figure is; progress in a log is lines, not carriage returns
expect_rc 0 "ppl on the embedded model" -- "$CABIN" ppl --chunks 12
grep -q "note: every token of the dialogues is scored, the driver's words too" "$T/err" && ok ||
    { bad "ppl on the embedded model says what the figure means"; cat "$T/err"; }
! grep -q "$(printf '\r')" "$T/err" && [ "$(grep -c '^\[[0-9]*/12\] ppl' "$T/err")" -le 12 ] && grep -q '^\[12/12\] ppl' "$T/err" && ok ||
    { bad "ppl progress off a terminal: short lines without carriage returns"; od -c "$T/err" | head -5; }
# bench: a decode above the memory ceiling says why on its own line (cache-resident, or disturbed)
expect_rc 0 "bench on the embedded model" -- "$CABIN" bench -r 1 -n 8 -p 8 -t 1
line=$(grep '^decode ' "$T/out")
pct=$(echo "$line" | grep -o '[0-9.]*%' | head -1 | tr -d %)
case "$line" in
    "decode from cache: "*"last-level cache, so the memory ceiling does not bound this decode"*|*DISTURBED*) ok ;;
    *) awk "BEGIN{exit !(${pct:-0} <= 100)}" && ok || bad "bench: a decode above the ceiling says why: $line" ;;
esac
# an output that cannot be written is refused before the work, on every command that writes one
for a in "sweep --json /nonexistent-dir/s.json" "bench --json /nonexistent-dir/b.json" "heatmap --csv /nonexistent-dir/h.csv" \
         "eval-assistant --errors /nonexistent-dir/e.tsv" "make-model -o /nonexistent-dir/m.gguf" "ppl --save-base /nonexistent-dir/b.bin"; do
    expect_rc 2 "cabin $a" -- "$CABIN" $a   # 2: refused as a usage error, when parsed
    one_line_error "cannot write /nonexistent-dir/" "an unwritable output of cabin $a"
done
# context messages name what the command in use offers
expect_rc 1 "generate past a tiny context" -- "$CABIN" generate -p "hello there how are you" -c 5 -n 20
grep -q "context full: .*(a larger --ctx)" "$T/err" && ! grep -q "/reset" "$T/err" && ok || { bad "generate: context full names --ctx, not /reset"; cat "$T/err"; }
printf 'hello there how are you doing today\n' | "$CABIN" chat -c 12 >"$T/out" 2>"$T/err"
grep -q "context full: .*(/reset, or a larger --ctx)" "$T/err" && ok || { bad "chat: context full names /reset"; cat "$T/err"; }
"$CABIN" generate -p hi -c 16000000 -n 1 >"$T/out" 2>"$T/err"
if grep -q "KV cache" "$T/err"; then
    grep -q "the model's own context is 1024 (--ctx 1024)" "$T/err" && ok || { bad "a context too large for memory names the model's own"; cat "$T/err"; }
fi
# --version: the release, the commit, the layers and the kernel tables
for v in --version version; do
    expect_rc 0 "cabin $v" -- "$CABIN" $v
    grep -Eq '^cabin [0-9]+\.[0-9]+\.[0-9]+ \(commit [0-9a-f]{7,}(-dirty)?|unknown\)' "$T/out" &&
        grep -q '^vulkan: ' "$T/out" && grep -q '^audio: ' "$T/out" && grep -q '^window: ' "$T/out" &&
        grep -q '^cpu kernels: .*scalar (runs here' "$T/out" && grep -q 'auto takes it' "$T/out" && ok ||
        { bad "cabin $v names the version, commit, layers and kernel tables"; cat "$T/out"; }
    # where the avx512 table runs, whether its prefill runs on AMX, and why not
    if grep -q 'avx512 (runs here' "$T/out"; then
        grep -Eq '^avx512 amx:  (F16 and BF16 prefill on AMX tiles|not used \()' "$T/out" && ok ||
            { bad "cabin $v says whether the avx512 table's prefill runs on AMX"; cat "$T/out"; }
    fi
done
expect_rc 2 "unknown command" -- "$CABIN" frobnicate
one_line_error "frobnicate" "an unknown command"
expect_rc 2 "unknown option" -- "$CABIN" generate --frob
one_line_error "frob" "an unknown option"
expect_rc 2 "bad number" -- "$CABIN" generate -p hi -n lots
one_line_error "lots" "a bad number"
grep -q "cabin generate: option -n" "$T/err" && ok || bad "a bad number names the command and the option"
# Numbers are range-checked in the option tables: one line naming the option, the value and the
# range, exit 2 (before any model is opened).
for a in "chat -t 0" "chat -t -3" "bench -t 1000" "chat -n -5" "chat --ctx 0" "chat --ctx -4" "chat --batch 0" \
         "chat --temp -1" "chat --top-p 2" "generate -p hi -n -5" "bench -r 0" "sweep -r 17" "voice --tts-wpm 5"; do
    value=$(echo "$a" | awk '{ print $NF }'); opt=$(echo "$a" | awk '{ print $(NF-1) }')
    expect_rc 2 "cabin $a" -- "$CABIN" $a
    [ "$(wc -l <"$T/err")" = 1 ] && grep -q -- "option $opt: $value is out of range (" "$T/err" && ok ||
        { bad "cabin $a: one line naming the option, the value and the range"; cat "$T/err"; }
done
# the window's one minimum, enforced where it is asked for
expect_rc 2 "gui --size below the minimum" -- "$CABIN" gui --size 800x500
one_line_error "from 960x600" "a window smaller than the minimum"
expect_rc 2 "temp nan" -- "$CABIN" chat --temp nan
one_line_error "'nan' is not a number" "a number that is not one"
# more threads than the CPUs: allowed, said once
echo | "$CABIN" chat -t 64 -n 1 >/dev/null 2>"$T/err"
[ "$(grep -c 'more threads than the' "$T/err")" = 1 ] && ok || { bad "-t above the CPUs said once"; cat "$T/err"; }
expect_rc 2 "missing value" -- "$CABIN" ppl --window
one_line_error "cabin ppl: option --window needs a value" "a missing value"

# Options come from one table per command: --help-options lists its spellings. Every spelling is
# in --help, every option --help shows is in the table, the parser takes each (with a value of its
# kind; --help after it stops the command), and no spelling is in a command's tables twice.
"$CABIN" help | awk '/^commands:/ { on = 1; next } on && $1 != "help" { print $1 }' >"$T/commands"
[ "$(wc -l <"$T/commands")" -ge 18 ] && ok || bad "cabin help lists the commands"
while read -r c; do
    "$CABIN" $c --help >"$T/help" 2>&1 && "$CABIN" $c --help-options >"$T/spell" 2>&1 || { bad "$c --help / --help-options"; continue; }
    missing=$(awk '{ print $1 }' "$T/spell" | while read -r o; do grep -Eq -- "(^|[ ,])$o( |,|\$)" "$T/help" || echo "$o"; done)
    [ -z "$missing" ] && ok || bad "$c --help does not show:" $missing
    shown=$(grep -Eo -- '^  (-[a-zA-Z], )?--[a-z0-9-]+' "$T/help" | sed 's/.*--/--/' | grep -v -- '^--help$')
    unlisted=$(for o in $shown; do grep -q -- "^$o " "$T/spell" || echo "$o"; done)
    [ -z "$unlisted" ] && ok || bad "$c --help shows options its table lacks:" $unlisted
    [ -z "$(awk '{ print $1 }' "$T/spell" | sort | uniq -d)" ] && ok || bad "$c: a spelling twice"
    refused=$(while read -r o kind; do
        case $kind in flag|out) v= ;; int|u64|number) v=1 ;; *) v=tiny ;; esac
        "$CABIN" $c $o $v --help >/dev/null 2>"$T/perr" || { grep -q "unknown option\|needs a value\|is not" "$T/perr" && echo "$o"; }
    done <"$T/spell")
    [ -z "$refused" ] && ok || bad "$c refuses its own options:" $refused
done <"$T/commands"
# the options that shadowed a shared one with another meaning have their own names now
"$CABIN" sweep --help-options >"$T/spell"
grep -q "^--backends list" "$T/spell" && grep -q "^--kv-list list" "$T/spell" && grep -q "^--backend string" "$T/spell" &&
    grep -q "^--kv string" "$T/spell" && ok || bad "sweep: --backends and --kv-list apart from the shared --backend and --kv"
for c in ppl heatmap; do
    "$CABIN" $c --help-options >"$T/spell"
    grep -q "^--window int" "$T/spell" && [ "$(grep -c -- '^--ctx ' "$T/spell")" = 1 ] && ok || bad "$c: --window apart from the shared --ctx"
done

# a generated model
expect_rc 0 "make-model" -- "$CABIN" make-model -o "$T/m.gguf" --type q4_0 --dim 64 --ffn 128 --vocab 400
expect_rc 0 "info" -- "$CABIN" info "$T/m.gguf"
grep -q "Q4_0" "$T/out" && grep -q "architecture *llama" "$T/out" && ok || { bad "info shows arch and types"; cat "$T/out"; }
expect_rc 0 "info --meta --tensors" -- "$CABIN" info --meta --tensors "$T/m.gguf"
grep -q "blk.1.ffn_down.weight" "$T/out" && grep -q "llama.block_count" "$T/out" && ok || bad "info lists tensors and keys"
expect_rc 0 "tokenize" -- "$CABIN" tokenize -m "$T/m.gguf" "eta oin"
grep -Eq '^1( [0-9]+)+$' "$T/out" && ok || { bad "tokenize prints BOS then ids"; cat "$T/out"; }
expect_rc 0 "tokenize --no-bos --pieces" -- "$CABIN" tokenize -m "$T/m.gguf" --no-bos --pieces "eta"
head -1 "$T/out" | grep -q "'" && ok || bad "pieces shown"
expect_rc 0 "generate --ids" -- "$CABIN" generate -m "$T/m.gguf" -p "eta" -n 8 --temp 0 --ids --ignore-eos
[ "$(wc -w <"$T/out")" = 8 ] && ok || { bad "8 ids generated"; cat "$T/out"; }
cp "$T/out" "$T/greedy1"
"$CABIN" generate -m "$T/m.gguf" -p "eta" -n 8 --temp 0 --ids --ignore-eos -t 1 >"$T/greedy2" 2>/dev/null
cmp -s "$T/greedy1" "$T/greedy2" && ok || bad "greedy ids do not depend on threads"
"$CABIN" generate -m "$T/m.gguf" -p "eta" -n 8 --temp 0 --ids --ignore-eos --mmap >"$T/greedy3" 2>/dev/null
cmp -s "$T/greedy1" "$T/greedy3" && ok || bad "--mmap (weights read from the file) gives the same ids as the copy"
"$CABIN" generate -m "$T/m.gguf" -p "eta" -n 16 --seed 9 --temp 1 --ids --ignore-eos >"$T/s1" 2>/dev/null
"$CABIN" generate -m "$T/m.gguf" -p "eta" -n 16 --seed 9 --temp 1 --ids --ignore-eos >"$T/s2" 2>/dev/null
cmp -s "$T/s1" "$T/s2" && ok || bad "same seed, same tokens"
expect_rc 0 "logits" -- "$CABIN" logits -m "$T/m.gguf" -p "eta oin" --top 5 --out "$T/l.f32"
[ "$(wc -l <"$T/out")" = 5 ] && ok || bad "5 logit lines"
[ "$(stat -c %s "$T/l.f32")" = $((400 * 4)) ] && ok || bad "--out writes n_vocab floats"
expect_rc 0 "logits --backend cpu-scalar" -- "$CABIN" logits -m "$T/m.gguf" -p "eta oin" --top 1 --backend cpu-scalar
expect_rc 0 "bench" -- "$CABIN" bench -m "$T/m.gguf" -p 8 -n 4 -r 1 --json
# the floor: bandwidth passes between the runs (2 after the warm-up, 2 per repetition), bytes
# per token of weights and KV, and a percentage above 100 only with a reason (cache or disturbed)
/usr/bin/python3 - "$T/out" <<'PY' && ok || bad "bench --json: the floor's fields: $(cat "$T/out")"
import json, sys
j = json.load(open(sys.argv[1]))
p = j["bandwidth_passes_gbs"]
assert j["decode_tps"] > 0 and len(p) == 4 and j["bandwidth_gbs"] == max(p) and j["bandwidth_worst_gbs"] == min(p)
assert j["decode_bytes_per_token"] == j["decode_weight_bytes_per_token"] + j["decode_kv_bytes_per_token"]
assert j["decode_kv_bytes_per_token"] > 0 and j["bandwidth_buffer_bytes"] >= 1 << 28
assert j["decode_pct_of_ceiling"] <= 100 or j["cache_resident"] or j["disturbed"]
assert j["weights_copied_bytes"] > 0   # the CPU copies the weights at load
PY
"$CABIN" bench -m "$T/m.gguf" -p 8 -n 4 -r 1 --json --mmap >"$T/out" 2>/dev/null
/usr/bin/python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['weights_copied_bytes'] == 0" "$T/out" 2>/dev/null && ok ||
    bad "bench --mmap: weights read from the file: $(cat "$T/out")"
/usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/out" 2>/dev/null && ok || bad "bench --json on stdout is JSON"
expect_rc 0 "bench --json FILE" -- "$CABIN" bench -m "$T/m.gguf" -p 8 -n 4 -r 1 --json "$T/bench.json"
grep -q '^| tg4 ' "$T/out" && /usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/bench.json" 2>/dev/null && ok ||
    { bad "bench --json FILE: the table on stdout, JSON in the file"; cat "$T/out"; }
if [ -w /dev/full ]; then   # a write that fails at close: one error line, exit 1, no crash
    expect_rc 1 "bench --json /dev/full" -- "$CABIN" bench -p 4 -n 2 -r 1 --json /dev/full   # the embedded model
    [ "$(wc -l <"$T/err")" = 1 ] && grep -q '^cabin bench: /dev/full: write failed' "$T/err" && ok || { bad "bench --json /dev/full: one line"; cat "$T/err"; }
else skip=$((skip + 1)); echo "skipped: bench --json /dev/full: no writable /dev/full here"; fi
# sweep: a --backend given is the list of one it sweeps over (--backends takes a list)
expect_rc 0 "sweep --backend" -- "$CABIN" sweep -m "$T/m.gguf" --weights f32 --backend cpu-scalar -n 2 --tokens 64 --kl-ctx 32 -t 1 --json
/usr/bin/python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points']; assert [x['backend'] for x in p] == ['cpu-scalar']" "$T/out" 2>/dev/null &&
    ok || { bad "sweep --backend cpu-scalar sweeps that backend"; cat "$T/out"; }
# The backend registry: `cabin devices` lists its rows; --backend takes every listed name (the
# run goes through, or fails at its device in one line, never as an unknown backend); an unlisted
# name is refused with the same list; the vulkan row is there exactly when the build has Vulkan.
"$CABIN" devices >"$T/dev" 2>/dev/null
rows=$(sed -n '/^backends /,/^[^ ]/p' "$T/dev" | awk '/^  /{print $1}')
listed="auto$(printf ', %s' $rows)"
echo " $(echo $rows) " | grep -q " cpu " && echo " $(echo $rows) " | grep -q " cpu-scalar " && ok ||
    bad "cabin devices lists cpu and cpu-scalar: $(echo $rows)"
want_vk=no; grep -q 'VULKAN=1' "$BUILD/features" 2>/dev/null && want_vk=yes
have_vk=no; case " $(echo $rows) " in *" vulkan "*) have_vk=yes ;; esac
[ "$want_vk" = "$have_vk" ] && ok || bad "vulkan row: built $want_vk, listed $have_vk"
for b in $rows; do
    "$CABIN" logits -m "$T/m.gguf" -p hi --top 1 --backend "$b" >"$T/out" 2>"$T/err"; rc=$?
    { [ $rc = 0 ] || { [ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ]; }; } && ! grep -q "unknown backend" "$T/err" &&
        ok || { bad "--backend $b (listed by cabin devices) rc $rc"; cat "$T/err"; }
done
expect_rc 1 "unlisted backend" -- "$CABIN" logits -m "$T/m.gguf" -p hi --backend warp
grep -q "unknown backend 'warp' (available: $listed)" "$T/err" && ok ||
    { bad "the unknown-backend error lists what cabin devices lists ($listed)"; cat "$T/err"; }
printf 'hello\n/stats\n/reset\nagain\n' | "$CABIN" chat -m "$T/m.gguf" -n 8 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "conversation cleared" "$T/out" && grep -q "tok/s" "$T/out" && ok || { bad "piped chat"; cat "$T/out" "$T/err"; }
# chat's / commands are rows of the one command table: /help lists what chat offers, no more
printf '/help\n/car\n/precision q4_0\n/reset now\n/quit\n' | "$CABIN" chat -m "$T/m.gguf" -n 8 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "^/reset " "$T/out" && grep -q "^/car " "$T/out" && ! grep -q "^/precision" "$T/out" &&
    grep -qE "^  climate.driver_temp +21 " "$T/out" && grep -q "unknown command /precision q4_0 (try /help)" "$T/out" &&
    grep -q "reset: wrong number of arguments" "$T/out" && ok || { bad "chat / commands from the table"; cat "$T/out" "$T/err"; }
# cabin chat --help names the same / commands as /help, in the same order
want=$(grep -oE '^/[a-z]+' "$T/out" | tr '\n' ' ')
"$CABIN" chat --help >"$T/help" 2>&1
grep -q "^Commands: ${want}(/help says what each does)" "$T/help" && ok || { bad "chat --help lists /help's commands ($want)"; cat "$T/help"; }

# precision: switching in the middle of a run keeps going; quantize; ppl with KL against a base
expect_rc 0 "make-model f16" -- "$CABIN" make-model -o "$T/f16.gguf" --type f16 --dim 64 --ffn 128 --vocab 400
"$CABIN" generate -m "$T/f16.gguf" -p "eta" -n 24 --temp 0 --ids --ignore-eos --switch-at 8=q4_0 --switch-at 16=q8_0 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && [ "$(wc -w <"$T/out")" = 24 ] && [ "$(grep -c '^\[switched to' "$T/err")" = 2 ] && ok || { bad "generate --switch-at"; cat "$T/out" "$T/err"; }
expect_rc 2 "bad switch plan" -- "$CABIN" generate -m "$T/f16.gguf" -p eta --switch-at "4=q8_0:layers=0-9"
one_line_error "out of range" "a switch plan with a layer out of range"
expect_rc 0 "quantize" -- "$CABIN" quantize "$T/f16.gguf" "$T/q4.gguf" q4_0
expect_rc 0 "info on quantized" -- "$CABIN" info "$T/q4.gguf"
grep -q "Q4_0" "$T/out" && grep -q "Q8_0" "$T/out" && ok || { bad "quantized file has Q4_0 layers and a Q8_0 embedding"; cat "$T/out"; }
# a full device: reported, and the device node stays a device (not renamed over)
if [ -w /dev/full ]; then
    expect_rc 1 "quantize to /dev/full" -- "$CABIN" quantize "$T/f16.gguf" /dev/full q4_0
    one_line_error "/dev/full: write failed: No space left on device" "quantize to /dev/full"
    [ -c /dev/full ] && ok || bad "/dev/full is no longer a device"
fi
# a plan that names the embedding as "keep" keeps it as in the source (F16), not the Q8_0 default
expect_rc 0 "quantize, embedding kept" -- "$CABIN" quantize "$T/f16.gguf" "$T/q4k.gguf" q4_0 --plan "token_embd=keep"
expect_rc 0 "info on it" -- "$CABIN" info "$T/q4k.gguf"
grep -E "^ +F16 +1 tensors" "$T/out" >/dev/null && ok || { bad "token_embd=keep keeps F16"; cat "$T/out"; }
# a preset on rows of 64: the K-quants fall back as the reference quantizer does, a note for each
expect_rc 0 "quantize to Q4_K_M" -- "$CABIN" quantize "$T/f16.gguf" "$T/q4km.gguf" q4_k_m
grep -q "row length 64 is not a multiple of 256; Q5_0 instead of Q4_K" "$T/err" && ok || { bad "Q4_K_M notes its fallbacks"; cat "$T/err"; }
expect_rc 0 "info on the Q4_K_M file" -- "$CABIN" info "$T/q4km.gguf"
grep -qE "^ +Q5_0 " "$T/out" && grep -qE "^ +Q8_0 " "$T/out" && ok || { bad "Q4_K_M on rows of 64: Q5_0 and Q8_0"; cat "$T/out"; }
expect_rc 2 "quantize to an unknown type" -- "$CABIN" quantize "$T/f16.gguf" "$T/x.gguf" q7_k
one_line_error "type 'q7_k' is not one of" "an unknown quantize type"
awk 'BEGIN { for (i = 0; i < 400; i++) printf "eta oin shr dlu cmf %d ", i % 7 }' >"$T/text.txt"
expect_rc 0 "ppl --save-base" -- "$CABIN" ppl -m "$T/f16.gguf" -f "$T/text.txt" --ctx 64 --save-base "$T/base.kl"
expect_rc 0 "ppl --kl-base" -- "$CABIN" ppl -m "$T/q4.gguf" -f "$T/text.txt" --ctx 64 --kl-base "$T/base.kl"
grep -q "mean KL" "$T/out" && grep -q "top-1 agreement" "$T/out" && ok || { bad "ppl prints KL"; cat "$T/out"; }
expect_rc 1 "ppl --kl-base with another ctx" -- "$CABIN" ppl -m "$T/q4.gguf" -f "$T/text.txt" --ctx 32 --kl-base "$T/base.kl"
one_line_error "base.kl" "a base made with another --ctx"
# -c/--ctx is the shared context length, and a window is a whole context: --ctx 64 scores windows of 64
"$CABIN" ppl -m "$T/f16.gguf" -f "$T/text.txt" -c 64 >"$T/p1" 2>/dev/null
"$CABIN" ppl -m "$T/f16.gguf" -f "$T/text.txt" --window 64 >"$T/p2" 2>/dev/null
grep "^PPL" "$T/p1" >"$T/p1l"; grep "^PPL" "$T/p2" >"$T/p2l"
[ -s "$T/p1l" ] && cmp -s "$T/p1l" "$T/p2l" && grep -q "windows of 64" "$T/p1" && ok || { bad "ppl -c 64 = --window 64"; cat "$T/p1" "$T/p2"; }
expect_rc 2 "ppl window past the context" -- "$CABIN" ppl -m "$T/f16.gguf" -f "$T/text.txt" -c 32 --window 64
one_line_error "longer than the context" "a window past the context"
# another model without -f: a paragraph of prose, flagged when its perplexity says it is not the model's domain
expect_rc 0 "ppl without -f on another model" -- "$CABIN" ppl -m "$T/f16.gguf" --window 64 --chunks 4
grep -q "prose" "$T/out" && grep -q "not this model's domain" "$T/err" && ok || { bad "ppl: prose flagged out of domain"; cat "$T/out" "$T/err"; }

# bad input: a clear one-line error naming the file, never a crash
expect_rc 1 "missing model" -- "$CABIN" generate -m "$T/nope.gguf" -p hi
one_line_error "nope.gguf" "a missing model"
head -c 100 "$T/m.gguf" >"$T/trunc.gguf"
expect_rc 1 "truncated model" -- "$CABIN" generate -m "$T/trunc.gguf" -p hi
one_line_error "trunc.gguf" "a truncated model"
expect_rc 1 "truncated info" -- "$CABIN" info "$T/trunc.gguf"
one_line_error "trunc.gguf" "info on a truncated model"
printf 'not a gguf at all' >"$T/text.gguf"
expect_rc 1 "not gguf" -- "$CABIN" logits -m "$T/text.gguf" -p hi
one_line_error "not a GGUF" "a text file"
expect_rc 1 "directory" -- "$CABIN" info "$T"
one_line_error "$T" "a directory"
expect_rc 1 "bad backend" -- "$CABIN" generate -m "$T/m.gguf" -p hi --backend warp
one_line_error "warp" "an unknown backend"
# chat templates: --chat-template NAME (--template the same), an unknown name a usage error that
# lists the names; a file whose tokenizer.chat_template is not recognised chats in plain, and
# chat says so once on stderr
expect_rc 2 "bad --chat-template" -- "$CABIN" chat -m "$T/m.gguf" --chat-template nope </dev/null
one_line_error "unknown template 'nope' (known: gemma, llama-3, " "an unknown --chat-template"
expect_rc 2 "bad --template" -- "$CABIN" generate -m "$T/m.gguf" -p hi --template nope
one_line_error "unknown template 'nope' (known: " "an unknown --template"
printf 'hi\n/stats\n' | "$CABIN" chat -m "$T/m.gguf" --chat-template gemma -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "template gemma\]" "$T/out" && ok || { bad "chat --chat-template gemma"; cat "$T/out" "$T/err"; }
printf 'hi\n/stats\n' | "$CABIN" chat -m "$T/m.gguf" --template chatml -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "template chatml\]" "$T/out" && ok || { bad "chat --template chatml"; cat "$T/out" "$T/err"; }
# vocabulary-only files with a chat template, and models made on them (make-model --vocab-from)
/usr/bin/python3 - "$T" <<'PY'
import struct, sys
def s(x): b = x.encode(); return struct.pack("<Q", len(b)) + b
def kv_str(k, v): return s(k) + struct.pack("<I", 8) + s(v)
def kv_u32(k, v): return s(k) + struct.pack("<II", 4, v)
def kv_arr(k, t, fmt, vals):
    body = b"".join(s(v) for v in vals) if t == 8 else b"".join(struct.pack(fmt, v) for v in vals)
    return s(k) + struct.pack("<IIQ", 9, t, len(vals)) + body
toks = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["\u2581" + w for w in ("hi", "again")]
templates = {
    "vicuna": "{% for m in messages %}{% if m['role'] == 'user' %}{{ 'USER: ' + m['content'] + '\\n' }}{% else %}"
              "{{ 'ASSISTANT: ' + m['content'] + eos_token }}{% endif %}{% endfor %}{{ 'ASSISTANT:' }}",
    "gemma": "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + m['role'] + '\\n' + m['content'] | trim + "
             "'<end_of_turn>\\n' }}{% endfor %}{{'<start_of_turn>model\\n'}}",
}
for name, tmpl in templates.items():
    kvs = [kv_str("tokenizer.ggml.model", "llama"), kv_arr("tokenizer.ggml.tokens", 8, None, toks),
           kv_arr("tokenizer.ggml.scores", 6, "<f", [0.0] * len(toks)),
           kv_arr("tokenizer.ggml.token_type", 5, "<i", [2, 3, 3] + [6] * 256 + [1, 1]),
           kv_u32("tokenizer.ggml.bos_token_id", 1), kv_u32("tokenizer.ggml.eos_token_id", 2),
           kv_str("tokenizer.chat_template", tmpl)]
    open("%s/%s-vocab.gguf" % (sys.argv[1], name), "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
PY
for v in vicuna gemma; do
    expect_rc 0 "make-model on the $v vocabulary" -- "$CABIN" make-model -o "$T/$v.gguf" --vocab-from "$T/$v-vocab.gguf" --dim 32 --ffn 64
done
expect_rc 0 "info on a recognised template" -- "$CABIN" info "$T/gemma.gguf"
grep -q "chat template: gemma$" "$T/out" && ok || { bad "info: the gemma template recognised"; cat "$T/out"; }
expect_rc 0 "info on a template not recognised" -- "$CABIN" info "$T/vicuna.gguf"
grep -q "chat template: plain (tokenizer.chat_template not recognised)" "$T/out" && ok || { bad "info: not recognised"; cat "$T/out"; }
printf 'hi\nagain\n/stats\n' | "$CABIN" chat -m "$T/vicuna.gguf" -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && [ "$(grep -c "not recognised" "$T/err")" = 1 ] && grep -q "template plain\]" "$T/out" &&
    grep -q "^cabin chat: $T/vicuna.gguf: tokenizer.chat_template not recognised: using the plain template (--chat-template NAME chooses one: gemma, llama-3, .*, plain)$" "$T/err" &&
    ok || { bad "chat on a template not recognised: plain, said once"; cat "$T/out" "$T/err"; }
printf 'hi\n' | "$CABIN" chat -m "$T/vicuna.gguf" --chat-template chatml -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && ! grep -q "not recognised" "$T/err" && ok || { bad "--chat-template: no word about the file's"; cat "$T/err"; }
printf 'hi\n/stats\n' | "$CABIN" chat -m "$T/gemma.gguf" -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "template gemma\]" "$T/out" && ! grep -q "not recognised" "$T/err" && ok ||
    { bad "chat on a gemma file renders gemma"; cat "$T/out" "$T/err"; }
# generate is raw completion: no template, so no word about one
expect_rc 0 "generate on a template not recognised" -- "$CABIN" generate -m "$T/vicuna.gguf" -p hi -n 2
! grep -q "template" "$T/err" && ok || { bad "generate says nothing of a template it does not use"; cat "$T/err"; }
# SRC DST KEY OLD NEW: SRC with string key KEY's value OLD replaced by NEW of the same length
# (after the key: u32 type, u64 length, the bytes)
set_gguf_str() {
    /usr/bin/python3 - "$@" <<'PY'
import struct, sys
src, dst, key, old, new = sys.argv[1:6]
d = bytearray(open(src, "rb").read())
i = d.find(key.encode()) + len(key)
n = struct.unpack("<Q", d[i + 4:i + 12])[0]
assert bytes(d[i + 12:i + 12 + n]) == old.encode() and len(old) == len(new)
d[i + 12:i + 12 + n] = new.encode()
open(dst, "wb").write(d)
PY
}
# a byte-level BPE file whose tokenizer.ggml.pre cabin has no rules for: every command that loads
# the tokenizer refuses it with one line naming the file, the key and the value (the reference's
# llama-bpe model with its pre-tokenizer renamed to poro-chat, which the reference splits otherwise)
REF=${CABIN_REF_DIR:-../shared/ref}
if [ -f "$REF/models/llama-bpe-d64-F16.gguf" ] && [ -x /usr/bin/python3 ]; then
    set_gguf_str "$REF/models/llama-bpe-d64-F16.gguf" "$T/poro.gguf" tokenizer.ggml.pre llama-bpe poro-chat
    refusal="poro.gguf: tokenizer.ggml.pre 'poro-chat' is not supported (supported: "
    expect_rc 1 "info, unsupported pre-tokenizer" -- "$CABIN" info "$T/poro.gguf"
    one_line_error "$refusal" "info on an unsupported pre-tokenizer"
    grep -q "tokenizer: refused" "$T/out" && grep -q "architecture *llama" "$T/out" && ok ||
        { bad "info lists the rest and the tokenizer as refused"; cat "$T/out"; }
    expect_rc 1 "chat, unsupported pre-tokenizer" -- "$CABIN" chat -m "$T/poro.gguf" </dev/null
    one_line_error "$refusal" "chat on an unsupported pre-tokenizer"
    expect_rc 1 "generate, unsupported pre-tokenizer" -- "$CABIN" generate -m "$T/poro.gguf" -p hi -n 2
    one_line_error "$refusal" "generate on an unsupported pre-tokenizer"
    expect_rc 1 "tokenize, unsupported pre-tokenizer" -- "$CABIN" tokenize -m "$T/poro.gguf" hi
    one_line_error "$refusal" "tokenize on an unsupported pre-tokenizer"
else
    skip=$((skip + 1)); echo "skipped: unsupported pre-tokenizer: no $REF/models/llama-bpe-d64-F16.gguf or /usr/bin/python3"
fi

# what a file asks that cabin does not compute is refused in one line naming it, by every command
# that runs the model; cabin info says how a file runs and why not (the reference's Llama 3.1-style
# file with its rope factors' tensor renamed, and with another architecture's name)
L3="$REF/next/models/llama3rope-spm-d256-F16.gguf"
if [ -f "$L3" ] && [ -x /usr/bin/python3 ]; then
    expect_rc 0 "info on a llama3-rope file" -- "$CABIN" info "$L3"
    grep -q "rope variant *per-frequency factors 1 to 32 (rope_freqs, llama3)" "$T/out" && grep -q "runs *yes" "$T/out" && ok ||
        { bad "info names the rope variant"; cat "$T/out"; }
    patch_gguf() {   # SRC DST OLD NEW: every OLD (bytes) replaced by NEW of the same length
        /usr/bin/python3 -c "import sys; d=open(sys.argv[1],'rb').read(); o,n=sys.argv[3].encode(),sys.argv[4].encode(); assert len(o)==len(n) and o in d; open(sys.argv[2],'wb').write(d.replace(o,n))" "$@"
    }
    patch_gguf "$L3" "$T/extra.gguf" "rope_freqs.weight" "rope_frexs.weight"
    expect_rc 1 "logits on a file with a tensor nobody reads" -- "$CABIN" logits -m "$T/extra.gguf" -p hi
    one_line_error "extra.gguf: tensor rope_frexs.weight is not part of cabin's llama forward pass: refused" "a tensor nobody reads"
    expect_rc 0 "info on a file with a tensor nobody reads" -- "$CABIN" info "$T/extra.gguf"
    grep -q "runs *no: 1 tensor that cabin's llama forward pass does not read: rope_frexs.weight" "$T/out" && ok ||
        { bad "info names the tensor the forward pass does not read"; cat "$T/out"; }
    set_gguf_str "$L3" "$T/arch.gguf" general.architecture llama llamx
    expect_rc 1 "chat on an unknown architecture" -- "$CABIN" chat -m "$T/arch.gguf" </dev/null
    one_line_error "arch.gguf: unsupported architecture 'llamx' (supported: llama, qwen2, qwen3, phi3, gemma3, gemma2)" "an unknown architecture"
    expect_rc 0 "info on an unknown architecture" -- "$CABIN" info "$T/arch.gguf"
    grep -q "runs *no: .*unsupported architecture 'llamx'" "$T/out" && ok || { bad "info says why it does not run"; cat "$T/out"; }
else
    skip=$((skip + 1)); echo "skipped: refusals of files: no $L3 or /usr/bin/python3"
fi

# a Gemma 2 file: info names its window layout and soft caps, and it chats in Gemma's turns
expect_rc 0 "make-model gemma2" -- "$CABIN" make-model -o "$T/g2.gguf" --arch gemma2 --layers 4 --head-dim 32 --window 6 \
    --attn-softcap 20 --final-softcap 10
expect_rc 0 "info on a gemma2 file" -- "$CABIN" info "$T/g2.gguf"
grep -q "attention *sliding window of 6 on 2 of 4 layers (global: every 2nd; the same rope on every layer): 0,2" "$T/out" &&
    grep -q "soft caps *attention scores 20 \* tanh(s / 20), logits 10 \* tanh(l / 10)" "$T/out" && grep -q "runs *yes" "$T/out" &&
    ok || { bad "info on gemma2: window layout and soft caps"; cat "$T/out"; }
printf 'hi\n/stats\n' | "$CABIN" chat -m "$T/g2.gguf" -n 4 >"$T/out" 2>"$T/err"; rc=$?
[ $rc = 0 ] && grep -q "template gemma\]" "$T/out" && ok || { bad "chat on a gemma2 file renders gemma"; cat "$T/out" "$T/err"; }
expect_rc 2 "make-model gemma3 with a soft cap" -- "$CABIN" make-model -o "$T/g3.gguf" --arch gemma3 --attn-softcap 20
one_line_error "soft caps are gemma2's; gemma3 has none" "a soft cap on gemma3"

# eval-assistant on the embedded model: the table, --errors, --free-actions, bad input
TINY=assets/models/cabin-tiny.gguf
if [ -f "$TINY" ]; then
    head -n 6 assets/eval/heldout.jsonl >"$T/six.jsonl"
    expect_rc 0 "eval-assistant" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/six.jsonl" -t 1 --errors "$T/errors.tsv" --json "$T/eval.json"
    grep -q "| cabin-tiny | F32 | grammar | 6 |" "$T/out" && ok || { bad "eval-assistant table row"; cat "$T/out"; }
    turns=$(/usr/bin/python3 -c "import json,sys; print(sum(len(json.loads(l)['turns']) for l in open(sys.argv[1])))" "$T/six.jsonl")
    wrong=$(/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(round(d['turns']*(1-d['exact'])))" "$T/eval.json")
    [ "$(wc -l <"$T/errors.tsv")" = "$wrong" ] && ok || bad "--errors lists the $wrong wrong turns of $turns"
    awk -F'\t' 'NF != 4 { exit 1 }' "$T/errors.tsv" && ok || bad "--errors lines: line, user, wanted, got"
    expect_rc 0 "eval-assistant --free-actions" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/six.jsonl" -t 1 --free-actions
    grep -q "| cabin-tiny | F32 | free | 6 |" "$T/out" && ok || { bad "--free-actions row"; cat "$T/out"; }
    printf '{"turns": [{"user": "hi", "reply": "<act>none</act> Hi."}]}\n{"turns": 3}\n' >"$T/bad.jsonl"
    expect_rc 1 "eval-assistant on a malformed dialogue" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/bad.jsonl" -t 1
    one_line_error "bad.jsonl:2" "a malformed held-out line"
    printf '{"turns": [{"user": "hi", "reply": "<act>none</act> Hi."}]} trailing words\n' >"$T/trail.jsonl"
    expect_rc 1 "eval-assistant on a line with text after its object" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/trail.jsonl" -t 1
    one_line_error "trail.jsonl:1: text after the JSON object (at column 61)" "text after a held-out line's object"
    expect_rc 1 "eval-assistant --errors to a directory" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/six.jsonl" --errors "$T"
    one_line_error "cannot write" "an unwritable --errors file"
    # --json without a file: the figures alone, on stdout
    expect_rc 0 "eval-assistant --json" -- "$CABIN" eval-assistant -m "$TINY" -f "$T/six.jsonl" -t 1 --json
    /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['turns'] > 0" "$T/out" 2>"$T/pyerr" && ok ||
        { bad "eval-assistant --json on stdout is JSON"; cat "$T/out" "$T/pyerr"; }
    # jump-forward: the first 300 held-out dialogues' replies byte for byte as plain greedy decoding
    # gives them (a token per forward pass), in fewer passes (docs/ASSISTANT.md has the whole set);
    # under ASan the first 20 (its memory checks need no more: 300 took 264 s of the run there)
    nj=300
    grep -q __asan_init "$CABIN" && nj=20
    head -n $nj assets/eval/heldout.jsonl >"$T/hj.jsonl"
    "$CABIN" eval-assistant -m "$TINY" -f "$T/hj.jsonl" -t 2 --replies "$T/jump.tsv" >"$T/jump.out" 2>&1 &&
        "$CABIN" eval-assistant -m "$TINY" -f "$T/hj.jsonl" -t 2 --no-jump-forward --replies "$T/plain.tsv" >"$T/plain.out" 2>&1 &&
        [ "$(wc -l <"$T/jump.tsv")" -gt $((2 * nj)) ] && cmp -s "$T/jump.tsv" "$T/plain.tsv" && ok ||
        { bad "jump-forward changes held-out replies"; diff "$T/jump.tsv" "$T/plain.tsv" | head -6; }
    passes() { sed -n 's/^first replies of dialogues: \([0-9.]*\) tokens per reply in \([0-9.]*\) forward passes (\([0-9.]*\)%.*/\1 \2 \3/p' "$1"; }
    read -r tok pj fj <<EOF2
$(passes "$T/jump.out")
EOF2
    read -r tok2 pp fp <<EOF2
$(passes "$T/plain.out")
EOF2
    # passes drop by the share of forced tokens: jump = tokens x (1 - forced share); plain = tokens
    /usr/bin/python3 -c "import sys; t,pj,fj,t2,pp=map(float,sys.argv[1:]); sys.exit(not (t==t2 and pp==t and fj>10 and abs(pj-t*(1-fj/100))<0.02))" \
        "${tok:-0}" "${pj:-0}" "${fj:-0}" "${tok2:-0}" "${pp:-0}" && ok ||
        { bad "jump-forward: passes per first reply $pj against $pp for $tok tokens, $fj% forced"; cat "$T/jump.out" "$T/plain.out"; }
    # ppl, heatmap and sweep on the embedded model without -f: its held-out dialogues in its chat layout
    expect_rc 0 "ppl without -f" -- "$CABIN" ppl -m "$TINY" -t 1 --window 128 --chunks 3
    grep -q "heldout.jsonl (held-out dialogues, chat layout): [0-9]* tokens, 3 windows of 128" "$T/out" && grep -q "^PPL = " "$T/out" &&
        ! grep -q "domain" "$T/err" && ok || { bad "ppl scores the held-out dialogues"; cat "$T/out" "$T/err"; }
    expect_rc 0 "heatmap without -f, --json" -- env XDG_CACHE_HOME="$T/cache" "$CABIN" heatmap -m "$TINY" -t 1 --tokens 128 --window 64 --json
    /usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/out" 2>"$T/pyerr" && grep -q "heldout.jsonl" "$T/err" && ok ||
        { bad "heatmap without -f: JSON on stdout over the held-out dialogues"; head -c 300 "$T/out"; cat "$T/err" "$T/pyerr"; }
    expect_rc 0 "sweep without -f, --json" -- "$CABIN" sweep -m "$TINY" --weights f32,q8_0 -n 4 --tokens 64 --kl-ctx 32 -t 1 --json
    /usr/bin/python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['points']; assert len(p) == 2 and all(x['ok'] for x in p)" "$T/out" 2>"$T/pyerr" &&
        grep -q "heldout.jsonl" "$T/err" && ok || { bad "sweep without -f: JSON on stdout over the held-out dialogues"; cat "$T/out" "$T/err" "$T/pyerr"; }
    # an action the car refuses is answered with the car's reason, not the model's sentence:
    # a number above the range is taken as said, and a fresh car has no one to redial
    printf 'set the temperature to 72\ncall back the last number\n' |
        "$CABIN" chat -m "$TINY" --temp 0 >"$T/out" 2>"$T/err"
    grep -q "climate.set zone=all temp=72" "$T/out" && grep -qx "The temperature can be set between 16 and 30 degrees." "$T/out" &&
        grep -q "phone.redial" "$T/out" && grep -qx "There is no one to redial yet." "$T/out" &&
        ! grep -qi "set to 72\|redialing" "$T/out" && ok || { bad "refused actions spoken as the car's reason"; cat "$T/out" "$T/err"; }
    # a follow-up climate.set that states no number keeps the temperature (free, the model says 22)
    printf 'set the driver side to twenty one degrees\nalso the rear\n' |
        "$CABIN" chat -m "$TINY" --temp 0 >"$T/out" 2>"$T/err"
    grep -q "climate.set zone=rear temp=21" "$T/out" && ok || { bad "a follow-up keeps the temperature"; cat "$T/out" "$T/err"; }
else
    skip=$((skip + 1)); echo "skipped: eval-assistant checks: $TINY is not there"
fi

test_finish
