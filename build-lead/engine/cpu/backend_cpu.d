build-lead/engine/cpu/backend_cpu.o: engine/cpu/backend_cpu.c \
 engine/backend.h engine/kv_cache.h engine/util.h engine/tensor.h \
 engine/cpu/kernels.h engine/wtype.h engine/cpu/threadpool.h
engine/backend.h:
engine/kv_cache.h:
engine/util.h:
engine/tensor.h:
engine/cpu/kernels.h:
engine/wtype.h:
engine/cpu/threadpool.h:
