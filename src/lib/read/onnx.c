/* onnx.c — reads an ONNX model (onnx.proto's ModelProto, protobuf wire
 * format) into the graph description and the model's tensors. Only the graph
 * is read: initializer data (raw_data, the typed *_data fields) is skipped by
 * its length, and external data is referenced (file, offset, length checked
 * against the file's size), never read. Integer and float constants of at most
 * VF_GRAPH_MAX_CONST elements are the exception: shape arithmetic needs them
 * (Reshape targets, Slice bounds, Resize scales). docs/formats.md lists what
 * is refused. Field numbers: onnx/onnx.proto (Debian libonnx-dev ships it). */
#include "model/graph.h"
#include "read/onnx_wire.h"
#include "read/readers.h"

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

/* One field of a message: its number and wire type, the cursor at its value. */
typedef vf_status (*field_fn)(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx);

/* Every field of the message at p, in order, to fn (a message is a list of fields). */
static vf_status each_field(rd *r, vf__pb *p, field_fn fn, void *ctx)
{
    vf_status st = VF_OK;
    while (st == VF_OK && vf__pb_more(p)) {
        uint32_t f, wt;
        if ((st = vf__pb_tag(p, &f, &wt)) == VF_OK)
            st = fn(r, p, f, wt, ctx);
    }
    return st;
}

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
    uint64_t u = 0;
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

typedef struct kvpair {
    char key[32], val[1024];
} kvpair;

static vf_status kv_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    kvpair *kv = ctx;
    size_t n;
    if (f != 1 && f != 2)
        return vf__pb_skip(p, wt);
    vf_status st = str_of(r, p, "StringStringEntryProto", f, wt, &n);
    if (st == VF_OK)
        snprintf(f == 1 ? kv->key : kv->val, f == 1 ? sizeof kv->key : sizeof kv->val, "%s", r->buf);
    return st;
}

static vf_status parse_external(rd *r, vf__pb *p, tinfo *t)
{
    kvpair kv = {"", ""};
    vf_status st = each_field(r, p, kv_field, &kv);
    if (st != VF_OK)
        return st;
    const char *key = kv.key, *val = kv.val;
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
static vf_status tensor_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    dimsink *ds = ctx;
    tinfo *t = ds->t;
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
    vf_status st = each_field(r, p, tensor_field, &ds);
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

/* Dimension: a value or a symbol (dim_param). */
static vf_status dim_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    vtype *t = ctx;
    int i = t->rank - 1;
    int64_t v;
    size_t n;
    vf_status st;
    if (f == 1) {
        if ((st = varint_of(p, "Dimension", f, wt, &v)) == VF_OK && (v < -1 || v > ((int64_t)1 << 48)))
            return fail(r, "onnx: a dimension of a value is out of range");
        t->dims[i] = v;
        return st;
    }
    if (f == 2) {
        if ((st = str_of(r, p, "Dimension", f, wt, &n)) == VF_OK)
            snprintf(t->sym[i], sizeof t->sym[i], "%s", r->buf);
        return st;
    }
    return vf__pb_skip(p, wt);
}

/* TensorShapeProto: its dims, at most 8. */
static vf_status shape_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    vtype *t = ctx;
    vf__pb sub;
    if (f != 1)
        return vf__pb_skip(p, wt);
    if (t->rank >= VF_MAX_DIMS)
        return fail(r, "onnx: a value has more than 8 dimensions, over what this reader takes");
    vf_status st = sub_of(p, "TensorShapeProto", f, wt, &sub);
    if (st != VF_OK)
        return st;
    t->dims[t->rank] = -1;
    t->sym[t->rank++][0] = '\0';
    return each_field(r, &sub, dim_field, t);
}

/* TypeProto.Tensor: elem_type and shape. */
static vf_status tensor_type_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    vtype *t = ctx;
    int64_t v;
    vf__pb sub;
    vf_status st;
    if (f == 1) {
        st = varint_of(p, "TypeProto.Tensor", f, wt, &v);
        t->elem = v > 0 && v <= VF_ONNX_ELEM_MAX ? (int32_t)v : 0;
        return st;
    }
    if (f == 2) {
        if ((st = sub_of(p, "TypeProto.Tensor", f, wt, &sub)) != VF_OK)
            return st;
        t->rank = 0;
        return each_field(r, &sub, shape_field, t);
    }
    return vf__pb_skip(p, wt);
}

static vf_status type_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx);

/* Sequence and Optional (elem_type = 1), Map (value_type = 2): the inner
 * TypeProto is walked; such values are not tensors this model prices. */
static vf_status inner_type_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    const uint32_t *want = ctx;
    vf__pb sub;
    if (f != *want)
        return vf__pb_skip(p, wt);
    vtype inner = {.rank = -1};
    vf_status st = sub_of(p, "TypeProto", f, wt, &sub);
    return st == VF_OK ? each_field(r, &sub, type_field, &inner) : st;
}

/* TypeProto: a tensor (or sparse tensor) type; the nesting of the others is
 * bounded by the wire reader's depth. */
static vf_status type_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    vtype *t = ctx;
    vf__pb sub;
    vf_status st;
    if (f == 1 || f == 8) {
        if ((st = sub_of(p, "TypeProto", f, wt, &sub)) != VF_OK)
            return st;
        t->tensor = true;
        return each_field(r, &sub, tensor_type_field, t);
    }
    if (f == 4 || f == 9 || f == 5) {
        uint32_t want = f == 5 ? 2 : 1;
        return (st = sub_of(p, "TypeProto", f, wt, &sub)) == VF_OK ? each_field(r, &sub, inner_type_field, &want) : st;
    }
    return vf__pb_skip(p, wt);
}

typedef struct vinfo {
    vtype t;
    char name[1024];
} vinfo;

static vf_status value_info_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    vinfo *vi = ctx;
    size_t n;
    vf__pb sub;
    vf_status st;
    if (f == 1) {
        if ((st = str_of(r, p, "ValueInfoProto", f, wt, &n)) == VF_OK)
            snprintf(vi->name, sizeof vi->name, "%s", r->buf);
        return st;
    }
    if (f == 2)
        return (st = sub_of(p, "ValueInfoProto", f, wt, &sub)) == VF_OK ? each_field(r, &sub, type_field, &vi->t) : st;
    return vf__pb_skip(p, wt);
}

enum { VI_INPUT, VI_OUTPUT, VI_INFO };

/* A graph input, output or value_info entry into its value. */
static vf_status record_value(rd *r, const vinfo *vi, int kind)
{
    uint32_t id = vf__graph_value(r->g, vi->name, strlen(vi->name));
    if (id == VF_GRAPH_NONE)
        return oom(r);
    vf__gvalue *v = &r->g->v[id];
    if (kind == VI_INPUT) {
        if (v->is_input)
            return fail(r, "onnx: graph input '%s' is listed twice", vi->name);
        v->is_input = true;
        if (!vf__graph_push(&r->g->inputs, &r->g->n_inputs, &r->g->cap_inputs, id))
            return oom(r);
    } else if (kind == VI_OUTPUT) {
        v->is_output = true;
        if (!vf__graph_push(&r->g->outputs, &r->g->n_outputs, &r->g->cap_outputs, id))
            return oom(r);
    }
    if (vi->t.tensor && v->tensor == VF_GRAPH_NONE) {
        v->elem = vi->t.elem;
        v->rank = vi->t.rank;
        v->declared = vi->t.rank >= 0;
        for (int i = 0; i < vi->t.rank; i++) {
            v->dims[i] = vi->t.dims[i];
            v->sym[i] = vi->t.sym[i][0] ? vf__graph_strdup(r->g, vi->t.sym[i], strlen(vi->t.sym[i])) : NULL;
        }
    }
    return VF_OK;
}

static vf_status parse_value_info(rd *r, vf__pb *p, int kind)
{
    vinfo *vi = calloc(1, sizeof *vi);
    if (!vi)
        return oom(r);
    vi->t.rank = -1;
    vf_status st = each_field(r, p, value_info_field, vi);
    if (st == VF_OK)
        st = record_value(r, vi, kind);
    free(vi);
    return st;
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

typedef struct floatsink {
    float v[VF_GRAPH_MAX_CONST];
    uint32_t n;
} floatsink;

static void add_float(void *c, double x)
{
    floatsink *s = c;
    if (s->n < VF_GRAPH_MAX_CONST)
        s->v[s->n] = (float)x;
    if (s->n < UINT32_MAX)
        s->n++;
}

typedef struct attrctx {
    vf__gattr *a;
    vf__gnode *nd;
    intsink ints;
    floatsink fl;
} attrctx;

static vf_status attr_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    attrctx *ac = ctx;
    vf__gattr *a = ac->a;
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
        ac->nd->subgraph = true;
        return vf__pb_skip(p, wt);
    case 7:
        return floats_of(p, M, f, wt, add_float, &ac->fl);
    case 8:
        return ints_of(p, M, f, wt, add_int, &ac->ints);
    default:
        return vf__pb_skip(p, wt);
    }
}

static vf_status parse_attr(rd *r, vf__pb *p, vf__gnode *nd, vf__gattr *a)
{
    memset(a, 0, sizeof *a);
    attrctx *ac = calloc(1, sizeof *ac);
    if (!ac)
        return oom(r);
    ac->a = a, ac->nd = nd;
    vf_status st = each_field(r, p, attr_field, ac);
    a->n_ints = ac->ints.n;
    a->n_floats = ac->fl.n;
    /* lists longer than VF_GRAPH_MAX_CONST keep their count only */
    if (st == VF_OK && ac->ints.n && ac->ints.n <= VF_GRAPH_MAX_CONST) {
        if (!(a->ints = vf__graph_alloc(r->g, ac->ints.n * sizeof *a->ints)))
            st = oom(r);
        else
            memcpy(a->ints, ac->ints.v, ac->ints.n * sizeof *a->ints);
    }
    if (st == VF_OK && ac->fl.n && ac->fl.n <= VF_GRAPH_MAX_CONST) {
        if (!(a->floats = vf__graph_alloc(r->g, ac->fl.n * sizeof *a->floats)))
            st = oom(r);
        else
            memcpy(a->floats, ac->fl.v, ac->fl.n * sizeof *a->floats);
    }
    free(ac);
    return st;
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

typedef struct nodectx {
    vf__gnode *nd;
    uint32_t *in, *out;
    vf__gattr *at;
    size_t n_in, cap_in, n_out, cap_out, n_at, cap_at;
} nodectx;

static vf_status node_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    const char *M = "NodeProto";
    nodectx *c = ctx;
    size_t n;
    vf__pb sub;
    vf_status st;
    if (f == 1 || f == 2) {
        if ((st = str_of(r, p, M, f, wt, &n)) != VF_OK)
            return st;
        return f == 1 ? edge(r, &c->in, &c->n_in, &c->cap_in, n) : edge(r, &c->out, &c->n_out, &c->cap_out, n);
    }
    if (f == 3 || f == 4 || f == 7) { /* name, op_type, domain */
        const char *s = NULL;
        if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK && !(s = vf__graph_strdup(r->g, r->buf, n)))
            st = oom(r);
        *(f == 3 ? &c->nd->name : f == 4 ? &c->nd->op : &c->nd->domain) = s;
        return st;
    }
    if (f == 5) {
        if (c->n_at >= VF_GRAPH_MAX_ATTRS || !vf__grow((void **)&c->at, &c->cap_at, c->n_at, sizeof *c->at))
            return fail(r, "onnx: a node has more attributes than this reader takes");
        if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK)
            st = parse_attr(r, &sub, c->nd, &c->at[c->n_at++]);
        return st;
    }
    return vf__pb_skip(p, wt);
}

/* n elements of a growing array copied into the graph's arena (NULL for none). */
static bool arena_copy(vf__graph *g, void **dst, const void *src, size_t n, size_t elem)
{
    *dst = NULL;
    if (!n)
        return true;
    if (!(*dst = vf__graph_alloc(g, n * elem)))
        return false;
    memcpy(*dst, src, n * elem);
    return true;
}

static vf_status parse_node(rd *r, vf__pb *p)
{
    nodectx c = {.nd = vf__graph_add_node(r->g)};
    if (!c.nd)
        return fail(r, "onnx: more nodes than this reader takes");
    vf__gnode *nd = c.nd;
    vf_status st = each_field(r, p, node_field, &c);
    if (st == VF_OK && (!nd->op || !nd->op[0]))
        st = fail(r, "onnx: a node has no op_type");
    if (st == VF_OK) {
        nd->n_in = (uint32_t)c.n_in, nd->n_out = (uint32_t)c.n_out, nd->n_attr = (uint32_t)c.n_at;
        if (!arena_copy(r->g, (void **)&nd->in, c.in, c.n_in, sizeof *c.in) ||
            !arena_copy(r->g, (void **)&nd->out, c.out, c.n_out, sizeof *c.out) ||
            !arena_copy(r->g, (void **)&nd->attr, c.at, c.n_at, sizeof *c.at))
            st = oom(r);
    }
    if (st == VF_OK && !nd->name) {
        char nm[32];
        int k = snprintf(nm, sizeof nm, "#%zu", r->g->n_node - 1);
        if (!(nd->name = vf__graph_strdup(r->g, nm, (size_t)k)))
            st = oom(r);
    }
    if (st == VF_OK && !nd->domain)
        nd->domain = "";
    free(c.in);
    free(c.out);
    free(c.at);
    return st;
}

/* ---- GraphProto, ModelProto ---- */

static vf_status graph_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    (void)ctx;
    vf__pb sub;
    vf_status st;
    if (f == 15)
        return fail(r, "onnx: sparse initializers are not supported by this reader");
    if (f != 1 && f != 5 && f != 11 && f != 12 && f != 13)
        return vf__pb_skip(p, wt);
    if ((st = sub_of(p, "GraphProto", f, wt, &sub)) != VF_OK)
        return st;
    return f == 1    ? parse_node(r, &sub)
           : f == 5  ? parse_initializer(r, &sub)
           : f == 11 ? parse_value_info(r, &sub, VI_INPUT)
           : f == 12 ? parse_value_info(r, &sub, VI_OUTPUT)
                     : parse_value_info(r, &sub, VI_INFO);
}

typedef struct opsetctx {
    char dom[64];
    int64_t ver;
} opsetctx;

static vf_status opset_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    opsetctx *o = ctx;
    size_t n;
    vf_status st;
    if (f == 1) {
        if ((st = str_of(r, p, "OperatorSetIdProto", f, wt, &n)) == VF_OK)
            snprintf(o->dom, sizeof o->dom, "%s", r->buf);
        return st;
    }
    return f == 2 ? varint_of(p, "OperatorSetIdProto", f, wt, &o->ver) : vf__pb_skip(p, wt);
}

typedef struct modelctx {
    bool graph;
    char prod[64], ver[32];
} modelctx;

static vf_status model_field(rd *r, vf__pb *p, uint32_t f, uint32_t wt, void *ctx)
{
    const char *M = "ModelProto";
    modelctx *mc = ctx;
    size_t n;
    vf__pb sub;
    vf_status st;
    switch (f) {
    case 1:
        return varint_of(p, M, f, wt, &r->g->ir_version);
    case 2:
    case 3:
        if ((st = str_of(r, p, M, f, wt, &n)) == VF_OK)
            snprintf(f == 2 ? mc->prod : mc->ver, f == 2 ? sizeof mc->prod : sizeof mc->ver, "%s", r->buf);
        return st;
    case 7:
        if (mc->graph)
            return fail(r, "onnx: the model has two graphs");
        mc->graph = true;
        return (st = sub_of(p, M, f, wt, &sub)) == VF_OK ? each_field(r, &sub, graph_field, NULL) : st;
    case 8: {
        opsetctx o = {"", 0};
        if ((st = sub_of(p, M, f, wt, &sub)) == VF_OK && (st = each_field(r, &sub, opset_field, &o)) == VF_OK &&
            (!o.dom[0] || !strcmp(o.dom, "ai.onnx")))
            r->g->opset = o.ver;
        return st;
    }
    default:
        return vf__pb_skip(p, wt);
    }
}

static vf_status parse_model(rd *r, vf__pb *p)
{
    modelctx mc = {false, "", ""};
    vf_status st = each_field(r, p, model_field, &mc);
    if (st == VF_OK && !mc.graph)
        return fail(r, "onnx: no graph in the model (not an onnx file?)");
    if (st == VF_OK && r->g->ir_version <= 0)
        return fail(r, "onnx: no ir_version (not an onnx file?)");
    snprintf(r->g->producer, sizeof r->g->producer, "%s%s%s", mc.prod, mc.ver[0] ? " " : "", mc.ver);
    return st;
}

/* ---- after the parse: inputs, order, aliases, buffers ---- */

/* Identity nodes that copy an initializer: the exporter kept one tensor for
 * several equal ones (onnx's deduplication; with trained weights they would
 * be distinct), so their bytes are counted apart. Each initializer and each
 * copy is one tensor of the module, named by its own value: one read only as
 * BatchNormalization's running mean or variance (inputs 3 and 4) is a
 * buffer, with no gradient and no optimizer state (nn.BatchNorm2d registers
 * running_mean and running_var with register_buffer), whatever the tensor it
 * was deduplicated with is. */
static bool alias_source(const vf__graph *g, const vf__gnode *n, uint32_t *src)
{
    if (strcmp(n->op, "Identity") || n->n_in != 1 || n->n_out != 1 || n->out[0] == VF_GRAPH_NONE)
        return false;
    *src = vf__graph_init_behind(g, n->in[0]);
    return *src != VF_GRAPH_NONE;
}

static void finish_tensors(rd *r)
{
    vf__graph *g = r->g;
    uint8_t *use = calloc(g->n_v + 1, 1); /* per value: 1 stats only, 2 other use */
    for (size_t i = 0; use && i < g->n_node; i++) {
        const vf__gnode *n = &g->node[i];
        uint32_t src;
        if (alias_source(g, n, &src))
            continue; /* a copy made, not a use */
        bool bn = !strcmp(n->op, "BatchNormalization");
        for (uint32_t k = 0; k < n->n_in; k++) {
            uint32_t x = n->in[k];
            if (x != VF_GRAPH_NONE && vf__graph_init_behind(g, x) != VF_GRAPH_NONE)
                use[x] = bn && (k == 3 || k == 4) && use[x] != 2 ? 1 : 2;
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        uint32_t src;
        if (!alias_source(g, &g->node[i], &src))
            continue;
        const vf_tensor *t = &r->m->tensors[g->v[src].tensor];
        uint32_t o = g->node[i].out[0];
        g->aliases++;
        g->alias_elements += t->n_elements;
        g->alias_bytes += t->n_bytes;
        g->v[o].buffer = use && use[o] == 1;
        if (!g->v[o].buffer && !(t->flags & VF_TENSOR_NOT_PARAM) && vf__onnx_is_float(g->v[src].elem)) {
            g->alias_params++;
            g->alias_param_elements += t->n_elements;
        }
    }
    for (size_t i = 0; use && i < g->n_v; i++)
        if (use[i] == 1 && g->v[i].tensor != VF_GRAPH_NONE) {
            r->m->tensors[g->v[i].tensor].flags |= VF_TENSOR_NOT_PARAM;
            g->v[i].buffer = true;
        }
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
