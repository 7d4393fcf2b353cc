/* test_load_util.h — helpers shared by the loader's tests: checkpoints with
 * non-zero data, the fake CUDA driver's controls, byte-exact comparison. */
#ifndef VF_TEST_LOAD_UTIL_H
#define VF_TEST_LOAD_UTIL_H

#include "results.h"
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>

#include "../fake/fake_cuda.h"
#include "load/load_internal.h"

static inline const char *tl_build(void)
{
    const char *b = getenv("BUILD");
    return b && *b ? b : "build";
}

static void *tl_fake;
static fake_cuda_reset_fn tl_reset;
static fake_cuda_stats_fn tl_stats;

/* Points the library at the fake driver and NVML and loads the fake once. */
static inline void tl_use_fake(void)
{
    static char cuda[512], nvml[512];
    snprintf(cuda, sizeof cuda, "%s/fake/libcuda.so.1", tl_build());
    snprintf(nvml, sizeof nvml, "%s/fake/libnvidia-ml.so.1", tl_build());
    setenv("VF_CUDA_LIBRARY", cuda, 1);
    setenv("VF_NVML_LIBRARY", nvml, 1);
    if (!tl_fake) {
        tl_fake = dlopen(cuda, RTLD_NOW | RTLD_LOCAL);
        if (!tl_fake)
            fail_msg("cannot load the fake driver %s: %s (make check builds it)", cuda, dlerror());
        void *r = dlsym(tl_fake, "fake_cuda_reset"), *s = dlsym(tl_fake, "fake_cuda_get_stats");
        assert_non_null(r);
        assert_non_null(s);
        memcpy(&tl_reset, &r, sizeof r);
        memcpy(&tl_stats, &s, sizeof s);
    }
}

/* Clears every FAKE_CUDA_* knob, sets the given ones ("K=V" strings, NULL
 * ended) and resets the fake's counters. */
static inline void tl_fake_env(const char *kv, ...)
{
    static const char *knobs[] = {"FAKE_CUDA_DEVICES", "FAKE_CUDA_TOTAL_MB", "FAKE_CUDA_CONTEXT_MB",
                                  "FAKE_CUDA_DELAY_US", "FAKE_CUDA_FAIL_INIT", "FAKE_CUDA_FAIL_ALLOC",
                                  "FAKE_CUDA_FAIL_HOSTALLOC", "FAKE_CUDA_FAIL_COPY", "FAKE_CUDA_FAIL_EVENT",
                                  "FAKE_CUDA_DISCARD", "FAKE_CUDA_CORRUPT", "FAKE_NVML_FAIL_INIT", "FAKE_NVML_USED_MB",
                                  "FAKE_NVML_RESERVED_MB", "FAKE_NVML_DENY", "FAKE_NVML_NO_MEMORY"};
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        unsetenv(knobs[i]);
    va_list ap;
    va_start(ap, kv);
    for (const char *s = kv; s; s = va_arg(ap, const char *)) {
        char k[64];
        const char *eq = strchr(s, '=');
        assert_non_null(eq);
        snprintf(k, sizeof k, "%.*s", (int)(eq - s), s);
        setenv(k, eq + 1, 1);
    }
    va_end(ap);
    tl_use_fake();
    tl_reset();
}

/* Default options for device, with a ring of staging bytes (0: default). */
static inline void tl_opts(vf_load_opts *o, const char *device, uint64_t staging)
{
    vf_load_opts_init(o);
    snprintf(o->device, sizeof o->device, "%s", device);
    o->staging_bytes = staging;
}

static inline fake_cuda_stats tl_fake_stats(void)
{
    fake_cuda_stats s;
    tl_stats(&s);
    return s;
}

/* Nothing taken is still held, and nothing was done behind a copy's back. */
static inline void tl_assert_clean(void)
{
    fake_cuda_stats s = tl_fake_stats();
    if (s.dev_allocs || s.host_allocs || s.streams || s.events || s.contexts || s.violations)
        fail_msg("fake driver: dev_allocs=%ld host_allocs=%ld streams=%ld events=%ld contexts=%ld violations=%ld (%s)",
                 s.dev_allocs, s.host_allocs, s.streams, s.events, s.contexts, s.violations, s.last_violation);
}

/* A deterministic, position-dependent byte pattern (never all zero). */
static inline void tl_pattern(unsigned char *p, size_t n, uint64_t at)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t x = (at + i) * 0x9E3779B97F4A7C15ull;
        p[i] = (unsigned char)((x >> 56) ^ (x >> 29) ^ 0x5a);
    }
}

/* Fills a file's data section [data_offset, data_offset + data_bytes) with the pattern. */
static inline void tl_fill_data(const vf_model *m)
{
    for (size_t f = 0; f < vf_model_file_count(m); f++) {
        const vf_file_info *fi = vf_model_file(m, f);
        int fd = open(fi->path, O_WRONLY);
        assert_true(fd >= 0);
        unsigned char *buf = malloc(1 << 20);
        for (uint64_t o = 0; o < fi->data_bytes; o += 1 << 20) {
            size_t n = fi->data_bytes - o < (1 << 20) ? (size_t)(fi->data_bytes - o) : (1 << 20);
            tl_pattern(buf, n, fi->data_offset + o + f * 7919);
            assert_int_equal(pwrite(fd, buf, n, (off_t)(fi->data_offset + o)), (ssize_t)n);
        }
        free(buf);
        close(fd);
    }
}

/* A Llama-like checkpoint of n_layers blocks with h-wide BF16 matrices;
 * data filled with the pattern. Returns the opened model. */
static inline vf_model *tl_llama(const char *path, int n_layers, uint64_t h)
{
    tu_st_tensor ts[64];
    static char names[64][96];
    size_t n = 0;
    snprintf(names[n], sizeof names[n], "model.embed_tokens.weight");
    ts[n] = (tu_st_tensor){names[n], "BF16", 2, {512, h}};
    n++;
    for (int l = 0; l < n_layers && n + 4 < 62; l++) {
        snprintf(names[n], sizeof names[n], "model.layers.%d.self_attn.q_proj.weight", l);
        ts[n] = (tu_st_tensor){names[n], "BF16", 2, {h, h}};
        n++;
        snprintf(names[n], sizeof names[n], "model.layers.%d.mlp.up_proj.weight", l);
        ts[n] = (tu_st_tensor){names[n], "BF16", 2, {h, h}};
        n++;
        snprintf(names[n], sizeof names[n], "model.layers.%d.input_layernorm.weight", l);
        ts[n] = (tu_st_tensor){names[n], "F32", 1, {h + 3}}; /* odd size: tensors off 256-byte alignment */
        n++;
    }
    snprintf(names[n], sizeof names[n], "model.norm.weight");
    ts[n] = (tu_st_tensor){names[n], "F32", 1, {h}};
    n++;
    snprintf(names[n], sizeof names[n], "lm_head.weight");
    ts[n] = (tu_st_tensor){names[n], "BF16", 2, {512, h}};
    n++;
    tu_write_safetensors(path, ts, n);
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open(path, &m, &e) != VF_OK)
        fail_msg("%s", e.msg);
    tl_fill_data(m);
    return m;
}

/* Every tensor's bytes where the loader says it put them equal the file's. */
static inline void tl_assert_exact(const vf_loader *l, const vf_model *m, bool device_is_host_memory)
{
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        const vf_tensor *t = vf_model_tensor(m, i);
        const char *dev = NULL;
        uint64_t addr = 0;
        assert_int_equal(vf_loader_tensor_location(l, i, &dev, &addr, NULL), VF_OK);
        assert_true(addr != 0);
        if (!device_is_host_memory && strcmp(dev, "null") == 0)
            continue;
        unsigned char *want = malloc(t->n_bytes ? t->n_bytes : 1);
        int fd = open(vf_model_file(m, t->file)->path, O_RDONLY);
        assert_int_equal(pread(fd, want, t->n_bytes, (off_t)t->offset), (ssize_t)t->n_bytes);
        close(fd);
        /* The fake's device memory is host memory: the address is readable. */
        if (memcmp(want, (const void *)(uintptr_t)addr, t->n_bytes) != 0)
            fail_msg("tensor %s on %s differs from the file", t->name, dev);
        free(want);
    }
}

#endif
