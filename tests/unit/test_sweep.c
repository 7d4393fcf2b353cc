/* test_sweep.c — vf_sweep_values / vf_sweep_run: the default values, each
 * point equal to an estimate run at that value, the pinned size, and bad
 * arguments refused. */
#include "testutil.h"

#include <stddef.h>

static vf_model *open_qwen(void)
{
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open("Qwen/Qwen3-8B", &m, &e), VF_OK);
    return m;
}

static void transformers_opts(vf_estimate_opts *o)
{
    vf_estimate_opts_init(o);
    o->runtime = VF_RUNTIME_TRANSFORMERS;
}

/* Qwen3-8B's config: max_position_embeddings 40960 */
static void test_default_values(void **state)
{
    (void)state;
    vf_model *m = open_qwen();
    vf_estimate_opts o;
    transformers_opts(&o);
    uint64_t v[VF_SWEEP_MAX];
    size_t n = vf_sweep_values(m, &o, VF_SWEEP_CONTEXT, v, VF_SWEEP_MAX);
    const uint64_t want[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 40960};
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i], want[i]);
    n = vf_sweep_values(m, &o, VF_SWEEP_BATCH, v, VF_SWEEP_MAX);
    assert_int_equal(n, 10);
    assert_int_equal(v[0], 1);
    assert_int_equal(v[9], 512);
    assert_int_equal(vf_sweep_values(m, &o, VF_SWEEP_BATCH, v, 3), 3); /* cap kept */
    vf_model_free(m);
}

/* Each point is the estimate at that value on the device given. */
static void test_points_are_estimates(void **state)
{
    (void)state;
    vf_model *m = open_qwen();
    vf_estimate_opts o;
    transformers_opts(&o);
    const uint64_t gpu = (uint64_t)22 << 30;
    const uint64_t v[] = {1024, 32768};
    vf_sweep_point p[2];
    vf_error e = {0};
    assert_int_equal(vf_sweep_run(m, &o, VF_SWEEP_CONTEXT, v, 2, gpu, p, &e), VF_OK);
    for (int i = 0; i < 2; i++) {
        vf_estimate_opts x = o;
        x.infer.context = v[i];
        x.gpu_bytes = gpu;
        vf_estimate est;
        assert_int_equal(vf_estimate_run(m, &x, &est, &e), VF_OK);
        assert_int_equal(p[i].status, VF_OK);
        assert_int_equal(p[i].value, v[i]);
        assert_int_equal(p[i].per_gpu_bytes, est.per_gpu_bytes);
        /* transformers: no device dependence; a device needs what it holds + the margin */
        assert_int_equal(p[i].needed_bytes, est.per_gpu_bytes + est.margin_bytes);
        assert_true(est.margin_bytes > 0);
        assert_int_equal(p[i].kv_cache, est.kv_cache);
        assert_int_equal(p[i].activations, est.activations);
        assert_true(p[i].fits == (est.per_gpu_bytes + est.margin_bytes <= gpu));
    }
    assert_true(p[0].fits);
    assert_false(p[1].fits); /* 8B in bf16 is 15.3 GiB of weights; 32k tokens of KV (144 KiB each) add 4.5 GiB, and the prefill more */
    vf_model_free(m);
}

/* The struct keeps its pinned size (include/vramfit.h, ABI); the zeroed reserve stays zero. */
static void test_pinned(void **state)
{
    (void)state;
    vf_model *m = open_qwen();
    vf_estimate_opts o;
    transformers_opts(&o);
    vf_sweep_point p[2];
    memset(p, 0, sizeof p);
    const uint64_t v[] = {512, 1024};
    assert_int_equal(sizeof p[0], 128);
    assert_int_equal(vf_sweep_run(m, &o, VF_SWEEP_CONTEXT, v, 2, 0, p, NULL), VF_OK);
    assert_int_equal(p[1].value, 1024);
    for (size_t i = offsetof(vf_sweep_point, overhead) + 8; i < sizeof p[0]; i++)
        assert_int_equal(p[1].vf_reserved_[i], 0);
    vf_model_free(m);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    vf_model *m = open_qwen();
    vf_estimate_opts o;
    transformers_opts(&o);
    uint64_t v[VF_SWEEP_MAX + 1];
    for (size_t i = 0; i <= VF_SWEEP_MAX; i++)
        v[i] = i + 1;
    vf_sweep_point p[VF_SWEEP_MAX + 1];
    vf_error e = {0};
    assert_int_equal(vf_sweep_run(m, &o, VF_SWEEP_CONTEXT, v, VF_SWEEP_MAX + 1, 0, p, &e), VF_EINVAL);
    assert_non_null(strstr(e.msg, "at most"));
    v[0] = 0;
    assert_int_equal(vf_sweep_run(m, &o, VF_SWEEP_CONTEXT, v, 2, 0, p, &e), VF_EINVAL);
    assert_int_equal(vf_sweep_run(m, &o, (vf_sweep_axis)7, v + 1, 1, 0, p, &e), VF_EINVAL);
    assert_int_equal(vf_sweep_run(NULL, &o, VF_SWEEP_CONTEXT, v + 1, 1, 0, p, &e), VF_EINVAL);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_values),
        cmocka_unit_test(test_points_are_estimates),
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
