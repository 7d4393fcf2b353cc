/* train_litgpt.c — what LitGPT's fine-tuning scripts keep beyond the generic
 * saved-tensor inventory of train_act.c, each from the source that makes it
 * (Lightning-AI/litgpt@00af8b0d, Lightning Fabric 2.4, bitsandbytes 0.42,
 * PyTorch 2.x autograd; docs/memory-model.md "LitGPT and old bitsandbytes"). */
#include "memory/train/train_internal.h"

/* lm_head_chunk_size in litgpt/finetune/lora.py fit(): model(input_ids, lm_head_chunk_size=128) */
#define LITGPT_HEAD_CHUNK 128u

/* Extra saved bytes of one block's fused q/k/v path. */
uint64_t vf__litgpt_qkv_saved(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s)
{
    const uint64_t T = c->T, act = c->act;
    const uint64_t qdim = (uint64_t)a->n_heads * a->head_dim, kvdim = (uint64_t)a->n_kv_heads * a->head_dim;
    uint64_t x = 0;
    /* CausalSelfAttention.forward: with one query per group (n_query_groups
     * == n_head) nothing is expanded and v.reshape(B, -1, T, hs) only merges
     * a size-1 dimension, so v stays a view of the fused qkv output and the
     * tensor SDPA saves pins all of it: q's and k's columns stay alive beside
     * the roped copies of q and k */
    if (a->n_kv_heads == a->n_heads)
        x += act * T * (qdim + kvdim);
    /* LoRAQKVLinear.zero_pad when LoRA covers some but not all of q, k, v:
     * result.index_copy_(-1, lora_ind, source=after_B), and index_copy's
     * backward formula names the tensor itself (derivatives.yaml: source:
     * grad.index_select(dim, index).expand_as(source)), so autograd saves
     * after_B, T x (the adapted widths) */
    uint32_t m = s->lora_qkv_mask;
    if (c->lora && m && m != 7u)
        x += act * T * ((m & 1u ? qdim : 0) + (m & 2u ? kvdim : 0) + (m & 4u ? kvdim : 0));
    return x;
}

/* The inputs bitsandbytes < 0.43.2 keeps as ctx.tensors, for the whole model:
 * per block the q/k/v input, the output projection's, the MLP's (the router's
 * for MoE) and the down projection's, plus LitGPT's 4-bit head's, less the
 * first block's q/k/v input (the frozen embedding's output needs no grad, so
 * MatMul4Bit keeps (None, None) there). */
static uint64_t bnb_inputs(const vf__tarch *a, const vf__tcfg *c)
{
    const uint64_t T = c->T, act = c->act, h = a->hidden;
    const uint64_t qdim = (uint64_t)a->n_heads * a->head_dim;
    uint64_t mlp = T * h + T * a->inter;
    if (a->n_experts > 1) {
        uint64_t k = a->n_experts_active ? a->n_experts_active : 1;
        mlp = T * h + k * T * h + k * T * a->moe_inter + (a->shared_inter ? T * h + T * a->shared_inter : 0);
    }
    /* the head's chunk inputs (T x h in all) and the first block's q/k/v
     * input cancel */
    return a->n_layers * act * (T * h + T * qdim + mlp);
}

/* Chunks the head's output comes in: lora.py's lm_head_chunk_size along the
 * sequence; full.py's head is one piece. */
static uint64_t head_chunks(const vf__tcfg *c)
{
    return c->lora ? (c->s + LITGPT_HEAD_CHUNK - 1) / LITGPT_HEAD_CHUNK : 1;
}

uint64_t vf__litgpt_head_deq(const vf__tarch *a, const vf__tcfg *c, const vf__tacts *o, uint64_t deq)
{
    (void)a;
    /* The 4-bit head dequantizes (fp16, then its bf16 cast: `deq`) for each
     * chunk inside MatMul4Bit.forward, before that chunk's output exists and
     * before any fp32 copy: at the last chunk the earlier chunks' bf16 outputs
     * are alive, the log-softmax (4 T V, counted in the saved set) is not. The
     * larger of that moment and the fp32 cast after the forward (fwd_temp). */
    uint64_t n = head_chunks(c), TV = o->logits_tv;
    uint64_t at_head = (uint64_t)c->act * TV / n * (n - 1) + deq;
    uint64_t at_head_t = at_head > 4 * TV ? at_head - 4 * TV : 0;
    return at_head_t > o->fwd_temp ? at_head_t : o->fwd_temp;
}

/* The loss region of one step (o->held, o->fwd_temp, o->bwd_start) and the
 * 4-bit inputs that outlive their backward (o->held_fwd, o->held_after). */
void vf__litgpt_loss(const vf__tarch *a, const vf__tcfg *c, vf__tacts *o)
{
    const uint64_t TV = o->logits_tv;
    /* Fabric's _FabricModule.forward returns precision.convert_output(output),
     * which casts every floating output to torch.get_default_dtype() (fp32;
     * lightning/fabric/plugins/precision/half.py and bitsandbytes.py): the
     * logits the loop holds, the log-softmax the loss saves (outside_saved)
     * and the loss's gradients are fp32. `logits = model(...)` keeps the
     * previous step's fp32 logits until the new ones are returned, beside the
     * new bf16 chunks being cast (fwd_temp, the new fp32 copy standing in the
     * saved log-softmax's place), and the new ones through the whole step */
    o->held = 4 * TV;
    o->fwd_temp = c->act < 4 ? (uint64_t)c->act * TV : 0; /* an fp32 output is returned as it is */
    if (c->lora) {
        /* lora.py: a list of [B, 128, V] chunks and one cross-entropy per
         * chunk; autograd runs every chunk's nll and log-softmax backward
         * (highest sequence number first) before the head's: two fp32 chunk
         * gradients in flight beside the ones already made */
        uint64_t rows = c->b * (c->s < LITGPT_HEAD_CHUNK ? c->s : LITGPT_HEAD_CHUNK);
        o->bwd_start = 2 * 4 * rows * a->vocab;
    } else {
        /* full.py: whole logits, chunked_cross_entropy splits the flattened
         * [B*(T-1), V] rows by 128; split's backward concatenates the chunk
         * gradients into one new fp32 T x V tensor beside them (and the
         * slice's backward builds another before the chunk ones are gone) */
        o->bwd_start = 4 * TV;
    }
    if (c->bnb_keeps_input) {
        /* bitsandbytes 0.42 MatMul4Bit.forward stores ctx.tensors = (A, B), a
         * ctx attribute, not save_for_backward: PyNode::release_variables
         * (torch/csrc/autograd/python_function.cpp) clears only saved_variables
         * after backward, so every A lives as long as the graph node; the held
         * logits keep the whole graph, so one micro-batch's set lives through
         * its optimizer step and the next micro-batch's forward */
        uint64_t set = bnb_inputs(a, c);
        o->held_fwd = set;
        o->held_after = set;
    }
}
