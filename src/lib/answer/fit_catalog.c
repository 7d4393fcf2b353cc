/* fit_catalog.c — "what do I need to run this?": for every catalog GPU the
 * fewest devices (and machines) that hold the model as asked, with the
 * layout and the headroom on its busiest rank, ordered by the total device
 * memory they add up to. fit without --gpu and the web page show this. */
#include "answer/fit_internal.h"
#include "memory/infer.h" /* vf__gpu_generation, vf__gpu_sm_count: the memo's device class */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One GPU's row: the fewest-device layout, then what its busiest rank needs
 * (the smallest device it fits on, for engines that size a cache from the
 * device). */
/* Needs found by bisection, per layout and device name: they depend on the
 * knobs, the layout, the device's generation (its CUDA context and
 * workspaces) and memory class (vLLM's defaults), not on the row's exact
 * memory, so rows of one device class with the
 * same layout share one bisection (~45 estimate runs each). */
#define NEED_MEMO 32
typedef struct need_memo {
    size_t n;
    struct {
        uint32_t gpus, tp, pp;
        int zero;
        char gen;     /* vf__gpu_generation of the row's device */
        uint32_t sms; /* and its SM count (vLLM's Triton top-k/top-p buffer, vllm.c) */
        bool big;     /* and its memory class: vLLM's defaults from 70 GiB (vf__gpu_class_bytes) */
        uint64_t need;
    } e[NEED_MEMO];
} need_memo;

static uint64_t layout_need(vf__fit_ctx *c, const vf_estimate_opts *o, const vf__gpu_plan *p, uint64_t gpu_bytes,
                            need_memo *mm)
{
    char gen = (char)vf__gpu_generation(o->infer.gpu_name);
    if (vf__name_has(o->infer.gpu_name, "a100"))
        gen = -1; /* vLLM treats the A100 apart from other large devices (vllm.c) */
    uint32_t sms = vf__gpu_sm_count(o->infer.gpu_name);
    bool big = gpu_bytes >= (uint64_t)70 << 30;
    for (size_t i = 0; i < mm->n; i++)
        if (mm->e[i].gpus == p->gpus && mm->e[i].tp == p->tp && mm->e[i].pp == p->pp && mm->e[i].zero == p->zero &&
            mm->e[i].gen == gen && mm->e[i].sms == sms && mm->e[i].big == big)
            return mm->e[i].need;
    bool bisected = false;
    uint64_t need = vf__fit_needed_ex(c, o, gpu_bytes, &bisected);
    if (bisected && mm->n < NEED_MEMO) {
        mm->e[mm->n].gpus = p->gpus;
        mm->e[mm->n].tp = p->tp;
        mm->e[mm->n].pp = p->pp;
        mm->e[mm->n].zero = p->zero;
        mm->e[mm->n].gen = gen;
        mm->e[mm->n].sms = sms;
        mm->e[mm->n].big = big;
        mm->e[mm->n++].need = need;
    }
    return need;
}

static void catalog_row(vf__fit_ctx *c, const vf_fit_opts *opts, const vf_gpu *g, vf_fit_row *r, need_memo *mm)
{
    memset(r, 0, sizeof *r);
    r->gpu = g;
    uint32_t per_node = opts->gpus_per_node ? opts->gpus_per_node : g->max_per_node ? g->max_per_node : 8;
    vf_estimate_opts named = opts->est; /* this row's device, by name */
    vf__fit_name_gpu(&named, g);
    vf__gpu_plan p;
    if (!vf__fit_min_gpus(c, &named, g->memory_bytes, per_node, &p))
        return;
    vf_estimate_opts o = named;
    vf__fit_apply_plan(&o, &p);
    uint64_t need = 0;
    if (vf__fit_try(c, &o, g->memory_bytes, &need, NULL) != 1)
        return; /* the search's own probe fitted; a stub estimate may disagree */
    uint64_t least = layout_need(c, &o, &p, g->memory_bytes, mm);
    if (least)
        need = least;
    r->fits = true;
    r->gpus = p.gpus;
    r->nodes = p.nodes;
    r->tp = p.tp;
    r->pp = p.pp;
    r->dp = p.dp;
    r->zero = p.zero;
    r->needed_bytes = need;
    r->headroom_bytes = (int64_t)g->memory_bytes - (int64_t)need;
    if (vf__mul_overflow(g->memory_bytes, p.gpus, &r->total_bytes))
        r->total_bytes = UINT64_MAX;
    snprintf(r->parallelism, sizeof r->parallelism, "%s", p.words);
}

static int by_total(const void *x, const void *y)
{
    const vf_fit_row *a = x, *b = y;
    if (a->fits != b->fits)
        return a->fits ? -1 : 1;
    if (!a->fits)
        return 0; /* catalog order; qsort is not stable, so the index breaks ties below */
    if (a->total_bytes != b->total_bytes)
        return a->total_bytes < b->total_bytes ? -1 : 1;
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    return strcmp(a->gpu->name, b->gpu->name);
}

static int by_total_then_catalog(const void *x, const void *y)
{
    int r = by_total(x, y);
    if (r)
        return r;
    const vf_fit_row *a = x, *b = y;
    return a->gpu < b->gpu ? -1 : a->gpu > b->gpu; /* catalog rows are one array */
}

vf_status vf_fit_catalog(const vf_model *m, const vf_fit_opts *opts, vf_fit_row *rows, size_t cap, size_t *n_rows,
                         vf_error *err)
{
    return vf__fit_catalog_with(m, opts, NULL, rows, cap, n_rows, err);
}

vf_status vf__fit_catalog_with(const vf_model *m, const vf_fit_opts *opts, vf_estimate_fn fn, vf_fit_row *rows,
                               size_t cap, size_t *n_rows, vf_error *err)
{
    if (!m || !opts || !n_rows || (cap && !rows))
        return vf__err(err, VF_EINVAL, "", "the catalog table needs a model, options and rows");
    *n_rows = 0;
    vf_estimate *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return vf__err(err, VF_ENOMEM, "", "out of memory");
    vf__fit_ctx c = {.m = m, .fn = fn ? fn : vf_estimate_run, .scratch = scratch};
    /* an estimate the knobs make impossible fails here, once, with its reason */
    vf_estimate_opts probe = opts->est;
    probe.gpu_bytes = (uint64_t)80 << 30;
    vf_status st = c.fn(m, &probe, scratch, err);
    size_t k = 0;
    need_memo mm = {0};
    for (size_t i = 0; st == VF_OK && i < vf_gpu_count() && k < cap; i++) {
        const vf_gpu *g = vf_gpu_get(i);
        if (vf_runtime_runs_on(opts->est.runtime, g))
            catalog_row(&c, opts, g, &rows[k++], &mm);
    }
    free(scratch);
    if (st != VF_OK)
        return st;
    qsort(rows, k, sizeof *rows, by_total_then_catalog);
    *n_rows = k;
    return VF_OK;
}
