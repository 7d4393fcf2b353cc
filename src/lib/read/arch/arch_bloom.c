/* arch_bloom.c — BLOOM (model_type bloom), as transformers'
 * models/bloom/modeling_bloom.py builds BloomModel (the names the
 * bigscience/bloom checkpoint stores, no prefix): word_embeddings [V, h] and
 * word_embeddings_layernorm; per block h.N: input_layernorm,
 * self_attention.query_key_value [3h, h] and self_attention.dense [h, h] with
 * biases, post_attention_layernorm, mlp.dense_h_to_4h [4h, h] and
 * mlp.dense_4h_to_h [h, 4h] with biases; ln_f; the head tied to the
 * embedding; positions by ALiBi (no table). BLOOM-176B: 176,247,271,424
 * elements, its Hub total. */
#include "read/arch/arch.h"

#include <stdio.h>

vf_status vf__arch_bloom(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size ? hp->intermediate_size : 4 * h;
    vf__ab_param(b, hp->vocab_size, h, "word_embeddings.weight");
    vf__ab_layernorm(b, h, "word_embeddings_layernorm");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[48];
        snprintf(p, sizeof p, "h.%u.", i);
        vf__ab_layernorm(b, h, "%sinput_layernorm", p);
        vf__ab_linear(b, VF_LIN_BIAS, 3 * h, h, "%sself_attention.query_key_value", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attention.dense", p);
        vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
        vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.dense_h_to_4h", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.dense_4h_to_h", p);
    }
    vf__ab_layernorm(b, h, "ln_f");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "lm_head");
    return b->st;
}
