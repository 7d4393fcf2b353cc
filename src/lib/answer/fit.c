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

vf_status vf_estimate_needed_bytes(const vf_model *m, const vf_estimate_opts *o, uint64_t *needed, vf_error *err)
{
    return vf__fit_needed_bytes(m, o, NULL, needed, err);
}

vf_status vf__fit_needed_bytes(const vf_model *m, const vf_estimate_opts *o, vf_estimate_fn fn, uint64_t *needed,
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

/* The suggestions' knobs point at copies the fit owns, not at the caller's
 * strings: what a fit hands out lives as long as the fit (vramfit.h). */
static const char *own_copy(char *dst, size_t cap, const char *src)
{
    if (!src)
        return NULL;
    snprintf(dst, cap, "%s", src);
    return dst;
}

static void own_strings(vf_fit *out, const vf_estimate_opts *o)
{
    const char *d = own_copy(out->draft, sizeof out->draft, o->draft);
    const char *p = own_copy(out->mmproj, sizeof out->mmproj, o->mmproj);
    const char *g = own_copy(out->graph_inputs, sizeof out->graph_inputs, o->graph_inputs);
    const char *fz = own_copy(out->graph_freeze, sizeof out->graph_freeze, o->graph_freeze);
    for (size_t i = 0; i < out->n_suggestions; i++) {
        vf_estimate_opts *so = &out->suggestions[i].opts;
        if (so->draft == o->draft)
            so->draft = d;
        if (so->mmproj == o->mmproj)
            so->mmproj = p;
        if (so->graph_inputs == o->graph_inputs)
            so->graph_inputs = g;
        if (so->graph_freeze == o->graph_freeze)
            so->graph_freeze = fz;
    }
}

vf_status vf_fit_run(const vf_model *m, const vf_fit_opts *opts, vf_fit *out, vf_error *err)
{
    return vf__fit_run_with(m, opts, NULL, out, err);
}

vf_status vf__fit_run_with(const vf_model *m, const vf_fit_opts *opts, vf_estimate_fn fn, vf_fit *out, vf_error *err)
{
    if (!m || !opts || !out)
        return vf__err(err, VF_EINVAL, "", "fit needs a model, options and a result");
    memset(out, 0, sizeof *out);
    if ((opts->est.draft && strlen(opts->est.draft) >= sizeof out->draft) ||
        (opts->est.mmproj && strlen(opts->est.mmproj) >= sizeof out->mmproj) ||
        (opts->est.graph_inputs && strlen(opts->est.graph_inputs) >= sizeof out->graph_inputs) ||
        (opts->est.graph_freeze && strlen(opts->est.graph_freeze) >= sizeof out->graph_freeze))
        return vf__err(err, VF_EINVAL, "", "a draft, projector, input binding or freeze list of 4096 bytes or more");
    if (!opts->gpu_bytes)
        return vf__err(err, VF_EINVAL, "", "fit needs the gpu's memory");
    vf_estimate *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vf__fit_ctx c = {.m = m, .fn = fn ? fn : vf_estimate_run, .scratch = scratch};
    uint32_t per_node = vf__fit_per_node(opts);
    uint32_t n = opts->gpus ? opts->gpus : opts->nodes ? opts->nodes * per_node : 1;
    if (n > 4096)
        n = 4096;
    vf_estimate_opts o = opts->est;
    if (!o.infer.gpu_name[0])
        vf__fit_name_gpu(&o, opts->gpu);
    /* the fewest-GPUs search starts from the knobs as asked, on the device asked */
    vf_estimate_opts asked = o;
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

    uint32_t run = opts->no_search ? 0 : opts->searches ? opts->searches : ~VF_FIT_SEARCH_IF_FITS;
    if ((run & VF_FIT_SEARCH_IF_FITS) && !out->fits)
        run = 0;
    if (run) {
        /* a network by its graph has no context; its batch is the search */
        if (!m->graph && (run & VF_FIT_SEARCH_CONTEXT))
            out->max_context = vf__fit_max_context(&c, &o, opts->gpu_bytes, &out->max_context_capped);
        if (run & VF_FIT_SEARCH_BATCH)
            out->max_batch = vf__fit_max_batch(&c, &o, opts->gpu_bytes, &out->max_batch_capped);
        vf__gpu_plan plan;
        if ((run & VF_FIT_SEARCH_GPUS) && vf__fit_min_gpus(&c, &asked, opts->gpu_bytes, per_node, &plan)) {
            out->min_gpus = plan.gpus;
            out->min_tp = plan.tp;
            out->min_pp = plan.pp;
            out->min_dp = plan.dp;
            out->min_zero = plan.zero;
            out->min_nodes = plan.nodes;
            snprintf(out->parallelism, sizeof out->parallelism, "%s", plan.words);
        }
        if (!out->fits && (run & VF_FIT_SEARCH_ADVICE))
            vf__fit_advise(&c, &o, opts, out);
    }
    free(scratch);
    own_strings(out, &opts->est);
    return VF_OK;
}
