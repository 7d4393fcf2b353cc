/* infer_testlib.h — builds vf_models for the inference tests by hand, until
 * the GGUF reader and the config.json architectures land in main: a minimal
 * reader of a real GGUF tensor table (../shared/reference/llamacpp/heads), and
 * helpers to add tensors and hyper-parameters. Tests only; the product's
 * reader is src/lib/gguf.c. */
#ifndef VF_INFER_TESTLIB_H
#define VF_INFER_TESTLIB_H

#include "internal.h"
#include "testutil.h"

#include <math.h>

#define REF "../shared/reference"

static inline uint64_t itl_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static inline uint32_t itl_u32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* size of one metadata value of type t at p (GGUF v3), 0 on a bad type */
static inline size_t itl_skip(const unsigned char *p, uint32_t t)
{
    static const size_t sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (t > 12)
        return 0;
    if (t == 8)
        return 8 + (size_t)itl_u64(p);
    if (t == 9) {
        uint32_t et = itl_u32(p);
        uint64_t n = itl_u64(p + 4);
        size_t off = 12;
        for (uint64_t i = 0; i < n; i++)
            off += itl_skip(p + off, et);
        return off;
    }
    return sz[t];
}

/* Reads the tensor table of a saved GGUF header into a new model. */
static inline vf_model *itl_gguf_model(const char *head_path)
{
    FILE *f = fopen(head_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    assert_memory_equal(b, "GGUF", 4);
    uint64_t nt = itl_u64(b + 8), nkv = itl_u64(b + 16);
    size_t off = 24;
    for (uint64_t i = 0; i < nkv; i++) {
        off += 8 + (size_t)itl_u64(b + off);
        uint32_t t = itl_u32(b + off);
        off += 4;
        off += itl_skip(b + off, t);
    }
    vf_model *m = vf__model_new(VF_FORMAT_GGUF, head_path);
    assert_non_null(m);
    for (uint64_t i = 0; i < nt; i++) {
        uint64_t ln = itl_u64(b + off);
        char name[256];
        assert_true(ln < sizeof name);
        memcpy(name, b + off + 8, ln);
        name[ln] = 0;
        off += 8 + ln;
        vf_tensor t = {0};
        t.name = name;
        t.n_dims = itl_u32(b + off);
        off += 4;
        uint64_t ne[8], cnt = 1;
        for (uint32_t d = 0; d < t.n_dims; d++) {
            ne[d] = itl_u64(b + off);
            off += 8;
            cnt *= ne[d];
        }
        for (uint32_t d = 0; d < t.n_dims; d++)
            t.shape[d] = ne[t.n_dims - 1 - d]; /* PyTorch order */
        t.dtype = vf_dtype_from_gguf(itl_u32(b + off));
        off += 4 + 8;
        t.n_elements = t.n_params = cnt;
        assert_int_equal(vf_dtype_bytes(t.dtype, cnt, &t.n_bytes), VF_OK);
        t.file = VF_NO_FILE;
        assert_non_null(vf__model_add_tensor(m, &t));
    }
    free(b);
    vf__model_classify(m);
    return m;
}

/* A model made of aggregate tensors: one tensor of n params in dtype dt. */
static inline void itl_add(vf_model *m, const char *name, vf_dtype dt, vf_role role, int32_t layer, uint64_t rows,
                           uint64_t cols)
{
    vf_tensor t = {0};
    t.name = name;
    t.dtype = dt;
    t.n_dims = cols ? 2 : 1;
    t.shape[0] = rows;
    t.shape[1] = cols;
    t.n_elements = t.n_params = cols ? rows * cols : rows;
    assert_int_equal(vf_dtype_bytes(dt, t.n_elements, &t.n_bytes), VF_OK);
    t.layer = layer;
    t.role = role;
    t.file = VF_NO_FILE;
    assert_non_null(vf__model_add_tensor(m, &t));
}

static inline json_t *itl_json(const char *path)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        fail_msg("%s: %s", path, je.text);
    return j;
}

static inline double itl_rel(double est, double ref) { return ref != 0 ? (est - ref) / ref : est; }

#endif
