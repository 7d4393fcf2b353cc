/* arch_decoder.c — llama-like decoders: llama, mistral, mixtral, qwen2,
 * qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3, gemma4, phi3, olmo2,
 * arcee, nemotron, jais2, afmoe, cohere (Command-R), diffllama,
 * gpt_oss; and DeepSeek-V2/V3 (multi-head latent attention, shared experts,
 * multi-token-prediction layers). Tensor names and shapes as the reference
 * checkpoints store them (transformers modeling_<family>.py module tree).
 * docs/architectures.md lists each family's tensors and the keys it reads. */
#include "read/arch/arch.h"

#include <string.h>

typedef enum moe_kind { MOE_NONE, MOE_MIXTRAL, MOE_QWEN, MOE_GPT_OSS, MOE_GEMMA4, MOE_AFMOE } moe_kind;

typedef struct spec {
    const char *pre;  /* decoder prefix: "model." */
    const char *head; /* output head name without ".weight" */
    bool qkv_bias, o_bias, mlp_bias;
    int qk_norm;      /* 0 none, 1 per head [head_dim], 2 whole projection [heads*head_dim] (OLMo 2),
                       * 3 one row per head [heads, head_dim] (Cohere's use_qk_norm) */
    bool gemma_norms; /* pre/post feed-forward norms (Gemma 2/3/4) */
    bool olmo_norms;  /* post-attention and post-feed-forward norms only (OLMo 2) */
    bool fused;       /* qkv_proj and gate_up_proj (Phi-3) */
    bool no_gate;     /* up_proj and down_proj only (Arcee's ReLU² MLP) */
    bool no_norms;    /* OLMo (1): LayerNorms without weights, none stored */
    bool ln_bias;     /* LayerNorms with weight and bias (Nemotron's LayerNorm1P) */
    bool diff;        /* DiffLlama: lambda_{q,k}{1,2} [head_dim]; its groupnorm has no weight */
    bool parallel;    /* attention and MLP read the same input_layernorm: no second norm (Cohere) */
    bool afmoe;       /* AFMoE: a sigmoid gate on the attention output, norms before and after the MLP */
    bool sinks;       /* per-head attention sinks (gpt-oss) */
    moe_kind moe;
} spec;

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* Whether block i has routed experts (qwen2_moe/qwen3_moe rule: not in
 * mlp_only_layers and (i + 1) % decoder_sparse_step == 0). */
static bool qwen_moe_layer(const vf__ab *b, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    if (!hp->n_experts)
        return false;
    const json_t *only = json_object_get(b->cfg, "mlp_only_layers");
    if (json_is_array(only)) {
        size_t n = json_array_size(only);
        for (size_t k = 0; k < n; k++) {
            uint64_t v;
            if (vf__json_u64(json_array_get(only, k), &v) && v == i)
                return false;
        }
    }
    uint32_t step = hp->moe_layer_freq ? hp->moe_layer_freq : 1;
    return (i + 1) % step == 0;
}

static void mlp(vf__ab *b, const spec *s, const char *p, uint64_t h, uint64_t ff)
{
    unsigned f = s->mlp_bias ? VF_LIN_BIAS : 0;
    if (s->fused) {
        vf__ab_linear(b, f, 2 * ff, h, "%smlp.gate_up_proj", p);
    } else {
        if (!s->no_gate)
            vf__ab_linear(b, f, ff, h, "%smlp.gate_proj", p);
        vf__ab_linear(b, f, ff, h, "%smlp.up_proj", p);
    }
    vf__ab_linear(b, f, h, ff, "%smlp.down_proj", p);
}

/* gpt-oss experts: one stacked tensor per projection, with biases; stored
 * as MXFP4 blocks (16 bytes per 32 weights) + one E8M0 scale per block. */
static void gpt_oss_experts(vf__ab *b, const char *p, uint64_t E, uint64_t h, uint64_t ff)
{
    char name[320];
    const struct {
        const char *n;
        uint64_t rows, in;
    } pr[2] = {{"gate_up_proj", 2 * ff, h}, {"down_proj", h, ff}};
    for (int k = 0; k < 2; k++) {
        uint64_t rows = pr[k].rows, in = pr[k].in, blocks = in / 32 + (in % 32 != 0);
        if (b->q.kind == VF_Q_MXFP4) {
            uint64_t w = E * rows * in; /* bounded by the caps on E, h, ff */
            snprintf(name, sizeof name, "%smlp.experts.%s_blocks", p, pr[k].n);
            vf__ab_raw(b, VF_DTYPE_U8, VF_TENSOR_PACKED, w, 4, (uint64_t[]){E, rows, blocks, 16}, name);
            snprintf(name, sizeof name, "%smlp.experts.%s_scales", p, pr[k].n);
            vf__ab_raw(b, VF_DTYPE_U8, 0, 0, 3, (uint64_t[]){E, rows, blocks}, name);
        } else {
            /* unquantized: [E, in, out] (GptOssExperts multiplies x @ W) */
            vf__ab_param3(b, E, in, rows, "%smlp.experts.%s", p, pr[k].n);
        }
        vf__ab_param(b, E, rows, "%smlp.experts.%s_bias", p, pr[k].n);
    }
}

static void block(vf__ab *b, const spec *s, const char *type, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, H = hp->n_heads;
    uint64_t hd = hp->layer_head_dim ? hp->layer_head_dim[i] : hp->head_dim;
    uint64_t kv = hp->layer_n_kv_heads ? hp->layer_n_kv_heads[i] : hp->n_kv_heads;
    char p[96];
    snprintf(p, sizeof p, "%slayers.%u.", s->pre, i);

    if (s->ln_bias)
        vf__ab_layernorm(b, h, "%sinput_layernorm", p);
    else if (!s->olmo_norms && !s->no_norms)
        vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
    unsigned qb = s->qkv_bias ? VF_LIN_BIAS : 0, ob = s->o_bias ? VF_LIN_BIAS : 0;
    bool gemma4 = is(type, "gemma4") || is(type, "gemma4_text");
    bool sliding = hp->layer_is_swa ? hp->layer_is_swa[i] : hp->sliding_window > 0;
    /* Gemma 4 full-attention layers with attention_k_eq_v have no v_proj;
     * layers that share another layer's KV have no k/v projections at all */
    bool no_v = gemma4 && vf__cfg_bool(b->cfg, "attention_k_eq_v", false) && !sliding;
    bool kv_shared = hp->layer_no_kv && hp->layer_no_kv[i];
    if (s->fused) {
        vf__ab_linear(b, qb, (H + 2 * kv) * hd, h, "%sself_attn.qkv_proj", p);
    } else {
        vf__ab_linear(b, qb, H * hd, h, "%sself_attn.q_proj", p);
        /* Gemma 4's checkpoints still store a KV-sharing layer's k/v
         * projections and k_norm, which Gemma4TextModel drops on load
         * (_keys_to_ignore_on_load_unexpected): stored, never loaded */
        uint32_t saved = b->flags;
        if (kv_shared && gemma4)
            b->flags |= VF_TENSOR_NOT_PARAM;
        if (!kv_shared || gemma4) {
            vf__ab_linear(b, qb, kv * hd, h, "%sself_attn.k_proj", p);
            if (!no_v)
                vf__ab_linear(b, qb, kv * hd, h, "%sself_attn.v_proj", p);
        }
        b->flags = saved;
    }
    vf__ab_linear(b, ob, h, H * hd, "%sself_attn.o_proj", p);
    if (s->qk_norm == 1) {
        vf__ab_param(b, hd, 0, "%sself_attn.q_norm.weight", p);
        if (!kv_shared)
            vf__ab_param(b, hd, 0, "%sself_attn.k_norm.weight", p); /* Gemma 4's v_norm has no scale */
        else if (gemma4) { /* stored, dropped on load (above) */
            char name[160];
            snprintf(name, sizeof name, "%sself_attn.k_norm.weight", p);
            vf__ab_raw(b, b->dt, VF_TENSOR_NOT_PARAM, UINT64_MAX, 1, &hd, name);
        }
    } else if (s->qk_norm == 2) {
        vf__ab_param(b, H * hd, 0, "%sself_attn.q_norm.weight", p);
        vf__ab_param(b, kv * hd, 0, "%sself_attn.k_norm.weight", p);
    } else if (s->qk_norm == 3) {
        vf__ab_param(b, H, hd, "%sself_attn.q_norm.weight", p);
        vf__ab_param(b, kv, hd, "%sself_attn.k_norm.weight", p);
    }
    if (s->sinks)
        vf__ab_param(b, H, 0, "%sself_attn.sinks", p);
    if (s->afmoe)
        vf__ab_linear(b, 0, H * hd, h, "%sself_attn.gate_proj", p);
    if (s->diff) {
        static const char *const lam[4] = {"q1", "k1", "q2", "k2"};
        for (int k = 0; k < 4; k++)
            vf__ab_param(b, hd, 0, "%sself_attn.lambda_%s", p, lam[k]);
    }
    if (s->ln_bias)
        vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
    else if (!s->no_norms && !s->parallel)
        vf__ab_param(b, h, 0, "%spost_attention_layernorm.weight", p);
    if (s->gemma_norms) {
        vf__ab_param(b, h, 0, "%spre_feedforward_layernorm.weight", p);
        vf__ab_param(b, h, 0, "%spost_feedforward_layernorm.weight", p);
    }
    if (s->olmo_norms)
        vf__ab_param(b, h, 0, "%spost_feedforward_layernorm.weight", p);
    if (s->afmoe) {
        vf__ab_param(b, h, 0, "%spre_mlp_layernorm.weight", p);
        vf__ab_param(b, h, 0, "%spost_mlp_layernorm.weight", p);
    }

    uint64_t E = hp->n_experts, mff = hp->moe_intermediate_size, ff = hp->intermediate_size;
    /* Gemma4TextMLP: use_double_wide_mlp doubles the KV-sharing layers' width */
    if (gemma4 && kv_shared && vf__cfg_bool(b->cfg, "use_double_wide_mlp", false))
        ff *= 2;
    char mp[224]; /* the MoE block's prefix */
    switch (s->moe) {
    case MOE_NONE:
        mlp(b, s, p, h, ff);
        break;
    case MOE_MIXTRAL:
        vf__ab_linear(b, 0, E, h, "%sblock_sparse_moe.gate", p);
        for (uint64_t e = 0; e < E; e++) {
            vf__ab_linear(b, 0, mff, h, "%sblock_sparse_moe.experts.%llu.w1", p, (unsigned long long)e);
            vf__ab_linear(b, 0, h, mff, "%sblock_sparse_moe.experts.%llu.w2", p, (unsigned long long)e);
            vf__ab_linear(b, 0, mff, h, "%sblock_sparse_moe.experts.%llu.w3", p, (unsigned long long)e);
        }
        break;
    case MOE_QWEN:
        if (!qwen_moe_layer(b, i)) {
            mlp(b, s, p, h, hp->intermediate_size);
            break;
        }
        vf__ab_linear(b, 0, E, h, "%smlp.gate", p);
        vf__ab_name(mp, sizeof mp, "%smlp.", p);
        vf__ab_experts(b, mp, E, h, mff, "gate_proj", "up_proj", "down_proj");
        if (hp->n_shared_experts && hp->shared_expert_intermediate_size) {
            vf__ab_mlp(b, mp, h, hp->shared_expert_intermediate_size, 0, "shared_expert.gate_proj",
                       "shared_expert.up_proj", "shared_expert.down_proj");
            vf__ab_linear(b, 0, 1, h, "%smlp.shared_expert_gate", p);
        }
        break;
    case MOE_AFMOE:
        /* AfmoeSparseMoeBlock after the first num_dense_layers blocks: the
         * sigmoid router, shared experts of num_shared_experts x the expert
         * width, routed experts, and expert_bias [E] (the router's score
         * offset, a parameter with requires_grad=False) */
        if (i < hp->first_k_dense || !E) {
            mlp(b, s, p, h, ff);
            break;
        }
        vf__ab_linear(b, 0, E, h, "%smlp.router.gate", p);
        vf__ab_name(mp, sizeof mp, "%smlp.", p);
        vf__ab_experts(b, mp, E, h, mff, "gate_proj", "up_proj", "down_proj");
        if (hp->n_shared_experts) /* both bounded by the config caps */
            vf__ab_mlp(b, mp, h, mff * hp->n_shared_experts, 0, "shared_experts.gate_proj",
                       "shared_experts.up_proj", "shared_experts.down_proj");
        vf__ab_param(b, E, 0, "%smlp.expert_bias", p);
        break;
    case MOE_GPT_OSS:
        vf__ab_linear(b, VF_LIN_BIAS, E, h, "%smlp.router", p);
        gpt_oss_experts(b, p, E, h, hp->intermediate_size);
        break;
    case MOE_GEMMA4:
        /* a dense MLP beside the routed experts in every block */
        mlp(b, s, p, h, ff);
        if (vf__cfg_bool(b->cfg, "enable_moe_block", E > 0) && E) {
            vf__ab_linear(b, 0, E, h, "%srouter.proj", p);
            vf__ab_param(b, h, 0, "%srouter.scale", p);
            vf__ab_param(b, E, 0, "%srouter.per_expert_scale", p);
            vf__ab_param3(b, E, 2 * mff, h, "%sexperts.gate_up_proj", p);
            vf__ab_param3(b, E, h, mff, "%sexperts.down_proj", p);
            vf__ab_param(b, h, 0, "%spost_feedforward_layernorm_1.weight", p);
            vf__ab_param(b, h, 0, "%spost_feedforward_layernorm_2.weight", p);
            vf__ab_param(b, h, 0, "%spre_feedforward_layernorm_2.weight", p);
        }
        break;
    }
    if (gemma4) {
        /* per-layer-input (PLE) blocks of the small Gemma 4 models */
        uint64_t ple = 0;
        vf__cfg_u64(b->cfg, &ple, "hidden_size_per_layer_input", NULL);
        if (ple && ple <= h) {
            vf__ab_linear(b, 0, ple, h, "%sper_layer_input_gate", p);
            vf__ab_linear(b, 0, h, ple, "%sper_layer_projection", p);
            vf__ab_param(b, h, 0, "%spost_per_layer_input_norm.weight", p);
        }
        /* a stored buffer (register_buffer, persistent): not a parameter */
        char name[192];
        snprintf(name, sizeof name, "%slayer_scalar", p);
        vf__ab_raw(b, b->dt, VF_TENSOR_NOT_PARAM, UINT64_MAX, 1, (uint64_t[]){1}, name);
    }
}

/* SigLIP vision tower + projector of Gemma 3 multimodal checkpoints
 * (modeling_siglip.py SiglipVisionTransformer; Gemma3MultiModalProjector). */
static void gemma3_vision(vf__ab *b)
{
    const json_t *v = json_object_get(b->root, "vision_config");
    if (!json_is_object(v))
        return;
    /* SiglipVisionConfig defaults: a sub-config omits the values equal to them */
    uint64_t h = 768, ff = 3072, L = 12, patch = 16, img = 224, ch = 3;
    vf__cfg_u64(v, &h, "hidden_size", NULL);
    vf__cfg_u64(v, &ff, "intermediate_size", NULL);
    vf__cfg_u64(v, &L, "num_hidden_layers", NULL);
    vf__cfg_u64(v, &patch, "patch_size", NULL);
    vf__cfg_u64(v, &img, "image_size", NULL);
    vf__cfg_u64(v, &ch, "num_channels", NULL);
    if (h > (1u << 16) || ff > (1u << 18) || L > 512 || patch == 0 || patch > 1024 || img > 65536 || ch > 16) {
        vf__ab_fail(b, VF_ERANGE, "vision_config sizes out of range");
        return;
    }
    const char *vp = "vision_tower.vision_model.";
    uint64_t np = (img / patch) * (img / patch);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 4, (uint64_t[]){h, ch, patch, patch}, "vision_tower.vision_model.embeddings.patch_embedding.weight");
    vf__ab_param(b, h, 0, "%sembeddings.patch_embedding.bias", vp);
    vf__ab_param(b, np, h, "%sembeddings.position_embedding.weight", vp);
    for (uint64_t i = 0; i < L && b->st == VF_OK; i++) {
        char p[96];
        snprintf(p, sizeof p, "%sencoder.layers.%llu.", vp, (unsigned long long)i);
        vf__ab_layernorm(b, h, "%slayer_norm1", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attn.q_proj", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attn.k_proj", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attn.v_proj", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attn.out_proj", p);
        vf__ab_layernorm(b, h, "%slayer_norm2", p);
        vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.fc1", p);
        vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.fc2", p);
    }
    vf__ab_layernorm(b, h, "%spost_layernorm", vp);
    vf__ab_param(b, h, b->m->hp.hidden_size, "multi_modal_projector.mm_input_projection_weight");
    vf__ab_param(b, h, 0, "multi_modal_projector.mm_soft_emb_norm.weight");
}

/* MiMo's next-token layers (modeling_mimo.py MiMoMTPLayers), stored as
 * model.mtp_layers.k.: a Qwen2 block, token / hidden / final norms and
 * input_proj [h, 2h]; the embedding and head are the model's own. */
static void mimo_mtp(vf__ab *b, const spec *s, const char *type)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    uint32_t saved = b->flags;
    b->flags |= VF_TENSOR_MTP;
    spec m = *s;
    m.pre = "model.mtp_";
    for (uint32_t k = 0; k < hp->n_mtp_layers && k < hp->n_layers && b->st == VF_OK; k++) {
        block(b, &m, type, k);
        vf__ab_param(b, h, 0, "model.mtp_layers.%u.token_layernorm.weight", k);
        vf__ab_param(b, h, 0, "model.mtp_layers.%u.hidden_layernorm.weight", k);
        vf__ab_linear(b, 0, h, 2 * h, "model.mtp_layers.%u.input_proj", k);
        vf__ab_param(b, h, 0, "model.mtp_layers.%u.final_layernorm.weight", k);
    }
    b->flags = saved;
}

vf_status vf__arch_decoder(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    const char *type = b->type ? b->type : hp->architecture;
    spec s = {.pre = "model.", .head = "lm_head"};
    s.qkv_bias = hp->attention_bias;
    s.o_bias = hp->attention_bias && !is(type, "qwen2") && !is(type, "qwen2_moe") && !is(type, "mimo");
    s.mlp_bias = hp->mlp_bias;
    bool multimodal = json_is_object(json_object_get(b->root, "text_config"));
    if (is(type, "mixtral")) {
        s.moe = MOE_MIXTRAL;
    } else if (is(type, "qwen2_moe") || is(type, "qwen3_moe")) {
        s.moe = MOE_QWEN;
    } else if (is(type, "gpt_oss")) {
        s.moe = MOE_GPT_OSS;
        s.sinks = true;
    } else if (is(type, "phi3")) {
        s.fused = true;
    } else if (is(type, "arcee")) {
        s.no_gate = true;
    } else if (is(type, "diffllama")) { /* modular_diffllama.py */
        s.diff = true;
    } else if (is(type, "cohere")) { /* modeling_cohere.py: CohereLayerNorm has no bias */
        s.parallel = true;
        s.qk_norm = vf__cfg_bool(b->cfg, "use_qk_norm", false) ? 3 : 0;
    } else if (is(type, "afmoe")) { /* modeling_afmoe.py (Arcee's Trinity) */
        s.moe = MOE_AFMOE;
        s.afmoe = true;
        s.qk_norm = 1;
    } else if (is(type, "nemotron") || is(type, "jais2")) {
        /* modeling_nemotron.py: ReLU² MLP, NemotronLayerNorm1P; Jais2 (modular_jais2.py)
         * is that MLP and nn.LayerNorm in llama's layout, with biases by default */
        s.no_gate = true;
        s.ln_bias = true;
    } else if (is(type, "olmo")) {
        s.no_norms = true;
    } else if (is(type, "olmo2")) {
        s.qk_norm = 2;
        s.olmo_norms = true;
    }
    if (is(type, "qwen3") || is(type, "qwen3_moe"))
        s.qk_norm = 1;
    if (is(type, "gemma2") || is(type, "gemma3") || is(type, "gemma3_text") || is(type, "gemma4") ||
        is(type, "gemma4_text"))
        s.gemma_norms = true;
    if (is(type, "gemma3") || is(type, "gemma3_text") || is(type, "gemma4") || is(type, "gemma4_text"))
        s.qk_norm = 1;
    if (is(type, "gemma4") || is(type, "gemma4_text"))
        s.moe = hp->n_experts ? MOE_GEMMA4 : MOE_NONE;
    if (multimodal && is(type, "gemma3")) {
        /* Gemma3ForConditionalGeneration checkpoints as published */
        s.pre = "language_model.model.";
        s.head = "language_model.lm_head";
    } else if (multimodal && is(type, "gemma4")) {
        s.pre = "model.language_model.";
        s.head = "lm_head";
    }

    if (b->pre) /* a wrapper's text model (arch_vlm.c) */
        s.pre = b->pre;
    if (b->head)
        s.head = b->head;
    vf__ab_param(b, hp->vocab_size, hp->hidden_size, "%sembed_tokens.weight", s.pre);
    if (is(type, "gemma4") || is(type, "gemma4_text")) {
        uint64_t ple = 0, pv = hp->vocab_size;
        vf__cfg_u64(b->cfg, &ple, "hidden_size_per_layer_input", NULL);
        vf__cfg_u64(b->cfg, &pv, "vocab_size_per_layer_input", NULL);
        if (ple && ple <= hp->hidden_size && pv <= ((uint64_t)1 << 24)) {
            vf__ab_param(b, pv, hp->n_layers * ple, "%sembed_tokens_per_layer.weight", s.pre);
            vf__ab_linear(b, 0, hp->n_layers * ple, hp->hidden_size, "%sper_layer_model_projection", s.pre);
            vf__ab_param(b, ple, 0, "%sper_layer_projection_norm.weight", s.pre);
        }
    }
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++)
        block(b, &s, type, i);
    if (s.ln_bias)
        vf__ab_layernorm(b, hp->hidden_size, "%snorm", s.pre);
    else if (!s.no_norms)
        vf__ab_param(b, hp->hidden_size, 0, "%snorm.weight", s.pre);
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, hp->hidden_size, "%s", s.head);
    if (is(type, "mimo"))
        mimo_mtp(b, &s, type);
    if (multimodal && is(type, "gemma3"))
        gemma3_vision(b);
    if (multimodal && is(type, "gemma4"))
        vf__gemma4_towers(b);
    return b->st;
}

/* ---- DeepSeek-V2 / V3 ---- */

static bool deepseek_moe_layer(const vf_hparams *hp, uint32_t i)
{
    uint32_t f = hp->moe_layer_freq ? hp->moe_layer_freq : 1;
    return hp->n_experts && i >= hp->first_k_dense && i % f == 0;
}

/* DeepSeek-V3.2's sparse-attention indexer (its inference code's Indexer):
 * wq_b [n*d, q_lora_rank] and wk [d, h] quantized like the other linears,
 * k_norm a LayerNorm [d], weights_proj [n, h] kept in bf16. */
static void deepseek_indexer(vf__ab *b, const char *p)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t n = 0, d = 0;
    vf__cfg_u64(b->cfg, &n, "index_n_heads", NULL);
    vf__cfg_u64(b->cfg, &d, "index_head_dim", NULL);
    if ((!is(hp->architecture, "deepseek_v32") && !is(hp->architecture, "glm_moe_dsa")) || !n || !d || n > 16384 ||
        d > 65536 || !hp->q_lora_rank)
        return;
    vf__ab_linear(b, 0, n * d, hp->q_lora_rank, "%sself_attn.indexer.wq_b", p);
    vf__ab_linear(b, 0, d, hp->hidden_size, "%sself_attn.indexer.wk", p);
    vf__ab_layernorm(b, d, "%sself_attn.indexer.k_norm", p);
    vf__ab_linear(b, VF_LIN_NOQUANT, n, hp->hidden_size, "%sself_attn.indexer.weights_proj", p);
}

static void deepseek_block(vf__ab *b, uint32_t i)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size, H = hp->n_heads;
    uint64_t nope = hp->qk_nope_head_dim, rope = hp->qk_rope_head_dim, vd = hp->v_head_dim;
    char p[96];
    snprintf(p, sizeof p, "model.layers.%u.", i);
    unsigned ab = hp->attention_bias ? VF_LIN_BIAS : 0;
    vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
    if (hp->q_lora_rank) {
        vf__ab_linear(b, ab, hp->q_lora_rank, h, "%sself_attn.q_a_proj", p);
        vf__ab_param(b, hp->q_lora_rank, 0, "%sself_attn.q_a_layernorm.weight", p);
        vf__ab_linear(b, 0, H * (nope + rope), hp->q_lora_rank, "%sself_attn.q_b_proj", p);
    } else {
        vf__ab_linear(b, 0, H * (nope + rope), h, "%sself_attn.q_proj", p);
    }
    vf__ab_linear(b, ab, hp->kv_lora_rank + rope, h, "%sself_attn.kv_a_proj_with_mqa", p);
    vf__ab_param(b, hp->kv_lora_rank, 0, "%sself_attn.kv_a_layernorm.weight", p);
    vf__ab_linear(b, 0, H * (nope + vd), hp->kv_lora_rank, "%sself_attn.kv_b_proj", p);
    vf__ab_linear(b, ab, h, H * vd, "%sself_attn.o_proj", p);
    deepseek_indexer(b, p);
    vf__ab_param(b, h, 0, "%spost_attention_layernorm.weight", p);
    if (!deepseek_moe_layer(hp, i)) {
        uint64_t ff = hp->intermediate_size;
        vf__ab_linear(b, 0, ff, h, "%smlp.gate_proj", p);
        vf__ab_linear(b, 0, ff, h, "%smlp.up_proj", p);
        vf__ab_linear(b, 0, h, ff, "%smlp.down_proj", p);
        return;
    }
    uint64_t E = hp->n_experts, mff = hp->moe_intermediate_size;
    /* MoEGate holds a bare parameter, not an nn.Linear: never quantized */
    vf__ab_linear(b, VF_LIN_NOQUANT, E, h, "%smlp.gate", p);
    if (is(vf__cfg_str(b->cfg, "topk_method"), "noaux_tc")) {
        char name[192];
        snprintf(name, sizeof name, "%smlp.gate.e_score_correction_bias", p);
        vf__ab_raw(b, VF_DTYPE_F32, 0, UINT64_MAX, 1, &E, name); /* kept in float32 */
    }
    for (uint64_t e = 0; e < E && b->st == VF_OK; e++) {
        char ep[192];
        vf__ab_name(ep, sizeof ep, "%smlp.experts.%llu.", p, (unsigned long long)e);
        vf__ab_linear(b, 0, mff, h, "%sgate_proj", ep);
        vf__ab_linear(b, 0, mff, h, "%sup_proj", ep);
        vf__ab_linear(b, 0, h, mff, "%sdown_proj", ep);
    }
    if (hp->n_shared_experts) {
        uint64_t sff = mff * hp->n_shared_experts;
        vf__ab_linear(b, 0, sff, h, "%smlp.shared_experts.gate_proj", p);
        vf__ab_linear(b, 0, sff, h, "%smlp.shared_experts.up_proj", p);
        vf__ab_linear(b, 0, h, sff, "%smlp.shared_experts.down_proj", p);
    }
}

vf_status vf__arch_deepseek(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    if (!hp->kv_lora_rank || !hp->qk_rope_head_dim || !hp->v_head_dim)
        return vf__err(b->err, VF_EFORMAT, b->path, "deepseek config lacks kv_lora_rank, qk_rope_head_dim or v_head_dim");
    uint64_t h = hp->hidden_size, V = hp->vocab_size;
    vf__ab_param(b, V, h, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++)
        deepseek_block(b, i);
    vf__ab_param(b, h, 0, "model.norm.weight");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, V, h, "lm_head");
    /* multi-token prediction: layers num_hidden_layers.. as the DeepSeek-V3
     * checkpoint stores them, each with its own copy of the embedding and
     * head, enorm/hnorm, eh_proj [h, 2h] and a full decoder block */
    /* GLM-5 stores its MTP layer without an embedding or head of its own
     * (the Hub total of zai-org/GLM-5 is exact without them) */
    bool own_io = !is(hp->architecture, "glm_moe_dsa");
    for (uint32_t k = 0; k < hp->n_mtp_layers && b->st == VF_OK; k++) {
        uint32_t i = hp->n_layers + k;
        if (own_io)
            vf__ab_param(b, V, h, "model.layers.%u.embed_tokens.weight", i);
        vf__ab_param(b, h, 0, "model.layers.%u.enorm.weight", i);
        vf__ab_param(b, h, 0, "model.layers.%u.hnorm.weight", i);
        vf__ab_linear(b, VF_LIN_NOQUANT, h, 2 * h, "model.layers.%u.eh_proj", i);
        deepseek_block(b, i);
        vf__ab_param(b, h, 0, "model.layers.%u.shared_head.norm.weight", i);
        if (own_io)
            vf__ab_linear(b, VF_LIN_NOQUANT, V, h, "model.layers.%u.shared_head.head", i);
    }
    return b->st;
}
