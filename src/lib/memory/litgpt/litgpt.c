/* litgpt.c — LitGPT's `generate` (generate/base.py) on Lightning
 * Fabric, optionally quantized by Fabric's BitsandbytesPrecision: the figure
 * its "Memory used" line prints, torch.cuda.max_memory_allocated(), plus the
 * CUDA context (docs/memory-model.md, "litgpt"). Sources: lit-gpt 982abcbc
 * (generate/base.py, lit_gpt/model.py), Lightning 71aed751
 * (fabric/plugins/precision/bitsandbytes.py), bitsandbytes 0.41
 * (functional.py, autograd/_functions.py, nn/modules.py), PyTorch's
 * CUDACachingAllocator.cpp. */
#include "memory/infer.h"

#include <string.h>

/* Bytes the caching allocator charges to max_memory_allocated for one fresh
 * request (CUDACachingAllocator.cpp): sizes round up to 512 B; requests up to
 * 1 MiB come from 2 MiB small blocks and requests below 10 MiB from 20 MiB
 * blocks, both split to the request; larger ones get a segment rounded up to
 * 2 MiB, and should_split() keeps the tail with the block unless it exceeds
 * 1 MiB (kSmallSize) — so that tail counts as allocated. */
static uint64_t torch_block(uint64_t size)
{
    const uint64_t min_block = 512, small = 1u << 20, min_large = 10u << 20, round_large = 2u << 20;
    if (size == 0)
        return 0;
    uint64_t r = vf__smul(vf__sadd(size, min_block - 1) / min_block, min_block);
    if (r < min_large) /* small blocks and 20 MiB blocks split to the request */
        return r;
    uint64_t seg = vf__smul(vf__sadd(r, round_large - 1) / round_large, round_large);
    if (seg < r) /* saturated */
        return r;
    return seg - r > small ? r : seg;
}

/* Every nn.Linear of LitGPT's GPT becomes a bitsandbytes layer: Fabric
 * patches torch.nn.Linear for the whole init_module() block
 * (_ClassReplacementContextManager), lm_head and MoE routers included;
 * nn.Embedding and the norms stay in the compute dtype. */
static bool lit_linear(const vf_tensor *t)
{
    if (t->n_dims != 2)
        return false;
    switch (t->role) {
    case VF_ROLE_ATTN_Q: case VF_ROLE_ATTN_K: case VF_ROLE_ATTN_V: case VF_ROLE_ATTN_QKV:
    case VF_ROLE_ATTN_O: case VF_ROLE_ATTN_LORA: case VF_ROLE_MLP_GATE: case VF_ROLE_MLP_UP:
    case VF_ROLE_MLP_DOWN: case VF_ROLE_EXPERT: case VF_ROLE_SHARED_EXPERT: case VF_ROLE_ROUTER:
    case VF_ROLE_OUTPUT:
        return true;
    default:
        return false;
    }
}

enum bnb { BNB_NONE, BNB_INT8, BNB_4BIT, BNB_4BIT_DQ };

/* A quantized linear of n weights and `out` rows as it stays on the device. */
static uint64_t quant_bytes(enum bnb q, uint64_t n, uint64_t out)
{
    if (q == BNB_INT8) /* CB int8 [out, in] + SCB fp32 [out] (double_quant) */
        return vf__sadd(torch_block(n), torch_block(vf__smul(out, 4)));
    /* quantize_4bit: packed codes (n+1)/2 + fp32 absmax per 64; compressed
     * statistics: uint8 absmax + fp32 absmax per 256 of them + the fp32 mean
     * subtracted first */
    uint64_t blocks = n / 64 + (n % 64 != 0);
    uint64_t b = torch_block(n / 2 + n % 2);
    if (q == BNB_4BIT_DQ)
        return vf__sadd(vf__sadd(b, torch_block(blocks)), vf__sadd(torch_block((blocks / 256 + (blocks % 256 != 0)) * 4), 512));
    return vf__sadd(b, torch_block(vf__smul(blocks, 4)));
}

static vf_status parse_weights(const vf_estimate_opts *o, vf_dtype def, enum bnb *q, vf_dtype *prec, vf_error *err)
{
    *q = BNB_NONE;
    *prec = def;
    const vf_infer_opts *io = &o->infer;
    if (io->keep_dtype[0]) {
        *prec = vf_dtype_from_name(io->keep_dtype);
        if (*prec != VF_DTYPE_F32 && *prec != VF_DTYPE_F16 && *prec != VF_DTYPE_BF16)
            return vf__err(err, VF_EINVAL, io->keep_dtype, "keep dtype must be f32, f16 or bf16");
    }
    if (!o->weights[0])
        return VF_OK;
    vf_quant_scheme s;
    vf_dtype base;
    int ft;
    if (vf__ggufmix_parse(o->weights, &base, &ft) || vf_quant_scheme_parse(o->weights, &s) != VF_OK ||
        !s.method || (strcmp(s.method, "float") != 0 && strcmp(s.method, "bitsandbytes") != 0))
        return vf__err(err, VF_EINVAL, o->weights,
                       "litgpt generate takes a precision (f32, bf16, f16) or a bitsandbytes scheme (int8, int4, "
                       "fp4, nf4, nf4-dq)");
    if (strcmp(s.method, "float") == 0) {
        vf_dtype d = vf_dtype_from_name(s.name);
        if (d != VF_DTYPE_F32 && d != VF_DTYPE_F16 && d != VF_DTYPE_BF16)
            return vf__err(err, VF_EINVAL, o->weights, "litgpt precisions are 32-true, 16-true and bf16-true");
        *prec = d;
        return VF_OK;
    }
    if (strcmp(s.name, "int8") == 0) {
        /* BitsandbytesPrecision: "'int8' only works with dtype=torch.float16" */
        if (io->keep_dtype[0] && *prec != VF_DTYPE_F16)
            return vf__err(err, VF_EINVAL, io->keep_dtype, "bitsandbytes int8 only works with f16 (--precision 16-true)");
        *q = BNB_INT8;
        *prec = VF_DTYPE_F16;
    } else {
        *q = strcmp(s.name, "nf4-dq") == 0 ? BNB_4BIT_DQ : BNB_4BIT;
        if (!io->keep_dtype[0]) /* litgpt's default precision on a bf16-capable GPU: bf16-true */
            *prec = VF_DTYPE_BF16;
    }
    return VF_OK;
}

/* The model as litgpt holds it: every parameter its own allocation in the
 * precision's dtype, the linears quantized; the largest quantized linear
 * (its load and dequantization transients) remembered. */
typedef struct lit_weights {
    uint64_t bytes, params, lm_head;
    uint64_t n_max, out_max, in_max; /* the largest quantized linear */
    uint64_t embed_rows, embed_cols;
} lit_weights;

static void lit_linear_add(lit_weights *lw, enum bnb q, uint64_t a, uint64_t n, uint64_t out, uint64_t in, bool quantize)
{
    if (quantize) {
        lw->bytes = vf__sadd(lw->bytes, quant_bytes(q, n, out));
        if (n > lw->n_max)
            lw->n_max = n, lw->out_max = out, lw->in_max = in;
    } else {
        lw->bytes = vf__sadd(lw->bytes, torch_block(vf__smul(n, a)));
    }
}

/* GPT.__init__ always builds lm_head as its own nn.Linear (lit_gpt/model.py),
 * so a checkpoint that ties it to the embeddings gets a second copy. */
static void lit_weights_sum(const vf_model *m, enum bnb q, uint64_t a, lit_weights *lw)
{
    memset(lw, 0, sizeof *lw);
    bool has_output = false;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        if (t->flags & (VF_TENSOR_MTP | VF_TENSOR_NOT_PARAM))
            continue;
        uint64_t n = t->n_params ? t->n_params : t->n_elements;
        lw->params = vf__sadd(lw->params, n);
        if (t->role == VF_ROLE_OUTPUT)
            has_output = true;
        if (t->role == VF_ROLE_EMBED && t->n_dims == 2 && !lw->embed_rows)
            lw->embed_rows = t->shape[0], lw->embed_cols = t->shape[1];
        bool quantize = q != BNB_NONE && lit_linear(t);
        lit_linear_add(lw, q, a, n, quantize ? t->shape[0] : 0, quantize ? t->shape[1] : 0, quantize);
    }
    if (!has_output && lw->embed_rows) {
        lw->lm_head = vf__smul(lw->embed_rows, lw->embed_cols);
        lw->params = vf__sadd(lw->params, lw->lm_head);
        lit_linear_add(lw, q, a, lw->lm_head, lw->embed_rows, lw->embed_cols, q != BNB_NONE);
    }
}

/* KV cache (build_kv_cache): K and V per layer, [b, n_query_groups,
 * max_seq_length, head_size] in the precision's dtype, max_seq_length =
 * prompt + max_new_tokens (generate/base.py); sliding layers hold at most
 * the window (current litgpt). */
static uint64_t lit_kv_cache(const vf_hparams *hp, uint64_t b, uint64_t ctx, uint64_t a)
{
    uint64_t kv = 0;
    for (uint32_t il = 0; il < hp->n_layers; il++) {
        uint64_t k, v;
        vf__kv_layer_elems(hp, il, false, &k, &v);
        uint64_t bt = vf__smul(b, vf__layer_tokens(hp, il, ctx));
        kv = vf__sadd(kv, vf__sadd(torch_block(vf__smul(bt, vf__smul(k, a))), torch_block(vf__smul(bt, vf__smul(v, a)))));
    }
    return vf__sadd(kv, vf__smul(vf__recurrent_bytes(hp), b));
}

/* Load (Fabric init_module on the GPU, then load_state_dict): every linear is
 * quantized as it is constructed, then re-quantized by the load hook
 * (_quantize_on_load_hook) while the rest of the model is resident: the
 * checkpoint weight copied to the GPU as fp16 (weight.to("cuda", torch.half))
 * next to the new quantized copy; int8's double_quant also returns the
 * transposed codes (CBt) and row/column statistics before Lightning drops them. */
static uint64_t lit_load_transient(const lit_weights *lw, enum bnb q)
{
    if (q == BNB_INT8)
        return vf__sadd(vf__sadd(torch_block(vf__smul(lw->n_max, 2)), vf__smul(2, torch_block(lw->n_max))),
                        vf__sadd(torch_block(vf__smul(lw->out_max, 4)), torch_block(vf__smul(lw->in_max, 4))));
    if (q != BNB_NONE)
        return vf__sadd(torch_block(vf__smul(lw->n_max, 2)), quant_bytes(q, lw->n_max, lw->out_max));
    return 0;
}

/* The prefill's transients, one forward of qt tokens. */
typedef struct lit_prefill {
    uint64_t mask, rope, ws, hidden, att, mlp, logits, deq, work;
} lit_prefill;

/* Prefill of qt tokens: residual + block output, and the largest of
 *  logits: GPT.forward returns lm_head(x) for every position [b, T, V];
 *  attention: SDPA given the mask (math kernel): scores and softmax
 *    [b, H, T, S] plus the additive float mask [b, T, S];
 *  MLP: fc/up (and gate) outputs and the activation, 3 x [b, T, ff];
 *  4-bit: matmul_4bit dequantizes a weight for more than one token
 *    (MatMul4Bit: dequantize_4bit(B).to(A.dtype)): the fp16 copy (the
 *    quant state's dtype — Lightning quantizes from torch.half) and, when
 *    the compute dtype is not fp16, its cast live together;
 *  int8: the first forward converts CB to the col_ampere layout (CxB)
 *    before freeing CB.
 * Beside them: mask_cache, tril(ones(S, S, bool)) (the ones freed after
 * tril), rope cos and sin [S, rope_n_elem] each (the first pair, built for
 * block_size in GPT.__init__, replaced when max_seq_length is set), and the
 * cuBLAS workspace, on the caching allocator. */
static void lit_prefill_sum(const vf_hparams *hp, const lit_weights *lw, enum bnb q, vf_dtype prec, uint64_t a,
                            uint64_t b, uint64_t qt, uint64_t ctx, uint64_t gpu_bytes, lit_prefill *p)
{
    uint64_t h = hp->hidden_size, heads = hp->n_heads ? hp->n_heads : 1;
    uint64_t hd = hp->head_dim ? hp->head_dim : h / heads;
    p->mask = torch_block(vf__smul(ctx, ctx));
    p->rope = vf__smul(2, torch_block(vf__smul(vf__smul(ctx, hd), a)));
    p->ws = vf__cublas_workspace_bytes(NULL, gpu_bytes);
    uint64_t vocab = lw->embed_rows ? lw->embed_rows : hp->vocab_size;
    p->hidden = vf__smul(vf__smul(2 * b, qt), vf__smul(h, a));
    p->logits = vf__smul(vf__smul(b, qt), vf__smul(vocab, a));
    p->att = vf__sadd(vf__smul(vf__smul(vf__smul(b, heads), vf__smul(qt, ctx)), 2 * a),
                      vf__smul(vf__smul(b, vf__smul(qt, ctx)), a));
    p->mlp = vf__smul(vf__smul(3 * b, qt), vf__smul(vf__hp_ff(hp), a));
    p->deq = 0;
    if ((q == BNB_4BIT || q == BNB_4BIT_DQ) && qt > 1) {
        uint64_t blocks = lw->n_max / 64 + (lw->n_max % 64 != 0);
        uint64_t cast = prec != VF_DTYPE_F16 ? torch_block(vf__smul(lw->n_max, a)) : 0;
        uint64_t absmax = q == BNB_4BIT_DQ ? torch_block(vf__smul(blocks, 4)) : 0;
        p->deq = vf__sadd(torch_block(vf__smul(lw->n_max, 2)), cast > absmax ? cast : absmax);
    } else if (q == BNB_INT8) {
        p->deq = torch_block(vf__smul((lw->out_max + 31) / 32 * 32, (lw->in_max + 31) / 32 * 32));
    }
    p->work = p->att;
    if (p->mlp > p->work)
        p->work = p->mlp;
    if (p->logits > p->work)
        p->work = p->logits;
    if (p->deq > p->work)
        p->work = p->deq;
}

/* Activations at the peak: the larger of the load transient and the run's
 * (mask + rope + workspace + hidden + the largest working set, with the KV
 * cache beside it; ones and tril live together in set_kv_cache). */
static uint64_t lit_activations(const lit_prefill *p, uint64_t load, uint64_t kv)
{
    uint64_t run = vf__sadd(vf__sadd(p->mask, p->rope), vf__sadd(p->ws, vf__sadd(p->hidden, p->work)));
    if (vf__smul(2, p->mask) > run)
        run = vf__smul(2, p->mask);
    run = vf__sadd(run, kv);
    return load > run ? load - kv : run - kv;
}

static void lit_report(vf_estimate *e, const lit_weights *lw, enum bnb q, vf_dtype prec, uint64_t b, uint64_t ctx,
                       uint64_t qt, uint64_t load, const lit_prefill *p)
{
    const char *qn = q == BNB_INT8 ? "bnb.int8" : q == BNB_4BIT ? "bnb 4-bit" : q == BNB_4BIT_DQ ? "bnb 4-bit-dq" : "";
    vf__assume(e, "runtime = litgpt generate: %s-true%s%s, batch %llu, max_seq_length %llu, prompt %llu tokens",
               vf_dtype_get(prec)->name, q ? ", " : "", qn, (unsigned long long)b, (unsigned long long)ctx,
               (unsigned long long)qt);
    if (lw->lm_head)
        vf__assume(e, "lm_head untied (GPT builds its own nn.Linear): +%llu parameters", (unsigned long long)lw->lm_head);
    if (q != BNB_NONE)
        vf__assume(e, "every nn.Linear quantized (lm_head included); embeddings and norms in %s",
                   vf_dtype_get(prec)->name);
    vf__assume(e, "weights + kv_cache + activations = torch.cuda.max_memory_allocated() (\"Memory used\"), each "
                  "tensor as the caching allocator rounds it");
    vf__explain(e, "weights = %llu parameters -> %llu B", (unsigned long long)lw->params, (unsigned long long)lw->bytes);
    vf__explain(e, "peak = max(load %llu + weights, weights + kv %llu + mask %llu + rope %llu + cublas %llu + "
                   "hidden %llu + max(attention %llu, mlp %llu, logits %llu, dequant %llu)) = %llu B",
                (unsigned long long)load, (unsigned long long)e->kv_cache, (unsigned long long)p->mask,
                (unsigned long long)p->rope, (unsigned long long)p->ws, (unsigned long long)p->hidden,
                (unsigned long long)p->att, (unsigned long long)p->mlp, (unsigned long long)p->logits,
                (unsigned long long)p->deq, (unsigned long long)vf__sadd(lw->bytes, vf__sadd(e->kv_cache, e->activations)));
}

vf_status vf__infer_litgpt(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    if (o->tp > 1)
        return vf__err(err, VF_EINVAL, "--tp", "the litgpt runtime models generate/base.py on one GPU");
    vf__wprice w; /* for the stored dtype only */
    vf_status st = vf__weights_price(m, "", VF_DTYPE_UNKNOWN, &w, NULL, err);
    if (st != VF_OK)
        return st;
    enum bnb q;
    vf_dtype prec;
    if ((st = parse_weights(o, w.act_dtype, &q, &prec, err)) != VF_OK)
        return st;
    uint64_t a = vf_dtype_get(prec)->block_bytes;
    uint64_t b = io->batch ? io->batch : 1;
    uint64_t ctx = io->context ? io->context : vf__hp_context(hp);
    uint64_t qt = vf__prompt_tokens(io, ctx);

    lit_weights lw;
    lit_weights_sum(m, q, a, &lw);
    uint64_t kv = lit_kv_cache(hp, b, ctx, a);
    uint64_t load = lit_load_transient(&lw, q);
    lit_prefill p;
    lit_prefill_sum(hp, &lw, q, prec, a, b, qt, ctx, vf__gpu_class_bytes(o), &p);

    e->gpus = 1;
    e->weights = lw.bytes;
    e->kv_cache = kv;
    e->activations = lit_activations(&p, load, kv);
    char ctx_why[VF_NOTE_LEN];
    e->overhead = vf__torch_context_bytes(o, true, ctx_why, sizeof ctx_why);
    e->per_gpu_bytes = vf__sadd(vf__sadd(lw.bytes, kv), vf__sadd(e->activations, e->overhead));
    /* each tensor is already priced at its allocator block (torch_block);
     * the cached blocks between them are not replayed here */
    vf__device_set(e, vf__sadd(vf__sadd(lw.bytes, kv), e->activations), 0, e->overhead, 0);
    vf__assume(e, "overhead = %s (not in max_memory_allocated); the allocator's cached blocks are not replayed "
                  "for litgpt", ctx_why);
    e->total_bytes = e->per_gpu_bytes;
    e->context = ctx;
    e->batch = b;
    e->kv_bytes_per_token = vf__kv_bytes_per_token(hp, false, prec, prec);
    e->weight_bits = lw.params ? 8.0 * (double)lw.bytes / (double)lw.params : 0;
    lit_report(e, &lw, q, prec, b, ctx, qt, load, &p);
    return VF_OK;
}
