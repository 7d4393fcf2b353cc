/* test_alloc_place.c — vf__talloc_place (the weights: allocations never
 * freed, kept in fewer blocks) against vf__talloc_malloc on the same random
 * sequences: weights placed between temporaries that are allocated and freed,
 * empty_cache calls, under several allocator settings (max_split_size,
 * power-of-two rounding, a memory fraction with garbage collection, a
 * capacity that takes the OOM path). After every step both allocators must
 * show the same figures; then their freezes, and clones of those, must go on
 * alike through a further random sequence. A state that differed in any
 * cached block would, over thousands of requests of every size, show it. */
#include "testutil.h"
#include "memory/torch/alloc_torch.h"

#define MiB ((uint64_t)1 << 20)
#define TEMPS 64

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Sizes as models have them: runs of one size, small, medium, large. */
static uint64_t size_of(uint64_t *s)
{
    switch (rnd(s) % 4) {
    case 0: return 1 + rnd(s) % MiB;
    case 1: return MiB + rnd(s) % (9 * MiB);
    case 2: return 10 * MiB + rnd(s) % (90 * MiB);
    default: return (rnd(s) % 8 + 1) * 688128; /* a few sizes that repeat */
    }
}

static void same(const vf__talloc *x, const vf__talloc *y)
{
    vf__tstats a = vf__talloc_stats(x), b = vf__talloc_stats(y);
    assert_int_equal(a.allocated, b.allocated);
    assert_int_equal(a.reserved, b.reserved);
    assert_int_equal(a.peak_allocated, b.peak_allocated);
    assert_int_equal(a.peak_reserved, b.peak_reserved);
    assert_int_equal(a.segments, b.segments);
    assert_int_equal(a.device_allocs, b.device_allocs);
    assert_int_equal(a.failed, b.failed);
    assert_int_equal(a.failed_request, b.failed_request);
}

/* Temporaries allocated and freed on both (handles apart), n steps. */
static void temps(vf__talloc *x, vf__talloc *y, uint64_t *s, int n)
{
    uint32_t hx[TEMPS] = {0}, hy[TEMPS] = {0};
    for (int k = 0; k < n; k++) {
        unsigned t = (unsigned)(rnd(s) % TEMPS);
        if (hx[t] || hy[t]) {
            vf__talloc_release(x, hx[t]);
            vf__talloc_release(y, hy[t]);
            hx[t] = hy[t] = 0;
        } else {
            uint64_t z = size_of(s);
            hx[t] = vf__talloc_malloc(x, z);
            hy[t] = vf__talloc_malloc(y, z);
        }
        same(x, y);
    }
}

static void run(const vf__tconf *c, uint64_t device, uint64_t capacity, uint64_t seed)
{
    vf__talloc *x = vf__talloc_new(c, device), *y = vf__talloc_new(c, device);
    assert_non_null(x);
    assert_non_null(y);
    if (capacity) {
        vf__talloc_set_capacity(x, capacity);
        vf__talloc_set_capacity(y, capacity);
    }
    uint64_t s = seed;
    uint32_t hx[TEMPS] = {0}, hy[TEMPS] = {0};
    for (int k = 0; k < 3000; k++) {
        uint64_t r = rnd(&s) % 16, z = size_of(&s);
        if (r < 10) { /* a run of weights of one size */
            for (uint64_t n = rnd(&s) % 6 + 1; n--;) {
                bool ok = vf__talloc_place(y, z);
                assert_int_equal(vf__talloc_malloc(x, z) != 0, ok);
                same(x, y);
            }
        } else if (r < 15) {
            unsigned t = (unsigned)(rnd(&s) % TEMPS);
            if (hx[t] || hy[t]) {
                vf__talloc_release(x, hx[t]);
                vf__talloc_release(y, hy[t]);
                hx[t] = hy[t] = 0;
            } else {
                hx[t] = vf__talloc_malloc(x, z);
                hy[t] = vf__talloc_malloc(y, z);
                assert_int_equal(hx[t] != 0, hy[t] != 0);
            }
        } else {
            vf__talloc_empty_cache(x);
            vf__talloc_empty_cache(y);
        }
        same(x, y);
    }
    for (unsigned t = 0; t < TEMPS; t++) {
        vf__talloc_release(x, hx[t]);
        vf__talloc_release(y, hy[t]);
    }
    same(x, y);
    vf__talloc *fx = vf__talloc_freeze(x), *fy = vf__talloc_freeze(y);
    assert_non_null(fx);
    assert_non_null(fy);
    for (int k = 0; k < 3; k++) {
        vf__talloc *cx = vf__talloc_clone(fx), *cy = vf__talloc_clone(fy);
        assert_non_null(cx);
        assert_non_null(cy);
        temps(cx, cy, &s, 2000);
        vf__talloc_free(cx);
        vf__talloc_free(cy);
    }
    temps(x, y, &s, 2000); /* the unfrozen ones, with the weights' blocks */
    vf__talloc_free(fx);
    vf__talloc_free(fy);
    vf__talloc_free(x);
    vf__talloc_free(y);
}

static void test_place_as_malloc(void **state)
{
    (void)state;
    vf__tconf c;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        vf__tconf_default(&c);
        run(&c, 0, 0, seed * 0x9e3779b97f4a7c15u);
        run(&c, 0, 4096 * MiB, seed * 0x2545f4914f6cdd1du); /* the OOM path */
        assert_int_equal(vf__tconf_parse("max_split_size_mb:40", &c, NULL), VF_OK);
        run(&c, 0, 0, seed * 31 + 7);
        assert_int_equal(vf__tconf_parse("roundup_power2_divisions:4", &c, NULL), VF_OK);
        run(&c, 0, 0, seed * 131 + 3);
        assert_int_equal(vf__tconf_parse("garbage_collection_threshold:0.6", &c, NULL), VF_OK);
        c.fraction = 0.5;
        run(&c, 16384 * MiB, 0, seed * 1031 + 5);
        assert_int_equal(vf__tconf_parse("expandable_segments:True", &c, NULL), VF_OK);
        run(&c, 0, 8192 * MiB, seed * 7 + 1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_place_as_malloc)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
