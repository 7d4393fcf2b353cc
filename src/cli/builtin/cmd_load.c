/* cmd_load.c — vramfit load MODEL: stream the weights into device memory
 * with bounded host memory, and report what it cost. */
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_cancel;

/* The first interrupt asks the load to stop and release everything; a second
 * one (a wedged device or file system can hold the drain) ends the process
 * the default way. */
static void on_sigint(int sig)
{
    if (g_cancel) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_cancel = 1;
}

static void help(void)
{
    printf("usage: vramfit load MODEL [--device host|null|cuda:N] [--staging-mb N] [--buffers N]\n"
           "                          [--threads N] [--direct] [--verify] [--device-map auto|FILE]\n"
           "                          [--json] [--units gib|gb]\n\n"
           "Streams every tensor of MODEL (safetensors, sharded, GGUF) into device memory through a\n"
           "small ring of pinned staging buffers: host memory stays at the ring's size whatever the\n"
           "model's size. Reports the time, throughput, peak host memory and the device memory used\n"
           "before and after, beside the estimate's weights figure.\n\n"
           "  --device D       host (plain memory, default), null (read through the ring and discard:\n"
           "                   how fast can this storage feed a GPU?), cuda:N (CUDA driver, dlopen'ed)\n"
           "  --staging-mb N   the whole ring in MiB (default max(64, 8 x buffers))\n"
           "  --buffers N      ring slots (default max(4, 2 x threads))\n"
           "  --threads N      reader threads (default: CPUs, at most 16)\n"
           "  --direct         O_DIRECT reads (bypass the page cache; buffered where refused)\n"
           "  --verify         read the device copy back and compare checksums with the file's\n"
           "  --device-map M   auto (fill GPUs in order by free memory, then host) or a JSON file\n"
           "                   {\"model.embed_tokens\": 0, \"layers:0-15\": \"cuda:0\", \"*\": \"cpu\"}\n"
           "  --json           one JSON object on stdout\n"
           "  --units U        gib (default) or gb\n\n"
           "Exit status: 0 loaded, 2 usage, 3 bad model, 4 I/O error or interrupted, 5 device error.\n");
}

typedef struct {
    bool tty;
    bool drawn;
} bar_state;

/* One line, redrawn in place: bytes, rate, ETA. */
static void on_progress(const vf_load_progress *p, void *user)
{
    bar_state *b = user;
    if (!b->tty || p->total_bytes == 0)
        return;
    double f = (double)p->done_bytes / (double)p->total_bytes;
    double rate = p->seconds > 0 ? (double)p->done_bytes / p->seconds : 0;
    double eta = rate > 0 ? (double)(p->total_bytes - p->done_bytes) / rate : 0;
    char bar[31];
    int fill = (int)(f * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    char d[32], t[32];
    fprintf(stderr, "\r[%s] %5.1f%% %s / %s  %.2f GiB/s  ETA %.0f s ", bar, f * 100,
            vf_fmt_bytes(p->done_bytes, VF_UNITS_GIB, d, sizeof d), vf_fmt_bytes(p->total_bytes, VF_UNITS_GIB, t, sizeof t),
            rate / (1u << 30), eta);
    b->drawn = true;
}

static json_t *device_json(const vf_load_device *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "device", json_string(d->device));
    if (d->name[0])
        json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "tensors", json_integer((json_int_t)d->tensors));
    json_object_set_new(o, "bytes", json_integer((json_int_t)d->bytes));
    json_object_set_new(o, "allocated_bytes", json_integer((json_int_t)d->allocated_bytes));
    json_object_set_new(o, "used_before_bytes", json_integer((json_int_t)d->used_before_bytes));
    json_object_set_new(o, "used_ready_bytes", json_integer((json_int_t)d->used_ready_bytes));
    json_object_set_new(o, "used_after_bytes", json_integer((json_int_t)d->used_after_bytes));
    json_object_set_new(o, "mem_source", json_string(d->mem_source));
    return o;
}

static int print_json(const char *model, const vf_load_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(model));
    json_object_set_new(o, "tensors", json_integer((json_int_t)vf_load_result_tensors(r)));
    json_object_set_new(o, "bytes", json_integer((json_int_t)vf_load_result_bytes(r)));
    json_object_set_new(o, "seconds", json_real(vf_load_result_seconds(r)));
    json_object_set_new(o, "gib_per_s", json_real(vf_load_result_gib_per_s(r)));
    json_object_set_new(o, "peak_host_rss_bytes", json_integer((json_int_t)vf_load_result_peak_host_rss_bytes(r)));
    json_object_set_new(o, "staging_bytes", json_integer((json_int_t)vf_load_result_staging_bytes(r)));
    json_object_set_new(o, "buffers", json_integer(vf_load_result_buffers(r)));
    json_object_set_new(o, "threads", json_integer(vf_load_result_threads(r)));
    json_object_set_new(o, "direct", json_boolean(vf_load_result_direct(r)));
    json_object_set_new(o, "device", json_string(vf_load_result_device(r)));
    json_object_set_new(o, "device_bytes_used", json_integer((json_int_t)vf_load_result_device_bytes_used(r)));
    json_object_set_new(o, "device_context_bytes", json_integer((json_int_t)vf_load_result_device_context_bytes(r)));
    /* The estimate's weights component is the model's tensor bytes, as stored. */
    json_object_set_new(o, "weights_bytes", json_integer((json_int_t)vf_load_result_tensor_bytes(r)));
    json_object_set_new(o, "verified", json_boolean(vf_load_result_verified(r)));
    json_t *a = json_array();
    for (size_t i = 0; i < vf_load_result_per_device_count(r); i++)
        json_array_append_new(a, device_json(vf_load_result_per_device(r, i)));
    json_object_set_new(o, "devices", a);
    return vf_print_json(o);
}

static void print_human(const char *model, const vf_load_result *r, vf_units u)
{
    char a[64], b[64], c[64], d[64];
    printf("model     %s\n", model);
    printf("loaded    %llu tensors, %s (%s bytes) in %.3f s: %.2f GiB/s\n", (unsigned long long)vf_load_result_tensors(r),
           vf_fmt_bytes(vf_load_result_bytes(r), u, a, sizeof a), vf_fmt_count(vf_load_result_bytes(r), b, sizeof b), vf_load_result_seconds(r), vf_load_result_gib_per_s(r));
    printf("weights   %s (the estimate's weights figure: the model's tensor bytes)\n",
           vf_fmt_bytes(vf_load_result_tensor_bytes(r), u, a, sizeof a));
    for (size_t i = 0; i < vf_load_result_per_device_count(r); i++) {
        const vf_load_device *x = vf_load_result_per_device(r, i);
        printf("device    %s%s%s%s: %llu tensors, %s allocated", x->device, x->name[0] ? " (" : "", x->name,
               x->name[0] ? ")" : "", (unsigned long long)x->tensors, vf_fmt_bytes(x->allocated_bytes, u, a, sizeof a));
        if (strcmp(x->mem_source, "nvml") == 0 || strcmp(x->mem_source, "cuMemGetInfo") == 0)
            printf("; used %s before, %s with the context, %s after (%s)", vf_fmt_bytes(x->used_before_bytes, u, b, sizeof b),
                   vf_fmt_bytes(x->used_ready_bytes, u, c, sizeof c), vf_fmt_bytes(x->used_after_bytes, u, d, sizeof d),
                   x->mem_source);
        printf("\n");
    }
    printf("used      %s by the load", vf_fmt_bytes(vf_load_result_device_bytes_used(r), u, a, sizeof a));
    if (vf_load_result_device_context_bytes(r))
        printf(", %s by the CUDA context", vf_fmt_bytes(vf_load_result_device_context_bytes(r), u, b, sizeof b));
    printf("\n");
    printf("host      peak RSS %s; staging %s", vf_fmt_bytes(vf_load_result_peak_host_rss_bytes(r), u, a, sizeof a),
           vf_fmt_bytes(vf_load_result_staging_bytes(r), u, b, sizeof b));
    if (vf_load_result_buffers(r))
        printf(" (%u buffers)", vf_load_result_buffers(r));
    else
        printf(" (reads land in place)");
    printf(", %u reader thread%s%s\n", vf_load_result_threads(r), vf_load_result_threads(r) == 1 ? "" : "s", vf_load_result_direct(r) ? ", O_DIRECT" : "");
    printf("verified  %s\n", vf_load_result_verified(r) ? "yes" : "no (use --verify)");
}

static bool parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t v;
    if (!vf_parse_u64(s, &v) || v < lo || v > hi)
        return false;
    *out = (uint32_t)v;
    return true;
}

int cmd_load(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"device", required_argument, NULL, 'd'},
        {"staging-mb", required_argument, NULL, 's'},
        {"buffers", required_argument, NULL, 'b'},
        {"threads", required_argument, NULL, 't'},
        {"direct", no_argument, NULL, 'D'},
        {"verify", no_argument, NULL, 'v'},
        {"device-map", required_argument, NULL, 'm'},
        {"json", no_argument, NULL, 'j'},
        {"units", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    vf_load_opts o;
    vf_load_opts_init(&o);
    bool json = false;
    vf_units units = VF_UNITS_GIB;
    uint32_t mb = 0;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            if (strlen(optarg) >= sizeof o.device)
                return vf_usage_error("load", "--device '%s': host, null or cuda:N", optarg);
            snprintf(o.device, sizeof o.device, "%s", optarg);
            break;
        case 's':
            if (!parse_u32(optarg, 1, 1u << 20, &mb))
                return vf_usage_error("load", "--staging-mb '%s': a whole number of MiB, 1 or more", optarg);
            o.staging_bytes = (uint64_t)mb << 20;
            break;
        case 'b':
            if (!parse_u32(optarg, 2, 1024, &o.buffers))
                return vf_usage_error("load", "--buffers '%s': 2 to 1024", optarg);
            break;
        case 't':
            if (!parse_u32(optarg, 1, 64, &o.threads))
                return vf_usage_error("load", "--threads '%s': 1 to 64", optarg);
            break;
        case 'D': o.direct = true; break;
        case 'v': o.verify = true; break;
        case 'm': o.device_map = optarg; break;
        case 'j': json = true; break;
        case 'u':
            if (!vf_parse_units(optarg, &units))
                return vf_usage_error("load", "--units '%s': gib or gb", optarg);
            break;
        case 'h': help(); return VF_EXIT_OK;
        case ':':
            return vf_usage_error("load", "option '%s' needs a value", argv[optind - 1]);
        default:
            return vf_usage_error("load", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return vf_usage_error("load", "missing MODEL");
    if (optind + 1 < argc)
        return vf_usage_error("load", "unexpected argument '%s'", argv[optind + 1]);
    const char *src = argv[optind];
    if (strcmp(o.device, "host") && strcmp(o.device, "cpu") && strcmp(o.device, "null") && strncmp(o.device, "cuda", 4))
        return vf_usage_error("load", "--device '%s': host, null or cuda:N", o.device);

    vf_model *m = NULL;
    int rc = vf_cli_open_model(src, &m);
    if (rc)
        return rc;
    if (strncmp(vf_model_source(m), "hf://", 5) == 0) { /* headers only were read: no bytes to stream */
        fprintf(stderr, "vramfit: %s: load streams local files, and this model is on the Hub only: download it "
                        "(huggingface-cli download %s) and load it from the Hugging Face cache\n",
                vf_model_source(m), vf_model_source(m) + 5);
        vf_model_free(m);
        return VF_EXIT_INPUT;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    bar_state bar = {isatty(2) != 0, false};
    o.progress = on_progress;
    o.progress_user = &bar;
    o.cancel = &g_cancel;

    vf_error e = {0};
    vf_loader *l = NULL;
    vf_load_result *r = vf_load_result_new();
    vf_status st = r ? vf_loader_open(m, &o, &l, &e) : (e.status = VF_ENOMEM, snprintf(e.msg, sizeof e.msg, "out of memory"), VF_ENOMEM);
    if (st == VF_OK)
        st = vf_loader_run(l, r, &e);
    if (bar.drawn)
        fprintf(stderr, "\r%*s\r", 90, "");
    if (st != VF_OK) {
        rc = vf_report_error(&e);
    } else {
        const char *name = vf_model_hparams(m)->name[0] ? vf_model_hparams(m)->name : vf_model_source(m);
        if (json)
            rc = print_json(name, r);
        else
            print_human(name, r, units);
    }
    vf_loader_free(l);
    vf_load_result_free(r);
    vf_model_free(m);
    return rc;
}
