/* tensor_place.h — llama.cpp's tensor buffer overrides (tensor_place.c). */
#ifndef VF_MEMORY_LLAMACPP_TENSOR_PLACE_H
#define VF_MEMORY_LLAMACPP_TENSOR_PLACE_H

#include "memory/infer.h"

#include <regex.h>

#define VF__LC_MAX_OVERRIDES 600

typedef struct vf__lc_override {
    regex_t re;
    int dev; /* -1 host, else the GPU */
} vf__lc_override;

typedef struct vf__lc_overrides {
    uint32_t n;
    vf__lc_override rule[VF__LC_MAX_OVERRIDES];
} vf__lc_overrides;

/* spec: PATTERN=BUFT entries, one a line, in llama.cpp's order; n_dev the GPUs. */
VF_HIDDEN vf_status vf__lc_overrides_parse(const char *spec, uint32_t n_dev, vf__lc_overrides *ov, vf_error *err);
VF_HIDDEN void vf__lc_overrides_free(vf__lc_overrides *ov);
/* The first override whose pattern is found in t's GGUF name: true and *dev. */
VF_HIDDEN bool vf__lc_override_dev(const vf__lc_overrides *ov, const vf_model *m, const vf_tensor *t, int *dev);

/* A routed expert's stacked weights (llama.cpp's LLM_FFN_EXPS_REGEX,
 * "\\.ffn_(up|down|gate|gate_up)_(ch|)exps", in its GGUF name). */
VF_HIDDEN bool vf__lc_is_routed_expert(const vf_model *m, const vf_tensor *t);

#endif
