/* test_train_traces.c — the caching allocator model on the device's size,
 * against 51 allocation traces of real training steps (two steps and an eval
 * step of small Llama/Gemma/Qwen-like models, full fine-tuning in fp32 and
 * bf16, LoRA, a kbit-prepared QLoRA stand-in, checkpointing, chunked loss,
 * accumulation), recorded by torch 1.13's profiler
 * (tests/reference/train-runs/trace.py, README there). Each trace's events
 * are replayed in order through alloc_torch.c with a capacity (the OOM path:
 * release the unused cached segments, retry, fail) and the test asserts
 * which capacities succeed:
 *  - below the trace's live peak with each request rounded to 512 bytes
 *    (kMinBlockSize; summed here from the trace, not by the allocator) no
 *    allocator can serve it: the replay must fail;
 *  - at the reserved peak of the same replay without a limit it must
 *    succeed, with the allocated peak at least the trace's rounded peak and
 *    the reserved peak never above the capacity;
 *  - the smallest capacity that succeeds (bisected to 64 KiB) lies between
 *    the two; the allocator's own sizes (2 MiB small segments, 20 MiB
 *    segments for 1-10 MiB requests) bound how far above the live peak it may
 *    be: at most the largest request's segment plus one of each pool's
 *    segments per tensor size class the trace keeps alive, which the test
 *    takes as 2 x (2 + 20) MiB + the largest segment.
 * The whole trace, setup rows included (parameters, inputs: what lives before
 * the window), is replayed from an empty allocator. */
#include "testutil.h"
#include "memory/torch/alloc_torch.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACES "tests/reference/train-runs/traces"
#define MiB ((uint64_t)1 << 20)

typedef struct ev {
    int64_t bytes; /* > 0 alloc, < 0 free */
    int64_t id;
} ev;

typedef struct trace {
    ev *e;
    size_t n;
    int64_t max_id;
    uint64_t peak_rounded; /* live bytes at the peak, each request rounded up to 512 */
    uint64_t largest;      /* the largest request */
} trace;

static uint64_t round512(uint64_t v) { return v < 512 ? 512 : (v + 511) / 512 * 512; }

static void load(const char *path, trace *t)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    memset(t, 0, sizeof *t);
    size_t cap = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        long long b, id;
        if (sscanf(line, "%lld\t%lld", &b, &id) != 2)
            continue;
        if (t->n == cap) {
            cap = cap ? 2 * cap : 4096;
            t->e = realloc(t->e, cap * sizeof *t->e);
            assert_non_null(t->e);
        }
        t->e[t->n++] = (ev){b, id};
        if (id > t->max_id)
            t->max_id = id;
    }
    fclose(f);
    assert_true(t->n > 0);
    /* the independent figure: live bytes as the allocator rounds each request */
    uint64_t *size = calloc((size_t)t->max_id + 1, sizeof *size);
    assert_non_null(size);
    uint64_t live = 0;
    for (size_t i = 0; i < t->n; i++) {
        const ev *x = &t->e[i];
        if (x->id < 0)
            continue;
        if (x->bytes > 0) {
            size[x->id] = round512((uint64_t)x->bytes);
            live += size[x->id];
            if (live > t->peak_rounded)
                t->peak_rounded = live;
            if ((uint64_t)x->bytes > t->largest)
                t->largest = (uint64_t)x->bytes;
        } else {
            live -= size[x->id];
            size[x->id] = 0;
        }
    }
    free(size);
}

/* Replays t on capacity bytes (0: no limit); true when no request failed. */
static bool replay(const trace *t, uint64_t capacity, vf__tstats *out)
{
    vf__tconf c;
    vf__tconf_default(&c);
    vf__talloc *a = vf__talloc_new(&c, 0);
    assert_non_null(a);
    assert_true(vf__talloc_set_capacity(a, capacity));
    uint32_t *h = calloc((size_t)t->max_id + 1, sizeof *h);
    assert_non_null(h);
    bool ok = true;
    for (size_t i = 0; i < t->n && ok; i++) {
        const ev *x = &t->e[i];
        if (x->id < 0)
            continue;
        if (x->bytes > 0) {
            h[x->id] = vf__talloc_malloc(a, (uint64_t)x->bytes);
            ok = h[x->id] != 0;
        } else {
            vf__talloc_release(a, h[x->id]);
            h[x->id] = 0;
        }
    }
    *out = vf__talloc_stats(a);
    assert_true(ok == !out->failed);
    free(h);
    vf__talloc_free(a);
    return ok;
}

static void check_trace(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", TRACES, name);
    trace t;
    load(path, &t);
    vf__tstats free_run, s;
    assert_true(replay(&t, 0, &free_run));
    /* a large-pool block is split only when more than 1 MiB would remain (should_split): the rest stays in
     * the block and counts as allocated, as in torch.cuda.max_memory_allocated */
    assert_true(free_run.peak_allocated >= t.peak_rounded);
    /* below the live peak: nothing can serve it */
    assert_false(replay(&t, t.peak_rounded - 512, &s));
    assert_false(replay(&t, t.peak_rounded * 9 / 10, &s));
    /* at the free run's reserved peak: the same run, nothing to release */
    assert_true(replay(&t, free_run.peak_reserved, &s));
    assert_int_equal(s.peak_reserved, free_run.peak_reserved);
    /* the smallest capacity that succeeds */
    uint64_t lo = t.peak_rounded - 512, hi = free_run.peak_reserved;
    while (hi - lo > 64 * 1024) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (replay(&t, mid, &s)) {
            assert_true(s.peak_reserved <= mid);
            assert_true(s.peak_allocated >= t.peak_rounded);
            hi = mid;
        } else {
            lo = mid;
        }
    }
    uint64_t bound = t.peak_rounded + 2 * (2 + 20) * MiB + vf__talloc_segment_bytes(t.largest);
    if (hi > bound)
        fail_msg("%s: needs %llu B on the device, live peak %llu B, bound %llu B", name, (unsigned long long)hi,
                 (unsigned long long)t.peak_rounded, (unsigned long long)bound);
    assert_true(hi >= t.peak_rounded);
    /* under the limit the allocator gives back what it cached: never above the free run */
    assert_true(hi <= free_run.peak_reserved);
    free(t.e);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void test_traces_fit_where_the_allocator_can(void **state)
{
    (void)state;
    DIR *d = opendir(TRACES);
    assert_non_null(d);
    char *names[128];
    size_t n = 0;
    for (struct dirent *de; (de = readdir(d)) && n < 128;) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".tsv") && strcmp(de->d_name, "summary.tsv"))
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    assert_int_equal(n, 51);
    for (size_t i = 0; i < n; i++) {
        check_trace(names[i]);
        free(names[i]);
    }
}

/* A capacity below what the weights already reserve: after the cached
 * segments are given back the allocator still holds more, so it fails. */
static void test_capacity_below_what_is_held_fails(void **state)
{
    (void)state;
    vf__talloc *a = vf__talloc_new(NULL, 0);
    assert_non_null(a);
    uint32_t w = vf__talloc_malloc(a, 64 * MiB), t = vf__talloc_malloc(a, 32 * MiB);
    assert_true(w && t);
    vf__talloc_release(a, t); /* cached: a whole 32 MiB segment */
    assert_true(vf__talloc_set_capacity(a, 80 * MiB)); /* the cached one goes back */
    assert_int_equal(vf__talloc_stats(a).reserved, 64 * MiB);
    assert_false(vf__talloc_set_capacity(a, 60 * MiB));
    vf__talloc_free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traces_fit_where_the_allocator_can),
        cmocka_unit_test(test_capacity_below_what_is_held_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
