/* test_safetensors.c — the safetensors reader on real-layout checkpoints. */
#include "testutil.h"

/* A Llama-style block: names and shapes as Hugging Face writes them. */
static void test_llama_layout(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    const uint64_t H = 256, F = 688, V = 1000, KV = 64;
    tu_st_tensor ts[] = {
        {"model.embed_tokens.weight", "BF16", 2, {V, H}},
        {"model.layers.0.self_attn.q_proj.weight", "BF16", 2, {H, H}},
        {"model.layers.0.self_attn.k_proj.weight", "BF16", 2, {KV, H}},
        {"model.layers.0.self_attn.v_proj.weight", "BF16", 2, {KV, H}},
        {"model.layers.0.self_attn.o_proj.weight", "BF16", 2, {H, H}},
        {"model.layers.0.mlp.gate_proj.weight", "BF16", 2, {F, H}},
        {"model.layers.0.mlp.up_proj.weight", "BF16", 2, {F, H}},
        {"model.layers.0.mlp.down_proj.weight", "BF16", 2, {H, F}},
        {"model.layers.0.input_layernorm.weight", "F32", 1, {H}},
        {"model.layers.0.self_attn.rotary_emb.inv_freq", "F32", 1, {32}},
        {"model.norm.weight", "BF16", 1, {H}},
        {"lm_head.weight", "BF16", 2, {V, H}},
    };
    size_t n = sizeof ts / sizeof ts[0];
    uint64_t want_el = 0, want_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t e = 1;
        for (int d = 0; d < ts[i].n_dims; d++)
            e *= ts[i].shape[d];
        want_el += e;
        want_bytes += tu_st_bytes(&ts[i]);
    }
    tu_write_safetensors(p, ts, n);
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    assert_int_equal(vf_model_tensor_count(m), n);
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(t.elements, want_el);
    assert_int_equal(t.bytes, want_bytes);
    assert_int_equal(t.buffer_elements, 32); /* inv_freq is a buffer, not a parameter */
    assert_int_equal(t.params, want_el - 32);
    assert_int_equal(dtype_bytes_of(m, VF_DTYPE_F32), (H + 32) * 4);
    const vf_tensor *q = vf_model_tensor(m, 1);
    assert_string_equal(q->name, "model.layers.0.self_attn.q_proj.weight");
    assert_int_equal(q->role, VF_ROLE_ATTN_Q);
    assert_int_equal(q->layer, 0);
    assert_int_equal(vf_model_tensor(m, 0)->role, VF_ROLE_EMBED);
    assert_int_equal(vf_model_tensor(m, 11)->role, VF_ROLE_OUTPUT);
    /* offsets are absolute: header length word + header + relative offset */
    const vf_file_info *f = vf_model_file(m, 0);
    assert_int_equal(q->offset, f->data_offset + V * H * 2);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* Three shards through model.safetensors.index.json. */
static void test_sharded(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    tu_st_tensor s1[] = {{"model.embed_tokens.weight", "F16", 2, {512, 64}}};
    tu_st_tensor s2[] = {{"model.layers.0.mlp.up_proj.weight", "F16", 2, {128, 64}},
                         {"model.layers.0.mlp.down_proj.weight", "F16", 2, {64, 128}}};
    tu_st_tensor s3[] = {{"lm_head.weight", "F16", 2, {512, 64}}};
    const char *names[] = {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                           "model-00003-of-00003.safetensors"};
    uint64_t total = 0;
    char *p;
    p = tu_path(dir, names[0]);
    total += tu_write_safetensors(p, s1, 1);
    free(p);
    p = tu_path(dir, names[1]);
    total += tu_write_safetensors(p, s2, 2);
    free(p);
    p = tu_path(dir, names[2]);
    total += tu_write_safetensors(p, s3, 1);
    free(p);
    char idx[2048];
    snprintf(idx, sizeof idx,
             "{\"metadata\":{\"total_size\":%llu},\"weight_map\":{\"model.embed_tokens.weight\":\"%s\","
             "\"model.layers.0.mlp.up_proj.weight\":\"%s\",\"model.layers.0.mlp.down_proj.weight\":\"%s\","
             "\"lm_head.weight\":\"%s\"}}",
             (unsigned long long)total, names[0], names[1], names[1], names[2]);
    p = tu_path(dir, "model.safetensors.index.json");
    tu_write(p, idx, strlen(idx));
    vf_model *m = NULL;
    vf_error e = {0};
    /* by index file and by directory */
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    assert_int_equal(vf_model_file_count(m), 3);
    assert_int_equal(vf_model_warning_count(m), 0);
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    assert_int_equal(t.bytes, total);
    assert_int_equal(t.params, 512 * 64 * 2 + 128 * 64 * 2);
    vf_model_free(m);
    assert_int_equal(vf_model_open(dir, &m, &e), VF_OK);
    assert_int_equal(vf_model_file_count(m), 3);
    vf_model_free(m);
    /* a wrong total_size is a warning, not an error */
    snprintf(idx, sizeof idx,
             "{\"metadata\":{\"total_size\":1},\"weight_map\":{\"model.embed_tokens.weight\":\"%s\","
             "\"model.layers.0.mlp.up_proj.weight\":\"%s\",\"model.layers.0.mlp.down_proj.weight\":\"%s\","
             "\"lm_head.weight\":\"%s\"}}",
             names[0], names[1], names[1], names[2]);
    tu_write(p, idx, strlen(idx));
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    assert_int_equal(vf_model_warning_count(m), 1);
    vf_model_free(m);
    /* a missing shard is an error */
    char *s3p = tu_path(dir, names[2]);
    unlink(s3p);
    free(s3p);
    assert_int_equal(vf_model_open(p, &m, &e), VF_ENOENT);
    assert_null(m);
    assert_non_null(strstr(e.msg, "missing"));
    free(p);
    tu_rm_rf(dir);
    free(dir);
}

/* Sub-byte dtypes: F4 packs two per byte; an odd count cannot be stored. */
static void test_subbyte(void **state)
{
    (void)state;
    uint64_t b = 0;
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F4, 64, &b), VF_OK);
    assert_int_equal(b, 32);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F4, 3, &b), VF_EFORMAT);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_F6_E2M3, 8, &b), VF_OK);
    assert_int_equal(b, 6);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_Q4_K, 512, &b), VF_OK);
    assert_int_equal(b, 288);
    assert_int_equal(vf_dtype_bytes(VF_DTYPE_U64, UINT64_MAX, &b), VF_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_layout),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_subbyte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
