/* test_alloc_torch.c — the caching allocator replay against traces worked
 * out by hand from c10/cuda/CUDACachingAllocator.cpp (each expected figure
 * is derived in the comment above it, from the source's constants: 512 B
 * rounding, 2 MiB small segments for <= 1 MiB, 20 MiB segments below 10 MiB,
 * 2 MiB rounding above, splits only when more than 1 MiB remains). */
#include "testutil.h"

#include "memory/torch/alloc_torch.h"

#define MiB ((uint64_t)1 << 20)

static vf__talloc *fresh(const char *conf, uint64_t device)
{
    vf__tconf c;
    assert_int_equal(vf__tconf_parse(conf, &c, NULL), VF_OK);
    vf__talloc *a = vf__talloc_new(&c, device);
    assert_non_null(a);
    return a;
}

static void test_rounding(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    /* round_size: below kMinBlockSize -> 512, else up to a multiple of 512 */
    assert_int_equal(vf__talloc_round(a, 1), 512);
    assert_int_equal(vf__talloc_round(a, 512), 512);
    assert_int_equal(vf__talloc_round(a, 513), 1024);
    assert_int_equal(vf__talloc_round(a, MiB + 1), MiB + 512);
    vf__talloc_free(a);
    /* roundup_power2_divisions:4 — 9000 lies in [8192, 16384): steps of
     * 2048, so 10240; 512-byte rounding would give 9216. At or below
     * 512 x 4 = 2048 B the plain rule holds: 1200 -> 1536. */
    a = fresh("roundup_power2_divisions:4", 0);
    assert_int_equal(vf__talloc_round(a, 9000), 10240);
    assert_int_equal(vf__talloc_round(a, 1200), 1536);
    assert_int_equal(vf__talloc_round(a, 8192), 8192);
    vf__talloc_free(a);
}

static void test_small_pool(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    /* 1000 B -> 1024 B block in a fresh 2 MiB segment; the second one is
     * split from the cached 2 MiB - 1024 B rest: still one segment */
    uint32_t x = vf__talloc_malloc(a, 1000), y = vf__talloc_malloc(a, 1000);
    vf__tstats s = vf__talloc_stats(a);
    assert_true(x && y);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.allocated, 2048);
    assert_int_equal(s.segments, 1);
    /* exactly 1 MiB is still "small" (get_pool: size <= kSmallSize) */
    vf__talloc_malloc(a, MiB);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.allocated, MiB + 2048);
    /* a 2048 B rest cannot take another 1 MiB: a second segment */
    vf__talloc_malloc(a, MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 4 * MiB);
    vf__talloc_free(a);
}

static void test_large_pool(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    /* 5 MiB (< 10 MiB): a 20 MiB segment, split; four of them fill it, the
     * fifth opens a second segment */
    for (int i = 0; i < 4; i++)
        vf__talloc_malloc(a, 5 * MiB);
    vf__tstats s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 20 * MiB);
    assert_int_equal(s.allocated, 20 * MiB);
    vf__talloc_malloc(a, 5 * MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 40 * MiB);
    vf__talloc_free(a);

    /* 11 MiB: a 12 MiB segment (2 MiB rounding); 1 MiB would remain, not more
     * than kSmallSize, so no split: the whole 12 MiB is allocated (what
     * max_memory_allocated counts) */
    a = fresh("", 0);
    vf__talloc_malloc(a, 11 * MiB);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 12 * MiB);
    assert_int_equal(s.allocated, 12 * MiB);
    vf__talloc_free(a);

    /* 10.5 MiB: 12 MiB segment, 1.5 MiB remains (> 1 MiB): split; a later
     * 1.25 MiB request (large pool) is served from that rest, which it takes
     * whole (0.25 MiB would remain): 12 MiB allocated in all */
    a = fresh("", 0);
    vf__talloc_malloc(a, 10 * MiB + MiB / 2);
    s = vf__talloc_stats(a);
    assert_int_equal(s.allocated, 10 * MiB + MiB / 2);
    vf__talloc_malloc(a, MiB + MiB / 4);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 12 * MiB);
    assert_int_equal(s.segments, 1);
    assert_int_equal(s.allocated, 12 * MiB);
    vf__talloc_free(a);
}

static void test_reuse_and_merge(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    /* a freed 30 MiB block is cached and serves 28 MiB (2 MiB rest split off) */
    uint32_t x = vf__talloc_malloc(a, 30 * MiB);
    vf__talloc_release(a, x);
    vf__tstats s = vf__talloc_stats(a);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(s.reserved, 30 * MiB); /* cached, not given back */
    vf__talloc_malloc(a, 28 * MiB);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 30 * MiB);
    assert_int_equal(s.allocated, 28 * MiB);
    assert_int_equal(s.peak_reserved, 30 * MiB);
    vf__talloc_free(a);

    /* two 5 MiB blocks of one 20 MiB segment, freed, merge with the 10 MiB
     * rest into the whole segment, which then serves a 20 MiB request */
    a = fresh("", 0);
    uint32_t p = vf__talloc_malloc(a, 5 * MiB), q = vf__talloc_malloc(a, 5 * MiB);
    vf__talloc_release(a, p);
    vf__talloc_release(a, q);
    vf__talloc_malloc(a, 20 * MiB);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 20 * MiB);
    assert_int_equal(s.allocated, 20 * MiB);
    /* a freed block whose neighbours are in use stays apart: 8 + 8 + 4
     * MiB, the middle one freed cannot serve 10 MiB */
    vf__talloc_free(a);
    a = fresh("", 0);
    vf__talloc_malloc(a, 8 * MiB);
    uint32_t mid = vf__talloc_malloc(a, 8 * MiB);
    vf__talloc_malloc(a, 4 * MiB);
    vf__talloc_release(a, mid);
    vf__talloc_malloc(a, 10 * MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 30 * MiB);
    vf__talloc_free(a);
}

static void test_max_split(void **state)
{
    (void)state;
    vf__talloc *a = fresh("max_split_size_mb:100", 0);
    /* a cached 200 MiB block is oversize: a 50 MiB request may not split it
     * (a new 50 MiB segment), a 190 MiB one takes it whole (200 < 190 + 20) */
    uint32_t x = vf__talloc_malloc(a, 200 * MiB);
    vf__talloc_release(a, x);
    vf__talloc_malloc(a, 50 * MiB);
    vf__tstats s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 250 * MiB);
    vf__talloc_malloc(a, 190 * MiB);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 250 * MiB);
    assert_int_equal(s.allocated, 250 * MiB); /* not split: 200 MiB allocated */
    vf__talloc_free(a);
    /* but 170 MiB does not: 200 >= 170 + 20 */
    a = fresh("max_split_size_mb:100", 0);
    x = vf__talloc_malloc(a, 200 * MiB);
    vf__talloc_release(a, x);
    vf__talloc_malloc(a, 170 * MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 370 * MiB);
    vf__talloc_free(a);
}

static void test_expandable(void **state)
{
    (void)state;
    /* 5 MiB maps one 20 MiB page; 30 MiB then uses the free 15 MiB at the
     * end and maps one more page (15 MiB missing -> 20): 40 MiB reserved,
     * where separate segments take 20 + 30 = 50 */
    vf__talloc *a = fresh("expandable_segments:True", 0);
    vf__talloc_malloc(a, 5 * MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 20 * MiB);
    vf__talloc_malloc(a, 30 * MiB);
    vf__tstats s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 40 * MiB);
    assert_int_equal(s.allocated, 35 * MiB);
    vf__talloc_free(a);
    a = fresh("", 0);
    vf__talloc_malloc(a, 5 * MiB);
    vf__talloc_malloc(a, 30 * MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 50 * MiB);
    vf__talloc_free(a);
    /* the small pool's pages are 2 MiB: a 1 MiB request maps one */
    a = fresh("expandable_segments:True", 0);
    vf__talloc_malloc(a, MiB);
    assert_int_equal(vf__talloc_stats(a).reserved, 2 * MiB);
    vf__talloc_free(a);
}

/* Expandable segments under a device limit (release_blocks -> unmap_block;
 * find_expandable_block, map_block): the large pool's pages are 20 MiB,
 * counted from the range's start (0 below).
 *   A 30 maps [0,40); B 30 takes the free [30,40) and maps [40,60); C 30
 *   maps [60,100): reserved 100. A and C freed: [0,30) and [60,100) cached.
 *   Capacity 110. D 50: no cached block holds it; the free [60,100) plus one
 *   more page would reserve 120 > 110, so every cached block's whole pages
 *   are unmapped ([60,100) whole, [0,20) of [0,30)): reserved 40. Retry: the
 *   hole [0,20) and the free [20,30) hold 30 < 50 before B; the hole at 60
 *   maps 3 pages: D = [60,110), reserved 100, allocated 80.
 * Without the unmapping nothing is unsplit (B shares the range), so D fails;
 * the same requests in separate segments release A's and C's (fits too). Then
 * D freed and empty_cache: [60,120) unmapped, [20,30) has no whole page:
 * reserved 40 (B's pages [20,60)). */
static void test_expandable_oom_path(void **state)
{
    (void)state;
    vf__talloc *a = fresh("expandable_segments:True", 0);
    uint32_t A = vf__talloc_malloc(a, 30 * MiB), B = vf__talloc_malloc(a, 30 * MiB);
    uint32_t C = vf__talloc_malloc(a, 30 * MiB);
    assert_true(A && B && C);
    assert_int_equal(vf__talloc_stats(a).reserved, 100 * MiB);
    vf__talloc_release(a, A);
    vf__talloc_release(a, C);
    assert_true(vf__talloc_set_capacity(a, 110 * MiB));
    uint32_t D = vf__talloc_malloc(a, 50 * MiB);
    assert_true(D != 0);
    vf__tstats s = vf__talloc_stats(a);
    assert_false(s.failed);
    assert_int_equal(s.reserved, 100 * MiB);
    assert_int_equal(s.allocated, 80 * MiB);
    assert_int_equal(s.peak_reserved, 100 * MiB);
    vf__talloc_release(a, D);
    vf__talloc_empty_cache(a);
    assert_int_equal(vf__talloc_stats(a).reserved, 40 * MiB);
    /* a copy keeps the holes: the same D again maps the hole at 60 */
    vf__talloc *c = vf__talloc_clone(a);
    assert_non_null(c);
    assert_true(vf__talloc_malloc(c, 50 * MiB) != 0);
    assert_int_equal(vf__talloc_stats(c).reserved, 100 * MiB);
    vf__talloc_free(c);
    vf__talloc_free(a);
}

static void test_empty_cache_and_limits(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    uint32_t x = vf__talloc_malloc(a, 30 * MiB);
    vf__talloc_release(a, x);
    vf__talloc_empty_cache(a);
    vf__tstats s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(s.peak_reserved, 30 * MiB);
    vf__talloc_free(a);

    /* a memory fraction: 0.5 of 100 MiB allows 50; 60 MiB fails */
    vf__tconf c;
    vf__tconf_default(&c);
    c.fraction = 0.5;
    a = vf__talloc_new(&c, 100 * MiB);
    assert_int_equal(vf__talloc_malloc(a, 60 * MiB), 0);
    assert_true(vf__talloc_stats(a).failed);
    vf__talloc_free(a);
    /* under the limit a cached 30 MiB block is given back before failing:
     * 30 cached + 40 > 50, so release_cached_blocks, then 40 fits */
    a = vf__talloc_new(&c, 100 * MiB);
    x = vf__talloc_malloc(a, 30 * MiB);
    vf__talloc_release(a, x);
    assert_true(vf__talloc_malloc(a, 40 * MiB) != 0);
    s = vf__talloc_stats(a);
    assert_int_equal(s.reserved, 40 * MiB);
    assert_int_equal(s.peak_reserved, 40 * MiB);
    vf__talloc_free(a);
    /* garbage_collection_threshold:0.2 with the whole 100 MiB allowed: 30
     * MiB reserved is above 20 MiB, so the cached block is collected before
     * the 40 MiB cudaMalloc (peak 40); without it the peak is 70 */
    assert_int_equal(vf__tconf_parse("garbage_collection_threshold:0.2", &c, NULL), VF_OK);
    c.fraction = 1.0;
    a = vf__talloc_new(&c, 100 * MiB);
    x = vf__talloc_malloc(a, 30 * MiB);
    vf__talloc_release(a, x);
    vf__talloc_malloc(a, 40 * MiB);
    assert_int_equal(vf__talloc_stats(a).peak_reserved, 40 * MiB);
    vf__talloc_free(a);
    c.gc_threshold = 0;
    a = vf__talloc_new(&c, 100 * MiB);
    x = vf__talloc_malloc(a, 30 * MiB);
    vf__talloc_release(a, x);
    vf__talloc_malloc(a, 40 * MiB);
    assert_int_equal(vf__talloc_stats(a).peak_reserved, 70 * MiB);
    vf__talloc_free(a);
}

static void test_conf_parsing(void **state)
{
    (void)state;
    vf__tconf c;
    vf_error err = {0};
    assert_int_equal(vf__tconf_parse("max_split_size_mb:128,expandable_segments:True", &c, &err), VF_OK);
    assert_int_equal(c.max_split, 128 * MiB);
    assert_true(c.expandable);
    assert_int_equal(vf__tconf_parse("garbage_collection_threshold:0.6, max_split_size_mb:20", &c, &err), VF_OK);
    assert_true(c.gc_threshold > 0.59 && c.gc_threshold < 0.61);
    /* what PyTorch rejects: max_split_size_mb below 20, a threshold outside
     * (0, 1), an unknown key, a value without its key */
    const char *bad[] = {"max_split_size_mb:19", "garbage_collection_threshold:1.0", "garbage_collection_threshold:0",
                         "expandable_segments:yes", "frobnicate:1", "max_split_size_mb", ":3",
                         "roundup_power2_divisions:3", "max_split_size_mb:-5", "max_split_size_mb:99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(vf__tconf_parse(bad[i], &c, &err), VF_EINVAL);
        assert_non_null(strstr(err.msg, "--alloc-conf"));
    }
    assert_int_equal(vf__tconf_parse("backend:cudaMallocAsync", &c, &err), VF_OK);
    assert_true(c.async_backend);
}

/* A freeze (the state after the weights, replayed once per model) behaves
 * as the allocator it was taken from: the same operations after it give the
 * same figures, step by step, in both layouts. */
static void test_freeze_behaves_alike(void **state)
{
    (void)state;
    const char *confs[] = {"", "expandable_segments:True", "max_split_size_mb:20"};
    for (size_t c = 0; c < 3; c++) {
        vf__talloc *a = fresh(confs[c], 0);
        /* "weights": a split 20 MiB segment, an unsplit 12 MiB one, a small
         * block, a 12 MiB segment with a 1.5 MiB rest */
        vf__talloc_malloc(a, 5 * MiB);
        vf__talloc_malloc(a, 11 * MiB);
        vf__talloc_malloc(a, 1000);
        vf__talloc_malloc(a, 10 * MiB + MiB / 2);
        vf__talloc *f = vf__talloc_freeze(a);
        assert_non_null(f);
        vf__talloc *both[2] = {a, f};
        uint32_t h[2][3];
        for (int k = 0; k < 2; k++) {
            vf__talloc *x = both[k];
            h[k][0] = vf__talloc_malloc(x, 3 * MiB);
            h[k][1] = vf__talloc_malloc(x, 12 * MiB);
            vf__talloc_release(x, h[k][0]);
            h[k][2] = vf__talloc_malloc(x, MiB + MiB / 4);
            vf__talloc_release(x, h[k][1]);
            vf__talloc_release(x, h[k][2]);
            vf__talloc_malloc(x, 30 * MiB);
            vf__talloc_malloc(x, 2000);
        }
        vf__tstats sa = vf__talloc_stats(a), sf = vf__talloc_stats(f);
        assert_int_equal(sa.allocated, sf.allocated);
        assert_int_equal(sa.reserved, sf.reserved);
        assert_int_equal(sa.peak_reserved, sf.peak_reserved);
        vf__talloc_empty_cache(a);
        vf__talloc_empty_cache(f);
        sa = vf__talloc_stats(a), sf = vf__talloc_stats(f);
        assert_int_equal(sa.reserved, sf.reserved);
        assert_int_equal(sa.segments, sf.segments);
        vf__talloc *g = vf__talloc_clone(f);
        assert_non_null(g);
        assert_int_equal(vf__talloc_stats(g).reserved, sf.reserved);
        vf__talloc_free(g);
        vf__talloc_free(f);
        vf__talloc_free(a);
    }
}

/* A cache of thousands of blocks (a training step caches a gradient per
 * tensor): get_free_block still takes the smallest block that fits, the
 * lowest address among equal sizes (BlockComparatorSize), whatever order
 * they were freed in. Blocks of k x 2 MiB (k = 10..10+N-1, each >= 10 MiB:
 * a segment of exactly its size, never split), twice over: the second set
 * lies at higher addresses. */
#define MANY 3000
static void test_many_cached_blocks(void **state)
{
    (void)state;
    vf__talloc *a = fresh("", 0);
    static uint32_t h[2][MANY];
    for (int set = 0; set < 2; set++)
        for (uint32_t k = 0; k < MANY; k++)
            assert_true((h[set][k] = vf__talloc_malloc(a, (10 + (uint64_t)k) * 2 * MiB)) != 0);
    uint64_t segs = vf__talloc_stats(a).segments;
    assert_int_equal(segs, 2 * MANY);
    /* freed in a scrambled order (k -> k x 1237 mod MANY is a permutation: 1237 is prime, MANY is not its multiple) */
    for (int set = 1; set >= 0; set--)
        for (uint32_t k = 0; k < MANY; k++)
            vf__talloc_release(a, h[set][(k * 1237u) % MANY]);
    assert_int_equal(vf__talloc_stats(a).allocated, 0);
    /* an exact size: the first set's block (lower address), then the second's */
    assert_int_equal(vf__talloc_malloc(a, 500 * 2 * MiB), h[0][490]);
    assert_int_equal(vf__talloc_malloc(a, 500 * 2 * MiB), h[1][490]);
    /* between sizes: the next larger size (k = 491), lower address first */
    assert_int_equal(vf__talloc_malloc(a, 500 * 2 * MiB - 4096), h[0][491]);
    assert_int_equal(vf__talloc_malloc(a, 500 * 2 * MiB - 4096), h[1][491]);
    assert_int_equal(vf__talloc_malloc(a, 500 * 2 * MiB - 4096), h[0][492]);
    /* the largest two go, then a larger request makes a new segment */
    assert_int_equal(vf__talloc_malloc(a, (10 + MANY - 1) * 2 * MiB), h[0][MANY - 1]);
    assert_int_equal(vf__talloc_malloc(a, (10 + MANY - 1) * 2 * MiB), h[1][MANY - 1]);
    assert_int_equal(vf__talloc_stats(a).segments, segs);
    vf__talloc_malloc(a, (10 + MANY - 1) * 2 * MiB);
    assert_int_equal(vf__talloc_stats(a).segments, segs + 1);
    /* empty_cache returns every cached (unsplit) block: the 7 taken and the new one stay */
    vf__talloc_empty_cache(a);
    assert_int_equal(vf__talloc_stats(a).segments, 8);
    vf__talloc_free(a);
}

/* What decided the 8B full fine-tune on an H100 (docs/memory-model.md,
 * "Order of the gradients"): gradients packed into a cached segment, an
 * optimizer state made while they live, then the gradients freed and a
 * request of the segment's size. By the source's rules:
 * - malloc(100 MiB) makes a 100 MiB segment (>= 10 MiB: rounded to 2 MiB);
 *   freed, it is one cached block.
 * - two 40 MiB gradients split it (best fit: the only cached block; more
 *   than 1 MiB remains each time): [0,40) [40,80), 20 MiB cached behind.
 * A: an 8 MiB state takes the 20 MiB tail (the smallest cached block that
 *   holds it), 12 MiB stays behind it. The gradients freed merge into
 *   [0,80), but the segment is split: 100 MiB again finds no block and
 *   cudaMalloc makes a second segment (200 MiB reserved); under 150 MiB
 *   release_cached_blocks has nothing unsplit to give back and it fails.
 * B: a 16 MiB gradient took the tail first ([80,96), 4 MiB behind: split,
 *   more than 1 MiB remains). The 8 MiB state finds no block and gets a
 *   20 MiB segment of its own (below 10 MiB: kLargeBuffer): 120 MiB. The
 *   three gradients freed merge the first segment back whole, and 100 MiB
 *   is served from it: 120 MiB reserved, under 150 MiB. */
static void tail_case(bool tail_taken, uint64_t capacity, bool *fits, uint64_t *reserved)
{
    vf__talloc *a = fresh("", 0);
    assert_true(vf__talloc_set_capacity(a, capacity));
    vf__talloc_release(a, vf__talloc_malloc(a, 100 * MiB));
    uint32_t g[3] = {vf__talloc_malloc(a, 40 * MiB), vf__talloc_malloc(a, 40 * MiB), 0};
    if (tail_taken)
        g[2] = vf__talloc_malloc(a, 16 * MiB);
    uint32_t st = vf__talloc_malloc(a, 8 * MiB);
    assert_true(g[0] && g[1] && st && (g[2] || !tail_taken));
    for (int k = 0; k < 3; k++)
        vf__talloc_release(a, g[k]);
    *fits = vf__talloc_malloc(a, 100 * MiB) != 0;
    *reserved = vf__talloc_stats(a).reserved;
    vf__talloc_free(a);
}

static void test_state_in_a_gradient_tail(void **state)
{
    (void)state;
    bool fits;
    uint64_t res;
    tail_case(false, 0, &fits, &res);
    assert_true(fits);
    assert_int_equal(res, 200 * MiB);
    tail_case(false, 150 * MiB, &fits, &res);
    assert_false(fits);
    tail_case(true, 0, &fits, &res);
    assert_true(fits);
    assert_int_equal(res, 120 * MiB);
    tail_case(true, 150 * MiB, &fits, &res);
    assert_true(fits);
    assert_int_equal(res, 120 * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),   cmocka_unit_test(test_small_pool),         cmocka_unit_test(test_large_pool),
        cmocka_unit_test(test_reuse_and_merge), cmocka_unit_test(test_max_split),     cmocka_unit_test(test_expandable), cmocka_unit_test(test_expandable_oom_path),
        cmocka_unit_test(test_empty_cache_and_limits), cmocka_unit_test(test_conf_parsing),
        cmocka_unit_test(test_freeze_behaves_alike), cmocka_unit_test(test_many_cached_blocks),
        cmocka_unit_test(test_state_in_a_gradient_tail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
