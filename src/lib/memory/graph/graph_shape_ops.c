/* graph_shape_ops.c — shape inference per operator, as the ONNX operator
 * specification (onnx/docs/Operators.md) defines each output's shape, with
 * small integer contents carried through the shape arithmetic exporters
 * write (Shape -> Gather -> Unsqueeze -> Concat -> Reshape). An operator not
 * listed, or one whose needed constants are unknown, returns false: the
 * caller names it and the estimate is partial. */
#include "model/graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define K VF_GRAPH_MAX_CONST

/* ---- shape helpers (the driver, graph_shape.c, uses them too) ---- */

bool vf__vshape_known(const vf__vshape *s)
{
    if (s->rank < 0)
        return false;
    for (int32_t i = 0; i < s->rank; i++)
        if (s->d[i] < 0)
            return false;
    return true;
}

uint64_t vf__vshape_numel(const vf__vshape *s)
{
    uint64_t n = 1;
    for (int32_t i = 0; i < s->rank; i++)
        if (s->d[i] < 0 || vf__mul_overflow(n, (uint64_t)s->d[i], &n))
            return UINT64_MAX;
    return n;
}

bool vf__shapes_setk(vf__shapes *s, uint32_t id, const int64_t *v, int32_t kn)
{
    if (kn < 0 || kn > (int32_t)VF_GRAPH_MAX_CONST)
        return true; /* too long to keep: contents stay unknown */
    while (s->n_pool + (size_t)kn > s->cap_pool) {
        size_t nc = s->cap_pool ? s->cap_pool * 2 : 1024;
        int64_t *p = realloc(s->pool, nc * sizeof *p);
        if (!p)
            return false;
        s->pool = p;
        s->cap_pool = nc;
    }
    if (kn)
        memcpy(s->pool + s->n_pool, v, (size_t)kn * sizeof *v);
    s->v[id].kn = kn;
    s->v[id].koff = (uint32_t)s->n_pool;
    s->n_pool += (size_t)kn;
    return true;
}

typedef struct ctx {
    const vf__graph *g;
    const vf__gnode *n;
    vf__shapes *s;
} ctx;

static const vf__vshape *in(const ctx *c, uint32_t k)
{
    return k < c->n->n_in && c->n->in[k] != VF_GRAPH_NONE ? &c->s->v[c->n->in[k]] : NULL;
}

static vf__vshape *out(const ctx *c, uint32_t k)
{
    return k < c->n->n_out && c->n->out[k] != VF_GRAPH_NONE ? &c->s->v[c->n->out[k]] : NULL;
}

static int64_t opset(const ctx *c) { return c->g->opset ? c->g->opset : 1; }

/* Known integer contents of input k into v (at most max); -1 when unknown. */
static int kvals(const ctx *c, uint32_t k, int64_t *v, int max)
{
    const vf__vshape *x = in(c, k);
    if (!x || x->kn < 0 || x->kn > max)
        return -1;
    if (x->kn)
        memcpy(v, c->s->pool + x->koff, (size_t)x->kn * sizeof *v);
    return x->kn;
}

/* Attribute ints into v; -1 absent, -2 too long. */
static int aints(const ctx *c, const char *name, int64_t *v, int max)
{
    const vf__gattr *a = vf__gattr_find(c->n, name);
    if (!a)
        return -1;
    if (a->n_ints > (uint32_t)max || (a->n_ints && !a->ints))
        return -2;
    if (a->n_ints) /* memcpy from NULL is undefined even for 0 bytes */
        memcpy(v, a->ints, a->n_ints * sizeof *v);
    return (int)a->n_ints;
}

/* Ints given as an attribute before opset `since`, as input k from it on. */
static int ints_attr_or_input(const ctx *c, const char *name, int64_t since, uint32_t k, int64_t *v, int max)
{
    if (opset(c) < since || vf__gattr_find(c->n, name))
        return aints(c, name, v, max);
    if (!in(c, k))
        return -1;
    int r = kvals(c, k, v, max);
    return r < 0 ? -3 : r; /* -3: given but unknown */
}

static bool setk(const ctx *c, uint32_t k, const int64_t *v, int n)
{
    vf__vshape *o = out(c, k);
    if (!o)
        return true;
    if (!vf__shapes_setk(c->s, c->n->out[k], v, n)) {
        c->s->n_pool = c->s->cap_pool + 1; /* reported as no memory by the caller */
        return false;
    }
    return true;
}

static void copy_shape(vf__vshape *o, const vf__vshape *x)
{
    o->rank = x->rank;
    memcpy(o->d, x->d, sizeof o->d);
}

static bool norm_axis(int64_t *a, int32_t rank)
{
    if (*a < 0)
        *a += rank;
    return *a >= 0 && *a < rank;
}

static bool set_vec(vf__vshape *o, int32_t elem, int64_t n)
{
    o->elem = elem;
    o->rank = 1;
    o->d[0] = n;
    return true;
}

/* ---- same shape ---- */

static bool op_same(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 0)
        return false;
    copy_shape(o, x);
    o->elem = x->elem;
    const char *op = c->n->op;
    if (!strcmp(op, "IsNaN") || !strcmp(op, "IsInf") || !strcmp(op, "Not"))
        o->elem = VF_ONNX_BOOL;
    if (!strcmp(op, "Cast"))
        o->elem = (int32_t)vf__gattr_int(c->n, "to", x->elem);
    if (!strcmp(op, "CastLike") && in(c, 1))
        o->elem = in(c, 1)->elem;
    if (x->kn >= 0 && (!strcmp(op, "Identity") || !strcmp(op, "Cast") || !strcmp(op, "Neg") ||
                       !strcmp(op, "Abs") || !strcmp(op, "Floor") || !strcmp(op, "Ceil"))) {
        int64_t v[K];
        int nk = kvals(c, 0, v, K);
        for (int i = 0; i < nk; i++)
            v[i] = op[0] == 'N' ? -v[i] : op[0] == 'A' && v[i] < 0 ? -v[i] : v[i];
        if (!setk(c, 0, v, nk))
            return false;
        o->kf = x->kf;
    }
    for (uint32_t k = 1; k < c->n->n_out; k++) { /* Dropout's mask; a norm's saved statistics */
        vf__vshape *m = out(c, k);
        if (!m)
            continue;
        copy_shape(m, x);
        m->elem = !strcmp(op, "Dropout") ? VF_ONNX_BOOL : VF_ONNX_FLOAT;
        if (!strcmp(op, "BatchNormalization")) /* running mean and variance: [C] */
            return x->rank >= 2 && set_vec(m, x->elem, x->d[1]);
    }
    return true;
}

/* LayerNormalization: Y like X; Mean and InvStdDev keep dims before axis, 1 after. */
static bool op_layernorm(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    if (!op_same(c))
        return false;
    int64_t axis = vf__gattr_int(c->n, "axis", -1);
    if (!norm_axis(&axis, x->rank))
        return false;
    for (uint32_t k = 1; k < c->n->n_out; k++) {
        vf__vshape *m = out(c, k);
        for (int32_t d = (int32_t)axis; m && d < m->rank; d++)
            m->d[d] = 1;
    }
    return true;
}

/* ---- broadcasting ---- */

static bool broadcast(const vf__vshape *const *xs, int nx, vf__vshape *o)
{
    int32_t r = 0;
    for (int i = 0; i < nx; i++) {
        if (!xs[i] || xs[i]->rank < 0)
            return false;
        if (xs[i]->rank > r)
            r = xs[i]->rank;
    }
    for (int32_t d = 0; d < r; d++) {
        int64_t v = 1;
        for (int i = 0; i < nx; i++) {
            int32_t k = d - (r - xs[i]->rank);
            if (k < 0)
                continue;
            int64_t e = xs[i]->d[k];
            if (e < 0)
                return false;
            if (e != 1) {
                if (v != 1 && v != e)
                    return false;
                v = e;
            }
        }
        o->d[d] = v;
    }
    o->rank = r;
    return true;
}

static int64_t arith(char op, int64_t a, int64_t b)
{
    switch (op) {
    case 'A': return a + b;
    case 'S': return a - b;
    case 'M': return a * b;
    case 'D': return b ? a / b : 0;
    case 'm': { /* Mod with fmod=0: the remainder takes the divisor's sign, as Python's % */
        if (!b)
            return 0;
        int64_t r = a % b;
        return r && ((r < 0) != (b < 0)) ? r + b : r;
    }
    case 'E': return a == b;
    case 'x': return a > b ? a : b;
    case 'n': return a < b ? a : b;
    default: return 0;
    }
}

/* Add, Sub, Mul, Div, Pow, comparisons, logical ops, Max, Min, Sum, Mean, Where. */
static bool op_broadcast(const ctx *c)
{
    const vf__vshape *xs[16];
    int nx = 0;
    for (uint32_t k = 0; k < c->n->n_in && nx < 16; k++)
        if (in(c, k))
            xs[nx++] = in(c, k);
    vf__vshape *o = out(c, 0);
    if (!o || !nx || !broadcast(xs, nx, o))
        return false;
    const char *op = c->n->op;
    bool cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
               !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual") || !strcmp(op, "And") ||
               !strcmp(op, "Or") || !strcmp(op, "Xor");
    bool where = !strcmp(op, "Where");
    o->elem = cmp ? VF_ONNX_BOOL : where && nx > 1 ? xs[1]->elem : xs[0]->elem;
    /* integer shape arithmetic on vectors */
    uint64_t nel = vf__vshape_numel(o);
    char code = !strcmp(op, "Add") ? 'A' : !strcmp(op, "Sub") ? 'S' : !strcmp(op, "Mul") ? 'M'
              : !strcmp(op, "Div") ? 'D' : !strcmp(op, "Equal") ? 'E' : !strcmp(op, "Max") ? 'x'
              : !strcmp(op, "Min") ? 'n' : where ? 'W'
              : !strcmp(op, "Mod") && !vf__gattr_int(c->n, "fmod", 0) ? 'm' : 0;
    if (!code || nel > K || o->rank > 1 || nx < 2)
        return true;
    int64_t a[K], b[K], w[K], r[K];
    int na = kvals(c, 0, a, K), nb = kvals(c, 1, b, K), nw = where ? kvals(c, 2, w, K) : 1;
    if (na < 1 || nb < 1 || nw < 1)
        return true;
    for (uint64_t i = 0; i < nel; i++) {
        int64_t x = a[na == 1 ? 0 : i], y = b[nb == 1 ? 0 : i];
        r[i] = where ? (x ? y : w[nw == 1 ? 0 : i]) : arith(code, x, y);
    }
    return setk(c, 0, r, (int)nel);
}

/* ---- convolution and pooling ---- */

/* Spatial output sizes from kernel k (nk dims), strides, pads, dilations,
 * auto_pad and ceil_mode, as Operators.md gives them for Conv and the pools. */
static bool spatial(const ctx *c, const vf__vshape *x, const int64_t *k, int nk, vf__vshape *o)
{
    int64_t st[VF_MAX_DIMS], dl[VF_MAX_DIMS], pd[2 * VF_MAX_DIMS];
    int ns = aints(c, "strides", st, VF_MAX_DIMS), nd = aints(c, "dilations", dl, VF_MAX_DIMS);
    int np = aints(c, "pads", pd, 2 * VF_MAX_DIMS);
    const vf__gattr *ap = vf__gattr_find(c->n, "auto_pad");
    const char *pad = ap && ap->s ? ap->s : "NOTSET";
    bool ceil_mode = vf__gattr_int(c->n, "ceil_mode", 0) != 0;
    if (nk != x->rank - 2 || (ns >= 0 && ns != nk) || (nd >= 0 && nd != nk) || (np >= 0 && np != 2 * nk) ||
        ns == -2 || nd == -2 || np == -2)
        return false;
    for (int i = 0; i < nk; i++) {
        int64_t s = ns > 0 ? st[i] : 1, d = nd > 0 ? dl[i] : 1, in = x->d[2 + i];
        int64_t pb = np > 0 ? pd[i] : 0, pe = np > 0 ? pd[nk + i] : 0;
        if (s <= 0 || d <= 0 || k[i] <= 0 || in < 0 || pb < 0 || pe < 0)
            return false;
        int64_t ext = (k[i] - 1) * d + 1, v;
        if (!strcmp(pad, "SAME_UPPER") || !strcmp(pad, "SAME_LOWER")) {
            v = (in + s - 1) / s;
        } else if (!strcmp(pad, "VALID")) {
            v = in >= ext ? (in - ext) / s + 1 : 0;
        } else {
            int64_t span = in + pb + pe - ext;
            if (span < 0)
                return false;
            v = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
            if (ceil_mode && (v - 1) * s >= in + pb) /* the last window may not start in the end padding */
                v--;
        }
        o->d[2 + i] = v;
    }
    o->rank = x->rank;
    o->d[0] = x->d[0];
    return true;
}

static bool op_conv(const ctx *c)
{
    const vf__vshape *x = in(c, 0), *w = in(c, 1);
    vf__vshape *o = out(c, 0);
    if (!x || !w || !o || x->rank < 3 || w->rank != x->rank)
        return false;
    int64_t k[VF_MAX_DIMS];
    int nk = aints(c, "kernel_shape", k, VF_MAX_DIMS);
    if (nk < 0) {
        nk = w->rank - 2;
        memcpy(k, w->d + 2, (size_t)nk * sizeof *k);
    }
    if (!spatial(c, x, k, nk, o))
        return false;
    o->d[1] = w->d[0];
    o->elem = x->elem;
    return true;
}

static bool op_convtranspose(const ctx *c)
{
    const vf__vshape *x = in(c, 0), *w = in(c, 1);
    vf__vshape *o = out(c, 0);
    if (!x || !w || !o || x->rank < 3 || w->rank != x->rank)
        return false;
    int nk = x->rank - 2;
    int64_t k[VF_MAX_DIMS], st[VF_MAX_DIMS], dl[VF_MAX_DIMS], pd[2 * VF_MAX_DIMS], op[VF_MAX_DIMS],
        os[VF_MAX_DIMS];
    if (aints(c, "kernel_shape", k, VF_MAX_DIMS) != nk)
        memcpy(k, w->d + 2, (size_t)nk * sizeof *k);
    int ns = aints(c, "strides", st, VF_MAX_DIMS), nd = aints(c, "dilations", dl, VF_MAX_DIMS);
    int np = aints(c, "pads", pd, 2 * VF_MAX_DIMS), no = aints(c, "output_padding", op, VF_MAX_DIMS);
    int nos = aints(c, "output_shape", os, VF_MAX_DIMS);
    const vf__gattr *ap = vf__gattr_find(c->n, "auto_pad");
    bool same = ap && ap->s && !strncmp(ap->s, "SAME", 4);
    int64_t group = vf__gattr_int(c->n, "group", 1);
    for (int i = 0; i < nk; i++) {
        int64_t s = ns == nk ? st[i] : 1, d = nd == nk ? dl[i] : 1;
        int64_t pb = np == 2 * nk ? pd[i] : 0, pe = np == 2 * nk ? pd[nk + i] : 0, opad = no == nk ? op[i] : 0;
        int64_t v = nos >= nk ? os[nos - nk + i]
                    : same    ? x->d[2 + i] * s
                              : s * (x->d[2 + i] - 1) + opad + (k[i] - 1) * d + 1 - pb - pe;
        if (v < 0 || x->d[2 + i] < 0)
            return false;
        o->d[2 + i] = v;
    }
    o->rank = x->rank;
    o->d[0] = x->d[0];
    o->d[1] = w->d[1] * group;
    o->elem = x->elem;
    return true;
}

static bool op_pool(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t k[VF_MAX_DIMS];
    int nk = aints(c, "kernel_shape", k, VF_MAX_DIMS);
    if (!x || !o || x->rank < 3 || nk < 1 || !spatial(c, x, k, nk, o))
        return false;
    o->d[1] = x->d[1];
    o->elem = x->elem;
    vf__vshape *idx = out(c, 1); /* MaxPool's Indices */
    if (idx) {
        copy_shape(idx, o);
        idx->elem = VF_ONNX_INT64;
    }
    return true;
}

static bool op_global_pool(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 3)
        return false;
    copy_shape(o, x);
    for (int32_t d = 2; d < x->rank; d++)
        o->d[d] = 1;
    o->elem = x->elem;
    return true;
}

/* ---- matrices ---- */

static bool op_gemm(const ctx *c)
{
    const vf__vshape *a = in(c, 0), *b = in(c, 1);
    vf__vshape *o = out(c, 0);
    if (!a || !b || !o || a->rank != 2 || b->rank != 2)
        return false;
    bool ta = vf__gattr_int(c->n, "transA", 0), tb = vf__gattr_int(c->n, "transB", 0);
    o->rank = 2;
    o->d[0] = a->d[ta ? 1 : 0];
    o->d[1] = b->d[tb ? 0 : 1];
    o->elem = a->elem;
    return true;
}

static bool op_matmul(const ctx *c)
{
    const vf__vshape *a = in(c, 0), *b = in(c, 1);
    vf__vshape *o = out(c, 0);
    if (!a || !b || !o || a->rank < 1 || b->rank < 1)
        return false;
    /* numpy.matmul: 1-D operands are promoted, batch dims broadcast */
    vf__vshape ba = *a, bb = *b;
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    const vf__vshape *xs[2] = {&ba, &bb};
    if (!broadcast(xs, 2, o))
        return false;
    int32_t r = o->rank;
    if (a->rank >= 2)
        o->d[r++] = a->d[a->rank - 2];
    if (b->rank >= 2)
        o->d[r++] = b->d[b->rank - 1];
    o->rank = r;
    o->elem = !strcmp(c->n->op, "MatMulInteger") ? VF_ONNX_INT32 : a->elem;
    return true;
}

/* ---- reshaping ---- */

/* The contents of a small constant x of known shape moved to o's shape:
 * output element i takes input element at[i], where axis a of the output
 * reads input axis src[a] at beg[a] + coordinate * step[a] (Transpose:
 * src = perm, beg 0, step 1; Slice: src = identity). As onnx's shape
 * inference folds them (data propagation), so that the pads or shape a
 * shape subgraph computes are known. */
static bool move_contents(const ctx *c, const vf__vshape *x, const vf__vshape *o, const int64_t *src,
                          const int64_t *beg, const int64_t *step)
{
    int64_t v[K], r[K];
    int nk = kvals(c, 0, v, K);
    uint64_t nin = vf__vshape_numel(x), nout = vf__vshape_numel(o);
    if (nk < 0 || (uint64_t)nk != nin || nout > K || o->rank != x->rank)
        return true; /* contents unknown or too long: the shape alone */
    int64_t stride[VF_MAX_DIMS];
    int64_t acc = 1;
    for (int32_t d = x->rank - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= x->d[d]; /* at most K elements in all: no overflow */
    }
    for (uint64_t i = 0; i < nout; i++) {
        uint64_t rest = i;
        int64_t at = 0;
        for (int32_t a = o->rank - 1; a >= 0; a--) {
            int64_t co = o->d[a] ? (int64_t)(rest % (uint64_t)o->d[a]) : 0;
            rest = o->d[a] ? rest / (uint64_t)o->d[a] : 0;
            int64_t ic = beg[a] + co * step[a];
            if (ic < 0 || ic >= x->d[src[a]])
                return true;
            at += ic * stride[src[a]];
        }
        r[i] = v[at];
    }
    return setk(c, 0, r, (int)nout);
}

static bool op_flatten(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t axis = vf__gattr_int(c->n, "axis", 1);
    if (!x || !o || x->rank < 0 || !vf__vshape_known(x))
        return false;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return false;
    int64_t a = 1, b = 1;
    for (int32_t d = 0; d < x->rank; d++)
        *(d < axis ? &a : &b) *= x->d[d];
    o->rank = 2;
    o->d[0] = a;
    o->d[1] = b;
    o->elem = x->elem;
    return true;
}

static bool op_reshape(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t sh[K];
    int n = opset(c) < 5 ? aints(c, "shape", sh, VF_MAX_DIMS) : kvals(c, 1, sh, VF_MAX_DIMS);
    if (!x || !o || n < 0 || n > VF_MAX_DIMS || !vf__vshape_known(x))
        return false;
    bool allowzero = vf__gattr_int(c->n, "allowzero", 0) != 0;
    uint64_t total = vf__vshape_numel(x), known = 1;
    int neg = -1;
    for (int i = 0; i < n; i++) {
        if (sh[i] == 0 && !allowzero) {
            if (i >= x->rank)
                return false;
            sh[i] = x->d[i];
        }
        if (sh[i] == -1) {
            if (neg >= 0)
                return false;
            neg = i;
            continue;
        }
        if (sh[i] < 0 || vf__mul_overflow(known, (uint64_t)sh[i], &known))
            return false;
    }
    if (neg >= 0) {
        if (!known || total % known)
            return false;
        sh[neg] = (int64_t)(total / known);
    } else if (known != total) {
        return false;
    }
    o->rank = n;
    memcpy(o->d, sh, (size_t)n * sizeof *sh);
    o->elem = x->elem;
    int64_t v[K];
    int nk = kvals(c, 0, v, K);
    return nk < 0 || setk(c, 0, v, nk);
}

static bool op_transpose(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 0)
        return false;
    int64_t p[VF_MAX_DIMS];
    int n = aints(c, "perm", p, VF_MAX_DIMS);
    if (n == -1) {
        n = x->rank;
        for (int i = 0; i < n; i++)
            p[i] = n - 1 - i;
    }
    if (n != x->rank)
        return false;
    for (int i = 0; i < n; i++) {
        if (p[i] < 0 || p[i] >= n)
            return false;
        o->d[i] = x->d[p[i]];
    }
    o->rank = n;
    o->elem = x->elem;
    int64_t beg[VF_MAX_DIMS] = {0}, step[VF_MAX_DIMS];
    for (int i = 0; i < n; i++)
        step[i] = 1;
    return !vf__vshape_known(x) || move_contents(c, x, o, p, beg, step);
}

static bool op_squeeze(const ctx *c, bool un)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t ax[VF_MAX_DIMS];
    int na = ints_attr_or_input(c, "axes", 13, 1, ax, VF_MAX_DIMS);
    if (!x || !o || x->rank < 0 || na == -2 || na == -3 || (un && na < 0))
        return false;
    int32_t r = un ? x->rank + na : x->rank;
    if (r > VF_MAX_DIMS)
        return false;
    bool mark[VF_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++) {
        if (!norm_axis(&ax[i], r))
            return false;
        mark[ax[i]] = true;
    }
    int32_t k = 0, j = 0;
    for (int32_t d = 0; d < r; d++) {
        if (un) {
            o->d[d] = mark[d] ? 1 : x->d[j++];
        } else if (na > 0 ? !mark[d] : x->d[d] != 1) {
            o->d[k++] = x->d[d];
        }
    }
    o->rank = un ? r : k;
    o->elem = x->elem;
    int64_t v[K];
    int nk = kvals(c, 0, v, K);
    return nk < 0 || setk(c, 0, v, nk);
}

static bool op_unsqueeze(const ctx *c) { return op_squeeze(c, true); }
static bool op_squeeze0(const ctx *c) { return op_squeeze(c, false); }

static bool op_concat(const ctx *c)
{
    const vf__vshape *x0 = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t axis = vf__gattr_int(c->n, "axis", 0);
    if (!x0 || !o || x0->rank < 0 || !norm_axis(&axis, x0->rank))
        return false;
    copy_shape(o, x0);
    o->elem = x0->elem;
    o->d[axis] = 0;
    int64_t v[K], part[K];
    int nv = 0;
    bool kn = true;
    for (uint32_t k = 0; k < c->n->n_in; k++) {
        const vf__vshape *x = in(c, k);
        if (!x)
            continue;
        if (x->rank != x0->rank || x->d[axis] < 0)
            return false;
        o->d[axis] += x->d[axis];
        int np = kvals(c, k, part, K);
        if (np < 0 || nv + np > (int)K)
            kn = false;
        else
            memcpy(v + nv, part, (size_t)np * sizeof *part), nv += np;
    }
    return !kn || o->rank != 1 || setk(c, 0, v, nv);
}

static bool op_split(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    int64_t axis = vf__gattr_int(c->n, "axis", 0);
    if (!x || x->rank < 0 || !norm_axis(&axis, x->rank) || x->d[axis] < 0)
        return false;
    int64_t sp[K];
    int ns = ints_attr_or_input(c, "split", 13, 1, sp, K);
    uint32_t no = c->n->n_out;
    if (ns == -2 || ns == -3 || (ns >= 0 && (uint32_t)ns != no) || no == 0 || no > K)
        return false;
    if (ns < 0) { /* equal parts, the last one smaller (num_outputs, opset 18) */
        int64_t part = (x->d[axis] + no - 1) / no;
        for (uint32_t k = 0; k < no; k++) {
            int64_t left = x->d[axis] - part * (int64_t)k;
            sp[k] = left < part ? (left > 0 ? left : 0) : part;
        }
    }
    for (uint32_t k = 0; k < no; k++) {
        vf__vshape *o = out(c, k);
        if (!o)
            continue;
        copy_shape(o, x);
        o->d[axis] = sp[k];
        o->elem = x->elem;
    }
    return true;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static bool op_slice(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t st[VF_MAX_DIMS], en[VF_MAX_DIMS], ax[VF_MAX_DIMS], sp[VF_MAX_DIMS];
    int n, na, ns;
    if (opset(c) < 10) {
        n = aints(c, "starts", st, VF_MAX_DIMS);
        if (aints(c, "ends", en, VF_MAX_DIMS) != n)
            return false;
        na = aints(c, "axes", ax, VF_MAX_DIMS);
        ns = -1;
    } else {
        n = kvals(c, 1, st, VF_MAX_DIMS);
        if (kvals(c, 2, en, VF_MAX_DIMS) != n)
            return false;
        na = in(c, 3) ? kvals(c, 3, ax, VF_MAX_DIMS) : -1;
        ns = in(c, 4) ? kvals(c, 4, sp, VF_MAX_DIMS) : -1;
        if ((in(c, 3) && na != n) || (in(c, 4) && ns != n))
            return false;
    }
    if (!x || !o || x->rank < 0 || n < 0)
        return false;
    copy_shape(o, x);
    o->elem = x->elem;
    int64_t src[VF_MAX_DIMS], beg[VF_MAX_DIMS] = {0}, stp[VF_MAX_DIMS];
    for (int32_t d = 0; d < x->rank; d++)
        src[d] = d, stp[d] = 1;
    for (int i = 0; i < n; i++) {
        int64_t a = na >= 0 ? ax[i] : i, step = ns >= 0 ? sp[i] : 1;
        if (!norm_axis(&a, x->rank) || step == 0 || x->d[a] < 0)
            return false;
        int64_t dim = x->d[a], s = st[i], e = en[i];
        if (s < 0)
            s += dim;
        if (e < 0 && e > INT64_MIN / 2)
            e += dim;
        int64_t len;
        if (step > 0) {
            s = clamp64(s, 0, dim), e = clamp64(e, 0, dim);
            len = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = clamp64(s, 0, dim - 1), e = clamp64(e, -1, dim - 1);
            len = s > e ? (s - e - step - 1) / -step : 0;
        }
        o->d[a] = len;
        beg[a] = s, stp[a] = step;
    }
    return !vf__vshape_known(x) || move_contents(c, x, o, src, beg, stp);
}

static bool op_pad(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t p[2 * VF_MAX_DIMS], ax[VF_MAX_DIMS];
    int np = opset(c) < 11 ? aints(c, "pads", p, 2 * VF_MAX_DIMS) : kvals(c, 1, p, 2 * VF_MAX_DIMS);
    if (!x || !o || x->rank < 0 || np < 0 || np % 2)
        return false;
    int na = in(c, 3) ? kvals(c, 3, ax, VF_MAX_DIMS) : -1;
    if (in(c, 3) && na != np / 2)
        return false;
    if (na < 0) {
        if (np != 2 * x->rank)
            return false;
        na = x->rank;
        for (int i = 0; i < na; i++)
            ax[i] = i;
    }
    copy_shape(o, x);
    o->elem = x->elem;
    for (int i = 0; i < na; i++) {
        int64_t a = ax[i];
        if (!norm_axis(&a, x->rank) || x->d[a] < 0)
            return false;
        o->d[a] = x->d[a] + p[i] + p[na + i];
        if (o->d[a] < 0)
            return false;
    }
    return true;
}

/* Resize (scales or sizes inputs), Upsample (scales attribute or input). */
static bool op_resize(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 0)
        return false;
    bool up = !strcmp(c->n->op, "Upsample");
    uint32_t ks = up || opset(c) < 11 ? 1 : 2, kz = 3;
    int64_t sz[VF_MAX_DIMS];
    const vf__vshape *sc = in(c, ks);
    const vf__gattr *a = up ? vf__gattr_find(c->n, "scales") : NULL;
    copy_shape(o, x);
    o->elem = x->elem;
    if (!up && in(c, kz) && kvals(c, kz, sz, VF_MAX_DIMS) == x->rank) {
        memcpy(o->d, sz, (size_t)x->rank * sizeof *sz);
        return true;
    }
    for (int32_t d = 0; d < x->rank; d++) {
        double f;
        if (a && a->n_floats == (uint32_t)x->rank && a->floats)
            f = a->floats[d];
        else if (sc && sc->kf && sc->kn == x->rank)
            f = sc->kf[d];
        else
            return false;
        o->d[d] = (int64_t)floor((double)x->d[d] * f);
    }
    return true;
}

static bool op_gather(const ctx *c)
{
    const vf__vshape *x = in(c, 0), *ix = in(c, 1);
    vf__vshape *o = out(c, 0);
    int64_t axis = vf__gattr_int(c->n, "axis", 0);
    if (!x || !ix || !o || x->rank < 1 || ix->rank < 0 || !norm_axis(&axis, x->rank) ||
        x->rank - 1 + ix->rank > VF_MAX_DIMS)
        return false;
    int32_t r = 0;
    for (int32_t d = 0; d < axis; d++)
        o->d[r++] = x->d[d];
    for (int32_t d = 0; d < ix->rank; d++)
        o->d[r++] = ix->d[d];
    for (int32_t d = (int32_t)axis + 1; d < x->rank; d++)
        o->d[r++] = x->d[d];
    o->rank = r;
    o->elem = x->elem;
    int64_t v[K], idx[K], res[K];
    int nv = kvals(c, 0, v, K), ni = kvals(c, 1, idx, K);
    if (nv < 0 || ni < 0 || x->rank != 1)
        return true;
    for (int i = 0; i < ni; i++) {
        int64_t j = idx[i] < 0 ? idx[i] + nv : idx[i];
        if (j < 0 || j >= nv)
            return true;
        res[i] = v[j];
    }
    return setk(c, 0, res, ni);
}

static bool op_shape(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 0)
        return false;
    int64_t s = vf__gattr_int(c->n, "start", 0), e = vf__gattr_int(c->n, "end", x->rank);
    if (s < 0)
        s += x->rank;
    if (e < 0)
        e += x->rank;
    s = clamp64(s, 0, x->rank), e = clamp64(e, 0, x->rank);
    int64_t n = e > s ? e - s : 0;
    set_vec(o, VF_ONNX_INT64, n);
    if (!vf__vshape_known(x))
        return true;
    return setk(c, 0, x->d + s, (int)n);
}

static bool op_size(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o)
        return false;
    o->rank = 0;
    o->elem = VF_ONNX_INT64;
    int64_t n = (int64_t)vf__vshape_numel(x);
    return !vf__vshape_known(x) || setk(c, 0, &n, 1);
}

static bool op_constant(const ctx *c)
{
    vf__vshape *o = out(c, 0);
    if (!o || !c->n->n_attr)
        return false;
    const vf__gattr *a = &c->n->attr[0];
    o->rank = 0;
    if (a->t) {
        o->elem = a->t->elem;
        o->rank = (int32_t)a->t->rank;
        memcpy(o->d, a->t->dims, sizeof o->d);
        o->kf = a->t->fv;
        return a->tensor_too_big || a->t->n == 0 || setk(c, 0, a->t->iv, (int)a->t->n);
    }
    if (!strcmp(a->name, "value_int") || !strcmp(a->name, "value_ints")) {
        o->elem = VF_ONNX_INT64;
        bool one = a->name[10] == '\0' && !strcmp(a->name, "value_int");
        if (one)
            return setk(c, 0, &a->i, 1);
        if (!a->ints && a->n_ints)
            return set_vec(o, VF_ONNX_INT64, a->n_ints);
        set_vec(o, VF_ONNX_INT64, a->n_ints);
        return setk(c, 0, a->ints, (int)a->n_ints);
    }
    if (!strcmp(a->name, "value_float")) {
        o->elem = VF_ONNX_FLOAT;
        return true;
    }
    if (!strcmp(a->name, "value_floats"))
        return set_vec(o, VF_ONNX_FLOAT, a->n_floats);
    return false;
}

static bool op_constant_of_shape(const ctx *c)
{
    vf__vshape *o = out(c, 0);
    int64_t sh[VF_MAX_DIMS];
    int n = kvals(c, 0, sh, VF_MAX_DIMS);
    if (!o || n < 0)
        return false;
    o->rank = n;
    memcpy(o->d, sh, (size_t)n * sizeof *sh);
    const vf__gattr *a = vf__gattr_find(c->n, "value");
    o->elem = a && a->t ? a->t->elem : VF_ONNX_FLOAT;
    uint64_t nel = vf__vshape_numel(o);
    if (nel > K || !a || !a->t || a->t->n != 1 || !a->t->iv)
        return true;
    int64_t v[K];
    for (uint64_t i = 0; i < nel; i++)
        v[i] = a->t->iv[0];
    return setk(c, 0, v, (int)nel);
}

static bool op_expand(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    vf__vshape t = {.rank = -1};
    int n = kvals(c, 1, t.d, VF_MAX_DIMS);
    if (!x || !o || n < 0)
        return false;
    t.rank = n;
    const vf__vshape *xs[2] = {x, &t};
    if (!broadcast(xs, 2, o))
        return false;
    o->elem = x->elem;
    return true;
}

static bool op_tile(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t r[VF_MAX_DIMS];
    if (!x || !o || x->rank < 0 || kvals(c, 1, r, VF_MAX_DIMS) != x->rank)
        return false;
    copy_shape(o, x);
    o->elem = x->elem;
    for (int32_t d = 0; d < x->rank; d++)
        o->d[d] = x->d[d] * r[d];
    return true;
}

static bool op_range(const ctx *c)
{
    vf__vshape *o = out(c, 0);
    int64_t a, b, s;
    const vf__vshape *x = in(c, 0);
    if (!o || !x || kvals(c, 0, &a, 1) != 1 || kvals(c, 1, &b, 1) != 1 || kvals(c, 2, &s, 1) != 1 || !s)
        return false;
    int64_t n = (b - a + (s > 0 ? s - 1 : s + 1)) / s;
    set_vec(o, x->elem, n > 0 ? n : 0);
    if (n <= 0 || n > (int64_t)K)
        return true;
    int64_t v[K];
    for (int64_t i = 0; i < n; i++)
        v[i] = a + i * s;
    return setk(c, 0, v, (int)n);
}

/* ReduceMean, ReduceSum, ... and ArgMax/ArgMin (one axis). */
static bool op_reduce(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    if (!x || !o || x->rank < 0)
        return false;
    bool arg = !strncmp(c->n->op, "Arg", 3);
    int64_t ax[VF_MAX_DIMS];
    int na;
    if (arg) {
        ax[0] = vf__gattr_int(c->n, "axis", 0);
        na = 1;
    } else {
        /* axes: an input from opset 13 for ReduceSum, 18 for the others */
        na = ints_attr_or_input(c, "axes", !strcmp(c->n->op, "ReduceSum") ? 13 : 18, 1, ax, VF_MAX_DIMS);
        if (na == -2 || na == -3)
            return false;
    }
    bool keep = vf__gattr_int(c->n, "keepdims", 1) != 0;
    bool noop = vf__gattr_int(c->n, "noop_with_empty_axes", 0) != 0;
    bool mark[VF_MAX_DIMS] = {false};
    for (int i = 0; i < na; i++) {
        if (!norm_axis(&ax[i], x->rank))
            return false;
        mark[ax[i]] = true;
    }
    int32_t r = 0;
    for (int32_t d = 0; d < x->rank; d++) {
        bool red = na > 0 ? mark[d] : !noop;
        if (!red)
            o->d[r++] = x->d[d];
        else if (keep)
            o->d[r++] = 1;
    }
    o->rank = r;
    o->elem = arg ? VF_ONNX_INT64 : x->elem;
    return true;
}

static bool op_topk(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    int64_t k, axis = vf__gattr_int(c->n, "axis", -1);
    int nk = opset(c) < 10 ? ((k = vf__gattr_int(c->n, "k", -1)) >= 0) : kvals(c, 1, &k, 1);
    if (!x || x->rank < 0 || nk != 1 || !norm_axis(&axis, x->rank))
        return false;
    for (uint32_t j = 0; j < 2; j++) {
        vf__vshape *o = out(c, j);
        if (!o)
            continue;
        copy_shape(o, x);
        o->d[axis] = k;
        o->elem = j ? VF_ONNX_INT64 : x->elem;
    }
    return true;
}

static bool op_depth_space(const ctx *c)
{
    const vf__vshape *x = in(c, 0);
    vf__vshape *o = out(c, 0);
    int64_t b = vf__gattr_int(c->n, "blocksize", 0);
    if (!x || !o || x->rank != 4 || b <= 0)
        return false;
    bool to_space = !strcmp(c->n->op, "DepthToSpace");
    copy_shape(o, x);
    o->elem = x->elem;
    o->d[1] = to_space ? x->d[1] / (b * b) : x->d[1] * b * b;
    o->d[2] = to_space ? x->d[2] * b : x->d[2] / b;
    o->d[3] = to_space ? x->d[3] * b : x->d[3] / b;
    return true;
}

/* Einsum: the output the equation names (graph_einsum.c). */
static bool op_einsum(const ctx *c)
{
    const vf__gattr *a = vf__gattr_find(c->n, "equation");
    const vf__vshape *xs[VF_MAX_DIMS];
    vf__vshape *o = out(c, 0);
    if (!a || !a->s || !o || !c->n->n_in || c->n->n_in > VF_MAX_DIMS)
        return false;
    for (uint32_t k = 0; k < c->n->n_in; k++)
        if (!(xs[k] = in(c, k)))
            return false;
    return vf__einsum_shape(a->s, xs, c->n->n_in, o);
}

/* The shape of input k (GatherElements: the indices; Scatter*: the data). */
static bool like_input(const ctx *c, uint32_t k, int32_t elem_from)
{
    const vf__vshape *x = in(c, k), *e = in(c, (uint32_t)elem_from);
    vf__vshape *o = out(c, 0);
    if (!x || !o || !e || x->rank < 0)
        return false;
    copy_shape(o, x);
    o->elem = e->elem;
    return true;
}

static bool op_gather_elements(const ctx *c) { return like_input(c, 1, 0); }
static bool op_scatter(const ctx *c) { return like_input(c, 0, 0); }

static bool op_quant(const ctx *c)
{
    if (!like_input(c, 0, 0))
        return false;
    vf__vshape *o = out(c, 0);
    const vf__vshape *sc = in(c, 1), *zp = in(c, 2);
    o->elem = !strcmp(c->n->op, "DequantizeLinear") ? (sc ? sc->elem : VF_ONNX_FLOAT)
                                                       : (zp ? zp->elem : VF_ONNX_UINT8);
    return true;
}

/* ---- the table, sorted by name for bsearch ---- */

typedef struct rule {
    const char *op;
    bool (*fn)(const ctx *);
} rule;

static const rule rules[] = {
    {"Abs", op_same}, {"Acos", op_same}, {"Acosh", op_same}, {"Add", op_broadcast}, {"And", op_broadcast},
    {"ArgMax", op_reduce}, {"ArgMin", op_reduce}, {"Asin", op_same}, {"Asinh", op_same}, {"Atan", op_same},
    {"Atanh", op_same}, {"AveragePool", op_pool}, {"BatchNormalization", op_same}, {"BiasGelu", op_same},
    {"Cast", op_same}, {"CastLike", op_same}, {"Ceil", op_same}, {"Celu", op_same}, {"Clip", op_same},
    {"Concat", op_concat}, {"Constant", op_constant}, {"ConstantOfShape", op_constant_of_shape},
    {"Conv", op_conv}, {"ConvTranspose", op_convtranspose}, {"Cos", op_same}, {"Cosh", op_same},
    {"CumSum", op_same}, {"DepthToSpace", op_depth_space}, {"DequantizeLinear", op_quant},
    {"Div", op_broadcast}, {"Dropout", op_same}, {"Einsum", op_einsum}, {"Elu", op_same}, {"Equal", op_broadcast}, {"Erf", op_same},
    {"Exp", op_same}, {"Expand", op_expand}, {"FastGelu", op_same}, {"Flatten", op_flatten}, {"Floor", op_same},
    {"Gather", op_gather}, {"GatherElements", op_gather_elements}, {"Gelu", op_same}, {"Gemm", op_gemm},
    {"GlobalAveragePool", op_global_pool}, {"GlobalLpPool", op_global_pool}, {"GlobalMaxPool", op_global_pool},
    {"Greater", op_broadcast}, {"GreaterOrEqual", op_broadcast}, {"GroupNormalization", op_same},
    {"HardSigmoid", op_same}, {"HardSwish", op_same}, {"Hardmax", op_same}, {"Identity", op_same},
    {"InstanceNormalization", op_same}, {"IsInf", op_same}, {"IsNaN", op_same}, {"LRN", op_same},
    {"LayerNormalization", op_layernorm}, {"LeakyRelu", op_same}, {"Less", op_broadcast},
    {"LessOrEqual", op_broadcast}, {"Log", op_same}, {"LogSoftmax", op_same}, {"LpNormalization", op_same},
    {"LpPool", op_pool}, {"MatMul", op_matmul}, {"MatMulInteger", op_matmul}, {"Max", op_broadcast},
    {"MaxPool", op_pool}, {"Mean", op_broadcast}, {"MeanVarianceNormalization", op_same}, {"Min", op_broadcast},
    {"Mish", op_same}, {"Mod", op_broadcast}, {"Mul", op_broadcast}, {"Neg", op_same}, {"Not", op_same},
    {"Or", op_broadcast}, {"PRelu", op_broadcast}, {"Pad", op_pad}, {"Pow", op_broadcast},
    {"QuantizeLinear", op_quant}, {"QuickGelu", op_same}, {"Range", op_range}, {"Reciprocal", op_same},
    {"ReduceL1", op_reduce}, {"ReduceL2", op_reduce}, {"ReduceLogSum", op_reduce},
    {"ReduceLogSumExp", op_reduce}, {"ReduceMax", op_reduce}, {"ReduceMean", op_reduce},
    {"ReduceMin", op_reduce}, {"ReduceProd", op_reduce}, {"ReduceSum", op_reduce},
    {"ReduceSumSquare", op_reduce}, {"Relu", op_same}, {"Reshape", op_reshape}, {"Resize", op_resize},
    {"Round", op_same}, {"ScatterElements", op_scatter}, {"ScatterND", op_scatter}, {"Selu", op_same},
    {"Shape", op_shape}, {"Shrink", op_same}, {"Sigmoid", op_same}, {"Sign", op_same}, {"Sin", op_same},
    {"Sinh", op_same}, {"Size", op_size}, {"SkipLayerNormalization", op_same}, {"Slice", op_slice},
    {"Softmax", op_same}, {"Softplus", op_same}, {"Softsign", op_same}, {"SpaceToDepth", op_depth_space},
    {"Split", op_split}, {"Sqrt", op_same}, {"Squeeze", op_squeeze0}, {"Sub", op_broadcast}, {"Sum", op_broadcast},
    {"Tan", op_same}, {"Tanh", op_same}, {"ThresholdedRelu", op_same}, {"Tile", op_tile}, {"TopK", op_topk},
    {"Transpose", op_transpose}, {"Trilu", op_same}, {"Unsqueeze", op_unsqueeze}, {"Upsample", op_resize},
    {"Where", op_broadcast}, {"Xor", op_broadcast},
};

static int cmp_rule(const void *k, const void *r) { return strcmp(k, ((const rule *)r)->op); }

bool vf__infer_node(const vf__graph *g, const vf__gnode *n, vf__shapes *s)
{
    const rule *r = bsearch(n->op, rules, sizeof rules / sizeof rules[0], sizeof rules[0], cmp_rule);
    if (!r)
        return false;
    ctx c = {g, n, s};
    return r->fn(&c);
}

bool vf__infer_rules_sorted(void)
{
    for (size_t i = 1; i < sizeof rules / sizeof rules[0]; i++)
        if (strcmp(rules[i - 1].op, rules[i].op) >= 0)
            return false;
    return true;
}
