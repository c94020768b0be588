# cabin — build, run, test, bench.
# Sources are found by wildcard: a new .c file in engine/, engine/cpu/ or app/ needs no edit here.
# Files named *_avx2.c / *_avx512.c are compiled for those instruction sets and only called
# after a run-time check of the processor (and the OS) says they are safe.

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g $(OPT) -pthread -I. -MMD -MP
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_BASE) $(SAN) $(CFLAGS)
LDLIBS  = -lm -lpthread -lreadline -lcjson
AVX2_FLAGS   = -mavx2 -mfma -mf16c
AVX512_FLAGS = -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni

LIB_SRC  := $(wildcard engine/*.c engine/cpu/*.c) $(filter-out app/main.c,$(wildcard app/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ := $(BUILD)/app/main.o
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
MODEL    ?= assets/models/cabin-tiny.gguf

.PHONY: all run test test-asan bench install clean deps model
all: $(BUILD)/cabin $(TEST_BIN)

$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AVX2_FLAGS) -c $< -o $@
$(BUILD)/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AVX512_FLAGS) -c $< -o $@
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libcabin.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/cabin: $(MAIN_OBJ) $(BUILD)/libcabin.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(BUILD)/libcabin.a tests/test.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libcabin.a $(LDLIBS)

deps:
	@sh tools/install-deps.sh

run: deps $(BUILD)/cabin
	@if [ -f "$(MODEL)" ]; then ./$(BUILD)/cabin chat -m "$(MODEL)"; \
	else echo "cabin: the embedded default model $(MODEL) is not built yet (see issue: embedded model);"; \
	     echo "       run a GGUF of your own with: ./$(BUILD)/cabin chat -m MODEL.gguf"; fi

test: all
	@sh tests/run.sh $(BUILD)

test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

bench: $(BUILD)/cabin
	@sh tools/bench.sh $(BUILD)

install: $(BUILD)/cabin
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/cabin $(DESTDIR)$(PREFIX)/bin/cabin

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
