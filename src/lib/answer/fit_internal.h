/* fit_internal.h — what fit.c, fit_search.c, fit_advice.c and plan.c share. */
#ifndef VF_FIT_INTERNAL_H
#define VF_FIT_INTERNAL_H

#include "memory/memory.h"

#include <stdlib.h>

#define VF_MAX_SUGGESTIONS 24

struct vf_fit {
    bool fits;
    vf_estimate est;           /* the estimate at the given knobs */
    uint64_t gpu_bytes;
    uint64_t needed_bytes;     /* per device: see vf_estimate_needed_bytes */
    int64_t headroom_bytes;    /* gpu_bytes - needed_bytes (negative: short by) */
    uint64_t max_context;      /* longest context that fits, 0 if none */
    bool max_context_capped;   /* the model's own context limit was reached */
    uint64_t max_batch;        /* largest batch that fits, 0 if none */
    bool max_batch_capped;
    uint32_t min_gpus;         /* fewest GPUs of this kind that fit, 0 if none up to the cap */
    uint32_t min_tp, min_pp, min_dp; /* the parallelism that makes min_gpus fit */
    int min_zero;              /* training: the ZeRO stage min_gpus needs */
    char parallelism[96];      /* in words: "tensor parallel 2", "ZeRO-3 over 4 GPUs" */
    size_t n_suggestions;
    vf_suggestion suggestions[VF_MAX_SUGGESTIONS];
    vf_speed speed;
    uint32_t min_nodes;        /* machines min_gpus spans (gpus_per_node each) */
    uint32_t gpus_per_node;    /* the node size the search used */
    uint32_t nodes;            /* machines the devices asked for span */
    /* the caller's strings the suggestions' knobs point at, copied so that
     * they live as long as the fit (vramfit.h) */
    char draft[4096], mmproj[4096], graph_inputs[4096], graph_freeze[4096];
};

/* The estimate function the solver calls; tests inject a stub. */
typedef vf_status (*vf_estimate_fn)(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out,
                                    vf_error *err);
/* vf_fit_run and vf_estimate_needed_bytes with the estimate function given: tests
 * inject a stub (NULL = vf_estimate_run). */
VF_HIDDEN vf_status vf__fit_run_with(const vf_model *m, const vf_fit_opts *opts, vf_estimate_fn fn, vf_fit *out,
                                     vf_error *err);
VF_HIDDEN vf_status vf__fit_catalog_with(const vf_model *m, const vf_fit_opts *opts, vf_estimate_fn fn, vf_fit_row *rows,
                                         size_t cap, size_t *n_rows, vf_error *err);
VF_HIDDEN vf_status vf__fit_needed_bytes(const vf_model *m, const vf_estimate_opts *o, vf_estimate_fn fn,
                                         uint64_t *needed, vf_error *err);

VF_HIDDEN void vf__fit_name_gpu(vf_estimate_opts *o, const vf_gpu *g);

typedef struct vf__fit_ctx {
    const vf_model *m;
    vf_estimate_fn fn;
    vf_estimate *scratch; /* the last run's result */
    uint64_t base_context, base_batch;
    unsigned runs;
} vf__fit_ctx;

typedef struct vf__gpu_plan {
    uint32_t gpus, tp, pp, dp;
    uint32_t nodes; /* machines of per_node devices the layout spans */
    int zero;
    char words[96];
} vf__gpu_plan;

/* 1 fits, 0 does not, -status on an estimate error; *needed = per-GPU bytes. */
VF_HIDDEN int vf__fit_try(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, uint64_t *needed,
                          vf_error *err);
VF_HIDDEN uint64_t vf__fit_needed(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes);
/* The same; *bisected when the answer came from the bisection, which does
 * not depend on gpu_bytes (only the knobs and the layout decide it). */
VF_HIDDEN uint64_t vf__fit_needed_ex(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, bool *bisected);
VF_HIDDEN void vf__set_context(vf_estimate_opts *o, uint64_t ctx);
VF_HIDDEN void vf__set_batch(vf_estimate_opts *o, uint64_t b);
VF_HIDDEN bool vf__fit_min_gpus(vf__fit_ctx *c, const vf_estimate_opts *base, uint64_t gpu_bytes, uint32_t per_node,
                                vf__gpu_plan *plan);
/* GPUs per node: the option, else the catalog GPU's node, else 8. */
VF_HIDDEN uint32_t vf__fit_per_node(const vf_fit_opts *opts);
VF_HIDDEN void vf__fit_apply_plan(vf_estimate_opts *o, const vf__gpu_plan *p);
/* The longest context / largest batch that fits (*capped: the search hit its cap). */
VF_HIDDEN uint64_t vf__fit_max_context(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, bool *capped);
VF_HIDDEN uint64_t vf__fit_max_batch(vf__fit_ctx *c, const vf_estimate_opts *o, uint64_t gpu_bytes, bool *capped);
/* llama.cpp's layer split over n devices in equal shares. */
VF_HIDDEN void vf__split_layers_evenly(vf_estimate_opts *o, uint32_t n);
/* The knobs for n devices when the user gave only a count ("H100x2"). */
VF_HIDDEN void vf__fit_spread(const vf_model *m, vf_estimate_opts *o, uint32_t n, uint32_t per_node);
/* VF_NEEDS_* of going from knobs base to o on gpu (NULL: unknown device). */
VF_HIDDEN uint32_t vf__change_needs(const vf_estimate_opts *base, const vf_estimate_opts *o, const vf_gpu *gpu);
VF_HIDDEN void vf__fit_advise(vf__fit_ctx *c, const vf_estimate_opts *o, const vf_fit_opts *opts, vf_fit *out);

#endif
