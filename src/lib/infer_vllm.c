/* infer_vllm.c — vLLM: the KV cache pool it will get. vLLM sizes the pool
 * from what is left of gpu_memory_utilization x device memory after the
 * weights, the peak of a profiling forward pass and the memory not owned by
 * PyTorch (vllm/v1/worker/gpu_worker.py determine_available_memory;
 * docs/memory-model.md, "vLLM"). */
#include "infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define GIB ((uint64_t)1 << 30)

/* Non-torch memory: what cudaMemGetInfo sees grow during profiling outside
 * PyTorch's allocator (vllm/utils memory_profiling: non_torch_increase, from
 * the snapshot taken after the CUDA context exists, so the context is not in
 * it): kernel images loaded lazily on first use (CUDA_MODULE_LOADING=LAZY),
 * library handles, NCCL buffers. Not derivable from the model; vLLM's own
 * logs give 0.16 GiB on an H100 at TP 1 (vllm PR #12126) and 0.20 GiB per
 * GPU with several GPUs (vllm PR #14447). */
#define VLLM_NON_TORCH_TP1 ((uint64_t)(0.16 * (double)GIB))
#define VLLM_NON_TORCH_MULTI ((uint64_t)(0.20 * (double)GIB))
#define VLLM_BLOCK 16 /* default block_size (CacheConfig) */

static bool v1(const char *ver, int *major, int *minor)
{
    *major = 0, *minor = 0;
    if (!ver || !*ver)
        return true;
    char *end;
    long ma = strtol(ver, &end, 10);
    long mi = *end == '.' ? strtol(end + 1, NULL, 10) : 0;
    *major = (int)ma, *minor = (int)mi;
    /* V1 became the default engine in 0.8 */
    return ma > 0 || mi >= 8;
}

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

vf_status vf__infer_vllm(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    if (!o->gpu_bytes)
        return vf__err(err, VF_EINVAL, "--gpu", "the vllm runtime needs the device memory (--gpu NAME or bytes)");
    if (!vf__hp_has_attention(hp))
        return vf__err(err, VF_EUNSUPPORTED, m->source, "no layer or head counts: the KV cache cannot be sized");
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
    if ((st = vf__weights_price(m, scheme, VF_DTYPE_UNKNOWN, &w, e, err)) != VF_OK)
        return st;
    int major, minor;
    bool is_v1 = v1(io->vllm_version, &major, &minor);
    uint32_t tp = o->tp ? o->tp : 1;
    double util = io->gpu_util > 0 ? io->gpu_util : 0.9;
    /* --context stands for max_model_len when that is not given: the
     * longest request the engine must admit */
    uint64_t mml = io->max_model_len ? io->max_model_len : io->context ? io->context : vf__hp_context(hp);

    /* Defaults (vllm/engine/arg_utils.py _set_default_args_v1, for `vllm
     * serve`): >= 70 GiB and not an A100: 8192 batched tokens, 1024
     * sequences; otherwise 2048 and 256. V0: max(max_model_len, 2048) tokens
     * without chunked prefill, 256 sequences. */
    bool big = o->gpu_bytes >= 70 * GIB && !vf__name_has(io->gpu_name, "a100");
    uint64_t mnbt, mns;
    if (is_v1) {
        mnbt = big ? 8192 : 2048;
        mns = big ? 1024 : 256;
    } else {
        mnbt = mml > 2048 ? mml : 2048;
        mns = 256;
    }
    if (io->max_num_batched_tokens)
        mnbt = io->max_num_batched_tokens;
    if (io->max_num_seqs)
        mns = io->max_num_seqs;
    uint64_t seqs = mns < mnbt ? mns : mnbt;

    vf_dtype kt, vt;
    if (!vf__kv_dtype_parse(io->kv_dtype, w.act_dtype, &kt, &vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");
    uint64_t a = vf_dtype_get(w.act_dtype)->block_bytes;

    /* weights per GPU: matrices and the vocabulary sharded (ColumnParallel /
     * RowParallel / VocabParallelEmbedding), 1-D tensors replicated; plus the
     * rotary cos/sin cache, max_position x rotary_dim in the model dtype
     * (model_executor/layers/rotary_embedding.py). */
    uint64_t hd = hp->head_dim ? hp->head_dim : (hp->n_heads ? hp->hidden_size / hp->n_heads : 0);
    if (vf__is_mla(hp))
        hd = hp->qk_rope_head_dim;
    uint64_t rope = vf__smul(vf__smul(vf__hp_context(hp), hd), a);
    uint64_t weights = vf__weights_per_gpu(&w, tp) + rope;
    /* a draft, LoRA slots and images: held before the pool is sized */
    vf__extras xt;
    if ((st = vf__extras_get(m, o, tp, &xt, e, err)) != VF_OK)
        return st;
    weights = vf__sadd(weights, xt.weights);

    /* Profiling run (v1/worker/gpu_model_runner.py profile_run; V0
     * worker/model_runner.py profile_run): a forward of mnbt tokens over
     * S = min(max_num_seqs, mnbt) requests, then the sampler on one position
     * per request; torch_peak_increase is the larger of the two peaks.
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
    uint64_t h = hp->hidden_size, ff = vf__hp_ff(hp), V = hp->vocab_size;
    uint64_t fwd = vf__smul(vf__smul(mnbt, a), 3 * h + 3 * (ff / tp));
    if (hp->n_experts && hp->moe_intermediate_size) {
        uint64_t k = hp->n_experts_active ? hp->n_experts_active : 1;
        uint64_t moe = vf__smul(vf__smul(mnbt, k), vf__smul(a, 3 * (hp->moe_intermediate_size / tp) + h));
        if (moe > fwd)
            fwd = moe;
    }
    uint64_t hid = vf__sadd(vf__smul(vf__smul(mnbt, h), a), vf__smul(vf__smul(seqs, h), is_v1 ? 2 * a : a));
    uint64_t logits = vf__smul(seqs, V);
    uint64_t sort_tmp = sort_transient(seqs, V);
    uint64_t samp = vf__sadd(vf__sadd(hid, vf__smul(logits, a + 4 + 4 + 8)), sort_tmp);
    uint64_t ws = vf__cublas_workspace_bytes(io->gpu_name, big ? o->gpu_bytes : 0);
    uint64_t act = vf__sadd(fwd > samp ? fwd : samp, ws);
    /* profile_run: the encoder on the dummy images first, its outputs kept for the decoder's pass */
    act = vf__sadd(act > xt.act ? act : xt.act, xt.embeds);
    uint64_t non_torch = tp > 1 ? VLLM_NON_TORCH_MULTI : VLLM_NON_TORCH_TP1;
    /* vLLM 0.6.x (worker.py after PR #10511) measured non-torch memory from
     * before the CUDA context existed, so the context is inside it: 1.79 GiB
     * at TP 1 and 3.58 GiB at TP 2 in that PR's own logs (H100, Llama-3-8B) */
    bool ctx_in_non_torch = major == 0 && minor == 6;
    if (ctx_in_non_torch)
        non_torch = (uint64_t)((tp > 1 ? 3.58 : 1.79) * (double)GIB);

    uint64_t requested = (uint64_t)((double)o->gpu_bytes * util);
    uint64_t non_kv = weights + act + non_torch;
    /* page per block over all layers, per GPU: KV heads split over TP but
     * never below one head (replicated); an MLA latent is one head */
    /* Per-request need (kv_cache_interface.py max_memory_usage_bytes):
     * full attention cdiv(max_model_len, 16) pages; a sliding-window layer
     * cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), 16) + 1. */
    uint64_t page = 0, full_page = 0, need = 0;
    uint64_t swa_tok = hp->sliding_window ? hp->sliding_window - 1 + mnbt : mml;
    if (swa_tok > mml)
        swa_tok = mml;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, true, &k, &v);
        uint64_t kvh = vf__layer_kv_heads(hp, il);
        if (!vf__is_mla(hp) && kvh) {
            uint64_t per = kvh >= tp ? kvh / tp : 1;
            k = k / kvh * per;
            v = v / kvh * per;
        }
        uint64_t lp = vf__smul(VLLM_BLOCK, vf__sadd(vf__dt_bytes(kt, k), vf__dt_bytes(vt, v)));
        page = vf__sadd(page, lp);
        bool swa = vf__layer_is_swa(hp, il) && is_v1;
        if (!swa)
            full_page = vf__sadd(full_page, lp);
        uint64_t nb = swa ? (swa_tok + VLLM_BLOCK - 1) / VLLM_BLOCK + 1 : (mml + VLLM_BLOCK - 1) / VLLM_BLOCK;
        need = vf__sadd(need, vf__smul(nb, lp));
    }
    /* hybrids: one page size for every layer, a state page per recurrent group */
    uint64_t bs = VLLM_BLOCK;
    vf__vllm_hybrid hy;
    bool hybrid = vf__vllm_hybrid_layout(hp, tp, kt, vt, mml, &hy);
    if (hybrid) {
        page = full_page = hy.page;
        need = hy.need;
        bs = hy.block;
    }
    if (xt.kv_token) { /* a draft's layers take a page in every block */
        uint64_t dp = vf__smul(bs, xt.kv_token);
        need = vf__sadd(need, vf__smul((mml + bs - 1) / bs, dp));
        page = vf__sadd(page, dp);
        full_page = vf__sadd(full_page, dp);
    }
    need = vf__sadd(need, xt.kv_seq);
    uint64_t pool = 0;
    e->starts = true;
    if (requested <= non_kv) {
        e->starts = false;
        snprintf(e->reason, sizeof e->reason,
                 "no memory left for the KV cache: weights, activations and non-torch memory need %.2f GiB of the "
                 "%.2f GiB allowed (gpu_memory_utilization %.2f)",
                 (double)non_kv / GIB, (double)requested / GIB, util);
    } else {
        uint64_t avail = requested - non_kv;
        pool = page ? avail / page * page : 0; /* whole blocks across every layer */
    }
    /* "GPU KV cache size": tokens of whole blocks; with sliding layers in
     * their own KV-cache groups (hybrid allocator) a token costs a page of
     * the full-attention layers only. */
    uint64_t per_block = full_page ? full_page : page;
    uint64_t tokens = per_block ? pool / per_block * bs : 0;
    if (hybrid && !hy.attn_groups)
        tokens = pool / page * mml; /* attention-free: one block per request, any length */
    double conc = need ? (double)pool / (double)need : 0;
    if (e->starts && conc < 1.0) {
        e->starts = false;
        uint64_t fit = full_page ? pool / full_page * bs : 0;
        snprintf(e->reason, sizeof e->reason,
                 "max_model_len %llu needs %.2f GiB of KV cache, more than the %.2f GiB available; the largest "
                 "that fits is about %llu",
                 (unsigned long long)mml, (double)need / GIB, (double)pool / GIB,
                 (unsigned long long)(fit < mml ? fit : mml));
    }
    e->kv_cache_tokens = tokens;
    e->max_concurrency = conc;
    e->gpus = tp;
    e->weights = weights;
    e->kv_cache = pool;
    e->activations = act;
    /* CUDA graphs: captured after the pool is sized (compile_or_warm_up_model),
     * for batch sizes 1, 2, 4, 8..256 step 8, then step 16 up to
     * min(2 x max_num_seqs, 512); their pool sits outside the KV budget.
     * 0.45 GiB measured for Llama-3.1-8B on H100 with vLLM 0.11 (A1). */
    uint64_t graphs = io->enforce_eager || !is_v1 ? 0 : (uint64_t)(0.45 * (double)GIB);
    char ctx_why[VF_NOTE_LEN];
    uint64_t ctx = ctx_in_non_torch ? 0 : vf__torch_context_bytes(o, false, ctx_why, sizeof ctx_why);
    if (ctx_in_non_torch)
        snprintf(ctx_why, sizeof ctx_why, "CUDA context inside vLLM 0.6's non-torch memory");
    e->overhead = non_torch + graphs + ctx;
    e->per_gpu_bytes = vf__sadd(vf__sadd(weights, pool), vf__sadd(act, e->overhead));
    /* the profile's cached blocks are released (torch.cuda.empty_cache in
     * determine_available_memory) before the pool is allocated in one piece */
    vf__device_set(e, vf__sadd(vf__sadd(weights, pool), act), 0, ctx, non_torch + graphs);
    e->total_bytes = vf__smul(e->per_gpu_bytes, tp);
    e->context = mml;
    e->batch = mns;
    e->kv_bytes_per_token = page / bs;
    if (hybrid)
        vf__assume(e, "hybrid KV cache (vLLM v1): recurrent state page %llu B per layer and request, attention "
                      "block raised to %llu tokens, %u groups of %u layers (%u attention, %u recurrent), pages of "
                      "%llu B",
                   (unsigned long long)hy.state_page, (unsigned long long)hy.block, hy.attn_groups + hy.rec_groups,
                   hy.group, hy.attn_groups, hy.rec_groups, (unsigned long long)(hy.page / hy.group));
    e->weight_bits = w.bits;

    vf__assume(e, "runtime = vLLM %s (%s accounting), gpu %.2f GiB x gpu_memory_utilization %.2f",
               io->vllm_version[0] ? io->vllm_version : "current", is_v1 ? "V1" : "V0",
               (double)o->gpu_bytes / GIB, util);
    vf__assume(e, "max_model_len %llu, max_num_batched_tokens %llu, max_num_seqs %llu, block_size %d, tp %u",
               (unsigned long long)mml, (unsigned long long)mnbt, (unsigned long long)mns, VLLM_BLOCK, tp);
    vf__assume(e, "rotary cos/sin cache = %llu B added to the weights", (unsigned long long)rope);
    if (hp->sliding_window)
        vf__assume(e, "sliding-window layers: %llu tokens per request (window - 1 + max_num_batched_tokens)",
                   (unsigned long long)swa_tok);
    vf__assume(e, "kv cache = K %s, V %s%s", vf_dtype_get(kt)->name, vf_dtype_get(vt)->name,
               vf__is_mla(hp) ? ", MLA latent (kv_lora_rank + qk_rope_head_dim)" : "");
    vf__assume(e, "non-torch memory %.2f GiB (vLLM's logs, vllm PRs #12126/#14447, 0.6.x: #10511); overhead = that + CUDA graphs "
               "%.2f GiB (captured after the pool is sized) + CUDA context, outside the pool",
               (double)non_torch / GIB, (double)graphs / GIB);
    vf__assume(e, "%s", ctx_why);
    vf__explain(e, "kv pool = %.2f GiB x %.2f - weights %llu - activation peak %llu - non-torch %llu = %llu B",
                (double)o->gpu_bytes / GIB, util, (unsigned long long)weights, (unsigned long long)act,
                (unsigned long long)non_torch, (unsigned long long)pool);
    vf__explain(e, "activation peak = max(forward %llu x (3 x %llu + 3 x %llu) x %llu = %llu, sampler hidden %llu + "
                "%llu x %llu logits x (%llu + 16) + sort scratch %llu = %llu) + cuBLAS workspace %llu = %llu B",
                (unsigned long long)mnbt, (unsigned long long)h, (unsigned long long)(ff / tp),
                (unsigned long long)a, (unsigned long long)fwd, (unsigned long long)hid, (unsigned long long)seqs,
                (unsigned long long)V, (unsigned long long)a, (unsigned long long)sort_tmp, (unsigned long long)samp,
                (unsigned long long)ws, (unsigned long long)act);
    vf__explain(e, "kv tokens = floor(pool / %llu B per 16-token block) x 16 = %llu; concurrency = pool / %llu B "
                "per max_model_len request = %.2f",
                (unsigned long long)per_block, (unsigned long long)tokens, (unsigned long long)need, conc);
    return VF_OK;
}
