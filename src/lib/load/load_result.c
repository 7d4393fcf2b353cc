/* load_result.c — a load's report as the public header hands it out: made,
 * freed, and read field by field (VF_LOAD_RESULT_FIELDS) and per device. */
#include "load/load_internal.h"

#include <stdlib.h>

vf_load_result *vf_load_result_new(void) { return calloc(1, sizeof(vf_load_result)); }

void vf_load_result_free(vf_load_result *r) { free(r); }

static const vf_load_result zero_result;
#define VF_X_(type, name, what) \
    type vf_load_result_##name(const vf_load_result *r) { return (r ? r : &zero_result)->name; }
VF_LOAD_RESULT_FIELDS(VF_X_)
#undef VF_X_

size_t vf_load_result_per_device_count(const vf_load_result *r) { return r ? r->n_devices : 0; }

const vf_load_device *vf_load_result_per_device(const vf_load_result *r, size_t i)
{
    return r && i < r->n_devices ? &r->devices[i] : NULL;
}
