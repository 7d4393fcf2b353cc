/* test_load_dl.c — the CUDA driver, once loaded, is never unloaded: cuInit
 * starts driver threads, and a dlclose that unmaps libcuda under them
 * crashes the process (CUDA.jl issue #1848). The fake is built without
 * -z nodelete, and this program holds no handle of its own, so the fake is
 * still mapped afterwards only if the library kept it so. */
#include "test_load_util.h"

static bool fake_mapped(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void test_driver_stays_loaded(void **state)
{
    (void)state;
    char cuda[512];
    snprintf(cuda, sizeof cuda, "%s/fake/libcuda.so.1", tl_build());
    setenv("VF_CUDA_LIBRARY", cuda, 1);
    setenv("VF_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_false(fake_mapped(cuda));
    /* the device count alone (what --device-map auto and gpus ask first) */
    int n = 0;
    assert_int_equal(vf__cuda_device_count(&n, NULL), VF_OK);
    assert_int_equal(n, 1);
    assert_true(fake_mapped(cuda));
    /* a whole load and its release */
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 2, 256);
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 256 << 10);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    if (vf_loader_run(l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    vf_loader_free(l);
    assert_true(fake_mapped(cuda));
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_stays_loaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
