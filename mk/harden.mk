# Hardening: the corrupt-input matrix generator, the inspect benchmark.
$(BUILD)/tests/gen_corrupt: tests/corrupt/gen_corrupt.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/gen_corrupt

# A tiny HTTP client for tests/cli/test_serve.sh (no curl needed).
$(BUILD)/tests/http_get: tests/cli/http_get.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/http_get

# make bench: inspect of a DeepSeek-V3-scale header against reading its bytes.
$(BUILD)/bench/bench_inspect: bench/bench_inspect.c bench/benchutil.h $(BUILD)/libvramfit.a
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libvramfit.a $(LIBS) $(LDFLAGS_ALL)
bench: $(BUILD)/bench/bench_inspect

# test_util wraps malloc/calloc/realloc to check that no allocation follows a
# length a file merely claims (see test_bounded_allocation).
$(BUILD)/tests/test_util: tests/unit/test_util.c $(BUILD)/libvramfit.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -Itests/unit -Isrc/lib -o $@ $< $(BUILD)/libvramfit.a \
	  -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc $(CMOCKA_LIBS) $(LIBS) $(LDFLAGS_ALL)
