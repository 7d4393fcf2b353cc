/* fuzz_onnx.c — libFuzzer harness for the ONNX reader and the graph memory
 * model: the input becomes a memfd read as a .onnx file (wire format, the
 * schema, the graph's order), then shapes are inferred and an inference and
 * a training estimate run at batch 2. Seeds: fuzz/corpus/onnx/. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_util.h"
#include "model/model.h"
#include "read/readers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfd("fuzz.onnx", data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    vf_model *m = vf__model_new(VF_FORMAT_ONNX, path);
    vf_error err;
    if (m && vf__onnx_read(m, path, &err) == VF_OK) {
        /* inline initializers lie inside the input; nothing was read past it */
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *x = vf_model_tensor(m, i);
            if (x->file == 0 && (x->offset > size || x->n_bytes > size - x->offset))
                __builtin_trap();
        }
        vf_estimate_opts o;
        vf_estimate_opts_init(&o);
        o.infer.batch = 2;
        vf_estimate *e = vf_estimate_new();
        if (e) {
            vf_estimate_run(m, &o, e, &err);
            o.mode = VF_MODE_TRAINING;
            o.train.precision = VF_PREC_FP32;
            vf_estimate_run(m, &o, e, &err);
        }
        vf_estimate_free(e);
    }
    vf_model_free(m);
    close(fd);
    return 0;
}
