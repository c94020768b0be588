build-tel/engine/chat_template.o: engine/chat_template.c \
 engine/chat_template.h engine/util.h
engine/chat_template.h:
engine/util.h:
