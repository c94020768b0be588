#!/bin/sh
# Packages the tiny-model pipeline (tools/corpus, tools/train) needs on Debian 12: PyTorch and
# NumPy for the system interpreter /usr/bin/python3, and the threaded OpenBLAS (without it torch
# falls back to the slow reference BLAS), and WordNet (wordnet-base: gen_corpus.py --synonyms).
# Installs only what is missing. The list is tools/debian-packages.txt's model group.
set -e
PKGS=$(sh "$(dirname "$0")/../install-deps.sh" --list model)
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "setup.sh: $PKGS already installed"
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup.sh: installing$missing"
$SUDO apt-get install -y $missing
