/* cmd_watch.c — vramfit watch [options] -- COMMAND ARGS..., or --pid PID: a
 * process's GPU memory over time through NVML. The steps: the estimate (if
 * asked) and NVML first, so a bad model or no driver stops before anything
 * runs; the baseline; the command; the samples while it runs; the memory
 * after it exited; the report. */
#include "watch/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void help(void)
{
    printf("usage: vramfit watch [--interval MS] [--gpu N] [--estimate \"MODEL knobs\"] [--csv FILE] [--svg FILE]\n"
           "                     [--json] [--units gib|gb] -- COMMAND [ARGS...]\n"
           "       vramfit watch [options] --pid PID\n\n"
           "Runs COMMAND (its input and output untouched, its exit status passed through) and records\n"
           "GPU memory through NVML while it runs: per GPU the memory used before it started, the\n"
           "device's peak and when, the peak of the command's own processes (the whole tree: a\n"
           "launcher's children count), the memory after it exited, and a sparkline of the timeline.\n"
           "SIGINT and SIGTERM sent to vramfit reach the command; no child is left behind. Without an\n"
           "NVIDIA driver it says so and exits 5 before running anything; NVML errors during the run\n"
           "(a GPU lost, other users' processes) are reported, not fatal.\n\n"
           "  --interval MS        sampling period in milliseconds (default 50)\n"
           "  --gpu N              only the GPU with NVML index N (default: every GPU)\n"
           "  --estimate SPEC      \"MODEL knobs\" as for 'vramfit estimate': its device memory beside\n"
           "                       the measured peak, with the difference in percent\n"
           "  --csv FILE           every sample: t_s,gpu,used_bytes,process_bytes\n"
           "  --svg FILE           a plot of the timeline\n"
           "  --pid PID            watch a running process until it exits (or until Ctrl-C)\n"
           "  --json               one JSON object on stdout, after the command's own output\n"
           "  --output FILE        the report (table or JSON) into FILE instead of stdout\n"
           "  --units U            gib (default) or gb\n");
}

typedef struct watch_args {
    unsigned interval_ms;
    long gpu;
    const char *estimate, *csv, *svg, *output;
    long pid;
    bool json;
    vf_units units;
    char **command;
    int n_command;
} watch_args;

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int parse_value(watch_args *a, const char *o, const char *v)
{
    long n;
    if (!strcmp(o, "--interval")) {
        if (!parse_long(v, 1, 60000, &n))
            return vf_usage_error("watch", "--interval: '%s' is not a period from 1 to 60000 ms", v);
        a->interval_ms = (unsigned)n;
    } else if (!strcmp(o, "--gpu")) {
        if (!parse_long(v, 0, 1 << 20, &a->gpu))
            return vf_usage_error("watch", "--gpu: '%s' is not a device index", v);
    } else if (!strcmp(o, "--pid")) {
        if (!parse_long(v, 1, 1L << 22, &a->pid))
            return vf_usage_error("watch", "--pid: '%s' is not a process id", v);
    } else if (!strcmp(o, "--units")) {
        if (!vf_parse_units(v, &a->units))
            return vf_usage_error("watch", "--units: '%s' is not gib or gb", v);
    } else if (!strcmp(o, "--estimate")) {
        a->estimate = v;
    } else if (!strcmp(o, "--csv")) {
        a->csv = v;
    } else if (!strcmp(o, "--output")) {
        a->output = v;
    } else {
        a->svg = v;
    }
    return -1;
}

static int parse(int argc, char **argv, watch_args *a)
{
    static const char *const valued[] = {"--interval", "--gpu", "--estimate", "--csv", "--svg", "--pid", "--units",
                                         "--output"};
    memset(a, 0, sizeof *a);
    a->interval_ms = 50;
    a->gpu = -1;
    int i = 1;
    for (; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--")) {
            i++;
            break;
        }
        if (s[0] != '-')
            break; /* the command */
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            help();
            return VF_EXIT_OK;
        }
        if (!strcmp(s, "--json")) {
            a->json = true;
            continue;
        }
        size_t k = 0;
        while (k < sizeof valued / sizeof valued[0] && strcmp(s, valued[k]))
            k++;
        if (k == sizeof valued / sizeof valued[0])
            return vf_usage_error("watch", "unknown option '%s'", s);
        if (i + 1 >= argc)
            return vf_usage_error("watch", "option '%s' needs a value", s);
        int rc = parse_value(a, s, argv[++i]);
        if (rc >= 0)
            return rc;
    }
    a->command = argv + i;
    a->n_command = argc - i;
    if (!a->n_command && !a->pid)
        return vf_usage_error("watch", "missing COMMAND (after --) or --pid PID");
    if (a->n_command && a->pid)
        return vf_usage_error("watch", "a COMMAND and --pid exclude each other");
    return -1;
}

/* NVML and the GPUs to watch; exit 5 without a driver. */
static int open_gpus(watch_run *w, long only)
{
    vf_error e = {0};
    if (vf_nvml_open(&w->nv, &e) != VF_OK) {
        fprintf(stderr, "vramfit: watch: %s\n", e.msg[0] ? e.msg : "no NVIDIA driver");
        return VF_EXIT_DEVICE;
    }
    for (size_t i = 0; i < vf_nvml_count(w->nv) && w->n_gpus < WATCH_MAX_GPUS; i++) {
        const vf_local_gpu *d = vf_nvml_device(w->nv, i);
        if (only >= 0 && d->index != (uint32_t)only)
            continue;
        watch_gpu *g = &w->gpu[w->n_gpus++];
        g->nvml = i;
        g->index = d->index;
        g->total = d->total_bytes;
        snprintf(g->name, sizeof g->name, "%s", d->name);
    }
    if (!w->n_gpus)
        return vf_usage_error("watch", "--gpu %ld: no such device", only);
    return -1;
}

static void free_run(watch_run *w)
{
    free(w->t);
    free(w->used);
    free(w->tree);
    vf_nvml_close(w->nv);
}

/* The memory of every GPU now into baseline (before) or after. */
static void snapshot(watch_run *w, bool before)
{
    uint64_t used[WATCH_MAX_GPUS];
    vf_watch_sample(w, before, used);
    for (size_t k = 0; k < w->n_gpus; k++) {
        if (used[k] == UINT64_MAX)
            continue;
        if (before)
            w->gpu[k].baseline = used[k], w->gpu[k].have_baseline = true;
        else
            w->gpu[k].after = used[k], w->gpu[k].have_after = true;
    }
}

static int report(watch_run *w, const watch_args *a, watch_report *r)
{
    int rc = VF_EXIT_OK;
    vf_watch_errors(w);
    if (a->csv && vf_watch_csv(w, a->csv) != VF_EXIT_OK)
        rc = VF_EXIT_IO;
    if (a->svg && vf_watch_svg(w, r, a->svg) != VF_EXIT_OK)
        rc = VF_EXIT_IO;
    /* --output: the report's stdout is the file for the length of the call */
    int saved = -1, fd = -1;
    if (a->output) {
        fflush(stdout);
        fd = open(a->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || (saved = dup(STDOUT_FILENO)) < 0 || dup2(fd, STDOUT_FILENO) < 0) {
            fprintf(stderr, "vramfit: %s: cannot write: %s\n", a->output, strerror(errno));
            if (fd >= 0)
                close(fd);
            if (saved >= 0)
                close(saved);
            return VF_EXIT_IO;
        }
    }
    if (a->json) {
        if (vf_watch_json(w, r) != VF_EXIT_OK)
            rc = VF_EXIT_IO;
    } else {
        vf_watch_print(w, r);
        if (fflush(stdout))
            rc = VF_EXIT_IO;
    }
    if (a->output) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
        if (close(fd) != 0)
            rc = VF_EXIT_IO;
    }
    return rc;
}

int cmd_watch(int argc, char **argv)
{
    watch_args a;
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    watch_report r = {.command = a.command, .n_command = a.n_command, .json = a.json, .units = a.units,
                      .estimate_spec = a.estimate};
    if (a.estimate && (rc = vf_cli_estimate_spec("watch", a.estimate, cmd_estimate, &r.estimate)) != VF_EXIT_OK)
        return rc;
    r.have_estimate = a.estimate != NULL;
    static watch_run w;
    memset(&w, 0, sizeof w);
    w.interval_ms = a.interval_ms;
    w.merged = 1;
    w.max_rows = WATCH_MAX_ROWS;
    if ((rc = open_gpus(&w, a.gpu)) >= 0) {
        free_run(&w);
        return rc;
    }
    w.start = vf_watch_now();
    snapshot(&w, true);
    vf_watch_signals();
    if (a.pid) {
        w.root = (pid_t)a.pid;
        if (kill(w.root, 0) != 0 && errno != EPERM) {
            free_run(&w);
            return vf_usage_error("watch", "--pid %ld: no such process", a.pid);
        }
    } else if ((rc = vf_watch_spawn(&w, a.command)) != 0) {
        free_run(&w);
        return rc;
    }
    int status = 0;
    if ((rc = vf_watch_start(&w)) == VF_EXIT_OK) {
        vf_watch_wait(&w, &status);
        vf_watch_stop(&w);
    } else {
        vf_watch_wait(&w, &status); /* no samples, but the command still runs to its end */
    }
    snapshot(&w, false);
    r.exit_status = status;
    r.seconds = vf_watch_now() - w.start;
    if (w.oom)
        fprintf(stderr, "vramfit: watch: out of memory for the samples; the timeline is cut\n");
    rc = report(&w, &a, &r);
    free_run(&w);
    if (a.pid)
        return rc;
    return status != 0 ? status : rc;
}
