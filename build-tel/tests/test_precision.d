build-tel/tests/test_precision: tests/test_precision.c tests/test.h \
 tests/model_util.h engine/model.h engine/backend.h engine/kv_cache.h \
 engine/util.h engine/tensor.h engine/gguf.h engine/precision.h \
 engine/wtype.h engine/tokenizer.h engine/modelgen.h engine/precision.h \
 engine/session.h engine/model.h engine/sampler.h engine/telemetry.h \
 engine/wtype.h
tests/test.h:
tests/model_util.h:
engine/model.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
engine/modelgen.h:
engine/precision.h:
engine/session.h:
engine/model.h:
engine/sampler.h:
engine/telemetry.h:
engine/wtype.h:
