/* dtype.c — the element-type table and the load-time quantization schemes. */
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const vf_dtype_info dtype_table[VF_DTYPE_COUNT] = {
#define VF_X_(nm, value, be, bb, gid, st) [VF_DTYPE_##nm] = {#nm, be, bb, gid, st, 8.0 * (bb) / (be)},
    VF_DTYPE_MAP(VF_X_)
#undef VF_X_
};
/* the values run 0 .. COUNT-1 with no gap: the table is indexed by them */
#define VF_X_(nm, value, be, bb, gid, st) _Static_assert(value < VF_DTYPE_COUNT, #nm " within VF_DTYPE_COUNT");
VF_DTYPE_MAP(VF_X_)
#undef VF_X_

const vf_dtype_info *vf_dtype_get(vf_dtype dt)
{
    if ((unsigned)dt >= VF_DTYPE_COUNT)
        return NULL;
    return &dtype_table[dt];
}

vf_dtype vf_dtype_from_name(const char *name)
{
    if (!name)
        return VF_DTYPE_UNKNOWN;
    for (int i = 0; i < VF_DTYPE_COUNT; i++)
        if (strcasecmp(name, dtype_table[i].name) == 0)
            return (vf_dtype)i;
    /* the spellings people and configs use */
    static const struct {
        const char *alias;
        vf_dtype dt;
    } aliases[] = {
        {"float32", VF_DTYPE_F32},   {"fp32", VF_DTYPE_F32},       {"float", VF_DTYPE_F32},
        {"float16", VF_DTYPE_F16},   {"fp16", VF_DTYPE_F16},       {"half", VF_DTYPE_F16},
        {"bfloat16", VF_DTYPE_BF16}, {"float64", VF_DTYPE_F64},    {"fp64", VF_DTYPE_F64},
        {"double", VF_DTYPE_F64},    {"int8", VF_DTYPE_I8},        {"uint8", VF_DTYPE_U8},
        {"int16", VF_DTYPE_I16},     {"int32", VF_DTYPE_I32},      {"int64", VF_DTYPE_I64},
        {"bool", VF_DTYPE_BOOL},     {"float8_e4m3fn", VF_DTYPE_F8_E4M3},
        {"float8_e5m2", VF_DTYPE_F8_E5M2},                         {"e4m3", VF_DTYPE_F8_E4M3},
        {"e5m2", VF_DTYPE_F8_E5M2},  {"float8_e4m3fnuz", VF_DTYPE_F8_E4M3FNUZ},
        {"float8_e5m2fnuz", VF_DTYPE_F8_E5M2FNUZ},                 {"float8_e8m0fnu", VF_DTYPE_F8_E8M0},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcasecmp(name, aliases[i].alias) == 0)
            return aliases[i].dt;
    return VF_DTYPE_UNKNOWN;
}

vf_dtype vf_dtype_from_safetensors(const char *s)
{
    for (int i = 0; i < VF_DTYPE_COUNT; i++)
        if (dtype_table[i].safetensors_name && strcmp(s, dtype_table[i].safetensors_name) == 0)
            return (vf_dtype)i;
    return VF_DTYPE_UNKNOWN;
}

vf_dtype vf_dtype_from_gguf(int64_t id)
{
    if (id < 0)
        return VF_DTYPE_UNKNOWN;
    for (int i = 0; i < VF_DTYPE_COUNT; i++)
        if (dtype_table[i].gguf_id == id)
            return (vf_dtype)i;
    return VF_DTYPE_UNKNOWN;
}

vf_status vf_dtype_bytes(vf_dtype dt, uint64_t n, uint64_t *bytes)
{
    const vf_dtype_info *d = vf_dtype_get(dt);
    if (!d)
        return VF_EUNSUPPORTED;
    if (n % d->block_elements != 0)
        return VF_EFORMAT;
    if (vf__mul_overflow(n / d->block_elements, d->block_bytes, bytes))
        return VF_ERANGE;
    return VF_OK;
}

const char *vf_format_name(vf_format f)
{
    switch (f) {
    case VF_FORMAT_SAFETENSORS:
        return "safetensors";
    case VF_FORMAT_GGUF:
        return "gguf";
    case VF_FORMAT_CONFIG:
        return "config";
    case VF_FORMAT_ONNX:
        return "onnx";
    }
    return "unknown";
}

/* ---- load-time quantization schemes ----
 * Bits per weight with every stored overhead:
 *  bitsandbytes 4-bit (fp4/nf4): 4-bit codes + one fp32 absmax per 64-weight
 *    block = 4 + 32/64 = 4.5; with double quantization the absmax is 8-bit,
 *    with an fp32 second-level scale per 256 blocks: 4 + 8/64 + 32/(64*256)
 *    = 4.127 (Dettmers et al. 2023, QLoRA §2 "Double Quantization").
 *  bitsandbytes LLM.int8: int8 codes + one fp32 scale per output row
 *    (Dettmers et al. 2022); per-row cost depends on the row length, which
 *    the estimator charges per tensor; the per-weight figure here is 8.
 *  GPTQ (AutoGPTQ/exllama layout): packed b-bit qweight, fp16 scales and
 *    b-bit packed zeros per group per output column: b + 16/g + b/g; plus an
 *    int32 g_idx per input row, charged per tensor.
 *  AWQ (GEMM layout): b + 16/g + b/g, no g_idx.
 *  fp8 (per-tensor scale): 8.
 */
static const struct scheme_row {
    const char *name;
    const char *method;
    double bpw;
    const char *keeps;
} schemes[] = {
    {"int8", "bitsandbytes", 8.0, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"int4", "bitsandbytes", 4.5, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"fp4", "bitsandbytes", 4.5, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"nf4", "bitsandbytes", 4.5, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"nf4-dq", "bitsandbytes", 4.0 + 8.0 / 64 + 32.0 / (64 * 256),
     "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"fp8", "fp8", 8.0, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"gptq", "gptq", 4.0 + 16.0 / 128 + 4.0 / 128, "embeddings, lm_head, norms and biases kept in 16-bit"},
    {"awq", "awq", 4.0 + 16.0 / 128 + 4.0 / 128, "embeddings, lm_head, norms and biases kept in 16-bit"},
};
#define N_SCHEMES (sizeof schemes / sizeof schemes[0])

size_t vf_quant_scheme_count(void) { return N_SCHEMES; }

const char *vf_quant_scheme_name(size_t i) { return i < N_SCHEMES ? schemes[i].name : NULL; }

/* "gptq[-int4|-4bit][-g128]" → bits and group size */
static vf_status parse_gptq_like(const char *spec, const char *method, vf_quant_scheme *out)
{
    uint32_t bits = 4, group = 128;
    const char *p = spec + strlen(method);
    while (*p) {
        if (*p != '-' && *p != '_')
            return VF_EINVAL;
        p++;
        char *end;
        if (strncasecmp(p, "int", 3) == 0) {
            unsigned long b = strtoul(p + 3, &end, 10);
            if (end == p + 3 || (b != 2 && b != 3 && b != 4 && b != 8))
                return VF_EINVAL;
            bits = (uint32_t)b;
            p = end;
        } else if (*p == 'g' || *p == 'G') {
            unsigned long g = strtoul(p + 1, &end, 10);
            if (end == p + 1 || g < 8 || g > 65536)
                return VF_EINVAL;
            group = (uint32_t)g;
            p = end;
        } else {
            unsigned long b = strtoul(p, &end, 10);
            if (end == p || strncasecmp(end, "bit", 3) != 0 || (b != 2 && b != 3 && b != 4 && b != 8))
                return VF_EINVAL;
            bits = (uint32_t)b;
            p = end + 3;
        }
    }
    snprintf(out->name, sizeof out->name, "%s-int%u-g%u", method, bits, group);
    out->bits_per_weight = bits + 16.0 / group + (double)bits / group;
    out->group_size = group;
    out->method = strcmp(method, "gptq") == 0 ? "gptq" : "awq";
    out->keeps = schemes[6].keeps;
    return VF_OK;
}

vf_status vf_quant_scheme_parse(const char *spec, vf_quant_scheme *out)
{
    if (!spec || !out || !*spec)
        return VF_EINVAL;
    memset(out, 0, sizeof *out);
    out->gguf_type = VF_DTYPE_UNKNOWN;
    if (strncasecmp(spec, "gptq", 4) == 0)
        return parse_gptq_like(spec, "gptq", out);
    if (strncasecmp(spec, "awq", 3) == 0)
        return parse_gptq_like(spec, "awq", out);
    for (size_t i = 0; i < N_SCHEMES; i++) {
        if (strcasecmp(spec, schemes[i].name) == 0 ||
            (strcasecmp(schemes[i].name, "nf4-dq") == 0 && strcasecmp(spec, "nf4_dq") == 0)) {
            snprintf(out->name, sizeof out->name, "%s", schemes[i].name);
            out->bits_per_weight = schemes[i].bpw;
            out->method = schemes[i].method;
            out->keeps = schemes[i].keeps;
            out->group_size = strncmp(schemes[i].name, "nf4", 3) == 0 || strcmp(schemes[i].name, "int4") == 0 ||
                                      strcmp(schemes[i].name, "fp4") == 0
                                  ? 64
                                  : 0;
            return VF_OK;
        }
    }
    vf_dtype dt = vf_dtype_from_name(spec);
    const vf_dtype_info *d = vf_dtype_get(dt);
    if (!d)
        return VF_EINVAL;
    snprintf(out->name, sizeof out->name, "%s", d->name);
    out->bits_per_weight = d->bits_per_element;
    out->group_size = d->block_elements > 1 ? d->block_elements : 0;
    if (d->gguf_id >= 0 && d->block_elements > 1) {
        out->gguf_type = dt;
        out->method = "gguf";
        out->keeps = "norms and 1-d tensors kept in F32; llama.cpp's mixes (Q4_K_M) raise some tensors to Q6_K";
    } else {
        out->gguf_type = d->gguf_id >= 0 ? dt : VF_DTYPE_UNKNOWN;
        out->method = "float";
        out->keeps = "every tensor converted";
    }
    return VF_OK;
}
