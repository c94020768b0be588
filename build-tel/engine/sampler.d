build-tel/engine/sampler.o: engine/sampler.c engine/sampler.h \
 engine/util.h
engine/sampler.h:
engine/util.h:
