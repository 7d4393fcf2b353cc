/* fuzz_overrides.c — libFuzzer harness: the input (NUL-terminated, lines as
 * -ot entries) through llama.cpp's tensor-override parser for 1 to 4 GPUs
 * (the first byte picks), then every rule matched against a few GGUF tensor
 * names: an error carries a message; a parsed rule's device is the host or
 * one of the GPUs. */
#include "memory/llamacpp/tensor_place.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size || size > 8192)
        return 0;
    uint32_t n_dev = 1 + data[0] % 4;
    char *spec = malloc(size);
    if (!spec)
        return 0;
    memcpy(spec, data + 1, size - 1);
    spec[size - 1] = '\0';
    vf__lc_overrides *ov = calloc(1, sizeof *ov);
    if (!ov) {
        free(spec);
        return 0;
    }
    vf_error err = {0};
    if (vf__lc_overrides_parse(spec, n_dev, ov, &err) != VF_OK) {
        if (!memchr(err.msg, '\0', sizeof err.msg) || !err.msg[0])
            abort();
    } else {
        static const char *const names[] = {"blk.0.ffn_up_exps.weight", "blk.17.attn_q.weight", "output.weight",
                                            "token_embd.weight"};
        for (uint32_t i = 0; i < ov->n; i++) {
            if (ov->rule[i].dev < -1 || ov->rule[i].dev >= (int)n_dev)
                abort();
            for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
                (void)regexec(&ov->rule[i].re, names[k], 0, NULL, 0);
        }
        vf__lc_overrides_free(ov);
    }
    free(ov);
    free(spec);
    return 0;
}
