/* memory.h — what every part of the memory model shares (hidden): the notes
 * an estimate carries and the entry points of each model. */
#ifndef VF_MEMORY_H
#define VF_MEMORY_H

#include "model/model.h"

/* Appends "fmt" to e->assumptions / e->explain (silently drops past VF_MAX_NOTES). */
VF_HIDDEN void vf__assume(vf_estimate *e, const char *fmt, ...) VF_PRINTF(2, 3);
VF_HIDDEN void vf__explain(vf_estimate *e, const char *fmt, ...) VF_PRINTF(2, 3);
VF_HIDDEN vf_status vf__infer_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);
VF_HIDDEN vf_status vf__train_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);
/* The memory model on open models (estimate.c); vf_estimate_run opens the
 * serving extras first (answer/estimate_run.c). */
VF_HIDDEN vf_status vf__estimate_core(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err);

#endif
