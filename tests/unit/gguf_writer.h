/* gguf_writer.h — writes GGUF files for tests, the corrupt-input generator,
 * the fuzz seeds and the benchmark: a header with any metadata and a tensor
 * table of any ggml types, the data left as a sparse hole (ftruncate).
 *
 * Plain C, no test framework: functions return 0 on success. The byte
 * layout follows ggml docs/gguf.md; block sizes come from
 * tests/reference/prior-art/peers-loading.md §2.2, kept here apart from the
 * library's own table so that tests check one against the other. */
#ifndef VF_GGUF_WRITER_H
#define VF_GGUF_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    GW_U8, GW_I8, GW_U16, GW_I16, GW_U32, GW_I32, GW_F32, GW_BOOL, GW_STRING, GW_ARRAY, GW_U64, GW_I64, GW_F64
};

/* ggml type ids (peers-loading.md §2.2) */
enum {
    GW_T_F32 = 0, GW_T_F16 = 1, GW_T_Q4_0 = 2, GW_T_Q8_0 = 8, GW_T_Q4_K = 12, GW_T_Q5_K = 13, GW_T_Q6_K = 14,
    GW_T_BF16 = 30, GW_T_MXFP4 = 39
};

/* Block facts of the types the tests use: {id, elements per block, bytes per block}. */
static const struct gw_type {
    uint32_t id, blck, bytes;
} gw_types[] = {{0, 1, 4},     {1, 1, 2},      {2, 32, 18},   {3, 32, 20},  {6, 32, 22},
                {7, 32, 24},   {8, 32, 34},    {10, 256, 84}, {11, 256, 110}, {12, 256, 144},
                {13, 256, 176}, {14, 256, 210}, {30, 1, 2},    {39, 32, 17}};

/* Bytes of a tensor of ggml type id with ne[0..nd); 0 for a type not in the list. */
static inline uint64_t gw_type_bytes(uint32_t id, uint32_t nd, const uint64_t *ne)
{
    for (size_t i = 0; i < sizeof gw_types / sizeof gw_types[0]; i++) {
        if (gw_types[i].id != id)
            continue;
        uint64_t rows = 1;
        for (uint32_t d = 1; d < nd; d++)
            rows *= ne[d];
        return (nd ? ne[0] : 1) / gw_types[i].blck * gw_types[i].bytes * rows;
    }
    return 0;
}

/* A growing byte buffer: the header being built. */
typedef struct gw {
    unsigned char *buf;
    size_t len, cap;
    int oom;
} gw;

static inline void gw_raw(gw *w, const void *p, size_t n)
{
    if (w->len + n > w->cap) {
        size_t nc = w->cap ? w->cap : 4096;
        while (nc < w->len + n)
            nc *= 2;
        unsigned char *b = realloc(w->buf, nc);
        if (!b) {
            w->oom = 1;
            return;
        }
        w->buf = b;
        w->cap = nc;
    }
    memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static inline void gw_le(gw *w, uint64_t v, int n)
{
    unsigned char b[8];
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    gw_raw(w, b, (size_t)n);
}

static inline void gw_u8(gw *w, uint8_t v) { gw_le(w, v, 1); }
static inline void gw_u16(gw *w, uint16_t v) { gw_le(w, v, 2); }
static inline void gw_u32(gw *w, uint32_t v) { gw_le(w, v, 4); }
static inline void gw_u64(gw *w, uint64_t v) { gw_le(w, v, 8); }
static inline void gw_f32(gw *w, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    gw_u32(w, u);
}
static inline void gw_strn(gw *w, const char *s, size_t n)
{
    gw_u64(w, n);
    gw_raw(w, s, n);
}
static inline void gw_str(gw *w, const char *s) { gw_strn(w, s, strlen(s)); }

/* Magic, version and the two counts. */
static inline void gw_begin(gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gw_raw(w, "GGUF", 4);
    gw_u32(w, version);
    gw_u64(w, n_tensors);
    gw_u64(w, n_kv);
}

/* ---- metadata ---- */
static inline void gw_key(gw *w, const char *k, uint32_t type)
{
    gw_str(w, k);
    gw_u32(w, type);
}
static inline void gw_kv_str(gw *w, const char *k, const char *v)
{
    gw_key(w, k, GW_STRING);
    gw_str(w, v);
}
static inline void gw_kv_u32(gw *w, const char *k, uint32_t v)
{
    gw_key(w, k, GW_U32);
    gw_u32(w, v);
}
static inline void gw_kv_u16(gw *w, const char *k, uint16_t v)
{
    gw_key(w, k, GW_U16);
    gw_u16(w, v);
}
static inline void gw_kv_i32(gw *w, const char *k, int32_t v)
{
    gw_key(w, k, GW_I32);
    gw_u32(w, (uint32_t)v);
}
static inline void gw_kv_u64(gw *w, const char *k, uint64_t v)
{
    gw_key(w, k, GW_U64);
    gw_u64(w, v);
}
static inline void gw_kv_f32(gw *w, const char *k, float v)
{
    gw_key(w, k, GW_F32);
    gw_f32(w, v);
}
static inline void gw_kv_bool(gw *w, const char *k, int v)
{
    gw_key(w, k, GW_BOOL);
    gw_u8(w, (uint8_t)(v != 0));
}
static inline void gw_kv_arr_u32(gw *w, const char *k, const uint32_t *v, uint64_t n)
{
    gw_key(w, k, GW_ARRAY);
    gw_u32(w, GW_U32);
    gw_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        gw_u32(w, v[i]);
}
static inline void gw_kv_arr_bool(gw *w, const char *k, const uint8_t *v, uint64_t n)
{
    gw_key(w, k, GW_ARRAY);
    gw_u32(w, GW_BOOL);
    gw_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        gw_u8(w, v[i]);
}
static inline void gw_kv_arr_f32(gw *w, const char *k, uint64_t n)
{
    gw_key(w, k, GW_ARRAY);
    gw_u32(w, GW_F32);
    gw_u64(w, n);
    for (uint64_t i = 0; i < n; i++)
        gw_f32(w, -(float)i);
}
/* n token strings "tok<i>" (a tokenizer.ggml.tokens stand-in). */
static inline void gw_kv_tokens(gw *w, const char *k, uint64_t n)
{
    gw_key(w, k, GW_ARRAY);
    gw_u32(w, GW_STRING);
    gw_u64(w, n);
    char t[32];
    for (uint64_t i = 0; i < n; i++) {
        int len = snprintf(t, sizeof t, "tok%llu", (unsigned long long)i);
        gw_strn(w, t, (size_t)len);
    }
}

/* ---- tensors ---- */
typedef struct gw_tensor {
    const char *name;
    uint32_t type;   /* ggml type id */
    uint32_t n_dims;
    uint64_t ne[4];  /* ggml order: ne[0] innermost */
} gw_tensor;

static inline uint64_t gw_pad(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* One tensor info at a given offset (relative to the data section). */
static inline void gw_tensor_info(gw *w, const char *name, uint32_t type, uint32_t nd, const uint64_t *ne,
                                  uint64_t off)
{
    gw_str(w, name);
    gw_u32(w, nd);
    for (uint32_t d = 0; d < nd; d++)
        gw_u64(w, ne[d]);
    gw_u32(w, type);
    gw_u64(w, off);
}

/* Tensor infos with contiguous offsets (each tensor padded to align).
 * Returns the data section's size. */
static inline uint64_t gw_tensor_infos(gw *w, const gw_tensor *t, size_t n, uint64_t align)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        gw_tensor_info(w, t[i].name, t[i].type, t[i].n_dims, t[i].ne, off);
        off = gw_pad(off + gw_type_bytes(t[i].type, t[i].n_dims, t[i].ne), align);
    }
    return off;
}

/* Pads the header to align, writes it and extends the file by data_bytes
 * of zeros (a hole). Frees the buffer. Returns 0 on success. */
static inline int gw_finish(gw *w, const char *path, uint64_t align, uint64_t data_bytes)
{
    int rc = w->oom ? -1 : 0;
    if (align > 1)
        while (w->len % align)
            gw_u8(w, 0);
    FILE *f = fopen(path, "wb");
    if (!f)
        rc = -1;
    else {
        if (w->len && fwrite(w->buf, 1, w->len, f) != w->len)
            rc = -1;
        if (fflush(f) != 0 || ftruncate(fileno(f), (off_t)(w->len + data_bytes)) != 0)
            rc = -1;
        if (fclose(f) != 0)
            rc = -1;
    }
    free(w->buf);
    memset(w, 0, sizeof *w);
    return rc;
}

/* Writes the buffer as is (no padding, no data): for corrupt files. */
static inline int gw_finish_raw(gw *w, const char *path)
{
    return gw_finish(w, path, 1, 0);
}

#endif
