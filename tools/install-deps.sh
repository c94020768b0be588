#!/bin/sh
# Installs the Debian packages cabin needs to build and test, when they are missing.
# Run as root (make run / .ci/run do); as another user it only says what is missing.
set -e
PKGS="build-essential libreadline-dev libncurses-dev libcjson-dev python3 tmux libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers portaudio19-dev libpocketsphinx-dev pocketsphinx-en-us libsphinxbase-dev libespeak-ng-dev espeak-ng sox alsa-utils pkg-config wordnet-base"
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
