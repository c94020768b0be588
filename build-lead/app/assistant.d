build-lead/app/assistant.o: app/assistant.c app/assistant.h
app/assistant.h:
