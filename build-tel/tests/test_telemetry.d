build-tel/tests/test_telemetry: tests/test_telemetry.c engine/modelgen.h \
 engine/util.h engine/quality.h engine/session.h engine/backend.h \
 engine/kv_cache.h engine/tensor.h engine/model.h engine/gguf.h \
 engine/precision.h engine/wtype.h engine/tokenizer.h engine/sampler.h \
 engine/telemetry.h engine/sensitivity.h engine/quality.h \
 engine/session.h engine/telemetry.h engine/wtype.h tests/test.h
engine/modelgen.h:
engine/util.h:
engine/quality.h:
engine/session.h:
engine/backend.h:
engine/kv_cache.h:
engine/tensor.h:
engine/model.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
engine/sampler.h:
engine/telemetry.h:
engine/sensitivity.h:
engine/quality.h:
engine/session.h:
engine/telemetry.h:
engine/wtype.h:
tests/test.h:
