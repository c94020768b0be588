build-tel/engine/sensitivity.o: engine/sensitivity.c engine/sensitivity.h \
 engine/precision.h engine/util.h engine/quality.h engine/session.h \
 engine/backend.h engine/kv_cache.h engine/tensor.h engine/model.h \
 engine/gguf.h engine/wtype.h engine/tokenizer.h engine/sampler.h \
 engine/telemetry.h
engine/sensitivity.h:
engine/precision.h:
engine/util.h:
engine/quality.h:
engine/session.h:
engine/backend.h:
engine/kv_cache.h:
engine/tensor.h:
engine/model.h:
engine/gguf.h:
engine/wtype.h:
engine/tokenizer.h:
engine/sampler.h:
engine/telemetry.h:
