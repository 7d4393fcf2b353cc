/* gguf.c — placeholder until the GGUF reader lands (issue 2). */
#include "internal.h"

vf_status vf__gguf_read(vf_model *m, const char *path, vf_error *err)
{
    (void)m;
    return vf__err(err, VF_EUNSUPPORTED, path, "gguf reader not built yet");
}
