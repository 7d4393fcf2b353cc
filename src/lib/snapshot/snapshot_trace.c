/* snapshot_trace.c — the device traces of a 2.x snapshot replayed: each
 * "alloc" adds its size, each "free_completed" takes it away (the memory is
 * reusable from then on; torch/cuda/memory.py's TraceEntry), giving the
 * timeline's peak and what was alive there. The trace is a ring that may
 * have begun mid-run: what it frees without having allocated it, and what the
 * segments hold live without an "alloc" entry, was alive before it began and
 * is counted from its start (docs/snapshot.md). Leak suspects: allocation
 * sites (the same frames) of which at least 3 allocations are alive at the
 * end, made in at least 3 iterations, an iteration ending between two of
 * them when the program freed memory meanwhile and the site made nothing
 * else that it freed (weights loaded in one burst, or gradients among the
 * backward's temporaries, are not suspects). */
#include "snapshot/snapshot.h"

#include <stdlib.h>
#include <string.h>

#define LEAK_MIN 3

typedef enum { T_OTHER, T_ALLOC, T_FREE } t_kind;

typedef struct t_entry {
    uint64_t addr, size, frees_before, site;
    const pk_value *frames;
    uint64_t stream;
    t_kind kind;
    bool alive_at_end;
} t_entry;

/* addr -> entry index, open addressing with linear probing. */
typedef struct addr_map {
    uint64_t *keys;
    size_t *vals;
    uint8_t *used;
    size_t cap;
} addr_map;

static bool map_init(addr_map *m, size_t n)
{
    size_t cap = 64;
    while (cap < 2 * n + 16)
        cap *= 2;
    m->cap = cap;
    m->keys = calloc(cap, sizeof *m->keys);
    m->vals = calloc(cap, sizeof *m->vals);
    m->used = calloc(cap, 1);
    return m->keys && m->vals && m->used;
}

static void map_free(addr_map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

static size_t slot_of(const addr_map *m, uint64_t k)
{
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 7) & (m->cap - 1);
}

static size_t map_find(const addr_map *m, uint64_t k)
{
    for (size_t i = slot_of(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return SIZE_MAX;
        if (m->keys[i] == k)
            return i;
    }
}

/* Never full: at most one key per alloc entry, the capacity twice that. */
static void map_put(addr_map *m, uint64_t k, size_t v)
{
    size_t i = slot_of(m, k);
    while (m->used[i] && m->keys[i] != k)
        i = (i + 1) & (m->cap - 1);
    m->used[i] = 1;
    m->keys[i] = k;
    m->vals[i] = v;
}

/* Deletion by shifting back the entries that probed past the hole. */
static void map_del(addr_map *m, size_t i)
{
    m->used[i] = 0;
    for (size_t j = (i + 1) & (m->cap - 1); m->used[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m, m->keys[j]);
        bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (stays)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t str_hash(uint64_t h, const pk_value *v)
{
    if (!v || v->kind != PK_STR)
        return mix(h, 1);
    for (size_t i = 0; i < v->len; i++)
        h = mix(h, (uint8_t)v->s[i]);
    return mix(h, v->len);
}

/* One site per stack: the first SNAP_FRAMES frames' file, line and function. */
static uint64_t site_of(const pk_value *frames)
{
    uint64_t h = 0x1234567;
    size_t n = pk_is_seq(frames) ? frames->n : 0;
    for (size_t i = 0; i < n && i < SNAP_FRAMES; i++) {
        int64_t line = 0;
        pk_get_int(frames->items[i], "line", &line);
        h = mix(str_hash(str_hash(h, pk_get(frames->items[i], "filename")), pk_get(frames->items[i], "name")),
                (uint64_t)line);
    }
    return mix(h, n);
}

typedef struct dev_trace {
    t_entry *e;
    size_t n;
    int64_t device;
    uint64_t before, peak_at;
    int64_t peak_rel, end_rel;
    addr_map live;        /* after the replay: the trace's allocations alive at the end */
    uint64_t *pre_addr, *pre_size, *pre_freed_at; /* freed in the trace, allocated before it */
    size_t n_pre, cap_pre;
} dev_trace;

static bool get_u64(const pk_value *d, const char *key, uint64_t *out)
{
    int64_t v;
    if (!pk_get_int(d, key, &v) || v < 0)
        return false;
    *out = (uint64_t)v;
    return true;
}

static vf_status read_entries(vf_snapshot *s, dev_trace *t, const pk_value *list, const char *path, vf_error *err)
{
    if (!pk_is_seq(list))
        return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: a device trace is not a list");
    if (!snap_spend(s, list->n))
        return vf__err(err, VF_ERANGE, path, "the snapshot refers to its values too many times (shared references)");
    t->e = calloc(list->n ? list->n : 1, sizeof *t->e);
    if (!t->e)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    bool completed = false;
    for (size_t i = 0; i < list->n; i++)
        completed = completed || pk_is_str(pk_get(list->items[i], "action"), "free_completed");
    uint64_t frees = 0;
    for (size_t i = 0; i < list->n; i++) {
        const pk_value *d = list->items[i], *action = pk_get(d, "action");
        t_entry *e = &t->e[t->n++];
        e->frees_before = frees;
        if (pk_is_str(action, "alloc"))
            e->kind = T_ALLOC;
        else if (pk_is_str(action, completed ? "free_completed" : "free_requested") || pk_is_str(action, "free"))
            e->kind = T_FREE;
        if (e->kind == T_OTHER)
            continue;
        if (!get_u64(d, "addr", &e->addr) || !get_u64(d, "size", &e->size) || e->size > INT64_MAX / 2)
            return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: trace entry %zu has no addr and size", i);
        get_u64(d, "stream", &e->stream);
        e->frames = pk_get(d, "frames");
        if (e->kind == T_FREE)
            frees++;
    }
    return VF_OK;
}

static bool add_pre(dev_trace *t, uint64_t addr, uint64_t size, uint64_t freed_at)
{
    size_t cap = t->cap_pre;
    if (!vf__grow((void **)&t->pre_addr, &cap, t->n_pre, sizeof *t->pre_addr))
        return false;
    size_t c2 = t->cap_pre, c3 = t->cap_pre;
    if (!vf__grow((void **)&t->pre_size, &c2, t->n_pre, sizeof *t->pre_size) ||
        !vf__grow((void **)&t->pre_freed_at, &c3, t->n_pre, sizeof *t->pre_freed_at))
        return false;
    t->cap_pre = cap;
    t->pre_addr[t->n_pre] = addr;
    t->pre_size[t->n_pre] = size;
    t->pre_freed_at[t->n_pre++] = freed_at;
    return true;
}

/* Saturating signed sums: a crafted trace's sizes must not overflow. */
static int64_t sadd(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* Entries [0, upto) through the live map; rel is the bytes allocated since
 * the start (negative while the trace frees what was there before it). */
static bool replay(dev_trace *t, size_t upto, addr_map *live, bool record)
{
    int64_t rel = 0, max_rel = 0;
    for (size_t i = 0; i < upto; i++) {
        t_entry *e = &t->e[i];
        size_t at = e->kind == T_OTHER ? SIZE_MAX : map_find(live, e->addr);
        if (e->kind == T_ALLOC) {
            if (at != SIZE_MAX) { /* a free the ring dropped: the old allocation is gone */
                rel = sadd(rel, -(int64_t)t->e[live->vals[at]].size);
                map_del(live, at);
            }
            map_put(live, e->addr, i);
            rel = sadd(rel, (int64_t)e->size);
        } else if (e->kind == T_FREE) {
            if (at != SIZE_MAX) {
                rel = sadd(rel, -(int64_t)t->e[live->vals[at]].size);
                map_del(live, at);
            } else {
                rel = sadd(rel, -(int64_t)e->size);
                if (record && !add_pre(t, e->addr, e->size, i))
                    return false;
            }
        }
        if (record && rel > max_rel) {
            max_rel = rel;
            t->peak_at = i + 1;
        }
    }
    if (record) {
        t->peak_rel = max_rel;
        t->end_rel = rel;
    }
    return true;
}

/* Live blocks of this device in the segments, not allocated in the trace:
 * alive all along. Kept in the at-peak list, or summed into before. */
static bool segment_only(vf_snapshot *s, dev_trace *t, const pk_value *segments, bool keep)
{
    for (size_t i = 0; i < segments->n; i++) {
        const pk_value *seg = segments->items[i], *blocks = pk_get(seg, "blocks");
        int64_t device = 0;
        uint64_t at = 0, stream = 0;
        pk_get_int(seg, "device", &device);
        get_u64(seg, "address", &at);
        get_u64(seg, "stream", &stream);
        if (device != t->device || !pk_is_seq(blocks))
            continue;
        if (!snap_spend(s, blocks->n))
            return false;
        for (size_t j = 0; j < blocks->n; j++) {
            const pk_value *b = blocks->items[j];
            uint64_t size = 0, addr = at;
            get_u64(b, "size", &size);
            get_u64(b, "address", &addr);
            at = vf__sadd(at, size);
            if (!pk_is_str(pk_get(b, "state"), "active_allocated") || map_find(&t->live, addr) != SIZE_MAX)
                continue;
            if (keep) {
                snap_alloc a = {.address = addr, .size = size, .device = device, .stream = stream,
                                .entry = SNAP_NO_ENTRY, .frames = pk_get(b, "frames")};
                get_u64(b, "requested_size", &a.requested);
                if (!snap_keep(s, VF_SNAPSHOT_AT_PEAK, &a))
                    return false;
            } else {
                t->before = vf__sadd(t->before, size);
            }
        }
    }
    return true;
}

/* The allocations alive at the peak: the trace's up to it, those from
 * before the trace not yet freed, and the segments' own. */
static bool list_at_peak(vf_snapshot *s, dev_trace *t, const pk_value *segments)
{
    addr_map m = {0};
    if (!map_init(&m, t->n))
        return false;
    replay(t, t->peak_at, &m, false);
    for (size_t i = 0; i < m.cap; i++) {
        if (!m.used[i])
            continue;
        const t_entry *e = &t->e[m.vals[i]];
        snap_alloc a = {.address = e->addr, .size = e->size, .device = t->device, .stream = e->stream,
                        .entry = m.vals[i], .frames = e->frames};
        if (!snap_keep(s, VF_SNAPSHOT_AT_PEAK, &a)) {
            map_free(&m);
            return false;
        }
    }
    map_free(&m);
    for (size_t i = 0; i < t->n_pre; i++)
        if (t->pre_freed_at[i] >= t->peak_at) {
            snap_alloc a = {.address = t->pre_addr[i], .size = t->pre_size[i], .device = t->device,
                            .entry = SNAP_NO_ENTRY};
            if (!snap_keep(s, VF_SNAPSHOT_AT_PEAK, &a))
                return false;
        }
    return segment_only(s, t, segments, true);
}

static int by_site(const void *a, const void *b, void *ctx)
{
    const t_entry *e = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (e[x].site != e[y].site)
        return e[x].site < e[y].site ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* glibc's qsort_r is not C17; a small merge sort with the entries as context. */
static void sort_idx(size_t *v, size_t *tmp, size_t n, const t_entry *e)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_idx(v, tmp, h, e);
    sort_idx(v + h, tmp, n - h, e);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = by_site(&v[i], &v[j], (void *)e) <= 0 ? v[i++] : v[j++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

/* One site's allocations in order: its live ones, the iterations they span. */
static bool judge_site(vf_snapshot *s, dev_trace *t, const size_t *idx, size_t n)
{
    snap_alloc a = {.device = t->device, .entry = SNAP_NO_ENTRY};
    size_t last = SIZE_MAX;
    bool freed_since = false;
    for (size_t k = 0; k < n; k++) {
        const t_entry *e = &t->e[idx[k]];
        if (!e->alive_at_end) {
            freed_since = true;
            continue;
        }
        if (last == SIZE_MAX)
            a.iterations = 1;
        else if (!freed_since && e->frees_before > t->e[last].frees_before)
            a.iterations++;
        last = idx[k];
        freed_since = false;
        a.count++;
        a.size = vf__sadd(a.size, e->size);
        a.address = e->addr;
        a.stream = e->stream;
        a.entry = idx[k];
        a.frames = e->frames;
    }
    if (a.count < LEAK_MIN || a.iterations < LEAK_MIN)
        return true;
    return snap_keep(s, VF_SNAPSHOT_LEAKS, &a);
}

static bool find_leaks(vf_snapshot *s, dev_trace *t)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->e[i].kind == T_ALLOC;
    for (size_t i = 0; i < t->live.cap; i++)
        if (t->live.used[i])
            t->e[t->live.vals[i]].alive_at_end = true;
    size_t *idx = malloc((n ? n : 1) * sizeof *idx), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    bool ok = idx && tmp && snap_spend(s, n);
    for (size_t i = 0, k = 0; ok && i < t->n; i++)
        if (t->e[i].kind == T_ALLOC) {
            t->e[i].site = site_of(t->e[i].frames);
            idx[k++] = i;
        }
    if (ok)
        sort_idx(idx, tmp, n, t->e);
    for (size_t i = 0; ok && i < n;) {
        size_t j = i;
        while (j < n && t->e[idx[j]].site == t->e[idx[i]].site)
            j++;
        ok = judge_site(s, t, idx + i, j - i);
        i = j;
    }
    free(idx);
    free(tmp);
    return ok;
}

static void free_trace(dev_trace *t)
{
    free(t->e);
    free(t->pre_addr);
    free(t->pre_size);
    free(t->pre_freed_at);
    map_free(&t->live);
}

static vf_status one_device(vf_snapshot *s, dev_trace *t, const pk_value *list, const pk_value *segments,
                            const char *path, vf_error *err)
{
    vf_status st = read_entries(s, t, list, path, err);
    if (st != VF_OK)
        return st;
    if (!t->n)
        return VF_OK;
    if (!map_init(&t->live, t->n) || !replay(t, t->n, &t->live, true))
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < t->n_pre; i++)
        t->before = vf__sadd(t->before, t->pre_size[i]);
    if (!segment_only(s, t, segments, false))
        return vf__err(err, VF_ERANGE, path, "the snapshot refers to its values too many times (shared references)");
    uint64_t peak = vf__sadd(t->before, (uint64_t)t->peak_rel);
    s->trace_entries += t->n;
    if (!s->has_trace || peak > s->peak) {
        snap_clear(s, VF_SNAPSHOT_AT_PEAK); /* an earlier device's peak was lower */
        if (!list_at_peak(s, t, segments))
            return vf__err(err, VF_ENOMEM, path, "out of memory or too many shared references");
        s->has_trace = true;
        s->peak = peak;
        s->peak_device = t->device;
        s->peak_entry = t->peak_at;
        s->before_trace = t->before;
        int64_t end = sadd(t->before > INT64_MAX ? INT64_MAX : (int64_t)t->before, t->end_rel);
        s->end_bytes = end > 0 ? (uint64_t)end : 0;
    }
    return find_leaks(s, t) ? VF_OK : vf__err(err, VF_ENOMEM, path, "out of memory");
}

vf_status snap_replay_traces(vf_snapshot *s, const pk_value *traces, const pk_value *segments, const char *path,
                             vf_error *err)
{
    if (!pk_is_seq(traces))
        return vf__err(err, VF_EFORMAT, path, "not a memory snapshot: device_traces is not a list");
    if (!snap_spend(s, traces->n))
        return vf__err(err, VF_ERANGE, path, "the snapshot refers to its values too many times (shared references)");
    for (size_t d = 0; d < traces->n; d++) {
        dev_trace t = {.device = (int64_t)d};
        vf_status st = one_device(s, &t, traces->items[d], segments, path, err);
        free_trace(&t);
        if (st != VF_OK)
            return st;
    }
    return VF_OK;
}
