build-lead/engine/unicode_data.o: engine/unicode_data.c engine/unicode.h
engine/unicode.h:
