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
 * memory query is NVML_ERROR_NOT_SUPPORTED (MIG mode).
 *
 * The versioned calls vramfit watch uses are here too:
 * nvmlDeviceGetMemoryInfo_v2 (nvmlMemory_v2_t, its version field checked)
 * and nvmlDeviceGetComputeRunningProcesses_v3/_v2/unversioned. Built with
 * -DFAKE_NVML_OLD it exports only the unversioned ones, as an old driver.
 *
 * FAKE_NVML_SCRIPT=file scripts a timeline, one row a line:
 *     STEP DEV used=MiB [C=MiB] [G=MiB] [O=MiB] [err=mem|procs|lost]
 * The step counts rounds of memory queries (a round starts when a device is
 * queried whose index is not above the last one's; the first round, at 0,
 * is the device list's); a device shows its last row at or before the step.
 * C is the calling process's first child, G that child's first child, O a
 * process outside the tree (pid 1): listed with that memory. The step waits
 * at a row until the C and G it names exist, so the timeline a watcher sees
 * does not depend on how fast the child starts. err=mem fails the memory
 * query, err=procs the process query (NO_PERMISSION), err=lost both from
 * then on (GPU_IS_LOST). FAKE_NVML_DONE=path is created once the last row is
 * reached (the watched child waits for it). */
#include <dirent.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
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
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
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

/* ---- the scripted timeline ---- */

#define MAX_ROWS 256
typedef struct row {
    long step;
    int dev;
    unsigned long long used_mb, c_mb, g_mb, o_mb;
    int has_c, has_g, has_o;
    int err; /* 0, 'm' memory, 'p' processes, 'l' lost */
} row;

static row rows[MAX_ROWS];
static int n_rows = -1; /* -1: not read yet */
static long step = -1;  /* memory queries of device 0 so far, minus one */
static long lost_at[8] = {-1, -1, -1, -1, -1, -1, -1, -1};

static void read_script(void)
{
    n_rows = 0;
    const char *path = getenv("FAKE_NVML_SCRIPT");
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    char line[512];
    while (n_rows < MAX_ROWS && fgets(line, sizeof line, f)) {
        row r;
        memset(&r, 0, sizeof r);
        char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
        if (!tok || tok[0] == '#')
            continue;
        r.step = strtol(tok, NULL, 10);
        if (!(tok = strtok_r(NULL, " \t\n", &save)))
            continue;
        r.dev = (int)strtol(tok, NULL, 10);
        while ((tok = strtok_r(NULL, " \t\n", &save))) {
            unsigned long long v = strtoull(strchr(tok, '=') ? strchr(tok, '=') + 1 : "0", NULL, 10);
            if (!strncmp(tok, "used=", 5))
                r.used_mb = v;
            else if (!strncmp(tok, "C=", 2))
                r.c_mb = v, r.has_c = 1;
            else if (!strncmp(tok, "G=", 2))
                r.g_mb = v, r.has_g = 1;
            else if (!strncmp(tok, "O=", 2))
                r.o_mb = v, r.has_o = 1;
            else if (!strncmp(tok, "err=", 4))
                r.err = tok[4] == 'm' ? 'm' : tok[4] == 'p' ? 'p' : 'l';
        }
        rows[n_rows++] = r;
    }
    fclose(f);
}

static int scripted(void)
{
    if (n_rows < 0)
        read_script();
    return n_rows > 0;
}

/* The row of device dev at step s, or NULL before its first. */
static const row *row_at(int dev, long s)
{
    const row *best = NULL;
    for (int i = 0; i < n_rows; i++)
        if (rows[i].dev == dev && rows[i].step <= s && (!best || rows[i].step >= best->step))
            best = &rows[i];
    return best;
}

/* The first process whose parent is ppid (a scan of /proc), 0 when none. */
static int child_of(int ppid)
{
    if (ppid <= 0)
        return 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char p[300], buf[512];
        snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        char *rp = strrchr(buf, ')');
        char state;
        int pp;
        if (rp && sscanf(rp + 1, " %c %d", &state, &pp) == 2 && pp == ppid && state != 'Z')
            found = atoi(e->d_name);
    }
    closedir(d);
    return found;
}

/* The rows of the next step may wait for their processes. */
static int ready(long s)
{
    int c = child_of((int)getpid()), g = child_of(c);
    for (int i = 0; i < n_rows; i++)
        if (rows[i].step == s && ((rows[i].has_c && !c) || (rows[i].has_g && !g)))
            return 0;
    return 1;
}

static void advance(void)
{
    long last = 0;
    for (int i = 0; i < n_rows; i++)
        if (rows[i].step > last)
            last = rows[i].step;
    if (step < last && ready(step + 1))
        step++;
    const char *done = getenv("FAKE_NVML_DONE");
    if (step >= last && done && *done) {
        FILE *f = fopen(done, "a");
        if (f)
            fclose(f);
    }
}

/* 0, or the error the script gives device i's query of kind k ('m', 'p'). */
static int script_error(int i, int k)
{
    const row *r = row_at(i, step);
    if (r && r->err == 'l' && lost_at[i] < 0)
        lost_at[i] = step;
    if (lost_at[i] >= 0)
        return NVML_ERROR_GPU_IS_LOST;
    if (r && r->err == k)
        return k == 'm' ? NVML_ERROR_UNKNOWN : NVML_ERROR_NO_PERMISSION;
    return 0;
}

typedef struct {
    unsigned long long total, reserved, used;
} mem_now;

/* Device i now: total with the driver's reserved part, used without it. */
static int memory_now(int i, mem_now *m)
{
    if (env_l("FAKE_NVML_NO_MEMORY", -1) == (long)i)
        return NVML_ERROR_NOT_SUPPORTED;
    m->reserved = (unsigned long long)env_l("FAKE_NVML_RESERVED_MB", 0) << 20;
    m->total = ((unsigned long long)env_l("FAKE_CUDA_TOTAL_MB", 81920) << 20) + m->reserved;
    if (scripted()) {
        static int last_dev = 1 << 30;
        if (i <= last_dev) /* a new round of queries (the device list's, a sample's) */
            advance();
        last_dev = i;
        int e = script_error(i, 'm');
        if (e)
            return e;
        const row *r = row_at(i, step);
        m->used = r ? r->used_mb << 20 : 0;
    } else {
        m->used = (unsigned long long)env_l("FAKE_NVML_USED_MB", 0) << 20;
        const char *cuda = getenv("VF_CUDA_LIBRARY");
        void *lib = cuda ? dlopen(cuda, RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (lib) {
            int (*f)(int, unsigned long long *);
            void *s = dlsym(lib, "fake_cuda_device_used");
            memcpy(&f, &s, sizeof f);
            unsigned long long u = 0;
            if (f && f(i, &u) == 0)
                m->used += u;
            dlclose(lib);
        }
    }
    if (m->used > m->total - m->reserved)
        m->used = m->total - m->reserved;
    return NVML_SUCCESS;
}

/* v1: used counts the driver's reserved memory (the two APIs differ by it) */
EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    int i = index_of(d);
    if (i < 0 || !m)
        return NVML_ERROR_INVALID_ARGUMENT;
    mem_now n;
    int r = memory_now(i, &n);
    if (r)
        return r;
    m->total = n.total;
    m->used = n.used + n.reserved;
    m->free = n.total - m->used;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_OLD
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

EXPORT int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    int i = index_of(d);
    if (i < 0 || !m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24)))
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    mem_now n;
    int r = memory_now(i, &n);
    if (r)
        return r;
    m->total = n.total;
    m->reserved = n.reserved;
    m->used = n.used;
    m->free = n.total - n.reserved - n.used;
    return NVML_SUCCESS;
}
#endif

/* ---- processes: entries of stride bytes, {pid, usedGpuMemory, ...} ---- */

static int processes(nvmlDevice_t d, unsigned *count, void *infos, size_t stride)
{
    int i = index_of(d);
    if (i < 0 || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct {
        unsigned pid;
        unsigned long long used;
    } list[3];
    unsigned n = 0;
    if (scripted()) {
        int e = script_error(i, 'p');
        if (e)
            return e;
        const row *r = row_at(i, step);
        int c = child_of((int)getpid()), g = child_of(c);
        if (r && r->has_c && c)
            list[n].pid = (unsigned)c, list[n++].used = r->c_mb << 20;
        if (r && r->has_g && g)
            list[n].pid = (unsigned)g, list[n++].used = r->g_mb << 20;
        if (r && r->has_o)
            list[n].pid = 1, list[n++].used = r->o_mb << 20;
    }
    if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    unsigned char *out = infos;
    for (unsigned k = 0; k < n; k++) {
        memset(out + k * stride, 0, stride);
        memcpy(out + k * stride, &list[k].pid, sizeof list[k].pid);
        memcpy(out + k * stride + 8, &list[k].used, sizeof list[k].used);
    }
    *count = n;
    return NVML_SUCCESS;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *count, void *infos)
{
    return processes(d, count, infos, 16);
}

#ifndef FAKE_NVML_OLD
/* v2 and v3 write nvmlProcessInfo_v2_t, 24 bytes (as nvidia-ml-py reads v3) */
EXPORT int nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *count, void *infos)
{
    return processes(d, count, infos, 24);
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, void *infos)
{
    return processes(d, count, infos, 24);
}
#endif
