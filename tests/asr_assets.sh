#!/bin/sh
# The recogniser's committed assets (assets/asr: the command grammar, the domain trigram LM, its
# dictionary and the noise dictionary) are what the project's tools make from the corpus
# generator today: tools/voice/build_grammar.py and build_lm.py rebuilt into a temporary
# directory must give the same files byte for byte. A change to the generator, the frames or the
# tools that was not followed by a rebuild fails here instead of shipping stale assets.
TAG=asr_assets; . "$(dirname "$0")/lib.sh"
skip_without_system_python
if ! command -v espeak-ng >/dev/null; then   # build_lm.py's letter-to-sound for words cmudict lacks
    echo "skipped: espeak-ng is not installed"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
/usr/bin/python3 tools/voice/build_grammar.py --out "$T/cabin.gram" >"$T/gram.log" 2>&1 \
    && ok || { bad "build_grammar.py failed"; cat "$T/gram.log"; }
/usr/bin/python3 tools/voice/build_lm.py --out-dir "$T" >"$T/lm.log" 2>&1 \
    && ok || { bad "build_lm.py failed"; cat "$T/lm.log"; }
for f in cabin.gram cabin.lm cabin.dict cabin.filler; do
    if cmp -s "$T/$f" "assets/asr/$f"; then ok
    else bad "assets/asr/$f differs from what the tools make (rebuild: docs/VOICE.md, \"Rebuild the grammar, LM and dictionary\")"
        diff "assets/asr/$f" "$T/$f" | head -5
    fi
done
test_finish
