build-tel/engine/cpu/threadpool.o: engine/cpu/threadpool.c \
 engine/cpu/threadpool.h engine/util.h
engine/cpu/threadpool.h:
engine/util.h:
