/* infer.h — what the inference memory model's files share (hidden). */
#ifndef VF_INFER_H
#define VF_INFER_H

#include "model/model.h"
#include "memory/memory.h"
#include "device/device.h"


/* ---- weights (weights.c) ---- */
typedef struct vf__wprice {
    uint64_t bytes;          /* whole model, as it would sit in device memory */
    uint64_t params;
    uint64_t quant_params;   /* weights the scheme quantized */
    uint64_t sharded_bytes;  /* part that tensor parallelism divides (matrices, embeddings) */
    uint64_t largest_src;    /* largest quantized tensor at its stored size (load-time transient) */
    uint64_t largest_src_elems;
    double bits;             /* bits per weight achieved over all parameters */
    vf_dtype act_dtype;      /* dtype activations and the KV cache default to */
} vf__wprice;

/* Weights on each of tp devices: what tensor parallelism divides (matrices,
 * embeddings), split tp ways, plus what every rank keeps whole (norms, biases). */
VF_HIDDEN uint64_t vf__weights_per_gpu(const vf__wprice *w, uint32_t tp);

/* One tensor's price under a scheme, for one model. */
typedef struct vf__pricer {
    bool requant, gguf;
    vf_quant_scheme q;     /* non-GGUF schemes */
    vf_dtype to_float, keep;
    const vf_model *m;
    vf_dtype *types;       /* GGUF: the type llama.cpp's quantizer gives each tensor (UNKNOWN = kept) */
    char name[32];
} vf__pricer;
VF_HIDDEN vf_status vf__pricer_init(vf__pricer *p, const vf_model *m, const char *scheme, vf_dtype keep,
                                    vf_error *err);
VF_HIDDEN void vf__pricer_free(vf__pricer *p);
/* Bytes of tensor i as the scheme stores it; *quantized when the scheme quantized it. */
VF_HIDDEN uint64_t vf__pricer_tensor(const vf__pricer *p, size_t i, bool *quantized);

/* llama.cpp's quantizer (ggufmix.c): a file type ("q4_k_m") or a
 * GGUF block type ("q4_k") → base type and rule set; the type of every
 * tensor (malloc'd, n_tensors entries, VF_DTYPE_UNKNOWN = not quantized). */
VF_HIDDEN bool vf__ggufmix_parse(const char *name, vf_dtype *base, int *ft);
VF_HIDDEN vf_dtype *vf__ggufmix_types(const vf_model *m, vf_dtype base, int ft);

/* Every tensor priced once per scheme, kept with the model (weights_memo.c):
 * the whole-model sums and each block's bytes, split into what tensor
 * parallelism shards (2-D) and what it replicates (1-D), and the same for
 * the parts outside the blocks, so that a pipeline stage's weights are a sum
 * over its blocks rather than over every tensor. */
enum { VF__WP_EMBED, VF__WP_HEAD, VF__WP_NORM, VF__WP_OTHER, VF__WP_COUNT };
typedef struct vf__wlayers {
    char scheme[32];
    vf_dtype keep;
    vf__wprice w;
    bool requant, gguf;
    char name[32], method[32];
    const char *keeps;
    size_t n_mtp;
    uint32_t n_layers;
    uint64_t *sh, *rep;                     /* per block */
    uint64_t *ex;                           /* per block: the routed experts' share of sh */
    uint64_t part_sh[VF__WP_COUNT], part_rep[VF__WP_COUNT];
    uint64_t *tensor_bytes;                 /* per tensor (llama.cpp places them one by one); 0 for MTP ones */
    struct vf__wlayers *next;
} vf__wlayers;
/* The memo for (scheme, keep), built on first use; owned by the model. */
VF_HIDDEN vf_status vf__weights_layers(const vf_model *m, const char *scheme, vf_dtype keep, const vf__wlayers **out,
                                       vf_error *err);
/* Fills L (zeroed by the caller) by pricing every tensor. */
VF_HIDDEN vf_status vf__weights_build(const vf_model *m, const char *scheme, vf_dtype keep, vf__wlayers *L,
                                      vf_error *err);

/* Each tensor's bytes under (scheme, keep): the weights memo's own figures (0 for MTP tensors). */
VF_HIDDEN vf_status vf__weights_tensor_bytes(const vf_model *m, const char *scheme, vf_dtype keep,
                                             const uint64_t **out, vf_error *err);

/* Prices every tensor as stored, or re-priced with o->weights. keep_dtype
 * (VF_DTYPE_UNKNOWN = as stored) is what a bitsandbytes/GPTQ load keeps the
 * unquantized tensors in. */
VF_HIDDEN vf_status vf__weights_price(const vf_model *m, const char *scheme, vf_dtype keep_dtype, vf__wprice *w,
                                      vf_estimate *e, vf_error *err);

/* ---- KV cache (kv.c) ---- */
/* K and V elements per token of layer il, whole model before TP. mla_latent:
 * the engine caches MLA's compressed latent (vLLM, llama.cpp) instead of
 * decompressed heads (transformers). */
VF_HIDDEN void vf__kv_layer_elems(const vf_hparams *hp, uint32_t il, bool mla_latent, uint64_t *k, uint64_t *v);
VF_HIDDEN uint32_t vf__layer_kv_heads(const vf_hparams *hp, uint32_t il);
VF_HIDDEN uint32_t vf__layer_heads(const vf_hparams *hp, uint32_t il);
VF_HIDDEN bool vf__layer_is_swa(const vf_hparams *hp, uint32_t il);
VF_HIDDEN bool vf__is_mla(const vf_hparams *hp);
/* "f16", "bf16", "fp8", "q8_0", ...; "" gives def. false on an unknown name. */
VF_HIDDEN bool vf__kv_dtype_parse(const char *s, vf_dtype def, vf_dtype *k, vf_dtype *v);
/* Whole-model KV bytes per token for one sequence with every layer at full
 * length (the assumptions table's figure). */
VF_HIDDEN uint64_t vf__kv_bytes_per_token(const vf_hparams *hp, bool mla_latent, vf_dtype k, vf_dtype v);
/* Recurrent (SSM / linear attention) state per sequence, all recurrent layers. */
VF_HIDDEN uint64_t vf__recurrent_bytes(const vf_hparams *hp);
/* ---- serving extras (vision.c, extras.c) ---- */
typedef struct vf__image {
    uint64_t tokens;       /* context tokens one image adds */
    uint64_t patches;      /* patches the tower runs over for it */
    uint64_t cross_tokens; /* Mllama: tile states its cross-attention layers cache */
    uint64_t vision_hidden, vision_ff;
} vf__image;
/* false when the model has no vision tower vramfit knows. */
VF_HIDDEN bool vf__image_cost(const vf_model *m, uint32_t w, uint32_t h, vf__image *out);
/* llama.cpp's clip compute buffer for --mmproj (mmproj.c), bytes. */
typedef struct vf__clip {
    char proj[32];                               /* clip.projector_type */
    uint64_t n_embd, n_ff, n_head, patch, image_size, merge, proj_dim, deepstack;
    uint64_t w, h, patches, warmup;              /* the image priced (pixels), its patches, warmup side */
    bool dynamic, flash, gated, window, qwen;
    uint64_t inputs, embed, attn, scores, ffn, total;
} vf__clip;
VF_HIDDEN vf_status vf__mmproj_cost(const vf_model *p, const vf_estimate_opts *o, vf__clip *c, vf_error *err);
typedef struct vf__extras {
    uint64_t weights;   /* per GPU, held before any cache is sized (draft, LoRA slots, mmproj) */
    uint64_t kv_token;  /* per GPU and token of each sequence (a draft's layers) */
    uint64_t kv_seq;    /* per GPU and sequence, fixed (Mllama's cross-attention states) */
    uint64_t tokens;    /* context tokens a request's images add */
    uint64_t lookahead; /* KV slots per sequence for the draft tokens */
    uint64_t act;       /* a transient peak beside the runtime's (the vision tower, clip) */
    uint64_t embeds;    /* the tower's outputs held into the decoder's pass */
    uint64_t buffers;   /* a buffer of its own beside the runtime's compute buffer (clip's) */
} vf__extras;
/* vLLM's LoRA slots per GPU (vllm_lora.c): the layers' stacks, the
 * embedding's and head's, the model's added-vocabulary rows (before 0.12). */
typedef struct vf__lora {
    uint64_t bytes, layers, vocab, base;
    uint32_t expert_layers; /* blocks whose routed experts carry slots */
    bool moe, extra_vocab;  /* vLLM 0.11.2+ MoE LoRA; lora_extra_vocab_size (before 0.12) */
} vf__lora;
VF_HIDDEN vf_status vf__vllm_lora_bytes(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t dt,
                                        vf__lora *out);
VF_HIDDEN vf_status vf__extras_get(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, vf__extras *x,
                                   vf_estimate *e, vf_error *err);
/* vLLM: the tower's transient and outputs at its profile's dummy images (extras.c). */
VF_HIDDEN void vf__extras_vllm_images(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t mnbt,
                                      uint64_t mns, uint64_t mml, vf__extras *x, vf_estimate *e);
/* vLLM V0's Mllama profile: the tower on every dummy sequence's images (extras.c). */
VF_HIDDEN void vf__extras_vllm_mllama_v0(const vf_model *m, const vf_estimate_opts *o, uint32_t tp, uint64_t mns,
                                         vf__extras *x, vf_estimate *e);
/* Adds the extras to a runtime's answer (all but vLLM, which sizes them before its pool);
 * shared_context: llama.cpp's n_ctx is shared by its sequences. */
VF_HIDDEN void vf__extras_apply(vf_estimate *e, const vf__extras *x, bool shared_context);

/* --vllm-version parsed (vllm_version.c): the release, "current" when
 * unset, and the engine (V1 from 0.8 unless "/v0" says otherwise). */
typedef struct vf__vllm_ver {
    bool current, v1;
    int major, minor, patch;
} vf__vllm_ver;
VF_HIDDEN bool vf__vllm_version_parse(const char *s, vf__vllm_ver *v, const char **why);
VF_HIDDEN bool vf__vllm_at_least(const vf__vllm_ver *v, int a, int b, int c);
/* vLLM's hybrid KV-cache layout (vllm_hybrid.c): false when no layer is recurrent. */
typedef struct vf__vllm_hybrid {
    uint64_t block;      /* attention block size in tokens (raised to fit a state page) */
    uint64_t page;       /* bytes of one pool block: group x the common page size */
    uint64_t state_page; /* one recurrent layer's state per request, per GPU */
    uint64_t need;       /* bytes a max_model_len request needs */
    uint32_t group, attn_groups, rec_groups;
} vf__vllm_hybrid;
VF_HIDDEN bool vf__vllm_hybrid_layout(const vf_hparams *hp, uint64_t tp, vf_dtype kt, vf_dtype vt, uint64_t mml,
                                      vf__vllm_hybrid *o);
/* Whether layer il holds recurrent state (hp->layer_recurrent, else the layers without KV). */
VF_HIDDEN bool vf__layer_recurrent(const vf_hparams *hp, uint32_t il);
/* Positions layer il caches for a sequence of ctx tokens: sliding-window
 * layers hold at most the window. */
VF_HIDDEN uint64_t vf__layer_tokens(const vf_hparams *hp, uint32_t il, uint64_t ctx);
/* KV cache of batch sequences of ctx tokens, whole model before TP, K and V
 * packed in kt and vt, plus each sequence's recurrent state. */
VF_HIDDEN uint64_t vf__kv_cache_bytes(const vf_hparams *hp, bool mla_latent, vf_dtype kt, vf_dtype vt, uint64_t ctx,
                                      uint64_t batch);
/* Prefill tokens: --prompt, default and cap the context. */
VF_HIDDEN uint64_t vf__prompt_tokens(const vf_infer_opts *io, uint64_t ctx);

/* ---- overhead figures (overhead.c) ---- */
VF_HIDDEN vf_status vf__cuda_version_check(const char *v, vf_error *err);
/* PyTorch's CUDA context by loading mode and device (with_kernels: the
 * kernels a forward loads lazily); *why says which figure and its source. */
VF_HIDDEN uint64_t vf__torch_context_bytes(const vf_estimate_opts *o, bool with_kernels, char *why, size_t n);
/* The same for a process that leaves the loading mode to CUDA (llama.cpp). */
VF_HIDDEN uint64_t vf__native_context_bytes(const vf_estimate_opts *o, char *why, size_t n);
/* llama.cpp's CUDA backend beside its buffers, per device (ggml_cuda.c):
 * what the device's matmuls and attention ask ggml-cuda's pool for. */
typedef struct vf__ggml_dev {
    uint64_t f_nk;     /* largest N + K of a 16/32-bit weight matrix on it (cuBLAS operands) */
    uint64_t q_in;     /* largest input width K of a quantized matrix (x experts used for MoE) */
    uint64_t q_elems;  /* largest N x K of a quantized matrix (its f16 copy before Turing) */
    uint64_t q_nk;     /* that matrix's N + K */
    bool layers;       /* holds attention layers */
} vf__ggml_dev;
typedef struct vf__ggml_shape {
    uint64_t n_ubatch, n_kv, n_head;  /* the prompt's batch, cache cells, most heads of a layer */
    uint64_t kv_row_elems;            /* most K + V elements per cell of a layer */
    bool fa, kv_quantized;
} vf__ggml_shape;
typedef struct vf__ggml_cost {
    uint64_t context, cublas, pool, total;
    bool old_gpu;                     /* before Turing: quantized matmuls through cuBLAS */
    const char *pool_why;             /* the op that sets the pool */
    char context_why[200];
} vf__ggml_cost;
VF_HIDDEN void vf__ggml_cuda_overhead(const vf_estimate_opts *o, const vf__ggml_dev *d, const vf__ggml_shape *s,
                                      vf__ggml_cost *c);
/* cuBLAS + cuBLASLt workspaces PyTorch allocates through its allocator. */
VF_HIDDEN uint64_t vf__cublas_workspace_bytes(const char *gpu_name, uint64_t gpu_bytes);
/* The memory that sets a device's size-dependent class (vLLM's defaults, an
 * unnamed device's cuBLAS workspace): the device asked, which fit holds while
 * it varies gpu_bytes alone in its search for the smallest memory. */
static inline uint64_t vf__gpu_class_bytes(const vf_estimate_opts *o)
{
    return o->infer.gpu_class_bytes ? o->infer.gpu_class_bytes : o->gpu_bytes;
}
/* Fills device_bytes and its parts (reserved is raised to allocated). */
VF_HIDDEN void vf__device_set(vf_estimate *e, uint64_t allocated, uint64_t reserved, uint64_t context,
                              uint64_t outside);

/* vLLM's pipeline split (vllm/distributed/utils.py get_pp_indices): the
 * layers [*start, *end) of stage rank of pp. */
VF_HIDDEN void vf__pp_indices(uint32_t layers, uint32_t rank, uint32_t pp, uint32_t *start, uint32_t *end);

/* vLLM's CUDA graphs: capture sizes, graphs and their pool (vllm_graphs.c). */
typedef enum vf__vg_mode { VF__VG_NONE, VF__VG_V0, VF__VG_PIECEWISE, VF__VG_FULL_AND_PIECEWISE } vf__vg_mode;
typedef struct vf__vllm_graph_cfg {
    uint64_t mns, mnbt;   /* max_num_seqs, max_num_batched_tokens */
    uint64_t max_capture; /* V1's largest capture size (0: 512) */
    uint64_t v0_max;      /* V0's largest batch size: 256 (0.6.x) or 512 */
    uint64_t a;           /* activation bytes per element */
    uint32_t tp, layers;  /* the rank's layers (its pipeline stage) */
    uint32_t moe_tp;      /* the experts' split: tp, or 1 under expert parallel */
    vf__vg_mode mode;
} vf__vllm_graph_cfg;
typedef struct vf__vllm_graphs {
    uint32_t sizes, full_sizes, graphs, layers, pieces;
    uint64_t largest, pool, per_size, bytes;
    vf__vg_mode mode;
} vf__vllm_graphs;
VF_HIDDEN void vf__vllm_graph_bytes(const vf_hparams *hp, const vf__vllm_graph_cfg *c, vf__vllm_graphs *g);
/* vLLM's MXFP4 MoE backends and the expert bytes they hold beyond the
 * checkpoint's, per MoE layer and rank (vllm_mxfp4.c). */
typedef enum vf__mxfp4_backend { VF__MXFP4_MARLIN, VF__MXFP4_TRITON, VF__MXFP4_FLASHINFER } vf__mxfp4_backend;
VF_HIDDEN vf__mxfp4_backend vf__vllm_mxfp4_backend(const char *gpu_name);
VF_HIDDEN uint64_t vf__vllm_mxfp4_extra(const vf_hparams *hp, uint32_t tp, vf__mxfp4_backend b);
VF_HIDDEN const char *vf__mxfp4_backend_name(vf__mxfp4_backend b);
/* The driver bytes one layer adds to every captured size. */
VF_HIDDEN uint64_t vf__vllm_graph_layer_bytes(const vf_hparams *hp);
/* The forward's transients over tokens tokens on one of tp ranks. */
VF_HIDDEN uint64_t vf__vllm_fwd_bytes(const vf_hparams *hp, uint64_t tokens, uint32_t tp, uint32_t moe_tp, uint64_t a);

/* ---- runtime profiles ---- */
/* An engine the memory model prices (runtimes.c: one row each). */
#define VF__RUNTIME_ALIASES 2
typedef struct vf__runtime {
    vf_runtime id;
    const char *name;                           /* as --runtime spells it and JSON prints it */
    const char *aliases[VF__RUNTIME_ALIASES];   /* other spellings --runtime takes */
    vf_status (*infer)(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err);
    bool allocator_margin;    /* fit keeps one PyTorch allocator segment free (its own margin otherwise) */
    bool sizes_extras;        /* sizes the serving extras itself, before its KV pool (vLLM) */
    bool extras_on_first_gpu; /* the extras sit on the first device of a layer split (llama.cpp) */
    bool metal;               /* has an Apple Metal backend */
    bool expert_parallel;     /* has an expert-parallel layout (vLLM --enable-expert-parallel) */
} vf__runtime;
/* The row of r (the plain sum's for a value no row has). */
VF_HIDDEN const vf__runtime *vf__runtime_of(vf_runtime r);

VF_HIDDEN vf_status vf__infer_generic(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err);
VF_HIDDEN vf_status vf__infer_transformers(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e,
                                           vf_error *err);
VF_HIDDEN vf_status vf__infer_vllm(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err);
VF_HIDDEN vf_status vf__infer_llamacpp(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err);
/* The llama.cpp architecture a model runs as (llamacpp_arch.c): NULL
 * with *known set when llama.cpp implements none for it, NULL with *known
 * clear for a family vramfit does not know. */
VF_HIDDEN const char *vf__llamacpp_arch(const vf_model *m, bool *known);
/* Whether llama.cpp keeps rollback snapshots of m's recurrent state for a
 * draft (llm_arch_supports_rs_rollback; llamacpp_arch.c). */
VF_HIDDEN bool vf__llamacpp_rs_rollback(const vf_model *m);
/* VF_EUNSUPPORTED, one line naming the family, when llama.cpp cannot run m. */
VF_HIDDEN vf_status vf__llamacpp_arch_check(const vf_model *m, vf_error *err);
VF_HIDDEN vf_status vf__infer_litgpt(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err);

/* Layer count, hidden size, heads, vocab and context with fallbacks; false
 * when the description lacks what the KV cache needs (no layers/heads). */
VF_HIDDEN bool vf__hp_has_attention(const vf_hparams *hp);
VF_HIDDEN uint64_t vf__hp_context(const vf_hparams *hp);
VF_HIDDEN uint64_t vf__hp_ff(const vf_hparams *hp);

#endif
