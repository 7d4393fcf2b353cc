/* cmd_oom.c — vramfit oom [LOG] [--gpu G] [--json] [--model MODEL [knobs]]:
 * the first out-of-memory error in a log (stdin by default) with the figures
 * its message states, the phase, the fragmentation, advice in words; with
 * --model, fit's ranked changes for the run's knobs on that device. */
#include "cli.h"

#include <errno.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit oom [LOG|-] [--gpu G] [--json] [--units gib|gb] [--model MODEL [knobs]]\n\n"
           "Reads a log (standard input without LOG or with '-') and explains its first out-of-memory\n"
           "error: PyTorch 0.x-2.x (CUDA and HIP), 'CUDA error: out of memory', vLLM (V0 and V1 KV cache\n"
           "checks, 'No available memory for the cache blocks', the start-up free-memory check),\n"
           "llama.cpp (cudaMalloc and buffer allocations), DeepSpeed and Accelerate (named from the\n"
           "stack frames). It gives the figures the message states in bytes, the phase (loading,\n"
           "profile_run, kv_allocation, compute_buffers, forward, backward, optimizer_step, startup),\n"
           "the share of PyTorch's reserved memory that is unallocated (fragmentation), how many\n"
           "errors the log holds, and what to change.\n\n"
           "  --gpu G          the device (catalog name or size, as for fit) when the log does not say\n"
           "                   its memory: vLLM's gpu_memory_utilization advice needs it\n"
           "  --model MODEL    then the run's knobs (as for 'vramfit fit'; everything after MODEL):\n"
           "                   reruns fit on the device of the message and prints its ranked changes\n"
           "  --json           one JSON object on stdout (figures in bytes, null where not stated)\n"
           "  --units U        gib (default) or gb\n"
           "Exit status: 0 (also when the log holds no out-of-memory error), 2 usage, 4 the log cannot\n"
           "be read; with --model, fit's errors.\n");
}

typedef struct oom_args {
    const char *log, *gpu, *model;
    bool json;
    vf_units units;
    int n_knobs;
    char **knobs;
} oom_args;

static int parse(int argc, char **argv, oom_args *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            help();
            return VF_EXIT_OK;
        } else if (!strcmp(s, "--json")) {
            a->json = true;
        } else if (!strcmp(s, "--units") || !strcmp(s, "--gpu") || !strcmp(s, "--model")) {
            if (i + 1 >= argc)
                return vf_usage_error("oom", "option '%s' needs a value", s);
            const char *v = argv[++i];
            if (!strcmp(s, "--units") && !vf_parse_units(v, &a->units))
                return vf_usage_error("oom", "--units: '%s' is not gib or gb", v);
            if (!strcmp(s, "--gpu"))
                a->gpu = v;
            if (!strcmp(s, "--model")) { /* the rest are the run's knobs, for fit */
                a->model = v;
                a->knobs = argv + i + 1;
                a->n_knobs = argc - i - 1;
                break;
            }
        } else if (s[0] == '-' && s[1]) {
            return vf_usage_error("oom", "unknown option '%s'", s);
        } else if (a->log) {
            return vf_usage_error("oom", "unexpected argument '%s'", s);
        } else {
            a->log = s;
        }
    }
    for (int k = 0; k < a->n_knobs; k++) /* a --gpu among the knobs is the device too */
        if (!strcmp(a->knobs[k], "--gpu") && k + 1 < a->n_knobs)
            a->gpu = a->knobs[k + 1];
    return -1;
}

static int scan_log(const char *path, vf_oom_scanner *s)
{
    bool in = !path || !strcmp(path, "-");
    FILE *f = in ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "vramfit: %s: cannot open: %s\n", path, strerror(errno));
        return VF_EXIT_IO;
    }
    static char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        vf_oom_feed(s, buf, n);
    int bad = ferror(f);
    if (!in)
        fclose(f);
    if (bad) {
        fprintf(stderr, "vramfit: %s: read error\n", in ? "stdin" : path);
        return VF_EXIT_IO;
    }
    return VF_EXIT_OK;
}

static bool known(const vf_oom_report *r, vf_oom_figure f) { return (r->stated | r->derived) & (1u << f); }

static json_t *report_json(const vf_oom_report *r)
{
    json_t *j = json_object();
    json_object_set_new(j, "found", json_boolean(r->found));
    json_object_set_new(j, "engine", r->found ? json_string(r->engine) : json_null());
    json_object_set_new(j, "kind", r->found ? json_string(r->kind) : json_null());
    json_object_set_new(j, "gpu", r->gpu >= 0 ? json_integer(r->gpu) : json_null());
    json_t *derived = json_array();
    for (int f = 0; f < VF_OOM_N_FIGURES; f++) {
        char key[48];
        const char *n = vf_oom_figure_name((vf_oom_figure)f);
        bool tokens = f == VF_OOM_MAX_CONTEXT || f == VF_OOM_MAX_SEQ_LEN;
        snprintf(key, sizeof key, tokens ? "%s" : "%s_bytes", n);
        json_object_set_new(j, key, known(r, (vf_oom_figure)f) ? vf_json_u64(r->figure[f]) : json_null());
        if (r->derived & (1u << f))
            json_array_append_new(derived, json_string(key));
    }
    json_object_set_new(j, "derived", derived);
    json_object_set_new(j, "processes", json_integer(r->processes));
    json_object_set_new(j, "fragmentation", r->fragmentation >= 0 ? json_real(r->fragmentation) : json_null());
    json_object_set_new(j, "gpu_memory_utilization", r->utilization > 0 ? json_real(r->utilization) : json_null());
    json_object_set_new(j, "buffer", r->buffer[0] ? json_string(r->buffer) : json_null());
    json_object_set_new(j, "phase", r->phase[0] ? json_string(r->phase) : json_null());
    json_object_set_new(j, "errors", vf_json_u64(r->errors));
    json_object_set_new(j, "line", r->found ? vf_json_u64(r->line) : json_null());
    json_object_set_new(j, "message", r->found ? json_string(r->message) : json_null());
    json_object_set_new(j, "lines_read", vf_json_u64(r->lines));
    json_object_set_new(j, "bytes_read", vf_json_u64(r->bytes));
    json_t *adv = json_array();
    for (size_t i = 0; i < r->n_advice; i++)
        json_array_append_new(adv, json_string(r->advice[i]));
    json_object_set_new(j, "advice", adv);
    return j;
}

static const char *engine_title(const char *e)
{
    static const char *const m[][2] = {{"pytorch", "PyTorch"}, {"vllm", "vLLM"}, {"llamacpp", "llama.cpp"},
                                       {"deepspeed", "DeepSpeed"}, {"accelerate", "Accelerate"}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(e, m[i][0]))
            return m[i][1];
    return e;
}

static void print_report(const vf_oom_report *r, vf_units u)
{
    if (!r->found) {
        printf("No out-of-memory error found (%llu lines read).\n", (unsigned long long)r->lines);
        return;
    }
    static const char *const label[VF_OOM_N_FIGURES] = {
        "asked for", "device memory", "free", "allocated by PyTorch", "reserved by PyTorch",
        "reserved, unallocated", "this process", "processes on the GPU", "allowed (memory fraction)",
        "private pools (CUDA graphs)", "needed", "available", "longest context that fits", "context asked for"};
    printf("Out of memory: %s (%s)", engine_title(r->engine), r->kind);
    if (r->gpu >= 0)
        printf(" on GPU %d", r->gpu);
    printf(", line %llu", (unsigned long long)r->line);
    if (r->errors > 1)
        printf("; the first of %llu errors in the log", (unsigned long long)r->errors);
    printf("\n  %.200s%s\n", r->message, strlen(r->message) > 200 ? " ..." : "");
    char b[32];
    for (int f = 0; f < VF_OOM_N_FIGURES; f++) {
        if (!known(r, (vf_oom_figure)f))
            continue;
        if (f == VF_OOM_MAX_CONTEXT || f == VF_OOM_MAX_SEQ_LEN)
            printf("  %-28s %s tokens\n", label[f], vf_fmt_count(r->figure[f], b, sizeof b));
        else
            printf("  %-28s %12s%s\n", label[f], vf_fmt_bytes(r->figure[f], u, b, sizeof b),
                   r->derived & (1u << f) ? "  (from the stated figures)" : "");
    }
    if (r->buffer[0])
        printf("  %-28s %s\n", "buffer", r->buffer);
    if (r->utilization > 0)
        printf("  %-28s %.2f\n", "gpu_memory_utilization", r->utilization);
    if (r->fragmentation >= 0)
        printf("  %-28s %.1f%% of what PyTorch reserves is unallocated\n", "fragmentation", 100.0 * r->fragmentation);
    printf("  %-28s %s\n", "phase", r->phase[0] ? r->phase : "not told by the log");
    if (r->n_advice) {
        printf("What to change:\n");
        for (size_t i = 0; i < r->n_advice; i++)
            printf("  - %s\n", r->advice[i]);
    }
}

/* fit MODEL [knobs] [--gpu the message's device] [--json] */
static int run_fit(const oom_args *a, const vf_oom_report *r, json_t *j)
{
    char size[48], *argv[256];
    int n = 0;
    argv[n++] = "fit";
    argv[n++] = (char *)a->model;
    for (int k = 0; k < a->n_knobs && n < 250; k++)
        argv[n++] = a->knobs[k];
    bool gpu_in_knobs = false;
    for (int k = 0; k < a->n_knobs; k++)
        gpu_in_knobs |= !strcmp(a->knobs[k], "--gpu");
    if (a->gpu && !gpu_in_knobs) { /* oom's own --gpu, before --model */
        argv[n++] = "--gpu";
        argv[n++] = (char *)a->gpu;
    } else if (!a->gpu && known(r, VF_OOM_TOTAL)) {
        snprintf(size, sizeof size, "%.4fmib", (double)r->figure[VF_OOM_TOTAL] / 1048576.0);
        argv[n++] = "--gpu";
        argv[n++] = size;
    }
    if (a->json)
        argv[n++] = "--json";
    argv[n] = NULL;
    if (!j) {
        printf("\nvramfit fit %s for this run:\n", a->model);
        fflush(stdout);
        return cmd_fit(n, argv);
    }
    json_t *fit = NULL;
    int rc = vf_cli_capture_json(cmd_fit, n, argv, &fit);
    json_object_set_new(j, "fit", fit ? fit : json_null());
    return rc;
}

int cmd_oom(int argc, char **argv)
{
    oom_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    uint64_t device = 0;
    if (a.gpu) {
        vf_gpu_choice c;
        vf_error e = {0};
        if (vf_gpu_lookup(a.gpu, &c, &e) != VF_OK)
            return vf_usage_error("oom", "--gpu %s", e.msg);
        device = c.gpu.memory_bytes;
    }
    vf_oom_scanner *s = vf_oom_open();
    if (!s) {
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    if ((rc = scan_log(a.log, s)) != VF_EXIT_OK) {
        vf_oom_free(s);
        return rc;
    }
    vf_oom_report r;
    vf_oom_finish(s, device, &r);
    vf_oom_free(s);
    json_t *j = a.json ? report_json(&r) : NULL;
    if (!a.json)
        print_report(&r, a.units);
    int frc = a.model ? run_fit(&a, &r, j) : VF_EXIT_OK;
    if (j)
        rc = vf_print_json(j);
    else
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    return frc > VF_EXIT_NOFIT ? frc : rc; /* "does not fit" is an answer here, not a failure */
}
