/* arch_gemma4mm.c — Gemma 4's vision and audio encoders and the embedders
 * that project them into the text model, as transformers'
 * models/gemma4/modeling_gemma4.py (5.5) builds them under
 * Gemma4ForConditionalGeneration ("model.vision_tower.", "model.audio_tower.",
 * "model.embed_vision.", "model.embed_audio."):
 *   vision: patch_embedder.input_proj [h, 3p²], position_embedding_table
 *     [2, pos, h]; per encoder layer q/k/v/o_proj (Gemma4ClippableLinear:
 *     ".linear.weight"), q_norm / k_norm [hd] (v_norm has no scale), a gated
 *     MLP gate/up/down (clippable), four norms [h];
 *   audio (USM conformer): subsample_conv_projection.layer{0,1}.conv [c, c_in,
 *     3, 3] + norm [c], input_proj_linear [h, (c0/4)·c1]; per layer two
 *     feed-forwards (ffw_layer_1 [4h, h], ffw_layer_2 [h, 4h], pre/post norms),
 *     attention (q/k/v_proj, post [h, h] clippable, relative_k_proj [h, h],
 *     per_dim_scale [hd]), a light conv (linear_start [2h, h], linear_end
 *     [h, h], depthwise_conv1d [h, 1, k], pre_layer_norm, conv_norm) and
 *     norm_pre_attn / norm_post_attn / norm_out [h]; output_proj [out, h] + bias;
 *   embedders: embedding_projection [text h, tower width] (the pre-projection
 *     norm has no scale).
 * Gemma4ClippableLinear's clamp bounds (four scalar buffers) and the vision
 * tower's std_bias / std_scale are not in the published files (the Hub totals
 * of gemma-4-E2B-it and -E4B-it match without them): not counted. Every
 * tensor is flagged VF_TENSOR_VISION (outside the decoder's layers). */
#include "read/arch/arch.h"

#include <stdio.h>

#define CAP_W ((uint64_t)1 << 16)

static void norm(vf__ab *b, uint64_t n, const char *p, const char *name)
{
    vf__ab_param(b, n, 0, "%s%s.weight", p, name);
}

/* Gemma4ClippableLinear(in, out): an nn.Linear without bias under ".linear" */
static void clip(vf__ab *b, uint64_t out, uint64_t in, const char *p, const char *name)
{
    vf__ab_linear(b, 0, out, in, "%s%s.linear", p, name);
}

static void vision(vf__ab *b, const json_t *v, uint64_t th)
{
    uint64_t h = vf__ab_cfg(b, v, "hidden_size", 0, CAP_W), ff = vf__ab_cfg(b, v, "intermediate_size", 0, 1u << 18);
    uint64_t L = vf__ab_cfg(b, v, "num_hidden_layers", 0, 512), H = vf__ab_cfg(b, v, "num_attention_heads", 0, 1024);
    uint64_t kv = vf__ab_cfg(b, v, "num_key_value_heads", H, H), patch = vf__ab_cfg(b, v, "patch_size", 0, 1024);
    uint64_t pos = vf__ab_cfg(b, v, "position_embedding_size", 0, 1u << 20);
    uint64_t hd = vf__ab_cfg(b, v, "head_dim", H ? h / H : 0, CAP_W);
    if (b->st != VF_OK)
        return;
    if (!h || !ff || !L || !H || !kv || !patch || !pos || !hd) {
        vf__ab_fail(b, VF_EFORMAT, "gemma4 vision_config lacks a size");
        return;
    }
    const char *vp = "model.vision_tower.";
    vf__ab_param(b, h, 3 * patch * patch, "%spatch_embedder.input_proj.weight", vp);
    vf__ab_param3(b, 2, pos, h, "%spatch_embedder.position_embedding_table", vp);
    for (uint64_t i = 0; i < L && b->st == VF_OK; i++) {
        char p[96], a[112], m[112];
        snprintf(p, sizeof p, "%sencoder.layers.%llu.", vp, (unsigned long long)i);
        snprintf(a, sizeof a, "%sself_attn.", p);
        snprintf(m, sizeof m, "%smlp.", p);
        clip(b, H * hd, h, a, "q_proj");
        clip(b, kv * hd, h, a, "k_proj");
        clip(b, kv * hd, h, a, "v_proj");
        clip(b, h, H * hd, a, "o_proj");
        norm(b, hd, a, "q_norm");
        norm(b, hd, a, "k_norm");
        clip(b, ff, h, m, "gate_proj");
        clip(b, ff, h, m, "up_proj");
        clip(b, h, ff, m, "down_proj");
        norm(b, h, p, "input_layernorm");
        norm(b, h, p, "post_attention_layernorm");
        norm(b, h, p, "pre_feedforward_layernorm");
        norm(b, h, p, "post_feedforward_layernorm");
    }
    vf__ab_linear(b, 0, th, h, "model.embed_vision.embedding_projection");
}

static void audio(vf__ab *b, const json_t *a, uint64_t th)
{
    uint64_t h = vf__ab_cfg(b, a, "hidden_size", 0, CAP_W), L = vf__ab_cfg(b, a, "num_hidden_layers", 0, 512);
    uint64_t H = vf__ab_cfg(b, a, "num_attention_heads", 0, 1024), k = vf__ab_cfg(b, a, "conv_kernel_size", 0, 1024);
    uint64_t out = vf__ab_cfg(b, a, "output_proj_dims", h, CAP_W);
    const json_t *ch = json_object_get(a, "subsampling_conv_channels");
    uint64_t c0 = 0, c1 = 0;
    if (json_array_size(ch) == 2) {
        vf__json_u64(json_array_get(ch, 0), &c0);
        vf__json_u64(json_array_get(ch, 1), &c1);
    }
    if (b->st != VF_OK)
        return;
    if (!h || !L || !H || h % H || !k || !out || !c0 || !c1 || c0 > CAP_W || c1 > CAP_W || c0 < 4) {
        vf__ab_fail(b, VF_EFORMAT, "gemma4 audio_config lacks a size or subsampling_conv_channels [c0, c1]");
        return;
    }
    const char *ap = "model.audio_tower.";
    char p[128], q[160];
    snprintf(p, sizeof p, "%ssubsample_conv_projection.", ap);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 4, (uint64_t[]){c0, 1, 3, 3}, "model.audio_tower.subsample_conv_projection.layer0.conv.weight");
    norm(b, c0, p, "layer0.norm");
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 4, (uint64_t[]){c1, c0, 3, 3}, "model.audio_tower.subsample_conv_projection.layer1.conv.weight");
    norm(b, c1, p, "layer1.norm");
    vf__ab_linear(b, 0, h, (c0 / 4) * c1, "%sinput_proj_linear", p);
    for (uint64_t i = 0; i < L && b->st == VF_OK; i++) {
        snprintf(p, sizeof p, "%slayers.%llu.", ap, (unsigned long long)i);
        for (int f = 1; f <= 2; f++) {
            snprintf(q, sizeof q, "%sfeed_forward%d.", p, f);
            clip(b, 4 * h, h, q, "ffw_layer_1");
            clip(b, h, 4 * h, q, "ffw_layer_2");
            norm(b, h, q, "pre_layer_norm");
            norm(b, h, q, "post_layer_norm");
        }
        snprintf(q, sizeof q, "%sself_attn.", p);
        clip(b, h, h, q, "q_proj");
        clip(b, h, h, q, "k_proj");
        clip(b, h, h, q, "v_proj");
        clip(b, h, h, q, "post");
        vf__ab_linear(b, 0, h, h, "%srelative_k_proj", q);
        vf__ab_param(b, h / H, 0, "%sper_dim_scale", q);
        snprintf(q, sizeof q, "%slconv1d.", p);
        clip(b, 2 * h, h, q, "linear_start");
        clip(b, h, h, q, "linear_end");
        char name[192];
        snprintf(name, sizeof name, "%sdepthwise_conv1d.weight", q);
        vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){h, 1, k}, name);
        norm(b, h, q, "pre_layer_norm");
        norm(b, h, q, "conv_norm");
        norm(b, h, p, "norm_pre_attn");
        norm(b, h, p, "norm_post_attn");
        norm(b, h, p, "norm_out");
    }
    vf__ab_linear(b, VF_LIN_BIAS, out, h, "%soutput_proj", ap);
    vf__ab_linear(b, 0, th, out, "model.embed_audio.embedding_projection");
}

void vf__gemma4_towers(vf__ab *b)
{
    const json_t *v = json_object_get(b->root, "vision_config"), *a = json_object_get(b->root, "audio_config");
    uint64_t th = b->m->hp.hidden_size;
    uint32_t saved = b->flags;
    b->flags |= VF_TENSOR_VISION;
    if (json_is_object(v))
        vision(b, v, th);
    if (json_is_object(a))
        audio(b, a, th);
    b->flags = saved;
}
