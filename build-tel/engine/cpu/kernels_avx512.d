build-tel/engine/cpu/kernels_avx512.o: engine/cpu/kernels_avx512.c \
 engine/cpu/kernels.h engine/wtype.h
engine/cpu/kernels.h:
engine/wtype.h:
