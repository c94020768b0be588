build-tel/engine/unicode.o: engine/unicode.c engine/unicode.h
engine/unicode.h:
