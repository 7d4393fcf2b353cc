/* train_dist.c — where the states and activations live once the model is
 * spread over GPUs: tensor/pipeline/expert parallel splits, ZeRO stages
 * (Rajbhandari et al. 2020, arXiv:1910.02054: stage 1 shards optimizer states,
 * 2 also gradients, 3 also parameters, over the data-parallel group), FSDP as
 * its ZeRO equivalent, CPU/NVMe offload, and DeepSpeed's own estimators for
 * --states-only. */
#include "memory/train/train_internal.h"

#include <string.h>

#define DS_REDUCE_BUCKET VF__DS_REDUCE_BUCKET
/* Bytes a GPU holds of x bytes of model state once TP/PP (and EP for the
 * routed experts' share) split it. */
static uint64_t split(uint64_t x, const vf__tcfg *c, const vf__tstates *s)
{
    double f = s->params ? (double)s->expert_params / (double)s->params : 0.0;
    double mp = (double)c->tp * c->pp;
    return (uint64_t)((double)x * (1.0 - f) / mp + (double)x * f / (mp * c->ep) + 0.5);
}

void vf__train_place(const vf__tarch *a, const vf__tcfg *c, const vf_train_opts *t, const vf__tstates *s,
                     const vf__tacts *acts, vf__tplace *p, vf_estimate *e)
{
    memset(p, 0, sizeof *p);
    uint64_t w = split(s->weight_bytes, c, s), g = split(s->grad_bytes, c, s);
    if (c->optim_in_bwd) {
        /* torchtune optimizer_in_bwd: register_post_accumulate_grad_hook
         * steps the parameter and zero_grad()s it (set_to_none) as soon as
         * its gradient is whole: one parameter's gradient alive at a time */
        g = split(vf__smul(s->largest_trainable, c->g_bytes), c, s);
        vf__explain(e, "optimizer in backward: at most one gradient alive, the largest (%llu bytes)",
                    (unsigned long long)g);
    }
    /* paged optimizer states are in managed memory: host-backed, evicted under pressure, never an OOM */
    uint64_t paged = split(s->paged_bytes, c, s);
    uint64_t opt = split(s->master_bytes + s->state_bytes, c, s) - paged;
    uint64_t tmp = split(s->step_temp_bytes, c, s);
    uint64_t dp = c->dp;
    if (c->zero >= 1) {
        opt /= dp;
        tmp /= dp;
        paged /= dp;
    }
    if (c->zero >= 2)
        g /= dp;
    if (c->zero >= 3)
        w /= dp;
    p->buffers = split(s->buffer_bytes, c, s);

    uint64_t host = 0;
    bool off_opt = t->offload == VF_OFFLOAD_OPTIMIZER || t->offload == VF_OFFLOAD_BOTH;
    bool off_par = t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH;
    if (off_opt) {
        /* ZeRO-Offload: fp32 master, moments and fp32 gradients on the host; the step runs there */
        host += opt + split(s->trainable * 4, c, s) / (c->zero >= 2 ? dp : 1);
        opt = 0;
        tmp = 0;
        vf__explain(e, "offload optimizer: master weights, moments and fp32 gradients in %s memory",
                    t->offload_nvme ? "NVMe" : "host");
    }
    if (off_par) {
        host += w;
        vf__explain(e, "offload params: parameter partitions in %s memory, gathered layer by layer",
                    t->offload_nvme ? "NVMe" : "host");
        w = 0;
    }
    if (t->offload_nvme)
        host = 0; /* the states live on NVMe; pinned staging buffers only */
    host += paged;

    /* communication buffers */
    if (c->zero == 0 && dp > 1) {
        /* DDP copies every gradient into its flat buckets (25 MiB each) unless
         * gradient_as_bucket_view=True: one more gradient-sized allocation */
        p->comm_buffers = g;
        vf__explain(e, "DDP buckets: a copy of the gradients (%llu bytes), gradient_as_bucket_view=False",
                    (unsigned long long)g);
    } else if ((c->zero == 1 || c->zero == 2) && !t->fsdp) {
        /* DeepSpeed's backward() allocates its contiguous gradient bucket,
         * reduce_bucket_size (5e8) 16-bit elements, whatever the trainable
         * count (stage_1_and_2.py, contiguous_gradients=True; a second one
         * with overlap_comm) */
        p->bwd_buffers = DS_REDUCE_BUCKET * c->g_bytes;
        vf__explain(e, "ZeRO contiguous gradient bucket during backward: 5e8 x %u bytes", c->g_bytes);
    } else if (c->zero == 2) {
        /* FSDP SHARD_GRAD_OP: one block's gradients reduce-scattered at a time */
        uint64_t per_block = a->n_layers ? s->block_linear_params / a->n_layers : 0;
        p->bwd_buffers = per_block / c->tp * c->g_bytes;
    } else if (c->zero == 3) {
        uint64_t per_block = a->n_layers ? s->block_linear_params / a->n_layers : 0;
        if (t->fsdp) {
            /* FSDP FULL_SHARD: the block being computed and the prefetched next one, gathered */
            p->comm_buffers = 2 * per_block / c->tp * c->w_bytes;
            p->bwd_buffers = per_block / c->tp * c->g_bytes;
            vf__explain(e, "FSDP gathered parameters: two blocks = %llu bytes", (unsigned long long)p->comm_buffers);
        } else {
            /* DeepSpeed stage 3: the block being computed and the largest module
             * gathered whole, plus its flat reduce buffer (reduce_bucket_size) */
            p->comm_buffers = (per_block + s->largest_module) / c->tp * c->w_bytes + DS_REDUCE_BUCKET * c->g_bytes;
            vf__explain(e, "ZeRO-3 gathered parameters (one block + the largest module) + reduce buffer = %llu bytes",
                        (unsigned long long)p->comm_buffers);
        }
    }

    /* activations: the first pipeline stage keeps one micro-batch per stage in flight (1F1B) */
    uint64_t per_stage = (a->n_layers + c->pp - 1) / c->pp;
    uint64_t inflight = c->pp > 1 ? (c->accum < c->pp ? c->accum : c->pp) : 1;
    uint64_t head = 4 * acts->logits_tv;
    uint64_t first = per_stage * inflight * acts->layer_kept + (c->pp > 1 ? acts->non_layer - head : acts->non_layer);
    uint64_t last = per_stage * acts->layer_kept + acts->non_layer;
    uint64_t act = c->pp > 1 && last > first ? last : first;
    if (c->act_offload) {
        /* torchtune OffloadActivations: each saved tensor of the blocks goes
         * to pinned host memory, the last VF__OFFLOAD_STASH of them alive on
         * the GPU until their copy ends; backward brings a block's back for
         * its own nodes only. The head and the loss stay (NoOpManager on the
         * output projection; the loss outside the context). */
        uint64_t blocks = act > acts->non_layer ? act - acts->non_layer : 0;
        uint64_t unit = vf__smul(vf__smul(c->act, c->T), a->inter > a->hidden ? a->inter : a->hidden);
        uint64_t flight = c->ckpt_offload ? acts->layer_kept : vf__smul(unit, VF__OFFLOAD_STASH);
        if (flight < acts->layer_kept)
            flight = acts->layer_kept;
        if (flight > blocks)
            flight = blocks;
        host += blocks / c->tp;
        act = acts->non_layer + flight;
        vf__explain(e, "activation offload: %llu bytes of saved blocks in pinned host memory, %llu in flight",
                    (unsigned long long)blocks, (unsigned long long)flight);
    }
    p->activations = act / c->tp; /* tensor + sequence parallel divide every term */
    if (c->pp > 1)
        vf__explain(e, "pipeline: %llu blocks per stage, %llu micro-batches in flight on the first stage",
                    (unsigned long long)per_stage, (unsigned long long)inflight);

    p->weights = w;
    p->grads = g;
    p->optimizer = opt;
    p->step_temp = tmp;
    p->host = host * c->per_node;
}

bool vf__deepspeed_states(const vf__tcfg *c, const vf_train_opts *t, const vf__tstates *s, uint64_t *gpu,
                          uint64_t *cpu)
{
    /* deepspeed/runtime/zero/stage_1_and_2.py and stage3.py,
     * estimate_zero{2,3}_model_states_mem_needs (additional_buffer_factor 1.5,
     * zero_init True). They price every parameter as trainable; here the 18
     * (or 16) bytes go to trainable parameters only and the frozen base
     * counts at its storage — the LoRA flaw avoided. */
    if (c->zero < 1 || !c->master || t->fsdp)
        return false; /* DeepSpeed's formulas are DeepSpeed's; FSDP gets the plain sum */
    const double buf = 1.5;
    double P = (double)s->params, Pt = (double)s->trainable, N = (double)c->gpus;
    double nodes = (double)((c->gpus + c->per_node - 1) / c->per_node), per_node = (double)c->per_node;
    double p16 = c->lora ? (double)(s->weight_bytes - s->trainable * c->w_bytes) + 2.0 * Pt : 2.0 * P;
    bool off_opt = t->offload == VF_OFFLOAD_OPTIMIZER || t->offload == VF_OFFLOAD_BOTH;
    bool off_par = t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH;
    double g, h;
    /* Evaluation order as in Python, so that int() truncates the same double. */
    double gf = 1.0 / nodes;
    if (c->zero <= 2) {
        if (off_opt) {
            g = p16;
            h = c->lora ? (4.0 * N * P > 16.0 * Pt ? 4.0 * N * P : 16.0 * Pt) * buf
                        : P * (4.0 * N > 16.0 ? 4.0 * N : 16.0) * buf;
        } else {
            g = p16 + (double)(uint64_t)(18.0 * Pt / N);
            h = P * 4.0 * per_node * buf;
        }
    } else {
        double ll = 4.0 * (double)s->largest_module;
        double frozen16 = p16 - 2.0 * Pt; /* frozen base, sharded like the rest */
        if (off_opt && off_par) {
            g = ll;
            h = (Pt * 18.0 + frozen16) * gf * buf;
        } else if (off_opt) {
            g = ll + (double)(uint64_t)((2.0 * Pt + frozen16) / N);
            h = Pt * 16.0 * gf * buf;
        } else {
            g = ll + (double)(uint64_t)((18.0 * Pt + frozen16) / N);
            h = (double)s->largest_module * 4.0 * per_node * buf;
        }
    }
    *gpu = (uint64_t)g;
    *cpu = (uint64_t)h;
    return true;
}
