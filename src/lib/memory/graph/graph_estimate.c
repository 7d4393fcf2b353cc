/* graph_estimate.c — the estimate for a network by its graph: weights (the
 * initializers' exact bytes, the exporter's Identity copies counted as the
 * parameters they are), activations (inference: the peak of live tensors,
 * graph_live.c; training: saved tensors and the backward, graph_train.c),
 * gradients and optimizer states priced per parameter tensor as for the
 * decoders (train_states.c), and the runtime's fixed costs. */
#include "memory/torch/alloc_torch.h"
#include "memory/graph/graph_mem.h"
#include "memory/infer.h"
#include "memory/train/train_internal.h"

#include <stdio.h>
#include <string.h>

/* Knobs a graph estimate does not model: refused in one line. */
static vf_status check_knobs(const vf_model *m, const vf_estimate_opts *o, vf_error *err)
{
    const char *what = o->tp > 1 || o->pp > 1 || o->ep > 1 ? "tensor, pipeline or expert parallelism"
                       : o->weights[0]                      ? "--weights re-pricing"
                       : o->runtime == VF_RUNTIME_VLLM || o->runtime == VF_RUNTIME_LLAMACPP ||
                               o->runtime == VF_RUNTIME_LITGPT
                           ? "this runtime"
                       : o->mode == VF_MODE_TRAINING && (o->train.lora_rank || o->train.qlora[0])
                           ? "lora"
                       : o->mode == VF_MODE_TRAINING && (o->train.zero || o->train.fsdp || o->train.offload)
                           ? "zero, fsdp or offload"
                           : NULL;
    if (what)
        return vf__err(err, VF_EUNSUPPORTED, m->source, "%s is not modelled for a network read from its graph",
                       what);
    return VF_OK;
}

/* PyTorch's own costs on the transformers (PyTorch) runtime: the CUDA
 * context with the kernels a forward loads and cuBLAS's workspaces
 * (overhead.c, sourced there); the generic runtime is the plain sum. */
static uint64_t torch_costs(const vf_estimate_opts *o, vf_estimate *e, uint64_t *ctx)
{
    *ctx = 0;
    if (o->runtime != VF_RUNTIME_TRANSFORMERS)
        return 0;
    char why[VF_NOTE_LEN];
    *ctx = vf__torch_context_bytes(o, true, why, sizeof why);
    vf__assume(e, "cuda context = %s", why);
    return vf__cublas_workspace_bytes(o->infer.gpu_name, vf__gpu_class_bytes(o));
}

/* What the device holds: the components' sum (no allocator replay for
 * graphs: reserved taken as allocated) plus the context. */
static void device(vf_estimate *e, uint64_t ctx)
{
    uint64_t alloc = e->per_gpu_bytes > ctx ? e->per_gpu_bytes - ctx : 0;
    vf__device_set(e, alloc, alloc, ctx, 0);
}

/* The margin fit keeps (docs/memory-model.md, "The margin a verdict keeps"):
 * no allocator replay for graphs, so room for one new allocator segment as
 * large as the graph's largest tensor, the largest request it can make. */
static void graph_margin(const vf_model *m, const vf__shapes *s, vf_estimate *e)
{
    uint64_t big = 0;
    for (size_t i = 0; i < m->graph->n_v; i++)
        if (s->bytes[i] > big)
            big = s->bytes[i];
    e->margin_bytes = vf__talloc_segment_bytes(big);
    if (e->margin_bytes)
        vf__assume(e, "margin = %.0f MiB free kept by fit: a new allocator segment for the largest tensor "
                      "(%.0f MiB)", (double)e->margin_bytes / (1 << 20), (double)big / (1 << 20));
}

static void note_partial(vf_estimate *e, const vf__shapes *s)
{
    e->partial_nodes = (uint32_t)(s->n_unknown > UINT32_MAX ? UINT32_MAX : s->n_unknown);
    if (!s->n_unknown)
        return;
    vf__assume(e, "partial = yes: %zu node(s) with outputs of unknown shape (not counted), starting at %s",
               s->n_unknown, s->unknown);
}

/* Float activations at 2 bytes under autocast / bf16 (the graph states fp32). */
static void scale_acts(const vf_model *m, vf__shapes *s, uint32_t num, uint32_t den)
{
    for (size_t i = 0; num != den && i < m->graph->n_v; i++)
        if (s->bytes[i] && s->v[i].elem == VF_ONNX_FLOAT)
            s->bytes[i] = s->bytes[i] / den * num;
}

static uint64_t weight_bytes(const vf_model *m)
{
    uint64_t b = m->graph->alias_bytes;
    for (size_t i = 0; i < m->n_tensors; i++)
        b += m->tensors[i].n_bytes;
    return b;
}

/* The decomposed operators priced as the one PyTorch operator each is;
 * every other node is priced alone. */
static void fused_notes(vf_estimate *e, const vf__fuse *f)
{
    char b[VF_NOTE_LEN] = "";
    size_t len = 0;
    for (uint8_t k = 1; k < VF_FUSE_KINDS && len < sizeof b; k++)
        if (f->count[k])
            len += (size_t)snprintf(b + len, sizeof b - len, "%s%s x%zu", len ? ", " : "", vf__fuse_name(k),
                                    f->count[k]);
    if (len)
        vf__assume(e, "decomposed operators = %s, each priced as one PyTorch operator; other nodes alone", b);
}

static void common_notes(const vf_model *m, vf_estimate *e, const vf__shapes *s, const vf__live *L)
{
    vf__assume(e, "batch = %llu (symbolic axis 0 of the graph inputs)", (unsigned long long)s->batch);
    vf__assume(e, "lifetimes = PyTorch eager: freed at last use, inputs held by the caller, module arguments held %s",
               L->scoped ? "to the module's end (scoped node names)" : "through conv->norm and concat->reader");
    vf__assume(e, "kernel scratch (cuDNN/cuBLAS workspaces) = not counted in the forward (a property of the backend)");
    if (m->graph->aliases)
        vf__assume(e, "identity aliases = %zu copies of initializers counted as weights (%llu bytes)",
                   m->graph->aliases, (unsigned long long)m->graph->alias_bytes);
    fused_notes(e, &L->fu);
}

static vf_status infer_graph(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    vf__bind b = {.batch = o->infer.batch, .inputs = o->graph_inputs};
    vf__shapes s;
    vf__live L;
    vf_status st = vf__graph_shapes(m, &b, &s, err);
    if (st != VF_OK)
        return st;
    if (vf__live_init(m->graph, &s, &L) != VF_OK) {
        vf__shapes_free(&s);
        return vf__err(err, VF_ENOMEM, m->source, "out of memory");
    }
    uint32_t pk;
    uint64_t in_b;
    e->activations = vf__live_peak(m->graph, &s, &L, NULL, &pk, &in_b);
    e->weights = weight_bytes(m);
    e->batch = s.batch;
    e->gpus = o->gpus ? o->gpus : 1;
    uint64_t ctx;
    e->overhead = torch_costs(o, e, &ctx);
    e->overhead += ctx;
    e->per_gpu_bytes = e->weights + e->activations + e->overhead;
    device(e, ctx);
    e->total_bytes = e->per_gpu_bytes * e->gpus;
    snprintf(e->peak_phase, sizeof e->peak_phase, "%s", pk != VF_GRAPH_NONE ? m->graph->node[pk].op : "inputs");
    common_notes(m, e, &s, &L);
    note_partial(e, &s);
    graph_margin(m, &s, e);
    vf__explain(e, "activations = peak of live tensors %llu at node '%s' (%s), graph inputs %llu included",
                (unsigned long long)e->activations, pk != VF_GRAPH_NONE ? m->graph->node[pk].name : "-",
                pk != VF_GRAPH_NONE ? m->graph->node[pk].op : "-", (unsigned long long)in_b);
    vf__explain(e, "weights = initializers %llu + identity copies %llu", (unsigned long long)(e->weights -
                m->graph->alias_bytes), (unsigned long long)m->graph->alias_bytes);
    vf__live_free(&L);
    vf__shapes_free(&s);
    return VF_OK;
}

/* The decoders' precision table (train.c) as PyTorch trains a vision model:
 * mixed precision is autocast over fp32 weights, gradients and moments. */
static void precision(const vf_train_opts *t, vf__tcfg *c, uint32_t *act_num)
{
    switch (t->precision) {
    case VF_PREC_BF16:
        c->act = 2, c->w_bytes = 2, c->g_bytes = 2, c->master = 0, c->st_bytes = 2;
        break;
    case VF_PREC_FP16_MIXED:
    case VF_PREC_BF16_MIXED:
        c->act = 2, c->w_bytes = 4, c->g_bytes = 4, c->master = 0, c->st_bytes = 4, c->amp = true;
        break;
    default:
        c->act = 4, c->w_bytes = 4, c->g_bytes = 4, c->master = 0, c->st_bytes = 4;
        break;
    }
    c->frozen_bytes = c->w_bytes;
    *act_num = c->act;
}

/* The optimizer's state for each Identity copy that is a parameter: one
 * tensor of torch.optim's per-parameter state each (AdamW's step tensor
 * included). */
static uint64_t alias_states(const vf_model *m, vf_optimizer opt, const vf__tcfg *c)
{
    const vf__graph *g = m->graph;
    uint64_t b = 0;
    for (size_t i = 0; g->alias_params && i < g->n_node; i++) {
        const vf__gnode *n = &g->node[i];
        if (strcmp(n->op, "Identity") || n->n_in != 1 || n->n_out != 1 || n->out[0] == VF_GRAPH_NONE ||
            g->v[n->out[0]].buffer)
            continue;
        uint32_t src = vf__graph_init_behind(g, n->in[0]);
        if (src == VF_GRAPH_NONE)
            continue;
        const vf_tensor *x = &m->tensors[g->v[src].tensor];
        if (!(x->flags & VF_TENSOR_NOT_PARAM) || vf__onnx_is_float(g->v[src].elem))
            b += vf__optim_state_bytes(opt, c, x->shape, x->n_dims, x->n_elements);
    }
    return b;
}

/* What the frozen initializers take off the trained ones (graph_freeze.c):
 * parameter elements, of initializers and of Identity copies, and their
 * optimizer state, each counted as the trained side counts it. */
typedef struct frozen_sum {
    uint64_t el, alias_el, state, master;
} frozen_sum;

static frozen_sum frozen_sums(const vf_model *m, const uint8_t *fz, vf_optimizer opt, const vf__tcfg *c)
{
    frozen_sum f = {0, 0, 0, 0};
    const vf__graph *g = m->graph;
    for (size_t i = 0; fz && i < g->n_v; i++) {
        uint32_t src = fz[i] ? vf__graph_init_behind(g, (uint32_t)i) : VF_GRAPH_NONE;
        if (src == VF_GRAPH_NONE || g->v[src].tensor == VF_GRAPH_NONE)
            continue;
        const vf_tensor *x = &m->tensors[g->v[src].tensor];
        bool own = src == i;
        bool param = !(x->flags & VF_TENSOR_NOT_PARAM) && (own || (!g->v[i].buffer && vf__onnx_is_float(g->v[src].elem)));
        if (!param)
            continue;
        uint64_t n = own && x->n_params ? x->n_params : x->n_elements;
        *(own ? &f.el : &f.alias_el) += n;
        f.state += vf__optim_state_bytes(opt, c, x->shape, x->n_dims, n);
        f.master += n * c->master;
    }
    return f;
}

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

static void note_frozen(vf_estimate *e, const vf__frozen *fz, const frozen_sum *f)
{
    if (!fz->v)
        return;
    vf__assume(e, "frozen = %zu initializer(s) matched by --freeze, %zu FrozenBatchNorm2d layer(s): %llu parameters "
               "with no gradient or optimizer state", fz->by_name, fz->frozen_bn,
               (unsigned long long)(f->el + f->alias_el));
}

/* torchvision's GoogLeNet and Inception3 train auxiliary classifiers the
 * eval graph does not hold (graph_aux.c): their parameters and buffers
 * weigh, their gradients and optimizer states count, each tensor as
 * torch.optim allocates its state. */
static void price_aux_heads(const vf__aux *aux, vf_optimizer opt, const vf__tcfg *c, vf_estimate *e)
{
    if (!aux->net)
        return;
    uint64_t params = 0, buffers = 0, state = 0;
    size_t tensors = 0;
    for (size_t h = 0; h < aux->n; h++) {
        const vf__aux_head *a = &aux->h[h];
        params += a->params;
        buffers += a->buffer_bytes;
        tensors += a->n_tensors;
        for (size_t k = 0; k < a->n_tensors; k++) {
            uint64_t n = 1;
            for (uint32_t d = 0; d < a->n_dims[k]; d++)
                n *= a->shape[k][d];
            state += vf__optim_state_bytes(opt, c, a->shape[k], a->n_dims[k], n);
        }
    }
    e->weights += params * c->w_bytes + buffers;
    e->gradients += params * c->g_bytes;
    e->optimizer += state;
    e->trainable_params += params;
    vf__assume(e, "auxiliary classifiers = %s: %llu parameters in %zu tensors trained beside the eval graph "
                  "(torchvision's InceptionAux, aux_logits=True; a module without them is high by them)%s",
               aux->net, (unsigned long long)params, tensors,
               aux->placed ? "" : "; a head's input unnamed: its backward last");
}

static const char *const phase_name[] = {"forward", "backward", "optimizer step"};

static vf_status train_graph(const vf_model *m, const vf_estimate_opts *o, vf_estimate *e, vf_error *err)
{
    const vf_train_opts *t = &o->train;
    vf__tcfg c;
    memset(&c, 0, sizeof c);
    c.b = t->micro_batch ? t->micro_batch : o->infer.batch ? o->infer.batch : 1;
    c.s = 1, c.T = c.b, c.accum = t->grad_accum ? t->grad_accum : 1;
    c.gpus = c.dp = o->gpus ? o->gpus : 1, c.tp = c.pp = c.ep = 1, c.per_node = c.gpus;
    uint32_t act_num;
    precision(t, &c, &act_num);
    vf__tstates ts;
    vf_status st = vf__train_states(m, t, &c, &ts, err);
    if (st != VF_OK)
        return st;
    vf__bind b = {.batch = c.b, .inputs = o->graph_inputs};
    vf__shapes s;
    vf__live L;
    vf__frozen fz;
    if ((st = vf__graph_frozen(m, o, &fz, err)) != VF_OK)
        return st;
    if ((st = vf__graph_shapes(m, &b, &s, err)) != VF_OK) {
        vf__frozen_free(&fz);
        return st;
    }
    scale_acts(m, &s, act_num, 4);
    vf__gtrain gt;
    vf__aux aux;
    vf__aux_heads(m, &s, act_num, &aux);
    if (vf__live_init(m->graph, &s, &L) != VF_OK ||
        vf__graph_train(m, &s, &L, act_num, 4, c.g_bytes, fz.v, &aux, &gt) != VF_OK) {
        vf__live_free(&L);
        vf__shapes_free(&s);
        vf__frozen_free(&fz);
        return vf__err(err, VF_ENOMEM, m->source, "out of memory");
    }
    /* the exporter's Identity copies are parameters (or buffers) of the module too */
    uint64_t alias_el = m->graph->alias_param_elements;
    uint64_t alias_state = alias_states(m, t->optimizer, &c);
    uint64_t alias_buf = (m->graph->alias_elements - alias_el) * c.w_bytes;
    frozen_sum f = frozen_sums(m, fz.v, t->optimizer, &c);
    e->weights = ts.weight_bytes + ts.buffer_bytes + alias_el * c.w_bytes + alias_buf;
    e->gradients = minus(ts.grad_bytes + alias_el * c.g_bytes, (f.el + f.alias_el) * c.g_bytes);
    e->optimizer = minus(ts.state_bytes + ts.master_bytes + alias_state, f.state + f.master);
    e->trainable_params = minus(ts.trainable + alias_el, f.el + f.alias_el);
    note_frozen(e, &fz, &f);
    price_aux_heads(&aux, t->optimizer, &c, e);
    vf__frozen_free(&fz);
    uint64_t in_b = 0;
    for (size_t i = 0; i < m->graph->n_inputs; i++)
        in_b += s.bytes[m->graph->inputs[i]];
    uint64_t unsaved_in = in_b > gt.saved_inputs ? in_b - gt.saved_inputs : 0;
    /* what the step keeps of the batch: the graph inputs and the loss's targets (nll_loss saves them) */
    e->activations = gt.saved + unsaved_in + gt.labels;
    /* alive all step: weights, moments, the loss's targets (the caller's) */
    uint64_t base = e->weights + e->optimizer + gt.labels;
    uint64_t moment[3] = {base + gt.fwd_peak, base + gt.bwd_peak, base + e->gradients + ts.step_temp_bytes + in_b};
    int ph = moment[1] >= moment[0] ? 1 : 0;
    if (moment[2] > moment[ph])
        ph = 2;
    /* The peak is the largest moment, not the components' sum: backward
     * frees each node's saved tensors once it has run while the parameter
     * gradients accumulate, so the two are never all alive together. The
     * components stay the step's totals; overhead is what the peak holds
     * beyond them (transients). */
    uint64_t sum = e->weights + e->optimizer + e->gradients + e->activations;
    uint64_t ctx, runtime = torch_costs(o, e, &ctx);
    e->overhead = (moment[ph] > sum ? moment[ph] - sum : 0) + runtime + ctx;
    e->per_gpu_bytes = moment[ph] + runtime + ctx;
    device(e, ctx);
    e->total_bytes = e->per_gpu_bytes * c.gpus;
    e->gpus = c.gpus;
    e->batch = c.b;
    snprintf(e->peak_phase, sizeof e->peak_phase, "%s", phase_name[ph]);
    common_notes(m, e, &s, &L);
    note_partial(e, &s);
    graph_margin(m, &s, e);
    vf__assume(e, "precision = %s", c.amp ? "autocast: 16-bit activations over fp32 weights, gradients, moments"
                                   : c.act == 2 ? "bf16" : "fp32");
    vf__assume(e, "loss = cross-entropy on the graph output (its fp32 log-softmax kept for backward, int64 targets "
                  "one per output element but the class axis)");
    if (moment[ph] < sum)
        vf__assume(e, "step peak = the %s moment, %.2f GiB, below the components' sum %.2f GiB: they are the step's "
                      "totals, never all alive at once (backward frees saved tensors as gradients accumulate)",
                   phase_name[ph], (double)moment[ph] / (1 << 30), (double)sum / (1 << 30));
    uint64_t plain = base + gt.bwd_plain;
    plain = plain > moment[0] ? plain : moment[0];
    plain = plain > moment[2] ? plain : moment[2];
    vf__assume(e, "kernel scratch in the step = %llu B at the backward's peak, %llu B the step without it: "
                  "convolution_backward's oneDNN reorders or slow_conv2d columns (PyTorch 1.13 CPU fp32, one thread)",
               (unsigned long long)gt.bwd_scratch, (unsigned long long)(plain + runtime + ctx));
    if (gt.n_unruled)
        vf__assume(e, "no saved-tensor rule for %s: every input and output kept (erring high)", gt.unruled);
    vf__explain(e, "saved for backward %llu (graph inputs %llu, beside the graph's tensors %llu)",
                (unsigned long long)gt.saved, (unsigned long long)gt.saved_inputs,
                (unsigned long long)gt.saved_extra);
    vf__explain(e, "moments (weights, optimizer, targets %llu alive in each): forward %llu, backward %llu "
                   "(kernel scratch %llu of it), optimizer step %llu; per GPU = the largest",
                (unsigned long long)gt.labels, (unsigned long long)moment[0], (unsigned long long)moment[1],
                (unsigned long long)gt.bwd_scratch,
                (unsigned long long)moment[2]);
    vf__live_free(&L);
    vf__shapes_free(&s);
    return VF_OK;
}

vf_status vf__graph_estimate(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    vf_status st = check_knobs(m, o, err);
    if (st != VF_OK)
        return st;
    return o->mode == VF_MODE_TRAINING ? train_graph(m, o, out, err) : infer_graph(m, o, out, err);
}
