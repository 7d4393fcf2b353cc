/* arch_classic.c — the pre-llama families: GPT-2, GPT-BigCode (StarCoder,
 * multi-query), GPT-NeoX (Pythia), BERT, Falcon (RefinedWeb / RW and the
 * in-library falcon format). Names and shapes as their reference checkpoints
 * store them. */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

/* GPT-2: Conv1D layers store weight [in, out]. The published checkpoint
 * (openai-community/gpt2 model.safetensors) has no "transformer." prefix and
 * keeps each block's causal mask h.N.attn.bias [1, 1, n_positions,
 * n_positions] as a stored buffer; the head is tied to wte. */
vf_status vf__arch_gpt2(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, P = hp->context_length;
    if (!P)
        return vf__err(b->err, VF_EFORMAT, b->path, "gpt2 config lacks n_positions");
    vf__ab_param(b, hp->vocab_size, h, "wte.weight");
    vf__ab_param(b, P, h, "wpe.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        vf__ab_layernorm(b, h, "h.%u.ln_1", i);
        char name[64];
        snprintf(name, sizeof name, "h.%u.attn.bias", i);
        vf__ab_raw(b, b->dt, VF_TENSOR_NOT_PARAM, UINT64_MAX, 4, (uint64_t[]){1, 1, P, P}, name);
        vf__ab_param(b, h, 3 * h, "h.%u.attn.c_attn.weight", i);
        vf__ab_param(b, 3 * h, 0, "h.%u.attn.c_attn.bias", i);
        vf__ab_param(b, h, h, "h.%u.attn.c_proj.weight", i);
        vf__ab_param(b, h, 0, "h.%u.attn.c_proj.bias", i);
        vf__ab_layernorm(b, h, "h.%u.ln_2", i);
        vf__ab_param(b, h, ff, "h.%u.mlp.c_fc.weight", i);
        vf__ab_param(b, ff, 0, "h.%u.mlp.c_fc.bias", i);
        vf__ab_param(b, ff, h, "h.%u.mlp.c_proj.weight", i);
        vf__ab_param(b, h, 0, "h.%u.mlp.c_proj.bias", i);
    }
    vf__ab_layernorm(b, h, "ln_f");
    if (!hp->tie_word_embeddings)
        vf__ab_param(b, hp->vocab_size, h, "lm_head.weight");
    return b->st;
}

/* GPT-BigCode: nn.Linear layers; c_attn holds q plus one shared k and v head
 * under multi_query ([h + 2*head_dim, h]), else [3h, h]. */
vf_status vf__arch_bigcode(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, hd = hp->head_dim;
    uint64_t qkv = h + 2 * (uint64_t)hp->n_kv_heads * hd;
    vf__ab_param(b, hp->vocab_size, h, "transformer.wte.weight");
    vf__ab_param(b, hp->context_length, h, "transformer.wpe.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "transformer.h.%u.", i);
        vf__ab_layernorm(b, h, "%sln_1", p);
        vf__ab_linear(b, VF_LIN_BIAS, qkv, h, "%sattn.c_attn", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sattn.c_proj", p);
        vf__ab_layernorm(b, h, "%sln_2", p);
        vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.c_fc", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.c_proj", p);
    }
    vf__ab_layernorm(b, h, "transformer.ln_f");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "lm_head");
    return b->st;
}

/* GPT-NeoX (Pythia): fused query_key_value [3h, h], LayerNorms with bias,
 * untied embed_out by default. Partial rotary (rotary_pct) adds no weights. */
vf_status vf__arch_neox(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size;
    unsigned bias = vf__cfg_bool(b->cfg, "attention_bias", true) ? VF_LIN_BIAS : 0;
    vf__ab_param(b, hp->vocab_size, h, "gpt_neox.embed_in.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "gpt_neox.layers.%u.", i);
        vf__ab_layernorm(b, h, "%sinput_layernorm", p);
        vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
        vf__ab_linear(b, bias, 3 * h, h, "%sattention.query_key_value", p);
        vf__ab_linear(b, bias, h, h, "%sattention.dense", p);
        vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.dense_h_to_4h", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.dense_4h_to_h", p);
    }
    vf__ab_layernorm(b, h, "gpt_neox.final_layer_norm");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "embed_out");
    return b->st;
}

static bool arch_is(const json_t *root, const char *name)
{
    const json_t *a = json_object_get(root, "architectures");
    size_t n = json_array_size(a);
    for (size_t i = 0; i < n; i++)
        if (json_is_string(json_array_get(a, i)) && strcmp(json_string_value(json_array_get(a, i)), name) == 0)
            return true;
    return false;
}

/* A classification head's width: id2label's entries (transformers'
 * PretrainedConfig default, 2, when the config has none). */
uint64_t vf__ab_num_labels(const vf__ab *b)
{
    const json_t *labels = json_object_get(b->root, "id2label");
    return json_is_object(labels) && json_object_size(labels) ? json_object_size(labels) : 2;
}

/* The BERT encoder under PRE ("bert.", "roberta."): word, position and
 * token-type embeddings with their LayerNorm, then the layers (post-LN,
 * biased q/k/v/output, GELU FFN). RoBERTa's tables are the same tensors. */
vf_status vf__ab_bert_encoder(vf__ab *b, const char *pre)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, tv = 2;
    if (vf__cfg_u64(b->cfg, &tv, "type_vocab_size", NULL) < 0 || tv > 1024)
        return vf__err(b->err, VF_ERANGE, b->path, "type_vocab_size out of range");
    vf__ab_param(b, hp->vocab_size, h, "%sembeddings.word_embeddings.weight", pre);
    vf__ab_param(b, hp->context_length, h, "%sembeddings.position_embeddings.weight", pre);
    if (tv)
        vf__ab_param(b, tv, h, "%sembeddings.token_type_embeddings.weight", pre);
    vf__ab_layernorm(b, h, "%sembeddings.LayerNorm", pre);
    /* the embeddings' position_ids buffer was persistent (saved with the
     * weights) until transformers 4.31 made it non-persistent */
    unsigned major = 0, minor = 0;
    const char *tv_s = vf__cfg_str(b->root, "transformers_version");
    if (tv_s && sscanf(tv_s, "%u.%u", &major, &minor) == 2 && (major < 4 || (major == 4 && minor < 31))) {
        char name[96];
        snprintf(name, sizeof name, "%sembeddings.position_ids", pre);
        vf__ab_raw(b, VF_DTYPE_I64, VF_TENSOR_NOT_PARAM, UINT64_MAX, 2, (uint64_t[]){1, hp->context_length}, name);
    }
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "%sencoder.layer.%u.", pre, i);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sattention.self.query", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sattention.self.key", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sattention.self.value", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sattention.output.dense", p);
        vf__ab_layernorm(b, h, "%sattention.output.LayerNorm", p);
        vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%sintermediate.dense", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%soutput.dense", p);
        vf__ab_layernorm(b, h, "%soutput.LayerNorm", p);
    }
    return b->st;
}

/* BERT: BertModel under "bert." with its pooler (Google's original
 * checkpoints keep it), plus the heads its architectures name:
 * BertForMaskedLM / BertForPreTraining → cls.predictions (decoder tied to
 * the word embeddings, own bias); BertForPreTraining → cls.seq_relationship;
 * sequence classification → classifier [num_labels, h]. */
vf_status vf__arch_bert(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    if (vf__ab_bert_encoder(b, "bert.") != VF_OK)
        return b->st;
    vf__ab_linear(b, VF_LIN_BIAS, h, h, "bert.pooler.dense");
    bool pre = arch_is(b->root, "BertForPreTraining");
    if (pre || arch_is(b->root, "BertForMaskedLM")) {
        vf__ab_param(b, hp->vocab_size, 0, "cls.predictions.bias");
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "cls.predictions.transform.dense");
        vf__ab_layernorm(b, h, "cls.predictions.transform.LayerNorm");
        if (!hp->tie_word_embeddings)
            vf__ab_param(b, hp->vocab_size, h, "cls.predictions.decoder.weight");
    }
    if (pre)
        vf__ab_linear(b, VF_LIN_BIAS, 2, h, "cls.seq_relationship");
    if (arch_is(b->root, "BertForSequenceClassification"))
        vf__ab_linear(b, VF_LIN_BIAS, vf__ab_num_labels(b), h, "classifier");
    return b->st;
}

/* Falcon, both config formats (RW: n_head / n_layer / n_head_kv; falcon:
 * num_attention_heads / num_hidden_layers / num_kv_heads). Fused
 * query_key_value [(heads + 2*kv_heads) * head_dim, h] (kv_heads = 1 under
 * multi_query unless new_decoder_architecture); new_decoder_architecture
 * has ln_attn + ln_mlp (num_ln_in_parallel_attn = 2), parallel_attn one
 * input_layernorm, sequential blocks add post_attention_layernorm. The head
 * is tied to word_embeddings. ALiBi adds no weights. */
vf_status vf__arch_falcon(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size, hd = hp->head_dim;
    bool new_arch = vf__cfg_bool(c, "new_decoder_architecture", false) || strcmp(hp->architecture, "RefinedWeb") == 0;
    bool parallel = vf__cfg_bool(c, "parallel_attn", true);
    unsigned bias = vf__cfg_bool(c, "bias", false) ? VF_LIN_BIAS : 0;
    uint64_t n_ln = 2;
    if (vf__cfg_u64(c, &n_ln, "num_ln_in_parallel_attn", NULL) <= 0)
        n_ln = 2;
    uint64_t qkv = ((uint64_t)hp->n_heads + 2 * (uint64_t)hp->n_kv_heads) * hd;
    vf__ab_param(b, hp->vocab_size, h, "transformer.word_embeddings.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "transformer.h.%u.", i);
        if (new_arch && n_ln == 2) {
            vf__ab_layernorm(b, h, "%sln_attn", p);
            vf__ab_layernorm(b, h, "%sln_mlp", p);
        } else {
            vf__ab_layernorm(b, h, "%sinput_layernorm", p);
            if (!new_arch && !parallel) {
                vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
            }
        }
        vf__ab_linear(b, bias, qkv, h, "%sself_attention.query_key_value", p);
        vf__ab_linear(b, bias, h, hp->n_heads * hd, "%sself_attention.dense", p);
        vf__ab_linear(b, bias, ff, h, "%smlp.dense_h_to_4h", p);
        vf__ab_linear(b, bias, h, ff, "%smlp.dense_4h_to_h", p);
    }
    vf__ab_layernorm(b, h, "transformer.ln_f");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "lm_head");
    return b->st;
}
