/* test_load_faults.c — every way a load can fail ends with a clear status
 * and releases every byte it took: the fake driver counts what is left
 * (device allocations, pinned buffers, events, streams, contexts) and
 * catches buffers freed under in-flight copies. */
#include "../../src/cli/exit_code.h" /* the CLI's exit statuses */
#include "test_load_util.h"

#include <errno.h>

static char *g_dir, *g_path;
static vf_model *g_m;

static int setup(void **state)
{
    (void)state;
    g_dir = tu_tmpdir();
    g_path = tu_path(g_dir, "model.safetensors");
    g_m = tl_llama(g_path, 6, 512); /* ~6.5 MiB */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vf_model_free(g_m);
    tu_rm_rf(g_dir);
    free(g_path);
    free(g_dir);
    vf__load_pread = pread;
    return 0;
}

/* Runs a load on cuda:0 with a small ring; returns its status. After a
 * failed run nothing may be held even before the loader is freed. */
static vf_status run_cuda(vf_error *e, const volatile int *cancel)
{
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 512 << 10);
    o.buffers = 4;
    o.threads = 2;
    o.verify = true;
    o.cancel = cancel;
    vf_loader *l = NULL;
    vf_load_result r;
    vf_status st = vf_loader_open(g_m, &o, &l, e);
    if (st == VF_OK) {
        st = vf_loader_run(l, &r, e);
        if (st != VF_OK) {
            fake_cuda_stats s = tl_fake_stats();
            assert_int_equal(s.dev_allocs, 0);
            assert_int_equal(s.host_allocs, 0);
            assert_int_equal(s.violations, 0);
        }
    }
    vf_loader_free(l);
    tl_assert_clean();
    return st;
}

static void expect(vf_status got, vf_status want, const vf_error *e, const char *needle, int exit_code)
{
    if (got != want)
        fail_msg("status %d, expected %d: %s", got, want, e->msg);
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
    assert_int_equal(vf_status_exit_code(got), exit_code);
}

static void test_device_oom(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_FAIL_ALLOC=1", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVMEM, &e, "out of memory", 5);
    /* too small a device, the honest way */
    tl_fake_env("FAKE_CUDA_TOTAL_MB=302", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVMEM, &e, "cuMemAlloc_v2", 5);
}

/* The second of two allocations fails: the first must be given back. */
static void test_second_alloc_fails(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DEVICES=2", "FAKE_CUDA_FAIL_ALLOC=2", NULL);
    char *mp = tu_path(g_dir, "map.json");
    const char *map = "{\"layers:0-2\": 0, \"*\": 1}";
    tu_write(mp, map, strlen(map));
    vf_load_opts o;
    vf_load_opts_init(&o);
    o.device_map = mp;
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(vf_loader_open(g_m, &o, &l, &e), VF_OK);
    expect(vf_loader_run(l, &r, &e), VF_EDEVMEM, &e, "cuMemAlloc_v2", 5);
    assert_int_equal(tl_fake_stats().dev_allocs, 0);
    vf_loader_free(l);
    tl_assert_clean();
    free(mp);
}

static void test_pinned_alloc_fails(void **state)
{
    (void)state;
    vf_error e = {0};
    for (int n = 1; n <= 4; n++) { /* the first, a middle and the last slot of the ring */
        char kv[64];
        snprintf(kv, sizeof kv, "FAKE_CUDA_FAIL_HOSTALLOC=%d", n);
        tl_fake_env(kv, NULL);
        expect(run_cuda(&e, NULL), VF_EDEVMEM, &e, "cuMemHostAlloc", 5);
    }
}

static void test_copy_fails(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_FAIL_COPY=5", "FAKE_CUDA_DELAY_US=200", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVICE, &e, "cuMemcpyHtoDAsync_v2", 5);
    tl_fake_env("FAKE_CUDA_FAIL_COPY=1", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVICE, &e, "invalid argument", 5);
}

/* The error surfaces asynchronously, at the event, as a real copy fault does. */
static void test_event_fails(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_FAIL_EVENT=3", "FAKE_CUDA_DELAY_US=200", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVICE, &e, "unspecified launch failure", 5);
}

static void test_no_driver(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_FAIL_INIT=1", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVICE, &e, "cuInit", 5);
    tl_fake_env(NULL);
    vf_load_opts o;
    tl_opts(&o, "cuda:3", 0);
    vf_loader *l = NULL;
    expect(vf_loader_open(g_m, &o, &l, &e), VF_EDEVICE, &e, "no such device", 5);
    setenv("VF_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
    expect(vf_loader_open(g_m, &o, &l, &e), VF_EDEVICE, &e, "/nonexistent/libcuda.so.1", 5); /* dlerror text kept */
    tl_use_fake();
    tl_assert_clean();
}

/* ---- read faults, through the read hook ---- */
static int g_calls, g_fail_at, g_errno;
static bool g_short;
static volatile int g_cancel;

/* Reader threads call this concurrently: the counter and the flag are atomic. */
static ssize_t faulty_pread(int fd, void *buf, size_t n, off_t off)
{
    int k = __atomic_add_fetch(&g_calls, 1, __ATOMIC_SEQ_CST);
    if (k == g_fail_at) {
        if (g_short)
            return 0; /* end of file where the header promised data */
        if (g_errno) {
            errno = g_errno;
            return -1;
        }
        __atomic_store_n(&g_cancel, 1, __ATOMIC_SEQ_CST); /* an interrupt arriving mid-load */
    }
    if (g_short && k == g_fail_at - 1 && n > 100)
        return pread(fd, buf, n / 2, off); /* a short read first: must be continued, not trusted */
    return pread(fd, buf, n, off);
}

static void arm(int at, int err_no, bool short_read)
{
    g_calls = 0;
    g_fail_at = at;
    g_errno = err_no;
    g_short = short_read;
    g_cancel = 0;
    vf__load_pread = faulty_pread;
}

static void test_read_eio(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_DELAY_US=100", NULL);
    arm(7, EIO, false);
    expect(run_cuda(&e, NULL), VF_EIO, &e, "read failed at offset", 4);
    assert_non_null(strstr(e.msg, "Input/output error"));
    /* host backend too: the allocation is released */
    arm(2, EIO, false);
    vf_load_opts o;
    vf_load_opts_init(&o);
    o.staging_bytes = 512 << 10;
    vf_loader *l = NULL;
    vf_load_result r;
    assert_int_equal(vf_loader_open(g_m, &o, &l, &e), VF_OK);
    expect(vf_loader_run(l, &r, &e), VF_EIO, &e, g_path, 4);
    assert_int_not_equal(vf_loader_tensor_location(l, 0, &(const char *){NULL}, &(uint64_t){0}, NULL), VF_OK);
    vf_loader_free(l);
    vf__load_pread = pread;
}

static void test_short_read(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env(NULL);
    arm(6, 0, true);
    expect(run_cuda(&e, NULL), VF_EIO, &e, "short read", 4);
    vf__load_pread = pread;
}

/* A half-read short read alone is continued and the load succeeds. */
static void test_partial_reads_continue(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env(NULL);
    arm(1000000, 0, true);
    g_fail_at = 1000000; /* never the 0 return */
    g_calls = 0;
    vf__load_pread = faulty_pread;
    assert_int_equal(run_cuda(&e, NULL), VF_OK);
    vf__load_pread = pread;
}

/* The file shrinks between open and read (FUSE-free stand-in for a vanishing disk). */
static void test_truncated_under_us(void **state)
{
    (void)state;
    char *p = tu_path(g_dir, "shrinks.safetensors");
    vf_model *m = tl_llama(p, 3, 256);
    tl_fake_env(NULL);
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 256 << 10);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    assert_int_equal(truncate(p, (off_t)(vf_model_file(m, 0)->size / 2)), 0);
    expect(vf_loader_run(l, &r, &e), VF_EIO, &e, "short read", 4);
    vf_loader_free(l);
    tl_assert_clean();
    /* truncated before: refused when planning */
    expect(vf_loader_open(m, &o, &l, &e), VF_EFORMAT, &e, "truncated", 3);
    tl_assert_clean();
    vf_model_free(m);
    free(p);
}

static void test_interrupt(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_DELAY_US=200", NULL);
    arm(5, 0, false);
    expect(run_cuda(&e, &g_cancel), VF_EINTR, &e, "interrupted", 4);
    vf__load_pread = pread;
}

/* The device copy differs from the file (one bit, one copy): --verify
 * catches it, names where, and nothing is reported loaded. */
static void test_verify_catches_corruption(void **state)
{
    (void)state;
    vf_error e = {0};
    tl_fake_env("FAKE_CUDA_CORRUPT=9", NULL);
    expect(run_cuda(&e, NULL), VF_EDEVICE, &e, "verify failed", 5);
    assert_non_null(strstr(e.msg, g_path));
    tl_fake_env(NULL);
    assert_int_equal(run_cuda(&e, NULL), VF_OK);
}

/* A sparse file whose header claims 8 TiB of tensor data: the plan is
 * refused (tiny buffers: too many chunks) or the allocation fails, but no
 * plan the size of the claim is ever built, and nothing is left held. */
static void test_huge_sparse_claim(void **state)
{
    (void)state;
    tl_fake_env(NULL);
    char *p = tu_path(g_dir, "huge.safetensors");
    tu_st_tensor t[] = {{"model.layers.0.mlp.up_proj.weight", "U8", 1, {1ull << 43}}};
    tu_write_safetensors(p, t, 1);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    vf_load_opts o;
    vf_load_opts_init(&o);
    o.staging_bytes = 1 << 20; /* 64 KiB slots: 2^27 chunks */
    o.buffers = 16;
    vf_loader *l = NULL;
    expect(vf_loader_open(m, &o, &l, &e), VF_EUNSUPPORTED, &e, "--staging-mb", 3);
    assert_null(l);
    /* in 16 MiB slots it plans, and the 8 TiB allocation fails cleanly */
    o.staging_bytes = 64 << 20;
    o.buffers = 4;
    snprintf(o.device, sizeof o.device, "cuda:0");
    vf_load_result r;
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    expect(vf_loader_run(l, &r, &e), VF_EDEVMEM, &e, "out of memory", 5);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    unlink(p);
    free(p);
}

static void test_config_model_refused(void **state)
{
    (void)state;
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open("Qwen/Qwen3-0.6B", &m, &e) != VF_OK)
        fail_msg("%s", e.msg);
    vf_loader *l = NULL;
    expect(vf_loader_open(m, NULL, &l, &e), VF_EUNSUPPORTED, &e, "no tensor data", 3);
    vf_model_free(m);
}

int main(void)
{
    tl_use_fake();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_oom),
        cmocka_unit_test(test_second_alloc_fails),
        cmocka_unit_test(test_pinned_alloc_fails),
        cmocka_unit_test(test_copy_fails),
        cmocka_unit_test(test_event_fails),
        cmocka_unit_test(test_no_driver),
        cmocka_unit_test(test_read_eio),
        cmocka_unit_test(test_short_read),
        cmocka_unit_test(test_partial_reads_continue),
        cmocka_unit_test(test_truncated_under_us),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_verify_catches_corruption),
        cmocka_unit_test(test_huge_sparse_claim),
        cmocka_unit_test(test_config_model_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
