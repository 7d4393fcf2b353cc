/* train_peak.c — the peak of one steady-state training step and its moment.
 * What is alive at the start of a step (weights, optimizer state, buffers,
 * communication buckets, the batch) plus, at each moment: the end of the
 * forward (saved activations + the logits and their fp32 copy), the start of
 * backward (the loss's fp32 gradients), inside a block's backward (attention
 * gradients), the end of backward (every gradient + the embedding's), and the
 * optimizer step (gradients + the step's temporaries). Gradients of earlier
 * micro-batches stay alive under gradient accumulation. */
#include "memory/train/train_internal.h"

#include <stdio.h>

static uint64_t sub_sat(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

uint64_t vf__train_peak(const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, vf_recompute rc,
                        uint64_t *temp, char *phase, size_t phase_len, vf_estimate *e)
{
    const uint64_t tp = c->tp;
    const uint64_t inputs = 2 * 8 * c->T; /* input ids and labels, int64 */
    const uint64_t base = p->weights + p->optimizer + p->buffers + p->comm_buffers + inputs + acts->held / tp;
    const uint64_t A = p->activations, G = p->grads;
    /* gradients alive through the forward: earlier micro-batches' under
     * accumulation, or the last step's when zero_grad keeps them */
    const uint64_t acc = c->accum > 1 || c->grads_kept ? G : 0;

    /* LitGPT under old bitsandbytes: the previous micro-batch's 4-bit inputs
     * at the end of the forward, this one's after its backward */
    uint64_t fwd_t = (acts->fwd_temp + acts->held_fwd) / tp;
    uint64_t fwd = A + acc + fwd_t;

    const uint64_t bb = p->bwd_buffers;
    uint64_t bs_t = acts->bwd_start / tp + bb;
    uint64_t bs = A + acc + bs_t;
    /* the last block's backward (recomputed first under full recomputation):
     * at its MLP, then at its attention; gradients are sharded like the rest */
    uint64_t gs = acts->grads_head + acts->grads_mlp;
    double gshare = gs ? (double)G / (double)gs : 0.0; /* cap: never more than all gradients */
    uint64_t g_head = acts->grads_head / tp, g_mlp = acts->grads_mlp / tp;
    if (gshare < 1.0) {
        g_head = (uint64_t)((double)g_head * gshare);
        g_mlp = (uint64_t)((double)g_mlp * gshare);
    }
    uint64_t recomputed = rc == VF_RECOMPUTE_FULL ? acts->layer / tp : 0;
    uint64_t at_mlp = sub_sat(A + recomputed, acts->freed_head / tp) + acc + g_head;
    uint64_t at_attn = sub_sat(at_mlp, acts->freed_mlp / tp) + g_mlp;
    uint64_t bm_t = acts->bwd_mlp / tp + bb, ba_t = acts->bwd_attn / tp + bb;
    uint64_t bl = at_mlp + bm_t, bl_t = bm_t + recomputed;
    if (at_attn + ba_t > bl)
        bl = at_attn + ba_t, bl_t = ba_t + recomputed;
    uint64_t be_t = (acts->bwd_end + acts->held_after) / tp + bb;
    uint64_t be = G + be_t;
    uint64_t opt = G + p->step_temp + acts->held_after / tp;

    uint64_t best = fwd, t = fwd_t;
    const char *ph = "end of forward";
    if (bs > best)
        best = bs, t = bs_t, ph = "start of backward";
    if (bl > best)
        best = bl, t = bl_t, ph = "backward (last block)";
    if (be > best)
        best = be, t = be_t, ph = "end of backward";
    if (opt > best)
        best = opt, t = p->step_temp, ph = "optimizer step";
    snprintf(phase, phase_len, "%s", ph);
    *temp = t;
    vf__explain(e, "at step start: weights %llu + optimizer %llu + buffers %llu + comm %llu + batch %llu",
                (unsigned long long)p->weights, (unsigned long long)p->optimizer, (unsigned long long)p->buffers,
                (unsigned long long)p->comm_buffers, (unsigned long long)inputs);
    vf__explain(e, "moments above that: forward %llu, backward start %llu, in-block %llu, end %llu, step %llu",
                (unsigned long long)fwd, (unsigned long long)bs, (unsigned long long)bl, (unsigned long long)be,
                (unsigned long long)opt);
    return base + best;
}
