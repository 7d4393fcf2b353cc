/* kv.c — the KV cache per token and layer from the architecture
 * (docs/memory-model.md, "KV cache"). */
#include "memory/infer.h"

#include <string.h>
#include <strings.h>

uint32_t vf__layer_heads(const vf_hparams *hp, uint32_t il)
{
    if (hp->layer_n_heads && il < hp->n_layers)
        return hp->layer_n_heads[il];
    return hp->n_heads;
}

uint32_t vf__layer_kv_heads(const vf_hparams *hp, uint32_t il)
{
    if (hp->layer_n_kv_heads && il < hp->n_layers)
        return hp->layer_n_kv_heads[il];
    return hp->n_kv_heads ? hp->n_kv_heads : vf__layer_heads(hp, il);
}

bool vf__layer_is_swa(const vf_hparams *hp, uint32_t il)
{
    if (!hp->sliding_window)
        return false;
    if (hp->layer_is_swa && il < hp->n_layers)
        return hp->layer_is_swa[il] != 0;
    return true; /* a window without a per-layer pattern applies to every layer (Mistral-7B-v0.1) */
}

bool vf__is_mla(const vf_hparams *hp) { return hp->kv_lora_rank > 0; }

static uint32_t layer_head_dim(const vf_hparams *hp, uint32_t il)
{
    if (hp->layer_head_dim && il < hp->n_layers && hp->layer_head_dim[il])
        return hp->layer_head_dim[il];
    if (hp->head_dim)
        return hp->head_dim;
    uint32_t h = vf__layer_heads(hp, il);
    return h ? (uint32_t)(hp->hidden_size / h) : 0;
}

void vf__kv_layer_elems(const vf_hparams *hp, uint32_t il, bool mla_latent, uint64_t *k, uint64_t *v)
{
    *k = *v = 0;
    if (hp->layer_no_kv && il < hp->n_layers && hp->layer_no_kv[il])
        return;
    if (vf__is_mla(hp)) {
        if (mla_latent) {
            /* vLLM MLAAttentionSpec: one latent of kv_lora_rank + rope dim,
             * num_kv_heads = 1, no separate V; llama.cpp deepseek2 with MLA
             * caches the same 576-wide K row and reads V from it. */
            *k = (uint64_t)hp->kv_lora_rank + hp->qk_rope_head_dim;
            return;
        }
        /* decompressed heads (transformers DeepseekV3Attention caches
         * key_states [nope+rope] and value_states [v_head_dim] per head) */
        uint64_t h = vf__layer_heads(hp, il);
        *k = h * ((uint64_t)hp->qk_nope_head_dim + hp->qk_rope_head_dim);
        *v = h * (hp->v_head_dim ? hp->v_head_dim : hp->qk_nope_head_dim);
        return;
    }
    uint64_t kvh = vf__layer_kv_heads(hp, il);
    uint64_t hd = layer_head_dim(hp, il);
    uint64_t vd = hp->v_head_dim && !(hp->layer_head_dim && hp->layer_head_dim[il]) ? hp->v_head_dim : hd;
    *k = kvh * hd;
    *v = kvh * vd;
}

bool vf__kv_dtype_parse(const char *s, vf_dtype def, vf_dtype *k, vf_dtype *v)
{
    *k = *v = def;
    if (!s || !*s || strcasecmp(s, "auto") == 0)
        return true;
    char a[32], b[32];
    const char *comma = strchr(s, ',');
    size_t la = comma ? (size_t)(comma - s) : strlen(s);
    if (la == 0 || la >= sizeof a || (comma && strlen(comma + 1) >= sizeof b))
        return false;
    memcpy(a, s, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", comma ? comma + 1 : a);
    const char *parts[2] = {a, b};
    vf_dtype out[2];
    for (int i = 0; i < 2; i++) {
        const char *p = parts[i];
        /* vLLM spells its 1-byte caches fp8 / fp8_e4m3 / fp8_e5m2 */
        if (strcasecmp(p, "fp8") == 0 || strcasecmp(p, "fp8_e4m3") == 0)
            out[i] = VF_DTYPE_F8_E4M3;
        else if (strcasecmp(p, "fp8_e5m2") == 0)
            out[i] = VF_DTYPE_F8_E5M2;
        else if (strcasecmp(p, "fp16") == 0 || strcasecmp(p, "half") == 0)
            out[i] = VF_DTYPE_F16;
        else if (strcasecmp(p, "fp32") == 0 || strcasecmp(p, "float") == 0)
            out[i] = VF_DTYPE_F32;
        else
            out[i] = vf_dtype_from_name(p);
        if (!vf_dtype_get(out[i]))
            return false;
    }
    *k = out[0];
    *v = out[1];
    return true;
}

uint64_t vf__kv_bytes_per_token(const vf_hparams *hp, bool mla_latent, vf_dtype kd, vf_dtype vd)
{
    uint64_t total = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, mla_latent, &k, &v);
        total = vf__sadd(total, vf__sadd(vf__dt_bytes(kd, k), vf__dt_bytes(vd, v)));
    }
    return total;
}

/* recurrent_state_bytes is per sequence and recurrent layer (the layers
 * without a KV cache of their own; every layer when none is marked). */
bool vf__layer_recurrent(const vf_hparams *hp, uint32_t il)
{
    if (!hp->recurrent_state_bytes || il >= hp->n_layers)
        return false;
    if (hp->layer_recurrent)
        return hp->layer_recurrent[il] != 0;
    return !hp->layer_no_kv || hp->layer_no_kv[il];
}

uint64_t vf__recurrent_bytes(const vf_hparams *hp)
{
    uint64_t n = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++)
        n += vf__layer_recurrent(hp, il);
    return vf__smul(hp->recurrent_state_bytes, n);
}

uint64_t vf__layer_tokens(const vf_hparams *hp, uint32_t il, uint64_t ctx)
{
    if (vf__layer_is_swa(hp, il) && hp->sliding_window < ctx)
        return hp->sliding_window;
    return ctx;
}

uint64_t vf__kv_cache_bytes(const vf_hparams *hp, bool mla_latent, vf_dtype kt, vf_dtype vt, uint64_t ctx,
                            uint64_t batch)
{
    uint64_t kv = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, mla_latent, &k, &v);
        uint64_t toks = vf__layer_tokens(hp, il, ctx);
        kv = vf__sadd(kv, vf__smul(toks, vf__sadd(vf__dt_bytes(kt, k), vf__dt_bytes(vt, v))));
    }
    return vf__sadd(vf__smul(kv, batch), vf__smul(vf__recurrent_bytes(hp), batch));
}

uint64_t vf__prompt_tokens(const vf_infer_opts *io, uint64_t ctx)
{
    return io->prompt_tokens && io->prompt_tokens < ctx ? io->prompt_tokens : ctx;
}

bool vf__hp_has_attention(const vf_hparams *hp)
{
    /* a pure state-space model has no heads but a state to size */
    return hp->n_layers > 0 && (hp->n_heads > 0 || hp->layer_n_heads || hp->recurrent_state_bytes > 0);
}

uint64_t vf__hp_context(const vf_hparams *hp) { return hp->context_length ? hp->context_length : 2048; }

uint64_t vf__hp_ff(const vf_hparams *hp)
{
    if (hp->intermediate_size)
        return hp->intermediate_size;
    return hp->hidden_size * 4;
}
