# vramfit watch's test double for an old driver: the fake NVML without the
# versioned calls (nvmlDeviceGetMemoryInfo_v2, ..._ComputeRunningProcesses_v3/_v2),
# so the fallbacks to the unversioned ones run (tests/cli/test_watch.sh).
$(BUILD)/fake/old/libnvidia-ml.so.1: tests/fake/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -DFAKE_NVML_OLD -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

CHECK_EXTRA += $(BUILD)/fake/old/libnvidia-ml.so.1
