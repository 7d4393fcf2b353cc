/* test_extras.c — the serving extras against figures derived by hand:
 * llama.cpp's --mmproj (a projector GGUF written here: its tensors' bytes and
 * clip's compute bound from its clip.vision.* keys), the recurrent state of
 * hybrids per layer kind, and image tokens at a given size. */
#include "testutil.h"
#include "gguf_writer.h"

#define M2026 "tests/reference/models2026/"

static vf_model *open_ok(const char *path)
{
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open(path, &m, &e) != VF_OK)
        fail_msg("%s: %s", path, e.msg);
    return m;
}

static vf_estimate *run(const vf_model *m, const vf_estimate_opts *o)
{
    vf_estimate *e = calloc(1, sizeof *e);
    vf_error err = {0};
    assert_non_null(e);
    if (vf_estimate_run(m, o, e, &err) != VF_OK)
        fail_msg("estimate: %s", err.msg);
    return e;
}

/* A clip projector: 2 F16 tensors [64 x 32] and [32], image 224, patch 14,
 * hidden 32, ffn 128. Weights 64*32*2 + 32*2 = 4160 B; compute bound
 * (224/14)^2 = 256 patches x (5 x 32 + 128) x 4 B = 294,912 B. */
static void test_mmproj(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = tu_path(dir, "mmproj.gguf");
    gw w = {0};
    gw_begin(&w, 3, 2, 5);
    gw_kv_str(&w, "general.architecture", "clip");
    gw_kv_u32(&w, "clip.vision.image_size", 224);
    gw_kv_u32(&w, "clip.vision.patch_size", 14);
    gw_kv_u32(&w, "clip.vision.embedding_length", 32);
    gw_kv_u32(&w, "clip.vision.feed_forward_length", 128);
    gw_tensor t[2] = {{"mm.0.weight", 1, 2, {32, 64, 0, 0}}, {"mm.0.bias", 1, 1, {32, 0, 0, 0}}};
    uint64_t data = gw_tensor_infos(&w, t, 2, 32);
    assert_int_equal(gw_finish(&w, path, 32, data), 0);

    vf_model *m = open_ok(M2026 "HuggingFaceTB__SmolLM3-3B.json");
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    vf_estimate *base = run(m, &o);
    o.mmproj = path;
    vf_estimate *with = run(m, &o);
    assert_int_equal(with->weights - base->weights, 4160);
    /* the runtime's own compute buffer is far larger than clip's: it stays the peak */
    assert_true(with->activations >= base->activations);
    assert_int_equal(with->per_gpu_bytes - base->per_gpu_bytes, 4160 + (with->activations - base->activations));
    bool said = false;
    for (size_t i = 0; i < with->n_assumptions; i++)
        said = said || strstr(with->assumptions[i], "compute buffer 294912 B (256 patches)");
    assert_true(said);
    free(base);
    free(with);
    vf_model_free(m);
    free(path);
    tu_rm_rf(dir);
    free(dir);
}

/* Recurrent state per sequence and layer, by hand from the configs:
 * Nemotron-3-Nano Mamba-2: conv 3 x (64 x 64 + 2 x 8 x 128) = 18,432 bf16 + ssm 64 x 64 x 128 =
 * 524,288 f32 (mamba_ssm_cache_dtype float32): 36,864 + 2,097,152 = 2,134,016 B, 23 'M' layers.
 * LFM2-1.2B short conv: (3 - 1) x 2048 bf16 = 8,192 B, 10 conv layers.
 * Bamba-9B: conv 3 x (128 x 64 + 2 x 1 x 128) = 25,344 + ssm 128 x 64 x 128 = 1,048,576, bf16:
 * 2,147,840 B, 29 Mamba layers. */
static void test_recurrent_state(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        uint64_t bytes;
        uint32_t layers;
    } cases[] = {
        {"nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json", 2134016, 23},
        {"LiquidAI__LFM2-1.2B.json", 8192, 10},
        {"ibm-ai-platform__Bamba-9B-v1.json", 2147840, 29},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[256];
        snprintf(p, sizeof p, M2026 "%s", cases[i].file);
        vf_model *m = open_ok(p);
        const vf_hparams *hp = vf_model_hparams(m);
        assert_int_equal(hp->recurrent_state_bytes, cases[i].bytes);
        uint32_t n = 0;
        for (uint32_t l = 0; l < hp->n_layers; l++)
            n += hp->layer_recurrent[l];
        assert_int_equal(n, cases[i].layers);
        vf_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mmproj),
        cmocka_unit_test(test_recurrent_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
