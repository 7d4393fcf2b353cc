/* infer_testlib.h — models for the inference tests: real GGUF files rebuilt
 * from tests/reference/llamacpp/heads and opened with the library, and
 * helpers that build a model by hand from tensors and hyper-parameters. */
#ifndef VF_INFER_TESTLIB_H
#define VF_INFER_TESTLIB_H

#include "results.h"
#include "model/model.h"
#include "testutil.h"

#include <math.h>

#define REF "tests/reference"

/* A full-size sparse GGUF rebuilt from its saved header into dir/name
 * (tu_grow_gguf), opened with the library's reader. */
static inline vf_model *itl_open_grown(const char *dir, const char *name)
{
    char *out = tu_grow_gguf(REF, dir, name);
    vf_model *m = NULL;
    vf_error err = {0};
    if (vf_model_open(out, &m, &err) != VF_OK)
        fail_msg("%s: %s", out, err.msg);
    free(out);
    return m;
}

/* A model from a config.json path or catalog name (the architecture module
 * builds its tensor list). */
static inline vf_model *itl_open(const char *src)
{
    vf_model *m = NULL;
    vf_error err = {0};
    if (vf_model_open(src, &m, &err) != VF_OK)
        fail_msg("%s: %s", src, err.msg);
    return m;
}

/* Llama-3.1-8B (context 131072) or Meta-Llama-3-8B (8192): 32 layers, hidden
 * 4096, 32 heads, 8 KV heads of 128, ff 14336, vocab 128256, untied, bf16. */
static inline vf_model *itl_llama3_8b(uint64_t ctx)
{
    return itl_open(ctx > 8192 ? REF "/models/meta-llama__Meta-Llama-3.1-8B.json"
                               : REF "/models/meta-llama__Meta-Llama-3-8B.json");
}

/* The estimate for m under o; any error fails the test. */
static inline vf_estimate itl_run(const vf_model *m, const vf_estimate_opts *o)
{
    vf_estimate e;
    vf_error err = {0};
    if (vf_estimate_run(m, o, &e, &err) != VF_OK)
        fail_msg("estimate: %s", err.msg);
    return e;
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
