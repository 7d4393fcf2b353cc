/* nvml.c — this machine's NVIDIA devices through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is dlopen'ed (VF_NVML_LIBRARY overrides the path) and the
 * few types are NVML's ABI (nvmlReturn_t is int, nvmlDevice_t opaque). The
 * newest versioned symbol is used where the driver has it, the older one
 * otherwise (as nvtop does, peers-loading.md §5.3):
 *   - memory: nvmlDeviceGetMemoryInfo_v2 with nvmlMemory_v2_t {version,
 *     total, reserved, free, used} (its used leaves out the driver's reserved
 *     memory), else nvmlDeviceGetMemoryInfo with {total, free, used};
 *   - processes: nvmlDeviceGetComputeRunningProcesses_v3, _v2 (entries of
 *     {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}, 24 bytes: the
 *     layout NVIDIA's own nvidia-ml-py gives v3), else the unversioned one
 *     with {pid, usedGpuMemory} (16 bytes).
 * No library or no device is a normal answer for vf_local_gpus (zero devices
 * and the reason) and an error for a session. One device that answers with
 * an error does not hide the others: a container sees every GPU in the count
 * but gets NVML_ERROR_NO_PERMISSION for a handle outside its cgroup
 * (skipped), and a MIG-enabled or lost GPU may refuse the memory query
 * (listed with its memory figures 0). */
#include "base/base.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
    unsigned long long total, free, used;
} nvml_memory_v1;
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvml_memory_v2;

#define NVML_SUCCESS 0
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
/* NVML_STRUCT_VERSION(Memory, 2): the struct's size with the version in the top byte */
#define NVML_MEMORY_V2 ((unsigned)sizeof(nvml_memory_v2) | (2u << 24))
#define NVML_VALUE_NOT_AVAILABLE (~0ull)
#define NVML_MAX_PROCESSES 4096

typedef nvmlReturn_t (*procs_fn)(nvmlDevice_t, unsigned *, void *);

typedef struct nvml_api {
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    const char *(*error_string)(nvmlReturn_t);
    nvmlReturn_t (*count)(unsigned *);
    nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvml_memory_v1 *);
    nvmlReturn_t (*memory2)(nvmlDevice_t, nvml_memory_v2 *);
    procs_fn procs[3];       /* _v3, _v2, unversioned */
} nvml_api;

static const size_t proc_stride[3] = {24, 24, 16};
static const char *const proc_sym[3] = {"nvmlDeviceGetComputeRunningProcesses_v3",
                                        "nvmlDeviceGetComputeRunningProcesses_v2",
                                        "nvmlDeviceGetComputeRunningProcesses"};

struct vf_nvml {
    void *lib;
    nvml_api a;
    int procs_at;            /* the process query in use (index into procs), 3: none */
    size_t n;
    vf_local_gpu dev[64];
    nvmlDevice_t handle[64];
    unsigned char *scratch;  /* process entries as the driver writes them */
    size_t scratch_cap;      /* entries */
};

static void *sym(void *lib, const char *a)
{
    return dlsym(lib, a);
}

static void *sym2(void *lib, const char *a, const char *b)
{
    void *f = dlsym(lib, a);
    return f || !b ? f : dlsym(lib, b);
}

static const char *nvml_msg(const nvml_api *a, nvmlReturn_t r)
{
    const char *s = a->error_string ? a->error_string(r) : NULL;
    return s ? s : "unknown error";
}

static void bind(nvml_api *a, void *lib)
{
    void *f[9] = {
        sym2(lib, "nvmlInit_v2", "nvmlInit"),
        sym(lib, "nvmlShutdown"),
        sym(lib, "nvmlErrorString"),
        sym2(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        sym2(lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        sym(lib, "nvmlDeviceGetName"),
        sym(lib, "nvmlDeviceGetUUID"),
        sym(lib, "nvmlDeviceGetMemoryInfo"),
        sym(lib, "nvmlDeviceGetMemoryInfo_v2"),
    };
    /* object pointers to function pointers through memcpy (ISO C forbids the cast) */
    memcpy(&a->init, &f[0], sizeof f[0]);
    memcpy(&a->shutdown, &f[1], sizeof f[1]);
    memcpy(&a->error_string, &f[2], sizeof f[2]);
    memcpy(&a->count, &f[3], sizeof f[3]);
    memcpy(&a->handle, &f[4], sizeof f[4]);
    memcpy(&a->name, &f[5], sizeof f[5]);
    memcpy(&a->uuid, &f[6], sizeof f[6]);
    memcpy(&a->memory, &f[7], sizeof f[7]);
    memcpy(&a->memory2, &f[8], sizeof f[8]);
    for (int i = 0; i < 3; i++) {
        void *p = sym(lib, proc_sym[i]);
        memcpy(&a->procs[i], &p, sizeof p);
    }
}

static void fill_device(vf_nvml *s, unsigned i, nvmlDevice_t d, vf_error *err)
{
    vf_local_gpu *g = &s->dev[s->n];
    memset(g, 0, sizeof *g);
    g->index = i;
    if (s->a.name && s->a.name(d, g->name, sizeof g->name) != NVML_SUCCESS)
        g->name[0] = '\0';
    g->name[sizeof g->name - 1] = '\0';
    if (s->a.uuid && s->a.uuid(d, g->uuid, sizeof g->uuid) != NVML_SUCCESS)
        g->uuid[0] = '\0';
    g->uuid[sizeof g->uuid - 1] = '\0';
    nvml_memory_v1 mem = {0, 0, 0};
    nvmlReturn_t r = s->a.memory(d, &mem);
    if (r != NVML_SUCCESS) {
        vf__err(err, VF_OK, "nvml", "device %u: nvmlDeviceGetMemoryInfo failed: %s", i, nvml_msg(&s->a, r));
        mem = (nvml_memory_v1){0, 0, 0};
    }
    g->total_bytes = mem.total;
    g->free_bytes = mem.free;
    g->used_bytes = mem.used;
    s->handle[s->n++] = d;
}

static void close_session(vf_nvml *s)
{
    if (!s)
        return;
    if (s->a.shutdown)
        s->a.shutdown();
    if (s->lib)
        dlclose(s->lib);
    free(s->scratch);
    free(s);
}

/* VF_OK with *out NULL and the reason in err: no driver, no working driver or
 * no device. VF_EDEVICE: a library that is not NVML, a failing count. */
static vf_status open_session(vf_nvml **out, vf_error *err)
{
    *out = NULL;
    const char *path = getenv("VF_NVML_LIBRARY");
    if (!path || !*path)
        path = "libnvidia-ml.so.1";
    vf_nvml *s = calloc(1, sizeof *s);
    if (!s)
        return vf__err(err, VF_ENOMEM, "nvml", "out of memory");
    if (!(s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
        const char *e = dlerror();
        vf__err(err, VF_OK, "nvml", "no NVIDIA driver: %s", e ? e : path);
        free(s);
        return VF_OK;
    }
    bind(&s->a, s->lib);
    nvml_api *a = &s->a;
    vf_status st = VF_OK;
    nvmlReturn_t r;
    if (!a->init || !a->shutdown || !a->count || !a->handle || !a->memory) {
        st = vf__err(err, VF_EDEVICE, path, "not a usable NVML library (a required symbol is missing)");
        a->shutdown = NULL;
    } else if ((r = a->init()) != NVML_SUCCESS) {
        /* a library without a working driver (containers, no device): no GPUs */
        vf__err(err, VF_OK, "nvml", "nvmlInit_v2 failed: %s", nvml_msg(a, r));
        a->shutdown = NULL;
    } else {
        unsigned n = 0;
        if ((r = a->count(&n)) != NVML_SUCCESS)
            st = vf__err(err, VF_EDEVICE, "nvml", "nvmlDeviceGetCount_v2 failed: %s", nvml_msg(a, r));
        else if (n == 0)
            vf__err(err, VF_OK, "nvml", "no NVIDIA device");
        for (unsigned i = 0; st == VF_OK && i < n && s->n < 64; i++) {
            nvmlDevice_t d = NULL;
            if ((r = a->handle(i, &d)) != NVML_SUCCESS)
                vf__err(err, VF_OK, "nvml", "device %u skipped: %s", i, nvml_msg(a, r));
            else
                fill_device(s, i, d, err);
        }
    }
    s->procs_at = a->procs[0] ? 0 : a->procs[1] ? 1 : a->procs[2] ? 2 : 3;
    if (st != VF_OK || !s->n) {
        close_session(s);
        return st;
    }
    *out = s;
    return VF_OK;
}

vf_status vf_local_gpus(vf_local_gpu *out, size_t cap, size_t *count, vf_error *err)
{
    *count = 0;
    vf_nvml *s = NULL;
    vf_status st = open_session(&s, err);
    if (!s)
        return st;
    for (size_t i = 0; i < s->n && *count < cap; i++)
        out[(*count)++] = s->dev[i];
    close_session(s);
    return VF_OK;
}

vf_status vf_nvml_open(vf_nvml **out, vf_error *err)
{
    vf_status st = open_session(out, err);
    if (st != VF_OK || *out)
        return st;
    if (err) /* no driver or no device: an error here, with the reason open_session gave */
        err->status = VF_EDEVICE;
    return VF_EDEVICE;
}

void vf_nvml_close(vf_nvml *s) { close_session(s); }

size_t vf_nvml_count(const vf_nvml *s) { return s->n; }

const vf_local_gpu *vf_nvml_device(const vf_nvml *s, size_t i) { return i < s->n ? &s->dev[i] : NULL; }

vf_status vf_nvml_memory(vf_nvml *s, size_t i, uint64_t *used, uint64_t *total, vf_error *err)
{
    if (i >= s->n)
        return vf__err(err, VF_EINVAL, "nvml", "no device %zu", i);
    nvmlReturn_t r;
    if (s->a.memory2) {
        nvml_memory_v2 m = {.version = NVML_MEMORY_V2};
        r = s->a.memory2(s->handle[i], &m);
        if (r == NVML_SUCCESS) {
            *used = m.used;
            *total = m.total;
            return VF_OK;
        }
        if (r != NVML_ERROR_FUNCTION_NOT_FOUND && r != NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
            return vf__err(err, VF_EDEVICE, "nvml", "GPU %u: nvmlDeviceGetMemoryInfo_v2 failed: %s",
                           s->dev[i].index, nvml_msg(&s->a, r));
        s->a.memory2 = NULL; /* an older driver: v1 from now on */
    }
    nvml_memory_v1 m = {0, 0, 0};
    if ((r = s->a.memory(s->handle[i], &m)) != NVML_SUCCESS)
        return vf__err(err, VF_EDEVICE, "nvml", "GPU %u: nvmlDeviceGetMemoryInfo failed: %s", s->dev[i].index,
                       nvml_msg(&s->a, r));
    *used = m.used;
    *total = m.total;
    return VF_OK;
}

/* One call of the process query in use; grows the scratch to what the driver asks. */
static nvmlReturn_t query_procs(vf_nvml *s, size_t i, unsigned *n)
{
    size_t stride = proc_stride[s->procs_at];
    for (int tries = 0; tries < 4; tries++) {
        if (s->scratch_cap < 64 || (*n > s->scratch_cap && *n <= NVML_MAX_PROCESSES)) {
            size_t want = *n > 64 ? *n + 16 : 64;
            unsigned char *b = realloc(s->scratch, want * 24);
            if (!b)
                return NVML_ERROR_INSUFFICIENT_SIZE;
            s->scratch = b;
            s->scratch_cap = want;
        }
        *n = (unsigned)s->scratch_cap;
        memset(s->scratch, 0, s->scratch_cap * stride);
        nvmlReturn_t r = s->a.procs[s->procs_at](s->handle[i], n, s->scratch);
        if (r != NVML_ERROR_INSUFFICIENT_SIZE || *n > NVML_MAX_PROCESSES)
            return r;
    }
    return NVML_ERROR_INSUFFICIENT_SIZE;
}

vf_status vf_nvml_processes(vf_nvml *s, size_t i, vf_gpu_process *out, size_t cap, size_t *count, vf_error *err)
{
    *count = 0;
    if (i >= s->n)
        return vf__err(err, VF_EINVAL, "nvml", "no device %zu", i);
    nvmlReturn_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
    unsigned n = 0;
    while (s->procs_at < 3 && (r = query_procs(s, i, &n)) == NVML_ERROR_FUNCTION_NOT_FOUND)
        s->procs_at++; /* the driver lacks that version: the older one from now on */
    if (s->procs_at >= 3)
        return vf__err(err, VF_EDEVICE, "nvml", "this NVML has no nvmlDeviceGetComputeRunningProcesses");
    if (r != NVML_SUCCESS)
        return vf__err(err, VF_EDEVICE, "nvml", "GPU %u: %s failed: %s", s->dev[i].index, proc_sym[s->procs_at],
                       nvml_msg(&s->a, r));
    size_t stride = proc_stride[s->procs_at];
    for (unsigned k = 0; k < n && k < s->scratch_cap && *count < cap; k++) {
        const unsigned char *e = s->scratch + (size_t)k * stride;
        unsigned pid;
        unsigned long long used;
        memcpy(&pid, e, sizeof pid);
        memcpy(&used, e + 8, sizeof used); /* after the 4-byte pid and its padding */
        out[(*count)++] = (vf_gpu_process){.pid = pid, .used_bytes = used == NVML_VALUE_NOT_AVAILABLE ? UINT64_MAX : used};
    }
    return VF_OK;
}
