# Hardening: the corrupt-input matrix generator, the inspect benchmark.
$(BUILD)/tests/gen_corrupt: tests/corrupt/gen_corrupt.c
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/gen_corrupt
