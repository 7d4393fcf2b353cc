/* graph_freeze.c — which initializers do not train. A graph does not say
 * which parameters have requires_grad=False, nor which constants are a
 * module's buffers beside the BatchNorm statistics the reader finds by use
 * (read/onnx.c): the caller says so, by patterns on the initializers' names
 * (--freeze) and by naming torchvision's FrozenBatchNorm2d (--frozen-bn),
 * whose exported pattern is recognised here. */
#include "graph_mem.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PATTERNS 32

/* The C of an initializer-backed value of shape [1, C, 1, 1]; 0 when it is not one. */
static uint64_t per_channel(const vf_model *m, const vf__graph *g, uint32_t v)
{
    uint32_t src = v == VF_GRAPH_NONE ? VF_GRAPH_NONE : vf__graph_init_behind(g, v);
    if (src == VF_GRAPH_NONE || g->v[src].tensor == VF_GRAPH_NONE)
        return 0;
    const vf_tensor *t = &m->tensors[g->v[src].tensor];
    bool ok = t->n_dims == 4 && t->shape[0] == 1 && t->shape[2] == 1 && t->shape[3] == 1;
    return ok ? t->shape[1] : 0;
}

/* Node p is op with one activation operand and one [1, C, 1, 1] constant:
 * the activation and the constant. */
static bool channel_step(const vf_model *m, const vf__graph *g, uint32_t p, const char *op, uint64_t c,
                         uint32_t *act, uint32_t *k)
{
    if (p == VF_GRAPH_NONE || p >= g->n_node)
        return false;
    const vf__gnode *n = &g->node[p];
    if (strcmp(n->op, op) || n->n_in != 2 || n->n_out != 1)
        return false;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t a = n->in[i], b = n->in[1 - i];
        if (a != VF_GRAPH_NONE && vf__graph_init_behind(g, a) == VF_GRAPH_NONE && per_channel(m, g, b) == c) {
            *act = a, *k = b;
            return true;
        }
    }
    return false;
}

/* FrozenBatchNorm2d.forward is x * scale + bias with scale and bias [1, C, 1, 1]
 * computed from its four buffers (torchvision/ops/misc.py); the exporter folds
 * them to constants: Conv (C filters) -> Mul -> Add. Both constants are
 * buffers. Returns the layers found. */
static size_t frozen_bn(const vf_model *m, const vf__graph *g, uint8_t *fz)
{
    size_t found = 0;
    for (uint32_t i = 0; i < g->n_node; i++) {
        const vf__gnode *add = &g->node[i];
        if (strcmp(add->op, "Add") || add->n_in != 2)
            continue;
        uint64_t c = per_channel(m, g, add->in[0]) ? per_channel(m, g, add->in[0]) : per_channel(m, g, add->in[1]);
        uint32_t y, kb, x, ks;
        if (!c || !channel_step(m, g, i, "Add", c, &y, &kb) ||
            !channel_step(m, g, g->v[y].producer, "Mul", c, &x, &ks))
            continue;
        uint32_t conv = g->v[x].producer;
        if (conv == VF_GRAPH_NONE || conv >= g->n_node || strcmp(g->node[conv].op, "Conv") ||
            g->node[conv].n_in < 2)
            continue;
        uint32_t w = vf__graph_init_behind(g, g->node[conv].in[1]);
        if (w == VF_GRAPH_NONE || g->v[w].tensor == VF_GRAPH_NONE || m->tensors[g->v[w].tensor].shape[0] != c)
            continue;
        fz[kb] = fz[ks] = 1;
        found++;
    }
    return found;
}

/* The --freeze patterns, one a line, compiled into re (at most MAX_PATTERNS). */
static vf_status compile(const char *spec, regex_t *re, size_t *n, const char *path, vf_error *err)
{
    *n = 0;
    for (const char *p = spec; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len) {
            char pat[512];
            if (*n == MAX_PATTERNS || len >= sizeof pat)
                return vf__err(err, VF_EINVAL, path, "--freeze: at most %d patterns of %zu bytes each",
                               MAX_PATTERNS, sizeof pat - 1);
            memcpy(pat, p, len);
            pat[len] = '\0';
            if (regcomp(&re[*n], pat, REG_EXTENDED | REG_NOSUB) != 0)
                return vf__err(err, VF_EINVAL, path, "--freeze: '%s' is not a POSIX extended regular expression",
                               pat);
            (*n)++;
        }
        p += len + (e ? 1 : 0);
    }
    return VF_OK;
}

vf_status vf__graph_frozen(const vf_model *m, const vf_estimate_opts *o, vf__frozen *f, vf_error *err)
{
    const vf__graph *g = m->graph;
    memset(f, 0, sizeof *f);
    if (!(o->graph_freeze && *o->graph_freeze) && !o->graph_frozen_bn)
        return VF_OK;
    f->v = calloc(g->n_v ? g->n_v : 1, 1);
    if (!f->v)
        return vf__err(err, VF_ENOMEM, m->source, "out of memory");
    regex_t re[MAX_PATTERNS];
    size_t n;
    vf_status st = compile(o->graph_freeze, re, &n, m->source, err);
    for (size_t i = 0; st == VF_OK && i < g->n_v; i++) {
        if (!g->v[i].name || vf__graph_init_behind(g, (uint32_t)i) == VF_GRAPH_NONE)
            continue;
        for (size_t k = 0; k < n && !f->v[i]; k++)
            f->v[i] = regexec(&re[k], g->v[i].name, 0, NULL, 0) == 0;
        f->by_name += f->v[i];
    }
    for (size_t k = 0; k < n; k++)
        regfree(&re[k]);
    if (st == VF_OK && o->graph_frozen_bn)
        f->frozen_bn = frozen_bn(m, g, f->v);
    if (st != VF_OK)
        vf__frozen_free(f);
    return st;
}

void vf__frozen_free(vf__frozen *f)
{
    free(f->v);
    memset(f, 0, sizeof *f);
}
