/* arch_text.c — text decoders of 2025-26 whose blocks differ from llama's in
 * their norms, q/k norms, MLP or experts: granitemoe, exaone4, apertus,
 * hunyuan_v1_dense, glm4, glm4_moe, minimax_m2, dots1, phimoe, bailing_moe
 * (Ling), llama4's and mllama's text models, and "generic" (an unknown family counted as a llama
 * decoder with the MoE keys it states: approximate). Names and shapes as
 * transformers' modeling_<family>.py store them (docs/architectures.md). */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

enum { N_STD, N_EXAONE, N_GLM4, N_APERTUS, N_LAYERNORM }; /* norm layout of a block */
enum { M_DENSE, M_GRANITE, M_MIXTRAL, M_MINIMAX, M_DEEPSEEK, M_LLAMA4 }; /* its experts */

typedef struct tfam {
    const char *type;
    int norms;
    int qk_norm;          /* 0 none, 1 per head, 2 whole projection */
    const char *qn, *kn;  /* q/k norm names (NULL: q_norm, k_norm) */
    bool o_nobias;        /* attention_bias on q, k, v only */
    bool fused_gate_up;   /* mlp.gate_up_proj */
    bool plain_mlp;       /* up/down with xIELU's two learned scalars */
    int moe;
    bool mtp;             /* DeepSeek-style next-token blocks after the last layer */
} tfam;

static const tfam fams[] = {
    {"generic", N_STD, 0, NULL, NULL, false, false, false, M_DEEPSEEK, false},
    {"granitemoe", N_STD, 0, NULL, NULL, false, false, false, M_GRANITE, false},
    {"exaone4", N_EXAONE, 1, NULL, NULL, false, false, false, M_DENSE, false},
    {"apertus", N_APERTUS, 1, NULL, NULL, false, false, true, M_DENSE, false},
    {"hunyuan_v1_dense", N_STD, 1, "query_layernorm", "key_layernorm", false, false, false, M_DENSE, false},
    {"glm4", N_GLM4, 0, NULL, NULL, true, true, false, M_DENSE, false},
    {"glm4_moe", N_STD, 1, NULL, NULL, true, false, false, M_DEEPSEEK, true},
    {"minimax_m2", N_STD, 2, NULL, NULL, false, false, false, M_MINIMAX, false},
    {"dots1", N_STD, 1, NULL, NULL, false, false, false, M_DEEPSEEK, false},
    {"phimoe", N_LAYERNORM, 0, NULL, NULL, false, false, false, M_MIXTRAL, false},
    {"bailing_moe", N_STD, 0, NULL, NULL, false, false, false, M_DEEPSEEK, false},
    {"llama4_text", N_STD, 0, NULL, NULL, false, false, false, M_LLAMA4, false},
    {"mllama_text_model", N_STD, 0, NULL, NULL, false, false, false, M_DENSE, false},
};

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static void norm(vf__ab *b, const tfam *f, const char *p, const char *name)
{
    uint64_t h = b->m->hp.hidden_size;
    if (f->norms == N_LAYERNORM)
        vf__ab_layernorm(b, h, "%s%s", p, name);
    else
        vf__ab_param(b, h, 0, "%s%s.weight", p, name);
}

/* Whether block i has routed experts, by each family's rule. */
static bool moe_layer(const vf__ab *b, const tfam *f, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    if (!hp->n_experts || f->moe == M_DENSE)
        return false;
    uint32_t step = hp->moe_layer_freq ? hp->moe_layer_freq : 1;
    if (f->moe == M_LLAMA4)
        return (i + 1) % step == 0; /* moe_layers = range(step - 1, L, step) */
    return i >= hp->first_k_dense && i % step == 0;
}

static void experts(vf__ab *b, const tfam *f, const char *p)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, E = hp->n_experts, ff = hp->moe_intermediate_size;
    char q[224];
    switch (f->moe) {
    case M_GRANITE: /* GraniteMoeMoE: stacked input (gate+up) and output linears, router.layer */
        vf__ab_param3(b, E, 2 * ff, h, "%sblock_sparse_moe.input_linear.weight", p);
        vf__ab_param3(b, E, h, ff, "%sblock_sparse_moe.output_linear.weight", p);
        vf__ab_linear(b, 0, E, h, "%sblock_sparse_moe.router.layer", p);
        break;
    case M_MIXTRAL:
    case M_MINIMAX:
        snprintf(q, sizeof q, "%sblock_sparse_moe.", p);
        vf__ab_linear(b, 0, E, h, "%sgate", q);
        if (f->moe == M_MINIMAX) { /* sigmoid routing with a float32 correction bias */
            char name[256];
            snprintf(name, sizeof name, "%se_score_correction_bias", q);
            vf__ab_raw(b, VF_DTYPE_F32, 0, UINT64_MAX, 1, &E, name);
        }
        vf__ab_experts(b, q, E, h, ff, "w1", "w3", "w2");
        break;
    case M_LLAMA4: /* Llama4TextMoe: router, stacked experts, one shared expert */
        vf__ab_linear(b, 0, E, h, "%sfeed_forward.router", p);
        vf__ab_param3(b, E, h, 2 * ff, "%sfeed_forward.experts.gate_up_proj", p);
        vf__ab_param3(b, E, ff, h, "%sfeed_forward.experts.down_proj", p);
        snprintf(q, sizeof q, "%sfeed_forward.shared_expert.", p);
        vf__ab_mlp(b, q, h, ff, 0, "gate_proj", "up_proj", "down_proj");
        break;
    default: { /* DeepSeek-style: router, correction bias, experts, shared experts */
        snprintf(q, sizeof q, "%smlp.", p);
        vf__ab_linear(b, VF_LIN_NOQUANT, E, h, "%sgate", q);
        if (is(f->type, "bailing_moe")) { /* BailingMoeGate: expert_bias only when enabled */
            if (vf__cfg_bool(b->cfg, "moe_router_enable_expert_bias", false)) {
                char name[256];
                snprintf(name, sizeof name, "%sgate.expert_bias", q);
                vf__ab_raw(b, VF_DTYPE_F32, 0, UINT64_MAX, 1, &E, name);
            }
        } else if (!is(f->type, "generic") || is(vf__cfg_str(b->cfg, "topk_method"), "noaux_tc")) {
            char name[256];
            snprintf(name, sizeof name, "%sgate.e_score_correction_bias", q);
            vf__ab_raw(b, VF_DTYPE_F32, 0, UINT64_MAX, 1, &E, name);
        }
        vf__ab_experts(b, q, E, h, ff, "gate_proj", "up_proj", "down_proj");
        if (hp->n_shared_experts) {
            uint64_t sff = hp->shared_expert_intermediate_size;
            snprintf(q, sizeof q, "%smlp.shared_experts.", p);
            vf__ab_mlp(b, q, h, sff ? sff : ff * hp->n_shared_experts, 0, "gate_proj", "up_proj", "down_proj");
        }
    }
    }
}

/* The dense feed-forward of block i. */
static void dense(vf__ab *b, const tfam *f, const char *p)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, ff = hp->intermediate_size;
    unsigned mb = hp->mlp_bias ? VF_LIN_BIAS : 0;
    char q[192];
    if (f->moe == M_LLAMA4) {
        uint64_t mlp = ff;
        vf__cfg_u64(b->cfg, &mlp, "intermediate_size_mlp", NULL);
        snprintf(q, sizeof q, "%sfeed_forward.", p);
        vf__ab_mlp(b, q, h, mlp, 0, "gate_proj", "up_proj", "down_proj");
        return;
    }
    snprintf(q, sizeof q, "%smlp.", p);
    if (f->fused_gate_up) {
        vf__ab_linear(b, mb, 2 * ff, h, "%sgate_up_proj", q);
        vf__ab_linear(b, mb, h, ff, "%sdown_proj", q);
    } else if (f->plain_mlp) {
        vf__ab_mlp(b, q, h, ff, mb, NULL, "up_proj", "down_proj");
        vf__ab_param(b, 1, 0, "%sact_fn.alpha_p", q); /* XIELUActivation's learned scalars */
        vf__ab_param(b, 1, 0, "%sact_fn.alpha_n", q);
    } else {
        vf__ab_mlp(b, q, h, ff, mb, "gate_proj", "up_proj", "down_proj");
    }
}

static bool cross_layer(const vf__ab *b, uint32_t i)
{
    return vf__cfg_in_list(json_object_get(b->cfg, "cross_attention_layers"), i);
}

static void block(vf__ab *b, const tfam *f, const char *p, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    bool cross = is(f->type, "mllama_text_model") && cross_layer(b, i);
    vf__attn a = {.h = hp->hidden_size, .heads = hp->n_heads, .kv = hp->n_kv_heads, .hd = hp->head_dim,
                  .qkv_bias = hp->attention_bias, .o_bias = hp->attention_bias && !f->o_nobias,
                  .qk_norm = f->qk_norm, .qn = f->qn, .kn = f->kn};
    if (is(f->type, "hunyuan_v1_dense") && !vf__cfg_bool(b->cfg, "use_qk_norm", false))
        a.qk_norm = 0;
    if (is(f->type, "glm4_moe") && !vf__cfg_bool(b->cfg, "use_qk_norm", false))
        a.qk_norm = 0;
    char q[192];
    if (f->norms == N_APERTUS) {
        norm(b, f, p, "attention_layernorm");
        norm(b, f, p, "feedforward_layernorm");
    } else if (f->norms != N_EXAONE) {
        norm(b, f, p, "input_layernorm");
    }
    if (cross) { /* MllamaCrossAttentionDecoderLayer: attention over the image, tanh gates */
        a.qk_norm = 1;
        snprintf(q, sizeof q, "%scross_attn.", p);
        vf__ab_param(b, 1, 0, "%scross_attn_attn_gate", p);
        vf__ab_param(b, 1, 0, "%scross_attn_mlp_gate", p);
    } else {
        snprintf(q, sizeof q, "%sself_attn.", p);
    }
    if (is(f->type, "bailing_moe")) { /* BailingMoeAttention: fused query_key_value, dense */
        uint64_t qkv = (a.heads + 2 * a.kv) * a.hd;
        vf__ab_linear(b, vf__cfg_bool(b->cfg, "use_qkv_bias", false) ? VF_LIN_BIAS : 0, qkv, a.h,
                      "%sattention.query_key_value", p);
        vf__ab_linear(b, vf__cfg_bool(b->cfg, "use_bias", false) ? VF_LIN_BIAS : 0, a.h, a.heads * a.hd,
                      "%sattention.dense", p);
    } else {
        vf__ab_attn(b, q, &a);
    }
    if (f->norms == N_GLM4)
        norm(b, f, p, "post_self_attn_layernorm");
    if (f->norms != N_APERTUS)
        norm(b, f, p, "post_attention_layernorm");
    if (f->norms == N_EXAONE)
        norm(b, f, p, "post_feedforward_layernorm");
    if (f->norms == N_GLM4)
        norm(b, f, p, "post_mlp_layernorm");
    if (moe_layer(b, f, i))
        experts(b, f, p);
    else
        dense(b, f, p);
}

/* DeepSeek-style next-token blocks stored after the last layer (GLM-4.5:
 * layer 46 with its own embedding and head, enorm, hnorm, eh_proj). */
static void mtp_blocks(vf__ab *b, const tfam *f, const char *P)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, V = hp->vocab_size;
    for (uint32_t k = 0; k < hp->n_mtp_layers && b->st == VF_OK; k++) {
        char p[128];
        uint32_t i = hp->n_layers + k;
        snprintf(p, sizeof p, "%slayers.%u.", P, i);
        vf__ab_param(b, V, h, "%sembed_tokens.weight", p);
        vf__ab_param(b, h, 0, "%senorm.weight", p);
        vf__ab_param(b, h, 0, "%shnorm.weight", p);
        vf__ab_linear(b, VF_LIN_NOQUANT, h, 2 * h, "%seh_proj", p);
        block(b, f, p, i);
        vf__ab_param(b, h, 0, "%sshared_head.norm.weight", p);
        vf__ab_linear(b, VF_LIN_NOQUANT, V, h, "%sshared_head.head", p);
    }
}

vf_status vf__arch_text(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const char *type = b->type ? b->type : hp->architecture;
    const tfam *f = &fams[0];
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++)
        if (is(fams[i].type, type))
            f = &fams[i];
    const char *P = b->pre ? b->pre : "model.";
    uint64_t h = hp->hidden_size, V = hp->vocab_size;
    /* mllama's embedding has 8 more rows than the head: the image special tokens */
    vf__ab_param(b, is(type, "mllama_text_model") ? V + 8 : V, h, "%s%s.weight", P,
                 is(type, "bailing_moe") ? "word_embeddings" : "embed_tokens");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[128];
        snprintf(p, sizeof p, "%slayers.%u.", P, i);
        block(b, f, p, i);
    }
    norm(b, f, P, "norm");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, f->norms == N_LAYERNORM && vf__cfg_bool(b->cfg, "lm_head_bias", false) ? VF_LIN_BIAS : 0, V,
                      h, "%s", b->head ? b->head : "lm_head");
    if (f->mtp)
        mtp_blocks(b, f, P);
    return b->st;
}
