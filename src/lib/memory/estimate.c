/* estimate.c — the memory model's entry point: defaults and dispatch, on a
 * model (and its serving extras) already open. */
#include "memory/infer.h"
#include "device/device.h"
#include "memory/torch/alloc_torch.h"
#include "memory/graph/graph_mem.h"

#include <stdio.h>
#include <string.h>

void vf_estimate_opts_init(vf_estimate_opts *o)
{
    memset(o, 0, sizeof *o);
    o->mode = VF_MODE_INFERENCE;
    o->runtime = VF_RUNTIME_GENERIC;
    o->infer.flash_attn = -1;
    o->infer.n_gpu_layers = -1;
    o->train.optimizer = VF_OPT_ADAMW;
    o->train.precision = VF_PREC_BF16_MIXED;
}

/*
 * The margin a fit verdict keeps where the estimator set none: vLLM keeps its
 * own (the 1 - gpu_memory_utilization it never budgets); llama.cpp's is set
 * with its buffers (llamacpp.c); a PyTorch process not replayed through
 * the allocator keeps room for one new segment as large as its transient part
 * (the activations), which bounds its largest request from above.
 */
static void margin_default(const vf_estimate_opts *o, vf_estimate *e)
{
    if (o->margin_set) {
        e->margin_bytes = o->margin;
        vf__assume(e, "margin = %.0f MiB free kept by fit: as given (--margin)", (double)o->margin / (1 << 20));
        return;
    }
    bool torch = o->mode == VF_MODE_TRAINING || vf__runtime_of(o->runtime)->allocator_margin;
    if (!torch && o->runtime == VF_RUNTIME_VLLM && o->gpu_bytes) {
        double u = o->infer.gpu_util > 0 ? o->infer.gpu_util : 0.9;
        vf__assume(e, "margin = none added by fit: vLLM itself leaves %.2f GiB (1 - gpu_memory_utilization) of "
                      "the device unbudgeted", (1 - u) * (double)o->gpu_bytes / (1 << 30));
    }
    if (e->margin_bytes || e->margin_named || !torch)
        return;
    e->margin_bytes = vf__talloc_segment_bytes(e->activations);
    if (e->margin_bytes)
        vf__assume(e, "margin = %.0f MiB free kept by fit: a new allocator segment as large as the activations "
                      "(not replayed: an upper bound on the step's largest request)",
                   (double)e->margin_bytes / (1 << 20));
}

/* A device whose memory the CPU shares: the rule the runtime sizes itself by
 * and the OS/CPU share assumed, from its catalog row (data/gpus.json). */
static void unified_rule(const vf_estimate_opts *o, vf_estimate *e)
{
    const vf_gpu *g = vf__gpu_row(o->infer.gpu_name);
    if (!vf__gpu_unified(g))
        return;
    const char *rule = o->runtime == VF_RUNTIME_VLLM       ? g->unified_vllm
                       : o->runtime == VF_RUNTIME_LLAMACPP ? g->unified_llamacpp
                                                           : "";
    if (rule && rule[0])
        vf__assume(e, "gpu_memory = %s, shared with the CPU: %s", g->name, rule);
    vf__assume(e, "gpu_os_share = %s, assumed: %s", g->name, g->unified_assumed);
}

/* The memory model on models already open: the draft and projector as
 * o->draft_model / o->mmproj_model (answer/estimate_run.c opens them). */
vf_status vf__estimate_core(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    if (!m || !o || !out)
        return vf__err(err, VF_EINVAL, "", "estimate needs a model, options and a result");
    memset(out, 0, sizeof *out);
    out->mode = o->mode;
    out->runtime = o->runtime;
    out->starts = true;
    if (memchr(o->alloc_conf, '\0', sizeof o->alloc_conf) == NULL ||
        memchr(o->cuda_version, '\0', sizeof o->cuda_version) == NULL)
        return vf__err(err, VF_EINVAL, "", "allocator settings or CUDA version not terminated");
    vf_status st = vf__cuda_version_check(o->cuda_version, err);
    if (st != VF_OK)
        return st;
    /* a GGUF repository answered by its base model: its weights at the
     * type the name gives unless --weights says otherwise */
    vf_estimate_opts as_named;
    bool named = m->priced_as[0] && !o->weights[0] && o->mode == VF_MODE_INFERENCE;
    if (named) {
        as_named = *o;
        memcpy(as_named.weights, m->priced_as, sizeof m->priced_as);
        o = &as_named;
    }
    if (m->graph) /* a network by its graph: its own memory model */
        st = vf__graph_estimate(m, o, out, err);
    else
        st = o->mode == VF_MODE_TRAINING ? vf__train_run(m, o, out, err) : vf__infer_run(m, o, out, err);
    /* a runtime without an allocator model holds what its components sum to */
    if (st == VF_OK && !out->device_bytes)
        vf__device_set(out, out->per_gpu_bytes, out->per_gpu_bytes, 0, 0);
    if (st == VF_OK) {
        margin_default(o, out);
        unified_rule(o, out);
    }
    if (st == VF_OK && named)
        vf__assume(out, "priced_as = %s: the GGUF type the name gives (a GGUF repository's, an Ollama tag's), "
                        "answered by its base model: each tensor's type by llama-quantize's rules for %s "
                        "(src/llama-quant.cpp)%s, not read from the file",
                   m->priced_named, m->priced_as, m->priced_own_recipe ? ", the repository's own mix priced by that rule" : "");
    return st;
}
