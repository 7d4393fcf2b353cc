/* model.h — the model description every reader fills and every later stage
 * reads: tensors, files, warnings, hyper-parameters (hidden). */
#ifndef VF_MODEL_H
#define VF_MODEL_H

#include "base/base.h"

/* ---- the model description ---- */
/* A memo: what a later stage computed from this model alone and keeps with
 * it (a fit runs hundreds of estimates of one model: the memory model keeps
 * its priced weights, the allocator after the weights, replayed training
 * steps and its reading of the architecture). The description knows neither
 * their types nor their owners: an owner names its memo by the address of a
 * key of its own and gives the function that frees it with the model. */
#define VF_MODEL_MEMOS 8
typedef struct vf__memo {
    const void *key;
    void *ptr;
    void (*free)(void *);
} vf__memo;

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
    char origin[600]; /* which source answered (vf_model_origin) */
    /* a GGUF repository's name answered offline by its base model: the
     * llama-quantize type its weights are priced at when no --weights is
     * given (read/gguf_repo.c); "" otherwise */
    char priced_as[32]; /* as vf_estimate_opts.weights holds it */
    char priced_named[48]; /* the type as the name gave it ("UD-Q4_K_XL") */
    bool priced_own_recipe; /* the repository's own mix (unsloth UD), priced by that type's rule */
    /* memos a later stage keeps with the model (vf__model_memo) */
    vf__memo memos[VF_MODEL_MEMOS];
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

/* VF_ERANGE when a hyper-parameter is past what any model has (hparams_check.c). */
VF_HIDDEN vf_status vf__hparams_check(const vf_hparams *hp, const char *source, vf_error *err);

/* The memo kept under key, or NULL. The table has its own lock; an owner
 * orders its own read-build-set with its lock: the model is const to every
 * stage after the readers. */
VF_HIDDEN void *vf__model_memo(const vf_model *m, const void *key);
/* Keeps ptr under key (replacing what was there, which the owner has linked
 * into ptr or freed); false when every slot holds another owner's memo. */
VF_HIDDEN bool vf__model_memo_set(const vf_model *m, const void *key, void *ptr, void (*free_fn)(void *));

#endif
