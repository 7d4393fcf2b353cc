/* cmd_estimate.c — vramfit estimate MODEL [knobs]: the memory breakdown of
 * inference (default) or training (--train), per runtime. */
#include "args/estimate_opts.h"

#include <stdlib.h>
#include <string.h>


static void help(void)
{
    printf("usage: vramfit estimate MODEL [knobs] [--train [training knobs]] [--json] [--explain] [--units gib|gb]\n\n"
           "Memory needed to run MODEL, as a sum of named components (weights, KV cache,\n"
           "activations, gradients, optimizer states, overhead), reproducing the allocations of the\n"
           "engine that will run it. Formulas and sources: docs/memory-model.md.\n\n");
    vf_cli_infer_opts_help(stdout);
    printf("  (default runtime: llamacpp for a GGUF file, pytorch for a graph (.onnx), transformers otherwise; --train: transformers.\n"
           "   vllm needs --gpu: it sizes its KV cache pool from the device; --context stands for\n"
           "   --max-model-len. With a catalog --gpu, upper bounds on speed follow the breakdown)\n");
    printf("\n  --train                the training memory model (see its knobs below)\n");
    vf_cli_train_opts_help(stdout);
    printf("  --explain              print every formula with its numbers\n"
           "  --json                 one JSON object on stdout (sizes in bytes)\n"
           "  --units U              gib (default, 2^30 bytes) or gb (10^9 bytes)\n");
}

typedef struct component {
    const char *name;
    uint64_t bytes;
    char mark;
} component;

static void components_of(const vf_estimate *e, component c[6])
{
    component x[6] = {{"weights", vf_estimate_weights(e), 'W'},         {"kv_cache", vf_estimate_kv_cache(e), 'K'},
                      {"activations", vf_estimate_activations(e), 'A'}, {"gradients", vf_estimate_gradients(e), 'G'},
                      {"optimizer", vf_estimate_optimizer(e), 'S'},     {"overhead", vf_estimate_overhead(e), 'O'}};
    memcpy(c, x, sizeof x);
}

static json_t *assumptions_json(const vf_estimate *e, const char *runtime)
{
    json_t *a = json_object();
    json_object_set_new(a, "runtime", json_string(runtime));
    json_object_set_new(a, "context", vf_json_u64(vf_estimate_context(e)));
    json_object_set_new(a, "batch", vf_json_u64(vf_estimate_batch(e)));
    json_object_set_new(a, "kv_bytes_per_token", vf_json_u64(vf_estimate_kv_bytes_per_token(e)));
    json_object_set_new(a, "weight_bits", json_real(vf_estimate_weight_bits(e)));
    for (size_t i = 0; i < vf_estimate_assumption_count(e); i++) {
        const char *s = vf_estimate_assumption(e, i);
        const char *eq = strstr(s, " = ");
        char key[64];
        if (eq && (size_t)(eq - s) < sizeof key) {
            memcpy(key, s, (size_t)(eq - s));
            key[eq - s] = '\0';
            for (char *p = key; *p; p++)
                if (*p == ' ')
                    *p = '_';
            if (!json_object_get(a, key) || strcmp(key, "runtime") == 0) {
                json_object_set_new(a, strcmp(key, "runtime") == 0 ? "runtime_detail" : key, json_string(eq + 3));
                continue;
            }
        }
        snprintf(key, sizeof key, "note_%zu", i);
        json_object_set_new(a, key, json_string(s));
    }
    return a;
}

static int print_json(const vf_estimate *e, const char *runtime, bool explain, const vf_speed *speed, bool approximate)
{
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(vf_estimate_mode(e) == VF_MODE_TRAINING ? "training" : "inference"));
    json_object_set_new(o, "approximate", json_boolean(approximate));
    json_object_set_new(o, "runtime", json_string(runtime));
    json_object_set_new(o, "total_bytes", vf_json_u64(vf_estimate_total_bytes(e)));
    json_object_set_new(o, "per_gpu_bytes", vf_json_u64(vf_estimate_per_gpu_bytes(e)));
    /* what the device holds at the peak, as nvidia-smi shows the process, and its parts */
    json_object_set_new(o, "device_bytes", vf_json_u64(vf_estimate_device_bytes(e)));
    json_object_set_new(o, "margin_bytes", vf_json_u64(vf_estimate_margin_bytes(e)));
    json_object_set_new(o, "allocated_bytes", vf_json_u64(vf_estimate_allocated_bytes(e)));
    json_object_set_new(o, "reserved_bytes", vf_json_u64(vf_estimate_reserved_bytes(e)));
    json_object_set_new(o, "context_bytes", vf_json_u64(vf_estimate_context_bytes(e)));
    json_object_set_new(o, "outside_bytes", vf_json_u64(vf_estimate_outside_bytes(e)));
    json_object_set_new(o, "gpus", json_integer(vf_estimate_gpus(e)));
    json_object_set_new(o, "host_bytes", vf_json_u64(vf_estimate_host_bytes(e)));
    component c[6];
    components_of(e, c);
    json_t *comp = json_object();
    for (int i = 0; i < 6; i++)
        json_object_set_new(comp, c[i].name, vf_json_u64(c[i].bytes));
    json_object_set_new(o, "components", comp);
    json_object_set_new(o, "assumptions", assumptions_json(e, runtime));
    if (vf_estimate_runtime(e) == VF_RUNTIME_VLLM && vf_estimate_mode(e) == VF_MODE_INFERENCE) {
        json_object_set_new(o, "starts", json_boolean(vf_estimate_starts(e)));
        if (!vf_estimate_starts(e))
            json_object_set_new(o, "reason", json_string(vf_estimate_reason(e)));
        json_object_set_new(o, "kv_cache_tokens", vf_json_u64(vf_estimate_kv_cache_tokens(e)));
        json_object_set_new(o, "max_concurrency", json_real(vf_estimate_max_concurrency(e)));
        json_t *rb = json_object();
        json_object_set_new(rb, "cuda_graphs", vf_json_u64(vf_estimate_cuda_graph_bytes(e)));
        json_object_set_new(o, "runtime_buffers", rb);
        /* which phase each figure belongs to: device_bytes is serving at its peak */
        json_t *ph = json_object();
        json_object_set_new(ph, "load_bytes", vf_json_u64(vf_estimate_phase_load_bytes(e)));
        json_object_set_new(ph, "profile_peak_bytes", vf_json_u64(vf_estimate_phase_profile_bytes(e)));
        json_object_set_new(ph, "serving_idle_bytes", vf_json_u64(vf_estimate_phase_idle_bytes(e)));
        json_object_set_new(ph, "serving_peak_bytes", vf_json_u64(vf_estimate_device_bytes(e)));
        json_object_set_new(o, "phases", ph);
    }
    if (vf_estimate_runtime(e) == VF_RUNTIME_LLAMACPP && vf_estimate_mode(e) == VF_MODE_INFERENCE) {
        json_t *rb = json_object();
        json_object_set_new(rb, "model", vf_json_u64(vf_estimate_rb_model(e)));
        json_object_set_new(rb, "context", vf_json_u64(vf_estimate_rb_context(e)));
        json_object_set_new(rb, "compute", vf_json_u64(vf_estimate_rb_compute(e)));
        json_object_set_new(rb, "output", vf_json_u64(vf_estimate_rb_output(e)));
        json_object_set_new(rb, "host_model", vf_json_u64(vf_estimate_rb_host_model(e)));
        json_object_set_new(rb, "host_context", vf_json_u64(vf_estimate_rb_host_context(e)));
        json_object_set_new(rb, "host_compute", vf_json_u64(vf_estimate_rb_host_compute(e)));
        json_t *devs = json_array();
        static const char *const names[VF_DEVBUF_COUNT] = {"model", "context", "compute", "op_offload", "backend"};
        for (uint32_t d = 0; d < vf_estimate_rb_devices(e); d++) {
            json_t *dj = json_object();
            json_object_set_new(dj, "device", json_integer(d));
            for (int k = 0; k < VF_DEVBUF_COUNT; k++)
                json_object_set_new(dj, names[k], vf_json_u64(vf_estimate_device_buffer(e, d, (vf_devbuf)k)));
            json_array_append_new(devs, dj);
        }
        json_object_set_new(rb, "devices", devs);
        json_object_set_new(o, "runtime_buffers", rb);
    }
    if (vf_estimate_mode(e) == VF_MODE_TRAINING && vf_estimate_peak_phase(e)[0])
        json_object_set_new(o, "peak_phase", json_string(vf_estimate_peak_phase(e)));
    if (vf_estimate_eval_bytes(e)) /* --eval-batch: the evaluation step's peak allocated + context */
        json_object_set_new(o, "eval_bytes", vf_json_u64(vf_estimate_eval_bytes(e)));
    if (vf_estimate_partial_nodes(e)) /* a graph whose shapes could not all be inferred */
        json_object_set_new(o, "partial_nodes", json_integer(vf_estimate_partial_nodes(e)));
    if (explain) {
        json_t *x = json_array();
        for (size_t i = 0; i < vf_estimate_explain_count(e); i++)
            json_array_append_new(x, json_string(vf_estimate_explain(e, i)));
        json_object_set_new(o, "explain", x);
    }
    if (speed->known)
        json_object_set_new(o, "speed_bounds", vf_cli_speed_json(speed));
    return vf_print_json(o);
}

#define BAR 50

static void print_table(const char *src, const vf_estimate *e, const char *runtime, vf_units u, bool explain)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    printf("%s: %s, runtime %s\n\n", src, vf_estimate_mode(e) == VF_MODE_TRAINING ? "training" : "inference", runtime);
    component c[6];
    components_of(e, c);
    uint64_t sum = 0;
    for (int i = 0; i < 6; i++)
        sum += c[i].bytes;
    printf("  %-13s %12s  %6s\n", "component", "per GPU", "share");
    char bar[BAR + 1];
    int pos = 0;
    double acc = 0;
    for (int i = 0; i < 6; i++) {
        if (!c[i].bytes && (i == 3 || i == 4))
            continue;
        double share = sum ? (double)c[i].bytes / (double)sum : 0;
        printf("  %-13s %12s  %5.1f%%  [%c]\n", c[i].name, vf_fmt_bytes(c[i].bytes, u, b1, sizeof b1), share * 100,
               c[i].mark);
        acc += share;
        int end = (int)(acc * BAR + 0.5);
        while (pos < end && pos < BAR)
            bar[pos++] = c[i].mark;
    }
    while (pos < BAR)
        bar[pos++] = ' ';
    bar[BAR] = '\0';
    printf("  %-13s %12s\n", "per GPU", vf_fmt_bytes(vf_estimate_per_gpu_bytes(e), u, b1, sizeof b1));
    if (vf_estimate_device_bytes(e) != vf_estimate_per_gpu_bytes(e) || vf_estimate_reserved_bytes(e) != vf_estimate_allocated_bytes(e))
        printf("  %-13s %12s  = reserved %s (allocated %s + cached) + context %s + outside %s\n", "device",
               vf_fmt_bytes(vf_estimate_device_bytes(e), u, b1, sizeof b1), vf_fmt_bytes(vf_estimate_reserved_bytes(e), u, b2, sizeof b2),
               vf_fmt_bytes(vf_estimate_allocated_bytes(e), u, b3, sizeof b3), vf_fmt_bytes(vf_estimate_context_bytes(e), u, b4, sizeof b4),
               vf_fmt_bytes(vf_estimate_outside_bytes(e), u, b5, sizeof b5));
    if (vf_estimate_eval_bytes(e))
        printf("  %-13s %12s  = its peak allocated + context, under torch.no_grad() (the verdict: the larger)\n",
               "eval step", vf_fmt_bytes(vf_estimate_eval_bytes(e), u, b1, sizeof b1));
    if (vf_estimate_partial_nodes(e))
        printf("  PARTIAL: %u node(s) of unknown output shape are not counted (see the assumptions)\n",
               vf_estimate_partial_nodes(e));
    if (vf_estimate_gpus(e) > 1)
        printf("  %-13s %12s  (%u GPUs)\n", "total", vf_fmt_bytes(vf_estimate_total_bytes(e), u, b2, sizeof b2), vf_estimate_gpus(e));
    if (vf_estimate_host_bytes(e))
        printf("  %-13s %12s\n", "host memory", vf_fmt_bytes(vf_estimate_host_bytes(e), u, b3, sizeof b3));
    printf("  |%s|\n", bar);
    if (vf_estimate_runtime(e) == VF_RUNTIME_VLLM && vf_estimate_mode(e) == VF_MODE_INFERENCE) {
        if (vf_estimate_starts(e))
            printf("\n  vLLM KV cache pool: %s = %llu tokens; %.2fx concurrent sequences at max_model_len %llu\n",
                   vf_fmt_bytes(vf_estimate_kv_cache(e), u, b1, sizeof b1), (unsigned long long)vf_estimate_kv_cache_tokens(e),
                   vf_estimate_max_concurrency(e), (unsigned long long)vf_estimate_context(e));
        else
            printf("\n  vLLM does not start: %s\n", vf_estimate_reason(e));
    }
    if (vf_estimate_runtime(e) == VF_RUNTIME_LLAMACPP && vf_estimate_mode(e) == VF_MODE_INFERENCE) {
        printf("\n  llama.cpp buffers (all devices): model %s, context %s, compute %s, output %s\n",
               vf_fmt_bytes(vf_estimate_rb_model(e), u, b1, sizeof b1), vf_fmt_bytes(vf_estimate_rb_context(e), u, b2, sizeof b2),
               vf_fmt_bytes(vf_estimate_rb_compute(e), u, b3, sizeof b3), vf_fmt_bytes(vf_estimate_rb_output(e), u, b4, sizeof b4));
        for (uint32_t d = 0; d < vf_estimate_rb_devices(e); d++) {
            printf("    GPU%u: model %s, context %s, compute %s (op-offload copies %s), backend %s\n", d,
                   vf_fmt_bytes(vf_estimate_device_buffer(e, d, VF_DEVBUF_MODEL), u, b1, sizeof b1),
                   vf_fmt_bytes(vf_estimate_device_buffer(e, d, VF_DEVBUF_CONTEXT), u, b2, sizeof b2),
                   vf_fmt_bytes(vf_estimate_device_buffer(e, d, VF_DEVBUF_COMPUTE), u, b3, sizeof b3),
                   vf_fmt_bytes(vf_estimate_device_buffer(e, d, VF_DEVBUF_OFFLOAD), u, b4, sizeof b4),
                   vf_fmt_bytes(vf_estimate_device_buffer(e, d, VF_DEVBUF_BACKEND), u, b5, sizeof b5));
        }
        if (vf_estimate_rb_devices(e))
            printf("    host: model %s, context %s, compute %s (CUDA_Host), output %s\n",
                   vf_fmt_bytes(vf_estimate_rb_host_model(e), u, b1, sizeof b1),
                   vf_fmt_bytes(vf_estimate_rb_host_context(e), u, b2, sizeof b2),
                   vf_fmt_bytes(vf_estimate_rb_host_compute(e), u, b3, sizeof b3),
                   vf_fmt_bytes(vf_estimate_rb_output(e), u, b4, sizeof b4));
    }
    printf("\nassumptions:\n");
    for (size_t i = 0; i < vf_estimate_assumption_count(e); i++)
        printf("  - %s\n", vf_estimate_assumption(e, i));
    if (explain) {
        printf("\nformulas:\n");
        for (size_t i = 0; i < vf_estimate_explain_count(e); i++)
            printf("  %s\n", vf_estimate_explain(e, i));
    }
}

int cmd_estimate(int argc, char **argv)
{
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    vf_cli_env_defaults(&o);
    bool json = false, explain = false, runtime_given = false;
    uint32_t gxn = 0;
    vf_units units = VF_UNITS_GIB;
    struct option all[128];
    const struct option *const tables[] = {vf_cli_estimate_cmd_options, vf_cli_estimate_options, vf_cli_train_options};
    if (!vf_cli_options_merge(all, sizeof all / sizeof all[0], tables, 3))
        return vf_usage_error("estimate", "too many options");
    optind = 1;
    opterr = 0;
    int c;
    const char *train_only = NULL; /* the first training-only knob given */
    while ((c = getopt_long(argc, argv, ":", all, NULL)) != -1) {
        switch (c) {
        case OPT_HELP:
            help();
            return VF_EXIT_OK;
        case OPT_TRAIN:
            o.mode = VF_MODE_TRAINING;
            continue;
        case OPT_JSON:
            json = true;
            continue;
        case OPT_EXPLAIN:
            explain = true;
            continue;
        case OPT_UNITS:
            if (!vf_parse_units(optarg, &units))
                return vf_usage_error("estimate", "--units %s: expected gib or gb", optarg);
            continue;
        case ':':
            return vf_usage_error("estimate", "option '%s' needs a value", argv[optind - 1]);
        case '?':
            return vf_usage_error("estimate", "unknown option '%s'", argv[optind - 1]);
        default:
            break;
        }
        if (c == VF_OPT_RUNTIME)
            runtime_given = true;
        uint32_t gpus_before = o.gpus;
        int r = vf_cli_parse_infer_opt(c, optarg, &o);
        if (c == VF_OPT_GPU && o.gpus != gpus_before)
            gxn = o.gpus; /* "--gpu GxN": N devices, spread once the model is known */
        if (r == 0 && (r = vf_cli_parse_train_opt(c, optarg, &o)) == 1 && !train_only)
            train_only = vf_cli_train_only(c);
        if (r < 0)
            return VF_EXIT_USAGE;
        if (r == 0)
            return vf_usage_error("estimate", "unknown option '%s'", argv[optind - 1]);
    }
    int tr = vf_cli_train_only_check("estimate", train_only, &o);
    if (tr >= 0)
        return tr;
    if (optind >= argc)
        return vf_usage_error("estimate", "missing MODEL");
    if (optind + 1 < argc)
        return vf_usage_error("estimate", "unexpected argument '%s'", argv[optind + 1]);
    const char *src = argv[optind];
    vf_model *m = NULL;
    int rc = vf_cli_open_model(src, &m);
    if (rc)
        return rc;
    vf_estimate *e = vf_estimate_new();
    if (!e) {
        vf_model_free(m);
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    if (!runtime_given)
        vf_cli_default_runtime(&o, m);
    vf_estimate_opts_spread(m, &o, gxn); /* as fit spreads the same --gpu GxN */
    vf_error err = {0};
    vf_speed speed = {0};
    vf_gpu_choice gpu;
    if (vf_estimate_run(m, &o, e, &err) != VF_OK) {
        rc = vf_report_error(&err);
        goto out;
    }
    /* with a catalog GPU, the bounds that follow from its bandwidth and FLOP/s */
    if (o.infer.gpu_name[0] && vf_gpu_lookup(o.infer.gpu_name, &gpu, NULL) == VF_OK && gpu.from_catalog)
        vf_speed_bounds(m, &o, e, &gpu.gpu, vf_estimate_gpus(e) ? vf_estimate_gpus(e) : 1, &speed);
    if (json) {
        rc = print_json(e, vf_cli_runtime_label(vf_estimate_runtime(e), vf_model_format(m) == VF_FORMAT_ONNX), explain, &speed, vf_model_approximate(m) != NULL);
    } else {
        const vf_hparams *hp = vf_model_hparams(m);
        if (vf_model_approximate(m))
            printf("APPROXIMATE: %s\n", vf_model_approximate(m));
        print_table(hp->name[0] ? hp->name : src, e, vf_cli_runtime_label(vf_estimate_runtime(e), vf_model_format(m) == VF_FORMAT_ONNX), units, explain);
        if (speed.known) {
            printf("\n");
            vf_cli_print_speed(&speed, &o, vf_estimate_context(e), gpu.gpu.bandwidth_gbs);
        }
        rc = VF_EXIT_OK;
    }
out:
    vf_estimate_free(e);
    vf_model_free(m);
    return rc;
}
