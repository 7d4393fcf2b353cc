/* arch.h — building a model's tensor list from its config.json (hfconfig.c,
 * arch_*.c). Shared by the config reader and the per-family builders only. */
#ifndef VF_ARCH_H
#define VF_ARCH_H

#include "internal.h"

#include <regex.h>

/* How a checkpoint stores its linear layers (quantization_config). */
typedef enum vf__qkind {
    VF_Q_NONE,
    VF_Q_BNB4,  /* bitsandbytes Params4bit: nf4 / fp4, optional double quant */
    VF_Q_BNB8,  /* bitsandbytes LLM.int8: int8 weight + SCB */
    VF_Q_GPTQ,  /* qweight / qzeros / scales / g_idx */
    VF_Q_AWQ,   /* qweight / qzeros / scales (GEMM layout) */
    VF_Q_FP8,   /* F8_E4M3 weight + weight_scale_inv (block) or weight_scale */
    VF_Q_MXFP4, /* gpt-oss experts: _blocks + _scales */
    VF_Q_CT     /* compressed-tensors */
} vf__qkind;

typedef enum vf__ctfmt { VF_CT_PACK, VF_CT_FLOAT, VF_CT_INT, VF_CT_NVFP4 } vf__ctfmt;

typedef struct vf__quant {
    vf__qkind kind;
    uint32_t bits, group;  /* GPTQ / AWQ / compressed-tensors; group 0 = per channel */
    bool bnb_double;       /* bnb_4bit_use_double_quant */
    char bnb_type[8];      /* "nf4" | "fp4" */
    uint32_t block[2];     /* fp8 weight_block_size; 0 = per-tensor scale */
    bool static_input;     /* activation scales stored (input_scale) */
    bool desc_act;         /* GPTQ act-order: g_idx still stored, same shape */
    bool sym;              /* compressed-tensors symmetric: no zero points */
    bool per_tensor;       /* compressed-tensors tensor strategy: one scale */
    vf__ctfmt ct_format;
    const json_t *skip;    /* modules kept in high precision (array of patterns) */
    const json_t *skip2;
} vf__quant;

/* modules_to_not_convert / ignore patterns, regular expressions compiled once */
#define VF_AB_MAX_RX 64
typedef struct vf__ab_rx {
    const char *pat; /* "re:..." string inside the config (borrowed) */
    bool ok;
    regex_t rx;
} vf__ab_rx;

/* Builder state: every call is a no-op once st != VF_OK. */
typedef struct vf__ab {
    vf_model *m;
    const json_t *root; /* the whole config.json */
    const json_t *cfg;  /* the language model's config (root or text_config) */
    const char *path;
    vf_error *err;
    vf_status st;
    vf_dtype dt; /* dtype of unquantized parameters */
    vf__quant q;
    vf__ab_rx rx[VF_AB_MAX_RX];
    size_t n_rx;
} vf__ab;

/* Releases what the builder compiled. */
VF_HIDDEN void vf__ab_done(vf__ab *b);

/* linear-layer flags */
#define VF_LIN_BIAS 0x1u    /* has a bias vector */
#define VF_LIN_NOQUANT 0x2u /* not an nn.Linear in the reference model: never quantized */

/* A plain parameter in b->dt; n_dims 1..4 from the non-zero dims given. */
VF_HIDDEN void vf__ab_param(vf__ab *b, uint64_t d0, uint64_t d1, const char *fmt, ...) VF_PRINTF(4, 5);
VF_HIDDEN void vf__ab_param3(vf__ab *b, uint64_t d0, uint64_t d1, uint64_t d2, const char *fmt, ...) VF_PRINTF(5, 6);
/* A LayerNorm with bias: "<prefix>.weight" and "<prefix>.bias", both [n]. */
VF_HIDDEN void vf__ab_layernorm(vf__ab *b, uint64_t n, const char *fmt, ...) VF_PRINTF(3, 4);
/* Any tensor: dtype, flags, n_params (used when VF_TENSOR_PACKED or aux; see .c). */
VF_HIDDEN void vf__ab_raw(vf__ab *b, vf_dtype dt, uint32_t flags, uint64_t n_params, uint32_t nd,
                          const uint64_t *shape, const char *name);
/* nn.Linear(in, out): "<prefix>.weight" [out, in] (+ ".bias" [out]), stored as
 * the quantization_config says unless the module is kept in high precision. */
VF_HIDDEN void vf__ab_linear(vf__ab *b, unsigned flags, uint64_t out, uint64_t in, const char *fmt, ...)
    VF_PRINTF(5, 6);
/* Fails the build with a message (first error wins). */
VF_HIDDEN void vf__ab_fail(vf__ab *b, vf_status st, const char *fmt, ...) VF_PRINTF(3, 4);

/* quantization_config → b->q (arch_quant.c). */
VF_HIDDEN vf_status vf__quant_parse(vf__ab *b, const json_t *qc);

/* ---- families ---- */
typedef vf_status (*vf__arch_fn)(vf__ab *b);
VF_HIDDEN vf_status vf__arch_decoder(vf__ab *b); /* llama-like decoders: arch_decoder.c */
VF_HIDDEN vf_status vf__arch_deepseek(vf__ab *b);
VF_HIDDEN vf_status vf__arch_gpt2(vf__ab *b); /* arch_classic.c */
VF_HIDDEN vf_status vf__arch_bigcode(vf__ab *b);
VF_HIDDEN vf_status vf__arch_neox(vf__ab *b);
VF_HIDDEN vf_status vf__arch_bert(vf__ab *b);
VF_HIDDEN vf_status vf__arch_falcon(vf__ab *b);

/* ---- config access (hfconfig.c) ---- */

#endif
