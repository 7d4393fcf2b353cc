/* nvml.c — this machine's NVIDIA devices through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is dlopen'ed (VF_NVML_LIBRARY overrides the path) and the
 * few types are NVML's ABI (nvmlReturn_t is int, nvmlDevice_t opaque, the v1
 * memory struct is {total, free, used} as unsigned long long). Versioned
 * symbols first, as nvtop does (peers-loading.md §5.3). No library or no
 * device is a normal answer: zero devices and the reason. One device that
 * answers with an error does not hide the others: a container sees every
 * GPU in the count but gets NVML_ERROR_NO_PERMISSION for a handle to one
 * outside its cgroup (skipped), and a MIG-enabled or lost GPU may refuse the
 * memory query (listed with its memory figures 0). */
#include "internal.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory_v1;

#define NVML_SUCCESS 0

typedef struct {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*count)(unsigned *);
    nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvml_memory_v1 *);
} nvml_api;

static void *sym2(void *lib, const char *a, const char *b)
{
    void *f = dlsym(lib, a);
    if (!f && b)
        f = dlsym(lib, b);
    return f;
}

static const char *nvml_msg(const nvml_api *a, nvmlReturn_t r)
{
    const char *s = a->error_string ? a->error_string(r) : NULL;
    return s ? s : "unknown error";
}

vf_status vf_local_gpus(vf_local_gpu *out, size_t cap, size_t *count, vf_error *err)
{
    *count = 0;
    const char *path = getenv("VF_NVML_LIBRARY");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        vf__err(err, VF_OK, "nvml", "no NVIDIA driver: %s", e ? e : path);
        return VF_OK;
    }
    nvml_api a;
    void *f[8] = {
        sym2(lib, "nvmlInit_v2", "nvmlInit"),
        sym2(lib, "nvmlShutdown", NULL),
        sym2(lib, "nvmlErrorString", NULL),
        sym2(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        sym2(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        sym2(lib, "nvmlDeviceGetName", NULL),
        sym2(lib, "nvmlDeviceGetUUID", NULL),
        sym2(lib, "nvmlDeviceGetMemoryInfo", NULL),
    };
    memcpy(&a.init, &f[0], sizeof f[0]);
    memcpy(&a.shutdown, &f[1], sizeof f[1]);
    memcpy(&a.error_string, &f[2], sizeof f[2]);
    memcpy(&a.count, &f[3], sizeof f[3]);
    memcpy(&a.handle, &f[4], sizeof f[4]);
    memcpy(&a.name, &f[5], sizeof f[5]);
    memcpy(&a.uuid, &f[6], sizeof f[6]);
    memcpy(&a.memory, &f[7], sizeof f[7]);
    vf_status st = VF_OK;
    if (!a.init || !a.shutdown || !a.count || !a.handle || !a.memory) {
        st = vf__err(err, VF_EDEVICE, path, "not a usable NVML library (a required symbol is missing)");
        goto out;
    }
    nvmlReturn_t r = a.init();
    if (r != NVML_SUCCESS) {
        /* A library without a working driver (containers, no device): no GPUs. */
        vf__err(err, VF_OK, "nvml", "nvmlInit_v2 failed: %s", nvml_msg(&a, r));
        goto out;
    }
    unsigned n = 0;
    if ((r = a.count(&n)) != NVML_SUCCESS) {
        st = vf__err(err, VF_EDEVICE, "nvml", "nvmlDeviceGetCount_v2 failed: %s", nvml_msg(&a, r));
        goto shut;
    }
    if (n == 0)
        vf__err(err, VF_OK, "nvml", "no NVIDIA device");
    for (unsigned i = 0; i < n && *count < cap; i++) {
        nvmlDevice_t d = NULL;
        vf_local_gpu g;
        memset(&g, 0, sizeof g);
        g.index = i;
        if ((r = a.handle(i, &d)) != NVML_SUCCESS) {
            vf__err(err, VF_OK, "nvml", "device %u skipped: %s", i, nvml_msg(&a, r));
            continue;
        }
        if (a.name && a.name(d, g.name, sizeof g.name) != NVML_SUCCESS)
            g.name[0] = '\0';
        g.name[sizeof g.name - 1] = '\0';
        if (a.uuid && a.uuid(d, g.uuid, sizeof g.uuid) != NVML_SUCCESS)
            g.uuid[0] = '\0';
        g.uuid[sizeof g.uuid - 1] = '\0';
        nvml_memory_v1 mem = {0, 0, 0};
        if ((r = a.memory(d, &mem)) != NVML_SUCCESS) {
            vf__err(err, VF_OK, "nvml", "device %u: nvmlDeviceGetMemoryInfo failed: %s", i, nvml_msg(&a, r));
            mem = (nvml_memory_v1){0, 0, 0};
        }
        g.total_bytes = mem.total;
        g.free_bytes = mem.free;
        g.used_bytes = mem.used;
        out[(*count)++] = g;
    }
shut:
    a.shutdown();
out:
    dlclose(lib);
    if (st != VF_OK)
        *count = 0;
    return st;
}
