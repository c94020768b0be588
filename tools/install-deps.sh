#!/bin/sh
# Installs the Debian packages cabin needs, when they are missing, from the one list
# tools/debian-packages.txt. Usage: install-deps.sh [GROUP ...]   (default: build vulkan audio
# tests, the full build and its tests; "build tests" is enough for make VULKAN=0 AUDIO=0).
# Run as root (make run / .ci/run do); as another user it only says what is missing.
# install-deps.sh --list [GROUP ...] prints the packages and installs nothing.
set -e
LIST="$(dirname "$0")/debian-packages.txt"
list_only=0
if [ "$1" = --list ]; then list_only=1; shift; fi
[ $# -gt 0 ] || set -- build vulkan audio tests
PKGS=""
for g in "$@"; do
    line=$(sed -n "s/^$g:[[:space:]]*//p" "$LIST")
    if [ -z "$line" ]; then
        echo "cabin: $LIST: no group '$g' (groups: $(sed -n 's/^\([a-z]*\):.*/\1/p' "$LIST" | tr '\n' ' '))" >&2
        exit 2
    fi
    for p in $line; do
        case " $PKGS " in *" $p "*) ;; *) PKGS="$PKGS $p" ;; esac
    done
done
if [ $list_only = 1 ]; then echo $PKGS; exit 0; fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "cabin: missing Debian packages:$missing" >&2
    echo "cabin: install them with: sudo apt-get install$missing" >&2
    exit 1
fi
echo "cabin: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q $missing
