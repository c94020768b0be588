build-tel/engine/convert_avx512.o: engine/convert_avx512.c \
 engine/convert.h engine/wtype.h
engine/convert.h:
engine/wtype.h:
