/* hparams_check.c — the hyper-parameters beyond which no model exists. They
 * come from files: past these caps a memory model's per-layer loops and
 * products would not stay bounded, so every memory model refuses them first
 * (one table, the one message). */
#include "model/model.h"

#include <stddef.h>
#include <string.h>

/* a field of vf_hparams, 32 or 64 bits wide, and its cap */
#define CAP(field, cap) {#field, offsetof(vf_hparams, field), sizeof(((vf_hparams *)0)->field), (cap)}

static const struct {
    const char *name;
    size_t offset, size;
    uint64_t cap;
} caps[] = {
    CAP(n_layers, 1u << 16),           CAP(hidden_size, (uint64_t)1 << 24), CAP(vocab_size, (uint64_t)1 << 30),
    CAP(n_heads, 1u << 20),            CAP(n_kv_heads, 1u << 20),           CAP(head_dim, 1u << 20),
    CAP(v_head_dim, 1u << 20),         CAP(intermediate_size, (uint64_t)1 << 30),
    CAP(moe_intermediate_size, (uint64_t)1 << 30), CAP(kv_lora_rank, 1u << 20), CAP(qk_rope_head_dim, 1u << 20),
    CAP(qk_nope_head_dim, 1u << 20),   CAP(n_experts, 1u << 20),
};

vf_status vf__hparams_check(const vf_hparams *hp, const char *source, vf_error *err)
{
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        const unsigned char *p = (const unsigned char *)hp + caps[i].offset;
        uint64_t v;
        if (caps[i].size == sizeof(uint32_t)) {
            uint32_t u;
            memcpy(&u, p, sizeof u);
            v = u;
        } else {
            memcpy(&v, p, sizeof v);
        }
        if (v > caps[i].cap)
            return vf__err(err, VF_ERANGE, source, "implausible hyper-parameters (layers, sizes or heads)");
        (void)caps[i].name; /* named for a reader of the table and a debugger */
    }
    return VF_OK;
}
