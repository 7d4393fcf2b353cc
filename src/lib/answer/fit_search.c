/* fit_search.c — the searches fit and its advice share: one probe of the
 * estimate against a device, the longest context and largest batch that fit
 * (binary search: the estimate grows with both), the fewest GPUs and the
 * parallelism that makes it fit, and the knobs for "GxN". */
#include "answer/fit_internal.h"

#include <stdio.h>
#include <string.h>

#define CONTEXT_CAP ((uint64_t)1 << 24)   /* when the model states no limit */
#define BATCH_CAP ((uint64_t)1 << 16)
#define GPUS_CAP 4096u

/* llama.cpp's --tensor-split for n devices in equal shares (its layer split);
 * none past VF_MAX_SPLIT devices, which llama.cpp then shares out itself. */
void vf__split_layers_evenly(vf_estimate_opts *o, uint32_t n)
{
    o->infer.n_split = n <= VF_MAX_SPLIT ? n : 0;
    for (uint32_t i = 0; i < o->infer.n_split; i++)
        o->infer.tensor_split[i] = 1.0;
}

/* The device's name for the memory model, which prices the CUDA context,
 * cuBLAS workspaces, kernels and vLLM's defaults by the device's generation. */
void vf__fit_name_gpu(vf_estimate_opts *o, const vf_gpu *g)
{
    if (!g || !g->name)
        return;
    snprintf(o->infer.gpu_name, sizeof o->infer.gpu_name, "%s", g->name);
}

int vf__fit_try(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, uint64_t *needed, vf_error *err)
{
    vf_estimate_opts x = *o;
    x.gpu_bytes = gpu_bytes;
    vf_status st = c->fn(c->m, &x, c->scratch, err);
    if (st != VF_OK)
        return -(int)st;
    c->runs++;
    /* the decision quantity: what the device holds (docs/design.md §3) and the
     * margin the runtime's mechanism keeps free beside it; an estimator that
     * does not fill device_bytes (a stub) is taken at per_gpu_bytes */
    uint64_t dev = c->scratch->device_bytes ? c->scratch->device_bytes : c->scratch->per_gpu_bytes;
    uint64_t margin = c->scratch->margin_bytes;
    dev = dev > UINT64_MAX - margin ? UINT64_MAX : dev + margin;
    if (needed)
        *needed = dev;
    return c->scratch->starts && dev <= gpu_bytes ? 1 : 0;
}

/* fits() on the steady envelope of a vLLM estimate: device_bytes plus what
 * the pool's whole blocks left unused (size_round_bytes), which grows as
 * gpu_memory_utilization x the device, so the verdict is monotone in it; *dev
 * is the plain device figure (+ margin). -status on an estimate error. */
static int fits_envelope(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, uint64_t *dev)
{
    int r = vf__fit_try(c, o, gpu_bytes, dev, NULL);
    if (r < 0)
        return r;
    uint64_t env = vf__sadd(*dev, c->scratch->size_round_bytes);
    return c->scratch->starts && env <= gpu_bytes ? 1 : 0;
}

/*
 * vLLM's smallest device: every device from it up fits. The plain verdict is
 * not monotone: its pool takes whole blocks of the budget, so one byte more
 * of device can add a block and leave less free (a sawtooth of one block's
 * height). Its envelope is monotone and implies a fit, so bisect that (after
 * one secant step: it is linear once the engine starts), then walk down: at a
 * fitting N, every device in [device(N) + margin, N] fits as far as the size
 * goes, device_bytes never growing as the device shrinks, so N drops to that
 * while the engine still starts there (its checks are monotone: bisected).
 */
static uint64_t vllm_needed(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t probe)
{
    uint64_t lo = (uint64_t)1 << 20, hi = (uint64_t)1 << 44, d = 0;
    if (fits_envelope(c, o, hi, &d) != 1)
        return 0;
    if (fits_envelope(c, o, lo, &d) == 1)
        return lo;
    /* secant on the envelope's slack from two starting devices; every probe
     * narrows the bracket, the envelope being monotone */
    uint64_t g[2] = {probe, probe * 2}, env[2] = {0, 0};
    bool started = true;
    for (int i = 0; i < 2; i++) {
        int r = fits_envelope(c, o, g[i], &env[i]);
        if (r < 0)
            return 0;
        started = started && c->scratch->starts;
        env[i] = vf__sadd(env[i], c->scratch->size_round_bytes);
        if (r == 1 && g[i] < hi)
            hi = g[i];
        if (r == 0 && g[i] > lo)
            lo = g[i];
    }
    if (started) {
        double s = ((double)env[1] - (double)env[0]) / (double)(g[1] - g[0]);
        double x = s < 1 ? ((double)env[0] - s * (double)g[0]) / (1 - s) : 0;
        /* the floor of utilization x bytes: a byte or two either side */
        for (uint64_t k = 0, at = (uint64_t)x; x > (double)lo && x < (double)hi && k < 4 && at < hi; k++, at++) {
            if (fits_envelope(c, o, at, &d) == 1) {
                hi = at;
                if (at > lo + 2 && fits_envelope(c, o, at - 2, &d) == 0)
                    lo = at - 2;
                break;
            }
            lo = at; /* starts checks past the guess (a request's KV): bisect from here */
        }
    }
    while (hi - lo > 1) { /* envelope: fits(hi), !fits(lo) */
        uint64_t mid = lo + (hi - lo) / 2;
        if (fits_envelope(c, o, mid, &d) == 1)
            hi = mid;
        else
            lo = mid;
    }
    uint64_t n = hi;
    for (int guard = 0; guard < 4096; guard++) { /* fits on [n, inf) */
        if (vf__fit_try(c, o, n, &d, NULL) != 1)
            break; /* not reached: n fitted when it was taken */
        uint64_t floor_n = d < n ? d : n - 1; /* below it the size itself fails, unless a block goes */
        int r = vf__fit_try(c, o, floor_n, NULL, NULL);
        if (r == 1) {
            n = floor_n;
            continue;
        }
        if (floor_n == n - 1)
            break;
        /* fails at device(n) + margin only if the engine does not start:
         * bisect its start-up checks over (floor_n, n] */
        uint64_t a = floor_n, b = n;
        while (b - a > 1) {
            uint64_t mid = a + (b - a) / 2;
            if (vf__fit_try(c, o, mid, NULL, NULL) == 1)
                b = mid;
            else
                a = mid;
        }
        n = b;
        break;
    }
    return n;
}

/*
 * The memory a configuration needs per device: the estimate's device_bytes
 * when that does not depend on the device's size; else (vLLM sizes its KV
 * pool from the device) the smallest device memory from which on every size
 * fits (vllm_needed), or, for a training replay, the smallest on which it
 * fits by bisection. The device's class (vLLM's defaults) stays that of the
 * device asked: only its memory varies. 0 when no size up to 16 TiB fits.
 */
uint64_t vf__fit_needed(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes)
{
    return vf__fit_needed_ex(c, o, gpu_bytes, NULL);
}

uint64_t vf__fit_needed_ex(vf__fit_ctx *c, const vf_estimate_opts *base, uint64_t gpu_bytes, bool *bisected)
{
    vf_estimate_opts x = *base;
    const vf_estimate_opts *o = &x;
    if (!x.infer.gpu_class_bytes)
        x.infer.gpu_class_bytes = gpu_bytes ? gpu_bytes : base->gpu_bytes;
    uint64_t a = 0, b = 0;
    uint64_t probe = gpu_bytes ? gpu_bytes : (uint64_t)80 << 30;
    int ra = vf__fit_try(c, o, probe, &a, NULL);
    int rb = vf__fit_try(c, o, probe * 2, &b, NULL);
    if (bisected)
        *bisected = !(ra >= 0 && rb >= 0 && a == b);
    if (ra >= 0 && rb >= 0 && a == b)
        return a;
    if (o->runtime == VF_RUNTIME_VLLM && o->mode == VF_MODE_INFERENCE)
        return vllm_needed(c, o, probe);
    uint64_t lo = (uint64_t)1 << 20, hi = (uint64_t)1 << 44;
    if (vf__fit_try(c, o, hi, NULL, NULL) != 1)
        return 0;
    if (vf__fit_try(c, o, lo, NULL, NULL) == 1)
        return lo;
    /* a training verdict is a replay on the device's size (one full step
     * each probe): bisected to 64 MiB, rounded up (fits(hi) holds) */
    uint64_t res = o->mode == VF_MODE_TRAINING ? (uint64_t)64 << 20 : 1;
    while (hi - lo > res) { /* fits(hi), !fits(lo) */
        uint64_t mid = lo + (hi - lo) / 2;
        if (vf__fit_try(c, o, mid, NULL, NULL) == 1)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}


/* Fit at a candidate: errors (an impossible split, a context past what the
 * model allows) count as "does not fit". */
static bool fits_at(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes)
{
    return vf__fit_try(c, o, gpu_bytes, NULL, NULL) == 1;
}

void vf__set_context(vf_estimate_opts *o, uint64_t ctx)
{
    if (o->mode == VF_MODE_TRAINING) {
        o->train.seq_len = ctx;
    } else {
        o->infer.context = ctx;
        if (o->runtime == VF_RUNTIME_VLLM)
            o->infer.max_model_len = ctx;
    }
}

void vf__set_batch(vf_estimate_opts *o, uint64_t b)
{
    if (o->mode == VF_MODE_TRAINING) {
        o->train.micro_batch = b;
    } else {
        o->infer.batch = b;
        if (o->runtime == VF_RUNTIME_VLLM)
            o->infer.max_num_seqs = b;
        if (o->runtime == VF_RUNTIME_LLAMACPP) {
            /* llama.cpp's context (-c) is shared by its -np slots: keep each
             * slot's share when the slots change */
            uint64_t slots = o->infer.parallel ? o->infer.parallel : 1;
            uint64_t per_seq = (o->infer.context ? o->infer.context : 4096) / slots;
            if (!per_seq)
                per_seq = 1;
            uint64_t total;
            o->infer.parallel = b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
            o->infer.context = vf__mul_overflow(per_seq, b, &total) ? UINT64_MAX : total;
        }
    }
}

/*
 * Largest v in [1, cap] with pred(v), assuming pred is monotone (true up to a
 * point, false after). Returns 0 when pred(1) is false; *capped when pred(cap).
 */
static uint64_t search_max(vf__fit_ctx *c, const vf_estimate_opts *base, uint64_t gpu_bytes, uint64_t cap,
                           uint64_t start, void (*set)(vf_estimate_opts *, uint64_t), bool *capped)
{
    vf_estimate_opts o = *base;
    *capped = false;
    set(&o, 1);
    if (!fits_at(c, &o, gpu_bytes))
        return 0;
    uint64_t lo = 1, hi; /* invariant: fits(lo), !fits(hi) (hi = cap + 1 means unknown) */
    uint64_t probe = start > 1 && start <= cap ? start : 2;
    /* gallop upwards from the current value */
    for (;;) {
        if (probe > cap)
            probe = cap;
        set(&o, probe);
        if (!fits_at(c, &o, gpu_bytes)) {
            hi = probe;
            break;
        }
        lo = probe;
        if (probe == cap) {
            *capped = true;
            return cap;
        }
        probe = probe > cap / 2 ? cap : probe * 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        set(&o, mid);
        if (fits_at(c, &o, gpu_bytes))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

uint64_t vf__fit_max_context(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, bool *capped)
{
    const vf_hparams *hp = vf_model_hparams(c->m);
    uint64_t cap = hp && hp->context_length ? hp->context_length : CONTEXT_CAP;
    return search_max(c, o, gpu_bytes, cap, c->base_context, vf__set_context, capped);
}

uint64_t vf__fit_max_batch(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, bool *capped)
{
    return search_max(c, o, gpu_bytes, BATCH_CAP, c->base_batch, vf__set_batch, capped);
}

/* Tensor-parallel sizes a model allows: the ones vLLM starts with (heads,
 * KV heads, vocabulary, MLP and FP8 blocks divisible: vllm_layout.c), the
 * rule transformers' tensor parallel shares for heads. */
static bool tp_valid(const vf_model *m, const vf_estimate_opts *o, uint32_t tp)
{
    const vf_hparams *hp = vf_model_hparams(m);
    char why[VF_NOTE_LEN];
    return tp <= 1 || !hp || vf__vllm_layout_ok(hp, tp, o->ep > 1, why, sizeof why);
}

static void set_gpus(vf__fit_ctx *c, vf_estimate_opts *o, uint32_t n, uint32_t tp, uint32_t pp)
{
    (void)c;
    o->gpus = n;
    if (o->mode == VF_MODE_INFERENCE) {
        o->tp = tp;
        o->pp = pp;
        if (o->runtime == VF_RUNTIME_LLAMACPP)
            vf__split_layers_evenly(o, n);
    }
}

/* The fewest pipeline stages in [2, max_pp] of tp GPUs each that fit (one
 * stage is known not to): a stage's share of the model only shrinks with
 * more stages, so gallop then bisect. 0 when none does. */
static uint32_t min_stages(vf__fit_ctx *c, vf_estimate_opts *o, uint64_t gpu_bytes, uint32_t tp, uint32_t max_pp)
{
    uint32_t lo = 1, hi = 0, pp = 2; /* !fits(lo), fits(hi) */
    for (;;) {
        set_gpus(c, o, tp * pp, tp, pp);
        if (fits_at(c, o, gpu_bytes)) {
            hi = pp;
            break;
        }
        lo = pp;
        if (pp == max_pp)
            return 0;
        if (pp == 2 && max_pp > 4) {
            /* the most stages next: where they do not fit (a model no
             * layout holds) none fits, and the gallop's steps are spared */
            set_gpus(c, o, tp * max_pp, tp, max_pp);
            if (!fits_at(c, o, gpu_bytes))
                return 0;
        }
        pp = pp > max_pp / 2 ? max_pp : pp * 2;
    }
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        set_gpus(c, o, tp * mid, tp, mid);
        if (fits_at(c, o, gpu_bytes))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static uint32_t nodes_for(uint32_t gpus, uint32_t per_node)
{
    return gpus / per_node + (gpus % per_node != 0);
}

/* Inference layouts as the engines run them: tensor parallel inside a node
 * (llama.cpp: a layer split over n devices), and past one node pipeline
 * stages of one tensor-parallel group each (vLLM's multi-node guidance: tp =
 * GPUs per node, pp = nodes), vLLM splitting the layers as get_pp_indices. */
static bool min_gpus_infer(vf__fit_ctx *c, vf_estimate_opts *o, uint64_t gpu_bytes, uint32_t per_node,
                           vf__gpu_plan *plan)
{
    const vf_hparams *hp = vf_model_hparams(c->m);
    bool llama = o->runtime == VF_RUNTIME_LLAMACPP;
    uint32_t best_tp = 1;
    for (uint32_t n = 1; n <= (llama ? VF_MAX_SPLIT : per_node); n++) {
        if (!llama && !tp_valid(c->m, o, n))
            continue;
        best_tp = n;
        set_gpus(c, o, n, llama ? 1 : n, 1);
        if (fits_at(c, o, gpu_bytes)) {
            plan->gpus = n;
            plan->tp = llama ? 1 : n;
            plan->pp = 1;
            snprintf(plan->words, sizeof plan->words, n == 1 ? "one GPU" : llama ? "layers split over %u GPUs"
                                                                                 : "tensor parallel %u", n);
            return true;
        }
    }
    if (llama)
        return false; /* llama.cpp's split: at most VF_MAX_SPLIT devices */
    uint32_t layers = hp && hp->n_layers ? hp->n_layers : 128;
    uint32_t max_pp = GPUS_CAP / best_tp < layers ? GPUS_CAP / best_tp : layers;
    uint32_t pp = max_pp >= 2 ? min_stages(c, o, gpu_bytes, best_tp, max_pp) : 0;
    if (pp < 2)
        return false;
    plan->gpus = best_tp * pp;
    plan->tp = best_tp;
    plan->pp = pp;
    snprintf(plan->words, sizeof plan->words, "tensor parallel %u x pipeline parallel %u", best_tp, pp);
    return true;
}

bool vf__fit_min_gpus(vf__fit_ctx *c, const vf_estimate_opts *base, uint64_t gpu_bytes, uint32_t per_node,
                      vf__gpu_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    vf_estimate_opts o = *base;
    if (per_node < 1)
        per_node = 1;
    if (o.mode == VF_MODE_INFERENCE) {
        bool ok = min_gpus_infer(c, &o, gpu_bytes, per_node, plan);
        plan->nodes = ok ? nodes_for(plan->gpus, per_node) : 0;
        return ok;
    }
    /* training: data parallel; more GPUs only help once states are sharded */
    int zero = o.train.zero;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (zero >= 3 || o.train.fsdp == 1)
                break;
            o.train.zero = 3;
            o.train.fsdp = 0;
        }
        o.gpus = 1;
        if (fits_at(c, &o, gpu_bytes)) {
            plan->gpus = 1;
            plan->dp = 1;
            plan->nodes = 1;
            plan->zero = o.train.zero;
            snprintf(plan->words, sizeof plan->words, "one GPU");
            return true;
        }
        /* sharded states shrink as 1/N: gallop then bisect */
        uint32_t lo = 1, hi = 0;
        for (uint32_t n = 2; n <= GPUS_CAP; n *= 2) {
            o.gpus = n;
            if (fits_at(c, &o, gpu_bytes)) {
                hi = n;
                break;
            }
            lo = n;
            if (n == 2) {
                /* the most GPUs next: where they do not fit (states that do
                 * not shard at this stage) no count does */
                o.gpus = GPUS_CAP;
                if (!fits_at(c, &o, gpu_bytes))
                    break;
            }
        }
        if (!hi)
            continue;
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            o.gpus = mid;
            if (fits_at(c, &o, gpu_bytes))
                hi = mid;
            else
                lo = mid;
        }
        plan->gpus = hi;
        plan->dp = hi;
        plan->nodes = nodes_for(hi, per_node);
        plan->zero = o.train.zero;
        snprintf(plan->words, sizeof plan->words, "ZeRO-%d data parallel over %u GPUs", o.train.zero, hi);
        return true;
    }
    return false;
}

void vf__fit_apply_plan(vf_estimate_opts *o, const vf__gpu_plan *p)
{
    o->gpus = p->gpus;
    if (o->mode == VF_MODE_INFERENCE) {
        o->tp = p->tp;
        o->pp = p->pp;
        if (o->runtime == VF_RUNTIME_LLAMACPP)
            vf__split_layers_evenly(o, p->gpus);
    } else {
        o->train.zero = p->zero;
        if (p->zero >= 3)
            o->train.fsdp = 0;
    }
}

/* The knobs for n devices when the user gave only a count ("H100x2"). */
void vf__fit_spread(const vf_model *m, vf_estimate_opts *o, uint32_t n, uint32_t per_node)
{
    if (n <= 1)
        return;
    if (!o->gpus)
        o->gpus = n;
    if (o->mode == VF_MODE_INFERENCE && !o->tp && !o->pp) {
        if (o->runtime == VF_RUNTIME_LLAMACPP) {
            if (!o->infer.n_split)
                vf__split_layers_evenly(o, n);
        } else if (tp_valid(m, o, n) && n <= per_node) {
            o->tp = n;
        } else {
            /* tensor parallel inside a node, pipeline stages across */
            uint32_t tp = 1;
            for (uint32_t t = per_node < n ? per_node : n; t >= 1; t--)
                if (n % t == 0 && tp_valid(m, o, t)) {
                    tp = t;
                    break;
                }
            o->tp = tp;
            o->pp = n / tp;
        }
    }
}

uint32_t vf__fit_per_node(const vf_fit_opts *opts)
{
    if (opts->gpus_per_node)
        return opts->gpus_per_node;
    return opts->gpu && opts->gpu->max_per_node ? opts->gpu->max_per_node : 8;
}
