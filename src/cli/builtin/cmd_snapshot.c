/* cmd_snapshot.c — vramfit snapshot FILE.pickle [--json] [--estimate SPEC]:
 * what a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) says:
 * reserved, allocated and inactive memory by device, stream and pool, the
 * largest live allocations with their frames, the trace's peak and what was
 * alive there, leak suspects; an estimate beside the measured peak. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit snapshot FILE.pickle [--json] [--units gib|gb] [--estimate \"MODEL knobs\"]\n\n"
           "Reads a PyTorch memory snapshot: torch.cuda.memory._dump_snapshot(FILE) after\n"
           "torch.cuda.memory._record_memory_history() (2.x: segments and device_traces), or a pickled\n"
           "torch.cuda.memory._snapshot() (1.13: a list of segments). The pickle is read without running\n"
           "anything: a file naming any global, call or object is refused (exit 3).\n"
           "It reports the segments and blocks, reserved vs allocated vs inactive bytes (fragmentation)\n"
           "per device, stream and pool, the largest live allocations with their frames, the trace's\n"
           "peak and what was alive there, and leak suspects: allocation sites with at least 3\n"
           "allocations alive at the end, made in at least 3 iterations (docs/snapshot.md).\n\n"
           "  --estimate SPEC  \"MODEL knobs\" as for 'vramfit estimate': its device memory per GPU\n"
           "                   beside the measured peak\n"
           "  --json           one JSON object on stdout (sizes in bytes)\n"
           "  --units U        gib (default) or gb\n"
           "Exit status: 0, 2 usage, 3 not a snapshot (or a refused pickle), 4 the file cannot be read.\n");
}

typedef struct snap_args {
    const char *file, *estimate;
    bool json;
    vf_units units;
} snap_args;

static int parse(int argc, char **argv, snap_args *a)
{
    memset(a, 0, sizeof *a);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", vf_cli_snapshot_options, NULL)) != -1) {
        switch (c) {
        case 'h':
            help();
            return VF_EXIT_OK;
        case 'j':
            a->json = true;
            break;
        case 'e':
            a->estimate = optarg;
            break;
        case 'u':
            if (!vf_parse_units(optarg, &a->units))
                return vf_usage_error("snapshot", "--units: '%s' is not gib or gb", optarg);
            break;
        case ':':
            return vf_usage_error("snapshot", "option '%s' needs a value", argv[optind - 1]);
        default:
            return vf_usage_error("snapshot", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        a->file = argv[optind++];
    if (optind < argc)
        return vf_usage_error("snapshot", "unexpected argument '%s'", argv[optind]);
    if (!a->file)
        return vf_usage_error("snapshot", "missing FILE (a pickled memory snapshot)");
    return -1;
}

static json_t *alloc_json(const vf_snapshot_allocation *x, bool site)
{
    json_t *j = json_object(), *frames = json_array();
    json_object_set_new(j, "size_bytes", vf_json_u64(x->size));
    if (site) {
        json_object_set_new(j, "count", vf_json_u64(x->count));
        json_object_set_new(j, "iterations", vf_json_u64(x->iterations));
    } else {
        json_object_set_new(j, "requested_bytes", x->requested_size ? vf_json_u64(x->requested_size) : json_null());
    }
    json_object_set_new(j, "address", vf_json_u64(x->address));
    json_object_set_new(j, "device", json_integer(x->device));
    json_object_set_new(j, "stream", vf_json_u64(x->stream));
    json_object_set_new(j, "trace_entry", x->entry == UINT64_MAX ? json_null() : vf_json_u64(x->entry));
    for (size_t i = 0; i < x->n_frames; i++)
        json_array_append_new(frames, json_string(x->frames[i]));
    json_object_set_new(j, "frames", frames);
    return j;
}

static json_t *list_json(const vf_snapshot *s, vf_snapshot_list w)
{
    json_t *a = json_array();
    for (size_t i = 0; i < vf_snapshot_alloc_count(s, w); i++)
        json_array_append_new(a, alloc_json(vf_snapshot_alloc(s, w, i), w == VF_SNAPSHOT_LEAKS));
    return a;
}

static json_t *pools_json(const vf_snapshot *s)
{
    json_t *a = json_array();
    for (size_t i = 0; i < vf_snapshot_pool_count(s); i++) {
        const vf_snapshot_pool_stats *p = vf_snapshot_pool(s, i);
        json_t *j = json_object();
        json_object_set_new(j, "device", json_integer(p->device));
        json_object_set_new(j, "stream", vf_json_u64(p->stream));
        json_object_set_new(j, "pool", json_string(p->pool));
        json_object_set_new(j, "segments", vf_json_u64(p->segments));
        json_object_set_new(j, "blocks", vf_json_u64(p->blocks));
        json_object_set_new(j, "reserved_bytes", vf_json_u64(p->reserved_bytes));
        json_object_set_new(j, "allocated_bytes", vf_json_u64(p->allocated_bytes));
        json_object_set_new(j, "inactive_bytes", vf_json_u64(p->inactive_bytes));
        json_object_set_new(j, "pending_free_bytes", vf_json_u64(p->pending_free_bytes));
        json_array_append_new(a, j);
    }
    return a;
}

static json_t *report_json(const vf_snapshot *s, const snap_args *a, uint64_t estimate)
{
    json_t *j = json_object(), *states = json_object();
    json_object_set_new(j, "file", json_string(a->file));
    json_object_set_new(j, "layout", json_string(vf_snapshot_layout(s)));
    json_object_set_new(j, "segments", vf_json_u64(vf_snapshot_segments(s)));
    json_object_set_new(j, "blocks", vf_json_u64(vf_snapshot_blocks(s)));
    json_object_set_new(j, "reserved_bytes", vf_json_u64(vf_snapshot_reserved_bytes(s)));
    json_object_set_new(j, "allocated_bytes", vf_json_u64(vf_snapshot_allocated_bytes(s)));
    json_object_set_new(j, "inactive_bytes", vf_json_u64(vf_snapshot_inactive_bytes(s)));
    json_object_set_new(j, "pending_free_bytes", vf_json_u64(vf_snapshot_pending_free_bytes(s)));
    uint64_t req = vf_snapshot_requested_bytes(s);
    json_object_set_new(j, "requested_bytes", req ? vf_json_u64(req) : json_null());
    uint64_t r = vf_snapshot_reserved_bytes(s);
    json_object_set_new(j, "fragmentation", r ? json_real((double)vf_snapshot_inactive_bytes(s) / (double)r) : json_null());
    for (size_t i = 0; i < vf_snapshot_state_count(s); i++)
        json_object_set_new(states, vf_snapshot_state_name(s, i), vf_json_u64(vf_snapshot_state_bytes(s, i)));
    json_object_set_new(j, "states", states);
    json_object_set_new(j, "pools", pools_json(s));
    bool t = vf_snapshot_has_trace(s);
    json_object_set_new(j, "trace_entries", vf_json_u64(vf_snapshot_trace_entries(s)));
    json_object_set_new(j, "peak_bytes", vf_json_u64(vf_snapshot_peak_bytes(s)));
    json_object_set_new(j, "peak_source", json_string(t ? "trace" : "segments"));
    json_object_set_new(j, "peak_device", t ? json_integer(vf_snapshot_peak_device(s)) : json_null());
    json_object_set_new(j, "peak_entry", t ? vf_json_u64(vf_snapshot_peak_entry(s)) : json_null());
    json_object_set_new(j, "before_trace_bytes", t ? vf_json_u64(vf_snapshot_before_trace_bytes(s)) : json_null());
    json_object_set_new(j, "end_bytes", t ? vf_json_u64(vf_snapshot_end_bytes(s)) : json_null());
    json_object_set_new(j, "largest", list_json(s, VF_SNAPSHOT_LARGEST));
    json_object_set_new(j, "at_peak", list_json(s, VF_SNAPSHOT_AT_PEAK));
    json_object_set_new(j, "leak_suspects", list_json(s, VF_SNAPSHOT_LEAKS));
    if (a->estimate) {
        json_t *e = json_object();
        json_object_set_new(e, "spec", json_string(a->estimate));
        json_object_set_new(e, "device_bytes", vf_json_u64(estimate));
        json_object_set_new(e, "peak_over_estimate", json_real((double)vf_snapshot_peak_bytes(s) / (double)estimate));
        json_object_set_new(j, "estimate", e);
    }
    return j;
}

static void print_allocs(const vf_snapshot *s, vf_snapshot_list w, const char *title, vf_units u)
{
    size_t n = vf_snapshot_alloc_count(s, w);
    if (!n)
        return;
    printf("\n%s\n", title);
    char b[32];
    for (size_t i = 0; i < n; i++) {
        const vf_snapshot_allocation *x = vf_snapshot_alloc(s, w, i);
        printf("  %12s", vf_fmt_bytes(x->size, u, b, sizeof b));
        if (w == VF_SNAPSHOT_LEAKS)
            printf("  %llu allocations over %llu iterations", (unsigned long long)x->count,
                   (unsigned long long)x->iterations);
        else
            printf("  0x%llx", (unsigned long long)x->address);
        printf("  %s", x->n_frames ? "" : (x->entry == UINT64_MAX && w == VF_SNAPSHOT_AT_PEAK ? "(before the trace)" : "(no frames)"));
        for (size_t f = 0; f < x->n_frames && f < 3; f++)
            printf("%s%s", f ? " < " : "", x->frames[f]);
        printf("\n");
    }
}

static void print_pools(const vf_snapshot *s, vf_units u)
{
    char r[32], al[32], in[32];
    printf("\n  device  stream          pool           segments  blocks     reserved    allocated     inactive\n");
    for (size_t i = 0; i < vf_snapshot_pool_count(s); i++) {
        const vf_snapshot_pool_stats *p = vf_snapshot_pool(s, i);
        printf("  %6lld  %-14llu  %-14s %9llu %7llu %12s %12s %12s\n", (long long)p->device,
               (unsigned long long)p->stream, p->pool, (unsigned long long)p->segments,
               (unsigned long long)p->blocks, vf_fmt_bytes(p->reserved_bytes, u, r, sizeof r),
               vf_fmt_bytes(p->allocated_bytes, u, al, sizeof al), vf_fmt_bytes(p->inactive_bytes, u, in, sizeof in));
    }
}

static void print_report(const vf_snapshot *s, const snap_args *a, uint64_t estimate)
{
    vf_units u = a->units;
    char b1[32], b2[32], b3[32];
    uint64_t r = vf_snapshot_reserved_bytes(s), al = vf_snapshot_allocated_bytes(s), in = vf_snapshot_inactive_bytes(s);
    printf("snapshot     %s (%s)\n", a->file,
           strcmp(vf_snapshot_layout(s), "dict") ? "torch 1.13 layout: a list of segments"
                                                 : "torch 2.x layout: segments and device_traces");
    printf("segments     %llu, %llu blocks\n", (unsigned long long)vf_snapshot_segments(s),
           (unsigned long long)vf_snapshot_blocks(s));
    printf("reserved     %s\n", vf_fmt_bytes(r, u, b1, sizeof b1));
    printf("allocated    %s\n", vf_fmt_bytes(al, u, b1, sizeof b1));
    printf("inactive     %s (%.1f%% of reserved: cached, unallocated)\n", vf_fmt_bytes(in, u, b1, sizeof b1),
           r ? 100.0 * (double)in / (double)r : 0.0);
    if (vf_snapshot_pending_free_bytes(s))
        printf("pending free %s (freed, awaiting another stream)\n",
               vf_fmt_bytes(vf_snapshot_pending_free_bytes(s), u, b1, sizeof b1));
    print_pools(s, u);
    printf("\n");
    if (vf_snapshot_has_trace(s))
        printf("peak         %s allocated after trace entry %llu of %llu (device %lld); %s alive before the "
               "trace began, %s at its end\n",
               vf_fmt_bytes(vf_snapshot_peak_bytes(s), u, b1, sizeof b1), (unsigned long long)vf_snapshot_peak_entry(s),
               (unsigned long long)vf_snapshot_trace_entries(s), (long long)vf_snapshot_peak_device(s),
               vf_fmt_bytes(vf_snapshot_before_trace_bytes(s), u, b2, sizeof b2),
               vf_fmt_bytes(vf_snapshot_end_bytes(s), u, b3, sizeof b3));
    else
        printf("peak         no trace (record with torch.cuda.memory._record_memory_history()): the snapshot's "
               "allocated %s\n", vf_fmt_bytes(al, u, b1, sizeof b1));
    if (a->estimate)
        printf("estimate     %s per GPU for \"%s\": the measured peak is %.1f%% of it (the estimate is the device's "
               "whole use: reserved memory, context, workspaces)\n",
               vf_fmt_bytes(estimate, u, b1, sizeof b1), a->estimate,
               100.0 * (double)vf_snapshot_peak_bytes(s) / (double)estimate);
    print_allocs(s, VF_SNAPSHOT_LARGEST, "Largest live allocations (innermost frame first):", u);
    print_allocs(s, VF_SNAPSHOT_AT_PEAK, "Alive at the peak:", u);
    if (vf_snapshot_has_trace(s) && !vf_snapshot_alloc_count(s, VF_SNAPSHOT_LEAKS))
        printf("\nLeak suspects: none (no site with 3 or more allocations alive at the end made over 3 or more "
               "iterations)\n");
    print_allocs(s, VF_SNAPSHOT_LEAKS, "Leak suspects (alive at the end, grown across iterations):", u);
}

int cmd_snapshot(int argc, char **argv)
{
    snap_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    vf_error e = {0};
    vf_snapshot *s = NULL;
    if (vf_snapshot_open(a.file, &s, &e) != VF_OK)
        return vf_report_error(&e);
    uint64_t estimate = 0;
    if (a.estimate && (rc = vf_cli_estimate_spec("snapshot", a.estimate, cmd_estimate, &estimate)) != VF_EXIT_OK) {
        vf_snapshot_free(s);
        return rc;
    }
    if (a.json)
        rc = vf_print_json(report_json(s, &a, estimate));
    else
        print_report(s, &a, estimate), rc = VF_EXIT_OK;
    vf_snapshot_free(s);
    return rc;
}
