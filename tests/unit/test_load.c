/* test_load.c — the streaming loader: byte-exact results on every backend,
 * the ring's ordering against the fake driver, device maps. */
#include "test_load_util.h"
#include "gguf_writer.h"

static vf_status load(const vf_model *m, const char *device, uint64_t staging, uint32_t threads, bool verify,
                      const char *map, vf_loader **l, vf_load_result *r, vf_error *e)
{
    vf_load_opts o;
    tl_opts(&o, device, staging);
    o.threads = threads;
    o.verify = verify;
    o.device_map = map;
    vf_status st = vf_loader_open(m, &o, l, e);
    if (st == VF_OK)
        st = vf_loader_run(*l, r, e);
    return st;
}

/* Host memory: reads land in place, several threads, many chunks. */
static void test_host_exact(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 6, 384);
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(load(m, "host", 1 << 20, 3, true, NULL, &l, &r, &e), VF_OK);
    assert_int_equal(r.tensors, vf_model_tensor_count(m));
    assert_int_equal(r.bytes, vf_model_file(m, 0)->data_bytes);
    assert_int_equal(r.tensor_bytes, t.bytes);
    assert_true(r.verified);
    assert_int_equal(r.staging_bytes, 0); /* no ring for host memory */
    assert_int_equal(r.device_bytes_used, r.bytes);
    assert_true(r.peak_host_rss_bytes > 0);
    tl_assert_exact(l, m, true);
    /* tensors sit at (offset − data start) inside one allocation */
    const char *d0, *d1;
    uint64_t a0, a1;
    assert_int_equal(vf_loader_tensor_location(l, 0, &d0, &a0, NULL), VF_OK);
    assert_int_equal(vf_loader_tensor_location(l, 1, &d1, &a1, NULL), VF_OK);
    assert_int_equal(a1 - a0, vf_model_tensor(m, 1)->offset - vf_model_tensor(m, 0)->offset);
    assert_string_equal(d0, "host");
    vf_loader_free(l);
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* The null device reads everything through the ring and keeps nothing. */
static void test_null_device(void **state)
{
    (void)state;
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 4, 256);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(load(m, "null", 1 << 20, 2, false, NULL, &l, &r, &e), VF_OK);
    assert_int_equal(r.bytes, vf_model_file(m, 0)->data_bytes);
    assert_true(r.staging_bytes >= 1 << 20 && r.staging_bytes < (1 << 20) + 64 * 4096);
    assert_int_equal(r.device_bytes_used, 0);
    assert_false(r.verified);
    vf_loader_free(l);
    l = NULL;
    /* nothing to read back: refused before any work */
    assert_int_equal(load(m, "null", 0, 0, true, NULL, &l, &r, &e), VF_EINVAL);
    assert_null(l);
    assert_non_null(strstr(e.msg, "verify"));
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* The cuda backend through dlopen against the fake: copies really are
 * asynchronous (a worker thread, delayed), the ring is reused many times,
 * and no slot is refilled before its copy's event completed. */
static void test_cuda_exact_and_ring_order(void **state)
{
    (void)state;
    /* NVML counts 469 MiB the driver reserves (an H100's), cuMemGetInfo does not */
    tl_fake_env("FAKE_CUDA_DELAY_US=300", "FAKE_NVML_RESERVED_MB=469", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 8, 512);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    /* 4 slots of 64 KiB: the ~7 MiB file takes >100 chunks through them */
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 256 << 10);
    o.buffers = 4;
    o.threads = 2;
    o.verify = true;
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    if (vf_loader_run(l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    fake_cuda_stats s = tl_fake_stats();
    uint64_t chunks = (r.bytes + (64 << 10) - 1) / (64 << 10);
    assert_int_equal(s.copy_calls, (long)chunks);
    assert_int_equal(s.copies_done, (long)chunks);
    assert_int_equal(s.violations, 0);
    assert_int_equal(s.pageable_copies, 0); /* every copy from the pinned ring */
    assert_true(s.max_inflight >= 2);       /* copies overlapped: the pipeline is real */
    assert_true(s.max_inflight <= 4);       /* never more than the ring holds */
    assert_int_equal(s.spin_waits, 0);      /* the coordinator sleeps on its events, leaving the CPUs to the readers */
    assert_int_equal(s.host_allocs, 0);     /* the ring goes as soon as the load is done */
    assert_true(r.verified);
    assert_int_equal(r.buffers, 4);
    assert_string_equal(r.devices[0].device, "cuda:0");
    assert_string_equal(r.devices[0].name, "Fake GPU 0");
    /* NVML before, with and after the context: the context's 300 MiB apart from the load */
    assert_string_equal(r.devices[0].mem_source, "nvml");
    assert_int_equal(r.device_context_bytes, 300ull << 20);
    assert_int_equal(r.device_bytes_used, vf_model_file(m, 0)->data_bytes);
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p);
    free(dir);
}

/* O_DIRECT: reads widened to 4 KiB blocks around unaligned data starts,
 * trimmed; buffered where the file system refuses (the result says which). */
static void test_direct_io(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DELAY_US=50", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 3, 384);
    assert_true(vf_model_file(m, 0)->data_offset % 4096 != 0); /* the header makes it unaligned */
    vf_load_opts o;
    tl_opts(&o, "cuda:0", 512 << 10);
    o.direct = true;
    o.verify = true;
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    assert_int_equal(vf_loader_open(m, &o, &l, &e), VF_OK);
    if (vf_loader_run(l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    print_message("O_DIRECT %s on %s\n", r.direct ? "in effect" : "refused, buffered", dir);
    assert_true(r.verified);
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
}

/* The fake's detector itself: rewriting a pinned buffer while its copy is
 * in flight is caught (so the ordering test above can fail). */
typedef int (*fn_init)(unsigned);
static void test_fake_detects_early_reuse(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DELAY_US=20000", NULL);
    void *h = tl_fake;
    int (*init)(unsigned), (*retain)(void **, int), (*setcur)(void *), (*release)(int);
    int (*halloc)(void **, size_t, unsigned), (*hfree)(void *), (*dalloc)(unsigned long long *, size_t);
    int (*dfree)(unsigned long long), (*screate)(void **, unsigned), (*sdestroy)(void *), (*ssync)(void *);
    int (*copy)(unsigned long long, const void *, size_t, void *);
    void *f;
#define GET(var, name) (f = dlsym(h, name), assert_non_null(f), memcpy(&var, &f, sizeof f))
    GET(init, "cuInit");
    GET(retain, "cuDevicePrimaryCtxRetain");
    GET(setcur, "cuCtxSetCurrent");
    GET(release, "cuDevicePrimaryCtxRelease_v2");
    GET(halloc, "cuMemHostAlloc");
    GET(hfree, "cuMemFreeHost");
    GET(dalloc, "cuMemAlloc_v2");
    GET(dfree, "cuMemFree_v2");
    GET(screate, "cuStreamCreate");
    GET(sdestroy, "cuStreamDestroy_v2");
    GET(ssync, "cuStreamSynchronize");
    GET(copy, "cuMemcpyHtoDAsync_v2");
#undef GET
    void *ctx = NULL, *stream = NULL, *buf = NULL;
    unsigned long long d = 0;
    assert_int_equal(init(0), 0);
    assert_int_equal(retain(&ctx, 0), 0);
    assert_int_equal(setcur(ctx), 0);
    assert_int_equal(screate(&stream, 1), 0);
    assert_int_equal(halloc(&buf, 4096, 0), 0);
    assert_int_equal(dalloc(&d, 4096), 0);
    memset(buf, 1, 4096);
    assert_int_equal(copy(d, buf, 4096, stream), 0);
    memset(buf, 2, 4096); /* the bug the ring's events prevent */
    assert_int_equal(ssync(stream), 0);
    assert_int_equal(tl_fake_stats().violations, 1);
    assert_int_equal(dfree(d), 0);
    assert_int_equal(hfree(buf), 0);
    assert_int_equal(sdestroy(stream), 0);
    assert_int_equal(release(0), 0);
    setcur(NULL);
    tl_reset();
    tl_assert_clean();
}

/* Two shards: one device allocation per file. */
static void test_sharded_cuda(void **state)
{
    (void)state;
    tl_fake_env(NULL);
    char *dir = tu_tmpdir(), *p1 = tu_path(dir, "model-00001-of-00002.safetensors"),
         *p2 = tu_path(dir, "model-00002-of-00002.safetensors"), *ix = tu_path(dir, "model.safetensors.index.json");
    tu_st_tensor a[] = {{"model.embed_tokens.weight", "BF16", 2, {300, 128}},
                        {"model.layers.0.mlp.up_proj.weight", "F32", 2, {128, 77}}};
    tu_st_tensor b[] = {{"model.layers.1.mlp.up_proj.weight", "F16", 2, {128, 99}},
                        {"lm_head.weight", "BF16", 2, {300, 128}}};
    tu_write_safetensors(p1, a, 2);
    tu_write_safetensors(p2, b, 2);
    const char *idx = "{\"metadata\":{},\"weight_map\":{"
                      "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
                      "\"model.layers.0.mlp.up_proj.weight\":\"model-00001-of-00002.safetensors\","
                      "\"model.layers.1.mlp.up_proj.weight\":\"model-00002-of-00002.safetensors\","
                      "\"lm_head.weight\":\"model-00002-of-00002.safetensors\"}}";
    tu_write(ix, idx, strlen(idx));
    vf_model *m = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(ix, &m, &e), VF_OK);
    assert_int_equal(vf_model_file_count(m), 2);
    tl_fill_data(m);
    vf_loader *l = NULL;
    vf_load_result r;
    assert_int_equal(load(m, "cuda:0", 256 << 10, 2, true, NULL, &l, &r, &e), VF_OK);
    assert_int_equal(tl_fake_stats().dev_allocs, 2);
    assert_int_equal(r.devices[0].allocated_bytes, vf_model_file(m, 0)->data_bytes + vf_model_file(m, 1)->data_bytes);
    assert_true(r.verified);
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p1), free(p2), free(ix), free(dir);
}

/* We are a library: a load must leave the calling thread's current context as
 * it found it (an application's own context, here device 1's primary), not
 * ours and not none. */
static void *fake_sym(const char *name)
{
    void *f = dlsym(tl_fake, name);
    if (!f)
        fail_msg("the fake driver lacks %s", name);
    return f;
}

static void test_caller_context_kept(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DEVICES=2", "FAKE_CUDA_DELAY_US=50", NULL);
    int (*retain)(void **, int), (*release)(int), (*set_current)(void *), (*get_current)(void **), (*init)(unsigned);
    void *f;
    f = fake_sym("cuDevicePrimaryCtxRetain"), memcpy(&retain, &f, sizeof f);
    f = fake_sym("cuDevicePrimaryCtxRelease_v2"), memcpy(&release, &f, sizeof f);
    f = fake_sym("cuCtxSetCurrent"), memcpy(&set_current, &f, sizeof f);
    f = fake_sym("cuCtxGetCurrent"), memcpy(&get_current, &f, sizeof f);
    f = fake_sym("cuInit"), memcpy(&init, &f, sizeof f);
    void *mine = NULL, *now = NULL;
    assert_int_equal(init(0), 0);
    assert_int_equal(retain(&mine, 1), 0);
    assert_int_equal(set_current(mine), 0);

    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 2, 256);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    if (load(m, "cuda:0", 256 << 10, 2, true, NULL, &l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(get_current(&now), 0);
    assert_ptr_equal(now, mine); /* after the load */
    vf_loader_free(l);
    assert_int_equal(get_current(&now), 0);
    assert_ptr_equal(now, mine); /* after the loader is gone */
    l = NULL;                    /* a failed open (no such device) leaves it too */
    assert_int_equal(load(m, "cuda:5", 0, 0, false, NULL, &l, &r, &e), VF_EDEVICE);
    assert_int_equal(get_current(&now), 0);
    assert_ptr_equal(now, mine);

    assert_int_equal(set_current(NULL), 0);
    assert_int_equal(release(1), 0);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
}

/* Empty tensors in the middle, and a model whose tensors are all empty: no
 * zero-byte allocation or copy reaches the driver (cuMemAlloc_v2 refuses 0),
 * and every backend reports the load done. */
static void test_zero_size_tensors(void **state)
{
    (void)state;
    tl_fake_env(NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "z.safetensors"), *q = tu_path(dir, "e.safetensors");
    tu_st_tensor mixed[] = {{"model.layers.0.a.weight", "F32", 1, {1000}},
                            {"model.layers.0.b.weight", "F32", 2, {0, 7}},
                            {"model.layers.0.c.weight", "BF16", 1, {333}}};
    tu_st_tensor empty[] = {{"model.layers.0.a.weight", "F32", 1, {0}}, {"lm_head.weight", "BF16", 2, {7, 0}}};
    tu_write_safetensors(p, mixed, 3);
    tu_write_safetensors(q, empty, 2);
    vf_model *m = NULL, *z = NULL;
    vf_error e = {0};
    assert_int_equal(vf_model_open(p, &m, &e), VF_OK);
    assert_int_equal(vf_model_open(q, &z, &e), VF_OK);
    tl_fill_data(m);
    const char *devs[] = {"host", "null", "cuda:0"};
    for (size_t d = 0; d < 3; d++) {
        vf_loader *l = NULL;
        vf_load_result r;
        bool keeps = strcmp(devs[d], "null") != 0;
        if (load(m, devs[d], 0, 0, keeps, NULL, &l, &r, &e) != VF_OK)
            fail_msg("%s: %s", devs[d], e.msg);
        assert_int_equal(r.bytes, 4000 + 666);
        if (keeps)
            tl_assert_exact(l, m, d == 0);
        vf_loader_free(l);
        l = NULL;
        if (load(z, devs[d], 0, 0, keeps, NULL, &l, &r, &e) != VF_OK)
            fail_msg("%s (all empty): %s", devs[d], e.msg);
        assert_int_equal(r.bytes, 0);
        assert_int_equal(r.tensors, 2);
        vf_loader_free(l);
    }
    tl_assert_clean();
    vf_model_free(m);
    vf_model_free(z);
    tu_rm_rf(dir);
    free(p), free(q), free(dir);
}

/* A device map file: prefixes, layer ranges and a default, over two fake
 * GPUs and the host; each device gets one allocation. */
static void test_device_map_file(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DEVICES=2", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors"), *mp = tu_path(dir, "map.json");
    vf_model *m = tl_llama(p, 6, 256);
    const char *map = "{\"model.embed_tokens\": 0, \"layers:0-2\": \"cuda:0\", \"layers:3-5\": 1,"
                      " \"model.layers.5.mlp\": \"cpu\", \"*\": \"host\"}";
    tu_write(mp, map, strlen(map));
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    if (load(m, "", 256 << 10, 2, true, mp, &l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    assert_string_equal(r.device, "map");
    assert_int_equal(r.n_devices, 3);
    assert_int_equal(tl_fake_stats().dev_allocs, 2); /* one per GPU */
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        const char *dev;
        uint64_t addr;
        assert_int_equal(vf_loader_tensor_location(l, i, &dev, &addr, NULL), VF_OK);
        assert_int_equal(addr % VF_LOAD_TENSOR_ALIGN, 0);
        const char *want = strncmp(t->name, "model.layers.5.mlp", 18) == 0 ? "host"
                           : strcmp(t->name, "model.embed_tokens.weight") == 0 ? "cuda:0"
                           : t->layer >= 0 && t->layer <= 2 ? "cuda:0"
                           : t->layer >= 3 ? "cuda:1"
                                           : "host";
        if (strcmp(dev, want) != 0)
            fail_msg("%s went to %s, the map says %s", t->name, dev, want);
    }
    tl_assert_exact(l, m, false);
    assert_true(r.verified);
    /* the ring is pinned once for both GPUs: no copy is staged like pageable memory */
    assert_int_equal(tl_fake_stats().pageable_copies, 0);
    vf_loader_free(l);
    tl_assert_clean();
    /* the same when "null" holds the first tensors: the ring is still pinned by a GPU */
    const char *map_null = "{\"model.embed_tokens\": \"null\", \"*\": 1}";
    tu_write(mp, map_null, strlen(map_null));
    l = NULL;
    tl_fake_env("FAKE_CUDA_DEVICES=2", NULL);
    if (load(m, "", 256 << 10, 2, false, mp, &l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    assert_true(tl_fake_stats().copy_calls > 0);
    assert_int_equal(tl_fake_stats().pageable_copies, 0);
    vf_loader_free(l);
    tl_assert_clean();
    /* a tensor with no device, and a bad value */
    const char *bad1 = "{\"layers:0-5\": 0}", *bad2 = "{\"*\": \"disk\"}";
    tu_write(mp, bad1, strlen(bad1));
    l = NULL;
    assert_int_equal(load(m, "", 0, 0, false, mp, &l, &r, &e), VF_EINVAL);
    assert_non_null(strstr(e.msg, "no device in the map"));
    tu_write(mp, bad2, strlen(bad2));
    assert_int_equal(load(m, "", 0, 0, false, mp, &l, &r, &e), VF_EINVAL);
    assert_non_null(strstr(e.msg, "not a device"));
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(mp), free(dir);
}

/* --device-map auto: GPUs filled in order up to their free memory (less
 * 512 MiB headroom), whole layers at a time, the rest on the host. */
static void test_device_map_auto(void **state)
{
    (void)state;
    /* embed = 512×512×2 = 512 KiB; a layer = 2 × 512 KiB + norm ≈ 1 MiB */
    tl_fake_env("FAKE_CUDA_DEVICES=2", "FAKE_CUDA_CONTEXT_MB=0", "FAKE_CUDA_TOTAL_MB=515", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.safetensors");
    vf_model *m = tl_llama(p, 6, 512);
    vf_loader *l = NULL;
    vf_load_result r;
    vf_error e = {0};
    if (load(m, "", 1 << 20, 2, true, "auto", &l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    /* budget 3 MiB per GPU; a layer is 2 × 512 KiB + a 2060-byte norm padded to 2304 bytes, so
     * three layers (3 MiB + 6912 bytes) do not fit one GPU: cuda:0 embed (512 KiB) + layers 0,1;
     * cuda:1 layers 2,3; the host layers 4,5 and the head. */
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        const char *dev;
        uint64_t addr;
        assert_int_equal(vf_loader_tensor_location(l, i, &dev, &addr, NULL), VF_OK);
        const char *want = t->layer < 0 ? (t->role == VF_ROLE_EMBED ? "cuda:0" : "host")
                           : t->layer <= 1 ? "cuda:0"
                           : t->layer <= 3 ? "cuda:1"
                                           : "host";
        if (strcmp(dev, want) != 0)
            fail_msg("%s (layer %d) went to %s, expected %s", t->name, t->layer, dev, want);
    }
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(dir);
}

/* GGUF: quantized block types, tensors at 32-byte alignment with padding
 * between them; one allocation of the data section, each tensor at
 * (offset − data start), and the same file through a device map. */
static void test_gguf_cuda(void **state)
{
    (void)state;
    tl_fake_env("FAKE_CUDA_DEVICES=2", NULL);
    char *dir = tu_tmpdir(), *p = tu_path(dir, "model.gguf"), *mp = tu_path(dir, "map.json");
    gw_tensor t[] = {
        {"token_embd.weight", GW_T_Q4_K, 2, {512, 100}},
        {"blk.0.attn_norm.weight", GW_T_F32, 1, {77}},
        {"blk.0.attn_q.weight", GW_T_Q8_0, 2, {256, 96}},
        {"blk.1.attn_norm.weight", GW_T_F32, 1, {77}},
        {"blk.1.ffn_up.weight", GW_T_Q6_K, 2, {256, 300}},
        {"output.weight", GW_T_BF16, 2, {128, 100}},
    };
    size_t n = sizeof t / sizeof t[0];
    gw w = {0};
    gw_begin(&w, 3, n, 2);
    gw_kv_str(&w, "general.architecture", "llama");
    gw_kv_u32(&w, "llama.block_count", 2);
    uint64_t data = gw_tensor_infos(&w, t, n, 32);
    assert_int_equal(gw_finish(&w, p, 32, data), 0);
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open(p, &m, &e) != VF_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(vf_model_format(m), VF_FORMAT_GGUF);
    assert_int_equal(vf_model_file(m, 0)->data_bytes, data);
    tl_fill_data(m);
    vf_loader *l = NULL;
    vf_load_result r;
    assert_int_equal(load(m, "cuda:1", 256 << 10, 2, true, NULL, &l, &r, &e), VF_OK);
    assert_int_equal(r.bytes, data); /* the padding travels too: offsets stay as in the file */
    assert_true(r.verified);
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    const char *map = "{\"blk\": 0, \"*\": 1}";
    tu_write(mp, map, strlen(map));
    l = NULL;
    if (load(m, "", 256 << 10, 2, true, mp, &l, &r, &e) != VF_OK)
        fail_msg("%s", e.msg);
    const char *dev;
    uint64_t addr;
    assert_int_equal(vf_loader_tensor_location(l, 2, &dev, &addr, NULL), VF_OK);
    assert_string_equal(dev, "cuda:0");
    assert_int_equal(vf_loader_tensor_location(l, 5, &dev, &addr, NULL), VF_OK);
    assert_string_equal(dev, "cuda:1");
    tl_assert_exact(l, m, false);
    vf_loader_free(l);
    tl_assert_clean();
    vf_model_free(m);
    tu_rm_rf(dir);
    free(p), free(mp), free(dir);
}

/* The checksum: equal inputs agree, any flipped bit or moved byte differs. */
static void test_hash(void **state)
{
    (void)state;
    unsigned char a[1000];
    tl_pattern(a, sizeof a, 1);
    uint64_t h = vf_hash64(a, sizeof a, 0);
    assert_true(h == vf_hash64(a, sizeof a, 0));
    assert_true(h != vf_hash64(a, sizeof a, 1));
    assert_true(h != vf_hash64(a, sizeof a - 1, 0));
    for (size_t i = 0; i < sizeof a; i += 37) {
        a[i] ^= 0x10;
        assert_true(h != vf_hash64(a, sizeof a, 0));
        a[i] ^= 0x10;
    }
    unsigned char z[64] = {0};
    assert_true(vf_hash64(z, 64, 0) != vf_hash64(z, 63, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_host_exact),
        cmocka_unit_test(test_null_device),
        cmocka_unit_test(test_cuda_exact_and_ring_order),
        cmocka_unit_test(test_fake_detects_early_reuse),
        cmocka_unit_test(test_direct_io),
        cmocka_unit_test(test_sharded_cuda),
        cmocka_unit_test(test_device_map_file),
        cmocka_unit_test(test_device_map_auto),
        cmocka_unit_test(test_gguf_cuda),
        cmocka_unit_test(test_caller_context_kept),
        cmocka_unit_test(test_zero_size_tensors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
