/* gguf_hparams.c — GGUF metadata ({arch}.* keys) → vf_hparams.
 *
 * Keys: ggml docs/gguf.md "LLM" and llama.cpp src/llama-arch.cpp
 * (LLM_KV_NAMES); per-layer arrays as llama.cpp's get_key_or_arr reads them;
 * sliding-window layer patterns as llama.cpp's llama_hparams::set_swa_pattern
 * and each architecture's loader set them; recurrent state sizes as
 * llama_hparams::n_embd_r / n_embd_s. See docs/formats.md "GGUF". */
#include "read/gguf_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.h enum llama_ftype (general.file_type); removed ids have no name. */
static const char *const ftype_names[] = {
    [0] = "F32",     [1] = "F16",     [2] = "Q4_0",     [3] = "Q4_1",    [4] = "Q4_1_SOME_F16", [7] = "Q8_0",
    [8] = "Q5_0",    [9] = "Q5_1",    [10] = "Q2_K",    [11] = "Q3_K_S", [12] = "Q3_K_M",      [13] = "Q3_K_L",
    [14] = "Q4_K_S", [15] = "Q4_K_M", [16] = "Q5_K_S",  [17] = "Q5_K_M", [18] = "Q6_K",        [19] = "IQ2_XXS",
    [20] = "IQ2_XS", [21] = "Q2_K_S", [22] = "IQ3_XS",  [23] = "IQ3_XXS", [24] = "IQ1_S",      [25] = "IQ4_NL",
    [26] = "IQ3_S",  [27] = "IQ3_M",  [28] = "IQ2_S",   [29] = "IQ2_M",  [30] = "IQ4_XS",      [31] = "IQ1_M",
    [32] = "BF16",   [36] = "TQ1_0",  [37] = "TQ2_0",   [38] = "MXFP4_MOE",
};

/* llama_ftype id (general.file_type) → "Q4_K_M"; NULL when unknown. */
static const char *gguf_ftype_name(uint64_t ftype)
{
    ftype &= ~(uint64_t)1024; /* LLAMA_FTYPE_GUESSED */
    if (ftype >= sizeof ftype_names / sizeof ftype_names[0])
        return NULL;
    return ftype_names[ftype];
}

typedef struct ctx {
    const vf_model *m;
    const char *arch;
    uint32_t n_layers; /* entries of the per-layer arrays */
} ctx;

static const json_t *akey(const ctx *c, const char *suffix)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", c->arch, suffix);
    return json_object_get(c->m->gguf_kv, key);
}

static bool u64_of(const json_t *v, uint64_t *out)
{
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    return vf__json_u64(v, out);
}

static uint64_t get_u64(const ctx *c, const char *suffix)
{
    uint64_t v = 0;
    return u64_of(akey(c, suffix), &v) ? v : 0;
}

static uint32_t clamp32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }
static uint32_t get_u32(const ctx *c, const char *suffix) { return clamp32(get_u64(c, suffix)); }

/* A scalar or a per-layer array. *scalar gets the value (the largest for an
 * array); *arr gets the per-layer values when they differ, else NULL. */
static void per_layer(const ctx *c, const char *suffix, uint64_t *scalar, uint64_t **arr)
{
    const json_t *v = akey(c, suffix);
    *arr = NULL;
    if (!json_is_array(v)) {
        u64_of(v, scalar);
        return;
    }
    size_t n = json_array_size(v);
    uint64_t max = 0, first = 0;
    bool uniform = true;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = 0;
        u64_of(json_array_get(v, i), &x);
        if (i == 0)
            first = x;
        uniform = uniform && x == first;
        if (x > max)
            max = x;
    }
    *scalar = max;
    if (uniform || n < c->n_layers || c->n_layers == 0)
        return;
    uint64_t *a = calloc(c->n_layers, sizeof *a);
    if (!a)
        return;
    for (uint32_t i = 0; i < c->n_layers; i++)
        u64_of(json_array_get(v, i), &a[i]);
    *arr = a;
}

static void per_layer32(const ctx *c, const char *suffix, uint32_t *scalar, uint32_t **arr)
{
    uint64_t s = *scalar, *a = NULL;
    per_layer(c, suffix, &s, &a);
    *scalar = clamp32(s);
    *arr = NULL;
    if (!a)
        return;
    uint32_t *b = malloc(c->n_layers * sizeof *b);
    if (b)
        for (uint32_t i = 0; i < c->n_layers; i++)
            b[i] = clamp32(a[i]);
    free(a);
    *arr = b;
}

/* llama.cpp's per-architecture SWA period (set_swa_pattern(n) in each
 * loader): layer il is sliding-window when il % n < n - 1. */
static uint32_t arch_swa_period(const char *arch)
{
    static const struct {
        const char *arch;
        uint32_t period;
    } t[] = {{"gemma2", 2}, {"gemma3", 6}, {"gemma3n", 5}, {"gemma-embedding", 6},
             {"cohere2", 4}, {"gpt-oss", 2}, {"llama4", 4}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(arch, t[i].arch) == 0)
            return t[i].period;
    return 0;
}

static void sliding_window(const ctx *c, vf_hparams *hp)
{
    uint64_t w = 0, *wa = NULL;
    const json_t *wk = akey(c, "attention.sliding_window");
    per_layer(c, "attention.sliding_window", &w, &wa);
    free(wa);
    uint32_t period = arch_swa_period(c->arch);
    if (strcmp(c->arch, "llama4") == 0 && !wk)
        w = 8192; /* llama.cpp: chunked attention with n_swa 8192 unless the key says 0 */
    hp->sliding_window = clamp32(w);
    if (w == 0 || c->n_layers == 0)
        return;
    const json_t *p = akey(c, "attention.sliding_window_pattern");
    uint8_t *swa = calloc(c->n_layers, 1);
    if (!swa)
        return;
    if (json_is_array(p) && json_array_size(p) >= c->n_layers) {
        for (uint32_t i = 0; i < c->n_layers; i++) {
            uint64_t x = 0;
            u64_of(json_array_get(p, i), &x);
            swa[i] = x != 0;
        }
    } else {
        uint64_t n = period;
        if (u64_of(p, &n) || period) {
            for (uint32_t i = 0; i < c->n_layers; i++)
                swa[i] = n == 0 || i % n < n - 1;
        } else {
            free(swa); /* a window with no pattern: every layer, left uniform */
            return;
        }
    }
    hp->layer_is_swa = swa;
}

/* Bytes of recurrent state per sequence and layer (f32, llama.cpp's default
 * type for the r and s caches): n_embd_r() + n_embd_s() elements. */
static uint64_t recurrent_state_bytes(const ctx *c, uint64_t n_embd)
{
    uint64_t r = 0, s = 0;
    uint64_t wkv = get_u64(c, "wkv.head_size");
    uint64_t l_cache = get_u64(c, "shortconv.l_cache");
    if (wkv) { /* RWKV: token shift + wkv state */
        uint64_t shift = akey(c, "token_shift_count") ? get_u64(c, "token_shift_count") : 2;
        r = shift * n_embd;
        s = n_embd * wkv;
    } else if (l_cache) { /* LFM2 short convolutions */
        r = n_embd * (l_cache - 1);
    } else {
        uint64_t conv = get_u64(c, "ssm.conv_kernel"), inner = get_u64(c, "ssm.inner_size"),
                 state = get_u64(c, "ssm.state_size"), groups = get_u64(c, "ssm.group_count");
        if (!inner)
            return 0;
        r = (conv > 0 ? conv - 1 : 0) * (inner + 2 * groups * state);
        s = state * inner;
    }
    return 4 * (r + s);
}

static bool has_tensor(const vf_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return true;
    return false;
}

static const vf_tensor *find_tensor(const vf_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return &m->tensors[i];
    return NULL;
}

static bool is_recurrent_arch(const char *a)
{
    return strcmp(a, "mamba") == 0 || strcmp(a, "mamba2") == 0 || strncmp(a, "rwkv", 4) == 0 ||
           strcmp(a, "arwkv7") == 0;
}

void vf__gguf_hparams(vf_model *m)
{
    vf_hparams *hp = &m->hp;
    const json_t *kv = m->gguf_kv;
    const char *arch = json_string_value(json_object_get(kv, "general.architecture"));
    const char *name = json_string_value(json_object_get(kv, "general.name"));
    if (name)
        snprintf(hp->name, sizeof hp->name, "%s", name);
    uint64_t ft;
    if (u64_of(json_object_get(kv, "general.file_type"), &ft)) {
        const char *fn = gguf_ftype_name(ft);
        if (fn)
            snprintf(hp->quant_method, sizeof hp->quant_method, "%s", fn);
        else
            snprintf(hp->quant_method, sizeof hp->quant_method, "ftype %llu", (unsigned long long)ft);
    }
    /* vocab: the tokenizer's token list (kept as a count when long) */
    const json_t *tok = json_object_get(kv, "tokenizer.ggml.tokens");
    uint64_t n_tok = 0;
    if (json_is_array(tok))
        n_tok = json_array_size(tok);
    else if (json_is_object(tok))
        u64_of(json_object_get(tok, "count"), &n_tok);
    const vf_tensor *embd = find_tensor(m, "token_embd.weight");
    hp->tie_word_embeddings = embd && !has_tensor(m, "output.weight");
    hp->attention_bias = has_tensor(m, "blk.0.attn_q.bias") || has_tensor(m, "blk.0.attn_qkv.bias");
    hp->mlp_bias = has_tensor(m, "blk.0.ffn_up.bias") || has_tensor(m, "blk.0.ffn_down.bias");
    if (!arch) {
        hp->vocab_size = n_tok;
        return;
    }
    snprintf(hp->architecture, sizeof hp->architecture, "%s", arch);
    ctx c = {.m = m, .arch = arch};
    uint64_t blocks = get_u64(&c, "block_count");
    hp->n_mtp_layers = get_u32(&c, "nextn_predict_layers");
    /* like HF's num_hidden_layers, n_layers leaves out the MTP blocks GGUF counts in block_count */
    hp->n_layers = clamp32(blocks > hp->n_mtp_layers ? blocks - hp->n_mtp_layers : blocks);
    /* per-layer arrays only for a plausible depth (llama.cpp: LLAMA_MAX_LAYERS 512) */
    c.n_layers = hp->n_layers <= VF_GGUF_MAX_LAYERS ? hp->n_layers : 0;
    if (!c.n_layers && hp->n_layers)
        vf__model_warn(m, "%s: block_count %u is implausible; per-layer values ignored", m->source, hp->n_layers);
    hp->context_length = get_u64(&c, "context_length");
    hp->hidden_size = get_u64(&c, "embedding_length");
    per_layer(&c, "feed_forward_length", &hp->intermediate_size, &hp->layer_ff);
    per_layer32(&c, "attention.head_count", &hp->n_heads, &hp->layer_n_heads);
    if (akey(&c, "attention.head_count_kv"))
        per_layer32(&c, "attention.head_count_kv", &hp->n_kv_heads, &hp->layer_n_kv_heads);
    else
        hp->n_kv_heads = hp->n_heads; /* absent means no grouping */
    hp->vocab_size = get_u64(&c, "vocab_size");
    if (!hp->vocab_size)
        hp->vocab_size = n_tok;
    if (!hp->vocab_size && embd && embd->n_dims == 2)
        hp->vocab_size = embd->shape[0];
    /* head dims: under MLA the original (HF) dims; key_length there is the cached latent */
    hp->head_dim = get_u32(&c, "attention.key_length_mla");
    hp->v_head_dim = get_u32(&c, "attention.value_length_mla");
    if (!hp->head_dim)
        hp->head_dim = get_u32(&c, "attention.key_length");
    if (!hp->v_head_dim && !akey(&c, "attention.key_length_mla"))
        hp->v_head_dim = get_u32(&c, "attention.value_length");
    if (!hp->head_dim && hp->n_heads)
        hp->head_dim = clamp32(hp->hidden_size / hp->n_heads);
    if (!hp->v_head_dim)
        hp->v_head_dim = hp->head_dim;
    /* experts */
    hp->n_experts = get_u32(&c, "expert_count");
    hp->n_experts_active = get_u32(&c, "expert_used_count");
    hp->n_shared_experts = get_u32(&c, "expert_shared_count");
    hp->moe_intermediate_size = get_u64(&c, "expert_feed_forward_length");
    hp->shared_expert_intermediate_size = get_u64(&c, "expert_shared_feed_forward_length");
    hp->first_k_dense = get_u32(&c, "leading_dense_block_count");
    hp->moe_layer_freq = get_u32(&c, "interleave_moe_layer_step");
    /* MLA */
    hp->q_lora_rank = get_u32(&c, "attention.q_lora_rank");
    hp->kv_lora_rank = get_u32(&c, "attention.kv_lora_rank");
    if (hp->kv_lora_rank) {
        hp->qk_rope_head_dim = get_u32(&c, "rope.dimension_count");
        if (hp->head_dim > hp->qk_rope_head_dim)
            hp->qk_nope_head_dim = hp->head_dim - hp->qk_rope_head_dim;
    }
    sliding_window(&c, hp);
    uint32_t kl_swa = get_u32(&c, "attention.key_length_swa");
    if (kl_swa && hp->layer_is_swa && kl_swa != hp->head_dim && (hp->layer_head_dim = malloc((size_t)c.n_layers * sizeof *hp->layer_head_dim)))
        for (uint32_t i = 0; i < c.n_layers; i++)
            hp->layer_head_dim[i] = hp->layer_is_swa[i] ? kl_swa : hp->head_dim;
    /* layers without a KV cache of their own */
    uint64_t shared_kv = get_u64(&c, "attention.shared_kv_layers");
    bool recurrent = is_recurrent_arch(arch);
    bool any_no_kv = recurrent || shared_kv > 0;
    for (uint32_t i = 0; hp->layer_n_kv_heads && i < c.n_layers; i++)
        any_no_kv = any_no_kv || hp->layer_n_kv_heads[i] == 0;
    if (any_no_kv && c.n_layers && (hp->layer_no_kv = calloc(c.n_layers, 1)))
        for (uint32_t i = 0; i < c.n_layers; i++)
            hp->layer_no_kv[i] = recurrent || (hp->layer_n_kv_heads && hp->layer_n_kv_heads[i] == 0) ||
                                 (shared_kv > 0 && i >= (c.n_layers > shared_kv ? c.n_layers - shared_kv : 0));
    hp->recurrent_state_bytes = recurrent_state_bytes(&c, hp->hidden_size);
    hp->recurrent_state_elems = hp->recurrent_state_bytes / 4;
    /* Nemotron-H (nemotron_h, nemotron_h_moe): a layer is recurrent iff it has
     * neither KV heads nor a feed-forward (models/nemotron-h.cpp
     * load_arch_hparams: is_recr = n_head_kv(i) == 0 && n_ff(i) == 0); the
     * MLP-only layers hold no state (llama-model.cpp create_memory filters) */
    if ((strcmp(arch, "nemotron_h") == 0 || strcmp(arch, "nemotron_h_moe") == 0) && hp->layer_no_kv &&
        hp->recurrent_state_bytes && (hp->layer_recurrent = calloc(c.n_layers, 1)))
        for (uint32_t i = 0; i < c.n_layers; i++)
            hp->layer_recurrent[i] = hp->layer_no_kv[i] && (!hp->layer_ff || hp->layer_ff[i] == 0);
    /* Qwen3-Next / Qwen3.5 (qwen3next, qwen35, qwen35moe): full attention every
     * full_attention_interval layers, gated DeltaNet (recurrent) between
     * (llama-model.cpp: recurrent_layer_arr[i] = (i + 1) % interval != 0) */
    uint32_t fai = get_u32(&c, "full_attention_interval");
    if (fai && c.n_layers && hp->recurrent_state_bytes) {
        free(hp->layer_no_kv);
        hp->layer_no_kv = calloc(c.n_layers, 1);
        hp->layer_recurrent = calloc(c.n_layers, 1);
        for (uint32_t i = 0; hp->layer_no_kv && hp->layer_recurrent && i < c.n_layers; i++)
            hp->layer_no_kv[i] = hp->layer_recurrent[i] = (i + 1) % fai != 0;
    }
}
