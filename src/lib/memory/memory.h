/* memory.h — what every part of the memory model shares (hidden): the notes
 * an estimate carries and the entry points of each model. */
#ifndef VF_MEMORY_H
#define VF_MEMORY_H

#include "model/model.h"

/* An estimate (vramfit.h hands it out opaque, with accessors): every part of
 * the memory model fills its fields. */
#define VF_MAX_NOTES 48

struct vf_estimate {
    vf_mode mode;
    vf_runtime runtime;
    uint32_t gpus;
    uint64_t per_gpu_bytes;   /* what must fit on each device (the peak) */
    uint64_t total_bytes;     /* summed over all devices */
    /* components, per GPU (docs/design.md §3) */
    uint64_t weights;
    uint64_t kv_cache;
    uint64_t activations;
    uint64_t gradients;
    uint64_t optimizer;
    uint64_t overhead;
    uint64_t host_bytes;      /* host memory (offload, llama.cpp layers on CPU) per node */
    /* resolved knobs, for the assumptions table */
    uint64_t context, batch;
    uint64_t kv_bytes_per_token;  /* whole model, one sequence */
    double weight_bits;           /* bits per weight achieved after re-pricing */
    uint64_t trainable_params;
    /* vLLM: the KV cache pool it gets */
    bool starts;                  /* false: the engine would refuse to start (see reason) */
    char reason[VF_NOTE_LEN];
    uint64_t kv_cache_tokens;
    double max_concurrency;
    /* llama.cpp: its own buffers (sums over devices) */
    uint64_t rb_model, rb_context, rb_compute, rb_output;
    uint64_t rb_host_model, rb_host_context, rb_host_compute; /* what of them is in host memory */
    uint32_t rb_devices;                                      /* per GPU: */
    uint64_t rb_dev[VF_MAX_SPLIT][VF_DEVBUF_COUNT];
    /* training: which moment is the peak */
    char peak_phase[64];
    /* assumptions ("key = value") and formulas with numbers filled in */
    size_t n_assumptions;
    char assumptions[VF_MAX_NOTES][VF_NOTE_LEN];
    size_t n_explain;
    char explain[VF_MAX_NOTES][VF_NOTE_LEN];
    /* What the device holds at the peak, per GPU, as nvidia-smi shows the
     * process (docs/design.md §3): the allocator's reserved peak + the CUDA context
     * + memory outside the allocator. fit decides on device_bytes. */
    uint64_t device_bytes;
    uint64_t allocated_bytes;  /* the allocator's allocated peak (torch.cuda.max_memory_allocated) */
    uint64_t reserved_bytes;   /* its reserved peak (max_memory_reserved): allocated + cached blocks */
    uint64_t context_bytes;    /* the CUDA context with the kernels and libraries it loads */
    uint64_t outside_bytes;    /* other memory outside the allocator (non-torch, CUDA graphs) */
    /* pipeline parallel (vLLM): the figures above are the busiest rank's */
    uint32_t pp_stages;           /* stages; 0 or 1 = none */
    uint32_t busiest_stage;       /* 0-based: 0 holds the embeddings, pp_stages - 1 the norm and head */
    uint32_t stage_first_layer, stage_end_layer; /* its blocks [first, end) */
    /* graphs: nodes whose output shapes could not be inferred (the estimate is
     * partial: their tensors are not counted; the assumptions name them) */
    uint32_t partial_nodes;
    /* vLLM: the CUDA graphs' memory (part of outside_bytes), the busiest rank's */
    uint64_t cuda_graph_bytes;
    /* What a fit verdict keeps free on each GPU beyond device_bytes, by the
     * runtime's own mechanism (docs/memory-model.md, "The margin a verdict
     * keeps"): fit needs device_bytes + margin_bytes. */
    uint64_t margin_bytes;
    bool margin_named; /* the estimator set margin_bytes, 0 included (estimate.c adds no default) */
    /* vLLM's phases as nvidia-smi would show them (device_bytes is serving
     * at its peak: a full batch's activations back in the allocator) */
    uint64_t phase_load_bytes, phase_profile_bytes, phase_idle_bytes;
    /* training with an evaluation step: its peak allocated plus the context (0: none) */
    uint64_t eval_bytes;
    /* vLLM: what the KV pool's whole blocks leave unused of its budget.
     * device_bytes + this = the device x gpu_memory_utilization plus what
     * sits outside the budget: it grows steadily with the device, where
     * device_bytes steps by a block (fit's smallest device, fit_search.c) */
    uint64_t size_round_bytes;
};

/* Appends "fmt" to e->assumptions / e->explain (silently drops past VF_MAX_NOTES). */
VF_HIDDEN void vf__assume(vf_estimate *e, const char *fmt, ...) VF_PRINTF(2, 3);
VF_HIDDEN void vf__explain(vf_estimate *e, const char *fmt, ...) VF_PRINTF(2, 3);
/* vLLM's start-up checks of a layout (vllm/vllm_layout.c): false, with the
 * engine's own message in why, when it refuses tensor parallel tp (with
 * --enable-expert-parallel when ep). */
VF_HIDDEN bool vf__vllm_layout_ok(const vf_hparams *hp, uint32_t tp, bool ep, char *why, size_t n);
VF_HIDDEN vf_status vf__infer_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);
VF_HIDDEN vf_status vf__train_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);
/* The memory model on open models (estimate.c); vf_estimate_run opens the
 * serving extras first (answer/estimate_run.c). */
VF_HIDDEN vf_status vf__estimate_core(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);

#endif
