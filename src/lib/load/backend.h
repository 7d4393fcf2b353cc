/* backend.h — the small device interface the loader streams through.
 *
 * A backend owns one device: allocations there, pinned host memory for the
 * staging ring, one stream that runs asynchronous host-to-device copies in
 * order, and events recorded on that stream. Every call is made from the
 * thread that runs the load (reader threads only pread). */
#ifndef VF_BACKEND_H
#define VF_BACKEND_H

#include "model/model.h"

typedef struct vf__backend vf__backend;

typedef struct vf__backend_ops {
    /* Device addresses are host pointers: readers pread straight into them, no ring. */
    bool host_addressable;
    /* False for "null": nothing is kept, so there is nothing to verify. */
    bool keeps_data;
    void (*close)(vf__backend *b);
    vf_status (*alloc)(vf__backend *b, uint64_t bytes, uint64_t *addr, vf_error *err);
    void (*free)(vf__backend *b, uint64_t addr, uint64_t bytes);
    vf_status (*host_alloc)(vf__backend *b, size_t bytes, void **p, vf_error *err);
    void (*host_free)(vf__backend *b, void *p, size_t bytes);
    vf_status (*event_create)(vf__backend *b, void **ev, vf_error *err);
    void (*event_destroy)(vf__backend *b, void *ev);
    /* Queues a copy on the backend's stream; src must stay untouched until an
     * event recorded after it has completed. */
    vf_status (*copy_h2d_async)(vf__backend *b, uint64_t dst, const void *src, size_t n, vf_error *err);
    vf_status (*event_record)(vf__backend *b, void *ev, vf_error *err);
    vf_status (*event_query)(vf__backend *b, void *ev, bool *done, vf_error *err);
    vf_status (*event_sync)(vf__backend *b, void *ev, vf_error *err);
    /* Waits until everything queued on the stream has finished (errors ignored:
     * this runs on the way out, before buffers are freed). */
    void (*sync)(vf__backend *b);
    /* Waits for the stream, then copies device memory back (for --verify). */
    vf_status (*copy_d2h)(vf__backend *b, void *dst, uint64_t src, size_t n, vf_error *err);
    /* Used memory of the device now; *source names how it was measured. */
    vf_status (*mem_info)(vf__backend *b, uint64_t *free_b, uint64_t *total_b, vf_error *err);
} vf__backend_ops;

struct vf__backend {
    const vf__backend_ops *ops;
    char name[32];    /* "cuda:0" */
    char gpu[96];     /* device name when known */
    char uuid[96];    /* "GPU-xxxxxxxx-..." when known, to match NVML */
    const char *mem_source;
};

/* Shared by the synchronous backends (host, null), whose copies are done when
 * they return: page-aligned staging from the heap, events always complete, a
 * stream with nothing to wait for (backend_host.c). */
VF_HIDDEN vf_status vf__sync_host_alloc(vf__backend *b, size_t bytes, void **p, vf_error *err);
VF_HIDDEN void vf__sync_host_free(vf__backend *b, void *p, size_t bytes);
VF_HIDDEN vf_status vf__sync_event_create(vf__backend *b, void **ev, vf_error *err);
VF_HIDDEN void vf__sync_event_destroy(vf__backend *b, void *ev);
VF_HIDDEN vf_status vf__sync_event_record(vf__backend *b, void *ev, vf_error *err);
VF_HIDDEN vf_status vf__sync_event_query(vf__backend *b, void *ev, bool *done, vf_error *err);
VF_HIDDEN void vf__sync_stream(vf__backend *b);

/* "host", "null", "cuda:N" → an open backend. */
VF_HIDDEN vf_status vf__backend_open(const char *device, vf__backend **out, vf_error *err);
VF_HIDDEN vf_status vf__backend_null_open(vf__backend **out, vf_error *err);
VF_HIDDEN vf_status vf__backend_host_open(vf__backend **out, vf_error *err);
VF_HIDDEN vf_status vf__backend_cuda_open(int ordinal, vf__backend **out, vf_error *err);
/* CUDA devices visible through the driver; 0 (and VF_OK) when there is no driver. */
VF_HIDDEN vf_status vf__cuda_device_count(int *count, vf_error *err);

static inline void vf__backend_close(vf__backend *b)
{
    if (b)
        b->ops->close(b);
}

#endif
