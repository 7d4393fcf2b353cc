/* backend_host.c — "host": device memory is plain host memory. Runs
 * everywhere; the loader preads straight into it (no staging ring). */
#include "load/backend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void host_close(vf__backend *b) { free(b); }

static vf_status host_alloc(vf__backend *b, uint64_t bytes, uint64_t *addr, vf_error *err)
{
    if (bytes == 0)
        bytes = 1;
    if (bytes > (uint64_t)SIZE_MAX / 2)
        return vf__err(err, VF_ENOMEM, b->name, "cannot allocate %llu bytes", (unsigned long long)bytes);
    /* A fresh mapping: untouched pages cost nothing until the reads land. */
    void *p = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return vf__err(err, VF_ENOMEM, b->name, "cannot allocate %llu bytes: %s", (unsigned long long)bytes,
                       strerror(errno));
    *addr = (uint64_t)(uintptr_t)p;
    return VF_OK;
}

static void host_free(vf__backend *b, uint64_t addr, uint64_t bytes)
{
    (void)b;
    if (addr)
        munmap((void *)(uintptr_t)addr, (size_t)(bytes ? bytes : 1));
}


static vf_status host_copy(vf__backend *b, uint64_t dst, const void *src, size_t n, vf_error *err)
{
    (void)b, (void)err;
    memcpy((void *)(uintptr_t)dst, src, n);
    return VF_OK;
}

static vf_status host_d2h(vf__backend *b, void *dst, uint64_t src, size_t n, vf_error *err)
{
    (void)b, (void)err;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return VF_OK;
}

static vf_status host_mem_info(vf__backend *b, uint64_t *free_b, uint64_t *total_b, vf_error *err)
{
    *free_b = *total_b = 0;
    return vf__err(err, VF_EUNSUPPORTED, b->name, "no device memory counter");
}

static const vf__backend_ops host_ops = {
    .host_addressable = true,
    .keeps_data = true,
    .close = host_close,
    .alloc = host_alloc,
    .free = host_free,
    .host_alloc = vf__sync_host_alloc,
    .host_free = vf__sync_host_free,
    .event_create = vf__sync_event_create,
    .event_destroy = vf__sync_event_destroy,
    .copy_h2d_async = host_copy,
    .event_record = vf__sync_event_record,
    .event_query = vf__sync_event_query,
    .event_sync = vf__sync_event_record,
    .sync = vf__sync_stream,
    .copy_d2h = host_d2h,
    .mem_info = host_mem_info,
};

vf_status vf__backend_host_open(vf__backend **out, vf_error *err)
{
    vf__backend *b = calloc(1, sizeof *b);
    if (!b)
        return vf__err(err, VF_ENOMEM, "host", "out of memory");
    b->ops = &host_ops;
    snprintf(b->name, sizeof b->name, "host");
    b->mem_source = "allocator";
    *out = b;
    return VF_OK;
}
