/* fake_cuda.c — a fake libcuda.so.1 for the loader's tests.
 *
 * Same symbol names and C signatures as the driver API the loader uses
 * (tests/reference/prior-art/peers-loading.md §5.2). Device memory is host
 * memory, so results can be compared byte for byte; copies run on one worker
 * thread per stream, so asynchrony and event ordering are real. It checks
 * what a real GPU would punish silently: a pinned buffer rewritten or freed
 * while a copy from it is in flight (hash at enqueue vs at copy time), copies
 * outside an allocation, frees under pending copies. It counts outstanding
 * allocations, pinned buffers, streams, events and contexts. As strict as the
 * driver where the driver refuses: each thread has its own context stack
 * (cuCtxSetCurrent / cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2) and calls that
 * need a current context fail without one; streams and events belong to the
 * context current at their creation and are refused in another; unknown flag
 * bits are CUDA_ERROR_INVALID_VALUE; nothing but the error and version calls
 * works before cuInit(0). Built without -z nodelete: a library that dlcloses
 * the driver really unloads it (tests check that the loader never does).
 *
 * Environment (read at load and by fake_cuda_reset):
 *   FAKE_CUDA_DEVICES=n (1)        FAKE_CUDA_TOTAL_MB=m (81920)
 *   FAKE_CUDA_CONTEXT_MB=m (300)   FAKE_CUDA_DELAY_US=u (0): per copy, in the worker
 *   FAKE_CUDA_FAIL_INIT=1          cuInit answers CUDA_ERROR_NO_DEVICE
 *   FAKE_CUDA_FAIL_ALLOC=N         the Nth cuMemAlloc_v2 is out of memory
 *   FAKE_CUDA_FAIL_HOSTALLOC=N     the Nth cuMemHostAlloc fails
 *   FAKE_CUDA_FAIL_COPY=N          the Nth cuMemcpyHtoDAsync_v2 fails
 *   FAKE_CUDA_FAIL_EVENT=N         the Nth recorded event completes with an error
 *   FAKE_CUDA_CORRUPT=N            the Nth copy flips a bit in device memory (for --verify)
 *   FAKE_CUDA_DISCARD=1            device memory is not backed (for RSS benchmarks)
 *   FAKE_CUDA_REPORT=FILE          at exit, append one line of outstanding counts
 */
#include "fake_cuda.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    E_INVALID_VALUE = 1,
    E_OOM = 2,
    E_NOT_INIT = 3,
    E_NO_DEVICE = 100,
    E_INVALID_DEVICE = 101,
    E_INVALID_CONTEXT = 201,
    E_INVALID_HANDLE = 400,
    E_NOT_READY = 600,
    E_LAUNCH_FAILED = 719,
    E_NOT_SUPPORTED = 801,
};

#define MAX_DEV 8

typedef struct CUctx_st {
    int dev;
    int refs;
    int primary;
} ctx_t;

typedef struct CUevent_st {
    ctx_t *ctx;
    unsigned flags;
    int state; /* 0 idle/complete, 1 pending */
    int err;
    struct CUevent_st *next_all;
} ev_t;

typedef struct op {
    int kind; /* 0 copy, 1 event */
    unsigned char *dst;
    const unsigned char *src;
    size_t n;
    uint64_t hash;
    ev_t *ev;
    int fail;
    int corrupt;
    struct op *next;
} op_t;

typedef struct CUstream_st {
    ctx_t *ctx;
    pthread_t th;
    pthread_cond_t cv;
    op_t *head, *tail;
    int quit;
    long pending;
} stream_t;

typedef struct region {
    uintptr_t p;
    size_t n;
    int dev;      /* device memory: its device; pinned: the allocating context's */
    int portable; /* pinned for every context (CU_MEMHOSTALLOC_PORTABLE) */
    long inflight;
    struct region *next;
} region_t;

static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
/* The calling thread's context stack; its top is the current context. */
#define CTX_STACK 16
static __thread ctx_t *ctx_stack[CTX_STACK];
static __thread int ctx_depth;
#define cur_ctx (ctx_depth ? ctx_stack[ctx_depth - 1] : NULL)
static ctx_t primary[MAX_DEV];
static region_t *dev_regions, *host_regions;
static fake_cuda_stats st;
static unsigned long long dev_used[MAX_DEV];
static long inflight_now;

static struct {
    int devices, fail_init, discard;
    unsigned long long total, ctx_cost;
    long delay_us, fail_alloc, fail_host, fail_copy, fail_event, corrupt;
    char report[512];
} cfg;

static long env_l(const char *k, long d)
{
    const char *v = getenv(k);
    return v && *v ? strtol(v, NULL, 10) : d;
}

static void read_env(void)
{
    cfg.devices = (int)env_l("FAKE_CUDA_DEVICES", 1);
    if (cfg.devices < 0 || cfg.devices > MAX_DEV)
        cfg.devices = 1;
    cfg.total = (unsigned long long)env_l("FAKE_CUDA_TOTAL_MB", 81920) << 20;
    cfg.ctx_cost = (unsigned long long)env_l("FAKE_CUDA_CONTEXT_MB", 300) << 20;
    cfg.delay_us = env_l("FAKE_CUDA_DELAY_US", 0);
    cfg.fail_init = (int)env_l("FAKE_CUDA_FAIL_INIT", 0);
    cfg.fail_alloc = env_l("FAKE_CUDA_FAIL_ALLOC", 0);
    cfg.fail_host = env_l("FAKE_CUDA_FAIL_HOSTALLOC", 0);
    cfg.fail_copy = env_l("FAKE_CUDA_FAIL_COPY", 0);
    cfg.fail_event = env_l("FAKE_CUDA_FAIL_EVENT", 0);
    cfg.discard = (int)env_l("FAKE_CUDA_DISCARD", 0);
    cfg.corrupt = env_l("FAKE_CUDA_CORRUPT", 0);
    const char *r = getenv("FAKE_CUDA_REPORT");
    snprintf(cfg.report, sizeof cfg.report, "%s", r ? r : "");
}

static void violation(const char *what)
{
    st.violations++;
    snprintf(st.last_violation, sizeof st.last_violation, "%s", what);
}

/* Independent of the library's checksum on purpose. */
static uint64_t fhash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 31;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static region_t *find(region_t *list, uintptr_t p, size_t n)
{
    for (region_t *r = list; r; r = r->next)
        if (p >= r->p && p - r->p <= r->n && n <= r->n - (p - r->p))
            return r;
    return NULL;
}

static void *worker(void *arg)
{
    stream_t *s = arg;
    pthread_mutex_lock(&G);
    for (;;) {
        while (!s->head && !s->quit)
            pthread_cond_wait(&s->cv, &G);
        if (!s->head)
            break;
        op_t *o = s->head;
        pthread_mutex_unlock(&G);
        if (o->kind == 0) {
            if (cfg.delay_us > 0) {
                struct timespec ts = {cfg.delay_us / 1000000, (cfg.delay_us % 1000000) * 1000};
                nanosleep(&ts, NULL);
            }
            uint64_t h = fhash(o->src, o->n);
            if (o->dst)
                memcpy(o->dst, o->src, o->n);
            if (o->dst && o->corrupt && o->n)
                o->dst[o->n / 2] ^= 0x04;
            pthread_mutex_lock(&G);
            if (h != o->hash)
                violation("host buffer changed while its copy was in flight");
            region_t *r = find(host_regions, (uintptr_t)o->src, o->n);
            if (r)
                r->inflight--;
            region_t *d = find(dev_regions, (uintptr_t)o->dst, o->n);
            if (d)
                d->inflight--;
            inflight_now--;
            st.copies_done++;
        } else {
            pthread_mutex_lock(&G);
            o->ev->state = 0;
            o->ev->err = o->fail ? E_LAUNCH_FAILED : OK;
        }
        s->head = o->next;
        if (!s->head)
            s->tail = NULL;
        s->pending--;
        free(o);
        pthread_cond_broadcast(&done_cv);
    }
    pthread_mutex_unlock(&G);
    return NULL;
}

static void enqueue(stream_t *s, op_t *o)
{
    o->next = NULL;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    s->pending++;
    pthread_cond_signal(&s->cv);
}

/* ---- controls ---- */
EXPORT void fake_cuda_reset(void)
{
    pthread_mutex_lock(&G);
    read_env();
    fake_cuda_stats keep = st;
    memset(&st, 0, sizeof st);
    st.dev_allocs = keep.dev_allocs, st.host_allocs = keep.host_allocs, st.streams = keep.streams;
    st.events = keep.events, st.contexts = keep.contexts, st.dev_bytes = keep.dev_bytes, st.host_bytes = keep.host_bytes;
    pthread_mutex_unlock(&G);
}

EXPORT void fake_cuda_get_stats(fake_cuda_stats *out)
{
    pthread_mutex_lock(&G);
    *out = st;
    pthread_mutex_unlock(&G);
}

EXPORT int fake_cuda_device_used(int dev, unsigned long long *used)
{
    if (dev < 0 || dev >= MAX_DEV)
        return -1;
    pthread_mutex_lock(&G);
    *used = dev_used[dev] + (primary[dev].refs > 0 ? cfg.ctx_cost : 0);
    pthread_mutex_unlock(&G);
    return 0;
}

__attribute__((constructor)) static void fake_init(void) { read_env(); }

__attribute__((destructor)) static void fake_fini(void)
{
    if (!cfg.report[0])
        return;
    FILE *f = fopen(cfg.report, "a");
    if (!f)
        return;
    fprintf(f, "dev_allocs=%ld dev_bytes=%llu host_allocs=%ld host_bytes=%llu streams=%ld events=%ld contexts=%ld "
               "copies=%ld violations=%ld\n",
            st.dev_allocs, st.dev_bytes, st.host_allocs, st.host_bytes, st.streams, st.events, st.contexts,
            st.copies_done, st.violations);
    fclose(f);
}

/* ---- driver API ---- */
static int initialised;

EXPORT CUresult cuInit(unsigned flags)
{
    if (flags != 0)
        return E_INVALID_VALUE;
    if (cfg.fail_init)
        return E_NO_DEVICE;
    initialised = 1;
    return OK;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 12040;
    return OK;
}

static const char *err_name(CUresult r)
{
    switch (r) {
    case OK: return "CUDA_SUCCESS";
    case E_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case E_OOM: return "CUDA_ERROR_OUT_OF_MEMORY";
    case E_NOT_INIT: return "CUDA_ERROR_NOT_INITIALIZED";
    case E_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case E_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case E_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case E_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case E_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case E_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case E_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return NULL;
    }
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = err_name(r);
    return *s ? OK : E_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s)
{
    switch (r) {
    case E_OOM: *s = "out of memory"; break;
    case E_INVALID_VALUE: *s = "invalid argument"; break;
    case E_LAUNCH_FAILED: *s = "unspecified launch failure"; break;
    case E_NO_DEVICE: *s = "no CUDA-capable device is detected"; break;
    default: *s = err_name(r) ? "fake driver error" : NULL; break;
    }
    return *s ? OK : E_INVALID_VALUE;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    if (!initialised)
        return E_NOT_INIT;
    *n = cfg.devices;
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!initialised)
        return E_NOT_INIT;
    if (ordinal < 0 || ordinal >= cfg.devices)
        return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (!initialised)
        return E_NOT_INIT;
    if (!name || len <= 0)
        return E_INVALID_VALUE;
    if (d < 0 || d >= cfg.devices)
        return E_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake GPU %d", d);
    return OK;
}

EXPORT CUresult cuDeviceGetUuid_v2(unsigned char *u, CUdevice d)
{
    if (!initialised)
        return E_NOT_INIT;
    if (d < 0 || d >= cfg.devices)
        return E_INVALID_DEVICE;
    for (int i = 0; i < 16; i++)
        u[i] = (unsigned char)((d + 1) * 16 + i);
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(ctx_t **c, CUdevice d)
{
    if (!initialised)
        return E_NOT_INIT;
    if (d < 0 || d >= cfg.devices)
        return E_INVALID_DEVICE;
    pthread_mutex_lock(&G);
    primary[d].dev = d;
    primary[d].primary = 1;
    if (primary[d].refs++ == 0)
        st.contexts++;
    pthread_mutex_unlock(&G);
    *c = &primary[d];
    return OK;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    if (d < 0 || d >= cfg.devices || primary[d].refs <= 0)
        return E_INVALID_CONTEXT;
    pthread_mutex_lock(&G);
    if (--primary[d].refs == 0)
        st.contexts--;
    pthread_mutex_unlock(&G);
    return OK;
}

/* Replaces the top of the stack (pushes onto an empty one; NULL pops), as the driver does. */
EXPORT CUresult cuCtxSetCurrent(ctx_t *c)
{
    if (!initialised)
        return E_NOT_INIT;
    if (c && c->refs <= 0)
        return E_INVALID_CONTEXT;
    if (!c) {
        if (ctx_depth)
            ctx_depth--;
        return OK;
    }
    if (ctx_depth)
        ctx_stack[ctx_depth - 1] = c;
    else
        ctx_stack[ctx_depth++] = c;
    return OK;
}

EXPORT CUresult cuCtxPushCurrent_v2(ctx_t *c)
{
    if (!initialised)
        return E_NOT_INIT;
    if (!c || c->refs <= 0)
        return E_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK)
        return E_INVALID_VALUE;
    ctx_stack[ctx_depth++] = c;
    return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(ctx_t **c)
{
    if (!initialised)
        return E_NOT_INIT;
    if (!ctx_depth)
        return E_INVALID_CONTEXT;
    ctx_t *top = ctx_stack[--ctx_depth];
    if (c)
        *c = top;
    return OK;
}

EXPORT CUresult cuCtxGetCurrent(ctx_t **c)
{
    if (!initialised)
        return E_NOT_INIT;
    *c = cur_ctx;
    return OK;
}

static CUresult need_ctx(void)
{
    if (!initialised)
        return E_NOT_INIT;
    if (!cur_ctx || cur_ctx->refs <= 0)
        return E_INVALID_CONTEXT;
    return OK;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *total)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    pthread_mutex_lock(&G);
    unsigned long long used = dev_used[cur_ctx->dev] + cfg.ctx_cost;
    *total = (size_t)cfg.total;
    *fr = used > cfg.total ? 0 : (size_t)(cfg.total - used);
    pthread_mutex_unlock(&G);
    return OK;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (n == 0)
        return E_INVALID_VALUE;
    pthread_mutex_lock(&G);
    st.alloc_calls++;
    int dev = cur_ctx->dev;
    if (st.alloc_calls == cfg.fail_alloc || dev_used[dev] + cfg.ctx_cost + n > cfg.total) {
        pthread_mutex_unlock(&G);
        return E_OOM;
    }
    pthread_mutex_unlock(&G);
    void *m;
    if (cfg.discard) /* address space only: nothing resident */
        m = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    else
        m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    region_t *rg = malloc(sizeof *rg);
    if (m == MAP_FAILED || !rg) {
        free(rg);
        return E_OOM;
    }
    pthread_mutex_lock(&G);
    *rg = (region_t){(uintptr_t)m, n, dev, 0, 0, dev_regions};
    dev_regions = rg;
    dev_used[dev] += n;
    st.dev_allocs++;
    st.dev_bytes += n;
    pthread_mutex_unlock(&G);
    *p = (CUdeviceptr)(uintptr_t)m;
    return OK;
}

static CUresult free_region(region_t **list, uintptr_t p, int dev_mem)
{
    pthread_mutex_lock(&G);
    for (region_t **pp = list; *pp; pp = &(*pp)->next) {
        region_t *r = *pp;
        if (r->p != p)
            continue;
        if (r->inflight)
            violation(dev_mem ? "device memory freed under a pending copy" : "pinned buffer freed under an in-flight copy");
        *pp = r->next;
        if (dev_mem) {
            dev_used[r->dev] -= r->n;
            st.dev_allocs--;
            st.dev_bytes -= r->n;
        } else {
            st.host_allocs--;
            st.host_bytes -= r->n;
        }
        pthread_mutex_unlock(&G);
        if (dev_mem)
            munmap((void *)r->p, r->n);
        else
            free((void *)r->p);
        free(r);
        return OK;
    }
    violation(dev_mem ? "cuMemFree_v2 of an unknown pointer" : "cuMemFreeHost of an unknown pointer");
    pthread_mutex_unlock(&G);
    return E_INVALID_VALUE;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    CUresult r = need_ctx();
    return r ? r : free_region(&dev_regions, (uintptr_t)p, 1);
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (flags & ~0x7u) /* PORTABLE | DEVICEMAP | WRITECOMBINED */
        return E_INVALID_VALUE;
    pthread_mutex_lock(&G);
    long k = ++st.host_alloc_calls;
    pthread_mutex_unlock(&G);
    if (k == cfg.fail_host)
        return E_OOM;
    void *m = NULL;
    region_t *rg = malloc(sizeof *rg);
    if (!rg || posix_memalign(&m, 4096, n ? n : 1) != 0) {
        free(rg);
        return E_OOM;
    }
    memset(m, 0, n); /* page-locked memory is resident, as the real driver's is */
    pthread_mutex_lock(&G);
    *rg = (region_t){(uintptr_t)m, n, cur_ctx->dev, (int)(flags & 0x1), 0, host_regions};
    host_regions = rg;
    st.host_allocs++;
    st.host_bytes += n;
    pthread_mutex_unlock(&G);
    *p = m;
    return OK;
}

EXPORT CUresult cuMemFreeHost(void *p) { return free_region(&host_regions, (uintptr_t)p, 0); }

EXPORT CUresult cuStreamCreate(stream_t **out, unsigned flags)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (flags & ~0x1u) /* CU_STREAM_NON_BLOCKING */
        return E_INVALID_VALUE;
    stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return E_OOM;
    s->ctx = cur_ctx;
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->th, NULL, worker, s) != 0) {
        free(s);
        return E_OOM;
    }
    pthread_mutex_lock(&G);
    st.streams++;
    pthread_mutex_unlock(&G);
    *out = s;
    return OK;
}

EXPORT CUresult cuStreamSynchronize(stream_t *s)
{
    if (!s)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&G);
    while (s->pending)
        pthread_cond_wait(&done_cv, &G);
    pthread_mutex_unlock(&G);
    return OK;
}

EXPORT CUresult cuStreamDestroy_v2(stream_t *s)
{
    if (!s)
        return E_INVALID_HANDLE;
    cuStreamSynchronize(s);
    pthread_mutex_lock(&G);
    s->quit = 1;
    pthread_cond_signal(&s->cv);
    st.streams--;
    pthread_mutex_unlock(&G);
    pthread_join(s->th, NULL);
    pthread_cond_destroy(&s->cv);
    free(s);
    return OK;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, stream_t *s)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!s)
        return E_INVALID_HANDLE;
    if (s->ctx != cur_ctx) /* a stream of another context */
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&G);
    long k = ++st.copy_calls;
    region_t *d = find(dev_regions, (uintptr_t)dst, n);
    region_t *h = find(host_regions, (uintptr_t)src, n);
    if (k == cfg.fail_copy || !d) {
        if (!d)
            violation("copy outside any device allocation");
        pthread_mutex_unlock(&G);
        return E_INVALID_VALUE;
    }
    /* Pinned memory is pinned only for the context that allocated it unless PORTABLE:
     * elsewhere the driver stages it like pageable memory. */
    if (!h || (!h->portable && h->dev != cur_ctx->dev))
        st.pageable_copies++;
    if (h)
        h->inflight++;
    d->inflight++;
    if (++inflight_now > st.max_inflight)
        st.max_inflight = inflight_now;
    pthread_mutex_unlock(&G);
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return E_OOM;
    o->kind = 0;
    o->dst = cfg.discard ? NULL : (unsigned char *)(uintptr_t)dst;
    o->src = src;
    o->n = n;
    o->hash = fhash(src, n);
    o->corrupt = k == cfg.corrupt;
    pthread_mutex_lock(&G);
    enqueue(s, o);
    pthread_mutex_unlock(&G);
    return OK;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (cfg.discard)
        return E_NOT_SUPPORTED;
    pthread_mutex_lock(&G);
    st.d2h_calls++;
    region_t *d = find(dev_regions, (uintptr_t)src, n);
    if (!d)
        violation("read-back outside any device allocation");
    pthread_mutex_unlock(&G);
    if (!d)
        return E_INVALID_VALUE;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return OK;
}

EXPORT CUresult cuEventCreate(ev_t **e, unsigned flags)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    /* BLOCKING_SYNC 0x1, DISABLE_TIMING 0x2, INTERPROCESS 0x4 (only with DISABLE_TIMING) */
    if ((flags & ~0x7u) || ((flags & 0x4) && !(flags & 0x2)))
        return E_INVALID_VALUE;
    *e = calloc(1, sizeof **e);
    if (!*e)
        return E_OOM;
    (*e)->ctx = cur_ctx;
    (*e)->flags = flags;
    pthread_mutex_lock(&G);
    st.events++;
    pthread_mutex_unlock(&G);
    return OK;
}

EXPORT CUresult cuEventDestroy_v2(ev_t *e)
{
    if (!e)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&G);
    /* Destroying a pending event is legal in CUDA (resources go when it completes): wait. */
    while (e->state == 1)
        pthread_cond_wait(&done_cv, &G);
    st.events--;
    pthread_mutex_unlock(&G);
    free(e);
    return OK;
}

EXPORT CUresult cuEventRecord(ev_t *e, stream_t *s)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!e || !s)
        return E_INVALID_HANDLE;
    if (e->ctx != s->ctx) /* event and stream must share a context */
        return E_INVALID_HANDLE;
    op_t *o = calloc(1, sizeof *o);
    if (!o)
        return E_OOM;
    pthread_mutex_lock(&G);
    long k = ++st.record_calls;
    o->kind = 1;
    o->ev = e;
    o->fail = k == cfg.fail_event;
    e->state = 1;
    e->err = OK;
    enqueue(s, o);
    pthread_mutex_unlock(&G);
    return OK;
}

EXPORT CUresult cuEventQuery(ev_t *e)
{
    if (!e)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&G);
    CUresult r = e->state == 1 ? E_NOT_READY : e->err;
    pthread_mutex_unlock(&G);
    return r;
}

EXPORT CUresult cuEventSynchronize(ev_t *e)
{
    if (!e)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&G);
    if (!(e->flags & 0x1))
        st.spin_waits++;
    while (e->state == 1)
        pthread_cond_wait(&done_cv, &G);
    CUresult r = e->err;
    pthread_mutex_unlock(&G);
    return r;
}
