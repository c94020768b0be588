build-tel/engine/convert.o: engine/convert.c engine/convert.h \
 engine/cpu/kernels.h engine/wtype.h engine/util.h
engine/convert.h:
engine/cpu/kernels.h:
engine/wtype.h:
engine/util.h:
