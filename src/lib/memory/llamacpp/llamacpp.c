/* llamacpp.c — llama.cpp's own buffers: model, context (KV), compute
 * and output, per device and host (docs/memory-model.md, "llama.cpp").
 * Facts from llama.cpp's source (src/llama-context.cpp, llama-kv-cache.cpp,
 * llama-kv-cache-iswa.cpp, llama-model.cpp) and checked against
 * tests/reference/llamacpp/results.json. */
#include "memory/infer.h"
#include "memory/llamacpp/tensor_place.h"

#include <stdlib.h>
#include <string.h>

#define PAD(x, n) ((((x) + (n) - 1) / (n)) * (n))

/* The device a layer's weights and KV live on: -1 host, else the GPU index.
 * llama.cpp offloads the LAST n_gpu_layers blocks, and counts the output
 * layer as one more (i_gpu_start = max(n_layer + 1 - ngl, 0), llama-model.cpp
 * load_tensors); offloaded layers are split over devices by the cumulative
 * tensor-split fractions. */
static int layer_device(uint32_t il, uint32_t n_layer, uint32_t ngl, uint32_t n_dev, const double *cum)
{
    uint32_t start = ngl >= n_layer + 1 ? 0 : n_layer + 1 - ngl;
    if (il < start || n_dev == 0)
        return -1;
    double pos = (double)(il - start) / (double)(n_layer + 1 - start);
    for (uint32_t d = 0; d < n_dev; d++)
        if (pos < cum[d])
            return (int)d;
    return (int)n_dev - 1;
}

/* The cache layout of a llama.cpp build (docs/memory-model.md, "llama.cpp:
 * cache layouts by build"). Each threshold is the first dated release found
 * after the PR's merge; a build between the merge and it is priced with the
 * older, larger layout (erring high). */
#define LC_BUILD_MLA 5165     /* #12801 (2025-04-15): deepseek2 caches the latent, not per-head K and V */
#define LC_BUILD_SWA 5501     /* #13194 (2025-05-20): sliding-window layers in their own, smaller cache */
#define LC_BUILD_STREAMS 5885 /* #14363 (after build 5884, 2025-07-12): one KV stream per sequence */
#define LC_BUILD_VLESS 7836   /* #19067 (2026-01-24): MLA's V read from the K cache, no V cache */
/* #18898 (merged 2026-01-23, after b7774, #18550's own release): the graph always holds an f32
 * embeddings input beside the token ids. b7836 (2026-01-26) has it; a build between is priced
 * with it (the larger buffer). */
#define LC_BUILD_EMBD_INPUT 7775

typedef struct lc_layout {
    bool mla_latent; /* MLA: the kv_lora_rank + rope latent as K (else per-head K and V) */
    bool mla_v;      /* MLA: a V cache of the kv_lora_rank latent beside it */
    bool swa_cache;  /* sliding-window layers capped at their window */
    bool streams;    /* a stream per sequence unless --kv-unified (else one shared stream) */
    bool embd_input; /* the f32 embeddings graph input, allocated beside the token ids */
} lc_layout;

static lc_layout lc_layout_of(uint32_t build)
{
    lc_layout l = {true, false, true, true, true};
    if (!build)
        return l;
    l.mla_latent = build >= LC_BUILD_MLA;
    l.mla_v = build < LC_BUILD_VLESS;
    l.swa_cache = build >= LC_BUILD_SWA;
    l.streams = build >= LC_BUILD_STREAMS;
    l.embd_input = build >= LC_BUILD_EMBD_INPUT;
    return l;
}

/* K and V elements per cell of layer il in that layout. */
static void lc_kv_elems(const vf_hparams *hp, uint32_t il, const lc_layout *l, uint64_t *k, uint64_t *v)
{
    vf__kv_layer_elems(hp, il, l->mla_latent, k, v);
    if (l->mla_latent && l->mla_v && vf__is_mla(hp) && *k)
        *v = hp->kv_lora_rank;
}

/* One llama.cpp run as its context settles it, and where everything lands. */
typedef struct lc_run {
    lc_layout lay;
    /* cparams */
    uint64_t n_seq, n_ctx, n_ctx_seq, n_stream, n_batch, n_ubatch;
    uint64_t n_rs_seq; /* recurrent-state snapshots per sequence for a draft's rollback */
    bool unified, fa;
    vf_dtype kt, vt;
    /* devices: offloaded layers by cumulative --tensor-split fractions */
    uint32_t n_dev, nl, ngl;
    int out_dev;
    double cum[VF_MAX_SPLIT];
    /* placement */
    uint64_t dev_model[VF_MAX_SPLIT], dev_kv[VF_MAX_SPLIT], host_model, host_kv;
    /* tensors the overrides put in host memory, and the op-offload copies of
     * them ggml-cuda makes: per device, the most one layer's take */
    uint64_t overridden_host, dev_offload[VF_MAX_SPLIT];
    uint32_t n_overridden;
    uint64_t swa_cells, kv_total, kv_full_cells;
    /* ggml-alloc's compute buffer moments and the output buffer */
    uint64_t logits_phase, attn_phase, ffn_phase, compute, output;
    uint64_t max_heads, kv_row; /* the widest layer's heads and K + V elements per cell */
    /* ggml-cuda beside the buffers, per device */
    vf__ggml_dev gd[VF_MAX_SPLIT];
    vf__ggml_cost cost[VF_MAX_SPLIT];
} lc_run;

/* cparams (llama-context.cpp): n_ctx from -c (common default 4096), n_batch =
 * min(n_ctx, -b), n_ubatch = min(n_batch, -ub); one KV stream per sequence
 * unless unified (llama-completion default: not unified). n_ctx is padded to
 * 256; without a unified cache each sequence's stream is padded to 256 too
 * and n_ctx follows. Flash attention "auto" resolves to on where the backend
 * supports it (CUDA, Metal, CPU). */
static vf_status lc_cparams(const vf_infer_opts *io, lc_run *r, vf_error *err)
{
    r->n_seq = io->parallel ? io->parallel : 1;
    r->n_ctx = PAD(io->context ? io->context : 4096, 256);
    r->unified = io->kv_unified || !r->lay.streams;
    r->n_ctx_seq = r->unified ? r->n_ctx : PAD(r->n_ctx / r->n_seq, 256);
    r->n_stream = r->unified ? 1 : r->n_seq;
    if (!r->unified)
        r->n_ctx = r->n_ctx_seq * r->n_seq;
    r->n_batch = io->lc_batch ? io->lc_batch : 2048;
    if (r->n_batch > r->n_ctx)
        r->n_batch = r->n_ctx;
    r->n_ubatch = io->ubatch ? io->ubatch : 512;
    if (r->n_ubatch > r->n_batch)
        r->n_ubatch = r->n_batch;
    r->fa = io->flash_attn != 0;
    if (!vf__kv_dtype_parse(io->kv_dtype, VF_DTYPE_F16, &r->kt, &r->vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");
    if (!r->fa && vf_dtype_get(r->vt)->block_elements > 1)
        return vf__err(err, VF_EINVAL, io->kv_dtype, "llama.cpp needs flash attention for a quantized V cache (-fa on)");
    return VF_OK;
}

/* The devices and the share of the offloaded layers each takes. */
static vf_status lc_devices(const vf_estimate_opts *o, const vf_hparams *hp, lc_run *r, vf_error *err)
{
    const vf_infer_opts *io = &o->infer;
    uint32_t n_dev = o->gpus ? o->gpus : (o->tp ? o->tp : 1);
    if (io->n_split)
        n_dev = io->n_split;
    if (io->n_gpu_layers == 0)
        n_dev = 0;
    if (n_dev > VF_MAX_SPLIT)
        return vf__err(err, VF_EINVAL, "--tensor-split", "at most %d devices", VF_MAX_SPLIT);
    double sum = 0;
    for (uint32_t d = 0; d < n_dev; d++)
        sum += io->n_split ? io->tensor_split[d] : 1.0;
    if (n_dev && sum <= 0)
        return vf__err(err, VF_EINVAL, "--tensor-split", "fractions must add up to more than zero");
    for (uint32_t d = 0; d < n_dev; d++)
        r->cum[d] = (d ? r->cum[d - 1] : 0) + (io->n_split ? io->tensor_split[d] : 1.0) / sum;
    r->n_dev = n_dev;
    r->nl = hp->n_layers;
    r->ngl = io->n_gpu_layers < 0 ? r->nl + 1 : (uint32_t)io->n_gpu_layers;
    r->out_dev = layer_device(r->nl, r->nl, r->ngl, n_dev, r->cum);
    return VF_OK;
}

/* What a weight matrix on device d asks ggml-cuda's pool for in a
 * matmul: [.., N, K] in PyTorch order, K its input; stacked experts are one
 * N x K matrix each, and a MoE matmul's input is n_used rows per token. A
 * matrix stored below 16 bits per weight is quantized (MMQ). */
static void lc_note_matrix(lc_run *r, const vf_hparams *hp, const vf_tensor *t, int d, uint64_t bytes)
{
    if (d < 0 || t->n_dims < 2)
        return;
    vf__ggml_dev *g = &r->gd[d];
    if (t->layer >= 0)
        g->layers = true;
    uint64_t n = t->shape[t->n_dims - 2], k = t->shape[t->n_dims - 1];
    bool quantized = bytes < vf__smul(t->n_params, 2);
    if (!quantized) {
        if (vf__sadd(n, k) > g->f_nk)
            g->f_nk = vf__sadd(n, k);
        return;
    }
    uint64_t in = t->n_experts > 1 || t->n_dims > 2 ? vf__smul(k, hp->n_experts_active ? hp->n_experts_active : 1) : k;
    if (in > g->q_in)
        g->q_in = in;
    if (vf__smul(n, k) > g->q_elems)
        g->q_elems = vf__smul(n, k), g->q_nk = vf__sadd(n, k);
}

/* --n-cpu-moe N given after the overrides (vf_estimate_opts.n_cpu_moe): the
 * routed experts of blocks below N (every block's: -1) in host memory. */
static bool lc_cpu_moe(const vf_estimate_opts *o, const vf_model *m, const vf_tensor *t, int *dev)
{
    if (!o->n_cpu_moe || t->layer < 0 || (o->n_cpu_moe > 0 && t->layer >= o->n_cpu_moe) ||
        !vf__lc_is_routed_expert(m, t))
        return false;
    *dev = -1;
    return true;
}

static void lc_put(uint64_t *dev, uint64_t *host, int d, uint64_t b)
{
    if (d < 0)
        *host = vf__sadd(*host, b);
    else
        dev[d] = vf__sadd(dev[d], b);
}

/* Weights: blocks by layer; token embeddings stay on the host (the input
 * layer is always the CPU, llama-model.cpp dev_input); output on the output
 * layer's device; a tied output is a duplicated copy there. */
static vf_status lc_place_weights(const vf_model *m, const vf_estimate_opts *o, lc_run *r, vf_error *err)
{
    const uint64_t *bytes;
    vf_status st = vf__weights_tensor_bytes(m, o->weights, VF_DTYPE_UNKNOWN, &bytes, err);
    if (st != VF_OK)
        return st;
    vf__lc_overrides *ov = calloc(1, sizeof *ov);
    if (!ov) {
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    }
    if ((st = vf__lc_overrides_parse(o->tensor_overrides, r->n_dev, ov, err)) != VF_OK) {
        free(ov);
        return st;
    }
    uint64_t *layer_host = r->nl ? calloc(r->nl, sizeof *layer_host) : NULL;
    if (r->nl && !layer_host) {
        vf__lc_overrides_free(ov), free(ov);
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    }
    bool has_output = false;
    uint64_t embd_bytes = 0, host_out = 0;
    int32_t last_layer = -1; /* tensors come layer by layer: its device once per layer */
    int last_dev = -1;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & VF_TENSOR_MTP)
            continue; /* nextn layers: TENSOR_SKIP, never allocated */
        uint64_t b = bytes[i];
        int dev;
        if (t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED) {
            dev = -1;
            if (t->role == VF_ROLE_EMBED)
                embd_bytes = vf__sadd(embd_bytes, b);
        } else if (t->layer >= 0 && (uint32_t)t->layer < r->nl) {
            if (t->layer != last_layer) {
                last_dev = layer_device((uint32_t)t->layer, r->nl, r->ngl, r->n_dev, r->cum);
                last_layer = t->layer;
            }
            dev = last_dev;
        } else {
            dev = r->out_dev;
            if (t->role == VF_ROLE_OUTPUT)
                has_output = true;
        }
        int odev;
        bool in_layer = t->layer >= 0 && (uint32_t)t->layer < r->nl;
        if (vf__lc_override_dev(ov, m, t, &odev) || lc_cpu_moe(o, m, t, &odev)) {
            r->n_overridden++;
            if (odev < 0 && dev >= 0 && in_layer && t->n_dims >= 2)
                r->overridden_host = vf__sadd(r->overridden_host, b);
            dev = odev;
        }
        if (dev < 0 && t->n_dims >= 2 && t->role != VF_ROLE_EMBED && t->role != VF_ROLE_POS_EMBED) {
            if (in_layer)
                layer_host[t->layer] = vf__sadd(layer_host[t->layer], b);
            else if (b > host_out)
                host_out = b;
        }
        lc_put(r->dev_model, &r->host_model, dev, b);
        lc_note_matrix(r, &m->hp, t, dev, b);
    }
    if (!has_output && r->out_dev < 0 && m->hp.tie_word_embeddings && embd_bytes > host_out)
        host_out = embd_bytes; /* the head's matmul reads the host embeddings */
    /* op offload (ggml-backend.cpp ggml_backend_sched_backend_id_from_cur,
     * op_offload on by default; ggml-cuda offload_op: batch >= 32): an op
     * whose weight is in host memory runs on the first backend that takes
     * it, the first GPU (backends are ordered GPUs first, the CPU last),
     * the weight copied into that GPU's compute buffer as a split input for
     * the split's life: a layer's host matrices at a time (layers -ngl left
     * on the CPU and tensors overridden to it alike), or the output head */
    if (r->n_ubatch >= 32 && r->n_dev) {
        for (uint32_t l = 0; l < r->nl; l++)
            if (layer_host[l] > r->dev_offload[0])
                r->dev_offload[0] = layer_host[l];
        if (host_out > r->dev_offload[0])
            r->dev_offload[0] = host_out;
    }
    free(layer_host);
    vf__lc_overrides_free(ov);
    free(ov);
    if (!has_output && r->out_dev >= 0 && m->hp.tie_word_embeddings) {
        lc_put(r->dev_model, &r->host_model, r->out_dev, embd_bytes); /* TENSOR_DUPLICATED output copy */
        for (size_t i = 0; i < m->n_tensors; i++) /* ... and its matmul on that device */
            if (m->tensors[i].role == VF_ROLE_EMBED)
                lc_note_matrix(r, &m->hp, &m->tensors[i], r->out_dev, embd_bytes);
    }
    return VF_OK;
}

/* KV cache (llama-kv-cache.cpp): per layer, cells x ggml_row_size(type,
 * n_embd_k_gqa) for K and the same for V. Sliding-window layers get their own
 * cache (llama-kv-cache-iswa.cpp) of min(n_ctx_seq, PAD(n_swa + n_ubatch, 256))
 * cells per stream unless --swa-full. Recurrent layers
 * (llama-memory-recurrent.cpp): one f32 r and s state per sequence, and
 * n_rs_seq rollback snapshots of each beside it (mem_size x (1 + n_rs_seq)
 * rows), on the layer's device. */
static void lc_place_kv(const vf_hparams *hp, const vf_infer_opts *io, lc_run *r)
{
    r->swa_cells = r->n_ctx_seq;
    if (hp->sliding_window && !io->swa_full && r->lay.swa_cache) {
        uint64_t s = PAD((uint64_t)hp->sliding_window * (r->unified ? r->n_seq : 1) + r->n_ubatch, 256);
        if (s < r->swa_cells)
            r->swa_cells = s;
    }
    r->kv_full_cells = r->n_ctx_seq * r->n_stream;
    for (uint32_t il = 0; il < r->nl; il++) {
        uint64_t k, v;
        lc_kv_elems(hp, il, &r->lay, &k, &v);
        uint64_t cells = (vf__layer_is_swa(hp, il) ? r->swa_cells : r->n_ctx_seq) * r->n_stream;
        uint64_t b = vf__sadd(vf__smul(cells, vf__dt_bytes(r->kt, k)), vf__smul(cells, vf__dt_bytes(r->vt, v)));
        /* recurrent layers (llama-memory-recurrent.cpp): r and s rows per sequence and snapshot */
        if (vf__layer_recurrent(hp, il)) /* f32 r and s, whatever the model's dtype */
            b = vf__sadd(b, vf__smul(hp->recurrent_state_elems ? 4 * hp->recurrent_state_elems
                                                                : hp->recurrent_state_bytes,
                                     vf__smul(r->n_seq, vf__sadd(1, r->n_rs_seq))));
        lc_put(r->dev_kv, &r->host_kv, layer_device(il, r->nl, r->ngl, r->n_dev, r->cum), b);
        r->kv_total = vf__sadd(r->kv_total, b);
    }
}

/* Compute buffer: ggml-alloc's peak over the worst-case graph (n_ubatch
 * tokens, every position an output, the whole cache visible). The peak is the
 * largest of three moments, each counted in f32:
 *  logits: n_ubatch x (n_vocab + 2 n_embd) (logits, final norm, residual);
 *  attention without flash attention: KQ n_head x n_kv x n_ubatch plus its
 *    mask n_kv x n_ubatch, plus the Q/K/V/residual rows;
 *  attention with flash attention: the f16 mask and the Q/K/V rows;
 *  feed-forward: n_ubatch x (2 n_ff + 2 n_embd) (experts: x n_used).
 * Output buffer (llama_context::output_reserve): n_vocab floats per sequence,
 * in host memory. (Hyper-parameters and knobs are capped in infer.c; products
 * saturate.) */
static void lc_compute(const vf_hparams *hp, lc_run *r)
{
    uint64_t n_embd = hp->hidden_size, n_vocab = hp->vocab_size, ub = r->n_ubatch, n_kv = r->n_ctx_seq;
    uint64_t kq = 0, kvrow = 0;
    for (uint32_t il = 0; il < r->nl; il++) {
        uint64_t k, v;
        lc_kv_elems(hp, il, &r->lay, &k, &v);
        uint64_t lkv = vf__layer_is_swa(hp, il) ? r->swa_cells : n_kv;
        uint64_t h = vf__layer_heads(hp, il);
        if (vf__smul(h, lkv) > kq)
            kq = vf__smul(h, lkv);
        if (k + v > kvrow)
            kvrow = k + v;
        if (h > r->max_heads)
            r->max_heads = h;
    }
    r->kv_row = kvrow;
    uint64_t rows = vf__sadd(vf__smul(3, n_embd), kvrow);
    r->logits_phase = vf__smul(vf__smul(ub, vf__sadd(n_vocab, 2 * n_embd)), 4);
    uint64_t mask = vf__smul(vf__smul(n_kv, PAD(ub, 64)), r->fa ? 2 : 4);
    uint64_t row_bytes = vf__smul(vf__smul(ub, rows), 4);
    r->attn_phase = vf__sadd(vf__sadd(mask, row_bytes), r->fa ? 0 : vf__smul(vf__smul(kq, ub), 4));
    uint64_t ff = hp->n_experts ? (hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp)) *
                                      (hp->n_experts_active ? hp->n_experts_active : 1)
                                : vf__hp_ff(hp);
    r->ffn_phase = vf__smul(vf__smul(ub, vf__sadd(vf__smul(2, ff), 2 * n_embd)), 4);
    r->compute = r->logits_phase;
    if (r->attn_phase > r->compute)
        r->compute = r->attn_phase;
    if (r->ffn_phase > r->compute)
        r->compute = r->ffn_phase;
    r->output = vf__smul(vf__smul(r->n_seq, n_vocab), 4);
}

/* The CPU backend's compute buffer beside GPUs (CUDA_Host: pinned): the
 * graph's inputs, which the scheduler keeps on the CPU (ggml-backend.cpp:
 * "graph input ... last backend (assumed CPU)") — token ids, positions and
 * output ids (4 bytes per token each), the f32 KQ mask of each cache
 * (n_kv x PAD(n_ubatch, 64), llama-graph.cpp) — and the token embeddings'
 * get_rows (n_ubatch x n_embd f32: the table is in host memory), and from
 * #18898 the f32 embeddings input beside the token ids (llama-graph.cpp
 * build_inp_embd: both inputs built, one selected per batch); with the output
 * layer on the CPU, the whole graph's buffer besides. */
static uint64_t lc_host_compute(const vf_hparams *hp, const lc_run *r)
{
    uint64_t ub = r->n_ubatch;
    uint64_t in = vf__smul(vf__smul(3, ub), 4);
    uint64_t embd_rows = vf__smul(vf__smul(ub, hp->hidden_size), 4);
    in = vf__sadd(in, r->lay.embd_input ? vf__smul(embd_rows, 2) : embd_rows);
    bool swa = false, full = false;
    for (uint32_t il = 0; il < r->nl; il++) {
        uint64_t k, v;
        lc_kv_elems(hp, il, &r->lay, &k, &v);
        if (!k && !v)
            continue;
        if (vf__layer_is_swa(hp, il) && r->swa_cells < r->n_ctx_seq)
            swa = true;
        else
            full = true;
    }
    uint64_t per_stream = (ub + r->n_stream - 1) / r->n_stream; /* [n_kv, PAD(n_tokens / n_stream, 64), 1, n_stream] */
    uint64_t rows = vf__smul(PAD(per_stream, 64), 4 * r->n_stream);
    if (full)
        in = vf__sadd(in, vf__smul(r->n_ctx_seq, rows));
    if (swa)
        in = vf__sadd(in, vf__smul(r->swa_cells, rows));
    return r->out_dev < 0 ? vf__sadd(in, r->compute) : in;
}

/* The compute buffer device d holds: the whole graph's on the output layer's
 * device, the layers' part elsewhere. */
static uint64_t lc_dev_compute(const lc_run *r, uint32_t d)
{
    uint64_t c = (int)d == r->out_dev ? r->compute : (r->attn_phase > r->ffn_phase ? r->attn_phase : r->ffn_phase);
    return vf__sadd(c, r->dev_offload[d]);
}

/* ggml-cuda's context, cuBLAS workspace and pool on each device. */
static void lc_backend(const vf_estimate_opts *o, lc_run *r)
{
    vf__ggml_shape s = {.n_ubatch = r->n_ubatch, .n_kv = r->n_ctx_seq, .n_head = r->max_heads,
                        .kv_row_elems = r->kv_row, .fa = r->fa,
                        .kv_quantized = vf_dtype_get(r->kt)->block_elements > 1 ||
                                        vf_dtype_get(r->vt)->block_elements > 1};
    for (uint32_t d = 0; d < r->n_dev; d++)
        vf__ggml_cuda_overhead(o, &r->gd[d], &s, &r->cost[d]);
}

/* What each GPU holds; the busiest is the estimate's per-GPU figure. */
static void lc_fill(vf_estimate *e, const vf_hparams *hp, const lc_run *r, double bits)
{
    uint64_t peak = 0, tot = 0, all_model = r->host_model;
    uint32_t peak_dev = 0;
    for (uint32_t d = 0; d < r->n_dev; d++) {
        uint64_t ctxb = r->cost[d].total;
        uint64_t here = vf__sadd(vf__sadd(r->dev_model[d], r->dev_kv[d]), vf__sadd(lc_dev_compute(r, d), ctxb));
        if (here > peak)
            peak = here, peak_dev = d;
        tot = vf__sadd(tot, vf__sadd(vf__sadd(r->dev_model[d], r->dev_kv[d]),
                                     vf__sadd(vf__sadd((int)d == r->out_dev ? r->compute : 0, r->dev_offload[d]), ctxb)));
        all_model = vf__sadd(all_model, r->dev_model[d]);
    }
    e->gpus = r->n_dev ? r->n_dev : 1;
    e->context = r->n_ctx;
    e->batch = r->n_seq;
    uint64_t per_token = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t k, v;
        lc_kv_elems(hp, il, &r->lay, &k, &v);
        per_token = vf__sadd(per_token, vf__sadd(vf__dt_bytes(r->kt, k), vf__dt_bytes(r->vt, v)));
    }
    e->kv_bytes_per_token = per_token;
    e->weight_bits = bits;
    e->rb_model = all_model;
    e->rb_context = r->kv_total;
    e->rb_compute = r->compute;
    e->rb_output = r->output;
    e->rb_host_model = r->host_model;
    e->rb_host_context = r->host_kv;
    e->rb_host_compute = r->n_dev ? lc_host_compute(hp, r) : r->compute;
    e->rb_devices = r->n_dev;
    if (r->n_dev)
        e->rb_compute = 0;
    for (uint32_t d = 0; d < r->n_dev; d++) {
        uint64_t *b = e->rb_dev[d];
        b[VF_DEVBUF_MODEL] = r->dev_model[d];
        b[VF_DEVBUF_CONTEXT] = r->dev_kv[d];
        b[VF_DEVBUF_COMPUTE] = lc_dev_compute(r, d);
        b[VF_DEVBUF_OFFLOAD] = r->dev_offload[d];
        b[VF_DEVBUF_BACKEND] = r->cost[d].total;
        e->rb_compute = vf__sadd(e->rb_compute, b[VF_DEVBUF_COMPUTE]); /* every device's */
    }
    if (r->n_dev) {
        e->weights = r->dev_model[peak_dev];
        e->kv_cache = r->dev_kv[peak_dev];
        e->activations = lc_dev_compute(r, peak_dev);
        const vf__ggml_cost *c = &r->cost[peak_dev];
        e->overhead = c->total;
        e->per_gpu_bytes = peak;
        /* ggml-alloc's buffers are cudaMalloc'd as sized: reserved = allocated */
        uint64_t buffers = peak - c->total;
        vf__device_set(e, buffers, buffers, c->context, vf__sadd(c->cublas, c->pool));
        /* llama.cpp's own margin: -fit (on by default) moves what the user
         * left unset (layers, context) until each device keeps --fit-target
         * free, 1024 MiB by default (common/arg.cpp) */
        e->margin_bytes = (uint64_t)1024 << 20;
        e->total_bytes = tot;
        e->host_bytes = vf__sadd(vf__sadd(r->host_model, r->host_kv), vf__sadd(r->output, e->rb_host_compute));
    } else {
        /* everything on the host (-ngl 0): the figures are host memory */
        e->weights = all_model;
        e->kv_cache = r->kv_total;
        e->activations = vf__sadd(r->compute, r->output);
        e->per_gpu_bytes = e->total_bytes = vf__sadd(vf__sadd(all_model, r->kv_total), e->activations);
        e->host_bytes = e->total_bytes;
    }
}

/* n_rs_seq (common.cpp: cparams.n_rs_seq = params.speculative.need_n_rs_seq()):
 * a model-based draft's n_max — MTP (--draft-tokens with no --draft: the
 * model's own MTP head), EAGLE-3 or DFlash (a --draft whose GGUF is of that
 * architecture, as common_speculative_types_from_gguf reads it) — else 0 (a
 * plain draft model, n-gram drafts, none); kept only where the architecture
 * supports the rollback (llama-context.cpp). */
static uint64_t lc_rs_seq(const vf_model *m, const vf_estimate_opts *o)
{
    if (!o->draft_tokens || !vf__llamacpp_rs_rollback(m))
        return 0;
    if (!o->draft_model)
        return o->draft ? 0 : o->draft_tokens;
    const char *a = vf_model_hparams(o->draft_model)->architecture;
    return strcmp(a, "eagle3") == 0 || strcmp(a, "dflash") == 0 ? o->draft_tokens : 0;
}

static void lc_report(vf_estimate *e, const vf_hparams *hp, const vf_estimate_opts *o, const lc_run *r)
{
    const vf_infer_opts *io = &o->infer;
    vf__assume(e, "runtime = llama.cpp: n_ctx %llu (padded to 256), n_seq %llu (%s cache), n_batch %llu, "
               "n_ubatch %llu, flash attention %s", (unsigned long long)r->n_ctx, (unsigned long long)r->n_seq,
               r->unified ? "unified" : "one stream per sequence",
               (unsigned long long)r->n_batch, (unsigned long long)r->n_ubatch, r->fa ? "on" : "off");
    vf__assume(e, "kv cache = K %s, V %s", vf_dtype_get(r->kt)->name, vf_dtype_get(r->vt)->name);
    if (o->llamacpp_build)
        vf__assume(e, "llamacpp_build = b%u: %s%s%s%s", o->llamacpp_build,
                   !vf__is_mla(hp) ? "" : !r->lay.mla_latent ? "MLA per-head K and V cached (before #12801); "
                                     : r->lay.mla_v ? "MLA latent K and a latent V cache (#12801, before #19067); "
                                                    : "MLA latent K, V read from it (#19067); ",
                   !hp->sliding_window ? "" : r->lay.swa_cache ? "sliding-window cache (#13194); "
                                                                : "sliding-window layers at full context (before #13194); ",
                   r->lay.streams ? "a KV stream per sequence (#14363)" : "one KV stream for all sequences (before #14363)",
                   r->lay.embd_input ? "; an f32 embeddings input on the host (#18898)"
                                     : "; no embeddings input beside the token ids (before #18898)");
    if (r->n_rs_seq)
        vf__assume(e, "recurrent state = %llu rows per recurrent layer: %llu sequence(s) x (1 + n_rs_seq %llu rollback "
                      "snapshots for the draft's %u tokens)%s", (unsigned long long)(r->n_seq * (1 + r->n_rs_seq)),
                   (unsigned long long)r->n_seq, (unsigned long long)r->n_rs_seq, o->draft_tokens,
                   o->draft_model || hp->n_mtp_layers ? "" : "; the MTP head is not in this file (a sidecar GGUF): "
                                                             "its weights not priced");
    if (hp->sliding_window && r->lay.swa_cache)
        vf__assume(e, "sliding-window layers: %llu cells per sequence (window %u%s)", (unsigned long long)r->swa_cells,
                   hp->sliding_window, io->swa_full ? ", --swa-full" : " + ubatch, padded to 256");
    if (r->ngl > r->nl)
        vf__assume(e, "n_gpu_layers = all %u blocks and the output layer over %u device(s); token embeddings in "
                   "host memory", r->nl, r->n_dev);
    else
        vf__assume(e, "n_gpu_layers = %u: the last %u blocks%s on %u device(s), the rest and the token embeddings "
                   "in host memory", r->ngl, r->ngl ? r->ngl - 1 : 0, r->ngl ? " and the output layer" : "", r->n_dev);
    if (r->n_dev) {
        const vf__ggml_cost *c = &r->cost[0];
        for (uint32_t d = 1; d < r->n_dev; d++)
            if (r->cost[d].total > c->total)
                c = &r->cost[d];
        vf__assume(e, "overhead = ggml-cuda per GPU: %s + cuBLAS workspace %llu MiB + pool up to %llu MiB (VMM "
                   "pool, 2 MiB granularity, kept at its largest op: %s)", c->context_why,
                   (unsigned long long)(c->cublas >> 20), (unsigned long long)(c->pool >> 20), c->pool_why);
        vf__assume(e, "margin = 1024 MiB free kept by fit on each GPU: llama.cpp's own -fit target (--fit-target "
                      "default); with less free, -fit moves unset layers or context off the device");
        if (c->old_gpu)
            vf__assume(e, "matmuls = before Turing: a prompt's quantized matmuls dequantize the weight to f16 "
                          "for cuBLAS (pool)");
        else if (vf__gpu_generation(io->gpu_name) == VF_GEN_UNKNOWN)
            vf__assume(e, "matmuls = device generation unknown: MMQ taken (Turing or newer); before Turing a "
                          "prompt's quantized matmul holds its weight in f16 in the pool");
    }
    if (o->n_cpu_moe)
        vf__assume(e, "n_cpu_moe = %s: the routed experts of %s in host memory (after any -ot, as llama.cpp "
                      "appends the flag's patterns)", o->n_cpu_moe < 0 ? "all (--cpu-moe)" : "--n-cpu-moe",
                   o->n_cpu_moe < 0 ? "every block" : "the first blocks");
    if (r->n_overridden) {
        uint64_t off = 0;
        for (uint32_t d = 0; d < r->n_dev; d++)
            off = r->dev_offload[d] > off ? r->dev_offload[d] : off;
        vf__assume(e, "tensor overrides: %u tensors placed by -ot/--cpu-moe/--n-cpu-moe (first match wins), %.2f GiB "
                      "of layer weights in host memory; op offload copies up to %.2f GiB of one layer's into the "
                      "GPU's compute buffer (n_ubatch %llu %s 32)",
                   r->n_overridden, (double)r->overridden_host / (1 << 30), (double)off / (1 << 30),
                   (unsigned long long)r->n_ubatch, r->n_ubatch >= 32 ? ">=" : "<");
    }
    vf__explain(e, "context = sum over %u layers of cells x (row_size(%s, K) + row_size(%s, V)), %llu cells "
                "for full layers = %llu B", r->nl, vf_dtype_get(r->kt)->name, vf_dtype_get(r->vt)->name,
                (unsigned long long)r->kv_full_cells, (unsigned long long)r->kv_total);
    vf__explain(e, "compute = max(logits %llu x (%llu + 2 x %llu) x 4, attention %llu, ffn %llu) = %llu B",
                (unsigned long long)r->n_ubatch, (unsigned long long)hp->vocab_size, (unsigned long long)hp->hidden_size,
                (unsigned long long)r->attn_phase, (unsigned long long)r->ffn_phase, (unsigned long long)r->compute);
    vf__explain(e, "output = %llu sequences x %llu vocab x 4 = %llu B", (unsigned long long)r->n_seq,
                (unsigned long long)hp->vocab_size, (unsigned long long)r->output);
}

vf_status vf__infer_llamacpp(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    vf__wprice w;
    vf_status st = vf__llamacpp_arch_check(m, err);
    if (st != VF_OK)
        return st;
    if ((st = vf__weights_price(m, o->weights, VF_DTYPE_UNKNOWN, &w, e, err)) != VF_OK)
        return st;
    if (!vf__hp_has_attention(hp))
        return vf__err(err, VF_EUNSUPPORTED, m->source, "no layer or head counts: the KV cache cannot be sized");
    lc_run r;
    memset(&r, 0, sizeof r);
    r.lay = lc_layout_of(o->llamacpp_build);
    if ((st = lc_cparams(&o->infer, &r, err)) != VF_OK || (st = lc_devices(o, hp, &r, err)) != VF_OK ||
        (st = lc_place_weights(m, o, &r, err)) != VF_OK)
        return st;
    r.n_rs_seq = lc_rs_seq(m, o);
    lc_place_kv(hp, &o->infer, &r);
    lc_compute(hp, &r);
    lc_backend(o, &r);
    lc_fill(e, hp, &r, w.bits);
    lc_report(e, hp, o, &r);
    return VF_OK;
}
