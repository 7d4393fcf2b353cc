/* arch_mamba_attn.c — Mamba-2 mixers beside attention in other ways than one
 * kind per layer: Falcon-H1 (every layer runs attention and a Mamba-2 mixer
 * side by side) and Zamba2 (Mamba-2 layers, with shared transformer blocks
 * applied at the hybrid layers, each application with its own LoRA adapters
 * and linear projection). Names and shapes as transformers'
 * modeling_falcon_h1.py / modeling_zamba2.py store them; class defaults
 * (configuration_falcon_h1.py / configuration_zamba2.py) where config.json
 * says nothing; docs/architectures.md lists them. */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

#define CAP_DIM ((uint64_t)1 << 20)

/* The output head unless tied. */
static void head(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, hp->hidden_size, "lm_head");
}

/* FalconH1Mixer: d_inner is mamba_d_ssm (class default 1024; null means
 * mamba_expand x hidden), mamba_d_head "auto" is d_inner / mamba_n_heads and
 * the class refuses d_head x n_heads != d_inner. in_proj's bias is
 * mamba_proj_bias, out_proj's projectors_bias; the gated norm only with
 * mamba_rms_norm. */
static vf__ssm2 falcon_mixer(vf__ab *b)
{
    const json_t *c = b->cfg;
    uint64_t h = b->m->hp.hidden_size;
    uint64_t inner = vf__ab_cfg(b, c, "mamba_d_ssm", 1024, CAP_DIM);
    if (json_is_null(json_object_get(c, "mamba_d_ssm")))
        inner = vf__ab_cfg(b, c, "mamba_expand", 2, 64) * h;
    uint64_t nh = vf__ab_cfg(b, c, "mamba_n_heads", 128, CAP_DIM);
    uint64_t hd = nh ? inner / nh : 0; /* "auto" */
    if (json_is_integer(json_object_get(c, "mamba_d_head")))
        hd = vf__ab_cfg(b, c, "mamba_d_head", hd, 65536);
    if (b->st == VF_OK && (nh == 0 || hd * nh != inner))
        vf__ab_fail(b, VF_EFORMAT, "mamba_d_head x mamba_n_heads (%llu x %llu) must equal mamba_d_ssm (%llu)",
                    (unsigned long long)hd, (unsigned long long)nh, (unsigned long long)inner);
    vf__ssm2 s = {.h = h, .heads = nh, .head_dim = hd,
                  .state = vf__ab_cfg(b, c, "mamba_d_state", 256, 65536),
                  .groups = vf__ab_cfg(b, c, "mamba_n_groups", 1, 4096),
                  .conv = vf__ab_cfg(b, c, "mamba_d_conv", 4, 1024),
                  .conv_bias = vf__cfg_bool(c, "mamba_conv_bias", true),
                  .proj_bias = vf__cfg_bool(c, "mamba_proj_bias", false),
                  .norm = vf__cfg_bool(c, "mamba_rms_norm", false),
                  .own_out_bias = true,
                  .out_bias = vf__cfg_bool(c, "projectors_bias", false)};
    return s;
}

/* FalconH1ForCausalLM: model.layers.i.{input_layernorm, mamba, self_attn,
 * pre_ff_layernorm, feed_forward}; the muP multipliers are floats in the
 * config, not parameters (mup_vector is a non-persistent buffer). */
static void falcon_h1(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    vf__ssm2 s = falcon_mixer(b);
    vf__attn a = {.h = h, .heads = hp->n_heads, .kv = hp->n_kv_heads, .hd = hp->head_dim,
                  .qkv_bias = hp->attention_bias, .o_bias = hp->attention_bias};
    unsigned mb = hp->mlp_bias ? VF_LIN_BIAS : 0;
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        vf__ab_hybrid_norms(b, i, h);
        snprintf(p, sizeof p, "model.layers.%u.mamba.", i);
        vf__ab_mamba2(b, p, &s);
        snprintf(p, sizeof p, "model.layers.%u.self_attn.", i);
        vf__ab_attn(b, p, &a);
        snprintf(p, sizeof p, "model.layers.%u.feed_forward.", i);
        vf__ab_mlp(b, p, h, hp->intermediate_size, mb, "gate_proj", "up_proj", "down_proj");
    }
    vf__ab_param(b, h, 0, "model.final_layernorm.weight");
    head(b);
}

/* Zamba2's shape: the per-layer "hybrid" flags (layers_block_type, class
 * default the 54-layer pattern of Zamba2-2.7B) and the keys its blocks read. */
typedef struct z2 {
    uint64_t h, ff, heads, kv, hd, rank, blocks; /* hd = 2h / heads: attention reads [hidden, embedding] */
    bool bias, attn_adapter;
    vf__ssm2 s;
} z2;

static z2 zamba2_keys(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    z2 z = {.h = hp->hidden_size, .ff = hp->intermediate_size, .heads = hp->n_heads, .kv = hp->n_kv_heads,
            .hd = hp->head_dim, .rank = vf__ab_cfg(b, c, "adapter_rank", 128, CAP_DIM),
            .blocks = vf__ab_cfg(b, c, "num_mem_blocks", 1, 4096),
            .bias = vf__cfg_bool(c, "add_bias_linear", false),
            .attn_adapter = vf__cfg_bool(c, "use_shared_attention_adapter", false)};
    uint64_t inner = vf__ab_cfg(b, c, "mamba_expand", 2, 64) * z.h;
    uint64_t nh = vf__ab_cfg(b, c, "n_mamba_heads", 8, CAP_DIM);
    /* Zamba2MambaMixer: conv1d always has a bias; mamba_headdim is derived */
    z.s = (vf__ssm2){.h = z.h, .heads = nh, .head_dim = nh ? inner / nh : 0,
                     .state = vf__ab_cfg(b, c, "mamba_d_state", 64, 65536),
                     .groups = vf__ab_cfg(b, c, "mamba_ngroups", 1, 4096),
                     .conv = vf__ab_cfg(b, c, "mamba_d_conv", 4, 1024), .conv_bias = true, .proj_bias = z.bias,
                     .norm = true};
    if (b->st == VF_OK && (z.blocks == 0 || nh == 0 || z.s.head_dim * nh != inner))
        vf__ab_fail(b, VF_EFORMAT, "num_mem_blocks and n_mamba_heads must be positive, n_mamba_heads dividing "
                                   "mamba_expand x hidden_size");
    return z;
}

/* One shared transformer block (Zamba2AttentionDecoderLayer) under prefix p,
 * with the adapters of every hybrid application j that uses it (j % blocks ==
 * k, each at its own index of the block's adapter lists). */
static void zamba2_block(vf__ab *b, const char *p, const z2 *z, uint64_t k, uint64_t n_hybrid)
{
    uint64_t ah = 2 * z->h, q = z->heads * z->hd;
    unsigned lb = z->bias ? VF_LIN_BIAS : 0;
    vf__ab_param(b, ah, 0, "%sinput_layernorm.weight", p);
    vf__ab_param(b, z->h, 0, "%spre_ff_layernorm.weight", p);
    vf__ab_linear(b, 0, q, ah, "%sself_attn.q_proj", p);
    vf__ab_linear(b, 0, z->kv * z->hd, ah, "%sself_attn.k_proj", p);
    vf__ab_linear(b, 0, z->kv * z->hd, ah, "%sself_attn.v_proj", p);
    vf__ab_linear(b, 0, z->h, q, "%sself_attn.o_proj", p);
    vf__ab_linear(b, lb, 2 * z->ff, z->h, "%sfeed_forward.gate_up_proj", p);
    vf__ab_linear(b, lb, z->h, z->ff, "%sfeed_forward.down_proj", p);
    static const char *const qkv[] = {"q", "k", "v"};
    for (uint64_t j = k; j < n_hybrid && b->st == VF_OK; j += z->blocks) {
        unsigned long long jj = (unsigned long long)j;
        vf__ab_linear(b, 0, z->rank, z->h, "%sfeed_forward.gate_up_proj_adapter_list.%llu.0", p, jj);
        vf__ab_linear(b, 0, 2 * z->ff, z->rank, "%sfeed_forward.gate_up_proj_adapter_list.%llu.1", p, jj);
        for (int t = 0; t < 3 && z->attn_adapter; t++) {
            vf__ab_linear(b, 0, z->rank, ah, "%sself_attn.linear_%s_adapter_list.%llu.0", p, qkv[t], jj);
            vf__ab_linear(b, 0, ah, z->rank, "%sself_attn.linear_%s_adapter_list.%llu.1", p, qkv[t], jj);
        }
    }
}

/* Zamba2ForCausalLM: every layer has a Mamba-2 decoder (mamba + its
 * input_layernorm); a hybrid layer wraps it as mamba_decoder beside its own
 * linear [h, h] and the shared block (num_mem_blocks of them, cycled). The
 * checkpoint stores each shared block once (tied weights), under the first
 * hybrid layer that applies it (Zamba2-2.7B: Hub total exact). */
static void zamba2(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    z2 z = zamba2_keys(b);
    uint64_t n_hybrid = 0;
    for (uint32_t i = 0; i < hp->n_layers; i++)
        n_hybrid += hp->layer_no_kv && !hp->layer_no_kv[i];
    vf__ab_param(b, hp->vocab_size, z.h, "model.embed_tokens.weight");
    uint64_t j = 0; /* hybrid ordinal */
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        bool hy = hp->layer_no_kv && !hp->layer_no_kv[i];
        char p[112];
        snprintf(p, sizeof p, hy ? "model.layers.%u.mamba_decoder." : "model.layers.%u.", i);
        vf__ab_param(b, z.h, 0, "%sinput_layernorm.weight", p);
        char m[128];
        snprintf(m, sizeof m, "%smamba.", p);
        vf__ab_mamba2(b, m, &z.s);
        if (!hy)
            continue;
        vf__ab_linear(b, 0, z.h, z.h, "model.layers.%u.linear", i);
        if (j < z.blocks) {
            snprintf(p, sizeof p, "model.layers.%u.shared_transformer.", i);
            zamba2_block(b, p, &z, j, n_hybrid);
        }
        j++;
    }
    vf__ab_param(b, z.h, 0, "model.final_layernorm.weight");
    head(b);
}

void vf__arch_mamba_attn(vf__ab *b, const char *type)
{
    if (type && strcmp(type, "falcon_h1") == 0)
        falcon_h1(b);
    else if (type && strcmp(type, "zamba2") == 0)
        zamba2(b);
}
