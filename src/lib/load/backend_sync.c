/* backend_sync.c — the synchronous host-memory operations the host and null
 * backends share: pinned buffers are plain memory, events complete at once. */
#include "load/backend.h"

#include <stdlib.h>
#include <string.h>

vf_status vf__sync_host_alloc(vf__backend *b, size_t bytes, void **p, vf_error *err)
{
    /* Page-aligned so O_DIRECT reads can land in it. */
    if (posix_memalign(p, 4096, bytes ? bytes : 1) != 0)
        return vf__err(err, VF_ENOMEM, b->name, "cannot allocate %zu bytes of staging", bytes);
    return VF_OK;
}

void vf__sync_host_free(vf__backend *b, void *p, size_t bytes)
{
    (void)b, (void)bytes;
    free(p);
}

vf_status vf__sync_event_create(vf__backend *b, void **ev, vf_error *err)
{
    (void)b, (void)err;
    *ev = NULL;
    return VF_OK;
}

void vf__sync_event_destroy(vf__backend *b, void *ev) { (void)b, (void)ev; }

vf_status vf__sync_event_record(vf__backend *b, void *ev, vf_error *err)
{
    (void)b, (void)ev, (void)err;
    return VF_OK;
}

vf_status vf__sync_event_query(vf__backend *b, void *ev, bool *done, vf_error *err)
{
    (void)b, (void)ev, (void)err;
    *done = true;
    return VF_OK;
}

void vf__sync_stream(vf__backend *b) { (void)b; }
