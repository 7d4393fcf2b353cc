/* fit_get.c — a fit as the public header hands it out: made, freed, and read
 * field by field (VF_FIT_FIELDS), its estimate, speed and suggestions. */
#include "answer/fit_internal.h"

vf_fit *vf_fit_new(void) { return calloc(1, sizeof(vf_fit)); }

void vf_fit_free(vf_fit *f) { free(f); }

static const vf_fit zero_fit;
#define VF_X_(type, name, what) \
    type vf_fit_##name(const vf_fit *f) { return (f ? f : &zero_fit)->name; }
VF_FIT_FIELDS(VF_X_)
#undef VF_X_

const vf_estimate *vf_fit_estimate(const vf_fit *f) { return &(f ? f : &zero_fit)->est; }

const vf_speed *vf_fit_speed(const vf_fit *f) { return &(f ? f : &zero_fit)->speed; }

size_t vf_fit_suggestion_count(const vf_fit *f) { return f ? f->n_suggestions : 0; }

const vf_suggestion *vf_fit_suggestion(const vf_fit *f, size_t i)
{
    return f && i < f->n_suggestions ? &f->suggestions[i] : NULL;
}
