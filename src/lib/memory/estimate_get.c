/* estimate_get.c — an estimate as the public header hands it out: made,
 * freed, and read field by field (VF_ESTIMATE_FIELDS). */
#include "memory/memory.h"

#include <stdlib.h>

vf_estimate *vf_estimate_new(void) { return calloc(1, sizeof(vf_estimate)); }

void vf_estimate_free(vf_estimate *e) { free(e); }

/* A field of NULL reads as zero (or "" for strings) rather than crashing. */
static const vf_estimate zero_estimate;
#define VF_X_(type, name, what) \
    type vf_estimate_##name(const vf_estimate *e) { return (e ? e : &zero_estimate)->name; }
VF_ESTIMATE_FIELDS(VF_X_)
#undef VF_X_

size_t vf_estimate_assumption_count(const vf_estimate *e) { return e ? e->n_assumptions : 0; }

const char *vf_estimate_assumption(const vf_estimate *e, size_t i)
{
    return e && i < e->n_assumptions ? e->assumptions[i] : NULL;
}

size_t vf_estimate_explain_count(const vf_estimate *e) { return e ? e->n_explain : 0; }

const char *vf_estimate_explain(const vf_estimate *e, size_t i) { return e && i < e->n_explain ? e->explain[i] : NULL; }

uint64_t vf_estimate_device_buffer(const vf_estimate *e, uint32_t i, vf_devbuf which)
{
    if (!e || i >= e->rb_devices || i >= VF_MAX_SPLIT || (unsigned)which >= VF_DEVBUF_COUNT)
        return 0;
    return e->rb_dev[i][which];
}
