/* backend_null.c — "null": reads go through the ring and are discarded.
 * Measures how fast this storage could feed a GPU; the pipeline is the same
 * as for a real device, only the copy does nothing. */
#include "load/backend.h"

#include <stdlib.h>

typedef struct {
    vf__backend base;
    uint64_t next; /* fake addresses: distinct, never dereferenced */
} null_backend;

static void null_close(vf__backend *b) { free(b); }

static vf_status null_alloc(vf__backend *b, uint64_t bytes, uint64_t *addr, vf_error *err)
{
    (void)err;
    null_backend *n = (null_backend *)b;
    *addr = n->next;
    n->next += (bytes + 4095) & ~(uint64_t)4095;
    return VF_OK;
}

static void null_free(vf__backend *b, uint64_t addr, uint64_t bytes) { (void)b, (void)addr, (void)bytes; }

static vf_status null_copy(vf__backend *b, uint64_t dst, const void *src, size_t n, vf_error *err)
{
    (void)b, (void)dst, (void)src, (void)n, (void)err;
    return VF_OK;
}

static vf_status null_d2h(vf__backend *b, void *dst, uint64_t src, size_t n, vf_error *err)
{
    (void)dst, (void)src, (void)n;
    return vf__err(err, VF_EUNSUPPORTED, b->name, "the null device keeps nothing to read back");
}

static vf_status null_mem_info(vf__backend *b, uint64_t *free_b, uint64_t *total_b, vf_error *err)
{
    *free_b = *total_b = 0;
    return vf__err(err, VF_EUNSUPPORTED, b->name, "no device memory");
}

static const vf__backend_ops null_ops = {
    .host_addressable = false,
    .keeps_data = false,
    .close = null_close,
    .alloc = null_alloc,
    .free = null_free,
    .host_alloc = vf__sync_host_alloc,
    .host_free = vf__sync_host_free,
    .event_create = vf__sync_event_create,
    .event_destroy = vf__sync_event_destroy,
    .copy_h2d_async = null_copy,
    .event_record = vf__sync_event_record,
    .event_query = vf__sync_event_query,
    .event_sync = vf__sync_event_record,
    .sync = vf__sync_stream,
    .copy_d2h = null_d2h,
    .mem_info = null_mem_info,
};

vf_status vf__backend_null_open(vf__backend **out, vf_error *err)
{
    null_backend *n = calloc(1, sizeof *n);
    if (!n)
        return vf__err(err, VF_ENOMEM, "null", "out of memory");
    n->base.ops = &null_ops;
    snprintf(n->base.name, sizeof n->base.name, "null");
    n->base.mem_source = "none";
    n->next = 0x1000;
    *out = &n->base;
    return VF_OK;
}
