/* estimate_run.c — vf_estimate_run: the memory model for a model and its
 * serving extras named by their sources. The draft model (--draft) and the
 * projector (--mmproj) are opened here, where the readers may be called, and
 * handed to the memory model open (memory/estimate.c reads no file). */
#include "memory/infer.h"

#include <string.h>

static bool wanted(const char *src, const vf_model *open_already) { return !open_already && src && src[0]; }

static vf_status open_extra(const char *src, const char *opt, vf_model **out, vf_error *err)
{
    vf_error e = {0};
    if (vf_model_open(src, out, &e) != VF_OK)
        return vf__err(err, e.status ? e.status : VF_EINVAL, opt, "%s", e.msg);
    return VF_OK;
}

vf_status vf_estimate_run(const vf_model *m, const vf_estimate_opts *o, vf_estimate *out, vf_error *err)
{
    if (!m || !o || !out)
        return vf__err(err, VF_EINVAL, "", "estimate needs a model, options and a result");
    /* the extras are priced only where the memory model reaches them: inference
     * by a language model; the projector on llama.cpp alone */
    bool serving = o->mode == VF_MODE_INFERENCE && !m->graph;
    bool draft = serving && wanted(o->draft, o->draft_model);
    bool proj = serving && o->runtime == VF_RUNTIME_LLAMACPP && wanted(o->mmproj, o->mmproj_model);
    if (!draft && !proj)
        return vf__estimate_core(m, o, out, err);
    vf_estimate_opts run = *o;
    vf_model *d = NULL, *p = NULL;
    vf_status st = VF_OK;
    if (draft && (st = open_extra(o->draft, "--draft", &d, err)) == VF_OK)
        run.draft_model = d;
    if (st == VF_OK && proj && (st = open_extra(o->mmproj, "--mmproj", &p, err)) == VF_OK)
        run.mmproj_model = p;
    if (st == VF_OK)
        st = vf__estimate_core(m, &run, out, err);
    else
        memset(out, 0, sizeof *out);
    vf_model_free(d);
    vf_model_free(p);
    return st;
}
