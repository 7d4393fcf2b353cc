/* arch_t5.c — T5 and mT5 (T5ForConditionalGeneration / MT5ForConditionalGeneration,
 * ByT5 and Flan-T5 included): the shared embedding, an encoder and a decoder
 * of num_layers / num_decoder_layers blocks, bias-free projections of
 * num_heads × d_kv, RMS-style layer norms (weight only), a relative position
 * bias [buckets, heads] in each stack's first block, the ReLU or gated FFN
 * that feed_forward_proj names, and an lm_head unless it is tied (T5Config's
 * default; T5 v1.1 / mT5 / ByT5 configs say tie_word_embeddings false). */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

#define T5_CAP (1u << 20)

typedef struct t5 {
    uint64_t d, inner, ff, heads, buckets;
    bool gated;
} t5;

/* layer.N of a block: attention (SelfAttention or EncDecAttention) and its norm */
static void attn(vf__ab *b, const t5 *t, const char *p, unsigned n, const char *kind, bool bias)
{
    vf__ab_linear(b, 0, t->inner, t->d, "%slayer.%u.%s.q", p, n, kind);
    vf__ab_linear(b, 0, t->inner, t->d, "%slayer.%u.%s.k", p, n, kind);
    vf__ab_linear(b, 0, t->inner, t->d, "%slayer.%u.%s.v", p, n, kind);
    vf__ab_linear(b, 0, t->d, t->inner, "%slayer.%u.%s.o", p, n, kind);
    if (bias)
        vf__ab_param(b, t->buckets, t->heads, "%slayer.%u.%s.relative_attention_bias.weight", p, n, kind);
    vf__ab_param(b, t->d, 0, "%slayer.%u.layer_norm.weight", p, n);
}

static void ffn(vf__ab *b, const t5 *t, const char *p, unsigned n)
{
    if (t->gated) {
        vf__ab_linear(b, 0, t->ff, t->d, "%slayer.%u.DenseReluDense.wi_0", p, n);
        vf__ab_linear(b, 0, t->ff, t->d, "%slayer.%u.DenseReluDense.wi_1", p, n);
    } else {
        vf__ab_linear(b, 0, t->ff, t->d, "%slayer.%u.DenseReluDense.wi", p, n);
    }
    vf__ab_linear(b, 0, t->d, t->ff, "%slayer.%u.DenseReluDense.wo", p, n);
    vf__ab_param(b, t->d, 0, "%slayer.%u.layer_norm.weight", p, n);
}

vf_status vf__arch_t5(vf__ab *b)
{
    vf_hparams *hp = &b->m->hp;
    t5 t = {.d = hp->hidden_size, .heads = hp->n_heads};
    t.ff = vf__ab_cfg(b, b->cfg, "d_ff", 2048, T5_CAP);
    uint64_t kv = vf__ab_cfg(b, b->cfg, "d_kv", 64, T5_CAP);
    t.buckets = vf__ab_cfg(b, b->cfg, "relative_attention_num_buckets", 32, T5_CAP);
    uint64_t dec = vf__ab_cfg(b, b->cfg, "num_decoder_layers", hp->n_layers, T5_CAP);
    if (b->st != VF_OK)
        return b->st;
    t.inner = t.heads * kv;
    hp->head_dim = hp->v_head_dim = (uint32_t)kv; /* d_kv, not d_model / num_heads */
    const char *ffp = vf__cfg_str(b->cfg, "feed_forward_proj");
    t.gated = ffp && strncmp(ffp, "gated-", 6) == 0;
    vf__ab_param(b, hp->vocab_size, t.d, "shared.weight");
    for (uint64_t i = 0; i < hp->n_layers && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "encoder.block.%llu.", (unsigned long long)i);
        attn(b, &t, p, 0, "SelfAttention", i == 0);
        ffn(b, &t, p, 1);
    }
    vf__ab_param(b, t.d, 0, "encoder.final_layer_norm.weight");
    for (uint64_t i = 0; i < dec && b->st == VF_OK; i++) {
        char p[64];
        snprintf(p, sizeof p, "decoder.block.%llu.", (unsigned long long)i);
        attn(b, &t, p, 0, "SelfAttention", i == 0);
        attn(b, &t, p, 1, "EncDecAttention", false);
        ffn(b, &t, p, 2);
    }
    vf__ab_param(b, t.d, 0, "decoder.final_layer_norm.weight");
    if (!hp->tie_word_embeddings)
        vf__ab_linear(b, 0, hp->vocab_size, t.d, "lm_head");
    return b->st;
}
