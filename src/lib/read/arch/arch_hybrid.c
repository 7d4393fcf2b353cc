/* arch_hybrid.c — hybrids of attention with recurrent layers: which layer is
 * which and the state a recurrent layer keeps per sequence (for every reader
 * of a config.json, also beside weight files), and the tensor lists of LFM2
 * (short convolutions), Qwen3-Next and Qwen3.5 (Gated DeltaNet linear
 * attention beside gated full attention). The Mamba families are in
 * arch_ssm.c. Shapes as transformers' modeling_<family>.py; state sizes as
 * vLLM's MambaStateShapeCalculator and llama.cpp's n_embd_r/n_embd_s
 * (docs/memory-model.md "Recurrent state"). */
#include "read/arch/arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* K_BOTH: attention and a recurrent mixer in one layer (Falcon-H1's every
 * layer, Zamba2's hybrid layers) */
enum { K_ATTN, K_REC, K_NONE, K_BOTH };

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static bool deltanet(const char *t) { return is(t, "qwen3_next") || is(t, "qwen3_5_text") || is(t, "qwen3_5_moe_text"); }

/* Zamba2Config's layers_block_type when the config has none: mamba, then
 * (5 mamba + hybrid) x 7, 4 mamba, hybrid, 3 mamba, hybrid, 2 mamba (54 layers). */
static bool zamba2_default_hybrid(uint32_t i)
{
    return (i >= 1 && i <= 42 && i % 6 == 0) || i == 47 || i == 51;
}

/* Kind of layer i: from layer_types, a pattern or an index list, as each family writes it. */
static int layer_kind(const json_t *t, const char *type, uint32_t i, uint32_t L)
{
    if (is(type, "falcon_h1"))
        return K_BOTH; /* FalconH1Config.layers_block_type: "hybrid" everywhere */
    if (is(type, "zamba2")) { /* its length checked in vf__hybrid_hparams */
        const json_t *bt = json_object_get(t, "layers_block_type");
        return json_is_array(bt) ? is(json_string_value(json_array_get(bt, i)), "hybrid") ? K_BOTH : K_REC
                                 : zamba2_default_hybrid(i) ? K_BOTH : K_REC;
    }
    const json_t *lt = json_object_get(t, "layer_types");
    if (json_is_array(lt) && json_array_size(lt) == L) {
        const char *k = json_string_value(json_array_get(lt, i));
        if (is(k, "full_attention") || is(k, "attention") || is(k, "sliding_attention"))
            return K_ATTN;
        return K_REC; /* linear_attention, mamba, conv */
    }
    if (is(type, "nemotron_h")) {
        const char *p = vf__cfg_str(t, "hybrid_override_pattern");
        if (!p || strlen(p) != L)
            return K_NONE;
        return p[i] == '*' ? K_ATTN : p[i] == 'M' ? K_REC : K_NONE;
    }
    if (is(type, "bamba"))
        return vf__cfg_in_list(json_object_get(t, "attn_layer_indices"), i) ? K_ATTN : K_REC;
    if (is(type, "jamba")) { /* JambaConfig.layers_block_type */
        uint64_t per = 8, off = 4;
        vf__cfg_u64(t, &per, "attn_layer_period", NULL);
        vf__cfg_u64(t, &off, "attn_layer_offset", NULL);
        return per && i % per == off ? K_ATTN : K_REC;
    }
    if (is(type, "mamba_ssm"))
        return vf__cfg_in_list(json_object_get(t, "attn_layer_idx"), i) ? K_ATTN : K_REC;
    if (is(type, "lfm2") || is(type, "lfm2_moe"))
        return vf__cfg_in_list(json_object_get(t, "full_attn_idxs"), i) ? K_ATTN : K_REC;
    if (deltanet(type)) {
        uint64_t n = 4;
        vf__cfg_u64(t, &n, "full_attention_interval", NULL);
        return n && (i + 1) % n == 0 ? K_ATTN : K_REC;
    }
    return K_REC; /* mamba, falcon_mamba, mamba2; granitemoehybrid without layer_types */
}

static uint64_t key(const json_t *t, const char *k, uint64_t dflt, uint64_t cap)
{
    uint64_t v = dflt;
    if (vf__cfg_u64(t, &v, k, NULL) < 0 || v > cap)
        v = dflt;
    return v;
}

/* Elements of one recurrent layer's conv state and SSM (or DeltaNet) state. */
static void state_elems(const json_t *t, const char *type, uint64_t h, uint64_t *conv, uint64_t *ssm)
{
    const uint64_t D = (uint64_t)1 << 20, S = 65536;
    const json_t *sc = json_object_get(t, "ssm_cfg");
    *conv = *ssm = 0;
    if (is(type, "falcon_h1")) { /* FalconH1Mixer: d_inner = mamba_d_ssm (null: mamba_expand x h) */
        const json_t *d = json_object_get(t, "mamba_d_ssm");
        uint64_t I = json_is_null(d) ? key(t, "mamba_expand", 2, 64) * h : key(t, "mamba_d_ssm", 1024, D);
        uint64_t G = key(t, "mamba_n_groups", 1, 4096), N = key(t, "mamba_d_state", 256, S);
        uint64_t K = key(t, "mamba_d_conv", 4, 1024);
        *conv = (K ? K - 1 : 0) * (I + 2 * G * N);
        *ssm = I * N; /* mamba_n_heads x mamba_d_head (= d_inner) x state */
    } else if (is(type, "zamba2")) { /* Zamba2MambaMixer: d_inner = mamba_expand x h */
        uint64_t I = key(t, "mamba_expand", 2, 64) * h, G = key(t, "mamba_ngroups", 1, 4096);
        uint64_t N = key(t, "mamba_d_state", 64, S), K = key(t, "mamba_d_conv", 4, 1024);
        *conv = (K ? K - 1 : 0) * (I + 2 * G * N);
        *ssm = I * N; /* n_mamba_heads x mamba_headdim (= d_inner) x state */
    } else if (is(type, "jamba")) { /* Mamba-1 layers under mamba_* keys */
        uint64_t I = key(t, "mamba_expand", 2, 64) * h, K = key(t, "mamba_d_conv", 4, 1024);
        *conv = (K ? K - 1 : 0) * I;
        *ssm = I * key(t, "mamba_d_state", 16, S);
    } else if (is(type, "mamba") || is(type, "falcon_mamba") ||
               (is(type, "mamba_ssm") && !is(vf__cfg_str(sc, "layer"), "Mamba2"))) {
        /* conv (K-1) x d_inner, ssm d_inner x d_state */
        uint64_t I = key(t, "intermediate_size", key(t, "expand", 2, 64) * h, D), K = key(t, "conv_kernel", 4, 1024);
        if (is(type, "mamba_ssm"))
            I = key(sc, "expand", 2, 64) * h, K = key(sc, "d_conv", 4, 1024);
        *conv = (K ? K - 1 : 0) * I;
        *ssm = I * key(is(type, "mamba_ssm") ? sc : t, is(type, "mamba_ssm") ? "d_state" : "state_size", 16, S);
    } else if (is(type, "lfm2") || is(type, "lfm2_moe")) {
        *conv = (key(t, "conv_L_cache", 3, 1024) - 1) * h; /* ShortConv: L_cache - 1 columns of hidden */
    } else if (deltanet(type)) {
        uint64_t nk = key(t, "linear_num_key_heads", 16, S), nv = key(t, "linear_num_value_heads", 32, S);
        uint64_t dk = key(t, "linear_key_head_dim", 128, S), dv = key(t, "linear_value_head_dim", 128, S);
        uint64_t K = key(t, "linear_conv_kernel_dim", 4, 1024);
        *conv = (K ? K - 1 : 0) * (2 * nk * dk + nv * dv);
        *ssm = nv * dk * dv; /* one dk x dv state per value head */
    } else {
        /* Mamba-2: conv (K-1) x (d_inner + 2 groups state), ssm heads x head_dim x state */
        const json_t *o = is(type, "mamba_ssm") ? sc : t;
        bool mk = is(type, "bamba") || is(type, "granitemoehybrid");
        uint64_t hd = key(o, mk ? "mamba_d_head" : is(type, "nemotron_h") ? "mamba_head_dim" : is(type, "mamba_ssm") ? "headdim" : "head_dim", 64, S);
        uint64_t ex = key(o, mk ? "mamba_expand" : "expand", 2, 64);
        uint64_t nh = key(o, mk ? "mamba_n_heads" : is(type, "nemotron_h") ? "mamba_num_heads" : "num_heads",
                          hd ? ex * h / hd : 0, D);
        uint64_t N = key(o, mk ? "mamba_d_state" : is(type, "nemotron_h") ? "ssm_state_size" : is(type, "mamba_ssm") ? "d_state" : "state_size", 128, S);
        uint64_t G = key(o, mk ? "mamba_n_groups" : is(type, "mamba_ssm") ? "ngroups" : "n_groups", is(type, "mamba_ssm") ? 1 : 8, 4096);
        uint64_t K = key(o, mk ? "mamba_d_conv" : is(type, "mamba_ssm") ? "d_conv" : "conv_kernel", 4, 1024);
        *conv = (K ? K - 1 : 0) * (nh * hd + 2 * G * N);
        *ssm = nh * hd * N;
    }
}

/* The SSM state's dtype: the config's mamba_ssm_cache_dtype / mamba_ssm_dtype
 * (Nemotron-3, Qwen3.5 write float32), else the model's. */
static uint64_t ssm_bytes(const json_t *t, const json_t *root, uint64_t model_bytes)
{
    const char *d = vf__cfg_str(t, "mamba_ssm_cache_dtype");
    if (!d)
        d = vf__cfg_str(t, "mamba_ssm_dtype");
    if (!d)
        d = vf__cfg_str(root, "mamba_ssm_dtype");
    return is(d, "float32") ? 4 : model_bytes;
}

bool vf__is_hybrid(const char *type)
{
    static const char *const types[] = {"mamba", "falcon_mamba", "mamba2", "mamba_ssm", "bamba", "nemotron_h",
                                        "granitemoehybrid", "jamba", "lfm2", "lfm2_moe", "qwen3_next", "qwen3_5_text",
                                        "qwen3_5_moe_text", "falcon_h1", "zamba2"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (is(types[i], type))
            return true;
    return false;
}

vf_status vf__hybrid_hparams(vf_hparams *hp, const json_t *root, const json_t *t, const char *type, const char *path,
                             vf_error *err)
{
    uint32_t L = hp->n_layers;
    if (!vf__is_hybrid(type) || L == 0)
        return VF_OK;
    if (is(type, "mamba_ssm")) { /* MixerModel pads the vocabulary to pad_vocab_size_multiple */
        uint64_t pad = key(t, "pad_vocab_size_multiple", 8, 1 << 20);
        if (pad > 1 && hp->vocab_size % pad)
            hp->vocab_size += pad - hp->vocab_size % pad;
        hp->tie_word_embeddings = vf__cfg_bool(t, "tie_embeddings", true);
        uint64_t nh = key(json_object_get(t, "attn_cfg"), "num_heads", 0, 16384);
        hp->n_heads = (uint32_t)nh;
        hp->n_kv_heads = (uint32_t)key(json_object_get(t, "attn_cfg"), "num_heads_kv", nh, 16384);
        hp->head_dim = (uint32_t)key(json_object_get(t, "attn_cfg"), "head_dim", nh ? hp->hidden_size / nh : 0, 65536);
        hp->v_head_dim = hp->head_dim;
    }
    if (is(type, "mamba") || is(type, "falcon_mamba") || is(type, "mamba2")) /* num_heads are SSM heads */
        hp->n_heads = hp->n_kv_heads = hp->head_dim = hp->v_head_dim = 0;
    if (is(type, "zamba2")) {
        const json_t *bt = json_object_get(t, "layers_block_type");
        if (json_is_array(bt) ? json_array_size(bt) != L : L != 54)
            return vf__err(err, VF_EFORMAT, path, "layers_block_type must have one entry per layer (%u)", L);
        /* Zamba2Config: attention over [hidden, embedding], head dim 2 x hidden / heads */
        if (hp->n_heads)
            hp->head_dim = hp->v_head_dim = (uint32_t)(2 * hp->hidden_size / hp->n_heads);
    }
    free(hp->layer_no_kv);
    free(hp->layer_recurrent);
    hp->layer_no_kv = calloc(L, 1);
    hp->layer_recurrent = calloc(L, 1);
    if (!hp->layer_no_kv || !hp->layer_recurrent)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    for (uint32_t i = 0; i < L; i++) {
        int k = layer_kind(t, type, i, L);
        hp->layer_no_kv[i] = k != K_ATTN && k != K_BOTH;
        hp->layer_recurrent[i] = k == K_REC || k == K_BOTH;
    }
    uint64_t conv, ssm, mb = hp->torch_dtype == VF_DTYPE_F32 ? 4 : 2;
    state_elems(t, type, hp->hidden_size, &conv, &ssm);
    hp->recurrent_state_bytes = conv * mb + ssm * ssm_bytes(t, root, mb);
    hp->recurrent_state_elems = conv + ssm;
    /* multi-token prediction blocks the checkpoints store (docs/architectures.md) */
    uint64_t mtp = 0;
    if (vf__cfg_u64(t, &mtp, "mtp_num_hidden_layers", "num_nextn_predict_layers", NULL) <= 0 && is(type, "qwen3_next"))
        mtp = 1; /* Qwen3-Next-80B-A3B stores one mtp.* block its config does not state */
    hp->n_mtp_layers = mtp <= 64 ? (uint32_t)mtp : 0;
    return VF_OK;
}

/* ---- the tensor lists ---- */

static const char *pre_of(const vf__ab *b) { return b->pre ? b->pre : "model."; }

static bool rec(const vf_hparams *hp, uint32_t i) { return hp->layer_recurrent && hp->layer_recurrent[i]; }

/* LFM2's feed-forward width: block_ff_dim adjusted as Lfm2MLP does
 * (2/3, ffn_dim_multiplier, rounded up to block_multiple_of). */
static uint64_t lfm2_ff(vf__ab *b)
{
    const json_t *c = b->cfg;
    uint64_t ff = vf__ab_cfg(b, c, "block_ff_dim", b->m->hp.intermediate_size, (uint64_t)1 << 24);
    if (vf__cfg_bool(c, "block_auto_adjust_ff_dim", false)) {
        ff = 2 * ff / 3;
        const json_t *mul = json_object_get(c, "block_ffn_dim_multiplier");
        if (json_is_number(mul) && json_number_value(mul) > 0 && json_number_value(mul) < 64)
            ff = (uint64_t)(json_number_value(mul) * (double)ff);
        uint64_t m = vf__ab_cfg(b, c, "block_multiple_of", 256, 1 << 20);
        if (m)
            ff = (ff + m - 1) / m * m;
    }
    return ff;
}

/* Lfm2ForCausalLM / Lfm2MoeForCausalLM: operator_norm, short conv (in_proj
 * [3h, h], depthwise conv [h, 1, L_cache], out_proj) or attention with
 * q/k layernorms, ffn_norm, SwiGLU w1/w3/w2 or routed experts; the final norm
 * is embedding_norm. The MoE router's expert_bias is a buffer the checkpoint
 * does not store (LFM2-8B-A1B: Hub total exact without it). */
static void lfm2(vf__ab *b, bool moe)
{
    const vf_hparams *hp = &b->m->hp;
    const char *P = pre_of(b);
    uint64_t h = hp->hidden_size, ff = moe ? hp->intermediate_size : lfm2_ff(b);
    uint64_t Lc = vf__ab_cfg(b, b->cfg, "conv_L_cache", 3, 1024);
    unsigned cb = vf__cfg_bool(b->cfg, "conv_bias", false) ? VF_LIN_BIAS : 0;
    vf__attn a = {.h = h, .heads = hp->n_heads, .kv = hp->n_kv_heads, .hd = hp->head_dim, .qk_norm = 1,
                  .o = "out_proj", .qn = "q_layernorm", .kn = "k_layernorm"};
    vf__ab_param(b, hp->vocab_size, h, "%sembed_tokens.weight", P);
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[128], q[160];
        snprintf(p, sizeof p, "%slayers.%u.", P, i);
        vf__ab_param(b, h, 0, "%soperator_norm.weight", p);
        vf__ab_param(b, h, 0, "%sffn_norm.weight", p);
        if (rec(hp, i)) {
            vf__ab_linear(b, cb, 3 * h, h, "%sconv.in_proj", p);
            snprintf(q, sizeof q, "%sconv.conv.weight", p);
            vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){h, 1, Lc}, q);
            if (cb)
                vf__ab_param(b, h, 0, "%sconv.conv.bias", p);
            vf__ab_linear(b, cb, h, h, "%sconv.out_proj", p);
        } else {
            snprintf(q, sizeof q, "%sself_attn.", p);
            vf__ab_attn(b, q, &a);
        }
        snprintf(q, sizeof q, "%sfeed_forward.", p);
        if (moe && i >= hp->first_k_dense && hp->n_experts) {
            vf__ab_linear(b, 0, hp->n_experts, h, "%sgate", q);
            vf__ab_experts(b, q, hp->n_experts, h, hp->moe_intermediate_size, "w1", "w3", "w2");
        } else {
            vf__ab_mlp(b, q, h, ff, 0, "w1", "w3", "w2");
        }
    }
    vf__ab_param(b, h, 0, "%sembedding_norm.weight", P);
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "%s", b->head ? b->head : "lm_head");
}

/* Gated DeltaNet (Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet): q k v z
 * projections (Qwen3-Next fuses them as in_proj_qkvz and in_proj_ba), a
 * depthwise conv over q k v without bias, dt_bias and A_log per value head,
 * a gated RMSNorm over the value head dim, out_proj. */
static void gdn(vf__ab *b, const char *p, bool split)
{
    const json_t *c = b->cfg;
    uint64_t h = b->m->hp.hidden_size;
    uint64_t nk = vf__ab_cfg(b, c, "linear_num_key_heads", 16, 65536), nv = vf__ab_cfg(b, c, "linear_num_value_heads", 32, 65536);
    uint64_t dk = vf__ab_cfg(b, c, "linear_key_head_dim", 128, 65536), dv = vf__ab_cfg(b, c, "linear_value_head_dim", 128, 65536);
    uint64_t K = vf__ab_cfg(b, c, "linear_conv_kernel_dim", 4, 1024);
    uint64_t kd = nk * dk, vd = nv * dv, conv = 2 * kd + vd;
    if (split) {
        vf__ab_linear(b, 0, conv, h, "%sin_proj_qkv", p);
        vf__ab_linear(b, 0, vd, h, "%sin_proj_z", p);
        vf__ab_linear(b, 0, nv, h, "%sin_proj_b", p);
        vf__ab_linear(b, 0, nv, h, "%sin_proj_a", p);
    } else {
        vf__ab_linear(b, 0, conv + vd, h, "%sin_proj_qkvz", p);
        vf__ab_linear(b, 0, 2 * nv, h, "%sin_proj_ba", p);
    }
    char name[288];
    snprintf(name, sizeof name, "%sconv1d.weight", p);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){conv, 1, K}, name);
    vf__ab_param(b, nv, 0, "%sdt_bias", p);
    vf__ab_param(b, nv, 0, "%sA_log", p);
    vf__ab_param(b, dv, 0, "%snorm.weight", p);
    vf__ab_linear(b, 0, h, vd, "%sout_proj", p);
}

/* Whether block i has routed experts (Qwen MoE rule: not in mlp_only_layers,
 * (i + 1) % decoder_sparse_step == 0). */
static bool qwen_moe(const vf__ab *b, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    uint32_t step = hp->moe_layer_freq ? hp->moe_layer_freq : 1;
    return hp->n_experts && !vf__cfg_in_list(json_object_get(b->cfg, "mlp_only_layers"), i) && (i + 1) % step == 0;
}

/* One Qwen3-Next / Qwen3.5 decoder block: norms, DeltaNet or gated attention, MoE or MLP. */
static void qwen_block(vf__ab *b, const char *p, uint32_t i, bool full, bool split)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    char q[192];
    vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
    vf__ab_param(b, h, 0, "%spost_attention_layernorm.weight", p);
    if (full) {
        vf__attn a = {.h = h, .heads = hp->n_heads, .kv = hp->n_kv_heads, .hd = hp->head_dim,
                      .q_gate = vf__cfg_bool(b->cfg, "attn_output_gate", true), .qkv_bias = hp->attention_bias,
                      .o_bias = hp->attention_bias, .qk_norm = 1};
        snprintf(q, sizeof q, "%sself_attn.", p);
        vf__ab_attn(b, q, &a);
    } else {
        snprintf(q, sizeof q, "%slinear_attn.", p);
        gdn(b, q, split);
    }
    snprintf(q, sizeof q, "%smlp.", p);
    if (!qwen_moe(b, i)) {
        vf__ab_mlp(b, q, h, hp->intermediate_size, 0, "gate_proj", "up_proj", "down_proj");
        return;
    }
    vf__ab_linear(b, 0, hp->n_experts, h, "%sgate", q);
    vf__ab_experts(b, q, hp->n_experts, h, hp->moe_intermediate_size, "gate_proj", "up_proj", "down_proj");
    if (hp->shared_expert_intermediate_size) {
        char sp[224];
        snprintf(sp, sizeof sp, "%sshared_expert.", q);
        vf__ab_mlp(b, sp, h, hp->shared_expert_intermediate_size, 0, "gate_proj", "up_proj", "down_proj");
        vf__ab_linear(b, 0, 1, h, "%sshared_expert_gate", q);
    }
}

/* Qwen3NextForCausalLM / Qwen3.5's text model, and the mtp.* block the
 * checkpoints store (Qwen3NextMultiTokenPredictor: fc [h, 2h], pre-fc norms
 * of the embedding and the hidden state, one full-attention block, norm). */
static void qwen3_next(vf__ab *b, bool split)
{
    const vf_hparams *hp = &b->m->hp;
    const char *P = pre_of(b);
    uint64_t h = hp->hidden_size;
    vf__ab_param(b, hp->vocab_size, h, "%sembed_tokens.weight", P);
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[128];
        snprintf(p, sizeof p, "%slayers.%u.", P, i);
        qwen_block(b, p, i, !rec(hp, i), split);
    }
    vf__ab_param(b, h, 0, "%snorm.weight", P);
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, h, "%s", b->head ? b->head : "lm_head");
    if (!hp->n_mtp_layers)
        return;
    uint32_t saved = b->flags;
    b->flags |= VF_TENSOR_MTP;
    vf__ab_linear(b, 0, h, 2 * h, "mtp.fc");
    vf__ab_param(b, h, 0, "mtp.pre_fc_norm_embedding.weight");
    vf__ab_param(b, h, 0, "mtp.pre_fc_norm_hidden.weight");
    for (uint32_t k = 0; k < hp->n_mtp_layers && b->st == VF_OK; k++) {
        char p[64];
        snprintf(p, sizeof p, "mtp.layers.%u.", k);
        qwen_block(b, p, hp->n_layers + k, true, split);
    }
    vf__ab_param(b, h, 0, "mtp.norm.weight");
    b->flags = saved;
}

vf_status vf__arch_hybrid(vf__ab *b)
{
    const char *type = b->type ? b->type : b->m->hp.architecture;
    if (is(type, "lfm2") || is(type, "lfm2_moe"))
        lfm2(b, is(type, "lfm2_moe"));
    else if (deltanet(type))
        qwen3_next(b, !is(type, "qwen3_next"));
    else if (is(type, "falcon_h1") || is(type, "zamba2"))
        vf__arch_mamba_attn(b, type);
    else
        vf__arch_ssm(b, type);
    return b->st;
}
