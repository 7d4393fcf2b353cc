# make bench: every catalog model's inspect, estimate and fit timed against a
# baseline build, side by side (bench/catalog-speed.sh); timeit runs them.
$(BUILD)/bench/timeit: bench/timeit.c bench/benchutil.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CSTD) $(OPT) $(WARN) -o $@ $<
bench: $(BUILD)/bench/timeit
