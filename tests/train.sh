#!/bin/sh
# The training tool's fast paths (weighted cross-entropy, residual dropout, grouped-query
# attention without k/v copies) against plain PyTorch (tests/test_train.py).
TAG=train; . "$(dirname "$0")/lib.sh"
skip_without_system_python
/usr/bin/python3 tests/test_train.py
