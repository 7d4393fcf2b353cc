/* fuzz_snapshot.c — libFuzzer harness: arbitrary bytes as a PyTorch memory
 * snapshot pickle. The reader must answer or refuse in one line, never
 * crash or run anything; an answer's figures must hold together: reserved
 * is at least what the blocks' states add to, allocated and inactive are
 * among the states, every list within its bound, every frame terminated. */
#include "vramfit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_list(const vf_snapshot *s, vf_snapshot_list w)
{
    size_t n = vf_snapshot_alloc_count(s, w);
    if (n > 10 || vf_snapshot_alloc(s, w, n) != NULL)
        abort();
    for (size_t i = 0; i < n; i++) {
        const vf_snapshot_allocation *a = vf_snapshot_alloc(s, w, i);
        if (!a || a->n_frames > 8 || (i && a->size > vf_snapshot_alloc(s, w, i - 1)->size))
            abort();
        for (size_t f = 0; f < a->n_frames; f++)
            if (!a->frames[f] || strlen(a->frames[f]) > 400)
                abort();
        if (w == VF_SNAPSHOT_LEAKS && (a->count < 3 || a->iterations < 3 || a->iterations > a->count))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vf_snapshot *s = NULL;
    vf_error e = {0};
    vf_status st = vf_snapshot_read(data, size, "fuzz", &s, &e);
    if (st != VF_OK) {
        if (s || !e.msg[0] || strchr(e.msg, '\n') || !memchr(e.msg, '\0', sizeof e.msg))
            abort();
        return 0;
    }
    uint64_t states = 0, al = 0, in = 0;
    for (size_t i = 0; i < vf_snapshot_state_count(s); i++) {
        const char *n = vf_snapshot_state_name(s, i);
        uint64_t b = vf_snapshot_state_bytes(s, i);
        states = states + b < states ? UINT64_MAX : states + b;
        if (!strcmp(n, "active_allocated"))
            al += b;
        if (!strcmp(n, "inactive"))
            in += b;
    }
    if (vf_snapshot_state_count(s) > 16 || vf_snapshot_allocated_bytes(s) != al || vf_snapshot_inactive_bytes(s) != in)
        abort();
    if (!vf_snapshot_has_trace(s) && vf_snapshot_peak_bytes(s) != al)
        abort();
    for (int w = 0; w < 3; w++)
        check_list(s, (vf_snapshot_list)w);
    uint64_t segs = 0;
    for (size_t i = 0; i < vf_snapshot_pool_count(s); i++)
        segs += vf_snapshot_pool(s, i)->segments;
    if (segs != vf_snapshot_segments(s))
        abort();
    vf_snapshot_free(s);
    return 0;
}
