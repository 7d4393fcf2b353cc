/* onnx_testlib.h — what the graph tests share: the reference graphs of
 * tests/reference/torch-cnn opened beside sparse weight files of their
 * recorded size, estimates at a batch, and the relative error. */
#ifndef VF_ONNX_TESTLIB_H
#define VF_ONNX_TESTLIB_H

#include "results.h"
#include "testutil.h"
#include "onnx_writer.h"

#include <jansson.h>
#include <math.h>

#define CNN "tests/reference/torch-cnn"

/* Copies models/NAME.onnx into dir with its weights as a sparse file of
 * the size models/WEIGHTS.weights.size records; returns the copy's path. */
static inline char *ot_graph(const char *dir, const char *name, const char *weights)
{
    char src[256], sz[256], cmd[1024];
    snprintf(src, sizeof src, CNN "/models/%s.onnx", name);
    snprintf(sz, sizeof sz, CNN "/models/%s.weights.size", weights);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/' && truncate -s \"$(cat '%s')\" '%s/%s.weights'", src, dir, sz, dir,
             weights);
    assert_int_equal(system(cmd), 0);
    char name_onnx[128];
    snprintf(name_onnx, sizeof name_onnx, "%s.onnx", name);
    return tu_path(dir, name_onnx);
}

static inline vf_model *ot_open(const char *path)
{
    vf_model *m = NULL;
    vf_error e = {0};
    vf_status st = vf_model_open(path, &m, &e);
    if (st != VF_OK)
        fprintf(stderr, "%s\n", e.msg);
    assert_int_equal(st, VF_OK);
    return m;
}

/* fp32 estimate at batch b on the generic runtime (no engine costs). */
static inline void ot_estimate(const vf_model *m, uint64_t b, bool train, vf_optimizer opt, vf_estimate *e)
{
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.infer.batch = b;
    if (train) {
        o.mode = VF_MODE_TRAINING;
        o.train.precision = VF_PREC_FP32;
        o.train.optimizer = opt;
        o.train.optim_impl = VF_OPTIM_FOR_LOOP; /* the reference's foreach=False */
    }
    vf_error err = {0};
    vf_status st = vf_estimate_run(m, &o, e, &err);
    if (st != VF_OK)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, VF_OK);
}

static inline double ot_err(uint64_t got, uint64_t want) { return ((double)got - (double)want) / (double)want; }

/* Asserts lo <= (got - want) / want <= hi, printing both on failure. */
static inline void ot_within(const char *what, uint64_t got, uint64_t want, double lo, double hi)
{
    double e = ot_err(got, want);
    if (e < lo || e > hi)
        fprintf(stderr, "%s: got %llu, measured %llu (%+.2f%%, allowed %+.0f%%..%+.0f%%)\n", what,
                (unsigned long long)got, (unsigned long long)want, 100 * e, 100 * lo, 100 * hi);
    assert_true(e >= lo && e <= hi);
}

static inline json_t *ot_results(void)
{
    json_error_t je;
    json_t *r = json_load_file(CNN "/results.json", 0, &je);
    assert_non_null(r);
    return r;
}

static inline uint64_t ot_u64(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    assert_true(json_is_integer(v));
    return (uint64_t)json_integer_value(v);
}

/* The inference activations at batch b of the model in buf (freed), written
 * as file in a scratch folder, asserted fully shaped (nothing partial). */
static inline uint64_t ot_buf_peak(ow_buf *buf, const char *file, uint64_t b)
{
    char *dir = tu_tmpdir(), *p = tu_path(dir, file);
    ow_write_file(p, buf);
    free(buf->p);
    vf_model *m = ot_open(p);
    vf_estimate e;
    ot_estimate(m, b, false, VF_OPT_ADAMW, &e);
    assert_int_equal(e.partial_nodes, 0);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
    return e.activations;
}

#endif
