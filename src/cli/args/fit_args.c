/* fit_args.c — the knobs fit, plan, sweep, serve and oom --model share: their
 * option table, the parser, the knobs settled once the model is known, and
 * the --gpu / --local choice. */
#include "cli.h"
#include "args/estimate_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { O_GPU = VF_OPT_CMD_FIRST, O_LOCAL, O_TRAIN, O_JSON, O_UNITS, O_EMIT, O_OVER, O_VALUES, O_HELP, O_NODES, O_PER_NODE, O_APPROX };

/* --nodes / --gpus-per-node: a count of 1 to 4096 */
static bool parse_count(const char *v, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || n < 1 || n > 4096)
        return false;
    *out = (uint32_t)n;
    return true;
}

/* fit's, plan's and sweep's own options; this table comes first: its --gpu
 * (with a count and --local) wins over the shared one. --emit is plan's,
 * --over and --values sweep's. */
const struct option vf_cli_fit_options[] = {
    {"gpu", required_argument, 0, O_GPU},     {"local", no_argument, 0, O_LOCAL},
    {"train", no_argument, 0, O_TRAIN},       {"json", no_argument, 0, O_JSON},
    {"units", required_argument, 0, O_UNITS}, {"emit", required_argument, 0, O_EMIT},
    {"over", required_argument, 0, O_OVER},   {"values", required_argument, 0, O_VALUES},
    {"help", no_argument, 0, O_HELP},         {"nodes", required_argument, 0, O_NODES},
    {"gpus-per-node", required_argument, 0, O_PER_NODE},
    {"approximate", no_argument, 0, O_APPROX}, {0, 0, 0, 0}};

int vf_cli_fit_parse(const char *cmd, int argc, char **argv, vf_cli_fit_args *a, void (*helpfn)(void))
{
    struct option all[160];
    const struct option *const tables[] = {vf_cli_fit_options, vf_cli_estimate_options, vf_cli_train_options};
    memset(a, 0, sizeof *a);
    vf_estimate_opts_init(&a->est);
    vf_cli_env_defaults(&a->est);
    vf_estimate_opts *o = &a->est;
    if (!vf_cli_options_merge(all, sizeof all / sizeof all[0], tables, 3))
        return vf_usage_error(cmd, "too many options");
    bool emit_ok = !strcmp(cmd, "plan"), sweep_ok = !strcmp(cmd, "sweep");
    int c;
    optind = 1;
    opterr = 0;
    const char *train_only = NULL; /* the first training-only knob given */
    while ((c = getopt_long(argc, argv, ":", all, NULL)) != -1) {
        const char *v = optarg;
        switch (c) {
        case O_HELP:
            helpfn();
            return VF_EXIT_OK;
        case O_GPU:
            a->gpu = v;
            continue;
        case O_LOCAL:
            a->local = true;
            continue;
        case O_TRAIN:
            o->mode = VF_MODE_TRAINING;
            continue;
        case O_JSON:
            a->json = true;
            continue;
        case O_UNITS:
            if (!vf_parse_units(v, &a->units))
                return vf_usage_error(cmd, "--units: '%s' is not gib or gb", v);
            continue;
        case O_NODES:
            if (!parse_count(v, &a->nodes))
                return vf_usage_error(cmd, "--nodes: '%s' is not a count of 1 to 4096", v);
            continue;
        case O_PER_NODE:
            if (!parse_count(v, &a->gpus_per_node))
                return vf_usage_error(cmd, "--gpus-per-node: '%s' is not a count of 1 to 4096", v);
            continue;
        case O_APPROX:
            a->approximate = true;
            continue;
        case O_EMIT:
            if (!emit_ok)
                return vf_usage_error(cmd, "unknown option '--emit'");
            a->emit = v;
            continue;
        case O_OVER:
        case O_VALUES:
            if (!sweep_ok)
                return vf_usage_error(cmd, "unknown option '--%s'", c == O_OVER ? "over" : "values");
            *(c == O_OVER ? &a->over : &a->values) = v;
            continue;
        case ':':
            return vf_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        case '?':
            return vf_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        default:
            break;
        }
        if (c == VF_OPT_RUNTIME)
            a->runtime_set = true;
        int r = vf_cli_parse_infer_opt(c, v, o);
        if (r == 0 && (r = vf_cli_parse_train_opt(c, v, o)) == 1 && !train_only)
            train_only = vf_cli_train_only(c);
        if (r < 0)
            return VF_EXIT_USAGE;
        if (r == 0)
            return vf_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
    }
    vf_engine engine;
    bool deepspeed = a->emit && vf_engine_parse(a->emit, &engine) == VF_OK && engine == VF_ENGINE_DEEPSPEED;
    int tr = deepspeed ? -1 : vf_cli_train_only_check(cmd, train_only, o); /* DeepSpeed launches train */
    if (tr >= 0)
        return tr;
    if (optind >= argc)
        return vf_usage_error(cmd, "missing MODEL");
    if (optind + 1 < argc)
        return vf_usage_error(cmd, "unexpected argument '%s'", argv[optind + 1]);
    a->model = argv[optind];
    if (a->gpu && a->local)
        return vf_usage_error(cmd, "--gpu and --local exclude each other");
    return -1;
}

/* Knobs that depend on the model or runtime, once both are known: vLLM sizes
 * for max_model_len and max_num_seqs, which --context and --batch stand for;
 * a GGUF file runs on llama.cpp unless told otherwise. */
void vf_cli_fit_settle(vf_cli_fit_args *a, const vf_model *m)
{
    vf_estimate_opts *o = &a->est;
    a->approx_why = vf_model_approximate(m);
    a->graph = vf_model_format(m) == VF_FORMAT_ONNX;
    if (!a->runtime_set)
        vf_cli_default_runtime(o, m);
    if (o->mode == VF_MODE_INFERENCE && o->runtime == VF_RUNTIME_VLLM) {
        if (!o->infer.max_model_len)
            o->infer.max_model_len = o->infer.context;
        else if (!o->infer.context)
            o->infer.context = o->infer.max_model_len;
        if (!o->infer.max_num_seqs)
            o->infer.max_num_seqs = o->infer.batch;
    }
}

int vf_cli_fit_gpu(const vf_cli_fit_args *a, vf_gpu_choice *c)
{
    vf_error e = {0};
    if (a->local) {
        vf_local_gpu devs[64];
        size_t n = 0;
        if (vf_local_gpus(devs, 64, &n, &e) != VF_OK)
            return vf_report_error(&e);
        if (!n) {
            fprintf(stderr, "vramfit: local: no gpus found%s%s\n", e.msg[0] ? ": " : "", e.msg);
            return VF_EXIT_DEVICE;
        }
        /* the same model of device is assumed; the least free memory decides */
        uint64_t free_min = devs[0].free_bytes;
        for (size_t i = 1; i < n; i++)
            if (devs[i].free_bytes < free_min)
                free_min = devs[i].free_bytes;
        if (vf_gpu_lookup(devs[0].name, c, NULL) != VF_OK) {
            memset(c, 0, sizeof *c);
            c->gpu.name = NULL;
            c->gpu.family = c->gpu.vendor = c->gpu.segment = c->gpu.memory_nominal = "";
            c->gpu.memory_basis = c->gpu.interconnect = c->gpu.source = c->gpu.note = "";
            c->gpu.unified_vllm = c->gpu.unified_llamacpp = c->gpu.unified_assumed = "";
            c->gpu.unified_free_bytes = 0;
            c->gpu.max_per_node = 8;
        }
        snprintf(c->name, sizeof c->name, "%s", devs[0].name);
        c->gpu.memory_bytes = free_min;
        c->count = (uint32_t)n;
        c->from_catalog = false;
        snprintf(c->note, sizeof c->note, "local devices: %zu, fitting into the least free memory", n);
        return -1;
    }
    if (vf_gpu_lookup(a->gpu, c, &e) != VF_OK)
        return vf_usage_error(a->emit ? "plan" : "fit", "--gpu %s", e.msg);
    return -1;
}
