# ONNX graphs for the CLI tests: ResNet-50 and the U-Net written by tests/unit/onnx_writer.h.
$(BUILD)/tests/gen_onnx: tests/cli/gen_onnx.c tests/unit/onnx_writer.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -Itests/unit -o $@ $<
CHECK_EXTRA += $(BUILD)/tests/gen_onnx
