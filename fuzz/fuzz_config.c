/* fuzz_config.c — feeds bytes as config.json text to the config reader and
 * the architecture builders; every result must be a clean status. */
#include "model/model.h"
#include "read/readers.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > VF_MAX_CONFIG_BYTES)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    vf_model *m = vf__model_new(VF_FORMAT_CONFIG, "fuzz");
    if (m) {
        vf_error err = {0};
        if (vf__hfconfig_read_text(m, text, size, "config.json", &err) == VF_OK) {
            vf__model_classify(m);
            vf_model_totals t;
            vf_model_totals_get(m, &t);
        } else if (err.msg[0] == '\0') {
            abort(); /* every failure carries a message */
        }
        vf_model_free(m);
    }
    free(text);
    return 0;
}
