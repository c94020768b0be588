build-lead/app/cmdlang.o: app/cmdlang.c app/cmdlang.h app/assistant.h \
 engine/session.h engine/backend.h engine/kv_cache.h engine/util.h \
 engine/tensor.h engine/model.h engine/gguf.h engine/precision.h \
 engine/wtype.h engine/tokenizer.h engine/sampler.h engine/telemetry.h \
 app/cmdlang_run.h engine/precision.h
app/cmdlang.h:
app/assistant.h:
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
app/cmdlang_run.h:
engine/precision.h:
