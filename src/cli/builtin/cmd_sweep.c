/* cmd_sweep.c — vramfit sweep MODEL [--over context|batch] [--values N,...]
 * [--gpu G[xN]] [knobs]: the memory model at many values of context length or
 * batch (vf_sweep_run), the figures the page draws its chart from. */
#include "cli.h"
#include "args/estimate_opts.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit sweep MODEL [--over context|batch] [--values N,N,...] [--gpu G[xN]] [knobs] [--train]\n"
           "                     [--json] [--units gib|gb]\n\n"
           "The memory per GPU at each value of one knob, each an estimate with the other knobs as\n"
           "given: what a device needs (as fit finds it: vLLM sizes its cache from the device, so\n"
           "the least device memory it starts on) and whether that fits the --gpu given.\n\n"
           "  --over A      context (default: tokens per sequence; training: sequence length) or batch\n"
           "                (sequences at once; training: micro-batch)\n"
           "  --values L    the values, comma-separated, at most 64 (default: context 128, 256, ...\n"
           "                up to the model's context length; batch 1, 2, 4, ... 512)\n"
           "  --gpu G[xN]   a catalog GPU or a size; GxN splits the model as in estimate and fit\n"
           "  --json        {\"over\", \"gpu\", \"gpu_count\", \"gpu_bytes\", \"points\": [{\"value\",\n"
           "                \"needed_bytes\", \"per_gpu_bytes\", \"fits\", \"starts\", \"components\"}]}\n"
           "knobs (as for 'vramfit estimate'):\n");
    vf_cli_infer_opts_help(stdout);
    vf_cli_train_opts_help(stdout);
}

/* "--values 512,1k,4096" → ascending-or-not positive counts, at most VF_SWEEP_MAX. */
static int parse_values(const char *s, uint64_t *v, size_t *n)
{
    *n = 0;
    char buf[1024];
    if (strlen(s) >= sizeof buf)
        return vf_usage_error("sweep", "--values: too long");
    memcpy(buf, s, strlen(s) + 1);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= VF_SWEEP_MAX)
            return vf_usage_error("sweep", "--values: at most %d values", VF_SWEEP_MAX);
        if (!vf_parse_u64(t, &v[*n]) || v[*n] == 0 || v[*n] > ((uint64_t)1 << 32))
            return vf_usage_error("sweep", "--values: '%s' is not a positive count", t);
        (*n)++;
    }
    if (!*n)
        return vf_usage_error("sweep", "--values: no values");
    return -1;
}

static json_t *point_json(const vf_sweep_point *p)
{
    json_t *j = json_object();
    json_object_set_new(j, "value", vf_json_u64(p->value));
    if (p->status != VF_OK) {
        json_object_set_new(j, "error", json_string(vf_strerror(p->status)));
        return j;
    }
    json_object_set_new(j, "needed_bytes", vf_json_u64(p->needed_bytes));
    json_object_set_new(j, "per_gpu_bytes", vf_json_u64(p->per_gpu_bytes));
    json_object_set_new(j, "fits", json_boolean(p->fits));
    json_object_set_new(j, "starts", json_boolean(p->starts));
    json_t *c = json_object();
    const char *names[] = {"weights", "kv_cache", "activations", "gradients", "optimizer", "overhead"};
    uint64_t vals[] = {p->weights, p->kv_cache, p->activations, p->gradients, p->optimizer, p->overhead};
    for (int i = 0; i < 6; i++)
        json_object_set_new(c, names[i], vf_json_u64(vals[i]));
    json_object_set_new(j, "components", c);
    return j;
}

static int print_json(const vf_cli_fit_args *a, const vf_gpu_choice *g, const char *over, const vf_sweep_point *p,
                      size_t n)
{
    json_t *j = json_object();
    json_object_set_new(j, "over", json_string(over));
    json_object_set_new(j, "mode", json_string(vf_cli_mode_name(&a->est)));
    json_object_set_new(j, "runtime", json_string(vf_cli_runtime_label(a->est.runtime, a->graph)));
    json_object_set_new(j, "gpu", g ? json_string(g->name) : json_null());
    json_object_set_new(j, "gpu_count", json_integer(g ? g->count : 0));
    json_object_set_new(j, "gpu_bytes", json_integer(g ? (json_int_t)g->gpu.memory_bytes : 0));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, point_json(&p[i]));
    json_object_set_new(j, "points", arr);
    return vf_print_json(j);
}

static void print_table(const vf_cli_fit_args *a, const vf_gpu_choice *g, const char *over, const vf_sweep_point *p,
                        size_t n)
{
    char b1[32], b2[32];
    printf("%s per GPU against %s (%s, runtime %s)%s%s\n\n", "Memory", over, vf_cli_mode_name(&a->est),
           vf_cli_runtime_label(a->est.runtime, a->graph), g ? " on " : "", g ? g->name : "");
    printf("  %12s %14s %14s%s\n", over, "needs", "estimate", g ? "  fits" : "");
    for (size_t i = 0; i < n; i++) {
        if (p[i].status != VF_OK) {
            printf("  %12llu  %s\n", (unsigned long long)p[i].value, vf_strerror(p[i].status));
            continue;
        }
        printf("  %12llu %14s %14s%s\n", (unsigned long long)p[i].value,
               p[i].needed_bytes ? vf_fmt_bytes(p[i].needed_bytes, a->units, b1, sizeof b1) : "no size",
               vf_fmt_bytes(p[i].per_gpu_bytes, a->units, b2, sizeof b2), !g ? "" : p[i].fits ? "  yes" : "  no");
    }
}

/* The knobs as estimate takes them: the device's name (vLLM's defaults by GPU class) and GxN spread. */
static void settle_gpu(vf_cli_fit_args *a, const vf_model *m, const vf_gpu_choice *g)
{
    if (!g)
        return;
    const char *name = g->gpu.name ? g->gpu.name : g->name;
    snprintf(a->est.infer.gpu_name, sizeof a->est.infer.gpu_name, "%.63s", g->from_catalog ? name : "");
    a->est.gpu_bytes = g->gpu.memory_bytes;
    vf_estimate_opts_spread(m, &a->est, g->count);
}

int cmd_sweep(int argc, char **argv)
{
    vf_cli_fit_args a;
    int rc = vf_cli_fit_parse("sweep", argc, argv, &a, help);
    if (rc >= 0)
        return rc;
    const char *over = a.over ? a.over : "context";
    vf_sweep_axis axis = VF_SWEEP_CONTEXT;
    if (!strcmp(over, "batch"))
        axis = VF_SWEEP_BATCH;
    else if (strcmp(over, "context"))
        return vf_usage_error("sweep", "--over: '%s' is not context or batch", over);
    uint64_t values[VF_SWEEP_MAX];
    size_t n = 0;
    if (a.values && (rc = parse_values(a.values, values, &n)) >= 0)
        return rc;
    vf_gpu_choice c;
    if ((a.gpu || a.local) && (rc = vf_cli_fit_gpu(&a, &c)) >= 0)
        return rc;
    const vf_gpu_choice *g = a.gpu || a.local ? &c : NULL;
    vf_model *m = NULL;
    if ((rc = vf_cli_open_model(a.model, &m)) != VF_EXIT_OK)
        return rc;
    vf_cli_fit_settle(&a, m);
    settle_gpu(&a, m, g);
    if (!a.values)
        n = vf_sweep_values(m, &a.est, axis, values, VF_SWEEP_MAX);
    vf_sweep_point pts[VF_SWEEP_MAX];
    vf_error e = {0};
    if (vf_sweep_run(m, &a.est, axis, values, n, g ? g->gpu.memory_bytes : 0, pts, &e) != VF_OK) {
        rc = vf_report_error(&e);
    } else if (a.json) {
        rc = print_json(&a, g, over, pts, n);
    } else {
        print_table(&a, g, over, pts, n);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    vf_model_free(m);
    return rc;
}
