/* source.h — the byte sources the bounded readers read through.
 *
 * A reader never opens a file itself: it asks a file set (vf__fs) for a
 * source (vf__src) and reads exact byte ranges from it. The local file
 * system is one file set (vf__local_fs); a Hub repository read by HTTP
 * ranges is another (src/lib/hub/), made by the opener only. So the
 * readers' checks, and the fuzzing they have, cover every origin alike. */
#ifndef VF_SOURCE_H
#define VF_SOURCE_H

#include "model/model.h"

typedef struct vf__src vf__src;
typedef struct vf__fs vf__fs;

typedef struct vf__src_ops {
    /* exactly n bytes at off (off + n ≤ size), or an error */
    vf_status (*pread)(vf__src *s, void *buf, size_t n, uint64_t off, vf_error *err);
    void (*close)(vf__src *s);
} vf__src_ops;

struct vf__src {
    const vf__src_ops *ops;
    const char *path; /* labels errors */
    uint64_t size;    /* the whole file's size in bytes */
};

/* From a file's first bytes (got of them, the file being total bytes long),
 * how many bytes from offset 0 its reader will read: a prefetch hint. */
typedef uint64_t (*vf__need_fn)(const unsigned char *prefix, size_t got, uint64_t total);

typedef struct vf__fs_ops {
    vf_status (*open)(vf__fs *fs, const char *path, vf__src **out, vf_error *err);
    bool (*exists)(vf__fs *fs, const char *path);
    /* a whole small file (≤ cap bytes), NUL-terminated, malloc'd */
    vf_status (*read_small)(vf__fs *fs, const char *path, size_t cap, char **out, size_t *len, vf_error *err);
    /* a hint that these files' heads are read next (NULL: no prefetching) */
    void (*prefetch)(vf__fs *fs, const char *const *paths, size_t n, vf__need_fn need);
} vf__fs_ops;

struct vf__fs {
    const vf__fs_ops *ops;
};

/* The local file system. */
extern VF_HIDDEN vf__fs vf__local_fs;

static inline vf_status vf__src_pread(vf__src *s, void *buf, size_t n, uint64_t off, vf_error *err)
{
    return s->ops->pread(s, buf, n, off, err);
}
static inline void vf__src_close(vf__src *s)
{
    if (s)
        s->ops->close(s);
}
static inline vf_status vf__fs_open(vf__fs *fs, const char *path, vf__src **out, vf_error *err)
{
    return fs->ops->open(fs, path, out, err);
}
static inline bool vf__fs_exists(vf__fs *fs, const char *path) { return fs->ops->exists(fs, path); }
static inline vf_status vf__fs_read_small(vf__fs *fs, const char *path, size_t cap, char **out, size_t *len,
                                          vf_error *err)
{
    return fs->ops->read_small(fs, path, cap, out, len, err);
}
static inline void vf__fs_prefetch(vf__fs *fs, const char *const *paths, size_t n, vf__need_fn need)
{
    if (fs->ops->prefetch)
        fs->ops->prefetch(fs, paths, n, need);
}

#endif
