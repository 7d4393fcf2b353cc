/* graph_mem.h — the memory model of a network by its graph: the lifetimes
 * of its activations (graph_live.c), what each operator keeps for backward
 * and the backward pass (graph_train.c), and the estimate (graph_estimate.c). */
#ifndef VF_GRAPH_MEM_H
#define VF_GRAPH_MEM_H

#include "model/graph.h"

/* PyTorch operators the exporter spelled as several nodes (graph_fuse.c). */
enum { VF_FUSE_NONE, VF_FUSE_LAYERNORM, VF_FUSE_GELU, VF_FUSE_SILU, VF_FUSE_POINTWISE, VF_FUSE_POOL, VF_FUSE_KINDS };

typedef struct vf__fuse {
    uint8_t *kind;           /* per node: the operator it is part of, VF_FUSE_NONE when priced alone */
    uint8_t *inner;          /* per node: part of one but not its last node (its outputs live inside the kernel) */
    uint32_t *x;             /* per node, the last of an operator: the operator's input; else NONE */
    size_t count[VF_FUSE_KINDS];
} vf__fuse;

/* pos: each node's position in the order. */
VF_HIDDEN vf_status vf__fuse_find(const vf__graph *g, const vf__shapes *s, const uint32_t *pos, vf__fuse *f);
VF_HIDDEN void vf__fuse_free(vf__fuse *f);
VF_HIDDEN const char *vf__fuse_name(uint8_t kind);

/* Lifetimes along the order (positions are indices into g->order). */
typedef struct vf__live {
    uint32_t *last, *first;  /* per value: last and first reader position, NONE when none */
    uint32_t *hold;          /* per value: kept alive at least to this position (its caller holds it) */
    uint32_t *vend;          /* per value: last position it is needed at */
    uint32_t *stor;          /* per value: the value owning its storage */
    uint32_t *end;           /* per storage (owner value): last position it is needed at */
    uint64_t *sbytes;        /* per value: bytes of the storage it owns (0 for views and in-place results) */
    uint8_t *view;           /* per value: a view of its input's storage (PyTorch's view ops) */
    uint8_t *strided;        /* per value: a view that is not contiguous (a reshape of it copies) */
    vf__fuse fu;             /* operators the exporter decomposed */
    uint32_t *pos;           /* per node: its position */
    bool scoped;             /* node names carry module scopes */
} vf__live;

VF_HIDDEN vf_status vf__live_init(const vf__graph *g, const vf__shapes *s, vf__live *L);
VF_HIDDEN void vf__live_free(vf__live *L);
/* Locals a loop over a ModuleList rebinds (graph_loops.c): per value, the
 * position it stays bound to, VF_GRAPH_NONE when it is no such local. */
VF_HIDDEN vf_status vf__live_loops(const vf__graph *g, const vf__shapes *s, const vf__live *L, uint32_t *bind_end);
VF_HIDDEN uint64_t vf__live_peak(const vf__graph *g, const vf__shapes *s, const vf__live *L, const uint8_t *keep,
                                 uint32_t *peak_node, uint64_t *input_bytes);
VF_HIDDEN bool vf__graph_is_view(const vf__gnode *n);
VF_HIDDEN bool vf__graph_dropout_identity(const vf__shapes *s, const vf__gnode *n);

/* Initializers that do not train (graph_freeze.c): per value, 1 when frozen
 * by the caller's patterns or as FrozenBatchNorm2d's constants; v NULL when
 * the caller froze nothing. */
typedef struct vf__frozen {
    uint8_t *v;
    size_t by_name;          /* values matched by a --freeze pattern */
    size_t frozen_bn;        /* FrozenBatchNorm2d layers found */
} vf__frozen;

VF_HIDDEN vf_status vf__graph_frozen(const vf_model *m, const vf_estimate_opts *o, vf__frozen *f, vf_error *err);
VF_HIDDEN void vf__frozen_free(vf__frozen *f);

/* Training: saved tensors and the step's moments. */
typedef struct vf__gtrain {
    uint64_t saved;          /* saved for backward, graph inputs included */
    uint64_t saved_inputs;   /* of which graph inputs (the image kept by the first layer) */
    uint64_t saved_extra;    /* of which tensors the graph does not show (BN statistics, pool indices, loss) */
    uint64_t fwd_peak;       /* activations at the forward's peak (saved so far + transients) */
    uint64_t bwd_peak;       /* activations + activation and parameter gradients at the backward's peak */
    uint64_t bwd_grads;      /* parameter gradients alive at that moment */
    uint64_t bwd_scratch;    /* of bwd_peak, kernel scratch inside the convolution_backward at that moment */
    uint64_t bwd_plain;      /* the backward's peak with no kernel scratch counted */
    uint64_t loss_saved;     /* of saved_extra, the loss's log-softmax (freed by the loss's backward) */
    uint64_t labels;         /* the loss's int64 targets (held by the caller, in no other figure) */
    size_t n_unruled;        /* nodes with no saved-tensor rule (inputs and outputs counted) */
    char unruled[VF_NOTE_LEN];
} vf__gtrain;

/* The auxiliary classifiers torchvision's GoogLeNet and Inception3 train
 * beside their eval graph (graph_aux.c). */
#define VF_AUX_MAX 2
#define VF_AUX_TENSORS 10
typedef struct vf__aux_head {
    uint32_t at;            /* position of the node making the head's input: its backward runs just before that node's */
    uint64_t saved;         /* bytes its forward saves for backward (its cross-entropy's log-softmax included) */
    uint64_t transient;     /* its backward's largest moment beyond its parameter gradients */
    uint64_t params;        /* parameter elements */
    uint64_t buffer_bytes;  /* BatchNorm running statistics and num_batches_tracked */
    uint64_t shape[VF_AUX_TENSORS][4];
    uint32_t n_dims[VF_AUX_TENSORS];
    size_t n_tensors;
} vf__aux_head;
typedef struct vf__aux {
    const char *net; /* NULL: no heads beyond the graph */
    size_t n;
    bool placed;     /* every head's input found by its module's scoped name */
    vf__aux_head h[VF_AUX_MAX];
} vf__aux;

/* act: bytes of a float activation element. */
VF_HIDDEN void vf__aux_heads(const vf_model *m, const vf__shapes *s, uint32_t act, vf__aux *out);

/* act_num/act_den scale float activations (2/4 under autocast); grad_bytes
 * per parameter element; frozen: per value, initializers that do not train (or NULL);
 * aux: heads run beside the graph (or NULL). */
VF_HIDDEN vf_status vf__graph_train(const vf_model *m, const vf__shapes *s, const vf__live *L, uint32_t act_num,
                                    uint32_t act_den, uint32_t grad_bytes, const uint8_t *frozen,
                                    const vf__aux *aux, vf__gtrain *out);
/* The scratch conv node n's backward allocates and frees inside the op
 * (graph_scratch.c); dx: its input's gradient is made. */
VF_HIDDEN uint64_t vf__conv_bwd_scratch(const vf__gnode *n, const vf__shapes *s, bool dx);
/* For the tests: the saved-tensor rules' table is sorted (bsearch needs it). */
VF_HIDDEN bool vf__train_rules_sorted(void);
VF_HIDDEN vf_status vf__graph_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out,
                                       vf_error *err);

#endif
