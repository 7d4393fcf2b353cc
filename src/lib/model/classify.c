/* classify.c — a tensor's role and layer from its name (Hugging Face and GGUF naming).
 * Depends on the description only; every reader calls it after filling a model. */
#include "model/model.h"

#include <string.h>

static int32_t tensor_layer_from_name(const char *name)
{
    /* the first all-digit path segment: "model.layers.12.mlp..." / "blk.3.attn_q" */
    const char *p = name;
    while (*p) {
        const char *seg = p;
        while (*p && *p != '.')
            p++;
        size_t len = (size_t)(p - seg);
        if (len > 0 && len < 9) {
            bool digits = true;
            int32_t v = 0; /* < 10^8: fits */
            for (size_t i = 0; i < len && digits; i++) {
                digits = seg[i] >= '0' && seg[i] <= '9';
                if (digits)
                    v = v * 10 + (seg[i] - '0');
            }
            if (digits && seg != name)
                return v;
        }
        if (*p)
            p++;
    }
    return -1;
}

static bool has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

static vf_role tensor_role_from_name(const char *n)
{
    /* called for every tensor (100k+ in a large MoE): the length once, the
     * suffixes compared as constants */
    size_t len = strlen(n);
#define ENDS(lit) (len >= sizeof(lit) - 1 && memcmp(n + len - (sizeof(lit) - 1), lit, sizeof(lit) - 1) == 0)
    /* buffers that checkpoints store but that are not parameters */
    if (ENDS("rotary_emb.inv_freq") || ENDS(".attn.masked_bias") ||
        ENDS(".attn.bias") /* not c_attn.bias */ || ENDS("position_ids") || ENDS("rope_freqs.weight"))
        return VF_ROLE_BUFFER;
    /* quantization side data: scales, zeros, indices, absmax */
    if (ENDS(".scales") || ENDS(".qzeros") || ENDS(".g_idx") ||
        ENDS(".SCB") || ENDS(".absmax") || ENDS(".quant_map") ||
        ENDS(".nested_absmax") || ENDS(".nested_quant_map") ||
        has(n, ".quant_state.") || ENDS("_scale") || ENDS("_scale_inv") ||
        ENDS("_scales") || ENDS(".weight_zero_point") || ENDS(".input_scale"))
        return VF_ROLE_QUANT_AUX;
    if (has(n, "shared_expert") || has(n, "_shexp"))
        return VF_ROLE_SHARED_EXPERT;
    if (has(n, ".experts.") || has(n, "_exps"))
        return VF_ROLE_EXPERT;
    if (has(n, "shared_expert_gate"))
        return VF_ROLE_ROUTER;
    if (has(n, ".mlp.gate.") || has(n, "block_sparse_moe.gate.") || has(n, "ffn_gate_inp") ||
        has(n, "exp_probs_b") || has(n, ".router.") || has(n, "e_score_correction_bias"))
        return VF_ROLE_ROUTER;
    if (has(n, "norm") || has(n, "LayerNorm") || has(n, ".ln_") || has(n, "ln_f.") || has(n, ".ln1") ||
        has(n, ".ln2"))
        return VF_ROLE_NORM;
    if (ENDS(".bias") || ENDS("_bias") || ENDS(".sinks") ||
        ENDS("attn_sinks.weight"))
        return VF_ROLE_BIAS;
    if (has(n, "wpe.") || has(n, "position_embeddings") || has(n, "token_type_embeddings") ||
        has(n, "position_embd"))
        return VF_ROLE_POS_EMBED;
    if (strcmp(n, "embed.weight") == 0 /* DeepSeek-V4 */ || has(n, "embed_tokens") || has(n, "wte.") || has(n, "word_embeddings") || has(n, "token_embd") ||
        has(n, "tok_embeddings") || has(n, "embed_in"))
        return VF_ROLE_EMBED;
    if (has(n, "lm_head") || has(n, "embed_out") || strcmp(n, "output.weight") == 0 || strcmp(n, "head.weight") == 0 ||
        has(n, "cls.predictions") || has(n, "shared_head.head"))
        return VF_ROLE_OUTPUT;
    if (has(n, "q_a_proj") || has(n, "q_b_proj") || has(n, "kv_a_proj") || has(n, "kv_b_proj") ||
        has(n, "attn_q_a") || has(n, "attn_q_b") || has(n, "attn_kv_a") || has(n, "attn_kv_b") ||
        has(n, "attn_k_b") || has(n, "attn_v_b"))
        return VF_ROLE_ATTN_LORA;
    if (has(n, "q_proj") || has(n, "attn_q.") || has(n, "self.query"))
        return VF_ROLE_ATTN_Q;
    if (has(n, "k_proj") || has(n, "attn_k.") || has(n, "self.key"))
        return VF_ROLE_ATTN_K;
    /* not Phi-3's fused qkv_proj, which contains "v_proj" */
    if ((has(n, "v_proj") && !has(n, "qkv_proj")) || has(n, "attn_v.") || has(n, "self.value"))
        return VF_ROLE_ATTN_V;
    if (has(n, "qkv_proj") || has(n, "c_attn") || has(n, "query_key_value") || has(n, "attn_qkv") ||
        has(n, "Wqkv"))
        return VF_ROLE_ATTN_QKV;
    if (has(n, "o_proj") || has(n, "attn_output") || has(n, "attn.c_proj") || has(n, "attention.dense") ||
        has(n, "attention.output.dense") || has(n, "self_attention.dense") || has(n, "out_proj"))
        return VF_ROLE_ATTN_O;
    if (has(n, "gate_up_proj"))
        return VF_ROLE_MLP_UP;
    if (has(n, "gate_proj") || has(n, "ffn_gate") || has(n, ".w1.") || has(n, "mlp.fc1"))
        return VF_ROLE_MLP_GATE;
    if (has(n, "up_proj") || has(n, "ffn_up") || has(n, "c_fc") || has(n, "dense_h_to_4h") ||
        has(n, "intermediate.dense") || has(n, ".w3.") || has(n, "fc_in"))
        return VF_ROLE_MLP_UP;
    if (has(n, "down_proj") || has(n, "ffn_down") || has(n, "mlp.c_proj") || has(n, "dense_4h_to_h") ||
        has(n, ".output.dense") || has(n, ".w2.") || has(n, "fc_out") || has(n, "mlp.fc2"))
        return VF_ROLE_MLP_DOWN;
    return VF_ROLE_OTHER;
#undef ENDS
}

void vf__model_classify(vf_model *m)
{
    const vf_hparams *hp = &m->hp;
    for (size_t i = 0; i < m->n_tensors; i++) {
        vf_tensor *t = &m->tensors[i];
        /* a vision tower's blocks are not the decoder's layers */
        t->layer = t->flags & VF_TENSOR_VISION ? -1 : tensor_layer_from_name(t->name);
        vf_role r = tensor_role_from_name(t->name);
        /* a bias of an expert projection is still an expert's */
        if (r == VF_ROLE_OTHER && t->dtype == VF_DTYPE_F8_E8M0)
            r = VF_ROLE_QUANT_AUX; /* a block scale (DeepSeek-V4's ".scale"): E8M0 holds nothing else */
        t->role = r;
        if (r == VF_ROLE_BUFFER)
            t->flags |= VF_TENSOR_NOT_PARAM;
        if (hp->n_layers > 0 && hp->n_mtp_layers > 0 && t->layer >= (int32_t)hp->n_layers)
            t->flags |= VF_TENSOR_MTP;
        if (r == VF_ROLE_EXPERT && t->n_experts == 0 && hp->n_experts > 1 && t->n_dims >= 2 &&
            t->shape[0] == hp->n_experts)
            t->n_experts = hp->n_experts;
    }
}
