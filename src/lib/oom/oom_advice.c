/* oom_advice.c — what to change, in words, from the figures of an OOM.
 *
 * The rules (docs/memory-model.md, "Reading an out-of-memory error"):
 *   - PyTorch: memory reserved by the caching allocator but unallocated is
 *     fragmentation; when it could have held the request (or is a quarter or
 *     more of what PyTorch holds) expandable segments let freed blocks serve
 *     it. What is short beyond free + unallocated is real demand, and the
 *     phase says where it comes from.
 *   - vLLM: the message's own estimate is the --max-model-len that fits; the
 *     gpu_memory_utilization that holds the requested length is the old one
 *     plus the missing KV bytes over the device's memory (vLLM sizes the KV
 *     cache from utilization × total minus what the profile run used).
 *   - llama.cpp: by phase, fewer GPU layers, a smaller context or KV type, a
 *     smaller micro-batch. */
#include "oom/oom.h"

#include <stdio.h>
#include <string.h>

static const char *gib(uint64_t b, char *buf, size_t n)
{
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.2f GiB", (double)b / 1073741824.0);
    else
        snprintf(buf, n, "%.2f MiB", (double)b / 1048576.0);
    return buf;
}

static void add(vf_oom_report *r, const char *fmt, ...) VF_PRINTF(2, 3);
static void add(vf_oom_report *r, const char *fmt, ...)
{
    if (r->n_advice >= VF_OOM_MAX_ADVICE)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->advice[r->n_advice++], VF_NOTE_LEN, fmt, ap);
    va_end(ap);
}

static bool has(const vf_oom_report *r, vf_oom_figure f) { return (r->stated | r->derived) & OOM_BIT(f); }
static uint64_t fig(const vf_oom_report *r, vf_oom_figure f) { return r->figure[f]; }

static void by_phase_pytorch(vf_oom_report *r)
{
    const char *p = r->phase;
    if (!strcmp(p, "loading"))
        add(r, "it failed while loading: the weights do not fit; a smaller dtype or quantization, tensor "
               "parallel over more GPUs, or device_map offload");
    else if (!strcmp(p, "profile_run"))
        add(r, "vLLM's profile run (a forward pass of --max-num-batched-tokens tokens) ran out: lower "
               "--max-num-batched-tokens or --max-num-seqs, or quantize the weights");
    else if (!strcmp(p, "backward"))
        add(r, "it failed in backward: saved activations and gradients; gradient checkpointing, a smaller "
               "micro-batch with gradient accumulation, or a shorter sequence");
    else if (!strcmp(p, "optimizer_step"))
        add(r, "it failed in the optimizer step: its states; 8-bit Adam, ZeRO/FSDP sharding or optimizer "
               "offload, or fewer trainable parameters (LoRA)");
    else if (!strcmp(p, "forward"))
        add(r, "it failed in forward: activations; a smaller batch or sequence length, torch.no_grad() for "
               "inference, an attention kernel that does not materialise the scores (SDPA, flash attention)");
    else if (!strcmp(p, "kv_allocation"))
        add(r, "it failed allocating the KV cache: a shorter --max-model-len or a smaller gpu_memory_utilization "
               "share for it");
}

static void pytorch(vf_oom_report *r)
{
    char b1[32], b2[32], b3[32];
    const char *conf = !strcmp(r->kind, "hip_oom") ? "PYTORCH_HIP_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF";
    uint64_t req = fig(r, VF_OOM_REQUESTED), fr = fig(r, VF_OOM_FREE), un = fig(r, VF_OOM_RESERVED_UNALLOCATED);
    bool frag = has(r, VF_OOM_RESERVED_UNALLOCATED) && un > 0 &&
                ((has(r, VF_OOM_REQUESTED) && un >= req) || r->fragmentation >= 0.25);
    if (frag)
        add(r, "%s reserved by PyTorch is unallocated (%.1f%% of what it holds): fragmentation; set "
               "%s=expandable_segments:True so freed blocks can serve the request",
            gib(un, b1, sizeof b1), 100.0 * r->fragmentation, conf);
    if (has(r, VF_OOM_REQUESTED) && has(r, VF_OOM_FREE)) {
        uint64_t have = fr + (has(r, VF_OOM_RESERVED_UNALLOCATED) ? un : 0);
        if (req > have)
            add(r, "%s is missing even if every free and unallocated byte were usable (asked %s, free %s): "
                   "the demand is real",
                gib(req - have, b1, sizeof b1), gib(req, b2, sizeof b2), gib(fr, b3, sizeof b3));
        else if (fr >= req && has(r, VF_OOM_ALLOWED))
            add(r, "free memory would hold the request, but set_per_process_memory_fraction allows only %s",
                gib(fig(r, VF_OOM_ALLOWED), b1, sizeof b1));
    }
    uint64_t held = fig(r, VF_OOM_ALLOCATED) + un;
    if (has(r, VF_OOM_PROCESSES) && fig(r, VF_OOM_PROCESSES) > held + (1ull << 30))
        add(r, "the processes on this GPU hold %s, %s more than PyTorch reserves here: other processes or memory "
               "outside PyTorch (CUDA context, NCCL, other libraries)",
            gib(fig(r, VF_OOM_PROCESSES), b1, sizeof b1), gib(fig(r, VF_OOM_PROCESSES) - held, b2, sizeof b2));
    by_phase_pytorch(r);
    if (!strcmp(r->engine, "deepspeed"))
        add(r, "DeepSpeed: a higher ZeRO stage (3 shards the parameters), offload_optimizer/offload_param to "
               "the CPU, or a smaller train_micro_batch_size_per_gpu");
    else if (!strcmp(r->engine, "accelerate"))
        add(r, "Accelerate: FSDP or DeepSpeed through 'accelerate config', gradient accumulation, mixed precision");
}

static void vllm(vf_oom_report *r, uint64_t device)
{
    char b1[32], b2[32], b3[32];
    uint64_t total = has(r, VF_OOM_TOTAL) ? fig(r, VF_OOM_TOTAL) : device;
    double util = r->utilization > 0 ? r->utilization : 0.9; /* vLLM's default gpu_memory_utilization */
    const char *assumed = r->utilization > 0 ? "" : " (vLLM's default 0.9 assumed)";
    if (!strcmp(r->kind, "kv_cache_too_small")) {
        if (has(r, VF_OOM_MAX_CONTEXT))
            add(r, "--max-model-len %llu fits (the message's own figure for the longest context)",
                (unsigned long long)fig(r, VF_OOM_MAX_CONTEXT));
        if (has(r, VF_OOM_NEEDED) && has(r, VF_OOM_AVAILABLE) && fig(r, VF_OOM_NEEDED) > fig(r, VF_OOM_AVAILABLE)) {
            uint64_t more = fig(r, VF_OOM_NEEDED) - fig(r, VF_OOM_AVAILABLE);
            if (total) {
                double u2 = util + (double)more / (double)total;
                if (u2 <= 0.99)
                    add(r, "--gpu-memory-utilization %.2f holds %llu tokens: %s more KV cache of the device's %s, "
                           "from %.2f%s",
                        u2 + 0.005, (unsigned long long)fig(r, VF_OOM_MAX_SEQ_LEN), gib(more, b1, sizeof b1),
                        gib(total, b2, sizeof b2), util, assumed);
                else
                    add(r, "no gpu_memory_utilization holds %llu tokens on %s (it would need %.2f): a KV cache in "
                           "fp8 (--kv-cache-dtype fp8), quantized weights, or tensor parallel",
                        (unsigned long long)fig(r, VF_OOM_MAX_SEQ_LEN), gib(total, b2, sizeof b2), u2);
            } else {
                add(r, "raising gpu_memory_utilization by %s over the device's memory holds the requested length; "
                       "give --gpu (or --model with --gpu) for the figure",
                    gib(more, b1, sizeof b1));
            }
        } else if (has(r, VF_OOM_MAX_CONTEXT) && has(r, VF_OOM_MAX_SEQ_LEN) && fig(r, VF_OOM_MAX_CONTEXT)) {
            add(r, "the KV cache must grow %.2fx to hold %llu tokens: raise gpu_memory_utilization, a KV cache in fp8, "
                   "or tensor parallel",
                (double)fig(r, VF_OOM_MAX_SEQ_LEN) / (double)fig(r, VF_OOM_MAX_CONTEXT),
                (unsigned long long)fig(r, VF_OOM_MAX_SEQ_LEN));
        }
    } else if (!strcmp(r->kind, "no_cache_memory")) {
        add(r, "the weights and the profile run's activations take the whole gpu_memory_utilization share: raise "
               "--gpu-memory-utilization, lower --max-num-batched-tokens or --max-num-seqs, quantize the weights, "
               "or tensor parallel");
    } else if (!strcmp(r->kind, "startup_free_memory") && total) {
        uint64_t fr = fig(r, VF_OOM_FREE);
        add(r, "only %s of %s is free at start (%s held by other processes): --gpu-memory-utilization %.2f at most, "
               "or free the GPU",
            gib(fr, b1, sizeof b1), gib(total, b2, sizeof b2), gib(total > fr ? total - fr : 0, b3, sizeof b3),
            (double)fr / (double)total - 0.005);
    }
}

static void llamacpp(vf_oom_report *r)
{
    const char *p = r->phase;
    if (r->buffer[0] && (!strncmp(r->buffer, "CPU", 3) || strstr(r->buffer, "_Host")))
        add(r, "the %s buffer is host memory, not the GPU's: more RAM, mmap (the default), or a smaller model",
            r->buffer);
    else if (!strcmp(p, "loading"))
        add(r, "the weights do not fit: fewer layers on the GPU (a smaller -ngl), or a smaller quantization");
    else if (!strcmp(p, "kv_allocation"))
        add(r, "the KV cache does not fit: a smaller context (-c), a quantized KV cache (--cache-type-k q8_0 "
               "--cache-type-v q8_0; V needs flash attention), or fewer layers on the GPU (-ngl)");
    else if (!strcmp(p, "compute_buffers"))
        add(r, "the compute buffers do not fit: a smaller micro-batch (-ub), a smaller context (-c), or fewer "
               "layers on the GPU (-ngl); pipeline-parallel copies on several GPUs enlarge them");
    else
        add(r, "fewer layers on the GPU (-ngl), a smaller context (-c) or KV type (--cache-type-k q8_0)");
}

void vf__oom_advise(vf_oom_report *r, uint64_t device)
{
    if (!strcmp(r->engine, "vllm") && strcmp(r->kind, "cuda_oom") && strcmp(r->kind, "hip_oom") &&
        strcmp(r->kind, "cuda_error"))
        vllm(r, device);
    else if (!strcmp(r->engine, "llamacpp"))
        llamacpp(r);
    else if (!strcmp(r->kind, "batch_size_zero"))
        add(r, "find_executable_batch_size halved the batch to 0: even batch size 1 does not fit; gradient "
               "checkpointing, a shorter sequence, LoRA, an 8-bit optimizer, or more GPUs (ZeRO, FSDP)");
    else
        pytorch(r);
    if (!strcmp(r->kind, "cuda_error"))
        add(r, "the message states no figures: run the command under 'vramfit watch' to see its memory over time");
}
