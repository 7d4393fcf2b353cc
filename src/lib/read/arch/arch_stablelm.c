/* arch_stablelm.c — StableLM (model_type stablelm: StableLM-2, StableLM-3B-4E1T),
 * as transformers' models/stablelm/modeling_stablelm.py builds it: LayerNorms
 * with bias (input_layernorm, post_attention_layernorm, model.norm), q/k/v_proj
 * with bias when use_qkv_bias, o_proj without, optional per-head q/k
 * LayerNorms (qk_layernorm: self_attn.q_layernorm.norms.N / k_layernorm,
 * weight only), a SwiGLU MLP gate/up/down without bias, an untied head
 * (StableLmConfig's default). stablelm-2-1_6b: 1,644,515,328 elements, its
 * Hub total. */
#include "read/arch/arch.h"

#include <stdio.h>

vf_status vf__arch_stablelm(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, H = hp->n_heads, kv = hp->n_kv_heads, hd = hp->head_dim;
    if (!ff)
        return vf__err(b->err, VF_EFORMAT, b->path, "stablelm config lacks intermediate_size");
    bool qb = vf__cfg_bool(b->cfg, "use_qkv_bias", false);
    bool qkn = vf__cfg_bool(b->cfg, "qk_layernorm", false);
    bool parallel = vf__cfg_bool(b->cfg, "use_parallel_residual", false);
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "model.layers.%u.", i);
        vf__ab_layernorm(b, h, "%sinput_layernorm", p);
        char a[80];
        snprintf(a, sizeof a, "%sself_attn.", p);
        vf__ab_attn(b, a, &(vf__attn){.h = h, .heads = H, .kv = kv, .hd = hd, .qkv_bias = qb});
        for (uint64_t k = 0; qkn && k < H; k++)
            vf__ab_param(b, hd, 0, "%sself_attn.q_layernorm.norms.%llu.weight", p, (unsigned long long)k);
        for (uint64_t k = 0; qkn && k < kv; k++)
            vf__ab_param(b, hd, 0, "%sself_attn.k_layernorm.norms.%llu.weight", p, (unsigned long long)k);
        if (!parallel) /* the parallel residual shares input_layernorm */
            vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
        vf__ab_mlp(b, p, h, ff, 0, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj");
    }
    vf__ab_layernorm(b, h, "model.norm");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "lm_head");
    return b->st;
}
