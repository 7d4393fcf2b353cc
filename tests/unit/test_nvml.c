/* test_nvml.c — vf_local_gpus through dlopen against the fake NVML. */
#include "test_load_util.h"

static void test_lists_devices(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DEVICES=2", "FAKE_CUDA_TOTAL_MB=24576", "FAKE_NVML_USED_MB=100", NULL);
    vf_local_gpu g[4];
    size_t n = 0;
    vf_error e = {0};
    assert_int_equal(vf_local_gpus(g, 4, &n, &e), VF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(g[1].index, 1);
    assert_string_equal(g[0].name, "Fake GPU 0");
    assert_string_equal(g[1].uuid, "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f");
    assert_int_equal(g[0].total_bytes, 24576ull << 20);
    assert_int_equal(g[0].used_bytes, 100ull << 20);
    assert_int_equal(g[0].free_bytes, (24576ull - 100) << 20);
    /* the caller's capacity bounds the answer */
    assert_int_equal(vf_local_gpus(g, 1, &n, &e), VF_OK);
    assert_int_equal(n, 1);
}

/* NVML sees memory the CUDA side takes: a context and an allocation. */
static void test_sees_cuda_usage(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_CONTEXT_MB=250", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "m.safetensors");
    vf_model *m = tl_llama(p, 2, 256);
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 0);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    assert_int_equal(vf_loader_run(l, &r, &e), VF_OK);
    vf_local_gpu g[1];
    size_t n = 0;
    assert_int_equal(vf_local_gpus(g, 1, &n, &e), VF_OK);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].used_bytes, (250ull << 20) + vf_model_file(m, 0)->data_bytes);
    vf_loader_free(l);
    assert_int_equal(vf_local_gpus(g, 1, &n, &e), VF_OK);
    assert_int_equal(g[0].used_bytes, 0);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
}

/* One device that answers with an error does not hide the others: a handle
 * refused (a container's GPU outside its cgroup) is skipped, a refused memory
 * query (MIG) lists the device with memory figures 0. */
static void test_one_bad_device(void **state)
{
    (void)state;
    vf_local_gpu g[4];
    size_t n = 0;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_DEVICES=3", "FAKE_NVML_DENY=0", "FAKE_NVML_NO_MEMORY=2", NULL);
    assert_int_equal(vf_local_gpus(g, 4, &n, &e), VF_OK);
    assert_int_equal(n, 2);
    assert_int_equal(g[0].index, 1);
    assert_string_equal(g[0].name, "Fake GPU 1");
    assert_int_equal(g[0].total_bytes, 81920ull << 20);
    assert_int_equal(g[1].index, 2);
    assert_string_equal(g[1].uuid, "GPU-30313233-3435-3637-3839-3a3b3c3d3e3f");
    assert_int_equal(g[1].total_bytes, 0);
    /* a load there measures with cuMemGetInfo instead, not with NVML's zeros */
    tl_fake_env("FAKE_NVML_NO_MEMORY=0", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "m.safetensors");
    vf_model *m = tl_llama(p, 2, 256);
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 0);
    vf_loader *l = NULL;
    vf_load_result r;
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    assert_int_equal(vf_loader_run(l, &r, &e), VF_OK);
    assert_string_equal(r.devices[0].mem_source, "cuMemGetInfo");
    assert_int_equal(r.device_bytes_used, vf_model_file(m, 0)->data_bytes);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
    tl_fake_env(NULL);
}

/* No driver, a library that cannot initialise, no device: all normal answers. */
static void test_no_gpu_is_not_an_error(void **state)
{
    (void)state;
    vf_local_gpu g[2];
    size_t n = 9;
    vf_error e = {0};
    tl_fake_env("FAKE_NVML_FAIL_INIT=1", NULL);
    assert_int_equal(vf_local_gpus(g, 2, &n, &e), VF_OK);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.msg, "Driver Not Loaded"));
    tl_fake_env("FAKE_CUDA_DEVICES=0", NULL);
    assert_int_equal(vf_local_gpus(g, 2, &n, &e), VF_OK);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.msg, "no NVIDIA device"));
    setenv("VF_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    n = 9;
    assert_int_equal(vf_local_gpus(g, 2, &n, &e), VF_OK);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.msg, "/nonexistent/libnvidia-ml.so.1")); /* dlerror's text */
    /* a library that is not NVML at all */
    char lib[512];
    snprintf(lib, sizeof lib, "%s/fake/libcuda.so.1", tl_build());
    setenv("VF_NVML_LIBRARY", lib, 1);
    assert_int_equal(vf_local_gpus(g, 2, &n, &e), VF_EDEVICE);
    assert_int_equal(n, 0);
    tl_use_fake();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists_devices),
        cmocka_unit_test(test_sees_cuda_usage),
        cmocka_unit_test(test_one_bad_device),
        cmocka_unit_test(test_no_gpu_is_not_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
