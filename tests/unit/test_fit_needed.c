/* test_fit_needed.c — vLLM's smallest device is a threshold: on the needed
 * bytes N that fit returns, the configuration fits, one byte less does not,
 * and every device above fits too. vLLM's pool takes whole KV blocks of its
 * budget, so one byte of device more can add a block and leave less free:
 * the plain verdict is a sawtooth, and only "from N up" is a property a
 * buyer can use. Each device is checked with the class (vLLM's defaults) of
 * the GPU asked, only its memory varying. The check is exhaustive over a
 * window above N: between two block steps the device figure is constant and
 * the engine's start-up checks only get easier, so a verdict at N and at
 * every step covers every byte of the window. */
#include "testutil.h"

#include "answer/fit_internal.h"

#define MIB (1ull << 20)

typedef struct probe {
    const vf_model *m;
    vf_estimate_opts o;
    vf_estimate *e;
    unsigned runs;
} probe;

/* 1 fits (fit_search.c's rule: the engine starts, device + margin <= size) */
static int fits(probe *p, uint64_t g, uint64_t *kv)
{
    p->o.gpu_bytes = g;
    p->runs++;
    if (vf_estimate_run(p->m, &p->o, p->e, NULL) != VF_OK)
        return -1;
    *kv = p->e->kv_cache;
    uint64_t d = p->e->device_bytes + p->e->margin_bytes;
    return p->e->starts && d <= g;
}

/* every byte of [n, n + span] fits: each block step in it found by bisection */
static uint64_t check_window(probe *p, uint64_t n, uint64_t span, const char *what)
{
    uint64_t kv0, kv, steps = 0, end = n + span;
    if (fits(p, n, &kv0) != 1)
        fail_msg("%s: needed %llu does not fit", what, (unsigned long long)n);
    for (uint64_t g = n; g < end;) {
        uint64_t next = g + 4 * MIB < end ? g + 4 * MIB : end;
        assert_true(fits(p, next, &kv) >= 0);
        if (kv == kv0) {
            g = next;
            continue;
        }
        uint64_t lo = g, hi = next; /* kv(lo) == kv0 != kv(hi) */
        while (hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            assert_true(fits(p, mid, &kv) >= 0);
            if (kv == kv0)
                lo = mid;
            else
                hi = mid;
        }
        if (fits(p, hi, &kv0) != 1)
            fail_msg("%s: needed %llu, yet %llu (a block step above it) does not fit", what, (unsigned long long)n,
                     (unsigned long long)hi);
        steps++;
        g = hi;
    }
    return steps;
}

static void check(const char *id, const char *gpu, uint32_t gpus, const char *version, double util)
{
    vf_model *m = NULL;
    if (vf_model_open(id, &m, NULL) != VF_OK)
        fail_msg("%s does not open", id);
    vf_gpu_choice g;
    assert_int_equal(vf_gpu_lookup(gpu, &g, NULL), VF_OK);
    vf_fit_opts fo;
    memset(&fo, 0, sizeof fo);
    vf_estimate_opts_init(&fo.est);
    fo.est.runtime = VF_RUNTIME_VLLM;
    fo.est.infer.gpu_util = util;
    snprintf(fo.est.infer.vllm_version, sizeof fo.est.infer.vllm_version, "%s", version);
    fo.gpu = &g.gpu;
    fo.gpu_bytes = g.gpu.memory_bytes;
    fo.gpus = gpus;
    fo.no_search = true;
    vf_fit *f = malloc(sizeof *f);
    assert_non_null(f);
    assert_int_equal(vf_fit_run(m, &fo, f, NULL), VF_OK);
    uint64_t n = vf_fit_needed_bytes(f);
    char what[200];
    snprintf(what, sizeof what, "%s on %u x %s (vLLM %s, util %.2f)", id, gpus, g.gpu.name,
             version[0] ? version : "current", util);
    assert_true(n > 0);
    probe p = {.m = m, .e = malloc(sizeof *p.e)};
    assert_non_null(p.e);
    /* the options fit estimated with: the layout spread over the GPUs, the
     * device named, its class held */
    p.o = fo.est;
    vf__fit_spread(m, &p.o, gpus, 8);
    snprintf(p.o.infer.gpu_name, sizeof p.o.infer.gpu_name, "%s", g.gpu.name);
    p.o.infer.gpu_class_bytes = g.gpu.memory_bytes;
    uint64_t kv;
    if (fits(&p, n - 1, &kv) != 0)
        fail_msg("%s: needed %llu, yet one byte less fits", what, (unsigned long long)n);
    uint64_t steps = check_window(&p, n, 96 * MIB, what);
    /* and far above: a device of twice, and of the GPU's own memory */
    assert_int_equal(fits(&p, 2 * n, &kv), 1);
    if (g.gpu.memory_bytes >= n)
        assert_int_equal(fits(&p, g.gpu.memory_bytes, &kv), 1);
    print_message("%s: needed %llu, %llu block steps above it checked (%u estimates)\n", what,
                  (unsigned long long)n, (unsigned long long)steps, p.runs);
    assert_true(steps > 0); /* the window crossed the sawtooth it guards */
    free(p.e);
    free(f);
    vf_model_free(m);
}

static void test_needed_is_a_threshold(void **state)
{
    (void)state;
    static const char *models[] = {"HuggingFaceTB/SmolLM-1.7B", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct",
                                   "google/gemma-3-4b-it", "deepseek-ai/DeepSeek-V2-Lite",
                                   "ibm-granite/granite-4.0-h-micro"};
    static const char *gpus[] = {"H100", "A100-80GB", "L40S", "RTX 4090", "B200"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++)
        for (size_t j = 0; j < sizeof gpus / sizeof *gpus; j++)
            check(models[i], gpus[j], 1, "", 0.9);
    /* graphs outside the budget (before 0.21), another utilization, two GPUs */
    check("HuggingFaceTB/SmolLM-1.7B", "H100", 1, "0.9.2", 0.9);
    check("Qwen/Qwen3-8B", "L40S", 1, "0.11.0", 0.95);
    check("Qwen/Qwen3-8B", "H100", 2, "", 0.8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_needed_is_a_threshold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
