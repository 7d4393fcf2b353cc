/* transformers_replay.c — transformers' generate() played into the caching
 * allocator model (replay_torch.h says what is played, in which order). */
#include "memory/torch/replay_torch.h"

#include <stdlib.h>

#define STEP_BUDGET 4096u /* cat pairs replayed over the decode: bounded time per estimate */

static uint64_t layer_kv(const vf_hparams *hp, const vf__gen_shape *g, uint32_t il, uint64_t tokens, bool v)
{
    uint64_t ke, ve;
    vf__kv_layer_elems(hp, il, false, &ke, &ve);
    uint64_t row = v ? vf__dt_bytes(g->vt, ve) : vf__dt_bytes(g->kt, ke);
    return vf__smul(vf__smul(g->b, vf__layer_tokens(hp, il, tokens)), row) / (g->tp ? g->tp : 1);
}

/* One prefill layer: its K and V join the cache, then its temporaries come
 * and go: attention, then the MLP (with a dequantized matrix under 4-bit). */
static void prefill_layer(vf__replay *r, const vf_hparams *hp, const vf__gen_shape *g, uint32_t il, uint32_t *k,
                          uint32_t *v)
{
    k[il] = vf__replay_alloc(r, layer_kv(hp, g, il, g->q, false));
    v[il] = vf__replay_alloc(r, layer_kv(hp, g, il, g->q, true));
    uint32_t t[4];
    for (int i = 0; i < 4; i++)
        t[i] = vf__replay_alloc(r, g->att[i]);
    for (int i = 4; i-- > 0;)
        vf__replay_free(r, t[i]);
    uint32_t dq = vf__replay_alloc(r, g->deq);
    for (int i = 0; i < 3; i++)
        t[i] = vf__replay_alloc(r, g->mlp[i]);
    for (int i = 3; i-- > 0;)
        vf__replay_free(r, t[i]);
    vf__replay_free(r, dq);
}

void vf__replay_generate(vf__replay *r, const vf_model *m, const vf__gen_shape *g)
{
    const vf_hparams *hp = &m->hp;
    uint32_t L = vf__hp_has_attention(hp) ? hp->n_layers : 0;
    uint32_t *k = calloc(L ? L : 1, sizeof *k), *v = calloc(L ? L : 1, sizeof *v);
    if (!k || !v) {
        r->broken = true;
        free(k);
        free(v);
        return;
    }
    vf__replay_weights(r, m, g->scheme, g->keep, g->share, 0);
    vf__replay_alloc(r, g->cublas);
    /* prefill */
    uint32_t mask = vf__replay_alloc(r, g->mask);
    uint32_t h0 = vf__replay_alloc(r, g->hidden), h1 = vf__replay_alloc(r, g->hidden);
    for (uint32_t il = 0; il < L && !r->broken; il++)
        prefill_layer(r, hp, g, il, k, v);
    uint32_t lg0 = vf__replay_alloc(r, g->logits[0]), lg1 = vf__replay_alloc(r, g->logits[1]);
    vf__replay_free(r, lg1);
    vf__replay_free(r, lg0);
    vf__replay_free(r, h1);
    vf__replay_free(r, h0);
    vf__replay_free(r, mask);
    /* decode: every step each layer's K and V are made one step longer */
    uint64_t steps = g->ctx > g->q ? g->ctx - g->q : 0;
    uint64_t most = L ? STEP_BUDGET / L : 0, stride = 1;
    if (most && steps > most)
        stride = (steps + most - 1) / most;
    for (uint64_t t = g->q; L && t < g->ctx && !r->broken; t += stride) {
        uint64_t len = t + stride < g->ctx ? t + stride : g->ctx;
        for (uint32_t il = 0; il < L; il++) {
            uint32_t nk = vf__replay_alloc(r, layer_kv(hp, g, il, len, false));
            vf__replay_free(r, k[il]);
            k[il] = nk;
            uint32_t nv = vf__replay_alloc(r, layer_kv(hp, g, il, len, true));
            vf__replay_free(r, v[il]);
            v[il] = nv;
        }
        uint32_t s0 = vf__replay_alloc(r, g->step_logits[0]), s1 = vf__replay_alloc(r, g->step_logits[1]);
        vf__replay_free(r, s1);
        vf__replay_free(r, s0);
    }
    free(k);
    free(v);
}
