/* hfconfig.c — placeholder until config.json architectures land (issue 3). */
#include "internal.h"

vf_status vf__hfconfig_read_text(vf_model *m, const char *text, size_t len, const char *path, vf_error *err)
{
    (void)m, (void)text, (void)len;
    return vf__err(err, VF_EUNSUPPORTED, path, "config.json reader not built yet");
}

vf_status vf__hfconfig_parse_hparams(vf_hparams *hp, json_t *cfg, const char *path, vf_error *err)
{
    (void)hp, (void)cfg;
    return vf__err(err, VF_EUNSUPPORTED, path, "config.json reader not built yet");
}
