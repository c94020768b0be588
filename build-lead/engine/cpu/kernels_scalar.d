build-lead/engine/cpu/kernels_scalar.o: engine/cpu/kernels_scalar.c \
 engine/cpu/kernels.h engine/wtype.h engine/util.h
engine/cpu/kernels.h:
engine/wtype.h:
engine/util.h:
