/* arch_deepseek4.c — DeepSeek-V4 (model_type deepseek_v4: V4-Flash, V4-Pro and
 * their bases). Tensors, shapes and storage as the release's own reference,
 * inference/model.py of HF deepseek-ai/DeepSeek-V4-Flash @60d8d70770c6 (read
 * through a byte-identical vendored copy), names as its checkpoint writes them:
 *   embed.weight [V, D]; head.weight [V, D]; norm.weight [D]; hc_head_fn
 *   [hc, hc*D], hc_head_base [hc], hc_head_scale [1] (float32);
 *   layers.i: attn_norm / ffn_norm [D]; hc_{attn,ffn}_fn [(2+hc)*hc, hc*D],
 *   _base [(2+hc)*hc], _scale [3] (float32, mHC);
 *   attn: attn_sink [H] f32, wq_a [ql, D], q_norm [ql], wq_b [H*hd, ql], wkv
 *   [hd, D], kv_norm [hd], wo_a [G*ol, H*hd/G], wo_b [D, G*ol]; with a
 *   compress ratio r: compressor.{ape [r, c*hd] f32, wkv / wgate [c*hd, D] bf16,
 *   norm [hd]} (c = 2 when r == 4: overlapping windows), and for r == 4 the
 *   indexer: wq_b [ih*ihd, ql], weights_proj [ih, D] bf16 and its own
 *   compressor of width ihd;
 *   ffn: gate.weight [E, D], gate.bias [E] f32 (gate.tid2eid [V, k] i32 instead
 *   in the first num_hash_layers: hash routing), experts.e.w1/w3 [ff, D] and w2
 *   [D, ff], shared_experts.w1/w2/w3;
 *   mtp.k: a block plus e_proj / h_proj [D, D], enorm / hnorm / norm [D] and
 *   its hc_head_* (embedding and head are the model's).
 * Storage (quantization_config fp8, 128x128 blocks, ue8m0 scales): every
 * Linear of the default dtype is F8_E4M3 [out, in] + F8_E8M0 ".scale"
 * [ceil(out/128), ceil(in/128)], wo_a included; expert_dtype fp4 stores the
 * routed experts as packed pairs, I8 [out, in/2] + F8_E8M0 [out, in/32].
 * Without that quantization_config every Linear is plain, in torch_dtype. */
#include "read/arch/arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { L_DEFAULT, L_EXPERT, L_BF16 }; /* a Linear's dtype in model.py */

typedef struct v4 {
    uint64_t D, V, H, hd, rope, ql, ol, G, E, ff, K, ih, ihd, hc;
    uint32_t hash_layers;
    bool fp8, fp4;
    const json_t *ratios;
} v4;

static uint64_t cdiv(uint64_t a, uint64_t d) { return (a + d - 1) / d; }

static void linear(vf__ab *b, const v4 *c, int kind, uint64_t out, uint64_t in, const char *p, const char *n)
{
    char name[256], sc[264];
    vf__ab_name(name, sizeof name, "%s%s.weight", p, n);
    vf__ab_name(sc, sizeof sc, "%s%s.scale", p, n);
    if (kind == L_EXPERT && c->fp4) {
        if (in % 32) {
            vf__ab_fail(b, VF_EFORMAT, "fp4 experts need a width divisible by 32, not %llu", (unsigned long long)in);
            return;
        }
        vf__ab_raw(b, VF_DTYPE_I8, VF_TENSOR_PACKED, out * in, 2, (uint64_t[]){out, in / 2}, name);
        vf__ab_raw(b, VF_DTYPE_F8_E8M0, 0, 0, 2, (uint64_t[]){out, in / 32}, sc);
    } else if (kind != L_BF16 && c->fp8) {
        vf__ab_raw(b, VF_DTYPE_F8_E4M3, 0, UINT64_MAX, 2, (uint64_t[]){out, in}, name);
        vf__ab_raw(b, VF_DTYPE_F8_E8M0, 0, 0, 2, (uint64_t[]){cdiv(out, 128), cdiv(in, 128)}, sc);
    } else {
        vf__ab_param(b, out, in, "%s", name);
    }
}

static void f32(vf__ab *b, uint64_t d0, uint64_t d1, const char *p, const char *n)
{
    char name[256];
    vf__ab_name(name, sizeof name, "%s%s", p, n);
    uint64_t s[2] = {d0, d1};
    vf__ab_raw(b, VF_DTYPE_F32, 0, UINT64_MAX, d1 ? 2 : 1, s, name);
}

static uint64_t ratio(const v4 *c, uint32_t i)
{
    uint64_t r = 0;
    vf__json_u64(json_array_get(c->ratios, i), &r);
    return r;
}

static void compressor(vf__ab *b, const v4 *c, uint64_t r, uint64_t hd, const char *p)
{
    uint64_t w = (r == 4 ? 2 : 1) * hd;
    f32(b, r, w, p, "ape");
    linear(b, c, L_BF16, w, c->D, p, "wkv");
    linear(b, c, L_BF16, w, c->D, p, "wgate");
    vf__ab_param(b, hd, 0, "%snorm.weight", p);
}

static void block(vf__ab *b, const v4 *c, uint32_t i, const char *p)
{
    uint64_t D = c->D, mix = (2 + c->hc) * c->hc;
    char q[160];
    vf__ab_name(q, sizeof q, "%sattn.", p);
    f32(b, c->H, 0, q, "attn_sink");
    linear(b, c, L_DEFAULT, c->ql, D, q, "wq_a");
    vf__ab_param(b, c->ql, 0, "%sq_norm.weight", q);
    linear(b, c, L_DEFAULT, c->H * c->hd, c->ql, q, "wq_b");
    linear(b, c, L_DEFAULT, c->hd, D, q, "wkv");
    vf__ab_param(b, c->hd, 0, "%skv_norm.weight", q);
    linear(b, c, L_DEFAULT, c->G * c->ol, c->H * c->hd / c->G, q, "wo_a");
    linear(b, c, L_DEFAULT, D, c->G * c->ol, q, "wo_b");
    uint64_t r = ratio(c, i);
    if (r) {
        char s[192];
        vf__ab_name(s, sizeof s, "%scompressor.", q);
        compressor(b, c, r, c->hd, s);
        if (r == 4) {
            vf__ab_name(s, sizeof s, "%sindexer.", q);
            linear(b, c, L_DEFAULT, c->ih * c->ihd, c->ql, s, "wq_b");
            linear(b, c, L_BF16, c->ih, D, s, "weights_proj");
            vf__ab_name(s, sizeof s, "%sindexer.compressor.", q);
            compressor(b, c, r, c->ihd, s);
        }
    }
    vf__ab_name(q, sizeof q, "%sffn.", p);
    vf__ab_param(b, c->E, D, "%sgate.weight", q);
    if (i < c->hash_layers) {
        char name[192];
        vf__ab_name(name, sizeof name, "%sgate.tid2eid", q);
        vf__ab_raw(b, VF_DTYPE_I32, 0, UINT64_MAX, 2, (uint64_t[]){c->V, c->K}, name);
    } else {
        f32(b, c->E, 0, q, "gate.bias");
    }
    for (uint64_t e = 0; e < c->E && b->st == VF_OK; e++) {
        char ep[192];
        vf__ab_name(ep, sizeof ep, "%sexperts.%llu.", q, (unsigned long long)e);
        linear(b, c, L_EXPERT, c->ff, D, ep, "w1");
        linear(b, c, L_EXPERT, D, c->ff, ep, "w2");
        linear(b, c, L_EXPERT, c->ff, D, ep, "w3");
    }
    vf__ab_name(q, sizeof q, "%sffn.shared_experts.", p);
    linear(b, c, L_DEFAULT, c->ff, D, q, "w1");
    linear(b, c, L_DEFAULT, D, c->ff, q, "w2");
    linear(b, c, L_DEFAULT, c->ff, D, q, "w3");
    vf__ab_param(b, D, 0, "%sattn_norm.weight", p);
    vf__ab_param(b, D, 0, "%sffn_norm.weight", p);
    f32(b, mix, c->hc * D, p, "hc_attn_fn");
    f32(b, mix, c->hc * D, p, "hc_ffn_fn");
    f32(b, mix, 0, p, "hc_attn_base");
    f32(b, mix, 0, p, "hc_ffn_base");
    f32(b, 3, 0, p, "hc_attn_scale");
    f32(b, 3, 0, p, "hc_ffn_scale");
}

static void hc_head(vf__ab *b, const v4 *c, const char *p)
{
    f32(b, c->hc, c->hc * c->D, p, "hc_head_fn");
    f32(b, c->hc, 0, p, "hc_head_base");
    f32(b, 1, 0, p, "hc_head_scale");
}

static uint64_t key(const vf__ab *b, const char *k, uint64_t dflt)
{
    uint64_t v = dflt;
    vf__cfg_u64(b->cfg, &v, k, NULL);
    return v;
}

vf_status vf__arch_deepseek4(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    v4 c = {.D = hp->hidden_size, .V = hp->vocab_size, .H = hp->n_heads, .hd = hp->head_dim,
            .rope = key(b, "qk_rope_head_dim", 64), .ql = key(b, "q_lora_rank", 0), .ol = key(b, "o_lora_rank", 0),
            .G = key(b, "o_groups", 0), .E = hp->n_experts, .ff = hp->moe_intermediate_size,
            .K = hp->n_experts_active, .ih = key(b, "index_n_heads", 0), .ihd = key(b, "index_head_dim", 0),
            .hc = key(b, "hc_mult", 1)};
    c.hash_layers = (uint32_t)(key(b, "num_hash_layers", 0) > hp->n_layers ? hp->n_layers
                                                                          : key(b, "num_hash_layers", 0));
    c.ratios = json_object_get(b->cfg, "compress_ratios");
    const char *ed = vf__cfg_str(b->cfg, "expert_dtype");
    c.fp8 = b->q.kind == VF_Q_FP8;
    c.fp4 = c.fp8 && ed && strcmp(ed, "fp4") == 0;
    if (!c.ql || !c.ol || !c.G || c.G > c.H || c.H % c.G || !c.E || !c.ff || !c.K || !c.hc || c.hc > 64 ||
        c.ql > (1u << 20) || c.ol > (1u << 20) || c.ih > 16384 || c.ihd > 65536 || c.rope > c.hd)
        return vf__err(b->err, VF_EFORMAT, b->path,
                       "deepseek_v4 config lacks or misstates q_lora_rank, o_lora_rank, o_groups, hc_mult or "
                       "the experts");
    uint32_t L = hp->n_layers + hp->n_mtp_layers;
    if (!json_is_array(c.ratios) || json_array_size(c.ratios) < L)
        return vf__err(b->err, VF_EFORMAT, b->path, "deepseek_v4 config needs compress_ratios for all %u layers", L);
    for (uint32_t i = 0; i < L; i++) {
        uint64_t r = ratio(&c, i);
        if (r > 65536 || (r == 4 && (!c.ih || !c.ihd)))
            return vf__err(b->err, VF_EFORMAT, b->path, "deepseek_v4 compress_ratios[%u] out of range", i);
    }
    vf__ab_param(b, c.V, c.D, "embed.weight");
    char p[64];
    for (uint32_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        vf__ab_name(p, sizeof p, "layers.%u.", i);
        block(b, &c, i, p);
    }
    vf__ab_param(b, c.D, 0, "norm.weight");
    vf__ab_param(b, c.V, c.D, "head.weight");
    hc_head(b, &c, "");
    /* next-token prediction blocks (mtp.k, layer num_hidden_layers + k) */
    uint32_t saved = b->flags;
    b->flags |= VF_TENSOR_MTP;
    for (uint32_t k = 0; k < hp->n_mtp_layers && b->st == VF_OK; k++) {
        vf__ab_name(p, sizeof p, "mtp.%u.", k);
        block(b, &c, hp->n_layers + k, p);
        linear(b, &c, L_DEFAULT, c.D, c.D, p, "e_proj");
        linear(b, &c, L_DEFAULT, c.D, c.D, p, "h_proj");
        vf__ab_param(b, c.D, 0, "%senorm.weight", p);
        vf__ab_param(b, c.D, 0, "%shnorm.weight", p);
        vf__ab_param(b, c.D, 0, "%snorm.weight", p);
        hc_head(b, &c, p);
    }
    b->flags = saved;
    return b->st;
}

/* The KV cache's shape: one shared 512-wide latent per token (K and V are the
 * same tensor, model.py's kv_cache [.., head_dim]), priced as an MLA latent of
 * head_dim - rope + rope; layers with compress ratio 0 keep only the sliding
 * window. A compressed layer keeps the window plus one entry per r tokens:
 * priced as a full-length cache, an upper bound (said in the warning). */
vf_status vf__deepseek4_hparams(vf_hparams *hp, const json_t *t, const char *path, vf_error *err)
{
    uint64_t rope = 64;
    vf__cfg_u64(t, &rope, "qk_rope_head_dim", NULL);
    if (!hp->head_dim || rope >= hp->head_dim || !hp->n_layers)
        return vf__err(err, VF_EFORMAT, path, "deepseek_v4 head_dim must exceed qk_rope_head_dim");
    hp->kv_lora_rank = hp->head_dim - (uint32_t)rope;
    hp->qk_rope_head_dim = (uint32_t)rope;
    hp->qk_nope_head_dim = hp->head_dim - (uint32_t)rope;
    hp->v_head_dim = hp->head_dim;
    const json_t *a = json_object_get(t, "compress_ratios");
    if (!hp->sliding_window || !json_is_array(a))
        return VF_OK;
    hp->layer_is_swa = calloc(hp->n_layers, 1);
    if (!hp->layer_is_swa)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    for (uint32_t i = 0; i < hp->n_layers; i++) {
        uint64_t r = 1;
        vf__json_u64(json_array_get(a, i), &r);
        hp->layer_is_swa[i] = r == 0;
    }
    return VF_OK;
}
