# The loader's test doubles: a fake CUDA driver and a fake NVML with the real
# sonames and ABI, loaded by the tests through VF_CUDA_LIBRARY / VF_NVML_LIBRARY.
# Built without sanitizers (they are dlopen'ed into instrumented programs);
# not -z nodelete: the loader must keep the driver loaded itself (RTLD_NODELETE).
FAKE_CFLAGS := $(CSTD) -O2 -g $(WARN) -Wno-missing-prototypes -fPIC -fvisibility=hidden -Itests/fake

$(BUILD)/fake/libcuda.so.1: tests/fake/fake_cuda.c tests/fake/fake_cuda.h
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $< -lpthread

$(BUILD)/fake/libnvidia-ml.so.1: tests/fake/fake_nvml.c
	@mkdir -p $(dir $@)
	$(CC) $(FAKE_CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

CHECK_EXTRA += $(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libnvidia-ml.so.1

# The benchmark's helper (limits measured in the same run as the loader).
$(BUILD)/bench/limits: bench/limits.c bench/benchutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -O2 -g $(WARN) -o $@ $<

bench: $(BUILD)/bench/limits $(BUILD)/fake/libcuda.so.1 $(BUILD)/fake/libnvidia-ml.so.1

# Pinned host-to-device bandwidth through the cuda backend (bench/gpu-check.sh).
$(BUILD)/bench/h2d_bw: bench/h2d_bw.c bench/benchutil.h $(BUILD)/libvramfit.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libvramfit.a $(LIBS) $(LDFLAGS_ALL)
