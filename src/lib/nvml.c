/* nvml.c — placeholder until NVML device listing lands (issue 7). */
#include "internal.h"

vf_status vf_local_gpus(vf_local_gpu *out, size_t cap, size_t *count, vf_error *err)
{
    (void)out, (void)cap;
    *count = 0;
    vf__err(err, VF_OK, "", "nvml support not built yet");
    return VF_OK;
}
