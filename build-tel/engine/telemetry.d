build-tel/engine/telemetry.o: engine/telemetry.c engine/telemetry.h \
 engine/util.h
engine/telemetry.h:
engine/util.h:
