#!/bin/sh
# The corpus generator behind the embedded model (tools/corpus/gen_corpus.py): deterministic, the
# committed held-out set is what it generates with any training options, held-out texts and
# values stay out of training, and the training-only augmentations keep numbers and slot values
# (tests/test_corpus.py).
TAG=corpus; . "$(dirname "$0")/lib.sh"
skip_without_system_python
/usr/bin/python3 tests/test_corpus.py "$T"
