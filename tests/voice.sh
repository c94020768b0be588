#!/bin/sh
# Voice pipeline end to end: espeak-ng test utterances (held-out commands, several voices) run
# through `cabin voice --audio-in FILE.wav`; word error rate (clean and with car noise at 10 dB
# SNR) and, once the embedded model exists, action exact-match (clean and noisy) are asserted.
# Also: the PortAudio path (ALSA's file plugin as the microphone), streaming TTS (first audio
# before the last token), barge-in (a WAV that talks over the reply), malformed WAVs refused
# with one line. Latency is a benchmark, not asserted here: tools/voice/bench_latency.sh.
TAG=voice; . "$(dirname "$0")/lib.sh"
skip_without_audio
for tool in espeak-ng sox; do
    if ! command -v $tool >/dev/null; then
        echo "skipped: $tool is not installed (tools/install-deps.sh)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
    fi
done
# The targets are WER <= 0.15 clean and <= 0.25 noisy, actions >= 0.90 on the clean set.
# Measured (docs/VOICE.md; the audio is the same every run): WER 0.127 clean, 0.139 noisy;
# actions 14/16 clean, 13/16 noisy with the shipped model (docs/history/VOICE.md has the
# earlier figures). Both WER targets are met and asserted; the action bounds are regression
# guards below the measured figures (12/16), with the target printed beside them
# (VOICE_ACT_MIN=0.90 asserts it). From the commands' exact words the embedded model gets 16/16
# (printed below as the ceiling): the clean misses are turns heard wrongly, which score.py
# counts apart from turns heard right and answered wrongly.
WER_CLEAN_TARGET=0.15
WER_NOISY_TARGET=0.25
WER_CLEAN_MAX=${VOICE_WER_CLEAN_MAX:-0.15}
WER_NOISY_MAX=${VOICE_WER_NOISY_MAX:-0.25}
ACT_TARGET=0.90
ACT_MIN=${VOICE_ACT_MIN:-0.75}
ACT_NOISY_MIN=${VOICE_ACT_NOISY_MIN:-0.75}

/usr/bin/python3 tools/voice/make_test_audio.py --out "$T" --n 16 >/dev/null || bad "make_test_audio"
"$CABIN" make-model -o "$T/m.gguf" --type q8_0 --dim 64 --ffn 128 --vocab 400 >/dev/null || bad "make-model"
MODEL=assets/models/cabin-tiny.gguf
if [ -f "$MODEL" ]; then have_model=1; else have_model=0; MODEL="$T/m.gguf"; fi
if [ $have_model = 1 ]; then   # the model alone, given each command's exact words: the ceiling
    ceiling=$("$CABIN" eval-assistant -m "$MODEL" -f "$T/ref.jsonl" 2>/dev/null | awk -F'|' '/%/ {gsub(/ /, "", $7); print $7; exit}')
    echo "model alone on the exact words of the $(wc -l <"$T/ref.tsv") commands: actions ${ceiling:-?} (the ceiling for actions from speech)"
fi

# --- recognition (and actions) over the clean and the noisy set
for set in clean noisy; do
    "$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/$set.wav" --no-audio-out --fresh-turns --stats \
        >"$T/$set.out" 2>&1 || bad "$set: cabin voice failed: $(tail -n 2 "$T/$set.out")"
    score=$(/usr/bin/python3 tools/voice/score.py "$T/ref.tsv" "$T/$set.out")
    echo "$set: $score"
    grep -E '^  end of speech|^  recognition' "$T/$set.out" | sed "s/^/$set: /"
    # without audio out there is no first audio: "-", never "-1 ms"
    ! grep -q -- '-1 ms\|-1\.00' "$T/$set.out" && grep -q '^latency turn 1: .*first audio written -, first audio played -,' "$T/$set.out" &&
        ok || bad "$set: times that did not happen should read '-': $(grep -m1 '^latency turn' "$T/$set.out")"
    wer=$(echo "$score" | awk '{print $2}')
    max=$WER_CLEAN_MAX; target=$WER_CLEAN_TARGET
    [ $set = noisy ] && { max=$WER_NOISY_MAX; target=$WER_NOISY_TARGET; }
    awk "BEGIN{exit !($wer <= $max)}" && ok || bad "$set: WER $wer above $max"
    awk "BEGIN{exit !($wer <= $target)}" || echo "note: $set: WER $wer is above the target $target (not met yet)"
    if [ $have_model = 1 ]; then
        acts=$(echo "$score" | awk '{print $6}')
        amin=$ACT_MIN
        [ $set = noisy ] && amin=$ACT_NOISY_MIN
        awk -v a="$acts" "BEGIN{split(a,x,\"/\"); exit !(x[1] >= $amin * x[2])}" && ok || bad "$set: actions $acts below $amin"
        awk -v a="$acts" "BEGIN{split(a,x,\"/\"); exit !(x[1] >= $ACT_TARGET * x[2])}" || echo "note: $set: actions $acts are below the target $ACT_TARGET (not met yet)"
    else
        skip=$((skip + 1)); echo "skipped: $set action exact-match: assets/models/cabin-tiny.gguf is not built yet (random-weight model used for plumbing)"
    fi
done

# --- end of turn at a pause (--vad-pause): most of the 16 commands end 200 ms after the speech,
# the command whole, and none is lost; without it every turn waits for the 400 ms hangover
"$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/clean.wav" --no-audio-out --fresh-turns --stats --vad-pause 200 \
    >"$T/pause.out" 2>&1 || bad "--vad-pause: cabin voice failed: $(tail -n 2 "$T/pause.out")"
at_pause=$(grep -c '^latency turn .*(ended 200 ms into a pause, the command whole)' "$T/pause.out")
[ "$(grep -c '^you:' "$T/pause.out")" = 16 ] && [ "$at_pause" -ge 10 ] && ok ||
    bad "--vad-pause 200: $(grep -c '^you:' "$T/pause.out") turns, $at_pause ended at the pause"
grep -q '^latency turn 1: speech [0-9.]* s (ended 400 ms into silence)' "$T/clean.out" && ok ||
    bad "without --vad-pause the hangover ends a turn: $(grep -m1 '^latency turn' "$T/clean.out")"
echo "end of turn: $at_pause of 16 turns ended 200 ms into a pause with --vad-pause 200"

# --- streaming TTS: the first sample is handed to the device before the last token exists.
# The reply must take longer than the first phrase's synthesis whatever the load: 400 tokens
# (past end-of-generation) of an 8-layer model take 200-350 ms here, where the first audio is
# written 3-6 ms after the first token (a 2-layer dim-64 model's short reply ended within the
# same millisecond as the first audio, and the check then depended on scheduling).
"$CABIN" make-model -o "$T/m2.gguf" --type q8_0 --dim 256 --ffn 768 --layers 8 --vocab 400 >/dev/null
head_wav=$(ls "$T"/clean.wav)
sox "$head_wav" "$T/one.wav" trim 0 3.5 2>/dev/null
"$CABIN" voice -m "$T/m2.gguf" -n 400 --ignore-eos --audio-in "$T/one.wav" --audio-out "$T/reply.wav" --stats \
    >"$T/stream.out" 2>&1
line=$(grep '^latency turn 1' "$T/stream.out")
w=$(echo "$line" | sed -n 's/.*first audio written \(-*[0-9]*\) ms.*/\1/p')
l=$(echo "$line" | sed -n 's/.*last token \(-*[0-9]*\) ms.*/\1/p')
if [ -n "$w" ] && [ -n "$l" ] && [ "$w" -ge 0 ] && [ "$w" -lt "$l" ] && [ -s "$T/reply.wav" ]; then ok
else bad "streaming: first audio written ($w ms) not before the last token ($l ms): $line"; fi

# --- the first turn after start, at a microphone's pace: recognition starts over on it once its
# own cepstral mean is known (docs/VOICE.md, "The first utterance"), and is right
if [ $have_model = 1 ]; then
    "$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/one.wav" --no-audio-out --realtime --stats \
        >"$T/first.out" 2>&1
    want=$(head -n 1 "$T/ref.tsv" | cut -f 2)
    got=$(sed -n 's/^action: //p' "$T/first.out" | head -n 1)
    grep -q '^voice ready in [0-9]* ms' "$T/first.out" && grep -q '^latency turn 1: .*(first utterance: started over)' "$T/first.out" &&
        [ "$got" = "$want" ] && ok || bad "first turn: wanted $want, got '$got': $(grep -E '^(you|latency)' "$T/first.out")"
    echo "first turn: $(grep '^voice ready' "$T/first.out" | sed 's/ (.*//'); $(grep '^latency turn 1' "$T/first.out" | sed 's/.*| end of speech/end of speech/')"
fi

# --- barge-in: the second utterance starts while the first reply is being spoken
sox "$T/one.wav" "$T/one.wav" "$T/barge.wav" 2>/dev/null
"$CABIN" voice -m "$T/m2.gguf" -n 400 --audio-in "$T/barge.wav" --audio-out "$T/reply2.wav" --realtime --stats \
    >"$T/barge.out" 2>&1
stop=$(sed -n 's/^barge-in turn 1: .* stopped \([0-9.]*\) ms after onset/\1/p' "$T/barge.out")
if grep -q 'cut off: barge-in' "$T/barge.out" && [ -n "$stop" ] && awk "BEGIN{exit !($stop < 100)}"; then ok
    echo "barge-in: stopped $stop ms after onset (plus the VAD's 40 ms onset)"
else bad "barge-in: $(grep -E 'barge|cabin:' "$T/barge.out" | head -3)"; fi

# --- free speech (not a command, not held by the grammar): refused, not acted on
# Six sentences written for this test (none from the corpus), one voice; docs/VOICE.md "Free
# speech". Measured: 1 to 3 of 6 acted on, 3 or 4 refused; without the refusal (CABIN_ASR_REFUSE_BELOW=-1e9)
# 5 of 6 acted on, which this bound (4) fails.
if [ $have_model = 1 ]; then
    list=""
    i=0
    for s in "can you recommend a good book about history" "my brother just got a new puppy" \
             "i wonder if it will snow next week" "the kids were really tired after school" \
             "i forgot to send that email this morning" "that restaurant on the corner closed last year"; do
        i=$((i + 1))
        espeak-ng -v en-us -s 165 -w "$T/f$i.wav" "$s" && sox "$T/f$i.wav" -r 16000 -c 1 -b 16 "$T/f$i.16.wav" && \
            sox -n -r 16000 -c 1 -b 16 "$T/gap$i.wav" trim 0 1.0 || bad "free speech: espeak-ng/sox failed"
        list="$list $T/gap$i.wav $T/f$i.16.wav"
    done
    sox $list "$T/gap1.wav" "$T/free.wav"
    "$CABIN" voice -m "$MODEL" --temp 0 -n 48 --audio-in "$T/free.wav" --no-audio-out --fresh-turns --stats \
        >"$T/free.out" 2>&1 || bad "free speech: cabin voice failed: $(tail -n 2 "$T/free.out")"
    acted=$(grep '^action: ' "$T/free.out" | grep -vc '^action: none')
    refused=$(grep -c "^cabin: Sorry, I didn't catch that" "$T/free.out")
    echo "free speech: $acted of 6 acted on, $refused refused as not a command"
    [ "$acted" -le 4 ] && ok || bad "free speech: $acted of 6 sentences acted on (at most 4)"
fi

# --- PortAudio itself: ALSA's file plugin is the default device; a raw file is the microphone
sox "$T/one.wav" -r 16000 -c 1 -b 16 -e signed -t raw "$T/mic.raw"
cat >"$T/asound.conf" <<EOC
pcm.!default { type file; slave.pcm "nullpcm"; file "$T/pa_out.raw"; infile "$T/mic.raw"; format "raw" }
pcm.nullpcm { type null }
EOC
ALSA_CONFIG_PATH="$T/asound.conf" "$CABIN" audio devices >"$T/dev.out" 2>&1
grep -q 'default in' "$T/dev.out" && ok || bad "audio devices: $(cat "$T/dev.out")"
# A live device never ends by itself: wait (up to 90 s: ASan on a loaded machine is slow) for the
# first transcript, then stop it.
ALSA_CONFIG_PATH="$T/asound.conf" "$CABIN" voice -m "$T/m2.gguf" -n 4 --audio-in default --no-audio-out \
    --hands-free </dev/null >"$T/pa.out" 2>&1 &
pa_pid=$!
waited=0
while [ $waited -lt 180 ] && kill -0 $pa_pid 2>/dev/null && ! grep -q '^you: ' "$T/pa.out"; do
    sleep 0.5; waited=$((waited + 1))
done
sleep 0.5   # the reply's line after the transcript, when it comes quickly
# Priorities (docs/VOICE.md): the pipeline's threads at nice -10, the model's at -5, where this
# process may raise them (root, CAP_SYS_NICE, ulimit -e); else the one line that says why.
nices=$(cat /proc/$pa_pid/task/*/stat 2>/dev/null | awk '{print $19}' | sort -n | uniq | tr '\n' ' ')
if grep -q 'threads at normal priority' "$T/pa.out"; then
    echo "priorities: not allowed here: $(grep -m1 'threads at normal priority' "$T/pa.out")"; ok
elif echo " $nices" | grep -q ' -10 ' && echo " $nices" | grep -q ' -5 '; then ok
    echo "priorities: thread nice values $nices"
else bad "priorities: thread nice values '$nices', and no line saying why they were not raised"; fi
kill $pa_pid 2>/dev/null; wait $pa_pid 2>/dev/null || true
want=$(head -n 1 "$T/ref.tsv" | cut -f 1)
got=$(sed -n 's/^you: //p' "$T/pa.out" | head -n 1)
[ -n "$got" ] && grep -q 'in: default' "$T/pa.out" && ok || bad "portaudio capture: nothing recognised: $(cat "$T/pa.out")"
echo "portaudio: said \"$want\", heard \"$got\""

# --- failures: one line, voice off
printf 'RIFF\0\0\0\0WAVEjunk' >"$T/bad.wav"
"$CABIN" voice -m "$T/m2.gguf" --audio-in "$T/bad.wav" >/dev/null 2>"$T/err"; rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "bad.wav" "$T/err" && ok || bad "malformed wav: rc $rc: $(cat "$T/err")"
"$CABIN" voice -m "$T/m2.gguf" --audio-in "no such device" --hands-free >/dev/null 2>"$T/err" </dev/null; rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "voice is off" "$T/err" && ok || bad "missing device: rc $rc: $(cat "$T/err")"

test_finish
