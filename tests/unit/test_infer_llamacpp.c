/* test_infer_llamacpp.c — --runtime llamacpp against llama.cpp's own buffers
 * (tests/reference/llamacpp/results.json: every ok run): model and KV
 * within 0.5%, compute within 10%, output within 0.5% of what was printed. */
#include "infer_testlib.h"

#include "memory/infer.h"

#define MIB (1024.0 * 1024.0)

static double obj_sum(json_t *o)
{
    double s = 0;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) s += json_number_value(v);
    return s;
}

static void test_every_ok_run(void **state)
{
    (void)state;
    json_t *root = itl_json(REF "/llamacpp/results.json");
    json_t *runs = json_object_get(root, "runs");
    char *dir = tu_tmpdir();
    size_t i, checked = 0;
    json_t *run;
    double worst_compute = 0;
    json_array_foreach(runs, i, run)
    {
        if (!json_is_true(json_object_get(run, "ok")))
            continue;
        const char *id = json_string_value(json_object_get(run, "run_id"));
        /* the real header and tensor table, read by the GGUF reader */
        vf_model *m = itl_open_grown(dir, json_string_value(json_object_get(run, "model_file")));
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.runtime = VF_RUNTIME_LLAMACPP;
        o.infer.context = (uint64_t)json_integer_value(json_object_get(run, "ctx"));
        o.infer.ubatch = (uint64_t)json_integer_value(json_object_get(run, "ubatch"));
        o.infer.lc_batch = (uint64_t)json_integer_value(json_object_get(run, "batch"));
        o.infer.parallel = (uint32_t)json_integer_value(json_object_get(run, "n_parallel"));
        o.infer.flash_attn = strcmp(json_string_value(json_object_get(run, "flash_attn")), "on") == 0;
        o.infer.swa_full = json_is_true(json_object_get(run, "swa_full"));
        o.infer.n_gpu_layers = 0; /* the reference ran on the CPU backend */
        snprintf(o.infer.kv_dtype, sizeof o.infer.kv_dtype, "%s,%s",
                 json_string_value(json_object_get(run, "cache_type_k")),
                 json_string_value(json_object_get(run, "cache_type_v")));
        vf_estimate e;
        vf_error err = {0};
        if (vf_estimate_run(m, &o, &e, &err) != VF_OK)
            fail_msg("%s: %s", id, err.msg);

        /* model: the mapped (or loaded) buffers; where this CPU repacked Q4
         * tensors into CPU_REPACK while the mapping stays, llama.cpp's own
         * printed model size (the repack copy is CPU-backend specific) */
        json_t *mb = json_object_get(run, "model_buffers_MiB");
        double model_ref = obj_sum(mb);
        if (json_object_get(mb, "CPU_REPACK") && json_object_get(mb, "CPU_Mapped"))
            model_ref = atof(json_string_value(json_object_get(run, "file_size_reported")));
        double kv_ref = 0;
        size_t j;
        json_t *c;
        json_array_foreach(json_object_get(run, "kv_cache"), j, c) kv_ref += json_number_value(json_object_get(c, "total_MiB"));
        double compute_ref = obj_sum(json_object_get(run, "compute_buffers_MiB"));
        double out_ref = obj_sum(json_object_get(run, "output_buffers_MiB"));

        double dm = itl_rel(e.rb_model / MIB, model_ref), dk = itl_rel(e.rb_context / MIB, kv_ref);
        double dc = itl_rel(e.rb_compute / MIB, compute_ref);
        if (fabs(dm) > 0.005 || fabs(dk) > 0.005 || fabs(dc) > 0.10 ||
            fabs(e.rb_output / MIB - out_ref) > 0.005 + 0.005 * out_ref)
            fail_msg("%s: model %.2f/%.2f kv %.3f/%.3f compute %.2f/%.2f output %.3f/%.2f MiB", id,
                     e.rb_model / MIB, model_ref, e.rb_context / MIB, kv_ref, e.rb_compute / MIB, compute_ref,
                     e.rb_output / MIB, out_ref);
        if (fabs(dc) > worst_compute)
            worst_compute = fabs(dc);
        checked++;
        vf_model_free(m);
    }
    print_message("llama.cpp: %zu runs checked, worst compute-buffer error %.1f%%\n", checked, worst_compute * 100);
    assert_true(checked >= 80);
    json_decref(root);
    tu_rm_rf(dir);
    free(dir);
}

/* --weights with a llama.cpp file type re-prices an F16 model tensor by
 * tensor as llama-quantize did: the bytes of the Q8_0 / Q4_0 / Q4_K_M files
 * it made from the same F16 files (results.json "files" by_type). */
static void test_quantizer_mix(void **state)
{
    (void)state;
    json_t *root = itl_json(REF "/llamacpp/results.json");
    json_t *files = json_object_get(root, "files");
    char *dir = tu_tmpdir();
    const char *models[] = {"llama-tiny", "llama-gqa", "llama3-bpe", "qwen2", "gemma2", "llama-moe"};
    const char *types[] = {"Q8_0", "Q4_0", "Q4_K_M"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s-F16.gguf", models[i]);
        vf_model *m = itl_open_grown(dir, name);
        for (size_t k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%s-%s.gguf", models[i], types[k]);
            json_t *bt = json_object_get(json_object_get(files, name), "by_type");
            assert_non_null(bt);
            uint64_t want = 0;
            const char *key;
            json_t *v;
            json_object_foreach(bt, key, v) want += (uint64_t)json_integer_value(json_object_get(v, "bytes"));
            vf_estimate_opts o;
            vf_estimate_opts_init(&o);
            snprintf(o.weights, sizeof o.weights, "%s", types[k]);
            vf_estimate e;
            vf_error err = {0};
            assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_OK);
            if (e.weights != want)
                fail_msg("%s: %llu bytes, llama-quantize wrote %llu", name, (unsigned long long)e.weights,
                         (unsigned long long)want);
        }
        vf_model_free(m);
    }
    json_decref(root);
    tu_rm_rf(dir);
    free(dir);
}

/* llama-quant.cpp raises attn_v from Q3_K/Q4_K to Q5_K for LLM_TYPE_70B, and
 * llama-model.cpp names an 80-layer llama LLM_TYPE_65B instead when n_head ==
 * n_head_kv (LLaMA-1-65B, no shared KV heads). Under Q4_K_M layer 11 of 80
 * is not one of use_more_bits' layers (i < 10, i >= 70, (i - 10) % 3 == 2):
 * Q4_K, raised to Q5_K only for the 70B shape. */
static vf_dtype attn_v_type(uint32_t kv_heads)
{
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "llama-80");
    for (int32_t l = 0; l < 80; l++)
        itl_add(m, "v", VF_DTYPE_F16, VF_ROLE_ATTN_V, l, 256, 512);
    snprintf(m->hp.architecture, sizeof m->hp.architecture, "llama");
    m->hp.n_layers = 80, m->hp.n_heads = 64, m->hp.n_kv_heads = kv_heads;
    vf_dtype base;
    int ft;
    assert_true(vf__ggufmix_parse("q4_k_m", &base, &ft));
    vf_dtype *types = vf__ggufmix_types(m, base, ft);
    assert_non_null(types);
    vf_dtype dt = types[11];
    assert_int_equal(types[9], VF_DTYPE_Q6_K); /* a use_more_bits layer either way */
    free(types);
    vf_model_free(m);
    return dt;
}

static void test_llama_65b_is_not_70b(void **state)
{
    (void)state;
    assert_int_equal(attn_v_type(8), VF_DTYPE_Q5_K);  /* Llama-2/3-70B: 64 heads, 8 KV heads */
    assert_int_equal(attn_v_type(64), VF_DTYPE_Q4_K); /* LLaMA-1-65B: 64 and 64 */
    assert_int_equal(attn_v_type(0), VF_DTYPE_Q4_K);  /* KV heads unstated = the heads */
}

/* Tensor buffer overrides on Qwen3-30B-A3B as stored (bf16; 48 layers of 128
 * experts, gate, up and down each 768 x 2048): --cpu-moe moves all of them,
 * 48 x 128 x 3 x 768 x 2048 x 2 B, into host memory, and op offload copies
 * one layer's (128 x 3 x 768 x 2048 x 2 B) into the GPU's compute buffer
 * when n_ubatch >= 32; -ot's first match wins; \\d is ECMAScript's digit;
 * --n-cpu-moe N is N layers' experts. */
static void test_tensor_overrides(void **state)
{
    (void)state;
    vf_model *m = itl_open("Qwen/Qwen3-30B-A3B");
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.runtime = VF_RUNTIME_LLAMACPP;
    o.infer.context = 8192;
    snprintf(o.infer.gpu_name, sizeof o.infer.gpu_name, "RTX4090");
    const uint64_t layer = 128ull * 3 * 768 * 2048 * 2;
    vf_estimate base = itl_run(m, &o);
    o.tensor_overrides = "\\.ffn_(up|down|gate)_exps=CPU"; /* what --cpu-moe adds */
    vf_estimate cmoe = itl_run(m, &o);
    assert_int_equal(cmoe.host_bytes - base.host_bytes, 48 * layer);
    assert_int_equal(base.weights - cmoe.weights, 48 * layer);
    assert_int_equal(cmoe.activations - base.activations, layer);
    o.infer.ubatch = 16; /* below ggml-cuda's offload batch: no copy */
    vf_estimate small = itl_run(m, &o);
    o.tensor_overrides = NULL;
    vf_estimate small_base = itl_run(m, &o);
    assert_int_equal(small.activations, small_base.activations);
    o.infer.ubatch = 0;
    o.tensor_overrides = "exps=CUDA0\nexps=CPU"; /* the first match wins */
    vf_estimate first = itl_run(m, &o);
    assert_int_equal(first.weights, base.weights);
    o.tensor_overrides = "blk\\.1\\d\\.ffn_.*_exps=CPU"; /* layers 10..19 */
    vf_estimate ten = itl_run(m, &o);
    assert_int_equal(base.weights - ten.weights, 10 * layer);
    vf_error err = {0};
    vf_estimate e;
    o.tensor_overrides = "exps=CUDA1"; /* one GPU */
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    o.tensor_overrides = "exps";
    assert_int_equal(vf_estimate_run(m, &o, &e, &err), VF_EINVAL);
    vf_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_ok_run),
        cmocka_unit_test(test_quantizer_mix),
        cmocka_unit_test(test_llama_65b_is_not_70b),
        cmocka_unit_test(test_tensor_overrides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
