/* train_replay_eval.c — the evaluation step, played after the training
 * steps on the same allocator (the segments they cached stay cached).
 * transformers' Trainer.evaluate -> evaluation_loop -> prediction_step runs
 * the model under torch.no_grad() on per_device_eval_batch_size sequences:
 * no tensor is saved for a backward and no gradient is made, so each op's
 * output dies once the next op has read it; the weights, the optimizer
 * states and what the step keeps stay resident. The loss is still computed
 * (the batch carries labels): the logits at the activation dtype, their
 * fp32 copy (ForCausalLMLoss: logits.float()) and cross_entropy's
 * log_softmax output alive together beside the final hidden state. With no
 * compute_metrics, evaluate() passes prediction_loss_only=True and the
 * logits are not gathered across batches (trainer.py evaluate). */
#include "memory/train/train_replay.h"

/* bytes scaled from the training micro-batch (b sequences) to the eval
 * batch (be): every term is linear in the batch at a fixed sequence. */
static uint64_t at_eval(const step_ctx *x, uint64_t bytes)
{
    uint64_t b = x->c->b ? x->c->b : 1;
    return vf__smul(bytes, x->t->eval_batch) / b;
}

/* One block under no_grad: its residual input alive through it, the tensors
 * its training forward makes (the s^2 scores first under eager attention,
 * the hidden-sized ones, the MLP's intermediate-width ones) streamed, then
 * its output replaces the input. */
static uint32_t eval_block(step_ctx *x, uint32_t l, uint32_t h)
{
    const vf__tacts *A = x->acts;
    uint64_t sc = A->scores_kept > A->scores_recomputed ? A->scores_kept : A->scores_recomputed;
    if (sc > A->layer)
        sc = A->layer;
    uint64_t ff = A->ff_kept < A->layer - sc ? A->ff_kept : A->layer - sc;
    uint64_t u = at_eval(x, x->u), uff = at_eval(x, x->uff);
    uint32_t win[2] = {0, 0};
    vf__shard_gather(x, l + 1);
    vf__train_dequantize(x, l);
    vf__train_stream(x, at_eval(x, sc), at_eval(x, vf__smul(A->attn_scores, x->c->act)), win);
    vf__train_stream(x, at_eval(x, A->layer - sc - ff), u, win);
    vf__train_stream(x, at_eval(x, ff), uff, win);
    vf__replay_free(x->r, win[0]);
    vf__replay_free(x->r, win[1]);
    uint32_t out = vf__replay_alloc(x->r, u);
    vf__replay_free(x->r, h);
    return out;
}

void vf__train_eval_step(step_ctx *x)
{
    vf__replay *r = x->r;
    const vf__tcfg *c = x->c;
    uint64_t T = at_eval(x, c->T), u = at_eval(x, x->u);
    r->tracking = true;
    vf__tstats now = vf__talloc_stats(r->a); /* reset_peak_memory_stats */
    r->track_allocated = now.allocated;
    r->track_reserved = now.reserved;
    uint32_t ids = vf__replay_alloc(r, 8 * T), labels = vf__replay_alloc(r, 8 * T);
    vf__shard_gather(x, 0);
    uint32_t h = vf__replay_alloc(r, u); /* the embeddings' output */
    for (uint32_t l = 0; l < x->L && !r->broken; l++)
        h = eval_block(x, l, h);
    vf__shard_release(x);
    uint32_t hn = vf__replay_alloc(r, u); /* the final norm's output, alive through the loss */
    vf__replay_free(r, h);
    /* the loss: logits, their fp32 copy and log_softmax's output (one
     * chunk's under a chunked loss; the fused loss never makes them whole) */
    uint64_t tv = at_eval(x, x->acts->logits_tv), f32 = at_eval(x, x->ltv);
    uint32_t lg = c->loss == VF_LOSS_FUSED ? 0 : vf__replay_alloc(r, vf__smul(tv, c->act));
    uint32_t cp = vf__replay_alloc(r, f32), ls = vf__replay_alloc(r, f32);
    vf__replay_free(r, ls);
    vf__replay_free(r, cp);
    vf__replay_free(r, lg);
    vf__replay_free(r, hn);
    vf__shard_backward(x, false); /* the root's gathered parameters freed */
    vf__replay_free(r, labels);
    vf__replay_free(r, ids);
    r->tracking = false;
}
