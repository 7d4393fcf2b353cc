/* arch.h — building a model's tensor list from its config.json (hfconfig.c,
 * arch_*.c). Shared by the config reader and the per-family builders only. */
#ifndef VF_ARCH_H
#define VF_ARCH_H

#include "model/model.h"

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
    struct vf__ab_skipidx *skipidx[2]; /* q.skip's and q.skip2's plain names, hashed (built on first use) */
    uint32_t flags; /* VF_TENSOR_* OR'ed into every tensor built (MTP blocks, vision towers) */
    /* a text model inside a wrapper: its family and checkpoint names (NULL: the family's own) */
    const char *type; /* model_type of the text model being built */
    const char *pre;  /* decoder prefix, "model." by default */
    const char *head; /* output head, "lm_head" by default */
    vf_status (*text_build)(struct vf__ab *b); /* a wrapper's text model builder (resolved by the reader) */
    const char *text_type;
} vf__ab;

/* Releases what the builder compiled. */
VF_HIDDEN void vf__ab_done(vf__ab *b);

/* linear-layer flags */
#define VF_LIN_BIAS 0x1u    /* has a bias vector */
#define VF_LIN_NOQUANT 0x2u /* not an nn.Linear in the reference model: never quantized */

/* A plain parameter in b->dt; n_dims 1..4 from the non-zero dims given. */
/* snprintf(out, cap, fmt, ...), by a fast path for the "%s", "%u" and "%llu" a
 * family's per-expert names are made of (100k+ in a large MoE). */
VF_HIDDEN void vf__ab_name(char *out, size_t cap, const char *fmt, ...) VF_PRINTF(3, 4);
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

/* ---- shared parts (arch_parts.c) ---- */
/* An attention block's projections: "<p>q_proj" ... as named, with optional
 * output gate (q_proj twice as wide: Qwen3-Next, Qwen3.5) and q/k norms. */
typedef struct vf__attn {
    uint64_t h, heads, kv, hd;
    bool q_gate, qkv_bias, o_bias;
    int qk_norm;                /* 0 none, 1 per head [hd], 2 whole projection [heads*hd] */
    const char *o, *qn, *kn;    /* NULL: "o_proj", "q_norm", "k_norm" */
} vf__attn;
VF_HIDDEN void vf__ab_attn(vf__ab *b, const char *p, const vf__attn *a);
/* SwiGLU MLP "<p>gate_proj/up_proj/down_proj" (names as given, NULL gate = plain up/down). */
VF_HIDDEN void vf__ab_mlp(vf__ab *b, const char *p, uint64_t h, uint64_t ff, unsigned flags, const char *g,
                          const char *u, const char *d);
/* Routed experts "<p>experts.<e>.<g|u|d>" each [ff, h] / [h, ff]. */
VF_HIDDEN void vf__ab_experts(vf__ab *b, const char *p, uint64_t E, uint64_t h, uint64_t ff, const char *g,
                              const char *u, const char *d);
/* A Mamba-2 mixer (mamba_ssm Mamba2 / transformers Mamba2Mixer, BambaMixer,
 * NemotronHMamba2Mixer): in_proj, conv1d, dt_bias, A_log, D, gated norm, out_proj. */
typedef struct vf__ssm2 {
    uint64_t h, heads, head_dim, state, groups, conv;
    bool conv_bias, proj_bias, norm; /* norm: the gated RMSNorm over d_inner */
    bool own_out_bias, out_bias;     /* out_proj's bias apart from in_proj's (Falcon-H1 projectors_bias) */
} vf__ssm2;
VF_HIDDEN void vf__ab_mamba2(vf__ab *b, const char *p, const vf__ssm2 *s);
/* A Bamba-style hybrid layer i's two norms: model.layers.i.{input,pre_ff}_layernorm */
VF_HIDDEN void vf__ab_hybrid_norms(vf__ab *b, uint32_t i, uint64_t h);
/* One vision/text sub-config's integer, with the class default when absent;
 * fails the build past cap. */
VF_HIDDEN uint64_t vf__ab_cfg(vf__ab *b, const json_t *o, const char *key, uint64_t dflt, uint64_t cap);

/* ---- families ---- */
typedef vf_status (*vf__arch_fn)(vf__ab *b);
VF_HIDDEN vf_status vf__arch_decoder(vf__ab *b); /* llama-like decoders: arch_decoder.c */
VF_HIDDEN vf_status vf__arch_deepseek(vf__ab *b);
VF_HIDDEN vf_status vf__arch_deepseek4(vf__ab *b); /* arch_deepseek4.c: DeepSeek-V4 */
/* DeepSeek-V4's KV-cache shape (shared latent, sliding layers) from its config. */
VF_HIDDEN vf_status vf__deepseek4_hparams(vf_hparams *hp, const json_t *t, const char *path, vf_error *err);
VF_HIDDEN vf_status vf__arch_gpt2(vf__ab *b); /* arch_classic.c */
VF_HIDDEN vf_status vf__arch_bigcode(vf__ab *b);
VF_HIDDEN vf_status vf__arch_neox(vf__ab *b);
VF_HIDDEN vf_status vf__arch_bert(vf__ab *b);
/* BERT's embeddings and encoder layers under a prefix ("bert.", "roberta."). */
VF_HIDDEN vf_status vf__ab_bert_encoder(vf__ab *b, const char *pre);
/* A classification head's width: id2label's entries, else 2. */
VF_HIDDEN uint64_t vf__ab_num_labels(const vf__ab *b);
VF_HIDDEN vf_status vf__arch_roberta(vf__ab *b);     /* arch_roberta.c */
VF_HIDDEN vf_status vf__arch_t5(vf__ab *b);          /* arch_t5.c */
VF_HIDDEN vf_status vf__arch_falcon(vf__ab *b);
VF_HIDDEN vf_status vf__arch_starcoder2(vf__ab *b);  /* arch_starcoder2.c */
VF_HIDDEN vf_status vf__arch_nomic_bert(vf__ab *b);  /* arch_nomic.c */
VF_HIDDEN vf_status vf__arch_chatglm(vf__ab *b);     /* arch_chatglm.c */
VF_HIDDEN vf_status vf__arch_bloom(vf__ab *b);       /* arch_bloom.c */
VF_HIDDEN vf_status vf__arch_stablelm(vf__ab *b);    /* arch_stablelm.c */
/* ChatGLMConfig's own spellings of KV groups, head width and context. */
VF_HIDDEN vf_status vf__chatglm_hparams(vf_hparams *hp, const json_t *t, const char *path, vf_error *err);
VF_HIDDEN vf_status vf__arch_text(vf__ab *b);   /* arch_text.c: 2025-26 text decoders */
VF_HIDDEN vf_status vf__arch_hybrid(vf__ab *b); /* arch_hybrid.c: SSM / linear attention hybrids */
VF_HIDDEN void vf__arch_ssm(vf__ab *b, const char *type); /* arch_ssm.c: the Mamba families */
/* arch_mamba_attn.c: Mamba-2 beside attention in one layer (falcon_h1) and
 * shared attention blocks between Mamba-2 layers (zamba2) */
VF_HIDDEN void vf__arch_mamba_attn(vf__ab *b, const char *type);
/* Per-layer kinds of a hybrid (attention / recurrent / neither) and its recurrent
 * state per sequence and layer, from config.json (arch_hybrid.c). */
VF_HIDDEN bool vf__is_hybrid(const char *type);
VF_HIDDEN vf_status vf__hybrid_hparams(vf_hparams *hp, const json_t *root, const json_t *t, const char *type,
                                       const char *path, vf_error *err);
/* Gemma 4's vision and audio encoders and their embedders (arch_gemma4mm.c). */
VF_HIDDEN void vf__gemma4_towers(vf__ab *b);
VF_HIDDEN vf_status vf__arch_vlm(vf__ab *b);    /* arch_vlm.c: vision-language wrappers */
/* A vision tower + projector as the wrapper's model_type lays it out (arch_vision.c). */
VF_HIDDEN void vf__vision_tower(vf__ab *b, const char *type);

/* What a family's config class implies where config.json says nothing. */
enum {
    VF_TR_UNTIED = 1 << 0,   /* tie_word_embeddings defaults to false (true is PretrainedConfig's default) */
    VF_TR_FP32 = 1 << 1,     /* checkpoints saved from float32 models (the old families) */
    VF_TR_BIASES = 1 << 2,   /* attention and MLP biases (falcon: as its "bias" key says) */
    VF_TR_FF_4H = 1 << 3,    /* no intermediate size: 4 x hidden */
    VF_TR_QWEN_SWA = 1 << 4, /* with a sliding window, max_window_layers decides which layers slide */
    VF_TR_QKV_BIAS = 1 << 5, /* attention_bias defaults to true */
    VF_TR_FALCON = 1 << 6,   /* falcon: multi_query, new_decoder_architecture and "bias" keys */
    VF_TR_NO_ATTN = 1 << 7,  /* attention-free (pure state-space): no heads needed */
    VF_TR_VLM = 1 << 8,      /* a vision-language wrapper: text_config + vision_config */
    VF_TR_MLP_BIAS = 1 << 9, /* mlp_bias defaults to true */
};

typedef struct vf__family {
    const char *model_type;
    vf__arch_fn build;
    unsigned traits;
    const char *text, *pre, *head; /* VF_TR_VLM: the text model's family and checkpoint names */
} vf__family;

/* The family for a model_type (also legacy spellings), NULL if unknown (families.c). */
VF_HIDDEN const vf__family *vf__family_find(const char *model_type);
/* "llama, mistral, ..." for error messages, into list[cap]. */
VF_HIDDEN void vf__family_list(char *list, size_t cap);

/* ---- config access (hfconfig.c) ---- */

#endif
