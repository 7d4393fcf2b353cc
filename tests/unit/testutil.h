/* testutil.h — helpers for the unit tests: temp dirs, files, and a
 * safetensors writer that lays out real checkpoints (header + sparse data). */
#ifndef VF_TESTUTIL_H
#define VF_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vramfit.h"
#include "results.h"

static inline char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/vftest.XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

static inline char *tu_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static inline void tu_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n)
        assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static inline void tu_rm_rf(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* A real GGUF rebuilt from its saved header in REF/llamacpp/heads: the
 * header bytes, then a hole up to the size in NAME.head.size (what
 * shared/tools/gguf-grow does). Returns dir/name (malloc'd). */
static inline char *tu_grow_gguf(const char *ref, const char *dir, const char *name)
{
    char head[512], sz[600];
    snprintf(head, sizeof head, "%s/llamacpp/heads/%s.head", ref, name);
    snprintf(sz, sizeof sz, "%s.size", head);
    char *out = tu_path(dir, name);
    FILE *f = fopen(sz, "r");
    assert_non_null(f);
    unsigned long long size = 0;
    assert_int_equal(fscanf(f, "%llu", &size), 1);
    fclose(f);
    FILE *in = fopen(head, "rb"), *o = fopen(out, "wb");
    assert_non_null(in);
    assert_non_null(o);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, o), n);
    fclose(in);
    assert_int_equal(fclose(o), 0);
    assert_int_equal(truncate(out, (off_t)size), 0);
    return out;
}

/* ---- safetensors writer ---- */
typedef struct tu_st_tensor {
    const char *name;
    const char *dtype; /* safetensors string */
    int n_dims;
    uint64_t shape[8];
} tu_st_tensor;

static inline uint64_t tu_st_bytes(const tu_st_tensor *t)
{
    vf_dtype dt = vf_dtype_from_safetensors(t->dtype);
    uint64_t n = 1, b = 0;
    for (int i = 0; i < t->n_dims; i++)
        n *= t->shape[i];
    assert_int_equal(vf_dtype_bytes(dt, n, &b), VF_OK);
    return b;
}

/* Writes a valid safetensors file; data is zeros (sparse). Returns data bytes. */
static inline uint64_t tu_write_safetensors(const char *path, const tu_st_tensor *ts, size_t n)
{
    size_t cap = 256 + n * 256, len = 0;
    char *h = malloc(cap);
    assert_non_null(h);
    len += (size_t)snprintf(h + len, cap - len, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t b = tu_st_bytes(&ts[i]);
        len += (size_t)snprintf(h + len, cap - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", ts[i].name, ts[i].dtype);
        for (int d = 0; d < ts[i].n_dims; d++)
            len += (size_t)snprintf(h + len, cap - len, d ? ",%llu" : "%llu", (unsigned long long)ts[i].shape[d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                (unsigned long long)(off + b));
        off += b;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8)
        h[len++] = ' '; /* the reference writer pads the header to 8 bytes */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (unsigned char)((uint64_t)len >> (8 * i));
    assert_int_equal(fwrite(lb, 1, 8, f), 8);
    assert_int_equal(fwrite(h, 1, len, f), len);
    assert_int_equal(fflush(f), 0);
    assert_int_equal(ftruncate(fileno(f), (off_t)(8 + len + off)), 0);
    fclose(f);
    free(h);
    return off;
}

/* A model's bytes and parameters stored as dt (vf_model_dtype_totals). */
static inline uint64_t dtype_bytes_of(const vf_model *m, vf_dtype dt)
{
    uint64_t b;
    vf_model_dtype_totals(m, dt, NULL, &b);
    return b;
}
static inline uint64_t dtype_params_of(const vf_model *m, vf_dtype dt)
{
    uint64_t p;
    vf_model_dtype_totals(m, dt, &p, NULL);
    return p;
}

#endif
