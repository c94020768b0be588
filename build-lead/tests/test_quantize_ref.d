build-lead/tests/test_quantize_ref: tests/test_quantize_ref.c \
 tests/test.h engine/gguf.h engine/util.h engine/model.h engine/backend.h \
 engine/kv_cache.h engine/tensor.h engine/gguf.h engine/precision.h \
 engine/wtype.h engine/tokenizer.h
tests/test.h:
engine/gguf.h:
engine/util.h:
engine/model.h:
engine/backend.h:
engine/kv_cache.h:
engine/tensor.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
