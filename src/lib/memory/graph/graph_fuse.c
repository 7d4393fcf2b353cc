/* graph_fuse.c — the PyTorch operators an exported graph spells as several
 * nodes, found by their pattern, so that liveness and saved tensors are
 * those of the one operator PyTorch ran (docs/memory-model.md, "Operators
 * the exporter decomposes"):
 *  - LayerNorm (torch.onnx below opset 17): ReduceMean, Sub, Pow, ReduceMean,
 *    Add eps, Sqrt, Div [, Mul weight, Add bias] = native_layer_norm, whose
 *    backward keeps its input, mean and rstd (derivatives.yaml:
 *    native_layer_norm_backward(grad, input, normalized_shape, result1,
 *    result2, weight, bias, ...));
 *  - pointwise functions of one tensor: nodes that read only that tensor,
 *    each other and constants, with one output leaving them, and the tensor
 *    read by two of them (GELU's erf and tanh forms, SiLU = x * sigmoid(x),
 *    Mish, decomposed hardswish): one kernel whose backward keeps its input
 *    (gelu_backward(grad, self), silu_backward(grad, self),
 *    mish_backward(grad, self), hardswish_backward(grad, self));
 *  - Pad then AveragePool/MaxPool: a pooling with padding, keeping its
 *    unpadded input (avg_pool2d_backward(grad, self, ...)).
 * The nodes inside such an operator other than its last make no tensor of
 * their own (they live inside one kernel); its input stays alive to the
 * last node. */
#include "memory/graph/graph_mem.h"

#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 16u

static bool is_op(const vf__gnode *n, const char *op) { return !strcmp(n->op, op); }

static bool pointwise(const vf__gnode *n)
{
    static const char *const ops[] = {"Abs",  "Add",  "Clip", "Div",     "Erf",     "Exp",  "HardSigmoid",
                                      "Log",  "Max",  "Min",  "Mul",     "Neg",     "Pow",  "Reciprocal",
                                      "Relu", "Sigmoid", "Softplus", "Sqrt", "Sub", "Tanh"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (is_op(n, ops[i]))
            return true;
    return false;
}

typedef struct fctx {
    const vf__graph *g;
    const vf__shapes *s;
    vf__fuse *f;
    const uint32_t *pos;   /* per node: position in the order */
    uint32_t *nread;       /* per value: reader nodes (a node reading twice counted twice) */
    uint32_t *rstart;      /* per value: its readers at rd[rstart[v] .. rstart[v] + nread[v]) */
    uint32_t *rd;
} fctx;

static bool dyn(const fctx *c, uint32_t v) { return v != VF_GRAPH_NONE && c->s->v[v].dyn; }

/* The single node reading v, or NONE. */
static uint32_t only_reader(const fctx *c, uint32_t v)
{
    return v != VF_GRAPH_NONE && c->nread[v] == 1 && !c->g->v[v].is_output ? c->rd[c->rstart[v]] : VF_GRAPH_NONE;
}

static uint32_t out0(const vf__gnode *n) { return n->n_out ? n->out[0] : VF_GRAPH_NONE; }

/* The one reader of v if it is op with v as input k; NONE otherwise. */
static uint32_t next_op(const fctx *c, uint32_t v, const char *op)
{
    uint32_t r = only_reader(c, v);
    if (r == VF_GRAPH_NONE || c->f->kind[r] || !is_op(&c->g->node[r], op))
        return VF_GRAPH_NONE;
    return r;
}

/* The other input of a two-input node than v, when it is no activation (a weight, a constant). */
static bool other_const(const fctx *c, const vf__gnode *n, uint32_t v)
{
    if (n->n_in != 2)
        return false;
    uint32_t o = n->in[0] == v ? n->in[1] : n->in[0];
    return (n->in[0] == v || n->in[1] == v) && !dyn(c, o);
}

static void mark(fctx *c, const uint32_t *mem, uint32_t k, uint32_t last, uint32_t x, uint8_t kind)
{
    for (uint32_t i = 0; i < k; i++) {
        c->f->kind[mem[i]] = kind;
        c->f->inner[mem[i]] = mem[i] != last;
    }
    c->f->x[last] = x;
    c->f->count[kind]++;
}

/* Sub(X, ReduceMean(X)) -> Pow(., 2) -> ReduceMean -> Add eps -> Sqrt -> Div(Sub, Sqrt) [-> Mul w] [-> Add b]. */
static void layernorm_at(fctx *c, uint32_t sub)
{
    const vf__graph *g = c->g;
    const vf__gnode *n = &g->node[sub];
    if (n->n_in != 2 || !dyn(c, n->in[0]) || !dyn(c, n->in[1]) || g->v[n->in[1]].producer == VF_GRAPH_NONE)
        return;
    uint32_t x = n->in[0], mean = g->v[n->in[1]].producer;
    const vf__gnode *mn = &g->node[mean];
    if (!is_op(mn, "ReduceMean") || mn->n_in < 1 || mn->in[0] != x || only_reader(c, out0(mn)) != sub)
        return;
    uint32_t d = out0(n);
    if (d == VF_GRAPH_NONE || c->nread[d] != 2 || g->v[d].is_output)
        return;
    uint32_t pw = VF_GRAPH_NONE, dv = VF_GRAPH_NONE;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t r = c->rd[c->rstart[d] + i];
        if (is_op(&g->node[r], "Pow") && g->node[r].n_in >= 1 && g->node[r].in[0] == d)
            pw = r;
        else if (is_op(&g->node[r], "Div") && g->node[r].n_in == 2 && g->node[r].in[0] == d)
            dv = r;
    }
    if (pw == VF_GRAPH_NONE || dv == VF_GRAPH_NONE || c->f->kind[pw] || c->f->kind[dv])
        return;
    uint32_t var = next_op(c, out0(&g->node[pw]), "ReduceMean");
    uint32_t eps = var != VF_GRAPH_NONE ? next_op(c, out0(&g->node[var]), "Add") : VF_GRAPH_NONE;
    uint32_t sq = eps != VF_GRAPH_NONE ? next_op(c, out0(&g->node[eps]), "Sqrt") : VF_GRAPH_NONE;
    if (sq == VF_GRAPH_NONE || !other_const(c, &g->node[eps], out0(&g->node[var])) ||
        only_reader(c, out0(&g->node[sq])) != dv || g->node[dv].in[1] != out0(&g->node[sq]))
        return;
    uint32_t mem[MAX_MEMBERS] = {mean, sub, pw, var, eps, sq, dv}, k = 7, last = dv;
    uint32_t w = next_op(c, out0(&g->node[dv]), "Mul");
    if (w != VF_GRAPH_NONE && other_const(c, &g->node[w], out0(&g->node[dv]))) {
        mem[k++] = last = w;
        uint32_t b = next_op(c, out0(&g->node[w]), "Add");
        if (b != VF_GRAPH_NONE && other_const(c, &g->node[b], out0(&g->node[w])))
            mem[k++] = last = b;
    }
    mark(c, mem, k, last, x, VF_FUSE_LAYERNORM);
}

/* Pad -> AveragePool/MaxPool: the exporter's spelling of a pooling's
 * padding (avg_pool2d with count_include_pad): one pooling, which keeps its
 * unpadded input (avg_pool2d_backward(grad, self, ...)). */
static void pool_at(fctx *c, uint32_t pad)
{
    const vf__gnode *n = &c->g->node[pad];
    uint32_t o = out0(n), r = only_reader(c, o);
    if (!n->n_in || !dyn(c, n->in[0]) || r == VF_GRAPH_NONE || c->f->kind[r] ||
        !(is_op(&c->g->node[r], "AveragePool") || is_op(&c->g->node[r], "MaxPool")) || !c->g->node[r].n_in ||
        c->g->node[r].in[0] != o)
        return;
    uint32_t mem[2] = {pad, r};
    mark(c, mem, 2, r, n->in[0], VF_FUSE_POOL);
}

static bool member(const uint32_t *mem, uint32_t k, uint32_t node)
{
    for (uint32_t i = 0; i < k; i++)
        if (mem[i] == node)
            return true;
    return false;
}

/* Every activation input of node is x or made by a member. */
static bool inside(const fctx *c, const uint32_t *mem, uint32_t k, const vf__gnode *n, uint32_t x)
{
    for (uint32_t i = 0; i < n->n_in; i++) {
        uint32_t v = n->in[i];
        if (!dyn(c, v) || v == x)
            continue;
        uint32_t p = c->g->v[v].producer;
        if (p == VF_GRAPH_NONE || !member(mem, k, p))
            return false;
    }
    return true;
}

static bool candidate(const fctx *c, const uint32_t *mem, uint32_t k, uint32_t r, uint32_t x)
{
    return !c->f->kind[r] && pointwise(&c->g->node[r]) && !member(mem, k, r) && inside(c, mem, k, &c->g->node[r], x);
}

/* Grows the set of pointwise nodes reading x, each other and constants, to
 * a fixpoint; 0 unless two of them read x. */
static uint32_t grow(const fctx *c, uint32_t x, uint32_t *mem)
{
    const vf__graph *g = c->g;
    uint32_t k = 0;
    for (bool more = true; more && k < MAX_MEMBERS;) {
        more = false;
        for (uint32_t j = 0; j <= k && k < MAX_MEMBERS; j++) {
            uint32_t v = j == 0 ? x : out0(&g->node[mem[j - 1]]);
            for (uint32_t i = 0; v != VF_GRAPH_NONE && i < c->nread[v] && k < MAX_MEMBERS; i++) {
                uint32_t r = c->rd[c->rstart[v] + i];
                if (candidate(c, mem, k, r, x)) {
                    mem[k++] = r;
                    more = true;
                }
            }
        }
    }
    uint32_t direct = 0;
    for (uint32_t j = 0; j < k; j++)
        for (uint32_t i = 0; i < g->node[mem[j]].n_in; i++)
            if (g->node[mem[j]].in[i] == x) {
                direct++;
                break;
            }
    return direct >= 2 ? k : 0;
}

/* x -> a pointwise function of x alone: one output leaves the members, made
 * by the last of them. */
static void pointwise_at(fctx *c, uint32_t x)
{
    const vf__graph *g = c->g;
    uint32_t mem[MAX_MEMBERS], k = grow(c, x, mem);
    if (k < 2 || k >= MAX_MEMBERS)
        return;
    uint32_t last = mem[0];
    for (uint32_t i = 1; i < k; i++)
        if (c->pos[mem[i]] > c->pos[last])
            last = mem[i];
    bool erf = false, tanh = false, sig = false, softplus = false;
    for (uint32_t i = 0; i < k; i++) {
        const vf__gnode *n = &g->node[mem[i]];
        if (n->n_out != 1)
            return;
        uint32_t o = n->out[0];
        if (mem[i] != last) { /* read by members only */
            if (o == VF_GRAPH_NONE || g->v[o].is_output)
                return;
            for (uint32_t r = 0; r < c->nread[o]; r++)
                if (!member(mem, k, c->rd[c->rstart[o] + r]))
                    return;
        }
        erf |= is_op(n, "Erf"), tanh |= is_op(n, "Tanh"), sig |= is_op(n, "Sigmoid"), softplus |= is_op(n, "Softplus");
    }
    uint8_t kind = erf || (tanh && !softplus) ? VF_FUSE_GELU
                   : sig && k == 2 && is_op(&g->node[last], "Mul") ? VF_FUSE_SILU
                                                                    : VF_FUSE_POINTWISE;
    mark(c, mem, k, last, x, kind);
}

static bool readers(fctx *c)
{
    const vf__graph *g = c->g;
    size_t total = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (uint32_t k = 0; k < g->node[i].n_in; k++)
            if (g->node[i].in[k] != VF_GRAPH_NONE) {
                c->nread[g->node[i].in[k]]++;
                total++;
            }
    c->rd = malloc((total ? total : 1) * sizeof *c->rd);
    if (!c->rd)
        return false;
    uint32_t acc = 0;
    for (size_t v = 0; v < g->n_v; v++) {
        c->rstart[v] = acc;
        acc += c->nread[v];
        c->nread[v] = 0;
    }
    for (size_t p = 0; p < g->n_node; p++) { /* readers in order */
        const vf__gnode *n = &g->node[g->order[p]];
        for (uint32_t k = 0; k < n->n_in; k++)
            if (n->in[k] != VF_GRAPH_NONE)
                c->rd[c->rstart[n->in[k]] + c->nread[n->in[k]]++] = g->order[p];
    }
    return true;
}

vf_status vf__fuse_find(const vf__graph *g, const vf__shapes *s, const uint32_t *pos, vf__fuse *f)
{
    memset(f, 0, sizeof *f);
    size_t nn = g->n_node ? g->n_node : 1, nv = g->n_v ? g->n_v : 1;
    f->kind = calloc(nn, 1);
    f->inner = calloc(nn, 1);
    f->x = malloc(nn * sizeof *f->x);
    fctx c = {.g = g, .s = s, .f = f, .pos = pos};
    c.nread = calloc(nv, sizeof *c.nread);
    c.rstart = calloc(nv, sizeof *c.rstart);
    vf_status st = VF_OK;
    if (!f->kind || !f->inner || !f->x || !c.nread || !c.rstart || !readers(&c)) {
        vf__fuse_free(f);
        st = VF_ENOMEM;
        goto out;
    }
    memset(f->x, 0xff, nn * sizeof *f->x);
    for (size_t p = 0; p < g->n_node; p++)
        if (!f->kind[g->order[p]] && is_op(&g->node[g->order[p]], "Sub"))
            layernorm_at(&c, g->order[p]);
    for (size_t p = 0; p < g->n_node; p++)
        if (!f->kind[g->order[p]] && is_op(&g->node[g->order[p]], "Pad"))
            pool_at(&c, g->order[p]);
    for (size_t i = 0; i < g->n_inputs; i++)
        if (c.nread[g->inputs[i]] >= 2)
            pointwise_at(&c, g->inputs[i]);
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        for (uint32_t k = 0; k < n->n_out; k++)
            if (dyn(&c, n->out[k]) && c.nread[n->out[k]] >= 2)
                pointwise_at(&c, n->out[k]);
    }
out:
    free(c.nread);
    free(c.rstart);
    free(c.rd);
    return st;
}

void vf__fuse_free(vf__fuse *f)
{
    free(f->kind);
    free(f->inner);
    free(f->x);
    memset(f, 0, sizeof *f);
}

const char *vf__fuse_name(uint8_t kind)
{
    static const char *const names[VF_FUSE_KINDS] = {"-", "LayerNorm", "GELU", "SiLU", "pointwise", "padded pooling"};
    return kind < VF_FUSE_KINDS ? names[kind] : "-";
}
