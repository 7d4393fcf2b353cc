/* graph.c — the graph description: arena, name table, topological order,
 * attribute lookups, ONNX element types, and the public graph accessors. */
#include "model/graph.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_BLOCK ((size_t)64 << 10)

vf__graph *vf__graph_new(void) { return calloc(1, sizeof(vf__graph)); }

void vf__graph_free(vf__graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->n_blocks; i++)
        free(g->blocks[i]);
    free(g->blocks);
    free(g->v);
    free(g->node);
    free(g->inputs);
    free(g->outputs);
    free(g->order);
    free(g->hash);
    free(g->ops);
    free(g->op_nodes);
    free(g);
}

void *vf__graph_alloc(vf__graph *g, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n == 0 || n > ((size_t)1 << 40))
        return NULL;
    if (n > g->left) {
        if (!vf__grow((void **)&g->blocks, &g->cap_blocks, g->n_blocks, sizeof *g->blocks))
            return NULL;
        bool own = n > ARENA_BLOCK / 4; /* a big one gets its own block; the current one stays */
        char *b = calloc(1, own ? n : ARENA_BLOCK);
        if (!b)
            return NULL;
        g->blocks[g->n_blocks++] = b;
        if (own)
            return b;
        g->next = b;
        g->left = ARENA_BLOCK;
    }
    char *p = g->next;
    g->next += n;
    g->left -= n;
    return p;
}

const char *vf__graph_strdup(vf__graph *g, const char *s, size_t n)
{
    char *d = vf__graph_alloc(g, n + 1);
    if (d)
        memcpy(d, s, n);
    return d;
}

static uint64_t name_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static bool rehash(vf__graph *g)
{
    size_t cap = g->hash_cap ? g->hash_cap * 2 : 1024;
    uint32_t *h = malloc(cap * sizeof *h);
    if (!h)
        return false;
    memset(h, 0xff, cap * sizeof *h);
    for (size_t i = 0; i < g->n_v; i++) {
        size_t k = name_hash(g->v[i].name, strlen(g->v[i].name)) & (cap - 1);
        while (h[k] != VF_GRAPH_NONE)
            k = (k + 1) & (cap - 1);
        h[k] = (uint32_t)i;
    }
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    return true;
}

static size_t slot(const vf__graph *g, const char *name, size_t len)
{
    size_t k = name_hash(name, len) & (g->hash_cap - 1);
    while (g->hash[k] != VF_GRAPH_NONE) {
        const char *s = g->v[g->hash[k]].name;
        if (strlen(s) == len && !memcmp(s, name, len))
            break;
        k = (k + 1) & (g->hash_cap - 1);
    }
    return k;
}

uint32_t vf__graph_find(const vf__graph *g, const char *name)
{
    if (!g->hash_cap)
        return VF_GRAPH_NONE;
    return g->hash[slot(g, name, strlen(name))];
}

uint32_t vf__graph_value(vf__graph *g, const char *name, size_t len)
{
    if ((g->n_v + 1) * 2 > g->hash_cap && !rehash(g))
        return VF_GRAPH_NONE;
    size_t k = slot(g, name, len);
    if (g->hash[k] != VF_GRAPH_NONE)
        return g->hash[k];
    if (g->n_v >= VF_GRAPH_MAX_VALUES || !vf__grow((void **)&g->v, &g->cap_v, g->n_v, sizeof *g->v))
        return VF_GRAPH_NONE;
    const char *s = vf__graph_strdup(g, name, len);
    if (!s)
        return VF_GRAPH_NONE;
    vf__gvalue *v = &g->v[g->n_v];
    memset(v, 0, sizeof *v);
    v->name = s;
    v->rank = -1;
    v->producer = v->tensor = VF_GRAPH_NONE;
    g->hash[k] = (uint32_t)g->n_v;
    return (uint32_t)g->n_v++;
}

vf__gnode *vf__graph_add_node(vf__graph *g)
{
    if (g->n_node >= VF_GRAPH_MAX_NODES || !vf__grow((void **)&g->node, &g->cap_node, g->n_node, sizeof *g->node))
        return NULL;
    vf__gnode *n = &g->node[g->n_node++];
    memset(n, 0, sizeof *n);
    return n;
}

bool vf__graph_push(uint32_t **arr, size_t *n, size_t *cap, uint32_t v)
{
    if (!vf__grow((void **)arr, cap, *n, sizeof **arr))
        return false;
    (*arr)[(*n)++] = v;
    return true;
}

/* Producers and consumer counts, then Kahn's algorithm over the nodes. */
vf_status vf__graph_sort(vf__graph *g, const char *path, vf_error *err)
{
    vf_status st = VF_OK;
    size_t n = g->n_node;
    uint32_t *pending = calloc(n ? n : 1, sizeof *pending);  /* inputs not yet made */
    uint32_t *users = NULL, *first = calloc(g->n_v + 1, sizeof *first);
    size_t n_edges = 0;
    g->order = malloc((n ? n : 1) * sizeof *g->order);
    if (!pending || !first || !g->order) {
        st = vf__err(err, VF_ENOMEM, path, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < g->node[i].n_out; k++) {
            uint32_t o = g->node[i].out[k];
            if (o == VF_GRAPH_NONE)
                continue;
            vf__gvalue *v = &g->v[o];
            if (v->producer != VF_GRAPH_NONE || v->tensor != VF_GRAPH_NONE || v->is_input) {
                st = vf__err(err, VF_EFORMAT, path, "onnx: value '%s' is made twice (node '%s', %s)", v->name,
                             g->node[i].name, g->node[i].op);
                goto out;
            }
            v->producer = (uint32_t)i;
        }
    /* users, as a CSR table: first[v]..first[v+1] */
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < g->node[i].n_in; k++) {
            uint32_t x = g->node[i].in[k];
            if (x == VF_GRAPH_NONE)
                continue;
            const vf__gvalue *v = &g->v[x];
            if (v->producer == VF_GRAPH_NONE && v->tensor == VF_GRAPH_NONE && !v->is_input) {
                st = vf__err(err, VF_EFORMAT, path, "onnx: node '%s' (%s) reads '%s', which no node, input or "
                             "initializer makes", g->node[i].name, g->node[i].op, v->name);
                goto out;
            }
            if (v->producer != VF_GRAPH_NONE) {
                first[x]++;
                pending[i]++;
                n_edges++;
            }
        }
    users = malloc((n_edges ? n_edges : 1) * sizeof *users);
    if (!users) {
        st = vf__err(err, VF_ENOMEM, path, "out of memory");
        goto out;
    }
    for (size_t i = 0, s = 0; i <= g->n_v; i++) { /* counts -> starts */
        size_t c = i < g->n_v ? first[i] : 0;
        first[i] = (uint32_t)s;
        s += c;
    }
    for (size_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < g->node[i].n_in; k++) {
            uint32_t x = g->node[i].in[k];
            if (x != VF_GRAPH_NONE && g->v[x].producer != VF_GRAPH_NONE)
                users[first[x]++] = (uint32_t)i;
        }
    for (size_t i = g->n_v; i > 0; i--) /* shift starts back */
        first[i] = first[i - 1];
    first[0] = 0;
    /* onnx.proto: "the nodes in the graph, sorted topologically": the file's
     * order is the execution order when it is one; else Kahn's, in file order */
    bool sorted = true;
    for (size_t i = 0; i < n && sorted; i++)
        for (uint32_t k = 0; k < g->node[i].n_in; k++) {
            uint32_t x = g->node[i].in[k];
            if (x != VF_GRAPH_NONE && g->v[x].producer != VF_GRAPH_NONE && g->v[x].producer >= i)
                sorted = false;
        }
    if (sorted) {
        for (size_t i = 0; i < n; i++)
            g->order[i] = (uint32_t)i;
        goto out;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < n; i++)
        if (!pending[i])
            g->order[tail++] = (uint32_t)i;
    while (head < tail) {
        const vf__gnode *nd = &g->node[g->order[head++]];
        for (uint32_t k = 0; k < nd->n_out; k++) {
            uint32_t o = nd->out[k];
            if (o == VF_GRAPH_NONE)
                continue;
            for (uint32_t u = first[o]; u < first[o + 1]; u++)
                if (--pending[users[u]] == 0)
                    g->order[tail++] = users[u];
        }
    }
    if (tail < n) {
        size_t i = 0;
        while (i < n && !pending[i])
            i++;
        st = vf__err(err, VF_EFORMAT, path, "onnx: the graph has a cycle through node '%s' (%s)",
                     i < n ? g->node[i].name : "?", i < n ? g->node[i].op : "?");
    }
out:
    free(pending);
    free(users);
    free(first);
    return st;
}

uint32_t vf__graph_init_behind(const vf__graph *g, uint32_t id)
{
    for (int hops = 0; id != VF_GRAPH_NONE && hops < 64; hops++) {
        const vf__gvalue *v = &g->v[id];
        if (v->tensor != VF_GRAPH_NONE)
            return id;
        if (v->producer == VF_GRAPH_NONE)
            return VF_GRAPH_NONE;
        const vf__gnode *n = &g->node[v->producer];
        if (strcmp(n->op, "Identity") || n->n_in != 1)
            return VF_GRAPH_NONE;
        id = n->in[0];
    }
    return VF_GRAPH_NONE;
}

const vf__gattr *vf__gattr_find(const vf__gnode *n, const char *name)
{
    for (uint32_t i = 0; i < n->n_attr; i++)
        if (n->attr[i].name && !strcmp(n->attr[i].name, name))
            return &n->attr[i];
    return NULL;
}

int64_t vf__gattr_int(const vf__gnode *n, const char *name, int64_t dflt)
{
    const vf__gattr *a = vf__gattr_find(n, name);
    return a ? a->i : dflt;
}

float vf__gattr_float(const vf__gnode *n, const char *name, float dflt)
{
    const vf__gattr *a = vf__gattr_find(n, name);
    return a ? a->f : dflt;
}

/* Bits per element of each TensorProto.DataType (onnx.proto; 0 = none). */
static const uint8_t elem_bits[VF_ONNX_ELEM_MAX + 1] = {
    [1] = 32, [2] = 8, [3] = 8, [4] = 16, [5] = 16, [6] = 32, [7] = 64, [9] = 8, [10] = 16, [11] = 64,
    [12] = 32, [13] = 64, [14] = 64, [15] = 128, [16] = 16, [17] = 8, [18] = 8, [19] = 8, [20] = 8,
    [21] = 4, [22] = 4, [23] = 4,
};

uint64_t vf__onnx_elem_bytes(int32_t elem, uint64_t n)
{
    if (elem <= 0 || elem > VF_ONNX_ELEM_MAX || !elem_bits[elem])
        return 0;
    if (elem_bits[elem] == 4)
        return n / 2 + (n & 1);
    uint64_t b;
    return vf__mul_overflow(n, elem_bits[elem] / 8u, &b) ? UINT64_MAX : b;
}

vf_dtype vf__onnx_dtype(int32_t elem)
{
    static const vf_dtype map[VF_ONNX_ELEM_MAX + 1] = {
        [0] = VF_DTYPE_UNKNOWN, [1] = VF_DTYPE_F32, [2] = VF_DTYPE_U8, [3] = VF_DTYPE_I8, [4] = VF_DTYPE_U16,
        [5] = VF_DTYPE_I16, [6] = VF_DTYPE_I32, [7] = VF_DTYPE_I64, [8] = VF_DTYPE_UNKNOWN, [9] = VF_DTYPE_BOOL,
        [10] = VF_DTYPE_F16, [11] = VF_DTYPE_F64, [12] = VF_DTYPE_U32, [13] = VF_DTYPE_U64, [14] = VF_DTYPE_C64,
        [15] = VF_DTYPE_UNKNOWN, [16] = VF_DTYPE_BF16, [17] = VF_DTYPE_F8_E4M3, [18] = VF_DTYPE_F8_E4M3FNUZ,
        [19] = VF_DTYPE_F8_E5M2, [20] = VF_DTYPE_F8_E5M2FNUZ, [21] = VF_DTYPE_UNKNOWN, [22] = VF_DTYPE_UNKNOWN,
        [23] = VF_DTYPE_F4,
    };
    return elem > 0 && elem <= VF_ONNX_ELEM_MAX ? map[elem] : VF_DTYPE_UNKNOWN;
}

bool vf__onnx_is_float(int32_t elem)
{
    return elem == 1 || elem == 10 || elem == 11 || elem == 16 || (elem >= 17 && elem <= 20) || elem == 23;
}

bool vf__graph_histogram(vf__graph *g)
{
    size_t cap = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        size_t k = 0;
        while (k < g->n_ops && strcmp(g->ops[k], g->node[i].op))
            k++;
        if (k == g->n_ops) {
            size_t c2 = cap;
            if (!vf__grow((void **)&g->ops, &cap, g->n_ops, sizeof *g->ops) ||
                !vf__grow((void **)&g->op_nodes, &c2, g->n_ops, sizeof *g->op_nodes))
                return false;
            g->ops[g->n_ops] = g->node[i].op;
            g->op_nodes[g->n_ops++] = 0;
        }
        g->op_nodes[k]++;
        /* keep most frequent first: bubble the counted one up */
        while (k > 0 && g->op_nodes[k] > g->op_nodes[k - 1]) {
            size_t t = g->op_nodes[k];
            const char *o = g->ops[k];
            g->op_nodes[k] = g->op_nodes[k - 1], g->ops[k] = g->ops[k - 1];
            g->op_nodes[k - 1] = t, g->ops[k - 1] = o;
            k--;
        }
    }
    return true;
}

/* ---- public accessors ---- */

bool vf_model_graph_info(const vf_model *m, vf_graph_info *out)
{
    if (!m || !m->graph || !out)
        return false;
    const vf__graph *g = m->graph;
    memset(out, 0, sizeof *out);
    out->ir_version = g->ir_version;
    out->opset = g->opset;
    out->producer = g->producer;
    out->nodes = g->n_node;
    out->values = g->n_v;
    out->inputs = g->n_inputs;
    out->outputs = g->n_outputs;
    out->initializers = m->n_tensors;
    out->op_types = g->n_ops;
    out->inline_bytes = g->inline_bytes;
    out->external_bytes = g->external_bytes;
    out->aliases = g->aliases;
    out->alias_elements = g->alias_elements;
    out->alias_bytes = g->alias_bytes;
    out->bytes_read = m->graph_bytes_read;
    return true;
}

bool vf_model_graph_io(const vf_model *m, bool output, size_t i, vf_graph_io *out)
{
    if (!m || !m->graph || !out)
        return false;
    const vf__graph *g = m->graph;
    if (i >= (output ? g->n_outputs : g->n_inputs))
        return false;
    const vf__gvalue *v = &g->v[output ? g->outputs[i] : g->inputs[i]];
    memset(out, 0, sizeof *out);
    out->name = v->name;
    out->dtype = vf__onnx_dtype(v->elem);
    out->rank = v->rank;
    for (int32_t d = 0; d < v->rank && d < VF_MAX_DIMS; d++) {
        out->dims[d] = v->dims[d];
        out->dim_params[d] = v->sym[d];
    }
    return true;
}

const char *vf_model_graph_op(const vf_model *m, size_t i, size_t *nodes)
{
    if (!m || !m->graph || i >= m->graph->n_ops)
        return NULL;
    if (nodes)
        *nodes = m->graph->op_nodes[i];
    return m->graph->ops[i];
}
