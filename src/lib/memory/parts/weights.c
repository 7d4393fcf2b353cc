/* weights.c — weight bytes as stored, or re-priced per tensor the way
 * a quantizer would store them (docs/memory-model.md, "Weights"). */
#include "memory/infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_float(vf_dtype dt)
{
    return dt == VF_DTYPE_F32 || dt == VF_DTYPE_F16 || dt == VF_DTYPE_BF16 || dt == VF_DTYPE_F64;
}

/* The projection matrices every load-time quantizer (bitsandbytes, GPTQ, AWQ,
 * fp8) replaces: nn.Linear layers inside the blocks. Embeddings, lm_head,
 * norms, biases and MoE routers stay (transformers' bitsandbytes integration
 * skips lm_head via llm_int8_skip_modules; GPTQ/AWQ quantize only the blocks'
 * linears). */
static bool is_block_linear(const vf_tensor *t)
{
    if (t->n_dims < 2 || (t->flags & VF_TENSOR_NOT_PARAM))
        return false;
    switch (t->role) {
    case VF_ROLE_ATTN_Q: case VF_ROLE_ATTN_K: case VF_ROLE_ATTN_V: case VF_ROLE_ATTN_QKV:
    case VF_ROLE_ATTN_O: case VF_ROLE_ATTN_LORA: case VF_ROLE_MLP_GATE: case VF_ROLE_MLP_UP:
    case VF_ROLE_MLP_DOWN: case VF_ROLE_EXPERT: case VF_ROLE_SHARED_EXPERT:
        return true;
    default:
        return false;
    }
}

static uint64_t kept_bytes(const vf_tensor *t, vf_dtype keep)
{
    if (keep != VF_DTYPE_UNKNOWN && is_float(t->dtype))
        return vf__dt_bytes(keep, t->n_elements);
    return t->n_bytes;
}

/* Bytes of one quantized linear [out, in] under a load scheme. */
static uint64_t linear_bytes(const vf_quant_scheme *q, const vf_tensor *t)
{
    uint64_t n = t->n_elements;
    uint64_t in = t->shape[t->n_dims - 1], out = in ? n / in : 0;
    const char *meth = q->method ? q->method : "";
    if (strcmp(meth, "bitsandbytes") == 0) {
        if (strcmp(q->name, "int8") == 0) /* int8 codes + fp32 row scale (SCB) */
            return vf__sadd(n, vf__smul(out, 4));
        /* 4-bit codes + per-64 absmax: fp32, or with double quant an 8-bit
         * absmax plus an fp32 scale per 256 blocks (QLoRA §2) */
        uint64_t blocks = n / 64 + (n % 64 != 0);
        uint64_t codes = n / 2 + (n % 2);
        if (strcmp(q->name, "nf4-dq") == 0)
            return vf__sadd(vf__sadd(codes, blocks), vf__smul(blocks / 256 + (blocks % 256 != 0), 4));
        return vf__sadd(codes, vf__smul(blocks, 4));
    }
    if (strcmp(meth, "gptq") == 0 || strcmp(meth, "awq") == 0) {
        /* packed b-bit weights + fp16 scale and b-bit zero per group and
         * output column; GPTQ adds an int32 g_idx per input row */
        uint32_t bits = (uint32_t)(q->bits_per_weight + 0.5);
        if (q->group_size)
            bits = (uint32_t)((q->bits_per_weight - 16.0 / q->group_size) * q->group_size / (q->group_size + 1) + 0.5);
        uint64_t g = q->group_size ? q->group_size : 128;
        uint64_t groups = in / g + (in % g != 0);
        uint64_t b = vf__smul(n, bits) / 8;
        b = vf__sadd(b, vf__smul(vf__smul(groups, out), 2));
        b = vf__sadd(b, vf__smul(vf__smul(groups, out), bits) / 8);
        if (strcmp(meth, "gptq") == 0)
            b = vf__sadd(b, vf__smul(in, 4));
        return b;
    }
    /* fp8: one byte per weight + one fp32 scale per tensor */
    return vf__sadd(n, 4);
}

static vf_dtype dominant_float(const vf_model *m)
{
    uint64_t by[VF_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < m->n_tensors; i++)
        if (m->tensors[i].dtype < VF_DTYPE_COUNT)
            by[m->tensors[i].dtype] += m->tensors[i].n_bytes;
    vf_dtype best = VF_DTYPE_UNKNOWN;
    uint64_t bb = 0;
    const vf_dtype fl[] = {VF_DTYPE_BF16, VF_DTYPE_F16, VF_DTYPE_F32};
    for (size_t i = 0; i < 3; i++)
        if (by[fl[i]] > bb)
            bb = by[fl[i]], best = fl[i];
    return best;
}

vf_status vf__pricer_init(vf__pricer *p, const vf_model *m, const char *scheme, vf_dtype keep, vf_error *err)
{
    memset(p, 0, sizeof *p);
    p->m = m;
    p->keep = keep;
    p->to_float = VF_DTYPE_UNKNOWN;
    p->requant = scheme && *scheme;
    if (!p->requant)
        return VF_OK;
    snprintf(p->name, sizeof p->name, "%s", scheme);
    vf_dtype base;
    int ft;
    if (vf__ggufmix_parse(scheme, &base, &ft)) {
        p->gguf = true;
        if (!(p->types = vf__ggufmix_types(m, base, ft)))
            return vf__err(err, VF_ENOMEM, scheme, "out of memory");
        return VF_OK;
    }
    if (vf_quant_scheme_parse(scheme, &p->q) != VF_OK)
        return vf__err(err, VF_EINVAL, scheme, "unknown weight format (see vramfit dtypes)");
    snprintf(p->name, sizeof p->name, "%s", p->q.name);
    if (p->q.method && strcmp(p->q.method, "float") == 0)
        p->to_float = vf_dtype_from_name(p->q.name);
    return VF_OK;
}

void vf__pricer_free(vf__pricer *p)
{
    free(p->types);
    p->types = NULL;
}

uint64_t vf__pricer_tensor(const vf__pricer *p, size_t i, bool *quantized)
{
    const vf_tensor *t = &p->m->tensors[i];
    *quantized = false;
    if (!p->requant)
        return t->n_bytes;
    if (p->to_float != VF_DTYPE_UNKNOWN) {
        if (is_float(t->dtype) || (t->flags & VF_TENSOR_PACKED) || vf_dtype_get(t->dtype)->block_elements > 1)
            return vf__dt_bytes(p->to_float, t->n_params ? t->n_params : t->n_elements);
        return t->n_bytes;
    }
    if (p->gguf) {
        vf_dtype dt = p->types[i];
        if (dt != VF_DTYPE_UNKNOWN) {
            uint64_t row = t->shape[t->n_dims - 1];
            *quantized = true;
            return vf__smul(t->n_elements / (row ? row : 1), vf__dt_bytes(dt, row));
        }
        /* convert_hf_to_gguf stores 1-D tensors (norms, biases) in F32 */
        if (t->n_dims <= 1 && is_float(t->dtype))
            return vf__dt_bytes(VF_DTYPE_F32, t->n_elements);
        return t->n_bytes;
    }
    if (is_block_linear(t) && is_float(t->dtype)) {
        *quantized = true;
        return linear_bytes(&p->q, t);
    }
    return kept_bytes(t, p->keep);
}

/* Which part of the model outside the repeated blocks a tensor is: a
 * pipeline stage holds the embeddings first, the head and final norm last. */
static int outside_part(const vf_tensor *t)
{
    switch (t->role) {
    case VF_ROLE_EMBED:
    case VF_ROLE_POS_EMBED:
        return VF__WP_EMBED;
    case VF_ROLE_OUTPUT:
        return VF__WP_HEAD;
    case VF_ROLE_NORM:
        return VF__WP_NORM;
    default:
        return VF__WP_OTHER;
    }
}

/* Prices every tensor once under a scheme: the whole-model sums and each
 * block's share (what a pipeline stage adds up). */
/* A routed expert's tensor, its quantization scales included (which the
 * classifier calls quant_aux). */
static bool routed_expert(const vf_tensor *t)
{
    return t->role == VF_ROLE_EXPERT ||
           (t->role == VF_ROLE_QUANT_AUX && (strstr(t->name, ".experts.") || strstr(t->name, "_exps")));
}

vf_status vf__weights_build(const vf_model *m, const char *scheme, vf_dtype keep, vf__wlayers *L, vf_error *err)
{
    vf__wprice *w = &L->w;
    vf__pricer pr;
    vf_status st = vf__pricer_init(&pr, m, scheme, keep, err);
    if (st != VF_OK)
        return st;
    bool gguf = pr.gguf;
    L->requant = pr.requant;
    L->gguf = gguf;
    snprintf(L->name, sizeof L->name, "%s", pr.name);
    snprintf(L->method, sizeof L->method, "%s", gguf ? "llama.cpp quantizer" : pr.requant && pr.q.method ? pr.q.method : "");
    L->keeps = pr.q.keeps;
    uint32_t nl = m->hp.n_layers;
    L->n_layers = nl;
    L->sh = nl ? calloc(nl, sizeof *L->sh) : NULL;
    L->rep = nl ? calloc(nl, sizeof *L->rep) : NULL;
    L->ex = nl ? calloc(nl, sizeof *L->ex) : NULL;
    L->tensor_bytes = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *L->tensor_bytes);
    if ((nl && (!L->sh || !L->rep || !L->ex)) || !L->tensor_bytes) {
        vf__pricer_free(&pr);
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    }
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *t = &m->tensors[i];
        /* multi-token-prediction layers are not loaded for plain inference:
         * transformers ignores them on load, vLLM loads them only for
         * speculative decoding, llama.cpp marks them TENSOR_SKIP */
        if (t->flags & VF_TENSOR_MTP) {
            L->n_mtp++;
            continue;
        }
        uint64_t p = (t->flags & VF_TENSOR_NOT_PARAM) ? 0 : t->n_params;
        bool qd;
        uint64_t b = vf__pricer_tensor(&pr, i, &qd);
        L->tensor_bytes[i] = b;
        if (qd) {
            w->quant_params += p;
            if (!gguf && t->n_bytes > w->largest_src) {
                w->largest_src = t->n_bytes;
                w->largest_src_elems = t->n_elements;
            }
        }
        w->bytes = vf__sadd(w->bytes, b);
        w->params += p;
        bool sharded = t->n_dims >= 2;
        if (sharded)
            w->sharded_bytes = vf__sadd(w->sharded_bytes, b);
        uint64_t *slot;
        if (t->layer >= 0 && (uint32_t)t->layer < nl)
            slot = sharded ? &L->sh[t->layer] : &L->rep[t->layer];
        else
            slot = sharded ? &L->part_sh[outside_part(t)] : &L->part_rep[outside_part(t)];
        *slot = vf__sadd(*slot, b);
        if (sharded && t->layer >= 0 && (uint32_t)t->layer < nl && routed_expert(t))
            L->ex[t->layer] = vf__sadd(L->ex[t->layer], b);
    }
    vf__pricer_free(&pr);
    w->bits = w->params ? 8.0 * (double)w->bytes / (double)w->params : 0;

    const vf_hparams *hp = &m->hp;
    vf_dtype to_float = pr.to_float;
    w->act_dtype = to_float != VF_DTYPE_UNKNOWN ? to_float
                   : hp->torch_dtype != VF_DTYPE_UNKNOWN && is_float(hp->torch_dtype) ? hp->torch_dtype
                                                                                      : dominant_float(m);
    if (pr.requant && !gguf && to_float == VF_DTYPE_UNKNOWN && keep != VF_DTYPE_UNKNOWN)
        w->act_dtype = keep;
    if (w->act_dtype == VF_DTYPE_UNKNOWN || w->act_dtype == VF_DTYPE_F64)
        w->act_dtype = VF_DTYPE_F16;
    return VF_OK;
}

uint64_t vf__weights_per_gpu(const vf__wprice *w, uint32_t tp)
{
    return (w->bytes - w->sharded_bytes) + w->sharded_bytes / (tp ? tp : 1);
}
