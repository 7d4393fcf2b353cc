/* snapshot_segments.c — the allocator's state when the snapshot was taken:
 * each segment's blocks summed by state (as torch.cuda._memory_viz.stats
 * does), by device, stream and pool, and the largest live blocks with the
 * frames that allocated them. Fields: torch/cuda/memory.py's Segment and
 * Block (2.x); 1.13's blocks carry a "history" whose first entry is the live
 * allocation (CUDACachingAllocator.cpp, the newest first). */
#include "snapshot/snapshot.h"

#include <stdio.h>
#include <string.h>

static bool get_u64(const pk_value *d, const char *key, uint64_t *out)
{
    int64_t v;
    if (!pk_get_int(d, key, &v) || v < 0)
        return false;
    *out = (uint64_t)v;
    return true;
}

static vf_status add_state(vf_snapshot *s, const pk_value *state, uint64_t size, const char *path, vf_error *err)
{
    char name[40];
    size_t n = state->len < sizeof name - 1 ? state->len : sizeof name - 1;
    memcpy(name, state->s, n);
    name[n] = '\0';
    for (size_t i = 0; i < s->n_states; i++)
        if (!strcmp(s->state_name[i], name)) {
            s->state_bytes[i] = vf__sadd(s->state_bytes[i], size);
            return VF_OK;
        }
    if (s->n_states == SNAP_MAX_STATES)
        return vf__err(err, VF_EFORMAT, path, "more than %d block states", SNAP_MAX_STATES);
    memcpy(s->state_name[s->n_states], name, n + 1);
    s->state_bytes[s->n_states++] = size;
    return VF_OK;
}

/* "large", "small", or "pool A,B large" for a private pool (CUDA graphs). */
static void pool_name(const pk_value *seg, char *buf, size_t cap)
{
    char type[24] = "";
    const pk_value *t = pk_get(seg, "segment_type");
    if (t && t->kind == PK_STR) {
        size_t n = t->len < sizeof type - 1 ? t->len : sizeof type - 1;
        memcpy(type, t->s, n);
        type[n] = '\0';
    }
    const pk_value *id = pk_get(seg, "segment_pool_id");
    if (pk_is_seq(id) && id->n == 2 && id->items[0]->kind == PK_INT && id->items[1]->kind == PK_INT &&
        (id->items[0]->i || id->items[1]->i))
        snprintf(buf, cap, "pool %lld,%lld %s", (long long)id->items[0]->i, (long long)id->items[1]->i,
                 type[0] ? type : "?");
    else
        snprintf(buf, cap, "%s", type[0] ? type : "?");
}

static vf_snapshot_pool_stats *find_pool(vf_snapshot *s, int64_t device, uint64_t stream, const char *name)
{
    if (!snap_spend(s, s->n_pools))
        return NULL;
    for (size_t i = 0; i < s->n_pools; i++)
        if (s->pools[i].device == device && s->pools[i].stream == stream && !strcmp(s->pools[i].pool, name))
            return &s->pools[i];
    if (s->n_pools == SNAP_MAX_POOLS || !vf__grow((void **)&s->pools, &s->cap_pools, s->n_pools, sizeof *s->pools))
        return NULL;
    vf_snapshot_pool_stats *p = &s->pools[s->n_pools++];
    *p = (vf_snapshot_pool_stats){.device = device, .stream = stream};
    snprintf(p->pool, sizeof p->pool, "%s", name);
    return p;
}

static vf_status add_block(vf_snapshot *s, vf_snapshot_pool_stats *p, const pk_value *b,
                           uint64_t address, const char *path, vf_error *err)
{
    uint64_t size;
    const pk_value *state = pk_get(b, "state");
    if (!get_u64(b, "size", &size) || !state || state->kind != PK_STR)
        return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: a block without its size and state");
    vf_status st = add_state(s, state, size, path, err);
    if (st != VF_OK)
        return st;
    s->blocks++;
    p->blocks++;
    if (pk_is_str(state, "inactive")) {
        s->inactive = vf__sadd(s->inactive, size);
        p->inactive_bytes = vf__sadd(p->inactive_bytes, size);
        return VF_OK;
    }
    if (!pk_is_str(state, "active_allocated")) { /* active_pending_free (1.13), active_awaiting_free (2.x) */
        s->pending = vf__sadd(s->pending, size);
        p->pending_free_bytes = vf__sadd(p->pending_free_bytes, size);
        return VF_OK;
    }
    s->allocated = vf__sadd(s->allocated, size);
    p->allocated_bytes = vf__sadd(p->allocated_bytes, size);
    snap_alloc a = {.address = address, .size = size, .device = p->device, .stream = p->stream, .entry = SNAP_NO_ENTRY,
                    .frames = pk_get(b, "frames")};
    get_u64(b, "address", &a.address);
    if (!get_u64(b, "requested_size", &a.requested)) {
        const pk_value *h = pk_get(b, "history");
        if (pk_is_seq(h) && h->n) {
            get_u64(h->items[0], "real_size", &a.requested);
            a.frames = pk_get(h->items[0], "frames");
        }
    }
    s->requested = vf__sadd(s->requested, a.requested);
    return snap_keep(s, VF_SNAPSHOT_LARGEST, &a) ? VF_OK : vf__err(err, VF_ENOMEM, path, "out of memory");
}

static vf_status add_segment(vf_snapshot *s, const pk_value *seg, const char *path, vf_error *err)
{
    uint64_t total, address = 0, stream = 0;
    int64_t device = 0;
    const pk_value *blocks = pk_get(seg, "blocks");
    if (!get_u64(seg, "total_size", &total) || !pk_is_seq(blocks))
        return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: a segment without total_size and blocks");
    get_u64(seg, "address", &address);
    get_u64(seg, "stream", &stream);
    pk_get_int(seg, "device", &device);
    char name[48];
    pool_name(seg, name, sizeof name);
    vf_snapshot_pool_stats *p = find_pool(s, device, stream, name);
    if (!p)
        return vf__err(err, VF_ERANGE, path, "more than %d pools, or too many references to shared values",
                       SNAP_MAX_POOLS);
    s->segments++;
    p->segments++;
    s->reserved = vf__sadd(s->reserved, total);
    p->reserved_bytes = vf__sadd(p->reserved_bytes, total);
    if (!snap_spend(s, blocks->n))
        return vf__err(err, VF_ERANGE, path, "the snapshot refers to its values too many times (shared references)");
    uint64_t at = address;
    for (size_t i = 0; i < blocks->n; i++) {
        vf_status st = add_block(s, p, blocks->items[i], at, path, err);
        if (st != VF_OK)
            return st;
        uint64_t size = 0;
        get_u64(blocks->items[i], "size", &size);
        at = vf__sadd(at, size); /* 1.13's blocks have no address: they tile the segment in order */
    }
    return VF_OK;
}

vf_status snap_read_segments(vf_snapshot *s, const pk_value *segments, const char *path, vf_error *err)
{
    if (!snap_spend(s, segments->n))
        return vf__err(err, VF_ERANGE, path, "the snapshot refers to its values too many times (shared references)");
    for (size_t i = 0; i < segments->n; i++) {
        vf_status st = add_segment(s, segments->items[i], path, err);
        if (st != VF_OK)
            return st;
    }
    return VF_OK;
}
