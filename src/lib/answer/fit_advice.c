/* fit_advice.c — when it does not fit: the changes that would make it fit,
 * each re-checked by an estimate run, ranked from least to most cost. */
#include "answer/fit_internal.h"
#include "device/device.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Cost ranks (docs/memory-model.md, "Fit and advice"). */
enum { COST_FREE = 0, COST_SMALL = 1, COST_QUALITY = 2, COST_METHOD = 3, COST_SPEED = 4, COST_MONEY = 5 };

typedef struct advisor {
    vf__fit_ctx *c;
    const vf_estimate_opts *base;
    const vf_fit_opts *opts;
    vf_fit *out;
    uint32_t n; /* GPUs now */
} advisor;

static void add(advisor *a, const vf_estimate_opts *o, uint64_t gpu_bytes, uint32_t gpus, int cost,
                const char *change, const char *detail)
{
    if (a->out->n_suggestions >= VF_MAX_SUGGESTIONS)
        return;
    uint64_t needed = 0;
    int r = vf__fit_try(a->c, o, gpu_bytes, &needed, NULL);
    if (r < 0)
        return; /* the change is not valid for this model/runtime */
    uint64_t need = vf__fit_needed(a->c, o, gpu_bytes);
    if (need)
        needed = need;
    vf_suggestion *s = &a->out->suggestions[a->out->n_suggestions++];
    memset(s, 0, sizeof *s);
    snprintf(s->change, sizeof s->change, "%s", change);
    snprintf(s->detail, sizeof s->detail, "%s", detail);
    s->cost = cost;
    s->needed_bytes = needed;
    s->gpu_bytes = gpu_bytes;
    s->fits = r == 1;
    s->opts = *o;
    s->gpus = gpus;
    s->needs = vf__change_needs(a->base, o, a->opts->gpu);
}

/* add() on the GPUs asked for, with the change spelled by a format */
static VF_PRINTF(5, 6) void addf(advisor *a, const vf_estimate_opts *o, int cost, const char *detail,
                                 const char *fmt, ...)
{
    char ch[224];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ch, sizeof ch, fmt, ap);
    va_end(ap);
    add(a, o, a->opts->gpu_bytes, a->n, cost, ch, detail);
}

static double weight_bits(const advisor *a)
{
    if (a->out->est.weight_bits > 0)
        return a->out->est.weight_bits;
    vf_model_totals t;
    vf_model_totals_get(a->c->m, &t);
    return t.params ? 8.0 * (double)t.bytes / (double)t.params : 16.0;
}


/* The inference changes the advice offers per engine, in cost order: one
 * table that the single suggestions and the combined plan both read. bits is
 * what the format stores per weight with its scales (Q8_0 8.5, Q4_K 4.5,
 * AWQ 4.25 at group 128, NF4 4.13 with double quantization, fp8 and int8 8). */
typedef struct weight_step {
    const char *format, *flag, *detail;
    double bits;
    int cost;
} weight_step;

typedef struct engine_ladder {
    const char *kv, *kv_flag, *kv_detail; /* a quantized KV cache */
    weight_step w[2];                     /* an 8-bit, then a 4-bit weight format */
} engine_ladder;

enum { LADDER_LLAMACPP, LADDER_VLLM, LADDER_TORCH };
static const engine_ladder ladders[] = {
    [LADDER_LLAMACPP] = {"q8_0", "--kv q8_0 --flash-attn on", "KV cache at 8.5 bits: half the cache, a small quality effect",
                         {{"q8_0", "--weights q8_0", "Q8_0 weights: close to the 16-bit model", 8.5, COST_QUALITY},
                          {"q4_k", "--weights q4_k", "Q4_K weights: a visible quality loss, larger on small models", 4.5,
                           COST_METHOD}}},
    [LADDER_VLLM] = {"fp8", "--kv fp8",
                     "KV cache in fp8: half the cache, a small quality effect; fast on Ada/Hopper and newer",
                     {{"fp8", "--weights fp8", "fp8 weights: close to the 16-bit model; fast on Ada/Hopper and newer", 8,
                       COST_QUALITY},
                      {"awq", "--weights awq", "4-bit AWQ weights: a quality loss, needs an AWQ checkpoint of the model",
                       4.25, COST_METHOD}}},
    [LADDER_TORCH] = {"fp8", "--kv fp8",
                      "KV cache in fp8: half the cache, a small quality effect; fast on Ada/Hopper and newer",
                      {{"int8", "--weights int8", "bitsandbytes int8: close to 16-bit quality, slower matmuls", 8,
                        COST_QUALITY},
                       {"nf4", "--weights nf4", "bitsandbytes 4-bit NF4: a quality loss, slower matmuls", 4.13,
                        COST_METHOD}}},
};

static const engine_ladder *ladder_of(const vf_estimate_opts *o)
{
    return &ladders[o->runtime == VF_RUNTIME_LLAMACPP ? LADDER_LLAMACPP
                    : o->runtime == VF_RUNTIME_VLLM   ? LADDER_VLLM
                                                      : LADDER_TORCH];
}

/* Only formats clearly smaller than the weights are now (Q4_K_M is not re-priced to Q4_K). */
static bool weights_shrink(const advisor *a, const weight_step *w) { return weight_bits(a) > w->bits * 1.2; }

static bool kv_is_16bit(const vf_estimate_opts *o)
{
    const char *k = o->infer.kv_dtype;
    return !k[0] || !strcasecmp(k, "f16") || !strcasecmp(k, "bf16") || !strcasecmp(k, "fp16") ||
           !strcasecmp(k, "auto") || !strcasecmp(k, "f16,f16");
}

/* The host memory a placement needs (llama.cpp: the weights and buffers it
 * keeps on the CPU), for the advice's detail. */
static double host_gib(advisor *a, const vf_estimate_opts *o)
{
    if (vf__fit_try(a->c, o, a->opts->gpu_bytes, NULL, NULL) < 0)
        return 0;
    return (double)a->c->scratch->host_bytes / (double)((uint64_t)1 << 30);
}

/* The most -ngl in [0, all] that fits with o's other knobs; -1 when none does. */
static int32_t most_layers(advisor *a, vf_estimate_opts *o, int32_t all)
{
    int32_t lo = -1, hi = all + 1; /* fits(lo) (or none), !fits(hi) */
    while (all > 0 && hi - lo > 1) {
        int32_t mid = lo + (hi - lo) / 2;
        o->infer.n_gpu_layers = mid;
        if (vf__fit_try(a->c, o, a->opts->gpu_bytes, NULL, NULL) == 1)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* llama.cpp's own --fit for a MoE model (common/fit.cpp): the routed
 * experts go to host memory before whole layers do. The fewest blocks whose
 * experts leave the GPU (--n-cpu-moe N, the first N, as the flag places
 * them; --fit itself fills full layers front to back, the same count); when
 * even all of them do not make it fit, the dense part of the most layers
 * (--cpu-moe with -ngl), as --fit's dense-only fill back to front. */
static bool advise_moe_offload(advisor *a)
{
    const vf_estimate_opts *b = a->base;
    const vf_hparams *hp = vf_model_hparams(a->c->m);
    if (!hp || hp->n_experts < 2 || !hp->n_layers || b->n_cpu_moe < 0)
        return false;
    int32_t L = (int32_t)hp->n_layers;
    vf_estimate_opts o = *b;
    o.n_cpu_moe = -1;
    char detail[192];
    if (vf__fit_try(a->c, &o, a->opts->gpu_bytes, NULL, NULL) == 1) {
        int32_t lo = b->n_cpu_moe > 0 ? b->n_cpu_moe : 0, hi = L; /* !fits(lo), fits(hi) */
        while (hi - lo > 1) {
            int32_t mid = lo + (hi - lo) / 2;
            o.n_cpu_moe = mid;
            if (vf__fit_try(a->c, &o, a->opts->gpu_bytes, NULL, NULL) == 1)
                hi = mid;
            else
                lo = mid;
        }
        o.n_cpu_moe = hi >= L ? -1 : hi;
        snprintf(detail, sizeof detail, "experts run from host memory, attention on the GPU: slower decoding; "
                                        "%.1f GiB of host memory", host_gib(a, &o));
        if (hi >= L)
            add(a, &o, a->opts->gpu_bytes, a->n, COST_SPEED, "--cpu-moe", detail);
        else
            addf(a, &o, COST_SPEED, detail, "--n-cpu-moe %d", hi);
        return true;
    }
    int32_t ngl = most_layers(a, &o, L + 1);
    if (ngl < 1)
        return false;
    o.infer.n_gpu_layers = ngl;
    snprintf(detail, sizeof detail, "every expert and %d layers on the CPU: much slower decoding; %.1f GiB of host "
                                    "memory", L + 1 - ngl, host_gib(a, &o));
    addf(a, &o, COST_SPEED, detail, "--cpu-moe --n-gpu-layers %d", ngl);
    return true;
}

static void advise_inference(advisor *a)
{
    const vf_estimate_opts *b = a->base;
    vf_estimate_opts o;
    vf_fit *f = a->out;
    bool llama = b->runtime == VF_RUNTIME_LLAMACPP, vllm = b->runtime == VF_RUNTIME_VLLM;

    if (llama && b->infer.flash_attn != 1) {
        o = *b;
        o.infer.flash_attn = 1;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_FREE, "--flash-attn on",
            "no quality change; smaller attention buffers where the backend has the kernel");
    } else if (!llama && !vllm && b->infer.attn != VF_ATTN_FLASH) {
        o = *b;
        o.infer.attn = VF_ATTN_FLASH;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_FREE, "--attn flash",
            "no quality change; needs flash-attn kernels for the GPU (Ampere or newer)");
    }
    const engine_ladder *L = ladder_of(b);
    if (kv_is_16bit(b)) {
        o = *b;
        snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "%s", L->kv);
        if (llama)
            o.infer.flash_attn = 1; /* a quantized V cache needs flash attention in llama.cpp */
        add(a, &o, a->opts->gpu_bytes, a->n, COST_SMALL, L->kv_flag, L->kv_detail);
    }
    if (f->max_batch >= 1 && f->max_batch < f->est.batch) {
        o = *b;
        vf__set_batch(&o, f->max_batch);
        addf(a, &o, COST_SMALL, "fewer sequences at once: lower throughput", "--batch %llu",
             (unsigned long long)f->max_batch);
    }
    if (f->max_context >= 1 && f->max_context < f->est.context) {
        o = *b;
        vf__set_context(&o, f->max_context);
        addf(a, &o, COST_QUALITY, "longer prompts and answers are refused or cut", "--context %llu",
             (unsigned long long)f->max_context);
    }
    for (size_t i = 0; i < 2; i++)
        if (weights_shrink(a, &L->w[i])) {
            o = *b;
            snprintf(o.weights, sizeof o.weights, "%s", L->w[i].format);
            add(a, &o, a->opts->gpu_bytes, a->n, L->w[i].cost, L->w[i].flag, L->w[i].detail);
        }
    /* partial offload: for a MoE model its experts first, as llama.cpp's
     * --fit (whole layers only where that does not fit); else the most layers */
    if (llama && !advise_moe_offload(a)) {
        const vf_hparams *hp = vf_model_hparams(a->c->m);
        int32_t all = hp && hp->n_layers ? (int32_t)hp->n_layers + 1 : 0;
        o = *b;
        int32_t lo = most_layers(a, &o, all - 1);
        if (lo >= 0) {
            o.infer.n_gpu_layers = lo;
            char detail[160];
            snprintf(detail, sizeof detail, "layers on the CPU run at host memory speed: much slower decoding; %.1f "
                                            "GiB of host memory", host_gib(a, &o));
            addf(a, &o, COST_SPEED, detail, "--n-gpu-layers %d (the rest on the CPU)", lo);
        }
    }
}

static void advise_training(advisor *a)
{
    const vf_estimate_opts *b = a->base;
    vf_estimate_opts o;
    vf_fit *f = a->out;
    const vf_train_opts *t = &b->train;

    if (b->infer.attn != VF_ATTN_FLASH) {
        o = *b;
        o.infer.attn = VF_ATTN_FLASH;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_FREE, "--attn flash",
            "no quality change; attention scores are not stored");
    }
    /* the caching allocator's fragmentation: expandable segments give a
     * split segment's free pages back under pressure (CUDACachingAllocator
     * unmap_block), a launch setting; one the user chose stays theirs */
    size_t cl = strlen(b->alloc_conf);
    if (!strstr(b->alloc_conf, "expandable_segments") && cl + 26 < sizeof o.alloc_conf) {
        o = *b;
        snprintf(o.alloc_conf + cl, sizeof o.alloc_conf - cl, "%sexpandable_segments:True", cl ? "," : "");
        addf(a, &o, COST_FREE, "no quality change; PYTORCH_CUDA_ALLOC_CONF: free pages of split segments go back "
             "under pressure", "--alloc-conf %s", o.alloc_conf);
    }
    /* --kbit-prepare already checkpoints every block unless told not to
     * (prepare_model_for_kbit_training's default) */
    bool full = t->recompute == VF_RECOMPUTE_FULL ||
                (t->recompute == VF_RECOMPUTE_NONE && t->kbit_prepare && !t->kbit_no_ckpt && t->qlora[0]);
    if (!full) {
        o = *b;
        o.train.kbit_no_ckpt = false;
        o.train.recompute = VF_RECOMPUTE_FULL;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_SMALL, "--grad-checkpoint full",
            "activations recomputed in the backward pass: about one more forward pass of compute");
    }
    if (f->max_batch >= 1 && f->max_batch < f->est.batch) {
        o = *b;
        uint64_t mb = t->micro_batch ? t->micro_batch : 1, ga = t->grad_accum ? t->grad_accum : 1;
        uint64_t keep = (mb * ga + f->max_batch - 1) / f->max_batch;
        vf__set_batch(&o, f->max_batch);
        o.train.grad_accum = keep > UINT32_MAX ? UINT32_MAX : (uint32_t)keep;
        addf(a, &o, COST_SMALL, "same global batch in more, smaller steps: slower", "--batch %llu --grad-accum %llu",
             (unsigned long long)f->max_batch, (unsigned long long)keep);
    }
    if (t->optimizer == VF_OPT_ADAMW || t->optimizer == VF_OPT_ADAM) {
        o = *b;
        o.train.optimizer = VF_OPT_ADAMW_8BIT;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_SMALL, "--optimizer adamw-8bit",
            "8-bit optimizer states (bitsandbytes): usually the same quality");
    }
    if (f->max_context >= 1 && f->max_context < f->est.context) {
        o = *b;
        vf__set_context(&o, f->max_context);
        addf(a, &o, COST_QUALITY, "shorter training sequences", "--context %llu", (unsigned long long)f->max_context);
    }
    if (a->n > 1 && t->zero < 3 && t->fsdp != 1) {
        o = *b;
        o.train.zero = 3;
        o.train.fsdp = 0;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_QUALITY, "--zero 3",
            "parameters, gradients and optimizer states sharded: more communication");
    }
    if (!t->lora_rank) {
        o = *b;
        o.train.lora_rank = 16;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_METHOD, "--lora-rank 16",
            "LoRA adapters of rank 16 trained, base weights frozen: a different method, often close in quality");
    }
    if (!t->qlora[0]) {
        o = *b;
        o.train.lora_rank = t->lora_rank ? t->lora_rank : 16;
        snprintf(o.train.qlora, sizeof o.train.qlora, "nf4-dq");
        add(a, &o, a->opts->gpu_bytes, a->n, COST_METHOD, "--qlora nf4-dq --lora-rank 16",
            "QLoRA: 4-bit frozen base weights, LoRA adapters: a quality cost and slower steps");
    }
    if (t->offload == VF_OFFLOAD_NONE) {
        o = *b;
        o.train.offload = VF_OFFLOAD_OPTIMIZER;
        bool raise = o.train.zero < 2 && o.train.fsdp == 0; /* DeepSpeed offloads from ZeRO stages 1-3 */
        if (raise)
            o.train.zero = 2;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_SPEED, raise ? "--zero 2 --offload optimizer" : "--offload optimizer",
            "optimizer states and step on the CPU (ZeRO-Offload): host memory and PCIe bound steps");
    }
    if (t->offload != VF_OFFLOAD_BOTH) {
        o = *b;
        o.train.offload = VF_OFFLOAD_BOTH;
        o.train.zero = 3;
        o.train.fsdp = 0;
        add(a, &o, a->opts->gpu_bytes, a->n, COST_SPEED,
            "--zero 3 --offload both", "parameters and optimizer states on the CPU (ZeRO-Infinity): much slower");
    }
}

/* When no single change fits: the cheap changes applied together, in cost
 * order, up to the first set that fits (and if none does, that set on the
 * fewest GPUs). Each step is one estimate run, like every suggestion. */
typedef struct step {
    int cost;
    const char *flag;
} step;

/* Applies cheap change k (in cost order) to o when it applies; NULL flag when not. */
static step apply_step(const advisor *a, int k, vf_estimate_opts *o)
{
    bool train = o->mode == VF_MODE_TRAINING, llama = o->runtime == VF_RUNTIME_LLAMACPP;
    bool vllm = o->runtime == VF_RUNTIME_VLLM;
    step st = {-1, NULL};
    if (!train) {
        switch (k) {
        case 0:
            if (llama && o->infer.flash_attn != 1) {
                o->infer.flash_attn = 1;
                st = (step){COST_FREE, "--flash-attn on"};
            } else if (!llama && !vllm && o->infer.attn != VF_ATTN_FLASH) {
                o->infer.attn = VF_ATTN_FLASH;
                st = (step){COST_FREE, "--attn flash"};
            }
            break;
        case 1:
            if (kv_is_16bit(o)) {
                snprintf(o->infer.kv_dtype, sizeof o->infer.kv_dtype, "%s", ladder_of(o)->kv);
                if (llama)
                    o->infer.flash_attn = 1;
                st = (step){COST_SMALL, ladder_of(o)->kv_flag};
            }
            break;
        case 2:
        case 3: {
            const weight_step *w = &ladder_of(o)->w[k - 2];
            if (weights_shrink(a, w)) {
                snprintf(o->weights, sizeof o->weights, "%s", w->format);
                st = (step){w->cost, w->flag};
            }
            break;
        }
        default:
            break;
        }
        return st;
    }
    switch (k) {
    case 0:
        if (o->infer.attn != VF_ATTN_FLASH) {
            o->infer.attn = VF_ATTN_FLASH;
            st = (step){COST_FREE, "--attn flash"};
        }
        break;
    case 1:
        if (o->train.recompute != VF_RECOMPUTE_FULL) {
            o->train.recompute = VF_RECOMPUTE_FULL;
            st = (step){COST_SMALL, "--grad-checkpoint full"};
        }
        break;
    case 2:
        if (o->train.optimizer == VF_OPT_ADAMW || o->train.optimizer == VF_OPT_ADAM) {
            o->train.optimizer = VF_OPT_ADAMW_8BIT;
            st = (step){COST_SMALL, "--optimizer adamw-8bit"};
        }
        break;
    case 3:
        if (a->n > 1 && o->train.zero < 3 && o->train.fsdp != 1) {
            o->train.zero = 3;
            o->train.fsdp = 0;
            st = (step){COST_QUALITY, "--zero 3"};
        }
        break;
    case 4:
        if (!o->train.lora_rank) {
            o->train.lora_rank = 16;
            st = (step){COST_METHOD, "--lora-rank 16"};
        }
        break;
    case 5:
        if (!o->train.qlora[0]) {
            snprintf(o->train.qlora, sizeof o->train.qlora, "nf4-dq");
            if (!o->train.lora_rank)
                o->train.lora_rank = 16;
            st = (step){COST_METHOD, "--qlora nf4-dq"};
        }
        break;
    case 6:
        if (o->train.offload == VF_OFFLOAD_NONE) {
            o->train.offload = VF_OFFLOAD_OPTIMIZER;
            bool raise = o->train.zero < 2 && o->train.fsdp == 0;
            if (raise)
                o->train.zero = 2;
            st = (step){COST_SPEED, raise ? "--zero 2 --offload optimizer" : "--offload optimizer"};
        }
        break;
    default:
        break;
    }
    return st;
}

#define N_STEPS 7

/* The base knobs with the chosen steps applied; the flags and the top cost. */
static void apply_set(const advisor *a, const bool *use, vf_estimate_opts *o, char *ch, size_t n, int *cost)
{
    *o = *a->base;
    ch[0] = '\0';
    *cost = 0;
    for (int k = 0; k < N_STEPS; k++) {
        if (!use[k])
            continue;
        step st = apply_step(a, k, o);
        if (!st.flag)
            continue;
        *cost = st.cost > *cost ? st.cost : *cost;
        size_t len = strlen(ch);
        snprintf(ch + len, n - len, "%s%s", len ? " " : "", st.flag);
    }
}

/* More GPUs do not help as asked (per-GPU activations, unsharded states):
 * the free and small changes, on the fewest GPUs. */
static void scale_cheap(advisor *a)
{
    if (a->out->min_gpus)
        return;
    bool use[N_STEPS] = {0};
    for (int k = 0; k < N_STEPS; k++) {
        vf_estimate_opts one = *a->base;
        step st = apply_step(a, k, &one);
        use[k] = st.flag && st.cost <= COST_SMALL;
    }
    vf_estimate_opts o;
    char ch[224];
    int cost;
    apply_set(a, use, &o, ch, sizeof ch, &cost);
    if (!ch[0])
        return;
    vf__gpu_plan p;
    uint32_t per_node = vf__fit_per_node(a->opts);
    if (!vf__fit_min_gpus(a->c, &o, a->opts->gpu_bytes, per_node, &p) || p.gpus <= a->n)
        return;
    vf__fit_apply_plan(&o, &p);
    size_t len = strlen(ch);
    snprintf(ch + len, sizeof ch - len, " on %u GPUs (%s)", p.gpus, p.words);
    add(a, &o, a->opts->gpu_bytes, p.gpus, COST_MONEY, ch, "the model as it is, with cheap changes, on more devices");
}

static void combine(advisor *a)
{
    scale_cheap(a);
    for (size_t i = 0; i < a->out->n_suggestions; i++)
        if (a->out->suggestions[i].fits && a->out->suggestions[i].cost < COST_MONEY)
            return;
    bool use[N_STEPS] = {0};
    vf_estimate_opts o;
    char ch[224];
    int cost, nsteps = 0;
    bool found = false;
    for (int k = 0; k < N_STEPS && !found; k++) {
        vf_estimate_opts probe = *a->base;
        bool tmp[N_STEPS];
        memcpy(tmp, use, sizeof tmp);
        tmp[k] = true;
        apply_set(a, tmp, &probe, ch, sizeof ch, &cost);
        vf_estimate_opts one = *a->base;
        if (!apply_step(a, k, &one).flag)
            continue;
        use[k] = true;
        nsteps++;
        found = nsteps >= 2 && vf__fit_try(a->c, &probe, a->opts->gpu_bytes, NULL, NULL) == 1;
    }
    if (!nsteps)
        return;
    if (found) {
        /* drop what is not needed, most expensive first kept: try removing each step */
        for (int k = 0; k < N_STEPS; k++) {
            if (!use[k])
                continue;
            use[k] = false;
            apply_set(a, use, &o, ch, sizeof ch, &cost);
            if (vf__fit_try(a->c, &o, a->opts->gpu_bytes, NULL, NULL) != 1)
                use[k] = true;
        }
        apply_set(a, use, &o, ch, sizeof ch, &cost);
        add(a, &o, a->opts->gpu_bytes, a->n, cost, ch, "these changes together; each one's cost applies");
        return;
    }
    /* none fits on these GPUs: the combined changes on the fewest of them,
     * then without each change that count does not need */
    apply_set(a, use, &o, ch, sizeof ch, &cost);
    vf__gpu_plan p;
    uint32_t per_node = vf__fit_per_node(a->opts);
    if (!vf__fit_min_gpus(a->c, &o, a->opts->gpu_bytes, per_node, &p) || p.gpus <= a->n ||
        (a->out->min_gpus && p.gpus >= a->out->min_gpus))
        return;
    for (int k = 0; k < N_STEPS; k++) {
        if (!use[k])
            continue;
        use[k] = false;
        vf__gpu_plan q;
        apply_set(a, use, &o, ch, sizeof ch, &cost);
        if (!vf__fit_min_gpus(a->c, &o, a->opts->gpu_bytes, per_node, &q) || q.gpus > p.gpus)
            use[k] = true;
        else
            p = q;
    }
    apply_set(a, use, &o, ch, sizeof ch, &cost);
    vf__fit_apply_plan(&o, &p);
    size_t len = strlen(ch);
    snprintf(ch + len, sizeof ch - len, "%s%u GPUs (%s)", len ? " on " : "", p.gpus, p.words);
    add(a, &o, a->opts->gpu_bytes, p.gpus, COST_MONEY, ch, "these changes together, on more devices");
}

/* 0 a device with its own memory, 1 one whose memory the CPU shares, 2 Apple's. */
static int shared_kind(const vf_gpu *g)
{
    if (g && g->vendor && !strcmp(g->vendor, "apple"))
        return 2;
    return vf__gpu_unified(g) ? 1 : 0;
}

static int cmp_sugg(const void *x, const void *y)
{
    const vf_suggestion *a = x, *b = y;
    if (a->cost != b->cost)
        return a->cost < b->cost ? -1 : 1;
    if (a->fits != b->fits)
        return a->fits ? -1 : 1;
    if (a->needed_bytes != b->needed_bytes)
        return a->needed_bytes < b->needed_bytes ? -1 : 1;
    return 0;
}

void vf__fit_advise(vf__fit_ctx *c, const vf_estimate_opts *o, const vf_fit_opts *opts, vf_fit *out)
{
    advisor a = {.c = c, .base = o, .opts = opts, .out = out, .n = opts->gpus ? opts->gpus : 1};
    if (o->mode == VF_MODE_TRAINING)
        advise_training(&a);
    else
        advise_inference(&a);
    combine(&a);

    /* more GPUs of this kind */
    if (out->min_gpus > a.n) {
        vf_estimate_opts x = *o;
        vf__gpu_plan p = {.gpus = out->min_gpus, .tp = out->min_tp, .pp = out->min_pp, .dp = out->min_dp,
                          .zero = o->train.zero};
        if (o->mode == VF_MODE_TRAINING && out->min_dp > 1 && o->train.zero < 3 && o->train.fsdp != 1)
            p.zero = 3;
        vf__fit_apply_plan(&x, &p);
        char ch[224];
        snprintf(ch, sizeof ch, "%u GPUs (%s)", out->min_gpus, out->parallelism);
        add(&a, &x, opts->gpu_bytes, out->min_gpus, COST_MONEY, ch, "more devices of the same kind");
    }
    /* the smallest catalog GPU that holds it as asked */
    /* a device of another kind (Apple, memory shared with the CPU) only for one of that kind */
    int asked = shared_kind(opts->gpu);
    const vf_gpu *best = NULL;
    for (size_t i = 0; i < vf_gpu_count(); i++) {
        const vf_gpu *g = vf_gpu_get(i);
        int kind = shared_kind(g);
        if (g->memory_bytes <= opts->gpu_bytes || (kind && kind != asked))
            continue;
        if (best && g->memory_bytes >= best->memory_bytes)
            continue;
        vf_estimate_opts on = *o; /* priced as that device (its context, workspaces) */
        vf__fit_name_gpu(&on, g);
        if (vf__fit_try(c, &on, g->memory_bytes, NULL, NULL) == 1)
            best = g;
    }
    if (best) {
        char ch[224];
        if (a.n > 1)
            snprintf(ch, sizeof ch, "%s x%u", best->name, a.n);
        else
            snprintf(ch, sizeof ch, "%s", best->name);
        vf_estimate_opts on = *o;
        vf__fit_name_gpu(&on, best);
        add(&a, &on, best->memory_bytes, a.n, COST_MONEY, ch, "a GPU with more memory");
    }
    qsort(out->suggestions, out->n_suggestions, sizeof out->suggestions[0], cmp_sugg);
}
