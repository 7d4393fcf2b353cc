/* cmd_gpus.c — vramfit gpus [--local] [--json]: the GPU catalog, or this
 * machine's devices through NVML (none found is a normal answer). */
#include "cli.h"

#include <getopt.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit gpus [--local] [--json] [--units gib|gb]\n\n"
           "The GPU catalog: memory as the device reports it (not the marketing figure), memory\n"
           "bandwidth, dense fp16/bf16/fp8/int8 throughput, interconnect, and the source of each row.\n\n"
           "  --local        this machine's devices (NVML): total, used and free memory\n"
           "  --json         one JSON object on stdout\n"
           "  --units U      gib (default) or gb\n");
}

static json_t *gpu_json(const vf_gpu *g)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(g->name));
    json_object_set_new(j, "family", json_string(g->family));
    json_object_set_new(j, "vendor", json_string(g->vendor));
    json_object_set_new(j, "segment", json_string(g->segment));
    json_object_set_new(j, "memory_bytes", json_integer((json_int_t)g->memory_bytes));
    json_object_set_new(j, "memory_nominal", json_string(g->memory_nominal));
    json_object_set_new(j, "memory_basis", json_string(g->memory_basis));
    json_object_set_new(j, "bandwidth_gbs", json_real(g->bandwidth_gbs));
    json_t *t = json_object();
    json_object_set_new(t, "fp16", json_real(g->tflops_fp16));
    json_object_set_new(t, "bf16", json_real(g->tflops_bf16));
    json_object_set_new(t, "fp8", json_real(g->tflops_fp8));
    json_object_set_new(t, "int8", json_real(g->tops_int8));
    json_object_set_new(j, "tflops", t);
    json_object_set_new(j, "interconnect", json_string(g->interconnect));
    json_object_set_new(j, "interconnect_gbs", json_real(g->interconnect_gbs));
    json_object_set_new(j, "max_per_node", json_integer(g->max_per_node));
    json_object_set_new(j, "source", json_string(g->source));
    if (g->note && g->note[0])
        json_object_set_new(j, "note", json_string(g->note));
    if (g->unified_assumed && g->unified_assumed[0]) {
        json_t *um = json_object();
        json_object_set_new(um, "vllm", json_string(g->unified_vllm));
        json_object_set_new(um, "llamacpp", json_string(g->unified_llamacpp));
        json_object_set_new(um, "assumed", json_string(g->unified_assumed));
        json_object_set_new(j, "unified", um);
    }
    return j;
}

/* A throughput column, 8 wide: the figure, or an em dash where the catalog has
 * none (0 there means unknown or unsupported, never a rate of zero). */
static void throughput_cell(double v, char *out, size_t cap)
{
    if (v > 0)
        snprintf(out, cap, "%8.1f", v);
    else
        snprintf(out, cap, "%7s\xe2\x80\x94", ""); /* 7 spaces + one 3-byte, 1-column character */
}

static int list_local(bool json, vf_units u)
{
    vf_local_gpu devs[64];
    size_t n = 0;
    vf_error e = {0};
    if (vf_local_gpus(devs, 64, &n, &e) != VF_OK)
        return vf_report_error(&e);
    if (json) {
        json_t *j = json_object();
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *d = json_object();
            json_object_set_new(d, "index", json_integer(devs[i].index));
            json_object_set_new(d, "name", json_string(devs[i].name));
            json_object_set_new(d, "uuid", json_string(devs[i].uuid));
            json_object_set_new(d, "total_bytes", json_integer((json_int_t)devs[i].total_bytes));
            json_object_set_new(d, "used_bytes", json_integer((json_int_t)devs[i].used_bytes));
            json_object_set_new(d, "free_bytes", json_integer((json_int_t)devs[i].free_bytes));
            json_array_append_new(arr, d);
        }
        json_object_set_new(j, "local", arr);
        json_object_set_new(j, "reason", json_string(n ? "" : e.msg));
        return vf_print_json(j);
    }
    if (!n) {
        printf("No local GPUs found%s%s.\n", e.msg[0] ? ": " : "", e.msg);
        return VF_EXIT_OK;
    }
    char b1[32], b2[32], b3[32];
    printf("%-5s %-32s %12s %12s %12s\n", "index", "name", "total", "used", "free");
    for (size_t i = 0; i < n; i++)
        printf("%-5u %-32s %12s %12s %12s\n", devs[i].index, devs[i].name,
               vf_fmt_bytes(devs[i].total_bytes, u, b1, sizeof b1), vf_fmt_bytes(devs[i].used_bytes, u, b2, sizeof b2),
               vf_fmt_bytes(devs[i].free_bytes, u, b3, sizeof b3));
    return fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
}

int cmd_gpus(int argc, char **argv)
{
    static const struct option opts[] = {{"local", no_argument, 0, 'l'},
                                         {"json", no_argument, 0, 'j'},
                                         {"units", required_argument, 0, 'u'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool local = false, json = false;
    vf_units u = VF_UNITS_GIB;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            help();
            return VF_EXIT_OK;
        case 'l':
            local = true;
            break;
        case 'j':
            json = true;
            break;
        case 'u':
            if (!vf_parse_units(optarg, &u))
                return vf_usage_error("gpus", "--units: '%s' is not gib or gb", optarg);
            break;
        case ':':
            return vf_usage_error("gpus", "option '%s' needs a value", argv[optind - 1]);
        default:
            return vf_usage_error("gpus", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return vf_usage_error("gpus", "unexpected argument '%s'", argv[optind]);
    if (local)
        return list_local(json, u);
    size_t n = vf_gpu_count();
    if (json) {
        json_t *j = json_object();
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, gpu_json(vf_gpu_get(i)));
        json_object_set_new(j, "gpus", arr);
        return vf_print_json(j);
    }
    char b[32], t[4][16];
    printf("%-26s %11s %9s %8s %8s %8s %8s  %s\n", "name", "memory", "GB/s", "fp16", "bf16", "fp8", "int8",
           "interconnect");
    for (size_t i = 0; i < n; i++) {
        const vf_gpu *g = vf_gpu_get(i);
        const double rates[4] = {g->tflops_fp16, g->tflops_bf16, g->tflops_fp8, g->tops_int8};
        for (int k = 0; k < 4; k++)
            throughput_cell(rates[k], t[k], sizeof t[k]);
        printf("%-26s %11s %9.0f %s %s %s %s  %s\n", g->name, vf_fmt_bytes(g->memory_bytes, u, b, sizeof b),
               g->bandwidth_gbs, t[0], t[1], t[2], t[3], g->interconnect);
    }
    printf("\nMemory as the device reports it; throughput dense TFLOPS (int8: TOPS), \xe2\x80\x94 = not known or not supported.\n"
           "Sources and the rule for rows without a published figure: vramfit gpus --json.\n");
    return fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
}
