/* caller.c — a program that knows libvramfit only through its public header
 * and its shared library, as one built against an older header would: it
 * fills its option structs by memset and assignment (not the _init calls), so
 * every byte past the fields it names is zero, and reads results only through
 * their accessors (the result objects are opaque). */
#include "vramfit.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    vf_error err;
    memset(&err, 0, sizeof err);
    vf_model *m = NULL;
    if (vf_model_open("Qwen/Qwen3-8B", &m, &err) != VF_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    uint64_t bf16 = 0;
    vf_model_dtype_totals(m, VF_DTYPE_BF16, NULL, &bf16);
    vf_estimate_opts o;
    memset(&o, 0, sizeof o); /* zero = every default */
    o.infer.context = 8192;
    vf_estimate *e = vf_estimate_new();
    if (!e || vf_estimate_run(m, &o, e, &err) != VF_OK) {
        fprintf(stderr, "estimate: %s\n", err.msg);
        return 1;
    }
    vf_gpu_choice g;
    if (vf_gpu_lookup("RTX-4090", &g, &err) != VF_OK) {
        fprintf(stderr, "gpu: %s\n", err.msg);
        return 1;
    }
    vf_fit_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.est = o;
    fo.gpu_bytes = g.gpu.memory_bytes;
    fo.gpu = &g.gpu;
    vf_fit *f = vf_fit_new();
    if (!f || vf_fit_run(m, &fo, f, &err) != VF_OK) {
        fprintf(stderr, "fit: %s\n", err.msg);
        return 1;
    }
    printf("params %llu\nbf16_bytes %llu\nweights %llu\nkv_per_token %llu\nfits %d\ngpu %s\nfit_weights %llu\n"
           "assumptions %d\nsuggestions_past_end %d\n",
           (unsigned long long)t.params, (unsigned long long)bf16, (unsigned long long)vf_estimate_weights(e),
           (unsigned long long)vf_estimate_kv_bytes_per_token(e), vf_fit_fits(f), g.gpu.name,
           (unsigned long long)vf_estimate_weights(vf_fit_estimate(f)), vf_estimate_assumption_count(e) > 0,
           vf_fit_suggestion(f, vf_fit_suggestion_count(f)) == NULL);
    vf_fit_free(f);
    vf_estimate_free(e);
    vf_estimate_free(NULL); /* the free rule: NULL is a no-op */
    vf_model_free(m);
    return 0;
}
