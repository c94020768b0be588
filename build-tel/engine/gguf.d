build-tel/engine/gguf.o: engine/gguf.c engine/gguf.h engine/util.h \
 engine/wtype.h
engine/gguf.h:
engine/util.h:
engine/wtype.h:
