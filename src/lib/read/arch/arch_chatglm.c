/* arch_chatglm.c — ChatGLM / GLM-4 in its original format (model_type
 * chatglm: THUDM/glm-4-9b-chat), as its remote code modeling_chatglm.py
 * builds ChatGLMForConditionalGeneration: transformer.embedding
 * .word_embeddings [V, h] (V = padded_vocab_size); per layer RMSNorm
 * input_layernorm / post_attention_layernorm, self_attention.query_key_value
 * [(H + 2g)·d, h] (+ bias with add_qkv_bias; g = multi_query_group_num,
 * d = kv_channels), self_attention.dense [h, H·d], mlp.dense_h_to_4h [2f, h]
 * (gate and up fused), mlp.dense_4h_to_h [h, f]; final_layernorm;
 * output_layer [V, h]; and rotary_pos_emb.inv_freq [d/4], a persistent buffer
 * (RotaryEmbedding over half the head). glm-4-9b-chat: 9,399,951,392
 * elements, its Hub total. */
#include "read/arch/arch.h"

#include <stdio.h>

/* The keys ChatGLMConfig spells its own way: KV groups and context. */
vf_status vf__chatglm_hparams(vf_hparams *hp, const json_t *t, const char *path, vf_error *err)
{
    uint64_t g = 0, ctx = 0, d = 0;
    if (vf__cfg_bool(t, "multi_query_attention", false) && vf__cfg_u64(t, &g, "multi_query_group_num", NULL) > 0) {
        if (!g || g > hp->n_heads)
            return vf__err(err, VF_EFORMAT, path, "multi_query_group_num out of range");
        hp->n_kv_heads = (uint32_t)g;
    }
    if (vf__cfg_u64(t, &d, "kv_channels", NULL) > 0 && d && d <= 65536)
        hp->head_dim = hp->v_head_dim = (uint32_t)d;
    if (!hp->context_length && vf__cfg_u64(t, &ctx, "seq_length", NULL) > 0 && ctx <= ((uint64_t)1 << 32))
        hp->context_length = ctx;
    return VF_OK;
}

vf_status vf__arch_chatglm(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, H = hp->n_heads, g = hp->n_kv_heads, d = hp->head_dim;
    if (!ff)
        return vf__err(b->err, VF_EFORMAT, b->path, "chatglm config lacks ffn_hidden_size");
    unsigned qb = vf__cfg_bool(b->cfg, "add_qkv_bias", false) ? VF_LIN_BIAS : 0;
    unsigned lb = vf__cfg_bool(b->cfg, "add_bias_linear", false) ? VF_LIN_BIAS : 0;
    const char *T = "transformer.";
    vf__ab_param(b, hp->vocab_size, h, "%sembedding.word_embeddings.weight", T);
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "transformer.encoder.layers.%u.", i);
        vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
        vf__ab_linear(b, qb, (H + 2 * g) * d, h, "%sself_attention.query_key_value", p);
        vf__ab_linear(b, lb, h, H * d, "%sself_attention.dense", p);
        vf__ab_param(b, h, 0, "%spost_attention_layernorm.weight", p);
        vf__ab_linear(b, lb, 2 * ff, h, "%smlp.dense_h_to_4h", p);
        vf__ab_linear(b, lb, h, ff, "%smlp.dense_4h_to_h", p);
    }
    vf__ab_param(b, h, 0, "%sencoder.final_layernorm.weight", T);
    vf__ab_linear(b, 0, hp->vocab_size, h, "%soutput_layer", T);
    uint64_t nf = d / 4; /* inv_freq over rotary dim d/2, every other channel */
    if (nf)
        vf__ab_raw(b, b->dt, VF_TENSOR_NOT_PARAM, UINT64_MAX, 1, &nf, "transformer.rotary_pos_emb.inv_freq");
    return b->st;
}
