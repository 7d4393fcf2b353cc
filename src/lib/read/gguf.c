/* gguf.c — the GGUF header reader (v2 and v3, split files).
 *
 * Layout and validation follow ggml's docs/gguf.md and the reference reader
 * src/gguf.cpp (see docs/formats.md "GGUF" for every rule and where we
 * differ). Only the header and tensor table are read, through a small
 * buffered reader: metadata arrays too long to keep (the 150k-entry token
 * list) are walked and counted, never materialised, so time and memory
 * depend on the header alone, never on the tensor data. */
#include "read/gguf_priv.h"
#include "read/readers.h"
#include "read/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_MAGIC 0x46554747u                  /* "GGUF" read as little-endian u32 */
#define GGUF_MAX_STRING ((uint64_t)1 << 30)     /* gguf.cpp GGUF_MAX_STRING_LENGTH */
#define GGUF_MAX_ARRAY ((uint64_t)1 << 30)      /* gguf.cpp GGUF_MAX_ARRAY_ELEMENTS */
#define GGUF_MAX_DIMS 4                         /* GGML_MAX_DIMS */
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_MAX_KEY_LEN VF_MAX_NAME_LEN
/* Real files have a few dozen keys; each becomes a JSON entry ~10x its
 * smallest on-disk size, so the count is capped well below gguf.cpp's. */
#define GGUF_MAX_KV ((uint64_t)1 << 16)
/* Array elements kept as JSON values across the whole file; past this,
 * arrays are summarised like long ones (bounds memory per input byte). */
#define GGUF_KEEP_BUDGET ((uint64_t)1 << 18)
#define RD_BUF 65536u

/* gguf_type: metadata value types. */
enum {
    T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STRING, T_ARRAY, T_U64, T_I64, T_F64, T_COUNT
};

static const char *const type_names[T_COUNT] = {"uint8", "int8",  "uint16", "int16",  "uint32", "int32", "float32",
                                                "bool",  "string", "array", "uint64", "int64",  "float64"};
static const uint8_t type_size[T_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

/* ggml type ids that were removed (blck_size 0 in type_traits): gguf.cpp
 * refuses them, so they can never be valid. Ids past our table are kept as
 * unknown instead (a newer ggml may have added them). */
static bool removed_ggml_type(uint32_t id)
{
    return id == 4 || id == 5 || (id >= 31 && id <= 33) || (id >= 36 && id <= 38);
}

/* ---- a buffered forward reader over pread ---- */
typedef struct rd {
    vf__src *src;
    const char *path;
    uint64_t size;    /* file size */
    uint64_t pos;     /* logical position */
    uint64_t buf_off; /* file offset of buf[0] */
    size_t buf_len;
    unsigned char *buf;
    vf_error *err;
    uint64_t keep_budget; /* array elements that may still be kept as JSON */
} rd;

static uint64_t rd_left(const rd *r) { return r->size - r->pos; }

static vf_status rd_truncated(rd *r, uint64_t need, const char *what)
{
    return vf__err(r->err, VF_EFORMAT, r->path, "header is truncated: %s needs %llu bytes at offset %llu, file has %llu",
                   what, (unsigned long long)need, (unsigned long long)r->pos, (unsigned long long)r->size);
}

static vf_status rd_bytes(rd *r, void *dst, size_t n, const char *what)
{
    if (n > rd_left(r))
        return rd_truncated(r, n, what);
    unsigned char *d = dst;
    while (n > 0) {
        if (r->pos >= r->buf_off && r->pos < r->buf_off + r->buf_len) {
            size_t at = (size_t)(r->pos - r->buf_off), k = r->buf_len - at;
            if (k > n)
                k = n;
            memcpy(d, r->buf + at, k);
            d += k;
            n -= k;
            r->pos += k;
            continue;
        }
        uint64_t want = rd_left(r) < RD_BUF ? rd_left(r) : RD_BUF;
        vf_status st = vf__src_pread(r->src, r->buf, (size_t)want, r->pos, r->err);
        if (st != VF_OK)
            return st;
        r->buf_off = r->pos;
        r->buf_len = (size_t)want;
    }
    return VF_OK;
}

static vf_status rd_skip(rd *r, uint64_t n, const char *what)
{
    if (n > rd_left(r))
        return rd_truncated(r, n, what);
    r->pos += n;
    return VF_OK;
}

static uint64_t le(const unsigned char *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

static vf_status rd_u32(rd *r, uint32_t *v, const char *what)
{
    unsigned char b[4];
    vf_status st = rd_bytes(r, b, 4, what);
    if (st == VF_OK)
        *v = (uint32_t)le(b, 4);
    return st;
}

static vf_status rd_u64(rd *r, uint64_t *v, const char *what)
{
    unsigned char b[8];
    vf_status st = rd_bytes(r, b, 8, what);
    if (st == VF_OK)
        *v = le(b, 8);
    return st;
}

/* A string's length, checked against the cap and the bytes remaining. */
static vf_status rd_strlen(rd *r, uint64_t *len, const char *what)
{
    vf_status st = rd_u64(r, len, what);
    if (st != VF_OK)
        return st;
    if (*len > GGUF_MAX_STRING)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: string length %llu exceeds the 1 GiB limit", what,
                       (unsigned long long)*len);
    if (*len > rd_left(r))
        return vf__err(r->err, VF_EFORMAT, r->path,
                       "%s: string length %llu runs past the end of the file (%llu bytes left)", what,
                       (unsigned long long)*len, (unsigned long long)rd_left(r));
    return VF_OK;
}

/* A short string (key or tensor name): ≤ cap bytes, no NUL, valid UTF-8. */
static vf_status rd_name(rd *r, char **out, const char *what)
{
    uint64_t len;
    *out = NULL;
    vf_status st = rd_strlen(r, &len, what);
    if (st != VF_OK)
        return st;
    if (len > GGUF_MAX_KEY_LEN)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: %llu bytes long, at most %zu allowed", what,
                       (unsigned long long)len, (size_t)GGUF_MAX_KEY_LEN);
    char *s = malloc((size_t)len + 1);
    if (!s)
        return vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
    if ((st = rd_bytes(r, s, (size_t)len, what)) != VF_OK) {
        free(s);
        return st;
    }
    s[len] = '\0';
    if (strlen(s) != len || !vf__utf8_valid(s, (size_t)len)) {
        free(s);
        return vf__err(r->err, VF_EFORMAT, r->path, "%s is not valid utf-8 text", what);
    }
    *out = s;
    return VF_OK;
}

/* ---- metadata values ---- */

/* One scalar of type t as JSON (t is not STRING/ARRAY). NULL only on no memory. */
static json_t *scalar_json(int t, const unsigned char *b)
{
    uint64_t u = le(b, type_size[t]);
    switch (t) {
    case T_U8:
    case T_U16:
    case T_U32:
        return json_integer((json_int_t)u);
    case T_I8:
        return json_integer((int8_t)u);
    case T_I16:
        return json_integer((int16_t)u);
    case T_I32:
        return json_integer((int32_t)u);
    case T_I64:
        return json_integer((json_int_t)(int64_t)u);
    case T_U64:
        /* beyond json_int_t: kept as a double (documented; no real key needs it) */
        return u <= (uint64_t)INT64_MAX ? json_integer((json_int_t)u) : json_real((double)u);
    case T_BOOL:
        return json_boolean(u != 0); /* gguf.cpp: any non-zero byte is true */
    case T_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, sizeof f);
        json_t *j = json_real((double)f);
        return j ? j : json_null(); /* NaN and infinities have no JSON form */
    }
    case T_F64: {
        double d;
        memcpy(&d, &u, sizeof d);
        json_t *j = json_real(d);
        return j ? j : json_null();
    }
    default:
        return json_null();
    }
}

static json_t *summary_json(const char *type, const char *what, uint64_t n)
{
    json_t *o = json_object();
    if (o) {
        json_object_set_new(o, "type", json_string(type));
        json_object_set_new(o, what, json_integer((json_int_t)n));
    }
    return o;
}

/* A string value; *out (when out is non-NULL) gets its JSON form: the text
 * when short and valid UTF-8, null when not UTF-8, a summary when long. */
static vf_status read_string_value(rd *r, json_t **out, const char *what)
{
    uint64_t len;
    vf_status st = rd_strlen(r, &len, what);
    if (st != VF_OK)
        return st;
    if (!out || len > VF_GGUF_KV_MAX_STRING) {
        if ((st = rd_skip(r, len, what)) != VF_OK)
            return st;
        if (out)
            *out = summary_json("string", "length", len);
        return VF_OK;
    }
    char *s = malloc((size_t)len + 1);
    if (!s)
        return vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
    if ((st = rd_bytes(r, s, (size_t)len, what)) == VF_OK) {
        s[len] = '\0';
        *out = vf__utf8_valid(s, (size_t)len) ? json_stringn(s, (size_t)len) : json_null();
    }
    free(s);
    return st;
}

/* Reads one value of type t. When out is NULL the value is only walked. */
static vf_status read_value(rd *r, uint32_t t, json_t **out, const char *key)
{
    char what[96];
    snprintf(what, sizeof what, "metadata key '%.64s'", key);
    if (out)
        *out = NULL;
    if (t >= T_COUNT)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: unknown value type %u", what, t);
    if (t == T_STRING)
        return read_string_value(r, out, what);
    if (t != T_ARRAY) {
        unsigned char b[8];
        vf_status st = rd_bytes(r, b, type_size[t], what);
        if (st == VF_OK && out)
            *out = scalar_json((int)t, b);
        return st;
    }
    uint32_t et;
    uint64_t n;
    vf_status st;
    if ((st = rd_u32(r, &et, what)) != VF_OK || (st = rd_u64(r, &n, what)) != VF_OK)
        return st;
    if (et == T_ARRAY)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: nested arrays are not supported", what);
    if (et >= T_COUNT)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: array of unknown value type %u", what, et);
    /* the count must be possible before anything is allocated or walked */
    uint64_t min_each = et == T_STRING ? 8 : type_size[et], need;
    if (n > GGUF_MAX_ARRAY)
        return vf__err(r->err, VF_EFORMAT, r->path, "%s: array of %llu elements exceeds the limit of %llu", what,
                       (unsigned long long)n, (unsigned long long)GGUF_MAX_ARRAY);
    if (vf__mul_overflow(n, min_each, &need) || need > rd_left(r))
        return vf__err(r->err, VF_EFORMAT, r->path,
                       "%s: array of %llu %s elements runs past the end of the file (%llu bytes left)", what,
                       (unsigned long long)n, type_names[et], (unsigned long long)rd_left(r));
    bool keep = out && n <= VF_GGUF_KV_MAX_ARRAY && n <= r->keep_budget;
    if (keep)
        r->keep_budget -= n;
    json_t *a = NULL;
    if (keep && !(a = json_array()))
        return vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
    if (!keep && et != T_STRING) {
        st = rd_skip(r, need, what);
    } else {
        for (uint64_t i = 0; i < n && st == VF_OK; i++) {
            json_t *v = NULL;
            st = et == T_STRING ? read_string_value(r, keep ? &v : NULL, what) : read_value(r, et, &v, key);
            if (st == VF_OK && keep && json_array_append_new(a, v ? v : json_null()) != 0)
                st = vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
        }
    }
    if (st != VF_OK) {
        json_decref(a);
        return st;
    }
    if (out)
        *out = keep ? a : summary_json(type_names[et], "count", n);
    return VF_OK;
}

/* ---- one file ---- */

typedef struct shard {
    uint32_t alignment;
    int64_t split_no, split_count, split_tensors; /* -1 when absent */
} shard;

static bool json_int_of(const json_t *v, int64_t *out)
{
    if (!json_is_integer(v))
        return false;
    *out = json_integer_value(v);
    return true;
}

/* Reads the key/value section. kv receives every key (summarised values);
 * keep_values false stores nulls (later shards: only duplicates and the
 * split keys matter). */
static vf_status read_kvs(rd *r, uint64_t n_kv, json_t *kv, bool keep_values, shard *sh)
{
    vf_status st = VF_OK;
    for (uint64_t i = 0; i < n_kv && st == VF_OK; i++) {
        char *key = NULL;
        uint32_t t;
        json_t *v = NULL;
        if ((st = rd_name(r, &key, "metadata key")) != VF_OK)
            break;
        if (!*key)
            st = vf__err(r->err, VF_EFORMAT, r->path, "metadata key %llu is empty", (unsigned long long)i);
        else if (json_object_get(kv, key))
            st = vf__err(r->err, VF_EFORMAT, r->path, "duplicate metadata key '%.64s'", key);
        else if ((st = rd_u32(r, &t, "metadata value type")) == VF_OK) {
            bool split_key = strncmp(key, "split.", 6) == 0;
            bool want = keep_values || split_key || strcmp(key, "general.alignment") == 0;
            st = read_value(r, t, want ? &v : NULL, key);
            if (st == VF_OK && strcmp(key, "general.alignment") == 0) {
                int64_t a = 0;
                if (t != T_U32)
                    st = vf__err(r->err, VF_EFORMAT, r->path, "general.alignment has type %s, must be uint32",
                                 t < T_COUNT ? type_names[t] : "unknown");
                else if (!json_int_of(v, &a) || a == 0 || (a & (a - 1)) != 0)
                    st = vf__err(r->err, VF_EFORMAT, r->path, "general.alignment %lld is not a power of two",
                                 (long long)a);
                else
                    sh->alignment = (uint32_t)a;
            }
            if (st == VF_OK && split_key) {
                int64_t x;
                bool ok = json_int_of(v, &x) && x >= 0;
                if (strcmp(key, "split.no") == 0)
                    sh->split_no = ok ? x : -2;
                else if (strcmp(key, "split.count") == 0)
                    sh->split_count = ok ? x : -2;
                else if (strcmp(key, "split.tensors.count") == 0)
                    sh->split_tensors = ok ? x : -2;
            }
            if (st == VF_OK) {
                json_t *keep = keep_values && v ? json_incref(v) : json_null();
                if (json_object_set_new(kv, key, keep) != 0)
                    st = vf__err(r->err, VF_ENOMEM, r->path, "out of memory");
            }
        }
        json_decref(v);
        free(key);
    }
    if (st == VF_OK && (sh->split_no == -2 || sh->split_count == -2 || sh->split_tensors == -2))
        st = vf__err(r->err, VF_EFORMAT, r->path, "split.no, split.count and split.tensors.count must be integers");
    return st;
}

static uint64_t pad_to(uint64_t x, uint64_t a, bool *ovf)
{
    uint64_t r = x % a, y = x;
    if (r && vf__add_overflow(x, a - r, &y))
        *ovf = true;
    return y;
}

/* Reads one tensor-info entry and appends it (offset relative for now). */
static vf_status read_tensor_info(rd *r, vf_model *m, uint32_t file)
{
    char *name = NULL;
    vf_status st = rd_name(r, &name, "tensor name");
    if (st != VF_OK)
        return st;
    vf_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.file = file;
    t.layer = -1;
    uint32_t nd, type;
    int64_t ne[GGUF_MAX_DIMS] = {1, 1, 1, 1};
    if (!*name) {
        st = vf__err(r->err, VF_EFORMAT, r->path, "a tensor has an empty name");
        goto out;
    }
    if ((st = rd_u32(r, &nd, "tensor dimension count")) != VF_OK)
        goto out;
    if (nd > GGUF_MAX_DIMS) {
        st = vf__err(r->err, VF_EFORMAT, r->path, "tensor '%s': %u dimensions, at most %d allowed", name, nd,
                     GGUF_MAX_DIMS);
        goto out;
    }
    t.n_dims = nd;
    t.n_elements = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        if ((st = rd_u64(r, &v, "tensor shape")) != VF_OK)
            goto out;
        if (v > (uint64_t)INT64_MAX) {
            st = vf__err(r->err, VF_EFORMAT, r->path, "tensor '%s': dimension %u is negative (%lld)", name, d,
                         (long long)(int64_t)v);
            goto out;
        }
        ne[d] = (int64_t)v;
        /* PyTorch order: the on-disk ne[0] is the innermost dimension */
        t.shape[nd - 1 - d] = v;
        if (vf__mul_overflow(t.n_elements, v, &t.n_elements) || t.n_elements > (uint64_t)INT64_MAX) {
            st = vf__err(r->err, VF_EFORMAT, r->path, "tensor '%s': element count overflows", name);
            goto out;
        }
    }
    uint64_t rel;
    if ((st = rd_u32(r, &type, "tensor type")) != VF_OK || (st = rd_u64(r, &rel, "tensor offset")) != VF_OK)
        goto out;
    if (type > INT32_MAX || removed_ggml_type(type)) {
        st = vf__err(r->err, VF_EFORMAT, r->path, "tensor '%s': invalid ggml type %u", name, type);
        goto out;
    }
    t.dtype = vf_dtype_from_gguf(type);
    if (t.dtype != VF_DTYPE_UNKNOWN) {
        const vf_dtype_info *di = vf_dtype_get(t.dtype);
        if (nd > 0 && (uint64_t)ne[0] % di->block_elements != 0) {
            st = vf__err(r->err, VF_EFORMAT, r->path,
                         "tensor '%s': first dimension %lld is not a multiple of the %s block size %u", name,
                         (long long)ne[0], di->name, di->block_elements);
            goto out;
        }
        if (vf_dtype_bytes(t.dtype, t.n_elements, &t.n_bytes) != VF_OK) {
            st = vf__err(r->err, VF_EFORMAT, r->path, "tensor '%s': byte size overflows", name);
            goto out;
        }
    } else {
        /* size unknown: taken from the file layout once all offsets are read */
        vf__model_warn(m, "%s: tensor '%s' has ggml type %u, unknown to this build; its bytes are taken from the "
                          "file layout",
                       r->path, name, type);
    }
    /* stacked experts: ffn_{gate,up,down}_exps carry the expert count outermost */
    if (strstr(name, "_exps") && nd >= 2)
        t.n_experts = (uint32_t)((uint64_t)ne[nd - 1] > UINT32_MAX ? UINT32_MAX : (uint64_t)ne[nd - 1]);
    t.offset = rel;
    if (!vf__model_add_tensor(m, &t))
        st = vf__err(r->err, VF_ENOMEM, r->path, "too many tensors or out of memory");
out:
    free(name);
    return st;
}

/* Places the file's tensors [first, m->n_tensors): gguf.cpp's rule that
 * tensors are contiguous in file order (offset = sum of the padded sizes
 * before it), and ours that every tensor lies inside the file. */
static vf_status place_tensors(vf_model *m, size_t first, uint32_t file, uint64_t data_start, const char *path,
                               vf_error *err)
{
    vf_file_info *f = &m->files[file];
    uint64_t fsize = f->size, align = f->alignment, expect = 0;
    bool free_next = false; /* after a tensor of unknown size, the next may start anywhere after it */
    for (size_t i = first; i < m->n_tensors; i++) {
        vf_tensor *t = &m->tensors[i];
        uint64_t rel = t->offset, end;
        bool ovf = false;
        if (rel % align != 0)
            return vf__err(err, VF_EFORMAT, path, "tensor '%s': offset %llu is not a multiple of the alignment %llu",
                           t->name, (unsigned long long)rel, (unsigned long long)align);
        if (free_next) {
            vf_tensor *p = &m->tensors[i - 1];
            if (rel < p->offset - data_start)
                return vf__err(err, VF_EFORMAT, path, "tensor '%s': offset %llu does not follow the tensor before it",
                               t->name, (unsigned long long)rel);
            p->n_bytes = rel - (p->offset - data_start);
            free_next = false;
        } else if (rel != expect) {
            return vf__err(err, VF_EFORMAT, path, "tensor '%s' has offset %llu, expected %llu (%s)", t->name,
                           (unsigned long long)rel, (unsigned long long)expect, rel < expect ? "overlap" : "gap");
        }
        if (vf__add_overflow(data_start, rel, &t->offset) || t->offset > fsize)
            return vf__err(err, VF_EFORMAT, path, "tensor '%s': data starts past the end of the file", t->name);
        if (t->dtype == VF_DTYPE_UNKNOWN) {
            free_next = true;
            t->n_bytes = fsize - t->offset; /* the last tensor: up to the end of the file */
            continue;
        }
        if (vf__add_overflow(t->offset, t->n_bytes, &end) || end > fsize)
            return vf__err(err, VF_EFORMAT, path,
                           "tensor '%s': data runs past the end of the file (ends at %llu, file is %llu bytes)",
                           t->name, (unsigned long long)(t->offset + t->n_bytes), (unsigned long long)fsize);
        expect = pad_to(rel + t->n_bytes, align, &ovf);
        if (ovf)
            return vf__err(err, VF_EFORMAT, path, "tensor '%s': offset overflows", t->name);
    }
    if (free_next)
        expect = fsize - data_start;
    f->data_bytes = expect < fsize - data_start ? expect : fsize - data_start;
    return VF_OK;
}

/* Reads one GGUF file into m. kv_out (first shard) receives the metadata. */
static vf_status read_file(vf_model *m, vf__fs *fs, const char *path, json_t **kv_out, shard *sh, vf_error *err)
{
    sh->alignment = GGUF_DEFAULT_ALIGNMENT;
    sh->split_no = sh->split_count = sh->split_tensors = -1;
    vf__src *src = NULL;
    vf_status st = vf__fs_open(fs, path, &src, err);
    if (st != VF_OK)
        return st;
    json_t *kv = NULL;
    rd r = {.src = src, .path = path, .err = err, .keep_budget = GGUF_KEEP_BUDGET};
    r.size = src->size;
    if (r.size == 0) {
        st = vf__err(err, VF_EFORMAT, path, "empty file");
        goto out;
    }
    if (!(r.buf = malloc(RD_BUF)) || !(kv = json_object())) {
        st = vf__err(err, VF_ENOMEM, path, "out of memory");
        goto out;
    }
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    if ((st = rd_u32(&r, &magic, "magic")) != VF_OK)
        goto out;
    if (magic != GGUF_MAGIC) {
        st = vf__err(err, VF_EFORMAT, path, "not a gguf file (bad magic)");
        goto out;
    }
    if ((st = rd_u32(&r, &version, "version")) != VF_OK)
        goto out;
    if ((version & 0xFFFFu) == 0) { /* gguf.cpp's test: a byte-swapped small number */
        st = vf__err(err, VF_EUNSUPPORTED, path, "big-endian gguf files are not supported");
        goto out;
    }
    if (version != 2 && version != 3) {
        st = vf__err(err, VF_EUNSUPPORTED, path, "unsupported gguf version %u (2 and 3 are read)", version);
        goto out;
    }
    if ((st = rd_u64(&r, &n_tensors, "tensor count")) != VF_OK || (st = rd_u64(&r, &n_kv, "metadata count")) != VF_OK)
        goto out;
    /* each kv takes ≥ 13 bytes and each tensor info ≥ 24: counts that cannot fit are lies */
    if (n_kv > GGUF_MAX_KV || n_kv * 13 > rd_left(&r)) {
        st = vf__err(err, VF_EFORMAT, path, "metadata count %llu does not fit in the file or exceeds %llu",
                     (unsigned long long)n_kv, (unsigned long long)GGUF_MAX_KV);
        goto out;
    }
    if (n_tensors > VF_MAX_TENSORS || n_tensors * 24 > rd_left(&r)) {
        st = vf__err(err, VF_EFORMAT, path, "tensor count %llu does not fit in the file",
                     (unsigned long long)n_tensors);
        goto out;
    }
    if ((st = read_kvs(&r, n_kv, kv, kv_out != NULL, sh)) != VF_OK)
        goto out;
    uint32_t file = vf__model_add_file(m, path, r.size);
    if (file == VF_NO_FILE) {
        st = vf__err(err, VF_ENOMEM, path, "too many files or out of memory");
        goto out;
    }
    m->files[file].alignment = sh->alignment;
    size_t first = m->n_tensors;
    for (uint64_t i = 0; i < n_tensors && st == VF_OK; i++)
        st = read_tensor_info(&r, m, file);
    if (st != VF_OK)
        goto out;
    bool ovf = false;
    uint64_t data_start = pad_to(r.pos, sh->alignment, &ovf);
    if (n_tensors > 0 && (ovf || data_start > r.size)) {
        st = vf__err(err, VF_EFORMAT, path, "tensor data section starts past the end of the file");
        goto out;
    }
    m->files[file].data_offset = data_start < r.size ? data_start : r.size;
    if ((st = place_tensors(m, first, file, m->files[file].data_offset, path, err)) != VF_OK)
        goto out;
    if (kv_out) {
        *kv_out = kv;
        kv = NULL;
    }
out:
    json_decref(kv);
    free(r.buf);
    vf__src_close(src);
    return st;
}

/* ---- split files ---- */

/* "<prefix>-00001-of-00003.gguf": true and the prefix length when it matches. */
static bool split_name(const char *path, size_t *prefix_len)
{
    static const char tail[] = "-00000-of-00000.gguf";
    size_t n = strlen(path), tl = sizeof tail - 1;
    if (n < tl)
        return false;
    const char *p = path + n - tl;
    for (size_t i = 0; i < tl; i++)
        if (tail[i] == '0' ? (p[i] < '0' || p[i] > '9') : p[i] != tail[i])
            return false;
    *prefix_len = n - tl;
    return true;
}

static int cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const vf_tensor *const *)a)->name, (*(const vf_tensor *const *)b)->name);
}

/* gguf.cpp refuses duplicate tensor names within a file; across the shards
 * of a split they would be just as ambiguous. */
static vf_status check_unique_names(vf_model *m, const char *path, vf_error *err)
{
    if (m->n_tensors < 2)
        return VF_OK;
    const vf_tensor **v = malloc(m->n_tensors * sizeof *v);
    if (!v)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    for (size_t i = 0; i < m->n_tensors; i++)
        v[i] = &m->tensors[i];
    qsort(v, m->n_tensors, sizeof *v, cmp_tensor_name);
    vf_status st = VF_OK;
    for (size_t i = 1; i < m->n_tensors; i++)
        if (strcmp(v[i - 1]->name, v[i]->name) == 0) {
            st = vf__err(err, VF_EFORMAT, m->files[v[i]->file].path, "duplicate tensor name '%s'", v[i]->name);
            break;
        }
    free(v);
    return st;
}

/* Reads shards 2..count of a split whose first shard is path. */
static vf_status read_split_rest(vf_model *m, vf__fs *fs, const char *path, const shard *s0, vf_error *err)
{
    size_t plen;
    uint64_t count = (uint64_t)s0->split_count;
    if (s0->split_no != 0)
        return vf__err(err, VF_EFORMAT, path, "this is split shard %lld of %llu; open the first shard",
                       (long long)s0->split_no + 1, (unsigned long long)count);
    if (count > 99999)
        return vf__err(err, VF_EFORMAT, path, "split.count %llu is too large", (unsigned long long)count);
    if (!split_name(path, &plen))
        return vf__err(err, VF_EFORMAT, path,
                       "split.count is %llu but the name does not follow <prefix>-00001-of-%05llu.gguf",
                       (unsigned long long)count, (unsigned long long)count);
    size_t n = plen + 32;
    char *p = malloc(n);
    if (!p)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    vf_status st = VF_OK;
    for (uint64_t i = 1; i < count && st == VF_OK; i++) {
        snprintf(p, n, "%.*s-%05llu-of-%05llu.gguf", (int)plen, path, (unsigned long long)(i + 1),
                 (unsigned long long)count);
        if (!vf__fs_exists(fs, p)) {
            st = vf__err(err, VF_ENOENT, path, "split shard '%s' is missing", p);
            break;
        }
        shard sh;
        if ((st = read_file(m, fs, p, NULL, &sh, err)) != VF_OK)
            break;
        if (sh.split_no != (int64_t)i || sh.split_count != s0->split_count)
            st = vf__err(err, VF_EFORMAT, p, "split.no/split.count say shard %lld of %lld, expected %llu of %llu",
                         (long long)sh.split_no + 1, (long long)sh.split_count, (unsigned long long)(i + 1),
                         (unsigned long long)count);
    }
    free(p);
    if (st == VF_OK && s0->split_tensors >= 0 && (uint64_t)s0->split_tensors != m->n_tensors)
        st = vf__err(err, VF_EFORMAT, path, "split.tensors.count is %lld but the shards hold %zu tensors",
                     (long long)s0->split_tensors, m->n_tensors);
    return st;
}

vf_status vf__gguf_read(vf_model *m, vf__fs *fs, const char *path, vf_error *err)
{
    json_t *kv = NULL;
    shard s0;
    vf_status st = read_file(m, fs, path, &kv, &s0, err);
    if (st != VF_OK)
        return st;
    if (s0.split_count > 1 || (s0.split_no > 0))
        st = read_split_rest(m, fs, path, &s0, err);
    if (st == VF_OK)
        st = check_unique_names(m, path, err);
    if (st != VF_OK) {
        json_decref(kv);
        return st;
    }
    json_decref(m->gguf_kv);
    m->gguf_kv = kv;
    vf__gguf_hparams(m);
    return VF_OK;
}
