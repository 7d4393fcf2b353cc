/* arch_ssm.c — state-space families: Mamba (mamba, falcon_mamba), Mamba-2
 * (transformers mamba2 and state-spaces' own mamba_ssm config format), and
 * the Mamba-2 hybrids bamba, nemotron_h and granitemoehybrid. Tensor names and
 * shapes as transformers' modeling_<family>.py (mamba_ssm's MixerModel for the
 * mamba_ssm format) store them; docs/architectures.md lists them. */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

#define CAP_DIM ((uint64_t)1 << 20)

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Mamba-1 mixer (MambaMixer; mamba_ssm Mamba): A_log [I, N], D [I],
 * in_proj [2I, h], conv1d [I, 1, K], x_proj [R + 2N, I], dt_proj [I, R] + bias, out_proj. */
static void mamba1_mixer(vf__ab *b, const char *p, uint64_t h, uint64_t I, uint64_t N, uint64_t K, uint64_t R,
                         bool bias, bool conv_bias)
{
    char name[288];
    vf__ab_param(b, I, N, "%sA_log", p);
    vf__ab_param(b, I, 0, "%sD", p);
    vf__ab_linear(b, bias ? VF_LIN_BIAS : 0, 2 * I, h, "%sin_proj", p);
    snprintf(name, sizeof name, "%sconv1d.weight", p);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){I, 1, K}, name);
    if (conv_bias)
        vf__ab_param(b, I, 0, "%sconv1d.bias", p);
    vf__ab_linear(b, 0, R + 2 * N, I, "%sx_proj", p);
    vf__ab_linear(b, VF_LIN_BIAS, I, R, "%sdt_proj", p);
    vf__ab_linear(b, bias ? VF_LIN_BIAS : 0, h, I, "%sout_proj", p);
}

/* The output head unless tied. */
static void head(vf__ab *b, const char *name)
{
    const vf_hparams *hp = &b->m->hp;
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, hp->hidden_size, "%s", name);
}

/* MambaForCausalLM / FalconMambaForCausalLM (backbone.*) */
static void mamba(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    uint64_t h = hp->hidden_size;
    uint64_t I = vf__ab_cfg(b, c, "intermediate_size", vf__ab_cfg(b, c, "expand", 2, 64) * h, CAP_DIM);
    uint64_t N = vf__ab_cfg(b, c, "state_size", 16, 65536), K = vf__ab_cfg(b, c, "conv_kernel", 4, 1024);
    uint64_t R = (h + 15) / 16; /* time_step_rank "auto": ceil(hidden / 16) */
    if (json_is_integer(json_object_get(c, "time_step_rank")))
        R = vf__ab_cfg(b, c, "time_step_rank", R, CAP_DIM);
    bool bias = vf__cfg_bool(c, "use_bias", false), cb = vf__cfg_bool(c, "use_conv_bias", true);
    vf__ab_param(b, hp->vocab_size, h, "backbone.embeddings.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "backbone.layers.%u.", i);
        vf__ab_param(b, h, 0, "%snorm.weight", p);
        snprintf(p, sizeof p, "backbone.layers.%u.mixer.", i);
        mamba1_mixer(b, p, h, I, N, K, R, bias, cb);
    }
    vf__ab_param(b, h, 0, "backbone.norm_f.weight");
    head(b, "lm_head");
}

/* Mamba2ForCausalLM (backbone.*, mixer = Mamba2Mixer) */
static void mamba2(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    uint64_t h = hp->hidden_size, hdim = vf__ab_cfg(b, c, "head_dim", 64, 65536);
    uint64_t expand = vf__ab_cfg(b, c, "expand", 2, 64);
    vf__ssm2 s = {.h = h,
                  .heads = vf__ab_cfg(b, c, "num_heads", hdim ? expand * h / hdim : 0, CAP_DIM),
                  .head_dim = hdim,
                  .state = vf__ab_cfg(b, c, "state_size", 128, 65536),
                  .groups = vf__ab_cfg(b, c, "n_groups", 8, 4096),
                  .conv = vf__ab_cfg(b, c, "conv_kernel", 4, 1024),
                  .conv_bias = vf__cfg_bool(c, "use_conv_bias", true),
                  .proj_bias = vf__cfg_bool(c, "use_bias", false),
                  .norm = true};
    vf__ab_param(b, hp->vocab_size, h, "backbone.embeddings.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "backbone.layers.%u.", i);
        vf__ab_param(b, h, 0, "%snorm.weight", p);
        snprintf(p, sizeof p, "backbone.layers.%u.mixer.", i);
        vf__ab_mamba2(b, p, &s);
    }
    vf__ab_param(b, h, 0, "backbone.norm_f.weight");
    head(b, "lm_head");
}

/* mamba_ssm.models.mixer_seq_simple.MixerModel + MHA (mamba_ssm/modules/mha.py):
 * backbone.embedding, layers.i.norm + mixer (Mamba / Mamba2 / MHA with its
 * qkv conv), norm2 + GatedMLP when d_intermediate > 0, backbone.norm_f. */
static void mamba_ssm(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg, *sc = json_object_get(c, "ssm_cfg"), *ac = json_object_get(c, "attn_cfg");
    const json_t *attn_idx = json_object_get(c, "attn_layer_idx");
    uint64_t h = hp->hidden_size, di = vf__ab_cfg(b, c, "d_intermediate", 0, CAP_DIM);
    bool v2 = is(vf__cfg_str(sc, "layer"), "Mamba2");
    uint64_t expand = vf__ab_cfg(b, sc, "expand", 2, 64), conv = vf__ab_cfg(b, sc, "d_conv", 4, 1024);
    uint64_t hdim = vf__ab_cfg(b, sc, "headdim", 64, 65536);
    vf__ssm2 s = {.h = h, .heads = hdim ? expand * h / hdim : 0, .head_dim = hdim,
                  .state = vf__ab_cfg(b, sc, "d_state", v2 ? 128 : 16, 65536),
                  .groups = vf__ab_cfg(b, sc, "ngroups", 1, 4096), .conv = conv,
                  .conv_bias = vf__cfg_bool(sc, "conv_bias", true), .proj_bias = vf__cfg_bool(sc, "bias", false),
                  .norm = vf__cfg_bool(sc, "rmsnorm", true)};
    uint64_t nh = vf__ab_cfg(b, ac, "num_heads", 1, 16384), nkv = vf__ab_cfg(b, ac, "num_heads_kv", nh, 16384);
    uint64_t ahd = vf__ab_cfg(b, ac, "head_dim", nh ? h / nh : 0, 65536), aconv = vf__ab_cfg(b, ac, "d_conv", 0, 1024);
    vf__ab_param(b, hp->vocab_size, h, "backbone.embedding.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "backbone.layers.%u.", i);
        vf__ab_param(b, h, 0, "%snorm.weight", p);
        snprintf(p, sizeof p, "backbone.layers.%u.mixer.", i);
        if (vf__cfg_in_list(attn_idx, i)) {
            uint64_t qkv = (nh + 2 * nkv) * ahd;
            vf__ab_linear(b, vf__cfg_bool(ac, "qkv_proj_bias", true) ? VF_LIN_BIAS : 0, qkv, h, "%sin_proj", p);
            if (aconv) {
                char name[160];
                snprintf(name, sizeof name, "%sconv1d.weight", p);
                vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){qkv, 1, aconv}, name);
                vf__ab_param(b, qkv, 0, "%sconv1d.bias", p);
            }
            vf__ab_linear(b, vf__cfg_bool(ac, "out_proj_bias", true) ? VF_LIN_BIAS : 0, h, nh * ahd, "%sout_proj", p);
        } else if (v2) {
            vf__ab_mamba2(b, p, &s);
        } else {
            mamba1_mixer(b, p, h, expand * h, s.state, conv, (h + 15) / 16, s.proj_bias, s.conv_bias);
        }
        if (di) {
            vf__ab_param(b, h, 0, "backbone.layers.%u.norm2.weight", i);
            vf__ab_linear(b, 0, 2 * di, h, "backbone.layers.%u.mlp.fc1", i);
            vf__ab_linear(b, 0, h, di, "backbone.layers.%u.mlp.fc2", i);
        }
    }
    vf__ab_param(b, h, 0, "backbone.norm_f.weight");
    head(b, "lm_head");
}

/* The Mamba-2 mixer of bamba / granitemoehybrid (mamba_* keys). */
static vf__ssm2 mamba_keys(vf__ab *b)
{
    const json_t *c = b->cfg;
    uint64_t h = b->m->hp.hidden_size, hdim = vf__ab_cfg(b, c, "mamba_d_head", 64, 65536);
    uint64_t expand = vf__ab_cfg(b, c, "mamba_expand", 2, 64);
    vf__ssm2 s = {.h = h, .heads = vf__ab_cfg(b, c, "mamba_n_heads", hdim ? expand * h / hdim : 0, CAP_DIM),
                  .head_dim = hdim, .state = vf__ab_cfg(b, c, "mamba_d_state", 256, 65536),
                  .groups = vf__ab_cfg(b, c, "mamba_n_groups", 1, 4096), .conv = vf__ab_cfg(b, c, "mamba_d_conv", 4, 1024),
                  .conv_bias = vf__cfg_bool(c, "mamba_conv_bias", true),
                  .proj_bias = vf__cfg_bool(c, "mamba_proj_bias", false), .norm = true};
    return s;
}

static vf__attn attn_of(const vf_hparams *hp)
{
    vf__attn a = {.h = hp->hidden_size, .heads = hp->n_heads, .kv = hp->n_kv_heads, .hd = hp->head_dim,
                  .qkv_bias = hp->attention_bias, .o_bias = hp->attention_bias};
    return a;
}

/* BambaForCausalLM: model.layers.i.{input_layernorm, mamba | self_attn, pre_ff_layernorm, feed_forward} */
static void bamba(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    vf__ssm2 s = mamba_keys(b);
    vf__attn a = attn_of(hp);
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        vf__ab_hybrid_norms(b, i, h);
        snprintf(p, sizeof p, hp->layer_recurrent && hp->layer_recurrent[i] ? "model.layers.%u.mamba."
                                                                             : "model.layers.%u.self_attn.", i);
        if (hp->layer_recurrent && hp->layer_recurrent[i])
            vf__ab_mamba2(b, p, &s);
        else
            vf__ab_attn(b, p, &a);
        snprintf(p, sizeof p, "model.layers.%u.feed_forward.", i);
        vf__ab_mlp(b, p, h, hp->intermediate_size, 0, "gate_proj", "up_proj", "down_proj");
    }
    vf__ab_param(b, h, 0, "model.final_layernorm.weight");
    head(b, "lm_head");
}

/* NemotronHForCausalLM: hybrid_override_pattern, one mixer per layer:
 * M Mamba-2, * attention, - relu2 MLP (up/down), E MoE (router + up/down experts + shared). */
static void nemotron_h(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    const char *pat = vf__cfg_str(c, "hybrid_override_pattern");
    uint64_t h = hp->hidden_size, hdim = vf__ab_cfg(b, c, "mamba_head_dim", 64, 65536);
    vf__ssm2 s = {.h = h, .heads = vf__ab_cfg(b, c, "mamba_num_heads", 128, CAP_DIM), .head_dim = hdim,
                  .state = vf__ab_cfg(b, c, "ssm_state_size", 128, 65536), .groups = vf__ab_cfg(b, c, "n_groups", 8, 4096),
                  .conv = vf__ab_cfg(b, c, "conv_kernel", 4, 1024), .conv_bias = vf__cfg_bool(c, "use_conv_bias", true),
                  .proj_bias = vf__cfg_bool(c, "use_bias", false), .norm = true};
    vf__attn a = attn_of(hp);
    if (!pat || strlen(pat) != hp->n_layers) {
        vf__ab_fail(b, VF_EFORMAT, "hybrid_override_pattern must have one character per layer (%u)", hp->n_layers);
        return;
    }
    unsigned mb = vf__cfg_bool(c, "mlp_bias", false) ? VF_LIN_BIAS : 0;
    vf__ab_param(b, hp->vocab_size, h, "backbone.embeddings.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "backbone.layers.%u.", i);
        vf__ab_param(b, h, 0, "%snorm.weight", p);
        snprintf(p, sizeof p, "backbone.layers.%u.mixer.", i);
        switch (pat[i]) {
        case 'M':
            vf__ab_mamba2(b, p, &s);
            break;
        case '*':
            vf__ab_attn(b, p, &a);
            break;
        case '-':
            vf__ab_mlp(b, p, h, hp->intermediate_size, mb, NULL, "up_proj", "down_proj");
            break;
        case 'E':
            /* the router's e_score_correction_bias is a buffer the published
             * checkpoints do not store (NVIDIA-Nemotron-3-Nano: Hub total exact without it) */
            vf__ab_linear(b, VF_LIN_NOQUANT, hp->n_experts, h, "%sgate", p);
            vf__ab_experts(b, p, hp->n_experts, h, hp->moe_intermediate_size, NULL, "up_proj", "down_proj");
            if (hp->shared_expert_intermediate_size) {
                char sp[128];
                snprintf(sp, sizeof sp, "%sshared_experts.", p);
                vf__ab_mlp(b, sp, h, hp->shared_expert_intermediate_size, mb, NULL, "up_proj", "down_proj");
            }
            break;
        default:
            vf__ab_fail(b, VF_EFORMAT, "hybrid_override_pattern: unknown layer kind '%c'", pat[i]);
        }
    }
    vf__ab_param(b, h, 0, "backbone.norm_f.weight");
    head(b, "lm_head");
}

/* GraniteMoeHybridForCausalLM: mamba or self_attn, then stacked experts
 * (block_sparse_moe.input_linear [E, 2ff, h], output_linear [E, h, ff],
 * router.layer [E, h]) and/or the shared MLP (shared_mlp.input_linear [2s, h]). */
static void granitemoehybrid(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, E = hp->n_experts, ff = hp->intermediate_size;
    uint64_t sff = hp->shared_expert_intermediate_size;
    vf__ssm2 s = mamba_keys(b);
    vf__attn a = attn_of(hp);
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        bool rec = hp->layer_recurrent && hp->layer_recurrent[i];
        snprintf(p, sizeof p, "model.layers.%u.", i);
        vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
        vf__ab_param(b, h, 0, "%spost_attention_layernorm.weight", p);
        snprintf(p, sizeof p, rec ? "model.layers.%u.mamba." : "model.layers.%u.self_attn.", i);
        if (rec)
            vf__ab_mamba2(b, p, &s);
        else
            vf__ab_attn(b, p, &a);
        if (E) {
            vf__ab_param3(b, E, 2 * ff, h, "model.layers.%u.block_sparse_moe.input_linear.weight", i);
            vf__ab_param3(b, E, h, ff, "model.layers.%u.block_sparse_moe.output_linear.weight", i);
            vf__ab_linear(b, 0, E, h, "model.layers.%u.block_sparse_moe.router.layer", i);
        }
        if (sff) {
            vf__ab_linear(b, 0, 2 * sff, h, "model.layers.%u.shared_mlp.input_linear", i);
            vf__ab_linear(b, 0, h, sff, "model.layers.%u.shared_mlp.output_linear", i);
        }
    }
    vf__ab_param(b, h, 0, "model.norm.weight");
    head(b, "lm_head");
}

/* JambaForCausalLM: Mamba-1 layers (with dt/B/C RMSNorms) beside attention
 * every attn_layer_period (at attn_layer_offset), routed experts every
 * expert_layer_period (at expert_layer_offset) when num_experts > 1. */
static void jamba(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const json_t *c = b->cfg;
    uint64_t h = hp->hidden_size, I = vf__ab_cfg(b, c, "mamba_expand", 2, 64) * h;
    uint64_t N = vf__ab_cfg(b, c, "mamba_d_state", 16, 65536), K = vf__ab_cfg(b, c, "mamba_d_conv", 4, 1024);
    uint64_t R = (h + 15) / 16; /* mamba_dt_rank "auto" */
    if (json_is_integer(json_object_get(c, "mamba_dt_rank")))
        R = vf__ab_cfg(b, c, "mamba_dt_rank", R, CAP_DIM);
    bool pb = vf__cfg_bool(c, "mamba_proj_bias", false), cb = vf__cfg_bool(c, "mamba_conv_bias", true);
    uint64_t ep = vf__ab_cfg(b, c, "expert_layer_period", 2, 4096), eo = vf__ab_cfg(b, c, "expert_layer_offset", 1, 4096);
    vf__attn a = attn_of(hp);
    vf__ab_param(b, hp->vocab_size, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[96];
        vf__ab_hybrid_norms(b, i, h);
        if (hp->layer_recurrent && hp->layer_recurrent[i]) {
            snprintf(p, sizeof p, "model.layers.%u.mamba.", i);
            mamba1_mixer(b, p, h, I, N, K, R, pb, cb);
            vf__ab_param(b, R, 0, "%sdt_layernorm.weight", p);
            vf__ab_param(b, N, 0, "%sb_layernorm.weight", p);
            vf__ab_param(b, N, 0, "%sc_layernorm.weight", p);
        } else {
            snprintf(p, sizeof p, "model.layers.%u.self_attn.", i);
            vf__ab_attn(b, p, &a);
        }
        snprintf(p, sizeof p, "model.layers.%u.feed_forward.", i);
        if (hp->n_experts > 1 && ep && i % ep == eo) {
            vf__ab_linear(b, 0, hp->n_experts, h, "%srouter", p);
            vf__ab_experts(b, p, hp->n_experts, h, hp->intermediate_size, "gate_proj", "up_proj", "down_proj");
        } else {
            vf__ab_mlp(b, p, h, hp->intermediate_size, 0, "gate_proj", "up_proj", "down_proj");
        }
    }
    vf__ab_param(b, h, 0, "model.final_layernorm.weight");
    head(b, "lm_head");
}

void vf__arch_ssm(vf__ab *b, const char *type)
{
    if (is(type, "jamba")) {
        jamba(b);
        return;
    }
    if (is(type, "mamba") || is(type, "falcon_mamba"))
        mamba(b);
    else if (is(type, "mamba2"))
        mamba2(b);
    else if (is(type, "mamba_ssm"))
        mamba_ssm(b);
    else if (is(type, "bamba"))
        bamba(b);
    else if (is(type, "nemotron_h"))
        nemotron_h(b);
    else if (is(type, "granitemoehybrid"))
        granitemoehybrid(b);
}
