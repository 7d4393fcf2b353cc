/* backend_cuda.c — the CUDA driver API, loaded at run time.
 *
 * Nothing CUDA is needed to build: libcuda.so.1 is dlopen'ed (VF_CUDA_LIBRARY
 * overrides the path; the tests point it at a fake with the same ABI) and the
 * few types below are the driver's ABI (cuda.h: CUresult and CUdevice are
 * int, CUdeviceptr is unsigned long long, the rest opaque pointers). The
 * versioned symbols are looked up by their _v2 names because the unversioned
 * exports are the legacy ABI (32-bit CUdeviceptr); see
 * tests/reference/prior-art/peers-loading.md §5. The primary context is
 * retained, as the runtime API does, so we share it with anything else in
 * the process; every call pushes it on the calling thread's context stack
 * and pops it after, so whatever context the caller had current stays
 * current (we are a library: the thread is not ours). The driver, once
 * loaded, is never unloaded: cuInit starts driver threads and unloading
 * libcuda under them crashes (CUDA.jl issue #1848). */
#include "load/backend.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_READY 600
#define CU_STREAM_NON_BLOCKING 0x1
#define CU_EVENT_BLOCKING_SYNC 0x1
#define CU_EVENT_DISABLE_TIMING 0x2
#define CU_MEMHOSTALLOC_PORTABLE 0x1

typedef struct cuda_api {
    void *lib;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetUuid)(unsigned char *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice);
    CUresult (*cuCtxDestroy)(CUcontext);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxPushCurrent)(CUcontext);
    CUresult (*cuCtxPopCurrent)(CUcontext *);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
} cuda_api;

/* Symbol names, newest ABI first; NULL ends each list. */
typedef struct {
    size_t off;
    bool required;
    const char *names[3];
} cuda_sym;

#define SYM(field, req, ...) {offsetof(cuda_api, field), req, {__VA_ARGS__, NULL}}
static const cuda_sym cuda_syms[] = {
    SYM(cuInit, true, "cuInit"),
    SYM(cuGetErrorString, false, "cuGetErrorString"),
    SYM(cuGetErrorName, false, "cuGetErrorName"),
    SYM(cuDeviceGetCount, true, "cuDeviceGetCount"),
    SYM(cuDeviceGet, true, "cuDeviceGet"),
    SYM(cuDeviceGetName, false, "cuDeviceGetName"),
    SYM(cuDeviceGetUuid, false, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    SYM(cuDevicePrimaryCtxRetain, false, "cuDevicePrimaryCtxRetain"),
    SYM(cuDevicePrimaryCtxRelease, false, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    SYM(cuCtxCreate, false, "cuCtxCreate_v2"),
    SYM(cuCtxDestroy, false, "cuCtxDestroy_v2", "cuCtxDestroy"),
    SYM(cuCtxSetCurrent, true, "cuCtxSetCurrent"),
    SYM(cuCtxPushCurrent, false, "cuCtxPushCurrent_v2"),
    SYM(cuCtxPopCurrent, false, "cuCtxPopCurrent_v2"),
    SYM(cuMemAlloc, true, "cuMemAlloc_v2"),
    SYM(cuMemFree, true, "cuMemFree_v2"),
    SYM(cuMemHostAlloc, true, "cuMemHostAlloc"),
    SYM(cuMemFreeHost, true, "cuMemFreeHost"),
    SYM(cuMemcpyHtoDAsync, true, "cuMemcpyHtoDAsync_v2"),
    SYM(cuMemcpyDtoH, true, "cuMemcpyDtoH_v2"),
    SYM(cuStreamCreate, true, "cuStreamCreate"),
    SYM(cuStreamSynchronize, true, "cuStreamSynchronize"),
    SYM(cuStreamDestroy, true, "cuStreamDestroy_v2", "cuStreamDestroy"),
    SYM(cuEventCreate, true, "cuEventCreate"),
    SYM(cuEventRecord, true, "cuEventRecord"),
    SYM(cuEventQuery, true, "cuEventQuery"),
    SYM(cuEventSynchronize, true, "cuEventSynchronize"),
    SYM(cuEventDestroy, true, "cuEventDestroy_v2", "cuEventDestroy"),
    SYM(cuMemGetInfo, true, "cuMemGetInfo_v2"),
};
#undef SYM

static const char *cuda_path(void)
{
    const char *p = getenv("VF_CUDA_LIBRARY");
    return p && *p ? p : "libcuda.so.1";
}

static vf_status api_load(cuda_api *a, const char *label, vf_error *err)
{
    memset(a, 0, sizeof *a);
    const char *path = cuda_path();
    /* RTLD_NODELETE: our dlclose only drops the reference (see the top). */
    a->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!a->lib) {
        const char *e = dlerror();
        return vf__err(err, VF_EDEVICE, label, "cannot load the CUDA driver: %s", e ? e : path);
    }
    for (size_t i = 0; i < sizeof cuda_syms / sizeof cuda_syms[0]; i++) {
        void *f = NULL;
        for (size_t k = 0; !f && cuda_syms[i].names[k]; k++)
            f = dlsym(a->lib, cuda_syms[i].names[k]);
        if (!f && cuda_syms[i].required) {
            const char *e = dlerror();
            vf__err(err, VF_EDEVICE, label, "the CUDA driver lacks %s: %s", cuda_syms[i].names[0],
                    e ? e : "symbol not found");
            dlclose(a->lib);
            a->lib = NULL;
            return VF_EDEVICE;
        }
        memcpy((char *)a + cuda_syms[i].off, &f, sizeof f);
    }
    if (!a->cuDevicePrimaryCtxRetain && !(a->cuCtxCreate && a->cuCtxDestroy)) {
        dlclose(a->lib);
        a->lib = NULL;
        return vf__err(err, VF_EDEVICE, label, "the CUDA driver has neither primary nor created contexts");
    }
    return VF_OK;
}

/* "cuMemAlloc_v2 failed: out of memory (CUDA_ERROR_OUT_OF_MEMORY)". */
static vf_status cu_err(const cuda_api *a, const char *label, CUresult r, const char *call, vf_error *err)
{
    const char *s = NULL, *n = NULL;
    if (a->cuGetErrorString)
        a->cuGetErrorString(r, &s);
    if (a->cuGetErrorName)
        a->cuGetErrorName(r, &n);
    vf_status st = r == CUDA_ERROR_OUT_OF_MEMORY ? VF_EDEVMEM : VF_EDEVICE;
    if (n)
        return vf__err(err, st, label, "%s failed: %s (%s)", call, s ? s : "unknown error", n);
    return vf__err(err, st, label, "%s failed: %s (CUresult %d)", call, s ? s : "unknown error", r);
}

typedef struct {
    vf__backend base;
    cuda_api api;
    CUdevice dev;
    CUcontext ctx;
    bool primary;
    CUstream stream;
} cuda_backend;

#define CU(b) (&((cuda_backend *)(b))->api)

/* Makes our context current for one call and restores the caller's after
 * (leave() must follow every successful enter()). Drivers without the
 * push/pop pair (none since CUDA 4) get cuCtxSetCurrent. */
static CUresult enter(vf__backend *b)
{
    cuda_backend *c = (cuda_backend *)b;
    if (c->api.cuCtxPushCurrent && c->api.cuCtxPopCurrent)
        return c->api.cuCtxPushCurrent(c->ctx);
    return c->api.cuCtxSetCurrent(c->ctx);
}

static void leave(vf__backend *b)
{
    cuda_backend *c = (cuda_backend *)b;
    CUcontext popped = NULL;
    if (c->api.cuCtxPushCurrent && c->api.cuCtxPopCurrent)
        c->api.cuCtxPopCurrent(&popped);
}

static void cuda_close(vf__backend *b)
{
    cuda_backend *c = (cuda_backend *)b;
    if (c->ctx) {
        if (c->stream && enter(b) == CUDA_SUCCESS) {
            c->api.cuStreamSynchronize(c->stream);
            c->api.cuStreamDestroy(c->stream);
            leave(b);
        }
        if (!c->api.cuCtxPopCurrent)
            c->api.cuCtxSetCurrent(NULL); /* set without push: leave nothing dangling */
        if (c->primary)
            c->api.cuDevicePrimaryCtxRelease(c->dev);
        else
            c->api.cuCtxDestroy(c->ctx);
    }
    if (c->api.lib)
        dlclose(c->api.lib);
    free(c);
}

static vf_status cuda_alloc(vf__backend *b, uint64_t bytes, uint64_t *addr, vf_error *err)
{
    CUdeviceptr p = 0;
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuMemAlloc(&p, (size_t)(bytes ? bytes : 1));
        leave(b);
    }
    if (r != CUDA_SUCCESS) {
        cu_err(CU(b), b->name, r, "cuMemAlloc_v2", err);
        size_t n = strlen(err ? err->msg : "");
        if (err && n + 40 < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - n, " allocating %llu bytes", (unsigned long long)bytes);
        return r == CUDA_ERROR_OUT_OF_MEMORY ? VF_EDEVMEM : VF_EDEVICE;
    }
    *addr = p;
    return VF_OK;
}

static void cuda_free(vf__backend *b, uint64_t addr, uint64_t bytes)
{
    (void)bytes;
    if (enter(b) != CUDA_SUCCESS)
        return;
    CU(b)->cuMemFree((CUdeviceptr)addr);
    leave(b);
}

static vf_status cuda_halloc(vf__backend *b, size_t bytes, void **p, vf_error *err)
{
    CUresult r = enter(b);
    /* Portable: pinned for every context, as the ring feeds several GPUs under
     * a device map. Not write-combined: that halves the speed on some hosts
     * (peers-loading.md §5.2) and gains nothing for DMA reads. */
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuMemHostAlloc(p, bytes ? bytes : 1, CU_MEMHOSTALLOC_PORTABLE);
        leave(b);
    }
    if (r != CUDA_SUCCESS) {
        *p = NULL;
        return cu_err(CU(b), b->name, r, "cuMemHostAlloc", err);
    }
    return VF_OK;
}

static void cuda_hfree(vf__backend *b, void *p, size_t bytes)
{
    (void)bytes;
    if (!p || enter(b) != CUDA_SUCCESS)
        return;
    CU(b)->cuMemFreeHost(p);
    leave(b);
}

static vf_status cuda_event_create(vf__backend *b, void **ev, vf_error *err)
{
    CUevent e = NULL;
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        /* Blocking: a waiting coordinator sleeps instead of spinning (the primary
         * context's default scheduling spins) and leaves its core to the readers;
         * the ring keeps enough copies queued that the wake-up costs no bandwidth. */
        r = CU(b)->cuEventCreate(&e, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING);
        leave(b);
    }
    if (r != CUDA_SUCCESS)
        return cu_err(CU(b), b->name, r, "cuEventCreate", err);
    *ev = e;
    return VF_OK;
}

static void cuda_event_destroy(vf__backend *b, void *ev)
{
    if (!ev || enter(b) != CUDA_SUCCESS)
        return;
    CU(b)->cuEventDestroy((CUevent)ev);
    leave(b);
}

static vf_status cuda_copy(vf__backend *b, uint64_t dst, const void *src, size_t n, vf_error *err)
{
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuMemcpyHtoDAsync((CUdeviceptr)dst, src, n, ((cuda_backend *)b)->stream);
        leave(b);
    }
    return r == CUDA_SUCCESS ? VF_OK : cu_err(CU(b), b->name, r, "cuMemcpyHtoDAsync_v2", err);
}

static vf_status cuda_event_record(vf__backend *b, void *ev, vf_error *err)
{
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuEventRecord((CUevent)ev, ((cuda_backend *)b)->stream);
        leave(b);
    }
    return r == CUDA_SUCCESS ? VF_OK : cu_err(CU(b), b->name, r, "cuEventRecord", err);
}

static vf_status cuda_event_query(vf__backend *b, void *ev, bool *done, vf_error *err)
{
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuEventQuery((CUevent)ev);
        leave(b);
    }
    *done = r == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)
        return VF_OK;
    return cu_err(CU(b), b->name, r, "cuEventQuery", err);
}

static vf_status cuda_event_sync(vf__backend *b, void *ev, vf_error *err)
{
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuEventSynchronize((CUevent)ev);
        leave(b);
    }
    return r == CUDA_SUCCESS ? VF_OK : cu_err(CU(b), b->name, r, "cuEventSynchronize", err);
}

static vf_status cuda_d2h(vf__backend *b, void *dst, uint64_t src, size_t n, vf_error *err)
{
    CUresult r = enter(b);
    if (r != CUDA_SUCCESS)
        return cu_err(CU(b), b->name, r, "cuCtxPushCurrent_v2", err);
    const char *call = "cuStreamSynchronize";
    r = CU(b)->cuStreamSynchronize(((cuda_backend *)b)->stream);
    if (r == CUDA_SUCCESS) {
        call = "cuMemcpyDtoH_v2";
        r = CU(b)->cuMemcpyDtoH(dst, (CUdeviceptr)src, n);
    }
    leave(b);
    return r == CUDA_SUCCESS ? VF_OK : cu_err(CU(b), b->name, r, call, err);
}

static vf_status cuda_mem_info(vf__backend *b, uint64_t *free_b, uint64_t *total_b, vf_error *err)
{
    size_t f = 0, t = 0;
    CUresult r = enter(b);
    if (r == CUDA_SUCCESS) {
        r = CU(b)->cuMemGetInfo(&f, &t);
        leave(b);
    }
    *free_b = f;
    *total_b = t;
    return r == CUDA_SUCCESS ? VF_OK : cu_err(CU(b), b->name, r, "cuMemGetInfo_v2", err);
}

static void cuda_sync(vf__backend *b)
{
    if (enter(b) != CUDA_SUCCESS)
        return;
    CU(b)->cuStreamSynchronize(((cuda_backend *)b)->stream);
    leave(b);
}

static const vf__backend_ops cuda_ops = {
    .host_addressable = false,
    .keeps_data = true,
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .host_alloc = cuda_halloc,
    .host_free = cuda_hfree,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .copy_h2d_async = cuda_copy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .sync = cuda_sync,
    .copy_d2h = cuda_d2h,
    .mem_info = cuda_mem_info,
};

vf_status vf__backend_cuda_open(int ordinal, vf__backend **out, vf_error *err)
{
    *out = NULL;
    char label[32];
    snprintf(label, sizeof label, "cuda:%d", ordinal);
    cuda_backend *c = calloc(1, sizeof *c);
    if (!c)
        return vf__err(err, VF_ENOMEM, label, "out of memory");
    c->base.ops = &cuda_ops;
    snprintf(c->base.name, sizeof c->base.name, "%s", label);
    c->base.mem_source = "cuMemGetInfo";
    vf_status st = api_load(&c->api, label, err);
    if (st != VF_OK)
        goto fail;
    cuda_api *a = &c->api;
    CUresult r = a->cuInit(0);
    if (r != CUDA_SUCCESS) {
        st = cu_err(a, label, r, "cuInit", err);
        goto fail;
    }
    int n = 0;
    if ((r = a->cuDeviceGetCount(&n)) != CUDA_SUCCESS) {
        st = cu_err(a, label, r, "cuDeviceGetCount", err);
        goto fail;
    }
    if (ordinal >= n) {
        st = vf__err(err, VF_EDEVICE, label, "no such device (the driver sees %d)", n);
        goto fail;
    }
    if ((r = a->cuDeviceGet(&c->dev, ordinal)) != CUDA_SUCCESS) {
        st = cu_err(a, label, r, "cuDeviceGet", err);
        goto fail;
    }
    if (a->cuDeviceGetName && a->cuDeviceGetName(c->base.gpu, (int)sizeof c->base.gpu, c->dev) != CUDA_SUCCESS)
        c->base.gpu[0] = '\0';
    c->base.gpu[sizeof c->base.gpu - 1] = '\0';
    unsigned char u[16];
    if (a->cuDeviceGetUuid && a->cuDeviceGetUuid(u, c->dev) == CUDA_SUCCESS)
        /* NVML's spelling of the same 16 bytes, to match devices across the two APIs. */
        snprintf(c->base.uuid, sizeof c->base.uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    if (a->cuDevicePrimaryCtxRetain && a->cuDevicePrimaryCtxRelease) {
        r = a->cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
        c->primary = r == CUDA_SUCCESS;
        if (r != CUDA_SUCCESS) {
            c->ctx = NULL;
            st = cu_err(a, label, r, "cuDevicePrimaryCtxRetain", err);
            goto fail;
        }
    } else if ((r = a->cuCtxCreate(&c->ctx, 0, c->dev)) != CUDA_SUCCESS) {
        c->ctx = NULL;
        st = cu_err(a, label, r, "cuCtxCreate_v2", err);
        goto fail;
    }
    else if (a->cuCtxPopCurrent) {
        CUcontext created = NULL; /* cuCtxCreate pushed it on this thread: take it off again */
        a->cuCtxPopCurrent(&created);
    }
    if ((r = enter(&c->base)) != CUDA_SUCCESS) {
        st = cu_err(a, label, r, a->cuCtxPushCurrent ? "cuCtxPushCurrent_v2" : "cuCtxSetCurrent", err);
        goto fail;
    }
    /* Non-blocking: our copies must not serialise with the legacy default stream. */
    r = a->cuStreamCreate(&c->stream, CU_STREAM_NON_BLOCKING);
    leave(&c->base);
    if (r != CUDA_SUCCESS) {
        c->stream = NULL;
        st = cu_err(a, label, r, "cuStreamCreate", err);
        goto fail;
    }
    *out = &c->base;
    return VF_OK;
fail:
    cuda_close(&c->base);
    return st;
}

vf_status vf__cuda_device_count(int *count, vf_error *err)
{
    *count = 0;
    cuda_api a;
    vf_error e = {0};
    if (api_load(&a, "cuda", &e) != VF_OK) {
        vf__err(err, VF_OK, "", "%s", e.msg);
        return VF_OK;
    }
    vf_status st = VF_OK;
    CUresult r = a.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        vf__err(err, VF_OK, "cuda", "no CUDA device");
    else if (r != CUDA_SUCCESS)
        st = cu_err(&a, "cuda", r, "cuInit", err);
    else if ((r = a.cuDeviceGetCount(count)) != CUDA_SUCCESS)
        st = cu_err(&a, "cuda", r, "cuDeviceGetCount", err);
    if (*count < 0)
        *count = 0;
    dlclose(a.lib);
    return st;
}
