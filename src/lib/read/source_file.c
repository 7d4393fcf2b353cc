/* source_file.c — the local file system as a byte source (pread). */
#include "read/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct file_src {
    vf__src base;
    int fd;
} file_src;

static vf_status file_pread(vf__src *s, void *buf, size_t n, uint64_t off, vf_error *err)
{
    return vf__pread_full(((file_src *)s)->fd, buf, n, off, s->path, err);
}

static void file_close(vf__src *s)
{
    close(((file_src *)s)->fd);
    free(s);
}

static const vf__src_ops file_src_ops = {file_pread, file_close};

static vf_status file_open(vf__fs *fs, const char *path, vf__src **out, vf_error *err)
{
    (void)fs;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return vf__err(err, errno == ENOENT ? VF_ENOENT : VF_EIO, path, "cannot open: %s", strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        vf_status st = vf__err(err, VF_EIO, path, "cannot stat: %s", strerror(errno));
        close(fd);
        return st;
    }
    file_src *f = calloc(1, sizeof *f);
    if (!f) {
        close(fd);
        return vf__err(err, VF_ENOMEM, path, "out of memory");
    }
    f->base.ops = &file_src_ops;
    f->base.path = path;
    f->base.size = (uint64_t)sb.st_size;
    f->fd = fd;
    *out = &f->base;
    return VF_OK;
}

static bool file_exists(vf__fs *fs, const char *path)
{
    (void)fs;
    return vf__is_file(path);
}

static vf_status file_read_small(vf__fs *fs, const char *path, size_t cap, char **out, size_t *len, vf_error *err)
{
    (void)fs;
    return vf__read_small_file(path, cap, out, len, err);
}

static const vf__fs_ops local_ops = {file_open, file_exists, file_read_small, NULL};
vf__fs vf__local_fs = {&local_ops};
