# vramfit — build, test, run. See README.md.
#   make            build/vramfit, build/libvramfit.a, build/libvramfit.so
#   make run        install missing deps, build, run the main job on an embedded default
#   make test       install missing deps, build, run every test (plain, then ASan+UBSan)
#   make fuzz       build the libFuzzer harnesses (clang) into build/fuzz/
#   make bench      run the benchmarks in bench/
#   make install    PREFIX=/usr/local DESTDIR=

CC      ?= cc
PREFIX  ?= /usr/local
BUILD   ?= build
SAN     ?=
PKGS    := jansson libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libcurl's headers only: the Hub opens libcurl.so.4 when first asked
# (src/lib/read/hub/hub_curl.h), so that no command starts by loading it.
PKG_LIBS   := $(shell pkg-config --libs jansson 2>/dev/null || echo -ljansson)
CMOCKA_CFLAGS := $(shell pkg-config --cflags cmocka 2>/dev/null)
CMOCKA_LIBS   := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)
# libmicrohttpd: the CLI only ('vramfit serve'); the library does not need it.
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
# (its headers only as well: 'vramfit serve' opens libmicrohttpd.so.12 when it
# starts, src/cli/serve/serve_mhd.h, and no other command loads GnuTLS with it)
MHD_LIBS   :=

# Without the build dependencies, one line naming the set-up instead of a
# compiler error (make test / make run install them first through 'deps').
BUILD_DEPS := jansson libmicrohttpd
ifeq ($(filter deps test run clean,$(MAKECMDGOALS)),)
ifneq ($(shell pkg-config --exists $(BUILD_DEPS) 2>/dev/null && echo ok),ok)
$(error vramfit: build dependencies missing ($(BUILD_DEPS), found with pkg-config): run 'make deps' (or tools/deps.sh))
endif
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla
CSTD    := -std=c17 -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64
OPT     ?= -O2 -g
ifeq ($(SAN),1)
OPT     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
endif
# Quiet build lines ("  CC  file") unless V=1.
ifneq ($(V),1)
QUIET = @printf '  %-6s %s\n' '$(1)' '$(2)';
MAKEFLAGS += --no-print-directory
endif
CFLAGS_ALL  = $(CSTD) $(OPT) $(WARN) -fPIC -Iinclude -Isrc/lib $(PKG_CFLAGS) $(MHD_CFLAGS) $(CFLAGS)
LDFLAGS_ALL = $(OPT) $(LDFLAGS)
LIBS        = $(PKG_LIBS) -ldl -lpthread -lm

# Sources at any depth: the folders are the pipeline's stages (docs/design.md).
LIB_SRCS := $(sort $(shell find src/lib -name '*.c'))
CLI_SRCS := $(sort $(shell find src/cli -name '*.c'))
GEN_SRCS :=
.DEFAULT_GOAL := all
# Modules add generated sources, tools and test programs in mk/*.mk.
-include mk/*.mk

LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(patsubst %.c,$(BUILD)/obj/%.o,$(GEN_SRCS))
# The library in two stages: the catalog's counts (build/gen/catalog_counts.c)
# are what a first library, with an empty table, gives when it opens every
# catalog model; made again whenever any of the library's objects changes.
COUNTS_O := $(BUILD)/obj/$(COUNTS_C:.c=.o)
STAGE1_OBJS := $(filter-out $(COUNTS_O),$(LIB_OBJS)) $(BUILD)/obj/tools/catalog_counts_empty.o
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
# The command's own headers are named from src/cli ("args/estimate_opts.h").
$(CLI_OBJS): CFLAGS_ALL += -Isrc/cli
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
REPLAY_BINS := $(patsubst fuzz/%.c,$(BUILD)/replay/%,$(FUZZ_SRCS))

.PHONY: all deps run test check fuzz bench install clean
all: $(BUILD)/vramfit $(BUILD)/libvramfit.a $(BUILD)/libvramfit.so $(BUILD)/vramfit.pc

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$<)$(CC) $(CFLAGS_ALL) -DVF_BUILDING_LIBRARY -fvisibility=hidden -MMD -MP -c $< -o $@

$(BUILD)/libvramfit.a: $(LIB_OBJS)
	@rm -f $@
	$(call QUIET,AR,$@)ar rcs $@ $^

$(BUILD)/stage1/libvramfit.a: $(STAGE1_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(call QUIET,AR,$@)ar rcs $@ $^

$(BUILD)/tools/catalog_counts: tools/catalog_counts.c include/vramfit.h $(BUILD)/stage1/libvramfit.a
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/stage1/libvramfit.a $(LIBS) $(LDFLAGS_ALL)

$(COUNTS_C): $(BUILD)/tools/catalog_counts
	@mkdir -p $(dir $@)
	$(call QUIET,COUNT,$@)$(BUILD)/tools/catalog_counts $@

$(BUILD)/libvramfit.so: $(LIB_OBJS)
	$(call QUIET,LD,$@)$(CC) -shared -Wl,-soname,libvramfit.so.0 $(LDFLAGS_ALL) -o $@ $^ $(LIBS)

$(BUILD)/vramfit: $(CLI_OBJS) $(BUILD)/libvramfit.a
	$(call QUIET,LD,$@)$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJS) $(BUILD)/libvramfit.a $(MHD_LIBS) $(LIBS)

$(BUILD)/vramfit.pc: Makefile
	@mkdir -p $(BUILD)
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: vramfit\nDescription: GPU memory accounting and streaming weight loader\nVersion: 0.1.0\nRequires.private: jansson\nLibs: -L$${libdir} -lvramfit\nLibs.private: -ldl -lpthread -lm\nCflags: -I$${includedir}\n' '$(PREFIX)' > $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libvramfit.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -Itests/unit -o $@ $< $(BUILD)/libvramfit.a $(CMOCKA_LIBS) $(LIBS) $(LDFLAGS_ALL)

# Each fuzz harness, linked with a plain main that replays its corpus.
$(BUILD)/replay/%: fuzz/%.c fuzz/replay.c $(wildcard fuzz/*.h) $(BUILD)/libvramfit.a
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) -o $@ $< fuzz/replay.c $(BUILD)/libvramfit.a $(LIBS) $(LDFLAGS_ALL)

deps:
	@./tools/deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/vramfit estimate Qwen/Qwen3-8B --context 8192
	./$(BUILD)/vramfit fit Qwen/Qwen3-8B --gpu RTX-4090 --context 8192

# One pass of every test against $(BUILD); tests/run.sh prints the counts.
check: all $(UNIT_BINS) $(REPLAY_BINS) $(CHECK_EXTRA)
	@BUILD=$(BUILD) ./tests/run.sh

test: deps
	@rm -f build/test-counts
	@$(MAKE) --no-print-directory check; s1=$$?; \
	 $(MAKE) --no-print-directory SAN=1 BUILD=build/asan check; s2=$$?; \
	 ./tests/summary.sh build/test-counts; s3=$$?; \
	 [ $$s1 -eq 0 ] && [ $$s2 -eq 0 ] && [ $$s3 -eq 0 ]

FUZZ_CC ?= clang
fuzz: $(patsubst fuzz/%.c,build/fuzz/%,$(FUZZ_SRCS))
build/fuzz/%: fuzz/%.c $(wildcard fuzz/*.h) $(LIB_SRCS) $(GEN_SRCS) include/vramfit.h src/lib/model/model.h
	@command -v $(FUZZ_CC) >/dev/null || { echo 'vramfit: make fuzz needs $(FUZZ_CC) (Debian: clang)' >&2; exit 1; }
	@mkdir -p $(dir $@)
	$(call QUIET,CLANG,$@)$(FUZZ_CC) $(CSTD) -O1 -g -fsanitize=fuzzer,address,undefined -Iinclude -Isrc/lib $(PKG_CFLAGS) \
	  -o $@ $< $(LIB_SRCS) $(GEN_SRCS) $(PKG_LIBS) -ldl -lpthread -lm

bench: all
	@./bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include \
	  $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/vramfit $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(BUILD)/libvramfit.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BUILD)/libvramfit.so $(DESTDIR)$(PREFIX)/lib/libvramfit.so.0
	ln -sf libvramfit.so.0 $(DESTDIR)$(PREFIX)/lib/libvramfit.so
	install -m 644 include/vramfit.h $(DESTDIR)$(PREFIX)/include/
	sed 's|^prefix=.*|prefix=$(PREFIX)|' $(BUILD)/vramfit.pc >$(DESTDIR)$(PREFIX)/lib/pkgconfig/vramfit.pc
	install -m 644 docs/vramfit.1 $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
