#!/bin/sh
# The training tool's fast paths (weighted cross-entropy, residual dropout, grouped-query
# attention without k/v copies) against plain PyTorch (tests/test_train.py).
TAG=train; . "$(dirname "$0")/lib.sh"
if ! [ -x /usr/bin/python3 ]; then
    echo "skipped: /usr/bin/python3 is not installed"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
/usr/bin/python3 tests/test_train.py
