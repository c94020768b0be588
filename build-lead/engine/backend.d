build-lead/engine/backend.o: engine/backend.c engine/backend.h \
 engine/kv_cache.h engine/util.h engine/tensor.h
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
