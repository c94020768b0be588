build-tel/app/vehicle.o: app/vehicle.c app/assistant.h engine/util.h
app/assistant.h:
engine/util.h:
