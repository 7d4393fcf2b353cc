/* test_extras.c — the serving extras against figures derived by hand:
 * llama.cpp's --mmproj (projector GGUFs written here: their tensors' bytes and
 * clip's compute buffer from the graph's tensor shapes), the recurrent state of
 * hybrids per layer kind, and image tokens at a given size. */
#include "testutil.h"
#include "gguf_writer.h"
#include "memory/infer.h"

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

/* A clip projector header: the tower's keys, and two F16 tensors (the
 * second named as the gated MLP's when gated). */
typedef struct proj_spec {
    const char *type;
    uint32_t image, patch, embd, heads, ff, merge, wa_pattern;
    bool gated;
} proj_spec;

static char *write_proj(const char *dir, const char *name, const proj_spec *ps)
{
    char *path = tu_path(dir, name);
    gw w = {0};
    uint32_t n_kv = 7 + (ps->merge ? 1 : 0) + (ps->wa_pattern ? 1 : 0);
    gw_begin(&w, 3, 2, n_kv);
    gw_kv_str(&w, "general.architecture", "clip");
    gw_kv_str(&w, "clip.projector_type", ps->type);
    gw_kv_u32(&w, "clip.vision.image_size", ps->image);
    gw_kv_u32(&w, "clip.vision.patch_size", ps->patch);
    gw_kv_u32(&w, "clip.vision.embedding_length", ps->embd);
    gw_kv_u32(&w, "clip.vision.attention.head_count", ps->heads);
    gw_kv_u32(&w, "clip.vision.feed_forward_length", ps->ff);
    if (ps->merge)
        gw_kv_u32(&w, "clip.vision.spatial_merge_size", ps->merge);
    if (ps->wa_pattern)
        gw_kv_u32(&w, "clip.vision.n_wa_pattern", ps->wa_pattern);
    gw_tensor t[2] = {{"mm.0.weight", 1, 2, {32, 64, 0, 0}},
                      {ps->gated ? "v.blk.0.ffn_gate.weight" : "mm.0.bias", 1, 1, {32, 0, 0, 0}}};
    uint64_t data = gw_tensor_infos(&w, t, 2, 32);
    assert_int_equal(gw_finish(&w, path, 32, data), 0);
    return path;
}

static vf__clip clip_of(const char *path, int fa, uint32_t iw, uint32_t ih)
{
    vf_model *p = open_ok(path);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.flash_attn = fa;
    o.image_w = iw;
    o.image_h = ih;
    vf__clip c;
    vf_error err = {0};
    if (vf__mmproj_cost(p, &o, &c, &err) != VF_OK)
        fail_msg("%s: %s", path, err.msg);
    vf_model_free(p);
    return c;
}

/* clip's compute buffer by hand from the graph's tensor shapes (f32, 4 B;
 * N patches, E embd, F ffn, H heads; llama.cpp 0024aa7 clip.cpp):
 * Qwen2.5-VL-like: qwen2.5vl_merger, patch 14, merge 2, E 1280, H 16
 * (head 80: ggml-cuda has a flash kernel, so -fa auto takes it), F 3420
 * gated, n_wa_pattern 8. Its largest image: 4096 merged tokens = 64 x 64
 * cells of 28 px = 1792 x 1792, N = 128^2 = 16384.
 *   inputs: positions 4 N i32 = 262,144; window mask N^2 f32 + f16 cast
 *     = 16384^2 x 6 = 1,610,612,736 -> 1,610,874,880
 *   embedding: 3 x 1792^2 x 4 + N x 3 x 14^2 x 4 + 2 x N E x 4
 *     = 38,535,168 + 38,535,168 + 167,772,160 = 244,842,496
 *   attention (flash): 5 N E x 4 = 419,430,400
 *   MLP (gated): max(2NE + 2NF, NE + 3NF) x 4 = max(616,038,400, 756,285,440)
 *   total 1,610,874,880 + 756,285,440 = 2,367,160,320 B.
 * -fa off: mask f32 only (1,073,741,824 + 262,144), scores H N^2 x 4 =
 *   17,179,869,184 beside 4 N E x 4 = 335,544,320: 17,515,413,504;
 *   total 1,074,003,968 + 17,515,413,504 = 18,589,417,472 B.
 * --image-size 1000x700: ceil(1000/28) x ceil(700/28) = 36 x 25 cells,
 *   1008 x 700 px, N = 72 x 50 = 3600; inputs 57,600 + 3600^2 x 6 =
 *   77,817,600; MLP max(8 x 4,608,000 + 8 x 12,312,000, 4 x 4,608,000 +
 *   12 x 12,312,000) = 166,176,000 (attention 92,160,000, embedding
 *   53,798,400): total 243,993,600 B. */
static void test_mmproj_dynamic(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    proj_spec ps = {"qwen2.5vl_merger", 560, 14, 1280, 16, 3420, 2, 8, true};
    char *path = write_proj(dir, "qwen.gguf", &ps);
    vf__clip c = clip_of(path, -1, 0, 0);
    assert_true(c.flash && c.dynamic && c.window && c.gated);
    assert_int_equal(c.w, 1792);
    assert_int_equal(c.patches, 16384);
    assert_int_equal(c.warmup, 46 * 28); /* set_warmup_n_tokens(46*46) */
    assert_int_equal(c.inputs, 1610874880ull);
    assert_int_equal(c.embed, 244842496ull);
    assert_int_equal(c.attn, 419430400ull);
    assert_int_equal(c.ffn, 756285440ull);
    assert_int_equal(c.total, 2367160320ull);
    c = clip_of(path, 0, 0, 0);
    assert_false(c.flash);
    assert_int_equal(c.scores, 17179869184ull);
    assert_int_equal(c.attn, 17515413504ull);
    assert_int_equal(c.total, 18589417472ull);
    c = clip_of(path, -1, 1000, 700);
    assert_int_equal(c.w, 1008);
    assert_int_equal(c.h, 700);
    assert_int_equal(c.patches, 3600);
    assert_int_equal(c.embed, 53798400ull);
    assert_int_equal(c.attn, 92160000ull);
    assert_int_equal(c.total, 243993600ull);
    free(path);
    tu_rm_rf(dir);
    free(dir);
}

/* A fixed-size LLaVA-1.5-like projector (mlp, image 336, patch 14, E 1024,
 * H 16, F 4096, plain MLP), -fa off: N = 24^2 = 576 whatever the image.
 *   inputs 2 x 4 B x N = 4,608; embedding 1,354,752 + 1,354,752 + 4,718,592
 *   = 7,428,096; attention max(5 NE, 4 NE + H N^2) x 4 = max(11,796,480,
 *   9,437,184 + 21,233,664) = 30,670,848; MLP (2NE + NF) x 4 = 14,155,776;
 *   total 4,608 + 30,670,848 = 30,675,456 B.
 * On llama.cpp beside SmolLM3-3B: + weights 64 x 32 x 2 + 32 x 2 = 4,160 B
 * and the whole buffer (clip's sched is its own, beside llama's). */
static void test_mmproj_fixed(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    proj_spec ps = {"mlp", 336, 14, 1024, 16, 4096, 0, 0, false};
    char *path = write_proj(dir, "llava.gguf", &ps);
    vf__clip c = clip_of(path, 0, 2000, 2000);
    assert_false(c.dynamic);
    assert_int_equal(c.patches, 576);
    assert_int_equal(c.warmup, 336);
    assert_int_equal(c.embed, 7428096);
    assert_int_equal(c.attn, 30670848);
    assert_int_equal(c.ffn, 14155776);
    assert_int_equal(c.total, 30675456);

    vf_model *m = open_ok(M2026 "HuggingFaceTB__SmolLM3-3B.json");
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.flash_attn = 0;
    vf_estimate *base = run(m, &o);
    o.mmproj = path;
    vf_estimate *with = run(m, &o);
    assert_int_equal(with->weights - base->weights, 4160);
    assert_int_equal(with->activations - base->activations, 30675456);
    assert_int_equal(with->per_gpu_bytes - base->per_gpu_bytes, 4160 + 30675456);
    bool said = false;
    for (size_t i = 0; i < with->n_assumptions; i++)
        said = said || strstr(with->assumptions[i], "compute buffer 30675456 B (mlp, 336 x 336 px, 576 patches");
    assert_true(said);
    free(base);
    free(with);
    vf_model_free(m);
    free(path);
    tu_rm_rf(dir);
    free(dir);
}

/* Not a projector, or one without the keys clip requires: refused. */
static void test_mmproj_refused(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *path = tu_path(dir, "bad.gguf");
    gw w = {0};
    gw_begin(&w, 3, 1, 3);
    gw_kv_str(&w, "general.architecture", "clip");
    gw_kv_u32(&w, "clip.vision.image_size", 224);
    gw_kv_u32(&w, "clip.vision.embedding_length", 32); /* no head_count, no patch_size */
    gw_tensor t[1] = {{"mm.0.weight", 1, 2, {32, 64, 0, 0}}};
    uint64_t data = gw_tensor_infos(&w, t, 1, 32);
    assert_int_equal(gw_finish(&w, path, 32, data), 0);
    vf_model *p = open_ok(path);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    vf__clip c;
    vf_error err = {0};
    assert_int_equal(vf__mmproj_cost(p, &o, &c, &err), VF_EFORMAT);
    vf_model_free(p);
    vf_model *m = open_ok(M2026 "HuggingFaceTB__SmolLM3-3B.json");
    assert_int_equal(vf__mmproj_cost(m, &o, &c, &err), VF_EUNSUPPORTED); /* a config, not a clip GGUF */
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
        cmocka_unit_test(test_mmproj_dynamic),
        cmocka_unit_test(test_mmproj_fixed),
        cmocka_unit_test(test_mmproj_refused),
        cmocka_unit_test(test_recurrent_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
