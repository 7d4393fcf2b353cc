/* train_replay_shard.c — the sharded layouts' part of the training replay:
 * ZeRO 1-3 (DeepSpeed), FSDP and offload, unit by unit (unit 0: what lies
 * outside the blocks; unit l + 1: block l, FSDP's transformer-layer wrap).
 * Each unit's parameters live as one flat tensor (FSDP's FlatParameter;
 * DeepSpeed flattens its groups too), its gradient shard and optimizer
 * states as flat tensors beside it. How much of each stays on this GPU is
 * the memory model's own share (train_dist.c: p->weights, p->grads,
 * p->optimizer over the unsharded sums), so ZeRO's stages and offload
 * enter the replay exactly as they enter the figure. ZeRO-3 and FSDP
 * FULL_SHARD gather each unit's parameters whole for its forward and again
 * for its backward, the next unit prefetched before the last is freed (two
 * alive; FSDP's root unit stays gathered from its forward to the end of the
 * backward, DeepSpeed's outside modules take their turn like a block); its
 * gradients are made unsharded (FSDP: the unit's flat gradient; DeepSpeed:
 * one parameter's at a time, copied into its bucket), reduce-scattered into
 * the shard and freed. DeepSpeed ZeRO-1/2 fill their contiguous gradient bucket
 * (reduce_bucket_size elements) through the backward; ZeRO-3 keeps its flat
 * reduce buffer. Docs: docs/memory-model.md "The replays". */
#include "memory/train/train_replay.h"

#include <stdlib.h>

typedef struct vf__shard {
    size_t n;                 /* units: L + 1 */
    uint64_t *full;           /* a unit's parameters gathered whole (bytes) */
    uint64_t *grad;           /* its gradients, unsharded */
    uint64_t *grad1;          /* its largest single gradient */
    uint64_t *master, *st0, *st1, *st2, *temp; /* its optimizer's flats, unsharded */
    double sw, sg, so, stemp; /* the shares on this GPU */
    bool gathers;             /* ZeRO-3 / FULL_SHARD */
    bool deepspeed;           /* not FSDP */
    uint32_t *gshard;         /* per unit, its gradient shard (0: none) */
    uint32_t gathered[2];     /* the last two blocks gathered */
    uint32_t root;            /* unit 0 gathered: FSDP's root is not resharded after its forward */
    uint32_t bucket;          /* DeepSpeed ZeRO-1/2's contiguous gradient bucket */
} vf__shard;

static double share(uint64_t part, uint64_t whole) { return whole ? (double)part / (double)whole : 0.0; }

static uint64_t scaled(uint64_t b, double f) { return (uint64_t)((double)b * f + 0.5); }

static size_t unit_of(const step_ctx *x, int32_t layer)
{
    return layer >= 0 && layer < (int32_t)x->L ? (size_t)layer + 1 : 0;
}

/* The per-unit sums: the pieces' (trainable) and under LoRA the frozen base. */
static void unit_sums(step_ctx *x, vf__shard *s, uint64_t tot[4])
{
    for (size_t i = 0; i < x->n_pc; i++) {
        const tpiece *p = &x->pc[i];
        size_t u = unit_of(x, p->layer);
        s->full[u] = vf__sadd(s->full[u], p->w);
        s->grad[u] = vf__sadd(s->grad[u], p->g);
        if (p->g1 > s->grad1[u])
            s->grad1[u] = p->g1;
        s->master[u] = vf__sadd(s->master[u], p->m);
        s->st0[u] = vf__sadd(s->st0[u], p->st[0]);
        s->st1[u] = vf__sadd(s->st1[u], p->st[1]);
        s->st2[u] = vf__sadd(s->st2[u], p->st[2]);
        s->temp[u] = vf__sadd(s->temp[u], p->temp);
    }
    for (size_t i = 0; x->c->lora && i < x->m->n_tensors; i++) {
        const vf_tensor *t = &x->m->tensors[i];
        if (vf__train_replay_trainable(t)) {
            size_t u = unit_of(x, t->layer);
            s->full[u] = vf__sadd(s->full[u], vf__train_frozen_bytes(x->c, x->t->qlora, t, t->n_params));
        }
    }
    for (size_t u = 0; u < s->n; u++) {
        tot[0] = vf__sadd(tot[0], s->full[u]);
        tot[1] = vf__sadd(tot[1], s->grad[u]);
        tot[2] = vf__sadd(tot[2], vf__sadd(s->master[u], vf__sadd(s->st0[u], vf__sadd(s->st1[u], s->st2[u]))));
        tot[3] = vf__sadd(tot[3], s->temp[u]);
    }
}

bool vf__shard_open(step_ctx *x)
{
    x->sh = NULL;
    if (x->c->zero < 1)
        return true;
    vf__shard *s = calloc(1, sizeof *s);
    if (!s)
        return false;
    x->sh = s;
    s->n = (size_t)x->L + 1;
    uint64_t **a[] = {&s->full, &s->grad, &s->grad1, &s->master, &s->st0, &s->st1, &s->st2, &s->temp};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++)
        if (!(*a[k] = calloc(s->n, sizeof **a[k])))
            return false;
    if (!(s->gshard = calloc(s->n, sizeof *s->gshard)))
        return false;
    uint64_t tot[4] = {0, 0, 0, 0};
    unit_sums(x, s, tot);
    const vf__tplace *p = x->p;
    s->gathers = x->c->zero >= 3;
    s->deepspeed = !x->t->fsdp;
    /* what stays resident: the ZeRO-3 partition (none when offloaded), else all */
    s->sw = share(p->weights, tot[0]);
    s->sg = share(p->grads, tot[1]);
    s->so = share(p->optimizer, tot[2]);
    s->stemp = share(p->step_temp, tot[3]);
    return true;
}

void vf__shard_close(step_ctx *x)
{
    vf__shard *s = x->sh;
    if (!s)
        return;
    free(s->full), free(s->grad), free(s->grad1), free(s->master), free(s->st0), free(s->st1), free(s->st2), free(s->temp);
    free(s->gshard);
    free(s);
    x->sh = NULL;
}

void vf__shard_load(step_ctx *x)
{
    vf__shard *s = x->sh;
    for (size_t i = 0; i < x->m->n_tensors; i++) {
        const vf_tensor *t = &x->m->tensors[i];
        if ((t->flags & VF_TENSOR_NOT_PARAM) && !(t->flags & VF_TENSOR_MTP))
            vf__replay_alloc(x->r, t->n_bytes);
    }
    for (size_t u = 0; u < s->n; u++)
        vf__replay_alloc(x->r, scaled(s->full[u], s->sw));
    if (s->gathers && s->deepspeed) /* stage 3's flat reduce buffer */
        vf__replay_alloc(x->r, vf__smul(VF__DS_REDUCE_BUCKET, x->c->g_bytes));
}

void vf__shard_gather(step_ctx *x, uint32_t u)
{
    vf__shard *s = x->sh;
    if (!s || !s->gathers || u >= s->n)
        return;
    if (u == 0 && !s->deepspeed) {
        if (!s->root)
            s->root = vf__replay_alloc(x->r, s->full[0]);
        return;
    }
    uint32_t h = vf__replay_alloc(x->r, s->full[u]);
    vf__replay_free(x->r, s->gathered[0]);
    s->gathered[0] = s->gathered[1];
    s->gathered[1] = h;
}

void vf__shard_release(step_ctx *x)
{
    vf__shard *s = x->sh;
    if (!s)
        return;
    vf__replay_free(x->r, s->gathered[1]);
    vf__replay_free(x->r, s->gathered[0]);
    s->gathered[0] = s->gathered[1] = 0;
}

void vf__shard_backward(step_ctx *x, bool begin)
{
    vf__shard *s = x->sh;
    if (!s)
        return;
    if (!begin) { /* the root's gathered parameters go with the backward */
        vf__replay_free(x->r, s->root);
        s->root = 0;
    }
    if (!s->deepspeed || s->gathers)
        return;
    if (begin && !s->bucket)
        s->bucket = vf__replay_alloc(x->r, x->p->bwd_buffers);
    if (!begin) {
        vf__replay_free(x->r, s->bucket);
        s->bucket = 0;
    }
}

void vf__shard_grads(step_ctx *x, uint32_t u)
{
    vf__shard *s = x->sh;
    if (!s || u >= s->n || !s->grad[u])
        return;
    uint64_t shard = scaled(s->grad[u], s->sg);
    bool whole = shard >= s->grad[u];
    /* unsharded first, then reduced into the shard: FSDP's flat gradient of
     * the unit; DeepSpeed copies each parameter's into its bucket as it is
     * made, so one at a time (the largest) */
    uint32_t full = whole ? 0 : vf__replay_alloc(x->r, s->deepspeed ? s->grad1[u] : s->grad[u]);
    if (s->gshard[u]) /* accumulated: the new shard added into the kept one */
        vf__replay_free(x->r, vf__replay_alloc(x->r, shard));
    else
        s->gshard[u] = vf__replay_alloc(x->r, shard);
    vf__replay_free(x->r, full);
}

void vf__shard_step(step_ctx *x)
{
    vf__shard *s = x->sh;
    if (!x->states_made)
        for (size_t u = 0; u < s->n; u++) {
            vf__replay_alloc(x->r, scaled(s->master[u], s->so));
            vf__replay_alloc(x->r, scaled(s->st0[u], s->so));
            vf__replay_alloc(x->r, scaled(s->st1[u], s->so));
            vf__replay_alloc(x->r, scaled(s->st2[u], s->so));
        }
    x->states_made = true;
    /* the step's temporaries, one unit's at a time (DeepSpeed's fused step: none) */
    for (size_t u = 0; u < s->n; u++)
        vf__replay_free(x->r, vf__replay_alloc(x->r, scaled(s->temp[u], s->stemp)));
    /* zero_grad(set_to_none): the shards dropped, as the memory model has no
     * gradient alive through the next forward */
    if (x->c->grads_kept)
        return;
    for (size_t u = 0; u < s->n; u++) {
        vf__replay_free(x->r, s->gshard[u]);
        s->gshard[u] = 0;
    }
}
