/* fit_needs.c — what a suggested change needs beyond the launch line. A
 * plan may only launch changes the engine applies to this checkpoint: vLLM
 * quantizes a 16-bit checkpoint to fp8 as it loads (--quantization fp8) on
 * devices with fp8 tensor cores, transformers quantizes with bitsandbytes
 * as it loads (quantization_config), every engine takes a KV-cache dtype,
 * lengths and counts. AWQ and GPTQ weights are other checkpoints (the
 * quantizer's calibrated files), another GGUF type is another file
 * (llama-quantize), and LoRA / QLoRA or a different attention
 * implementation are changes to the training script. */
#include "answer/fit_internal.h"

#include <string.h>
#include <strings.h>

static uint32_t weights_needs(const vf_estimate_opts *o, const vf_gpu *gpu)
{
    const char *w = o->weights;
    if (o->runtime == VF_RUNTIME_LLAMACPP)
        return VF_NEEDS_CHECKPOINT; /* llama.cpp loads the file's own types */
    vf_quant_scheme q;
    if (vf_quant_scheme_parse(w, &q) != VF_OK || !q.method)
        return VF_NEEDS_CHECKPOINT;
    if (!strcmp(q.method, "float"))
        return 0; /* a dtype: the engines cast at load (--dtype, torch_dtype) */
    if (!strcmp(q.method, "fp8"))
        return gpu && gpu->tflops_fp8 > 0 ? 0 : VF_NEEDS_DEVICE;
    if (!strcmp(q.method, "bitsandbytes") && o->runtime != VF_RUNTIME_VLLM)
        return 0; /* BitsAndBytesConfig at from_pretrained */
    return VF_NEEDS_CHECKPOINT; /* gptq, awq, gguf types */
}

uint32_t vf__change_needs(const vf_estimate_opts *base, const vf_estimate_opts *o, const vf_gpu *gpu)
{
    uint32_t n = 0;
    if (strcasecmp(base->weights, o->weights) != 0 && o->weights[0])
        n |= weights_needs(o, gpu);
    if (o->mode == VF_MODE_TRAINING) {
        if ((o->train.lora_rank && !base->train.lora_rank) || (o->train.qlora[0] && !base->train.qlora[0]))
            n |= VF_NEEDS_CODE;
        if (o->infer.attn != base->infer.attn)
            n |= VF_NEEDS_CODE; /* the script loads the model (attn_implementation) */
    }
    return n;
}

const char *vf_needs_words(uint32_t needs)
{
    if (needs & VF_NEEDS_CHECKPOINT)
        return "another checkpoint (quantized files made by AWQ/GPTQ or llama-quantize), not a launch flag";
    if (needs & VF_NEEDS_CODE)
        return "a change to the training script (adapters, attention implementation), not a launch flag";
    if (needs & VF_NEEDS_DEVICE)
        return "a device with fp8 tensor cores (Ada, Hopper or newer)";
    return "";
}
