/* fit_catalog.c — vramfit fit MODEL without --gpu: "what hardware do I need?"
 * For every catalog GPU, the fewest devices of it (1, 2, 4, 8, ... up to the
 * GPUs one node holds) on which the model fits, split as --gpu GxN splits it
 * (vf_estimate_opts_spread), with what each device needs and the headroom.
 *
 * What a device needs for N devices depends on the knobs and N only (fit's
 * vf_fit_needed_bytes: the estimate, or where the engine sizes itself from the
 * device, the least device memory it starts on), so it is computed once per N
 * and compared with each GPU's memory. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#define COUNTS 4 /* 1, 2, 4, 8: the counts of one node */

typedef struct count_need {
    uint32_t n;
    uint64_t needed;      /* per device; 0 = does not fit on any size */
    char words[96];       /* how N devices share the model */
} count_need;

typedef struct row {
    const vf_gpu *g;
    const count_need *c;
} row;

static void split_words(const vf_estimate_opts *o, uint32_t n, char *buf, size_t cap)
{
    if (n <= 1)
        snprintf(buf, cap, "one GPU");
    else if (o->mode == VF_MODE_TRAINING)
        snprintf(buf, cap, "%u data-parallel ranks%s", n, o->train.zero >= 1 ? " (ZeRO)" : "");
    else if (o->runtime == VF_RUNTIME_LLAMACPP && !o->tp && !o->pp)
        snprintf(buf, cap, "layers split over %u GPUs", n);
    else if (o->pp > 1)
        snprintf(buf, cap, "tensor parallel %u x pipeline parallel %u", o->tp ? o->tp : 1, o->pp);
    else
        snprintf(buf, cap, "tensor parallel %u", o->tp ? o->tp : 1);
}

/* What one device needs at each count, the model split as GxN splits it. */
static int needs_per_count(const vf_cli_fit_args *a, const vf_model *m, count_need need[COUNTS])
{
    for (int k = 0; k < COUNTS; k++) {
        vf_estimate_opts o = a->est;
        need[k].n = 1u << k;
        vf_estimate_opts_spread(m, &o, need[k].n);
        split_words(&o, need[k].n, need[k].words, sizeof need[k].words);
        vf_error e = {0};
        if (vf_fit_needed_bytes(m, &o, NULL, &need[k].needed, &e) != VF_OK)
            return vf_report_error(&e);
    }
    return -1;
}

static int by_count_then_memory(const void *x, const void *y)
{
    const row *a = x, *b = y;
    if (a->c->n != b->c->n)
        return a->c->n < b->c->n ? -1 : 1;
    if (a->g->memory_bytes != b->g->memory_bytes)
        return a->g->memory_bytes < b->g->memory_bytes ? -1 : 1;
    return strcmp(a->g->name, b->g->name);
}

/* Each GPU the runtime runs on, with the fewest devices of it that fit. */
static size_t fewest_per_gpu(const vf_cli_fit_args *a, const count_need need[COUNTS], row *rows)
{
    size_t k = 0;
    for (size_t i = 0; i < vf_gpu_count(); i++) {
        const vf_gpu *g = vf_gpu_get(i);
        if (!vf_cli_runtime_runs_on(a->est.runtime, g))
            continue;
        uint32_t per_node = g->max_per_node ? g->max_per_node : 8;
        for (int c = 0; c < COUNTS && need[c].n <= per_node; c++)
            if (need[c].needed && need[c].needed <= g->memory_bytes) {
                rows[k++] = (row){g, &need[c]};
                break;
            }
    }
    qsort(rows, k, sizeof *rows, by_count_then_memory);
    return k;
}

static int print_rows_json(const vf_cli_fit_args *a, const count_need *one, const row *rows, size_t k)
{
    json_t *j = json_object();
    json_object_set_new(j, "fits", json_boolean(k > 0));
    json_object_set_new(j, "needed_bytes", json_integer((json_int_t)one->needed));
    json_object_set_new(j, "mode", json_string(vf_cli_mode_name(&a->est)));
    json_t *arr = json_array();
    for (size_t i = 0; i < k; i++) {
        json_t *r = json_object();
        json_object_set_new(r, "gpu", json_string(rows[i].g->name));
        json_object_set_new(r, "count", json_integer(rows[i].c->n));
        json_object_set_new(r, "gpu_bytes", json_integer((json_int_t)rows[i].g->memory_bytes));
        json_object_set_new(r, "needed_bytes", json_integer((json_int_t)rows[i].c->needed));
        json_object_set_new(r, "headroom_bytes",
                            json_integer((json_int_t)(rows[i].g->memory_bytes - rows[i].c->needed)));
        json_object_set_new(r, "parallelism", json_string(rows[i].c->words));
        json_array_append_new(arr, r);
    }
    json_object_set_new(j, "gpus", arr);
    return vf_print_json(j);
}

static void print_rows(const vf_cli_fit_args *a, const count_need *one, const row *rows, size_t k)
{
    char b1[32], b2[32], b3[32];
    if (one->needed)
        printf("Needs %s on one GPU (%s). ", vf_fmt_bytes(one->needed, a->units, b1, sizeof b1),
               vf_cli_mode_name(&a->est));
    else
        printf("Fits on no single GPU (%s). ", vf_cli_mode_name(&a->est));
    printf("Catalog GPUs, each with the fewest devices of it that fit (fewest, then smallest, first):\n");
    if (!k)
        printf("  none up to a node of them; try 'vramfit fit MODEL --gpu G' for advice\n");
    for (size_t i = 0; i < k; i++)
        printf("  %2u x %-26s %10s each, needs %10s, headroom %10s  (%s)\n", rows[i].c->n, rows[i].g->name,
               vf_fmt_bytes(rows[i].g->memory_bytes, a->units, b1, sizeof b1),
               vf_fmt_bytes(rows[i].c->needed, a->units, b2, sizeof b2),
               vf_fmt_bytes(rows[i].g->memory_bytes - rows[i].c->needed, a->units, b3, sizeof b3), rows[i].c->words);
}

int vf_cli_fit_catalog(const vf_cli_fit_args *a, vf_model *m)
{
    count_need need[COUNTS];
    int rc = needs_per_count(a, m, need);
    if (rc >= 0)
        return rc;
    row *rows = calloc(vf_gpu_count() ? vf_gpu_count() : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    size_t k = fewest_per_gpu(a, need, rows);
    if (a->json) {
        rc = print_rows_json(a, &need[0], rows, k);
    } else {
        print_rows(a, &need[0], rows, k);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    free(rows);
    return rc == VF_EXIT_OK && !k ? VF_EXIT_NOFIT : rc;
}
