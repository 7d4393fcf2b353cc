/* train_arch.c — the shapes and block style the activation model needs.
 * hparams first (the architectures module fills them), then config.json's own
 * keys (activation function, dropout, which HF writes per family), then the
 * tensors themselves (shapes and which projections exist). */
#include "memory/train/train_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static uint64_t cfg_u64(const json_t *cfg, const char *k1, const char *k2)
{
    uint64_t v = 0;
    const char *keys[2] = {k1, k2};
    for (int i = 0; i < 2; i++) {
        if (!keys[i] || !cfg)
            continue;
        json_t *j = json_object_get(cfg, keys[i]);
        if (j && vf__json_u64(j, &v) && v > 0)
            return v;
    }
    return 0;
}

static double cfg_num(const json_t *cfg, const char *k)
{
    json_t *j = cfg ? json_object_get(cfg, k) : NULL;
    return j && json_is_number(j) ? json_number_value(j) : 0.0;
}

static const char *cfg_str(const json_t *cfg, const char *k)
{
    json_t *j = cfg ? json_object_get(cfg, k) : NULL;
    return j && json_is_string(j) ? json_string_value(j) : NULL;
}

/* Families whose HF blocks use LayerNorm and compute the eager softmax in the
 * activations' dtype (GPT-2's attention has no fp32 upcast). */
static bool layernorm_family(const char *mt)
{
    static const char *const fam[] = {"gpt2", "gpt_bigcode", "gpt_neo", "gptj", "gpt_neox", "opt",
                                      "bloom", "falcon", "phi", "codegen", "starcoder", "bert", "roberta"};
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
        if (mt && strcmp(mt, fam[i]) == 0)
            return true;
    return false;
}

/* The dimension of a 2-D matrix that is not `hidden` (HF Linear is [out,in],
 * GPT-2's Conv1D [in,out]). */
static uint64_t other_dim(const vf_tensor *t, uint64_t hidden)
{
    if (t->n_dims != 2)
        return 0;
    return t->shape[0] == hidden ? t->shape[1] : t->shape[0];
}

static vf_status arch_of(const vf_model *m, vf__tarch *a, vf_error *err)
{
    memset(a, 0, sizeof *a);
    const vf_hparams *hp = &m->hp;
    const json_t *cfg = m->config;
    const char *mt = hp->architecture[0] ? hp->architecture : cfg_str(cfg, "model_type");

    a->n_layers = hp->n_layers ? hp->n_layers : (uint32_t)cfg_u64(cfg, "num_hidden_layers", "n_layer");
    a->hidden = hp->hidden_size ? hp->hidden_size : cfg_u64(cfg, "hidden_size", "n_embd");
    a->inter = hp->intermediate_size ? hp->intermediate_size : cfg_u64(cfg, "intermediate_size", "n_inner");
    a->vocab = hp->vocab_size ? hp->vocab_size : cfg_u64(cfg, "vocab_size", NULL);
    a->n_heads = hp->n_heads ? hp->n_heads : (uint32_t)cfg_u64(cfg, "num_attention_heads", "n_head");
    a->n_kv_heads = hp->n_kv_heads ? hp->n_kv_heads : (uint32_t)cfg_u64(cfg, "num_key_value_heads", NULL);
    a->head_dim = hp->head_dim ? hp->head_dim : (uint32_t)cfg_u64(cfg, "head_dim", NULL);
    a->n_experts = hp->n_experts ? hp->n_experts : (uint32_t)cfg_u64(cfg, "num_local_experts", "num_experts");
    a->n_experts_active =
        hp->n_experts_active ? hp->n_experts_active : (uint32_t)cfg_u64(cfg, "num_experts_per_tok", NULL);
    a->moe_inter = hp->moe_intermediate_size ? hp->moe_intermediate_size : cfg_u64(cfg, "moe_intermediate_size", NULL);
    a->shared_inter = hp->shared_expert_intermediate_size;
    a->tied = hp->tie_word_embeddings;
    if (cfg && json_is_true(json_object_get(cfg, "tie_word_embeddings")))
        a->tied = true;

    /* What the tensors say: shapes, projections, position embeddings. */
    bool has_gate = false, has_pos = false, has_head = false, norm_bias = false;
    int32_t max_layer = -1;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->layer > max_layer && !(t->flags & VF_TENSOR_MTP))
            max_layer = t->layer;
        if (t->role == VF_ROLE_MLP_GATE || strstr(t->name, "gate_up_proj"))
            has_gate = true;
        if (t->role == VF_ROLE_POS_EMBED)
            has_pos = true;
        if (t->role == VF_ROLE_OUTPUT)
            has_head = true;
        /* BertForSequenceClassification (modeling_bert.py): pooler on the first
         * token, dropout, then `classifier` [num_labels, h]; no LM head */
        if (t->layer < 0 && t->n_dims == 2 && vf__ends_with(t->name, "classifier.weight"))
            a->cls_labels = t->shape[0];
        if (t->role == VF_ROLE_NORM && vf__ends_with(t->name, ".bias"))
            norm_bias = true;
        if (t->role == VF_ROLE_EMBED && t->n_dims == 2) {
            if (!a->vocab)
                a->vocab = t->shape[0];
            if (!a->hidden)
                a->hidden = t->shape[1];
        }
    }
    if (!a->n_layers && max_layer >= 0)
        a->n_layers = (uint32_t)max_layer + 1;
    if (!a->inter && a->hidden) {
        for (size_t i = 0; i < m->n_tensors && !a->inter; i++) {
            const vf_tensor *t = &m->tensors[i];
            if ((t->role == VF_ROLE_MLP_UP || t->role == VF_ROLE_MLP_GATE) && !strstr(t->name, "gate_up_proj"))
                a->inter = other_dim(t, a->hidden);
        }
        if (!a->inter)
            a->inter = 4 * a->hidden; /* GPT-2's n_inner: null means 4 * n_embd */
    }
    if (a->cls_labels)
        a->tied = false; /* the word embeddings are no output head there */
    if (!has_head && !a->cls_labels && m->n_tensors > 0)
        a->tied = true; /* no separate head tensor: the head is the embedding */
    if (!a->n_kv_heads)
        a->n_kv_heads = a->n_heads;
    if (!a->head_dim && a->n_heads)
        a->head_dim = (uint32_t)(a->hidden / a->n_heads);

    if (!a->n_heads && hp->recurrent_state_bytes && a->n_layers)
        return vf__err(err, VF_EUNSUPPORTED, m->source ? m->source : "",
                       "training estimates of attention-free (state-space) models are not modelled; inference is");
    if (!a->n_layers || !a->hidden || !a->vocab || !a->n_heads || !a->head_dim)
        return vf__err(err, VF_EUNSUPPORTED, m->source ? m->source : "",
                       "training estimate needs layers, hidden size, heads and vocabulary (add config.json)");

    bool ln = layernorm_family(mt) || norm_bias;
    a->rmsnorm = !ln;
    a->softmax_upcast = !ln;
    a->gated_mlp = has_gate;
    a->learned_pos = has_pos;
    a->rope = !has_pos;
    const char *act = cfg_str(cfg, "activation_function");
    if (!act)
        act = cfg_str(cfg, "hidden_act");
    a->gelu_python = act && (strcmp(act, "gelu_new") == 0 || strcmp(act, "gelu_fast") == 0);
    a->attn_drop = cfg_num(cfg, "attn_pdrop") + cfg_num(cfg, "attention_dropout") + cfg_num(cfg, "attention_probs_dropout_prob");
    a->resid_drop = cfg_num(cfg, "resid_pdrop") + cfg_num(cfg, "hidden_dropout") + cfg_num(cfg, "hidden_dropout_prob");
    a->embd_drop = cfg_num(cfg, "embd_pdrop");
    if (a->n_experts > 1 && !a->moe_inter)
        a->moe_inter = a->inter;
    return VF_OK;
}

/* The reading depends on the model alone, and a fit runs a hundred training
 * estimates of one model (each read walked its ~100k tensors for
 * DeepSeek-V3): the first one is kept with the model. */
static pthread_mutex_t tarch_lock = PTHREAD_MUTEX_INITIALIZER;

static const char tarch_key = 0; /* names this file's memo on the model */

vf_status vf__train_arch(const vf_model *m, vf__tarch *a, vf_error *err)
{
    pthread_mutex_lock(&tarch_lock);
    const vf__tarch *kept = vf__model_memo(m, &tarch_key);
    if (kept)
        *a = *kept;
    pthread_mutex_unlock(&tarch_lock);
    if (kept)
        return VF_OK;
    vf_status st = arch_of(m, a, err);
    vf__tarch *e = st == VF_OK ? malloc(sizeof *e) : NULL;
    if (!e)
        return st;
    *e = *a;
    pthread_mutex_lock(&tarch_lock);
    if (!vf__model_memo(m, &tarch_key) && vf__model_memo_set(m, &tarch_key, e, free))
        e = NULL;
    pthread_mutex_unlock(&tarch_lock);
    free(e);
    return VF_OK;
}
