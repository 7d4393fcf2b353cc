/* alloc_torch.h — PyTorch's CUDA caching allocator, replayed (hidden).
 * The rules are those of c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator):
 * sizes rounded to 512 B (or to power-of-two divisions), requests of <= 1 MiB
 * from a small pool of 2 MiB segments, larger ones from a large pool (a 20 MiB
 * segment below 10 MiB, else the request rounded to 2 MiB), best-fit reuse of
 * cached blocks, splitting and merging, nothing given back to the driver
 * unless asked (empty_cache) or a limit forces it. docs/memory-model.md,
 * "The caching allocator". */
#ifndef VF_ALLOC_TORCH_H
#define VF_ALLOC_TORCH_H

#include "memory/memory.h"

/* PYTORCH_CUDA_ALLOC_CONF, parsed. */
typedef struct vf__tconf {
    uint64_t max_split;    /* max_split_size_mb in bytes; UINT64_MAX = unlimited (the default) */
    uint32_t roundup_div;  /* roundup_power2_divisions; 0 or 1 = plain 512-byte rounding */
    double gc_threshold;   /* garbage_collection_threshold; 0 = off */
    double fraction;       /* torch.cuda.set_per_process_memory_fraction; 0 = not set */
    bool expandable;       /* expandable_segments:True */
    bool async_backend;    /* backend:cudaMallocAsync (not replayed: the driver's pool) */
} vf__tconf;

VF_HIDDEN void vf__tconf_default(vf__tconf *c);
/* "key:value,key:value" as PyTorch's tokenizer reads it; VF_EINVAL with the
 * offending key in err for what PyTorch itself rejects. */
VF_HIDDEN vf_status vf__tconf_parse(const char *s, vf__tconf *c, vf_error *err);

typedef struct vf__talloc vf__talloc;

typedef struct vf__tstats {
    uint64_t allocated, reserved;           /* now */
    uint64_t peak_allocated, peak_reserved; /* torch.cuda.max_memory_allocated / max_memory_reserved */
    uint64_t segments, device_allocs;       /* segments now; cudaMalloc (or page map) calls */
    bool failed;                            /* a request found no memory under the limit (fraction, capacity) */
    uint64_t failed_request;                /* the bytes it asked for */
} vf__tstats;

/* device_bytes: the device's memory, for a memory fraction (0 = unlimited).
 * NULL on no host memory. */
VF_HIDDEN vf__talloc *vf__talloc_new(const vf__tconf *c, uint64_t device_bytes);
VF_HIDDEN void vf__talloc_free(vf__talloc *a);
/* torch allocates size bytes: returns a handle (> 0), 0 when the replay ran
 * out of host memory or the request failed under the limit (stats.failed). */
VF_HIDDEN uint32_t vf__talloc_malloc(vf__talloc *a, uint64_t size);
/* torch allocates size bytes that are never freed (the weights): as
 * malloc, with no handle; false where malloc would return 0. */
VF_HIDDEN bool vf__talloc_place(vf__talloc *a, uint64_t size);
/* The tensor behind handle h is freed (its block goes back to the cache). */
VF_HIDDEN void vf__talloc_release(vf__talloc *a, uint32_t h);
/* torch.cuda.empty_cache(): unsplit cached segments go back to the driver. */
VF_HIDDEN void vf__talloc_empty_cache(vf__talloc *a);
VF_HIDDEN vf__tstats vf__talloc_stats(const vf__talloc *a);
/* The device's memory for this allocator (device minus the CUDA context and
 * what lives outside it; 0 = unbounded): past it cudaMalloc fails, and the
 * allocator frees its unused cached segments and retries before the request
 * fails (the OOM path). false when what is reserved already does not fit
 * even after that (stats.failed). */
VF_HIDDEN bool vf__talloc_set_capacity(vf__talloc *a, uint64_t bytes);
/* A copy that behaves as a does from here on (NULL on no host memory; a's
 * handles do not carry over). A freeze drops the allocated blocks, which must then never be freed — the
 * state after the weights, kept to replay many estimates from. */
VF_HIDDEN vf__talloc *vf__talloc_clone(const vf__talloc *a);
VF_HIDDEN vf__talloc *vf__talloc_freeze(const vf__talloc *a);
/* The segment a request of n bytes makes when no cached block holds it
 * (get_allocation_size after 512-byte rounding); 0 for 0. */
VF_HIDDEN uint64_t vf__talloc_segment_bytes(uint64_t n);
/* The size a request of n bytes occupies in its block (round_size). */
VF_HIDDEN uint64_t vf__talloc_round(const vf__talloc *a, uint64_t n);

#endif
