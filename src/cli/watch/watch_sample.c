/* watch_sample.c — the samples: every GPU's used memory and the watched
 * tree's own (NVML's per-process figures of its processes), taken by a
 * thread at the interval while the command runs, kept in memory that stays
 * bounded however long it runs: past max_rows rows (WATCH_MAX_ROWS), pairs of rows
 * merge into one with their maxima, so the peaks survive and the timeline
 * keeps its shape at half the resolution. NVML errors are counted per GPU
 * and kind with the first one's message and time; a sample that fails is a
 * gap, never the end of the run. */
#include "watch/watch.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NO_VALUE UINT64_MAX

double vf_watch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_err(watch_err *e, double t, const char *msg)
{
    if (e->count++ == 0) {
        e->first_at = t;
        snprintf(e->msg, sizeof e->msg, "%s", msg);
    }
}

static uint64_t max_of(uint64_t a, uint64_t b) { return a == NO_VALUE ? b : b == NO_VALUE ? a : a > b ? a : b; }

/* Halves the rows: each pair becomes its first time and its maxima. */
static void merge_pairs(watch_run *w)
{
    size_t g = w->n_gpus, half = w->rows / 2;
    for (size_t r = 0; r < half; r++) {
        w->t[r] = w->t[2 * r];
        for (size_t k = 0; k < g; k++) {
            uint64_t a = w->used[2 * r * g + k], b = w->used[(2 * r + 1) * g + k];
            uint64_t c = w->tree[2 * r * g + k], d = w->tree[(2 * r + 1) * g + k];
            w->used[r * g + k] = max_of(a, b);
            w->tree[r * g + k] = max_of(c, d);
        }
    }
    if (w->rows % 2) { /* the odd last row stays as it is */
        w->t[half] = w->t[w->rows - 1];
        memmove(w->used + half * g, w->used + (w->rows - 1) * g, g * sizeof *w->used);
        memmove(w->tree + half * g, w->tree + (w->rows - 1) * g, g * sizeof *w->tree);
        half++;
    }
    w->in_last = w->rows % 2 ? w->merged : 2 * w->merged;
    w->rows = half;
    w->merged *= 2;
}

/* Room for one more row: grown, or merged once full (or out of memory). */
static bool room(watch_run *w)
{
    if (w->rows < w->cap)
        return true;
    size_t cap = w->cap ? w->cap * 2 : 1024;
    if (cap > w->max_rows)
        cap = w->max_rows;
    if (w->cap < w->max_rows) {
        double *t = realloc(w->t, cap * sizeof *t);
        if (t)
            w->t = t;
        uint64_t *u = t ? realloc(w->used, cap * w->n_gpus * sizeof *u) : NULL;
        if (u)
            w->used = u;
        uint64_t *tr = u ? realloc(w->tree, cap * w->n_gpus * sizeof *tr) : NULL;
        if (tr) {
            w->tree = tr;
            w->cap = cap;
            return true;
        }
    }
    if (w->rows < 2) {
        w->oom = true;
        return false;
    }
    merge_pairs(w);
    return true;
}

/* The tree's own memory on one GPU; NO_VALUE when NVML would not list it. */
static uint64_t tree_bytes(watch_run *w, watch_gpu *g, double t)
{
    static vf_gpu_process ps[512];
    size_t n = 0;
    vf_error e = {0};
    if (vf_nvml_processes(w->nv, g->nvml, ps, sizeof ps / sizeof ps[0], &n, &e) != VF_OK) {
        note_err(&g->proc_err, t, e.msg);
        return NO_VALUE;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!vf_watch_in_tree(w, (pid_t)ps[i].pid))
            continue;
        if (ps[i].used_bytes == UINT64_MAX)
            g->tree_unknown = true;
        else
            sum = sum + ps[i].used_bytes < sum ? UINT64_MAX - 1 : sum + ps[i].used_bytes;
    }
    return sum;
}

/* The row a sample goes to: the last one until it holds merged samples. */
static bool row_for_sample(watch_run *w, bool *combine)
{
    *combine = w->rows > 0 && w->in_last < w->merged;
    if (*combine) {
        w->in_last++;
        return true;
    }
    if (!room(w))
        return false;
    *combine = w->rows > 0 && w->in_last < w->merged; /* merging may have left room in the last row */
    w->in_last = *combine ? w->in_last + 1 : 1;
    return true;
}

void vf_watch_sample(watch_run *w, bool keep, uint64_t *used_out)
{
    double t = vf_watch_now() - w->start;
    bool combine = false, stored = keep && row_for_sample(w, &combine);
    size_t row = combine ? w->rows - 1 : w->rows;
    for (size_t k = 0; k < w->n_gpus; k++) {
        watch_gpu *g = &w->gpu[k];
        uint64_t used = NO_VALUE, total = 0;
        vf_error e = {0};
        if (vf_nvml_memory(w->nv, g->nvml, &used, &total, &e) != VF_OK) {
            note_err(&g->mem_err, t, e.msg);
            used = NO_VALUE;
        } else if (total) {
            g->total = total;
        }
        uint64_t tree = tree_bytes(w, g, t);
        if (used_out)
            used_out[k] = used;
        if (keep && used != NO_VALUE && (!g->seen || used > g->peak)) {
            g->peak = used;
            g->peak_at = t;
        }
        if (keep && tree != NO_VALUE && (!g->seen || tree > g->tree_peak)) {
            g->tree_peak = tree;
            g->tree_peak_at = t;
        }
        if (keep && (used != NO_VALUE || tree != NO_VALUE))
            g->seen = true;
        if (stored) {
            uint64_t *u = &w->used[row * w->n_gpus + k], *tr = &w->tree[row * w->n_gpus + k];
            *u = combine ? max_of(*u, used) : used;
            *tr = combine ? max_of(*tr, tree) : tree;
        }
    }
    if (stored && !combine)
        w->t[w->rows++] = t;
    if (keep)
        w->samples++;
}

static void *loop(void *arg)
{
    watch_run *w = arg;
    double next = vf_watch_now();
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        pthread_mutex_unlock(&w->lock);
        vf_watch_sample(w, true, NULL);
        double now = vf_watch_now(), step = w->interval_ms / 1000.0;
        next += step;
        if (next < now) /* behind (a slow NVML): the next tick from now */
            next = now + step;
        struct timespec ts = {(time_t)next, (long)((next - (double)(time_t)next) * 1e9)};
        pthread_mutex_lock(&w->lock);
        while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int vf_watch_start(watch_run *w)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&w->lock, NULL);
    /* the signals are the main thread's: the sampler is started with them blocked */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&w->thread, NULL, loop, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "vramfit: watch: cannot start the sampler thread\n");
        return VF_EXIT_IO;
    }
    w->running = true;
    return VF_EXIT_OK;
}

void vf_watch_stop(watch_run *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->running = false;
}
