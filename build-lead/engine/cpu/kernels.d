build-lead/engine/cpu/kernels.o: engine/cpu/kernels.c \
 engine/cpu/kernels.h engine/wtype.h engine/util.h
engine/cpu/kernels.h:
engine/wtype.h:
engine/util.h:
