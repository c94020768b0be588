build-lead/engine/tokenizer_bpe.o: engine/tokenizer_bpe.c \
 engine/tokenizer_internal.h engine/pretok.h engine/tokenizer.h \
 engine/gguf.h engine/util.h engine/unicode.h
engine/tokenizer_internal.h:
engine/pretok.h:
engine/tokenizer.h:
engine/gguf.h:
engine/util.h:
engine/unicode.h:
