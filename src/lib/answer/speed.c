/* speed.c — upper bounds on speed that follow from memory bandwidth and peak
 * compute ("memory is not compute"). Formulas: docs/memory-model.md, Speed bounds. */
#include "memory/memory.h"

#include <string.h>

/* Between nodes, per GPU: one 400 Gb/s NIC per GPU (50 GB/s), as DGX/HGX
 * H100 and H200 nodes are built; an assumption, said with the figure (the
 * catalog's interconnect is the link inside a node). */
#define VF_INTERNODE_GBS 50.0

static double peak_for(const vf_gpu *g, double weight_bits, const char **dtype)
{
    /* 8-bit weights run on fp8 tensor cores where the GPU has them */
    if (weight_bits > 0 && weight_bits <= 8.5 && g->tflops_fp8 > 0) {
        *dtype = "fp8";
        return g->tflops_fp8;
    }
    if (g->tflops_bf16 > 0) {
        *dtype = "bf16";
        return g->tflops_bf16;
    }
    *dtype = "fp16";
    return g->tflops_fp16;
}

void vf_speed_bounds(const vf_model *m, const vf_estimate_opts *o, const vf_estimate *e, const vf_gpu *gpu,
                     uint32_t n, vf_speed *out)
{
    memset(out, 0, sizeof *out);
    if (e)
        out->batch = e->batch ? e->batch : 1;
    if (!m || !o || !e || !gpu || gpu->bandwidth_gbs <= 0 || m->graph)
        return; /* tokens per second mean nothing for a network by its graph */
    if (n < 1)
        n = 1;
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    double active = t.active_params && t.active_params < t.params ? (double)t.active_params : (double)t.params;
    double bits = e->weight_bits > 0 ? e->weight_bits : (t.params ? 8.0 * (double)t.bytes / (double)t.params : 16);
    uint32_t tp = o->tp ? o->tp : 1;
    if (o->mode == VF_MODE_TRAINING)
        tp = 1;
    out->known = true;
    out->peak_tflops = peak_for(gpu, bits, &out->peak_dtype);

    /* decode: every generated token reads the active weights and the sequence's
     * KV cache once; tensor parallel splits both over tp devices read at once */
    double w_active = active * bits / 8.0;
    uint64_t ctx = e->context ? e->context : 1, batch = e->batch ? e->batch : 1;
    /* an engine whose KV pool holds fewer full-length sequences than it may
     * schedule (vLLM) runs at most that many at once */
    if (e->max_concurrency >= 1 && e->max_concurrency < (double)batch)
        batch = (uint64_t)e->max_concurrency;
    uint64_t ctx_seq = ctx;
    if (o->runtime == VF_RUNTIME_LLAMACPP && o->mode == VF_MODE_INFERENCE && batch > 1)
        ctx_seq = ctx / batch; /* llama.cpp's context is shared by its slots */
    double kv_seq = (double)e->kv_bytes_per_token * (double)(ctx_seq ? ctx_seq : 1);
    double bw = gpu->bandwidth_gbs * 1e9 * (double)tp;
    double per_step_one = (w_active + kv_seq);
    out->bytes_per_token = (uint64_t)(per_step_one / tp);
    out->batch = batch;
    if (per_step_one > 0) {
        out->decode_tps_per_seq = bw / per_step_one;
        out->decode_tps_batch = (double)batch * bw / (w_active + (double)batch * kv_seq);
    }
    /* past one GPU group: stages run one after another for one sequence, and
     * side by side for several in flight */
    uint32_t pp = o->pp ? o->pp : 1, per_node = gpu->max_per_node ? gpu->max_per_node : 8;
    out->pp = pp;
    out->nodes = n / per_node + (n % per_node != 0);
    out->internode_gbs = out->nodes > 1 ? VF_INTERNODE_GBS : 0;
    if (pp > 1 && o->mode == VF_MODE_INFERENCE && per_step_one > 0)
        out->decode_tps_batch = (double)batch * bw * pp / (w_active + (double)batch * kv_seq);
    /* one sequence's prefill runs on one stage group at a time (inference);
     * training's ranks each run their share */
    double group = o->mode == VF_MODE_TRAINING ? (double)n : (double)(o->tp ? o->tp : 1);
    if (o->mode == VF_MODE_INFERENCE && !o->tp && !o->pp)
        group = (double)n;
    double flops = out->peak_tflops * 1e12 * group;
    if (flops <= 0)
        return;
    /* prefill of one sequence's context: 2 FLOPs per active parameter per token */
    out->prefill_seconds = 2.0 * active * (double)ctx / flops;
    if (o->mode == VF_MODE_INFERENCE) {
        /* the hidden states of every prompt token cross each node boundary */
        if (out->nodes > 1 && m->hp.hidden_size)
            out->internode_seconds = (double)ctx * (double)m->hp.hidden_size * 2.0 * (double)(out->nodes - 1) /
                                     (VF_INTERNODE_GBS * 1e9);
        return;
    }
    /* forward 2, backward 4 (activation and weight gradients); LoRA skips
     * weight gradients of frozen weights (4); full recompute repeats the
     * forward (+2) */
    double k = o->train.lora_rank ? 4.0 : 6.0;
    if (o->train.recompute == VF_RECOMPUTE_FULL)
        k += 2.0;
    uint64_t mb = o->train.micro_batch ? o->train.micro_batch : 1;
    uint64_t ga = o->train.grad_accum ? o->train.grad_accum : 1;
    uint64_t seq = o->train.seq_len ? o->train.seq_len : ctx;
    double tokens = (double)mb * (double)seq * (double)ga; /* per data-parallel rank per optimizer step */
    double mp = (double)(o->tp ? o->tp : 1) * pp;
    out->train_step_seconds = k * (double)t.params / mp * tokens / (out->peak_tflops * 1e12);
    if (pp > 1) {
        /* 1F1B / GPipe: (p - 1) / (m + p - 1) of the step idle, m = micro-batches
         * per step (Narayanan et al. 2021, arXiv:2104.04473, section 2.2) */
        out->pp_bubble = (double)(pp - 1) / (double)(ga + pp - 1);
        out->train_step_seconds /= 1.0 - out->pp_bubble;
    }
    if (out->nodes > 1) {
        /* data-parallel collectives, per GPU: a ring all-reduce of the 16-bit
         * gradients moves 2 (N-1)/N of them; ZeRO-3 all-gathers the parameters
         * twice (forward and backward) and reduce-scatters the gradients: 3x */
        double N = (double)n, trainable = (double)(e->trainable_params ? e->trainable_params : t.params);
        double vol = o->train.zero >= 3 || o->train.fsdp == 1 ? 3.0 * 2.0 * (double)t.params / mp * (N - 1) / N
                                                              : 2.0 * 2.0 * trainable / mp * (N - 1) / N;
        out->internode_seconds = vol / (VF_INTERNODE_GBS * 1e9);
    }
}
