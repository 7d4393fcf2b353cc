/* graph.h — a network described by its graph (ONNX): values, nodes in a
 * topological order, and the small constants shape arithmetic needs. The
 * reader (read/onnx.c) fills it; shape inference (graph_shape.c) and the
 * memory model (graph_live.c, graph_train.c, graph_estimate.c) read it.
 * Initializers are the model's tensors (vf_model.tensors): exact bytes, their
 * data never read. */
#ifndef VF_GRAPH_H
#define VF_GRAPH_H

#include "model/model.h"

#define VF_GRAPH_NONE UINT32_MAX
#define VF_GRAPH_MAX_VALUES ((size_t)1 << 23)
#define VF_GRAPH_MAX_NODES ((size_t)1 << 22)
#define VF_GRAPH_MAX_EDGES ((size_t)1 << 16)   /* inputs or outputs of one node */
#define VF_GRAPH_MAX_ATTRS 4096u
#define VF_GRAPH_MAX_CONST 64u                 /* elements of a constant kept for shape arithmetic */

/* ONNX TensorProto.DataType values this code names. */
enum {
    VF_ONNX_FLOAT = 1, VF_ONNX_UINT8 = 2, VF_ONNX_INT8 = 3, VF_ONNX_INT32 = 6, VF_ONNX_INT64 = 7,
    VF_ONNX_STRING = 8, VF_ONNX_BOOL = 9, VF_ONNX_FLOAT16 = 10, VF_ONNX_DOUBLE = 11, VF_ONNX_BFLOAT16 = 16,
    VF_ONNX_ELEM_MAX = 23
};

/* A small tensor's contents (Constant nodes, shape initializers): kept only
 * up to VF_GRAPH_MAX_CONST elements of an integer or float type. */
typedef struct vf__gconst {
    int32_t elem;
    uint32_t rank;
    int64_t dims[VF_MAX_DIMS];
    uint32_t n;           /* elements */
    int64_t *iv;          /* integer contents (floats truncated), n of them */
    double *fv;           /* float contents, n of them (NULL for integer types) */
} vf__gconst;

typedef struct vf__gattr {
    const char *name;
    uint32_t type;        /* AttributeProto.AttributeType */
    int64_t i;
    float f;
    const char *s;
    uint32_t n_ints;      /* ints given; ints is NULL past VF_GRAPH_MAX_CONST */
    int64_t *ints;
    uint32_t n_floats;
    float *floats;
    vf__gconst *t;        /* a tensor value small enough to keep, else NULL */
    bool tensor_too_big;
} vf__gattr;

typedef struct vf__gnode {
    const char *op, *name, *domain;
    uint32_t n_in, n_out, n_attr;
    uint32_t *in, *out;   /* value ids; VF_GRAPH_NONE for an omitted optional input ("") */
    vf__gattr *attr;
    bool subgraph;        /* If/Loop/Scan body: not modelled */
} vf__gnode;

typedef struct vf__gvalue {
    const char *name;
    int32_t elem;                 /* declared or initializer type; 0 unknown */
    int32_t rank;                 /* declared rank; -1 none */
    int64_t dims[VF_MAX_DIMS];    /* declared: >= 0 known, -1 symbolic or unknown */
    const char *sym[VF_MAX_DIMS]; /* dim_param names, NULL */
    uint32_t producer;            /* node, VF_GRAPH_NONE for graph inputs and initializers */
    uint32_t tensor;              /* initializer: model tensor index, else VF_GRAPH_NONE */
    bool is_input, is_output, declared;
    bool buffer;                  /* an initializer or Identity copy the module holds as a buffer */
    vf__gconst *konst;            /* known contents */
} vf__gvalue;

typedef struct vf__graph {
    int64_t ir_version, opset;
    char producer[96];
    vf__gvalue *v;
    size_t n_v, cap_v;
    vf__gnode *node;
    size_t n_node, cap_node;
    uint32_t *inputs, *outputs;   /* runtime inputs (initializer-backed ones left out) and outputs */
    size_t n_inputs, cap_inputs, n_outputs, cap_outputs;
    uint32_t *order;              /* nodes in a topological order */
    uint32_t *hash;               /* name -> value id, open addressing */
    size_t hash_cap;
    char **blocks;                /* arena */
    size_t n_blocks, cap_blocks, left;
    char *next;
    size_t aliases;               /* Identity copies of initializers (deduplicated by the exporter) */
    uint64_t alias_elements, alias_bytes;
    size_t alias_params;          /* of the copies, those that are trained parameters (not buffers) */
    uint64_t alias_param_elements;
    uint64_t inline_bytes, external_bytes;
    const char **ops;             /* operator histogram, most frequent first */
    size_t *op_nodes, n_ops;
} vf__graph;

VF_HIDDEN vf__graph *vf__graph_new(void);
VF_HIDDEN void vf__graph_free(vf__graph *g);
/* Zeroed arena memory that lives as long as the graph; NULL on no memory. */
VF_HIDDEN void *vf__graph_alloc(vf__graph *g, size_t n);
VF_HIDDEN const char *vf__graph_strdup(vf__graph *g, const char *s, size_t n);
/* The value named name, made when absent; VF_GRAPH_NONE on no memory or too many. */
VF_HIDDEN uint32_t vf__graph_value(vf__graph *g, const char *name, size_t len);
VF_HIDDEN uint32_t vf__graph_find(const vf__graph *g, const char *name);
VF_HIDDEN vf__gnode *vf__graph_add_node(vf__graph *g);
VF_HIDDEN bool vf__graph_push(uint32_t **arr, size_t *n, size_t *cap, uint32_t v);
/* Orders the nodes (Kahn); refuses cycles, values made twice and reads of
 * values nothing makes, naming the node. */
VF_HIDDEN vf_status vf__graph_sort(vf__graph *g, const char *path, vf_error *err);

/* Builds the operator histogram (after the nodes are read). */
VF_HIDDEN bool vf__graph_histogram(vf__graph *g);

/* The initializer an Identity chain starting at id copies, or NONE. */
VF_HIDDEN uint32_t vf__graph_init_behind(const vf__graph *g, uint32_t id);
/* For the tests: the shape rules' table is sorted (bsearch needs it). */
VF_HIDDEN bool vf__infer_rules_sorted(void);

VF_HIDDEN const vf__gattr *vf__gattr_find(const vf__gnode *n, const char *name);
VF_HIDDEN int64_t vf__gattr_int(const vf__gnode *n, const char *name, int64_t dflt);
VF_HIDDEN float vf__gattr_float(const vf__gnode *n, const char *name, float dflt);
/* Bytes per element (bits rounded up for 4-bit types over n elements); 0 unknown. */
VF_HIDDEN uint64_t vf__onnx_elem_bytes(int32_t elem, uint64_t n);
VF_HIDDEN vf_dtype vf__onnx_dtype(int32_t elem);
VF_HIDDEN bool vf__onnx_is_float(int32_t elem);

/* ---- shapes of one run (graph_shape.c): symbolic dims bound ---- */

/* A value's inferred type and shape for one binding of the symbolic dims. */
typedef struct vf__vshape {
    int32_t elem;
    int32_t rank;                 /* -1 unknown */
    int64_t d[VF_MAX_DIMS];       /* -1 unknown */
    bool dyn;                     /* computed from a graph input at run time (an activation) */
    int32_t kn;                   /* known integer contents: kn values at pool[koff], -1 none */
    uint32_t koff;
    const double *kf;             /* float contents from a graph constant, or NULL */
} vf__vshape;

typedef struct vf__shapes {
    vf__vshape *v;                /* per value */
    uint64_t *bytes;              /* per value: bytes of a dyn value with a known shape, else 0 */
    int64_t *pool;                /* integer contents */
    size_t n_pool, cap_pool;
    size_t n_root_unknown;        /* nodes whose outputs could not be inferred from known inputs */
    size_t n_unknown;             /* nodes with an output of unknown size (incl. downstream) */
    char unknown[VF_NOTE_LEN];    /* the first of them: "Op 'name', ..." */
    uint64_t batch;               /* the batch bound */
} vf__shapes;

/* The bindings: the batch (0 = 1) and "NAME=DIMS[;NAME=DIMS]" (DIMS as 1x3x224x224 or 1,3,224,224). */
typedef struct vf__bind {
    uint64_t batch;
    const char *inputs;
} vf__bind;

VF_HIDDEN vf_status vf__graph_shapes(const vf_model *m, const vf__bind *b, vf__shapes *out, vf_error *err);
VF_HIDDEN void vf__shapes_free(vf__shapes *s);
/* Shape inference of one node (graph_shape_ops.c): false when it cannot. */
VF_HIDDEN bool vf__infer_node(const vf__graph *g, const vf__gnode *n, vf__shapes *s);
/* Einsum's output shape and type from its equation over the nx inputs
 * (graph_einsum.c); false when the equation is malformed or disagrees with them. */
VF_HIDDEN bool vf__einsum_shape(const char *eq, const vf__vshape *const *xs, uint32_t nx, vf__vshape *o);
VF_HIDDEN bool vf__vshape_known(const vf__vshape *s);
VF_HIDDEN uint64_t vf__vshape_numel(const vf__vshape *s);
/* Stores kn integer contents for value id; false on no memory. */
VF_HIDDEN bool vf__shapes_setk(vf__shapes *s, uint32_t id, const int64_t *v, int32_t kn);

#endif
