/* model.h — the model description every reader fills and every later stage
 * reads: tensors, files, warnings, hyper-parameters (hidden). */
#ifndef VF_MODEL_H
#define VF_MODEL_H

#include "base/base.h"

/* ---- the model description ---- */
struct vf_model {
    vf_format format;
    char *source;
    vf_hparams hp;
    vf_tensor *tensors;
    size_t n_tensors, cap_tensors;
    vf_file_info *files;
    size_t n_files, cap_files;
    char **warnings;
    size_t n_warnings, cap_warnings;
    json_t *config;  /* parsed config.json when one was read (owned) */
    json_t *gguf_kv; /* GGUF metadata as a JSON object (owned), for arch lookups */
    char approximate[224]; /* why the tensor list is a guess (unknown family); "" when exact */
    /* name arena: tensor and file names point into these blocks */
    char **strings;
    size_t n_strings, cap_strings;
    char *arena_next; /* free space left in the last block */
    size_t arena_left;
    /* weights priced per scheme, built on first use (weights_memo.c): a cache
     * the const model keeps, guarded by one lock; freed through the pointer
     * so that the description depends on no memory-model file */
    struct vf__wlayers *wmemo;
    void (*wmemo_free)(struct vf__wlayers *);
    char origin[600]; /* which source answered (vf_model_origin) */
    /* the caching allocator's state after the weights, per load (replay_torch.c), the same way */
    struct vf__rmemo *rmemo;
    void (*rmemo_free)(struct vf__rmemo *);
    /* a training step's replayed figures per set of inputs (train_replay.c), the same way */
    struct vf__trmemo *trmemo;
    void (*trmemo_free)(struct vf__trmemo *);
    /* the training model's reading of the architecture (train_arch.c), once per model */
    struct vf__tarch *tarch;
    void (*tarch_free)(struct vf__tarch *);
    struct vf__graph *graph;   /* a network read from its graph (ONNX), else NULL (graph.h) */
    uint64_t graph_bytes_read; /* bytes the graph reader read from its file */
};

VF_HIDDEN vf_model *vf__model_new(vf_format fmt, const char *source);
/* Appends a tensor; copies t->name. Returns NULL on no memory or too many. */
VF_HIDDEN vf_tensor *vf__model_add_tensor(vf_model *m, const vf_tensor *t);
VF_HIDDEN uint32_t vf__model_add_file(vf_model *m, const char *path, uint64_t size);
VF_HIDDEN void vf__model_warn(vf_model *m, const char *fmt, ...) VF_PRINTF(2, 3);
/* Fills role, layer and (for known naming schemes) flags of every tensor. */
VF_HIDDEN void vf__model_classify(vf_model *m);

VF_HIDDEN void vf__hparams_free(vf_hparams *hp);

#endif
