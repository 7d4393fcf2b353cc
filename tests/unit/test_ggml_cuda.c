/* test_ggml_cuda.c — what llama.cpp's CUDA backend holds beside its buffers:
 * the CUDA context, the cuBLAS workspace and ggml-cuda's pool. Every figure
 * is derived by hand below from ggml-cuda's source (ggml-cuda.cu,
 * common.cuh, mmq.cu, fattn-common.cuh) for Meta-Llama-3-8B (32 layers,
 * hidden 4096, 32 heads, 8 KV heads of 128, ff 14336, vocab 128256). */
#include "infer_testlib.h"

#include "memory/infer.h"

#define MiB ((uint64_t)1 << 20)
#define KERNELS ((uint64_t)139586437) /* 0.13 GiB = 0.13 x 2^30, truncated */
#define FIXUP ((uint64_t)170 * 128 * 128 * 4) /* stream-k fixup bound: 11,141,120 B */

static vf_estimate run(const char *gpu, const char *weights, int fa, const char *kv, const char *cuda)
{
    vf_model *m = itl_llama3_8b(8192);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    o.infer.flash_attn = fa;
    snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "%s", gpu);
    snprintf(o.weights, sizeof o.weights, "%s", weights);
    snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "%s", kv);
    snprintf(o.cuda_version, sizeof o.cuda_version, "%s", cuda);
    vf_estimate e = itl_run(m, &o);
    vf_model_free(m);
    return e;
}

/* The pool: outside_bytes less the cuBLAS workspace. */
static uint64_t pool_of(const vf_estimate *e, uint64_t cublas) { return e->outside_bytes - cublas; }

static void test_hopper_q4_k_m(void **state)
{
    (void)state;
    vf_estimate e = run("H100 SXM 80GB", "q4_k_m", 1, "", "");
    /* lazy context on Hopper 616 MiB + kernels 0.13 GiB; workspace 32 MiB
     * (cc >= 900); MMQ input of ffn_down: 512 x 14336 x 36/32 = 8,257,536 B
     * + fixup 11,141,120 = 19,398,656 -> 2 MiB granules: 20 MiB */
    assert_int_equal(e.context_bytes, 616 * MiB + KERNELS);
    assert_int_equal(pool_of(&e, 32 * MiB), 20 * MiB);
    assert_int_equal(e.overhead, 616 * MiB + KERNELS + 32 * MiB + 20 * MiB);
    assert_int_equal(e.device_bytes, e.per_gpu_bytes);
    assert_int_equal(e.allocated_bytes, e.weights + e.kv_cache + e.activations);
}

static void test_ada_and_volta(void **state)
{
    (void)state;
    vf_estimate a = run("RTX 4090", "q4_k_m", 1, "", "");
    assert_int_equal(a.context_bytes, 426 * MiB + KERNELS);
    assert_int_equal(pool_of(&a, 4 * MiB), 20 * MiB);
    /* V100: no int8 tensor cores, a 512-token batch goes to cuBLAS with the
     * weight in f16; the largest is the Q6_K output head: 128256 x 4096 x 2
     * = 1,050,673,152 + (128256 + 4096) x 512 x 2 = 135,528,448, in all
     * 1,186,201,600 B -> 566 granules of 2 MiB = 1132 MiB */
    vf_estimate v = run("V100", "q4_k_m", 1, "", "");
    assert_int_equal(pool_of(&v, 4 * MiB), 1132 * MiB);
}

static void test_attention_temporaries(void **state)
{
    (void)state;
    /* without flash attention: softmax(KQ) in f16 for the KQV product,
     * 32 heads x 8192 cells x 512 x 2 = 256 MiB */
    vf_estimate n = run("H100 SXM 80GB", "q4_k_m", 0, "", "");
    assert_int_equal(pool_of(&n, 32 * MiB), 256 * MiB);
    /* flash attention over a q8_0 cache: one layer's K and V in f16,
     * 8192 x (1024 + 1024) x 2 = 32 MiB, above MMQ's 19.4 MB */
    vf_estimate q = run("H100 SXM 80GB", "q4_k_m", 1, "q8_0", "");
    assert_int_equal(pool_of(&q, 32 * MiB), 32 * MiB);
}

static void test_f16_weights_through_cublas(void **state)
{
    (void)state;
    /* f16 weights: cuBLAS with src1 and dst in f16 for the output head,
     * (128256 + 4096) x 512 x 2 = 135,528,448 B -> 65 granules = 130 MiB */
    vf_estimate e = run("H100 SXM 80GB", "f16", 1, "", "");
    assert_int_equal(pool_of(&e, 32 * MiB), 130 * MiB);
}

static void test_loading_mode(void **state)
{
    (void)state;
    /* llama.cpp sets no CUDA_MODULE_LOADING: eager below CUDA 12.2 */
    vf_estimate eager = run("H100 SXM 80GB", "q4_k_m", 1, "", "12.1");
    assert_int_equal(eager.context_bytes, 1343 * MiB);
    vf_estimate lazy = run("H100 SXM 80GB", "q4_k_m", 1, "", "12.2");
    assert_int_equal(lazy.context_bytes, 616 * MiB + KERNELS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hopper_q4_k_m),         cmocka_unit_test(test_ada_and_volta),
        cmocka_unit_test(test_attention_temporaries), cmocka_unit_test(test_f16_weights_through_cublas),
        cmocka_unit_test(test_loading_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
