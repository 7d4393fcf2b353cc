/* train.c — the training memory model: knobs resolved, then parameters and
 * optimizer states (train_states.c), saved activations (train_act.c), the
 * parallel layout (train_dist.c) and the step's peak (train_peak.c). */
#include "memory/train/train_internal.h"
#include "memory/torch/replay_torch.h" /* the CUDA process's fixed costs and the allocator, shared with inference */

#include <stdio.h>
#include <string.h>


static const char *opt_name(vf_optimizer o)
{
    static const char *const n[] = {"adamw", "adam", "adamw-8bit", "paged-adamw-8bit", "sgd",
                                    "sgd-momentum", "adafactor", "lion", "adagrad", "paged-adamw"};
    return (unsigned)o < sizeof n / sizeof n[0] ? n[o] : "?";
}

static const char *prec_name(vf_precision p)
{
    static const char *const n[] = {"fp32", "fp16-mixed", "bf16-mixed", "bf16"};
    return (unsigned)p < sizeof n / sizeof n[0] ? n[p] : "?";
}

static uint64_t model_context(const vf_model *m)
{
    if (m->hp.context_length)
        return m->hp.context_length;
    const char *keys[] = {"max_position_embeddings", "n_positions", "n_ctx"};
    for (size_t i = 0; m->config && i < 3; i++) {
        uint64_t v;
        json_t *j = json_object_get(m->config, keys[i]);
        if (j && vf__json_u64(j, &v) && v)
            return v;
    }
    return 0;
}

/* bitsandbytes before 0.43.2 kept each 4-bit matmul's input for backward
 * (MatMul4Bit.forward: ctx.tensors = (A, B)) although only the frozen weight
 * was needed; PR #1270 ("fix QLoRA mem bug: delete useless buffered
 * activation", 0.43.2) saves (None, B). 1: keeps, 0: not, -1: unreadable. */
static int bnb_keeps_input(const char *v)
{
    unsigned maj = 0, min = 0, pat = 0;
    if (!v[0])
        return 0;
    int n = sscanf(v, "%u.%u.%u", &maj, &min, &pat);
    if (n < 2 || maj > 1000 || min > 1000 || pat > 1000)
        return -1;
    return maj == 0 && (min < 43 || (min == 43 && pat < 2));
}

/* 1 when bitsandbytes `v` is older than 0.43.0, 0 when newer or unset: its
 * Params4bit has no quant_storage (added in 0.43.0, "FSDP + QLoRA"), so
 * ZeRO-3 and FSDP FULL_SHARD cannot flatten the 4-bit weights with the
 * rest (PEFT's DeepSpeed guide: ZeRO-3 and bitsandbytes "not compatible"
 * before it; it now names bitsandbytes >= 0.43.3). Read after
 * bnb_keeps_input accepted v. */
static int bnb_lacks_quant_storage(const char *v)
{
    unsigned maj = 0, min = 0;
    return v[0] && sscanf(v, "%u.%u", &maj, &min) == 2 && maj == 0 && min < 43;
}

/* 1 when PyTorch `v` is older than 1.11: its softmax and log_softmax
 * backward formulas named `self` (tools/autograd/derivatives.yaml:
 * `_softmax_backward_data(grad, result, dim, self)`), so autograd kept the
 * input beside the output (pytorch issue #64000; PR #65242 saves only its
 * dtype, first released in 1.11); 0 when newer or unset; -1 when malformed. */
static int softmax_keeps_input(const char *v)
{
    unsigned maj = 0, min = 0;
    if (!v[0])
        return 0;
    if (sscanf(v, "%u.%u", &maj, &min) != 2 || maj > 1000 || min > 1000)
        return -1;
    return maj < 1 || (maj == 1 && min < 11);
}

static vf_status resolve(const vf_model *m, const vf_estimate_opts *o, vf__tcfg *c, vf_error *err)
{
    const vf_train_opts *t = &o->train;
    memset(c, 0, sizeof *c);
    /* --batch and --context are shared with inference */
    c->b = t->micro_batch ? t->micro_batch : o->infer.batch ? o->infer.batch : 1;
    uint64_t ctx = model_context(m);
    c->s = t->seq_len ? t->seq_len : o->infer.context ? o->infer.context : (ctx && ctx < 2048 ? ctx : 2048);
    if (c->b > (1ull << 24) || c->s > (1ull << 30) || c->b * c->s > (1ull << 36))
        return vf__err(err, VF_EINVAL, "", "batch or sequence length out of range");
    c->T = c->b * c->s;
    c->accum = t->grad_accum ? t->grad_accum : 1;
    c->tp = o->tp ? o->tp : 1;
    c->pp = o->pp ? o->pp : 1;
    c->ep = o->ep ? o->ep : 1;
    uint64_t mp = (uint64_t)c->tp * c->pp;
    uint64_t gpus = o->gpus ? o->gpus : mp;
    if (gpus % mp)
        return vf__err(err, VF_EINVAL, "", "gpus (%llu) must be a multiple of tp x pp (%llu)",
                       (unsigned long long)gpus, (unsigned long long)mp);
    if (gpus > (1u << 24))
        return vf__err(err, VF_EINVAL, "", "too many gpus");
    c->gpus = (uint32_t)gpus;
    c->dp = (uint32_t)(gpus / mp);
    if (c->ep > 1 && c->dp % c->ep)
        return vf__err(err, VF_EINVAL, "", "ep (%u) must divide the data-parallel size (%u)", c->ep, c->dp);
    c->per_node = t->gpus_per_node ? t->gpus_per_node : (c->gpus < 8 ? c->gpus : 8);

    if (t->zero < 0 || t->zero > 3)
        return vf__err(err, VF_EINVAL, "", "zero stage must be 0, 1, 2 or 3");
    if (t->fsdp < 0 || t->fsdp > 3)
        return vf__err(err, VF_EINVAL, "", "unknown fsdp strategy");
    static const int fsdp_zero[] = {0, 3, 2, 0}; /* none, full, grad-op, no-shard */
    c->zero = t->zero;
    if (t->fsdp) {
        if (t->zero && t->zero != fsdp_zero[t->fsdp])
            return vf__err(err, VF_EINVAL, "", "--zero and --fsdp disagree");
        c->zero = fsdp_zero[t->fsdp];
    }
    if (t->offload != VF_OFFLOAD_NONE && c->zero == 0)
        return vf__err(err, VF_EINVAL, "", "offload needs zero 1-3 (or fsdp)");
    if ((t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH) && c->zero < 3)
        return vf__err(err, VF_EINVAL, "", "parameter offload needs zero 3 (or fsdp full)");

    switch (t->precision) {
    case VF_PREC_FP32:
        c->act = 4, c->w_bytes = 4, c->g_bytes = 4, c->master = 0, c->st_bytes = 4, c->frozen_bytes = 4;
        break;
    case VF_PREC_FP16_MIXED:
    case VF_PREC_BF16_MIXED:
        c->act = 2, c->w_bytes = 2, c->g_bytes = 2, c->master = 4, c->st_bytes = 4, c->frozen_bytes = 2;
        break;
    case VF_PREC_BF16:
        c->act = 2, c->w_bytes = 2, c->g_bytes = 2, c->master = 0, c->st_bytes = 2, c->frozen_bytes = 2;
        break;
    default:
        return vf__err(err, VF_EINVAL, "", "unknown precision");
    }
    if ((unsigned)t->recompute > VF_RECOMPUTE_FULL || (unsigned)t->offload > VF_OFFLOAD_BOTH)
        return vf__err(err, VF_EINVAL, "", "unknown recomputation or offload choice");
    if ((unsigned)t->optimizer > VF_OPT_PAGED_ADAMW)
        return vf__err(err, VF_EINVAL, "", "unknown optimizer");
    if ((unsigned)t->optim_impl > VF_OPTIM_FOREACH_LEGACY)
        return vf__err(err, VF_EINVAL, "", "unknown optimizer implementation");
    if (t->lora_rank > (1u << 20))
        return vf__err(err, VF_EINVAL, "", "lora rank out of range");
    c->resid = c->act;
    if (c->master && o->runtime == VF_RUNTIME_TRANSFORMERS && c->zero == 0 && !t->fsdp && !t->lora_rank) {
        /* HF Trainer's mixed precision is PyTorch AMP: fp32 weights, gradients
         * and moments (no separate master), autocast's 16-bit copies, an fp32
         * residual stream */
        c->amp = true;
        c->w_bytes = 4, c->g_bytes = 4, c->master = 0, c->st_bytes = 4, c->resid = 4;
    }
    if (!(t->lora_dropout >= 0 && t->lora_dropout < 1))
        return vf__err(err, VF_EINVAL, "", "lora dropout must be in [0, 1)");
    c->lora = t->lora_rank > 0;
    c->lora_rank = t->lora_rank;
    c->lora_dropout = t->lora_dropout;
    if (t->qlora[0]) {
        if (strcmp(t->qlora, "nf4") && strcmp(t->qlora, "nf4-dq"))
            return vf__err(err, VF_EINVAL, "", "qlora must be nf4 or nf4-dq");
        if (!c->lora)
            return vf__err(err, VF_EINVAL, "", "qlora needs a lora rank");
        c->qlora = true;
    }
    c->litgpt = o->runtime == VF_RUNTIME_LITGPT;
    int keeps = bnb_keeps_input(t->bnb_version);
    if (keeps < 0)
        return vf__err(err, VF_EINVAL, "", "bitsandbytes version must look like 0.42.0");
    c->bnb_keeps_input = c->qlora && keeps;
    if (c->qlora && c->zero == 3 && bnb_lacks_quant_storage(t->bnb_version))
        return vf__err(err, VF_EINVAL, "", "--qlora with ZeRO-3 / FSDP full shard needs bitsandbytes >= 0.43.0 "
                                          "(bnb_4bit_quant_storage); %s cannot shard 4-bit weights", t->bnb_version);
    /* Fabric's BitsandbytesPrecision quantizes from weight.to(torch.half)
     * (lightning/fabric/plugins/precision/bitsandbytes.py), as bitsandbytes
     * < 0.43.0 did itself (Params4bit.cuda: .half()) */
    c->bnb_fp16_quant = c->qlora && (c->litgpt || (t->bnb_version[0] && strncmp(t->bnb_version, "0.43", 4) &&
                                                   keeps));
    /* LitGPT's CausalSelfAttention always calls F.scaled_dot_product_attention
     * (is_causal in training) after expanding k and v to every head
     * (litgpt/model.py): SDPA as priced here */
    c->attn = o->infer.attn;
    /* one default for every runtime: what transformers picks when SDPA is
     * available (PreTrainedModel._autoset_attn_implementation) */
    if (c->attn == VF_ATTN_DEFAULT)
        c->attn = VF_ATTN_SDPA;
    c->grads_kept = o->grads_kept;
    int sm = softmax_keeps_input(t->torch_version);
    if (sm < 0)
        return vf__err(err, VF_EINVAL, "", "torch version must look like 1.10");
    c->softmax_keeps_input = sm;
    if ((unsigned)t->loss > VF_LOSS_FUSED || t->loss_chunks > 4096)
        return vf__err(err, VF_EINVAL, "", "unknown loss or chunk count out of range");
    if (t->loss != VF_LOSS_FULL && c->litgpt)
        return vf__err(err, VF_EINVAL, "", "--loss: litgpt runs its own chunked loss (finetune scripts), not this knob");
    if (t->eval_batch && (c->litgpt || o->runtime != VF_RUNTIME_TRANSFORMERS))
        return vf__err(err, VF_EINVAL, "", "--eval-batch: the evaluation step is transformers' Trainer.evaluate "
                                           "(--runtime transformers), not this runtime's");
    c->loss = t->loss;
    c->loss_chunks = t->loss == VF_LOSS_CHUNKED ? (t->loss_chunks ? t->loss_chunks : 8) : 1;
    /* torchtune's recipes raise on these combinations (full_finetune_single_device.py _setup_optimizer) */
    if (t->optim_in_bwd && c->accum > 1)
        return vf__err(err, VF_EINVAL, "", "--optimizer-in-backward: gradient accumulation is not possible with "
                                          "the optimizer step in backward (each gradient is freed by its step)");
    if (t->optim_in_bwd && c->zero)
        return vf__err(err, VF_EINVAL, "", "--optimizer-in-backward: not modelled under ZeRO or FSDP (single-device "
                                          "and data-parallel steps only)");
    if ((t->optim_in_bwd || t->act_offload) && c->litgpt)
        return vf__err(err, VF_EINVAL, "", "--optimizer-in-backward and --activation-offload are torchtune's "
                                          "recipes' knobs, not litgpt's");
    /* unsloth_zoo gradient_checkpointing.py Unsloth_Offloaded_Gradient_Checkpointer:
     * forward copies each block's input hidden state to the CPU
     * (hidden_states.to("cpu", non_blocking=True)) and runs the block under
     * no_grad; backward copies it back and reruns the block */
    if (t->ckpt_offload && t->recompute != VF_RECOMPUTE_FULL)
        return vf__err(err, VF_EINVAL, "", "offloaded checkpoints (Unsloth's checkpointer) need full recomputation");
    if (t->ckpt_offload && t->act_offload)
        return vf__err(err, VF_EINVAL, "", "--grad-checkpoint unsloth offloads the checkpoints itself; "
                                          "--activation-offload is torchtune's: one of them");
    if (t->ckpt_offload && c->litgpt)
        return vf__err(err, VF_EINVAL, "", "--grad-checkpoint unsloth is Unsloth's checkpointer, not litgpt's");
    c->optim_in_bwd = t->optim_in_bwd;
    c->act_offload = t->act_offload || t->ckpt_offload;
    c->ckpt_offload = t->ckpt_offload;
    c->unsloth = t->ckpt_offload;
    /* peft/utils/other.py prepare_model_for_kbit_training: every fp16/bf16
     * parameter (what bitsandbytes did not quantize: embeddings, norms, the
     * head, biases) cast to fp32; an RMSNorm with an fp32 weight returns fp32
     * (weight * x.to(input_dtype)) and Linear4bit returns its input's dtype,
     * so the residual stream between the blocks is fp32 */
    if (t->kbit_prepare && !c->qlora)
        return vf__err(err, VF_EINVAL, "", "--kbit-prepare is PEFT's recipe for a 4-bit base: it needs --qlora");
    if (t->kbit_prepare && c->litgpt)
        return vf__err(err, VF_EINVAL, "", "--kbit-prepare is PEFT's, not litgpt's");
    c->kbit_fp32 = t->kbit_prepare;
    if (c->kbit_fp32)
        c->resid = 4;
    /* from_pretrained without torch_dtype loads in torch's default dtype,
     * fp32 (transformers' default before dtype="auto"); Trainer's bf16=True
     * then runs the forward under autocast: the frozen base at 4 bytes, each
     * matmul keeping autocast's 16-bit copy of its weight (the input's
     * gradient needs it), softmax in fp32, an fp32 residual stream. QLoRA's
     * block matrices are 4-bit whatever the load dtype: only the rest is fp32 */
    if (t->load_fp32) {
        if (!c->lora || !c->master)
            return vf__err(err, VF_EINVAL, "", "--load-dtype fp32 prices a LoRA base loaded in fp32 under a mixed "
                                              "--precision (full fine-tuning: --precision bf16-mixed already trains "
                                              "fp32 weights under autocast)");
        if (c->litgpt || c->zero || t->fsdp)
            return vf__err(err, VF_EINVAL, "", "--load-dtype fp32: not modelled under litgpt, ZeRO or FSDP (they cast "
                                              "the model to their own dtype)");
        c->frozen_bytes = 4;
        c->resid = 4;
        c->amp = !c->qlora;
    }
    /* peft get_peft_model(autocast_adapter_dtype=True, the default since
     * 0.12): adapters on a 16-bit base are made fp32 (_cast_adapter_dtype),
     * so they train without a master copy; each adapter casts its input to
     * their dtype (lora/layer.py Linear.forward: x = _cast_input_dtype(x,
     * lora_A.weight.dtype)) and A keeps that copy; under mixed precision
     * (Trainer bf16=True: autocast) the matmul keeps autocast's 16-bit
     * cast of it. DeepSpeed and FSDP cast the wrapped module to their own
     * dtype; LitGPT has its own LoRA layers. */
    if (c->lora && !c->litgpt && !t->adapter_base_dtype && c->zero == 0 && !t->fsdp &&
        t->precision != VF_PREC_FP32) {
        c->adapter_in = c->master ? 2 : 4;
        c->w_bytes = 4, c->g_bytes = 4, c->master = 0, c->st_bytes = 4;
    }
    return VF_OK;
}

static const char *attn_name(vf_attn a)
{
    return a == VF_ATTN_FLASH ? "flash" : a == VF_ATTN_SDPA ? "sdpa" : "eager";
}

/* Shapes come from files: before any product, check that the largest terms
 * stay far below 2^64 (a generous bound in floating point). */
static vf_status in_range(const vf_model *m, const vf__tarch *a, const vf__tcfg *c, vf_error *err)
{
    double T = (double)c->T, sq = (double)c->s;
    double per_tok = (double)a->n_heads * sq * 16 + (double)a->hidden * 64 + (double)a->inter * 64 +
                     (double)a->moe_inter * 64 * (a->n_experts_active + 1) + (double)a->vocab * 16 +
                     (double)a->n_experts * 16 + (double)a->n_heads * a->head_dim * 64;
    double bound = T * per_tok * ((double)a->n_layers + 2) * c->accum;
    double pbound = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        double dims = 0;
        for (uint32_t d = 0; d < t->n_dims && d < VF_MAX_DIMS; d++)
            dims += (double)t->shape[d];
        pbound += 64.0 * ((double)t->n_elements + (double)c->lora_rank * dims * (t->n_experts > 1 ? t->n_experts : 1));
    }
    if (bound > 0x1p60 || pbound > 0x1p60 || a->n_layers > (1u << 20))
        return vf__err(err, VF_ERANGE, m->source ? m->source : "", "training estimate out of range for this model and knobs");
    return VF_OK;
}

/* What the replay cannot name: the attention kernel's own backward
 * workspace. FlashAttention-2's mha_bwd (and PyTorch's flash and
 * memory-efficient SDPA kernels after it) accumulates dQ in an fp32 tensor
 * [b, s, heads, head_dim] beside the dq, dk, dv the replay places, plus the
 * fp32 softmax_d [b, heads, s]; made and freed inside one call, so the
 * segment for it is kept free. With GQA/MQA the flash kernel (--attn flash:
 * flash_attn_func gets k, v with their own kv heads) writes dK and dV for
 * every query head, dk_expanded and dv_expanded [b, s, heads, head_dim] in
 * the input dtype, alive with the accumulator until at::sum_out folds them
 * into dk, dv (flash_api.cpp mha_bwd, mha_varlen_bwd): a segment each.
 * SDPA gets k, v already expanded (repeat_kv), so it has none. Eager attention has none: its tensors are
 * all replayed (the cuBLAS workspace is on the allocator). A --margin
 * given replaces it. */
static uint64_t unnamed_margin(const vf_estimate_opts *o, const vf__tarch *a, const vf__tcfg *c, vf_estimate *e)
{
    e->margin_named = true;
    if (o->margin_set)
        return o->margin;
    if (c->attn == VF_ATTN_EAGER) {
        vf__assume(e, "margin = none kept by fit: every request of the step is replayed on the device (eager "
                      "attention has no kernel workspace beyond cuBLAS's, which is replayed)");
        return 0;
    }
    uint64_t heads = a->n_heads / c->tp ? a->n_heads / c->tp : 1;
    uint64_t w = vf__sadd(vf__smul(vf__smul(4 * c->T, heads), a->head_dim), vf__smul(4 * c->T, heads));
    uint64_t seg = vf__talloc_segment_bytes(w);
    if (c->attn == VF_ATTN_FLASH && a->n_kv_heads && a->n_kv_heads < a->n_heads) {
        uint64_t x = vf__smul(vf__smul((uint64_t)c->act * c->T, heads), a->head_dim);
        seg = vf__sadd(seg, vf__smul(2, vf__talloc_segment_bytes(x)));
        vf__assume(e, "margin = %.0f MiB free kept by fit: the requests the replay cannot name, the attention "
                      "backward's fp32 dQ accumulator and softmax_d (%.0f MiB) and, with grouped kv heads, "
                      "dk_expanded and dv_expanded (%.0f MiB each; FlashAttention-2 mha_bwd), in new segments",
                   (double)seg / (1 << 20), (double)w / (1 << 20), (double)x / (1 << 20));
        return seg;
    }
    vf__assume(e, "margin = %.0f MiB free kept by fit: the one request the replay cannot name, the attention "
                  "backward's fp32 dQ accumulator and softmax_d (%.0f MiB, FlashAttention-2 mha_bwd), in a new segment",
               (double)seg / (1 << 20), (double)w / (1 << 20));
    return seg;
}

/* The replay on the device: what the allocator would reserve with no
 * limit is more than the device has, so the step is played again on an
 * allocator as large as the device (less the context and the margin) with
 * PyTorch's OOM path: a cudaMalloc that fails frees the unused cached
 * segments (release_cached_blocks) and retries, then the request fails.
 * What the priced peak has beyond the replay's allocated peak is held
 * through that step (erring high). true when no request failed; the
 * figures are then that replay's. */
static bool on_device(const vf_model *m, const vf_estimate_opts *o, const vf__tarch *a, const vf__tcfg *c,
                      const vf__tacts *acts, const vf__tplace *p, uint64_t allocated, uint64_t ws, uint64_t ctx,
                      uint64_t margin, const vf__tstats *free_run, vf_estimate *out, vf_error *err)
{
    vf__replay r;
    if (vf__replay_open(&r, o, err) != VF_OK)
        return false;
    r.own_margin = true;
    r.capacity = o->gpu_bytes > vf__sadd(ctx, margin) ? o->gpu_bytes - ctx - margin : 1;
    uint64_t hold = allocated > free_run->peak_allocated ? allocated - free_run->peak_allocated : 0;
    vf__train_replay(&r, m, &o->train, a, c, acts, p, ws, hold);
    bool ok = !r.broken;
    vf__tstats s = vf__replay_stats(&r);
    double gib = (double)o->gpu_bytes / (1 << 30);
    if (ok) {
        vf__device_set(out, s.peak_allocated > allocated ? s.peak_allocated : allocated, s.peak_reserved, ctx, 0);
        vf__assume(out, "caching allocator = replayed on the device (%.2f GiB, CUDACachingAllocator.cpp rules): without "
                        "a limit it would reserve %.2f GiB; under the limit it frees its unused cached segments and "
                        "retries (release_cached_blocks), no request fails, reserved peak %.2f GiB%s",
                   gib, (double)free_run->peak_reserved / (1 << 30), (double)s.peak_reserved / (1 << 30),
                   hold ? ", the priced peak's excess over the replay held through the step" : "");
    } else if (r.oom) {
        vf__assume(out, "caching allocator = replayed on the device (%.2f GiB less the context and margin): a request "
                        "of %.0f MiB fails after the cached segments are freed and the allocation retried "
                        "(out of memory)", gib, (double)s.failed_request / (1 << 20));
    }
    vf__replay_close(&r);
    return ok;
}

/* The evaluation step's figures (train_replay_eval.c): its own allocated
 * peak (as after torch.cuda.reset_peak_memory_stats) with the context; the
 * replay's peaks, which the verdict reads, already cover it. */
static void eval_figures(vf_estimate *out, const vf__replay *r, const vf__tstats *s, uint64_t allocated, uint64_t ctx,
                         uint32_t be)
{
    out->eval_bytes = vf__sadd(r->track_allocated, ctx);
    bool above = r->track_allocated >= s->peak_allocated && r->track_allocated > allocated;
    if (above)
        snprintf(out->peak_phase, sizeof out->peak_phase, "evaluation step");
    vf__assume(out, "evaluation step = Trainer.evaluate under torch.no_grad(), %u sequences per GPU "
                    "(per_device_eval_batch_size), after the training steps on the same allocator: nothing saved, "
                    "no gradients, the logits with their fp32 copy and log-probabilities for the loss; no "
                    "compute_metrics (prediction_loss_only: logits not gathered); %s the training step",
               be, above ? "above" : "below");
    vf__explain(out, "evaluation step: peak allocated %llu bytes (reserved %llu), %llu with the context",
                (unsigned long long)r->track_allocated, (unsigned long long)r->track_reserved,
                (unsigned long long)out->eval_bytes);
}

/* What a PyTorch process's device holds: the allocator replayed over one
 * step (plain, LoRA, QLoRA, accumulated, recomputed, ZeRO/FSDP/offload;
 * else the peak as allocated), the context beside it; on a device that the
 * unlimited replay overfills, replayed again on the device's size (its OOM
 * path decides). Under transformers that is the figure that must fit
 * (per_gpu_bytes, the cached blocks in the overhead); LitGPT's own figure
 * stays what it prints (torch.cuda.max_memory_allocated). */
static vf_status device_figures(const vf_model *m, const vf_estimate_opts *o, const vf__tarch *a, const vf__tcfg *c,
                                const vf__tacts *acts, const vf__tplace *p, uint64_t peak, uint64_t ws, uint64_t ctx,
                                vf_estimate *out, vf_error *err)
{
    bool hf = o->runtime == VF_RUNTIME_TRANSFORMERS;
    uint64_t allocated = hf ? peak + ws : peak;
    vf__replay r;
    vf_status st = vf__replay_open(&r, o, err);
    if (st != VF_OK)
        return st;
    r.own_margin = true;
    if (vf__train_replay(&r, m, &o->train, a, c, acts, p, ws, 0)) {
        uint64_t margin = unnamed_margin(o, a, c, out);
        out->margin_bytes = margin;
        vf__tstats s = vf__replay_stats(&r);
        uint64_t live = vf__sadd(s.peak_allocated > allocated ? s.peak_allocated : allocated, vf__sadd(ctx, margin));
        uint64_t need = vf__sadd(live, s.peak_reserved > s.peak_allocated ? s.peak_reserved - s.peak_allocated : 0);
        /* on a device that the free run overfills it is played again on the
         * device; not when the live peak alone overfills it (no order of
         * frees helps then: a request must fail) */
        if (r.broken || !o->gpu_bytes || need <= o->gpu_bytes || live > o->gpu_bytes ||
            !on_device(m, o, a, c, acts, p, allocated, ws, ctx, margin, &s, out, err))
            vf__replay_finish(&r, out, allocated, ctx, 0);
        if (o->train.eval_batch && !r.broken)
            eval_figures(out, &r, &s, allocated, ctx, o->train.eval_batch);
    } else {
        vf__device_set(out, allocated, allocated, ctx, 0);
        vf__assume(out, "caching allocator = not replayed for tensor or pipeline parallelism: reserved taken as "
                        "allocated");
        if (o->train.eval_batch)
            vf__assume(out, "evaluation step = not replayed for tensor or pipeline parallelism: the verdict is the "
                            "training step's");
    }
    vf__replay_close(&r);
    if (hf) {
        out->overhead = vf__sadd(out->overhead, out->device_bytes > allocated + ctx ? out->device_bytes - (allocated + ctx) : 0);
        out->per_gpu_bytes = out->device_bytes;
    }
    return VF_OK;
}

vf_status vf__train_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    /* peft/utils/other.py prepare_model_for_kbit_training(model,
     * use_gradient_checkpointing=True): under the default it calls
     * model.gradient_checkpointing_enable(), every block checkpointed */
    if (o->train.kbit_prepare && !o->train.kbit_no_ckpt && o->train.recompute == VF_RECOMPUTE_NONE &&
        o->train.qlora[0]) {
        vf_estimate_opts k = *o;
        k.train.recompute = VF_RECOMPUTE_FULL;
        return vf__train_run(m, &k, out, err);
    }
    const vf_train_opts *t = &o->train;
    vf__tcfg c;
    vf__tarch a;
    vf__tstates s;
    vf__tacts acts;
    vf__tplace p;
    vf_status st = resolve(m, o, &c, err);
    if (st == VF_OK)
        st = vf__train_arch(m, &a, err);
    if (st == VF_OK && c.litgpt && a.tied) {
        /* LitGPT's GPT has no weight tying: convert_hf_checkpoint copies
         * model.embed_tokens.weight into lm_head.weight when the checkpoint has
         * no head (litgpt/scripts/convert_hf_checkpoint.py) */
        c.head_shape[0] = a.vocab;
        c.head_shape[1] = a.hidden;
    }
    if (st == VF_OK)
        st = vf__hparams_check(&m->hp, m->source ? m->source : "", err);
    if (st == VF_OK)
        st = in_range(m, &a, &c, err);
    if (st == VF_OK)
        st = vf__train_states(m, t, &c, &s, err);
    if (st != VF_OK)
        return st;
    vf__train_acts(&a, &c, &s, t->recompute, &acts);
    vf__train_place(&a, &c, t, &s, &acts, &p, out);

    out->gpus = c.gpus;
    out->context = c.s;
    out->batch = c.b;
    out->trainable_params = s.trainable;
    out->weights = p.weights + p.buffers;
    out->gradients = p.grads;
    out->optimizer = p.optimizer;
    out->host_bytes = p.host;
    /* PyTorch's CUDA context and kernels plus its cuBLAS/cuBLASLt workspaces
     * (overhead.c, sourced there); the generic runtime is the plain sum */
    bool torch = o->runtime == VF_RUNTIME_TRANSFORMERS || o->runtime == VF_RUNTIME_LITGPT;
    char ctx_why[VF_NOTE_LEN];
    uint64_t ctx = vf__torch_context_bytes(o, true, ctx_why, sizeof ctx_why);
    uint64_t ws = vf__cublas_workspace_bytes(o->infer.gpu_name, vf__gpu_class_bytes(o));
    uint64_t runtime = o->runtime == VF_RUNTIME_TRANSFORMERS ? ctx + ws : 0;

    static const char *const rc_name[] = {"none", "selective", "full"};
    vf__assume(out, "precision = %s", prec_name(t->precision));
    vf_optim_impl impl = t->optim_impl;
    if (c.zero >= 1 && !t->fsdp && impl == VF_OPTIM_FOREACH)
        impl = VF_OPTIM_FUSED; /* as train_states.c: DeepSpeed's own optimizer */
    bool bnb = t->optimizer == VF_OPT_ADAMW_8BIT || t->optimizer == VF_OPT_PAGED_ADAMW_8BIT ||
               t->optimizer == VF_OPT_PAGED_ADAMW;
    vf__assume(out, "optimizer = %s (%s)", opt_name(t->optimizer),
               bnb ? "bitsandbytes kernel"
               : impl == VF_OPTIM_FOR_LOOP ? "per-tensor loop"
               : impl == VF_OPTIM_FUSED ? (c.zero >= 1 && !t->fsdp ? "DeepSpeed fused" : "fused")
               : impl == VF_OPTIM_FOREACH_LEGACY ? "foreach, torch < 2.0"
                                        : "foreach");
    vf__assume(out, "micro_batch = %llu", (unsigned long long)c.b);
    vf__assume(out, "seq_len = %llu", (unsigned long long)c.s);
    vf__assume(out, "grad_accum = %u", c.accum);
    vf__assume(out, "recompute = %s", rc_name[t->recompute]);
    vf__assume(out, "attention = %s", attn_name(c.attn));
    vf__assume(out, "parallel = dp %u x tp %u x pp %u, ep %u", c.dp, c.tp, c.pp, c.ep);
    vf__assume(out, "zero = %d", c.zero);
    if (c.loss == VF_LOSS_CHUNKED && !a.cls_labels)
        vf__assume(out, "loss = chunked in %u (torchtune CEWithChunkedOutputLoss): the head and the fp32 upcast per "
                        "chunk of tokens; every chunk's log-probabilities saved, the fp32 copy and the loss's "
                        "gradients one chunk at a time", c.loss_chunks);
    if (c.loss == VF_LOSS_FUSED && !a.cls_labels)
        vf__assume(out, "loss = fused linear cross-entropy (Liger LigerFusedLinearCrossEntropyLoss, Unsloth): the "
                        "logits never whole: one chunk of about tokens x hidden at a time, the input's gradient made "
                        "in the forward and saved, no log-probabilities kept%s", c.lora ? "" : "; the head's gradient "
                        "made in the forward");
    if (c.optim_in_bwd)
        vf__assume(out, "optimizer = stepped in backward (torchtune optimizer_in_bwd: one optimizer per parameter, "
                        "stepped by its register_post_accumulate_grad_hook, then zero_grad frees the gradient): one "
                        "gradient alive at a time, the step's temporaries one tensor's");
    if (c.ckpt_offload)
        vf__assume(out, "checkpoints = offloaded (Unsloth use_gradient_checkpointing=\"unsloth\", unsloth_zoo "
                        "Unsloth_Offloaded_Gradient_Checkpointer): each block's input hidden state copied to host "
                        "memory in the forward (in host memory), the block run under no_grad, the input copied back "
                        "and the block rerun in its backward: one block's input on the GPU at a time");
    else if (c.act_offload)
        vf__assume(out, "activations = offloaded (torchtune OffloadActivations): every saved tensor of the blocks "
                        "copied to pinned host memory (in host memory), the last %d on the GPU until copied, a "
                        "block's brought back for its backward; the head's and the loss's stay on the GPU",
                   VF__OFFLOAD_STASH);
    if (c.grads_kept)
        vf__assume(out, "gradients = kept between steps (zero_grad(set_to_none=False), PyTorch < 2.0)");
    if (a.cls_labels)
        vf__assume(out, "head = sequence classification (%llu labels on the pooled first token): no vocabulary-sized "
                        "logits", (unsigned long long)a.cls_labels);
    if (c.softmax_keeps_input)
        vf__assume(out, "PyTorch %s: softmax and log_softmax keep their input beside their output for backward "
                        "(fixed in 1.11, pytorch issue #64000)", t->torch_version);
    if (c.lora)
        vf__assume(out, "lora = rank %u on %s, dropout %.2f%s%s", t->lora_rank,
                   t->lora_targets[0] ? t->lora_targets : "q,v", (double)t->lora_dropout, c.qlora ? ", base " : "",
                   c.qlora ? t->qlora : "");
    const bool fused_lora = vf__unsloth_lora(&a, &c, &s);
    if (c.adapter_in && !fused_lora)
        vf__assume(out, "lora adapters = fp32 on the 16-bit base (PEFT autocast_adapter_dtype=True): weights, "
                        "gradients and AdamW states at 4 bytes, no master copy; each adapter keeps its own %s copy "
                        "of its input (--adapter-dtype base: the base's dtype)",
                   c.adapter_in == 4 ? "fp32" : "autocast 16-bit");
    if (c.unsloth && a.rmsnorm)
        vf__assume(out, "norms = Unsloth's Fast_RMS_Layernorm (unsloth/kernels/rms_layernorm.py): each keeps its "
                        "input and the fp32 rstd per row, no fp32 copy of the input");
    if (fused_lora)
        vf__assume(out, "lora kernels = Unsloth's fused (unsloth/kernels/fast_lora.py LoRA_QKV, LoRA_W, LoRA_MLP): "
                        "base and adapters in one autograd Function at the base dtype, saving only X (and e = X @ "
                        "gate, g = X @ up for the MLP); no adapter keeps A's output or a copy of its input; the "
                        "MLP's backward makes one tokens x ff tensor (swiglu's backward in place, dX into X)%s",
                   c.adapter_in ? "; the adapters' weights, gradients and AdamW states at 4 bytes" : "");
    else if (c.unsloth && c.lora)
        vf__assume(out, "lora kernels = PEFT's modules: Unsloth patches its fused kernels in only with lora_dropout "
                        "0 and all of q, k, v, o, gate, up, down targeted on a dense gated block");
    if (t->load_fp32)
        vf__assume(out, "load dtype = fp32 (from_pretrained without torch_dtype): the frozen base%s at 4 bytes, "
                        "an fp32 residual stream%s", c.qlora ? "'s unquantized parameters" : "",
                   c.amp ? ", autocast's 16-bit weight copies kept by each matmul" : "");
    if (c.kbit_fp32)
        vf__assume(out, "kbit prepare = PEFT prepare_model_for_kbit_training: the parameters bitsandbytes did not "
                        "quantize (embeddings, norms, head) in fp32, the residual stream and norms' outputs fp32%s",
                   t->recompute == VF_RECOMPUTE_NONE ? "; use_gradient_checkpointing=False: no checkpointing"
                                                       : "; use_gradient_checkpointing=True (its default): every block checkpointed");
    if (c.bnb_keeps_input)
        vf__assume(out, "bitsandbytes %s: each 4-bit matmul keeps its input for backward%s", t->bnb_version,
                   c.litgpt ? ", and after it: the previous micro-batch's inputs are alive through the next forward"
                            : "");
    if (c.litgpt)
        vf__assume(out, "litgpt = %s; the logits come back in fp32 (Fabric's convert_output) and the loop holds them "
                        "through the step", c.lora ? "finetune/lora.py (head in 128-token chunks)" : "finetune/full.py");
    if (c.master)
        vf__assume(out, "mixed precision = 16-bit weights and gradients, fp32 master copy in the optimizer");
    if (c.amp)
        vf__assume(out, "mixed precision = PyTorch AMP: fp32 weights, gradients and moments; 16-bit autocast "
                        "copies of the matrices kept for backward");

    if (s.paged_bytes)
        vf__assume(out, "optimizer states = %.2f GiB of them in CUDA managed memory (bitsandbytes paged: cudaMallocManaged "
                        "outside the caching allocator, paged to the host under pressure): counted as host memory, not "
                        "on the device", (double)s.paged_bytes / (1 << 30));
    vf__explain(out, "params %llu, trainable %llu (%llu tensors), frozen %llu", (unsigned long long)s.params,
                (unsigned long long)s.trainable, (unsigned long long)s.n_trainable_tensors,
                (unsigned long long)s.frozen);
    vf__explain(out, "gradients = %llu trainable x %u bytes = %llu", (unsigned long long)s.trainable, c.g_bytes,
                (unsigned long long)s.grad_bytes);
    vf__explain(out, "optimizer = master %llu + %s state %llu", (unsigned long long)s.master_bytes,
                opt_name(t->optimizer), (unsigned long long)s.state_bytes);

    if (t->states_only) {
        uint64_t gpu = 0, cpu = 0;
        if (vf__deepspeed_states(&c, t, &s, &gpu, &cpu)) {
            out->per_gpu_bytes = gpu;
            out->host_bytes = cpu;
            vf__explain(out, "model states as DeepSpeed's estimate_zero%d_model_states_mem_needs: gpu %llu, cpu %llu",
                        c.zero <= 2 ? 2 : 3, (unsigned long long)gpu, (unsigned long long)cpu);
        } else {
            out->per_gpu_bytes = p.weights + p.grads + p.optimizer;
        }
        snprintf(out->peak_phase, sizeof out->peak_phase, "model states");
        out->total_bytes = out->per_gpu_bytes * c.gpus;
        return VF_OK;
    }

    out->activations = p.activations;
    vf__explain(out, "activations per block %llu (kept %llu) x %u blocks + outside %llu = %llu per micro-batch",
                (unsigned long long)acts.layer, (unsigned long long)acts.layer_kept, a.n_layers,
                (unsigned long long)acts.non_layer, (unsigned long long)acts.total);
    if (acts.held || acts.held_fwd)
        vf__explain(out, "kept by the loop: its fp32 logits %llu (all step); the previous micro-batch's 4-bit inputs %llu "
                         "(through the forward, in overhead)", (unsigned long long)acts.held, (unsigned long long)acts.held_fwd);
    uint64_t temp = 0;
    uint64_t peak = vf__train_peak(&c, &acts, &p, t->recompute, &temp, out->peak_phase, sizeof out->peak_phase, out);
    /* what the loop holds all step (LitGPT's logits) is shown with the transients */
    out->overhead = runtime + p.comm_buffers + temp + acts.held / c.tp;
    out->per_gpu_bytes = peak + runtime;
    if (torch && (st = device_figures(m, o, &a, &c, &acts, &p, peak, ws, ctx, out, err)) != VF_OK)
        return st;
    if (torch)
        vf__assume(out, "%s", ctx_why);
    out->total_bytes = out->per_gpu_bytes * c.gpus;
    vf__explain(out, "peak at %s: %llu bytes per gpu", out->peak_phase, (unsigned long long)out->per_gpu_bytes);
    return VF_OK;
}
