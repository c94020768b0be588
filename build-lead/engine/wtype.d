build-lead/engine/wtype.o: engine/wtype.c engine/wtype.h engine/util.h
engine/wtype.h:
engine/util.h:
