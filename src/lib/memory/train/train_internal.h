/* train_internal.h — what the training memory model's files share (issue 5).
 * train_arch.c reads the architecture, train_states.c prices parameters,
 * gradients and optimizer states, train_act.c the saved activations,
 * train_dist.c the parallel layout (ZeRO/FSDP, TP, PP, EP, offload, and
 * DeepSpeed's own estimators), train_peak.c the moment of the step's peak,
 * train.c puts them together. Formulas and sources: docs/memory-model.md. */
#ifndef VF_TRAIN_INTERNAL_H
#define VF_TRAIN_INTERNAL_H

#include "memory/memory.h"

/* The shapes the activation model needs, from hparams, config.json and tensors. */
typedef struct vf__tarch {
    uint32_t n_layers;
    uint64_t hidden, inter, vocab;
    uint32_t n_heads, n_kv_heads, head_dim;
    bool rmsnorm;        /* RMSNorm (HF upcasts to fp32) vs LayerNorm */
    bool gated_mlp;      /* SwiGLU/GeGLU: gate and up projections */
    bool learned_pos;    /* GPT-2 style position embedding (position ids saved) */
    bool rope;           /* rotary: cos/sin tables live through the step */
    bool softmax_upcast; /* HF Llama-family eager attention: softmax in fp32 */
    bool gelu_python;    /* HF "gelu_new"/"gelu_fast" written as tensor ops: 4 saved tensors */
    bool tied;           /* output head shares the embedding */
    uint64_t cls_labels; /* a sequence-classification head ("classifier" [labels, h] on the pooled first token):
                            its logits are one row per sequence, no vocabulary-sized tensor */
    double attn_drop, resid_drop, embd_drop;
    /* mixture of experts */
    uint32_t n_experts, n_experts_active;
    uint64_t moe_inter, shared_inter;
} vf__tarch;

VF_HIDDEN vf_status vf__train_arch(const vf_model *m, vf__tarch *a, vf_error *err);

/* Resolved knobs. */
typedef struct vf__tcfg {
    uint64_t b, s, T;   /* micro-batch, sequence, tokens = b*s */
    uint32_t accum;
    uint32_t gpus, tp, pp, ep, dp, per_node;
    int zero;           /* effective ZeRO stage 0..3 (FSDP mapped) */
    uint32_t act;       /* bytes of an activation element: 4 fp32, else 2 */
    uint32_t resid;     /* bytes of the residual stream: act, or 4 under PyTorch AMP */
    bool amp;           /* PyTorch autocast over fp32 weights (HF Trainer without DeepSpeed/FSDP) */
    uint32_t w_bytes;   /* trainable weights on the GPU: 4 fp32, else 2 */
    uint32_t g_bytes;   /* gradients */
    uint32_t master;    /* fp32 master copy per trainable param: 4 under mixed precision */
    uint32_t st_bytes;  /* optimizer moment element: 4, or 2 for pure bf16 */
    double frozen_bytes;/* frozen base weight bytes per param (LoRA): dtype or 4-bit */
    bool lora, qlora;
    bool litgpt;          /* LitGPT's own modules: its RMSNorm, chunked bf16 loss, SDPA */
    bool bnb_keeps_input; /* bitsandbytes < 0.43.2: each 4-bit matmul saves its input */
    bool bnb_fp16_quant;  /* 4-bit weights quantized from fp16 (bitsandbytes < 0.43, Fabric's plugin):
                             dequantizing for a bf16 matmul makes an fp16 and a bf16 copy */
    uint64_t head_shape[2]; /* LitGPT: the separate head it builds for a tied model ([V, h]), else 0 */
    uint32_t lora_rank;
    float lora_dropout;
    vf_attn attn;
    bool softmax_keeps_input; /* PyTorch < 1.11: softmax/log_softmax save their input as well */
    bool grads_kept;      /* gradients live from one step into the next (zero_grad without set_to_none) */
    vf_loss loss;         /* how the loss meets the logits */
    uint32_t loss_chunks; /* VF_LOSS_CHUNKED: output chunks */
    bool optim_in_bwd;    /* each parameter stepped by its post-accumulate-grad hook, its gradient freed there */
    bool act_offload;     /* saved activations of the blocks in pinned host memory (torchtune OffloadActivations) */
    bool ckpt_offload;    /* with act_offload: only the checkpoints, one on the device (Unsloth's checkpointer) */
    bool unsloth;         /* Unsloth's patched model (its checkpointer implies it): its fast RMSNorm, and its
                             fused LoRA kernels where they apply (train_act.c unsloth_block) */
    bool kbit_fp32;       /* PEFT prepare_model_for_kbit_training: the unquantized parameters at fp32 */
    uint32_t adapter_in;  /* fp32 LoRA adapters on a 16-bit base: bytes of the copy of its input each adapter
                             saves (4: x.to(fp32); 2: autocast's bf16 cast of it); 0: the input is shared */
} vf__tcfg;

/* Parameters, gradients and optimizer states of the whole model (unsharded). */
typedef struct vf__tstates {
    uint64_t params, n_param_tensors;
    uint64_t trainable, n_trainable_tensors;
    uint64_t frozen;
    uint64_t expert_params;        /* in routed experts (divided by EP) */
    uint64_t block_linear_params;  /* in blocks' matrices (divided by TP) */
    uint64_t largest_module;       /* params of the largest module (DeepSpeed's largest layer) */
    uint64_t largest_linear;       /* largest matrix (QLoRA dequantizes it whole) */
    uint64_t buffer_bytes;         /* stored non-parameter buffers */
    uint64_t weight_bytes;         /* trainable at w_bytes + frozen at its storage */
    uint64_t grad_bytes;
    uint64_t master_bytes;
    uint64_t state_bytes;          /* moments, step counters, block scales */
    uint64_t paged_bytes;          /* of state_bytes: in CUDA managed memory (bitsandbytes paged), off the device */
    uint64_t step_temp_bytes;      /* the optimizer step's temporaries */
    uint64_t largest_trainable;    /* elements of the largest trainable tensor (optimizer in backward) */
    uint64_t lora_act_extra;       /* adapted matrices in the blocks (each saves tokens x rank) */
    uint64_t lora_in_sum;          /* their input widths, summed (lora_dropout copies per adapter) */
    uint64_t lora_qkv_in;          /* the part of lora_in_sum from separate q, k, v matrices */
    uint32_t lora_qkv_mask;        /* which of q (1), k (2), v (4) the LoRA targets name */
    bool linear_saves_input[VF_ROLE_COUNT]; /* LoRA: frozen linears save no input */
} vf__tstates;

VF_HIDDEN vf_status vf__train_states(const vf_model *m, const vf_train_opts *t, const vf__tcfg *c,
                                     vf__tstates *s, vf_error *err);
/* Of a tensor's optimizer state, what a paged optimizer keeps in CUDA managed memory. */
VF_HIDDEN uint64_t vf__optim_paged_bytes(vf_optimizer o, uint64_t n);
/* Optimizer state bytes for n trainable elements in one tensor. */
VF_HIDDEN uint64_t vf__optim_state_bytes(vf_optimizer o, const vf__tcfg *c, const uint64_t *shape, uint32_t n_dims,
                                         uint64_t n);

/* What the replay (train_replay.c) shares with the pricing: the matrix roles,
 * the LoRA targets' roles, whether QLoRA stores a tensor in 4 bits, and a
 * frozen tensor's bytes at its storage. */
VF_HIDDEN bool vf__train_matrix_role(vf_role r);
VF_HIDDEN vf_status vf__lora_targets(const char *spec, bool on[VF_ROLE_COUNT], vf_error *err);
VF_HIDDEN bool vf__train_quantized(const vf__tcfg *c, const vf_tensor *t);
VF_HIDDEN uint64_t vf__train_frozen_bytes(const vf__tcfg *c, const char *qlora, const vf_tensor *t, uint64_t n);
/* How many adapters a matrix gets and the rows of each A (LitGPT's fused
 * modules); qkv_mask: which of q (1), k (2), v (4) the targets name. */
VF_HIDDEN void vf__lora_adapter_layout(const vf__tcfg *c, uint32_t qkv_mask, const vf_tensor *tn, uint64_t *copies,
                                       uint64_t *a_rows);

/* Saved-for-backward activations of one micro-batch on one GPU. */
typedef struct vf__tacts {
    uint64_t layer;      /* one block, no recomputation */
    uint64_t layer_kept; /* one block as kept with the chosen recomputation */
    uint64_t non_layer;  /* embeddings, final norm, head, loss */
    uint64_t total;      /* what is saved at the end of the forward */
    uint64_t attn_scores;/* one b*heads*s*s matrix at the activation dtype (0 with flash/SDPA) */
    uint64_t logits_tv;  /* tokens x vocab (elements) */
    uint64_t fwd_temp;   /* transient above the saved set at the forward's peak */
    uint64_t bwd_start;  /* transient at the start of backward (loss gradients) */
    uint64_t bwd_layer;  /* transient inside one block's backward */
    uint64_t bwd_end;    /* transient at the embedding's backward, beside all gradients */
    /* the last block's backward: what the loss and head released and their
     * gradients (unsharded) when it starts, and what its MLP released and
     * added by the time its attention runs */
    uint64_t freed_head, grads_head, freed_mlp, grads_mlp;
    uint64_t bwd_mlp, bwd_attn; /* transients of the MLP's and the attention's backward */
    uint64_t held;       /* kept by the training loop through the whole step (LitGPT's `logits`) */
    uint64_t held_fwd;   /* alive at the end of the forward only: the previous micro-batch's 4-bit matmul
                            inputs, kept by its graph until the new logits replace the old (LitGPT) */
    uint64_t held_after; /* this micro-batch's 4-bit matmul inputs, still alive after its backward */
    uint64_t scores_kept;/* of layer_kept: the s^2 terms eager attention saves (scores, softmax, dropout) */
    uint64_t ff_kept;    /* of layer: the dense MLP's intermediate-width tensors (tokens x ff) */
    uint64_t scores_recomputed; /* of layer - layer_kept: the s^2 terms a checkpoint's rerun makes again */
} vf__tacts;

/* LitGPT's own terms (train_litgpt.c): one block's extra q/k/v-path saves, and
 * the loss region with what outlives a micro-batch's backward. */
VF_HIDDEN uint64_t vf__litgpt_qkv_saved(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s);
VF_HIDDEN void vf__litgpt_loss(const vf__tarch *a, const vf__tcfg *c, vf__tacts *o);
/* QLoRA's forward transient given the 4-bit head's dequantized bytes `deq`. */
VF_HIDDEN uint64_t vf__litgpt_head_deq(const vf__tarch *a, const vf__tcfg *c, const vf__tacts *o, uint64_t deq);

/* Whether Unsloth's fused LoRA kernels price the blocks (train_act.c). */
VF_HIDDEN bool vf__unsloth_lora(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s);
VF_HIDDEN void vf__train_acts(const vf__tarch *a, const vf__tcfg *c, const vf__tstates *s, vf_recompute rc,
                              vf__tacts *out);

/* OffloadActivations' forward stash (torchtune max_fwd_stash_size default):
 * the last offloaded tensors kept alive on the GPU until their copy ends. */
#define VF__OFFLOAD_STASH 5
/* the device copies an offload keeps in flight: torchtune's stash, or the one
 * input Unsloth_Offloaded_Gradient_Checkpointer is copying */
#define VF__OFFLOAD_FLIGHT(c) ((c)->ckpt_offload ? 1u : VF__OFFLOAD_STASH)

/* DeepSpeed's default reduce bucket (reduce_bucket_size = 5e8 elements). */
#define VF__DS_REDUCE_BUCKET 500000000ull

/* What lives on each GPU and on each node's host after distribution. */
typedef struct vf__tplace {
    uint64_t weights, grads, optimizer, buffers, activations;
    uint64_t comm_buffers; /* DDP buckets, ZeRO-3 gathered layers and flat reduce buffer */
    uint64_t bwd_buffers;  /* alive during backward only: DeepSpeed ZeRO-1/2's contiguous gradient bucket */
    uint64_t host;         /* per node */
    uint64_t step_temp;    /* optimizer step temporaries on the GPU */
} vf__tplace;

VF_HIDDEN void vf__train_place(const vf__tarch *a, const vf__tcfg *c, const vf_train_opts *t, const vf__tstates *s,
                               const vf__tacts *acts, vf__tplace *p, vf_estimate *e);
/* DeepSpeed's estimate_zero{2,3}_model_states_mem_needs, literally; false when no such estimator. */
VF_HIDDEN bool vf__deepspeed_states(const vf__tcfg *c, const vf_train_opts *t, const vf__tstates *s,
                                    uint64_t *gpu, uint64_t *cpu);

/* One training step's allocations (plain, LoRA, QLoRA, ZeRO/FSDP, offload,
 * recomputation, accumulation), played twice into the caching allocator
 * (train_replay.c) on r->capacity when set; hold: bytes allocated once the
 * weights are placed and held to the end (what the priced peak has beyond
 * the replay's layout). false when the layout is not one it replays. */
struct vf__replay;
VF_HIDDEN bool vf__train_replay(struct vf__replay *r, const vf_model *m, const vf_train_opts *t, const vf__tarch *a,
                                const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, uint64_t ws,
                                uint64_t hold);

/* The step's peak and its phase. */
VF_HIDDEN uint64_t vf__train_peak(const vf__tcfg *c, const vf__tacts *acts, const vf__tplace *p, vf_recompute rc,
                                  uint64_t *temp, char *phase, size_t phase_len, vf_estimate *e);

#endif
