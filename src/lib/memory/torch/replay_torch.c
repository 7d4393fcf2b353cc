/* replay_torch.c — the pieces every PyTorch replay shares: the allocator
 * opened with the process's settings, tensors in pieces, the weights as a
 * load places them, and the figures a replay yields. */
#include "memory/torch/replay_torch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

vf_status vf__replay_open(vf__replay *r, const vf_estimate_opts *o, vf_error *err)
{
    memset(r, 0, sizeof *r);
    vf_status st = vf__tconf_parse(o->alloc_conf, &r->conf, err);
    if (st != VF_OK)
        return st;
    r->device_bytes = o->gpu_bytes;
    r->a = vf__talloc_new(&r->conf, o->gpu_bytes);
    if (!r->a)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    return VF_OK;
}

void vf__replay_close(vf__replay *r)
{
    vf__talloc_free(r->a);
    r->a = NULL;
}

vf__tstats vf__replay_stats(const vf__replay *r) { return r->kept ? r->stats : vf__talloc_stats(r->a); }

uint32_t vf__replay_alloc(vf__replay *r, uint64_t bytes)
{
    if (!bytes || r->broken)
        return 0;
    if (r->on_request)
        r->on_request(r->on_request_ctx, bytes, vf__talloc_stats(r->a).allocated);
    uint32_t h = vf__talloc_malloc(r->a, bytes);
    if (!h) {
        r->broken = true;
        r->oom = vf__talloc_stats(r->a).failed;
    }
    if (bytes > r->largest)
        r->largest = bytes;
    if (r->tracking && h) {
        vf__tstats s = vf__talloc_stats(r->a);
        r->track_allocated = s.allocated > r->track_allocated ? s.allocated : r->track_allocated;
        r->track_reserved = s.reserved > r->track_reserved ? s.reserved : r->track_reserved;
    }
    return h;
}

/* A tensor never freed (the weights), with no handle. */
static void replay_place(vf__replay *r, uint64_t bytes)
{
    if (!bytes || r->broken)
        return;
    if (!vf__talloc_place(r->a, bytes)) {
        r->broken = true;
        r->oom = vf__talloc_stats(r->a).failed;
    }
}

bool vf__replay_apply_capacity(vf__replay *r)
{
    if (!r->capacity || r->broken)
        return !r->oom;
    if (!vf__talloc_set_capacity(r->a, r->capacity))
        r->broken = r->oom = true;
    return !r->oom;
}

void vf__replay_free(vf__replay *r, uint32_t h)
{
    if (h)
        vf__talloc_release(r->a, h);
}

void vf__replay_pieces(vf__replay *r, uint64_t bytes, uint64_t piece, uint32_t *h, size_t cap, size_t *n)
{
    *n = 0;
    if (!bytes || !cap)
        return;
    if (!piece || piece > bytes)
        piece = bytes;
    uint64_t count = bytes / piece;
    if (count > cap)
        count = cap;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t sz = i + 1 == count ? bytes - piece * (count - 1) : piece;
        h[(*n)++] = vf__replay_alloc(r, sz);
    }
}

void vf__replay_free_all(vf__replay *r, uint32_t *h, size_t *n)
{
    for (size_t i = *n; i-- > 0;)
        vf__replay_free(r, h[i]);
    *n = 0;
}

/* The allocator after a model's weights, one entry per way of loading them
 * (scheme, kept dtype, share, training bytes, allocator settings): a fit
 * runs hundreds of estimates of one model, and replaying ~90k tensors each
 * time (DeepSeek-V3) would be most of its time. Entries are frozen
 * (alloc_torch.c): each estimate continues from a clone. Bounded: past
 * MEMO_MAX entries a model's loads are replayed every time. */
#define MEMO_MAX 64

typedef struct vf__rmemo {
    struct vf__rmemo *next;
    char scheme[32];
    vf_dtype keep;
    double share;
    uint32_t train_bytes;
    vf__tconf conf;
    vf__talloc *frozen;
} vf__rmemo;

static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static const char memo_key = 0; /* names this file's memo on the model */

static void memo_free(void *p)
{
    vf__rmemo *l = p;
    while (l) {
        vf__rmemo *next = l->next;
        vf__talloc_free(l->frozen);
        free(l);
        l = next;
    }
}

static bool same_conf(const vf__tconf *a, const vf__tconf *b)
{
    return a->max_split == b->max_split && a->roundup_div == b->roundup_div && a->gc_threshold == b->gc_threshold &&
           a->fraction == b->fraction && a->expandable == b->expandable && a->async_backend == b->async_backend;
}

static const vf__rmemo *memo_find(const vf_model *m, const vf__rmemo *key, size_t *n)
{
    *n = 0;
    for (const vf__rmemo *l = vf__model_memo(m, &memo_key); l; l = l->next, (*n)++)
        if (l->keep == key->keep && l->share == key->share && l->train_bytes == key->train_bytes &&
            !strcmp(l->scheme, key->scheme) && same_conf(&l->conf, &key->conf))
            return l;
    return NULL;
}

/* Every tensor, in file order, as the load places it. */
static void load_tensors(vf__replay *r, const vf_model *m, const char *scheme, vf_dtype keep, double share,
                         uint32_t train_bytes)
{
    vf__pricer p;
    if (vf__pricer_init(&p, m, train_bytes ? "" : scheme, keep, NULL) != VF_OK) {
        r->broken = true;
        return;
    }
    for (size_t i = 0; i < m->n_tensors && !r->broken; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & VF_TENSOR_MTP)
            continue;
        if (train_bytes) { /* parameters at the training precision, buffers as stored */
            bool param = !(t->flags & VF_TENSOR_NOT_PARAM);
            replay_place(r, param ? vf__smul(t->n_params, train_bytes) : t->n_bytes);
            continue;
        }
        bool q;
        uint64_t b = (uint64_t)((double)vf__pricer_tensor(&p, i, &q) * share);
        /* bitsandbytes / GPTQ loads move the 16-bit tensor to the GPU and
         * quantize it there (Params4bit / Int8Params .cuda()) */
        uint32_t src = q && !p.gguf ? vf__replay_alloc(r, (uint64_t)((double)t->n_bytes * share)) : 0;
        if (src) {
            vf__replay_alloc(r, b);
            vf__replay_free(r, src);
        } else {
            replay_place(r, b);
        }
    }
    vf__pricer_free(&p);
}

void vf__replay_weights(vf__replay *r, const vf_model *m, const char *scheme, vf_dtype keep, double share,
                        uint32_t train_bytes)
{
    vf__rmemo key = {.keep = keep, .share = share, .train_bytes = train_bytes, .conf = r->conf};
    snprintf(key.scheme, sizeof key.scheme, "%s", scheme ? scheme : "");
    size_t n;
    pthread_mutex_lock(&memo_lock);
    const vf__rmemo *hit = memo_find(m, &key, &n);
    vf__talloc *c = hit ? vf__talloc_clone(hit->frozen) : NULL;
    pthread_mutex_unlock(&memo_lock);
    r->largest = 0; /* the load's requests are not the step's */
    if (c) {
        vf__talloc_free(r->a);
        r->a = c;
        return;
    }
    load_tensors(r, m, key.scheme, keep, share, train_bytes);
    r->largest = 0;
    if (r->broken || hit || n >= MEMO_MAX)
        return;
    vf__rmemo *e = malloc(sizeof *e);
    if (!e || !(key.frozen = vf__talloc_freeze(r->a))) {
        free(e);
        return;
    }
    *e = key;
    pthread_mutex_lock(&memo_lock);
    if (!memo_find(m, &key, &n)) {
        e->next = vf__model_memo(m, &memo_key);
        if (vf__model_memo_set(m, &memo_key, e, memo_free))
            e = NULL;
    }
    pthread_mutex_unlock(&memo_lock);
    if (e) {
        vf__talloc_free(e->frozen);
        free(e);
    }
}

void vf__replay_finish(vf__replay *r, vf_estimate *e, uint64_t allocated, uint64_t context, uint64_t outside)
{
    vf__tstats s = vf__replay_stats(r);
    uint64_t slack = 0;
    if (!r->broken && s.peak_reserved > s.peak_allocated)
        slack = s.peak_reserved - s.peak_allocated;
    if (!r->broken && s.peak_allocated > allocated)
        allocated = s.peak_allocated;
    vf__device_set(e, allocated, vf__sadd(allocated, slack), context, outside);
    /* The margin: a request the replay serves from a cached block may find
     * none in the real run (another order of frees, a kernel's workspace);
     * the allocator then frees its unused cached segments and asks cudaMalloc
     * for a new segment of the request's size. Room for the step's largest
     * request keeps that from being the one that fails. */
    if (!r->own_margin)
        e->margin_bytes = vf__talloc_segment_bytes(r->largest);
    if (!r->own_margin && e->margin_bytes)
        vf__assume(e, "margin = %.0f MiB free kept by fit: a new allocator segment for the step's largest "
                      "request (%.0f MiB)", (double)e->margin_bytes / (1 << 20), (double)r->largest / (1 << 20));
    const vf__tconf *c = &r->conf;
    if (c->async_backend)
        vf__assume(e, "allocator = backend:cudaMallocAsync: the driver's pool is not replayed; the native "
                      "allocator's figure stands in");
    char ms[40] = "none";
    if (c->max_split != UINT64_MAX)
        snprintf(ms, sizeof ms, "%llu MiB", (unsigned long long)(c->max_split >> 20));
    vf__assume(e, "caching allocator = replayed (CUDACachingAllocator.cpp rules): %.0f MiB cached beside the "
                  "allocated peak; expandable_segments %s, max_split_size %s%s",
               (double)slack / (1 << 20), c->expandable ? "on" : "off", ms,
               c->gc_threshold > 0 ? ", garbage_collection_threshold acts only with a memory fraction (not set)" : "");
    if (r->broken)
        vf__assume(e, "caching allocator = replay incomplete (host memory): reserved taken as allocated");
    vf__explain(e, "allocator replay: %llu segments, allocated peak %llu B, reserved peak %llu B",
                (unsigned long long)s.segments, (unsigned long long)s.peak_allocated,
                (unsigned long long)s.peak_reserved);
}
