/* infer.c — the inference memory model: checks the knobs and dispatches to
 * the runtime profile whose allocations it reproduces. */
#include "memory/infer.h"

#include <string.h>

/* What every runtime's answer says about the model itself: recurrent state
 * in kv_cache, and a guessed tensor list. */
static void note_model(const vf_model *m, vf_estimate *e)
{
    const vf_hparams *hp = vf_model_hparams(m);
    uint32_t n = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++)
        n += vf__layer_recurrent(hp, il);
    if (n)
        vf__assume(e, "recurrent state: %u layers x %llu B per sequence (conv + SSM / DeltaNet state), flat in "
                      "context, counted in kv_cache",
                   n, (unsigned long long)hp->recurrent_state_bytes);
    if (vf_model_approximate(m))
        vf__assume(e, "APPROXIMATE: %s", vf_model_approximate(m));
}

vf_status vf__infer_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    const vf_infer_opts *io = &o->infer;
    if (io->gpu_util < 0 || io->gpu_util > 1)
        return vf__err(err, VF_EINVAL, "--gpu-util", "must be in (0, 1]");
    if (io->n_split > VF_MAX_SPLIT)
        return vf__err(err, VF_EINVAL, "--tensor-split", "at most %d devices", VF_MAX_SPLIT);
    const uint64_t cap = (uint64_t)1 << 32; /* keeps every product of knobs inside 64 bits */
    if (io->context > cap || io->batch > cap || io->ubatch > cap || io->lc_batch > cap || io->max_model_len > cap ||
        io->max_num_seqs > cap || io->max_num_batched_tokens > cap || io->prompt_tokens > cap)
        return vf__err(err, VF_EINVAL, "", "a token or sequence count above 2^32");
    if (o->tp > 4096 || o->pp > 4096)
        return vf__err(err, VF_EINVAL, "--tp", "too many devices");
    vf_status hs = vf__hparams_check(vf_model_hparams(m), vf_model_source(m), err);
    if (hs != VF_OK)
        return hs;
    out->mode = VF_MODE_INFERENCE;
    out->runtime = o->runtime;
    out->starts = true;
    const vf__runtime *rt = vf__runtime_of(o->runtime);
    vf_status st = rt->infer(m, o, out, err);
    if (st == VF_OK && !rt->sizes_extras) {
        vf__extras x;
        st = vf__extras_get(m, o, rt->extras_on_first_gpu || !o->tp ? 1 : o->tp, &x, out, err);
        if (st == VF_OK)
            vf__extras_apply(out, &x, rt->extras_on_first_gpu);
    }
    if (st == VF_OK)
        note_model(m, out);
    return st;
}
