/* train_replay.h — what the training replay's files share (train_replay.c
 * plays the step; train_replay_shard.c the sharded layouts' parts of it:
 * ZeRO, FSDP, offload). */
#ifndef VF_TRAIN_REPLAY_H
#define VF_TRAIN_REPLAY_H

#include "memory/torch/replay_torch.h"
#include "memory/train/train_internal.h"

/* One trainable tensor as the allocator meets it (its block, -1 outside;
 * its weight, gradient, optimizer states as allocated and one step
 * temporary, in bytes), or under LoRA a run of adapters of one block made
 * and freed together, requested as one of at most SMALL_RUN bytes: the small
 * pool they fall in either way (kSmallSize), tens of thousands fewer
 * requests for a model with many experts. */
typedef struct tpiece {
    int32_t layer;
    bool emb;
    uint64_t w, g, temp;
    uint64_t st[3]; /* AdamW: exp_avg, exp_avg_sq and the step tensor; else one */
    uint64_t g1;    /* a run's largest single gradient (AccumulateGrad's new one) */
    uint64_t m;     /* its fp32 master copy in the optimizer (mixed precision; sharded layouts) */
    uint8_t use;    /* where its block's forward uses it (grad_order): the backward makes the later first */
} tpiece;

#define SMALL_RUN ((uint64_t)1 << 20)

/* A parameter that trains when all do: not a buffer, not a multi-token-prediction tensor (not loaded). */
static inline bool vf__train_replay_trainable(const vf_tensor *t)
{
    return !(t->flags & (VF_TENSOR_NOT_PARAM | VF_TENSOR_MTP));
}

typedef struct step_ctx {
    vf__replay *r;
    const vf_model *m;
    const vf_train_opts *t;
    const vf__tcfg *c;
    const vf__tacts *acts;
    const vf__tplace *p;
    uint32_t L;
    uint64_t u;       /* one hidden-sized activation, act x tokens x hidden */
    uint64_t uff;     /* one intermediate-sized one, act x tokens x ff */
    uint64_t ltv;     /* one fp32 logits-sized tensor */
    tpiece *pc;       /* the trainable pieces, in the optimizer's order */
    size_t n_pc;
    uint32_t *grads;  /* per piece, 0 when none */
    size_t *by_layer;   /* the pieces of block l - 1 (0: outside) in order, */
    size_t *first;      /* from by_layer[first[l]] to by_layer[first[l + 1]] */
    uint64_t *deq;      /* QLoRA: per block, its 4-bit matrices' dequantized bytes */
    size_t *deq_first;  /* block l's from deq[deq_first[l]] to deq[deq_first[l + 1]] */
    bool states_made;
    struct vf__shard *sh; /* ZeRO / FSDP / offload: the per-unit layout, else NULL */
} step_ctx;

/* bytes as tensors of piece bytes made one after another (at most 64), each
 * freed once the two after it exist: an op's input dies after the next op
 * read it (the recomputed forward, and the eval step under no_grad). */
static inline void vf__train_stream(step_ctx *x, uint64_t bytes, uint64_t piece, uint32_t win[2])
{
    if (!bytes)
        return;
    if (!piece || piece > bytes)
        piece = bytes;
    uint64_t count = bytes / piece < 64 ? bytes / piece : 64;
    for (uint64_t i = 0; i < count && !x->r->broken; i++) {
        uint32_t h = vf__replay_alloc(x->r, i + 1 == count ? bytes - piece * (count - 1) : piece);
        vf__replay_free(x->r, win[0]);
        win[0] = win[1], win[1] = h;
    }
}

/* The sharded layouts (ZeRO 1-3, FSDP, offload), unit by unit: unit 0 is
 * what lies outside the blocks, unit l + 1 block l. shard_open: false on no
 * host memory (x->sh stays NULL when the layout is not sharded). */
VF_HIDDEN bool vf__shard_open(step_ctx *x);
VF_HIDDEN void vf__shard_close(step_ctx *x);
/* The model as its sharded flat parameters, one per unit, and its buffers. */
VF_HIDDEN void vf__shard_load(step_ctx *x);
/* ZeRO-3 / FSDP FULL_SHARD: unit u's parameters gathered (a block's: the
 * one before last freed once it is, two alive, the prefetch; unit 0's kept
 * to the end of the backward); release frees the blocks still gathered. */
VF_HIDDEN void vf__shard_gather(step_ctx *x, uint32_t u);
VF_HIDDEN void vf__shard_release(step_ctx *x);
/* Backward begins / ends (DeepSpeed ZeRO-1/2's contiguous gradient bucket;
 * at the end unit 0's gathered parameters are freed). */
VF_HIDDEN void vf__shard_backward(step_ctx *x, bool begin);
/* Unit u's gradients: unsharded, reduce-scattered into its shard, freed. */
VF_HIDDEN void vf__shard_grads(step_ctx *x, uint32_t u);
/* optimizer.step() on the shards, then zero_grad. */
VF_HIDDEN void vf__shard_step(step_ctx *x);
/* QLoRA: block l's 4-bit matrices dequantized for its matmuls, each freed after. */
VF_HIDDEN void vf__train_dequantize(step_ctx *x, uint32_t l);
/* The evaluation step after the training steps (train_replay_eval.c), its
 * peaks tracked on x->r (track_allocated, track_reserved). */
VF_HIDDEN void vf__train_eval_step(step_ctx *x);

#endif
