#!/bin/sh
# cabin's command line against the reference outputs in ../shared/ref (see tests/ref_cli.py).
BUILD=${1:-build}
exec python3 tests/ref_cli.py "$BUILD/cabin"
