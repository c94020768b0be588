build-lead/engine/calibrate.o: engine/calibrate.c engine/calibrate.h \
 engine/model.h engine/backend.h engine/kv_cache.h engine/util.h \
 engine/tensor.h engine/gguf.h engine/precision.h engine/wtype.h \
 engine/tokenizer.h
engine/calibrate.h:
engine/model.h:
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/gguf.h:
engine/precision.h:
engine/wtype.h:
engine/tokenizer.h:
