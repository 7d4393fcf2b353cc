/*
 * vramfit.h — the public interface of libvramfit.
 *
 * libvramfit answers "how much GPU memory does this model need, and how do I
 * make it fit?" exactly, from the model's own files (safetensors, GGUF,
 * Hugging Face config.json, ONNX) or from an embedded catalog, and streams
 * weights into device memory with bounded host memory.
 *
 * A first use (error checks shortened; tests/abi/caller.c runs one like it):
 *
 *     vf_error err = {0};
 *     vf_model *m = NULL;
 *     if (vf_model_open("Qwen/Qwen3-8B", &m, &err) != VF_OK)   // a file, a catalog name, hf://ID
 *         return fprintf(stderr, "%s\n", err.msg), 1;
 *     vf_estimate_opts o;
 *     vf_estimate_opts_init(&o);                               // every knob at its default
 *     o.runtime = VF_RUNTIME_VLLM;
 *     o.infer.context = 8192;
 *     vf_estimate *e = vf_estimate_new();
 *     if (vf_estimate_run(m, &o, e, &err) == VF_OK)
 *         printf("%llu bytes per GPU\n", (unsigned long long)vf_estimate_per_gpu_bytes(e));
 *     for (size_t i = 0; i < vf_estimate_assumption_count(e); i++)
 *         puts(vf_estimate_assumption(e, i));
 *     vf_estimate_free(e);
 *     vf_model_free(m);
 *
 * Conventions (the contract every function below keeps):
 *   - One prefix: vf_. Objects the library owns are opaque: made by _open or
 *     _new, read through accessors, released by _free; _free(NULL) is a no-op,
 *     and an accessor given NULL answers 0, "" or NULL.
 *   - Lists are read as _count(obj) and _item(obj, i); an index past the end
 *     answers NULL (or 0). What an object hands out (strings, items, nested
 *     results) lives as long as that object.
 *   - Not found: a lookup that can fail returns vf_status (VF_ENOENT, or
 *     VF_EINVAL with the nearest names in the error); one that cannot returns
 *     NULL, or (size_t)-1 for an index.
 *   - Functions that can fail return vf_status. VF_OK is 0. When a vf_error
 *     pointer is passed (it may be NULL), it receives a one-line, lower-case
 *     message without a full stop, of the form "PATH: what is wrong".
 *   - Bad input never aborts the process: every length read from a file is
 *     checked against the bytes remaining and a hard cap before allocation,
 *     and every integer product is checked for overflow.
 *   - Sizes are in bytes (uint64_t). Element counts are uint64_t.
 *   - Shapes are in PyTorch order (outermost dimension first), also for GGUF
 *     tensors, whose on-disk ne[] order is the reverse.
 *   - The library is thread-compatible: distinct objects may be used from
 *     distinct threads; one object must not be used from two threads at once.
 */
#ifndef VRAMFIT_H
#define VRAMFIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(VF_BUILDING_LIBRARY)
#define VF_API __attribute__((visibility("default")))
#else
#define VF_API
#endif

#define VF_VERSION_MAJOR 0
#define VF_VERSION_MINOR 1
#define VF_VERSION_PATCH 0
#define VF_VERSION_STRING "0.1.0"

/*
 * ABI: how results and structs grow.
 *   - Results (vf_estimate, vf_fit, vf_load_result) are opaque objects: their
 *     fields are read by accessors (the VF_*_FIELDS lists), so a field is a
 *     new accessor and the layout is the library's own.
 *   - Enumerations have explicit values that never change; a new value is
 *     added at the end (VF_DTYPE_UNKNOWN is 255 in every version).
 *   - Every struct a caller allocates (options, errors, and the small
 *     records embedded in them) is at most 4 KiB, with a fixed size pinned by
 *     VF_SIZE_PINNED: its fields, then reserved bytes up to that size
 *     (VF_GROWABLE_BEGIN/END wrap the fields in a union with the reserve).
 *   - A new field is added only at the end of a struct's fields, carved from
 *     its reserve; no field moves, changes type or is removed within a major
 *     version (tests/abi checks every field's offset against the 0.1 layout).
 *   - Zero means "the default" for every input field, so a program built
 *     against an older header, whose reserve the _init functions (or its own
 *     memset) zeroed, gets the old behaviour from the new library.
 *   - Structs the library owns and hands out by pointer (vf_tensor,
 *     vf_hparams, vf_file_info, vf_dtype_info, vf_load_progress) may grow at
 *     their end freely: callers never allocate them or step through arrays
 *     of them. vf_gpu is pinned because vf_gpu_choice embeds it.
 *   - Arrays of pinned structs (vf_sweep_point, vf_gpu_process, ...) keep
 *     their stride with their size.
 *   - A struct that outgrows its reserve takes a new soname (libvramfit.so.1).
 */
#define VF_GROWABLE_BEGIN union { struct {
#define VF_GROWABLE_END(size) }; unsigned char vf_reserved_[size]; };
#ifdef __cplusplus
#define VF_SIZE_PINNED(type, size) static_assert(sizeof(type) == (size), #type " keeps its ABI size")
#else
#define VF_SIZE_PINNED(type, size) _Static_assert(sizeof(type) == (size), #type " keeps its ABI size")
#endif

/** The library's version string ("MAJOR.MINOR.PATCH"). */
VF_API const char *vf_version(void);

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/*
 * X(NAME, message). Values follow the list's order from VF_OK = 0; a new
 * status is added at the end. The command-line tool's exit code for each is
 * src/cli/exit_code.h's (docs/design.md §2).
 */
#define VF_STATUS_MAP(X)                                                 \
    X(OK, "success")                                                     \
    X(EINVAL, "invalid argument")                                        \
    X(ENOMEM, "out of memory")                                           \
    X(EIO, "input/output error")                                         \
    X(ENOENT, "no such file or model")                                   \
    X(EFORMAT, "malformed model file")                                   \
    X(EUNSUPPORTED, "unsupported model or format")                       \
    X(ERANGE, "value out of range")                                      \
    X(EDEVICE, "device or driver error")                                 \
    X(EDEVMEM, "out of device memory")                                   \
    X(EINTR, "interrupted")

typedef enum vf_status {
#define VF_X_(name, msg) VF_##name,
    VF_STATUS_MAP(VF_X_)
#undef VF_X_
    VF_STATUS_COUNT_
} vf_status;

/** A static, lower-case description of a status ("malformed model file"). */
VF_API const char *vf_strerror(vf_status status);

#define VF_ERROR_MSG_MAX 512

/** Error detail filled by failing calls: status plus "PATH: reason". */
typedef struct vf_error { VF_GROWABLE_BEGIN
    vf_status status;
    char msg[VF_ERROR_MSG_MAX];
VF_GROWABLE_END(1024) } vf_error;
VF_SIZE_PINNED(vf_error, 1024);

/* ------------------------------------------------------------------------ */
/* Element types                                                             */
/* ------------------------------------------------------------------------ */

/*
 * Every storage type a tensor can have, from safetensors and from ggml/GGUF.
 * X(NAME, value, block_elements, block_bytes, gguf_id, safetensors_name)
 *   value: the enumerator's value, fixed for the ABI: a new type takes the
 *     next free value at the end; VF_DTYPE_UNKNOWN is 255 in every version.
 *   block_elements/block_bytes: the smallest unit; bits per element =
 *     8 * block_bytes / block_elements (Q4_K: 256 elements in 144 bytes =
 *     4.5 bits). Sub-byte safetensors types (F4, F6_*) are expressed as the
 *     smallest whole-byte block.
 *   gguf_id: the on-disk ggml_type id, or -1 when GGUF has none.
 *   safetensors_name: the header's dtype string, or NULL.
 * Sources: safetensors/src/tensor.rs (enum Dtype); ggml src/ggml.c
 * type_traits and src/ggml-common.h block structs (see docs/dtypes.md).
 */
#define VF_DTYPE_MAP(X)                                                      \
    X(F64, 0, 1, 8, 28, "F64")                                                  \
    X(F32, 1, 1, 4, 0, "F32")                                                   \
    X(F16, 2, 1, 2, 1, "F16")                                                   \
    X(BF16, 3, 1, 2, 30, "BF16")                                                \
    X(F8_E4M3, 4, 1, 1, -1, "F8_E4M3")                                          \
    X(F8_E5M2, 5, 1, 1, -1, "F8_E5M2")                                          \
    X(F8_E8M0, 6, 1, 1, -1, "F8_E8M0")                                          \
    X(F8_E4M3FNUZ, 7, 1, 1, -1, "F8_E4M3FNUZ")                                  \
    X(F8_E5M2FNUZ, 8, 1, 1, -1, "F8_E5M2FNUZ")                                  \
    X(F6_E2M3, 9, 4, 3, -1, "F6_E2M3")                                          \
    X(F6_E3M2, 10, 4, 3, -1, "F6_E3M2")                                          \
    X(F4, 11, 2, 1, -1, "F4")                                                    \
    X(C64, 12, 1, 8, -1, "C64")                                                  \
    X(I64, 13, 1, 8, 27, "I64")                                                  \
    X(I32, 14, 1, 4, 26, "I32")                                                  \
    X(I16, 15, 1, 2, 25, "I16")                                                  \
    X(I8, 16, 1, 1, 24, "I8")                                                    \
    X(U64, 17, 1, 8, -1, "U64")                                                  \
    X(U32, 18, 1, 4, -1, "U32")                                                  \
    X(U16, 19, 1, 2, -1, "U16")                                                  \
    X(U8, 20, 1, 1, -1, "U8")                                                    \
    X(BOOL, 21, 1, 1, -1, "BOOL")                                                \
    X(Q4_0, 22, 32, 18, 2, NULL)                                                 \
    X(Q4_1, 23, 32, 20, 3, NULL)                                                 \
    X(Q5_0, 24, 32, 22, 6, NULL)                                                 \
    X(Q5_1, 25, 32, 24, 7, NULL)                                                 \
    X(Q8_0, 26, 32, 34, 8, NULL)                                                 \
    X(Q8_1, 27, 32, 36, 9, NULL)                                                 \
    X(Q2_K, 28, 256, 84, 10, NULL)                                               \
    X(Q3_K, 29, 256, 110, 11, NULL)                                              \
    X(Q4_K, 30, 256, 144, 12, NULL)                                              \
    X(Q5_K, 31, 256, 176, 13, NULL)                                              \
    X(Q6_K, 32, 256, 210, 14, NULL)                                              \
    X(Q8_K, 33, 256, 292, 15, NULL)                                              \
    X(IQ2_XXS, 34, 256, 66, 16, NULL)                                            \
    X(IQ2_XS, 35, 256, 74, 17, NULL)                                             \
    X(IQ3_XXS, 36, 256, 98, 18, NULL)                                            \
    X(IQ1_S, 37, 256, 50, 19, NULL)                                              \
    X(IQ4_NL, 38, 32, 18, 20, NULL)                                              \
    X(IQ3_S, 39, 256, 110, 21, NULL)                                             \
    X(IQ2_S, 40, 256, 82, 22, NULL)                                              \
    X(IQ4_XS, 41, 256, 136, 23, NULL)                                            \
    X(IQ1_M, 42, 256, 56, 29, NULL)                                              \
    X(TQ1_0, 43, 256, 54, 34, NULL)                                              \
    X(TQ2_0, 44, 256, 66, 35, NULL)                                              \
    X(MXFP4, 45, 32, 17, 39, NULL)                                               \
    X(NVFP4, 46, 64, 36, 40, NULL)                                               \
    X(Q1_0, 47, 128, 18, 41, NULL)                                               \
    X(Q2_0, 48, 64, 18, 42, NULL)

typedef enum vf_dtype {
#define VF_X_(name, value, be, bb, gid, st) VF_DTYPE_##name = value,
    VF_DTYPE_MAP(VF_X_)
#undef VF_X_
    VF_DTYPE_COUNT = 49,    /* types this build knows: values 0 .. COUNT-1 (it grows) */
    VF_DTYPE_UNKNOWN = 255 /* a type this build does not know (a GGUF type id, say): fixed */
} vf_dtype;

typedef struct vf_dtype_info {
    const char *name;             /* "Q4_K" */
    uint32_t block_elements;      /* elements per block */
    uint32_t block_bytes;         /* bytes per block */
    int32_t gguf_id;              /* ggml_type id, -1 if none */
    const char *safetensors_name; /* header dtype string, NULL if none */
    double bits_per_element;      /* 8 * block_bytes / block_elements */
} vf_dtype_info;

/** The table row of a dtype; NULL for VF_DTYPE_UNKNOWN or out of range. */
VF_API const vf_dtype_info *vf_dtype_get(vf_dtype dt);
/** Name lookup, case-insensitive ("bf16", "Q4_K", "f8_e4m3"). */
VF_API vf_dtype vf_dtype_from_name(const char *name);
/** safetensors header string ("BF16") → dtype; exact match as the format says. */
VF_API vf_dtype vf_dtype_from_safetensors(const char *s);
/** GGUF ggml_type id → dtype; VF_DTYPE_UNKNOWN for an id this build lacks. */
VF_API vf_dtype vf_dtype_from_gguf(int64_t id);
/**
 * Bytes that n elements of dt occupy. Fails with VF_EFORMAT when n is not a
 * multiple of the block size and VF_ERANGE on overflow.
 */
VF_API vf_status vf_dtype_bytes(vf_dtype dt, uint64_t n, uint64_t *bytes);

/*
 * Quantization schemes people choose when they load a model (not storage
 * types of a file): they price a weight matrix in bits per weight, including
 * every scale, zero point and block header the method stores.
 */
typedef struct vf_quant_scheme { VF_GROWABLE_BEGIN
    char name[32];              /* canonical spelling, e.g. "gptq-int4-g128" */
    double bits_per_weight;     /* all overheads included */
    vf_dtype gguf_type;         /* for GGUF schemes, else VF_DTYPE_UNKNOWN */
    uint32_t group_size;        /* 0 when per-channel or n/a */
    const char *method;         /* "gguf", "bitsandbytes", "gptq", "awq", "fp8", "float" */
    const char *keeps;          /* what the method leaves unquantized, in words */
VF_GROWABLE_END(128) } vf_quant_scheme;
VF_SIZE_PINNED(vf_quant_scheme, 128);

/**
 * Parses a weight format: any dtype name ("bf16", "q4_k", "mxfp4"), or a load
 * scheme: "int8" (bitsandbytes LLM.int8), "int4"/"fp4" (bitsandbytes 4-bit),
 * "nf4", "nf4-dq", "fp8", "gptq[-int4|-int8|-int3|-int2][-gN]",
 * "awq[-gN]". Fails with VF_EINVAL for an unknown spelling.
 */
VF_API vf_status vf_quant_scheme_parse(const char *spec, vf_quant_scheme *out);
/** Number of named load schemes (for listing); i in [0, count). */
VF_API size_t vf_quant_scheme_count(void);
/** Canonical spelling of load scheme i; NULL out of range. */
VF_API const char *vf_quant_scheme_name(size_t i);

/* ------------------------------------------------------------------------ */
/* Models: one description whatever the source                               */
/* ------------------------------------------------------------------------ */

#define VF_MAX_DIMS 8
#define VF_NO_FILE UINT32_MAX

typedef enum vf_format {
    VF_FORMAT_SAFETENSORS = 0,
    VF_FORMAT_GGUF = 1,
    VF_FORMAT_CONFIG = 2, /* tensors built from config.json (file or catalog) */
    VF_FORMAT_ONNX = 3    /* a network's graph (.onnx): initializers are the tensors */
} vf_format;

/* What a tensor is for; decides how quantizers and the memory model treat it. */
#define VF_ROLE_MAP(X)                                                       \
    X(OTHER, "other")                                                        \
    X(EMBED, "embedding")                                                    \
    X(POS_EMBED, "position_embedding")                                       \
    X(OUTPUT, "output")                                                      \
    X(ATTN_Q, "attn_q")                                                      \
    X(ATTN_K, "attn_k")                                                      \
    X(ATTN_V, "attn_v")                                                      \
    X(ATTN_QKV, "attn_qkv")                                                  \
    X(ATTN_O, "attn_o")                                                      \
    X(ATTN_LORA, "attn_mla")                                                 \
    X(MLP_GATE, "mlp_gate")                                                  \
    X(MLP_UP, "mlp_up")                                                      \
    X(MLP_DOWN, "mlp_down")                                                  \
    X(EXPERT, "expert")                                                      \
    X(SHARED_EXPERT, "shared_expert")                                        \
    X(ROUTER, "router")                                                      \
    X(NORM, "norm")                                                          \
    X(BIAS, "bias")                                                          \
    X(QUANT_AUX, "quant_aux")                                                \
    X(BUFFER, "buffer")

typedef enum vf_role {
#define VF_X_(name, s) VF_ROLE_##name,
    VF_ROLE_MAP(VF_X_)
#undef VF_X_
    VF_ROLE_COUNT
} vf_role;

/** The role's name as JSON and tables print it; "other" out of range. */
VF_API const char *vf_role_name(vf_role r);

/* Tensor flags. */
#define VF_TENSOR_NOT_PARAM 0x1u  /* a stored buffer, not a parameter (GPT-2 attn.bias masks, inv_freq) */
#define VF_TENSOR_MTP 0x2u        /* belongs to multi-token-prediction layers (DeepSeek-V3 layer 61) */
#define VF_TENSOR_PACKED 0x4u     /* quantized storage: elements are packed words, not weights */
#define VF_TENSOR_VISION 0x8u     /* a vision encoder's or projector's (outside the decoder's layers) */

typedef struct vf_tensor {
    const char *name;
    vf_dtype dtype;
    uint32_t n_dims;
    uint64_t shape[VF_MAX_DIMS]; /* PyTorch order */
    uint64_t n_elements;         /* product of shape (logical elements) */
    uint64_t n_bytes;            /* bytes stored */
    uint64_t n_params;           /* weights it represents (≠ n_elements for packed quantized storage) */
    uint32_t file;               /* index into vf_model_file(), VF_NO_FILE if config-derived */
    uint64_t offset;             /* absolute offset of the data in that file */
    int32_t layer;               /* block index, -1 when outside the repeated blocks */
    vf_role role;
    uint32_t flags;
    uint32_t n_experts;          /* >1 when one tensor stacks several experts */
} vf_tensor;

/*
 * Hyper-parameters: whatever the source tells. 0 means "not stated".
 * Per-layer arrays (NULL when uniform) have n_layers entries.
 */
typedef struct vf_hparams {
    char architecture[64];     /* HF model_type or GGUF general.architecture */
    char name[128];            /* display name when known */
    uint32_t n_layers;
    uint64_t hidden_size;
    uint64_t intermediate_size;
    uint32_t n_heads;
    uint32_t n_kv_heads;
    uint32_t head_dim;         /* key/query head dim */
    uint32_t v_head_dim;       /* value head dim (differs under MLA) */
    uint64_t vocab_size;
    uint64_t context_length;   /* max_position_embeddings / {arch}.context_length */
    bool tie_word_embeddings;
    /* mixture of experts */
    uint32_t n_experts;
    uint32_t n_experts_active;
    uint32_t n_shared_experts;
    uint64_t moe_intermediate_size;
    uint64_t shared_expert_intermediate_size;
    uint32_t first_k_dense;    /* leading dense blocks */
    uint32_t moe_layer_freq;   /* every Nth block is MoE (1 = all) */
    uint32_t n_mtp_layers;     /* DeepSeek-V3 num_nextn_predict_layers */
    /* multi-head latent attention */
    uint32_t q_lora_rank;
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim;
    uint32_t qk_nope_head_dim;
    /* sliding-window attention */
    uint32_t sliding_window;   /* window in tokens, 0 = none */
    /* linear attention / state-space layers: bytes of recurrent state per sequence and layer */
    uint64_t recurrent_state_bytes;
    /* per-layer, NULL when uniform */
    uint32_t *layer_n_heads;
    uint32_t *layer_n_kv_heads;
    uint32_t *layer_head_dim;  /* e.g. Gemma-4 global layers with a larger head */
    uint8_t *layer_is_swa;     /* 1 for sliding-window layers */
    uint8_t *layer_no_kv;      /* 1 for layers with no KV cache of their own (shared KV, SSM) */
    uint64_t *layer_ff;
    /* precision and quantization as the source states them */
    vf_dtype torch_dtype;      /* VF_DTYPE_UNKNOWN if not stated */
    char quant_method[32];     /* quantization_config.quant_method, or GGUF file type name */
    uint32_t quant_bits;
    uint32_t quant_group_size;
    bool attention_bias;
    bool mlp_bias;
    /* per layer, NULL when none: 1 for layers holding recurrent state instead of a
     * KV cache (state-space mixers, linear attention, short convolutions); when
     * NULL, every layer without a KV cache is recurrent if recurrent_state_bytes > 0 */
    uint8_t *layer_recurrent;
    /* elements of one recurrent layer's state per sequence (conv + SSM), whatever
     * their dtype: llama.cpp keeps them in f32 (its r and s caches) */
    uint64_t recurrent_state_elems;
    /* FP8 block quantization (quantization_config.weight_block_size [n, k]); 0 = per-tensor or none */
    uint32_t quant_block_n, quant_block_k;
} vf_hparams;

typedef struct vf_model vf_model;

typedef struct vf_file_info {
    const char *path;
    uint64_t size;        /* bytes on disk */
    uint64_t data_offset; /* start of the tensor data section */
    uint64_t data_bytes;  /* bytes of the data section (tensors + padding) */
    uint32_t alignment;   /* GGUF general.alignment; 1 for safetensors */
} vf_file_info;

/**
 * Opens a model from any source: a .safetensors file, a sharded checkpoint's
 * model.safetensors.index.json, a .gguf (a split GGUF by its first shard), a
 * config.json, a directory holding any of these, or a catalog name
 * ("Qwen/Qwen3-8B", "qwen3-8b", case-insensitive). Only headers are read.
 */
VF_API vf_status vf_model_open(const char *source, vf_model **out, vf_error *err);
/** Frees a model from vf_model_open; NULL is a no-op. */
VF_API void vf_model_free(vf_model *m);

/**
 * How a Hugging Face Hub id is opened (vf_model_open_with). Zero-initialise
 * it (all zeros: the defaults); pinned as the ABI rule above says.
 *
 * A source "hf://org/name[@rev][:QUANT]" is always the Hub (or a cache of
 * it); a plain "org/name" is looked up in the local Hugging Face cache
 * (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub), then the catalog,
 * then the Hub (HF_ENDPOINT, HF_TOKEN or the token file in HF_HOME). Over
 * HTTP only headers are read (range requests); what was fetched is kept in
 * $XDG_CACHE_HOME/vramfit (else ~/.cache/vramfit). Not thread-safe on first
 * use (libcurl's global initialisation). See docs/hub.md.
 */
/** Progress of a repository's headers: done of total requests answered. */
typedef void (*vf_open_progress_fn)(void *ctx, size_t done, size_t total);
typedef struct vf_open_opts { VF_GROWABLE_BEGIN
    bool offline;        /* never touch the network (as HF_HUB_OFFLINE=1) */
    bool refresh;        /* fetch again whatever vramfit's cache holds */
    const char *file;    /* a repository's file by name (--file) */
    long hub_timeout_s;  /* per HTTP request, total; 0: 60 s */
    vf_open_progress_fn progress; /* called as many headers arrive (may be NULL) */
    void *progress_ctx;
VF_GROWABLE_END(128) } vf_open_opts;
VF_SIZE_PINNED(vf_open_opts, 128);

/** vf_model_open with options (opts may be NULL: the defaults). */
VF_API vf_status vf_model_open_with(const char *source, const vf_open_opts *opts, vf_model **out, vf_error *err);
/** true when source is well formed as a Hub id: "hf://org/name[@rev][:QUANT]"
 * or "org/name[@rev][:QUANT]" by huggingface_hub's naming rules (no path
 * can pass: no "..", no leading '/', one '/' in the name). Says nothing of
 * whether the repository exists; vf_model_open_with still tries a path of
 * that name first. */
VF_API bool vf_hub_id_valid(const char *source);
/** Which source answered, in words: "local files", "the embedded catalog",
 * "the local Hugging Face cache (DIR)", "the Hub (URL), commit ...",
 * "vramfit's cache of the Hub, commit ...". */
VF_API const char *vf_model_origin(const vf_model *m);

/*
 * Accessors. Pointers and strings they return belong to the model and live
 * until vf_model_free; an index out of range gives NULL.
 */
/** The format the model was read from. */
VF_API vf_format vf_model_format(const vf_model *m);
/** "safetensors" | "gguf" | "config". */
VF_API const char *vf_format_name(vf_format f);
/** The source string the model was opened with. */
VF_API const char *vf_model_source(const vf_model *m);
/** Hyperparameters from the file's metadata or config.json. */
VF_API const vf_hparams *vf_model_hparams(const vf_model *m);
/** Number of tensors; tensor i in [0, count). */
VF_API size_t vf_model_tensor_count(const vf_model *m);
VF_API const vf_tensor *vf_model_tensor(const vf_model *m, size_t i);
/** Number of files (shards); file i in [0, count). */
VF_API size_t vf_model_file_count(const vf_model *m);
VF_API const vf_file_info *vf_model_file(const vf_model *m, size_t i);
/** Warnings collected while reading (index total_size mismatch, ...); warning i in [0, count). */
VF_API size_t vf_model_warning_count(const vf_model *m);
VF_API const char *vf_model_warning(const vf_model *m, size_t i);

typedef struct vf_model_totals { VF_GROWABLE_BEGIN
    uint64_t params;          /* parameters (excludes VF_TENSOR_NOT_PARAM buffers) */
    uint64_t elements;        /* every stored element, buffers included */
    uint64_t bytes;           /* bytes of every tensor */
    uint64_t active_params;   /* per token: routed experts scaled by active/total */
    uint64_t mtp_params;      /* in multi-token-prediction layers (included in params) */
    uint64_t buffer_elements; /* in non-parameter buffers */
VF_GROWABLE_END(2048) } vf_model_totals;
VF_SIZE_PINNED(vf_model_totals, 2048);

/** Sums over the model's tensors into t (a pass over the tensor table each call). */
VF_API void vf_model_totals_get(const vf_model *m, vf_model_totals *t);
/** Parameters and bytes stored as dt (VF_DTYPE_UNKNOWN: of types this build
 * does not know); a pass over the tensor table each call. Either out may be NULL. */
VF_API void vf_model_dtype_totals(const vf_model *m, vf_dtype dt, uint64_t *params, uint64_t *bytes);
/** Parameters llama.cpp never puts on a GPU: token and position embeddings
 * (its input layer is the CPU), multi-token-prediction layers (not loaded)
 * and a vision tower's (its projector file's, not the model's). */
VF_API uint64_t vf_model_host_side_params(const vf_model *m);

/**
 * Every stored tensor element, counted as the Hugging Face Hub counts a
 * checkpoint's safetensors (its "safetensors.total"): scales and buffers
 * included, packed integer words as stored, and MXFP4 "_blocks" bytes as the
 * two 4-bit values each holds. For a config.json, the checkpoint layout its
 * quantization_config implies.
 */
VF_API uint64_t vf_model_stored_elements(const vf_model *m);

/**
 * NULL when the tensor list is exact (from the files, or a config.json of a
 * known family); else one line saying why it is a guess (a config.json of an
 * unknown model_type). fit and plan refuse such a model unless asked.
 */
VF_API const char *vf_model_approximate(const vf_model *m);

/**
 * NULL, or the llama-quantize file type ("q4_k_m") a GGUF repository's name
 * stands for when it was answered offline by its base model
 * ("bartowski/Qwen3-8B-GGUF:Q4_K_M" is the catalog's Qwen/Qwen3-8B): an
 * inference estimate without weights prices them at that type, as
 * llama-quantize's per-tensor rules make the file.
 */
VF_API const char *vf_model_priced_as(const vf_model *m);

/* ------------------------------------------------------------------------ */
/* Networks by their graph (ONNX: vf_model_format() == VF_FORMAT_ONNX)       */
/* ------------------------------------------------------------------------ */
/*
 * An ONNX model's initializers are its tensors (exact bytes; their data is
 * never read); these accessors describe the graph around them. Strings
 * belong to the model.
 */
typedef struct vf_graph_info { VF_GROWABLE_BEGIN
    int64_t ir_version;
    int64_t opset;             /* the default (ai.onnx) domain's */
    const char *producer;      /* "pytorch 1.13.0", "" when not stated */
    size_t nodes, values, inputs, outputs, initializers, op_types;
    uint64_t inline_bytes;     /* initializer bytes inside the .onnx file */
    uint64_t external_bytes;   /* initializer bytes in external data files (referenced, not read) */
    size_t aliases;            /* Identity nodes copying an initializer (exporters' deduplication) */
    uint64_t alias_elements, alias_bytes;
    uint64_t bytes_read;       /* what the reader read of the .onnx file */
VF_GROWABLE_END(256) } vf_graph_info;
VF_SIZE_PINNED(vf_graph_info, 256);

typedef struct vf_graph_io { VF_GROWABLE_BEGIN
    const char *name;
    vf_dtype dtype;                      /* VF_DTYPE_UNKNOWN when not stated */
    int32_t rank;                        /* -1: not stated */
    int64_t dims[VF_MAX_DIMS];           /* -1: symbolic or unknown */
    const char *dim_params[VF_MAX_DIMS]; /* the symbol ("batch") or NULL */
VF_GROWABLE_END(256) } vf_graph_io;
VF_SIZE_PINNED(vf_graph_io, 256);

/** Fills out and returns true for a model read from a graph; false otherwise. */
VF_API bool vf_model_graph_info(const vf_model *m, vf_graph_info *out);
/** Graph input (output = false) or output i as declared; false out of range. */
VF_API bool vf_model_graph_io(const vf_model *m, bool output, size_t i, vf_graph_io *out);
/** Operator type i of the graph's histogram, most frequent first, and its node count; NULL out of range. */
VF_API const char *vf_model_graph_op(const vf_model *m, size_t i, size_t *nodes);

/* ------------------------------------------------------------------------ */
/* Catalog of models (embedded config.json files)                            */
/* ------------------------------------------------------------------------ */
/*
 * The catalog is a set of real Hugging Face config.json files embedded at
 * build time (data/models/<org>__<name>.json ↔ "<org>/<name>"). A catalog
 * name is the Hugging Face id ("Qwen/Qwen3-8B") or its alias, the part after
 * the slash ("qwen3-8b"), matched case-insensitively. Entries are sorted by
 * id, case-insensitively.
 */
typedef struct vf_catalog_info { VF_GROWABLE_BEGIN
    const char *id;          /* "Qwen/Qwen3-8B" */
    const char *alias;       /* "qwen3-8b" (lower case) */
    const char *family;      /* the config's model_type ("qwen3"), "" if absent */
    uint64_t context_length; /* max_position_embeddings (or n_positions, or the
                                text_config's); 0 when the config states none */
    const char *provenance;  /* data/models/catalog.tsv's: "published" (byte for byte the
                                Hub's file), "variant" (answered by its base's file),
                                "assembled" (written from code or docs), "unverified", ... */
    /* Counted at build time by opening the entry's config (tools/catalog_counts.c),
     * as vf_catalog_open and vf_model_totals_get give them; false/0 when it does not open. */
    bool counted;
    uint64_t params;         /* vf_model_totals.params */
    uint64_t active_params;  /* per token (params unless mixture-of-experts) */
    uint64_t bytes;          /* every tensor as stored (the config's dtype or quantization) */
    uint64_t model_context;  /* vf_hparams.context_length: context_length, or the family's
                                default where the config states none (gemma-3-4b-it) */
    const char *task;        /* "chat" (generates text), "vision" (and reads images: a
                                vision_config) or "embed" (encoders, embedding models, rerankers) */
    uint64_t host_side_params; /* of params, those llama.cpp never puts on a GPU: token and position
                                  embeddings, multi-token-prediction layers, a vision tower */
VF_GROWABLE_END(128) } vf_catalog_info;
VF_SIZE_PINNED(vf_catalog_info, 128);

/** Number of catalog models. */
VF_API size_t vf_catalog_count(void);
/** Entry i in [0, count); VF_EINVAL when out of range. Strings are static. */
VF_API vf_status vf_catalog_entry(size_t i, vf_catalog_info *out);
/** Index of the entry a name or alias denotes, or (size_t)-1. */
VF_API size_t vf_catalog_find(const char *name);
/** The embedded config.json text of entry i (NUL-terminated), NULL when out of range. */
VF_API const char *vf_catalog_config(size_t i, size_t *len);
/** Opens entry i's embedded config.json as vf_model_open opens a catalog name
 * (never the local Hugging Face cache); VF_EINVAL out of range. */
VF_API vf_status vf_catalog_open(size_t i, vf_model **out, vf_error *err);
/**
 * Near misses for a name that is not in the catalog ("llama3-8b",
 * "qwen-3-8b", "mistral7b"): up to n entry ids, best first, written to out
 * (static strings). Ranking ignores case and punctuation, prefers names that
 * contain the query, then edit distance. Returns how many were written; 0
 * when nothing is close.
 */
VF_API size_t vf_catalog_suggest(const char *name, const char **out, size_t n);

/* ------------------------------------------------------------------------ */
/* The memory model: estimate (inference and training)                       */
/* ------------------------------------------------------------------------ */

typedef enum vf_mode { VF_MODE_INFERENCE = 0, VF_MODE_TRAINING = 1 } vf_mode;

/* The engine whose allocations the estimate reproduces. */
typedef enum vf_runtime {
    VF_RUNTIME_GENERIC = 0,      /* the plain sum, stated assumptions */
    VF_RUNTIME_TRANSFORMERS = 1, /* PyTorch eager/SDPA + Hugging Face generate / Trainer */
    VF_RUNTIME_VLLM = 2,         /* vLLM V1 engine */
    VF_RUNTIME_LLAMACPP = 3,     /* llama.cpp / ggml */
    VF_RUNTIME_LITGPT = 4        /* LitGPT generate on Lightning Fabric (+ bitsandbytes) */
} vf_runtime;

typedef enum vf_attn { VF_ATTN_DEFAULT = 0, VF_ATTN_EAGER = 1, VF_ATTN_SDPA = 2, VF_ATTN_FLASH = 3 } vf_attn;

#define VF_MAX_SPLIT 16

/* Inference knobs. 0 / NULL / -1 where noted mean "the runtime's default". */
typedef struct vf_infer_opts { VF_GROWABLE_BEGIN
    uint64_t context;       /* tokens per sequence (prompt + generated); 0 = model's context length */
    uint64_t batch;         /* concurrent sequences; 0 = 1 */
    uint64_t prompt_tokens; /* tokens processed in one forward step; 0 = context (transformers prefill) */
    vf_attn attn;
    char kv_dtype[32];      /* "" = model dtype; "f16", "bf16", "fp8", "q8_0", "q4_0"; llama.cpp "K,V" */
    /* vLLM */
    double gpu_util;                 /* --gpu-memory-utilization; 0 = 0.9 */
    uint64_t max_model_len;          /* 0 = model's context length */
    uint64_t max_num_seqs;           /* 0 = vLLM's default for the GPU */
    uint64_t max_num_batched_tokens; /* 0 = vLLM's default */
    char vllm_version[16];           /* "" = current (V1) accounting */
    bool enforce_eager;              /* no CUDA graphs */
    /* llama.cpp */
    uint64_t ubatch;         /* -ub; 0 = 512 */
    uint64_t lc_batch;       /* -b; 0 = 2048 */
    uint32_t parallel;       /* -np; 0 = 1 */
    int flash_attn;          /* -fa: -1 auto, 0 off, 1 on */
    bool swa_full;           /* --swa-full */
    int32_t n_gpu_layers;    /* -ngl; -1 = all */
    uint32_t n_split;
    double tensor_split[VF_MAX_SPLIT];
    char keep_dtype[16];     /* dtype a quantizing load keeps the other tensors in ("" = as stored; transformers
                                without torch_dtype loads them as "f32") */
    char gpu_name[64];       /* the GPU's name when known: vLLM picks its defaults by GPU class */
    bool kv_unified;         /* llama.cpp --kv-unified: one KV stream shared by all sequences */
    bool logits_all;         /* transformers: logits for every prompt position (a plain forward, or
                                generate before logits_to_keep), not one per sequence */
    uint64_t gpu_class_bytes; /* the memory of the device whose class sets size-dependent defaults (vLLM's
                                 max_num_batched_tokens/max_num_seqs, the cuBLAS workspace of an unnamed
                                 device); 0 = gpu_bytes. fit holds it at the device asked while it searches
                                 the smallest memory that fits */
VF_GROWABLE_END(1024) } vf_infer_opts;
VF_SIZE_PINNED(vf_infer_opts, 1024);

/* Training knobs (estimate --train). */
typedef enum vf_optimizer {
    VF_OPT_ADAMW = 0, VF_OPT_ADAM = 1, VF_OPT_ADAMW_8BIT = 2, VF_OPT_PAGED_ADAMW_8BIT = 3, VF_OPT_SGD = 4,
    VF_OPT_SGD_MOMENTUM = 5, VF_OPT_ADAFACTOR = 6, VF_OPT_LION = 7, VF_OPT_ADAGRAD = 8,
    VF_OPT_PAGED_ADAMW = 9 /* bitsandbytes PagedAdamW (32-bit states in managed memory) */
} vf_optimizer;
typedef enum vf_precision {
    VF_PREC_FP32 = 0,
    VF_PREC_FP16_MIXED = 1,
    VF_PREC_BF16_MIXED = 2,
    VF_PREC_BF16 = 3
} vf_precision;
typedef enum vf_recompute { VF_RECOMPUTE_NONE = 0, VF_RECOMPUTE_SELECTIVE = 1, VF_RECOMPUTE_FULL = 2 } vf_recompute;
typedef enum vf_offload {
    VF_OFFLOAD_NONE = 0,
    VF_OFFLOAD_OPTIMIZER = 1,
    VF_OFFLOAD_PARAMS = 2,
    VF_OFFLOAD_BOTH = 3
} vf_offload;
/* How the optimizer step runs, which decides its temporaries: PyTorch's default on CUDA
 * (foreach: whole-model temporaries), the per-tensor loop (foreach=False), fused kernels, or
 * PyTorch < 2.0's foreach (its eps add was not in place: twice the temporaries). */
typedef enum vf_optim_impl {
    VF_OPTIM_FOREACH = 0,
    VF_OPTIM_FOR_LOOP = 1,
    VF_OPTIM_FUSED = 2,
    VF_OPTIM_FOREACH_LEGACY = 3
} vf_optim_impl;

/* How the loss meets the logits: the whole logits upcast to fp32 (HF's
 * ForCausalLMLoss), torchtune's CEWithChunkedOutputLoss (the head and the
 * fp32 upcast per chunk of tokens), or a fused linear cross-entropy (Liger,
 * Unsloth: the logits never exist whole). */
typedef enum vf_loss {
    VF_LOSS_FULL = 0,
    VF_LOSS_CHUNKED = 1,
    VF_LOSS_FUSED = 2
} vf_loss;

typedef struct vf_train_opts { VF_GROWABLE_BEGIN
    vf_optimizer optimizer;
    vf_precision precision;
    vf_recompute recompute;
    uint64_t micro_batch;    /* per GPU; 0 = 1 */
    uint64_t seq_len;        /* 0 = 2048 or the model's context, whichever is less */
    uint32_t grad_accum;     /* 0 = 1 */
    uint32_t lora_rank;      /* 0 = full fine-tuning */
    char lora_targets[128];  /* "q,k,v,o,gate,up,down" or "all-linear"; "" = q,v */
    float lora_dropout;      /* PEFT lora_dropout; 0 = none (PEFT's default) */
    char qlora[16];          /* "", "nf4", "nf4-dq" */
    int zero;                /* 0..3 */
    int fsdp;                /* 0 none; 1 full (= ZeRO-3), 2 grad-op (= ZeRO-2), 3 no-shard */
    vf_offload offload;
    bool offload_nvme;
    bool states_only;        /* model states only, as DeepSpeed's estimators report */
    uint32_t gpus_per_node;  /* 0 = min(gpus, 8); host memory is reported per node */
    vf_optim_impl optim_impl;
    char bnb_version[16];    /* bitsandbytes under --qlora; "" = current (>= 0.43.2) */
    char torch_version[16];  /* the PyTorch release that trains ("1.10"); "" = current (< 1.11: softmax and
                                log_softmax keep their input for backward too) */
    vf_loss loss;            /* VF_LOSS_FULL (default) */
    uint32_t loss_chunks;    /* VF_LOSS_CHUNKED: chunks of the output; 0 = 8 (torchtune's num_output_chunks) */
    bool optim_in_bwd;       /* the optimizer step in backward (torchtune optimizer_in_bwd: one optimizer per
                                parameter, stepped by its post-accumulate-grad hook, its gradient freed there) */
    bool act_offload;        /* activation offloading (torchtune training.OffloadActivations: saved tensors to
                                pinned host memory, a bounded number on the device) */
    bool kbit_prepare;       /* PEFT prepare_model_for_kbit_training under --qlora: the 16-bit parameters it does
                                not quantize cast to fp32 (embeddings, norms, head), so the residual stream is fp32 */
    bool adapter_base_dtype; /* LoRA adapters at the base's dtype (PEFT autocast_adapter_dtype=False, or before
                                0.12); false = fp32 adapters on a 16-bit base, as get_peft_model makes them */
    bool load_fp32;          /* LoRA: the base loaded in fp32 (from_pretrained without torch_dtype, transformers'
                                default dtype) and trained under autocast; false = loaded in the 16-bit dtype */
    bool ckpt_offload;       /* under VF_RECOMPUTE_FULL: each block's checkpointed input in host memory, one on
                                the device at a time (Unsloth use_gradient_checkpointing="unsloth":
                                unsloth_zoo Unsloth_Offloaded_Gradient_Checkpointer) */
    bool kbit_no_ckpt;       /* with kbit_prepare: use_gradient_checkpointing=False; otherwise kbit_prepare with
                                VF_RECOMPUTE_NONE trains with full recomputation, as PEFT's default turns it on */
    uint32_t eval_batch;     /* > 0: an evaluation step after the training steps (transformers Trainer.evaluate,
                                prediction_step under torch.no_grad()) at this many sequences per GPU
                                (per_device_eval_batch_size); the verdict takes the larger of step and eval */
VF_GROWABLE_END(512) } vf_train_opts;
VF_SIZE_PINNED(vf_train_opts, 512);

/* The routed experts' pattern llama.cpp's --cpu-moe places on the CPU
 * (common/common.h LLM_FFN_EXPS_REGEX, its empty alternative as POSIX spells
 * it); --n-cpu-moe N gives "blk\\.I" followed by it for each block I < N.
 * vf_estimate_opts.tensor_overrides holds these flags in this form. */
#define VF_LLAMACPP_EXPERTS_PATTERN "\\.ffn_(up|down|gate|gate_up)_(ch)?exps"

typedef struct vf_estimate_opts { VF_GROWABLE_BEGIN
    vf_mode mode;
    vf_runtime runtime;
    char weights[32];        /* re-price weights: a dtype or load scheme (vf_quant_scheme_parse); "" = as stored */
    uint32_t tp, pp, ep;     /* tensor / pipeline / expert parallel sizes; 0 = 1 */
    uint32_t gpus;           /* total GPUs (data parallel = gpus / (tp*pp)); 0 = tp*pp */
    uint64_t gpu_bytes;      /* device memory when the runtime needs it (vLLM); 0 = unknown */
    vf_infer_opts infer;
    vf_train_opts train;
    /* PyTorch's process (transformers, litgpt, training; vLLM's context) */
    char alloc_conf[160];    /* PYTORCH_CUDA_ALLOC_CONF ("expandable_segments:True,..."); "" = defaults */
    uint64_t cuda_context;   /* a measured CUDA context in bytes; 0 = modelled (device, CUDA version) */
    char cuda_version[16];   /* CUDA runtime the engine was built with ("12.4"); "" = 12.x (lazy loading) */
    bool grads_kept;         /* training: zero_grad(set_to_none=False), PyTorch < 2.0's default: gradients
                                stay allocated between steps */
    /* serving extras (inference; docs/memory-model.md "Serving extras") */
    const char *draft;       /* speculative decoding: the draft model (any MODEL source, the caller's string)
                                on the same devices; NULL = none (llama.cpp -md, vLLM's draft-model method) */
    uint32_t draft_tokens;   /* tokens proposed per step (vLLM num_speculative_tokens, llama.cpp --spec-draft-n-max);
                                with no draft, a model's own MTP layers draft them; 0 = no speculation */
    const char *mmproj;      /* llama.cpp --mmproj: the multimodal projector GGUF (caller's string); NULL = none */
    uint32_t max_images;     /* images per request (vLLM --limit-mm-per-prompt, its profile's dummy images) */
    uint32_t image_w, image_h; /* image size in pixels; 0 = the largest the family's processor makes */
    uint32_t max_loras;      /* vLLM --enable-lora: adapter slots (--max-loras); 0 = LoRA off */
    uint32_t max_lora_rank;  /* --max-lora-rank; 0 = 16 (vLLM's default) */
    /* graphs (ONNX): "NAME=DIMS[;NAME=DIMS]" binding inputs' symbolic dims
     * (DIMS as 1x3x224x224); NULL = the batch binds axis 0 only */
    const char *graph_inputs;
    /* the margin fit keeps free on each GPU (vf_estimate.margin_bytes):
     * margin_set false = the runtime's own; true = margin bytes (0 allowed) */
    uint64_t margin;
    bool margin_set;
    /* the draft and the projector already open (the caller keeps them open
     * for the call); NULL = opened from draft / mmproj for each run */
    const vf_model *draft_model;
    const vf_model *mmproj_model;
    /* llama.cpp tensor buffer overrides (-ot PATTERN=BUFT, --cpu-moe, --n-cpu-moe as
     * their patterns), one PATTERN=BUFT a line in command-line order, the first match
     * winning (caller's string); NULL = none */
    const char *tensor_overrides;
    /* graphs, training: parameters that do not train (requires_grad=False: no
     * gradient, no optimizer state, nothing kept to differentiate them), as
     * POSIX extended regular expressions, one a line, matched against the
     * initializers' names (an Identity copy's by its own); NULL = all train */
    const char *graph_freeze;
    /* graphs, training: a Mul then an Add by per-channel [1,C,1,1] constants
     * right after a Conv is torchvision's FrozenBatchNorm2d (its weight, bias
     * and statistics are buffers); false = such constants train (a graph
     * cannot tell them from a trained affine layer) */
    bool graph_frozen_bn;
    /* llama.cpp --n-cpu-moe N placed after tensor_overrides (fit's advice and
     * plans add it so): the routed experts of blocks 0..N-1 in host memory;
     * -1 every block's (--cpu-moe); 0 none */
    int32_t n_cpu_moe;
    /* the llama.cpp build priced (its bNNNN release number): the cache layout
     * of that build (docs/memory-model.md); 0 = current */
    uint32_t llamacpp_build;
VF_GROWABLE_END(2048) } vf_estimate_opts;
VF_SIZE_PINNED(vf_estimate_opts, 2048);

/** "generic", "transformers", "vllm", "llamacpp"; as --runtime spells them. */
VF_API const char *vf_runtime_name(vf_runtime r);
/** The runtime a name denotes (vf_runtime_name's, or another spelling: "hf",
 * "pytorch", "llama.cpp"; any case); VF_EINVAL for none. */
VF_API vf_status vf_runtime_parse(const char *name, vf_runtime *out);
/** Runtimes there are: values 0 .. count-1. */
VF_API size_t vf_runtime_count(void);

/** Fills o with every default (inference, generic runtime). */
VF_API void vf_estimate_opts_init(vf_estimate_opts *o);

#define VF_NOTE_LEN 256 /* a note's bytes, its NUL included */

/*
 * An estimate: made with vf_estimate_new, filled by vf_estimate_run (again and
 * again if wanted), read with the accessors below, freed with
 * vf_estimate_free. Sizes are bytes per GPU unless a name says otherwise
 * (docs/memory-model.md gives each component's formula).
 * X(type, name, what it is): vf_estimate_<name>(e) returns it.
 */
#define VF_ESTIMATE_FIELDS(X)                                                                           \
    X(vf_mode, mode, "inference or training")                                                           \
    X(vf_runtime, runtime, "the engine modelled")                                                       \
    X(uint32_t, gpus, "devices the estimate spans")                                                     \
    X(uint64_t, per_gpu_bytes, "what must fit on each device: the peak")                                \
    X(uint64_t, total_bytes, "summed over all devices")                                                 \
    X(uint64_t, weights, "component: weights")                                                          \
    X(uint64_t, kv_cache, "component: KV cache and recurrent state")                                    \
    X(uint64_t, activations, "component: activations and workspaces")                                   \
    X(uint64_t, gradients, "component: gradients")                                                      \
    X(uint64_t, optimizer, "component: optimizer states")                                               \
    X(uint64_t, overhead, "component: the runtime's fixed costs")                                       \
    X(uint64_t, host_bytes, "host memory per node (offload, llama.cpp layers on the CPU)")              \
    X(uint64_t, context, "the context (tokens) resolved")                                               \
    X(uint64_t, batch, "the batch (sequences) resolved")                                                \
    X(uint64_t, kv_bytes_per_token, "KV bytes per token, whole model, one sequence")                    \
    X(double, weight_bits, "bits per weight after re-pricing")                                          \
    X(uint64_t, trainable_params, "parameters that train")                                              \
    X(bool, starts, "false: the engine would refuse to start (vf_estimate_reason)")                     \
    X(const char *, reason, "why it would not start, or \"\"")                                          \
    X(uint64_t, kv_cache_tokens, "vLLM: tokens its KV pool holds")                                      \
    X(double, max_concurrency, "vLLM: requests of the full context at once")                            \
    X(uint64_t, rb_model, "llama.cpp: model buffers (summed over devices)")                             \
    X(uint64_t, rb_context, "llama.cpp: context (KV) buffers")                                          \
    X(uint64_t, rb_compute, "llama.cpp: compute buffers")                                               \
    X(uint64_t, rb_output, "llama.cpp: output buffer")                                                  \
    X(uint64_t, rb_host_model, "llama.cpp: model buffers in host memory (CPU, CPU_Mapped)")               \
    X(uint64_t, rb_host_context, "llama.cpp: KV buffers in host memory (layers left on the CPU)")         \
    X(uint64_t, rb_host_compute, "llama.cpp: the CPU backend's compute buffer (CUDA_Host beside GPUs)")   \
    X(uint32_t, rb_devices, "llama.cpp: GPUs with buffers (vf_estimate_device_buffer)")                  \
    X(const char *, peak_phase, "training: the moment of the peak")                                     \
    X(uint64_t, device_bytes, "what the device holds at the peak, as nvidia-smi shows the process")     \
    X(uint64_t, allocated_bytes, "the allocator's allocated peak (max_memory_allocated)")               \
    X(uint64_t, reserved_bytes, "its reserved peak (max_memory_reserved)")                              \
    X(uint64_t, context_bytes, "the CUDA context with the kernels and libraries it loads")              \
    X(uint64_t, outside_bytes, "other memory outside the allocator (non-torch, CUDA graphs)")           \
    X(uint32_t, pp_stages, "vLLM pipeline stages (0 or 1: none); figures are the busiest rank's")       \
    X(uint32_t, busiest_stage, "0-based: 0 holds the embeddings, the last the norm and head")           \
    X(uint32_t, stage_first_layer, "the busiest stage's first block")                                   \
    X(uint32_t, stage_end_layer, "one past its last block")                                             \
    X(uint32_t, partial_nodes, "graphs: nodes whose output shapes could not be inferred")               \
    X(uint64_t, cuda_graph_bytes, "vLLM: the CUDA graphs' memory (part of outside_bytes)")              \
    X(uint64_t, margin_bytes, "what a fit verdict keeps free beyond device_bytes")                      \
    X(uint64_t, phase_load_bytes, "vLLM: the device after loading the weights (context included)")        \
    X(uint64_t, phase_profile_bytes, "vLLM: at the profile run's peak, before the KV pool exists")        \
    X(uint64_t, phase_idle_bytes, "vLLM: serving, idle: the pool allocated, the profile's activations freed") \
    X(uint64_t, eval_bytes, "training --eval-batch: the evaluation step's peak allocated plus the context")

typedef struct vf_estimate vf_estimate;

/** A new, empty estimate; NULL when out of memory. */
VF_API vf_estimate *vf_estimate_new(void);
/** Frees it; NULL is a no-op. */
VF_API void vf_estimate_free(vf_estimate *e);
#define VF_X_(type, name, what) VF_API type vf_estimate_##name(const vf_estimate *e);
VF_ESTIMATE_FIELDS(VF_X_)
#undef VF_X_
/* llama.cpp: one GPU's buffers, as llama.cpp prints them per device. */
typedef enum vf_devbuf {
    VF_DEVBUF_MODEL = 0,   /* the model buffer (CUDA0 model buffer size) */
    VF_DEVBUF_CONTEXT = 1, /* KV cache and recurrent state */
    VF_DEVBUF_COMPUTE = 2, /* the compute buffer, the op-offload copies included */
    VF_DEVBUF_OFFLOAD = 3, /* of which: host weights copied in to run on this GPU */
    VF_DEVBUF_BACKEND = 4, /* beside the buffers: CUDA context, cuBLAS workspace, pool */
    VF_DEVBUF_COUNT = 5
} vf_devbuf;
/** llama.cpp: GPU i's buffer (i < vf_estimate_rb_devices); 0 past the end. */
VF_API uint64_t vf_estimate_device_buffer(const vf_estimate *e, uint32_t i, vf_devbuf which);
/** Assumptions ("key = value") and formulas with their numbers, in order;
 * item i in [0, count), NULL past the end. */
VF_API size_t vf_estimate_assumption_count(const vf_estimate *e);
VF_API const char *vf_estimate_assumption(const vf_estimate *e, size_t i);
VF_API size_t vf_estimate_explain_count(const vf_estimate *e);
VF_API const char *vf_estimate_explain(const vf_estimate *e, size_t i);

/** Runs the memory model into out (from vf_estimate_new). Fails with VF_EINVAL on inconsistent knobs. */
VF_API vf_status vf_estimate_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);

/**
 * True when spec is a weight format --weights accepts: a dtype, a load
 * scheme (vf_quant_scheme_parse), or a llama.cpp file type ("q4_k_m",
 * "q3_k_l", "q5_k_s", "iq4_xs", ...) priced tensor by tensor as
 * llama-quantize would store it.
 */
VF_API bool vf_weights_format_valid(const char *spec);

/* ------------------------------------------------------------------------ */
/* GPUs: catalog, fit, advice, plans, speed bounds                           */
/* ------------------------------------------------------------------------ */
/*
 * The GPU catalog (data/gpus.json, embedded). memory_bytes is what the device
 * reports to the runtime (cudaMemGetInfo / Metal's working-set limit), not the
 * marketing figure; throughput is dense (no 2:4 sparsity); 0 = not available.
 */
typedef struct vf_gpu { VF_GROWABLE_BEGIN
    const char *name;          /* "H100 SXM 80GB" */
    const char *family;        /* "H100" */
    const char *vendor;        /* "nvidia" | "amd" | "apple" | "" (a bare size) */
    const char *segment;       /* "consumer" | "workstation" | "datacenter" | "embedded" | "apple" */
    uint64_t memory_bytes;     /* as the device reports it */
    const char *memory_nominal;
    const char *memory_basis;  /* "measured: ..." or "rule: ..." */
    double bandwidth_gbs;      /* memory bandwidth, GB/s (1e9) */
    double tflops_fp16, tflops_bf16, tflops_fp8, tops_int8;
    const char *interconnect;
    double interconnect_gbs;
    uint32_t max_per_node;     /* GPUs one tensor-parallel group may span */
    const char *source;
    const char *note;          /* caveats ("no INT8 figure published"), or "" */
    /* Memory shared with the CPU (GB10, Jetson, Strix Halo, Apple): what each
     * engine may take, each with its source, and the OS/CPU share assumed;
     * all "" for a device with memory of its own. */
    const char *unified_vllm;
    const char *unified_llamacpp;
    const char *unified_assumed;
    uint64_t unified_free_bytes; /* the free memory assumed where vLLM reads MemAvailable (0: not such a device) */
VF_GROWABLE_END(512) } vf_gpu;
VF_SIZE_PINNED(vf_gpu, 512);

/** Number of catalog GPUs; rows come in catalog order. */
VF_API size_t vf_gpu_count(void);
/** Catalog row i in [0, count); NULL out of range. */
VF_API const vf_gpu *vf_gpu_get(size_t i);

/* A resolved --gpu argument: "RTX 4090", "rtx-4090", "H100" (family → its
 * common variant, with a note), "H100x8" (8 of them), "24GiB" / "80GB" (a GPU
 * of that memory, no speed figures). */
typedef struct vf_gpu_choice { VF_GROWABLE_BEGIN
    vf_gpu gpu;                /* the catalog row (copied) or a size-only GPU */
    uint32_t count;            /* N of "GxN"; 1 otherwise */
    bool from_catalog;
    char name[96];             /* display name ("H100 SXM 80GB", "24.00 GiB") */
    char note[VF_NOTE_LEN];    /* "H100 taken as H100 SXM 80GB (...)", or "" */
    bool count_given;          /* the spec named a count ("GxN", "G*N", "NxG"), even 1 */
VF_GROWABLE_END(2048) } vf_gpu_choice;
VF_SIZE_PINNED(vf_gpu_choice, 2048);

/** Resolves a GPU name; VF_EINVAL with the nearest names in err for no match. */
VF_API vf_status vf_gpu_lookup(const char *spec, vf_gpu_choice *out, vf_error *err);


/* What a suggested change needs beyond the engine's launch line. */
#define VF_NEEDS_CHECKPOINT 0x1u /* another checkpoint: AWQ/GPTQ files, another GGUF type (llama-quantize) */
#define VF_NEEDS_CODE 0x2u       /* a change to the training script: LoRA/QLoRA adapters, attention kernels */
#define VF_NEEDS_DEVICE 0x4u     /* a device feature this GPU lacks (fp8 tensor cores) */

/** What VF_NEEDS_* bits mean, in words ("" for 0). */
VF_API const char *vf_needs_words(uint32_t needs);

/* One change that could make it fit, re-checked by an estimate run. */
typedef struct vf_suggestion { VF_GROWABLE_BEGIN
    char change[224];          /* "--weights q4_k", "--kv fp8", "2 GPUs (tensor parallel 2)" */
    char detail[VF_NOTE_LEN];  /* what it costs: quality caveat, speed, money */
    int cost;                  /* rank: lower is cheaper (see docs/memory-model.md, Fit) */
    uint64_t needed_bytes;     /* per GPU with the change applied (vf_estimate_needed_bytes) */
    uint64_t gpu_bytes;        /* per GPU memory it is compared with */
    bool fits;
    vf_estimate_opts opts;     /* the knobs with the change applied */
    uint32_t gpus;             /* GPUs it needs */
    uint32_t needs;            /* VF_NEEDS_*: what it takes beyond the launch; 0 = the engine applies it to this
                                  checkpoint (a flag, a dtype it casts or quantizes to at load, a length, a count) */
VF_GROWABLE_END(3072) } vf_suggestion;
VF_SIZE_PINNED(vf_suggestion, 3072);

/* Upper bounds on speed from memory bandwidth and peak compute (memory ≠ compute). */
typedef struct vf_speed { VF_GROWABLE_BEGIN
    bool known;                     /* false when the GPU has no bandwidth/FLOPS figures */
    double decode_tps_per_seq;      /* ≤ bandwidth ÷ bytes read per token for one sequence */
    double decode_tps_batch;        /* ≤ the same for the whole batch (tokens/s summed) */
    uint64_t batch;                 /* sequences decoded at once for that bound (vLLM: at most its KV pool's) */
    uint64_t bytes_per_token;       /* weights read + KV read per step of one sequence, per GPU */
    double prefill_seconds;         /* one sequence's context: ≥ 2 × active params × tokens ÷ peak FLOP/s */
    double train_step_seconds;      /* ≥ 6 (4 with LoRA) × params × tokens ÷ peak FLOP/s */
    double peak_tflops;             /* the peak used (per GPU) */
    const char *peak_dtype;         /* "bf16", "fp16", "fp8" */
    /* past one GPU group: pipeline stages and the links between nodes */
    uint32_t pp;                    /* pipeline stages */
    uint32_t nodes;                 /* machines the n devices span (the GPU's node size each) */
    double pp_bubble;               /* training: idle share of a step, (pp - 1) / (m + pp - 1), m micro-batches */
    double internode_gbs;           /* GB/s per GPU assumed between nodes (the catalog lists links inside one) */
    double internode_seconds;       /* ≥ bytes that cross nodes ÷ that: training per step (gradient / ZeRO-3
                                       collectives), inference per prefill (stage boundaries) */
VF_GROWABLE_END(256) } vf_speed;
VF_SIZE_PINNED(vf_speed, 256);

typedef struct vf_fit_opts { VF_GROWABLE_BEGIN
    vf_estimate_opts est;      /* the knobs, as for estimate */
    uint64_t gpu_bytes;        /* memory per device */
    uint32_t gpus;             /* devices; 0 = 1 */
    const vf_gpu *gpu;         /* for speed bounds, the bigger-GPU advice and per-node limits; may be NULL */
    bool no_search;            /* skip max context / batch / GPUs and advice */
    uint32_t nodes;            /* machines; 0 = as many as gpus need. With gpus 0: nodes x gpus_per_node devices */
    uint32_t gpus_per_node;    /* devices one machine holds; 0 = the catalog GPU's node (max_per_node), else 8 */
    uint32_t searches;         /* without no_search: the VF_FIT_SEARCH_* to run; 0 = all of them */
VF_GROWABLE_END(4096) } vf_fit_opts;
VF_SIZE_PINNED(vf_fit_opts, 4096);

/* vf_fit_opts.searches: a fit that needs only some answers runs only their searches. */
#define VF_FIT_SEARCH_CONTEXT 0x1u /* max_context */
#define VF_FIT_SEARCH_BATCH 0x2u   /* max_batch */
#define VF_FIT_SEARCH_GPUS 0x4u    /* min_gpus and its layout */
#define VF_FIT_SEARCH_ADVICE 0x8u  /* the suggestions */
#define VF_FIT_SEARCH_IF_FITS 0x10u /* the searches asked for only when the configuration fits */

/*
 * A fit: made with vf_fit_new, filled by vf_fit_run, read with the accessors,
 * freed with vf_fit_free. Everything it hands out (its estimate, speed,
 * suggestions and their knobs' strings) lives as long as the fit; the
 * suggestions' draft_model / mmproj_model are the caller's, as given.
 * X(type, name, what it is): vf_fit_<name>(f) returns it.
 */
#define VF_FIT_FIELDS(X)                                                                                \
    X(bool, fits, "the estimate fits gpu_bytes with its margin")                                        \
    X(uint64_t, gpu_bytes, "memory per device")                                                         \
    X(uint64_t, needed_bytes, "per device: see vf_estimate_needed_bytes")                               \
    X(int64_t, headroom_bytes, "gpu_bytes - needed_bytes (negative: short by)")                         \
    X(uint64_t, max_context, "longest context that fits, 0 if none")                                    \
    X(bool, max_context_capped, "the model's own context limit was reached")                            \
    X(uint64_t, max_batch, "largest batch that fits, 0 if none")                                        \
    X(bool, max_batch_capped, "the search's batch limit was reached")                                   \
    X(uint32_t, min_gpus, "fewest GPUs of this kind that fit, 0 if none up to the cap")                 \
    X(uint32_t, min_tp, "the tensor parallel size that makes min_gpus fit")                             \
    X(uint32_t, min_pp, "its pipeline stages")                                                          \
    X(uint32_t, min_dp, "its data-parallel ranks")                                                      \
    X(int, min_zero, "training: the ZeRO stage min_gpus needs")                                         \
    X(const char *, parallelism, "that layout in words: \"tensor parallel 2\", \"ZeRO-3 over 4 GPUs\"") \
    X(uint32_t, min_nodes, "machines min_gpus spans (gpus_per_node each)")                              \
    X(uint32_t, gpus_per_node, "the node size the search used")                                         \
    X(uint32_t, nodes, "machines the devices asked for span")

typedef struct vf_fit vf_fit;

/** A new, empty fit; NULL when out of memory. */
VF_API vf_fit *vf_fit_new(void);
/** Frees it; NULL is a no-op. */
VF_API void vf_fit_free(vf_fit *f);
#define VF_X_(type, name, what) VF_API type vf_fit_##name(const vf_fit *f);
VF_FIT_FIELDS(VF_X_)
#undef VF_X_
/** The estimate at the given knobs. */
VF_API const vf_estimate *vf_fit_estimate(const vf_fit *f);
/** Upper bounds on speed on the GPU asked for. */
VF_API const vf_speed *vf_fit_speed(const vf_fit *f);
/** Changes that would make it fit, cheapest first; i in [0, count), NULL past the end. */
VF_API size_t vf_fit_suggestion_count(const vf_fit *f);
VF_API const vf_suggestion *vf_fit_suggestion(const vf_fit *f, size_t i);

/**
 * Does the model fit on opts->gpus devices of opts->gpu_bytes each, and if
 * not, what would make it fit, into out (from vf_fit_new). Every figure is an
 * estimate run.
 */
VF_API vf_status vf_fit_run(const vf_model *m, const vf_fit_opts *opts, vf_fit *out, vf_error *err);

/**
 * The memory per device a configuration needs: the estimate's per_gpu_bytes,
 * or, where that depends on the device (vLLM takes a share of whatever it
 * has), the smallest device memory on which it fits; 0 when none up to 16 TiB.
 */
VF_API vf_status vf_estimate_needed_bytes(const vf_model *m, const vf_estimate_opts *o, uint64_t *needed,
                                          vf_error *err);

/**
 * The knobs for n devices of a kind when only their count is given ("--gpu H100x2"),
 * as the engines are launched for one model (docs/design.md §2): without --tp/--pp, vLLM
 * and transformers get tensor parallel n (tensor x pipeline when the heads do not
 * divide by n, or n > 8), llama.cpp an equal layer split over n devices, training n
 * data-parallel ranks. o->gpus is set to n when unset. estimate and fit both use it.
 */
VF_API void vf_estimate_opts_spread(const vf_model *m, vf_estimate_opts *o, uint32_t n);

/* A sweep: the memory model at many values of one knob, for a chart of memory
 * against context length or batch (vramfit sweep, the page's /api/sweep). */
typedef enum vf_sweep_axis { VF_SWEEP_CONTEXT = 0, VF_SWEEP_BATCH = 1 } vf_sweep_axis;

#define VF_SWEEP_MAX 64

typedef struct vf_sweep_point { VF_GROWABLE_BEGIN
    uint64_t value;            /* tokens of context (training: sequence length) or sequences (micro-batch) */
    vf_status status;          /* VF_OK, or why the estimate fails at this value (the rest is then 0) */
    bool starts;               /* the engine would start (vLLM sizes its pool from the device) */
    bool fits;                 /* needed_bytes <= the gpu_bytes given (false without one) */
    uint64_t needed_bytes;     /* per GPU, as vf_estimate_needed_bytes: what a device must have; 0 = none fits */
    uint64_t per_gpu_bytes;    /* the estimate on the given device (without one: on needed_bytes) */
    uint64_t weights, kv_cache, activations, gradients, optimizer, overhead; /* its components */
VF_GROWABLE_END(128) } vf_sweep_point;
VF_SIZE_PINNED(vf_sweep_point, 128);

/**
 * The values a sweep takes by default, ascending, at most cap (<= VF_SWEEP_MAX):
 * context: powers of two from 128 to the model's context length (and that length);
 * batch: 1, 2, 4, ... 512. Returns how many were written.
 */
VF_API size_t vf_sweep_values(const vf_model *m, const vf_estimate_opts *o, vf_sweep_axis axis, uint64_t *values,
                              size_t cap);

/**
 * Runs the memory model of o (the knobs as for vf_estimate_run, devices already
 * spread) at each of the n values (n <= VF_SWEEP_MAX) of the axis, each point as
 * its own estimate, on devices of gpu_bytes each (0 = none given), into out[0..n).
 * A failing point is reported in its status; VF_EINVAL only for bad arguments.
 */
VF_API vf_status vf_sweep_run(const vf_model *m, const vf_estimate_opts *o, vf_sweep_axis axis,
                              const uint64_t *values, size_t n, uint64_t gpu_bytes, vf_sweep_point *out,
                              vf_error *err);

/* One catalog GPU in the answer to "what do I need to run this?". */
typedef struct vf_fit_row { VF_GROWABLE_BEGIN
    const vf_gpu *gpu;         /* the catalog row */
    bool fits;                 /* some count up to the search limit holds it */
    uint32_t gpus, nodes;      /* the fewest devices, and the machines they span */
    uint32_t tp, pp, dp;       /* the layout (dp: training's data-parallel ranks) */
    int zero;                  /* training: the ZeRO stage it needs */
    uint64_t needed_bytes;     /* per device, on the busiest rank of that layout */
    int64_t headroom_bytes;    /* gpu memory - needed_bytes */
    uint64_t total_bytes;      /* gpus x the device's memory: the table's order */
    char parallelism[96];      /* the layout in words */
VF_GROWABLE_END(256) } vf_fit_row;
VF_SIZE_PINNED(vf_fit_row, 256);

/** True when runtime r runs on g (vLLM has no Apple Metal backend). */
VF_API bool vf_runtime_runs_on(vf_runtime r, const vf_gpu *g);

/**
 * For every catalog GPU the runtime runs on, the fewest devices (and nodes)
 * that hold the model as opts->est asks, the layout, and the headroom per
 * device: the answer to "what do I need?" that `fit` without --gpu and the
 * web page show. opts->gpus_per_node (0 = each GPU's catalog node) applies;
 * opts->gpu_bytes and opts->gpu are ignored. Rows that
 * fit come first, by total device memory (smallest first), then the GPUs
 * that hold it at no count up to the search limit. *n_rows = rows written
 * (at most cap; vf_gpu_count() always suffices).
 */
VF_API vf_status vf_fit_catalog(const vf_model *m, const vf_fit_opts *opts, vf_fit_row *rows, size_t cap,
                                size_t *n_rows, vf_error *err);

/** Speed bounds for an estimate on a GPU (n devices working together). */
VF_API void vf_speed_bounds(const vf_model *m, const vf_estimate_opts *o, const vf_estimate *e,
                            const vf_gpu *gpu, uint32_t n, vf_speed *out);

/* Launch configurations for existing engines. */
typedef enum vf_engine {
    VF_ENGINE_VLLM = 0,
    VF_ENGINE_LLAMACPP = 1,
    VF_ENGINE_DEEPSPEED = 2,
    VF_ENGINE_ACCELERATE = 3
} vf_engine;

/** "vllm", "llamacpp" (also "llama.cpp"), "deepspeed", "accelerate". */
VF_API vf_status vf_engine_parse(const char *s, vf_engine *out);

/**
 * Writes a launch configuration for the plan in o (the knobs fit settled on)
 * into buf (NUL-terminated; VF_ERANGE when cap is too small). model_ref is
 * the model name or file the engine is given.
 */
VF_API vf_status vf_plan_emit(vf_engine engine, const vf_model *m, const char *model_ref,
                              const vf_estimate_opts *o, const vf_estimate *e, uint64_t gpu_bytes,
                              uint32_t gpus, char *buf, size_t cap, vf_error *err);

/**
 * vf_plan_emit for gpus spread over nodes of gpus_per_node each (0 = 8):
 * past one node it writes what to start on each machine as well (vLLM: the
 * Ray head and workers, then `vllm serve` with the Ray executor; llama.cpp:
 * rpc-server on the other hosts and llama-server --rpc; DeepSpeed: the
 * config, a hostfile and the deepspeed / torchrun commands; accelerate with
 * training knobs: an accelerate config and accelerate launch), with the
 * TrainingArguments a training script must pass. Lines starting with "#" are
 * comments; the first node is "node1" / HEAD_IP.
 */
VF_API vf_status vf_plan_emit_nodes(vf_engine engine, const vf_model *m, const char *model_ref,
                                    const vf_estimate_opts *o, const vf_estimate *e, uint64_t gpu_bytes,
                                    uint32_t gpus, uint32_t gpus_per_node, char *buf, size_t cap, vf_error *err);

/* ------------------------------------------------------------------------ */
/* Devices on this machine (NVML, loaded with dlopen)                        */
/* ------------------------------------------------------------------------ */

typedef struct vf_local_gpu { VF_GROWABLE_BEGIN
    uint32_t index;
    char name[96];
    char uuid[96];
    uint64_t total_bytes, used_bytes, free_bytes;
VF_GROWABLE_END(512) } vf_local_gpu;
VF_SIZE_PINNED(vf_local_gpu, 512);

/**
 * Lists this machine's NVIDIA devices through NVML (libnvidia-ml.so.1, loaded
 * at run time; VF_NVML_LIBRARY overrides the name). No library or no device
 * is a normal answer: VF_OK with *count = 0 and a reason in err->msg.
 */
VF_API vf_status vf_local_gpus(vf_local_gpu *out, size_t cap, size_t *count, vf_error *err);

/*
 * A session with NVML for repeated queries (vramfit watch samples it every few
 * milliseconds): the library is opened once. The newest versioned NVML call
 * the driver has is used, older ones otherwise (see load/nvml.c).
 */
typedef struct vf_nvml vf_nvml;

/* A process with a CUDA context on a device. */
typedef struct vf_gpu_process { VF_GROWABLE_BEGIN
    uint32_t pid;
    uint64_t used_bytes;       /* UINT64_MAX when NVML cannot say (another user's process, WDDM) */
VF_GROWABLE_END(64) } vf_gpu_process;
VF_SIZE_PINNED(vf_gpu_process, 64);

/**
 * Opens NVML and lists the devices it can reach. No driver, a driver that
 * does not initialise, or no device: VF_EDEVICE with the reason in err.
 */
VF_API vf_status vf_nvml_open(vf_nvml **out, vf_error *err);
VF_API size_t vf_nvml_count(const vf_nvml *n);
/** Device i (0 .. count-1) as vf_local_gpus lists it, memory as at open; NULL past the end. */
VF_API const vf_local_gpu *vf_nvml_device(const vf_nvml *n, size_t i);
/** Device i's memory now: used (the v2 query leaves the driver's reserved memory out) and total. */
VF_API vf_status vf_nvml_memory(vf_nvml *n, size_t i, uint64_t *used, uint64_t *total, vf_error *err);
/** The processes with a compute context on device i now, at most cap of them. */
VF_API vf_status vf_nvml_processes(vf_nvml *n, size_t i, vf_gpu_process *out, size_t cap, size_t *count,
                                   vf_error *err);
/** Closes the session; NULL is a no-op. */
VF_API void vf_nvml_close(vf_nvml *n);


/* ------------------------------------------------------------------------ */
/* Out-of-memory messages (vramfit oom)                                      */
/* ------------------------------------------------------------------------ */
/*
 * A log read once, in pieces of any size, in bounded memory: the first
 * out-of-memory error of PyTorch (0.x-2.x, CUDA and HIP), vLLM (V0 and V1),
 * llama.cpp (ggml's CUDA backend), DeepSpeed and Accelerate is explained with
 * the figures its message states; later ones are counted. Any bytes are
 * accepted; nothing in the text can make the scanner allocate or loop more.
 */
typedef enum vf_oom_figure {
    VF_OOM_REQUESTED,           /* the allocation that failed */
    VF_OOM_TOTAL,               /* the device's memory */
    VF_OOM_FREE,                /* free on the device when it failed */
    VF_OOM_ALLOCATED,           /* allocated by PyTorch's allocator */
    VF_OOM_RESERVED,            /* reserved by the allocator (allocated + cached) */
    VF_OOM_RESERVED_UNALLOCATED,/* reserved but unallocated: the fragmentation */
    VF_OOM_PROCESS,             /* "this process has ... memory in use" */
    VF_OOM_PROCESSES,           /* the sum of "Process N has ... memory in use" */
    VF_OOM_ALLOWED,             /* set_per_process_memory_fraction's limit */
    VF_OOM_PRIVATE_POOLS,       /* allocated in private pools (CUDA graphs) */
    VF_OOM_NEEDED,              /* vLLM: the KV cache or the budget it needs */
    VF_OOM_AVAILABLE,           /* vLLM: what it has for that */
    VF_OOM_MAX_CONTEXT,         /* vLLM: the longest context that fits (tokens) */
    VF_OOM_MAX_SEQ_LEN,         /* vLLM: the length it was asked for (tokens) */
    VF_OOM_N_FIGURES
} vf_oom_figure;

#define VF_OOM_MESSAGE_LEN 512
#define VF_OOM_MAX_ADVICE 8

typedef struct vf_oom_report { VF_GROWABLE_BEGIN
    bool found;
    char engine[16];            /* "pytorch", "vllm", "llamacpp", "deepspeed", "accelerate" */
    char kind[24];              /* "cuda_oom", "hip_oom", "cuda_error", "kv_cache_too_small", ... */
    char phase[24];             /* "loading", "profile_run", "kv_allocation", "compute_buffers",
                                   "forward", "backward", "optimizer_step", "startup"; "" unknown */
    char buffer[24];            /* llama.cpp: the buffer type that failed ("CUDA0", "CPU") */
    int32_t gpu;                /* -1 when the message names none */
    uint64_t figure[VF_OOM_N_FIGURES];
    uint32_t stated;            /* bit i: figure[i] is stated by the message */
    uint32_t derived;           /* bit i: figure[i] follows from stated ones */
    uint32_t processes;         /* how many "Process N has" the message lists */
    double utilization;         /* vLLM: gpu_memory_utilization the message or the log states; 0 none */
    double fragmentation;       /* reserved-but-unallocated share of reserved; < 0 unknown */
    uint64_t line;              /* the first error's line (1-based) */
    uint64_t errors;            /* out-of-memory errors in the log (a repeat close by counts once) */
    uint64_t lines, bytes;      /* what was read */
    char message[VF_OOM_MESSAGE_LEN]; /* the first error's text, printable ASCII */
    size_t n_advice;
    char advice[VF_OOM_MAX_ADVICE][VF_NOTE_LEN];
VF_GROWABLE_END(4096) } vf_oom_report;
VF_SIZE_PINNED(vf_oom_report, 4096);

typedef struct vf_oom_scanner vf_oom_scanner;

/** A scanner, or NULL without memory. */
VF_API vf_oom_scanner *vf_oom_open(void);
/** Reads the next n bytes of the log. */
VF_API void vf_oom_feed(vf_oom_scanner *s, const void *buf, size_t n);
/**
 * Ends the log and fills out. device_bytes, when not 0, is the device's
 * memory from elsewhere (--gpu): advice that needs it (vLLM's utilization)
 * uses it where the log states none.
 */
VF_API void vf_oom_finish(vf_oom_scanner *s, uint64_t device_bytes, vf_oom_report *out);
VF_API void vf_oom_free(vf_oom_scanner *s);
/** "requested", "total", ... : the JSON name's stem of a figure ("requested" → requested_bytes). */
VF_API const char *vf_oom_figure_name(vf_oom_figure f);

/* ------------------------------------------------------------------------ */
/* PyTorch memory snapshots (vramfit snapshot)                               */
/* ------------------------------------------------------------------------ */
/*
 * torch.cuda.memory._dump_snapshot's pickle (or _snapshot() pickled), read by
 * a bounded pickle reader that runs nothing: any global, call or object is
 * refused (VF_EUNSUPPORTED). Both layouts: torch 1.13's list of segments and
 * 2.x's {"segments", "device_traces"}. docs/snapshot.md gives the rules.
 */
typedef struct vf_snapshot vf_snapshot;

/* One device, stream and pool of the caching allocator (library-owned: may grow). */
typedef struct vf_snapshot_pool_stats {
    int64_t device;
    uint64_t stream;
    char pool[48];            /* "large", "small"; "pool A,B large" for a private (CUDA graph) pool */
    uint64_t segments, blocks;
    uint64_t reserved_bytes;  /* the segments' total_size */
    uint64_t allocated_bytes; /* blocks active_allocated */
    uint64_t inactive_bytes;  /* blocks inactive: cached, free for reuse */
    uint64_t pending_free_bytes; /* blocks active_pending_free / active_awaiting_free */
} vf_snapshot_pool_stats;

/* One allocation, or one allocation site (leak suspects); library-owned. */
typedef struct vf_snapshot_allocation {
    uint64_t address;         /* leak suspects: the site's newest live allocation */
    uint64_t size;            /* bytes (leak suspects: of every live allocation of the site) */
    uint64_t requested_size;  /* what the caller asked for (0 when the snapshot does not say) */
    int64_t device;
    uint64_t stream;
    uint64_t count;           /* leak suspects: live allocations of the site; otherwise 1 */
    uint64_t iterations;      /* leak suspects: iterations its live allocations were made in */
    uint64_t entry;           /* trace entry of the allocation (UINT64_MAX: before the trace, or none) */
    size_t n_frames;
    const char *const *frames; /* "file.py:12:fn", innermost first (at most 8) */
} vf_snapshot_allocation;

typedef enum vf_snapshot_list {
    VF_SNAPSHOT_LARGEST = 0,  /* the largest live blocks of the segments */
    VF_SNAPSHOT_AT_PEAK = 1,  /* the largest allocations alive at the trace's peak */
    VF_SNAPSHOT_LEAKS = 2     /* sites whose live allocations grew across iterations */
} vf_snapshot_list;

/* X(type, name, what it is): vf_snapshot_<name>(s) returns it. */
#define VF_SNAPSHOT_FIELDS(X)                                                                          \
    X(const char *, layout, "\"list\" (torch 1.13: the segments) or \"dict\" (2.x: segments, device_traces)") \
    X(uint64_t, segments, "segments (cudaMalloc'd regions)")                                           \
    X(uint64_t, blocks, "blocks in them")                                                              \
    X(uint64_t, reserved_bytes, "the segments' total_size: what the allocator holds")                  \
    X(uint64_t, allocated_bytes, "blocks active_allocated")                                           \
    X(uint64_t, inactive_bytes, "blocks inactive (reserved, unallocated: fragmentation)")             \
    X(uint64_t, pending_free_bytes, "blocks freed but awaiting another stream")                       \
    X(uint64_t, requested_bytes, "the allocated blocks' requested_size (0 where not stated)")          \
    X(uint64_t, trace_entries, "entries of device_traces")                                             \
    X(bool, has_trace, "the peak is the trace's (else the segments' allocated bytes)")                \
    X(uint64_t, peak_bytes, "highest allocated bytes over the trace; allocated_bytes without one")    \
    X(int64_t, peak_device, "the device of the peak")                                                  \
    X(uint64_t, peak_entry, "entries of its trace replayed at the peak (0: before the first)")        \
    X(uint64_t, before_trace_bytes, "alive when its trace began (freed but not allocated in it, or live without an alloc entry)") \
    X(uint64_t, end_bytes, "allocated at the end of the peak device's trace")

/** Reads a snapshot from memory (path names it in errors); data may be freed after. */
VF_API vf_status vf_snapshot_read(const void *data, size_t n, const char *path, vf_snapshot **out, vf_error *err);
/** Reads a snapshot file (at most 2 GiB). */
VF_API vf_status vf_snapshot_open(const char *path, vf_snapshot **out, vf_error *err);
VF_API void vf_snapshot_free(vf_snapshot *s);
#define VF_X_(type, name, what) VF_API type vf_snapshot_##name(const vf_snapshot *s);
VF_SNAPSHOT_FIELDS(VF_X_)
#undef VF_X_
/** Bytes of the blocks in each state, as the file names them ("active_allocated", "inactive", ...). */
VF_API size_t vf_snapshot_state_count(const vf_snapshot *s);
VF_API const char *vf_snapshot_state_name(const vf_snapshot *s, size_t i);
VF_API uint64_t vf_snapshot_state_bytes(const vf_snapshot *s, size_t i);
/** One row per device, stream and pool, in the order first met. */
VF_API size_t vf_snapshot_pool_count(const vf_snapshot *s);
VF_API const vf_snapshot_pool_stats *vf_snapshot_pool(const vf_snapshot *s, size_t i);
/** A list's allocations, largest first (leak suspects: most live bytes first). */
VF_API size_t vf_snapshot_alloc_count(const vf_snapshot *s, vf_snapshot_list which);
VF_API const vf_snapshot_allocation *vf_snapshot_alloc(const vf_snapshot *s, vf_snapshot_list which, size_t i);

/* ------------------------------------------------------------------------ */
/* The loader                                                                */
/* ------------------------------------------------------------------------ */
/*
 * Streams a model's tensors from its files into device memory through a small
 * ring of pinned staging buffers (docs/loader.md): host memory
 * stays at the ring's size whatever the model's size. The loaded copy lives
 * until vf_loader_free.
 */
typedef struct vf_loader vf_loader;

typedef struct vf_load_progress {
    uint64_t done_bytes, total_bytes;
    double seconds;
} vf_load_progress;

/* Called on the thread running vf_loader_run, after each finished chunk. */
typedef void (*vf_load_progress_fn)(const vf_load_progress *p, void *user);

typedef struct vf_load_opts { VF_GROWABLE_BEGIN
    char device[32];         /* "host" (default), "null" (read and discard), "cuda:N" */
    uint64_t staging_bytes;  /* the whole ring of pinned buffers; 0 = max(64 MiB, 8 MiB per buffer) */
    uint32_t buffers;        /* ring slots; 0 = max(4, 2 × threads) */
    uint32_t threads;        /* reader threads; 0 = the CPUs online, at most 16 */
    bool direct;             /* O_DIRECT for ring reads (falls back to buffered where refused) */
    bool verify;             /* read the device copy back and compare checksums with the file's */
    const char *device_map;  /* NULL: everything on device; "auto"; or a JSON file (docs/loader.md) */
    vf_load_progress_fn progress;
    void *progress_user;
    /* Polled while loading; nonzero stops the load (VF_EINTR), everything released. */
    const volatile int *cancel;
VF_GROWABLE_END(256) } vf_load_opts;
VF_SIZE_PINNED(vf_load_opts, 256);

/** Fills o with every default (device "host", the rest 0 = automatic). */
VF_API void vf_load_opts_init(vf_load_opts *o);

/* One device's share of a load. Memory figures are 0 when not measurable. */
typedef struct vf_load_device { VF_GROWABLE_BEGIN
    char device[32];             /* "cuda:0", "host", "null" */
    char name[96];               /* the GPU's name when known */
    uint64_t tensors;
    uint64_t bytes;              /* tensor bytes placed on it */
    uint64_t allocated_bytes;    /* the loader's allocation(s) there */
    uint64_t used_before_bytes;  /* device memory used before anything was opened (NVML) */
    uint64_t used_ready_bytes;   /* used once the context exists, before the load */
    uint64_t used_after_bytes;   /* used after the load */
    char mem_source[16];         /* "nvml", "cuMemGetInfo", "allocator", "none" */
VF_GROWABLE_END(512) } vf_load_device;
VF_SIZE_PINNED(vf_load_device, 512);

/*
 * A load's report: made with vf_load_result_new, filled by vf_loader_run,
 * read with the accessors, freed with vf_load_result_free.
 * X(type, name, what it is): vf_load_result_<name>(r) returns it.
 */
#define VF_LOAD_RESULT_FIELDS(X)                                                                        \
    X(uint64_t, tensors, "tensors placed")                                                              \
    X(uint64_t, bytes, "bytes streamed (the files' data sections, or the mapped tensors)")              \
    X(uint64_t, tensor_bytes, "the model's tensor bytes: the estimate's weights figure")                \
    X(double, seconds, "wall time of the run")                                                          \
    X(double, gib_per_s, "bytes / seconds in GiB/s")                                                    \
    X(uint64_t, peak_host_rss_bytes, "getrusage peak of this process")                                  \
    X(uint64_t, staging_bytes, "the ring actually allocated (0 when reads land in place)")              \
    X(uint32_t, buffers, "ring slots")                                                                  \
    X(uint32_t, threads, "reader threads")                                                              \
    X(bool, direct, "O_DIRECT was in effect")                                                           \
    X(const char *, device, "opts.device, or \"map\" with a device map")                                \
    X(uint64_t, device_bytes_used, "sum of (used after - used ready): what the load took")              \
    X(uint64_t, device_context_bytes, "sum of (used ready - used before): the context's own cost")      \
    X(bool, verified, "the device copy was read back and matched")

typedef struct vf_load_result vf_load_result;

/** A new, empty report; NULL when out of memory. */
VF_API vf_load_result *vf_load_result_new(void);
/** Frees it; NULL is a no-op. */
VF_API void vf_load_result_free(vf_load_result *r);
#define VF_X_(type, name, what) VF_API type vf_load_result_##name(const vf_load_result *r);
VF_LOAD_RESULT_FIELDS(VF_X_)
#undef VF_X_
/** Each device's share; i in [0, count), NULL past the end. */
VF_API size_t vf_load_result_per_device_count(const vf_load_result *r);
VF_API const vf_load_device *vf_load_result_per_device(const vf_load_result *r, size_t i);

/**
 * Plans a load of m (which must outlive the loader): opens the devices,
 * resolves the device map, checks every file's size. Nothing is read yet.
 */
VF_API vf_status vf_loader_open(const vf_model *m, const vf_load_opts *o, vf_loader **out, vf_error *err);
/**
 * Streams every tensor into place. On failure every byte taken by the run is
 * released (host and device) and the status says why: VF_EIO / VF_EFORMAT for
 * reads, VF_EDEVMEM / VF_EDEVICE for the device, VF_EINTR when cancelled.
 */
VF_API vf_status vf_loader_run(vf_loader *l, vf_load_result *res, vf_error *err); /* res from vf_load_result_new */
/**
 * Where tensor i landed after a successful run: its device ("cuda:0") and
 * address (a CUdeviceptr for "cuda:N", a host pointer for "host", a
 * placeholder never to be dereferenced for "null").
 */
VF_API vf_status vf_loader_tensor_location(const vf_loader *l, size_t i, const char **device, uint64_t *addr,
                                           vf_error *err);
/** Releases the loaded copy and everything the loader holds; NULL is a no-op. */
VF_API void vf_loader_free(vf_loader *l);

/** The 64-bit checksum --verify compares (docs/loader.md); seed 0 for a plain hash. */
VF_API uint64_t vf_hash64(const void *data, size_t n, uint64_t seed);

/* ------------------------------------------------------------------------ */
/* Tensors for a framework (DLPack)                                          */
/* ------------------------------------------------------------------------ */
/*
 * A model loaded on one device (opts.device: "host" or "cuda:N") through the
 * loader: one allocation per file, each tensor a view into it, handed over
 * as DLPack DLManagedTensor structs (a framework wraps one in a "dltensor"
 * capsule; PyTorch: torch.utils.dlpack.from_dlpack). The loaded memory is
 * freed when the set and every tensor taken from it are released. Types the
 * framework lacks (FP8, U16-U64, quantized GGUF blocks) are their raw bytes
 * as uint8, vf_dlpack_dtype naming the type (docs/loader.md).
 */
typedef struct vf_dlpack_set vf_dlpack_set;

/**
 * Loads m (from vf_model_open of a safetensors file, sharded index or
 * directory, or a GGUF), which the set takes over: freed with the set's
 * memory, also when this fails. res may be NULL.
 */
VF_API vf_status vf_dlpack_load(vf_model *m, const vf_load_opts *o, vf_dlpack_set **out, vf_load_result *res,
                                vf_error *err);
VF_API size_t vf_dlpack_count(const vf_dlpack_set *s);
VF_API const char *vf_dlpack_name(const vf_dlpack_set *s, size_t i);
/** The file's type name ("BF16", "F8_E4M3", "Q4_K"). */
VF_API const char *vf_dlpack_dtype(const vf_dlpack_set *s, size_t i);
/** True when tensor i is handed over as raw bytes (uint8). */
VF_API bool vf_dlpack_raw(const vf_dlpack_set *s, size_t i);
/** A new DLManagedTensor for tensor i (its deleter releases it); NULL on error. */
VF_API void *vf_dlpack_take(vf_dlpack_set *s, size_t i, vf_error *err);
/** Drops the set's own reference; the memory goes with the last tensor. */
VF_API void vf_dlpack_release(vf_dlpack_set *s);

#ifdef __cplusplus
}
#endif
#endif /* VRAMFIT_H */
