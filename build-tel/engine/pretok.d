build-tel/engine/pretok.o: engine/pretok.c engine/pretok.h \
 engine/unicode.h engine/util.h
engine/pretok.h:
engine/unicode.h:
engine/util.h:
