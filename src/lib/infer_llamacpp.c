/* infer_llamacpp.c — llama.cpp's own buffers: model, context (KV), compute
 * and output, per device and host (docs/memory-model.md, "llama.cpp").
 * Facts from llama.cpp's source (src/llama-context.cpp, llama-kv-cache.cpp,
 * llama-kv-cache-iswa.cpp, llama-model.cpp) and checked against
 * ../shared/reference/llamacpp/results.json. */
#include "infer.h"

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

vf_status vf__infer_llamacpp(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    vf__wprice w;
    vf_status st = vf__weights_price(m, o->weights, VF_DTYPE_UNKNOWN, &w, e, err);
    if (st != VF_OK)
        return st;
    if (!vf__hp_has_attention(hp))
        return vf__err(err, VF_EUNSUPPORTED, m->source, "no layer or head counts: the KV cache cannot be sized");

    /* cparams (llama-context.cpp): n_ctx from -c (common default 4096),
     * n_batch = min(n_ctx, -b), n_ubatch = min(n_batch, -ub); one KV stream
     * per sequence unless unified (llama-completion default: not unified). */
    uint64_t n_seq = io->parallel ? io->parallel : 1;
    uint64_t n_ctx = io->context ? io->context : 4096;
    /* llama_context: n_ctx padded to 256; without a unified cache each
     * sequence's stream is padded to 256 too and n_ctx follows */
    n_ctx = PAD(n_ctx, 256);
    bool unified = io->kv_unified;
    uint64_t n_ctx_seq = unified ? n_ctx : PAD(n_ctx / n_seq, 256);
    uint64_t n_stream = unified ? 1 : n_seq;
    if (!unified)
        n_ctx = n_ctx_seq * n_seq;
    uint64_t n_batch = io->lc_batch ? io->lc_batch : 2048;
    if (n_batch > n_ctx)
        n_batch = n_ctx;
    uint64_t n_ubatch = io->ubatch ? io->ubatch : 512;
    if (n_ubatch > n_batch)
        n_ubatch = n_batch;
    bool fa = io->flash_attn != 0; /* auto resolves to on where the backend supports it (CUDA, Metal, CPU) */

    vf_dtype kt, vt;
    if (!vf__kv_dtype_parse(io->kv_dtype, VF_DTYPE_F16, &kt, &vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");
    if (!fa && vf_dtype_get(vt)->block_elements > 1)
        return vf__err(err, VF_EINVAL, io->kv_dtype,
                       "llama.cpp needs flash attention for a quantized V cache (-fa on)");

    /* devices */
    uint32_t n_dev = o->gpus ? o->gpus : (o->tp ? o->tp : 1);
    if (io->n_split)
        n_dev = io->n_split;
    if (io->n_gpu_layers == 0)
        n_dev = 0;
    double cum[VF_MAX_SPLIT] = {0};
    if (n_dev > VF_MAX_SPLIT)
        return vf__err(err, VF_EINVAL, "--tensor-split", "at most %d devices", VF_MAX_SPLIT);
    double sum = 0;
    for (uint32_t d = 0; d < n_dev; d++)
        sum += io->n_split ? io->tensor_split[d] : 1.0;
    if (n_dev && sum <= 0)
        return vf__err(err, VF_EINVAL, "--tensor-split", "fractions must add up to more than zero");
    for (uint32_t d = 0, acc = 0; d < n_dev; d++) {
        double f = io->n_split ? io->tensor_split[d] : 1.0;
        cum[d] = (d ? cum[d - 1] : 0) + f / sum;
        (void)acc;
    }
    uint32_t nl = hp->n_layers;
    uint32_t ngl = io->n_gpu_layers < 0 ? nl + 1 : (uint32_t)io->n_gpu_layers;
    int out_dev = layer_device(nl, nl, ngl, n_dev, cum);

    uint64_t dev_model[VF_MAX_SPLIT] = {0}, dev_kv[VF_MAX_SPLIT] = {0};
    uint64_t host_model = 0, host_kv = 0;
    /* weights: blocks by layer; token embeddings stay on the host (the input
     * layer is always the CPU, llama-model.cpp dev_input); output on the
     * output layer's device; a tied output is a duplicated copy there. */
    vf__pricer pr;
    if ((st = vf__pricer_init(&pr, m, o->weights, VF_DTYPE_UNKNOWN, err)) != VF_OK)
        return st;
    bool has_output = false;
    uint64_t embd_bytes = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & VF_TENSOR_MTP)
            continue; /* nextn layers: TENSOR_SKIP, never allocated */
        bool qd;
        uint64_t b = vf__pricer_tensor(&pr, i, &qd);
        int dev;
        if (t->role == VF_ROLE_EMBED || t->role == VF_ROLE_POS_EMBED) {
            dev = -1;
            if (t->role == VF_ROLE_EMBED)
                embd_bytes += b;
        } else if (t->layer >= 0 && (uint32_t)t->layer < nl) {
            dev = layer_device((uint32_t)t->layer, nl, ngl, n_dev, cum);
        } else {
            dev = out_dev;
            if (t->role == VF_ROLE_OUTPUT)
                has_output = true;
        }
        if (dev < 0)
            host_model += b;
        else
            dev_model[dev] += b;
    }
    vf__pricer_free(&pr);
    if (!has_output && out_dev >= 0 && hp->tie_word_embeddings)
        dev_model[out_dev] += embd_bytes; /* TENSOR_DUPLICATED output copy */

    /* KV cache (llama-kv-cache.cpp): per layer, cells x ggml_row_size(type,
     * n_embd_k_gqa) for K and the same for V. Sliding-window layers get
     * their own cache (llama-kv-cache-iswa.cpp) of
     * min(n_ctx_seq, PAD(n_swa + n_ubatch, 256)) cells per stream unless
     * --swa-full. */
    uint64_t swa_cells = n_ctx_seq;
    if (hp->sliding_window && !io->swa_full) {
        uint64_t s = PAD((uint64_t)hp->sliding_window * (unified ? n_seq : 1) + n_ubatch, 256);
        if (s < swa_cells)
            swa_cells = s;
    }
    uint64_t kv_total = 0, kv_full_cells = n_ctx_seq * n_stream;
    for (uint32_t il = 0; il < nl; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, true, &k, &v);
        uint64_t cells = (vf__layer_is_swa(hp, il) ? swa_cells : n_ctx_seq) * n_stream;
        uint64_t b = vf__sadd(vf__smul(cells, vf__dt_bytes(kt, k)), vf__smul(cells, vf__dt_bytes(vt, v)));
        /* recurrent layers (llama-memory-recurrent.cpp): one f32 r and s
         * state per sequence, on the layer's device */
        if (hp->recurrent_state_bytes && (!hp->layer_no_kv || hp->layer_no_kv[il]))
            b = vf__sadd(b, vf__smul(hp->recurrent_state_bytes, n_seq));
        int dev = layer_device(il, nl, ngl, n_dev, cum);
        if (dev < 0)
            host_kv += b;
        else
            dev_kv[dev] += b;
        kv_total = vf__sadd(kv_total, b);
    }

    /* Compute buffer: ggml-alloc's peak over the worst-case graph
     * (n_ubatch tokens, every position an output, the whole cache visible).
     * The peak is the largest of three moments, each counted in f32:
     *  logits: n_ubatch x (n_vocab + 2 n_embd) (logits, final norm, residual);
     *  attention without flash attention: KQ n_head x n_kv x n_ubatch plus
     *    its mask n_kv x n_ubatch, plus the Q/K/V/residual rows;
     *  attention with flash attention: the f16 mask and the Q/K/V rows;
     *  feed-forward: n_ubatch x (2 n_ff + 2 n_embd) (experts: x n_used). */
    uint64_t n_embd = hp->hidden_size, n_vocab = hp->vocab_size, ub = n_ubatch;
    uint64_t heads = hp->n_heads, n_kv = n_ctx_seq;
    uint64_t kq = 0, kvrow = 0;
    for (uint32_t il = 0; il < nl; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, true, &k, &v);
        uint64_t lkv = vf__layer_is_swa(hp, il) ? swa_cells : n_kv;
        uint64_t h = vf__layer_heads(hp, il);
        if (vf__smul(h, lkv) > kq)
            kq = vf__smul(h, lkv);
        if (k + v > kvrow)
            kvrow = k + v;
    }
    (void)heads;
    /* (hyper-parameters and knobs are capped in infer.c; products saturate) */
    uint64_t rows = vf__sadd(vf__smul(3, n_embd), kvrow);
    uint64_t logits_phase = vf__smul(vf__smul(ub, vf__sadd(n_vocab, 2 * n_embd)), 4);
    uint64_t mask = vf__smul(vf__smul(n_kv, PAD(ub, 64)), fa ? 2 : 4);
    uint64_t row_bytes = vf__smul(vf__smul(ub, rows), 4);
    uint64_t attn_phase = vf__sadd(vf__sadd(mask, row_bytes), fa ? 0 : vf__smul(vf__smul(kq, ub), 4));
    uint64_t ff = hp->n_experts ? (hp->moe_intermediate_size ? hp->moe_intermediate_size : vf__hp_ff(hp)) *
                                      (hp->n_experts_active ? hp->n_experts_active : 1)
                                : vf__hp_ff(hp);
    uint64_t ffn_phase = vf__smul(vf__smul(ub, vf__sadd(vf__smul(2, ff), 2 * n_embd)), 4);
    uint64_t compute = logits_phase;
    if (attn_phase > compute)
        compute = attn_phase;
    if (ffn_phase > compute)
        compute = ffn_phase;
    /* output buffer (llama_context::output_reserve): n_vocab floats per
     * sequence, in host memory */
    uint64_t output = vf__smul(vf__smul(n_seq, n_vocab), 4);

    /* what each GPU holds */
    uint64_t ctxb = n_dev ? vf__cuda_context_native_bytes() : 0;
    uint64_t peak = 0;
    uint32_t peak_dev = 0;
    for (uint32_t d = 0; d < n_dev; d++) {
        uint64_t c = (int)d == out_dev ? compute : (attn_phase > ffn_phase ? attn_phase : ffn_phase);
        uint64_t tot = dev_model[d] + dev_kv[d] + c + ctxb;
        if (tot > peak)
            peak = tot, peak_dev = d;
    }
    uint64_t all_model = host_model;
    for (uint32_t d = 0; d < n_dev; d++)
        all_model += dev_model[d];

    e->gpus = n_dev ? n_dev : 1;
    e->context = n_ctx;
    e->batch = n_seq;
    e->kv_bytes_per_token = vf__kv_bytes_per_token(hp, true, kt, vt);
    e->weight_bits = w.bits;
    e->rb_model = all_model;
    e->rb_context = kv_total;
    e->rb_compute = compute;
    e->rb_output = output;
    if (n_dev) {
        e->weights = dev_model[peak_dev];
        e->kv_cache = dev_kv[peak_dev];
        e->activations = (int)peak_dev == out_dev ? compute : (attn_phase > ffn_phase ? attn_phase : ffn_phase);
        e->overhead = ctxb;
        e->per_gpu_bytes = peak;
        uint64_t tot = 0;
        for (uint32_t d = 0; d < n_dev; d++)
            tot += dev_model[d] + dev_kv[d] + ((int)d == out_dev ? compute : 0) + ctxb;
        e->total_bytes = tot;
        e->host_bytes = host_model + host_kv + output + (out_dev < 0 ? compute : 0);
    } else {
        /* everything on the host (-ngl 0): the figures are host memory */
        e->weights = all_model;
        e->kv_cache = kv_total;
        e->activations = compute + output;
        e->per_gpu_bytes = e->total_bytes = all_model + kv_total + compute + output;
        e->host_bytes = e->total_bytes;
    }

    vf__assume(e, "runtime = llama.cpp: n_ctx %llu (padded to 256), n_seq %llu (%s cache), n_batch %llu, "
               "n_ubatch %llu, flash attention %s", (unsigned long long)n_ctx, (unsigned long long)n_seq,
               unified ? "unified" : "one stream per sequence",
               (unsigned long long)n_batch, (unsigned long long)n_ubatch, fa ? "on" : "off");
    vf__assume(e, "kv cache = K %s, V %s", vf_dtype_get(kt)->name, vf_dtype_get(vt)->name);
    if (hp->sliding_window)
        vf__assume(e, "sliding-window layers: %llu cells per sequence (window %u%s)", (unsigned long long)swa_cells,
                   hp->sliding_window, io->swa_full ? ", --swa-full" : " + ubatch, padded to 256");
    if (ngl > nl)
        vf__assume(e, "n_gpu_layers = all %u blocks and the output layer over %u device(s); token embeddings in "
                   "host memory", nl, n_dev);
    else
        vf__assume(e, "n_gpu_layers = %u: the last %u blocks%s on %u device(s), the rest and the token embeddings "
                   "in host memory", ngl, ngl ? ngl - 1 : 0, ngl ? " and the output layer" : "", n_dev);
    if (n_dev)
        vf__assume(e, "overhead = CUDA context %llu MiB per GPU (gguf-parser's platform footprint)",
                   (unsigned long long)(ctxb >> 20));
    vf__explain(e, "context = sum over %u layers of cells x (row_size(%s, K) + row_size(%s, V)), %llu cells "
                "for full layers = %llu B", nl, vf_dtype_get(kt)->name, vf_dtype_get(vt)->name,
                (unsigned long long)kv_full_cells, (unsigned long long)kv_total);
    vf__explain(e, "compute = max(logits %llu x (%llu + 2 x %llu) x 4, attention %llu, ffn %llu) = %llu B",
                (unsigned long long)ub, (unsigned long long)n_vocab, (unsigned long long)n_embd,
                (unsigned long long)attn_phase, (unsigned long long)ffn_phase, (unsigned long long)compute);
    vf__explain(e, "output = %llu sequences x %llu vocab x 4 = %llu B", (unsigned long long)n_seq,
                (unsigned long long)n_vocab, (unsigned long long)output);
    return VF_OK;
}
