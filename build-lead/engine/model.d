build-lead/engine/model.o: engine/model.c engine/model.h engine/backend.h \
 engine/kv_cache.h engine/util.h engine/tensor.h engine/gguf.h \
 engine/precision.h engine/wtype.h engine/tokenizer.h
engine/model.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
