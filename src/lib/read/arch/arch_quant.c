/* arch_quant.c — quantization_config → how linear layers are stored.
 * Keys as transformers' quantizer configs write them (BitsAndBytesConfig,
 * GPTQConfig, AwqConfig, FineGrainedFP8Config, Mxfp4Config) and
 * compressed-tensors' QuantizationConfig (config_groups / ignore / format). */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

static vf_status bad(vf__ab *b, const char *what)
{
    return vf__err(b->err, VF_EFORMAT, b->path, "quantization_config: %s", what);
}

static vf_status parse_bits_group(vf__ab *b, const json_t *o, uint32_t dflt_bits, uint32_t dflt_group)
{
    uint64_t v;
    int r = vf__cfg_u64(o, &v, "bits", "w_bit", "num_bits", NULL);
    if (r < 0)
        return bad(b, "bits must be a non-negative integer");
    b->q.bits = r ? (uint32_t)v : dflt_bits;
    if (b->q.bits != 2 && b->q.bits != 3 && b->q.bits != 4 && b->q.bits != 8)
        return vf__err(b->err, VF_EUNSUPPORTED, b->path, "quantization_config: %u-bit weights not supported",
                       b->q.bits);
    /* group_size -1 = one group per input row (per channel) */
    const json_t *g = json_object_get(o, "group_size");
    if (!g)
        g = json_object_get(o, "q_group_size");
    if (json_is_integer(g)) {
        json_int_t gi = json_integer_value(g);
        if (gi > (json_int_t)1 << 24)
            return bad(b, "group_size out of range");
        b->q.group = gi > 0 ? (uint32_t)gi : 0;
    } else {
        b->q.group = dflt_group;
    }
    return VF_OK;
}

/* compressed-tensors: the first config group's weights scheme decides. */
static vf_status parse_ct(vf__ab *b, const json_t *qc)
{
    b->q.kind = VF_Q_CT;
    b->q.skip = json_object_get(qc, "ignore");
    const char *fmt = vf__cfg_str(qc, "format");
    const json_t *groups = json_object_get(qc, "config_groups");
    const json_t *grp = NULL;
    if (json_is_object(groups)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)groups, k, v)
        {
            grp = v;
            break;
        }
    }
    const json_t *w = json_is_object(grp) ? json_object_get(grp, "weights") : NULL;
    if (!json_is_object(w))
        return bad(b, "compressed-tensors config without config_groups.*.weights");
    const char *type = vf__cfg_str(w, "type");
    const char *strategy = vf__cfg_str(w, "strategy");
    uint64_t nb = 0;
    if (vf__cfg_u64(w, &nb, "num_bits", NULL) < 0 || nb == 0 || nb > 8)
        return bad(b, "num_bits must be 1..8");
    b->q.bits = (uint32_t)nb;
    b->q.sym = vf__cfg_bool(w, "symmetric", true);
    uint64_t g = 0;
    if (strategy && strcmp(strategy, "group") == 0) {
        if (vf__cfg_u64(w, &g, "group_size", NULL) <= 0 || g == 0 || g > ((uint64_t)1 << 24))
            return bad(b, "group strategy needs a positive group_size");
    }
    b->q.group = (uint32_t)g;
    const json_t *ia = json_object_get(grp, "input_activations");
    b->q.static_input = json_is_object(ia) && !vf__cfg_bool(ia, "dynamic", false);
    if (fmt && strcmp(fmt, "nvfp4-pack-quantized") == 0) {
        b->q.ct_format = VF_CT_NVFP4;
    } else if ((fmt && strcmp(fmt, "pack-quantized") == 0) || (!fmt && type && strcmp(type, "int") == 0 && nb < 8)) {
        if (nb != 2 && nb != 4 && nb != 8)
            return vf__err(b->err, VF_EUNSUPPORTED, b->path, "quantization_config: %u-bit packing not supported",
                           (unsigned)nb);
        b->q.ct_format = VF_CT_PACK;
    } else if (type && strcmp(type, "float") == 0) {
        b->q.ct_format = VF_CT_FLOAT;
    } else {
        b->q.ct_format = VF_CT_INT;
    }
    if (strategy && strcmp(strategy, "tensor") == 0)
        b->q.per_tensor = true;
    return VF_OK;
}

vf_status vf__quant_parse(vf__ab *b, const json_t *qc)
{
    memset(&b->q, 0, sizeof b->q);
    if (!qc || json_is_null(qc))
        return VF_OK;
    if (!json_is_object(qc))
        return bad(b, "not an object");
    const char *method = vf__cfg_str(qc, "quant_method");
    snprintf(b->m->hp.quant_method, sizeof b->m->hp.quant_method, "%s", method ? method : "");
    if (!method) {
        /* pre-quant_method bitsandbytes configs only state load_in_4bit / load_in_8bit */
        if (vf__cfg_bool(qc, "load_in_4bit", false) || vf__cfg_bool(qc, "load_in_8bit", false))
            method = "bitsandbytes";
        else
            return bad(b, "no quant_method");
    }
    if (strcmp(method, "bitsandbytes") == 0) {
        b->q.skip = json_object_get(qc, "llm_int8_skip_modules");
        if (vf__cfg_bool(qc, "load_in_4bit", false)) {
            b->q.kind = VF_Q_BNB4;
            const char *t = vf__cfg_str(qc, "bnb_4bit_quant_type");
            snprintf(b->q.bnb_type, sizeof b->q.bnb_type, "%s", t && strcmp(t, "nf4") == 0 ? "nf4" : "fp4");
            b->q.bnb_double = vf__cfg_bool(qc, "bnb_4bit_use_double_quant", false);
            const char *st = vf__cfg_str(qc, "bnb_4bit_quant_storage");
            if (st && strcmp(st, "uint8") != 0)
                return vf__err(b->err, VF_EUNSUPPORTED, b->path,
                               "quantization_config: bnb_4bit_quant_storage '%.32s' not supported", st);
            b->m->hp.quant_bits = 4;
        } else if (vf__cfg_bool(qc, "load_in_8bit", false)) {
            b->q.kind = VF_Q_BNB8;
            b->m->hp.quant_bits = 8;
        } else {
            return bad(b, "bitsandbytes without load_in_4bit or load_in_8bit");
        }
        return VF_OK;
    }
    vf_status st;
    if (strcmp(method, "gptq") == 0) {
        b->q.kind = VF_Q_GPTQ;
        if ((st = parse_bits_group(b, qc, 4, 128)) != VF_OK)
            return st;
        b->q.desc_act = vf__cfg_bool(qc, "desc_act", false);
        b->q.skip = json_object_get(qc, "modules_to_not_convert");
    } else if (strcmp(method, "awq") == 0) {
        b->q.kind = VF_Q_AWQ;
        if ((st = parse_bits_group(b, qc, 4, 128)) != VF_OK)
            return st;
        const char *ver = vf__cfg_str(qc, "version");
        if (ver && strcmp(ver, "gemm") != 0 && strcmp(ver, "GEMM") != 0)
            return vf__err(b->err, VF_EUNSUPPORTED, b->path, "quantization_config: awq version '%.16s' not supported",
                           ver);
        b->q.skip = json_object_get(qc, "modules_to_not_convert");
    } else if (strcmp(method, "fp8") == 0) {
        b->q.kind = VF_Q_FP8;
        const json_t *bs = json_object_get(qc, "weight_block_size");
        uint64_t b0 = 0, b1 = 0;
        if (json_is_array(bs)) {
            if (json_array_size(bs) != 2 || !vf__json_u64(json_array_get(bs, 0), &b0) ||
                !vf__json_u64(json_array_get(bs, 1), &b1) || b0 == 0 || b1 == 0 || b0 > 65536 || b1 > 65536)
                return bad(b, "weight_block_size must be two positive integers");
        }
        b->q.block[0] = (uint32_t)b0;
        b->q.block[1] = (uint32_t)b1;
        b->m->hp.quant_block_n = (uint32_t)b0;
        b->m->hp.quant_block_k = (uint32_t)b1;
        const char *act = vf__cfg_str(qc, "activation_scheme");
        b->q.static_input = act && strcmp(act, "static") == 0;
        b->q.skip = json_object_get(qc, "modules_to_not_convert");
        b->m->hp.quant_bits = 8;
    } else if (strcmp(method, "mxfp4") == 0) {
        b->q.kind = VF_Q_MXFP4;
        b->q.skip = json_object_get(qc, "modules_to_not_convert");
        b->m->hp.quant_bits = 4;
        b->m->hp.quant_group_size = 32;
        return VF_OK;
    } else if (strcmp(method, "compressed-tensors") == 0) {
        if ((st = parse_ct(b, qc)) != VF_OK)
            return st;
        b->m->hp.quant_bits = b->q.bits;
        b->m->hp.quant_group_size = b->q.group;
        return VF_OK;
    } else {
        return vf__err(b->err, VF_EUNSUPPORTED, b->path,
                       "quantization_config: quant_method '%.32s' not supported (bitsandbytes, gptq, awq, fp8, "
                       "mxfp4, compressed-tensors)",
                       method);
    }
    b->m->hp.quant_bits = b->q.bits ? b->q.bits : b->m->hp.quant_bits;
    b->m->hp.quant_group_size = b->q.group;
    return VF_OK;
}
