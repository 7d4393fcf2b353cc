/* graph_loops.c — Python loops over a ModuleList in a module's forward, as
 * an exported graph unrolls them, and the locals they rebind: each value the
 * loop's body makes at the module's level (a functional op's result, a
 * list item's output) is bound to a local that the next iteration rebinds
 * (Python frees the old tensor only then, after the new one is made), and
 * the last iteration's values stay bound until the forward returns.
 * torchvision 0.14 ops/feature_pyramid_network.py,
 * FeaturePyramidNetwork.forward:
 *     for idx in range(len(x) - 2, -1, -1):
 *         inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
 *         inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
 *         last_inner = inner_lateral + inner_top_down
 *         results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
 * keeps inner_lateral, inner_top_down and last_inner of idx 0 (three
 * 256-channel maps at the finest level) through extra_blocks to its return.
 * Found from scoped node names (torch.onnx's "/m/fpn/inner_blocks.2/..."):
 * a module S calling children "L.0", "L.1", ... of one list L (not a
 * Sequential's own children, whose loop variable is their argument and
 * result), the module-level events between two calls of L's items the same
 * sequence of operators and children, at least twice. */
#include "memory/graph/graph_mem.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LISTS 64u  /* (module, list) pairs examined */
#define MAX_OUTS 4u    /* a child's outputs taken as the event's values */

typedef struct event {
    const char *label;   /* operator, or the child's name without its index */
    size_t len;
    bool item;           /* a call of one of the list's items */
    uint32_t nv;
    uint32_t v[MAX_OUTS];
    uint32_t at[MAX_OUTS]; /* position each value is made at */
} event;

/* Length of the component of name at off (up to '/' or the end). */
static size_t comp_len(const char *name, size_t off) { return strcspn(name + off, "/"); }

/* c (length n) is "L.<digits>": the length of L, else 0. */
static size_t list_stem(const char *c, size_t n)
{
    size_t k = n;
    while (k > 0 && c[k - 1] >= '0' && c[k - 1] <= '9')
        k--;
    return k > 1 && k < n && c[k - 1] == '.' ? k - 1 : 0;
}

typedef struct cand {
    const char *s;       /* the module's scope: name prefix, without the trailing '/' */
    size_t slen;
    const char *l;       /* the list's name */
    size_t llen;
} cand;

static bool same(const char *a, size_t na, const char *b, size_t nb) { return na == nb && !memcmp(a, b, na); }

/* Every (module, list) pair: a child "L.N" of S whose name's stem is not S's own last component. */
static size_t find_lists(const vf__graph *g, cand *c)
{
    size_t n = 0;
    for (size_t p = 0; p < g->n_node; p++) {
        const char *nm = g->node[g->order[p]].name;
        if (nm[0] != '/')
            continue;
        size_t prev = 1, prev_len = comp_len(nm, 1);
        for (size_t off = prev + prev_len; nm[off] == '/';) {
            size_t len = comp_len(nm, off + 1);
            if (!nm[off + 1 + len])
                break; /* the op's own name, not a scope */
            size_t stem = list_stem(nm + off + 1, len);
            if (stem && !same(nm + off + 1, stem, nm + prev, prev_len)) {
                bool dup = false;
                for (size_t i = 0; i < n && !dup; i++)
                    dup = same(c[i].s, c[i].slen, nm, off) && same(c[i].l, c[i].llen, nm + off + 1, stem);
                if (!dup && n < MAX_LISTS)
                    c[n++] = (cand){nm, off, nm + off + 1, stem};
            }
            prev = off + 1, prev_len = len;
            off += 1 + len;
        }
    }
    return n;
}

/* The child component of node name nm under scope (s, slen): its offset and length; 0 when nm is at S's level. */
static size_t child_of(const char *nm, size_t slen, size_t *clen)
{
    size_t len = comp_len(nm, slen + 1);
    if (!nm[slen + 1 + len])
        return 0; /* an operator of S itself */
    *clen = len;
    return slen + 1;
}

static bool inside(const char *nm, const cand *c) { return !strncmp(nm, c->s, c->slen) && nm[c->slen] == '/'; }

/* The module-level events of S in order, with the values they make that S's level reads. */
static size_t events(const vf__graph *g, const vf__shapes *s, const vf__live *L, const cand *c, event *ev,
                     size_t cap, uint32_t *ev_of, uint32_t *scope_end)
{
    size_t n = 0;
    const char *cur = NULL;
    size_t cur_len = 0;
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *nd = &g->node[g->order[p]];
        if (!inside(nd->name, c))
            continue;
        *scope_end = (uint32_t)p;
        size_t clen = 0, off = child_of(nd->name, c->slen, &clen);
        if (!off) { /* S's own operator: one event per activation it makes */
            cur = NULL;
            for (uint32_t k = 0; k < nd->n_out; k++) {
                uint32_t o = nd->out[k];
                if (o == VF_GRAPH_NONE || !s->v[o].dyn || L->fu.inner[g->order[p]] || n >= cap)
                    continue;
                ev[n] = (event){.label = nd->op, .len = strlen(nd->op), .nv = 1, .v = {o}, .at = {(uint32_t)p}};
                ev_of[o] = (uint32_t)n++;
            }
            continue;
        }
        const char *child = nd->name + off;
        if (!cur || !same(cur, cur_len, child, clen)) {
            if (n >= cap)
                continue;
            cur = child, cur_len = clen;
            size_t stem = list_stem(child, clen);
            bool item = stem && same(child, stem, c->l, c->llen);
            ev[n] = (event){.label = child, .len = stem ? stem : clen, .item = item};
            n++;
        }
        for (uint32_t k = 0; k < nd->n_out; k++)
            if (nd->out[k] != VF_GRAPH_NONE && s->v[nd->out[k]].dyn)
                ev_of[nd->out[k]] = (uint32_t)(n - 1) | 0x80000000u; /* made inside the child */
    }
    return n;
}

/* Values a child makes that something outside it reads: its outputs. */
static void child_outputs(const vf__graph *g, const vf__shapes *s, const cand *c, event *ev, size_t nev,
                          const uint32_t *ev_of, const uint32_t *pos)
{
    for (size_t p = 0; p < g->n_node; p++) {
        const vf__gnode *nd = &g->node[g->order[p]];
        size_t clen = 0, off = inside(nd->name, c) ? child_of(nd->name, c->slen, &clen) : 0;
        for (uint32_t k = 0; k < nd->n_in; k++) {
            uint32_t x = nd->in[k];
            if (x == VF_GRAPH_NONE || !s->v[x].dyn || ev_of[x] == VF_GRAPH_NONE || !(ev_of[x] & 0x80000000u))
                continue;
            event *e = &ev[ev_of[x] & 0x7fffffffu];
            if ((ev_of[x] & 0x7fffffffu) >= nev || (off && same(nd->name + off, clen, e->label, comp_len(e->label, 0))))
                continue; /* read inside the same child */
            bool have = false;
            for (uint32_t i = 0; i < e->nv && !have; i++)
                have = e->v[i] == x;
            if (!have && e->nv < MAX_OUTS) {
                e->v[e->nv] = x;
                e->at[e->nv++] = pos[g->v[x].producer];
            }
        }
    }
}

static bool same_event(const event *a, const event *b)
{
    return a->item == b->item && a->nv == b->nv && same(a->label, a->len, b->label, b->len);
}

/* Iterations: runs of list-item calls whose bodies (the events from one call
 * to the next) agree; the last body may be followed by more events. */
static void bind_runs(const event *ev, size_t nev, uint32_t scope_end, size_t *starts, uint32_t *bind_end)
{
    size_t ns = 0;
    for (size_t i = 0; i < nev; i++)
        if (ev[i].item)
            starts[ns++] = i;
    for (size_t a = 0; a + 1 < ns;) {
        size_t body = starts[a + 1] - starts[a], b = a + 1;
        for (; b < ns; b++) { /* iteration b has the same body as a */
            size_t len = b + 1 < ns ? starts[b + 1] - starts[b] : nev - starts[b];
            if (len < body || (b + 1 < ns && len != body))
                break;
            bool eq = true;
            for (size_t j = 0; j < body && eq; j++)
                eq = same_event(&ev[starts[a] + j], &ev[starts[b] + j]);
            if (!eq)
                break;
        }
        if (b - a < 2) { /* one iteration alone is no loop */
            a++;
            continue;
        }
        for (size_t it = a; it < b; it++)
            for (size_t j = 0; j < body; j++) {
                const event *e = &ev[starts[it] + j];
                const event *nx = it + 1 < b ? &ev[starts[it + 1] + j] : NULL;
                for (uint32_t k = 0; k < e->nv; k++)
                    bind_end[e->v[k]] = nx ? nx->at[k] : scope_end;
            }
        a = b;
    }
}

vf_status vf__live_loops(const vf__graph *g, const vf__shapes *s, const vf__live *L, uint32_t *bind_end)
{
    for (size_t i = 0; i < g->n_v; i++)
        bind_end[i] = VF_GRAPH_NONE;
    cand c[MAX_LISTS];
    size_t nc = find_lists(g, c);
    if (!nc)
        return VF_OK;
    size_t cap = g->n_node + 1;
    event *ev = malloc(cap * sizeof *ev);
    size_t *starts = malloc(cap * sizeof *starts);
    uint32_t *ev_of = malloc((g->n_v ? g->n_v : 1) * sizeof *ev_of);
    vf_status st = ev && starts && ev_of ? VF_OK : VF_ENOMEM;
    for (size_t i = 0; st == VF_OK && i < nc; i++) {
        memset(ev_of, 0xff, (g->n_v ? g->n_v : 1) * sizeof *ev_of);
        uint32_t scope_end = 0;
        size_t nev = events(g, s, L, &c[i], ev, cap, ev_of, &scope_end);
        child_outputs(g, s, &c[i], ev, nev, ev_of, L->pos);
        bind_runs(ev, nev, scope_end, starts, bind_end);
    }
    free(ev);
    free(starts);
    free(ev_of);
    return st;
}
