/* train.c — placeholder until the training memory model lands (issue 5). */
#include "internal.h"

vf_status vf__train_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    (void)m, (void)o, (void)out;
    return vf__err(err, VF_EUNSUPPORTED, "", "training estimate not built yet");
}
