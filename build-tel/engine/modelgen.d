build-tel/engine/modelgen.o: engine/modelgen.c engine/modelgen.h \
 engine/util.h engine/gguf.h engine/wtype.h
engine/modelgen.h:
engine/util.h:
engine/gguf.h:
engine/wtype.h:
