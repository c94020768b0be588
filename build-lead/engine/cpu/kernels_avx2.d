build-lead/engine/cpu/kernels_avx2.o: engine/cpu/kernels_avx2.c \
 engine/cpu/kernels.h engine/wtype.h
engine/cpu/kernels.h:
engine/wtype.h:
