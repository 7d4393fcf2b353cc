/* generic.c — the plain sum with stated assumptions: weights + KV
 * cache for batch x context + one step's logits, no engine specifics. */
#include "memory/infer.h"

vf_status vf__infer_generic(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    vf__wprice w;
    vf_status st = vf__weights_price(m, o->weights, VF_DTYPE_UNKNOWN, &w, e, err);
    if (st != VF_OK)
        return st;
    uint32_t tp = o->tp ? o->tp : 1;
    uint64_t batch = io->batch ? io->batch : 1;
    uint64_t ctx = io->context ? io->context : vf__hp_context(hp);
    vf_dtype kt, vt;
    if (!vf__kv_dtype_parse(io->kv_dtype, w.act_dtype, &kt, &vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");

    uint64_t kv = vf__kv_cache_bytes(hp, true, kt, vt, ctx, batch);
    /* logits of the last position of each sequence, fp32 */
    uint64_t act = vf__smul(vf__smul(batch, hp->vocab_size), 4);
    uint64_t wpg = vf__weights_per_gpu(&w, tp);
    e->gpus = tp;
    e->weights = wpg;
    e->kv_cache = kv / tp;
    e->activations = act;
    e->overhead = 0;
    e->per_gpu_bytes = vf__sadd(vf__sadd(e->weights, e->kv_cache), e->activations);
    e->total_bytes = vf__smul(e->per_gpu_bytes, tp);
    e->context = ctx;
    e->batch = batch;
    e->kv_bytes_per_token = vf__kv_bytes_per_token(hp, true, kt, vt);
    e->weight_bits = w.bits;
    vf__assume(e, "runtime = generic: weights + KV cache + last-position logits, no engine overhead");
    vf__assume(e, "kv cache = %s, %llu tokens x %llu sequences", vf_dtype_get(kt)->name, (unsigned long long)ctx,
               (unsigned long long)batch);
    if (!vf__hp_has_attention(hp))
        vf__assume(e, "architecture = unknown (no config): KV cache and activations not counted");
    if (hp->sliding_window)
        vf__assume(e, "sliding-window layers capped at %u tokens", hp->sliding_window);
    vf__explain(e, "kv_cache = batch %llu x sum over layers of tokens x (K + V) bytes = %llu B",
                (unsigned long long)batch, (unsigned long long)kv);
    vf__explain(e, "activations = batch %llu x vocab %llu x 4 = %llu B", (unsigned long long)batch,
                (unsigned long long)hp->vocab_size, (unsigned long long)act);
    return VF_OK;
}
