#!/bin/sh
# The layers depend downwards only (docs/ARCHITECTURE.md), checked two ways on every source and
# on this build's libraries:
#   includes: no file of a layer includes a header of a layer it may not use (the faces tui/ and
#     sdl/ none of engine/, app/, audio/ or cli/; engine/, base/, audio/ and app/ none of ui/,
#     tui/, sdl/ or cli/; the HTTP face serve/ nothing but base/; ...);
#   symbols: no library calls a function defined in a library above it or beside it (nm: an
#     undefined symbol of libcabin_L.a defined in libcabin_M.a for a pair L, M it may not use),
#     so the faces name nothing of the engine or the app, and nothing calls into cli/;
# and the Makefile links no group (a group is only needed where two layers call each other).
TAG=layers; . "$(dirname "$0")/lib.sh"
# LAYER: the folders it may not include from
forbidden() {
    case $1 in
    base) echo "engine vulkan audio app ui tui sdl serve cli" ;;
    engine) echo "vulkan audio app ui tui sdl serve cli" ;;
    vulkan) echo "audio app ui tui sdl serve cli" ;;
    audio) echo "engine vulkan app ui tui sdl serve cli" ;;
    app) echo "vulkan ui tui sdl serve cli" ;;
    ui) echo "vulkan tui sdl serve cli" ;;
    tui) echo "engine vulkan audio app sdl serve cli" ;;
    sdl) echo "engine vulkan audio app tui serve cli" ;;
    serve) echo "engine vulkan audio app ui tui sdl cli" ;;
    cli) echo "" ;;
    esac
}
for layer in base engine vulkan audio app ui tui sdl serve cli; do
    dirs=$layer
    [ "$layer" = engine ] && dirs="engine engine/cpu"
    files=$(for d in $dirs; do ls "$d"/*.c "$d"/*.h 2>/dev/null; done)
    [ -n "$files" ] && ok || bad "$layer: no sources found"
    for up in $(forbidden $layer); do
        # shellcheck disable=SC2086
        hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]+\"$up/" $files 2>/dev/null)
        if [ -z "$hits" ]; then ok; else bad "$layer includes $up/:"; echo "$hits"; fi
    done
done

# symbols: the same rules on the libraries (vulkan/ is linked as objects: its own rule below)
defined() { nm -g --defined-only "$1" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u; }
undefined() { nm -u "$@" 2>/dev/null | awk 'NF == 2 { print $2 }' | sort -u; }
have_nm=1
command -v nm >/dev/null 2>&1 || have_nm=0
if [ $have_nm = 0 ]; then
    echo "skipped: no nm (binutils) to read the libraries' symbols"; skip=$((skip + 1))
else
    for l in base engine audio app ui tui sdl serve cli; do
        lib="$BUILD/libcabin_$l.a"
        [ -f "$lib" ] && ok || bad "$lib is missing (make BUILD=$BUILD all)"
        defined "$lib" >"$T/def.$l"
        undefined "$lib" >"$T/und.$l"
    done
    for l in base engine audio app ui tui sdl serve; do
        for up in $(forbidden $l); do
            [ "$up" = vulkan ] && continue
            calls=$(comm -12 "$T/und.$l" "$T/def.$up" | tr '\n' ' ')
            if [ -z "$calls" ]; then ok; else bad "libcabin_$l.a calls into $up/: $calls"; fi
        done
    done
    vk=$(ls "$BUILD"/vulkan/*.o 2>/dev/null)
    if [ -n "$vk" ]; then
        # shellcheck disable=SC2086
        undefined $vk >"$T/und.vulkan"
        for up in app ui tui sdl cli audio; do
            calls=$(comm -12 "$T/und.vulkan" "$T/def.$up" | tr '\n' ' ')
            if [ -z "$calls" ]; then ok; else bad "vulkan/ calls into $up/: $calls"; fi
        done
    fi
fi

if grep -q -- '--start-group' Makefile; then bad "the Makefile links a group (two layers call each other)"; else ok; fi
test_finish
