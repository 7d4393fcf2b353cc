/* arch_starcoder2.c — StarCoder2 (model_type starcoder2), as transformers'
 * models/starcoder2/modeling_starcoder2.py (4.37+) builds it: LayerNorms with
 * bias, q/k/v/o_proj with bias when use_bias (the default), a plain MLP
 * c_fc [f, h] / c_proj [h, f] with bias, the head tied to the embedding
 * (Starcoder2Config's tie_word_embeddings default). starcoder2-3b and -7b:
 * 3,030,371,328 and 7,173,923,840 elements, their Hub totals. */
#include "read/arch/arch.h"

#include <stdio.h>

vf_status vf__arch_starcoder2(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, H = hp->n_heads, kv = hp->n_kv_heads, hd = hp->head_dim;
    if (!ff)
        return vf__err(b->err, VF_EFORMAT, b->path, "starcoder2 config lacks intermediate_size");
    bool bias = vf__cfg_bool(b->cfg, "use_bias", true);
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "model.layers.%u.", i);
        vf__ab_layernorm(b, h, "%sinput_layernorm", p);
        char a[80];
        snprintf(a, sizeof a, "%sself_attn.", p);
        vf__ab_attn(b, a, &(vf__attn){.h = h, .heads = H, .kv = kv, .hd = hd, .qkv_bias = bias, .o_bias = bias});
        vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
        vf__ab_mlp(b, p, h, ff, bias ? VF_LIN_BIAS : 0, NULL, "mlp.c_fc", "mlp.c_proj");
    }
    vf__ab_layernorm(b, h, "model.norm");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "lm_head");
    return b->st;
}
