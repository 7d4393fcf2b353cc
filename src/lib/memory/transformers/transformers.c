/* transformers.c — PyTorch + Hugging Face generate: the figure
 * torch.cuda.max_memory_allocated() reports (weights + KV cache + the
 * prefill step's working tensors), plus the CUDA context nvidia-smi adds
 * (docs/memory-model.md, "transformers"). */
#include "memory/torch/replay_torch.h"

#include <string.h>

vf_status vf__infer_transformers(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_hparams *hp = &m->hp;
    const vf_infer_opts *io = &o->infer;
    vf_dtype keep = VF_DTYPE_UNKNOWN;
    if (io->keep_dtype[0]) {
        keep = vf_dtype_from_name(io->keep_dtype);
        if (keep != VF_DTYPE_F32 && keep != VF_DTYPE_F16 && keep != VF_DTYPE_BF16)
            return vf__err(err, VF_EINVAL, io->keep_dtype, "keep dtype must be f32, f16 or bf16");
    }
    vf__wprice w;
    vf_status st = vf__weights_price(m, o->weights, keep, &w, e, err);
    if (st != VF_OK)
        return st;
    uint32_t tp = o->tp ? o->tp : 1;
    uint64_t b = io->batch ? io->batch : 1;
    uint64_t ctx = io->context ? io->context : vf__hp_context(hp);
    uint64_t q = vf__prompt_tokens(io, ctx);
    vf_dtype kt, vt;
    if (!vf__kv_dtype_parse(io->kv_dtype, w.act_dtype, &kt, &vt))
        return vf__err(err, VF_EINVAL, io->kv_dtype, "unknown KV cache type");
    uint64_t a = vf_dtype_get(w.act_dtype)->block_bytes;
    vf_attn attn = io->attn == VF_ATTN_DEFAULT ? VF_ATTN_SDPA : io->attn;

    /* KV: DynamicCache holds decompressed heads in the model dtype; sliding
     * layers keep at most the window. */
    uint64_t kv = vf__kv_cache_bytes(hp, false, kt, vt, ctx, b);

    /* Prefill's working set on top of the weights (one layer at a time):
     *  residual + current hidden: 2 x b x q x h x a;
     *  plus the largest of
     *   eager attention (modeling_*.eager_attention_forward): the scores
     *     b x H x q x q in the model dtype, their fp32 softmax and its cast
     *     back, live together in softmax(...).to(dtype): (2a + 4) per score,
     *     plus the 4-D causal mask b x q x q x a;
     *   sdpa / flash: Q, K, V and the output rows;
     *   MLP: gate, up and act(gate)*up: 3 x b x q x ff x a;
     *   logits: generate keeps one position per sequence (logits_to_keep),
     *     in the model dtype and as fp32 scores: b x vocab x (a + 4); every
     *     prompt position with --logits all: b x q x vocab x (a + 4);
     *   4-bit bitsandbytes: the largest matrix dequantized for a prefill
     *     matmul (bnb matmul_4bit dequantizes when more than one token). */
    uint64_t h = hp->hidden_size, heads = hp->n_heads ? hp->n_heads : 1;
    uint64_t kvh = hp->n_kv_heads ? hp->n_kv_heads : heads;
    uint64_t hd = hp->head_dim ? hp->head_dim : h / heads;
    uint64_t hidden = vf__smul(vf__smul(2 * b, q), vf__smul(h, a));
    uint64_t att;
    if (attn == VF_ATTN_EAGER) /* scores, their fp32 softmax and its cast live together; + the 4-D mask */
        att = vf__sadd(vf__smul(vf__smul(vf__smul(b, heads), vf__smul(q, q)), 2 * a + 4),
                       vf__smul(vf__smul(b, vf__smul(q, q)), a));
    else
        att = vf__smul(vf__smul(b, q), vf__smul((2 * heads + 2 * kvh) * hd, a));
    uint64_t mlp = vf__smul(vf__smul(3 * b, q), vf__smul(vf__hp_ff(hp), a));
    if (hp->n_experts && hp->moe_intermediate_size)
        mlp = vf__smul(vf__smul(3 * b, q), vf__smul(hp->moe_intermediate_size * (hp->n_experts_active ? hp->n_experts_active : 1), a));
    uint64_t logits = vf__smul(vf__smul(io->logits_all ? vf__smul(b, q) : b, hp->vocab_size), a + 4);
    uint64_t deq = 0;
    vf_quant_scheme qs;
    if (o->weights[0] && vf_quant_scheme_parse(o->weights, &qs) == VF_OK && qs.method &&
        strcmp(qs.method, "bitsandbytes") == 0 && strcmp(qs.name, "int8") != 0 && q > 1) {
        deq = vf__smul(w.largest_src_elems, a);
    }
    uint64_t work = att;
    if (mlp > work)
        work = mlp;
    if (logits > work)
        work = logits;
    if (deq > work)
        work = deq;
    uint64_t act = vf__sadd(hidden, work);

    uint64_t wpg = vf__weights_per_gpu(&w, tp);
    e->gpus = tp;
    e->weights = wpg;
    e->kv_cache = kv / tp;
    e->activations = act / tp;
    /* a quantizing load holds one 16-bit matrix next to its quantized copy */
    if (w.largest_src > e->kv_cache + e->activations)
        e->activations = w.largest_src - e->kv_cache;
    /* the process: the allocator replayed over these allocations, the
     * workspaces on it, the context beside it */
    uint64_t ws = vf__cublas_workspace_bytes(io->gpu_name, vf__gpu_class_bytes(o));
    char ctx_why[VF_NOTE_LEN];
    uint64_t ctx_bytes = vf__torch_context_bytes(o, true, ctx_why, sizeof ctx_why);
    vf__replay r;
    if ((st = vf__replay_open(&r, o, err)) != VF_OK)
        return st;
    vf__gen_shape g = {
        .b = b, .q = q, .ctx = ctx, .kt = kt, .vt = vt, .tp = tp, .scheme = o->weights, .keep = keep,
        .share = w.bytes ? (double)wpg / (double)w.bytes : 1.0, .cublas = ws,
        .mask = attn == VF_ATTN_EAGER ? vf__smul(vf__smul(b, vf__smul(q, q)), a) / tp : 0,
        .hidden = vf__smul(vf__smul(b, q), vf__smul(h, a)) / tp, .deq = deq / tp,
        .logits = {vf__smul(io->logits_all ? vf__smul(b, q) : b, vf__smul(hp->vocab_size, a)) / tp,
                   vf__smul(io->logits_all ? vf__smul(b, q) : b, vf__smul(hp->vocab_size, 4)) / tp},
        .step_logits = {vf__smul(b, vf__smul(hp->vocab_size, a)) / tp, vf__smul(b, vf__smul(hp->vocab_size, 4)) / tp},
    };
    if (attn == VF_ATTN_EAGER) { /* the scores, their fp32 softmax, its cast back, the output */
        uint64_t sc = vf__smul(vf__smul(b, heads), vf__smul(q, q));
        g.att[0] = vf__smul(sc, a) / tp, g.att[1] = vf__smul(sc, 4) / tp, g.att[2] = g.att[0];
        g.att[3] = vf__smul(vf__smul(b, q), heads * hd * a) / tp;
    } else { /* q and the output at every head, k and v at theirs */
        g.att[0] = g.att[3] = vf__smul(vf__smul(b, q), heads * hd * a) / tp;
        g.att[1] = g.att[2] = vf__smul(vf__smul(b, q), kvh * hd * a) / tp;
    }
    for (int i = 0; i < 3; i++)
        g.mlp[i] = mlp / 3 / tp;
    vf__replay_generate(&r, m, &g);
    uint64_t allocated = vf__sadd(vf__sadd(e->weights, e->kv_cache), vf__sadd(e->activations, ws));
    vf__replay_finish(&r, e, allocated, ctx_bytes, 0);
    vf__replay_close(&r);
    e->per_gpu_bytes = e->device_bytes;
    e->overhead = e->device_bytes - vf__sadd(vf__sadd(e->weights, e->kv_cache), e->activations);
    e->total_bytes = vf__smul(e->per_gpu_bytes, tp);
    e->context = ctx;
    e->batch = b;
    e->kv_bytes_per_token = vf__kv_bytes_per_token(hp, false, kt, vt);
    e->weight_bits = w.bits;
    vf__assume(e, "runtime = transformers (generate): %s attention, batch %llu, context %llu, prefill %llu tokens",
               attn == VF_ATTN_EAGER ? "eager" : attn == VF_ATTN_FLASH ? "flash" : "sdpa", (unsigned long long)b,
               (unsigned long long)ctx, (unsigned long long)q);
    vf__assume(e, "weights + kv_cache + activations + cuBLAS workspaces = what torch.cuda.max_memory_allocated() "
               "reports; overhead = the workspaces + the allocator's cached blocks + the CUDA context");
    vf__assume(e, "logits = %s", io->logits_all ? "every prompt position" : "last position of each sequence");
    vf__assume(e, "%s", ctx_why);
    if (!vf__hp_has_attention(hp))
        vf__assume(e, "architecture = unknown (no config): KV cache and activations not counted");
    if (keep != VF_DTYPE_UNKNOWN)
        vf__assume(e, "unquantized tensors kept in %s", vf_dtype_get(keep)->name);
    vf__explain(e, "kv_cache = %llu x %llu tokens x %llu B/token = %llu B", (unsigned long long)b,
                (unsigned long long)ctx, (unsigned long long)e->kv_bytes_per_token, (unsigned long long)kv);
    vf__explain(e, "activations = hidden %llu + max(attention %llu, mlp %llu, logits %llu, dequant %llu) = %llu B",
                (unsigned long long)hidden, (unsigned long long)att, (unsigned long long)mlp,
                (unsigned long long)logits, (unsigned long long)deq, (unsigned long long)act);
    return VF_OK;
}
