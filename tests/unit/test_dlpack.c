/* test_dlpack.c — the loaded model as DLPack tensors (load_dlpack.c): views
 * into one allocation per file with the file's bytes, element types and
 * shapes as DLPack gives them to PyTorch, raw bytes for the types it lacks;
 * the memory freed with the last tensor, not before. CUDA through the fake
 * driver (device memory is host memory there: compared byte for byte). */
#include "test_load_util.h"

#include "load/dlpack_abi.h"

/* Two shards with every kind of tensor the package hands over. */
static char *sharded(char **dir)
{
    *dir = tu_tmpdir();
    char *p1 = tu_path(*dir, "model-00001-of-00002.safetensors"), *p2 = tu_path(*dir, "model-00002-of-00002.safetensors"),
         *ix = tu_path(*dir, "model.safetensors.index.json");
    tu_st_tensor a[] = {{"w.bf16", "BF16", 2, {64, 32}}, {"w.f32", "F32", 2, {16, 3}}, {"w.fp8", "F8_E4M3", 2, {8, 5}}};
    tu_st_tensor b[] = {{"x.i64", "I64", 1, {7}}, {"x.u8", "U8", 1, {9}}, {"x.u16", "U16", 2, {2, 3}}};
    tu_write_safetensors(p1, a, 3);
    tu_write_safetensors(p2, b, 3);
    const char *idx = "{\"weight_map\":{\"w.bf16\":\"model-00001-of-00002.safetensors\","
                      "\"w.f32\":\"model-00001-of-00002.safetensors\",\"w.fp8\":\"model-00001-of-00002.safetensors\","
                      "\"x.i64\":\"model-00002-of-00002.safetensors\",\"x.u8\":\"model-00002-of-00002.safetensors\","
                      "\"x.u16\":\"model-00002-of-00002.safetensors\"}}";
    tu_write(ix, idx, strlen(idx));
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(ix, &m, &e), VF_OK);
    tl_fill_data(m);
    vf_model_free(m);
    free(p1), free(p2);
    return ix;
}

/* Tensor i's bytes in its file. */
static void file_bytes(const vf_model *m, size_t i, unsigned char *buf)
{
    const vf_tensor *t = vf_model_tensor(m, i);
    int fd = open(vf_model_file(m, t->file)->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, t->n_bytes, (off_t)t->offset), (ssize_t)t->n_bytes);
    close(fd);
}

static void check_set(const char *ix, const char *device, int32_t dl_device)
{
    vf_load_opts o;
    tl_opts(&o, device, 256 << 10);
    vf_dlpack_set *s = NULL;
    vf_error e = {0};
    vf_model *m = NULL, *owned = NULL;
    assert_int_equal(vf_model_open(ix, &owned, &e), VF_OK);
    assert_int_equal(vf_dlpack_load(owned, &o, &s, NULL, &e), VF_OK);
    assert_int_equal(vf_model_open(ix, &m, &e), VF_OK);
    size_t n = vf_dlpack_count(s);
    assert_int_equal(n, 6);
    dlpack_managed *d[6];
    for (size_t i = 0; i < n; i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        assert_string_equal(vf_dlpack_name(s, i), t->name);
        d[i] = vf_dlpack_take(s, i, &e);
        assert_non_null(d[i]);
        assert_int_equal(d[i]->dl_tensor.device.device_type, dl_device);
        unsigned char want[4096];
        assert_true(t->n_bytes <= sizeof want);
        file_bytes(m, i, want);
        assert_memory_equal(d[i]->dl_tensor.data, want, t->n_bytes);
        bool raw = !strcmp(t->name, "w.fp8") || !strcmp(t->name, "x.u16");
        assert_int_equal(vf_dlpack_raw(s, i), raw);
        if (!strcmp(t->name, "w.bf16"))
            assert_true(d[i]->dl_tensor.dtype.code == DLPACK_BFLOAT && d[i]->dl_tensor.dtype.bits == 16 &&
                        d[i]->dl_tensor.ndim == 2 && d[i]->dl_tensor.shape[0] == 64 && d[i]->dl_tensor.strides[0] == 32);
        if (!strcmp(t->name, "w.fp8")) /* one byte an element: its own shape, uint8 */
            assert_true(d[i]->dl_tensor.dtype.code == DLPACK_UINT && d[i]->dl_tensor.dtype.bits == 8 &&
                        d[i]->dl_tensor.shape[1] == 5 && !strcmp(vf_dlpack_dtype(s, i), "F8_E4M3"));
        if (!strcmp(t->name, "x.u16")) /* two bytes an element: the last dimension in bytes */
            assert_true(d[i]->dl_tensor.ndim == 2 && d[i]->dl_tensor.shape[1] == 6 && d[i]->dl_tensor.dtype.bits == 8);
        if (!strcmp(t->name, "x.i64"))
            assert_true(d[i]->dl_tensor.dtype.code == DLPACK_INT && d[i]->dl_tensor.dtype.bits == 64);
    }
    /* views: within a file, addresses differ as the file offsets do */
    for (size_t i = 1; i < n; i++) {
        const vf_tensor *a = vf_model_tensor(m, 0), *b = vf_model_tensor(m, i);
        if (a->file == b->file)
            assert_int_equal((uintptr_t)d[i]->dl_tensor.data - (uintptr_t)d[0]->dl_tensor.data, b->offset - a->offset);
    }
    vf_dlpack_release(s);
    for (size_t i = 0; i + 1 < n; i++)
        d[i]->deleter(d[i]);
    if (dl_device == DLPACK_CUDA) /* one tensor left: both files' allocations still held */
        assert_int_equal(tl_fake_stats().dev_allocs, 2);
    unsigned char last[64];
    file_bytes(m, n - 1, last);
    assert_memory_equal(d[n - 1]->dl_tensor.data, last, vf_model_tensor(m, n - 1)->n_bytes);
    d[n - 1]->deleter(d[n - 1]);
    vf_model_free(m);
}

static void test_dlpack_cuda_fake(void **state)
{
    (void)state;
    tl_fake_env(NULL);
    char *dir, *ix = sharded(&dir);
    check_set(ix, "cuda:0", DLPACK_CUDA);
    tl_assert_clean(); /* the last deleter freed the device memory, the ring went with the load */
    tu_rm_rf(dir);
    free(ix), free(dir);
}

static void test_dlpack_host(void **state)
{
    (void)state;
    char *dir, *ix = sharded(&dir);
    check_set(ix, "host", DLPACK_CPU);
    tu_rm_rf(dir);
    free(ix), free(dir);
}

static void test_dlpack_refusals(void **state)
{
    (void)state;
    vf_load_opts o;
    tl_opts(&o, "null", 0);
    vf_dlpack_set *s = NULL;
    vf_error e = {0};
    vf_model *m = NULL;
    assert_int_equal(vf_model_open("Qwen/Qwen3-8B", &m, &e), VF_OK);
    assert_int_equal(vf_dlpack_load(m, &o, &s, NULL, &e), VF_EINVAL); /* null: nothing to view; m taken */
    tl_opts(&o, "host", 0);
    assert_int_equal(vf_model_open("Qwen/Qwen3-8B", &m, &e), VF_OK);
    assert_int_equal(vf_dlpack_load(m, &o, &s, NULL, &e), VF_EUNSUPPORTED); /* no weights */
    assert_null(s);
    assert_int_equal(vf_dlpack_load(NULL, &o, &s, NULL, &e), VF_EINVAL);
    assert_null(vf_dlpack_take(NULL, 0, &e));
    vf_dlpack_release(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dlpack_cuda_fake), cmocka_unit_test(test_dlpack_host),
                                       cmocka_unit_test(test_dlpack_refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
