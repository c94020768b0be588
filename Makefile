# cabin — build, run, test, bench.
# Sources are found by wildcard: a new .c file in engine/, engine/cpu/, app/, ui/, tui/, sdl/, serve/ or cli/ needs no edit here.
# Files named *_avx2.c / *_avx512.c are compiled for those instruction sets and only called
# after a run-time check of the processor (and the OS) says they are safe.
#
# Layers, each a library with its own link list and the layers below it that it needs
# (LAYER_NEEDS_*; docs/ARCHITECTURE.md has the picture). Includes and calls run downwards only:
#   base    base/                      libcabin_base.a    -lpthread
#   engine  engine/ engine/cpu/        libcabin_engine.a  -lm -lpthread -lcjson           needs base
#   vulkan  vulkan/ + embedded SPIR-V  objects            -lvulkan            (VULKAN=1)   needs engine
#   audio   audio/                     libcabin_audio.a   PortAudio, ALSA, pocketsphinx, espeak-ng
#                                                         (AUDIO=1; AUDIO=0: wav, vad, clause and
#                                                         audio/audio_off.c, no library)  needs base
#   app     app/                       libcabin_app.a     -lm -lcjson                      needs engine, audio
#   ui      ui/                        libcabin_ui.a      -lm -lcjson (the front-end core: worker,
#                                                         snapshot, the panels' words)     needs app
#   tui     tui/                       libcabin_tui.a     -lncursesw                       needs ui
#   sdl     sdl/                       libcabin_sdl.a     SDL2, SDL2_ttf, zlib (SDL=1; SDL=0: sdl/gui_off.c,
#                                                         `cabin gui` says it was built without the window)
#                                                                                          needs ui
#   serve   serve/                     libcabin_serve.a   -lmicrohttpd -lcjson (the HTTP face: the
#                                                         OpenAI API; the engine is wired in by cli/)
#                                                                                          needs base
#   cli     cli/ (main.c aside)        libcabin_cli.a     -lreadline (the commands)        needs tui, sdl, serve
# `make VULKAN=0 AUDIO=0 SDL=0` builds a text-only cabin that needs none of their packages. Each
# defaults to 1 when pkg-config finds its packages (or when there is no pkg-config to ask).

.DEFAULT_GOAL := all
CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
OPT     ?= -O2
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g $(OPT) -pthread -I. -MMD -MP
CFLAGS  ?=
ALL_CFLAGS = $(CFLAGS_BASE) $(SAN) $(CFLAGS)
AVX2_FLAGS   = -mavx2 -mfma -mf16c
AVX512_FLAGS = -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni

# $(call have_pkgs,PKG...): 1 when pkg-config knows every PKG (or pkg-config is missing), else 0
have_pkgs = $(if $(shell command -v pkg-config >/dev/null 2>&1 || echo none),1,$(if $(shell pkg-config --exists $(1) && echo y),1,0))
VULKAN_ASKED := $(VULKAN)
AUDIO_ASKED  := $(AUDIO)
VULKAN  ?= $(call have_pkgs,vulkan)
AUDIO   ?= $(call have_pkgs,portaudio-2.0 alsa pocketsphinx sphinxbase espeak-ng)
override VULKAN := $(strip $(VULKAN))
override AUDIO  := $(strip $(AUDIO))
SDL     ?= $(call have_pkgs,sdl2 SDL2_ttf zlib)
override SDL    := $(strip $(SDL))
ifeq ($(filter $(VULKAN),0 1),)
$(error VULKAN=$(VULKAN): 0 or 1)
endif
ifeq ($(filter $(AUDIO),0 1),)
$(error AUDIO=$(AUDIO): 0 or 1)
endif
ifeq ($(filter $(SDL),0 1),)
$(error SDL=$(SDL): 0 or 1)
endif
# $(BUILD)/features names the choice; it changes only when the choice does, and the libraries,
# the binary and the tests depend on it, so switching in the same BUILD relinks what differs.
FEATURES := VULKAN=$(VULKAN) AUDIO=$(AUDIO) SDL=$(SDL)
$(shell mkdir -p $(BUILD) && [ "$$(cat $(BUILD)/features 2>/dev/null)" = "$(FEATURES)" ] || echo "$(FEATURES)" >$(BUILD)/features)
FEATURES_FILE := $(BUILD)/features
# $(BUILD)/commit: the commit `cabin --version` names (base/version.c), rewritten only when it changes.
COMMIT := $(or $(shell git rev-parse --short HEAD 2>/dev/null),unknown)$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null | head -1),-dirty)
$(shell [ "$$(cat $(BUILD)/commit 2>/dev/null)" = "$(COMMIT)" ] || echo "$(COMMIT)" >$(BUILD)/commit)

BASE_LIBS   := -lpthread
ENGINE_LIBS := -lm -lpthread -lcjson
APP_LIBS    := -lm -lcjson
UI_LIBS     := -lm -lcjson
TUI_LIBS    := -lncursesw
CLI_LIBS    := -lreadline -lm -lcjson
SERVE_LIBS  := -lmicrohttpd -lcjson -lpthread
ifeq ($(VULKAN),1)
VK_LIBS     := -lvulkan
else
VK_LIBS     :=
endif
# audio/*.c: PortAudio, pocketsphinx, espeak-ng headers (system headers: their warnings are not ours)
ifeq ($(AUDIO),1)
AUDIO_LIBS   := -lportaudio -lasound -lpocketsphinx -lsphinxbase -lespeak-ng
AUDIO_CFLAGS = $(patsubst -I%,-isystem %,$(shell pkg-config --cflags pocketsphinx sphinxbase portaudio-2.0 espeak-ng 2>/dev/null))
else
AUDIO_LIBS   :=
AUDIO_CFLAGS :=
endif

# sdl/*.c: SDL2 and SDL2_ttf headers (system headers: their warnings are not ours)
ifeq ($(SDL),1)
SDL_LIBS    := $(shell pkg-config --libs sdl2 SDL2_ttf zlib 2>/dev/null || echo -lSDL2 -lSDL2_ttf -lz)
SDL_CFLAGS  = $(patsubst -I%,-isystem %,$(shell pkg-config --cflags sdl2 SDL2_ttf zlib 2>/dev/null))
else
SDL_LIBS    :=
SDL_CFLAGS  :=
endif

# ---- Vulkan: shaders (vulkan/shaders/*.comp) compiled to SPIR-V by glslc and embedded ----
# (VK_EXTRA_OBJ: the object generated from the shaders, linked with the backend's objects)
# Each variant is one glslc run with its defines: $(BUILD)/shaders/NAME.spv; tools/embed_spv.py
# turns them all into $(BUILD)/gen/vk_spv_data.c. Without glslc the table is empty and the
# Vulkan backend says so when asked for. VULKAN=0 leaves all of it out.
ifeq ($(VULKAN),1)
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
VK_WTYPES := f32:0 f16:1 bf16:30 q8_0:8 q4_0:2 q4m:3 i8m:64 f8:63
VK_RED    := sg:1 sh:0
VK_KV     := f16:1 f32:0
ifneq ($(GLSLC),)
$(foreach t,$(VK_WTYPES),$(foreach nt,1 8,$(foreach r,$(VK_RED),$(eval $(call vk_variant,matmul_$(call vk_1,$(t))_n$(nt)_$(call vk_1,$(r)),matmul,-DWTYPE=$(call vk_2,$(t)) -DNR=2 -DNT=$(nt) -DUSE_SUBGROUP=$(call vk_2,$(r)))))))
$(foreach t,$(VK_WTYPES),$(foreach nt,1 8,$(eval $(call vk_variant,matmul_rows_$(call vk_1,$(t))_n$(nt),matmul_rows,-DWTYPE=$(call vk_2,$(t)) -DNT=$(nt)))))
$(foreach t,$(VK_WTYPES),$(eval $(call vk_variant,embed_$(call vk_1,$(t)),embed,-DWTYPE=$(call vk_2,$(t)))))
$(foreach r,$(VK_RED),$(eval $(call vk_variant,rmsnorm_$(call vk_1,$(r)),rmsnorm,-DUSE_SUBGROUP=$(call vk_2,$(r)))))
$(foreach k,$(VK_KV),$(foreach s,full:0 split:1,$(foreach r,$(VK_RED),$(eval $(call vk_variant,attention_$(call vk_1,$(k))_$(call vk_1,$(s))_$(call vk_1,$(r)),attention,-DKV_F16=$(call vk_2,$(k)) -DSPLIT=$(call vk_2,$(s)) -DUSE_SUBGROUP=$(call vk_2,$(r)))))))
$(foreach k,$(VK_KV),$(eval $(call vk_variant,kv_store_$(call vk_1,$(k)),kv_store,-DKV_F16=$(call vk_2,$(k)))))
$(foreach s,attn_combine rope glu add bias scale,$(eval $(call vk_variant,$(s),$(s),)))
endif
# $(BUILD)/gen/vk_spv.list: the variants' names, rewritten only when the list changes, so that a
# variant taken out of the lines above leaves the embedded table too.
$(shell mkdir -p $(BUILD)/gen && [ "$$(cat $(BUILD)/gen/vk_spv.list 2>/dev/null)" = "$(notdir $(VK_SPV))" ] || echo "$(notdir $(VK_SPV))" >$(BUILD)/gen/vk_spv.list)
$(BUILD)/gen/vk_spv_data.c: $(VK_SPV) $(BUILD)/gen/vk_spv.list tools/embed_spv.py
	@mkdir -p $(dir $@)
	/usr/bin/python3 tools/embed_spv.py -o $@ $(VK_SPV)
$(BUILD)/gen/vk_spv_data.o: $(BUILD)/gen/vk_spv_data.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@
VK_EXTRA_OBJ := $(BUILD)/gen/vk_spv_data.o
# The Vulkan backend is linked as objects, not from an archive: nothing names it but its weak
# registry row (engine/backend.c), which would not pull it out of an archive.
VK_OBJ   := $(patsubst %.c,$(BUILD)/%.o,$(filter-out vulkan/vk_variants.c,$(wildcard vulkan/*.c))) $(VK_EXTRA_OBJ)
# Every shader variant the backend asks for (vulkan/vk_variants.c walks the names of all its
# pipelines, with and without subgroup reductions) must be among those built above: checked on
# each build, before cabin links; a missing one stops the build with the variant's name.
VK_CHECK := $(BUILD)/gen/vk_variants.ok
$(BUILD)/tools/vk_variants_check: tools/vk_variants_check.c $(BUILD)/vulkan/vk_variants.o $(VK_OBJ) $(BUILD)/libcabin_engine.a $(BUILD)/libcabin_base.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/vulkan/vk_variants.o $(VK_OBJ) $(BUILD)/libcabin_engine.a $(BUILD)/libcabin_base.a \
	      $(VK_LIBS) $(ENGINE_LIBS) $(BASE_LIBS)
$(VK_CHECK): $(BUILD)/tools/vk_variants_check
	$(BUILD)/tools/vk_variants_check
	@touch $@
else
VK_OBJ   :=
VK_CHECK :=
endif
# ---- end Vulkan ----

# The backends outside engine/ (engine/cpu/ is part of the engine): their objects and link
# lists. Each is linked as objects, not from an archive, because nothing names it but its weak
# row in the registry (engine/backend.c). A new backend adds its objects and libraries here.
BACKEND_OBJ  := $(VK_OBJ)
BACKEND_LIBS := $(VK_LIBS)

# ---- the layers' libraries ----
lib_objs = $(patsubst %.c,$(BUILD)/%.o,$(1))
BASE_OBJ   := $(call lib_objs,$(wildcard base/*.c))
ENGINE_OBJ := $(call lib_objs,$(wildcard engine/*.c engine/cpu/*.c))
# audio/: wav, vad and clause need no library; the devices, recogniser, synthesiser and the
# pipeline on them are built with AUDIO=1, audio/audio_off.c stands in for them with AUDIO=0.
AUDIO_DEV_SRC := audio/device.c audio/asr.c audio/asr_fsg.c audio/tts.c audio/voice.c
ifeq ($(AUDIO),1)
AUDIO_OBJ  := $(call lib_objs,$(filter-out audio/audio_off.c,$(wildcard audio/*.c)))
else
AUDIO_OBJ  := $(call lib_objs,$(filter-out audio/audio_off.c $(AUDIO_DEV_SRC),$(wildcard audio/*.c)) audio/audio_off.c)
endif
APP_OBJ    := $(call lib_objs,$(wildcard app/*.c))
UI_OBJ     := $(call lib_objs,$(wildcard ui/*.c))
TUI_OBJ    := $(call lib_objs,$(wildcard tui/*.c))
ifeq ($(SDL),1)
SDL_OBJ    := $(call lib_objs,$(filter-out sdl/gui_off.c,$(wildcard sdl/*.c)))
else
SDL_OBJ    := $(call lib_objs,sdl/gui_off.c)
endif
SERVE_OBJ  := $(call lib_objs,$(wildcard serve/*.c))
CLI_OBJ    := $(call lib_objs,$(filter-out cli/main.c,$(wildcard cli/*.c)))
MAIN_OBJ   := $(BUILD)/cli/main.o
LAYERS     := cli tui sdl serve ui app audio engine base
$(foreach l,$(LAYERS),$(eval LIB_$(l) := $(BUILD)/libcabin_$(l).a))
$(LIB_base): $(BASE_OBJ)
$(LIB_engine): $(ENGINE_OBJ)
$(LIB_audio): $(AUDIO_OBJ)
$(LIB_app): $(APP_OBJ)
$(LIB_ui): $(UI_OBJ)
$(LIB_tui): $(TUI_OBJ)
$(LIB_sdl): $(SDL_OBJ)
$(LIB_serve): $(SERVE_OBJ)
$(LIB_cli): $(CLI_OBJ)
$(BUILD)/libcabin_%.a: $(FEATURES_FILE)
	@rm -f $@
	ar rcs $@ $(filter %.o,$^)

# What each layer's library needs of the layers below it, and its own link list. A program
# linking layer L links L and every layer it needs, in LAYERS order (each before what it
# uses), then their link lists: no link group, since no layer calls one above it
# (tests/layers.sh checks the includes and the symbols).
LAYER_NEEDS_base   :=
LAYER_NEEDS_engine := base
LAYER_NEEDS_audio  := base
LAYER_NEEDS_app    := engine audio
LAYER_NEEDS_ui     := app
LAYER_NEEDS_tui    := ui
LAYER_NEEDS_sdl    := ui
LAYER_NEEDS_serve  := base
LAYER_NEEDS_cli    := tui sdl serve
LAYER_LIBS_base    := $(BASE_LIBS)
LAYER_LIBS_engine  := $(ENGINE_LIBS)
LAYER_LIBS_audio   := $(AUDIO_LIBS)
LAYER_LIBS_app     := $(APP_LIBS)
LAYER_LIBS_ui      := $(UI_LIBS)
LAYER_LIBS_tui     := $(TUI_LIBS)
LAYER_LIBS_sdl     := $(SDL_LIBS)
LAYER_LIBS_serve   := $(SERVE_LIBS)
LAYER_LIBS_cli     := $(CLI_LIBS)
# $(call layer_closure,L...): L and every layer they need, directly or not
layer_closure = $(sort $(1) $(foreach l,$(1),$(call layer_closure,$(LAYER_NEEDS_$(l)))))
# $(call layers_of,L...): that closure in link order
layers_of = $(filter $(call layer_closure,$(1)),$(LAYERS))
# $(call layer_link,L...): the libraries, then their link lists
layer_libs = $(foreach l,$(call layers_of,$(1)),$(LIB_$(l)))
layer_link = $(call layer_libs,$(1)) $(foreach l,$(call layers_of,$(1)),$(LAYER_LIBS_$(l)))

CABIN_LINK := $(MAIN_OBJ) $(BACKEND_OBJ) $(call layer_link,cli) $(BACKEND_LIBS)

# ---- tests ----
# A test links the layers whose headers it includes (app/, ui/, tui/, cli/, audio/, vulkan/) and
# what they need (layer_link), base and engine always; the tests in ALL_BACKEND_TESTS exercise
# every registered backend, so they link every backend's objects (BACKEND_OBJ: the registry has a
# backend's row only when they are linked). A test that includes a vulkan/ header itself, with
# VULKAN=0, or any audio/ header itself, with AUDIO=0 (even one of the parts that need no library:
# wav, vad, clause, ring), is built from tests/skipped.c instead: the whole test is skipped, not
# only its device parts, and it prints why in the line tests/run.sh reads. The tests of
# ALL_BACKEND_TESTS still run with VULKAN=0, on the CPU rows.
ALL_BACKEND_TESTS := test_ops test_vulkan test_kv test_modelgen_arch
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
test_includes = $(if $(shell grep -l '^\#include "$(2)/' tests/$(1).c 2>/dev/null),$(2))
test_layers = $(foreach l,app ui tui serve cli audio vulkan,$(call test_includes,$(1),$(l))) \
              $(if $(filter $(1),$(ALL_BACKEND_TESTS)),vulkan)
# $(call test_skip,NAME): why NAME cannot be built here, or empty
test_skip = $(if $(and $(filter 0,$(VULKAN)),$(call test_includes,$(1),vulkan)),built without Vulkan (make VULKAN=1),$(if \
            $(and $(filter 0,$(AUDIO)),$(filter audio,$(call test_layers,$(1)))),built without audio (make AUDIO=1)))
# the link line of a program that includes the layers $(2) (vulkan: the backends' objects)
test_link = $(if $(filter vulkan,$(2)),$(BACKEND_OBJ)) $(call layer_link,$(filter-out vulkan,$(2)) engine) \
            $(if $(filter vulkan,$(2)),$(BACKEND_LIBS))
define test_rule
ifeq ($(call test_skip,$(1)),)
$(BUILD)/tests/$(1): tests/$(1).c tests/test.h $(FEATURES_FILE) $(if $(filter vulkan,$(call test_layers,$(1))),$(BACKEND_OBJ)) \
                     $(call layer_libs,$(filter-out vulkan,$(call test_layers,$(1))) engine)
	@mkdir -p $$(dir $$@)
	$(CC) $(ALL_CFLAGS) -o $$@ $$< $(call test_link,$(1),$(call test_layers,$(1)))
else
$(BUILD)/tests/$(1): tests/skipped.c $(FEATURES_FILE)
	@mkdir -p $$(dir $$@)
	$(CC) $(ALL_CFLAGS) '-DSKIP_REASON="$(1): $(call test_skip,$(1))"' -o $$@ $$<
endif
endef
$(foreach t,$(TEST_SRC:tests/%.c=%),$(eval $(call test_rule,$(t))))

# ---- fuzz targets (fuzz/, docs/RELIABILITY.md) ----
# Each fuzz/fuzz_NAME.c is one target. $(BUILD)/fuzz/replay_NAME links it with fuzz/replay.c (a
# plain main, any compiler, built with `all`): tests/fuzz_replay.sh runs the seeds and the
# regression inputs of fuzz/regressions/NAME/ through it in make test and make test-asan.
# `make fuzz` builds $(FUZZ_BUILD)/fuzz/fuzz_NAME with clang and libFuzzer (a text-only build of
# its own, instrumented with -fsanitize=fuzzer-no-link plus ASan and UBSan) and runs each target
# FUZZ_SECONDS seconds, or FUZZ_RUNS inputs, from seed FUZZ_SEED (fuzz/run.sh). A target links
# the layers whose headers it includes.
FUZZ_TARGETS := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
fuzz_layers = $(foreach l,app ui tui serve cli audio,$(if $(shell grep -l '^\#include "$(l)/' fuzz/fuzz_$(1).c 2>/dev/null),$(l)))
fuzz_deps = $(FEATURES_FILE) $(call layer_libs,$(call fuzz_layers,$(1)) engine)
FUZZ_REPLAY_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/replay_%)
FUZZ_BIN := $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%)
define fuzz_rule
$(BUILD)/fuzz/replay_$(1): fuzz/replay.c fuzz/fuzz_$(1).c $(wildcard fuzz/*.h) $(call fuzz_deps,$(1))
	@mkdir -p $$(dir $$@)
	$(CC) $(ALL_CFLAGS) -o $$@ fuzz/replay.c fuzz/fuzz_$(1).c $(call test_link,$(1),$(call fuzz_layers,$(1)))
$(BUILD)/fuzz/fuzz_$(1): fuzz/fuzz_$(1).c $(wildcard fuzz/*.h) $(call fuzz_deps,$(1))
	@mkdir -p $$(dir $$@)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer -o $$@ fuzz/fuzz_$(1).c $(call test_link,$(1),$(call fuzz_layers,$(1)))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(t))))
FUZZ_SECONDS ?= 30
FUZZ_RUNS    ?=
FUZZ_SEED    ?= 1
FUZZ_BUILD   ?= build-fuzz
FUZZ_CC      ?= clang
FUZZ_SAN     := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

MODEL    ?= assets/models/cabin-tiny.gguf

.PHONY: all run test test-asan fuzz fuzz-targets bench install clean deps model model-smalltalk
all: $(BUILD)/cabin $(TEST_BIN) $(FUZZ_REPLAY_BIN) $(VK_CHECK)

$(BUILD)/%_avx2.o: %_avx2.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AVX2_FLAGS) -c $< -o $@
$(BUILD)/%_avx512.o: %_avx512.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AVX512_FLAGS) -c $< -o $@
$(BUILD)/audio/%.o: audio/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(AUDIO_CFLAGS) -c $< -o $@
$(BUILD)/sdl/%.o: sdl/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SDL_CFLAGS) -c $< -o $@
$(BUILD)/base/version.o: base/version.c $(BUILD)/commit
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) '-DCABIN_COMMIT="$(COMMIT)"' -c $< -o $@
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/cabin: $(MAIN_OBJ) $(BACKEND_OBJ) $(call layer_libs,cli) $(FEATURES_FILE) $(VK_CHECK)
	$(CC) $(ALL_CFLAGS) -o $@ $(CABIN_LINK)

# deps: the packages of the layers asked for (tools/debian-packages.txt); a layer turned off on
# the command line (VULKAN=0, AUDIO=0) needs none of its own. run builds after deps, in a make
# of its own, so that packages deps has just installed turn their layers on.
DEPS_GROUPS := build tests $(if $(filter 0,$(VULKAN_ASKED)),,vulkan) $(if $(filter 0,$(AUDIO_ASKED)),,audio)
deps:
	@sh tools/install-deps.sh $(DEPS_GROUPS)

# run: the window when there is a display (DISPLAY or WAYLAND_DISPLAY) and CABIN_UI is not "tui";
# the terminal workbench otherwise, and when the window cannot open (cabin gui exits 2).
run: deps
	@$(MAKE) --no-print-directory $(BUILD)/cabin
	@if [ -f "$(MODEL)" ]; then \
	     rc=2; if [ "$${CABIN_UI:-}" != tui ] && [ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then \
	         ./$(BUILD)/cabin gui -m "$(MODEL)"; rc=$$?; fi; \
	     if [ $$rc = 2 ]; then ./$(BUILD)/cabin -m "$(MODEL)"; else exit $$rc; fi; \
	else echo "cabin: the embedded default model $(MODEL) is not built yet (see issue: embedded model);"; \
	     echo "       run a GGUF of your own with: ./$(BUILD)/cabin chat -m MODEL.gguf"; fi

test: all
	@sh tests/run.sh $(BUILD)

test-asan:
	$(MAKE) BUILD=build-asan OPT=-O1 SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# The seeds are made with this build's cabin (make-model); the targets in a build of their own.
fuzz: $(BUILD)/cabin
	@sh fuzz/run.sh "$(FUZZ_SECONDS)" "$(FUZZ_RUNS)" "$(FUZZ_SEED)" $(FUZZ_BUILD) $(BUILD)/cabin $(FUZZ_CC) "$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) \
	    CC=$(FUZZ_CC) VULKAN=0 AUDIO=0 OPT=-O1 SAN='$(FUZZ_SAN)' fuzz-targets"

fuzz-targets: $(FUZZ_BIN)

bench: $(BUILD)/cabin
	@sh tools/bench.sh $(BUILD)

install: $(BUILD)/cabin
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(BUILD)/cabin $(DESTDIR)$(PREFIX)/bin/cabin

clean:
	rm -rf build build-asan build-text build-fuzz

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
	@sh tools/train/setup.sh
	/usr/bin/python3 tools/corpus/gen_corpus.py $(CORPUS_ARGS) --train-out $(BUILD)/corpus/train.jsonl --heldout-out assets/eval/heldout.jsonl
	/usr/bin/python3 tools/corpus/reply_words.py $(BUILD)/corpus/train.jsonl > app/reply_words.c
	/usr/bin/python3 tools/train/spm_tokenizer.py --corpus $(BUILD)/corpus/train.jsonl --out $(BUILD)/tokenizer/vocab.json
	/usr/bin/python3 tools/train/train.py --corpus $(BUILD)/corpus/train.jsonl --vocab $(BUILD)/tokenizer/vocab.json --out $(BUILD)/train/model.pt --log $(BUILD)/train/train_log.txt $(TRAIN_ARGS)
	/usr/bin/python3 tools/train/export_gguf.py --ckpt $(BUILD)/train/model.pt --vocab $(BUILD)/tokenizer/vocab.json --out assets/models/cabin-tiny.gguf
	$(MAKE) $(BUILD)/cabin
	/usr/bin/python3 tools/train/verify_c.py --gguf assets/models/cabin-tiny.gguf --ckpt $(BUILD)/train/model.pt --vocab $(BUILD)/tokenizer/vocab.json --cabin $(BUILD)/cabin

# The small-talk stage, an experiment not in the shipped model yet (docs/ASSISTANT.md "Small
# talk"): greetings, thanks, goodbyes, questions about cabin and requests the car cannot do put
# into the corpus (tools/corpus/smalltalk.py), trained on from a base model's weights while
# staying close to it (--distill), about 6 minutes. SMALLTALK_BASE: a model file of `make model`'s recipe
# (assets/models/cabin-tiny.gguf); writes $(BUILD)/smalltalk/cabin-tiny-smalltalk.gguf, and
# app/reply_words.c for the sentences it learns (`git checkout app/reply_words.c` gives back the
# shipped model's). Then: cabin eval-assistant -m OUT [-f assets/eval/smalltalk.jsonl].
SMALLTALK_ARGS ?= --steps 600 --long-steps 50 --lr 5e-4 --warmup 20 --bf16 1 --dropout 0.1 --seed 4321 --distill 1.0
SMALLTALK_BASE ?= assets/models/cabin-tiny.gguf
model-smalltalk:
	@sh tools/train/setup.sh
	/usr/bin/python3 tools/corpus/gen_corpus.py $(CORPUS_ARGS) --train-out $(BUILD)/corpus/train.jsonl --no-heldout
	/usr/bin/python3 tools/train/import_gguf.py --gguf $(SMALLTALK_BASE) --ckpt $(BUILD)/smalltalk/base.pt --vocab $(BUILD)/smalltalk/vocab.json
	/usr/bin/python3 tools/corpus/smalltalk.py --train $(BUILD)/corpus/train.jsonl --out $(BUILD)/corpus/train_smalltalk.jsonl
	/usr/bin/python3 tools/corpus/reply_words.py $(BUILD)/corpus/train_smalltalk.jsonl > app/reply_words.c
	/usr/bin/python3 tools/train/train.py --corpus $(BUILD)/corpus/train_smalltalk.jsonl --vocab $(BUILD)/smalltalk/vocab.json --init $(BUILD)/smalltalk/base.pt --out $(BUILD)/smalltalk/model.pt --log $(BUILD)/smalltalk/train_log.txt $(SMALLTALK_ARGS)
	/usr/bin/python3 tools/train/export_gguf.py --ckpt $(BUILD)/smalltalk/model.pt --vocab $(BUILD)/smalltalk/vocab.json --out $(BUILD)/smalltalk/cabin-tiny-smalltalk.gguf
	$(MAKE) $(BUILD)/cabin
