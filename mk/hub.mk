# The stand-in Hub for tests/cli/test_hub.sh and bench/hub.sh, and the
# generator of the repositories it serves (sparse files, made at test time).
$(BUILD)/tests/hubserver: tests/hub/hubserver.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $< -lpthread

$(BUILD)/tests/gen_repo: tests/hub/gen_repo.c bench/benchutil.h tests/unit/gguf_writer.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/hubserver $(BUILD)/tests/gen_repo
bench: $(BUILD)/tests/hubserver $(BUILD)/tests/gen_repo
