/* graph_live.c — the peak of live activations along the graph's order, as
 * PyTorch eager runs the module the graph was exported from (runtime
 * generic): each tensor lives from the node that makes it to its last
 * reader, with what eager execution adds to that ideal (docs/memory-model.md,
 * "Networks by their graph"):
 *  - views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Transpose,
 *    Slice, Split, Gather of one index) share their input's storage, a
 *    reshape of a strided view copies; activations torchvision runs in place
 *    (ReLU, ReLU6 = Clip, LeakyReLU, Hardswish, Hardsigmoid, ELU, SiLU) and a
 *    linear's bias write into an input that dies at that node; operators the
 *    exporter decomposed (graph_fuse.c) make one tensor;
 *  - a module's Python locals live until it returns (hold_locals);
 *  - the graph inputs stay alive for the whole forward: the caller holds them;
 *  - a module's arguments stay alive until the module returns (its caller
 *    holds them): read from the scoped node names torch >= 2.0 writes
 *    ("/layer1/layer1.0/conv1/Conv"); in a graph without scopes, the two
 *    places where exported networks show it: a convolution's or matmul's
 *    input is kept through the normalization that reads its output (the
 *    argument of a Conv-BN-activation block), and the operands of a Concat
 *    through the Concat's first reader (a skip list or a local holding them
 *    until the call that consumes the concatenation returns: U-Net).
 * Kernel scratch (cuDNN/oneDNN workspaces) is not a tensor of the graph and
 * is not counted here. */
#include "memory/graph/graph_mem.h"

#include <stdlib.h>
#include <string.h>

static bool is_op(const vf__gnode *n, const char *op) { return !strcmp(n->op, op); }

bool vf__graph_is_view(const vf__gnode *n)
{
    return is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") || is_op(n, "Unsqueeze") ||
           is_op(n, "Identity") || is_op(n, "Transpose");
}

/* F.dropout with p = 0 (torchvision's swin attention_dropout=0.0, written
 * as Dropout(ratio 0, training_mode true)): ATen's _dropout_impl returns its
 * input itself when p == 0 (ATen/native/Dropout.cpp), in training too. */
bool vf__graph_dropout_identity(const vf__shapes *s, const vf__gnode *n)
{
    if (!is_op(n, "Dropout") || !n->n_in)
        return false;
    if (n->n_in > 1 && n->in[1] != VF_GRAPH_NONE) {
        const vf__vshape *r = &s->v[n->in[1]];
        return !r->dyn && r->kf && r->kn == 1 && r->kf[0] == 0.0;
    }
    const vf__gattr *a = vf__gattr_find(n, "ratio"); /* before opset 12 */
    return a && a->f == 0.0f;
}

static bool inplace_op(const vf__gnode *n)
{
    return is_op(n, "Relu") || is_op(n, "Clip") || is_op(n, "LeakyRelu") || is_op(n, "HardSwish") ||
           is_op(n, "HardSigmoid") || is_op(n, "Elu");
}

static bool is_norm(const vf__gnode *n)
{
    return is_op(n, "BatchNormalization") || is_op(n, "InstanceNormalization") ||
           is_op(n, "LayerNormalization") || is_op(n, "GroupNormalization");
}

/* The last reader position of each value (in order positions), and the
 * first reader. */
static void readers(const vf__graph *g, const vf__shapes *s, vf__live *L)
{
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x == VF_GRAPH_NONE || !s->v[x].dyn)
                continue;
            L->last[x] = (uint32_t)p;
            if (L->first[x] == VF_GRAPH_NONE)
                L->first[x] = (uint32_t)p;
        }
    }
}

/* Module scopes: the deepest "/a/b" prefixes of node names; a value read in
 * scope S but made outside it lives until S's last node. */
static bool scoped(const vf__graph *g)
{
    size_t with = 0, ops = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const vf__gnode *n = &g->node[i];
        if (is_op(n, "Identity") || is_op(n, "Constant"))
            continue; /* the exporter's copies of initializers and constants carry no scope */
        ops++;
        with += n->name[0] == '/' && strchr(n->name + 1, '/');
    }
    return ops && with * 2 > ops;
}

static uint64_t prefix_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h | 1;
}

typedef struct scope_tab {
    uint64_t *key;
    uint32_t *last;
    size_t cap;
} scope_tab;

static uint32_t *scope_slot(scope_tab *t, uint64_t h)
{
    size_t k = h & (t->cap - 1);
    while (t->key[k] && t->key[k] != h)
        k = (k + 1) & (t->cap - 1);
    t->key[k] = h;
    return &t->last[k];
}

/* Length of a node name's module part ("/a/b/Conv" -> "/a/b"). */
static size_t dir_len(const char *nm)
{
    const char *q = strrchr(nm, '/');
    return q ? (size_t)(q - nm) : 0;
}

/* Common prefix of a and b, cut at a module boundary, at most n. */
static size_t common_dir(const char *a, const char *b, size_t n)
{
    size_t k = 0, last = 0;
    while (k < n && a[k] && a[k] == b[k]) {
        k++;
        if (a[k] == '/' || (k == n && (b[k] == '/' || !b[k])))
            last = k;
    }
    return last;
}

/* Whether names a and b (both below the scope of length n) are in the same submodule of it. */
static bool same_child(const char *a, const char *b, size_t n)
{
    size_t la = strcspn(a + n + 1, "/"), lb = strcspn(b + n + 1, "/");
    return la == lb && !strncmp(a + n + 1, b + n + 1, la);
}

/* Python locals of a module's forward, which live until it returns: a
 * functional op's result read by a submodule (DenseNet's torch.cat in
 * bn_function, held through norm1, relu1 and conv1), and one result read by
 * two submodules (SqueezeNet's Fire: the squeeze output read by both expands,
 * held through their torch.cat). The top level is left out. */
static void hold_locals(const vf__graph *g, const vf__shapes *s, vf__live *L, scope_tab *t, const uint32_t *bound)
{
    size_t nv = g->n_v;
    uint32_t *cp = malloc((nv ? nv : 1) * sizeof *cp);
    uint32_t *first = malloc((nv ? nv : 1) * sizeof *first); /* a reader in a submodule of the common scope */
    uint8_t *two = calloc(nv ? nv : 1, 1), *deep = calloc(nv ? nv : 1, 1);
    if (!cp || !first || !two || !deep)
        goto out;
    for (size_t i = 0; i < nv; i++) {
        uint32_t pr = g->v[i].producer;
        cp[i] = pr != VF_GRAPH_NONE && g->node[pr].name[0] == '/' ? (uint32_t)dir_len(g->node[pr].name) : 0;
        first[i] = VF_GRAPH_NONE;
    }
    for (size_t p = 0; p < g->n_node; p++) { /* the common scope of the producer and every reader */
        const vf__gnode *n = &g->node[g->order[p]];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x == VF_GRAPH_NONE || !s->v[x].dyn || !cp[x])
                continue;
            cp[x] = (uint32_t)common_dir(g->node[g->v[x].producer].name, n->name, cp[x]);
        }
    }
    for (size_t p = 0; p < g->n_node; p++) { /* readers inside submodules of it: how many, which */
        uint32_t id = g->order[p];
        const vf__gnode *n = &g->node[id];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x == VF_GRAPH_NONE || !s->v[x].dyn || !cp[x] || dir_len(n->name) <= cp[x] ||
                strncmp(n->name, g->node[g->v[x].producer].name, cp[x]))
                continue;
            deep[x] = 1;
            if (first[x] == VF_GRAPH_NONE)
                first[x] = id;
            else if (!same_child(n->name, g->node[first[x]].name, cp[x]))
                two[x] = 1;
        }
    }
    for (size_t i = 0; i < nv; i++) {
        if (!cp[i] || !deep[i] || bound[i] != VF_GRAPH_NONE)
            continue; /* a loop's local: bound as long as graph_loops.c says */
        const char *prod = g->node[g->v[i].producer].name;
        bool functional = dir_len(prod) == cp[i];
        if (!functional && !two[i])
            continue;
        uint32_t end = *scope_slot(t, prefix_hash(prod, cp[i]));
        if (end > L->hold[i])
            L->hold[i] = end;
    }
out:
    free(cp);
    free(first);
    free(two);
    free(deep);
}

static void hold_scopes(const vf__graph *g, const vf__shapes *s, vf__live *L, const uint32_t *bound)
{
    scope_tab t = {0};
    size_t need = 16;
    while (need < g->n_node * 8)
        need *= 2;
    t.cap = need;
    t.key = calloc(t.cap, sizeof *t.key);
    t.last = calloc(t.cap, sizeof *t.last);
    if (!t.key || !t.last)
        goto out; /* no holds: the ideal lifetimes */
    for (size_t p = 0; p < g->n_node; p++) {
        const char *nm = g->node[g->order[p]].name;
        for (const char *q = strchr(nm + 1, '/'); nm[0] == '/' && q; q = strchr(q + 1, '/'))
            *scope_slot(&t, prefix_hash(nm, (size_t)(q - nm))) = (uint32_t)p;
    }
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        if (n->name[0] != '/')
            continue;
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x == VF_GRAPH_NONE || !s->v[x].dyn)
                continue;
            const char *prod = g->v[x].producer != VF_GRAPH_NONE ? g->node[g->v[x].producer].name : "";
            /* every enclosing scope of the reader that the producer is not inside */
            for (const char *q = strchr(n->name + 1, '/'); q; q = strchr(q + 1, '/')) {
                size_t len = (size_t)(q - n->name);
                if (!strncmp(prod, n->name, len) && prod[len] == '/')
                    continue;
                uint32_t end = *scope_slot(&t, prefix_hash(n->name, len));
                if (end > L->hold[x])
                    L->hold[x] = end;
            }
        }
    }
    hold_locals(g, s, L, &t, bound);
out:
    free(t.key);
    free(t.last);
}

/* Without scopes: conv/matmul inputs through their normalization; Concat
 * operands through the Concat's first reader. */
static void hold_patterns(const vf__graph *g, const vf__shapes *s, vf__live *L)
{
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        bool lin = is_op(n, "Conv") || is_op(n, "ConvTranspose") || is_op(n, "Gemm") || is_op(n, "MatMul");
        bool cat = is_op(n, "Concat");
        if ((!lin && !cat) || !n->n_out || n->out[0] == VF_GRAPH_NONE)
            continue;
        uint32_t o = n->out[0], until = VF_GRAPH_NONE;
        if (cat) {
            until = L->first[o];
        } else if (L->first[o] != VF_GRAPH_NONE && L->first[o] == L->last[o] &&
                   is_norm(&g->node[g->order[L->first[o]]])) {
            until = L->first[o];
        }
        if (until == VF_GRAPH_NONE)
            continue;
        for (uint32_t k = 0; k < (lin ? 1u : n->n_in); k++) {
            uint32_t x = n->in[k];
            if (x != VF_GRAPH_NONE && s->v[x].dyn && until > L->hold[x])
                L->hold[x] = until;
        }
    }
}

/* The last position each value is needed at: its readers, its holds, its
 * producer; graph inputs and outputs to the end. */
static void value_ends(const vf__graph *g, const vf__shapes *s, vf__live *L)
{
    uint32_t end_all = g->n_node ? (uint32_t)g->n_node - 1 : 0;
    for (size_t i = 0; i < g->n_v; i++) {
        uint32_t e = L->last[i] != VF_GRAPH_NONE ? L->last[i] : 0;
        if (g->v[i].producer != VF_GRAPH_NONE && L->pos[g->v[i].producer] > e)
            e = L->pos[g->v[i].producer];
        if (L->hold[i] > e)
            e = L->hold[i];
        if (s->v[i].dyn && (g->v[i].is_input || g->v[i].is_output))
            e = end_all;
        L->vend[i] = e;
    }
}

/* A permutation that moves no dimension of size above 1: the result is
 * still contiguous (a transpose of a batch of one, for instance). */
static bool keeps_layout(const vf__gnode *n, const vf__vshape *x)
{
    const vf__gattr *pa = vf__gattr_find(n, "perm");
    if (!pa || !pa->ints || x->rank < 0 || pa->n_ints != (uint32_t)x->rank)
        return false;
    int64_t prev = -1;
    for (uint32_t i = 0; i < pa->n_ints; i++) {
        int64_t d = pa->ints[i];
        if (d < 0 || d >= x->rank)
            return false;
        if (x->d[d] == 1)
            continue;
        if (d < prev)
            return false;
        prev = d;
    }
    return true;
}

/* Only the outermost dimension of size above 1 differs: a slice of it is contiguous. */
static bool outer_slice(const vf__vshape *x, const vf__vshape *o)
{
    if (x->rank != o->rank || x->rank < 1)
        return false;
    int32_t k = 0;
    while (k < x->rank - 1 && x->d[k] == 1)
        k++;
    for (int32_t i = k + 1; i < x->rank; i++)
        if (x->d[i] != o->d[i])
            return false;
    return true;
}

/* PyTorch's view ops: reshape/flatten/squeeze/unsqueeze (a reshape of a
 * strided view copies), permute/transpose, narrow/chunk/split and select
 * (Gather of one constant index). Sets strided[o]. */
static bool view_of(const vf__graph *g, const vf__shapes *s, vf__live *L, const vf__gnode *n, uint32_t x, uint32_t o)
{
    const vf__vshape *xs = &s->v[x], *os = &s->v[o];
    if (is_op(n, "Reshape") || is_op(n, "Flatten"))
        return !L->strided[x];
    if (is_op(n, "Squeeze") || is_op(n, "Unsqueeze") || is_op(n, "Identity") || vf__graph_dropout_identity(s, n)) {
        L->strided[o] = L->strided[x];
        return true;
    }
    if (is_op(n, "Transpose")) {
        L->strided[o] = L->strided[x] || !keeps_layout(n, xs);
        return true;
    }
    if (is_op(n, "Slice") || is_op(n, "Split")) {
        L->strided[o] = L->strided[x] || !outer_slice(xs, os);
        return true;
    }
    if (is_op(n, "Gather") && n->n_in == 2 && n->in[1] != VF_GRAPH_NONE && !s->v[n->in[1]].dyn &&
        s->v[n->in[1]].rank == 0) {
        L->strided[o] = true;
        return true;
    }
    (void)g;
    return false;
}

/* A bias added to a matmul's output: at::linear adds it in place (add_ or addmm). */
static bool bias_add(const vf__graph *g, const vf__shapes *s, const vf__gnode *n, uint32_t *x)
{
    if (!is_op(n, "Add") || n->n_in != 2 || n->in[0] == VF_GRAPH_NONE || n->in[1] == VF_GRAPH_NONE)
        return false;
    uint32_t a = n->in[0], b = n->in[1];
    if (!s->v[a].dyn)
        a = n->in[1], b = n->in[0];
    if (!s->v[a].dyn || s->v[b].dyn || g->v[a].producer == VF_GRAPH_NONE)
        return false;
    const vf__gnode *pn = &g->node[g->v[a].producer];
    *x = a;
    return is_op(pn, "MatMul") || is_op(pn, "Gemm");
}

static void share(vf__live *L, uint32_t o, uint32_t sx)
{
    L->stor[o] = sx;
    L->sbytes[o] = 0;
    if (L->end[o] > L->end[sx])
        L->end[sx] = L->end[o];
}

/* Storage of each value: views share; activations torchvision runs in place
 * (and SiLU) and linear biases reuse an input that dies there; the nodes
 * inside one decomposed operator make nothing. end[st] grows with every
 * value that comes to share st. */
static void storages(const vf__graph *g, const vf__shapes *s, vf__live *L)
{
    for (size_t i = 0; i < g->n_v; i++) {
        L->stor[i] = (uint32_t)i;
        L->sbytes[i] = s->v[i].dyn ? s->bytes[i] : 0;
        L->end[i] = L->vend[i];
    }
    for (size_t p = 0; p < g->n_node; p++) {
        uint32_t id = g->order[p];
        const vf__gnode *n = &g->node[id];
        if (L->fu.inner[id]) {
            for (uint32_t k = 0; k < n->n_out; k++)
                if (n->out[k] != VF_GRAPH_NONE)
                    L->sbytes[n->out[k]] = 0;
            continue;
        }
        if (!n->n_out || n->out[0] == VF_GRAPH_NONE || !n->n_in)
            continue;
        uint8_t kind = L->fu.kind[id];
        uint32_t x = kind ? L->fu.x[id] : n->in[0];
        bool bias = !kind && bias_add(g, s, n, &x);
        if (x == VF_GRAPH_NONE || !s->v[x].dyn)
            continue;
        uint32_t sx = L->stor[x];
        if (!kind && is_op(n, "Split")) {
            for (uint32_t k = 0; k < n->n_out; k++)
                if (n->out[k] != VF_GRAPH_NONE && s->v[n->out[k]].dyn && view_of(g, s, L, n, x, n->out[k])) {
                    L->view[n->out[k]] = 1;
                    share(L, n->out[k], sx);
                }
            continue;
        }
        uint32_t o = n->out[0];
        if (!s->v[o].dyn)
            continue;
        bool view = !kind && !bias && view_of(g, s, L, n, x, o);
        bool inplace = !view && (kind == VF_FUSE_SILU || (!kind && (inplace_op(n) || bias))) && L->end[sx] == p &&
                       !g->v[x].is_input && s->bytes[x] == s->bytes[o];
        L->view[o] = view;
        if (view || inplace)
            share(L, o, sx);
    }
}

/* A decomposed operator's input lives to its last node. */
static void hold_fused(const vf__graph *g, vf__live *L)
{
    for (size_t i = 0; i < g->n_node; i++) {
        uint32_t x = L->fu.x[i];
        if (x != VF_GRAPH_NONE && L->pos[i] > L->hold[x])
            L->hold[x] = L->pos[i];
    }
}

vf_status vf__live_init(const vf__graph *g, const vf__shapes *s, vf__live *L)
{
    memset(L, 0, sizeof *L);
    size_t nv = g->n_v ? g->n_v : 1, nn = g->n_node ? g->n_node : 1;
    L->last = malloc(nv * sizeof *L->last);
    L->first = malloc(nv * sizeof *L->first);
    L->hold = calloc(nv, sizeof *L->hold);
    L->stor = malloc(nv * sizeof *L->stor);
    L->end = calloc(nv, sizeof *L->end);
    L->vend = calloc(nv, sizeof *L->vend);
    L->sbytes = malloc(nv * sizeof *L->sbytes);
    L->view = calloc(nv, 1);
    L->strided = calloc(nv, 1);
    L->pos = malloc(nn * sizeof *L->pos);
    if (!L->last || !L->first || !L->hold || !L->stor || !L->end || !L->vend || !L->sbytes || !L->view ||
        !L->strided || !L->pos) {
        vf__live_free(L);
        return VF_ENOMEM;
    }
    memset(L->last, 0xff, nv * sizeof *L->last);
    memset(L->first, 0xff, nv * sizeof *L->first);
    for (size_t p = 0; p < g->n_node; p++)
        L->pos[g->order[p]] = (uint32_t)p;
    if (vf__fuse_find(g, s, L->pos, &L->fu) != VF_OK) {
        vf__live_free(L);
        return VF_ENOMEM;
    }
    readers(g, s, L);
    hold_fused(g, L);
    L->scoped = scoped(g);
    if (L->scoped) {
        uint32_t *bound = malloc(nv * sizeof *bound);
        if (!bound || vf__live_loops(g, s, L, bound) != VF_OK) {
            free(bound);
            vf__live_free(L);
            return VF_ENOMEM;
        }
        hold_scopes(g, s, L, bound);
        for (size_t i = 0; i < g->n_v; i++)
            if (bound[i] != VF_GRAPH_NONE && bound[i] > L->hold[i])
                L->hold[i] = bound[i];
        free(bound);
    } else
        hold_patterns(g, s, L);
    value_ends(g, s, L);
    storages(g, s, L);
    return VF_OK;
}

void vf__live_free(vf__live *L)
{
    free(L->last);
    free(L->first);
    free(L->hold);
    free(L->stor);
    free(L->end);
    free(L->vend);
    free(L->sbytes);
    free(L->view);
    free(L->strided);
    vf__fuse_free(&L->fu);
    free(L->pos);
    memset(L, 0, sizeof *L);
}

/* Walks the order: each storage allocated where its owner is made (graph
 * inputs before the first node), freed after the last position it is needed
 * at; the peak is taken with a node's outputs made and its inputs alive.
 * keep[st] (may be NULL) marks storages kept past the forward (training:
 * saved for backward): they are never freed here. */
uint64_t vf__live_peak(const vf__graph *g, const vf__shapes *s, const vf__live *L, const uint8_t *keep,
                       uint32_t *peak_node, uint64_t *input_bytes)
{
    uint64_t live = 0, peak, in_b = 0;
    size_t nn = g->n_node;
    uint64_t *freed = calloc(nn ? nn : 1, sizeof *freed);
    for (size_t i = 0; i < g->n_inputs; i++)
        in_b += L->sbytes[L->stor[g->inputs[i]]];
    for (size_t i = 0; freed && i < g->n_v; i++)
        if (L->stor[i] == i && L->sbytes[i] && !(keep && keep[i]) && L->end[i] < nn)
            freed[L->end[i]] += L->sbytes[i];
    live = peak = in_b;
    *peak_node = VF_GRAPH_NONE;
    for (size_t p = 0; p < nn; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        for (uint32_t k = 0; k < n->n_out; k++)
            if (n->out[k] != VF_GRAPH_NONE && L->stor[n->out[k]] == n->out[k])
                live += L->sbytes[n->out[k]];
        if (live > peak) {
            peak = live;
            *peak_node = g->order[p];
        }
        live -= freed ? freed[p] : 0;
    }
    (void)s;
    free(freed);
    *input_bytes = in_b;
    return peak;
}
