/* base.h — what every stage of libvramfit shares and users do not see:
 * errors, checked and saturating arithmetic, bounded file reads, JSON and
 * config keys, the embedded data files. */
#ifndef VF_BASE_H
#define VF_BASE_H

#include "vramfit.h"

#include <jansson.h>
#include <stdarg.h>

#define VF_HIDDEN __attribute__((visibility("hidden")))
#define VF_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Hard caps on what a file may make us allocate (beyond "fits in the file"). */
#define VF_MAX_TENSORS ((size_t)1 << 24)      /* 16 Mi tensors */
#define VF_MAX_NAME_LEN ((size_t)1 << 16)     /* one tensor name */
#define VF_SAFETENSORS_MAX_HEADER 100000000u  /* reference reader's MAX_HEADER_SIZE */
#define VF_MAX_SHARDS 100000u
#define VF_MAX_CONFIG_BYTES ((size_t)16 << 20) /* a config.json or index file */
#define VF_JSON_MAX_DEPTH 64

/* ---- errors ---- */
VF_HIDDEN vf_status vf__err(vf_error *err, vf_status st, const char *path, const char *fmt, ...)
    VF_PRINTF(4, 5);

/* ---- checked arithmetic: true on overflow ---- */
static inline bool vf__mul_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
static inline bool vf__add_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }

/* ---- saturating arithmetic (sat.c) ---- */
/* Bytes of n elements of dt, rounding a partial block up (ggml_row_size for a
 * whole row; never fails: saturates at UINT64_MAX). */
VF_HIDDEN uint64_t vf__dt_bytes(vf_dtype dt, uint64_t n);
/* a*b and a+b saturating at UINT64_MAX: estimates of absurd knobs stay finite. */
VF_HIDDEN uint64_t vf__smul(uint64_t a, uint64_t b);
VF_HIDDEN uint64_t vf__sadd(uint64_t a, uint64_t b);

/* ---- files ---- */
/* Reads exactly n bytes at off; VF_EIO on error, VF_EFORMAT on a short file. */
VF_HIDDEN vf_status vf__pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, vf_error *err);
/* Reads a whole small file (≤ cap bytes) into a NUL-terminated buffer. */
VF_HIDDEN vf_status vf__read_small_file(const char *path, size_t cap, char **out, size_t *len, vf_error *err);
VF_HIDDEN bool vf__is_dir(const char *path);
VF_HIDDEN bool vf__is_file(const char *path);
VF_HIDDEN bool vf__ends_with(const char *s, const char *suffix);
/* dir + "/" + name, malloc'd; NULL on overflow or no memory. */
VF_HIDDEN char *vf__path_join(const char *dir, const char *name);
/* Directory part of path ("." when none), malloc'd. */
VF_HIDDEN char *vf__path_dir(const char *path);
VF_HIDDEN bool vf__utf8_valid(const char *s, size_t n);
/* Grows *arr (capacity *cap, n used) to hold one more element; false on overflow or no memory. */
VF_HIDDEN bool vf__grow(void **arr, size_t *cap, size_t n, size_t elem);

/* ---- JSON helpers (jansson) ---- */
/* Parses text with duplicate keys rejected and nesting capped. */
VF_HIDDEN json_t *vf__json_parse(const char *text, size_t len, const char *path, vf_error *err);
VF_HIDDEN bool vf__json_u64(const json_t *v, uint64_t *out);
/* config.json keys (config_keys.c): */
/* First present key of a NULL-terminated list: 1 found, 0 absent or null, -1 wrong type. */
VF_HIDDEN int vf__cfg_u64(const json_t *o, uint64_t *out, ...);
VF_HIDDEN bool vf__cfg_bool(const json_t *o, const char *key, bool dflt);
VF_HIDDEN const char *vf__cfg_str(const json_t *o, const char *key);
/* True when the JSON array a (e.g. a config's layer index list) holds the integer i. */
VF_HIDDEN bool vf__cfg_in_list(const json_t *a, uint64_t i);

/* ---- embedded data (generated at build time from data/) ---- */
typedef struct vf__embedded_file {
    const char *name; /* path below data/, e.g. "models/Qwen__Qwen3-8B.json" */
    const char *data; /* NUL-terminated */
    size_t len;
} vf__embedded_file;
extern const vf__embedded_file vf__embedded_files[];
extern const size_t vf__embedded_count;
/* The embedded file with this name, or NULL. */
VF_HIDDEN const vf__embedded_file *vf__embedded_find(const char *name);

#endif
