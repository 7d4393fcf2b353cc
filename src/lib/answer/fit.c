/* fit.c — vf_fit_run: does it fit, with what headroom, the longest context and
 * largest batch, the fewest GPUs, and (when it does not fit) the advice. The
 * searches are in fit_search.c, the advice in fit_advice.c. */
#include "answer/fit_internal.h"

#include <stdio.h>
#include <string.h>

void vf_estimate_opts_spread(const vf_model *m, vf_estimate_opts *o, uint32_t n)
{
    if (m && o)
        vf__fit_spread(m, o, n, 8); /* a data-centre node; fit takes the GPU's own */
}

vf_status vf_fit_needed_bytes(const vf_model *m, const vf_estimate_opts *o, vf_estimate_fn fn, uint64_t *needed,
                              vf_error *err)
{
    if (!m || !o || !needed)
        return vf__err(err, VF_EINVAL, "", "needed bytes needs a model and options");
    vf_estimate *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vf__fit_ctx c = {.m = m, .fn = fn ? fn : vf_estimate_run, .scratch = scratch};
    *needed = vf__fit_needed(&c, o, 0);
    free(scratch);
    return VF_OK;
}

vf_status vf_fit_run(const vf_model *m, const vf_fit_opts *opts, vf_fit *out, vf_error *err)
{
    if (!m || !opts || !out)
        return vf__err(err, VF_EINVAL, "", "fit needs a model, options and a result");
    memset(out, 0, sizeof *out);
    if (!opts->gpu_bytes)
        return vf__err(err, VF_EINVAL, "", "fit needs the gpu's memory");
    vf_estimate *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vf__fit_ctx c = {.m = m, .fn = opts->estimate ? opts->estimate : vf_estimate_run, .scratch = scratch};
    uint32_t per_node = vf__fit_per_node(opts);
    uint32_t n = opts->gpus ? opts->gpus : opts->nodes ? opts->nodes * per_node : 1;
    if (n > 4096)
        n = 4096;
    vf_estimate_opts o = opts->est;
    if (!o.infer.gpu_name[0])
        vf__fit_name_gpu(&o, opts->gpu);
    vf__fit_spread(m, &o, n, per_node);
    out->gpus_per_node = per_node;
    out->nodes = opts->nodes ? opts->nodes : n / per_node + (n % per_node != 0);

    uint64_t needed = 0;
    int r = vf__fit_try(&c, &o, opts->gpu_bytes, &needed, err);
    if (r < 0) {
        free(scratch);
        return (vf_status)-r;
    }
    out->est = *scratch;
    out->fits = r == 1;
    out->gpu_bytes = opts->gpu_bytes;
    c.base_context = scratch->context;
    c.base_batch = scratch->batch;
    uint64_t need = vf__fit_needed(&c, &o, opts->gpu_bytes);
    if (need)
        needed = need;
    out->needed_bytes = needed;
    /* saturating: either figure may be near 2^64 for absurd knobs */
    uint64_t hi = opts->gpu_bytes > needed ? opts->gpu_bytes - needed : needed - opts->gpu_bytes;
    int64_t mag = hi > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)hi;
    out->headroom_bytes = opts->gpu_bytes >= needed ? mag : -mag;
    vf_speed_bounds(m, &o, &out->est, opts->gpu, n, &out->speed);

    if (!opts->no_search) {
        /* a network by its graph has no context; its batch is the search */
        if (!m->graph)
            out->max_context = vf__fit_max_context(&c, &o, opts->gpu_bytes, &out->max_context_capped);
        out->max_batch = vf__fit_max_batch(&c, &o, opts->gpu_bytes, &out->max_batch_capped);
        vf__gpu_plan plan;
        if (vf__fit_min_gpus(&c, &opts->est, opts->gpu_bytes, per_node, &plan)) {
            out->min_gpus = plan.gpus;
            out->min_tp = plan.tp;
            out->min_pp = plan.pp;
            out->min_dp = plan.dp;
            out->min_zero = plan.zero;
            out->min_nodes = plan.nodes;
            snprintf(out->parallelism, sizeof out->parallelism, "%s", plan.words);
        }
        if (!out->fits)
            vf__fit_advise(&c, &o, opts, out);
    }
    free(scratch);
    return VF_OK;
}
