/* watch.h — what vramfit watch's files share: the run, its GPUs and samples.
 *   cmd_watch.c    options and the steps of a run
 *   watch_proc.c   the command as a child (or --pid), signals, the process tree
 *   watch_sample.c the sampler thread and the samples
 *   watch_out.c    the report: table and sparkline, CSV, SVG, JSON */
#ifndef VF_WATCH_H
#define VF_WATCH_H

#include "cli.h"

#include <pthread.h>
#include <sys/types.h>

#define WATCH_MAX_GPUS 64
#define WATCH_MAX_ROWS ((size_t)1 << 20) /* then pairs of rows merge, keeping their peaks */

/* NVML errors of one kind on one GPU: counted, the first kept. */
typedef struct watch_err {
    uint64_t count;
    double first_at;
    char msg[VF_ERROR_MSG_MAX];
} watch_err;

typedef struct watch_gpu {
    size_t nvml;               /* index into the NVML session */
    uint32_t index;            /* NVML's device index */
    char name[96];
    uint64_t total;
    bool have_baseline, have_after, seen;
    uint64_t baseline, after;  /* device used before the command and after it exited */
    uint64_t peak, tree_peak;  /* device used; the command's processes' own */
    double peak_at, tree_peak_at;
    bool tree_unknown;         /* NVML could not say one tree process's memory */
    watch_err mem_err, proc_err;
} watch_gpu;

typedef struct watch_run {
    vf_nvml *nv;
    size_t n_gpus;
    watch_gpu gpu[WATCH_MAX_GPUS];
    unsigned interval_ms;
    pid_t root;                /* the command (our child), or --pid's process */
    bool own_child;
    double start;              /* monotonic seconds at the start */
    /* the samples: row r is t[r] and, per GPU g, used[r * n_gpus + g], tree[...] */
    double *t;
    uint64_t *used, *tree;
    size_t rows, cap, merged;  /* merged: how many samples a row stands for (a power of 2) */
    size_t max_rows;           /* WATCH_MAX_ROWS (a test sets fewer) */
    size_t in_last;            /* samples the last row holds (up to merged) */
    uint64_t samples;          /* taken, before any merging */
    /* the sampler thread */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop, running, oom;
} watch_run;

/* ---- watch_proc.c ---- */
/* Starts argv as a child with stdio inherited; 0 or an exit status (127/126
 * when it cannot run, with one line said). */
int vf_watch_spawn(watch_run *w, char **argv);
/* Waits for the child (or --pid's process) to end; *status is its exit
 * status (128 + signal when killed; -1 for --pid). Forwards SIGINT and
 * SIGTERM sent to vramfit to the child; stops the rest of its tree after. */
void vf_watch_wait(watch_run *w, int *status);
/* Installs the signal handlers (before the child starts). */
void vf_watch_signals(void);
/* Whether pid belongs to the watched tree (itself, a descendant, or an
 * orphan of it that vramfit, its subreaper, adopted). */
bool vf_watch_in_tree(const watch_run *w, pid_t pid);

/* ---- watch_sample.c ---- */
double vf_watch_now(void);
/* One sample of every GPU at time now (seconds since start); keep: store it. */
void vf_watch_sample(watch_run *w, bool keep, uint64_t *used_out);
int vf_watch_start(watch_run *w);
void vf_watch_stop(watch_run *w);

/* ---- watch_out.c ---- */
typedef struct watch_report {
    char **command;
    int n_command;
    int exit_status;           /* -1: unknown (--pid) */
    double seconds;
    bool json;
    vf_units units;
    bool have_estimate;
    uint64_t estimate;         /* device bytes per GPU the estimate says */
    const char *estimate_spec;
} watch_report;

void vf_watch_print(const watch_run *w, const watch_report *r);
/* NVML's errors during the run, one line per GPU and query, on stderr. */
void vf_watch_errors(const watch_run *w);
int vf_watch_json(const watch_run *w, const watch_report *r);
int vf_watch_csv(const watch_run *w, const char *path);
int vf_watch_svg(const watch_run *w, const watch_report *r, const char *path);

#endif
