/* sweep.c — vf_sweep_run: the memory model at many values of context length
 * or batch, each point a full estimate (and, where the engine sizes itself
 * from the device, fit's search for the least device it fits in), so a chart
 * drawn from it shows exactly what estimate and fit answer at each value. */
#include "answer/fit_internal.h"

#include <string.h>

#define CONTEXT_FIRST 128u
#define CONTEXT_NO_LIMIT ((uint64_t)1 << 17) /* when the model states no context length */
#define BATCH_LAST 512u

size_t vf_sweep_values(const vf_model *m, const vf_estimate_opts *o, vf_sweep_axis axis, uint64_t *values, size_t cap)
{
    (void)o;
    if (!values)
        return 0;
    if (cap > VF_SWEEP_MAX)
        cap = VF_SWEEP_MAX;
    size_t n = 0;
    if (axis == VF_SWEEP_BATCH) {
        for (uint64_t b = 1; b <= BATCH_LAST && n < cap; b *= 2)
            values[n++] = b;
        return n;
    }
    const vf_hparams *hp = m ? vf_model_hparams(m) : NULL;
    uint64_t last = hp && hp->context_length ? hp->context_length : CONTEXT_NO_LIMIT;
    for (uint64_t c = CONTEXT_FIRST; c < last && n < cap; c *= 2)
        values[n++] = c;
    if (n < cap)
        values[n++] = last; /* the model's own limit closes the curve */
    return n;
}

/* One point: the estimate on the device (or on the least that fits) and what a device needs. */
static void sweep_point(vf__fit_ctx *c, const vf_estimate_opts *base, vf_sweep_axis axis, uint64_t value,
                        uint64_t gpu_bytes, vf_sweep_point *p)
{
    vf_estimate_opts o = *base;
    if (axis == VF_SWEEP_BATCH)
        vf__set_batch(&o, value);
    else
        vf__set_context(&o, value);
    memset(p, 0, sizeof *p);
    p->value = value;
    p->needed_bytes = vf__fit_needed(c, &o, gpu_bytes);
    uint64_t on = gpu_bytes ? gpu_bytes : p->needed_bytes ? p->needed_bytes : (uint64_t)80 << 30;
    vf_error e = {0};
    int r = vf__fit_try(c, &o, on, NULL, &e);
    if (r < 0) {
        vf_status st = (vf_status)-r;
        memset(p, 0, sizeof *p);
        p->value = value;
        p->status = st;
        return;
    }
    const vf_estimate *x = c->scratch;
    p->starts = x->starts;
    p->fits = gpu_bytes && p->needed_bytes && p->needed_bytes <= gpu_bytes;
    p->per_gpu_bytes = x->per_gpu_bytes;
    p->weights = x->weights;
    p->kv_cache = x->kv_cache;
    p->activations = x->activations;
    p->gradients = x->gradients;
    p->optimizer = x->optimizer;
    p->overhead = x->overhead;
}

vf_status vf_sweep_run(const vf_model *m, const vf_estimate_opts *o, vf_sweep_axis axis, const uint64_t *values,
                       size_t n, uint64_t gpu_bytes, vf_sweep_point *out, vf_error *err)
{
    if (!m || !o || (!values && n) || (!out && n))
        return vf__err(err, VF_EINVAL, "", "sweep needs a model, options, values and room for the points");
    if (n > VF_SWEEP_MAX)
        return vf__err(err, VF_EINVAL, "", "a sweep takes at most %d values", VF_SWEEP_MAX);
    if (axis != VF_SWEEP_CONTEXT && axis != VF_SWEEP_BATCH)
        return vf__err(err, VF_EINVAL, "", "a sweep runs over context or batch");
    for (size_t i = 0; i < n; i++)
        if (values[i] == 0)
            return vf__err(err, VF_EINVAL, "", "sweep values must be positive");
    vf_estimate *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vf__fit_ctx c = {.m = m, .fn = vf_estimate_run, .scratch = scratch};
    for (size_t i = 0; i < n; i++)
        sweep_point(&c, o, axis, values[i], gpu_bytes, &out[i]);
    free(scratch);
    return VF_OK;
}
