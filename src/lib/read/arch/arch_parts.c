/* arch_parts.c — pieces several families' tensor lists share: an attention
 * block's projections, a gated MLP, routed experts, a Mamba-2 mixer, and
 * class defaults for sub-config keys. Names and shapes as transformers'
 * modeling_<family>.py modules store them (docs/architectures.md). */
#include "read/arch/arch.h"

#include <stdio.h>

void vf__ab_attn(vf__ab *b, const char *p, const vf__attn *a)
{
    unsigned qb = a->qkv_bias ? VF_LIN_BIAS : 0, ob = a->o_bias ? VF_LIN_BIAS : 0;
    uint64_t q = a->heads * a->hd;
    /* gated attention: q_proj also yields the sigmoid output gate */
    vf__ab_linear(b, qb, a->q_gate ? 2 * q : q, a->h, "%sq_proj", p);
    vf__ab_linear(b, qb, a->kv * a->hd, a->h, "%sk_proj", p);
    vf__ab_linear(b, qb, a->kv * a->hd, a->h, "%sv_proj", p);
    vf__ab_linear(b, ob, a->h, q, "%s%s", p, a->o ? a->o : "o_proj");
    if (a->qk_norm == 1) {
        vf__ab_param(b, a->hd, 0, "%s%s.weight", p, a->qn ? a->qn : "q_norm");
        vf__ab_param(b, a->hd, 0, "%s%s.weight", p, a->kn ? a->kn : "k_norm");
    } else if (a->qk_norm == 2) {
        vf__ab_param(b, q, 0, "%s%s.weight", p, a->qn ? a->qn : "q_norm");
        vf__ab_param(b, a->kv * a->hd, 0, "%s%s.weight", p, a->kn ? a->kn : "k_norm");
    }
}

void vf__ab_mlp(vf__ab *b, const char *p, uint64_t h, uint64_t ff, unsigned flags, const char *g, const char *u,
                const char *d)
{
    if (g)
        vf__ab_linear(b, flags, ff, h, "%s%s", p, g);
    vf__ab_linear(b, flags, ff, h, "%s%s", p, u);
    vf__ab_linear(b, flags, h, ff, "%s%s", p, d);
}

void vf__ab_experts(vf__ab *b, const char *p, uint64_t E, uint64_t h, uint64_t ff, const char *g, const char *u,
                    const char *d)
{
    for (uint64_t e = 0; e < E && b->st == VF_OK; e++) {
        char ep[224];
        vf__ab_name(ep, sizeof ep, "%sexperts.%llu.", p, (unsigned long long)e);
        vf__ab_mlp(b, ep, h, ff, 0, g, u, d);
    }
}

void vf__ab_hybrid_norms(vf__ab *b, uint32_t i, uint64_t h)
{
    char p[64];
    snprintf(p, sizeof p, "model.layers.%u.", i);
    vf__ab_param(b, h, 0, "%sinput_layernorm.weight", p);
    vf__ab_param(b, h, 0, "%spre_ff_layernorm.weight", p);
}

void vf__ab_mamba2(vf__ab *b, const char *p, const vf__ssm2 *s)
{
    uint64_t inner = s->heads * s->head_dim;
    uint64_t conv_dim = inner + 2 * s->groups * s->state;
    /* in_proj yields z (gate), x B C (through the conv) and dt per head */
    vf__ab_linear(b, s->proj_bias ? VF_LIN_BIAS : 0, inner + conv_dim + s->heads, s->h, "%sin_proj", p);
    char name[288];
    snprintf(name, sizeof name, "%sconv1d.weight", p);
    vf__ab_raw(b, b->dt, 0, UINT64_MAX, 3, (uint64_t[]){conv_dim, 1, s->conv}, name);
    if (s->conv_bias)
        vf__ab_param(b, conv_dim, 0, "%sconv1d.bias", p);
    vf__ab_param(b, s->heads, 0, "%sdt_bias", p);
    vf__ab_param(b, s->heads, 0, "%sA_log", p);
    vf__ab_param(b, s->heads, 0, "%sD", p);
    if (s->norm)
        vf__ab_param(b, inner, 0, "%snorm.weight", p);
    bool ob = s->own_out_bias ? s->out_bias : s->proj_bias;
    vf__ab_linear(b, ob ? VF_LIN_BIAS : 0, s->h, inner, "%sout_proj", p);
}

uint64_t vf__ab_cfg(vf__ab *b, const json_t *o, const char *key, uint64_t dflt, uint64_t cap)
{
    uint64_t v = dflt;
    int r = vf__cfg_u64(o, &v, key, NULL);
    if (r < 0)
        vf__ab_fail(b, VF_EFORMAT, "%s must be a non-negative integer", key);
    else if (v > cap)
        vf__ab_fail(b, VF_ERANGE, "%s = %llu is out of range (at most %llu)", key, (unsigned long long)v,
                    (unsigned long long)cap);
    return b->st == VF_OK ? v : 0;
}
