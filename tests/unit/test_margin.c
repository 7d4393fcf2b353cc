/* test_margin.c — the margin a fit verdict keeps free beside what the device
 * holds, by the runtime's mechanism (docs/memory-model.md, "The margin a
 * verdict keeps"), and fit deciding on device + margin. Expected figures are
 * derived by hand from Qwen3-8B's config (36 layers, hidden 4096,
 * intermediate 12288, 8 KV heads of 128) and the allocator's rules. */
#include "infer_testlib.h"

#include "memory/torch/alloc_torch.h"

#define MiB ((uint64_t)1 << 20)

static vf_estimate run(vf_runtime rt, uint64_t ctx, const char *gpu, bool set, uint64_t margin)
{
    vf_model *m = itl_open("Qwen/Qwen3-8B");
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = rt;
    o.infer.context = ctx;
    if (rt == VF_RUNTIME_VLLM)
        o.infer.max_model_len = ctx;
    o.gpu_bytes = (uint64_t)80 << 30;
    snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "%s", gpu);
    o.margin_set = set;
    o.margin = margin;
    vf_estimate e = itl_run(m, &o);
    vf_model_free(m);
    return e;
}

/* CUDACachingAllocator get_allocation_size after 512-byte rounding */
static void test_allocator_segments(void **state)
{
    (void)state;
    assert_int_equal(vf__talloc_segment_bytes(0), 0);
    assert_int_equal(vf__talloc_segment_bytes(1), 2 * MiB);          /* <= 1 MiB: kSmallBuffer */
    assert_int_equal(vf__talloc_segment_bytes(MiB), 2 * MiB);
    assert_int_equal(vf__talloc_segment_bytes(MiB + 1), 20 * MiB);   /* < 10 MiB: kLargeBuffer */
    assert_int_equal(vf__talloc_segment_bytes(10 * MiB), 10 * MiB);  /* else rounded to 2 MiB */
    assert_int_equal(vf__talloc_segment_bytes(10 * MiB + 1), 12 * MiB);
}

static void test_by_runtime(void **state)
{
    (void)state;
    /* transformers at 40,960 tokens: the step's largest request is the
     * prefill's MLP intermediate, 40960 x 12288 x 2 B = 960 MiB exactly */
    vf_estimate t = run(VF_RUNTIME_TRANSFORMERS, 40960, "RTX 4090", false, 0);
    assert_int_equal(t.margin_bytes, (uint64_t)40960 * 12288 * 2);
    /* llama.cpp: its own -fit target, 1024 MiB */
    vf_estimate l = run(VF_RUNTIME_LLAMACPP, 8192, "RTX 4090", false, 0);
    assert_int_equal(l.margin_bytes, 1024 * MiB);
    /* vLLM: nothing beyond what gpu_memory_utilization leaves */
    vf_estimate v = run(VF_RUNTIME_VLLM, 8192, "H100 SXM 80GB", false, 0);
    assert_int_equal(v.margin_bytes, 0);
    /* --margin replaces each, 0 included */
    vf_estimate g = run(VF_RUNTIME_TRANSFORMERS, 40960, "RTX 4090", true, 0);
    assert_int_equal(g.margin_bytes, 0);
    vf_estimate h = run(VF_RUNTIME_VLLM, 8192, "H100 SXM 80GB", true, 3 * MiB);
    assert_int_equal(h.margin_bytes, 3 * MiB);
}

/* fit needs device + margin: on a device of exactly device_bytes it does
 * not fit, with device + margin it does, one byte less it does not. */
static void test_fit_keeps_it(void **state)
{
    (void)state;
    vf_model *m = itl_open("Qwen/Qwen3-8B");
    vf_fit *f = calloc(1, sizeof *f);
    assert_non_null(f);
    vf_fit_opts fo = {.gpus = 1, .no_search = true};
    vf_estimate_opts_init(&fo.est);
    fo.est.runtime = VF_RUNTIME_LLAMACPP;
    fo.est.infer.context = 8192;
    vf_estimate e;
    vf_estimate_opts x = fo.est;
    x.gpu_bytes = (uint64_t)24 << 30;
    assert_int_equal(vf_estimate_run(m, &x, &e, NULL), VF_OK);
    assert_int_equal(e.margin_bytes, 1024 * MiB);
    const uint64_t sizes[] = {e.device_bytes, e.device_bytes + e.margin_bytes - 1, e.device_bytes + e.margin_bytes};
    for (int i = 0; i < 3; i++) {
        fo.gpu_bytes = sizes[i];
        assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
        assert_int_equal(f->fits, i == 2);
        assert_int_equal(f->needed_bytes, e.device_bytes + e.margin_bytes);
        assert_int_equal(f->headroom_bytes, (int64_t)sizes[i] - (int64_t)(e.device_bytes + e.margin_bytes));
    }
    free(f);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocator_segments),
        cmocka_unit_test(test_by_runtime),
        cmocka_unit_test(test_fit_keeps_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
