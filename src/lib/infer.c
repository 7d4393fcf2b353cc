/* infer.c — placeholder until the inference memory model lands (issue 4). */
#include "internal.h"

vf_status vf__infer_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    (void)m, (void)o, (void)out;
    return vf__err(err, VF_EUNSUPPORTED, "", "inference estimate not built yet");
}
