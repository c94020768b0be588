build-tel/app/cmd_inspect.o: app/cmd_inspect.c app/commands.h app/args.h \
 engine/session.h engine/backend.h engine/kv_cache.h engine/util.h \
 engine/tensor.h engine/model.h engine/gguf.h engine/precision.h \
 engine/wtype.h engine/tokenizer.h engine/sampler.h engine/telemetry.h \
 engine/chat_template.h engine/gguf.h engine/tokenizer.h engine/wtype.h
app/commands.h:
app/args.h:
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
engine/gguf.h:
engine/tokenizer.h:
engine/wtype.h:
