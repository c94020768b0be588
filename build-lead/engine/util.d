build-lead/engine/util.o: engine/util.c engine/util.h
engine/util.h:
