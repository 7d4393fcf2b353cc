/* test_nvml_session.c — the NVML session vramfit watch samples through,
 * against the fake NVML: the versioned calls and their fallbacks, errors. */
#include "test_load_util.h"

#define MIB (1ull << 20)

/* v2 leaves the driver's reserved memory out of used; v1 (an old driver)
 * counts it; both give the same total. */
static void test_memory_versions(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_TOTAL_MB=24576", "FAKE_NVML_USED_MB=1000", "FAKE_NVML_RESERVED_MB=100", NULL);
    vf_nvml *n = NULL;
    vf_error e = {0};
    assert_int_equal(vf_nvml_open(&n, &e), VF_OK);
    assert_int_equal(vf_nvml_count(n), 1);
    assert_string_equal(vf_nvml_device(n, 0)->name, "Fake GPU 0");
    assert_null(vf_nvml_device(n, 1));
    uint64_t used = 0, total = 0;
    assert_int_equal(vf_nvml_memory(n, 0, &used, &total, &e), VF_OK);
    assert_int_equal(used, 1000 * MIB);
    assert_int_equal(total, (24576 + 100) * MIB);
    assert_int_equal(vf_nvml_memory(n, 3, &used, &total, &e), VF_EINVAL);
    vf_nvml_close(n);
    char old[512];
    snprintf(old, sizeof old, "%s/fake/old/libnvidia-ml.so.1", tl_build());
    setenv("VF_NVML_LIBRARY", old, 1);
    assert_int_equal(vf_nvml_open(&n, &e), VF_OK);
    assert_int_equal(vf_nvml_memory(n, 0, &used, &total, &e), VF_OK);
    assert_int_equal(used, 1100 * MIB);
    assert_int_equal(total, (24576 + 100) * MIB);
    vf_nvml_close(n);
    tl_use_fake();
}

/* The process query, v3 (24-byte entries) and unversioned (16-byte): the
 * same pid and memory read back; pid 1 is the fake's process outside any tree. */
static void test_processes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *script = tu_path(dir, "script");
    const char *rows = "0 0 used=500 O=256\n";
    tu_write(script, rows, strlen(rows));
    for (int v = 0; v < 2; v++) {
        tl_fake_env("FAKE_CUDA_TOTAL_MB=8192", NULL);
        setenv("FAKE_NVML_SCRIPT", script, 1);
        if (v) {
            char old[512];
            snprintf(old, sizeof old, "%s/fake/old/libnvidia-ml.so.1", tl_build());
            setenv("VF_NVML_LIBRARY", old, 1);
        }
        vf_nvml *n = NULL;
        vf_error e = {0};
        assert_int_equal(vf_nvml_open(&n, &e), VF_OK);
        vf_gpu_process p[4];
        size_t k = 9;
        assert_int_equal(vf_nvml_processes(n, 0, p, 4, &k, &e), VF_OK);
        assert_int_equal(k, 1);
        assert_int_equal(p[0].pid, 1);
        assert_int_equal(p[0].used_bytes, 256 * MIB);
        assert_int_equal(vf_nvml_processes(n, 0, p, 0, &k, &e), VF_OK); /* the caller's capacity bounds it */
        assert_int_equal(k, 0);
        uint64_t used, total;
        assert_int_equal(vf_nvml_memory(n, 0, &used, &total, &e), VF_OK);
        assert_int_equal(used, 500 * MIB);
        vf_nvml_close(n);
        unsetenv("FAKE_NVML_SCRIPT");
    }
    tl_use_fake();
    unlink(script);
    rmdir(dir);
    free(script), free(dir);
}

/* No driver, no working driver, no device: an error for a session, with the reason. */
static void test_no_driver(void **state)
{
    (void)state;
    vf_nvml *n = (vf_nvml *)&n;
    vf_error e = {0};
    setenv("VF_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    assert_int_equal(vf_nvml_open(&n, &e), VF_EDEVICE);
    assert_null(n);
    assert_non_null(strstr(e.msg, "no NVIDIA driver"));
    tl_fake_env("FAKE_NVML_FAIL_INIT=1", NULL);
    assert_int_equal(vf_nvml_open(&n, &e), VF_EDEVICE);
    assert_non_null(strstr(e.msg, "Driver Not Loaded"));
    tl_fake_env("FAKE_CUDA_DEVICES=0", NULL);
    assert_int_equal(vf_nvml_open(&n, &e), VF_EDEVICE);
    assert_non_null(strstr(e.msg, "no NVIDIA device"));
    assert_int_equal(e.status, VF_EDEVICE);
    vf_nvml_close(NULL);
    tl_fake_env(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_versions),
        cmocka_unit_test(test_processes),
        cmocka_unit_test(test_no_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
