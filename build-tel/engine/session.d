build-tel/engine/session.o: engine/session.c engine/session.h \
 engine/backend.h engine/kv_cache.h engine/util.h engine/tensor.h \
 engine/model.h engine/gguf.h engine/precision.h engine/wtype.h \
 engine/tokenizer.h engine/sampler.h engine/telemetry.h \
 engine/chat_template.h
engine/session.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/model.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
engine/sampler.h:
engine/telemetry.h:
engine/chat_template.h:
