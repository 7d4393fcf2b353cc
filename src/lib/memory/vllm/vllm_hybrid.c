/* vllm_hybrid.c — vLLM's KV cache for hybrid models (v1 hybrid
 * allocator; vllm/v1/core/kv_cache_utils.py, vllm/model_executor/models/
 * config.py HybridAttentionMambaModelConfig.verify_and_update_config):
 * a recurrent layer's page holds its whole state (conv + SSM) for one request;
 * the attention block size is raised to the smallest multiple of 16 tokens
 * whose page is at least that large, and the state page is padded to the
 * attention page, so every layer's page has one size P. Layers are grouped
 * into KV-cache groups of g layers each (g = the smaller of the two layer
 * counts); one block of the shared pool is a page in each of g slot tensors
 * (g x P bytes). A request needs ceil(max_model_len / block) blocks per
 * attention group and one block per recurrent group. */
#include "memory/infer.h"

bool vf__vllm_hybrid_layout(const vf_hparams *hp, uint64_t tp, vf_dtype kt, vf_dtype vt, uint64_t mml,
                            vf__vllm_hybrid *o)
{
    uint32_t n_rec = 0, n_attn = 0;
    uint64_t tok = 0; /* K + V bytes per token of the widest attention layer, per GPU */
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        n_rec += vf__layer_recurrent(hp, il); /* a Falcon-H1 / Zamba2 hybrid layer also attends */
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, true, &k, &v);
        if (!k && !v)
            continue; /* a recurrent-only or MLP-only layer (Nemotron-H '-', 'E') */
        n_attn++;
        uint64_t kvh = vf__layer_kv_heads(hp, il), per = kvh >= tp ? kvh / tp : 1;
        if (kvh) {
            k = k / kvh * per;
            v = v / kvh * per;
        }
        uint64_t b = vf__sadd(vf__dt_bytes(kt, k), vf__dt_bytes(vt, v));
        if (b > tok)
            tok = b;
    }
    if (!n_rec)
        return false;
    uint64_t state = hp->recurrent_state_bytes / (tp ? tp : 1);
    uint64_t block = 16;
    if (tok) { /* the attention page must hold a whole state page */
        uint64_t need_tok = (state + tok - 1) / tok;
        block = (need_tok + 15) / 16 * 16;
        if (block < 16)
            block = 16;
    }
    uint64_t P = tok ? vf__smul(block, tok) : state;
    if (P < state)
        P = state;
    uint32_t g = n_attn && n_attn < n_rec ? n_attn : n_rec;
    uint32_t ga = n_attn ? (n_attn + g - 1) / g : 0, gr = (n_rec + g - 1) / g;
    o->block = block;
    o->page = vf__smul(g, P);
    o->state_page = state;
    o->group = g;
    o->attn_groups = ga;
    o->rec_groups = gr;
    uint64_t blocks = vf__sadd(vf__smul(ga, (mml + block - 1) / block), gr);
    o->need = vf__smul(blocks, o->page);
    return true;
}
