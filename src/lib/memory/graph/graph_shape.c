/* graph_shape.c — one run's shapes: the graph inputs' symbolic dimensions
 * bound from --batch and --input, then every node's outputs inferred in the
 * topological order (graph_shape_ops.c), the declared value_info used where
 * an operator cannot be inferred. A node whose outputs stay unknown is
 * counted and named: the estimate then says it is partial (never a silent 0). */
#include "model/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SYMS 32

typedef struct symtab {
    const char *name[MAX_SYMS];
    int64_t val[MAX_SYMS];
    size_t n;
} symtab;

static int64_t sym_get(const symtab *t, const char *s)
{
    for (size_t i = 0; s && i < t->n; i++)
        if (!strcmp(t->name[i], s))
            return t->val[i];
    return -1;
}

static void sym_set(symtab *t, const char *s, int64_t v)
{
    if (s && sym_get(t, s) < 0 && t->n < MAX_SYMS) {
        t->name[t->n] = s;
        t->val[t->n++] = v;
    }
}

void vf__shapes_free(vf__shapes *s)
{
    free(s->v);
    free(s->bytes);
    free(s->pool);
    memset(s, 0, sizeof *s);
}

/* "1x3x224x224" or "1,3,224,224" */
static int parse_dims(const char *p, const char *end, int64_t *d)
{
    int n = 0;
    while (p < end) {
        if (n >= VF_MAX_DIMS || *p < '0' || *p > '9')
            return -1;
        int64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (v > ((int64_t)1 << 40))
                return -1;
            v = v * 10 + (*p++ - '0');
        }
        d[n++] = v;
        if (p < end && *p != 'x' && *p != ',')
            return -1;
        if (p < end && ++p == end)
            return -1;
    }
    return n;
}

/* Applies one "NAME=DIMS" to its graph input. */
static vf_status bind_one(const vf__graph *g, vf__shapes *s, symtab *t, const char *p, const char *end,
                          const char *path, vf_error *err)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));
    int64_t d[VF_MAX_DIMS];
    int n = eq ? parse_dims(eq + 1, end, d) : -1;
    if (n <= 0)
        return vf__err(err, VF_EINVAL, path, "--input takes NAME=DIMS (e.g. input=1x3x224x224), not '%.*s'",
                       (int)(end - p), p);
    for (size_t i = 0; i < g->n_inputs; i++) {
        const vf__gvalue *v = &g->v[g->inputs[i]];
        if (strlen(v->name) != (size_t)(eq - p) || memcmp(v->name, p, (size_t)(eq - p)))
            continue;
        if (v->rank >= 0 && v->rank != n)
            return vf__err(err, VF_EINVAL, path, "--input %s: %d dims given, the graph says %d", v->name, n,
                           v->rank);
        for (int k = 0; k < n; k++) {
            if (v->rank >= 0 && v->dims[k] >= 0 && v->dims[k] != d[k])
                return vf__err(err, VF_EINVAL, path, "--input %s: dim %d is %lld in the graph, %lld given", v->name,
                               k, (long long)v->dims[k], (long long)d[k]);
            if (v->rank >= 0)
                sym_set(t, v->sym[k], d[k]);
            s->v[g->inputs[i]].d[k] = d[k];
        }
        s->v[g->inputs[i]].rank = n;
        return VF_OK;
    }
    return vf__err(err, VF_EINVAL, path, "--input: the graph has no input named '%.*s'", (int)(eq - p), p);
}

/* Graph inputs: declared dims, --input, then symbols (axis 0 is the batch). */
static vf_status bind_inputs(const vf__graph *g, const vf__bind *b, vf__shapes *s, symtab *t, const char *path,
                             vf_error *err)
{
    for (size_t i = 0; i < g->n_inputs; i++) {
        const vf__gvalue *v = &g->v[g->inputs[i]];
        vf__vshape *x = &s->v[g->inputs[i]];
        x->rank = v->rank;
        for (int32_t k = 0; k < v->rank; k++)
            x->d[k] = v->dims[k];
    }
    for (const char *p = b->inputs; p && *p;) {
        const char *e = strchr(p, ';');
        if (!e)
            e = p + strlen(p);
        vf_status st = e > p ? bind_one(g, s, t, p, e, path, err) : VF_OK;
        if (st != VF_OK)
            return st;
        p = *e ? e + 1 : e;
    }
    for (size_t i = 0; i < g->n_inputs; i++) { /* the batch: axis 0's symbol */
        const vf__gvalue *v = &g->v[g->inputs[i]];
        if (v->rank > 0 && s->v[g->inputs[i]].d[0] < 0)
            sym_set(t, v->sym[0] ? v->sym[0] : "", (int64_t)s->batch);
    }
    for (size_t i = 0; i < g->n_inputs; i++) {
        const vf__gvalue *v = &g->v[g->inputs[i]];
        vf__vshape *x = &s->v[g->inputs[i]];
        if (x->rank < 0)
            return vf__err(err, VF_EINVAL, path, "graph input '%s' states no shape: give --input %s=DIMS", v->name,
                           v->name);
        for (int32_t k = 0; k < x->rank; k++) {
            if (x->d[k] >= 0)
                continue;
            x->d[k] = k == 0 ? (int64_t)s->batch : sym_get(t, v->sym[k]);
            if (x->d[k] < 0)
                return vf__err(err, VF_EINVAL, path, "graph input '%s' dim %d ('%s') is symbolic: give --input "
                               "%s=DIMS", v->name, (int)k, v->sym[k] ? v->sym[k] : "?", v->name);
        }
        x->elem = v->elem ? v->elem : VF_ONNX_FLOAT;
        x->dyn = true;
    }
    return VF_OK;
}

/* A node could not be inferred: its declared value_info (symbols bound) if
 * any, else the outputs stay unknown. */
static bool declared(const vf__graph *g, const vf__gnode *n, vf__shapes *s, const symtab *t)
{
    bool all = true;
    for (uint32_t k = 0; k < n->n_out; k++) {
        uint32_t o = n->out[k];
        if (o == VF_GRAPH_NONE)
            continue;
        const vf__gvalue *v = &g->v[o];
        vf__vshape *x = &s->v[o];
        if (vf__vshape_known(x))
            continue;
        if (!v->declared) {
            all = false;
            continue;
        }
        x->rank = v->rank;
        x->elem = v->elem;
        for (int32_t d = 0; d < v->rank; d++)
            x->d[d] = v->dims[d] >= 0 ? v->dims[d] : sym_get(t, v->sym[d]);
        all = all && vf__vshape_known(x);
    }
    return all;
}

static void note_unknown(vf__shapes *s, const vf__gnode *n, bool root)
{
    s->n_unknown++;
    if (!root)
        return;
    s->n_root_unknown++;
    size_t len = strlen(s->unknown);
    if (len < sizeof s->unknown - 64)
        snprintf(s->unknown + len, sizeof s->unknown - len, "%s%s '%.40s'", len ? ", " : "", n->op, n->name);
}

static void run_node(const vf__graph *g, const vf__gnode *n, vf__shapes *s, const symtab *t)
{
    bool inputs_known = true, dyn = false;
    for (uint32_t k = 0; k < n->n_in; k++) {
        uint32_t x = n->in[k];
        if (x == VF_GRAPH_NONE)
            continue;
        inputs_known = inputs_known && vf__vshape_known(&s->v[x]);
        dyn = dyn || s->v[x].dyn;
    }
    bool ok = !n->subgraph && vf__infer_node(g, n, s);
    for (uint32_t k = 0; ok && k < n->n_out; k++)
        ok = n->out[k] == VF_GRAPH_NONE || vf__vshape_known(&s->v[n->out[k]]);
    if (!ok && !declared(g, n, s, t))
        note_unknown(s, n, inputs_known);
    /* shapes are metadata: what reads only them is computed from constants */
    bool meta = !strcmp(n->op, "Shape") || !strcmp(n->op, "Size");
    for (uint32_t k = 0; k < n->n_out; k++)
        if (n->out[k] != VF_GRAPH_NONE)
            s->v[n->out[k]].dyn = dyn && !meta;
}

vf_status vf__graph_shapes(const vf_model *m, const vf__bind *b, vf__shapes *s, vf_error *err)
{
    const vf__graph *g = m->graph;
    memset(s, 0, sizeof *s);
    s->batch = b->batch ? b->batch : 1;
    s->v = malloc((g->n_v ? g->n_v : 1) * sizeof *s->v);
    s->bytes = calloc(g->n_v ? g->n_v : 1, sizeof *s->bytes);
    if (!s->v || !s->bytes) {
        vf__shapes_free(s);
        return vf__err(err, VF_ENOMEM, m->source, "out of memory");
    }
    for (size_t i = 0; i < g->n_v; i++) {
        vf__vshape *x = &s->v[i];
        const vf__gvalue *v = &g->v[i];
        memset(x, 0, sizeof *x);
        x->rank = -1;
        x->kn = -1;
        if (v->tensor == VF_GRAPH_NONE)
            continue;
        x->elem = v->elem;
        x->rank = v->rank;
        memcpy(x->d, v->dims, sizeof x->d);
        if (v->konst) {
            if (!vf__shapes_setk(s, (uint32_t)i, v->konst->iv, (int32_t)v->konst->n))
                goto nomem;
            x->kf = v->konst->fv;
        }
    }
    symtab t = {.n = 0};
    vf_status st = bind_inputs(g, b, s, &t, m->source, err);
    if (st != VF_OK) {
        vf__shapes_free(s);
        return st;
    }
    for (size_t i = 0; i < g->n_node; i++)
        run_node(g, &g->node[g->order[i]], s, &t);
    if (s->n_pool > s->cap_pool) /* setk failed inside a node */
        goto nomem;
    for (size_t i = 0; i < g->n_v; i++) {
        const vf__vshape *x = &s->v[i];
        if (x->dyn && vf__vshape_known(x)) {
            uint64_t n = vf__vshape_numel(x), by = vf__onnx_elem_bytes(x->elem ? x->elem : VF_ONNX_FLOAT, n);
            s->bytes[i] = n == UINT64_MAX ? UINT64_MAX : by;
        }
    }
    return VF_OK;
nomem:
    vf__shapes_free(s);
    return vf__err(err, VF_ENOMEM, m->source, "out of memory");
}
