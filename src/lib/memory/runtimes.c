/* runtimes.c — the engines the memory model prices, one row each: the name
 * --runtime takes and its other spellings, the inference profile, and what
 * the rest of the library asks of an engine. A new runtime is its folder
 * under memory/ and one row here. */
#include "memory/infer.h"

#include <strings.h>

static const vf__runtime runtimes[] = {
    {.id = VF_RUNTIME_GENERIC, .name = "generic", .infer = vf__infer_generic, .allocator_margin = true,
     .metal = true},
    {.id = VF_RUNTIME_TRANSFORMERS, .name = "transformers", .aliases = {"hf", "pytorch"},
     .infer = vf__infer_transformers, .allocator_margin = true, .metal = true},
    {.id = VF_RUNTIME_VLLM, .name = "vllm", .infer = vf__infer_vllm, .sizes_extras = true},
    {.id = VF_RUNTIME_LLAMACPP, .name = "llamacpp", .aliases = {"llama.cpp"}, .infer = vf__infer_llamacpp,
     .extras_on_first_gpu = true, .metal = true},
    {.id = VF_RUNTIME_LITGPT, .name = "litgpt", .infer = vf__infer_litgpt, .allocator_margin = true, .metal = true},
};

const vf__runtime *vf__runtime_of(vf_runtime r)
{
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (runtimes[i].id == r)
            return &runtimes[i];
    return &runtimes[0]; /* an unknown value is priced as the plain sum, as before the table */
}

size_t vf_runtime_count(void) { return sizeof runtimes / sizeof runtimes[0]; }

const char *vf_runtime_name(vf_runtime r) { return vf__runtime_of(r)->name; }

vf_status vf_runtime_parse(const char *name, vf_runtime *out)
{
    for (size_t i = 0; name && i < sizeof runtimes / sizeof runtimes[0]; i++) {
        bool match = !strcasecmp(name, runtimes[i].name);
        for (size_t k = 0; !match && k < VF__RUNTIME_ALIASES && runtimes[i].aliases[k]; k++)
            match = !strcasecmp(name, runtimes[i].aliases[k]);
        if (match) {
            *out = runtimes[i].id;
            return VF_OK;
        }
    }
    return VF_EINVAL;
}

bool vf_runtime_runs_on(vf_runtime r, const vf_gpu *g)
{
    /* every engine runs on CUDA and ROCm devices; Apple's Metal only where it has a backend */
    return g && (vf__runtime_of(r)->metal || !g->vendor || strcasecmp(g->vendor, "apple"));
}
