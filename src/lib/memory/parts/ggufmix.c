/* ggufmix.c — the tensor types llama.cpp's quantizer picks for a file
 * type ("Q4_K_M", "Q4_0", ...): one base type, raised for the output matrix,
 * V projections, feed-forward down projections and a few more by the rules
 * of src/llama-quant.cpp (llama_tensor_get_type), and lowered to a 32-element
 * block type when a row is not a whole number of blocks. Checked against the
 * Q4_0 / Q4_K_M / Q8_0 files llama-quantize made in tests/reference/llamacpp. */
#include "memory/infer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum {
    FT_PLAIN, /* a bare type name: base type, output rule only */
    FT_Q2_K, FT_Q3_K_S, FT_Q3_K_M, FT_Q3_K_L, FT_Q4_K_S, FT_Q4_K_M, FT_Q5_K_S, FT_Q5_K_M, FT_IQ4_NL, FT_IQ4_XS,
    FT_Q4_0
} ftype;

static const struct {
    const char *name;
    vf_dtype base;
    ftype ft;
} ftypes[] = {
    {"q2_k", VF_DTYPE_Q2_K, FT_Q2_K},       {"q3_k_s", VF_DTYPE_Q3_K, FT_Q3_K_S},
    {"q3_k_m", VF_DTYPE_Q3_K, FT_Q3_K_M},   {"q3_k_l", VF_DTYPE_Q3_K, FT_Q3_K_L},
    {"q4_k_s", VF_DTYPE_Q4_K, FT_Q4_K_S},   {"q4_k_m", VF_DTYPE_Q4_K, FT_Q4_K_M},
    {"q5_k_s", VF_DTYPE_Q5_K, FT_Q5_K_S},   {"q5_k_m", VF_DTYPE_Q5_K, FT_Q5_K_M},
    {"iq4_nl", VF_DTYPE_IQ4_NL, FT_IQ4_NL}, {"iq4_xs", VF_DTYPE_IQ4_XS, FT_IQ4_XS},
    {"q4_0", VF_DTYPE_Q4_0, FT_Q4_0},
};

bool vf__ggufmix_parse(const char *name, vf_dtype *base, int *ft)
{
    for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
        if (strcasecmp(name, ftypes[i].name) == 0) {
            *base = ftypes[i].base;
            *ft = (int)ftypes[i].ft;
            return true;
        }
    vf_dtype dt = vf_dtype_from_name(name);
    const vf_dtype_info *d = vf_dtype_get(dt);
    if (!d || d->gguf_id < 0 || d->block_elements <= 1)
        return false;
    *base = dt;
    *ft = FT_PLAIN;
    return true;
}

/* llama-quant.cpp use_more_bits */
static bool more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool is_ffn_down(const vf_tensor *t)
{
    if (t->role == VF_ROLE_MLP_DOWN)
        return true;
    return (t->role == VF_ROLE_EXPERT || t->role == VF_ROLE_SHARED_EXPERT) &&
           (strstr(t->name, "down") || strstr(t->name, ".w2."));
}

/* What llama_model_quantize_impl quantizes at all: ≥ 2 dims, not the MoE
 * router (ffn_gate_inp), position or token-type embeddings. */
static bool ggufmix_quantizes(const vf_tensor *t)
{
    return t->n_dims >= 2 && !(t->flags & VF_TENSOR_NOT_PARAM) && t->role != VF_ROLE_ROUTER &&
           t->role != VF_ROLE_POS_EMBED && t->role != VF_ROLE_QUANT_AUX && t->role != VF_ROLE_NORM;
}

/* The incompatible-shape fallback (llama_tensor_get_type, end). */
static vf_dtype ggufmix_fallback(vf_dtype dt, uint64_t row)
{
    const vf_dtype_info *d = vf_dtype_get(dt);
    if (!d || row % d->block_elements == 0)
        return dt;
    vf_dtype fb;
    switch (dt) {
    case VF_DTYPE_TQ1_0: case VF_DTYPE_TQ2_0: fb = VF_DTYPE_Q4_0; break;
    case VF_DTYPE_Q4_K: fb = VF_DTYPE_Q5_0; break;
    case VF_DTYPE_Q5_K: fb = VF_DTYPE_Q5_1; break;
    case VF_DTYPE_Q6_K: fb = VF_DTYPE_Q8_0; break;
    default: fb = VF_DTYPE_IQ4_NL; break;
    }
    return row % vf_dtype_get(fb)->block_elements == 0 ? fb : VF_DTYPE_F16;
}

vf_dtype *vf__ggufmix_types(const vf_model *m, vf_dtype base, int ftv)
{
    ftype ft = (ftype)ftv;
    const vf_hparams *hp = &m->hp;
    size_t n = m->n_tensors;
    vf_dtype *types = malloc((n ? n : 1) * sizeof *types);
    if (!types)
        return NULL;
    bool has_output = false;
    int64_t n_wv = 0, n_down = 0;
    for (size_t i = 0; i < n; i++) {
        const vf_tensor *t = &m->tensors[i];
        has_output |= t->role == VF_ROLE_OUTPUT;
        n_wv += t->role == VF_ROLE_ATTN_V;
        n_down += is_ffn_down(t);
    }
    /* counters run in file order, which for GGUF is llama.cpp's order */
    int64_t i_wv = 0, i_down = 0;
    uint32_t gqa = hp->n_kv_heads ? hp->n_heads / hp->n_kv_heads : 1;
    bool moe8 = hp->n_experts == 8, moe = hp->n_experts > 1;
    bool falcon = strcasecmp(hp->architecture, "falcon") == 0 || strcasecmp(hp->architecture, "RefinedWebModel") == 0 ||
                  strcasecmp(hp->architecture, "RefinedWeb") == 0;
    /* LLM_TYPE_70B (llama-model.cpp, LLM_ARCH_LLAMA: case 80: n_head == n_head_kv
     * ? LLM_TYPE_65B : LLM_TYPE_70B): LLaMA-1-65B has no shared KV heads and
     * keeps llama-quant.cpp's plain attn_v rule */
    uint32_t kvh = hp->n_kv_heads ? hp->n_kv_heads : hp->n_heads;
    bool is70b = strcasecmp(hp->architecture, "llama") == 0 && hp->n_layers == 80;
    is70b = is70b && kvh != hp->n_heads;
    for (size_t i = 0; i < n; i++) {
        const vf_tensor *t = &m->tensors[i];
        vf_dtype dt = base;
        if (!ggufmix_quantizes(t)) {
            types[i] = VF_DTYPE_UNKNOWN;
            continue;
        }
        uint64_t nx = t->shape[t->n_dims - 1];
        if (t->role == VF_ROLE_OUTPUT || (!has_output && t->role == VF_ROLE_EMBED)) {
            /* the output matrix (or the shared embedding): Q6_K, Q8_0 for
             * Falcon or rows that are not whole blocks, Q8_0 stays */
            if (falcon || nx % vf_dtype_get(base)->block_elements != 0)
                dt = VF_DTYPE_Q8_0;
            else if (base != VF_DTYPE_Q8_0)
                dt = VF_DTYPE_Q6_K;
        } else if (t->role == VF_ROLE_EMBED) {
            /* token embeddings keep the base type for these file types */
        } else if (t->role == VF_ROLE_ATTN_V) {
            if (ft == FT_Q2_K)
                dt = gqa >= 4 ? VF_DTYPE_Q4_K : VF_DTYPE_Q3_K;
            else if (ft == FT_Q3_K_M)
                dt = i_wv < 2 ? VF_DTYPE_Q5_K : VF_DTYPE_Q4_K;
            else if (ft == FT_Q3_K_L)
                dt = VF_DTYPE_Q5_K;
            else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && gqa >= 4)
                dt = VF_DTYPE_Q5_K;
            else if ((ft == FT_Q4_K_M || ft == FT_Q5_K_M) && more_bits(i_wv, n_wv))
                dt = VF_DTYPE_Q6_K;
            else if (ft == FT_Q4_K_S && i_wv < 4)
                dt = VF_DTYPE_Q5_K;
            if (is70b && (dt == VF_DTYPE_Q3_K || dt == VF_DTYPE_Q4_K))
                dt = VF_DTYPE_Q5_K;
            if (moe8)
                dt = VF_DTYPE_Q8_0;
            i_wv++;
        } else if (t->role == VF_ROLE_ATTN_K) {
            if (moe8)
                dt = VF_DTYPE_Q8_0;
        } else if (is_ffn_down(t)) {
            /* MoE: the layer from the name, out of all ffn_down tensors */
            int64_t il = moe && t->layer >= 0 ? t->layer : i_down, nl = n_down;
            if (ft == FT_Q2_K)
                dt = VF_DTYPE_Q3_K;
            else if (ft == FT_Q3_K_M)
                dt = il < nl / 16 ? VF_DTYPE_Q5_K : !falcon || more_bits(il, nl) ? VF_DTYPE_Q4_K : VF_DTYPE_Q3_K;
            else if (ft == FT_Q3_K_L)
                dt = falcon ? VF_DTYPE_Q4_K : VF_DTYPE_Q5_K;
            else if (ft == FT_Q4_K_M) {
                if (falcon)
                    dt = il < nl / 16 ? VF_DTYPE_Q6_K : more_bits(il, nl) ? VF_DTYPE_Q5_K : VF_DTYPE_Q4_K;
                else if (more_bits(il, nl))
                    dt = VF_DTYPE_Q6_K;
            } else if (il < nl / 8 && (ft == FT_IQ4_NL || ft == FT_IQ4_XS))
                dt = VF_DTYPE_Q5_K;
            else if (ft == FT_Q5_K_M && more_bits(il, nl))
                dt = VF_DTYPE_Q6_K;
            else if (ft == FT_Q4_K_S && !falcon && il < nl / 8)
                dt = VF_DTYPE_Q5_K;
            i_down++;
        } else if (t->role == VF_ROLE_ATTN_O) {
            if (!falcon) {
                if (moe8) {
                    if (ft == FT_Q2_K || ft == FT_Q3_K_S || ft == FT_Q3_K_M || ft == FT_IQ4_NL || ft == FT_Q4_K_S ||
                        ft == FT_Q4_K_M || ft == FT_IQ4_XS)
                        dt = VF_DTYPE_Q5_K;
                } else if (ft == FT_Q2_K)
                    dt = VF_DTYPE_Q3_K;
                else if (ft == FT_Q3_K_M)
                    dt = VF_DTYPE_Q4_K;
                else if (ft == FT_Q3_K_L)
                    dt = VF_DTYPE_Q5_K;
            } else if (ft == FT_Q3_K_L)
                dt = VF_DTYPE_Q4_K;
        } else if (t->role == VF_ROLE_ATTN_QKV) {
            if (ft == FT_Q3_K_M || ft == FT_Q3_K_L)
                dt = VF_DTYPE_Q4_K;
            else if (ft == FT_Q4_K_M)
                dt = VF_DTYPE_Q5_K;
            else if (ft == FT_Q5_K_M)
                dt = VF_DTYPE_Q6_K;
        }
        types[i] = ggufmix_fallback(dt, nx);
    }
    return types;
}

bool vf_weights_format_valid(const char *spec)
{
    vf_dtype base;
    int ft;
    vf_quant_scheme q;
    return spec && *spec && (vf__ggufmix_parse(spec, &base, &ft) || vf_quant_scheme_parse(spec, &q) == VF_OK);
}
