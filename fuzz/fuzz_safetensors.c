/* fuzz_safetensors.c — libFuzzer harness: arbitrary bytes as a .safetensors
 * file (an anonymous memfd, opened by its /proc path as a real file would
 * be) through the header reader, then the totals a command would print. */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include "model/model.h"
#include "read/readers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd("fuzz.safetensors", data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    vf_model *m = vf__model_new(VF_FORMAT_SAFETENSORS, path);
    if (m) {
        vf_error err = {0};
        fuzz_after_read(m, vf__safetensors_read(m, &vf__local_fs, path, &err), &err);
    }
    close(fd);
    return 0;
}
