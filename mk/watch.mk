# vramfit watch's test double for an old driver: the fake NVML without the
# versioned calls (nvmlDeviceGetMemoryInfo_v2, ..._ComputeRunningProcesses_v3/_v2),
# so the fallbacks to the unversioned ones run (tests/cli/test_watch.sh).
$(BUILD)/fake/old/libnvidia-ml.so.1: tests/fake/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -DFAKE_NVML_OLD -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

CHECK_EXTRA += $(BUILD)/fake/old/libnvidia-ml.so.1

# The sample store is the CLI's: its test links watch_sample.c and watch_proc.c.
$(BUILD)/tests/test_watch_rows: tests/unit/test_watch_rows.c src/cli/watch/watch_sample.c src/cli/watch/watch_proc.c src/cli/watch/watch.h \
  $(BUILD)/libvramfit.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	$(call QUIET,CC,$@)$(CC) $(CFLAGS_ALL) $(CMOCKA_CFLAGS) -Itests/unit -Isrc/cli -o $@ $< src/cli/watch/watch_sample.c \
	  src/cli/watch/watch_proc.c $(BUILD)/libvramfit.a $(CMOCKA_LIBS) $(LIBS) $(LDFLAGS_ALL)
