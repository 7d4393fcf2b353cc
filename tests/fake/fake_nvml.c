/* fake_nvml.c — a fake libnvidia-ml.so.1 for the tests: the NVML symbols
 * vf_local_gpus uses, with their real names and signatures
 * (peers-loading.md §5.3). Devices mirror the fake CUDA driver's
 * (FAKE_CUDA_DEVICES, FAKE_CUDA_TOTAL_MB, the same UUID bytes); used memory
 * is FAKE_NVML_USED_MB plus, when the fake libcuda.so.1 is loaded in the
 * process, its context and allocations. FAKE_NVML_FAIL_INIT=1 makes
 * nvmlInit_v2 fail as it does without a driver. FAKE_NVML_RESERVED_MB=r adds
 * the driver's reserved memory to total and used, as the real v1 query does
 * (cuMemGetInfo never counts it: the two APIs differ by it).
 * FAKE_NVML_DENY=i: the handle of device i is NVML_ERROR_NO_PERMISSION (a
 * container's view of a GPU outside its cgroup); FAKE_NVML_NO_MEMORY=i: its
 * memory query is NVML_ERROR_NOT_SUPPORTED (MIG mode). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
};

static int inits;

static long env_l(const char *k, long d)
{
    const char *v = getenv(k);
    return v && *v ? strtol(v, NULL, 10) : d;
}

static unsigned n_devices(void)
{
    long n = env_l("FAKE_NVML_DEVICES", env_l("FAKE_CUDA_DEVICES", 1));
    return n < 0 || n > 8 ? 1u : (unsigned)n;
}

EXPORT int nvmlInit_v2(void)
{
    if (env_l("FAKE_NVML_FAIL_INIT", 0))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    inits++;
    return NVML_SUCCESS;
}

EXPORT int nvmlShutdown(void)
{
    if (inits <= 0)
        return NVML_ERROR_UNINITIALIZED;
    inits--;
    return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(int r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

EXPORT int nvmlDeviceGetCount_v2(unsigned *n)
{
    if (inits <= 0)
        return NVML_ERROR_UNINITIALIZED;
    *n = n_devices();
    return NVML_SUCCESS;
}

/* Handles are index + 1 disguised as pointers. */
EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
    if (inits <= 0)
        return NVML_ERROR_UNINITIALIZED;
    if (i >= n_devices())
        return NVML_ERROR_INVALID_ARGUMENT;
    if (env_l("FAKE_NVML_DENY", -1) == (long)i)
        return NVML_ERROR_NO_PERMISSION;
    *d = (nvmlDevice_t)(uintptr_t)(i + 1);
    return NVML_SUCCESS;
}

static int index_of(nvmlDevice_t d)
{
    uintptr_t v = (uintptr_t)d;
    return v >= 1 && v <= n_devices() ? (int)v - 1 : -1;
}

EXPORT int nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
    int i = index_of(d);
    if (i < 0 || !name || len == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, len, "Fake GPU %d", i);
    return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
    int i = index_of(d);
    if (i < 0 || !uuid || len == 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned char u[16];
    for (int k = 0; k < 16; k++)
        u[k] = (unsigned char)((i + 1) * 16 + k);
    snprintf(uuid, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    int i = index_of(d);
    if (i < 0 || !m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (env_l("FAKE_NVML_NO_MEMORY", -1) == (long)i)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned long long reserved = (unsigned long long)env_l("FAKE_NVML_RESERVED_MB", 0) << 20;
    unsigned long long total = ((unsigned long long)env_l("FAKE_CUDA_TOTAL_MB", 81920) << 20) + reserved;
    unsigned long long used = ((unsigned long long)env_l("FAKE_NVML_USED_MB", 0) << 20) + reserved;
    const char *cuda = getenv("VF_CUDA_LIBRARY");
    void *lib = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib) {
        int (*f)(int, unsigned long long *);
        void *s = dlsym(lib, "fake_cuda_device_used");
        memcpy(&f, &s, sizeof f);
        unsigned long long u = 0;
        if (f && f(i, &u) == 0)
            used += u;
        dlclose(lib);
    }
    m->total = total;
    m->used = used > total ? total : used;
    m->free = total - m->used;
    return NVML_SUCCESS;
}
