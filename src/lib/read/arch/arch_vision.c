/* arch_vision.c — the vision towers and projectors of the vision-language
 * wrappers (arch_vlm.c): Qwen2-VL, Qwen2.5-VL, Qwen3-VL / Qwen3.5 (with
 * deepstack mergers), SigLIP (Idefics3/SmolVLM, SigLIP2 for LFM2-VL), CLIP
 * (LLaVA), Pixtral (Mistral 3), InternViT (InternVL), Llama 4 and Mllama.
 * A sub-config omits the keys equal to its class's defaults (save_pretrained
 * writes the difference), so each key below comes with the default of its
 * transformers configuration class. Every tensor is flagged VF_TENSOR_VISION. */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

#define CAPD ((uint64_t)1 << 16)

static bool is(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

/* A "patch_size"/"image_size" written as a number or a [h, w] pair. */
static uint64_t side(vf__ab *b, const json_t *v, const char *k, uint64_t dflt)
{
    const json_t *x = json_object_get(v, k);
    if (json_is_array(x))
        x = json_array_get(x, 0);
    uint64_t n = dflt;
    if (x && !vf__json_u64(x, &n))
        vf__ab_fail(b, VF_EFORMAT, "vision_config.%s must be a positive integer", k);
    if (n == 0 || n > CAPD)
        vf__ab_fail(b, VF_ERANGE, "vision_config.%s = %llu is out of range", k, (unsigned long long)n);
    return n;
}

static void conv_w(vf__ab *b, uint64_t out, uint64_t ch, uint64_t t, uint64_t k, const char *name)
{
    char n[256];
    snprintf(n, sizeof n, "%s", name);
    if (t)
        vf__ab_raw(b, b->dt, 0, UINT64_MAX, 5, (uint64_t[]){out, ch, t, k, k}, n);
    else
        vf__ab_raw(b, b->dt, 0, UINT64_MAX, 4, (uint64_t[]){out, ch, k, k}, n);
}

/* A pre-norm ViT block with LayerNorms (w + b) and biased q/k/v/out + fc1/fc2. */
static void vit_block(vf__ab *b, const char *p, uint64_t h, uint64_t ff, const char *ln1, const char *ln2,
                      const char *o, bool qkv_bias)
{
    unsigned qb = qkv_bias ? VF_LIN_BIAS : 0;
    vf__ab_layernorm(b, h, "%s%s", p, ln1);
    vf__ab_linear(b, qb, h, h, "%sself_attn.q_proj", p);
    vf__ab_linear(b, qb, h, h, "%sself_attn.k_proj", p);
    vf__ab_linear(b, qb, h, h, "%sself_attn.v_proj", p);
    vf__ab_linear(b, VF_LIN_BIAS, h, h, "%sself_attn.%s", p, o);
    vf__ab_layernorm(b, h, "%s%s", p, ln2);
    vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.fc1", p);
    vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.fc2", p);
}

/* ---- Qwen ---- */

/* Qwen2-VL (Qwen2VisionTransformerPretrainedModel) and Qwen2.5-VL: conv3d
 * patch embed, blocks with fused qkv, PatchMerger ln_q + mlp.0 / mlp.2. */
static void qwen2_vl(vf__ab *b, const json_t *v, const char *V, bool v25, uint64_t text_h)
{
    uint64_t e = vf__ab_cfg(b, v, v25 ? "hidden_size" : "embed_dim", 1280, CAPD);
    uint64_t D = vf__ab_cfg(b, v, "depth", 32, 1024), p = side(b, v, "patch_size", 14);
    uint64_t tp = vf__ab_cfg(b, v, "temporal_patch_size", 2, 64), ch = vf__ab_cfg(b, v, "in_chans", 3, 16);
    uint64_t m = vf__ab_cfg(b, v, "spatial_merge_size", 2, 64);
    uint64_t ff = v25 ? vf__ab_cfg(b, v, "intermediate_size", 3420, CAPD * 4) : e * vf__ab_cfg(b, v, "mlp_ratio", 4, 64);
    uint64_t out = vf__ab_cfg(b, v, v25 ? "out_hidden_size" : "hidden_size", text_h, CAPD);
    char n[160];
    snprintf(n, sizeof n, "%spatch_embed.proj.weight", V);
    conv_w(b, e, ch, tp, p, n);
    for (uint64_t i = 0; i < D && b->st == VF_OK; i++) {
        char q[128];
        snprintf(q, sizeof q, "%sblocks.%llu.", V, (unsigned long long)i);
        if (v25) { /* RMSNorms and a SwiGLU MLP with biases */
            vf__ab_param(b, e, 0, "%snorm1.weight", q);
            vf__ab_param(b, e, 0, "%snorm2.weight", q);
        } else {
            vf__ab_layernorm(b, e, "%snorm1", q);
            vf__ab_layernorm(b, e, "%snorm2", q);
        }
        vf__ab_linear(b, VF_LIN_BIAS, 3 * e, e, "%sattn.qkv", q);
        vf__ab_linear(b, VF_LIN_BIAS, e, e, "%sattn.proj", q);
        if (v25) {
            vf__ab_mlp(b, q, e, ff, VF_LIN_BIAS, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj");
        } else {
            vf__ab_linear(b, VF_LIN_BIAS, ff, e, "%smlp.fc1", q);
            vf__ab_linear(b, VF_LIN_BIAS, e, ff, "%smlp.fc2", q);
        }
    }
    if (v25)
        vf__ab_param(b, e, 0, "%smerger.ln_q.weight", V);
    else
        vf__ab_layernorm(b, e, "%smerger.ln_q", V);
    vf__ab_linear(b, VF_LIN_BIAS, e * m * m, e * m * m, "%smerger.mlp.0", V);
    vf__ab_linear(b, VF_LIN_BIAS, out, e * m * m, "%smerger.mlp.2", V);
}

/* Qwen3-VL / Qwen3.5 (Qwen3VLVisionModel): conv3d with bias, a learned
 * position table, LayerNorm blocks, a merger and one per deepstack index. */
static void qwen3_vl(vf__ab *b, const json_t *v, const char *V, uint64_t text_h)
{
    uint64_t e = vf__ab_cfg(b, v, "hidden_size", 1152, CAPD), D = vf__ab_cfg(b, v, "depth", 27, 1024);
    uint64_t ff = vf__ab_cfg(b, v, "intermediate_size", 4304, CAPD * 4), p = side(b, v, "patch_size", 16);
    uint64_t tp = vf__ab_cfg(b, v, "temporal_patch_size", 2, 64), ch = vf__ab_cfg(b, v, "in_channels", 3, 16);
    uint64_t m = vf__ab_cfg(b, v, "spatial_merge_size", 2, 64), pos = vf__ab_cfg(b, v, "num_position_embeddings", 2304, 1 << 20);
    uint64_t out = vf__ab_cfg(b, v, "out_hidden_size", text_h, CAPD), mm = e * m * m;
    const json_t *ds = json_object_get(v, "deepstack_visual_indexes");
    size_t nds = json_is_array(ds) ? json_array_size(ds) : 3; /* class default [8, 16, 24] */
    char n[160];
    snprintf(n, sizeof n, "%spatch_embed.proj.weight", V);
    conv_w(b, e, ch, tp, p, n);
    vf__ab_param(b, e, 0, "%spatch_embed.proj.bias", V);
    vf__ab_param(b, pos, e, "%spos_embed.weight", V);
    for (uint64_t i = 0; i < D && b->st == VF_OK; i++) {
        char q[128];
        snprintf(q, sizeof q, "%sblocks.%llu.", V, (unsigned long long)i);
        vf__ab_layernorm(b, e, "%snorm1", q);
        vf__ab_layernorm(b, e, "%snorm2", q);
        vf__ab_linear(b, VF_LIN_BIAS, 3 * e, e, "%sattn.qkv", q);
        vf__ab_linear(b, VF_LIN_BIAS, e, e, "%sattn.proj", q);
        vf__ab_linear(b, VF_LIN_BIAS, ff, e, "%smlp.linear_fc1", q);
        vf__ab_linear(b, VF_LIN_BIAS, e, ff, "%smlp.linear_fc2", q);
    }
    for (size_t k = 0; k <= nds && k < 64 && b->st == VF_OK; k++) {
        char q[128]; /* the merger normalises before the shuffle, the deepstack ones after */
        if (k == 0)
            snprintf(q, sizeof q, "%smerger.", V);
        else
            snprintf(q, sizeof q, "%sdeepstack_merger_list.%zu.", V, k - 1);
        vf__ab_layernorm(b, k == 0 ? e : mm, "%snorm", q);
        vf__ab_linear(b, VF_LIN_BIAS, mm, mm, "%slinear_fc1", q);
        vf__ab_linear(b, VF_LIN_BIAS, out, mm, "%slinear_fc2", q);
    }
}

/* ---- SigLIP / CLIP / Pixtral / InternViT ---- */

typedef struct vit {
    uint64_t h, ff, L, p, img, ch;
} vit;

static vit vit_keys(vf__ab *b, const json_t *v, vit d)
{
    vit r = {vf__ab_cfg(b, v, "hidden_size", d.h, CAPD), vf__ab_cfg(b, v, "intermediate_size", d.ff, CAPD * 4),
             vf__ab_cfg(b, v, "num_hidden_layers", d.L, 1024), side(b, v, "patch_size", d.p),
             side(b, v, "image_size", d.img), vf__ab_cfg(b, v, "num_channels", d.ch, 16)};
    return r;
}

/* SiglipVisionTransformer (Idefics3 / SmolVLM: conv patches; SigLIP2 for
 * LFM2-VL: a linear over flattened patches and num_patches positions). */
static void siglip(vf__ab *b, const json_t *v, const char *V, vit d, bool siglip2)
{
    vit s = vit_keys(b, v, d);
    char n[192];
    uint64_t np = siglip2 ? vf__ab_cfg(b, v, "num_patches", 256, 1 << 20) : (s.img / s.p) * (s.img / s.p);
    if (siglip2) {
        vf__ab_linear(b, VF_LIN_BIAS, s.h, s.ch * s.p * s.p, "%sembeddings.patch_embedding", V);
    } else {
        snprintf(n, sizeof n, "%sembeddings.patch_embedding.weight", V);
        conv_w(b, s.h, s.ch, 0, s.p, n);
        vf__ab_param(b, s.h, 0, "%sembeddings.patch_embedding.bias", V);
    }
    vf__ab_param(b, np, s.h, "%sembeddings.position_embedding.weight", V);
    for (uint64_t i = 0; i < s.L && b->st == VF_OK; i++) {
        char q[160];
        snprintf(q, sizeof q, "%sencoder.layers.%llu.", V, (unsigned long long)i);
        vit_block(b, q, s.h, s.ff, "layer_norm1", "layer_norm2", "out_proj", true);
    }
    vf__ab_layernorm(b, s.h, "%spost_layernorm", V);
}

/* CLIPVisionModel (LLaVA): class embedding, conv patches without bias,
 * positions for the patches and the class token, pre and post LayerNorms. */
static void clip(vf__ab *b, const json_t *v, const char *V)
{
    vit s = vit_keys(b, v, (vit){768, 3072, 12, 32, 224, 3});
    char n[192];
    uint64_t np = (s.img / s.p) * (s.img / s.p) + 1;
    vf__ab_param(b, s.h, 0, "%sembeddings.class_embedding", V);
    snprintf(n, sizeof n, "%sembeddings.patch_embedding.weight", V);
    conv_w(b, s.h, s.ch, 0, s.p, n);
    vf__ab_param(b, np, s.h, "%sembeddings.position_embedding.weight", V);
    vf__ab_layernorm(b, s.h, "%spre_layrnorm", V);
    for (uint64_t i = 0; i < s.L && b->st == VF_OK; i++) {
        char q[160];
        snprintf(q, sizeof q, "%sencoder.layers.%llu.", V, (unsigned long long)i);
        vit_block(b, q, s.h, s.ff, "layer_norm1", "layer_norm2", "out_proj", true);
    }
    vf__ab_layernorm(b, s.h, "%spost_layernorm", V);
}

/* PixtralVisionModel (Mistral 3): conv patches without bias, RMSNorms, SwiGLU. */
static void pixtral(vf__ab *b, const json_t *v, const char *V)
{
    vit s = vit_keys(b, v, (vit){1024, 4096, 24, 16, 1024, 3});
    char n[192];
    snprintf(n, sizeof n, "%spatch_conv.weight", V);
    conv_w(b, s.h, s.ch, 0, s.p, n);
    vf__ab_param(b, s.h, 0, "%sln_pre.weight", V);
    for (uint64_t i = 0; i < s.L && b->st == VF_OK; i++) {
        char q[160];
        snprintf(q, sizeof q, "%stransformer.layers.%llu.", V, (unsigned long long)i);
        char a[192];
        snprintf(a, sizeof a, "%sattention.", q);
        vf__ab_param(b, s.h, 0, "%sattention_norm.weight", q);
        vf__ab_attn(b, a, &(vf__attn){.h = s.h, .heads = 1, .kv = 1, .hd = s.h});
        vf__ab_param(b, s.h, 0, "%sffn_norm.weight", q);
        vf__ab_mlp(b, q, s.h, s.ff, 0, "feed_forward.gate_proj", "feed_forward.up_proj", "feed_forward.down_proj");
    }
}

/* InternVLVisionModel: class token, conv patches, absolute positions, blocks
 * with layer-scale vectors lambda_1/lambda_2; mean pooling (no final norm). */
static void internvit(vf__ab *b, const json_t *v, const char *V)
{
    vit s = vit_keys(b, v, (vit){1024, 4096, 24, 14, 448, 3});
    bool qb = vf__cfg_bool(v, "attention_bias", false), qkn = vf__cfg_bool(v, "use_qk_norm", false);
    char n[192];
    uint64_t np = (s.img / s.p) * (s.img / s.p) + 1;
    vf__ab_param3(b, 1, 1, s.h, "%sembeddings.cls_token", V);
    snprintf(n, sizeof n, "%sembeddings.patch_embeddings.projection.weight", V);
    conv_w(b, s.h, s.ch, 0, s.p, n);
    vf__ab_param(b, s.h, 0, "%sembeddings.patch_embeddings.projection.bias", V);
    if (vf__cfg_bool(v, "use_absolute_position_embeddings", true))
        vf__ab_param3(b, 1, np, s.h, "%sembeddings.position_embeddings", V);
    for (uint64_t i = 0; i < s.L && b->st == VF_OK; i++) {
        char q[160];
        snprintf(q, sizeof q, "%sencoder.layer.%llu.", V, (unsigned long long)i);
        char a[192];
        snprintf(a, sizeof a, "%sattention.", q);
        vf__ab_attn(b, a, &(vf__attn){.h = s.h, .heads = 1, .kv = 1, .hd = s.h, .qkv_bias = qb, .o_bias = true,
                                      .qk_norm = qkn ? 2 : 0, .o = "projection_layer"});
        vf__ab_layernorm(b, s.h, "%slayernorm_before", q);
        vf__ab_layernorm(b, s.h, "%slayernorm_after", q);
        vf__ab_linear(b, VF_LIN_BIAS, s.ff, s.h, "%smlp.fc1", q);
        vf__ab_linear(b, VF_LIN_BIAS, s.h, s.ff, "%smlp.fc2", q);
        vf__ab_param(b, s.h, 0, "%slambda_1", q);
        vf__ab_param(b, s.h, 0, "%slambda_2", q);
    }
    if (!vf__cfg_bool(v, "use_mean_pooling", true))
        vf__ab_layernorm(b, s.h, "%slayernorm", V);
}

/* ---- Llama 4 and Mllama ---- */

/* Llama4VisionModel: unfold-conv patches (a linear), class embedding, learned
 * positions, pre/post LayerNorms, blocks, the pixel-shuffle MLP adapter. */
static void llama4_vision(vf__ab *b, const json_t *v, const char *V)
{
    vit s = vit_keys(b, v, (vit){768, 5632, 34, 14, 448, 3});
    uint64_t pin = vf__ab_cfg(b, v, "projector_input_dim", 4096, CAPD), pout = vf__ab_cfg(b, v, "projector_output_dim", 4096, CAPD);
    uint64_t np = (s.img / s.p) * (s.img / s.p) + 1;
    vf__ab_linear(b, 0, s.h, s.ch * s.p * s.p, "%spatch_embedding.linear", V);
    vf__ab_param(b, s.h, 0, "%sclass_embedding", V);
    vf__ab_param(b, np, s.h, "%spositional_embedding_vlm", V);
    vf__ab_layernorm(b, s.h, "%slayernorm_pre", V);
    vf__ab_layernorm(b, s.h, "%slayernorm_post", V);
    for (uint64_t i = 0; i < s.L && b->st == VF_OK; i++) {
        char q[160];
        snprintf(q, sizeof q, "%smodel.layers.%llu.", V, (unsigned long long)i);
        vit_block(b, q, s.h, s.ff, "input_layernorm", "post_attention_layernorm", "o_proj", true);
    }
    vf__ab_linear(b, 0, pin, s.ff, "%svision_adapter.mlp.fc1", V);
    vf__ab_linear(b, 0, pout, pout, "%svision_adapter.mlp.fc2", V);
}

static void mllama_layer(vf__ab *b, const char *p, uint64_t h, uint64_t ff, bool gated)
{
    vf__ab_layernorm(b, h, "%sinput_layernorm", p);
    vf__ab_linear(b, 0, h, h, "%sself_attn.q_proj", p);
    vf__ab_linear(b, 0, h, h, "%sself_attn.k_proj", p);
    vf__ab_linear(b, 0, h, h, "%sself_attn.v_proj", p);
    vf__ab_linear(b, 0, h, h, "%sself_attn.o_proj", p);
    vf__ab_layernorm(b, h, "%spost_attention_layernorm", p);
    vf__ab_linear(b, VF_LIN_BIAS, ff, h, "%smlp.fc1", p);
    vf__ab_linear(b, VF_LIN_BIAS, h, ff, "%smlp.fc2", p);
    if (gated) {
        vf__ab_param(b, 1, 0, "%sgate_attn", p);
        vf__ab_param(b, 1, 0, "%sgate_ffn", p);
    }
}

/* MllamaVisionModel: tiles of patches, gated position and tile embeddings
 * (one row per supported aspect ratio + 1), a local and a gated global encoder. */
static void mllama_vision(vf__ab *b, const json_t *v, const char *V)
{
    vit s = vit_keys(b, v, (vit){1280, 5120, 32, 14, 448, 3});
    uint64_t G = vf__ab_cfg(b, v, "num_global_layers", 8, 1024), T = vf__ab_cfg(b, v, "max_num_tiles", 4, 64);
    const json_t *ar = json_object_get(v, "supported_aspect_ratios");
    uint64_t A = (json_is_array(ar) ? json_array_size(ar) : 8) + 1, np = (s.img / s.p) * (s.img / s.p) + 1;
    char n[192];
    snprintf(n, sizeof n, "%spatch_embedding.weight", V);
    conv_w(b, s.h, s.ch, 0, s.p, n);
    vf__ab_param(b, s.h, 0, "%sclass_embedding", V);
    vf__ab_param(b, 1, 0, "%sgated_positional_embedding.gate", V);
    vf__ab_param(b, np, s.h, "%sgated_positional_embedding.embedding", V);
    vf__ab_param(b, A, T * np * s.h, "%sgated_positional_embedding.tile_embedding.weight", V);
    vf__ab_param(b, A, T * s.h, "%spre_tile_positional_embedding.embedding.weight", V);
    vf__ab_param(b, 1, 0, "%spre_tile_positional_embedding.gate", V);
    vf__ab_param(b, A, T * s.h, "%spost_tile_positional_embedding.embedding.weight", V);
    vf__ab_param(b, 1, 0, "%spost_tile_positional_embedding.gate", V);
    vf__ab_layernorm(b, s.h, "%slayernorm_pre", V);
    vf__ab_layernorm(b, s.h, "%slayernorm_post", V);
    for (uint64_t i = 0; i < s.L + G && b->st == VF_OK; i++) {
        char q[160];
        if (i < s.L)
            snprintf(q, sizeof q, "%stransformer.layers.%llu.", V, (unsigned long long)i);
        else
            snprintf(q, sizeof q, "%sglobal_transformer.layers.%llu.", V, (unsigned long long)(i - s.L));
        mllama_layer(b, q, s.h, s.ff, i >= s.L);
    }
}

/* ---- the projectors and the dispatch ---- */

static uint64_t vision_hidden(vf__ab *b, const json_t *v, uint64_t dflt) { return vf__ab_cfg(b, v, "hidden_size", dflt, CAPD); }

/* LayerNorm (optional) + linear_1 + GELU + linear_2 (LLaVA, InternVL, LFM2-VL). */
static void mlp_projector(vf__ab *b, const char *P, uint64_t in, uint64_t mid, uint64_t out, bool ln, bool bias)
{
    unsigned f = bias ? VF_LIN_BIAS : 0;
    if (ln)
        vf__ab_layernorm(b, in, "%slayer_norm", P);
    vf__ab_linear(b, f, mid, in, "%slinear_1", P);
    vf__ab_linear(b, f, out, mid, "%slinear_2", P);
}

void vf__vision_tower(vf__ab *b, const char *type)
{
    const json_t *v = json_object_get(b->root, "vision_config"), *r = b->root;
    uint64_t th = b->m->hp.hidden_size;
    uint32_t saved = b->flags;
    b->flags |= VF_TENSOR_VISION;
    if (is(type, "qwen2_vl") || is(type, "qwen2_5_vl")) {
        qwen2_vl(b, v, "visual.", is(type, "qwen2_5_vl"), th);
    } else if (is(type, "qwen3_vl") || is(type, "qwen3_vl_moe") || is(type, "qwen3_5") || is(type, "qwen3_5_moe")) {
        qwen3_vl(b, v, "model.visual.", th);
    } else if (is(type, "idefics3") || is(type, "smolvlm")) {
        siglip(b, v, "model.vision_model.", (vit){1152, 3072, 12, 32, 224, 3}, false);
        uint64_t sf = vf__ab_cfg(b, r, "scale_factor", 2, 64);
        vf__ab_linear(b, 0, th, vision_hidden(b, v, 1152) * sf * sf, "model.connector.modality_projection.proj");
    } else if (is(type, "lfm2_vl")) {
        siglip(b, v, "model.vision_tower.vision_model.", (vit){768, 3072, 12, 16, 224, 3}, true);
        uint64_t df = vf__ab_cfg(b, r, "downsample_factor", 2, 64);
        mlp_projector(b, "model.multi_modal_projector.", vision_hidden(b, v, 768) * df * df,
                      vf__ab_cfg(b, r, "projector_hidden_size", 2560, CAPD * 4), th,
                      vf__cfg_bool(r, "projector_use_layernorm", true), vf__cfg_bool(r, "projector_bias", true));
    } else if (is(type, "llava")) {
        clip(b, v, "vision_tower.vision_model.");
        mlp_projector(b, "multi_modal_projector.", vision_hidden(b, v, 768), th, th, false,
                      vf__cfg_bool(r, "multimodal_projector_bias", true));
    } else if (is(type, "llava_onevision")) {
        /* LlavaOnevisionForConditionalGeneration: SigLIP without its head,
         * the LLaVA projector, and the image_newline vector */
        siglip(b, v, "vision_tower.vision_model.", (vit){1152, 4304, 26, 14, 384, 3}, false);
        mlp_projector(b, "multi_modal_projector.", vision_hidden(b, v, 1152), th, th, false,
                      vf__cfg_bool(r, "multimodal_projector_bias", true));
        if (vf__cfg_bool(r, "use_image_newline_parameter", true))
            vf__ab_param(b, th, 0, "image_newline");
    } else if (is(type, "internvl")) {
        internvit(b, v, "model.vision_tower.");
        uint64_t in = vision_hidden(b, v, 1024) * 4; /* pixel shuffle by downsample_ratio 0.5 */
        const json_t *dr = json_object_get(r, "downsample_ratio");
        if (json_is_number(dr) && json_number_value(dr) > 0.01 && json_number_value(dr) <= 1)
            in = (uint64_t)((double)vision_hidden(b, v, 1024) / (json_number_value(dr) * json_number_value(dr)) + 0.5);
        mlp_projector(b, "model.multi_modal_projector.", in, th, th, true, true);
    } else if (is(type, "mistral3")) {
        pixtral(b, v, "vision_tower.");
        uint64_t vh = vision_hidden(b, v, 1024), m = vf__ab_cfg(b, r, "spatial_merge_size", 2, 64);
        vf__ab_param(b, vh, 0, "multi_modal_projector.norm.weight");
        vf__ab_linear(b, 0, vh, vh * m * m, "multi_modal_projector.patch_merger.merging_layer");
        mlp_projector(b, "multi_modal_projector.", vh, th, th, false, vf__cfg_bool(r, "multimodal_projector_bias", true));
    } else if (is(type, "llama4")) {
        llama4_vision(b, v, "vision_model.");
        vf__ab_linear(b, 0, th, vf__ab_cfg(b, v, "vision_output_dim", 7680, CAPD), "multi_modal_projector.linear_1");
    } else if (is(type, "mllama")) {
        mllama_vision(b, v, "vision_model.");
        vf__ab_linear(b, VF_LIN_BIAS, th, vf__ab_cfg(b, v, "vision_output_dim", 7680, CAPD), "multi_modal_projector");
    }
    b->flags = saved;
}
