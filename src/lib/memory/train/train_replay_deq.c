/* train_replay_deq.c — QLoRA's dequantization in the replay, shared by the
 * training step (train_replay.c) and the evaluation step
 * (train_replay_eval.c): both run every 4-bit matmul through it. */
#include "memory/train/train_replay.h"

/* bitsandbytes' matmul_4bit: the weight dequantized to 16 bit for the
 * matmul, freed after it (quantized from fp16 under a bf16 compute: the fp16
 * copy and its bf16 cast alive together). */
void vf__train_dequantize(step_ctx *x, uint32_t l)
{
    for (size_t k = x->deq_first[l]; k < x->deq_first[l + 1]; k++) {
        uint32_t a = vf__replay_alloc(x->r, x->deq[k]);
        uint32_t b = x->c->bnb_fp16_quant ? vf__replay_alloc(x->r, x->deq[k]) : 0;
        vf__replay_free(x->r, a);
        vf__replay_free(x->r, b);
    }
}
