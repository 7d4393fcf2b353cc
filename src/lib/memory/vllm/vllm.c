/* vllm.c — vLLM: the KV cache pool it will get. vLLM sizes the pool
 * from what is left of gpu_memory_utilization x device memory after the
 * weights, the peak of a profiling forward pass and the memory not owned by
 * PyTorch (vllm/v1/worker/gpu_worker.py determine_available_memory;
 * docs/memory-model.md, "vLLM"). */
#include "memory/infer.h"
#include "device/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GIB ((uint64_t)1 << 30)

/* Non-torch memory grown during start-up outside PyTorch's allocator
 * (kernel images loaded lazily on first use, CUDA_MODULE_LOADING=LAZY,
 * library handles, NCCL and custom all-reduce buffers). Not derivable from
 * the model; the figures are vLLM's own logs of the calibration set
 * (tests/reference/serving-logs, issue numbers ending 4-9): 0.16 GiB on an
 * H100 at TP 1 (vllm PR #12126) and, with several GPUs, the largest
 * logged: 0.30 GiB per GPU on 2 x L40S (vllm issue #15815; 0.20 on 3090s,
 * PR #14447). Which versions count the CUDA context with it: non_torch(). */
#define VLLM_NON_TORCH_TP1 ((uint64_t)(0.16 * (double)GIB))
#define VLLM_NON_TORCH_MULTI ((uint64_t)(0.30 * (double)GIB))
#define VLLM_BLOCK 16 /* default block_size (CacheConfig) */

/* Transient memory of torch.sort over S rows of V float32 logits, on top of
 * the sorted values and int64 indices it returns (CUDA stable sort,
 * aten/src/ATen/native/cuda/SortStable.cu launch_stable_sort_kernel): rows of
 * <= 2048 are sorted in place (Sort.cpp should_use_small_sort); one row at a
 * time (one row, or rows of >= 1e6): a row of int64 start indices and cub's
 * alternate key (4) and value (8) buffers, 20 B per element of one row;
 * 2..127 rows (segmented_sort_pairs_by_full_sort): int2 index+segment pairs
 * twice (16), a scratch key copy (4) and cub's alternate buffers (4 + 8) =
 * 32 B per element; 128 rows or more (segmented_sort_pairs): int64 start
 * indices (8) and cub DeviceSegmentedRadixSort's alternate buffers (4 + 8)
 * = 20 B per element. Elements are sorted in launches of at most INT_MAX. */
static uint64_t sort_transient(uint64_t rows, uint64_t v)
{
    if (!rows || v <= 2048 || v > INT32_MAX)
        return 0;
    uint64_t launch = (uint64_t)INT32_MAX / v * v;
    uint64_t n = vf__smul(rows, v);
    if (n > launch)
        n = launch;
    uint64_t seg = n / v;
    if (seg == 1 || v >= 1000000)
        return 20 * v;
    return vf__smul(n, seg < 128 ? 32 : 20);
}

/* vLLM's pipeline split (vllm/distributed/utils.py get_pp_indices): layers
 * / pp each, the remainder one more each to the stages before the last,
 * from the second-last backwards (the last holds the norm and the head, the
 * first the embeddings). 22 layers on 4 stages: 5, 6, 6, 5. */
void vf__pp_indices(uint32_t layers, uint32_t rank, uint32_t pp, uint32_t *start, uint32_t *end)
{
    if (pp < 1)
        pp = 1;
    uint32_t per = layers / pp, rem = layers % pp, s = 0;
    for (uint32_t r = 0; r <= rank && r < pp; r++) {
        /* stage r gets an extra layer when it is among partitions[-2 .. -(rem+1)] */
        uint32_t from_end = pp - r; /* 1 = the last */
        uint32_t n = per + (from_end >= 2 && from_end <= rem + 1 ? 1 : 0);
        if (r == rank) {
            *start = s;
            *end = s + n;
            return;
        }
        s += n;
    }
    *start = *end = layers;
}

/* What this run of the engine is set to: limits, defaults by GPU class,
 * dtypes, the split. */
typedef struct vcfg {
    bool is_v1, big;
    int minor;             /* the 0.x release asked for (0: current) */
    vf__vllm_ver ver;      /* --vllm-version parsed */
    bool ctx_in_non_torch; /* the release counts the CUDA context as non-torch memory */
    uint64_t ctx_part;     /* then: the context's share of non_torch */
    bool v019; /* 0.19+ (and the current version): the profile vLLM 0.19 logs (profile_peaks) */
    bool graphs_in_budget; /* 0.21+: the graphs' estimate is taken out of the KV budget */
    uint32_t tp, pp;
    uint32_t ep, dp;       /* --enable-expert-parallel: the expert group (tp x dp ranks); 0 = off */
    uint32_t moe_tp;       /* how many ways a rank's experts are split: tp, or 1 under expert parallel */
    double util;
    uint64_t class_bytes; /* the device whose class sets the defaults (vf__gpu_class_bytes) */
    uint64_t gpu_bytes, mml, mnbt, mns, seqs, requested, swa_tok, a, rope, non_torch, overhead, graphs, ctx;
    char ctx_why[VF_NOTE_LEN];
    uint64_t bs;          /* tokens per KV block: 16, or what the hybrid layout raises it to */
    bool hybrid;
    vf__vllm_hybrid hy;   /* hybrids: one page size for every layer, a state page per recurrent group */
    vf__vllm_graphs gr;   /* CUDA graphs: sizes, graphs, pool */
    vf_dtype kt, vt;
    vf_dtype act;
} vcfg;

/* One pipeline rank: its layers and what it holds. */
typedef struct vstage {
    uint32_t start, end;
    uint64_t weights, act, page, full_page, need, non_kv, pool, tokens, total;
    double conc;
} vstage;

/* What vLLM captures: V0 a full graph per batch size (up to 256 before 0.7,
 * 512 after); V1 piecewise graphs, plus full decode graphs from 0.11
 * (FULL_AND_PIECEWISE became the default); gpt-oss's largest capture size
 * raised to 1024 (vLLM models/config.py, assumed from 0.12). */
static void graphs(const vf_hparams *hp, vcfg *c)
{
    bool current = c->ver.current || c->ver.major > 0;
    int minor = c->ver.minor;
    /* the busiest stage's layers: a rank captures only its own pieces */
    uint32_t layers = 0;
    for (uint32_t r = 0; r < c->pp; r++) {
        uint32_t s, e;
        vf__pp_indices(hp->n_layers, r, c->pp, &s, &e);
        layers = e - s > layers ? e - s : layers;
    }
    vf__vllm_graph_cfg g = {.mns = c->mns, .mnbt = c->mnbt, .a = c->a, .tp = c->tp, .layers = layers,
                            .moe_tp = c->moe_tp};
    g.mode = !c->is_v1 ? VF__VG_V0 : current || minor >= 11 ? VF__VG_FULL_AND_PIECEWISE : VF__VG_PIECEWISE;
    g.v0_max = minor < 7 && !current ? 256 : 512;
    if (strcmp(hp->architecture, "gpt_oss") == 0 && (current || minor >= 12))
        g.max_capture = 1024;
    vf__vllm_graph_bytes(hp, &g, &c->gr);
}

/* --enable-expert-parallel (vllm/model_executor/layers/fused_moe/config.py
 * FusedMoEParallelConfig.make, 0.8+): the MoE layers run expert parallel
 * over every rank of the tensor- and data-parallel groups, ep = tp x dp (the
 * flag takes no size), each rank holding whole experts, not a 1/tp slice of
 * every one: E / ep of them, the first E mod ep ranks one more
 * (determine_expert_map); attention stays tensor parallel. */
static vf_status expert_parallel(const vf_hparams *hp, const vf_estimate_opts *o, vcfg *c, vf_error *err)
{
    uint32_t group = c->tp * c->pp;
    c->dp = o->gpus > group ? o->gpus / group : 1;
    if (o->ep != c->tp * c->dp)
        return vf__err(err, VF_EINVAL, "--ep",
                       "vLLM's expert-parallel size is tensor parallel x data parallel (--enable-expert-parallel "
                       "takes no size): %u x %u = %u here, not %u",
                       c->tp, c->dp, c->tp * c->dp, o->ep);
    if (hp->n_experts >= 2 && !c->is_v1 && c->minor < 8)
        return vf__err(err, VF_EINVAL, "--ep", "--enable-expert-parallel is modelled from vLLM 0.8 on, not %s",
                       o->infer.vllm_version);
    c->ep = o->ep;
    return VF_OK;
}

/* What vLLM subtracts as non-torch memory, by release (its worker's
 * determine_num_available_blocks / determine_available_memory):
 *  - V0 before 0.6.4 (vllm PR #2031): peak = free memory at init_device,
 *    after the context exists, minus free memory after the profile: the
 *    growth outside PyTorch only;
 *  - V0 0.6.4 (PR #9352) and V1 0.7 to 0.9.1 (gpu_worker.py before PR
 *    #19312): everything cudaMemGetInfo counts as used minus what PyTorch
 *    has allocated, so the CUDA context (and any other process) is in it;
 *  - V0 0.6.5 on (PR #10511's memory_profiling, baseline taken after the
 *    context; PR #11809 compares reserved, not allocated, bytes from 0.7) and
 *    V1 0.9.2 on (PR #19312): the growth since that baseline;
 *  - V1 0.19 on: llm-d-planner's v0.19.0 logs (59 runs on H100s), 0.24 to
 *    0.46 GiB at TP 1, 2.06 to 2.21 at TP 2 and 4: the highest of each (the
 *    tensor-parallel rank's all-reduce buffers; figures, not a mechanism).
 * Without the context in it, the context sits outside the budget (ctx). */
static void non_torch(const vf_estimate_opts *o, vcfg *c)
{
    bool multi = c->tp * c->pp > 1;
    c->non_torch = multi ? VLLM_NON_TORCH_MULTI : VLLM_NON_TORCH_TP1;
    if (c->v019 && c->is_v1)
        c->non_torch = (uint64_t)((c->tp > 1 ? 2.21 : 0.46) * (double)GIB);
    const vf__vllm_ver *v = &c->ver;
    bool old = !v->current && v->major == 0;
    c->ctx_in_non_torch = old && (c->is_v1 ? !vf__vllm_at_least(v, 0, 9, 2)
                                           : v->minor == 6 && v->patch == 4);
    c->ctx = vf__torch_context_bytes(o, false, c->ctx_why, sizeof c->ctx_why);
    if (c->ctx_in_non_torch) {
        uint64_t ctx = c->ctx;
        c->ctx_part = ctx;
        c->non_torch = vf__sadd(c->non_torch, ctx);
        c->ctx = 0;
        snprintf(c->ctx_why, sizeof c->ctx_why, "CUDA context %llu MiB counted in non-torch memory (vLLM %s %s: "
                 "device memory used minus PyTorch's allocated bytes)",
                 (unsigned long long)(ctx >> 20),
                 c->is_v1 ? "V1" : "V0", o->infer.vllm_version);
    }
}

static vf_status settings(const vf_model *m, const vf_estimate_opts *o, const vf__wprice *w, vcfg *c, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    vf_status st;
    memset(c, 0, sizeof *c);
    const char *vwhy;
    if (!vf__vllm_version_parse(io->vllm_version, &c->ver, &vwhy))
        return vf__err(err, VF_EINVAL, "--vllm-version", "%s, not '%s'", vwhy, io->vllm_version);
    c->is_v1 = c->ver.v1;
    c->minor = c->ver.current || c->ver.major > 0 ? 0 : c->ver.minor;
    c->v019 = vf__vllm_at_least(&c->ver, 0, 19, 0);
    c->tp = o->tp ? o->tp : 1;
    c->pp = o->pp ? o->pp : 1;
    if (c->pp > (hp->n_layers ? hp->n_layers : 1))
        return vf__err(err, VF_EINVAL, "--pp", "%u pipeline stages for %u layers", c->pp, hp->n_layers);
    if (o->ep > 1 && (st = expert_parallel(hp, o, c, err)) != VF_OK)
        return st;
    c->moe_tp = c->ep > 1 ? 1 : c->tp;
    /* V0 before 0.6.4 took the peak as the drop in free memory over the
     * profile (worker.py, vllm PRs #2031/#2863): the allocator's cached
     * blocks and whatever NCCL and cupy held at that moment, which grew by
     * gigabytes with tensor parallelism (PR #2031: Llama-2-70B on 4 A100s
     * 31,615 -> 20,865 blocks); not modelled with more than one GPU */
    if (!c->ver.current && c->ver.major == 0 && !vf__vllm_at_least(&c->ver, 0, 6, 4) && c->tp * c->pp > 1)
        return vf__err(err, VF_EUNSUPPORTED, "--vllm-version",
                       "vLLM %s with %u GPUs is not modelled: before 0.6.4 it measured the peak as the drop in free "
                       "memory, NCCL's buffers included; 0.6.4 or later, or one GPU",
                       io->vllm_version, c->tp * c->pp);
    char why[VF_NOTE_LEN];
    if (!vf__vllm_layout_ok(hp, c->tp, c->ep > 1, why, sizeof why))
        return vf__err(err, VF_EINVAL, "--tp", "vLLM refuses tensor parallel %u for this model at start-up: %s", c->tp,
                       why);
    c->util = io->gpu_util > 0 ? io->gpu_util : 0.9;
    c->gpu_bytes = o->gpu_bytes;
    /* --context stands for max_model_len when that is not given: the
     * longest request the engine must admit */
    c->mml = io->max_model_len ? io->max_model_len : io->context ? io->context : vf__hp_context(hp);

    /* Defaults (vllm/engine/arg_utils.py _set_default_args_v1, for `vllm
     * serve`): >= 70 GiB and not an A100: 8192 batched tokens, 1024
     * sequences; otherwise 2048 and 256. V0: max(max_model_len, 2048) tokens
     * without chunked prefill, 256 sequences. */
    c->class_bytes = vf__gpu_class_bytes(o);
    c->big = c->class_bytes >= 70 * GIB && !vf__name_has(io->gpu_name, "a100");
    /* which devices get the larger defaults, by release: H100 and H200 by
     * name (vllm PR #12369, 0.7.1), then 70 GiB and more (PR #17073, 0.8.5),
     * then A100s excepted (PR #17885, 0.9.0) */
    if (!vf__vllm_at_least(&c->ver, 0, 8, 5))
        c->big = vf__name_has(io->gpu_name, "h100") || vf__name_has(io->gpu_name, "h200");
    else if (!vf__vllm_at_least(&c->ver, 0, 9, 0))
        c->big = c->class_bytes >= 70 * GIB;
    if (c->is_v1) {
        c->mnbt = c->big ? 8192 : 2048;
        c->mns = c->big ? 1024 : 256;
    } else {
        c->mnbt = c->mml > 2048 ? c->mml : 2048;
        c->mns = 256;
    }
    if (io->max_num_batched_tokens)
        c->mnbt = io->max_num_batched_tokens;
    if (io->max_num_seqs)
        c->mns = io->max_num_seqs;
    c->seqs = c->mns < c->mnbt ? c->mns : c->mnbt;
    if (!vf__kv_dtype_parse(io->kv_dtype, w->act_dtype, &c->kt, &c->vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");
    c->act = w->act_dtype;
    c->bs = VLLM_BLOCK;
    c->hybrid = vf__vllm_hybrid_layout(hp, c->tp, c->kt, c->vt, c->mml, &c->hy);
    if (c->hybrid)
        c->bs = c->hy.block;
    c->a = vf_dtype_get(w->act_dtype)->block_bytes;
    /* the rotary cos/sin cache, max_position x rotary_dim in the model dtype
     * (model_executor/layers/rotary_embedding.py), one per rank */
    uint64_t hd = hp->head_dim ? hp->head_dim : (hp->n_heads ? hp->hidden_size / hp->n_heads : 0);
    if (vf__is_mla(hp))
        hd = hp->qk_rope_head_dim;
    c->rope = vf__smul(vf__smul(vf__hp_context(hp), hd), c->a);
    c->requested = (uint64_t)((double)o->gpu_bytes * c->util);
    c->swa_tok = hp->sliding_window ? hp->sliding_window - 1 + c->mnbt : c->mml;
    if (c->swa_tok > c->mml)
        c->swa_tok = c->mml;
    non_torch(o, c);
    /* CUDA graphs (vllm_graphs.c) without --enforce-eager, every rank
     * priced as the one with the most layers */
    if (!io->enforce_eager)
        graphs(hp, c);
    c->graphs = c->gr.bytes;
    /* vLLM 0.21+ profiles the graphs before sizing the pool and takes its
     * estimate out of the budget (gpu_model_runner.py profile_cudagraph_memory,
     * gpu_worker.py: "CUDA graph memory profiling is enabled (default since
     * v0.21.0)"); before, they were captured after it, outside the budget */
    c->graphs_in_budget = c->graphs && vf__vllm_at_least(&c->ver, 0, 21, 0);
    c->overhead = c->non_torch + c->graphs + c->ctx;
    return VF_OK;
}

/* A rank's weights: its blocks, matrices and the vocabulary sharded over tp
 * (ColumnParallel / RowParallel / VocabParallelEmbedding), 1-D tensors
 * replicated; the embeddings (and what sits outside the blocks) on the first
 * stage, the final norm and head on the last, which with tied embeddings
 * holds its own copy of the embedding matrix (vLLM's models build
 * embed_tokens on the last rank too when tie_word_embeddings). */
static uint64_t stage_weights(const vf_model *m, const vf__wlayers *L, const vcfg *c, uint32_t rank,
                              const vstage *s)
{
    uint64_t sh = 0, rep = 0, ex = 0;
    for (uint32_t l = s->start; l < s->end && l < L->n_layers; l++) {
        sh = vf__sadd(sh, L->sh[l]);
        rep = vf__sadd(rep, L->rep[l]);
        ex = vf__sadd(ex, L->ex[l]);
    }
    /* expert parallel: the routed experts leave the tensor-parallel share
     * for whole experts, ceil(E / ep) of E on the busiest rank */
    uint64_t experts = 0;
    if (c->ep > 1 && m->hp.n_experts >= 2) {
        sh -= ex;
        uint64_t local = (m->hp.n_experts + c->ep - 1) / c->ep;
        experts = (uint64_t)((double)ex * (double)local / (double)m->hp.n_experts);
    }
    bool first = rank == 0, last = rank + 1 == c->pp;
    if (first) {
        sh = vf__sadd(sh, L->part_sh[VF__WP_EMBED] + L->part_sh[VF__WP_OTHER]);
        rep = vf__sadd(rep, L->part_rep[VF__WP_EMBED] + L->part_rep[VF__WP_OTHER]);
    }
    if (last) {
        sh = vf__sadd(sh, L->part_sh[VF__WP_HEAD]);
        rep = vf__sadd(rep, L->part_rep[VF__WP_HEAD] + L->part_sh[VF__WP_NORM] + L->part_rep[VF__WP_NORM]);
        if (!first && m->hp.tie_word_embeddings && !L->part_sh[VF__WP_HEAD])
            sh = vf__sadd(sh, L->part_sh[VF__WP_EMBED]);
    }
    return vf__sadd(vf__sadd(vf__sadd(rep, sh / c->tp), experts), c->rope);
}

/* The MXFP4 layout's extra bytes over a stage's MoE layers. */
static uint64_t mxfp4_stage(const vf_hparams *hp, const vcfg *c, const vstage *s, uint64_t per_layer)
{
    (void)c;
    uint32_t from = s->start > hp->first_k_dense ? s->start : hp->first_k_dense;
    return s->end > from ? vf__smul(per_layer, s->end - from) : 0;
}

/* A rank's KV page (one 16-token block over its layers), its full-attention
 * share, and one max_model_len request's need (kv_cache_interface.py
 * max_memory_usage_bytes: full attention cdiv(max_model_len, 16) pages; a
 * sliding-window layer cdiv(min(window - 1 + max_num_batched_tokens,
 * max_model_len), 16) + 1). KV heads split over TP but never below one head
 * (replicated); an MLA latent is one head. */
static void stage_kv(const vf_hparams *hp, const vcfg *c, const vf__extras *xt, vstage *s)
{
    for (uint32_t il = s->start; il < s->end; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, true, &k, &v);
        uint64_t kvh = vf__layer_kv_heads(hp, il);
        if (!vf__is_mla(hp) && kvh) {
            uint64_t per = kvh >= c->tp ? kvh / c->tp : 1;
            k = k / kvh * per;
            v = v / kvh * per;
        }
        uint64_t lp = vf__smul(VLLM_BLOCK, vf__sadd(vf__dt_bytes(c->kt, k), vf__dt_bytes(c->vt, v)));
        s->page = vf__sadd(s->page, lp);
        bool swa = vf__layer_is_swa(hp, il) && c->is_v1;
        if (!swa)
            s->full_page = vf__sadd(s->full_page, lp);
        uint64_t nb = swa ? (c->swa_tok + VLLM_BLOCK - 1) / VLLM_BLOCK + 1 : (c->mml + VLLM_BLOCK - 1) / VLLM_BLOCK;
        s->need = vf__sadd(s->need, vf__smul(nb, lp));
    }
    /* hybrids: the layout's pages and per-request need, a pipeline stage's
     * share taken in proportion to its layers */
    if (c->hybrid) {
        double f = c->pp > 1 && hp->n_layers ? (double)(s->end - s->start) / hp->n_layers : 1.0;
        s->page = s->full_page = (uint64_t)((double)c->hy.page * f);
        s->need = (uint64_t)((double)c->hy.need * f);
    }
    /* serving extras, on every rank (ERR HIGH under pipeline parallel: a
     * draft's layers take a page in every block; Mllama's cross-attention
     * states a fixed share per sequence) */
    if (xt->kv_token) {
        uint64_t dp = vf__smul(c->bs, xt->kv_token);
        s->need = vf__sadd(s->need, vf__smul((c->mml + c->bs - 1) / c->bs, dp));
        s->page = vf__sadd(s->page, dp);
        s->full_page = vf__sadd(s->full_page, dp);
    }
    s->need = vf__sadd(s->need, xt->kv_seq);
}

/* Profiling run (v1/worker/gpu_model_runner.py profile_run; V0
 * worker/model_runner.py profile_run): a forward of mnbt tokens over
 * S = min(max_num_seqs, mnbt) requests, then, on the last pipeline rank
 * only, the sampler on one position per request; torch_peak_increase is the
 * larger of the two peaks.
 *  forward, at the MLP's down projection of a layer (model_executor/
 *    models/llama.py LlamaMLP): residual and normed hidden (2h, the
 *    RMSNorms work in place), gate_up (2 ff/tp), SiluAndMul's output
 *    (ff/tp) and the down projection's output (h), x tokens x a; MoE:
 *    fused_moe's caches tokens x top_k x (3 moe_ff/tp + h);
 *  sampler (v1/sample/sampler.py, ops/topk_topp_sampler.py
 *    apply_top_k_top_p, with the dummy run's top-k = V-1 and top-p 0.9;
 *    V0: layers/sampler.py _apply_top_k_top_p, top-p 0.99): the hidden
 *    states of every token and of the sampled positions (V1 also their
 *    torch.rand_like copy) stay; per logit at the peak, inside
 *    logits.sort(): the model-dtype logits (a), their fp32 copy (4), the
 *    sorted values (4) and int64 indices (8) plus the sort's transient
 *    buffers (sort_transient). The later top-k/top-p masks, softmax and
 *    scatter (a + 26 B per logit) stay below that peak.
 *  plus PyTorch's cuBLAS workspace, first allocated in this run. */
typedef struct vact {
    uint64_t fwd, hid, samp, sort_tmp, ws, moe_ws;
} vact;

/* vLLM 0.19+ (its logs: llm-d-planner accuracy/results/v0.19.0, H100; 0.12
 * to 0.18 keep the 0.11 profile above, erring high):
 *  - the dummy sampler run (gpu_model_runner._dummy_sampler_run: top_p 0.9,
 *    top_k vocab - 1, no logprobs) holds a + 12 B per logit: the model-dtype
 *    logits the runner keeps (a), their fp32 copy (sampler.py forward, 4;
 *    temperature divides it in place), the fp32 softmax probabilities and
 *    random_sample's exponential draws q (topk_topp_sampler.py
 *    forward_native, 4 + 4; probs.div_(q) in place). From 8 requests on,
 *    top-k/top-p is apply_top_k_top_p_triton (in place, no sort) with its
 *    cached fp32 buffer of min(SMs, requests) x vocab; below 8, the
 *    PyTorch sort of the 0.11 profile (sampler_bytes);
 *  - the forward keeps one more hidden-size tensor per token (custom_ops
 *    "none": Inductor's RMSNorm writes the residual out of place):
 *    CodeLlama-7b 0.77 GiB measured, 0.74 with 3h. Fitted to that row: the
 *    piecewise-compiled layer read from llama.py holds at most
 *    max(3h + 3ff, 4h + 2ff, 6h) per token (docs/memory-model.md);
 *  - fused MoE's workspaces stay allocated through the sampler (the
 *    persistent workspace manager, locked after capture): tokens x top_k x
 *    (max(N / 2, K) + max(N, K)) x a with N = 2 x moe_ff / tp, K = h
 *    (TritonExperts.workspace_shapes), which is what the MoE rows' profile
 *    exceeds the sampler by (Mixtral TP 2 0.66 GiB, Qwen3-30B-A3B 0.51,
 *    DeepSeek-V2-Lite 0.45, Qwen1.5-MoE 0.30); none for gpt-oss's MXFP4
 *    experts (triton_kernels' matmul_ogs: 2.87 GiB without it). With it,
 *    an MoE model's forward keeps only its hidden-size tensors (4h) beside:
 *    Mixtral TP 2's 1.21 GiB = sampler + workspace + cuBLAS workspace. */
static uint64_t moe_workspace(const vf_hparams *hp, const vcfg *c, bool mxfp4)
{
    if (!c->v019 || !c->is_v1 || hp->n_experts < 2 || mxfp4)
        return 0;
    uint64_t k = hp->n_experts_active ? hp->n_experts_active : 1, K = hp->hidden_size;
    uint64_t N = 2 * ((hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp)) / c->moe_tp);
    uint64_t w = (N / 2 > K ? N / 2 : K) + (N > K ? N : K);
    return vf__smul(vf__smul(vf__smul(c->mnbt, k), w), c->a);
}

/* The dummy sampler run's tensors of [requests, vocab] at its peak (above).
 * *extra: the 0.11 sort's transient buffers, or the Triton top-k/top-p
 * buffer (its program count is min(SMs, requests): a GPU whose SM count is
 * not known is taken at the requests, the most it can be). */
static uint64_t sampler_bytes(const vf_infer_opts *io, const vcfg *c, uint64_t V, bool light, uint64_t *extra)
{
    uint64_t logits = vf__smul(c->seqs, V);
    if (light && c->seqs >= 8) {
        uint64_t sms = vf__gpu_sm_count(io->gpu_name), progs = sms && sms < c->seqs ? sms : c->seqs;
        *extra = vf__smul(vf__smul(progs, V), 4);
        return vf__sadd(vf__smul(logits, c->a + 4 + 4 + 4), *extra);
    }
    *extra = sort_transient(c->seqs, V);
    return vf__sadd(vf__smul(logits, c->a + 4 + 4 + 8), *extra);
}

static void profile_peaks(const vf_hparams *hp, const vf_infer_opts *io, const vcfg *c, bool mxfp4, vact *p)
{
    uint64_t h = hp->hidden_size, V = hp->vocab_size, a = c->a;
    bool light = c->v019 && c->is_v1;
    p->fwd = vf__vllm_fwd_bytes(hp, c->mnbt, c->tp, c->moe_tp, a);
    p->moe_ws = moe_workspace(hp, c, mxfp4);
    if (light) /* one more hidden-size tensor; an MoE layer's caches are its workspace */
        p->fwd = p->moe_ws ? vf__smul(vf__smul(c->mnbt, 4 * h), a) : vf__sadd(p->fwd, vf__smul(vf__smul(c->mnbt, h), a));
    p->hid = vf__sadd(vf__smul(vf__smul(c->mnbt, h), a), vf__smul(vf__smul(c->seqs, h), c->is_v1 ? 2 * a : a));
    p->samp = vf__sadd(p->hid, sampler_bytes(io, c, V, light, &p->sort_tmp));
    /* an unnamed device of 70 GiB and more, not an A100, stands for Hopper */
    bool hopper_class = c->class_bytes >= 70 * GIB && !vf__name_has(io->gpu_name, "a100");
    p->ws = vf__cublas_workspace_bytes(io->gpu_name, hopper_class ? c->class_bytes : 0);
}

/* Every rank sizes its pool from what it has left; the engine then gives
 * every rank the same number of blocks, the fewest any rank can hold
 * (v1/core/kv_cache_utils.py: one KV cache config per worker, unified to
 * the minimum num_blocks). Returns the busiest rank (most device memory). */
/* On a device whose memory the CPU shares (SM 8.7, 11.0, 12.1) vLLM reads
 * free memory as MemAvailable (MemorySnapshot.measure, vllm/utils/mem_utils.py)
 * and its worker refuses to start when that is below total x
 * gpu_memory_utilization; the free memory is the row's assumption. */
static void unified_free_check(const vf_estimate_opts *o, const vcfg *c, vf_estimate *e)
{
    const vf_gpu *g = vf__gpu_row(o->infer.gpu_name);
    if (!vf__gpu_unified(g) || !g->unified_free_bytes || c->requested <= g->unified_free_bytes || !e->starts)
        return;
    e->starts = false;
    snprintf(e->reason, sizeof e->reason,
             "free memory on %s (%.2f GiB assumed: MemAvailable, the OS and CPU hold the rest) is less than desired "
             "GPU memory utilization (%.2f, %.2f GiB); --gpu-util %.2f at most",
             g->name, (double)g->unified_free_bytes / GIB, c->util, (double)c->requested / GIB,
             c->gpu_bytes ? (double)(uint64_t)((double)g->unified_free_bytes / (double)c->gpu_bytes * 100) / 100 : 0.0);
}

static uint32_t size_pools(const vcfg *c, vstage *st, vf_estimate *e)
{
    uint64_t units = UINT64_MAX;
    for (uint32_t r = 0; r < c->pp; r++) {
        vstage *s = &st[r];
        s->non_kv = vf__sadd(vf__sadd(s->weights, s->act), vf__sadd(c->non_torch, c->graphs_in_budget ? c->graphs : 0));
        uint64_t u = c->requested > s->non_kv && s->page ? (c->requested - s->non_kv) / s->page : 0;
        if (c->requested <= s->non_kv && e->starts) {
            e->starts = false;
            snprintf(e->reason, sizeof e->reason,
                     "no memory left for the KV cache%s: weights, activations and non-torch memory need %.2f GiB "
                     "of the %.2f GiB allowed (gpu_memory_utilization %.2f)",
                     c->pp > 1 ? (r ? (r + 1 == c->pp ? " on the last pipeline rank" : " on a middle pipeline rank")
                                    : " on the first pipeline rank")
                               : "",
                     (double)s->non_kv / GIB, (double)c->requested / GIB, c->util);
        }
        if (u < units)
            units = u;
    }
    uint32_t busiest = 0;
    for (uint32_t r = 0; r < c->pp; r++) {
        vstage *s = &st[r];
        s->pool = vf__smul(units, s->page);
        /* tokens of whole blocks; with sliding layers in their own KV-cache
         * groups (hybrid allocator) a token costs a page of the
         * full-attention layers only */
        uint64_t per_block = s->full_page ? s->full_page : s->page;
        s->tokens = per_block ? s->pool / per_block * c->bs : 0;
        /* hybrids: what vLLM prints as "GPU KV cache size" (v1/core/
         * kv_cache_utils.py _report_kv_cache_config): num_blocks // groups x
         * block_size, the blocks shared out evenly over every KV-cache group,
         * recurrent ones included; attention-free, a block per request of any
         * length (block_size = max_model_len) */
        if (c->hybrid && s->page) {
            uint64_t groups = c->hy.attn_groups + c->hy.rec_groups;
            s->tokens = s->pool / s->page / (groups ? groups : 1) * (c->hy.attn_groups ? c->bs : c->mml);
        }
        s->conc = s->need ? (double)s->pool / (double)s->need : 0;
        s->total = vf__sadd(vf__sadd(s->weights, s->pool), vf__sadd(s->act, c->overhead));
        if (s->total > st[busiest].total)
            busiest = r;
    }
    return busiest;
}

static void notes(const vf_hparams *hp, const vf_estimate_opts *o, const vcfg *c, const vact *p, const vstage *st,
                  uint32_t busiest, vf_estimate *e)
{
    const vf_infer_opts *io = &o->infer;
    const vstage *s = &st[busiest];
    vf__assume(e, "runtime = vLLM %s (%s accounting), gpu %.2f GiB x gpu_memory_utilization %.2f",
               io->vllm_version[0] ? io->vllm_version : "current", c->is_v1 ? "V1" : "V0",
               (double)o->gpu_bytes / GIB, c->util);
    vf__assume(e, "max_model_len %llu, max_num_batched_tokens %llu, max_num_seqs %llu, block_size %d, tp %u, pp %u",
               (unsigned long long)c->mml, (unsigned long long)c->mnbt, (unsigned long long)c->mns, VLLM_BLOCK, c->tp,
               c->pp);
    if (c->pp > 1)
        vf__assume(e, "pipeline: layers split as vLLM's get_pp_indices; the busiest rank is stage %u of %u (layers "
                   "%u-%u%s), every rank the same number of KV blocks",
                   busiest + 1, c->pp, s->start, s->end - 1,
                   busiest == 0 ? ", the embeddings" : busiest + 1 == c->pp ? ", the norm and head" : "");
    if (c->ep > 1)
        vf__assume(e, "expert parallel (--enable-expert-parallel): %u ranks = tp %u x dp %u, the busiest holding %u of "
                      "%u whole experts per MoE layer (fused_moe determine_expert_map); attention tensor parallel %u",
                   c->ep, c->tp, c->dp, (hp->n_experts + c->ep - 1) / c->ep, hp->n_experts, c->tp);
    vf__assume(e, "rotary cos/sin cache = %llu B added to the weights", (unsigned long long)c->rope);
    if (hp->sliding_window)
        vf__assume(e, "sliding-window layers: %llu tokens per request (window - 1 + max_num_batched_tokens)",
                   (unsigned long long)c->swa_tok);
    vf__assume(e, "kv cache = K %s, V %s%s", vf_dtype_get(c->kt)->name, vf_dtype_get(c->vt)->name,
               vf__is_mla(hp) ? ", MLA latent (kv_lora_rank + qk_rope_head_dim)" : "");
    vf__assume(e, "non-torch memory %.2f GiB (vLLM's logs: %s); overhead = that + "
               "CUDA graphs %.2f GiB (%s)%s, outside the pool",
               (double)c->non_torch / GIB,
               c->v019 && c->is_v1 ? "0.19's, llm-d-planner v0.19.0 runs"
               : c->ctx_in_non_torch ? "PRs #12126/#15815 + the CUDA context, which this release counts there"
                                     : "vllm PR #12126, issue #15815",
               (double)c->graphs / GIB,
               c->graphs_in_budget ? "profiled first and taken out of the pool's budget, vLLM 0.21+"
                                   : "captured after the pool is sized, outside the budget",
               c->ctx_in_non_torch ? "" : " + CUDA context");
    vf__assume(e, "%s", c->ctx_why);
    if (c->gr.sizes)
        vf__assume(e, "CUDA graphs = %u capture sizes up to %llu tokens%s, %u graphs (%s); one shared pool %.0f MiB + "
                      "%u sizes x %.2f MiB in the driver (2 MiB + %u layers x %llu KiB, vLLM 0.19's own figures)",
                   c->gr.sizes, (unsigned long long)c->gr.largest,
                   c->gr.full_sizes ? " (full decode graphs up to max_num_seqs)" : "", c->gr.graphs,
                   c->gr.mode == VF__VG_V0                   ? "V0: one full graph per batch size"
                   : c->gr.mode == VF__VG_FULL_AND_PIECEWISE ? "piecewise per layer + full decode"
                                                             : "piecewise per layer",
                   (double)c->gr.pool / (1 << 20), c->gr.sizes + c->gr.full_sizes,
                   (double)c->gr.per_size / (1 << 20), c->gr.layers,
                   (unsigned long long)(vf__vllm_graph_layer_bytes(hp) >> 10));
    char gterm[64] = "";
    if (c->graphs_in_budget)
        snprintf(gterm, sizeof gterm, " - CUDA graphs %llu (0.21+)", (unsigned long long)c->graphs);
    vf__explain(e, "kv pool = %.2f GiB x %.2f - weights %llu - activation peak %llu - non-torch %llu%s = %llu B",
                (double)o->gpu_bytes / GIB, c->util, (unsigned long long)s->weights, (unsigned long long)s->act,
                (unsigned long long)c->non_torch, gterm, (unsigned long long)s->pool);
    char mws[64] = "";
    if (p->moe_ws)
        snprintf(mws, sizeof mws, " + fused-MoE workspace %llu (0.19+)", (unsigned long long)p->moe_ws);
    bool tri = c->v019 && c->is_v1 && c->seqs >= 8; /* apply_top_k_top_p_triton, no sort */
    vf__explain(e, "activation peak = max(forward %llu x (%s x %llu + 3 x %llu) x %llu = %llu, sampler hidden %llu + "
                "%llu x %llu logits x (%llu + %s) + %s %llu = %llu%s) + cuBLAS workspace %llu%s = %llu B",
                (unsigned long long)c->mnbt, c->v019 && c->is_v1 ? "4" : "3", (unsigned long long)hp->hidden_size,
                (unsigned long long)(vf__hp_ff(hp) / c->tp), (unsigned long long)c->a, (unsigned long long)p->fwd,
                (unsigned long long)p->hid, (unsigned long long)c->seqs, (unsigned long long)hp->vocab_size,
                (unsigned long long)c->a, tri ? "12" : "16", tri ? "top-k/top-p buffer" : "sort scratch",
                (unsigned long long)p->sort_tmp,
                (unsigned long long)p->samp, c->pp > 1 && busiest + 1 != c->pp ? ", on the last rank only" : "",
                (unsigned long long)p->ws, mws, (unsigned long long)s->act);
    char per_group[48] = "";
    if (c->hybrid)
        snprintf(per_group, sizeof per_group, " / %u groups", c->hy.attn_groups + c->hy.rec_groups);
    vf__explain(e, "kv tokens = floor(pool / %llu B per %llu-token block)%s x %llu = %llu; concurrency = pool / %llu B "
                "per max_model_len request = %.2f",
                (unsigned long long)(s->full_page ? s->full_page : s->page), (unsigned long long)c->bs, per_group,
                (unsigned long long)c->bs, (unsigned long long)s->tokens,
                (unsigned long long)s->need, s->conc);
}

vf_status vf__infer_vllm(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    if (!o->gpu_bytes)
        return vf__err(err, VF_EINVAL, "--gpu", "the vllm runtime needs the device memory (--gpu NAME or bytes)");
    if (!vf__hp_has_attention(hp))
        return vf__err(err, VF_EUNSUPPORTED, m->source, "no layer or head counts: the KV cache cannot be sized");
    /* vLLM's platforms are CUDA, ROCm, XPU, TPU and CPU (vllm/platforms):
     * an Apple GPU runs it only through the vllm-metal plugin, whose
     * accounting is its own */
    const vf_gpu *row = vf__gpu_row(o->infer.gpu_name);
    if (row && row->vendor && strcmp(row->vendor, "apple") == 0)
        return vf__err(err, VF_EUNSUPPORTED, "--gpu",
                       "vLLM has no Metal platform (CUDA, ROCm, XPU, TPU, CPU): %s is not modelled for it "
                       "(the vllm-metal plugin is not priced); --runtime llamacpp runs there",
                       row->name);
    vf__wprice w;
    vf_status st = vf__weights_price(m, o->weights, VF_DTYPE_UNKNOWN, &w, NULL, err);
    if (st != VF_OK)
        return st;
    /* --dtype auto (config.py _get_and_verify_dtype): a float32 checkpoint
     * runs in 16-bit (bfloat16 for Gemma, float16 otherwise: same bytes) */
    const char *scheme = o->weights;
    if (!scheme[0] && w.act_dtype == VF_DTYPE_F32) {
        scheme = "bf16";
        vf__assume(e, "dtype auto: a float32 checkpoint runs in 16-bit");
    }
    const vf__wlayers *L;
    if ((st = vf__weights_price(m, scheme, VF_DTYPE_UNKNOWN, &w, e, err)) != VF_OK ||
        (st = vf__weights_layers(m, scheme, VF_DTYPE_UNKNOWN, &L, err)) != VF_OK)
        return st;
    vcfg c;
    if ((st = settings(m, o, &w, &c, err)) != VF_OK)
        return st;
    /* a draft, LoRA slots and images: held before the pool is sized */
    vf__extras xt;
    if ((st = vf__extras_get(m, o, c.tp, &xt, e, err)) != VF_OK)
        return st;
    if (c.is_v1)
        vf__extras_vllm_images(m, o, c.tp, c.mnbt, c.mns, c.mml, &xt, e);
    else /* V0: Mllama's encoder-decoder profile (other towers' V0 profile: not modelled) */
        vf__extras_vllm_mllama_v0(m, o, c.tp, c.mns, &xt, e);
    vstage *stages = calloc(c.pp, sizeof *stages);
    if (!stages)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vact p;
    /* MXFP4 experts as stored: the layout vLLM's backend converts them to */
    uint64_t mx = o->weights[0] ? 0 : vf__vllm_mxfp4_extra(hp, c.tp, vf__vllm_mxfp4_backend(o->infer.gpu_name));
    profile_peaks(hp, &o->infer, &c, !o->weights[0] && strcmp(hp->quant_method, "mxfp4") == 0, &p);
    if (mx)
        vf__assume(e, "MXFP4 experts: vLLM's %s backend holds %llu B per MoE layer and GPU beyond the checkpoint's "
                      "bytes (padding, swizzled layouts, float32 biases; quantization/mxfp4.py)",
                   vf__mxfp4_backend_name(vf__vllm_mxfp4_backend(o->infer.gpu_name)), (unsigned long long)mx);
    for (uint32_t r = 0; r < c.pp; r++) {
        vstage *s = &stages[r];
        vf__pp_indices(hp->n_layers, r, c.pp, &s->start, &s->end);
        s->weights = vf__sadd(vf__sadd(stage_weights(m, L, &c, r, s), xt.weights), mxfp4_stage(hp, &c, s, mx));
        stage_kv(hp, &c, &xt, s);
        uint64_t peak = vf__sadd(vf__sadd(r + 1 == c.pp && p.samp > p.fwd ? p.samp : p.fwd, p.ws), p.moe_ws);
        /* profile_run (v1/worker/gpu_model_runner.py): the encoder on the
         * dummy images first (its transient, with cuBLAS's workspace from its
         * first matmul), then its outputs kept in encoder_cache["tmp"] through
         * the decoder's pass and the sampler, cleared only after them; so
         * max(tower, decoder + outputs) (every rank here: ERR HIGH past one stage) */
        uint64_t tower = xt.act ? vf__sadd(xt.act, p.ws) : 0, dec = vf__sadd(peak, xt.embeds);
        s->act = tower > dec ? tower : dec;
    }
    e->starts = true;
    unified_free_check(o, &c, e);
    uint32_t busiest = size_pools(&c, stages, e);
    const vstage *b = &stages[busiest];
    double conc = b->conc;
    uint64_t tokens = b->tokens, total = 0, page = 0;
    for (uint32_t r = 0; r < c.pp; r++) {
        conc = stages[r].conc < conc ? stages[r].conc : conc;
        tokens = stages[r].tokens < tokens ? stages[r].tokens : tokens;
        total = vf__sadd(total, vf__smul(stages[r].total, c.tp));
        page = vf__sadd(page, stages[r].page);
    }
    /* hybrids with CUDA graphs: every decode sequence of a full graph takes
     * one block as its recurrent state, so vLLM stops when max_num_seqs
     * exceeds the pool's blocks (config/compilation.py
     * resolve_cudagraph_mode_and_sizes; seen from 0.27, taken for 0.27+ and
     * the current version) */
    uint64_t blocks = b->page ? b->pool / b->page : 0;
    if (e->starts && c.hybrid && c.hy.rec_groups && !o->infer.enforce_eager && c.is_v1 &&
        (c.minor == 0 || c.minor >= 27) && c.mns > blocks) {
        e->starts = false;
        snprintf(e->reason, sizeof e->reason,
                 "max_num_seqs (%llu) exceeds available Mamba cache blocks (%llu): each decode sequence needs one "
                 "(lower --max-num-seqs or --enforce-eager)",
                 (unsigned long long)c.mns, (unsigned long long)blocks);
    }
    if (e->starts && conc < 1.0) {
        e->starts = false;
        uint64_t fit = b->full_page ? b->pool / b->full_page * c.bs : 0;
        snprintf(e->reason, sizeof e->reason,
                 "max_model_len %llu needs %.2f GiB of KV cache, more than the %.2f GiB available; the largest "
                 "that fits is about %llu",
                 (unsigned long long)c.mml, (double)b->need / GIB, (double)b->pool / GIB,
                 (unsigned long long)(fit < c.mml ? fit : c.mml));
    }
    e->kv_cache_tokens = tokens;
    e->max_concurrency = conc;
    e->gpus = c.tp * c.pp;
    e->weights = b->weights;
    e->kv_cache = b->pool;
    e->activations = b->act;
    e->overhead = c.overhead;
    e->cuda_graph_bytes = c.graphs;
    e->per_gpu_bytes = b->total;
    /* the profile's cached blocks are released (torch.cuda.empty_cache in
     * determine_available_memory) before the pool is allocated in one piece */
    vf__device_set(e, vf__sadd(vf__sadd(b->weights, b->pool), b->act), 0, c.ctx, c.non_torch + c.graphs);
    /* without whole blocks every rank's device would be the budget plus
     * what lies outside it: requested + context + graphs captured after */
    uint64_t unrounded = vf__sadd(vf__sadd(c.requested, c.ctx), c.graphs_in_budget ? 0 : c.graphs);
    e->size_round_bytes = e->starts && unrounded > e->device_bytes ? unrounded - e->device_bytes : 0;
    /* the phases (vllm/v1/worker/gpu_worker.py): weights loaded after the
     * context; the profile's peak with its non-torch growth; then
     * empty_cache, the pool in one piece and the graphs captured: serving
     * idle holds no activations until a batch brings them back (device_bytes) */
    uint64_t ctx_all = c.ctx_in_non_torch ? c.ctx_part : c.ctx;
    e->phase_load_bytes = vf__sadd(b->weights, ctx_all);
    e->phase_profile_bytes = vf__sadd(vf__sadd(b->weights, b->act), vf__sadd(c.non_torch, c.ctx));
    e->phase_idle_bytes = vf__sadd(vf__sadd(b->weights, b->pool), vf__sadd(vf__sadd(c.non_torch, c.graphs), c.ctx));
    e->total_bytes = total;
    e->context = c.mml;
    e->batch = c.mns;
    e->kv_bytes_per_token = page / c.bs; /* every layer, one GPU's share of the heads */
    if (c.hybrid)
        vf__assume(e, "hybrid KV cache (vLLM v1): recurrent state page %llu B per layer and request, attention "
                      "block raised to %llu tokens, %u groups of %u layers (%u attention, %u recurrent), pages of "
                      "%llu B",
                   (unsigned long long)c.hy.state_page, (unsigned long long)c.hy.block,
                   c.hy.attn_groups + c.hy.rec_groups, c.hy.group, c.hy.attn_groups, c.hy.rec_groups,
                   (unsigned long long)(c.hy.page / c.hy.group));
    if (c.hybrid)
        vf__assume(e, "kv_cache_tokens = blocks / %u groups x block as vLLM prints it: recurrent groups share the "
                      "count, though a request needs only one block in each; max_concurrency is the capacity",
                   c.hy.attn_groups + c.hy.rec_groups);
    e->weight_bits = w.bits;
    e->pp_stages = c.pp;
    e->busiest_stage = busiest;
    e->stage_first_layer = b->start;
    e->stage_end_layer = b->end;
    notes(hp, o, &c, &p, stages, busiest, e);
    free(stages);
    return VF_OK;
}
