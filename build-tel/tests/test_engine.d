build-tel/tests/test_engine: tests/test_engine.c tests/test.h \
 tests/model_util.h engine/model.h engine/backend.h engine/kv_cache.h \
 engine/util.h engine/tensor.h engine/gguf.h engine/precision.h \
 engine/wtype.h engine/tokenizer.h engine/chat_template.h \
 engine/modelgen.h engine/sampler.h engine/session.h engine/model.h \
 engine/sampler.h engine/telemetry.h engine/wtype.h
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
engine/chat_template.h:
engine/modelgen.h:
engine/sampler.h:
engine/session.h:
engine/model.h:
engine/sampler.h:
engine/telemetry.h:
engine/wtype.h:
