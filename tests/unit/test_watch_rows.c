/* test_watch_rows.c — vramfit watch's sample store (src/cli/watch/watch_sample.c,
 * linked in by mk/watch.mk) against the fake NVML: past max_rows rows, pairs
 * merge into one with their maxima, so memory stays bounded, the peaks stay
 * exact and the timeline keeps its order; a failed query is a gap. */
#include "test_load_util.h"
#include "watch/watch.h"

#define MIB (1ull << 20)

/* A timeline of 40 steps rising by 10 MiB a step, kept in at most 8 rows. */
static void test_bounded_rows(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *script = tu_path(dir, "script");
    FILE *f = fopen(script, "w");
    for (int s = 0; s <= 40; s++)
        fprintf(f, "%d 0 used=%d%s\n", s, 100 + 10 * s, s == 20 ? " err=mem" : "");
    fclose(f);
    tl_fake_env("FAKE_CUDA_TOTAL_MB=8192", NULL);
    setenv("FAKE_NVML_SCRIPT", script, 1);
    static watch_run w;
    memset(&w, 0, sizeof w);
    w.merged = 1;
    w.max_rows = 8;
    w.interval_ms = 1;
    vf_error e = {0};
    assert_int_equal(vf_nvml_open(&w.nv, &e), VF_OK); /* step 0: the device list's query */
    w.n_gpus = 1;
    w.gpu[0].nvml = 0;
    w.start = vf_watch_now();
    for (int s = 1; s <= 40; s++)
        vf_watch_sample(&w, true, NULL);
    assert_int_equal(w.samples, 40);
    /* 8 rows of 1; merged to 4 rows of 2, filled to 8 (16 samples); 4 of 4, to 8 (32);
     * 4 of 8 and one more of the last 8: 5 rows of 8 samples each */
    assert_int_equal(w.merged, 8);
    assert_int_equal(w.rows, 5);
    assert_int_equal(w.gpu[0].peak, (100 + 10 * 40) * MIB);
    assert_int_equal(w.gpu[0].mem_err.count, 1); /* step 20 */
    for (size_t r = 1; r < w.rows; r++) {
        assert_true(w.t[r] >= w.t[r - 1]);
        assert_true(w.used[r] > w.used[r - 1]);
    }
    /* each row is the maximum of its 8 steps: 1-8, 9-16, ... (step 20's failure is a gap, not a zero) */
    for (size_t r = 0; r < w.rows; r++)
        assert_int_equal(w.used[r], (uint64_t)(100 + 10 * (8 * (r + 1))) * MIB);
    free(w.t), free(w.used), free(w.tree);
    vf_nvml_close(w.nv);
    unsetenv("FAKE_NVML_SCRIPT");
    tl_use_fake();
    unlink(script);
    rmdir(dir);
    free(script), free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_bounded_rows)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
