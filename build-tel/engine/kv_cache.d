build-tel/engine/kv_cache.o: engine/kv_cache.c engine/kv_cache.h \
 engine/util.h
engine/kv_cache.h:
engine/util.h:
