/* fuzz_gguf.c — libFuzzer harness for the GGUF reader: the input becomes a
 * memfd and is read as a .gguf file (header, metadata, tensor table,
 * hyper-parameters, classification and totals). Seeds: fuzz/corpus/gguf/. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "model/model.h"
#include "read/readers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd("fuzz.gguf", data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    vf_model *m = vf__model_new(VF_FORMAT_GGUF, path);
    vf_error err;
    if (m && vf__gguf_read(m, &vf__local_fs, path, &err) == VF_OK) {
        vf__model_classify(m);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        /* every byte count the reader accepted lies inside the input */
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *x = vf_model_tensor(m, i);
            if (x->offset > size || x->n_bytes > size - x->offset)
                __builtin_trap();
        }
    }
    vf_model_free(m);
    close(fd);
    return 0;
}
