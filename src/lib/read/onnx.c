/* onnx.c — reads an ONNX model (onnx.proto's ModelProto, protobuf wire
 * format) into the graph description and the model's tensors. Only the graph
 * is read: initializer data (raw_data, the typed *_data fields) is skipped by
 * its length, and external data is referenced (file, offset, length checked
 * against the file's size), never read. Integer and float constants of at most
 * VF_GRAPH_MAX_CONST elements are the exception: shape arithmetic needs them
 * (Reshape targets, Slice bounds, Resize scales). docs/formats.md lists what
 * is refused. Field numbers: onnx/onnx.proto (Debian libonnx-dev ships it). */
#include "graph.h"
#include "onnx_wire.h"
#include "readers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct rd {
    vf_model *m;
    vf__graph *g;
    const char *path;
    char *dir;
    vf_error *err;
    char *buf;   /* one string field */
} rd;

/* A tensor as TensorProto states it; data only located, except small constants. */
typedef struct tinfo {
    char name[1024];
    int32_t elem;
    uint32_t rank;
    int64_t dims[VF_MAX_DIMS];
    uint64_t n;                 /* elements, checked product of dims */
    bool external;
    char location[1024];
    uint64_t ext_offset, ext_length;
    bool has_length;
    bool has_raw;
    uint64_t raw_off, raw_len;
    uint64_t typed_count;       /* values in the typed *_data fields */
    uint64_t string_bytes;
    int64_t small_iv[VF_GRAPH_MAX_CONST];
    double small_fv[VF_GRAPH_MAX_CONST];
    uint32_t small_n;           /* typed values kept (up to VF_GRAPH_MAX_CONST) */
} tinfo;

#define fail(r, ...) vf__err((r)->err, VF_EFORMAT, (r)->path, __VA_ARGS__)

static vf_status oom(rd *r) { return vf__err(r->err, VF_ENOMEM, r->path, "out of memory"); }

/* ---- small helpers over the wire reader ---- */

static vf_status sub_of(vf__pb *p, const char *msg, uint32_t f, uint32_t wt, vf__pb *sub)
{
    uint64_t len;
    vf_status st = vf__pb_expect(p, msg, f, wt, VF_PB_LEN);
    if (st == VF_OK)
        st = vf__pb_len(p, &len);
    if (st == VF_OK)
        st = vf__pb_sub(p, len, sub);
    return st;
}

static vf_status varint_of(vf__pb *p, const char *msg, uint32_t f, uint32_t wt, int64_t *v)
{
    uint64_t u;
    vf_status st = vf__pb_expect(p, msg, f, wt, VF_PB_VARINT);
    if (st == VF_OK)
        st = vf__pb_varint(p, &u);
    *v = (int64_t)u;
    return st;
}

static vf_status str_of(rd *r, vf__pb *p, const char *msg, uint32_t f, uint32_t wt, size_t *n)
{
    vf_status st = vf__pb_expect(p, msg, f, wt, VF_PB_LEN);
    return st == VF_OK ? vf__pb_str(p, r->buf, VF_MAX_NAME_LEN + 1, n) : st;
}

/* A repeated int64 field, packed (one LEN) or not (one varint each): calls
 * back per value. */
static vf_status ints_of(vf__pb *p, const char *msg, uint32_t f, uint32_t wt, void (*each)(void *, int64_t),
                         void *ctx)
{
    uint64_t u;
    vf_status st;
    if (wt == VF_PB_VARINT) {
        if ((st = vf__pb_varint(p, &u)) == VF_OK)
            each(ctx, (int64_t)u);
        return st;
    }
    vf__pb sub;
    if ((st = sub_of(p, msg, f, wt, &sub)) != VF_OK)
        return st;
    while (vf__pb_more(&sub))
        if ((st = vf__pb_varint(&sub, &u)) != VF_OK)
            return st;
        else
            each(ctx, (int64_t)u);
    return VF_OK;
}

/* Repeated floats (fixed32), packed or not. */
static vf_status floats_of(vf__pb *p, const char *msg, uint32_t f, uint32_t wt, void (*each)(void *, double),
                           void *ctx)
{
    uint32_t u;
    vf_status st;
    if (wt == VF_PB_I32) {
        if ((st = vf__pb_fixed32(p, &u)) == VF_OK) {
            float x;
            memcpy(&x, &u, 4);
            each(ctx, x);
        }
        return st;
    }
    vf__pb sub;
    if ((st = sub_of(p, msg, f, wt, &sub)) != VF_OK)
        return st;
    while (vf__pb_more(&sub)) {
        if ((st = vf__pb_fixed32(&sub, &u)) != VF_OK)
            return st;
        float x;
        memcpy(&x, &u, 4);
        each(ctx, x);
    }
    return VF_OK;
}

/* ---- TensorProto ---- */

typedef struct dimsink {
    tinfo *t;
    bool over;
} dimsink;

static void add_dim(void *c, int64_t v)
{
    dimsink *d = c;
    if (d->t->rank >= VF_MAX_DIMS) {
        d->over = true;
        return;
    }
    d->t->dims[d->t->rank++] = v;
}

static void add_typed_int(void *c, int64_t v)
{
    tinfo *t = c;
    if (t->small_n < VF_GRAPH_MAX_CONST) {
        t->small_fv[t->small_n] = (double)v;
        t->small_iv[t->small_n++] = v;
    }
    t->typed_count++;
}

static void add_typed_float(void *c, double v)
{
    tinfo *t = c;
    if (t->small_n < VF_GRAPH_MAX_CONST) {
        t->small_fv[t->small_n] = v;
        t->small_iv[t->small_n++] = v > -9.2e18 && v < 9.2e18 ? (int64_t)v : 0;
    }
    t->typed_count++;
}

static vf_status parse_external(rd *r, vf__pb *p, tinfo *t)
{
    char key[32] = "";
    char val[1024] = "";
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        size_t n;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1 || f == 2) {
            if ((st = str_of(r, p, "StringStringEntryProto", f, wt, &n)) != VF_OK)
                break;
            snprintf(f == 1 ? key : val, f == 1 ? sizeof key : sizeof val, "%s", r->buf);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    if (st != VF_OK)
        return st;
    char *end = NULL;
    if (!strcmp(key, "location")) {
        snprintf(t->location, sizeof t->location, "%s", val);
    } else if (!strcmp(key, "offset") || !strcmp(key, "length")) {
        errno = 0;
        unsigned long long v = strtoull(val, &end, 10);
        if (!val[0] || *end || errno || val[0] == '-')
            return fail(r, "onnx: external data %s is not a number", key);
        if (key[0] == 'o')
            t->ext_offset = v;
        else
            t->ext_length = v, t->has_length = true;
    }
    return VF_OK;
}

/* One field of a TensorProto. */
static vf_status tensor_field(rd *r, vf__pb *p, tinfo *t, uint32_t f, uint32_t wt, dimsink *ds)
{
    const char *M = "TensorProto";
    int64_t v;
    size_t n;
    vf__pb sub;
    vf_status st;
    switch (f) {
    case 1: /* dims */
        return ints_of(p, M, f, wt, add_dim, ds);
    case 2: /* data_type */
        st = varint_of(p, M, f, wt, &v);
        t->elem = v >= 0 && v <= VF_ONNX_ELEM_MAX ? (int32_t)v : -1;
        return st;
    case 8: /* name */
        if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK)
            snprintf(t->name, sizeof t->name, "%s", r->buf);
        return st;
    case 9: /* raw_data: located, not read */
        if ((st = vf__pb_expect(p, M, f, wt, VF_PB_LEN)) != VF_OK || (st = vf__pb_len(p, &t->raw_len)) != VF_OK)
            return st;
        t->has_raw = true;
        t->raw_off = p->pos;
        p->pos += t->raw_len; /* vf__pb_len checked it against the message's end */
        return VF_OK;
    case 5: case 7: case 11: /* int32_data, int64_data, uint64_data */
        return ints_of(p, M, f, wt, add_typed_int, t);
    case 4: /* float_data */
        return floats_of(p, M, f, wt, add_typed_float, t);
    case 6: /* string_data: bytes counted */
        if ((st = vf__pb_expect(p, M, f, wt, VF_PB_LEN)) != VF_OK || (st = vf__pb_len(p, &t->raw_len)) != VF_OK)
            return st;
        t->string_bytes += t->raw_len;
        p->pos += t->raw_len;
        t->typed_count++;
        return VF_OK;
    case 13: /* external_data */
        if ((st = sub_of(p, M, f, wt, &sub)) != VF_OK)
            return st;
        return parse_external(r, &sub, t);
    case 14: /* data_location */
        st = varint_of(p, M, f, wt, &v);
        t->external = v == 1;
        return st;
    case 3:
        return fail(r, "onnx: tensor '%s' is stored in segments, which this reader does not take", t->name);
    default: /* double_data (10, fixed64 values) and doc_string: skipped */
        return vf__pb_skip(p, wt);
    }
}

static vf_status parse_tensor(rd *r, vf__pb *p, tinfo *t)
{
    memset(t, 0, sizeof *t);
    dimsink ds = {t, false};
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        if ((st = vf__pb_tag(p, &f, &wt)) == VF_OK)
            st = tensor_field(r, p, t, f, wt, &ds);
    }
    if (st != VF_OK)
        return st;
    if (ds.over)
        return fail(r, "onnx: tensor '%s' has more than 8 dimensions, over what this reader takes", t->name);
    t->n = 1;
    for (uint32_t i = 0; i < t->rank; i++)
        if (t->dims[i] < 0 || vf__mul_overflow(t->n, (uint64_t)t->dims[i], &t->n) || t->n > ((uint64_t)1 << 56))
            return fail(r, "onnx: tensor '%s' has dims that overflow", t->name);
    if (t->elem <= 0 || (t->elem != VF_ONNX_STRING && !vf__onnx_elem_bytes(t->elem, 1)))
        return fail(r, "onnx: tensor '%s' has no data type this reader knows", t->name);
    return VF_OK;
}

static uint64_t tensor_bytes(const tinfo *t)
{
    return t->elem == VF_ONNX_STRING ? t->string_bytes : vf__onnx_elem_bytes(t->elem, t->n);
}

/* Little-endian element i of a small raw_data buffer. */
static void raw_value(const uint8_t *b, int32_t elem, uint32_t i, int64_t *iv, double *fv)
{
    uint64_t sz = vf__onnx_elem_bytes(elem, 1), u = 0;
    for (uint64_t k = 0; k < sz; k++)
        u |= (uint64_t)b[i * sz + k] << (8 * k);
    if (elem == VF_ONNX_FLOAT) {
        float x;
        uint32_t w = (uint32_t)u;
        memcpy(&x, &w, 4);
        *fv = x;
    } else if (elem == VF_ONNX_DOUBLE) {
        memcpy(fv, &u, 8);
    } else {
        int64_t s = (int64_t)u;
        if (sz < 8 && elem != 2 && elem != 4 && elem != 12 && elem != 9) /* sign-extend signed types */
            s = (int64_t)(u << (64 - 8 * sz)) >> (64 - 8 * sz);
        *iv = s;
        *fv = (double)s;
        return;
    }
    *iv = *fv > -9.2e18 && *fv < 9.2e18 ? (int64_t)*fv : 0;
}

/* Keeps a small integer or float constant's contents (raw bytes read at
 * their offset: at most 64 elements, 512 bytes). */
static vf_status keep_const(rd *r, vf__pb *p, const tinfo *t, vf__gconst **out)
{
    *out = NULL;
    bool kind = t->elem == VF_ONNX_INT64 || t->elem == VF_ONNX_INT32 || t->elem == VF_ONNX_FLOAT ||
                t->elem == VF_ONNX_DOUBLE || t->elem == VF_ONNX_INT8 || t->elem == VF_ONNX_UINT8 ||
                t->elem == VF_ONNX_BOOL || t->elem == 5 || t->elem == 4;
    if (!kind || t->n > VF_GRAPH_MAX_CONST || t->external)
        return VF_OK;
    vf__gconst *c = vf__graph_alloc(r->g, sizeof *c);
    int64_t *iv = vf__graph_alloc(r->g, (t->n ? t->n : 1) * sizeof *iv);
    double *fv = vf__graph_alloc(r->g, (t->n ? t->n : 1) * sizeof *fv);
    if (!c || !iv || !fv)
        return oom(r);
    c->elem = t->elem;
    c->rank = t->rank;
    memcpy(c->dims, t->dims, sizeof c->dims);
    c->n = (uint32_t)t->n;
    c->iv = iv;
    c->fv = vf__onnx_is_float(t->elem) ? fv : NULL;
    if (t->has_raw) {
        uint8_t b[8 * VF_GRAPH_MAX_CONST];
        vf__pb at = *p;
        at.pos = t->raw_off;
        at.end = t->raw_off + t->raw_len;
        vf_status st = vf__pb_bytes(&at, b, (size_t)t->raw_len);
        if (st != VF_OK)
            return st;
        for (uint32_t i = 0; i < c->n; i++)
            raw_value(b, t->elem, i, &iv[i], &fv[i]);
    } else if (t->small_n == t->n) {
        for (uint32_t i = 0; i < c->n; i++)
            iv[i] = t->small_iv[i], fv[i] = t->small_fv[i];
    } else {
        return VF_OK; /* no contents stated */
    }
    *out = c;
    return VF_OK;
}

/* Checks where the data is: inline sizes agree, external files hold it. */
static vf_status place_data(rd *r, const tinfo *t, uint64_t bytes, vf_tensor *x)
{
    x->file = VF_NO_FILE;
    if (t->external || t->location[0]) {
        if (!t->location[0])
            return fail(r, "onnx: tensor '%s' is external but names no location", t->name);
        if (t->location[0] == '/' || strstr(t->location, ".."))
            return fail(r, "onnx: external data location of '%s' leaves the model's directory", t->name);
        if (t->has_length && t->ext_length != bytes)
            return fail(r, "onnx: external data length of '%s' disagrees with its dims", t->name);
        char *fp = vf__path_join(r->dir, t->location);
        if (!fp)
            return oom(r);
        struct stat sb;
        uint32_t fi = VF_NO_FILE;
        for (size_t i = 0; i < r->m->n_files; i++)
            if (!strcmp(r->m->files[i].path, fp))
                fi = (uint32_t)i;
        bool have = stat(fp, &sb) == 0 && S_ISREG(sb.st_mode);
        if (fi == VF_NO_FILE) {
            fi = vf__model_add_file(r->m, fp, have ? (uint64_t)sb.st_size : 0);
            if (!have)
                vf__model_warn(r->m, "%s: external data file is missing (bytes counted from the graph's dims)", fp);
        }
        free(fp);
        if (fi == VF_NO_FILE)
            return oom(r);
        uint64_t end;
        if (have && (vf__add_overflow(t->ext_offset, bytes, &end) || end > (uint64_t)sb.st_size))
            return fail(r, "onnx: external data of '%s' runs past the end of its file", t->name);
        x->file = fi;
        x->offset = t->ext_offset;
        r->g->external_bytes += bytes;
        return VF_OK;
    }
    if (t->has_raw && t->raw_len != bytes)
        return fail(r, "onnx: raw_data of '%s' holds a different number of bytes than its dims say", t->name);
    if (!t->has_raw && t->typed_count && t->typed_count != t->n && t->elem != VF_ONNX_STRING)
        return fail(r, "onnx: tensor '%s' holds a different number of values than its dims say", t->name);
    if (t->has_raw) {
        x->file = 0; /* the .onnx file itself */
        x->offset = t->raw_off;
    }
    r->g->inline_bytes += bytes;
    return VF_OK;
}

static vf_status parse_initializer(rd *r, vf__pb *p)
{
    tinfo *t = malloc(sizeof *t);
    if (!t)
        return oom(r);
    vf_status st = parse_tensor(r, p, t);
    uint64_t bytes = st == VF_OK ? tensor_bytes(t) : 0;
    vf_tensor x = {0};
    if (st == VF_OK)
        st = place_data(r, t, bytes, &x);
    uint32_t id = st == VF_OK ? vf__graph_value(r->g, t->name, strlen(t->name)) : VF_GRAPH_NONE;
    if (st == VF_OK && id == VF_GRAPH_NONE)
        st = oom(r);
    if (st == VF_OK && r->g->v[id].tensor != VF_GRAPH_NONE)
        st = fail(r, "onnx: initializer '%s' is given twice", t->name);
    vf__gconst *k = NULL;
    if (st == VF_OK)
        st = keep_const(r, p, t, &k);
    if (st == VF_OK) {
        x.name = t->name;
        x.dtype = vf__onnx_dtype(t->elem);
        x.n_dims = t->rank;
        for (uint32_t i = 0; i < t->rank; i++)
            x.shape[i] = (uint64_t)t->dims[i];
        x.n_elements = t->n;
        x.n_bytes = bytes;
        x.layer = -1;
        if (!vf__onnx_is_float(t->elem))
            x.flags |= VF_TENSOR_NOT_PARAM; /* integer tables, masks: not trained */
        if (!vf__model_add_tensor(r->m, &x)) {
            st = oom(r);
        } else {
            vf__gvalue *v = &r->g->v[id];
            v->tensor = (uint32_t)(r->m->n_tensors - 1);
            v->elem = t->elem;
            v->rank = (int32_t)t->rank;
            for (uint32_t i = 0; i < t->rank; i++)
                v->dims[i] = t->dims[i];
            v->declared = true;
            v->konst = k;
        }
    }
    free(t);
    return st;
}

/* ---- TypeProto, ValueInfoProto ---- */

typedef struct vtype {
    int32_t elem;
    int32_t rank;        /* -1: no shape stated */
    bool tensor;
    int64_t dims[VF_MAX_DIMS];
    char sym[VF_MAX_DIMS][64];
} vtype;

static vf_status parse_dim(rd *r, vf__pb *p, vtype *t)
{
    int i = t->rank++;
    t->dims[i] = -1;
    t->sym[i][0] = '\0';
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        int64_t v;
        size_t n;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1) {
            if ((st = varint_of(p, "Dimension", f, wt, &v)) == VF_OK && (v < -1 || v > ((int64_t)1 << 48)))
                return fail(r, "onnx: a dimension of '%s' is out of range", "value");
            t->dims[i] = v;
        } else if (f == 2) {
            if ((st = str_of(r, p, "Dimension", f, wt, &n)) == VF_OK)
                snprintf(t->sym[i], sizeof t->sym[i], "%s", r->buf);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    return st;
}

static vf_status parse_shape(rd *r, vf__pb *p, vtype *t)
{
    t->rank = 0;
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f != 1) {
            st = vf__pb_skip(p, wt);
            continue;
        }
        if (t->rank >= VF_MAX_DIMS)
            return fail(r, "onnx: a value has more than 8 dimensions, over what this reader takes");
        if ((st = sub_of(p, "TensorShapeProto", f, wt, &sub)) == VF_OK)
            st = parse_dim(r, &sub, t);
    }
    return st;
}

static vf_status parse_tensor_type(rd *r, vf__pb *p, vtype *t)
{
    t->tensor = true;
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        int64_t v;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1) {
            st = varint_of(p, "TypeProto.Tensor", f, wt, &v);
            t->elem = v > 0 && v <= VF_ONNX_ELEM_MAX ? (int32_t)v : 0;
        } else if (f == 2) {
            if ((st = sub_of(p, "TypeProto.Tensor", f, wt, &sub)) == VF_OK)
                st = parse_shape(r, &sub, t);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    return st;
}

/* TypeProto: a tensor (or sparse tensor) type; sequences, maps and optionals
 * are walked (their nesting bounded by the wire reader's depth) but are not
 * tensors this model prices. */
static vf_status parse_type(rd *r, vf__pb *p, vtype *t)
{
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1 || f == 8) {
            if ((st = sub_of(p, "TypeProto", f, wt, &sub)) == VF_OK)
                st = parse_tensor_type(r, &sub, t);
        } else if (f == 4 || f == 9 || f == 5) { /* sequence, optional: elem_type = 1; map: value_type = 2 */
            if ((st = sub_of(p, "TypeProto", f, wt, &sub)) != VF_OK)
                break;
            vtype inner = {.rank = -1};
            while (st == VF_OK && vf__pb_more(&sub)) {
                uint32_t g, gw;
                vf__pb in;
                if ((st = vf__pb_tag(&sub, &g, &gw)) != VF_OK)
                    break;
                if ((f != 5 && g == 1) || (f == 5 && g == 2)) {
                    if ((st = sub_of(&sub, "TypeProto", g, gw, &in)) == VF_OK)
                        st = parse_type(r, &in, &inner);
                } else {
                    st = vf__pb_skip(&sub, gw);
                }
            }
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    return st;
}

enum { VI_INPUT, VI_OUTPUT, VI_INFO };

static vf_status parse_value_info(rd *r, vf__pb *p, int kind)
{
    vtype t = {.rank = -1};
    char name[1024] = "";
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        size_t n;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1) {
            if ((st = str_of(r, p, "ValueInfoProto", f, wt, &n)) == VF_OK)
                snprintf(name, sizeof name, "%s", r->buf);
        } else if (f == 2) {
            if ((st = sub_of(p, "ValueInfoProto", f, wt, &sub)) == VF_OK)
                st = parse_type(r, &sub, &t);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    if (st != VF_OK)
        return st;
    uint32_t id = vf__graph_value(r->g, name, strlen(name));
    if (id == VF_GRAPH_NONE)
        return oom(r);
    vf__gvalue *v = &r->g->v[id];
    if (kind == VI_INPUT) {
        if (v->is_input)
            return fail(r, "onnx: graph input '%s' is listed twice", name);
        v->is_input = true;
        if (!vf__graph_push(&r->g->inputs, &r->g->n_inputs, &r->g->cap_inputs, id))
            return oom(r);
    } else if (kind == VI_OUTPUT) {
        v->is_output = true;
        if (!vf__graph_push(&r->g->outputs, &r->g->n_outputs, &r->g->cap_outputs, id))
            return oom(r);
    }
    if (t.tensor && v->tensor == VF_GRAPH_NONE) {
        v->elem = t.elem;
        v->rank = t.rank;
        v->declared = t.rank >= 0;
        for (int i = 0; i < t.rank; i++) {
            v->dims[i] = t.dims[i];
            v->sym[i] = t.sym[i][0] ? vf__graph_strdup(r->g, t.sym[i], strlen(t.sym[i])) : NULL;
        }
    }
    return VF_OK;
}

/* ---- AttributeProto, NodeProto ---- */

typedef struct intsink {
    int64_t v[VF_GRAPH_MAX_CONST];
    uint32_t n;
} intsink;

static void add_int(void *c, int64_t x)
{
    intsink *s = c;
    if (s->n < VF_GRAPH_MAX_CONST)
        s->v[s->n] = x;
    if (s->n < UINT32_MAX)
        s->n++;
}

static void add_float(void *c, double x) { add_int(c, (int64_t)(x * 1e6)); } /* only counted */

static vf_status attr_field(rd *r, vf__pb *p, vf__gattr *a, vf__gnode *nd, intsink *ints, intsink *fl,
                            uint32_t f, uint32_t wt)
{
    const char *M = "AttributeProto";
    int64_t v;
    size_t n;
    uint32_t u;
    vf__pb sub;
    vf_status st;
    switch (f) {
    case 1:
        if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK && !(a->name = vf__graph_strdup(r->g, r->buf, n)))
            return oom(r);
        return st;
    case 20:
        st = varint_of(p, M, f, wt, &v);
        a->type = (uint32_t)v;
        return st;
    case 2:
        if ((st = vf__pb_expect(p, M, f, wt, VF_PB_I32)) == VF_OK && (st = vf__pb_fixed32(p, &u)) == VF_OK)
            memcpy(&a->f, &u, 4);
        return st;
    case 3:
        return varint_of(p, M, f, wt, &a->i);
    case 4:
        if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK && !(a->s = vf__graph_strdup(r->g, r->buf, n)))
            return oom(r);
        return st;
    case 5: { /* t: a tensor value (Constant's value) */
        tinfo *t = malloc(sizeof *t);
        if (!t)
            return oom(r);
        if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK && (st = parse_tensor(r, &sub, t)) == VF_OK)
            st = keep_const(r, &sub, t, &a->t);
        if (st == VF_OK && !a->t) {
            /* too big to keep: its type and shape still give the output's */
            a->t = vf__graph_alloc(r->g, sizeof *a->t);
            if (!a->t)
                st = oom(r);
            else {
                a->t->elem = t->elem, a->t->rank = t->rank, a->t->n = 0;
                memcpy(a->t->dims, t->dims, sizeof a->t->dims);
                a->tensor_too_big = true;
            }
        }
        free(t);
        return st;
    }
    case 6: case 11: /* g, graphs: a control-flow body */
        nd->subgraph = true;
        return vf__pb_skip(p, wt);
    case 7:
        return floats_of(p, M, f, wt, add_float, fl);
    case 8:
        return ints_of(p, M, f, wt, add_int, ints);
    default:
        return vf__pb_skip(p, wt);
    }
}

static vf_status parse_attr(rd *r, vf__pb *p, vf__gnode *nd, vf__gattr *a)
{
    memset(a, 0, sizeof *a);
    intsink ints = {.n = 0}, fl = {.n = 0};
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        if ((st = vf__pb_tag(p, &f, &wt)) == VF_OK)
            st = attr_field(r, p, a, nd, &ints, &fl, f, wt);
    }
    if (st != VF_OK)
        return st;
    a->n_ints = ints.n;
    a->n_floats = fl.n;
    if (ints.n && ints.n <= VF_GRAPH_MAX_CONST) {
        if (!(a->ints = vf__graph_alloc(r->g, ints.n * sizeof *a->ints)))
            return oom(r);
        memcpy(a->ints, ints.v, ints.n * sizeof *a->ints);
    }
    return VF_OK;
}

/* Interns a value name into a growing id list. */
static vf_status edge(rd *r, uint32_t **ids, size_t *n, size_t *cap, size_t len)
{
    if (*n >= VF_GRAPH_MAX_EDGES)
        return fail(r, "onnx: a node has more inputs or outputs than this reader takes");
    uint32_t id = len ? vf__graph_value(r->g, r->buf, len) : VF_GRAPH_NONE;
    if (len && id == VF_GRAPH_NONE)
        return oom(r);
    return vf__graph_push(ids, n, cap, id) ? VF_OK : oom(r);
}

static vf_status node_fields(rd *r, vf__pb *p, vf__gnode *nd, uint32_t **in, size_t *n_in, size_t *cap_in,
                             uint32_t **out, size_t *n_out, size_t *cap_out, vf__gattr **at, size_t *n_at,
                             size_t *cap_at)
{
    const char *M = "NodeProto";
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        size_t n;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1 || f == 2) {
            if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK)
                st = f == 1 ? edge(r, in, n_in, cap_in, n) : edge(r, out, n_out, cap_out, n);
        } else if (f == 3 || f == 4 || f == 7) {
            const char *s = NULL;
            if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK && !(s = vf__graph_strdup(r->g, r->buf, n)))
                st = oom(r);
            if (f == 3)
                nd->name = s;
            else if (f == 4)
                nd->op = s;
            else
                nd->domain = s;
        } else if (f == 5) {
            if (*n_at >= VF_GRAPH_MAX_ATTRS || !vf__grow((void **)at, cap_at, *n_at, sizeof **at))
                return fail(r, "onnx: a node has more attributes than this reader takes");
            if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK)
                st = parse_attr(r, &sub, nd, &(*at)[(*n_at)++]);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    return st;
}

static vf_status parse_node(rd *r, vf__pb *p)
{
    vf__gnode *nd = vf__graph_add_node(r->g);
    if (!nd)
        return fail(r, "onnx: more nodes than this reader takes");
    uint32_t *in = NULL, *out = NULL;
    vf__gattr *at = NULL;
    size_t n_in = 0, cap_in = 0, n_out = 0, cap_out = 0, n_at = 0, cap_at = 0;
    vf_status st = node_fields(r, p, nd, &in, &n_in, &cap_in, &out, &n_out, &cap_out, &at, &n_at, &cap_at);
    if (st == VF_OK && (!nd->op || !nd->op[0]))
        st = fail(r, "onnx: a node has no op_type");
    if (st == VF_OK) {
        nd->n_in = (uint32_t)n_in, nd->n_out = (uint32_t)n_out, nd->n_attr = (uint32_t)n_at;
        nd->in = n_in ? vf__graph_alloc(r->g, n_in * sizeof *in) : NULL;
        nd->out = n_out ? vf__graph_alloc(r->g, n_out * sizeof *out) : NULL;
        nd->attr = n_at ? vf__graph_alloc(r->g, n_at * sizeof *at) : NULL;
        if ((n_in && !nd->in) || (n_out && !nd->out) || (n_at && !nd->attr))
            st = oom(r);
        else {
            if (n_in)
                memcpy(nd->in, in, n_in * sizeof *in);
            if (n_out)
                memcpy(nd->out, out, n_out * sizeof *out);
            if (n_at)
                memcpy(nd->attr, at, n_at * sizeof *at);
        }
    }
    if (st == VF_OK && !nd->name) {
        char nm[32];
        int k = snprintf(nm, sizeof nm, "#%zu", r->g->n_node - 1);
        if (!(nd->name = vf__graph_strdup(r->g, nm, (size_t)k)))
            st = oom(r);
    }
    if (st == VF_OK && !nd->domain)
        nd->domain = "";
    free(in);
    free(out);
    free(at);
    return st;
}

/* ---- GraphProto, ModelProto ---- */

static vf_status parse_graph(rd *r, vf__pb *p)
{
    const char *M = "GraphProto";
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1 || f == 5 || f == 11 || f == 12 || f == 13) {
            if ((st = sub_of(p, M, f, wt, &sub)) != VF_OK)
                break;
            st = f == 1    ? parse_node(r, &sub)
                 : f == 5  ? parse_initializer(r, &sub)
                 : f == 11 ? parse_value_info(r, &sub, VI_INPUT)
                 : f == 12 ? parse_value_info(r, &sub, VI_OUTPUT)
                           : parse_value_info(r, &sub, VI_INFO);
        } else if (f == 15) {
            return fail(r, "onnx: sparse initializers are not supported by this reader");
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    return st;
}

static vf_status parse_opset(rd *r, vf__pb *p)
{
    char dom[64] = "";
    int64_t ver = 0;
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        size_t n;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1) {
            if ((st = str_of(r, p, "OperatorSetIdProto", f, wt, &n)) == VF_OK)
                snprintf(dom, sizeof dom, "%s", r->buf);
        } else if (f == 2) {
            st = varint_of(p, "OperatorSetIdProto", f, wt, &ver);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    if (st == VF_OK && (!dom[0] || !strcmp(dom, "ai.onnx")))
        r->g->opset = ver;
    return st;
}

static vf_status parse_model(rd *r, vf__pb *p)
{
    const char *M = "ModelProto";
    bool graph = false;
    char prod[64] = "", ver[32] = "";
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        size_t n;
        vf__pb sub;
        if ((st = vf__pb_tag(p, &f, &wt)) != VF_OK)
            break;
        if (f == 1) {
            st = varint_of(p, M, f, wt, &r->g->ir_version);
        } else if (f == 2 || f == 3) {
            if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK)
                snprintf(f == 2 ? prod : ver, f == 2 ? sizeof prod : sizeof ver, "%s", r->buf);
        } else if (f == 7) {
            if (graph)
                return fail(r, "onnx: the model has two graphs");
            graph = true;
            if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK)
                st = parse_graph(r, &sub);
        } else if (f == 8) {
            if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK)
                st = parse_opset(r, &sub);
        } else {
            st = vf__pb_skip(p, wt);
        }
    }
    if (st == VF_OK && !graph)
        return fail(r, "onnx: no graph in the model (not an onnx file?)");
    if (st == VF_OK && r->g->ir_version <= 0)
        return fail(r, "onnx: no ir_version (not an onnx file?)");
    snprintf(r->g->producer, sizeof r->g->producer, "%s%s%s", prod, ver[0] ? " " : "", ver);
    return st;
}

/* ---- after the parse: inputs, order, aliases, buffers ---- */

/* Identity nodes that copy an initializer: the exporter kept one tensor for
 * several equal ones (onnx's deduplication; with trained weights they would
 * be distinct), so their bytes are counted apart. BatchNormalization's
 * running mean and variance (inputs 3 and 4) are buffers, not parameters,
 * unless something else reads the same tensor. */
static void finish_tensors(rd *r)
{
    vf__graph *g = r->g;
    uint8_t *use = calloc(r->m->n_tensors + 1, 1); /* 1: stats only, 2: other use */
    for (size_t i = 0; i < g->n_node; i++) {
        const vf__gnode *n = &g->node[i];
        bool ident = !strcmp(n->op, "Identity");
        bool bn = !strcmp(n->op, "BatchNormalization");
        if (ident && n->n_in == 1 && n->n_out == 1) {
            uint32_t src = vf__graph_init_behind(g, n->in[0]);
            if (src != VF_GRAPH_NONE) {
                const vf_tensor *t = &r->m->tensors[g->v[src].tensor];
                g->aliases++;
                g->alias_elements += t->n_elements;
                g->alias_bytes += t->n_bytes;
                continue;
            }
        }
        for (uint32_t k = 0; use && k < n->n_in; k++) {
            uint32_t src = vf__graph_init_behind(g, n->in[k]);
            if (src == VF_GRAPH_NONE)
                continue;
            uint32_t ti = g->v[src].tensor;
            use[ti] = bn && (k == 3 || k == 4) && use[ti] != 2 ? 1 : 2;
        }
    }
    for (size_t i = 0; use && i < r->m->n_tensors; i++)
        if (use[i] == 1)
            r->m->tensors[i].flags |= VF_TENSOR_NOT_PARAM;
    free(use);
}

static vf_status finish(rd *r)
{
    vf__graph *g = r->g;
    /* inputs backed by an initializer (IR < 4 lists every weight as an input) are not fed at run time */
    size_t k = 0;
    for (size_t i = 0; i < g->n_inputs; i++)
        if (g->v[g->inputs[i]].tensor == VF_GRAPH_NONE)
            g->inputs[k++] = g->inputs[i];
        else
            g->v[g->inputs[i]].is_input = false;
    g->n_inputs = k;
    if (!g->n_outputs)
        return fail(r, "onnx: the graph has no outputs");
    vf_status st = vf__graph_sort(g, r->path, r->err);
    if (st != VF_OK)
        return st;
    finish_tensors(r);
    if (!vf__graph_histogram(g))
        return vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
    vf_hparams *hp = &r->m->hp;
    snprintf(hp->architecture, sizeof hp->architecture, "onnx");
    const char *base = strrchr(r->path, '/');
    snprintf(hp->name, sizeof hp->name, "%s", base ? base + 1 : r->path);
    return VF_OK;
}

vf_status vf__onnx_read(vf_model *m, const char *path, vf_error *err)
{
    rd r = {.m = m, .path = path, .err = err};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vf__err(err, errno == ENOENT ? VF_ENOENT : VF_EIO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    vf__pbsrc src = {.fd = -1};
    vf_status st = VF_OK;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = vf__err(err, VF_EIO, path, "not a readable regular file");
    r.dir = st == VF_OK ? vf__path_dir(path) : NULL;
    r.buf = st == VF_OK ? malloc(VF_MAX_NAME_LEN + 1) : NULL;
    r.g = st == VF_OK ? vf__graph_new() : NULL;
    if (st == VF_OK && (!r.dir || !r.buf || !r.g))
        st = oom(&r);
    if (st == VF_OK && vf__model_add_file(m, path, (uint64_t)sb.st_size) == VF_NO_FILE)
        st = oom(&r);
    if (st == VF_OK)
        st = vf__pbsrc_open_fd(&src, fd, (uint64_t)sb.st_size, path, err);
    if (st == VF_OK) {
        vf__pb p;
        vf__pb_init(&p, &src, err);
        st = parse_model(&r, &p);
    }
    if (st == VF_OK)
        st = finish(&r);
    m->graph_bytes_read = src.bytes_read;
    vf__pbsrc_close(&src);
    close(fd);
    free(r.dir);
    free(r.buf);
    if (st != VF_OK) {
        vf__graph_free(r.g);
        return st;
    }
    m->graph = r.g;
    return VF_OK;
}
