/* estimate.c — the memory model's entry point: defaults and dispatch. */
#include "infer.h"
#include "graph_mem.h"

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

const char *vf_runtime_name(vf_runtime r)
{
    switch (r) {
    case VF_RUNTIME_TRANSFORMERS:
        return "transformers";
    case VF_RUNTIME_VLLM:
        return "vllm";
    case VF_RUNTIME_LLAMACPP:
        return "llamacpp";
    case VF_RUNTIME_LITGPT:
        return "litgpt";
    case VF_RUNTIME_GENERIC:
        break;
    }
    return "generic";
}

vf_status vf_estimate_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
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
    if (m->graph) /* a network by its graph: its own memory model */
        st = vf__graph_estimate(m, o, out, err);
    else
        st = o->mode == VF_MODE_TRAINING ? vf__train_run(m, o, out, err) : vf__infer_run(m, o, out, err);
    /* a runtime without an allocator model holds what its components sum to */
    if (st == VF_OK && !out->device_bytes)
        vf__device_set(out, out->per_gpu_bytes, out->per_gpu_bytes, 0, 0);
    return st;
}
