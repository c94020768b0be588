build-lead/engine/precision.o: engine/precision.c engine/precision.h \
 engine/util.h engine/wtype.h
engine/precision.h:
engine/util.h:
engine/wtype.h:
