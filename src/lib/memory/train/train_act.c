/* train_act.c — what one micro-batch saves for backward, op by op.
 * Each term is a tensor an autograd node keeps (Linear its input, softmax its
 * output, GELU its input, dropout a 1-byte mask, HF's RMSNorm its fp32 upcast
 * and square, the loss its fp32 log-probabilities); Korthikanti et al. 2022
 * (arXiv:2205.05198) sbh(34 + 5as/h) is this sum for a GPT-3 block in 16 bit.
 * Checked against PyTorch's saved-tensor inventory in
 * tests/reference/torch (docs/memory-model.md "Training"). */
#include "memory/train/train_internal.h"

#include <string.h>

/* One normalisation: LayerNorm keeps its input and fp32 mean/rstd (on CUDA);
 * HF's RMSNorm upcasts: x (fp32), x^2 (fp32), rsqrt (fp32, per token), and the
 * normalised x back in the residual dtype. */
static uint64_t norm_bytes(const vf__tarch *a, const vf__tcfg *c, uint64_t T, uint32_t r)
{
    /* unsloth/kernels/rms_layernorm.py Fast_RMS_Layernorm: save_for_backward(X,
     * W, r): its input as given and the fp32 rstd per row; the weight's
     * gradient is not made (the norms are frozen under LoRA) */
    if (a->rmsnorm && c->unsloth)
        return (uint64_t)c->act * T * a->hidden + 4 * T;
    if (a->rmsnorm && c->litgpt) {
        /* litgpt/model.py RMSNorm: x = x.float(); x * x and x * rsqrt(...)
         * keep the one fp32 x and the fp32 rsqrt per token; x_normed (fp32)
         * is kept only for a trainable weight's gradient */
        return 4 * T * a->hidden + 4 * T + (c->lora ? 0 : 4 * T * a->hidden);
    }
    if (a->rmsnorm)
        return 8 * T * a->hidden + 4 * T + (uint64_t)r * T * a->hidden;
    return (uint64_t)r * T * a->hidden + 8 * T;
}

/* Attention scores' saved bytes for eager attention, S = b*heads*s*s elements. */
static uint64_t eager_scores(const vf__tarch *a, const vf__tcfg *c, uint64_t S, uint32_t act, bool upcast)
{
    bool drop = a->attn_drop > 0;
    /* PyTorch < 1.11: the softmax keeps its input too (the masked scores;
     * an upcasting softmax taken as keeping its fp32 input: erring high) */
    uint64_t in = c->softmax_keeps_input ? (upcast ? 4 : act) * S : 0;
    if (upcast)
        return in + 4 * S + (drop ? S + act * S : (act < 4 ? act * S : 0));
    return in + act * S + (drop ? S + act * S : 0);
}

/* MLP saved bytes for `tokens` tokens of width `ff`. */
static uint64_t mlp_bytes(const vf__tarch *a, const vf__tstates *s, uint64_t tokens, uint64_t ff, uint32_t act,
                          bool in_saved)
{
    uint64_t b = 0;
    if (in_saved)
        b += (uint64_t)act * tokens * a->hidden;
    if (a->gated_mlp)
        b += 3 * (uint64_t)act * tokens * ff; /* act(gate) input, act output, up output */
    else
        b += (a->gelu_python ? 4 : 1) * (uint64_t)act * tokens * ff;
    if (s->linear_saves_input[VF_ROLE_MLP_DOWN])
        b += (uint64_t)act * tokens * ff;
    return b;
}

/* The attention kernel the run uses (eager unless one was named). */
/* one default with inference: what transformers picks (SDPA) */
static vf_attn train_attn(const vf__tcfg *c) { return c->attn == VF_ATTN_DEFAULT ? VF_ATTN_SDPA : c->attn; }

/* Unsloth's fused LoRA kernels (unsloth/kernels/fast_lora.py), patched in
 * by get_peft_model when lora_dropout is 0 and bias "none": LoRA_QKV,
 * LoRA_W (o) and LoRA_MLP run base and adapters in one autograd Function at
 * the base dtype; they apply here when all seven matrices of a dense gated
 * block are targeted (q, k, v, o, gate, up, down). */
bool vf__unsloth_lora(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s)
{
    return c->unsloth && c->lora && c->lora_dropout <= 0 && a->gated_mlp && a->rmsnorm && a->n_experts <= 1 &&
           a->n_layers && s->lora_qkv_mask == 7u && s->lora_act_extra == 7ull * a->n_layers;
}

/* A block under those kernels: LoRA_QKV saves its input X (the first norm's
 * output) and the A/B weights; the attention core as priced for the kernel
 * (LoRA_W's X is the attention's output, already saved); LoRA_MLP saves X,
 * e = X @ gate and g = X @ up (h = swiglu(e, g) dies in the forward, remade
 * in place over e and g by swiglu_DWf_DW_dfg_kernel in backward). No
 * adapter keeps A's output or a cast of its input. */
static void unsloth_block(const vf__tarch *a, const vf__tcfg *c, uint64_t core, vf__tacts *o, uint64_t *mlp_part)
{
    const uint64_t T = c->T, h = a->hidden, act = c->act;
    const uint64_t nrm = norm_bytes(a, c, T, c->resid);
    const uint64_t mlp = act * T * h + 2 * act * T * a->inter;
    o->ff_kept = 2 * act * T * a->inter;
    o->layer = 2 * nrm + act * T * h + core + mlp;
    *mlp_part = mlp + nrm;
}

/* One block's saved tensors (o->layer); *mlp_part: what its second norm, MLP
 * and dropout mask hold, freed before the attention's backward. */
static void block_saved(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s, vf__tacts *o, uint64_t *mlp_part)
{
    const uint64_t T = c->T, h = a->hidden, b = c->b, sq = c->s;
    const uint32_t act = c->act, r = c->resid;
    const bool upcast = a->softmax_upcast || c->amp; /* autocast runs softmax in fp32 */
    const uint64_t qdim = (uint64_t)a->n_heads * a->head_dim, kvdim = (uint64_t)a->n_kv_heads * a->head_dim;
    const uint64_t S = b * a->n_heads * sq * sq;
    const bool *in = s->linear_saves_input;
    const vf_attn attn = train_attn(c);
    uint64_t L = 2 * norm_bytes(a, c, T, r);
    if (in[VF_ROLE_ATTN_Q] || in[VF_ROLE_ATTN_K] || in[VF_ROLE_ATTN_V] || in[VF_ROLE_ATTN_QKV])
        L += (uint64_t)act * T * h; /* q/k/v projections share one saved input */
    uint64_t core = 0;
    if (attn == VF_ATTN_FLASH) {
        /* q, k, v at their own head counts, the output (also o_proj's input),
         * the fp32 log-sum-exp per row */
        core = (uint64_t)act * T * (2 * qdim + 2 * kvdim) + 4 * b * a->n_heads * sq;
    } else if (attn == VF_ATTN_SDPA) {
        /* HF repeats k/v to every head before SDPA; the output is transposed
         * into a fresh tensor for o_proj */
        core = (uint64_t)act * T * 4 * qdim + 4 * b * a->n_heads * sq;
        if (in[VF_ROLE_ATTN_O])
            core += (uint64_t)act * T * qdim;
    } else {
        core = (uint64_t)act * T * 3 * qdim + eager_scores(a, c, S, act, upcast);
        if (in[VF_ROLE_ATTN_O])
            core += (uint64_t)act * T * qdim;
        o->attn_scores = S;
    }
    if (c->litgpt)
        core += vf__litgpt_qkv_saved(a, c, s);
    if (vf__unsloth_lora(a, c, s)) {
        unsloth_block(a, c, core, o, mlp_part);
        return;
    }
    L += core;
    if (a->resid_drop > 0)
        L += 2 * T * h; /* masks after attention and after the MLP */
    uint64_t before_mlp = L;
    if (a->n_experts > 1) {
        uint64_t k = a->n_experts_active ? a->n_experts_active : 1;
        L += (uint64_t)act * T * h + 4 * T * a->n_experts; /* router input, fp32 routing softmax */
        L += mlp_bytes(a, s, k * T, a->moe_inter, act, true);
        if (a->shared_inter)
            L += mlp_bytes(a, s, T, a->shared_inter, act, false);
    } else {
        L += mlp_bytes(a, s, T, a->inter, act, in[VF_ROLE_MLP_UP] || in[VF_ROLE_MLP_GATE]);
        /* the intermediate-width tensors among them (tokens x ff), without the MLP's input */
        o->ff_kept = mlp_bytes(a, s, T, a->inter, act, false);
    }
    if (c->lora && a->n_layers) { /* each adapter's B keeps A's output: tokens x rank */
        const uint32_t ad = c->adapter_in ? c->adapter_in : act; /* the adapters' compute dtype */
        L += (uint64_t)ad * T * c->lora_rank * (s->lora_act_extra / a->n_layers);
        /* PEFT applies lora_dropout per adapter: its 1-byte mask and the dropped
         * copy of the input, which A keeps */
        uint64_t drop_in = s->lora_in_sum / a->n_layers;
        if (c->litgpt && s->lora_qkv_in) /* LoRAQKVLinear: one dropout for the fused q, k, v */
            drop_in = (s->lora_in_sum - s->lora_qkv_in) / a->n_layers + h;
        if (c->lora_dropout > 0)
            L += (uint64_t)(ad + 1) * T * drop_in;
        else if (c->adapter_in) /* fp32 adapters: each keeps its own cast of its input */
            L += (uint64_t)ad * T * (s->lora_in_sum / a->n_layers);
    }
    if (c->amp && a->n_layers) /* autocast's 16-bit weight copies, kept by each matmul for backward */
        L += 2 * (s->block_linear_params / a->n_layers);
    o->layer = L;
    *mlp_part = L - before_mlp + norm_bytes(a, c, T, r) + (a->resid_drop > 0 ? T * h : 0);
}

/* Outside the blocks: positions, embedding dropout, rope tables, the final
 * norm, the head's input and the loss (o->non_layer); returns the head's part,
 * freed before the last block's backward. */
static uint64_t outside_saved(const vf__tarch *a, const vf__tcfg *c, vf__tacts *o)
{
    const uint64_t T = c->T, h = a->hidden, sq = c->s;
    const uint32_t act = c->act, r = c->resid;
    uint64_t nl = 0;
    if (a->learned_pos)
        nl += 8 * sq; /* int64 position ids [1, s] kept by the embedding */
    if (a->embd_drop > 0)
        nl += T * h;
    if (a->rope)
        nl += 2 * sq * a->head_dim * r; /* cos and sin, shared by every block */
    /* LitGPT's 4-bit head: bitsandbytes < 0.43.2 keeps each chunk's input
     * (ctx.tensors, never freed by its backward) */
    if (c->litgpt && c->bnb_keeps_input)
        nl += (uint64_t)act * T * h;
    uint64_t before_head = nl;
    nl += norm_bytes(a, c, T, r);
    if (!c->lora)
        nl += (uint64_t)act * T * h; /* the head's input (a frozen head saves none) */
    if (c->amp)
        nl += 2 * a->vocab * h; /* the head's autocast copy */
    o->logits_tv = T * a->vocab;
    if (a->cls_labels) {
        /* BertForSequenceClassification: the pooler's Linear keeps its input,
         * a view of the first token that holds the last hidden state (counted
         * above as the head's input); tanh keeps its output, dropout its mask,
         * the classifier its input; fp32 log-softmax over [b, labels] */
        o->logits_tv = c->b * a->cls_labels;
        nl += (2 * (uint64_t)act + 1) * c->b * h + (c->softmax_keeps_input ? 8 : 4) * o->logits_tv + 8 * c->b + 4;
        o->non_layer = nl;
        return nl - before_head;
    }
    /* PyTorch < 1.11: log_softmax keeps its input (the logits) as well */
    uint64_t keep = c->softmax_keeps_input ? 2 : 1;
    if (c->litgpt) /* chunked_cross_entropy on the logits Fabric returns in fp32 (train_litgpt.c) */
        nl += keep * 4 * o->logits_tv + 8 * T;
    else
        nl += keep * 4 * o->logits_tv + 8 * T + 4; /* fp32 log-softmax (HF upcasts logits), targets, weight */
    o->non_layer = nl;
    return nl - before_head;
}

/* What recomputation keeps of each block (o->layer_kept) and the total. */
static void recompute_kept(const vf__tarch *a, const vf__tcfg *c, vf_recompute rc, vf__tacts *o)
{
    const uint64_t T = c->T, h = a->hidden, b = c->b, sq = c->s;
    const uint32_t act = c->act, r = c->resid;
    const bool upcast = a->softmax_upcast || c->amp;
    const uint64_t S = b * a->n_heads * sq * sq;
    const vf_attn attn = train_attn(c);
    const uint64_t L = o->layer;
    switch (rc) {
    case VF_RECOMPUTE_NONE:
        o->layer_kept = L;
        o->scores_kept = attn == VF_ATTN_EAGER ? eager_scores(a, c, S, act, upcast) : 0;
        break;
    case VF_RECOMPUTE_SELECTIVE:
        /* Korthikanti's selective recomputation drops the attention core's
         * s^2 terms (scores, softmax, dropout) and keeps everything else */
        o->scores_recomputed = attn == VF_ATTN_EAGER ? eager_scores(a, c, S, act, upcast) : 0;
        o->layer_kept = L - o->scores_recomputed;
        break;
    case VF_RECOMPUTE_FULL:
        /* each block keeps only its input (the RNG state it stashes lives in host memory) */
        o->layer_kept = (uint64_t)r * T * h;
        o->scores_recomputed = attn == VF_ATTN_EAGER ? eager_scores(a, c, S, act, upcast) : 0;
        /* HF builds an eager 4-D causal mask [1,1,s,s] that checkpointed blocks keep as input */
        if (attn == VF_ATTN_EAGER && a->rope)
            o->non_layer += sq * sq * r;
        break;
    }
    o->total = a->n_layers * o->layer_kept + o->non_layer;
}

/* The loss's convention over the logits terms (HF's whole-logits fp32
 * upcast is what the terms above price):
 * - chunked (torchtune CEWithChunkedOutputLoss, num_output_chunks N): the
 *   head runs per chunk and the loop holds the chunks' logits (the whole
 *   logits in the activation dtype) until the loss is computed; each chunk
 *   is upcast and log-softmaxed in turn, so the fp32 copy is one chunk, the
 *   log-probabilities (saved) all of them; backward meets one chunk's
 *   gradients at a time.
 * - fused (Liger's fused linear cross-entropy; Unsloth's): the forward walks
 *   the tokens in chunks of about T / (V / h) rows, each chunk's logits
 *   (T x h elements, activation dtype) and their gradient written in place,
 *   the input's gradient [T, h] saved for backward (and the head's weight
 *   gradient made then); no log-probabilities, no backward transient. */
static void loss_convention(const vf__tarch *a, const vf__tcfg *c, vf__tacts *o)
{
    const uint64_t TV = o->logits_tv, Th = c->T * a->hidden, act = c->act;
    const uint64_t keep = c->softmax_keeps_input ? 2 : 1;
    if (a->cls_labels || c->loss == VF_LOSS_FULL)
        return;
    uint64_t n = c->loss_chunks ? c->loss_chunks : 1;
    if (c->loss == VF_LOSS_CHUNKED) {
        o->fwd_temp = act * TV + (act < 4 ? 4 * TV / n : 0);
        o->bwd_start = 8 * TV / n;
        return;
    }
    uint64_t saved = keep * 4 * TV;
    o->non_layer = (o->non_layer > saved ? o->non_layer - saved : 0) + act * Th;
    o->fwd_temp = act * Th + (c->lora ? 0 : a->vocab * a->hidden * c->g_bytes);
    o->bwd_start = 0;
}

/* The step's transients: end of forward, start and inside of backward, the
 * tied embedding's gradient at the end. */
static void step_transients(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s, vf_recompute rc,
                            uint64_t head_part, uint64_t mlp_part, vf__tacts *o)
{
    const uint64_t T = c->T, h = a->hidden, b = c->b, sq = c->s;
    const uint32_t act = c->act;
    const bool upcast = a->softmax_upcast || c->amp;
    const uint64_t qdim = (uint64_t)a->n_heads * a->head_dim;
    const uint64_t S = b * a->n_heads * sq * sq;
    const vf_attn attn = train_attn(c);
    const uint64_t L = o->layer;
    /* end of forward: the logits in the activation dtype and HF's fp32 copy,
     * beside the saved log-probabilities; start of backward: gradients of the
     * log-probabilities and of the logits, fp32 */
    o->fwd_temp = act * o->logits_tv + (act < 4 ? 4 * o->logits_tv : 0);
    o->bwd_start = 8 * o->logits_tv;
    loss_convention(a, c, o);
    if (c->litgpt) /* fp32 logits held by the loop, chunked loss (train_litgpt.c) */
        vf__litgpt_loss(a, c, o);
    if (rc == VF_RECOMPUTE_FULL && L > o->fwd_temp)
        o->fwd_temp = L; /* one block's intermediates while it runs unsaved */
    /* inside one block's backward: eager attention holds the probabilities'
     * gradient and the softmax's input gradient (fp32 when it upcasts) */
    /* fp32 softmax (upcast): the probabilities' gradient and the softmax's
     * input gradient, both fp32, while the activation-dtype gradient of the
     * probabilities has been freed; otherwise both in the activation dtype */
    uint64_t attn_t = 0;
    if (attn == VF_ATTN_EAGER)
        attn_t = (upcast ? 8 * S - (act < 4 ? act * S : 0) : 2 * (uint64_t)act * S) +
                 (a->attn_drop > 0 ? act * S : 0);
    else
        attn_t = (uint64_t)act * T * 3 * qdim;
    uint64_t mlp_t = 2 * (uint64_t)act * T * (a->n_experts > 1 ? a->moe_inter : a->inter);
    /* LoRA_MLP.backward: DW = dY @ down^T (tokens x ff) is the one new
     * intermediate-width tensor (the swiglu backward writes h, df, de over DW,
     * e, g); dX = df @ up^T goes into X (out=X, inplace=True) and is added to
     * by addmm_; the adapters' temporaries are tokens x rank (X @ A^T, dY @ B^T) */
    if (vf__unsloth_lora(a, c, s))
        mlp_t = (uint64_t)act * T * a->inter + 2 * (uint64_t)act * T * c->lora_rank;
    o->bwd_layer = attn_t > mlp_t ? attn_t : mlp_t;
    o->bwd_attn = attn_t;
    o->bwd_mlp = mlp_t;
    /* the last block's backward starts once the loss, final norm and head
     * input are freed and the head's gradient exists; by its attention, its
     * norm and MLP are freed and the MLP's gradients exist (trainable only) */
    o->freed_head = head_part;
    o->freed_mlp = mlp_part;
    if (c->bnb_keeps_input && a->n_experts <= 1) {
        /* the MLP's and down projection's 4-bit inputs are not freed by its backward */
        uint64_t kept = (uint64_t)act * T * (h + a->inter);
        o->freed_mlp = mlp_part > kept ? mlp_part - kept : 0;
    }
    if (!c->lora) {
        uint64_t mlp_params = (a->gated_mlp ? 3 : 2) * h * (a->n_experts > 1 ? a->moe_inter * a->n_experts : a->inter);
        /* the head's gradient (sequence classification: pooler and classifier) */
        o->grads_head = (a->cls_labels ? (h + a->cls_labels) * h : a->vocab * h) * c->g_bytes;
        o->grads_mlp = mlp_params * c->g_bytes;
    }
    if (c->qlora) {
        /* bitsandbytes dequantizes each 4-bit matrix to 16 bit for its matmul, forward and backward */
        /* quantized from fp16, a bf16 matmul needs the fp16 dequantized copy and its bf16 cast */
        uint64_t deq = (c->bnb_fp16_quant ? 4 : 2) * s->largest_linear;
        if (c->litgpt)
            o->fwd_temp = vf__litgpt_head_deq(a, c, o, deq);
        else
            o->fwd_temp += deq;
        o->bwd_layer += deq;
    }
    /* last: a tied embedding's gradient is built beside the head's and summed
     * into it; an untied one beside the gradient of its output */
    o->bwd_end = (!c->lora && a->tied) ? 2 * a->vocab * h * c->g_bytes : (uint64_t)act * T * h;
}

void vf__train_acts(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s, vf_recompute rc, vf__tacts *o)
{
    memset(o, 0, sizeof *o);
    uint64_t mlp_part = 0;
    block_saved(a, c, s, o, &mlp_part);
    uint64_t head_part = outside_saved(a, c, o);
    recompute_kept(a, c, rc, o);
    uint64_t nl = o->non_layer;
    step_transients(a, c, s, rc, head_part, mlp_part, o);
    o->total = o->total - nl + o->non_layer; /* the loss's convention may change what is kept outside */
}
