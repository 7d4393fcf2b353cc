/* graph_train.c — training a network by its graph as PyTorch autograd does:
 * what each operator saves for its backward (its rule and source below; the
 * table in docs/memory-model.md), the forward with those tensors kept, and
 * the backward in reverse order: a node's saved tensors freed once every
 * node that saved them has run, activation gradients alive from the node
 * that makes them to the node that consumes them, parameter gradients kept.
 * Sources: PyTorch tools/autograd/derivatives.yaml (which inputs/results
 * each formula reads), torch/csrc/autograd/FunctionsManual.cpp, and the
 * measured inventories of tests/reference/torch-cnn (torch 1.13). */
#include "memory/graph/graph_mem.h"

#include <stdlib.h>
#include <string.h>

enum {
    S_IN0 = 1,      /* input 0 (self / input) */
    S_IN1 = 2,      /* input 1 */
    S_PAIR = 4,     /* each of inputs 0, 1 when the other requires grad (mul, mm, div) */
    S_OUT = 8,      /* output 0 (result) */
    X_BN = 16,      /* + fp32 save_mean, save_invstd: 2 x C */
    X_LN = 32,      /* + fp32 mean, rstd: 2 per normalized row */
    X_IDX = 64,     /* + int64 indices the size of the output */
    X_MASK = 128,   /* + a bool mask the size of the output */
    S_NONE = 256,   /* nothing beyond sizes */
    S_CLONE = 512,  /* run in place, its backward reads the input: autograd saves a copy of it */
};

typedef struct srule {
    const char *op;
    unsigned what;
} srule;

/* Sorted by name. Each from derivatives.yaml (torch 2.x) unless noted. */
static const srule srules[] = {
    {"Abs", S_IN0},                     /* abs: grad * self.sgn() */
    {"Add", S_NONE},                    /* add: grad */
    {"AveragePool", S_IN0},             /* avg_pool2d_backward(grad, self, ...) */
    {"BatchNormalization", S_IN0 | X_BN}, /* native_batch_norm_backward(input, weight, ..., save_mean, save_invstd) */
    {"Cast", S_NONE},                   /* _to_copy: grad.to(self.options()) */
    {"Clip", S_IN0 | S_CLONE},          /* hardtanh_backward(grad, self): ReLU6(inplace) saves a copy (measured) */
    {"Concat", S_NONE},                 /* cat: sizes only */
    {"Conv", S_IN0},                    /* convolution_backward(grad, input, weight, ...) */
    {"ConvTranspose", S_IN0},           /* convolution_backward, transposed */
    {"Cos", S_IN0},
    {"Div", S_PAIR},                    /* div.Tensor: self: grad / other; other: -grad * self / other^2 */
    {"Dropout", X_MASK},                /* native_dropout_backward(grad, mask): CUDA keeps a bool mask */
    {"Einsum", S_PAIR},                 /* einsum -> bmm: each operand for the other's grad */
    {"Elu", S_OUT},                     /* elu_backward(..., is_result=true, self_or_result=result) */
    {"Erf", S_IN0},                     /* erf: 2/sqrt(pi) * exp(-self^2) * grad */
    {"Exp", S_OUT},                     /* exp: grad * result */
    {"Expand", S_NONE},                 /* expand: sum_to(grad, self sizes) */
    {"Flatten", S_NONE},                /* a view */
    {"Gather", S_IN1},                  /* index_select / gather: the index */
    {"Gelu", S_IN0},                    /* gelu_backward(grad, self) */
    {"Gemm", S_PAIR},                   /* addmm: mat1 saved for mat2's grad, mat2 for mat1's */
    {"GlobalAveragePool", S_IN0},       /* mean.dim: MeanBackward1 keeps self in torch 1.13 (measured); 2.x sizes */
    {"GlobalMaxPool", S_IN0 | X_IDX},   /* adaptive_max_pool2d_backward(grad, self, indices) */
    {"GroupNormalization", S_IN0 | X_LN}, /* native_group_norm_backward(..., input, mean, rstd) */
    {"HardSigmoid", S_IN0 | S_CLONE},   /* hardsigmoid_backward(grad, self) */
    {"HardSwish", S_IN0 | S_CLONE},     /* hardswish_backward(grad, self) */
    {"Identity", S_NONE},
    {"InstanceNormalization", S_IN0 | X_BN}, /* instance_norm runs batch_norm over N*C channels */
    {"LayerNormalization", S_IN0 | X_LN}, /* native_layer_norm_backward(grad, input, ..., mean, rstd, ...) */
    {"LeakyRelu", S_IN0},               /* leaky_relu_backward(grad, self / result when in place) */
    {"Log", S_IN0},                     /* log: grad / self */
    {"LogSoftmax", S_OUT},              /* _log_softmax_backward_data(grad, result, ...) */
    {"MatMul", S_PAIR},                 /* matmul -> mm/bmm: each operand for the other's grad */
    {"MaxPool", S_IN0 | X_IDX},         /* max_pool2d_with_indices_backward(grad, self, ..., indices) */
    {"Mish", S_IN0},
    {"Mul", S_PAIR},                    /* mul.Tensor: self: grad * other; other: grad * self */
    {"Neg", S_NONE},
    {"Pad", S_NONE},                    /* constant_pad_nd: a slice of grad */
    {"Pow", S_IN0 | S_OUT},             /* pow.Tensor_Tensor: self, exponent, result */
    {"ReduceMean", S_IN0},              /* as GlobalAveragePool (torch 1.13 MeanBackward1) */
    {"ReduceSum", S_NONE},              /* sum: sizes */
    {"Relu", S_OUT},                    /* threshold_backward(grad, result, 0) */
    {"Reshape", S_NONE},
    {"Resize", S_NONE},                 /* upsample_*_backward: sizes only */
    {"Sigmoid", S_OUT},                 /* sigmoid_backward(grad, result) */
    {"Sin", S_IN0},
    {"Slice", S_NONE},
    {"Softmax", S_OUT},                 /* _softmax_backward_data(grad, result, ...) */
    {"Softplus", S_IN0},
    {"Split", S_NONE},
    {"Sqrt", S_OUT},                    /* sqrt: grad / (2 * result) */
    {"Squeeze", S_NONE},
    {"Sub", S_NONE},
    {"Tanh", S_OUT},                    /* tanh_backward(grad, result) */
    {"Transpose", S_NONE},
    {"Unsqueeze", S_NONE},
    {"Upsample", S_NONE},
    {"Where", S_IN0},                   /* where: the condition */
};

bool vf__train_rules_sorted(void)
{
    for (size_t i = 1; i < sizeof srules / sizeof srules[0]; i++)
        if (strcmp(srules[i - 1].op, srules[i].op) >= 0)
            return false;
    return true;
}

static int cmp_srule(const void *k, const void *r) { return strcmp(k, ((const srule *)r)->op); }

typedef struct tstate {
    const vf__graph *g;
    const vf__shapes *s;
    const vf__live *L;
    uint8_t *rg;          /* per value: requires grad */
    uint8_t *saved;       /* per storage owner */
    uint32_t *saver_min;  /* per storage owner: the earliest position that saved it */
    uint64_t *extra;      /* per position: bytes saved beside the graph's tensors */
} tstate;

static void save(tstate *t, uint32_t v, uint32_t p)
{
    if (v == VF_GRAPH_NONE || !t->s->v[v].dyn)
        return;
    uint32_t st = t->L->stor[v];
    if (!t->L->sbytes[st])
        return;
    t->saved[st] = 1;
    if (p < t->saver_min[st])
        t->saver_min[st] = p;
}

/* Elements of one row's statistics: LayerNorm keeps one per row before
 * axis, batch norms one per channel. */
static uint64_t stat_elems(const vf__gnode *n, const vf__vshape *x, unsigned what)
{
    if (x->rank < 2)
        return 0;
    if (what & X_BN)
        return !strcmp(n->op, "InstanceNormalization") ? (uint64_t)x->d[0] * (uint64_t)x->d[1] : (uint64_t)x->d[1];
    int64_t axis = vf__gattr_int(n, "axis", !strcmp(n->op, "GroupNormalization") ? 2 : -1);
    if (!strcmp(n->op, "GroupNormalization"))
        return (uint64_t)x->d[0] * (uint64_t)vf__gattr_int(n, "num_groups", 1);
    if (axis < 0)
        axis += x->rank;
    uint64_t rows = 1;
    for (int64_t d = 0; d < axis && d < x->rank; d++)
        rows *= (uint64_t)x->d[d];
    return rows;
}

/* A decomposed operator (graph_fuse.c) saves what PyTorch's one operator
 * does: LayerNorm its input and fp32 mean and rstd per row
 * (native_layer_norm_backward); the pointwise functions their input
 * (gelu_backward, silu_backward, ...: self), a copy of it when run in place
 * (SiLU(inplace=True): autograd clones self before silu_ writes); a padded
 * pooling its unpadded input (and MaxPool's indices). */
static void fused_rule(tstate *t, const vf__gnode *n, uint8_t kind, uint32_t x, uint32_t p, vf__gtrain *out)
{
    uint64_t extra = 0;
    bool inplace = n->n_out && n->out[0] != VF_GRAPH_NONE && t->L->stor[n->out[0]] == t->L->stor[x];
    if (inplace)
        extra += t->s->bytes[x];
    else
        save(t, x, p);
    const vf__vshape *xs = &t->s->v[x];
    const vf__vshape *os = n->n_out && n->out[0] != VF_GRAPH_NONE ? &t->s->v[n->out[0]] : NULL;
    if (kind == VF_FUSE_POOL && !strcmp(n->op, "MaxPool") && os && vf__vshape_known(os))
        extra += 8 * vf__vshape_numel(os); /* int64 indices */
    if (kind == VF_FUSE_LAYERNORM && xs->rank >= 1 && xs->d[xs->rank - 1] > 0)
        extra += 2 * 4 * (vf__vshape_numel(xs) / (uint64_t)xs->d[xs->rank - 1]);
    t->extra[p] += extra;
    out->saved_extra += extra;
}

/* An operand of a product: torch.matmul of operands above three dimensions
 * folds their batch dimensions with reshape (expand(...).reshape({b, n, m}),
 * ATen/native/LinearAlgebra.cpp matmul), and torch.einsum its operands with
 * permute(...).reshape (sumproduct_pair); bmm saves what it was given. A
 * strided view (swin's k.transpose(-2, -1) and v = qkv[2], selected from a
 * permuted qkv) cannot be folded as a view: the reshape copies it and the
 * copy, of the operand's own size, is saved instead of the storage it views.
 * Returns the bytes of such a copy; saves the operand otherwise. */
static uint64_t save_operand(tstate *t, const vf__gnode *n, uint32_t x, uint32_t p)
{
    if (x != VF_GRAPH_NONE && t->s->v[x].dyn && t->s->v[x].rank >= 4 && t->L->view[x] && t->L->strided[x] &&
        (!strcmp(n->op, "MatMul") || !strcmp(n->op, "Einsum")))
        return t->s->bytes[x];
    save(t, x, p);
    return 0;
}

static void apply_rule(tstate *t, const vf__gnode *n, uint32_t p, vf__gtrain *out)
{
    bool any_rg = false;
    for (uint32_t k = 0; k < n->n_in; k++)
        any_rg = any_rg || (n->in[k] != VF_GRAPH_NONE && t->rg[n->in[k]]);
    bool float_out = false;
    for (uint32_t k = 0; k < n->n_out; k++)
        float_out = float_out || (n->out[k] != VF_GRAPH_NONE && vf__onnx_is_float(t->s->v[n->out[k]].elem));
    if (!any_rg || !float_out)
        return; /* no gradient flows through (shapes, masks, indices): autograd records nothing */
    uint32_t id = (uint32_t)(n - t->g->node);
    if (t->L->fu.inner[id])
        return; /* inside a decomposed operator: its last node saves for it */
    if (t->L->fu.kind[id]) {
        fused_rule(t, n, t->L->fu.kind[id], t->L->fu.x[id], p, out);
        return;
    }
    if (vf__graph_dropout_identity(t->s, n))
        return; /* p = 0: the input itself, no node recorded */
    const srule *r = bsearch(n->op, srules, sizeof srules / sizeof srules[0], sizeof srules[0], cmp_srule);
    if (!r) { /* no rule: every input and output kept (err high), named in the assumptions */
        for (uint32_t k = 0; k < n->n_in; k++)
            save(t, n->in[k], p);
        for (uint32_t k = 0; k < n->n_out; k++)
            save(t, n->out[k], p);
        out->n_unruled++;
        size_t len = strlen(out->unruled);
        if (len < sizeof out->unruled - 48 && !strstr(out->unruled, n->op))
            snprintf(out->unruled + len, sizeof out->unruled - len, "%s%s", len ? ", " : "", n->op);
        return;
    }
    unsigned w = r->what;
    uint32_t in0 = n->n_in > 0 ? n->in[0] : VF_GRAPH_NONE, in1 = n->n_in > 1 ? n->in[1] : VF_GRAPH_NONE;
    uint64_t extra = 0;
    bool inplace = in0 != VF_GRAPH_NONE && n->n_out && n->out[0] != VF_GRAPH_NONE &&
                   t->L->stor[n->out[0]] == t->L->stor[in0];
    if ((w & S_CLONE) && inplace)
        extra += t->s->bytes[in0]; /* the original, copied before the in-place write */
    else if (w & S_IN0)
        save(t, in0, p);
    if (w & S_IN1)
        save(t, in1, p);
    if (w & S_PAIR) {
        if (in1 != VF_GRAPH_NONE && t->rg[in1])
            extra += save_operand(t, n, in0, p);
        if (in0 != VF_GRAPH_NONE && t->rg[in0])
            extra += save_operand(t, n, in1, p);
    }
    if ((w & S_OUT) && n->n_out)
        save(t, n->out[0], p);
    const vf__vshape *x = in0 != VF_GRAPH_NONE ? &t->s->v[in0] : NULL;
    const vf__vshape *o = n->n_out && n->out[0] != VF_GRAPH_NONE ? &t->s->v[n->out[0]] : NULL;
    if ((w & (X_BN | X_LN)) && x)
        extra += 2 * 4 * stat_elems(n, x, w);
    if ((w & X_IDX) && o && vf__vshape_known(o))
        extra += 8 * vf__vshape_numel(o);
    if ((w & X_MASK) && o && vf__vshape_known(o))
        extra += vf__vshape_numel(o);
    t->extra[p] += extra;
    out->saved_extra += extra;
}

/* Requires-grad: trainable float initializers (and their Identity copies),
 * then anything computed from one. */
static void requires_grad(const vf_model *m, const uint8_t *frozen, tstate *t)
{
    const vf__graph *g = t->g;
    for (size_t i = 0; i < g->n_v; i++) {
        uint32_t src = vf__graph_init_behind(g, (uint32_t)i);
        if (src == VF_GRAPH_NONE)
            continue;
        const vf_tensor *x = &m->tensors[g->v[src].tensor];
        /* a copy is a tensor of its own: a parameter unless a buffer, whatever its source is */
        t->rg[i] = src == i ? !(x->flags & VF_TENSOR_NOT_PARAM) : !g->v[i].buffer && vf__onnx_is_float(g->v[src].elem);
        if (frozen && frozen[i]) /* requires_grad=False, or a buffer the caller named */
            t->rg[i] = 0;
    }
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *n = &g->node[g->order[p]];
        bool r = false;
        for (uint32_t k = 0; k < n->n_in; k++)
            r = r || (n->in[k] != VF_GRAPH_NONE && t->rg[n->in[k]] && (t->s->v[n->in[k]].dyn ||
                                                                         vf__graph_init_behind(g, n->in[k]) != VF_GRAPH_NONE));
        for (uint32_t k = 0; k < n->n_out; k++)
            if (n->out[k] != VF_GRAPH_NONE && t->s->v[n->out[k]].dyn)
                t->rg[n->out[k]] = r && vf__onnx_is_float(t->s->v[n->out[k]].elem);
    }
}

/* Parameter elements a (non-activation) input stands for: its initializer's,
 * once per value (an Identity copy is a parameter of its own in the module). */
static uint64_t param_elems(const vf_model *m, const tstate *t, uint32_t v)
{
    uint32_t src = vf__graph_init_behind(t->g, v);
    if (src == VF_GRAPH_NONE || !t->rg[v])
        return 0;
    return m->tensors[t->g->v[src].tensor].n_elements;
}

static bool inner_value(const tstate *t, uint32_t v)
{
    uint32_t pr = t->g->v[v].producer;
    return pr != VF_GRAPH_NONE && t->L->fu.inner[pr];
}

/* Reverse order: gradients of a node's inputs made, then its outputs'
 * gradients and the tensors only it still needed released. */
/* An auxiliary head's backward (graph_aux.c): autograd runs the ready node
 * of highest sequence number first, so the head's nodes, recorded after the
 * module it reads and before the next, run once every later node has, just
 * before the module's last node: its parameter gradients made (and kept),
 * its transients at their largest, then its saved tensors released. */
static uint64_t aux_backward(const vf__aux *aux, uint32_t p, uint64_t live, uint32_t grad_bytes, uint64_t *grads,
                             vf__gtrain *out)
{
    for (size_t h = 0; aux && h < aux->n; h++) {
        const vf__aux_head *a = &aux->h[h];
        if (a->at != p)
            continue;
        live += a->params * grad_bytes;
        *grads += a->params * grad_bytes;
        if (live + a->transient > out->bwd_plain)
            out->bwd_plain = live + a->transient;
        if (live + a->transient > out->bwd_peak) {
            out->bwd_peak = live + a->transient;
            out->bwd_grads = *grads;
            out->bwd_scratch = 0;
        }
        live = live > a->saved ? live - a->saved : 0;
    }
    return live;
}

static void backward(const vf_model *m, tstate *t, const vf__aux *aux, uint64_t start, uint32_t grad_bytes,
                     vf__gtrain *out)
{
    const vf__graph *g = t->g;
    const vf__live *L = t->L;
    size_t nn = g->n_node;
    uint8_t *gdone = calloc(g->n_v ? g->n_v : 1, 1);
    uint64_t *release = calloc(nn ? nn : 1, sizeof *release);
    if (!gdone || !release) {
        out->bwd_peak = out->bwd_plain = start + out->saved;
        goto done;
    }
    for (size_t i = 0; i < g->n_v; i++)
        if (L->stor[i] == i && t->saved[i] && t->saver_min[i] < nn)
            release[t->saver_min[i]] += L->sbytes[i];
    /* The loss's backward first: nll_loss_backward makes the gradient of
     * the log-softmax (its input's size), then _log_softmax_backward_data
     * the logits' while both are alive with the saved log-softmax; the
     * two loss nodes then release the log-softmax and its gradient. */
    uint64_t live = start + out->loss_saved, grads = 0;
    for (size_t i = 0; i < g->n_outputs; i++) {
        uint32_t o = g->outputs[i];
        gdone[o] = 1;
        live += L->sbytes[L->stor[o]] ? t->s->bytes[o] : 0;
    }
    out->bwd_peak = out->bwd_plain = live;
    live -= 2 * out->loss_saved;
    for (size_t p = nn; p-- > 0;) {
        live = aux_backward(aux, (uint32_t)p, live, grad_bytes, &grads, out);
        const vf__gnode *n = &g->node[g->order[p]];
        bool view = vf__graph_is_view(n) || vf__graph_dropout_identity(t->s, n);
        bool dx = n->n_in && n->in[0] != VF_GRAPH_NONE && !gdone[n->in[0]] && t->rg[n->in[0]];
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x == VF_GRAPH_NONE || gdone[x] || !t->rg[x])
                continue;
            gdone[x] = 1;
            if (t->s->v[x].dyn) {
                /* a view's gradient is a view of its output's; a decomposed operator makes only its input's */
                live += view || inner_value(t, x) ? 0 : t->s->bytes[x];
            } else {
                uint64_t b = param_elems(m, t, x) * grad_bytes;
                live += b;
                grads += b;
            }
        }
        /* the kernel's scratch is alive with the gradients it makes, freed before the op returns */
        uint64_t ws = vf__conv_bwd_scratch(n, t->s, dx);
        if (live > out->bwd_plain)
            out->bwd_plain = live;
        if (live + ws > out->bwd_peak) {
            out->bwd_peak = live + ws;
            out->bwd_grads = grads;
            out->bwd_scratch = ws;
        }
        for (uint32_t k = 0; k < n->n_out; k++) {
            uint32_t o = n->out[k];
            if (o != VF_GRAPH_NONE && gdone[o] && t->s->v[o].dyn && !(view && k == 0) && !inner_value(t, o)) {
                uint64_t b = t->s->bytes[o];
                live = live > b ? live - b : 0;
            }
        }
        if (view && n->n_out && n->out[0] != VF_GRAPH_NONE && gdone[n->out[0]] && n->n_in && n->in[0] != VF_GRAPH_NONE &&
            !gdone[n->in[0]]) {
            /* the input needs no gradient: the view's own gradient goes */
            uint64_t b = t->s->bytes[n->out[0]];
            live = live > b ? live - b : 0;
        }
        uint64_t r = release[p] + t->extra[p];
        live = live > r ? live - r : 0;
    }
done:
    free(gdone);
    free(release);
}

vf_status vf__graph_train(const vf_model *m, const vf__shapes *s, const vf__live *L, uint32_t act_num,
                          uint32_t act_den, uint32_t grad_bytes, const uint8_t *frozen, const vf__aux *aux,
                          vf__gtrain *out)
{
    (void)act_num, (void)act_den; /* the caller scaled the activation bytes */
    const vf__graph *g = m->graph;
    memset(out, 0, sizeof *out);
    size_t nv = g->n_v ? g->n_v : 1, nn = g->n_node ? g->n_node : 1;
    tstate t = {.g = g, .s = s, .L = L};
    t.rg = calloc(nv, 1);
    t.saved = calloc(nv, 1);
    t.saver_min = malloc(nv * sizeof *t.saver_min);
    t.extra = calloc(nn, sizeof *t.extra);
    vf_status st = VF_OK;
    if (!t.rg || !t.saved || !t.saver_min || !t.extra) {
        st = VF_ENOMEM;
        goto out;
    }
    memset(t.saver_min, 0xff, nv * sizeof *t.saver_min);
    requires_grad(m, frozen, &t);
    for (size_t p = 0; p < g->n_node; p++)
        apply_rule(&t, &g->node[g->order[p]], (uint32_t)p, out);
    /* the loss: F.cross_entropy = log_softmax then nll_loss (derivatives.yaml:
     * _log_softmax keeps its result, nll_loss_forward its input, the same
     * tensor, and the target): one output-sized fp32 tensor per graph
     * output; the targets are int64 class indices, one per output element
     * but the class axis (1), held by the caller all step */
    for (size_t i = 0; i < g->n_outputs; i++) {
        const vf__vshape *o = &s->v[g->outputs[i]];
        uint64_t n = vf__vshape_numel(o);
        out->loss_saved += vf__onnx_elem_bytes(VF_ONNX_FLOAT, n);
        out->labels += 8 * (o->rank >= 2 && o->d[1] > 0 ? n / (uint64_t)o->d[1] : 1);
    }
    out->saved_extra += out->loss_saved;
    for (size_t i = 0; i < g->n_v; i++)
        if (L->stor[i] == i && t.saved[i]) {
            out->saved += L->sbytes[i];
            if (g->v[i].is_input)
                out->saved_inputs += L->sbytes[i];
        }
    /* the auxiliary heads' saved tensors, beside the graph's (kept from the
     * forward's end: erring high if its peak comes before them) */
    for (size_t h = 0; aux && h < aux->n; h++)
        out->saved_extra += aux->h[h].saved;
    out->saved += out->saved_extra;
    uint32_t pk;
    uint64_t in_b;
    out->fwd_peak = vf__live_peak(g, s, L, t.saved, &pk, &in_b) + out->saved_extra;
    /* at the start of backward: everything saved, plus the graph inputs the caller still holds */
    uint64_t unsaved_inputs = in_b > out->saved_inputs ? in_b - out->saved_inputs : 0;
    backward(m, &t, aux, out->saved + unsaved_inputs, grad_bytes, out);
out:
    free(t.rg);
    free(t.saved);
    free(t.saver_min);
    free(t.extra);
    return st;
}
