/* fuzz_util.h — what the file-reading harnesses share: the input written
 * out whole, an anonymous memfd opened by its /proc path as a real file
 * would be, and the checks after a reader ran. */
#ifndef VF_FUZZ_UTIL_H
#define VF_FUZZ_UTIL_H

#include "model/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes all size bytes (write may take fewer at a time); false on error. */
static inline bool fuzz_write_all(int fd, const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            return false;
        off += (size_t)w;
    }
    return true;
}

/* A memfd named name holding the input, its /proc path in path; -1 when it
 * cannot be made or filled. Needs _GNU_SOURCE (memfd_create). */
static inline int fuzz_memfd(const char *name, const uint8_t *data, size_t size, char *path, size_t path_size)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (!fuzz_write_all(fd, data, size)) {
        close(fd);
        return -1;
    }
    snprintf(path, path_size, "/proc/self/fd/%d", fd);
    return fd;
}

/* After a reader ran on m: a failure always carries a message; a success
 * goes on to the classification and totals a command would print. Frees m. */
static inline void fuzz_after_read(vf_model *m, vf_status st, const vf_error *err)
{
    if (st != VF_OK && err->msg[0] == '\0')
        __builtin_trap();
    if (st == VF_OK) {
        vf__model_classify(m);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
    }
    vf_model_free(m);
}

#endif
