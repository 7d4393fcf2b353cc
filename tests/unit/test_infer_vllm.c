/* test_infer_vllm.c — vLLM's profiling run (the activation peak it charges
 * before sizing the KV pool) against vLLM's own logs in
 * tests/reference/measured.csv, and the mechanism's terms against the
 * engine and PyTorch source formulas they come from. */
#include "infer_testlib.h"

#include "infer.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static void vllm_opts(vf_estimate_opts *o, double gpu_gib, const char *gpu, const char *version, uint64_t mml,
                      uint64_t mns)
{
    vf_estimate_opts_init(o);
    o->runtime = VF_RUNTIME_VLLM;
    o->gpu_bytes = (uint64_t)(gpu_gib * GIB);
    snprintf(o->infer.gpu_name, sizeof o->infer.gpu_name, "%s", gpu);
    snprintf(o->infer.vllm_version, sizeof o->infer.vllm_version, "%s", version);
    o->infer.max_model_len = mml;
    o->infer.max_num_seqs = mns;
}

/* measured.csv: vLLM's "PyTorch activation peak memory" and the KV memory it
 * then hands out, each row with the settings its source ran:
 *  A1 llm-d-planner, vLLM 0.11.0 (V1), H100 79.18 GiB, max-model-len 16000,
 *     `vllm serve` defaults for the GPU (8192 batched tokens, 1024 seqs);
 *  A2 vllm PR #10511 log, `vllm serve meta-llama/Meta-Llama-3-8B`, Dec 2024
 *     (0.6.5, V0: max(8192, 2048) batched tokens, 256 seqs), 79.22 GiB;
 *  A4 awslabs/data-on-eks gen-ai/inference/vllm-ray-gpu-deepseek: vllm==0.7.0
 *     (Dockerfile, V0 engine), ray-vllm-deepseek.yml: max_model_len 8192,
 *     max_num_seqs 4 (MAX_NUM_BATCHED_TOKENS is set but never passed to the
 *     engine), A10G 22.30 GiB. Here the forward of 8192 tokens is the peak. */
static void vllm_profile_rows(void **state)
{
    (void)state;
    struct {
        const char *row, *version, *gpu;
        uint64_t ctx, mml, mns;
        double gpu_gib, act_gib, pool_gib;
    } rows[] = {
        {"A1", "0.11.0", "H100", 131072, 16000, 0, 79.18, 4.76, 51.38},
        {"A2", "0.6.5", "H100", 8192, 0, 0, 79.22, 1.26, 53.29},
        {"A4", "0.7.0", "A10G", 131072, 8192, 4, 22.30, 0.85, 4.17},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vf_model *m = itl_llama3_8b(rows[i].ctx);
        vf_estimate_opts o;
        vllm_opts(&o, rows[i].gpu_gib, rows[i].gpu, rows[i].version, rows[i].mml, rows[i].mns);
        vf_estimate e = itl_run(m, &o);
        print_message("%s: activation %.3f GiB (measured %.2f), pool %.2f GiB (measured %.2f)\n", rows[i].row,
                      e.activations / GIB, rows[i].act_gib, e.kv_cache / GIB, rows[i].pool_gib);
        assert_true(e.starts);
        assert_true(fabs(itl_rel(e.activations / GIB, rows[i].act_gib)) < 0.03);
        assert_true(fabs(itl_rel(e.kv_cache / GIB, rows[i].pool_gib)) < 0.05);
        vf_model_free(m);
    }
}

/* The terms, from the source they model, for Llama-3.1-8B (h 4096, ff 14336,
 * V 128256, bf16):
 *  sampler over S rows: hidden states T x h + the sampled rows S x h (V1: and
 *  their rand_like copy), logits bf16 (2) + fp32 (4) + sort values (4) and
 *  int64 indices (8), plus torch.sort's scratch (SortStable.cu): >= 128 rows
 *  20 B per element, 2..127 rows 32 B;
 *  forward: T x (3h + 3ff) x 2 (llama.py LlamaMLP at down_proj);
 *  cuBLAS workspace (CublasHandlePool.cpp): 32 MiB on sm90, 8519680 B else. */
static void vllm_profile_terms(void **state)
{
    (void)state;
    const uint64_t h = 4096, ff = 14336, V = 128256, T = 8192;
    vf_model *m = itl_llama3_8b(131072);
    vf_estimate_opts o;

    /* H100, V1 defaults: T 8192, S 1024 -> segmented sort */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 0);
    vf_estimate e = itl_run(m, &o);
    uint64_t s = 1024;
    assert_int_equal(e.activations, T * h * 2 + 2 * s * h * 2 + s * V * (2 + 4 + 4 + 8) + s * V * 20 + (32u << 20));

    /* 64 sequences of 2048 batched tokens: the by-full-sort path, 32 B of
     * scratch per logit (with 8192 tokens the forward would be the peak) */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 64);
    o.infer.max_num_batched_tokens = 2048;
    e = itl_run(m, &o);
    s = 64;
    assert_int_equal(e.activations, 2048 * h * 2 + 2 * s * h * 2 + s * V * 18 + s * V * 32 + (32u << 20));
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 64);
    e = itl_run(m, &o);
    assert_int_equal(e.activations, T * (3 * h + 3 * ff) * 2 + (32u << 20));

    /* A10G (sm86), V0 with 4 sequences: the forward is the peak */
    vllm_opts(&o, 22.30, "A10G", "0.7.0", 8192, 4);
    e = itl_run(m, &o);
    assert_int_equal(e.activations, T * (3 * h + 3 * ff) * 2 + 8519680u);

    /* the pool is what the budget leaves after weights, that peak and the
     * non-torch memory, in whole blocks: more sequences, smaller pool */
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 256);
    vf_estimate few = itl_run(m, &o);
    vllm_opts(&o, 79.18, "H100", "0.11.0", 16000, 1024);
    vf_estimate many = itl_run(m, &o);
    assert_true(many.activations > few.activations);
    assert_true(few.kv_cache - many.kv_cache >= many.activations - few.activations - (2u << 20));
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vllm_profile_rows),
        cmocka_unit_test(vllm_profile_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
