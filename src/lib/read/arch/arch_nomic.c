/* arch_nomic.c — Nomic BERT (model_type nomic_bert: nomic-embed-text), as its
 * remote code modeling_hf_nomic_bert.py (nomic-ai/nomic-bert-2048) builds
 * NomicBertModel: word and token-type embeddings (rotary positions, no
 * position table), emb_ln LayerNorm; per layer attn.Wqkv [3h, h] and
 * attn.out_proj [h, h] (bias when qkv_proj_bias), a SwiGLU MLP fc11 / fc12
 * [f, h] and fc2 [h, f] (bias when mlp_fc1_bias / mlp_fc2_bias), norm1 and
 * norm2 LayerNorms (post-norm); no pooler. nomic-embed-text-v1.5:
 * 136,731,648 elements, its Hub total. */
#include "read/arch/arch.h"

#include <stdio.h>

vf_status vf__arch_nomic_bert(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size;
    uint64_t tv = vf__ab_cfg(b, b->cfg, "type_vocab_size", 2, 1024);
    if (!ff || b->st != VF_OK)
        return b->st != VF_OK ? b->st : vf__err(b->err, VF_EFORMAT, b->path, "nomic_bert config lacks n_inner");
    unsigned qb = vf__cfg_bool(b->cfg, "qkv_proj_bias", true) ? VF_LIN_BIAS : 0;
    unsigned f1 = vf__cfg_bool(b->cfg, "mlp_fc1_bias", true) ? VF_LIN_BIAS : 0;
    unsigned f2 = vf__cfg_bool(b->cfg, "mlp_fc2_bias", true) ? VF_LIN_BIAS : 0;
    vf__ab_param(b, hp->vocab_size, h, "embeddings.word_embeddings.weight");
    if (tv)
        vf__ab_param(b, tv, h, "embeddings.token_type_embeddings.weight");
    vf__ab_layernorm(b, h, "emb_ln");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "encoder.layers.%u.", i);
        vf__ab_linear(b, qb, 3 * h, h, "%sattn.Wqkv", p);
        vf__ab_linear(b, qb, h, h, "%sattn.out_proj", p);
        vf__ab_linear(b, f1, ff, h, "%smlp.fc11", p);
        vf__ab_linear(b, f1, ff, h, "%smlp.fc12", p);
        vf__ab_linear(b, f2, h, ff, "%smlp.fc2", p);
        vf__ab_layernorm(b, h, "%snorm1", p);
        vf__ab_layernorm(b, h, "%snorm2", p);
    }
    return b->st;
}
