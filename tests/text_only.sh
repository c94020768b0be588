#!/bin/sh
# The build matches the layers it was asked for ($BUILD/features, written by the Makefile):
# with VULKAN=0 no binary links libvulkan, no object was compiled against the Vulkan headers,
# `cabin devices` has no vulkan row and --backend vulkan is an unknown backend; with AUDIO=0 the
# same for PortAudio, ALSA, pocketsphinx and espeak-ng, and the commands that need audio answer
# with one line; with SDL=0 nothing links SDL2 or includes its or zlib's headers and `cabin gui`
# says it was built without the window. With VULKAN=1 / AUDIO=1 / SDL=1 the opposite: the library
# is linked and the feature shows. .ci/run builds `make BUILD=build-text VULKAN=0 AUDIO=0 SDL=0
# test`, which runs this on it.
TAG=text; . "$(dirname "$0")/lib.sh"
if ! [ -f "$BUILD/features" ]; then
    echo "skipped: $BUILD/features is missing (the Makefile writes it on every build)"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
features=$(cat "$BUILD/features")
echo "note: $BUILD: $features"
vulkan=$(echo "$features" | sed -n 's/.*VULKAN=\([01]\).*/\1/p')
audio=$(echo "$features" | sed -n 's/.*AUDIO=\([01]\).*/\1/p')
sdl=$(echo "$features" | sed -n 's/.*SDL=\([01]\).*/\1/p')
[ -n "$vulkan" ] && [ -n "$audio" ] && ok || bad "$BUILD/features: '$features' does not say VULKAN=0|1 AUDIO=0|1"

VK_LIBS='libvulkan'
AUDIO_LIBS='libportaudio|libasound|libpocketsphinx|libsphinxbase|libespeak-ng'
VK_HEADERS='vulkan/vulkan\.h'
AUDIO_HEADERS='portaudio\.h|pocketsphinx\.h|sphinxbase/|espeak-ng/|alsa/asoundlib\.h'
SDL_LIBS='libSDL2'
SDL_HEADERS='SDL2/|zlib\.h'
bins="$CABIN $(ls "$BUILD"/tests/test_* 2>/dev/null | grep -v '\.d$')"
# linked PATTERN: the binaries that link a library matching PATTERN
linked() { for b in $bins; do ldd "$b" 2>/dev/null | grep -Eq "$1" && echo "$b"; done; }
# The sources this build compiled: each layer library's members (by the layer's folders), cli/main.c
# and the tests not stood in for by tests/skipped.c (their .d names their source first).
sources() {
    for lib in base:base engine:"engine engine/cpu" audio:audio app:app ui:ui tui:tui sdl:sdl cli:cli; do
        name=${lib%%:*}; dirs=${lib#*:}
        for o in $(ar t "$BUILD/libcabin_$name.a" 2>/dev/null); do
            for d in $dirs; do [ -f "$d/${o%.o}.c" ] && { echo "$d/${o%.o}.c"; break; }; done
        done
    done
    echo cli/main.c
    for d in "$BUILD"/tests/test_*.d; do
        src=$(head -n 1 "$d" | awk '{print $2}')
        [ "$src" != tests/skipped.c ] && echo "$src"
    done
}
sources >"$T/sources"
[ "$(wc -l <"$T/sources")" -gt 50 ] && ok || bad "found only $(wc -l <"$T/sources") compiled sources in $BUILD"
# compiled PATTERN: the sources whose includes, system headers too (cc -M), match PATTERN. cc -M
# gets the audio packages' include folders as the Makefile's AUDIO_CFLAGS does (pocketsphinx.h
# lives in a folder of its own); a source whose includes cannot be resolved is listed as such,
# not passed over: an include that is not found is not proof that it is not there.
AUDIO_INC="$(pkg-config --cflags pocketsphinx sphinxbase portaudio-2.0 espeak-ng 2>/dev/null) $(pkg-config --cflags sdl2 SDL2_ttf 2>/dev/null)"
compiled() {
    while read -r src; do
        # shellcheck disable=SC2086
        if deps=$(${CC:-cc} -M -std=c11 -D_GNU_SOURCE -I. $AUDIO_INC "$src" 2>/dev/null); then
            printf '%s\n' "$deps" | grep -Eq "$1" && echo "$src"
        else echo "$src (cc -M failed: an include not found)"; fi
    done <"$T/sources"
}

ldd "$CABIN" >"$T/ldd" 2>&1 && ok || bad "ldd $CABIN failed"
sed 's/ (0x[0-9a-f]*)//' "$T/ldd" | sed 's/^/note: ldd cabin: /'
"$CABIN" devices >"$T/devices" 2>/dev/null

if [ "$vulkan" = 0 ]; then
    l=$(linked "$VK_LIBS"); [ -z "$l" ] && ok || bad "VULKAN=0, yet these link libvulkan: $l"
    c=$(compiled "$VK_HEADERS"); [ -z "$c" ] && ok || bad "VULKAN=0, yet compiled against the Vulkan headers: $c"
    grep -q '^  vulkan ' "$T/devices" && bad "VULKAN=0, yet cabin devices lists a vulkan backend" || ok
    "$CABIN" make-model -o "$T/m.gguf" --dim 64 --ffn 128 --vocab 400 >/dev/null || bad "make-model"
    expect_rc 1 "chat --backend vulkan" -- "$CABIN" chat -m "$T/m.gguf" --backend vulkan </dev/null
    one_line_error "unknown backend 'vulkan' (available: auto, cpu" "--backend vulkan without Vulkan"
else
    l=$(linked "$VK_LIBS"); echo "$l" | grep -q "$CABIN" && ok || bad "VULKAN=1, yet cabin does not link libvulkan"
    grep -q '^  vulkan ' "$T/devices" && ok || bad "VULKAN=1, yet cabin devices has no vulkan row"
fi

if [ "$audio" = 0 ]; then
    l=$(linked "$AUDIO_LIBS"); [ -z "$l" ] && ok || bad "AUDIO=0, yet these link an audio library: $l"
    c=$(compiled "$AUDIO_HEADERS"); [ -z "$c" ] && ok || bad "AUDIO=0, yet compiled against audio headers: $c"
    grep -qx 'audio: built without audio (make AUDIO=1)' "$T/devices" && ok || bad "cabin devices: no 'audio: built without' line"
    expect_rc 1 "cabin voice" -- "$CABIN" voice --audio-in assets/audio/set-temperature-22.wav
    one_line_error "cabin voice: built without audio (make AUDIO=1)" "cabin voice without audio"
    expect_rc 1 "cabin audio devices" -- "$CABIN" audio devices
    one_line_error "cabin audio: built without audio (make AUDIO=1)" "cabin audio devices without audio"
else
    l=$(linked "$AUDIO_LIBS"); echo "$l" | grep -q "$CABIN" && ok || bad "AUDIO=1, yet cabin links no audio library"
    grep -q '^audio: built in' "$T/devices" && ok || bad "AUDIO=1, yet cabin devices does not say 'audio: built in'"
fi
# SDL: an old build's features say nothing of it (the window came later): taken as SDL=0
if [ "${sdl:-0}" = 0 ]; then
    l=$(linked "$SDL_LIBS"); [ -z "$l" ] && ok || bad "SDL=0, yet these link SDL2: $l"
    c=$(compiled "$SDL_HEADERS"); [ -z "$c" ] && ok || bad "SDL=0, yet compiled against the SDL2 or zlib headers: $c"
    expect_rc 2 "cabin gui" -- "$CABIN" gui
    one_line_error "cabin gui: built without the window" "cabin gui without SDL"
else
    l=$(linked "$SDL_LIBS"); echo "$l" | grep -q "$CABIN" && ok || bad "SDL=1, yet cabin does not link SDL2"
fi
test_finish
