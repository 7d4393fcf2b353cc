# GGUF reader: test writer dependency, corrupt-file generator, benchmark.
$(BUILD)/tests/test_gguf: tests/unit/gguf_writer.h

# tests/cli/test_gguf_corrupt.sh builds its corrupt files with this generator.
$(BUILD)/tests/gen_gguf: tests/corrupt/gen_gguf.c tests/unit/gguf_writer.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -Itests/unit -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/gen_gguf

$(BUILD)/bench/bench_inspect_gguf: bench/bench_inspect_gguf.c bench/benchutil.h tests/unit/gguf_writer.h $(BUILD)/libvramfit.a
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) -Itests/unit -o $@ $< $(BUILD)/libvramfit.a $(LIBS) $(LDFLAGS_ALL)
bench: $(BUILD)/bench/bench_inspect_gguf
