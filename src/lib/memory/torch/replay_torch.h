/* replay_torch.h — a PyTorch process's allocations, in order and with their
 * lifetimes, played into the caching allocator model (alloc_torch.c) to find
 * what it reserves beside what it allocates (hidden). */
#ifndef VF_REPLAY_TORCH_H
#define VF_REPLAY_TORCH_H

#include "memory/torch/alloc_torch.h"
#include "memory/infer.h"

typedef struct vf__replay {
    vf__talloc *a;
    vf__tconf conf;
    bool broken;    /* the replay stopped: host memory ran out (its figures are not used), or oom */
    bool oom;       /* a request failed on the device's capacity after the cached blocks were freed */
    bool own_margin; /* the caller sets the fit margin itself (replay_finish leaves it) */
    uint64_t capacity; /* the device's memory for the allocator, set once the weights are placed; 0 = unbounded */
    uint64_t largest; /* the largest request after the weights (the step's) */
    uint64_t device_bytes; /* the device's memory (a memory fraction's limit is its share) */
    bool kept;      /* the figures are a kept replay's (stats), not a's */
    vf__tstats stats;
    /* while tracking: the allocated and reserved peaks of this stretch alone
     * (torch.cuda.reset_peak_memory_stats before it), e.g. an evaluation step */
    bool tracking;
    uint64_t track_allocated, track_reserved;
    /* a recorder (tests): told each request's bytes, in the order the replay
     * makes them, and the bytes allocated before it; NULL: none */
    void (*on_request)(void *ctx, uint64_t bytes, uint64_t allocated);
    void *on_request_ctx;
} vf__replay;

/* Opens a replay with the process's PYTORCH_CUDA_ALLOC_CONF (o->alloc_conf). */
VF_HIDDEN vf_status vf__replay_open(vf__replay *r, const vf_estimate_opts *o, vf_error *err);
VF_HIDDEN void vf__replay_close(vf__replay *r);
/* The allocator's figures: a's, or the kept ones of an identical replay. */
VF_HIDDEN vf__tstats vf__replay_stats(const vf__replay *r);
/* The capacity applied to the allocator (after the load): false on oom. */
VF_HIDDEN bool vf__replay_apply_capacity(vf__replay *r);
/* torch allocates bytes (0 is no allocation and returns 0). */
VF_HIDDEN uint32_t vf__replay_alloc(vf__replay *r, uint64_t bytes);
VF_HIDDEN void vf__replay_free(vf__replay *r, uint32_t h);
/* bytes as tensors of at most piece bytes each, their handles into h[0..*n)
 * (at most cap); a rest beyond cap pieces joins the last one. */
VF_HIDDEN void vf__replay_pieces(vf__replay *r, uint64_t bytes, uint64_t piece, uint32_t *h, size_t cap, size_t *n);
VF_HIDDEN void vf__replay_free_all(vf__replay *r, uint32_t *h, size_t *n);
/* The weights as a load places them on one GPU: one allocation per tensor
 * in file order (never freed: vf__talloc_place), each scaled by share (tensor parallel), and for a quantizing
 * load the tensor's 16-bit source beside its quantized copy until it is
 * quantized; train_bytes > 0: every parameter at that many bytes (the
 * training precision), buffers as stored. Multi-token-prediction tensors
 * are not loaded. Kept with the model once replayed (frozen) and continued
 * from a copy after. */
VF_HIDDEN void vf__replay_weights(vf__replay *r, const vf_model *m, const char *scheme, vf_dtype keep, double share,
                                  uint32_t train_bytes);

/* transformers' generate(), as the memory model describes it: the weights,
 * the cuBLAS workspace, the prefill (the 4-D mask under eager attention, the
 * hidden states, each layer's K and V entering the DynamicCache, then its
 * attention and MLP temporaries), the logits, and the decode steps, where
 * DynamicCache.update's torch.cat makes each layer's K and V anew one token
 * longer and frees the old ones (strided to a bounded number of steps). */
typedef struct vf__gen_shape {
    uint64_t b, q, ctx;            /* sequences, prefill tokens, tokens at the end */
    vf_dtype kt, vt;               /* cache dtypes */
    uint32_t tp;
    double share;                  /* of the weights on this GPU */
    const char *scheme;            /* --weights */
    vf_dtype keep;
    uint64_t cublas;               /* workspaces, on the allocator */
    uint64_t mask;                 /* eager: the 4-D causal mask, else 0 */
    uint64_t hidden;               /* one hidden-state tensor of the prefill */
    uint64_t att[4];               /* one layer's attention temporaries */
    uint64_t mlp[3];               /* its MLP temporaries */
    uint64_t deq;                  /* a 4-bit matrix dequantized for a prefill matmul */
    uint64_t logits[2];            /* model dtype and fp32 */
    uint64_t step_logits[2];       /* per decode step */
} vf__gen_shape;
VF_HIDDEN void vf__replay_generate(vf__replay *r, const vf_model *m, const vf__gen_shape *g);

/* The device figures from a replay: the memory model's allocated peak (what
 * its components sum to, checked against torch.cuda.max_memory_allocated)
 * plus the replay's cached-but-unallocated bytes at its reserved peak; then
 * the context and what lives outside the allocator. Notes the allocator
 * settings in the assumptions. */
VF_HIDDEN void vf__replay_finish(vf__replay *r, vf_estimate *e, uint64_t allocated, uint64_t context,
                                 uint64_t outside);

#endif
