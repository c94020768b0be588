build-tel/engine/util.o: engine/util.c engine/util.h
engine/util.h:
