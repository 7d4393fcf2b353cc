/* alloc_torch.c — PyTorch's CUDA caching allocator, replayed from its source
 * (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator: malloc,
 * get_free_block, should_split, alloc_block, free_block, try_merge_blocks,
 * garbage_collect_cached_blocks, release_cached_blocks; expandable segments:
 * find_expandable_block, map_block). One stream. The OOM path acts under a
 * limit: a memory fraction, or the device's capacity (vf__talloc_set_capacity,
 * where cudaMalloc would fail): release_available_cached_blocks, then
 * release_cached_blocks and a retry, then the request fails. Sizes and ordering as the source has them; the
 * addresses are stand-ins (segments laid out one after another), used only
 * to break ties between free blocks of one size, as BlockComparatorSize does. */
#include "memory/torch/alloc_torch.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MIN_BLOCK 512u                      /* kMinBlockSize */
#define SMALL_SIZE ((uint64_t)1 << 20)      /* kSmallSize: largest "small" request */
#define SMALL_BUFFER ((uint64_t)2 << 20)    /* kSmallBuffer: small segments */
#define LARGE_BUFFER ((uint64_t)20 << 20)   /* kLargeBuffer: segments for 1-10 MiB requests */
#define MIN_LARGE_ALLOC ((uint64_t)10 << 20) /* kMinLargeAlloc */
#define ROUND_LARGE ((uint64_t)2 << 20)     /* kRoundLarge */
#define NONE 0u                             /* no block (indices are 1-based) */
#define MAX_BLOCKS (1u << 26)               /* a replay never needs more: bounded host memory */

typedef struct blk {
    uint64_t addr, size;
    uint64_t gc_base; /* the pool's get_free_block count when it was cached */
    uint32_t prev, next;
    uint32_t lt, rt; /* children in its pool's cache tree (while cached) */
    uint32_t prio;   /* its treap priority (prio(slot)) */
    bool small, allocated, mapped, live;
    bool placed; /* allocated by vf__talloc_place: never freed, so a placement after it may join it */
    bool pinned; /* in a segment with a block that is never freed (dropped by a freeze): never unsplit */
} blk;

/* The cached blocks of a pool ordered by (size, addr), as the source's
 * std::set<Block*, BlockComparatorSize>: a treap over the block slots
 * (priorities hashed from the slot), so a cache of ~100k blocks (a training
 * step of DeepSeek-V3: a gradient per tensor) costs log n per operation,
 * not a shift of the whole list. */
typedef struct pool {
    uint32_t root;
    uint32_t n_free;
    uint64_t bound;   /* no cached block is larger: a request above it finds none without a search */
    uint32_t hot;     /* a placed block's free rest, held out of the cache while placements take from it (settle) */
    uint64_t gc_calls;
    uint64_t base;    /* expandable: where its address range starts (pages are counted from there) */
    uint32_t *holes;  /* expandable: its unmapped blocks by address, the range's unmapped rest the last */
    uint32_t n_holes, cap_holes;
} pool;

struct vf__talloc {
    vf__tconf c;
    uint64_t allowed;      /* the limit a segment must stay under: the lesser of the two below; 0 = none */
    uint64_t frac_allowed; /* fraction x device memory (set_per_process_memory_fraction); 0 = not set */
    uint64_t capacity;     /* what the device has for this allocator (cudaMalloc fails past it); 0 = unbounded */
    blk *b;
    uint32_t n, cap;
    uint32_t *spare;       /* released block slots */
    uint32_t n_spare, cap_spare;
    pool pools[2];         /* [0] small, [1] large */
    uint64_t next_addr;
    vf__tstats st;
};

static uint64_t ceil_to(uint64_t v, uint64_t q) { return v > UINT64_MAX - q ? UINT64_MAX / q * q : (v + q - 1) / q * q; }

void vf__tconf_default(vf__tconf *c)
{
    memset(c, 0, sizeof *c);
    c->max_split = UINT64_MAX;
}

/* ---- configuration (c10/core/AllocatorConfig.cpp, CUDAAllocatorConfig.cpp) ---- */

static bool parse_bool(const char *v, size_t n, bool *out)
{
    if (n == 4 && strncasecmp(v, "true", 4) == 0)
        return *out = true, true;
    if (n == 5 && strncasecmp(v, "false", 5) == 0)
        return *out = false, true;
    return false;
}

static bool parse_uint(const char *v, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t x = 0;
    if (!n || n > 19)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (x > max)
        return false;
    *out = x;
    return true;
}

static bool parse_fraction(const char *v, size_t n, double *out)
{
    char buf[32];
    if (!n || n >= sizeof buf)
        return false;
    memcpy(buf, v, n);
    buf[n] = '\0';
    char *end;
    double x = strtod(buf, &end);
    if (*end || !(x > 0.0 && x < 1.0))
        return false;
    *out = x;
    return true;
}

/* One key:value pair. Keys PyTorch accepts but that do not change device
 * memory (pinned host memory, lock release) are accepted and ignored. */
static vf_status conf_pair(vf__tconf *c, const char *k, size_t kn, const char *v, size_t vn, vf_error *err)
{
#define KEY(s) (kn == sizeof(s) - 1 && strncmp(k, s, kn) == 0)
    uint64_t u;
    if (KEY("max_split_size_mb")) {
        /* AllocatorConfig::parseMaxSplitSize: at least kLargeBuffer / 1 MiB */
        if (!parse_uint(v, vn, UINT64_MAX >> 20, &u) || u < LARGE_BUFFER >> 20)
            return vf__err(err, VF_EINVAL, "--alloc-conf", "max_split_size_mb must be a whole number >= 20");
        c->max_split = u << 20;
    } else if (KEY("garbage_collection_threshold")) {
        if (!parse_fraction(v, vn, &c->gc_threshold))
            return vf__err(err, VF_EINVAL, "--alloc-conf", "garbage_collection_threshold must be in (0, 1)");
    } else if (KEY("expandable_segments")) {
        if (!parse_bool(v, vn, &c->expandable))
            return vf__err(err, VF_EINVAL, "--alloc-conf", "expandable_segments must be True or False");
    } else if (KEY("roundup_power2_divisions")) {
        /* one value for every size (the [size:divisions,...] list form is not read) */
        if (!parse_uint(v, vn, 1u << 20, &u) || !u || (u & (u - 1)))
            return vf__err(err, VF_EINVAL, "--alloc-conf", "roundup_power2_divisions must be a power of 2");
        c->roundup_div = (uint32_t)u;
    } else if (KEY("backend")) {
        if (vn == 6 && strncmp(v, "native", 6) == 0)
            c->async_backend = false;
        else if (vn == 15 && strncmp(v, "cudaMallocAsync", 15) == 0)
            c->async_backend = true;
        else
            return vf__err(err, VF_EINVAL, "--alloc-conf", "backend must be native or cudaMallocAsync");
    } else if (KEY("release_lock_on_cudamalloc") || KEY("pinned_use_cuda_host_register") ||
               KEY("pinned_num_register_threads") || KEY("pinned_reserve_segment_size_mb") ||
               KEY("graph_capture_record_stream_reuse") || KEY("max_non_split_rounding_mb")) {
        (void)v;
    } else {
        return vf__err(err, VF_EINVAL, "--alloc-conf", "unrecognized key '%.*s' in CUDA allocator config",
                       (int)(kn < 64 ? kn : 64), k);
    }
#undef KEY
    return VF_OK;
}

vf_status vf__tconf_parse(const char *s, vf__tconf *c, vf_error *err)
{
    vf__tconf_default(c);
    if (!s)
        return VF_OK;
    if (strlen(s) > 1024)
        return vf__err(err, VF_EINVAL, "--alloc-conf", "too long");
    const char *p = s;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *k = p;
        while (*p && *p != ':' && *p != ',')
            p++;
        if (*p != ':')
            return vf__err(err, VF_EINVAL, "--alloc-conf", "expected key:value pairs separated by commas");
        size_t kn = (size_t)(p - k);
        const char *v = ++p;
        while (*p && *p != ',')
            p++;
        size_t vn = (size_t)(p - v);
        while (kn && k[kn - 1] == ' ')
            kn--;
        while (vn && v[vn - 1] == ' ')
            vn--;
        vf_status st = conf_pair(c, k, kn, v, vn, err);
        if (st != VF_OK)
            return st;
        if (*p == ',')
            p++;
    }
    return VF_OK;
}

/* ---- blocks and pools ---- */

static blk *B(vf__talloc *a, uint32_t i) { return &a->b[i - 1]; }

/* A slot's treap priority: a fixed mix of its number (splitmix32). */
static uint32_t prio(uint32_t i)
{
    i += 0x9e3779b9u;
    i = (i ^ (i >> 16)) * 0x85ebca6bu;
    i = (i ^ (i >> 13)) * 0xc2b2ae35u;
    return i ^ (i >> 16);
}

static uint32_t blk_new(vf__talloc *a, uint64_t addr, uint64_t size, bool small)
{
    uint32_t i;
    if (a->n_spare) {
        i = a->spare[--a->n_spare];
    } else {
        if (a->n == a->cap) {
            uint32_t cap = a->cap ? a->cap * 2 : 256;
            if (cap > MAX_BLOCKS)
                return NONE;
            blk *nb = realloc(a->b, (size_t)cap * sizeof *nb);
            if (!nb)
                return NONE;
            a->b = nb;
            a->cap = cap;
        }
        i = ++a->n;
    }
    blk *x = B(a, i);
    memset(x, 0, sizeof *x);
    x->addr = addr, x->size = size, x->small = small, x->mapped = true, x->live = true;
    x->prio = prio(i);
    return i;
}

static void blk_delete(vf__talloc *a, uint32_t i)
{
    B(a, i)->live = false;
    if (a->n_spare == a->cap_spare) {
        uint32_t cap = a->cap_spare ? a->cap_spare * 2 : 256;
        uint32_t *ns = realloc(a->spare, (size_t)cap * sizeof *ns);
        if (!ns)
            return; /* the slot is lost, nothing else */
        a->spare = ns;
        a->cap_spare = cap;
    }
    a->spare[a->n_spare++] = i;
}

static bool less(vf__talloc *a, uint32_t x, uint64_t size, uint64_t addr)
{
    const blk *bx = B(a, x);
    return bx->size < size || (bx->size == size && bx->addr < addr);
}

/* Trees l and r, every key of l below every key of r, joined. */
static uint32_t merge(vf__talloc *a, uint32_t l, uint32_t r)
{
    if (!l || !r)
        return l ? l : r;
    if (B(a, l)->prio > B(a, r)->prio) {
        B(a, l)->rt = merge(a, B(a, l)->rt, r);
        return l;
    }
    B(a, r)->lt = merge(a, l, B(a, r)->lt);
    return r;
}

/* Tree t cut into the keys below (size, addr) and the rest. */
static void split(vf__talloc *a, uint32_t t, uint64_t size, uint64_t addr, uint32_t *l, uint32_t *r)
{
    if (!t) {
        *l = *r = NONE;
    } else if (less(a, t, size, addr)) {
        *l = t;
        split(a, B(a, t)->rt, size, addr, &B(a, t)->rt, r);
    } else {
        *r = t;
        split(a, B(a, t)->lt, size, addr, l, &B(a, t)->lt);
    }
}

/* First cached block not less than (size, addr): std::set::lower_bound. */
static uint32_t lower_bound(vf__talloc *a, const pool *p, uint64_t size, uint64_t addr)
{
    uint32_t t = p->root, best = NONE;
    while (t) {
        if (less(a, t, size, addr)) {
            t = B(a, t)->rt;
        } else {
            best = t;
            t = B(a, t)->lt;
        }
    }
    return best;
}

/* The last cached block below (size, addr) (NONE when none is): with
 * (UINT64_MAX, UINT64_MAX) the largest. Walks the cache downwards by key,
 * so blocks released on the way do not disturb it. */
static uint32_t cache_below(vf__talloc *a, const pool *p, uint64_t size, uint64_t addr)
{
    uint32_t t = p->root, best = NONE;
    while (t) {
        if (less(a, t, size, addr)) {
            best = t;
            t = B(a, t)->rt;
        } else {
            t = B(a, t)->lt;
        }
    }
    return best;
}

/* The cached block after block i by key (NONE at the end). */
static uint32_t cache_after(vf__talloc *a, const pool *p, uint32_t i)
{
    return lower_bound(a, p, B(a, i)->size, B(a, i)->addr + 1);
}

/* The link (root or child field) below which i's key belongs, going down
 * while the nodes' priorities stay above stop's (pass 0 to reach the node
 * with i's key or an empty link). */
static uint32_t *cache_link(vf__talloc *a, pool *p, uint32_t i, uint32_t stop)
{
    uint32_t *link = &p->root;
    const blk *x = B(a, i);
    uint32_t floor = stop ? B(a, stop)->prio : 0;
    while (*link && *link != i) {
        blk *t = B(a, *link);
        if (stop && t->prio <= floor)
            break;
        link = x->size < t->size || (x->size == t->size && x->addr < t->addr) ? &t->lt : &t->rt;
    }
    return link;
}

/* Treap insertion: down to where i's priority belongs, the subtree there
 * split around i's key. */
static void cache_insert(vf__talloc *a, pool *p, uint32_t i)
{
    uint32_t *link = cache_link(a, p, i, i);
    split(a, *link, B(a, i)->size, B(a, i)->addr, &B(a, i)->lt, &B(a, i)->rt);
    *link = i;
    p->n_free++;
    B(a, i)->gc_base = p->gc_calls;
    if (B(a, i)->size > p->bound)
        p->bound = B(a, i)->size;
}

static void cache_erase(vf__talloc *a, pool *p, uint32_t i)
{
    uint32_t *link = cache_link(a, p, i, NONE);
    if (*link != i)
        return; /* not cached */
    *link = merge(a, B(a, i)->lt, B(a, i)->rt);
    p->n_free--;
}

static pool *pool_of(vf__talloc *a, uint32_t i) { return &a->pools[B(a, i)->small ? 0 : 1]; }

static void reserve(vf__talloc *a, uint64_t bytes)
{
    a->st.reserved += bytes;
    if (a->st.reserved > a->st.peak_reserved)
        a->st.peak_reserved = a->st.reserved;
    a->st.device_allocs++;
}

/* ---- the allocator's steps ---- */

/* round_size: 512-byte multiples, or the next power-of-two division. */
uint64_t vf__talloc_round(const vf__talloc *a, uint64_t size)
{
    if (size < MIN_BLOCK)
        return MIN_BLOCK;
    uint64_t div = a->c.roundup_div;
    if (div > 1 && size > MIN_BLOCK * div) {
        uint64_t floor2 = (uint64_t)1 << (63 - __builtin_clzll(size));
        if (floor2 == size)
            return size;
        uint64_t step = floor2 / div;
        if (!step)
            return floor2 << 1;
        uint64_t f = size & ~(step - 1);
        return f == size ? size : f + step;
    }
    return ceil_to(size, MIN_BLOCK);
}

static uint64_t allocation_size(uint64_t size)
{
    if (size <= SMALL_SIZE)
        return SMALL_BUFFER;
    if (size < MIN_LARGE_ALLOC)
        return LARGE_BUFFER;
    return ceil_to(size, ROUND_LARGE);
}

uint64_t vf__talloc_segment_bytes(uint64_t n) { return n ? allocation_size(ceil_to(n, MIN_BLOCK)) : 0; }

/* get_free_block: the smallest cached block that fits, unless it is an
 * oversize block (>= max_split_size) for a normal request, or too much
 * larger (by kLargeBuffer or more) than an oversize request. */
static uint32_t get_free_block(vf__talloc *a, pool *p, uint64_t size)
{
    if (a->frac_allowed && a->c.gc_threshold > 0)
        p->gc_calls++;
    if (size > p->bound)
        return NONE;
    /* lower_bound, keeping the link that holds it */
    uint32_t *link = &p->root, *at = NULL;
    while (*link) {
        blk *t = B(a, *link);
        if (t->size < size) {
            link = &t->rt;
        } else {
            at = link;
            link = &t->lt;
        }
    }
    if (!at) {
        p->bound = size - 1; /* every cached block is smaller */
        return NONE;
    }
    uint32_t i = *at;
    uint64_t bs = B(a, i)->size, ms = a->c.max_split;
    if (size < ms && bs >= ms)
        return NONE;
    if (size >= ms && bs >= size + LARGE_BUFFER)
        return NONE;
    *at = merge(a, B(a, i)->lt, B(a, i)->rt);
    p->n_free--;
    return i;
}

/* release_block: an unsplit cached segment goes back to the driver. */
static void release_block(vf__talloc *a, pool *p, uint32_t i)
{
    cache_erase(a, p, i);
    a->st.reserved -= B(a, i)->size;
    a->st.segments--;
    blk_delete(a, i);
}

static bool unsplit(vf__talloc *a, uint32_t i) { return !B(a, i)->prev && !B(a, i)->next && !B(a, i)->pinned; }

/* Every unsplit cached block of p that keep() does not keep, largest first. */
static uint64_t release_unsplit(vf__talloc *a, pool *p, bool (*keep)(const vf__talloc *, const blk *, double),
                                double avg)
{
    uint64_t size = UINT64_MAX, addr = UINT64_MAX, got = 0;
    for (uint32_t i; (i = cache_below(a, p, size, addr)) != NONE;) {
        size = B(a, i)->size, addr = B(a, i)->addr;
        if (unsplit(a, i) && !(keep && keep(a, B(a, i), avg))) {
            got += size;
            release_block(a, p, i);
        }
    }
    return got;
}

static void unmap_cached(vf__talloc *a);

/* release_cached_blocks / release_blocks: every unsplit cached segment, or
 * under expandable segments every cached block's whole pages (unmap_block). */
static void release_cached(vf__talloc *a)
{
    if (a->c.expandable) {
        unmap_cached(a);
        return;
    }
    for (int k = 0; k < 2; k++)
        release_unsplit(a, &a->pools[k], NULL, 0);
}

/* release_available_cached_blocks: with max_split_size set, oversize cached
 * blocks, the smallest that covers the request or else the largest first. */
static bool release_available(vf__talloc *a, pool *p, uint64_t size)
{
    if (a->c.max_split == UINT64_MAX)
        return false;
    uint64_t key = size < a->c.max_split ? a->c.max_split : size;
    uint32_t at = lower_bound(a, p, key, 0);
    if (at) {
        release_block(a, p, at);
        return true;
    }
    uint64_t freed = 0;
    for (uint32_t i; freed < key && (i = cache_below(a, p, UINT64_MAX, UINT64_MAX)) != NONE &&
                     B(a, i)->size >= a->c.max_split;) {
        freed += B(a, i)->size;
        release_block(a, p, i);
    }
    return freed >= key;
}

/* A block younger than the average age stays. */
static bool young(const vf__talloc *a, const blk *x, double avg)
{
    return (double)(a->pools[1].gc_calls - x->gc_base) < avg;
}

/* garbage_collect_cached_blocks: above threshold x allowed_memory_maximum
 * (the fraction's share: PyTorch runs it only with a fraction set), unsplit
 * large cached blocks older than the average age are freed until enough is
 * back. */
static void garbage_collect(vf__talloc *a)
{
    uint64_t limit = (uint64_t)(a->c.gc_threshold * (double)a->frac_allowed);
    if (a->st.reserved <= limit)
        return;
    uint64_t target = a->st.reserved - limit, got = 0;
    pool *p = &a->pools[1];
    for (;;) {
        double age = 0;
        uint32_t count = 0;
        for (uint32_t i = lower_bound(a, p, 0, 0); i; i = cache_after(a, p, i))
            if (unsplit(a, i))
                age += (double)(p->gc_calls - B(a, i)->gc_base), count++;
        if (!count || got >= target)
            return;
        uint64_t freed = release_unsplit(a, p, young, age / count);
        if (!freed)
            return;
        got += freed;
    }
}

/* alloc_block (cudaMalloc of the allocation size), under the limit if any. */
static uint32_t alloc_segment(vf__talloc *a, bool small, uint64_t bytes)
{
    if (a->allowed && a->st.reserved + bytes > a->allowed)
        return NONE;
    uint32_t i = blk_new(a, a->next_addr, bytes, small);
    if (!i)
        return NONE;
    a->next_addr += bytes + ROUND_LARGE; /* segments apart: no merges across them */
    a->st.segments++;
    reserve(a, bytes);
    return i;
}

/* Expandable segments (ExpandableSegment): one address range per pool whose
 * pages (2 MiB small, 20 MiB large, counted from the range's start) are
 * mapped as needed. Its unmapped blocks are holes: the range's rest, and
 * what an OOM path unmapped inside it (unmap_block). */
static uint64_t page_of(const pool *p, const vf__talloc *a) { return p == &a->pools[0] ? SMALL_BUFFER : LARGE_BUFFER; }

static bool holes_room(pool *p)
{
    if (p->n_holes < p->cap_holes)
        return true;
    uint32_t cap = p->cap_holes ? p->cap_holes * 2 : 16;
    uint32_t *nh = cap < MAX_BLOCKS ? realloc(p->holes, (size_t)cap * sizeof *nh) : NULL;
    if (!nh)
        return false;
    p->holes = nh;
    p->cap_holes = cap;
    return true;
}

/* Hole i into the address-ordered list (room made before). */
static void hole_add(vf__talloc *a, pool *p, uint32_t i)
{
    uint32_t k = p->n_holes;
    while (k && B(a, p->holes[k - 1])->addr > B(a, i)->addr) {
        p->holes[k] = p->holes[k - 1];
        k--;
    }
    p->holes[k] = i;
    p->n_holes++;
}

static void hole_del(pool *p, uint32_t i)
{
    for (uint32_t k = 0; k < p->n_holes; k++)
        if (p->holes[k] == i) {
            memmove(p->holes + k, p->holes + k + 1, (size_t)(p->n_holes - k - 1) * sizeof *p->holes);
            p->n_holes--;
            return;
        }
}

/* Neighbour s (prev or next of d) joined into d: try_merge_blocks. */
static void absorb(vf__talloc *a, uint32_t d, uint32_t s)
{
    blk *x = B(a, d), *sx = B(a, s);
    if (x->prev == s) {
        x->addr = sx->addr;
        x->prev = sx->prev;
        if (x->prev)
            B(a, x->prev)->next = d;
    } else {
        x->next = sx->next;
        if (x->next)
            B(a, x->next)->prev = d;
    }
    x->size += sx->size;
    x->pinned |= sx->pinned;
    blk_delete(a, s);
}

/* try_merge_blocks on both sides of free block d: a free neighbour mapped as
 * d is (a cached block, or an unmapped hole) joins it. */
static void join_free(vf__talloc *a, pool *p, uint32_t d)
{
    uint32_t nb[2] = {B(a, d)->prev, B(a, d)->next};
    for (int k = 0; k < 2; k++) {
        uint32_t s = nb[k];
        if (!s || B(a, s)->allocated || B(a, s)->mapped != B(a, d)->mapped)
            continue;
        if (B(a, s)->mapped)
            cache_erase(a, p, s);
        else
            hole_del(p, s);
        absorb(a, d, s);
    }
}

/* A new block of [addr, addr + size) linked before (after = false) or after i. */
static uint32_t link_new(vf__talloc *a, uint32_t i, bool after, uint64_t addr, uint64_t size)
{
    uint32_t n = blk_new(a, addr, size, B(a, i)->small);
    if (!n)
        return NONE;
    blk *x = B(a, i), *y = B(a, n);
    y->pinned = x->pinned;
    if (after) {
        y->prev = i, y->next = x->next;
        if (y->next)
            B(a, y->next)->prev = n;
        x->next = n;
    } else {
        y->next = i, y->prev = x->prev;
        if (y->prev)
            B(a, y->prev)->next = n;
        x->prev = n;
    }
    return n;
}

/* unmap_block: the whole pages of cached block i given back; the partial
 * pages before and after stay cached, the hole joins unmapped neighbours. */
static void unmap_free(vf__talloc *a, pool *p, uint32_t i)
{
    uint64_t page = page_of(p, a), addr = B(a, i)->addr, end = addr + B(a, i)->size;
    uint64_t lo = p->base + ceil_to(addr - p->base, page), hi = p->base + (end - p->base) / page * page;
    if (hi <= lo || !holes_room(p))
        return;
    cache_erase(a, p, i);
    uint32_t before = lo > addr ? link_new(a, i, false, addr, lo - addr) : NONE;
    uint32_t after = hi < end ? link_new(a, i, true, hi, end - hi) : NONE;
    if ((lo > addr && !before) || (hi < end && !after)) { /* no host memory: left mapped */
        cache_insert(a, p, i);
        return;
    }
    if (before)
        cache_insert(a, p, before);
    if (after)
        cache_insert(a, p, after);
    blk *x = B(a, i);
    x->addr = lo, x->size = hi - lo, x->mapped = false;
    a->st.reserved -= hi - lo;
    join_free(a, p, i);
    hole_add(a, p, i);
}

/* Every cached block of the expandable ranges, largest first (new partial
 * pages, smaller, are met after and have nothing to unmap). */
static void unmap_cached(vf__talloc *a)
{
    for (int k = 0; k < 2; k++) {
        pool *p = &a->pools[k];
        uint64_t size = UINT64_MAX, addr = UINT64_MAX;
        for (uint32_t i; p->n_holes && (i = cache_below(a, p, size, addr)) != NONE;) {
            size = B(a, i)->size, addr = B(a, i)->addr;
            unmap_free(a, p, i);
        }
    }
}

/* map_block: hole h's first need bytes, whole pages, mapped and joined to
 * its free neighbours, cached; false past the limit. */
static bool map_hole(vf__talloc *a, pool *p, uint32_t h, uint64_t need)
{
    uint64_t m = ceil_to(need, page_of(p, a));
    if (m > B(a, h)->size)
        m = B(a, h)->size;
    if (a->allowed && a->st.reserved + m > a->allowed)
        return false;
    if (m < B(a, h)->size) { /* the rest stays a hole, in h's place in the list */
        uint32_t r = link_new(a, h, true, B(a, h)->addr + m, B(a, h)->size - m);
        if (!r)
            return false;
        B(a, r)->mapped = false;
        for (uint32_t k = 0; k < p->n_holes; k++)
            if (p->holes[k] == h)
                p->holes[k] = r;
    } else {
        hole_del(p, h);
    }
    blk *x = B(a, h);
    x->size = m, x->mapped = true;
    reserve(a, m);
    join_free(a, p, h);
    cache_insert(a, p, h);
    return true;
}

/* try_allocate_expandable_block: find_expandable_block takes the lowest
 * hole (or the free block before it) with room for size in the free and
 * unmapped blocks from there, then maps what is missing. */
static uint32_t alloc_expandable(vf__talloc *a, pool *p, bool small, uint64_t size)
{
    if (!p->n_holes) {
        uint32_t t = holes_room(p) ? blk_new(a, a->next_addr, (uint64_t)1 << 50, small) : NONE;
        if (!t)
            return NONE;
        B(a, t)->mapped = false;
        p->base = a->next_addr;
        a->next_addr += (uint64_t)1 << 51;
        a->st.segments++;
        hole_add(a, p, t);
    }
    uint32_t c = NONE;
    for (uint32_t k = 0; k < p->n_holes && !c; k++) {
        uint32_t h = p->holes[k], pv = B(a, h)->prev, s = pv && !B(a, pv)->allocated ? pv : h;
        uint64_t bytes = 0;
        for (uint32_t b = s; b && bytes < size && !B(a, b)->allocated; b = B(a, b)->next)
            bytes += B(a, b)->size;
        if (bytes >= size)
            c = s;
    }
    if (!c || (!B(a, c)->mapped && !map_hole(a, p, c, size)))
        return NONE;
    while (B(a, c)->size < size) { /* free -> unmapped: map the rest into it */
        uint32_t nx = B(a, c)->next;
        if (!nx || B(a, nx)->mapped || B(a, nx)->allocated || !map_hole(a, p, nx, size - B(a, c)->size))
            return NONE;
        c = nx;
    }
    cache_erase(a, p, c);
    return c;
}

/* should_split: small pool (and expandable segments) when 512 B or more
 * remain; large pool when the request is below max_split_size and more than
 * 1 MiB would remain. */
static bool should_split(const vf__talloc *a, const blk *x, uint64_t size)
{
    uint64_t rest = x->size - size;
    if (x->small || a->c.expandable)
        return rest >= MIN_BLOCK;
    return size < a->c.max_split && rest > SMALL_SIZE;
}

/* alloc_found_block: the front of the block serves the request, the rest
 * stays cached. */
static uint32_t split_off(vf__talloc *a, uint32_t i, uint64_t size)
{
    uint32_t r = blk_new(a, B(a, i)->addr + size, B(a, i)->size - size, B(a, i)->small);
    if (!r)
        return NONE;
    blk *x = B(a, i), *rx = B(a, r);
    rx->pinned = x->pinned; /* a segment with a block that is never freed */
    rx->next = x->next;
    if (rx->next)
        B(a, rx->next)->prev = r;
    rx->prev = i;
    x->next = r;
    x->size = size;
    return r;
}

static uint32_t take(vf__talloc *a, pool *p, uint32_t i, uint64_t size)
{
    if (should_split(a, B(a, i), size)) {
        uint32_t r = split_off(a, i, size);
        if (!r)
            return NONE;
        cache_insert(a, p, r);
    }
    blk *x = B(a, i);
    x->allocated = true;
    a->st.allocated += x->size;
    if (a->st.allocated > a->st.peak_allocated)
        a->st.peak_allocated = a->st.allocated;
    return i;
}

/* malloc up to alloc_found_block: the block that serves orig (rounded into
 * *size, from pool *pp), NONE when none does (stats.failed). */
static uint32_t find_block(vf__talloc *a, uint64_t orig, uint64_t *size, pool **pp)
{
    if (!a || orig > ((uint64_t)1 << 52))
        return NONE;
    *size = vf__talloc_round(a, orig);
    bool small = *size <= SMALL_SIZE;
    pool *p = *pp = &a->pools[small ? 0 : 1];
    uint32_t i = get_free_block(a, p, *size);
    if (!i && a->frac_allowed && a->c.gc_threshold > 0)
        garbage_collect(a);
    if (!i && a->c.expandable) {
        i = alloc_expandable(a, p, small, *size);
        if (!i && a->allowed) {
            release_cached(a);
            i = alloc_expandable(a, p, small, *size);
        }
    } else if (!i) {
        uint64_t bytes = allocation_size(*size);
        i = alloc_segment(a, small, bytes);
        if (!i && a->allowed && release_available(a, p, *size))
            i = alloc_segment(a, small, bytes);
        if (!i && a->allowed) {
            release_cached(a);
            i = alloc_segment(a, small, bytes);
        }
    }
    if (!i) {
        a->st.failed = true;
        a->st.failed_request = orig;
    }
    return i;
}

static void settle(vf__talloc *a);

uint32_t vf__talloc_malloc(vf__talloc *a, uint64_t orig)
{
    settle(a);
    uint64_t size;
    pool *p;
    uint32_t i = find_block(a, orig, &size, &p);
    return i ? take(a, p, i, size) : NONE;
}

static void count_allocated(vf__talloc *a, uint64_t bytes)
{
    a->st.allocated += bytes;
    if (a->st.allocated > a->st.peak_allocated)
        a->st.peak_allocated = a->st.allocated;
}

/* take() for a block never freed, with fewer blocks to the same effect:
 * what it serves joins the placed block before it (the two are never freed,
 * so nothing can tell them apart), and a whole segment it fills has no
 * block at all (allocated, never freed, beside nothing: no rule reads it).
 * The cached rest keeps the address and size take() gives it. */
static bool place_take(vf__talloc *a, pool *p, uint32_t i, uint64_t size, bool hold)
{
    blk *x = B(a, i);
    uint32_t pv = x->prev;
    bool after_placed = pv && B(a, pv)->placed;
    if (should_split(a, x, size)) {
        uint32_t rest = i;
        if (!after_placed) {
            if (!(rest = split_off(a, i, size)))
                return false;
            B(a, i)->allocated = B(a, i)->placed = true;
        } else {
            B(a, pv)->size += size;
            x->addr += size;
            x->size -= size;
        }
        if (hold)
            p->hot = rest;
        else
            cache_insert(a, p, rest);
        count_allocated(a, size);
        return true;
    }
    count_allocated(a, x->size);
    if (!pv && !x->next && !x->pinned) {
        blk_delete(a, i);
    } else if (after_placed) {
        absorb(a, pv, i);
    } else {
        x->allocated = x->placed = true;
    }
    return true;
}

/* The held rest back into the cache, before anything else reads it. */
static void settle(vf__talloc *a)
{
    for (int k = 0; a && k < 2; k++)
        if (a->pools[k].hot) {
            cache_insert(a, &a->pools[k], a->pools[k].hot);
            a->pools[k].hot = NONE;
        }
}

/* No limit, no garbage collection, no oversize blocks: get_free_block is
 * then the smallest cached block that holds the request, nothing else. */
static bool plain(const vf__talloc *a)
{
    return !a->c.expandable && !a->allowed && !(a->frac_allowed && a->c.gc_threshold > 0) &&
           a->c.max_split == UINT64_MAX;
}

/* The request served from p's held rest when that is the smallest block
 * (by size, then address) that holds it, as get_free_block would find it
 * with the rest cached; the rest stays held, smaller. */
static bool place_hot(vf__talloc *a, pool *p, uint64_t size)
{
    uint32_t h = p->hot;
    if (!h || B(a, h)->size < size)
        return false;
    if (size <= p->bound) {
        uint32_t t = lower_bound(a, p, size, 0);
        if (!t)
            p->bound = size - 1;
        else if (less(a, t, B(a, h)->size, B(a, h)->addr))
            return false;
    }
    blk *x = B(a, h);
    uint32_t pv = x->prev; /* placed: a held rest is one */
    if (should_split(a, x, size)) {
        B(a, pv)->size += size;
        x->addr += size;
        x->size -= size;
        count_allocated(a, size);
    } else {
        count_allocated(a, x->size);
        p->hot = NONE;
        absorb(a, pv, h);
    }
    return true;
}

bool vf__talloc_place(vf__talloc *a, uint64_t orig)
{
    if (!a || orig > ((uint64_t)1 << 52))
        return false;
    uint64_t size;
    pool *p;
    if (!plain(a)) {
        settle(a);
        if (a->c.expandable) /* the pages and holes read each block: placed as malloc does */
            return vf__talloc_malloc(a, orig) != NONE;
        uint32_t i = find_block(a, orig, &size, &p);
        return i && place_take(a, p, i, size, false);
    }
    size = vf__talloc_round(a, orig);
    bool small = size <= SMALL_SIZE;
    p = &a->pools[small ? 0 : 1];
    if (place_hot(a, p, size))
        return true;
    if (p->hot) {
        cache_insert(a, p, p->hot);
        p->hot = NONE;
    }
    uint32_t i = get_free_block(a, p, size);
    if (!i && !(i = alloc_segment(a, small, allocation_size(size)))) {
        a->st.failed = true;
        a->st.failed_request = orig;
        return false;
    }
    return place_take(a, p, i, size, true);
}

/* free_block: merge with free neighbours of the same segment, then cache. */
void vf__talloc_release(vf__talloc *a, uint32_t h)
{
    settle(a);
    if (!a || !h || h > a->n || !B(a, h)->live || !B(a, h)->allocated)
        return;
    pool *p = pool_of(a, h);
    blk *x = B(a, h);
    x->allocated = false;
    a->st.allocated -= x->size;
    join_free(a, p, h);
    cache_insert(a, p, h);
}

void vf__talloc_empty_cache(vf__talloc *a)
{
    settle(a);
    if (a)
        release_cached(a); /* emptyCache: release_cached_blocks */
}

vf__talloc *vf__talloc_new(const vf__tconf *c, uint64_t device_bytes)
{
    vf__talloc *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    if (c)
        a->c = *c;
    else
        vf__tconf_default(&a->c);
    if (a->c.fraction > 0 && a->c.fraction <= 1 && device_bytes)
        a->allowed = a->frac_allowed = (uint64_t)(a->c.fraction * (double)device_bytes);
    a->next_addr = (uint64_t)1 << 32;
    return a;
}

void vf__talloc_free(vf__talloc *a)
{
    if (!a)
        return;
    free(a->b);
    free(a->spare);
    free(a->pools[0].holes);
    free(a->pools[1].holes);
    free(a);
}

/* Copies of an allocator. keep_allocated false (a freeze): the allocated
 * blocks are dropped — they are never freed (the weights) — and the blocks
 * beside them are pinned, so a freed neighbour never merges across them and
 * they never count as whole segments; the statistics stay as they were. */
static vf__talloc *copy(const vf__talloc *a, bool keep_allocated)
{
    vf__talloc *c = calloc(1, sizeof *c);
    uint32_t *map = calloc((size_t)a->n + 1, sizeof *map);
    if (!c || !map) {
        free(c);
        free(map);
        return NULL;
    }
    c->c = a->c, c->allowed = a->allowed, c->frac_allowed = a->frac_allowed, c->capacity = a->capacity;
    c->next_addr = a->next_addr, c->st = a->st;
    bool ok = true;
    for (uint32_t i = 1; i <= a->n && ok; i++) {
        const blk *x = &a->b[i - 1];
        if (!x->live || (x->allocated && !keep_allocated))
            continue;
        uint32_t j = blk_new(c, x->addr, x->size, x->small);
        ok = j != NONE;
        if (ok) {
            *B(c, j) = *x;
            map[i] = j;
        }
    }
    for (uint32_t j = 1; j <= c->n && ok; j++) {
        blk *y = B(c, j);
        uint32_t p = y->prev, n = y->next;
        y->prev = p ? map[p] : NONE;
        y->next = n ? map[n] : NONE;
        y->pinned |= (p && !y->prev) || (n && !y->next);
        /* the cache trees keep their shape (cached blocks are free: all copied),
         * their priorities and ages: no insertion per block */
        y->lt = y->lt ? map[y->lt] : NONE;
        y->rt = y->rt ? map[y->rt] : NONE;
    }
    for (int k = 0; k < 2 && ok; k++) {
        const pool *pa = &a->pools[k];
        pool *pc = &c->pools[k];
        pc->gc_calls = pa->gc_calls;
        pc->base = pa->base;
        if (pa->n_holes && !(pc->holes = malloc((size_t)pa->n_holes * sizeof *pc->holes)))
            ok = false;
        for (uint32_t h = 0; ok && h < pa->n_holes; h++)
            pc->holes[h] = map[pa->holes[h]];
        pc->n_holes = pc->cap_holes = ok ? pa->n_holes : 0;
        pc->root = pa->root ? map[pa->root] : NONE;
        pc->n_free = pa->n_free;
        pc->bound = pa->bound;
        if (ok && pa->hot)
            cache_insert(c, pc, map[pa->hot]);
    }
    free(map);
    if (!ok) {
        vf__talloc_free(c);
        return NULL;
    }
    return c;
}

vf__talloc *vf__talloc_freeze(const vf__talloc *a) { return a ? copy(a, false) : NULL; }
/* A clone of an allocator whose slots are all in use (a freeze's, which
 * numbers them afresh): the slots keep their numbers, so the blocks, links
 * and trees copy as they are — what copy() gives, without its map. */
static vf__talloc *copy_dense(const vf__talloc *a)
{
    vf__talloc *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    *c = *a;
    c->b = NULL, c->spare = NULL, c->cap_spare = 0, c->cap = a->n;
    c->pools[0].holes = c->pools[1].holes = NULL;
    c->pools[0].cap_holes = c->pools[1].cap_holes = 0;
    bool ok = !a->n || (c->b = malloc((size_t)a->n * sizeof *c->b)) != NULL;
    if (ok && a->n)
        memcpy(c->b, a->b, (size_t)a->n * sizeof *c->b);
    for (int k = 0; k < 2 && ok; k++) {
        const pool *pa = &a->pools[k];
        pool *pc = &c->pools[k];
        pc->n_holes = 0;
        if (pa->n_holes && !(pc->holes = malloc((size_t)pa->n_holes * sizeof *pc->holes)))
            ok = false;
        else if (pa->n_holes)
            memcpy(pc->holes, pa->holes, (size_t)pa->n_holes * sizeof *pc->holes);
        pc->n_holes = pc->cap_holes = ok ? pa->n_holes : 0;
    }
    if (!ok) {
        vf__talloc_free(c);
        return NULL;
    }
    settle(c);
    return c;
}

static bool dense(const vf__talloc *a)
{
    if (a->n_spare)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (!a->b[i].live)
            return false;
    return true;
}

vf__talloc *vf__talloc_clone(const vf__talloc *a) { return !a ? NULL : dense(a) ? copy_dense(a) : copy(a, true); }

bool vf__talloc_set_capacity(vf__talloc *a, uint64_t bytes)
{
    if (!a)
        return false;
    settle(a);
    a->capacity = bytes;
    a->allowed = a->frac_allowed && (!bytes || a->frac_allowed < bytes) ? a->frac_allowed : bytes;
    if (!a->allowed || a->st.reserved <= a->allowed)
        return true;
    release_cached(a); /* what is cached already is the first thing a failing cudaMalloc gives back */
    if (a->st.reserved <= a->allowed)
        return true;
    a->st.failed = true;
    return false;
}

vf__tstats vf__talloc_stats(const vf__talloc *a)
{
    vf__tstats s = {0};
    return a ? a->st : s;
}
