/* safetensors.c — the safetensors header reader and sharded-index reader.
 *
 * Validation follows the reference implementation (huggingface/safetensors,
 * src/tensor.rs: read_metadata + Metadata::validate): header length at most
 * 100,000,000 bytes and inside the file; offsets exact integers, sorted
 * contiguous from 0, each tensor's byte length = elements x bits / 8, no
 * trailing bytes; unknown dtype, duplicate names and non-string metadata
 * values refused. Only the header is read, never the data; st_parse.c
 * parses it. */
#include "model/model.h"
#include "read/readers.h"
#include "read/source.h"
#include "read/st_parse.h"

#include <stdlib.h>
#include <string.h>

typedef struct span {
    uint64_t begin, end;
    size_t tensor;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

typedef struct reader {
    vf_model *m;
    const char *path;
    uint32_t file;
    uint64_t data_start;
    /* the dtype strings seen last and what they are (weights and their
     * scales alternate between two) */
    struct {
        char s[16];
        size_t len;
        vf_dtype dt;
    } seen[2];
} reader;

static vf_dtype dtype_of(reader *r, const char *s, size_t len)
{
    for (int k = 0; k < 2; k++) {
        bool same = r->seen[k].len == len && r->seen[k].dt != VF_DTYPE_UNKNOWN;
        for (size_t i = 0; same && i < len; i++)
            same = s[i] == r->seen[k].s[i];
        if (same)
            return r->seen[k].dt;
    }
    vf_dtype dt = vf_dtype_from_safetensors(s);
    if (dt != VF_DTYPE_UNKNOWN && len < sizeof r->seen[0].s) {
        r->seen[1] = r->seen[0];
        memcpy(r->seen[0].s, s, len + 1);
        r->seen[0].len = len;
        r->seen[0].dt = dt;
    }
    return dt;
}

/* One tensor entry, as the parser decoded it: what it means. */
static vf_status add_entry(void *ctx, vf__st_entry *e, vf_error *err)
{
    reader *r = ctx;
    const char *path = r->path, *name = e->name;
    if (!e->dtype)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': missing dtype", name);
    vf_dtype dt = dtype_of(r, e->dtype, e->dtype_len);
    if (dt == VF_DTYPE_UNKNOWN)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': unknown dtype '%.32s'", name, e->dtype);
    if (!e->has_shape)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': missing shape", name);
    size_t nd = e->n_dims;
    if (nd > VF_MAX_DIMS)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': %zu dimensions, at most %d supported", name, nd,
                       VF_MAX_DIMS);
    vf_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = dt;
    t.n_dims = (uint32_t)nd;
    t.file = r->file;
    t.n_elements = 1;
    for (size_t i = 0; i < nd; i++) {
        if (i == e->shape_bad)
            return vf__err(err, VF_EFORMAT, path, "tensor '%s': shape entries must be non-negative integers", name);
        t.shape[i] = e->shape[i];
        if (vf__mul_overflow(t.n_elements, e->shape[i], &t.n_elements))
            return vf__err(err, VF_EFORMAT, path, "tensor '%s': element count overflows", name);
    }
    vf_status st = vf_dtype_bytes(dt, t.n_elements, &t.n_bytes);
    if (st == VF_EFORMAT)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': %llu elements of %s do not fill whole bytes", name,
                       (unsigned long long)t.n_elements, vf_dtype_get(dt)->name);
    if (st != VF_OK)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': byte size overflows", name);
    if (!e->offsets_ok)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': data_offsets must be two non-negative integers", name);
    uint64_t b = e->offsets[0], end = e->offsets[1];
    if (end < b)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': data_offsets end before they begin", name);
    if (end - b != t.n_bytes)
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': data_offsets span %llu bytes, shape and dtype need %llu",
                       name, (unsigned long long)(end - b), (unsigned long long)t.n_bytes);
    if (vf__add_overflow(r->data_start, b, &t.offset))
        return vf__err(err, VF_EFORMAT, path, "tensor '%s': offset overflows", name);
    const vf_tensor *d = vf__model_add_tensor(r->m, &t);
    if (!d)
        return vf__err(err, VF_ENOMEM, path, "too many tensors or out of memory");
    e->stored_name = d->name;
    return VF_OK;
}

/* The tensors [first, m->n_tensors) must tile the data section exactly. */
static vf_status check_tiling(vf_model *m, size_t first, uint64_t data_start, uint64_t data_len, const char *path,
                              vf_error *err)
{
    size_t k = m->n_tensors - first;
    if (k == 0)
        return data_len == 0 ? VF_OK
                             : vf__err(err, VF_EFORMAT, path, "tensor data covers 0 of %llu bytes after the header",
                                       (unsigned long long)data_len);
    const vf_tensor *ts = m->tensors + first;
    /* writers store tensors in offset order: then no sort is needed */
    bool sorted = true;
    for (size_t i = 1; i < k && sorted; i++) {
        uint64_t b0 = ts[i - 1].offset, b1 = ts[i].offset;
        sorted = b0 < b1 || (b0 == b1 && ts[i - 1].n_bytes <= ts[i].n_bytes);
    }
    span *spans = calloc(k && !sorted ? k : 1, sizeof *spans);
    if (!spans)
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    if (!sorted) {
        for (size_t i = 0; i < k; i++) {
            spans[i].begin = ts[i].offset - data_start;
            spans[i].end = spans[i].begin + ts[i].n_bytes;
            spans[i].tensor = first + i;
        }
        qsort(spans, k, sizeof *spans, cmp_span);
    }
    vf_status st = VF_OK;
    uint64_t expect = 0;
    for (size_t i = 0; i < k; i++) {
        span s = sorted ? (span){ts[i].offset - data_start, ts[i].offset - data_start + ts[i].n_bytes, first + i}
                        : spans[i];
        if (s.begin != expect) {
            st = vf__err(err, VF_EFORMAT, path, "tensor '%s': data begins at %llu, expected %llu (%s)",
                         m->tensors[s.tensor].name, (unsigned long long)s.begin, (unsigned long long)expect,
                         s.begin < expect ? "overlap" : "gap");
            break;
        }
        expect = s.end;
    }
    if (st == VF_OK && expect != data_len)
        st = vf__err(err, VF_EFORMAT, path,
                     expect > data_len ? "tensor data runs past the end of the file (needs %llu bytes, has %llu)"
                                       : "tensor data covers %llu of %llu bytes after the header",
                     (unsigned long long)expect, (unsigned long long)data_len);
    free(spans);
    return st;
}

vf_status vf__safetensors_read(vf_model *m, vf__fs *fs, const char *path, vf_error *err)
{
    vf__src *src = NULL;
    vf_status st = vf__fs_open(fs, path, &src, err);
    if (st != VF_OK)
        return st;
    char *hdr = NULL;
    uint64_t fsize = src->size;
    if (fsize < 8) {
        st = vf__err(err, VF_EFORMAT, path, "file is %llu bytes, too small for a safetensors header",
                     (unsigned long long)fsize);
        goto out;
    }
    unsigned char lenb[8];
    if ((st = vf__src_pread(src, lenb, 8, 0, err)) != VF_OK)
        goto out;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | lenb[i];
    if (n > VF_SAFETENSORS_MAX_HEADER) {
        st = vf__err(err, VF_EFORMAT, path, "header length %llu exceeds the 100000000-byte limit",
                     (unsigned long long)n);
        goto out;
    }
    if (n > fsize - 8) {
        st = vf__err(err, VF_EFORMAT, path, "header length %llu runs past the end of the %llu-byte file",
                     (unsigned long long)n, (unsigned long long)fsize);
        goto out;
    }
    if (n < 2) {
        st = vf__err(err, VF_EFORMAT, path, "header is empty");
        goto out;
    }
    hdr = malloc((size_t)n);
    if (!hdr) {
        st = vf__err(err, VF_ENOMEM, path, "out of memory for a %llu-byte header", (unsigned long long)n);
        goto out;
    }
    if ((st = vf__src_pread(src, hdr, (size_t)n, 8, err)) != VF_OK)
        goto out;
    reader r;
    memset(&r, 0, sizeof r);
    r.m = m;
    r.path = path;
    r.data_start = 8 + n;
    r.seen[0].dt = r.seen[1].dt = VF_DTYPE_UNKNOWN;
    uint64_t data_len = fsize - r.data_start;
    r.file = vf__model_add_file(m, path, fsize);
    if (r.file == VF_NO_FILE) {
        st = vf__err(err, VF_ENOMEM, path, "too many files or out of memory");
        goto out;
    }
    m->files[r.file].data_offset = r.data_start;
    m->files[r.file].data_bytes = data_len;
    size_t first = m->n_tensors;
    if ((st = vf__st_parse(hdr, (size_t)n, path, add_entry, &r, err)) != VF_OK)
        goto out;
    free(hdr); /* before the tiling check allocates */
    hdr = NULL;
    st = check_tiling(m, first, r.data_start, data_len, path, err);
out:
    free(hdr);
    vf__src_close(src);
    return st;
}

/* How much of a shard its reader reads: the 8-byte length and the header
 * (a prefetch hint; a length over the cap or the file is the reader's to
 * refuse, so only the first bytes are asked for then). */
static uint64_t header_need(const unsigned char *prefix, size_t got, uint64_t total)
{
    if (got < 8)
        return 8;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | prefix[i];
    return n <= VF_SAFETENSORS_MAX_HEADER && n <= total - 8 ? 8 + n : got;
}

/* Shard names come from the index: plain file names in the same directory. */
static bool safe_shard_name(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

#define VF_MAX_INDEX_BYTES ((size_t)256 << 20)

vf_status vf__safetensors_read_index(vf_model *m, vf__fs *fs, const char *index_path, vf_error *err)
{
    char *text = NULL, *dir = NULL, **paths = NULL;
    size_t len = 0;
    json_t *root = NULL, *shards = NULL, *seen = NULL;
    vf_status st = vf__fs_read_small(fs, index_path, VF_MAX_INDEX_BYTES, &text, &len, err);
    if (st != VF_OK)
        return st;
    if (!(root = vf__json_parse(text, len, index_path, err))) {
        st = err ? err->status : VF_EFORMAT;
        goto out;
    }
    json_t *wm = json_object_get(root, "weight_map");
    if (!json_is_object(root) || !json_is_object(wm)) {
        st = vf__err(err, VF_EFORMAT, index_path, "index has no weight_map object");
        goto out;
    }
    if (!(dir = vf__path_dir(index_path)) || !(shards = json_array()) || !(seen = json_object())) {
        st = vf__err(err, VF_ENOMEM, index_path, "out of memory");
        goto out;
    }
    const char *tname;
    json_t *v;
    json_object_foreach(wm, tname, v)
    {
        if (!json_is_string(v) || !safe_shard_name(json_string_value(v))) {
            st = vf__err(err, VF_EFORMAT, index_path, "weight_map entry '%s' does not name a shard file", tname);
            goto out;
        }
        const char *s = json_string_value(v);
        if (!json_object_get(seen, s)) {
            if (json_array_size(shards) >= VF_MAX_SHARDS) {
                st = vf__err(err, VF_EFORMAT, index_path, "too many shards");
                goto out;
            }
            json_object_set_new(seen, s, json_integer((json_int_t)json_array_size(shards)));
            json_array_append_new(shards, json_string(s));
        }
    }
    if (json_array_size(shards) == 0) {
        st = vf__err(err, VF_EFORMAT, index_path, "weight_map is empty");
        goto out;
    }
    /* every shard named must exist before we read any; then their headers
     * are read, fetched together where the file set can (the Hub) */
    size_t i, n_shards = json_array_size(shards);
    json_t *sv;
    if (!(paths = calloc(n_shards, sizeof *paths))) {
        st = vf__err(err, VF_ENOMEM, index_path, "out of memory");
        goto out;
    }
    json_array_foreach(shards, i, sv)
    {
        paths[i] = vf__path_join(dir, json_string_value(sv));
        if (!paths[i] || !vf__fs_exists(fs, paths[i])) {
            st = paths[i] ? vf__err(err, VF_ENOENT, index_path, "shard '%s' named in weight_map is missing",
                                    json_string_value(sv))
                          : vf__err(err, VF_ENOMEM, index_path, "out of memory");
            goto out;
        }
    }
    vf__fs_prefetch(fs, (const char *const *)paths, n_shards, header_need);
    json_object_clear(seen); /* now: tensor name -> file index */
    for (i = 0; i < n_shards; i++) {
        const char *p = paths[i];
        size_t before = m->n_tensors;
        st = vf__safetensors_read(m, fs, p, err);
        if (st != VF_OK)
            goto out;
        for (size_t t = before; t < m->n_tensors; t++) {
            if (json_object_get(seen, m->tensors[t].name)) {
                st = vf__err(err, VF_EFORMAT, index_path, "tensor '%s' is stored in two shards", m->tensors[t].name);
                goto out;
            }
            json_object_set_new(seen, m->tensors[t].name, json_integer((json_int_t)m->tensors[t].file));
        }
    }
    /* the map and the shards must agree */
    size_t unmapped = 0;
    json_object_foreach(wm, tname, v)
    {
        json_t *f = json_object_get(seen, tname);
        if (!f) {
            st = vf__err(err, VF_EFORMAT, index_path, "tensor '%s' in weight_map is in no shard", tname);
            goto out;
        }
        const char *want = json_string_value(v);
        const char *have = m->files[json_integer_value(f)].path;
        if (!vf__ends_with(have, want) || (strlen(have) > strlen(want) && have[strlen(have) - strlen(want) - 1] != '/')) {
            st = vf__err(err, VF_EFORMAT, index_path, "tensor '%s' is mapped to '%s' but stored elsewhere", tname,
                         want);
            goto out;
        }
    }
    if (json_object_size(seen) > json_object_size(wm))
        unmapped = json_object_size(seen) - json_object_size(wm);
    if (unmapped)
        vf__model_warn(m, "%s: %zu tensors in the shards are not in weight_map", index_path, unmapped);
    uint64_t total = 0;
    for (size_t t = 0; t < m->n_tensors; t++)
        total += m->tensors[t].n_bytes;
    json_t *md = json_object_get(root, "metadata");
    uint64_t claimed;
    if (json_is_object(md) && vf__json_u64(json_object_get(md, "total_size"), &claimed) && claimed != total)
        vf__model_warn(m, "%s: metadata.total_size is %llu but the shards hold %llu bytes of tensors", index_path,
                       (unsigned long long)claimed, (unsigned long long)total);
out:
    for (size_t k = 0; paths && k < json_array_size(shards); k++)
        free(paths[k]);
    free(paths);
    json_decref(seen);
    json_decref(shards);
    json_decref(root);
    free(dir);
    free(text);
    return st;
}
