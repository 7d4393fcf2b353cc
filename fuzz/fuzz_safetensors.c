/* fuzz_safetensors.c — libFuzzer harness: arbitrary bytes as a .safetensors
 * file (an anonymous memfd, opened by its /proc path as a real file would
 * be) through the header reader, then the totals a command would print. */
#define _GNU_SOURCE
#include "internal.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    vf_model *m = vf__model_new(VF_FORMAT_SAFETENSORS, path);
    if (m) {
        vf_error err = {0};
        vf_status st = vf__safetensors_read(m, path, &err);
        /* a failure always carries a message; success leaves none */
        if (st != VF_OK && err.msg[0] == '\0')
            __builtin_trap();
        if (st == VF_OK) {
            vf__model_classify(m);
            vf_model_totals t;
            vf_model_totals_get(m, &t);
        }
        vf_model_free(m);
    }
    close(fd);
    return 0;
}
