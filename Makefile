# cabin — build, run, test, bench.
# Sources are found by wildcard: a new .c file in engine/, engine/cpu/ or app/ needs no edit here.
# Files named *_avx2.c / *_avx512.c are compiled for those instruction sets and only called
# after a run-time check of the processor (and the OS) says they are safe.

.DEFAULT_GOAL := all
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g $(OPT) -pthread -I. -MMD -MP
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_BASE) $(SAN) $(CFLAGS)
LDLIBS  = -lm -lpthread -lreadline -lcjson -lvulkan -lncursesw -lpocketsphinx -lsphinxbase -lportaudio -lasound -lespeak-ng
# audio/*.c: PortAudio, pocketsphinx, espeak-ng headers (system headers: their warnings are not ours)
AUDIO_CFLAGS = $(patsubst -I%,-isystem %,$(shell pkg-config --cflags pocketsphinx sphinxbase portaudio-2.0 espeak-ng 2>/dev/null))
AVX2_FLAGS   = -mavx2 -mfma -mf16c
AVX512_FLAGS = -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni

# ---- Vulkan: shaders (vulkan/shaders/*.comp) compiled to SPIR-V by glslc and embedded ----
# (VK_EXTRA_OBJ: objects generated from the shaders, added to the library)
# Each variant is one glslc run with its defines: $(BUILD)/shaders/NAME.spv; tools/embed_spv.py
# turns them all into $(BUILD)/gen/vk_spv_data.c. Without glslc the table is empty and the
# Vulkan backend says so when asked for.
GLSLC      ?= $(shell command -v glslc 2>/dev/null)
VK_SRC_DIR := vulkan/shaders
VK_SPV_DIR := $(BUILD)/shaders
VK_INC     := $(wildcard $(VK_SRC_DIR)/*.glsl)
VK_SPV     :=
vk_1 = $(word 1,$(subst :, ,$(1)))
vk_2 = $(word 2,$(subst :, ,$(1)))
# $(call vk_variant,NAME,SOURCE,DEFINES)
define vk_variant
VK_SPV += $(VK_SPV_DIR)/$(1).spv
$(VK_SPV_DIR)/$(1).spv: $(VK_SRC_DIR)/$(2).comp $(VK_INC)
	@mkdir -p $$(dir $$@)
	$(GLSLC) --target-env=vulkan1.1 -O $(3) -o $$@ $$<
endef
VK_WTYPES := f32:0 f16:1 bf16:30 q8_0:8 q4_0:2
VK_RED    := sg:1 sh:0
VK_KV     := f16:1 f32:0
ifneq ($(GLSLC),)
$(foreach t,$(VK_WTYPES),$(foreach nt,1 8,$(foreach r,$(VK_RED),$(eval $(call vk_variant,matmul_$(call vk_1,$(t))_n$(nt)_$(call vk_1,$(r)),matmul,-DWTYPE=$(call vk_2,$(t)) -DNR=2 -DNT=$(nt) -DUSE_SUBGROUP=$(call vk_2,$(r)))))))
$(foreach t,$(VK_WTYPES),$(foreach nt,1 8,$(eval $(call vk_variant,matmul_rows_$(call vk_1,$(t))_n$(nt),matmul_rows,-DWTYPE=$(call vk_2,$(t)) -DNT=$(nt)))))
$(foreach t,$(VK_WTYPES),$(eval $(call vk_variant,embed_$(call vk_1,$(t)),embed,-DWTYPE=$(call vk_2,$(t)))))
$(foreach r,$(VK_RED),$(eval $(call vk_variant,rmsnorm_$(call vk_1,$(r)),rmsnorm,-DUSE_SUBGROUP=$(call vk_2,$(r)))))
$(foreach k,$(VK_KV),$(foreach s,full:0 split:1,$(foreach r,$(VK_RED),$(eval $(call vk_variant,attention_$(call vk_1,$(k))_$(call vk_1,$(s))_$(call vk_1,$(r)),attention,-DKV_F16=$(call vk_2,$(k)) -DSPLIT=$(call vk_2,$(s)) -DUSE_SUBGROUP=$(call vk_2,$(r)))))))
$(foreach k,$(VK_KV),$(eval $(call vk_variant,kv_store_$(call vk_1,$(k)),kv_store,-DKV_F16=$(call vk_2,$(k)))))
$(foreach s,attn_combine rope swiglu add bias,$(eval $(call vk_variant,$(s),$(s),)))
endif
$(BUILD)/gen/vk_spv_data.c: $(VK_SPV) tools/embed_spv.py
	@mkdir -p $(dir $@)
	/usr/bin/python3 tools/embed_spv.py -o $@ $(VK_SPV)
$(BUILD)/gen/vk_spv_data.o: $(BUILD)/gen/vk_spv_data.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@
VK_EXTRA_OBJ := $(BUILD)/gen/vk_spv_data.o
# ---- end Vulkan ----

LIB_SRC  := $(wildcard base/*.c engine/*.c engine/cpu/*.c audio/*.c tui/*.c) $(filter-out app/main.c,$(wildcard app/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
# The Vulkan backend is linked as objects, not from an archive: nothing names it but its weak
# registry row (engine/backend.c), which would not pull it out of an archive.
VK_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(wildcard vulkan/*.c)) $(VK_EXTRA_OBJ)
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
$(BUILD)/audio/%.o: audio/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AUDIO_CFLAGS) -c $< -o $@
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libcabin.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/cabin: $(MAIN_OBJ) $(VK_OBJ) $(BUILD)/libcabin.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(VK_OBJ) $(BUILD)/libcabin.a tests/test.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(VK_OBJ) $(BUILD)/libcabin.a $(LDLIBS)

deps:
	@sh tools/install-deps.sh

run: deps $(BUILD)/cabin
	@if [ -f "$(MODEL)" ]; then ./$(BUILD)/cabin -m "$(MODEL)"; \
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

# The embedded default model, rebuilt from nothing: generated corpus (and the spoken-sentence
# word table app/reply_words.c made from it) -> tokenizer -> training
# (about 35 minutes on 2 cores, bf16) -> GGUF -> checked against the C engine (docs/ASSISTANT.md).
# CORPUS_ARGS / TRAIN_ARGS: the recipe (defaults: the shipped one, "recipe X" with all four batches
# of extra frames, seed 4321); the held-out set assets/eval/heldout.jsonl comes out the same with
# any corpus options.
CORPUS_ARGS ?= --train 100000 --frames 0.5 --spoken-house 0.3 --decontaminate 1 --word-drop 0.25 --unknown-words 0.3 --extra-frames 0.5 \
	--extra-frames-file tools/corpus/extra_frames.json --extra-frames-file tools/corpus/extra_frames_batch2.json \
	--extra-frames-file tools/corpus/extra_frames_batch3.json --extra-frames-file tools/corpus/extra_frames_batch4.json
TRAIN_ARGS ?= --steps 5000 --long-steps 350 --bf16 1 --dropout 0.1 --seed 4321
model:
	@dpkg -s python3-torch python3-numpy libopenblas0-pthread wordnet-base >/dev/null 2>&1 || sh tools/train/setup.sh
	/usr/bin/python3 tools/corpus/gen_corpus.py $(CORPUS_ARGS) --train-out $(BUILD)/corpus/train.jsonl --heldout-out assets/eval/heldout.jsonl
	/usr/bin/python3 tools/corpus/reply_words.py $(BUILD)/corpus/train.jsonl > app/reply_words.c
	/usr/bin/python3 tools/train/spm_tokenizer.py --corpus $(BUILD)/corpus/train.jsonl --out $(BUILD)/tokenizer/vocab.json
	/usr/bin/python3 tools/train/train.py --corpus $(BUILD)/corpus/train.jsonl --vocab $(BUILD)/tokenizer/vocab.json --out $(BUILD)/train/model.pt --log $(BUILD)/train/train_log.txt $(TRAIN_ARGS)
	/usr/bin/python3 tools/train/export_gguf.py --ckpt $(BUILD)/train/model.pt --vocab $(BUILD)/tokenizer/vocab.json --out assets/models/cabin-tiny.gguf
	$(MAKE) $(BUILD)/cabin
	/usr/bin/python3 tools/train/verify_c.py --gguf assets/models/cabin-tiny.gguf --ckpt $(BUILD)/train/model.pt --vocab $(BUILD)/tokenizer/vocab.json --cabin $(BUILD)/cabin
