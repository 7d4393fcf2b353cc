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

/* Rebuilds a full-size sparse GGUF from a saved header (as
 * ../shared/tools/gguf-grow does: the header, then truncate to the size in
 * HEAD.size) into dir/name, and opens it with the library's reader. */
static inline vf_model *itl_open_grown(const char *dir, const char *name)
{
    char head[512], sz[600], out[512];
    snprintf(head, sizeof head, REF "/llamacpp/heads/%s.head", name);
    snprintf(sz, sizeof sz, "%s.size", head);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    FILE *f = fopen(sz, "r");
    assert_non_null(f);
    unsigned long long size = 0;
    assert_int_equal(fscanf(f, "%llu", &size), 1);
    fclose(f);
    f = fopen(head, "rb");
    assert_non_null(f);
    FILE *o = fopen(out, "wb");
    assert_non_null(o);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        assert_int_equal(fwrite(buf, 1, n, o), n);
    fclose(f);
    assert_int_equal(fclose(o), 0);
    assert_int_equal(truncate(out, (off_t)size), 0);
    vf_model *m = NULL;
    vf_error err = {0};
    if (vf_model_open(out, &m, &err) != VF_OK)
        fail_msg("%s: %s", out, err.msg);
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
