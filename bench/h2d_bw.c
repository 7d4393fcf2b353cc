/* h2d_bw.c — pinned host-to-device bandwidth through the loader's own cuda
 * backend (the driver API, dlopen'ed): a ring of 4 pinned 64 MiB buffers,
 * one async copy per buffer on the stream, each reused after its event, as
 * the loader does but without reading a file. The loader's ratio to this is
 * what bench/gpu-check.sh reports.
 *   h2d_bw [cuda:N] [GiB to copy, default 8] */
#include "load/backend.h"
#include "benchutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
    const char *dev = argc > 1 ? argv[1] : "cuda:0";
    unsigned long long gib = argc > 2 ? strtoull(argv[2], NULL, 10) : 8;
    const size_t SLOT = 64u << 20, K = 4;
    const uint64_t DEV_BYTES = 1ull << 30;
    vf_error e = {0};
    vf__backend *b = NULL;
    void *buf[4] = {0}, *ev[4] = {0};
    uint64_t d = 0;
    int rc = 1;
    if (vf__backend_open(dev, &b, &e) != VF_OK)
        goto out;
    if (b->ops->alloc(b, DEV_BYTES, &d, &e) != VF_OK)
        goto out;
    for (size_t i = 0; i < K; i++) {
        if (b->ops->host_alloc(b, SLOT, &buf[i], &e) != VF_OK || b->ops->event_create(b, &ev[i], &e) != VF_OK)
            goto out;
        memset(buf[i], (int)i + 1, SLOT);
    }
    uint64_t total = gib << 30, n = total / SLOT;
    double t0 = 0;
    for (uint64_t c = 0; c < n + K; c++) { /* the first K copies warm up and are not timed */
        size_t s = c % K;
        if (c == K) {
            for (size_t i = 0; i < K; i++)
                if (b->ops->event_sync(b, ev[i], &e) != VF_OK)
                    goto out;
            t0 = now();
        }
        if (c >= K && b->ops->event_sync(b, ev[s], &e) != VF_OK)
            goto out;
        if (b->ops->copy_h2d_async(b, d + (c * SLOT) % DEV_BYTES, buf[s], SLOT, &e) != VF_OK ||
            b->ops->event_record(b, ev[s], &e) != VF_OK)
            goto out;
    }
    for (size_t i = 0; i < K; i++)
        if (b->ops->event_sync(b, ev[i], &e) != VF_OK)
            goto out;
    double s = now() - t0;
    uint64_t fr = 0, tot = 0;
    b->ops->mem_info(b, &fr, &tot, NULL);
    printf("h2d_pinned bytes=%llu seconds=%.4f gib_per_s=%.3f gb_per_s=%.3f device_total=%llu\n",
           (unsigned long long)(n * SLOT), s, (double)(n * SLOT) / (1u << 30) / s, (double)(n * SLOT) / 1e9 / s,
           (unsigned long long)tot);
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "h2d_bw: %s\n", e.msg);
    if (b) {
        b->ops->sync(b);
        for (size_t i = 0; i < K; i++) {
            if (ev[i])
                b->ops->event_destroy(b, ev[i]);
            if (buf[i])
                b->ops->host_free(b, buf[i], SLOT);
        }
        if (d)
            b->ops->free(b, d, DEV_BYTES);
        vf__backend_close(b);
    }
    return rc;
}
