/* caller.c — a program that knows libvramfit only through its public header
 * and its shared library, as one built against an older header would: it
 * fills its option structs by memset and assignment (not the _init calls), so
 * every byte past the fields it names is zero, and reads results by field. */
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
    vf_estimate_opts o;
    memset(&o, 0, sizeof o); /* zero = every default */
    o.infer.context = 8192;
    vf_estimate e;
    if (vf_estimate_run(m, &o, &e, &err) != VF_OK) {
        fprintf(stderr, "estimate: %s\n", err.msg);
        return 1;
    }
    vf_gpu_choice g;
    if (vf_gpu_lookup("RTX-4090", &g, &err) != VF_OK) {
        fprintf(stderr, "gpu: %s\n", err.msg);
        return 1;
    }
    static vf_fit f; /* 128 KiB: not on the stack */
    vf_fit_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.est = o;
    fo.gpu_bytes = g.gpu.memory_bytes;
    fo.gpu = &g.gpu;
    if (vf_fit_run(m, &fo, &f, &err) != VF_OK) {
        fprintf(stderr, "fit: %s\n", err.msg);
        return 1;
    }
    printf("params %llu\nweights %llu\nkv_per_token %llu\nfits %d\ngpu %s\n", (unsigned long long)t.params,
           (unsigned long long)e.weights, (unsigned long long)e.kv_bytes_per_token, f.fits, g.gpu.name);
    vf_model_free(m);
    return 0;
}
