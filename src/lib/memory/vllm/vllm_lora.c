/* vllm_lora.c — what vLLM pre-allocates for --enable-lora: every
 * max_loras slot of every LoRA layer, sized for max_lora_rank, in the model
 * dtype (lora_dtype auto), before the KV pool is sized (vllm/lora/
 * model_manager.py _create_lora_modules wraps each supported module;
 * vllm/lora/layers, each create_lora_weights, allocates the stacks).
 * docs/memory-model.md "Serving extras" gives each term with its source. */
#include "memory/infer.h"

#include <stdlib.h>
#include <string.h>

#define EXTRA_VOCAB 256 /* LoRAConfig.lora_extra_vocab_size and lora_vocab_padding_size, before 0.12 */

/* vLLM a.b.c or later; no version given means the current one. */
static bool at_least(const char *v, int a, int b, int c)
{
    vf__vllm_ver ver;
    const char *why;
    return !vf__vllm_version_parse(v, &ver, &why) || vf__vllm_at_least(&ver, a, b, c);
}

static uint64_t ru(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

/* A gated MLP's LoRA per rank and unit of rank (vllm/lora/layers
 * column_parallel_linear.py MergedColumnParallelLinearWithLoRA: A [rank, h]
 * whole for gate and up, B [ff/tp, rank] each; row_parallel_linear.py for
 * down: A [rank, ff/tp], B [h, rank]): 3h + 3 ff/tp. */
static uint64_t mlp(uint64_t h, uint64_t ff, uint64_t tp) { return 3 * h + 3 * (ff / tp); }

/* Routed experts (lora/layers/fused_moe.py, vLLM 0.11.2+): per expert w13
 * A [rank, h] (gate and up: 2 slices; one fused slice for 3-D checkpoints,
 * FusedMoE3DWithLoRA, gpt-oss), w2 A [rank, I/tp], w13 B [I/tp, rank] per
 * slice (the fused one [2 I/tp, rank]), w2 B [h, rank]. */
static uint64_t experts(const vf_hparams *hp, uint64_t h, uint64_t tp)
{
    uint64_t E = hp->n_experts, I = (hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp)) / tp;
    bool fused = strcmp(hp->architecture, "gpt_oss") == 0;
    return vf__smul(E, (fused ? 2 * h : 3 * h) + 3 * I);
}

/* The embedding and the head, per unit of rank (vocal_parallel_embedding.py:
 * A [V, rank] of the whole vocabulary, B [h, rank]; logits_processor.py: A
 * [rank, h], B [V, rank], on every rank). Before 0.12 (lora_extra_vocab_size,
 * removed by vllm PRs #28382/#28545) both held 256 added tokens: A [V + 256,
 * rank], B [ceil((V + 256) / 256) x 256, rank], plus [256, h] embedding
 * tensors each, not per unit of rank (returned in *fixed). */
static uint64_t vocab(uint64_t V, uint64_t h, bool extra, uint64_t *fixed)
{
    *fixed = extra ? 2 * EXTRA_VOCAB * h : 0;
    if (!extra)
        return 2 * V + 2 * h;
    return (V + EXTRA_VOCAB) + h + h + ru(V + EXTRA_VOCAB, EXTRA_VOCAB);
}

/* Which blocks hold routed experts and shared experts, from the tensors. */
static uint8_t *moe_layers(const vf_model *m)
{
    uint32_t L = m->hp.n_layers;
    uint8_t *f = L ? calloc(L, 1) : NULL;
    if (!f)
        return NULL;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->layer < 0 || (uint32_t)t->layer >= L)
            continue;
        if (t->role == VF_ROLE_EXPERT)
            f[t->layer] |= 1;
        else if (t->role == VF_ROLE_SHARED_EXPERT)
            f[t->layer] |= 2;
    }
    return f;
}

/* Per layer and unit of rank: attention (q, k, v column parallel: A whole, B
 * split; o row parallel: A split) 3h + (H + 2K) d / tp + H d / tp + h; then
 * the layer's MLP: a dense one, or the router (replicated: [rank, h] and [E,
 * rank]) + the routed experts (0.11.2+; before, vLLM had no MoE LoRA and
 * skipped them) + the shared experts as a dense MLP. */
static uint64_t layer_units(const vf_model *m, uint32_t il, uint8_t flags, uint64_t tp, bool moe_lora)
{
    const vf_hparams *hp = &m->hp;
    uint64_t h = hp->hidden_size, a = 0;
    uint64_t q = (uint64_t)hp->n_heads * hp->head_dim, kv = (uint64_t)hp->n_kv_heads * hp->head_dim;
    if (!vf__layer_recurrent(hp, il) && hp->n_heads)
        a += 3 * h + (q + 2 * kv) / tp + q / tp + h;
    if (!(flags & 1)) {
        uint64_t ff = hp->layer_ff && hp->layer_ff[il] ? hp->layer_ff[il] : hp->intermediate_size;
        return ff ? a + mlp(h, ff, tp) : a;
    }
    a += h + hp->n_experts;
    if (moe_lora)
        a = vf__sadd(a, experts(hp, h, tp));
    if (flags & 2) {
        uint64_t moe_ff = hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp);
        uint64_t sff = hp->shared_expert_intermediate_size ? hp->shared_expert_intermediate_size
                                                           : vf__smul(hp->n_shared_experts ? hp->n_shared_experts : 1,
                                                                      moe_ff);
        a = vf__sadd(a, mlp(h, sff, tp));
    }
    return a;
}

vf_status vf__vllm_lora_bytes(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t dt, vf__lora *out)
{
    const vf_hparams *hp = &m->hp;
    memset(out, 0, sizeof *out);
    uint64_t r = o->max_lora_rank ? o->max_lora_rank : 16, n = o->max_loras, t = tp ? tp : 1, h = hp->hidden_size;
    const char *v = o->infer.vllm_version;
    out->moe = at_least(v, 0, 11, 2);
    out->extra_vocab = !at_least(v, 0, 12, 0);
    uint8_t *f = moe_layers(m);
    if (hp->n_layers && !f)
        return VF_ENOMEM;
    uint64_t units = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t u = layer_units(m, il, f[il], t, out->moe);
        units = vf__sadd(units, u);
        if (f[il] & 1)
            out->expert_layers++;
    }
    free(f);
    uint64_t fixed;
    out->vocab = vf__smul(vf__smul(vocab(hp->vocab_size, h, out->extra_vocab, &fixed), r), vf__smul(n, dt));
    out->vocab = vf__sadd(out->vocab, vf__smul(vf__smul(fixed, n), dt));
    out->layers = vf__smul(vf__smul(units, r), vf__smul(n, dt));
    /* the model's own embedding and head grow by the added tokens, padded to
     * 256 (lora_vocab_padding_size), split over tp; one matrix when tied */
    if (out->extra_vocab) {
        uint64_t rows = ru(hp->vocab_size + EXTRA_VOCAB, EXTRA_VOCAB) - hp->vocab_size;
        out->base = vf__smul(vf__smul(rows, h), dt) / t * (hp->tie_word_embeddings ? 1 : 2);
    }
    out->bytes = vf__sadd(vf__sadd(out->layers, out->vocab), out->base);
    return VF_OK;
}
